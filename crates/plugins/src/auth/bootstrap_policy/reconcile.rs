//! How a stored bootstrap object is brought up to date with kube's default
//! (`pkg/registry/rbac/reconciliation/reconcile_role.go`, `reconcile_rolebindings.go`): missing
//! annotations, labels, rules, aggregation selectors and subjects are added, what users added is
//! kept, and an object annotated `rbac.authorization.kubernetes.io/autoupdate: "false"` is left
//! alone.

use k8s_openapi::api::rbac::v1::PolicyRule;
use serde_json::{json, Map, Value};

use rkcm_server::auth::authorization::covers::covers;

/// The annotation that lets users keep a default object as they changed it.
pub const AUTOUPDATE_ANNOTATION: &str = "rbac.authorization.kubernetes.io/autoupdate";

/// What reconciling a stored object against the default asks for.
#[derive(Clone, Debug, PartialEq)]
pub enum Reconciled {
    /// Nothing to do (up to date, or protected).
    Unchanged,
    /// Write this object in place.
    Update(Value),
    /// Delete the stored object and create this one (a binding's role reference changed).
    Recreate(Value),
}

/// Whether `obj` carries `autoupdate: "false"` (`IsProtected`).
pub fn is_protected(obj: &Value) -> bool {
    obj.pointer(&format!(
        "/metadata/annotations/{}",
        AUTOUPDATE_ANNOTATION.replace('/', "~1")
    ))
    .and_then(Value::as_str)
        == Some("false")
}

/// `merge(expected, existing)`: the existing entries win, the missing defaults are added.
fn merge_map(existing: Option<&Value>, expected: Option<&Value>) -> Option<Value> {
    let mut out: Map<String, Value> = expected
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    for (k, v) in existing.and_then(Value::as_object).into_iter().flatten() {
        out.insert(k.clone(), v.clone());
    }
    (!out.is_empty()).then_some(Value::Object(out))
}

fn merge_metadata(result: &mut Value, expected: &Value) {
    for field in ["annotations", "labels"] {
        let merged = merge_map(
            result.pointer(&format!("/metadata/{field}")),
            expected.pointer(&format!("/metadata/{field}")),
        );
        if let (Some(m), Some(meta)) = (merged, result.get_mut("metadata")) {
            meta[field] = m;
        }
    }
}

fn rules_of(obj: &Value) -> Vec<PolicyRule> {
    obj.get("rules")
        .and_then(|r| serde_json::from_value(r.clone()).ok())
        .unwrap_or_default()
}

fn array<'a>(obj: &'a Value, pointer: &str) -> Vec<&'a Value> {
    obj.pointer(pointer)
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default()
}

/// `computeReconciledRole` for a Role or ClusterRole, keeping extra permissions.
pub fn reconcile_role(existing: &Value, expected: &Value) -> Reconciled {
    if is_protected(existing) {
        return Reconciled::Unchanged;
    }
    let mut result = existing.clone();
    merge_metadata(&mut result, expected);
    let (_, missing) = covers(&rules_of(existing), &rules_of(expected));
    if !missing.is_empty() {
        let mut rules: Vec<Value> = array(existing, "/rules").into_iter().cloned().collect();
        rules.extend(missing.iter().map(|r| json!(r)));
        result["rules"] = Value::Array(rules);
    }
    if let Some(want) = expected.get("aggregationRule").filter(|a| !a.is_null()) {
        match existing.get("aggregationRule").filter(|a| !a.is_null()) {
            None => result["aggregationRule"] = want.clone(),
            Some(have) => {
                let have_selectors = array(have, "/clusterRoleSelectors");
                let missing: Vec<Value> = array(want, "/clusterRoleSelectors")
                    .into_iter()
                    .filter(|s| !have_selectors.contains(s))
                    .cloned()
                    .collect();
                if !missing.is_empty() {
                    let mut all: Vec<Value> = have_selectors.into_iter().cloned().collect();
                    all.extend(missing);
                    result["aggregationRule"]["clusterRoleSelectors"] = Value::Array(all);
                }
            }
        }
    }
    if result == *existing {
        Reconciled::Unchanged
    } else {
        Reconciled::Update(result)
    }
}

