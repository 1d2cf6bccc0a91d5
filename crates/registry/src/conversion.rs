//! Resources served in a version other than the one they are stored in: how a served version
//! maps to its storage version (autoscaling/v1 HorizontalPodAutoscalers stored as
//! autoscaling/v2, custom resources served in a version other than the CRD's storage version).

use serde_json::{json, Value};

use rkcm_apimachinery::catalog::{self, ResourceInfo};

/// How one served version maps to its storage version.
#[derive(Clone, Copy)]
pub struct Conversion {
    /// The version the client speaks.
    pub served: &'static ResourceInfo,
    /// The version objects are stored (and validated) in.
    pub storage: &'static ResourceInfo,
    /// Served version → storage version.
    pub to_storage: fn(&Value) -> Value,
    /// Storage version → served version.
    pub from_storage: fn(&Value) -> Value,
}

/// The conversion `info` is served through, if it is not its own storage version.
pub fn conversion(info: &'static ResourceInfo) -> Option<Conversion> {
    match (info.group, info.version, info.kind) {
        ("autoscaling", "v1", "HorizontalPodAutoscaler") => Some(Conversion {
            served: info,
            storage: catalog::by_kind("autoscaling/v2", info.kind)?,
            to_storage: crate::hpa_conversion::v1_to_v2,
            from_storage: crate::hpa_conversion::v2_to_v1,
        }),
        // Custom resources served in a version other than the CRD's storage version.
        _ => custom_resource_conversion(info),
    }
}

/// The conversion of a custom resource served in a version other than its storage version:
/// kube's `None` strategy, which changes only `apiVersion`.
fn custom_resource_conversion(info: &'static ResourceInfo) -> Option<Conversion> {
    let served = crate::crd::served::lookup(info)?;
    let storage = served.storage?;
    if std::ptr::eq(storage, info) {
        return None;
    }
    Some(Conversion {
        served: info,
        storage,
        to_storage: Value::clone,
        from_storage: Value::clone,
    })
}

impl Conversion {
    /// `obj` (in the served version) in the storage version, its `apiVersion` included.
    pub fn into_storage_version(self, obj: &Value) -> Value {
        with_api_version((self.to_storage)(obj), self.storage)
    }

    /// `obj` (in the storage version) in the served version, its `apiVersion` included.
    pub fn into_served_version(self, obj: &Value) -> Value {
        with_api_version((self.from_storage)(obj), self.served)
    }

    /// `value` (an object, a list of them, or anything else) in the served version.
    pub fn answer(&self, mut value: Value) -> Value {
        let kind = value.get("kind").and_then(Value::as_str).unwrap_or("");
        if kind == self.storage.kind {
            return self.into_served_version(&value);
        }
        if kind == format!("{}List", self.storage.kind) {
            value["apiVersion"] = json!(self.served.api_version());
            if let Some(items) = value.get_mut("items").and_then(Value::as_array_mut) {
                for item in items.iter_mut() {
                    let mut converted = self.into_served_version(item);
                    // List items carry no type meta when stored ones do not.
                    if item.get("apiVersion").is_none() {
                        if let Some(m) = converted.as_object_mut() {
                            m.remove("apiVersion");
                            m.remove("kind");
                        }
                    }
                    *item = converted;
                }
            }
        }
        value
    }

    /// One watch event line in the served version.
    pub fn watch_event(&self, mut event: Value) -> Value {
        let is_bookmark = event.get("type").and_then(Value::as_str) == Some("BOOKMARK");
        if let Some(obj) = event.get_mut("object") {
            if obj.get("kind").and_then(Value::as_str) == Some(self.storage.kind) {
                if is_bookmark {
                    obj["apiVersion"] = json!(self.served.api_version());
                } else {
                    *obj = self.into_served_version(obj);
                }
            }
        }
        event
    }

    /// `path` with the storage version in place of the served one.
    pub fn storage_path(&self, path: &str) -> String {
        let served = format!("/apis/{}/{}/", self.served.group, self.served.version);
        let storage = format!("/apis/{}/{}/", self.storage.group, self.storage.version);
        match path.strip_prefix(&served) {
            Some(rest) => format!("{storage}{rest}"),
            None => path.to_string(),
        }
    }
}

/// `obj` with the `apiVersion` of `info` when it carries one of the same kind (custom resources
/// with the `None` conversion strategy change nothing else).
fn with_api_version(mut obj: Value, info: &ResourceInfo) -> Value {
    if obj.get("kind").and_then(Value::as_str) == Some(info.kind) && obj.get("apiVersion").is_some()
    {
        obj["apiVersion"] = json!(info.api_version());
    }
    obj
}
