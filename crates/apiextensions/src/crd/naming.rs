//! The NamesAccepted check of kube's naming controller (`pkg/controller/status/naming_controller.go`), as a pure
//! function over the CRDs that exist.

use std::collections::HashSet;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceDefinitionCondition, CustomResourceDefinitionNames,
};

/// The outcome of the naming check for one CRD.
#[derive(Clone, Debug, PartialEq)]
pub struct NamesAccepted {
    /// The names to publish as `status.acceptedNames`: each requested name that is free or already this CRD's,
    /// and the previously accepted name otherwise.
    pub accepted_names: CustomResourceDefinitionNames,
    /// The `NamesAccepted` condition: True/NoConflicts, or False with `PluralConflict`, `SingularConflict`,
    /// `ShortNamesConflict`, `KindConflict` or `ListKindConflict` (the last conflict found).
    pub names_accepted: CustomResourceDefinitionCondition,
    /// The `Established` condition: kept if present, False/NotAccepted at first, and False/Installing once the
    /// names are accepted (the establishing controller then sets it True).
    pub established: CustomResourceDefinitionCondition,
}

fn condition(
    type_: &str,
    status: &str,
    reason: &str,
    message: String,
) -> CustomResourceDefinitionCondition {
    CustomResourceDefinitionCondition {
        type_: type_.to_string(),
        status: status.to_string(),
        reason: Some(reason.to_string()),
        message: Some(message),
        last_transition_time: None,
    }
}

/// Decides which of `crd`'s requested names it may have, given `all` the CRDs that exist (it may be among them):
/// a name is taken when another CRD of the same group has accepted it (plural, singular and short names share one
/// namespace, kind and list kind another).
pub fn accepted_names(
    crd: &CustomResourceDefinition,
    all: &[CustomResourceDefinition],
) -> NamesAccepted {
    let mut resources: HashSet<String> = HashSet::new();
    let mut kinds: HashSet<String> = HashSet::new();
    for other in all.iter().filter(|c| c.spec.group == crd.spec.group) {
        let Some(n) = other
            .status
            .as_ref()
            .and_then(|s| s.accepted_names.as_ref())
        else {
            // kube inserts the empty names of a CRD without accepted names.
            resources.insert(String::new());
            kinds.insert(String::new());
            continue;
        };
        resources.insert(n.plural.clone());
        resources.insert(n.singular.clone().unwrap_or_default());
        resources.extend(n.short_names.iter().flatten().cloned());
        kinds.insert(n.kind.clone());
        kinds.insert(n.list_kind.clone().unwrap_or_default());
    }

    let requested = &crd.spec.names;
    let accepted = crd
        .status
        .as_ref()
        .and_then(|s| s.accepted_names.clone())
        .unwrap_or_default();
    let mut new_names = accepted.clone();
    let mut conflict: Option<(&str, String)> = None;

    match fresh(&requested.plural, &accepted.plural, &resources) {
        Err(e) => conflict = Some(("PluralConflict", e)),
        Ok(()) => new_names.plural = requested.plural.clone(),
    }
    let requested_singular = requested.singular.clone().unwrap_or_default();
    match fresh(
        &requested_singular,
        accepted.singular.as_deref().unwrap_or(""),
        &resources,
    ) {
        Err(e) => conflict = Some(("SingularConflict", e)),
        Ok(()) => new_names.singular = requested.singular.clone(),
    }
    if requested.short_names.clone().unwrap_or_default()
        != accepted.short_names.clone().unwrap_or_default()
    {
        let ours: HashSet<&String> = accepted.short_names.iter().flatten().collect();
        let errs: Vec<String> = requested
            .short_names
            .iter()
            .flatten()
            .filter(|s| !ours.contains(s))
            .filter_map(|s| fresh(s, "", &resources).err())
            .collect();
        if errs.is_empty() {
            new_names.short_names = requested.short_names.clone();
        } else {
            // utilerrors.NewAggregate: one message alone, several as [a, b].
            let message = if errs.len() == 1 {
                errs[0].clone()
            } else {
                format!("[{}]", errs.join(", "))
            };
            conflict = Some(("ShortNamesConflict", message));
        }
    }
    match fresh(&requested.kind, &accepted.kind, &kinds) {
        Err(e) => conflict = Some(("KindConflict", e)),
        Ok(()) => new_names.kind = requested.kind.clone(),
    }
    let requested_list_kind = requested.list_kind.clone().unwrap_or_default();
    match fresh(
        &requested_list_kind,
        accepted.list_kind.as_deref().unwrap_or(""),
        &kinds,
    ) {
        Err(e) => conflict = Some(("ListKindConflict", e)),
        Ok(()) => new_names.list_kind = requested.list_kind.clone(),
    }
    new_names.categories = requested.categories.clone();

    let names_accepted = match conflict {
        Some((reason, message)) => condition("NamesAccepted", "False", reason, message),
        None => condition(
            "NamesAccepted",
            "True",
            "NoConflicts",
            "no conflicts found".into(),
        ),
    };
    let mut established = crd
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == "Established").cloned())
        .unwrap_or_else(|| {
            condition(
                "Established",
                "False",
                "NotAccepted",
                "not all names are accepted".into(),
            )
        });
    if established.status != "True" && names_accepted.status == "True" {
        established = condition(
            "Established",
            "False",
            "Installing",
            "the initial names have been accepted".into(),
        );
    }
    NamesAccepted {
        accepted_names: new_names,
        names_accepted,
        established,
    }
}

