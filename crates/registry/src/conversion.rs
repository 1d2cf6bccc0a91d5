//! Resources served in a version other than the one they are stored in: how a served version
//! maps to its storage version (autoscaling/v1 HorizontalPodAutoscalers stored as
//! autoscaling/v2, custom resources served in a version other than the CRD's storage version,
//! through the CRD's conversion webhook when it has one).

use std::sync::Arc;

use serde_json::{json, Value};

use rkcm_apimachinery::catalog::{self, ResourceInfo};
use rkcm_storage::store::Store;

pub use crate::crd::conversion_webhook::ConversionFailed;
use crate::crd::conversion_webhook::{gvk_string, Webhook};

/// How one served version maps to its storage version.
#[derive(Clone)]
pub struct Conversion {
    /// The version the client speaks.
    pub served: &'static ResourceInfo,
    /// The version objects are stored (and validated) in.
    pub storage: &'static ResourceInfo,
    /// Served version → storage version.
    pub to_storage: fn(&Value) -> Value,
    /// Storage version → served version.
    pub from_storage: fn(&Value) -> Value,
    /// The CRD's conversion webhook (strategy `Webhook`), which then converts instead of
    /// `to_storage` and `from_storage`.
    pub webhook: Option<Arc<Webhook>>,
}

/// The conversion `info` is served through, if it is not its own storage version.
pub fn conversion(info: &'static ResourceInfo) -> Option<Conversion> {
    match (info.group, info.version, info.kind) {
        ("autoscaling", "v1", "HorizontalPodAutoscaler") => Some(Conversion {
            served: info,
            storage: catalog::by_kind("autoscaling/v2", info.kind)?,
            to_storage: crate::hpa_conversion::v1_to_v2,
            from_storage: crate::hpa_conversion::v2_to_v1,
            webhook: None,
        }),
        // Custom resources served in a version other than the CRD's storage version.
        _ => custom_resource_conversion(info),
    }
}

/// The conversion of a custom resource served in a version other than its storage version:
/// kube's `None` strategy, which changes only `apiVersion`, or the CRD's webhook.
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
        webhook: served.webhook.clone(),
    })
}

/// For the storage version of a CRD converting by webhook: the conversion of what is stored in
/// an older version (after the CRD's storage version changed) into it, as kube's codec converts
/// whatever it decodes. Objects already in the storage version call no webhook.
pub fn stored_version_conversion(info: &'static ResourceInfo) -> Option<Conversion> {
    let served = crate::crd::served::lookup(info)?;
    let webhook = served.webhook.clone()?;
    let storage = served.storage?;
    if !std::ptr::eq(storage, info) {
        return None;
    }
    Some(Conversion {
        served: info,
        storage,
        to_storage: Value::clone,
        from_storage: Value::clone,
        webhook: Some(webhook),
    })
}

impl Conversion {
    /// `obj` (in the served version) in the storage version, its `apiVersion` included.
    pub fn into_storage_version(&self, obj: &Value) -> Value {
        with_api_version((self.to_storage)(obj), self.storage)
    }

    /// `obj` (in the storage version) in the served version, its `apiVersion` included.
    pub fn into_served_version(&self, obj: &Value) -> Value {
        with_api_version((self.from_storage)(obj), self.served)
    }

    /// [`Self::into_storage_version`], through the webhook when there is one.
    pub async fn to_storage(&self, store: &Store, obj: &Value) -> Result<Value, ConversionFailed> {
        match &self.webhook {
            Some(webhook) => self.by_webhook(webhook, store, obj, self.storage).await,
            None => Ok(self.into_storage_version(obj)),
        }
    }

    /// [`Self::into_served_version`], through the webhook when there is one.
    pub async fn to_served(&self, store: &Store, obj: &Value) -> Result<Value, ConversionFailed> {
        match &self.webhook {
            Some(webhook) => self.by_webhook(webhook, store, obj, self.served).await,
            None => Ok(self.into_served_version(obj)),
        }
    }

    /// One object converted to `to` by `webhook`; anything else passes through.
    async fn by_webhook(
        &self,
        webhook: &Webhook,
        store: &Store,
        obj: &Value,
        to: &ResourceInfo,
    ) -> Result<Value, ConversionFailed> {
        if !obj.is_object() || obj.get("kind").and_then(Value::as_str) != Some(to.kind) {
            return Ok(obj.clone());
        }
        let gvk = gvk_string(obj);
        let mut converted = webhook
            .convert(store, vec![obj.clone()], &to.api_version(), &gvk, false)
            .await?;
        Ok(converted.pop().unwrap_or(Value::Null))
    }

