//! The strategy shared by every kind: metadata validation, the spec/status split and the
//! bookkeeping of `rest.BeforeCreate` / `rest.BeforeUpdate`; kinds with little behaviour use
//! it as is, the others build on it.

use rkcm_apimachinery::catalog::ResourceInfo;
use serde_json::{Map, Value};

use super::generation::{bump_if_changed, carry_over_meta, prepare_create_meta};
use super::meta::{self, NameValidator};
use super::object::{copy, get_str, set};
use super::{FieldError, GracefulDelete, Strategy};

/// A strategy configured by a few switches; see the module docs.
#[derive(Clone, Copy, Debug)]
pub struct GenericStrategy {
    info: &'static ResourceInfo,
    name_fn: NameValidator,
    tracks_generation: bool,
    has_status: bool,
    orphans: bool,
}

impl GenericStrategy {
    /// The strategy of `info`: DNS-subdomain names, no generation tracking, a spec/status
    /// split when the resource has a `status` subresource.
    pub fn new(info: &'static ResourceInfo) -> Self {
        GenericStrategy {
            info,
            name_fn: meta::name_is_dns_subdomain,
            tracks_generation: false,
            has_status: info.subresource("status").is_some(),
            orphans: false,
        }
    }

    /// Uses `name_fn` to validate `metadata.name` and `metadata.generateName`.
    pub fn with_name_validator(mut self, name_fn: NameValidator) -> Self {
        self.name_fn = name_fn;
        self
    }

    /// Starts `metadata.generation` at 1 and bumps it whenever `spec` changes.
    pub fn tracking_generation(mut self) -> Self {
        self.tracks_generation = true;
        self
    }

    /// Orphans dependents when a DELETE names no propagation policy.
    pub fn orphaning_dependents(mut self) -> Self {
        self.orphans = true;
        self
    }

    /// Whether the resource has a `status` subresource (and so a spec/status split).
    pub fn has_status(&self) -> bool {
        self.has_status
    }

    /// The name validator of the kind.
    pub fn name_validator(&self) -> NameValidator {
        self.name_fn
    }
}

impl Strategy for GenericStrategy {
    fn resource(&self) -> &'static ResourceInfo {
        self.info
    }

    fn default(&self, _obj: &mut Value) {}

    fn prepare_for_create(&self, obj: &mut Value) {
        prepare_create_meta(obj, self.tracks_generation);
        if self.has_status {
            set(obj, &["status"], Some(Value::Object(Map::new())));
        }
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        carry_over_meta(new, old);
        if self.has_status {
            copy(new, old, &["status"]);
        }
        if self.tracks_generation {
            bump_if_changed(new, old, &["spec"]);
        }
    }

    fn prepare_for_status_update(&self, new: &mut Value, old: &Value) {
        carry_over_meta(new, old);
        copy(new, old, &["spec"]);
    }

    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        meta::validate_object_meta(obj, self.info.namespaced(), self.name_fn)
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        meta::validate_object_meta_update(new, old)
    }

    fn field_value(&self, obj: &Value, field: &str) -> Option<String> {
        // DefaultNamespaceScopedAttr / DefaultClusterScopedAttr.
        match field {
            "metadata.name" => Some(
                get_str(obj, &["metadata", "name"])
                    .unwrap_or("")
                    .to_string(),
            ),
            "metadata.namespace" if self.info.namespaced() => Some(
                get_str(obj, &["metadata", "namespace"])
                    .unwrap_or("")
                    .to_string(),
            ),
            _ => None,
        }
    }

    fn graceful_delete(&self, _obj: &Value, _requested_grace: Option<i64>) -> GracefulDelete {
        GracefulDelete::Immediate
    }

    fn default_propagation_orphans(&self) -> bool {
        self.orphans
    }

    fn scale_replicas(&self, _obj: &Value) -> Option<(i32, i32, String)> {
        None
    }

    fn set_scale_replicas(&self, _obj: &mut Value, _replicas: i32) -> Result<(), FieldError> {
        Err(FieldError::forbidden(
            "spec.replicas",
            &format!("{} have no scale subresource", self.info.qualified_plural()),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rkcm_apimachinery::catalog;
    use serde_json::json;

    fn configmaps() -> GenericStrategy {
        GenericStrategy::new(catalog::by_kind("v1", "ConfigMap").expect("served"))
    }

    #[test]
    fn status_is_kept_from_the_old_object_on_a_full_update() {
        let s = GenericStrategy::new(catalog::by_kind("v1", "Service").expect("served"));
        let old = json!({"metadata": {"name": "a"}, "spec": {"a": 1}, "status": {"x": 1}});
        let mut new = json!({"metadata": {"name": "a"}, "spec": {"a": 2}, "status": {"x": 2}});
        s.prepare_for_update(&mut new, &old);
        assert_eq!(new["status"], json!({"x": 1}));
        assert_eq!(new["spec"], json!({"a": 2}));
        let mut status = json!({"metadata": {"name": "a"}, "spec": {"a": 3}, "status": {"x": 3}});
        s.prepare_for_status_update(&mut status, &old);
        assert_eq!(status["spec"], json!({"a": 1}));
        assert_eq!(status["status"], json!({"x": 3}));
    }

    #[test]
    fn field_selectors_support_name_and_namespace_only() {
        let obj = json!({"metadata": {"name": "a", "namespace": "ns"}});
        assert_eq!(
            configmaps()
                .field_value(&obj, "metadata.namespace")
                .as_deref(),
            Some("ns")
        );
        assert_eq!(configmaps().field_value(&obj, "spec.x"), None);
        let nodes = GenericStrategy::new(catalog::by_kind("v1", "Node").expect("served"));
        assert_eq!(nodes.field_value(&obj, "metadata.namespace"), None);
    }

    #[test]
    fn configmaps_without_spec_never_get_a_generation() {
        let mut obj = json!({"metadata": {"name": "a", "namespace": "ns"}, "data": {"k": "v"}});
        configmaps().prepare_for_create(&mut obj);
        assert_eq!(
            obj,
            json!({"metadata": {"name": "a", "namespace": "ns"}, "data": {"k": "v"}})
        );
        assert!(configmaps().validate_create(&obj).is_empty());
    }
}