/// kube's `equalToAcceptedOrFresh`.
fn fresh(requested: &str, accepted: &str, used: &HashSet<String>) -> Result<(), String> {
    if requested == accepted || !used.contains(requested) {
        return Ok(());
    }
    Err(format!("{requested:?} is already in use"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn crd(
        name: &str,
        group: &str,
        names: serde_json::Value,
        accepted: Option<serde_json::Value>,
    ) -> CustomResourceDefinition {
        let mut v = json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": name},
            "spec": {"group": group, "scope": "Namespaced", "names": names, "versions": []},
        });
        if let Some(a) = accepted {
            v["status"] = json!({"acceptedNames": a});
        }
        serde_json::from_value(v).expect("test CRD parses")
    }

    fn names(
        plural: &str,
        singular: &str,
        short: &[&str],
        kind: &str,
        list_kind: &str,
    ) -> serde_json::Value {
        json!({"plural": plural, "singular": singular, "shortNames": short, "kind": kind, "listKind": list_kind})
    }

    #[test]
    fn no_other_crds_means_no_conflicts() {
        let c = crd(
            "alphas.group.com",
            "group.com",
            names("alphas", "alpha", &["al"], "Alpha", "AlphaList"),
            None,
        );
        let out = accepted_names(&c, &[]);
        assert_eq!(out.names_accepted.status, "True");
        assert_eq!(out.names_accepted.reason.as_deref(), Some("NoConflicts"));
        assert_eq!(out.accepted_names.plural, "alphas");
        assert_eq!(out.accepted_names.list_kind.as_deref(), Some("AlphaList"));
        assert_eq!(out.established.reason.as_deref(), Some("Installing"));
    }

    #[test]
    fn names_taken_in_the_same_group_conflict() {
        let existing = crd(
            "betas.group.com",
            "group.com",
            names("betas", "beta", &["b"], "Beta", "BetaList"),
            Some(names("betas", "beta", &["b"], "Beta", "BetaList")),
        );
        let cases = [
            (
                names("betas", "alpha", &[], "Alpha", "AlphaList"),
                "PluralConflict",
                r#""betas" is already in use"#,
            ),
            (
                names("alphas", "beta", &[], "Alpha", "AlphaList"),
                "SingularConflict",
                r#""beta" is already in use"#,
            ),
            (
                names("alphas", "alpha", &["b"], "Alpha", "AlphaList"),
                "ShortNamesConflict",
                r#""b" is already in use"#,
            ),
            (
                names("alphas", "alpha", &[], "Beta", "AlphaList"),
                "KindConflict",
                r#""Beta" is already in use"#,
            ),
            (
                names("alphas", "alpha", &[], "Alpha", "BetaList"),
                "ListKindConflict",
                r#""BetaList" is already in use"#,
            ),
        ];
        for (requested, reason, message) in cases {
            let c = crd("x.group.com", "group.com", requested, None);
            let out = accepted_names(&c, std::slice::from_ref(&existing));
            assert_eq!(out.names_accepted.status, "False", "{reason}");
            assert_eq!(out.names_accepted.reason.as_deref(), Some(reason));
            assert_eq!(out.names_accepted.message.as_deref(), Some(message));
            assert_eq!(out.established.reason.as_deref(), Some("NotAccepted"));
        }
    }

    #[test]
    fn other_groups_and_own_names_do_not_conflict() {
        let other_group = crd(
            "betas.other.com",
            "other.com",
            names("alphas", "alpha", &["al"], "Alpha", "AlphaList"),
            Some(names("alphas", "alpha", &["al"], "Alpha", "AlphaList")),
        );
        let me_names = names("alphas", "alpha", &["al"], "Alpha", "AlphaList");
        let me = crd(
            "alphas.group.com",
            "group.com",
            me_names.clone(),
            Some(me_names),
        );
        let out = accepted_names(&me, &[other_group, me.clone()]);
        assert_eq!(out.names_accepted.reason.as_deref(), Some("NoConflicts"));
    }

    #[test]
    fn a_conflicting_rename_keeps_the_previously_accepted_name() {
        let existing = crd(
            "betas.group.com",
            "group.com",
            names("betas", "beta", &[], "Beta", "BetaList"),
            Some(names("betas", "beta", &[], "Beta", "BetaList")),
        );
        let me = crd(
            "alphas.group.com",
            "group.com",
            names("alphas", "alpha", &[], "Beta", "AlphaList"),
            Some(names("alphas", "alpha", &[], "Alpha", "AlphaList")),
        );
        let out = accepted_names(&me, &[existing, me.clone()]);
        assert_eq!(out.names_accepted.reason.as_deref(), Some("KindConflict"));
        assert_eq!(out.accepted_names.kind, "Alpha");
    }
}
