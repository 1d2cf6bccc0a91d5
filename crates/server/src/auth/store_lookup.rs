//! The server's store as the [`ObjectLookup`] service-account tokens are validated against, and
//! the Secret label writes legacy-token tracking makes through it.

use rkcm_apimachinery::catalog;
use serde_json::{json, Value};

use super::serviceaccount::ObjectLookup;
use rkcm_storage as storage;
use rkcm_storage::object;
use rkcm_storage::store::Store;

impl ObjectLookup for Store {
    fn get(&self, plural: &str, namespace: &str, name: &str) -> Option<Value> {
        let info = catalog::by_plural("", "v1", plural)?;
        let ns = info.namespaced().then_some(namespace);
        Store::get(self, &crate::rest::key(info, ns, name)).map(|o| o.value())
    }

    /// Writes the label through the store (a new resourceVersion, a watch event), off the
    /// request's path, retrying on conflicts as an update of the API would.
    fn label_secret(&self, namespace: &str, name: &str, uid: &str, key: &str, value: &str) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!(
                secret = format!("{namespace}/{name}"),
                "no runtime to record the legacy token's use on"
            );
            return;
        };
        let store = self.clone();
        let (namespace, name, uid, key, value) = (
            namespace.to_string(),
            name.to_string(),
            uid.to_string(),
            key.to_string(),
            value.to_string(),
        );
        runtime.spawn(async move {
            if let Err(err) = label(&store, &namespace, &name, &uid, &key, &value).await {
                tracing::error!(
                    "Failed to label legacy service account token {name}/{namespace} with last-used date, err: {err}"
                );
            }
        });
    }
}

/// Sets `labels[key] = value` on the Secret if its UID is still `uid`.
async fn label(
    store: &Store,
    namespace: &str,
    name: &str,
    uid: &str,
    key: &str,
    value: &str,
) -> Result<(), String> {
    let info = catalog::by_plural("", "v1", "secrets").ok_or("secrets are not in the catalog")?;
    let storage_key = crate::rest::key(info, Some(namespace), name);
    for _ in 0..crate::rest::UPDATE_ATTEMPTS {
        let Some(current) = Store::get(store, &storage_key) else {
            return Err(format!("secrets \"{name}\" not found"));
        };
        let found = current.uid();
        if found != uid {
            return Err(format!(
                "Precondition failed: UID in precondition: {uid}, UID in object meta: {found}"
            ));
        }
        let mut updated = current.value();
        let Some(meta) = object::metadata_mut(&mut updated) else {
            return Err("the stored secret has no metadata".into());
        };
        let labels = meta.entry("labels").or_insert_with(|| json!({}));
        if !labels.is_object() {
            *labels = json!({});
        }
        if let Some(labels) = labels.as_object_mut() {
            labels.insert(key.to_string(), json!(value));
        }
        match store.update(&storage_key, updated, current.revision).await {
            Ok(_) => return Ok(()),
            Err(storage::Error::Conflict { .. }) => continue,
            Err(err) => return Err(err.to_string()),
        }
    }
    Err(format!(
        "Operation cannot be fulfilled on secrets \"{name}\": the object has been modified"
    ))
}
