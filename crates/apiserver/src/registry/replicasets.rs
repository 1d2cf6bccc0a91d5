//! ReplicaSets: defaults (`SetDefaults_ReplicaSet`), validation (`ValidateReplicaSetSpec`),
//! the immutable selector, generation bumps, status validation, `status.replicas` field
//! selector and `/scale`.
//!
//! Mirrors `pkg/registry/apps/replicaset/strategy.go` and `pkg/apis/apps/validation`.

use rkcm_apimachinery::catalog::ResourceInfo;
use serde_json::Value;

use super::generic::GenericStrategy;
use super::meta::validate_immutable;
use super::object::{get, get_i64};
use super::workload::{self, drop_terminating_replicas};
use super::{FieldError, GracefulDelete, Strategy};

const STATUS_COUNTERS: &[&str] = &[
    "replicas",
    "fullyLabeledReplicas",
    "readyReplicas",
    "availableReplicas",
    "observedGeneration",
    "terminatingReplicas",
];
const STATUS_BOUNDED: &[&str] = &["fullyLabeledReplicas", "readyReplicas", "availableReplicas"];

/// `ValidateReplicaSetSpec`.
fn validate_spec(obj: &Value) -> Vec<FieldError> {
    let mut errs = workload::validate_counts(obj);
    errs.extend(workload::validate_apps_selector_and_template(obj));
    errs
}

/// The strategy of apps/v1 replica sets.
pub(crate) struct ReplicaSetStrategy {
    base: GenericStrategy,
}

impl ReplicaSetStrategy {
    /// The strategy of `info` (apps/v1 replica sets).
    pub(crate) fn new(info: &'static ResourceInfo) -> Self {
        ReplicaSetStrategy {
            base: GenericStrategy::new(info).tracking_generation(),
        }
    }
}

impl Strategy for ReplicaSetStrategy {
    fn resource(&self) -> &'static ResourceInfo {
        self.base.resource()
    }

    fn default(&self, obj: &mut Value) {
        workload::default_replicas(obj);
        workload::default_template(obj);
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
        drop_terminating_replicas(new, old);
    }

    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = self.base.validate_create(obj);
        errs.extend(validate_spec(obj));
        errs
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = self.base.validate_update(new, old);
        errs.extend(validate_spec(new));
        errs.extend(validate_immutable(
            get(new, &["spec", "selector"]),
            get(old, &["spec", "selector"]),
            "spec.selector",
        ));
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

    fn scale_replicas(&self, obj: &Value) -> Option<(i32, i32, String)> {
        Some(workload::apps_scale_of(obj))
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

    fn strategy() -> ReplicaSetStrategy {
        ReplicaSetStrategy::new(catalog::by_kind("apps/v1", "ReplicaSet").expect("served"))
    }

    fn created() -> Value {
        let mut rs = json!({
            "apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": "web-abc", "namespace": "default", "uid": "u1"},
            "spec": {
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "nginx", "image": "nginx"}]}
                }
            }
        });
        strategy().default(&mut rs);
        strategy().prepare_for_create(&mut rs);
        rs
    }

    fn messages(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(FieldError::message_with_field).collect()
    }

    #[test]
    fn replicas_default_to_one_and_generation_starts_at_one() {
        let rs = created();
        assert_eq!(rs["spec"]["replicas"], 1);
        assert_eq!(rs["metadata"]["generation"], 1);
        assert_eq!(rs["spec"]["template"]["spec"]["dnsPolicy"], "ClusterFirst");
        assert!(
            strategy().validate_create(&rs).is_empty(),
            "{:?}",
            strategy().validate_create(&rs)
        );
    }

    #[test]
    fn negative_replicas_and_mismatched_selectors_are_invalid() {
        let mut rs = created();
        rs["spec"]["replicas"] = json!(-2);
        rs["spec"]["selector"]["matchLabels"]["app"] = json!("db");
        assert_eq!(
            messages(&strategy().validate_create(&rs)),
            [
                "spec.replicas: Invalid value: -2: must be greater than or equal to 0",
                "spec.template.metadata.labels: Invalid value: {\"app\":\"web\"}: `selector` does not match template `labels`"
            ]
        );
    }

    #[test]
    fn selector_is_immutable_and_spec_changes_bump_generation() {
        let s = strategy();
        let old = created();
        let mut new = old.clone();
        new["spec"]["replicas"] = json!(3);
        s.prepare_for_update(&mut new, &old);
        assert_eq!(new["metadata"]["generation"], 2);
        assert!(s.validate_update(&new, &old).is_empty());
        new["spec"]["selector"] = json!({"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "app", "operator": "Exists"}]});
        let m = messages(&s.validate_update(&new, &old));
        assert_eq!(m.len(), 1);
        assert!(m[0].ends_with("field is immutable"));
    }

    #[test]
    fn status_updates_ignore_the_spec_and_are_validated() {
        let s = strategy();
        let old = created();
        let mut new = old.clone();
        new["spec"]["replicas"] = json!(7);
        new["status"] = json!({"replicas": 1, "fullyLabeledReplicas": 2, "readyReplicas": 1, "availableReplicas": 1, "terminatingReplicas": 1});
        s.prepare_for_status_update(&mut new, &old);
        assert_eq!(new["spec"]["replicas"], 1);
        assert_eq!(new["metadata"]["generation"], 1);
        assert!(
            new["status"].get("terminatingReplicas").is_none(),
            "feature is off in 1.33"
        );
        assert_eq!(
            messages(&s.validate_update(&new, &old)),
            ["status.fullyLabeledReplicas: Invalid value: 2: cannot be greater than status.replicas"]
        );
        assert_eq!(s.field_value(&new, "status.replicas").as_deref(), Some("1"));
    }
}
