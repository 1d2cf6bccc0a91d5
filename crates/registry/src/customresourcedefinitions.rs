//! CustomResourceDefinitions (`apiextensions-apiserver` `pkg/registry/customresourcedefinition/strategy.go`):
//! defaults and validation from `rkcm-apiextensions`, generation tracking, the status split,
//! and `status.storedVersions` recording every storage version ever used.
//!
//! Conditions and accepted names are the controllers' ([`crate::crd::controller`]).

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use rkcm_apiextensions::crd;
use rkcm_apimachinery::catalog::ResourceInfo;
use rkcm_apimachinery::go_json;
use serde_json::{json, Value};

use super::generic::GenericStrategy;
use super::{FieldError, GracefulDelete, Strategy};
use crate::crd::strategy::field_errors;

/// The strategy of `customresourcedefinitions`.
pub(crate) struct CustomResourceDefinitionStrategy {
    base: GenericStrategy,
}

impl CustomResourceDefinitionStrategy {
    pub(crate) fn new(info: &'static ResourceInfo) -> Self {
        CustomResourceDefinitionStrategy {
            base: GenericStrategy::new(info).tracking_generation(),
        }
    }
}

fn decode(obj: &Value) -> Option<CustomResourceDefinition> {
    serde_json::from_value(obj.clone()).ok()
}

/// The storage version of the CRD `obj` (the version with `storage: true`).
fn storage_version(obj: &Value) -> Option<String> {
    obj.pointer("/spec/versions")?
        .as_array()?
        .iter()
        .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))?
        .get("name")?
        .as_str()
        .map(str::to_string)
}

/// Adds the storage version to `status.storedVersions` when missing (kube's strategy does on
/// create and on every update).
fn record_stored_version(obj: &mut Value) {
    let Some(version) = storage_version(obj) else {
        return;
    };
    let Some(m) = obj.as_object_mut() else {
        return;
    };
    let status = m.entry("status").or_insert_with(|| json!({}));
    if !status.is_object() {
        *status = json!({});
    }
    let stored = &mut status["storedVersions"];
    if !stored.is_array() {
        *stored = json!([]);
    }
    if let Some(list) = stored.as_array_mut() {
        if !list.iter().any(|v| v.as_str() == Some(version.as_str())) {
            list.push(json!(version));
        }
    }
}

fn validation_errors(new: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let Some(crd) = decode(new) else {
        // The type check after validation reports why the object does not decode.
        return Vec::new();
    };
    let errs = match old.and_then(decode) {
        Some(old) => crd::validate_custom_resource_definition_update(&crd, &old),
        None => crd::validate_custom_resource_definition(&crd),
    };
    field_errors(errs)
}

impl Strategy for CustomResourceDefinitionStrategy {
    fn resource(&self) -> &'static ResourceInfo {
        self.base.resource()
    }

    fn default(&self, obj: &mut Value) {
        let Some(mut crd) = decode(obj) else {
            return;
        };
        crd::set_defaults(&mut crd);
        // As Go writes the typed CRD: `maximum: 10` stays `10`, not serde's `10.0`.
        let Ok(defaulted) = go_json::to_value(&crd) else {
            return;
        };
        // Only `spec` is defaulted; the rest of the body stays as the client sent it.
        if let (Some(m), Some(spec)) = (obj.as_object_mut(), defaulted.get("spec")) {
            m.insert("spec".into(), spec.clone());
        }
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        self.base.prepare_for_create(obj);
        record_stored_version(obj);
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        self.base.prepare_for_update(new, old);
        record_stored_version(new);
    }

    fn prepare_for_status_update(&self, new: &mut Value, old: &Value) {
        self.base.prepare_for_status_update(new, old);
    }

    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = self.base.validate_create(obj);
        errs.extend(validation_errors(obj, None));
        errs
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = self.base.validate_update(new, old);
        errs.extend(validation_errors(new, Some(old)));
        errs
    }

    fn field_value(&self, obj: &Value, field: &str) -> Option<String> {
        self.base.field_value(obj, field)
    }

    fn graceful_delete(&self, _obj: &Value, _requested_grace: Option<i64>) -> GracefulDelete {
        GracefulDelete::Immediate
    }

    fn scale_replicas(&self, _obj: &Value) -> Option<(i32, i32, String)> {
        None
    }

    fn set_scale_replicas(&self, obj: &mut Value, replicas: i32) -> Result<(), FieldError> {
        self.base.set_scale_replicas(obj, replicas)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rkcm_apimachinery::catalog;

    fn strategy() -> CustomResourceDefinitionStrategy {
        CustomResourceDefinitionStrategy::new(
            catalog::by_kind("apiextensions.k8s.io/v1", "CustomResourceDefinition")
                .expect("served"),
        )
    }

    fn crontab() -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "crontabs.stable.example.com"},
            "spec": {"group": "stable.example.com", "scope": "Namespaced",
                "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object"}}}]}
        })
    }

    #[test]
    fn a_new_crd_is_defaulted_records_its_storage_version_and_validates() {
        let s = strategy();
        let mut obj = crontab();
        s.default(&mut obj);
        s.prepare_for_create(&mut obj);
        assert_eq!(obj["spec"]["names"]["listKind"], json!("CronTabList"));
        assert_eq!(obj["status"]["storedVersions"], json!(["v1"]));
        assert_eq!(obj["metadata"]["generation"], json!(1));
        assert_eq!(s.validate_create(&obj), Vec::new());
    }

    #[test]
    fn defaulting_keeps_whole_schema_bounds_integers_as_go_writes_them() {
        let s = strategy();
        let mut obj = crontab();
        obj["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = json!({"type": "object",
            "properties": {"replicas": {"type": "integer", "minimum": 0, "maximum": 10},
                "ratio": {"type": "number", "multipleOf": 0.5}}});
        s.default(&mut obj);
        let props = &obj["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"];
        assert_eq!(
            serde_json::to_string(props).expect("encodes"),
            r#"{"ratio":{"multipleOf":0.5,"type":"number"},"replicas":{"maximum":10,"minimum":0,"type":"integer"}}"#
        );
    }

    #[test]
    fn a_crd_whose_name_does_not_match_its_names_is_refused_with_kubes_cause() {
        let s = strategy();
        let mut obj = crontab();
        obj["metadata"]["name"] = json!("wrong.stable.example.com");
        s.default(&mut obj);
        let errs = s.validate_create(&obj);
        assert!(errs.iter().any(|e| e.field == "metadata.name"), "{errs:?}");
    }
}