    /// [`Self::answer`], through the webhook when there is one: an object in one review, all
    /// the items of a list in one review, as kube converts them.
    pub async fn convert_answer(
        &self,
        store: &Store,
        mut value: Value,
    ) -> Result<Value, ConversionFailed> {
        let Some(webhook) = &self.webhook else {
            return Ok(self.answer(value));
        };
        let kind = value.get("kind").and_then(Value::as_str).unwrap_or("");
        if kind == self.storage.kind {
            return self.to_served(store, &value).await;
        }
        if kind != format!("{}List", self.storage.kind) {
            return Ok(value);
        }
        let gvk = gvk_string(&value);
        let items = match value.get_mut("items").and_then(Value::as_array_mut) {
            Some(items) => std::mem::take(items),
            None => Vec::new(),
        };
        // Items without type meta are sent with the storage version's, and answered without.
        let typeless: Vec<bool> = items
            .iter()
            .map(|i| i.get("apiVersion").is_none())
            .collect();
        let items: Vec<Value> = items
            .into_iter()
            .map(|mut item| {
                if item.get("apiVersion").is_none() {
                    item["apiVersion"] = json!(self.storage.api_version());
                    item["kind"] = json!(self.storage.kind);
                }
                item
            })
            .collect();
        let served = self.served.api_version();
        let mut converted = webhook.convert(store, items, &served, &gvk, true).await?;
        for (item, typeless) in converted.iter_mut().zip(typeless) {
            if let (true, Some(m)) = (typeless, item.as_object_mut()) {
                m.remove("apiVersion");
                m.remove("kind");
            }
        }
        value["apiVersion"] = json!(served);
        value["items"] = Value::Array(converted);
        Ok(value)
    }

    /// [`Self::watch_event`], through the webhook when there is one: each event's object in
    /// its own review.
    pub async fn convert_watch_event(
        &self,
        store: &Store,
        mut event: Value,
    ) -> Result<Value, ConversionFailed> {
        if self.webhook.is_none() {
            return Ok(self.watch_event(event));
        }
        let is_bookmark = event.get("type").and_then(Value::as_str) == Some("BOOKMARK");
        if let Some(obj) = event.get_mut("object") {
            if obj.get("kind").and_then(Value::as_str) == Some(self.storage.kind) {
                if is_bookmark {
                    obj["apiVersion"] = json!(self.served.api_version());
                } else {
                    *obj = self.to_served(store, obj).await?;
                }
            }
        }
        Ok(event)
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

/// `obj`, an object of `from`, as an object of `to`, another served version of the same resource:
/// through the storage version, as kube's converter goes through the internal version
/// (`admission/plugin/webhook/generic/conversion.go`). Objects of another kind (a subresource's,
/// such as a `Scale`) pass through. A CRD converting by webhook is called.
pub async fn convert_between(
    store: &Store,
    obj: &Value,
    from: &'static ResourceInfo,
    to: &'static ResourceInfo,
) -> Result<Value, ConversionFailed> {
    if std::ptr::eq(from, to) || obj.get("kind").and_then(Value::as_str) != Some(from.kind) {
        return Ok(obj.clone());
    }
    let stored = match conversion(from) {
        Some(c) => c.to_storage(store, obj).await?,
        None => obj.clone(),
    };
    match conversion(to) {
        Some(c) => c.to_served(store, &stored).await,
        None => Ok(stored),
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

#[cfg(test)]
mod tests {
    use super::*;
    use rkcm_storage::memory::MemoryBackend;

    fn hpa(api_version: &str) -> &'static ResourceInfo {
        catalog::by_kind(api_version, "HorizontalPodAutoscaler").expect("served")
    }

    #[tokio::test]
    async fn objects_convert_between_served_versions_through_the_storage_version() {
        let store = Store::new(Arc::new(MemoryBackend::new()), 10)
            .await
            .expect("memory store");
        let v2 = json!({
            "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "h", "namespace": "ns"},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"},
                "minReplicas": 1, "maxReplicas": 3,
                "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 50}}}],
            },
        });
        let v1 = convert_between(&store, &v2, hpa("autoscaling/v2"), hpa("autoscaling/v1"))
            .await
            .expect("converts");
        assert_eq!(v1["apiVersion"], "autoscaling/v1");
        assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 50);
        let back = convert_between(&store, &v1, hpa("autoscaling/v1"), hpa("autoscaling/v2"))
            .await
            .expect("converts back");
        assert_eq!(back["apiVersion"], "autoscaling/v2");
        assert_eq!(back["spec"]["metrics"], v2["spec"]["metrics"]);
        // Another kind passes through.
        let scale = json!({"apiVersion": "autoscaling/v1", "kind": "Scale"});
        assert_eq!(
            convert_between(&store, &scale, hpa("autoscaling/v2"), hpa("autoscaling/v1"))
                .await
                .expect("passes"),
            scale
        );
    }
}
