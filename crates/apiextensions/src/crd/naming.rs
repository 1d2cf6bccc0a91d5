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

    // TestSync (controller/status/naming_controller_test.go).
    struct Names<'a>(&'a str, &'a str, &'a str, &'a str, &'a [&'a str]);

    fn names_value(n: &Names) -> serde_json::Value {
        json!({"plural": n.0, "singular": n.1, "kind": n.2, "listKind": n.3, "shortNames": n.4})
    }

    fn go_crd(
        name: &str,
        spec: Option<Names>,
        status: Option<Names>,
        conditions: &[(&str, &str, &str, &str)],
    ) -> CustomResourceDefinition {
        let (plural, group) = name.split_once('.').expect("name has a group");
        let spec_names = spec.map_or_else(
            || json!({"plural": plural, "kind": ""}),
            |n| names_value(&n),
        );
        let conditions: Vec<serde_json::Value> = conditions
            .iter()
            .map(|(t, s, r, m)| json!({"type": t, "status": s, "reason": r, "message": m}))
            .collect();
        let mut status_value = json!({"conditions": conditions});
        if let Some(n) = status {
            status_value["acceptedNames"] = names_value(&n);
        }
        serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {"group": group, "scope": "", "names": spec_names, "versions": []},
            "status": status_value,
        }))
        .expect("test CRD parses")
    }

    fn flat(n: &CustomResourceDefinitionNames) -> (String, String, String, String, Vec<String>) {
        (
            n.plural.clone(),
            n.singular.clone().unwrap_or_default(),
            n.kind.clone(),
            n.list_kind.clone().unwrap_or_default(),
            n.short_names.clone().unwrap_or_default(),
        )
    }

    fn flat_expected(n: Names) -> (String, String, String, String, Vec<String>) {
        (
            n.0.into(),
            n.1.into(),
            n.2.into(),
            n.3.into(),
            n.4.iter().map(|s| s.to_string()).collect(),
        )
    }

    const ACCEPTED: (&str, &str, &str, &str) =
        ("NamesAccepted", "True", "NoConflicts", "no conflicts found");
    const NOT_ACCEPTED: (&str, &str, &str, &str) = (
        "NamesAccepted",
        "False",
        "NotAccepted",
        "not all names are accepted",
    );

    #[test]
    fn go_sync_cases() {
        let full = || {
            Some(Names(
                "alfa",
                "delta-singular",
                "echo-kind",
                "foxtrot-listkind",
                &["golf-shortname-1", "hotel-shortname-2"],
            ))
        };
        let all = || {
            Names(
                "alfa",
                "delta-singular",
                "echo-kind",
                "foxtrot-listkind",
                &["golf-shortname-1", "hotel-shortname-2"],
            )
        };
        type Case<'a> = (
            &'a str,
            CustomResourceDefinition,
            Vec<CustomResourceDefinition>,
            Names<'a>,
            Option<(&'a str, &'a str)>,
        );
        let cases: Vec<Case> = vec![
            (
                "first resource",
                go_crd("alfa.bravo.com", None, None, &[]),
                vec![],
                Names("alfa", "", "", "", &[]),
                None,
            ),
            (
                "different groups",
                go_crd("alfa.bravo.com", full(), None, &[]),
                vec![go_crd("alfa.charlie.com", None, full(), &[])],
                all(),
                None,
            ),
            (
                "conflict plural to singular",
                go_crd("alfa.bravo.com", full(), None, &[]),
                vec![go_crd(
                    "india.bravo.com",
                    None,
                    Some(Names("india", "alfa", "", "", &[])),
                    &[],
                )],
                Names(
                    "",
                    "delta-singular",
                    "echo-kind",
                    "foxtrot-listkind",
                    &["golf-shortname-1", "hotel-shortname-2"],
                ),
                Some(("PluralConflict", r#""alfa" is already in use"#)),
            ),
            (
                "conflict singular to shortName",
                go_crd("alfa.bravo.com", full(), None, &[]),
                vec![go_crd(
                    "india.bravo.com",
                    None,
                    Some(Names("india", "indias", "", "", &["delta-singular"])),
                    &[],
                )],
                Names(
                    "alfa",
                    "",
                    "echo-kind",
                    "foxtrot-listkind",
                    &["golf-shortname-1", "hotel-shortname-2"],
                ),
                Some(("SingularConflict", r#""delta-singular" is already in use"#)),
            ),
            (
                "conflict on shortName to shortName",
                go_crd("alfa.bravo.com", full(), None, &[]),
                vec![go_crd(
                    "india.bravo.com",
                    None,
                    Some(Names("india", "indias", "", "", &["hotel-shortname-2"])),
                    &[],
                )],
                Names(
                    "alfa",
                    "delta-singular",
                    "echo-kind",
                    "foxtrot-listkind",
                    &[],
                ),
                Some((
                    "ShortNamesConflict",
                    r#""hotel-shortname-2" is already in use"#,
                )),
            ),
            (
                "conflict on kind to listkind",
                go_crd("alfa.bravo.com", full(), None, &[]),
                vec![go_crd(
                    "india.bravo.com",
                    None,
                    Some(Names("india", "indias", "", "echo-kind", &[])),
                    &[],
                )],
                Names(
                    "alfa",
                    "delta-singular",
                    "",
                    "foxtrot-listkind",
                    &["golf-shortname-1", "hotel-shortname-2"],
                ),
                Some(("KindConflict", r#""echo-kind" is already in use"#)),
            ),
            (
                "conflict on listkind to kind",
                go_crd("alfa.bravo.com", full(), None, &[]),
                vec![go_crd(
                    "india.bravo.com",
                    None,
                    Some(Names("india", "indias", "foxtrot-listkind", "", &[])),
                    &[],
                )],
                Names(
                    "alfa",
                    "delta-singular",
                    "echo-kind",
                    "",
                    &["golf-shortname-1", "hotel-shortname-2"],
                ),
                Some((
                    "ListKindConflict",
                    r#""foxtrot-listkind" is already in use"#,
                )),
            ),
            (
                "no conflict on resource and kind",
                go_crd("alfa.bravo.com", full(), None, &[]),
                vec![go_crd(
                    "india.bravo.com",
                    None,
                    Some(Names("india", "echo-kind", "", "", &[])),
                    &[],
                )],
                all(),
                None,
            ),
            (
                "merge on conflicts",
                go_crd(
                    "alfa.bravo.com",
                    full(),
                    Some(Names(
                        "zulu",
                        "yankee-singular",
                        "xray-kind",
                        "whiskey-listkind",
                        &["victor-shortname-1", "uniform-shortname-2"],
                    )),
                    &[],
                ),
                vec![go_crd(
                    "india.bravo.com",
                    None,
                    Some(Names(
                        "india",
                        "indias",
                        "foxtrot-listkind",
                        "",
                        &["delta-singular"],
                    )),
                    &[],
                )],
                Names(
                    "alfa",
                    "yankee-singular",
                    "echo-kind",
                    "whiskey-listkind",
                    &["golf-shortname-1", "hotel-shortname-2"],
                ),
                Some((
                    "ListKindConflict",
                    r#""foxtrot-listkind" is already in use"#,
                )),
            ),
            (
                "merge on conflicts shortNames as one",
                go_crd(
                    "alfa.bravo.com",
                    full(),
                    Some(Names(
                        "zulu",
                        "yankee-singular",
                        "xray-kind",
                        "whiskey-listkind",
                        &["victor-shortname-1", "uniform-shortname-2"],
                    )),
                    &[],
                ),
                vec![go_crd(
                    "india.bravo.com",
                    None,
                    Some(Names(
                        "india",
                        "indias",
                        "foxtrot-listkind",
                        "",
                        &["delta-singular", "golf-shortname-1"],
                    )),
                    &[],
                )],
                Names(
                    "alfa",
                    "yankee-singular",
                    "echo-kind",
                    "whiskey-listkind",
                    &["victor-shortname-1", "uniform-shortname-2"],
                ),
                Some((
                    "ListKindConflict",
                    r#""foxtrot-listkind" is already in use"#,
                )),
            ),
            (
                "no conflicts on self",
                go_crd("alfa.bravo.com", full(), full(), &[]),
                vec![go_crd("alfa.bravo.com", full(), full(), &[])],
                all(),
                None,
            ),
            (
                "no conflicts on self, remove shortname",
                go_crd(
                    "alfa.bravo.com",
                    Some(Names(
                        "alfa",
                        "delta-singular",
                        "echo-kind",
                        "foxtrot-listkind",
                        &["golf-shortname-1"],
                    )),
                    full(),
                    &[],
                ),
                vec![go_crd("alfa.bravo.com", full(), full(), &[])],
                Names(
                    "alfa",
                    "delta-singular",
                    "echo-kind",
                    "foxtrot-listkind",
                    &["golf-shortname-1"],
                ),
                None,
            ),
            (
                "installing before with true condition",
                go_crd("alfa.bravo.com", None, None, &[ACCEPTED]),
                vec![],
                Names("alfa", "", "", "", &[]),
                None,
            ),
            (
                "not installing before with false condition",
                go_crd("alfa.bravo.com", None, None, &[NOT_ACCEPTED]),
                vec![],
                Names("alfa", "", "", "", &[]),
                None,
            ),
            (
                "conflicting, installing before with true condition",
                go_crd("alfa.bravo.com", full(), None, &[ACCEPTED]),
                vec![go_crd(
                    "india.bravo.com",
                    None,
                    Some(Names("india", "alfa", "", "", &[])),
                    &[],
                )],
                Names(
                    "",
                    "delta-singular",
                    "echo-kind",
                    "foxtrot-listkind",
                    &["golf-shortname-1", "hotel-shortname-2"],
                ),
                Some(("PluralConflict", r#""alfa" is already in use"#)),
            ),
        ];
        for (name, crd, existing, expected_names, conflict) in cases {
            let out = accepted_names(&crd, &existing);
            assert_eq!(
                flat(&out.accepted_names),
                flat_expected(expected_names),
                "{name}"
            );
            let c = &out.names_accepted;
            let e = &out.established;
            match conflict {
                None => {
                    assert_eq!(
                        (c.status.as_str(), c.reason.as_deref()),
                        ("True", Some("NoConflicts")),
                        "{name}"
                    );
                    assert_eq!(
                        (e.status.as_str(), e.reason.as_deref()),
                        ("False", Some("Installing")),
                        "{name}"
                    );
                }
                Some((reason, message)) => {
                    assert_eq!(
                        (c.status.as_str(), c.reason.as_deref(), c.message.as_deref()),
                        ("False", Some(reason), Some(message)),
                        "{name}"
                    );
                    assert_eq!(
                        (e.status.as_str(), e.reason.as_deref()),
                        ("False", Some("NotAccepted")),
                        "{name}"
                    );
                }
            }
        }
    }
}
