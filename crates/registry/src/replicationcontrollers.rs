//! ReplicationControllers: defaults (`SetDefaults_ReplicationController`: selector and labels
//! from the template), validation (`ValidateReplicationControllerSpec`) and the [`Workload`]
//! entry that makes them a workload with a map selector that orphans by default.
//!
//! Mirrors `pkg/registry/core/replicationcontroller/strategy.go`, `pkg/apis/core/v1/defaults.go`
//! and `pkg/apis/core/validation/validation.go`.

use rkcm_apimachinery::catalog::ResourceInfo;
use serde_json::Value;

use super::object::{get, set, string_map};
use super::selector::LabelSelector;
use super::workload::{self, SelectorForm, Workload, WorkloadStrategy};
use super::FieldError;

const STATUS_COUNTERS: &[&str] = &[
    "replicas",
    "fullyLabeledReplicas",
    "readyReplicas",
    "availableReplicas",
    "observedGeneration",
];
const STATUS_BOUNDED: &[&str] = &["fullyLabeledReplicas", "readyReplicas", "availableReplicas"];

/// `SetDefaults_ReplicationController`.
fn default_rc(obj: &mut Value) {
    if let Some(labels) = get(obj, &["spec", "template", "metadata", "labels"])
        .filter(|v| v.is_object())
        .cloned()
    {
        let empty = |v: Option<&Value>| v.and_then(Value::as_object).is_none_or(|m| m.is_empty());
        if empty(get(obj, &["spec", "selector"])) {
            set(obj, &["spec", "selector"], Some(labels.clone()));
        }
        if empty(get(obj, &["metadata", "labels"])) {
            set(obj, &["metadata", "labels"], Some(labels));
        }
    }
    workload::default_replicas(obj);
    workload::default_template(obj);
}

/// `ValidateReplicationControllerSpec`.
fn validate_spec(obj: &Value) -> Vec<FieldError> {
    let mut errs = workload::validate_counts(obj);
    let selector_value = get(obj, &["spec", "selector"]);
    let selector = LabelSelector::from_map(&string_map(selector_value));
    if selector.is_empty() {
        errs.push(FieldError::required("spec.selector", ""));
    }
    errs.extend(super::meta::validate_labels(
        selector_value,
        "spec.selector",
    ));
    errs.extend(workload::validate_template(
        get(obj, &["spec", "template"]),
        &selector,
        "spec.template",
        "ReplicationController",
    ));
    errs
}

/// How replication controllers differ from other workloads
/// (`pkg/registry/core/replicationcontroller/strategy.go`).
pub(crate) const REPLICATION_CONTROLLER: Workload = Workload {
    default: default_rc,
    validate_spec,
    selector: SelectorForm::Map,
    status_counters: STATUS_COUNTERS,
    status_bounded: STATUS_BOUNDED,
    initial_status: &["replicas"],
    status_replicas_selectable: true,
    // core/v1 keeps orphaning for backwards compatibility.
    orphans_dependents: true,
    ..Workload::BASE
};

/// The strategy of `info` (core/v1 replication controllers).
pub(crate) fn strategy(info: &'static ResourceInfo) -> WorkloadStrategy {
    WorkloadStrategy::new(info, &REPLICATION_CONTROLLER)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Strategy;
    use rkcm_apimachinery::catalog;
    use serde_json::json;

    fn strategy() -> WorkloadStrategy {
        super::strategy(catalog::by_kind("v1", "ReplicationController").expect("served"))
    }

    fn rc() -> Value {
        json!({
            "apiVersion": "v1", "kind": "ReplicationController",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {
                "template": {
                    "metadata": {"labels": {"app": "web", "tier": "fe"}},
                    "spec": {"containers": [{"name": "nginx", "image": "nginx"}]}
                }
            }
        })
    }

    #[test]
    fn selector_and_labels_default_from_the_template() {
        let mut obj = rc();
        strategy().default(&mut obj);
        assert_eq!(obj["spec"]["selector"], json!({"app": "web", "tier": "fe"}));
        assert_eq!(
            obj["metadata"]["labels"],
            json!({"app": "web", "tier": "fe"})
        );
        assert_eq!(obj["spec"]["replicas"], 1);
        strategy().prepare_for_create(&mut obj);
        assert!(
            strategy().validate_create(&obj).is_empty(),
            "{:?}",
            strategy().validate_create(&obj)
        );
        assert_eq!(
            strategy().scale_replicas(&obj),
            Some((1, 0, "app=web,tier=fe".to_string()))
        );
    }

    #[test]
    fn explicit_selector_and_labels_are_kept() {
        let mut obj = rc();
        obj["spec"]["selector"] = json!({"app": "web"});
        obj["metadata"]["labels"] = json!({"owner": "me"});
        strategy().default(&mut obj);
        assert_eq!(obj["spec"]["selector"], json!({"app": "web"}));
        assert_eq!(obj["metadata"]["labels"], json!({"owner": "me"}));
    }

    #[test]
    fn a_selector_that_does_not_match_is_invalid_and_an_absent_one_required() {
        let mut obj = rc();
        obj["spec"]["selector"] = json!({"app": "db"});
        strategy().default(&mut obj);
        let errs = strategy().validate_create(&obj);
        assert_eq!(errs.len(), 1);
        assert!(errs[0]
            .message
            .ends_with("`selector` does not match template `labels`"));
        let mut bare = json!({"metadata": {"name": "x", "namespace": "default"}, "spec": {}});
        strategy().default(&mut bare);
        let fields: Vec<String> = strategy()
            .validate_create(&bare)
            .iter()
            .map(|e| e.field.clone())
            .collect();
        assert_eq!(fields, ["spec.selector", "spec.template"]);
    }

    #[test]
    fn rcs_orphan_dependents_by_default() {
        assert!(strategy().default_propagation_orphans());
    }
}
