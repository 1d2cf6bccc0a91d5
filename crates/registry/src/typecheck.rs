//! Decoding objects as their k8s-openapi types, so that nothing is stored that typed clients
//! (the controllers, kube-rs, client-go) cannot decode.
//!
//! kube-apiserver decodes every request into its Go type and answers a wrong JSON type with
//! an error naming the field. Objects are kept as JSON here, so the same guarantee comes from
//! decoding a copy as the k8s-openapi type after the kind's own validation passed. Missing
//! fields and `null`s decode to defaults, as in Go; unknown fields are ignored (strict field
//! validation is the server's).

use rkcm_apimachinery::catalog::ResourceInfo;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{FieldError, FieldErrorKind, GracefulDelete, Strategy};

/// Decodes an object as one k8s-openapi type; the error names the first bad field.
pub(crate) type DecodeCheck = fn(&Value) -> Option<FieldError>;

/// The decode check for the k8s-openapi type `K`.
pub(crate) fn decode_check<K>(obj: &Value) -> Option<FieldError>
where
    K: DeserializeOwned + k8s_openapi::Resource,
{
    // Most objects carry their type's apiVersion and kind: decode them in place, and only
    // when that fails decode a copy again to find the path of the first bad field.
    let typed_as_k = obj.get("apiVersion").and_then(Value::as_str) == Some(K::API_VERSION)
        && obj.get("kind").and_then(Value::as_str) == Some(K::KIND);
    if typed_as_k && K::deserialize(obj).is_ok() {
        return None;
    }
    let mut copy = obj.clone();
    // apiVersion and kind are the server's to check against the URL.
    if let Some(m) = copy.as_object_mut() {
        m.insert("apiVersion".to_string(), Value::from(K::API_VERSION));
        m.insert("kind".to_string(), Value::from(K::KIND));
    }
    let err = serde_path_to_error::deserialize::<_, K>(copy).err()?;
    let mut value = Some(obj);
    for segment in err.path().iter() {
        value = match segment {
            serde_path_to_error::Segment::Seq { index } => value.and_then(|v| v.get(*index)),
            serde_path_to_error::Segment::Map { key } => value.and_then(|v| v.get(key.as_str())),
            _ => None,
        };
    }
    let rendered = value.map_or_else(
        || "null".to_string(),
        rkcm_apimachinery::field::render_value,
    );
    let field = err.path().to_string();
    Some(FieldError {
        field: if field == "." { String::new() } else { field },
        kind: FieldErrorKind::Invalid,
        message: format!("Invalid value: {rendered}: {}", err.into_inner()),
    })
}

/// A strategy whose validation ends with a decode check: run only when the kind's own
/// validation found nothing, so that kube's messages come first.
pub(crate) struct TypeChecked {
    inner: Box<dyn Strategy>,
    check: DecodeCheck,
}

impl TypeChecked {
    /// `inner`, with `check` added to its validation.
    pub(crate) fn new(inner: Box<dyn Strategy>, check: DecodeCheck) -> Self {
        TypeChecked { inner, check }
    }
}

impl Strategy for TypeChecked {
    fn resource(&self) -> &'static ResourceInfo {
        self.inner.resource()
    }

    fn default(&self, obj: &mut Value) {
        self.inner.default(obj);
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        self.inner.prepare_for_create(obj);
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        self.inner.prepare_for_update(new, old);
    }

    fn prepare_for_status_update(&self, new: &mut Value, old: &Value) {
        self.inner.prepare_for_status_update(new, old);
    }

    fn complete_create(&self, obj: &mut Value) {
        self.inner.complete_create(obj);
    }

    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        let errs = self.inner.validate_create(obj);
        if !errs.is_empty() {
            return errs;
        }
        (self.check)(obj).into_iter().collect()
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let errs = self.inner.validate_update(new, old);
        if !errs.is_empty() {
            return errs;
        }
        (self.check)(new).into_iter().collect()
    }

    fn field_value(&self, obj: &Value, field: &str) -> Option<String> {
        self.inner.field_value(obj, field)
    }

    fn selectable_fields(&self) -> &'static [&'static str] {
        self.inner.selectable_fields()
    }

    fn graceful_delete(&self, obj: &Value, requested_grace: Option<i64>) -> GracefulDelete {
        self.inner.graceful_delete(obj, requested_grace)
    }

    fn default_propagation_orphans(&self) -> bool {
        self.inner.default_propagation_orphans()
    }

    fn scale_replicas(&self, obj: &Value) -> Option<(i32, i32, String)> {
        self.inner.scale_replicas(obj)
    }

    fn set_scale_replicas(&self, obj: &mut Value, replicas: i32) -> Result<(), FieldError> {
        self.inner.set_scale_replicas(obj, replicas)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::Deployment;
    use serde_json::json;

    #[test]
    fn wrong_json_types_are_reported_at_their_path() {
        let d = json!({"metadata": {"name": "web"}, "spec": {"replicas": "three", "template": {"spec": {"containers": [{"name": "a", "image": 5}]}}}});
        let e = decode_check::<Deployment>(&d).expect("bad type");
        assert_eq!(e.field, "spec.replicas");
        assert!(
            e.message
                .starts_with("Invalid value: \"three\": invalid type: string"),
            "{}",
            e.message
        );
        let mut d = d;
        d["spec"]["replicas"] = json!(3);
        let e = decode_check::<Deployment>(&d).expect("bad type");
        assert_eq!(e.field, "spec.template.spec.containers[0].image");
        // The same with the type's apiVersion and kind, which are decoded in place first.
        d["apiVersion"] = json!("apps/v1");
        d["kind"] = json!("Deployment");
        let e = decode_check::<Deployment>(&d).expect("bad type");
        assert_eq!(e.field, "spec.template.spec.containers[0].image");
        d["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx");
        assert_eq!(decode_check::<Deployment>(&d), None);
        // Another kind's apiVersion is the URL's business, not a type error.
        d["apiVersion"] = json!("extensions/v1beta1");
        assert_eq!(decode_check::<Deployment>(&d), None);
    }

    #[test]
    fn missing_fields_and_nulls_decode_as_in_go() {
        let d = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "creationTimestamp": null},
            "spec": {"selector": {"matchLabels": null}, "template": {"spec": {"containers": [{"name": null}]}}}});
        assert_eq!(decode_check::<Deployment>(&d), None);
    }
}
