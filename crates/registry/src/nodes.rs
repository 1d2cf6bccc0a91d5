//! Nodes: cluster-scoped, status settable on create, allocatable defaulted from capacity,
//! taint validation, immutable pod CIDRs and provider ID, and the `spec.unschedulable`
//! field selector.
//!
//! Mirrors `pkg/registry/core/node/strategy.go` and the node parts of core validation.

use std::collections::BTreeSet;

use rkcm_apimachinery::catalog::ResourceInfo;
use serde_json::{json, Value};

use super::generation::prepare_create_meta;
use super::generic::GenericStrategy;
use super::meta::{is_qualified_name, is_valid_label_value};
use super::object::{get, get_str, set};
use super::{FieldError, GracefulDelete, Strategy};

/// `validateNodeTaints`.
fn validate_taints(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut seen = BTreeSet::new();
    for (i, t) in get(obj, &["spec", "taints"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let p = format!("spec.taints[{i}]");
        let key = get_str(t, &["key"]).unwrap_or("");
        for m in is_qualified_name(key) {
            errs.push(FieldError::invalid(format!("{p}.key"), &json!(key), &m));
        }
        if let Some(v) = get_str(t, &["value"]) {
            for m in is_valid_label_value(v) {
                errs.push(FieldError::invalid(format!("{p}.value"), &json!(v), &m));
            }
        }
        let effect = get_str(t, &["effect"]).unwrap_or("");
        match effect {
            "" => errs.push(FieldError::required(format!("{p}.effect"), "")),
            "NoSchedule" | "PreferNoSchedule" | "NoExecute" => {}
            other => errs.push(FieldError::not_supported(
                format!("{p}.effect"),
                &json!(other),
                &["NoSchedule", "PreferNoSchedule", "NoExecute"],
            )),
        }
        if !seen.insert((key.to_string(), effect.to_string())) {
            errs.push(FieldError::duplicate(
                format!("spec.taints[{i}]"),
                &json!(format!("{key}:{effect}")),
            ));
        }
    }
    errs
}

/// The strategy of nodes.
pub(crate) struct NodeStrategy {
    base: GenericStrategy,
}

impl NodeStrategy {
    /// The strategy of `info` (core/v1 nodes).
    pub(crate) fn new(info: &'static ResourceInfo) -> Self {
        NodeStrategy {
            base: GenericStrategy::new(info),
        }
    }
}

impl Strategy for NodeStrategy {
    fn resource(&self) -> &'static ResourceInfo {
        self.base.resource()
    }

    fn default(&self, obj: &mut Value) {
        for list in ["capacity", "allocatable"] {
            if let Some(m) = super::object::existing_object_mut(obj, &["status", list]) {
                rkcm_apimachinery::quantity::canonicalize_json_numbers(m);
            }
        }
        // SetDefaults_NodeStatus: allocatable defaults to capacity.
        if get(obj, &["status", "allocatable"]).is_none_or(Value::is_null) {
            if let Some(capacity) = get(obj, &["status", "capacity"])
                .filter(|v| v.is_object())
                .cloned()
            {
                set(obj, &["status", "allocatable"], Some(capacity));
            }
        }
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        // Nodes may set every field, status included, on create.
        prepare_create_meta(obj, false);
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
        errs.extend(validate_taints(obj));
        errs
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = self.base.validate_update(new, old);
        errs.extend(validate_taints(new));
        // ValidateNodeUpdate: pod CIDRs and the provider ID are set once.
        for (field, message) in [
            (
                "podCIDR",
                "node updates may not change podCIDR except from \"\" to valid",
            ),
            (
                "providerID",
                "node updates may not change providerID except from \"\" to valid",
            ),
        ] {
            let old_v = get_str(old, &["spec", field]).unwrap_or("");
            let new_v = get_str(new, &["spec", field]).unwrap_or("");
            if !old_v.is_empty() && old_v != new_v {
                errs.push(FieldError::forbidden(format!("spec.{field}"), message));
            }
        }
        errs
    }

    fn field_value(&self, obj: &Value, field: &str) -> Option<String> {
        match field {
            "spec.unschedulable" => Some(
                get(obj, &["spec", "unschedulable"])
                    .and_then(Value::as_bool)
                    .unwrap_or(false)
                    .to_string(),
            ),
            _ => self.base.field_value(obj, field),
        }
    }

    fn graceful_delete(&self, obj: &Value, requested_grace: Option<i64>) -> GracefulDelete {
        self.base.graceful_delete(obj, requested_grace)
    }

    fn scale_replicas(&self, obj: &Value) -> Option<(i32, i32, String)> {
        self.base.scale_replicas(obj)
    }

    fn set_scale_replicas(&self, obj: &mut Value, replicas: i32) -> Result<(), FieldError> {
        self.base.set_scale_replicas(obj, replicas)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rkcm_apimachinery::catalog;

    fn strategy() -> NodeStrategy {
        NodeStrategy::new(catalog::by_kind("v1", "Node").expect("served"))
    }

    #[test]
    fn status_is_kept_on_create_and_allocatable_defaults_to_capacity() {
        let mut node = json!({"metadata": {"name": "node-1"}, "status": {"capacity": {"cpu": "4", "pods": "110"}}});
        strategy().default(&mut node);
        strategy().prepare_for_create(&mut node);
        assert_eq!(
            node["status"]["allocatable"],
            json!({"cpu": "4", "pods": "110"})
        );
        assert!(strategy().validate_create(&node).is_empty());
    }

    #[test]
    fn status_updates_default_allocatable_and_keep_the_spec() {
        let s = strategy();
        let old =
            json!({"metadata": {"name": "n"}, "spec": {"podCIDR": "10.0.0.0/24"}, "status": {}});
        let mut new =
            json!({"metadata": {"name": "n"}, "spec": {}, "status": {"capacity": {"pods": 110}}});
        s.prepare_for_status_update(&mut new, &old);
        assert_eq!(new["spec"], old["spec"]);
        assert_eq!(new["status"]["allocatable"], json!({"pods": "110"}));
    }

    #[test]
    fn taints_need_a_known_effect_and_are_unique() {
        let node = json!({"metadata": {"name": "n"}, "spec": {"taints": [
            {"key": "a", "effect": "NoSchedule"}, {"key": "a", "effect": "NoSchedule"}, {"key": "b", "effect": "Never"}
        ]}});
        let fields: Vec<String> = strategy()
            .validate_create(&node)
            .iter()
            .map(|e| e.field.clone())
            .collect();
        assert_eq!(fields, ["spec.taints[1]", "spec.taints[2].effect"]);
    }

    #[test]
    fn unschedulable_is_a_field_selector_and_pod_cidr_is_set_once() {
        let s = strategy();
        let old = json!({"metadata": {"name": "n"}, "spec": {"podCIDR": "10.0.0.0/24"}});
        assert_eq!(
            s.field_value(&old, "spec.unschedulable").as_deref(),
            Some("false")
        );
        let mut new = old.clone();
        new["spec"]["unschedulable"] = json!(true);
        assert_eq!(
            s.field_value(&new, "spec.unschedulable").as_deref(),
            Some("true")
        );
        assert!(s.validate_update(&new, &old).is_empty());
        new["spec"]["podCIDR"] = json!("10.0.1.0/24");
        assert_eq!(s.validate_update(&new, &old)[0].field, "spec.podCIDR");
    }
}
