//! The metadata only the server writes (`rest.BeforeUpdate`): kept from the stored object, and left
//! out when telling whether a write changes anything.

use serde_json::Value;

use rkcm_storage::object;

/// Copies the metadata only the server may set from `old` into `new` (`rest.BeforeUpdate`). A
/// `metadata.uid` that `new` carries is kept, so that validation refuses one that differs.
pub fn keep_system_metadata(new: &mut Value, old: &Value) {
    if object::meta_str(new, "uid").is_none_or(str::is_empty) {
        match old.pointer("/metadata/uid") {
            Some(v) => object::set_meta(new, "uid", v.clone()),
            None => object::remove_meta(new, "uid"),
        }
    }
    for field in [
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "namespace",
    ] {
        match old.pointer(&format!("/metadata/{field}")) {
            Some(v) => object::set_meta(new, field, v.clone()),
            None => object::remove_meta(new, field),
        }
    }
}

/// Whether two versions of an object differ other than in resourceVersion.
pub fn same_content(a: &Value, b: &Value) -> bool {
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else {
        return a == b;
    };
    if a.len() != b.len() {
        return false;
    }
    a.iter().all(|(k, va)| {
        let Some(vb) = b.get(k) else { return false };
        if k != "metadata" {
            return va == vb;
        }
        match (va.as_object(), vb.as_object()) {
            (Some(ma), Some(mb)) => {
                let count = |m: &serde_json::Map<String, Value>| {
                    m.keys().filter(|k| *k != "resourceVersion").count()
                };
                count(ma) == count(mb)
                    && ma
                        .iter()
                        .filter(|(k, _)| *k != "resourceVersion")
                        .all(|(k, v)| mb.get(k) == Some(v))
            }
            _ => va == vb,
        }
    })
}
