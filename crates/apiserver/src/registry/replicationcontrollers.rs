//! ReplicationControllers: defaults (`SetDefaults_ReplicationController`: selector and labels
//! from the template), validation (`ValidateReplicationControllerSpec`), generation bumps,
//! status validation, orphaning by default in core/v1, and `/scale` with a map selector.
//!
//! Mirrors `pkg/registry/core/replicationcontroller/strategy.go`, `pkg/apis/core/v1/defaults.go`
//! and `pkg/apis/core/validation/validation.go`.

use rkcm_apimachinery::catalog::ResourceInfo;
use serde_json::Value;

use super::generic::GenericStrategy;
use super::object::{get, get_i64, set, string_map};
use super::selector::LabelSelector;
use super::workload;
use super::{FieldError, GracefulDelete, Strategy};

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

/// The strategy of core/v1 replication controllers.
pub(crate) struct ReplicationControllerStrategy {
    base: GenericStrategy,
}

impl ReplicationControllerStrategy {
    /// The strategy of `info` (core/v1 replication controllers).
    pub(crate) fn new(info: &'static ResourceInfo) -> Self {
        ReplicationControllerStrategy {
            base: GenericStrategy::new(info)
                .tracking_generation()
                .orphaning_dependents(),
        }
    }
}

impl Strategy for ReplicationControllerStrategy {
    fn resource(&self) -> &'static ResourceInfo {
        self.base.resource()
    }

    fn default(&self, obj: &mut Value) {
        default_rc(obj);
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        self.base.prepare_for_create(obj);
        // The empty status as kube serializes it (`replicas` has no omitempty).
        super::object::set(obj, &["status"], Some(serde_json::json!({"replicas": 0})));
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        self.base.prepare_for_update(new, old);
    }

    fn prepare_for_status_update(&self, new: &mut Value, old: &Value) {
        // kube defaults every decoded body, status updates included.
        self.default(new);
        self.base.prepare_for_status_update(new, old);
    }

    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = self.base.validate_create(obj);
        errs.extend(validate_spec(obj));
        errs
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = self.base.validate_update(new, old);
        errs.extend(validate_spec(new));
        errs.extend(workload::validate_replica_status(
            new,
            STATUS_COUNTERS,
            STATUS_BOUNDED,
        ));
        errs
    }

    fn field_value(&self, obj: &Value, field: &str) -> Option<String> {
        match field {
            "status.replicas" => Some(
                get_i64(obj, &["status", "replicas"])
                    .unwrap_or(0)
                    .to_string(),
            ),
            _ => self.base.field_value(obj, field),
        }
    }

    fn graceful_delete(&self, obj: &Value, requested_grace: Option<i64>) -> GracefulDelete {
        self.base.graceful_delete(obj, requested_grace)
    }

    fn default_propagation_orphans(&self) -> bool {
        // core/v1 keeps orphaning for backwards compatibility.
        self.base.default_propagation_orphans()
    }

    fn scale_replicas(&self, obj: &Value) -> Option<(i32, i32, String)> {
        let selector =
            LabelSelector::from_map(&string_map(get(obj, &["spec", "selector"]))).render();
        Some(workload::scale_of(obj, selector))
    }

    fn set_scale_replicas(&self, obj: &mut Value, replicas: i32) -> Result<(), FieldError> {
        workload::set_replicas(obj, replicas)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rkcm_apimachinery::catalog;
    use serde_json::json;

    fn strategy() -> ReplicationControllerStrategy {
        ReplicationControllerStrategy::new(
            catalog::by_kind("v1", "ReplicationController").expect("served"),
        )
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
