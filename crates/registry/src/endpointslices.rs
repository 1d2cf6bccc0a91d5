//! EndpointSlices: `metadata.generation` starts at 1 and is bumped by any change but to the
//! metadata, and by a label change (`endpointSliceStrategy.PrepareForCreate` and
//! `PrepareForUpdate` of `pkg/registry/discovery/endpointslice`). The EndpointSlice
//! controllers rely on it to tell their own writes from others' and a lagging cache.

use rkcm_apimachinery::catalog::ResourceInfo;
use serde_json::Value;

use super::generic::GenericStrategy;
use super::object::{get, get_i64, semantically_equal, set};
use super::{FieldError, GracefulDelete, Strategy};

/// The strategy of EndpointSlices.
pub(crate) struct EndpointSliceStrategy {
    base: GenericStrategy,
}

/// The strategy of EndpointSlices.
pub(crate) fn strategy(info: &'static ResourceInfo) -> EndpointSliceStrategy {
    EndpointSliceStrategy {
        base: GenericStrategy::new(info),
    }
}

/// The object without its metadata, nor the type fields every request repeats.
fn content(obj: &Value) -> Value {
    let mut obj = obj.clone();
    if let Some(map) = obj.as_object_mut() {
        map.remove("metadata");
        map.remove("apiVersion");
        map.remove("kind");
    }
    obj
}

impl Strategy for EndpointSliceStrategy {
    fn resource(&self) -> &'static ResourceInfo {
        self.base.resource()
    }

    fn default(&self, obj: &mut Value) {
        self.base.default(obj);
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        self.base.prepare_for_create(obj);
        set(obj, &["metadata", "generation"], Some(Value::from(1)));
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        self.base.prepare_for_update(new, old);
        let changed = !semantically_equal(Some(&content(new)), Some(&content(old)))
            || !semantically_equal(
                get(new, &["metadata", "labels"]),
                get(old, &["metadata", "labels"]),
            );
        if changed {
            let generation = get_i64(old, &["metadata", "generation"]).unwrap_or(0) + 1;
            set(
                new,
                &["metadata", "generation"],
                Some(Value::from(generation)),
            );
        }
    }

    fn prepare_for_status_update(&self, new: &mut Value, old: &Value) {
        self.base.prepare_for_status_update(new, old);
    }

    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        self.base.validate_create(obj)
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        self.base.validate_update(new, old)
    }

    fn field_value(&self, obj: &Value, field: &str) -> Option<String> {
        self.base.field_value(obj, field)
    }

    fn graceful_delete(&self, obj: &Value, requested_grace: Option<i64>) -> GracefulDelete {
        self.base.graceful_delete(obj, requested_grace)
    }

    fn default_propagation_orphans(&self) -> bool {
        self.base.default_propagation_orphans()
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
    use serde_json::json;

    /// Ported from pkg/registry/discovery/endpointslice strategy_test.go
    /// `TestPrepareForUpdate`.
    #[test]
    fn the_generation_follows_endpoint_port_and_label_changes_only() {
        let s = strategy(catalog::by_kind("discovery.k8s.io/v1", "EndpointSlice").expect("served"));
        let mut old = json!({"metadata": {"name": "web-abc", "namespace": "ns", "labels": {"a": "1"}},
            "addressType": "IPv4", "endpoints": [{"addresses": ["10.0.0.1"]}], "ports": []});
        s.prepare_for_create(&mut old);
        assert_eq!(old["metadata"]["generation"], 1);

        // Annotations only: unchanged.
        let mut new = old.clone();
        new["metadata"]["annotations"] = json!({"x": "y"});
        s.prepare_for_update(&mut new, &old);
        assert_eq!(new["metadata"]["generation"], 1);

        // Endpoints changed.
        let mut new = old.clone();
        new["endpoints"] = json!([{"addresses": ["10.0.0.2"]}]);
        s.prepare_for_update(&mut new, &old);
        assert_eq!(new["metadata"]["generation"], 2);

        // Labels changed.
        let mut new = old.clone();
        new["metadata"]["labels"] = json!({"a": "2"});
        s.prepare_for_update(&mut new, &old);
        assert_eq!(new["metadata"]["generation"], 2);

        // A request cannot set the generation itself.
        let mut new = old.clone();
        new["metadata"]["generation"] = json!(9);
        s.prepare_for_update(&mut new, &old);
        assert_eq!(new["metadata"]["generation"], 1);
    }
}
