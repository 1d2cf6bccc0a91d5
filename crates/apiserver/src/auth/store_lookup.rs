//! The server's store as the [`ObjectLookup`] service-account tokens are validated against.

use rkcm_apimachinery::catalog;
use serde_json::Value;

use super::serviceaccount::ObjectLookup;
use crate::store::Store;

impl ObjectLookup for Store {
    fn get(&self, plural: &str, namespace: &str, name: &str) -> Option<Value> {
        let info = catalog::by_plural("", "v1", plural)?;
        let ns = info.namespaced().then_some(namespace);
        Store::get(self, &crate::rest::key(info, ns, name)).map(|o| o.value.clone())
    }
}