/// `computeReconciledRoleBinding`: missing subjects added (existing ones kept); a changed role
/// reference means delete and create.
pub fn reconcile_binding(existing: &Value, expected: &Value) -> Reconciled {
    if is_protected(existing) {
        return Reconciled::Unchanged;
    }
    let mut result = existing.clone();
    merge_metadata(&mut result, expected);
    let have = array(existing, "/subjects");
    let missing: Vec<Value> = array(expected, "/subjects")
        .into_iter()
        .filter(|s| !have.contains(s))
        .cloned()
        .collect();
    if !missing.is_empty() {
        let mut all: Vec<Value> = have.into_iter().cloned().collect();
        all.extend(missing);
        result["subjects"] = Value::Array(all);
    }
    if existing.get("roleRef") != expected.get("roleRef") {
        result["roleRef"] = expected["roleRef"].clone();
        return Reconciled::Recreate(result);
    }
    if result == *existing {
        Reconciled::Unchanged
    } else {
        Reconciled::Update(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn role(annotations: Value, rules: Value) -> Value {
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "r", "annotations": annotations}, "rules": rules})
    }

    fn get_pods() -> Value {
        json!({"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]})
    }

    fn list_pods() -> Value {
        json!({"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]})
    }

    /// Cases of `TestComputeReconciledRoleRules` (reconcile_role_test.go).
    #[test]
    fn missing_rules_are_added_and_extra_ones_kept() {
        let expected = role(json!({AUTOUPDATE_ANNOTATION: "true"}), json!([get_pods()]));
        // empty → gets the rule and the annotation
        let Reconciled::Update(r) = reconcile_role(&role(json!({}), json!([])), &expected) else {
            panic!("update expected");
        };
        assert_eq!(r["rules"], json!([get_pods()]));
        assert_eq!(r["metadata"]["annotations"][AUTOUPDATE_ANNOTATION], "true");
        // a superset is left as it is
        let have = role(
            json!({AUTOUPDATE_ANNOTATION: "true"}),
            json!([get_pods(), list_pods()]),
        );
        assert_eq!(reconcile_role(&have, &expected), Reconciled::Unchanged);
        // a different rule: the expected one is added after it
        let have = role(json!({AUTOUPDATE_ANNOTATION: "true"}), json!([list_pods()]));
        let Reconciled::Update(r) = reconcile_role(&have, &expected) else {
            panic!("update expected");
        };
        assert_eq!(r["rules"], json!([list_pods(), get_pods()]));
        // protected: nothing changes
        let have = role(json!({AUTOUPDATE_ANNOTATION: "false"}), json!([]));
        assert_eq!(reconcile_role(&have, &expected), Reconciled::Unchanged);
    }

    #[test]
    fn user_annotations_and_labels_win_and_missing_ones_are_added() {
        let mut expected = role(
            json!({AUTOUPDATE_ANNOTATION: "true", "a": "kube"}),
            json!([]),
        );
        expected["metadata"]["labels"] = json!({"kubernetes.io/bootstrapping": "rbac-defaults"});
        let have = role(json!({"a": "mine", "b": "mine"}), json!([]));
        let Reconciled::Update(r) = reconcile_role(&have, &expected) else {
            panic!("update expected");
        };
        assert_eq!(
            r["metadata"]["annotations"],
            json!({AUTOUPDATE_ANNOTATION: "true", "a": "mine", "b": "mine"})
        );
        assert_eq!(
            r["metadata"]["labels"]["kubernetes.io/bootstrapping"],
            "rbac-defaults"
        );
    }

    /// Cases of `TestComputeReconciledRoleAggregationRules`.
    #[test]
    fn missing_aggregation_selectors_are_added() {
        let sel = |k: &str| json!({"matchLabels": {k: "true"}});
        let mut expected = role(json!({}), json!([]));
        expected["aggregationRule"] = json!({"clusterRoleSelectors": [sel("a")]});
        let have = role(json!({}), json!([]));
        let Reconciled::Update(r) = reconcile_role(&have, &expected) else {
            panic!("update expected");
        };
        assert_eq!(r["aggregationRule"], expected["aggregationRule"]);
        let mut have = role(json!({}), json!([get_pods()]));
        have["aggregationRule"] = json!({"clusterRoleSelectors": [sel("b")]});
        let Reconciled::Update(r) = reconcile_role(&have, &expected) else {
            panic!("update expected");
        };
        assert_eq!(
            r["aggregationRule"]["clusterRoleSelectors"],
            json!([sel("b"), sel("a")])
        );
        // aggregated rules stay
        assert_eq!(r["rules"], json!([get_pods()]));
    }

    /// Cases of `TestDiffObjectReferenceLists` / `TestComputeUpdate` (reconcile_rolebindings_test.go).
    #[test]
    fn bindings_gain_missing_subjects_and_are_recreated_for_a_new_role() {
        let b = |role: &str, subjects: Value, annotations: Value| {
            json!({"metadata": {"name": "b", "annotations": annotations},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
                "subjects": subjects})
        };
        let u =
            |n: &str| json!({"kind": "User", "name": n, "apiGroup": "rbac.authorization.k8s.io"});
        let expected = b("r", json!([u("a")]), json!({}));
        assert_eq!(
            reconcile_binding(&b("r", json!([u("a"), u("b")]), json!({})), &expected),
            Reconciled::Unchanged
        );
        let Reconciled::Update(r) =
            reconcile_binding(&b("r", json!([u("b")]), json!({})), &expected)
        else {
            panic!("update expected");
        };
        assert_eq!(r["subjects"], json!([u("b"), u("a")]));
        let Reconciled::Recreate(r) =
            reconcile_binding(&b("other", json!([u("a")]), json!({})), &expected)
        else {
            panic!("recreate expected");
        };
        assert_eq!(r["roleRef"]["name"], "r");
        let protected = b("other", json!([]), json!({AUTOUPDATE_ANNOTATION: "false"}));
        assert_eq!(
            reconcile_binding(&protected, &expected),
            Reconciled::Unchanged
        );
    }
}
