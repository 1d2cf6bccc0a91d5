//! ReplicaSets: defaults (`SetDefaults_ReplicaSet`), validation (`ValidateReplicaSetSpec`) and
//! the [`Workload`] entry that makes them a workload with an immutable selector and a
//! `status.replicas` field selector.
//!
//! Mirrors `pkg/registry/apps/replicaset/strategy.go` and `pkg/apis/apps/validation`.

use rkcm_apimachinery::catalog::ResourceInfo;
use serde_json::Value;

use super::workload::{self, Workload, WorkloadStrategy};
use super::FieldError;

const STATUS_COUNTERS: &[&str] = &[
    "replicas",
    "fullyLabeledReplicas",
    "readyReplicas",
    "availableReplicas",
    "observedGeneration",
    "terminatingReplicas",
];
const STATUS_BOUNDED: &[&str] = &["fullyLabeledReplicas", "readyReplicas", "availableReplicas"];

/// `SetDefaults_ReplicaSet`.
fn default_replica_set(obj: &mut Value) {
    workload::default_replicas(obj);
    workload::default_template(obj);
}

/// `ValidateReplicaSetSpec`.
fn validate_spec(obj: &Value) -> Vec<FieldError> {
    let mut errs = workload::validate_counts(obj);
    errs.extend(workload::validate_apps_selector_and_template(obj));
    errs
}

/// How replica sets differ from other workloads (`pkg/registry/apps/replicaset/strategy.go`).
pub(crate) const REPLICA_SET: Workload = Workload {
    default: default_replica_set,
    validate_spec,
    immutable_selector: true,
    status_counters: STATUS_COUNTERS,
    status_bounded: STATUS_BOUNDED,
    initial_status: &["replicas"],
    gated_terminating_replicas: true,
    status_replicas_selectable: true,
    ..Workload::BASE
};

/// The strategy of `info` (apps/v1 replica sets).
pub(crate) fn strategy(info: &'static ResourceInfo) -> WorkloadStrategy {
    WorkloadStrategy::new(info, &REPLICA_SET)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Strategy;
    use rkcm_apimachinery::catalog;
    use serde_json::json;

    fn strategy() -> WorkloadStrategy {
        super::strategy(catalog::by_kind("apps/v1", "ReplicaSet").expect("served"))
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
