//! What reconciling a stored API Priority and Fairness object against its bootstrap
//! configuration asks for (`pkg/registry/flowcontrol/ensurer/strategy.go`): mandatory objects
//! always get kube's spec back, suggested ones only while `apf.kubernetes.io/autoupdate-spec`
//! says so (or, without a boolean there, while the operator has not changed them, generation 1),
//! and objects the server once managed but no longer knows are deleted.

use serde_json::{json, Value};

use super::objects::{AUTOUPDATE_ANNOTATION, EXEMPT};

/// The maintenance strategy of a bootstrap object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// Operators' changes are stomped (`NewMandatoryEnsureStrategy`).
    Mandatory,
    /// Operators may edit or opt out (`NewSuggestedEnsureStrategy`).
    Suggested,
}

/// Go's `strconv.ParseBool`.
fn parse_bool(value: &str) -> Option<bool> {
    match value {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

fn annotation(obj: &Value) -> Option<&str> {
    obj.get("metadata")?
        .get("annotations")?
        .get(AUTOUPDATE_ANNOTATION)?
        .as_str()
}

/// `shouldUpdateSpec`: the annotation's boolean, else whether the operator left the object as
/// created (generation 1).
pub fn should_update_spec(current: &Value) -> bool {
    if let Some(auto) = annotation(current).and_then(parse_bool) {
        return auto;
    }
    current
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        == Some(1)
}

/// `shouldUpdateAnnotation`: whether the annotation does not already say `desired`.
pub fn should_update_annotation(current: &Value, desired: bool) -> bool {
    annotation(current).and_then(parse_bool) != Some(desired)
}

/// `SpecEqualish`: the specs are equal, except that the `exempt` level's `exempt` fields are
/// the operator's to tune (`plcSpecEqualish`). The bootstrap objects carry v1's defaults already.
pub fn spec_equalish(expected: &Value, actual: &Value) -> bool {
    let mut expected_spec = expected.get("spec").cloned().unwrap_or(Value::Null);
    let actual_spec = actual.get("spec").cloned().unwrap_or(Value::Null);
    let is_level =
        expected.get("kind").and_then(Value::as_str) == Some("PriorityLevelConfiguration");
    if is_level && crate::object::name(expected) == EXEMPT {
        let Some(actual_exempt) = actual_spec.get("exempt").filter(|e| e.is_object()) else {
            return false;
        };
        for field in ["nominalConcurrencyShares", "lendablePercent"] {
            match actual_exempt.get(field) {
                Some(v) => expected_spec["exempt"][field] = v.clone(),
                None => {
                    if let Some(e) = expected_spec["exempt"].as_object_mut() {
                        e.remove(field);
                    }
                }
            }
        }
    }
    expected_spec == actual_spec
}

/// `ReviseIfNeeded`: the object to write in place of `current`, or `None` when it is up to date
/// or the operator keeps it.
pub fn revise_if_needed(strategy: Strategy, current: &Value, bootstrap: &Value) -> Option<Value> {
    let auto_update_spec = strategy == Strategy::Mandatory || should_update_spec(current);
    let update_annotation = should_update_annotation(current, auto_update_spec);
    let spec_changed = auto_update_spec && !spec_equalish(bootstrap, current);
    if !(update_annotation || spec_changed) {
        return None;
    }
    let mut revised = current.clone();
    if spec_changed {
        revised["spec"] = bootstrap.get("spec").cloned().unwrap_or(Value::Null);
    }
    if update_annotation {
        let meta = &mut revised["metadata"];
        if !meta.get("annotations").is_some_and(Value::is_object) {
            meta["annotations"] = json!({});
        }
        meta["annotations"][AUTOUPDATE_ANNOTATION] = json!(auto_update_spec.to_string());
    }
    Some(revised)
}

/// `RemoveUnwantedObjects`: whether `obj`, whose name is not among the bootstrap objects',
/// is one the server managed (annotated `autoupdate-spec` true) and is to be deleted. Objects
/// without the annotation, or with `false` or a malformed value, are the operator's.
pub fn is_unwanted(obj: &Value, wanted: &[&str]) -> bool {
    !wanted.contains(&crate::object::name(obj))
        && annotation(obj).and_then(parse_bool) == Some(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flowcontrol_bootstrap::objects::bootstrap;

    fn level(name: &str) -> Value {
        let b = bootstrap();
        b.mandatory_levels
            .into_iter()
            .chain(b.suggested_levels)
            .find(|l| crate::object::name(l) == name)
            .expect("bootstrap level")
    }

    fn with(mut obj: Value, annotation: Option<&str>, generation: i64) -> Value {
        obj["metadata"]["generation"] = json!(generation);
        match annotation {
            Some(a) => obj["metadata"]["annotations"][AUTOUPDATE_ANNOTATION] = json!(a),
            None => {
                obj["metadata"]
                    .as_object_mut()
                    .expect("metadata")
                    .remove("annotations");
            }
        }
        obj
    }

    fn changed_shares(obj: &Value) -> Value {
        let mut obj = obj.clone();
        obj["spec"]["limited"]["nominalConcurrencyShares"] = json!(7);
        obj
    }

    #[test]
    fn suggested_object_with_auto_update_true_gets_the_bootstrap_spec() {
        let boot = level("workload-low");
        let current = with(changed_shares(&boot), Some("true"), 2);
        let revised = revise_if_needed(Strategy::Suggested, &current, &boot).expect("update");
        assert_eq!(revised["spec"], boot["spec"]);
        assert_eq!(
            revised["metadata"]["annotations"][AUTOUPDATE_ANNOTATION],
            "true"
        );
    }

    #[test]
    fn suggested_object_with_auto_update_false_is_left_alone() {
        let boot = level("workload-low");
        let current = with(changed_shares(&boot), Some("false"), 2);
        assert_eq!(revise_if_needed(Strategy::Suggested, &current, &boot), None);
    }

    #[test]
    fn suggested_object_without_annotation_is_updated_only_at_generation_one() {
        let boot = level("global-default");
        let fresh = with(changed_shares(&boot), None, 1);
        let revised = revise_if_needed(Strategy::Suggested, &fresh, &boot).expect("update");
        assert_eq!(revised["spec"], boot["spec"]);
        assert_eq!(
            revised["metadata"]["annotations"][AUTOUPDATE_ANNOTATION],
            "true"
        );

        // Changed by the operator: only the annotation records that it is theirs now.
        let edited = with(changed_shares(&boot), None, 2);
        let revised = revise_if_needed(Strategy::Suggested, &edited, &boot).expect("update");
        assert_eq!(revised["spec"], edited["spec"]);
        assert_eq!(
            revised["metadata"]["annotations"][AUTOUPDATE_ANNOTATION],
            "false"
        );
    }

    #[test]
    fn malformed_annotation_counts_as_missing() {
        let boot = level("system");
        let edited = with(changed_shares(&boot), Some("yes please"), 3);
        let revised = revise_if_needed(Strategy::Suggested, &edited, &boot).expect("update");
        assert_eq!(
            revised["metadata"]["annotations"][AUTOUPDATE_ANNOTATION],
            "false"
        );
        assert_eq!(revised["spec"], edited["spec"]);
    }

    #[test]
    fn mandatory_object_is_always_put_back() {
        let boot = level("catch-all");
        let current = with(changed_shares(&boot), Some("false"), 5);
        let revised = revise_if_needed(Strategy::Mandatory, &current, &boot).expect("update");
        assert_eq!(revised["spec"], boot["spec"]);
        assert_eq!(
            revised["metadata"]["annotations"][AUTOUPDATE_ANNOTATION],
            "true"
        );
    }

    #[test]
    fn up_to_date_object_needs_nothing() {
        let boot = level("catch-all");
        let current = with(boot.clone(), Some("true"), 1);
        assert_eq!(revise_if_needed(Strategy::Mandatory, &current, &boot), None);
        assert_eq!(revise_if_needed(Strategy::Suggested, &current, &boot), None);
    }

    #[test]
    fn exempt_level_keeps_the_operators_concurrency_settings() {
        // TestPriorityLevelConfigurationSpecEqualish: exempt's fields are tunable.
        let boot = level(EXEMPT);
        let mut tuned = with(boot.clone(), Some("true"), 2);
        tuned["spec"]["exempt"] = json!({"nominalConcurrencyShares": 42, "lendablePercent": 33});
        assert!(spec_equalish(&boot, &tuned));
        assert_eq!(revise_if_needed(Strategy::Mandatory, &tuned, &boot), None);
        let mut broken = tuned.clone();
        broken["spec"] = json!({"type": "Exempt"});
        assert!(!spec_equalish(&boot, &broken));
        let mut limited = tuned;
        limited["spec"]["type"] = json!("Limited");
        assert!(!spec_equalish(&boot, &limited));
    }

    #[test]
    fn only_managed_objects_outside_the_bootstrap_are_unwanted() {
        let wanted = ["catch-all", "exempt"];
        let obj = |name: &str, a: Option<&str>| {
            let mut o = with(level("catch-all"), a, 1);
            o["metadata"]["name"] = json!(name);
            o
        };
        assert!(is_unwanted(&obj("retired", Some("true")), &wanted));
        assert!(!is_unwanted(&obj("retired", Some("false")), &wanted));
        assert!(!is_unwanted(&obj("mine", None), &wanted));
        assert!(!is_unwanted(&obj("odd", Some("maybe")), &wanted));
        assert!(!is_unwanted(&obj("catch-all", Some("true")), &wanted));
    }
}
