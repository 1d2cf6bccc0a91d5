//! Accessors for the `metadata` of objects held as JSON values.

use serde_json::{Map, Value};

/// `metadata` of `obj`, created if missing (only fails if `obj` is not a JSON object).
pub fn metadata_mut(obj: &mut Value) -> Option<&mut Map<String, Value>> {
    let map = obj.as_object_mut()?;
    let meta = map
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    meta.as_object_mut()
}

/// A string field of `metadata`.
pub fn meta_str<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    obj.get("metadata")?.get(field)?.as_str()
}

/// `metadata.name` (empty if unset).
pub fn name(obj: &Value) -> &str {
    meta_str(obj, "name").unwrap_or("")
}

/// `metadata.namespace` (empty if unset).
pub fn namespace(obj: &Value) -> &str {
    meta_str(obj, "namespace").unwrap_or("")
}

/// `metadata.uid` (empty if unset).
pub fn uid(obj: &Value) -> &str {
    meta_str(obj, "uid").unwrap_or("")
}

/// Sets a `metadata` field.
pub fn set_meta(obj: &mut Value, field: &str, value: Value) {
    if let Some(meta) = metadata_mut(obj) {
        meta.insert(field.to_string(), value);
    }
}

/// Removes a `metadata` field.
pub fn remove_meta(obj: &mut Value, field: &str) {
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove(field);
    }
}

/// Sets `metadata.resourceVersion` to `revision`.
pub fn set_resource_version(obj: &mut Value, revision: i64) {
    set_meta(obj, "resourceVersion", Value::String(revision.to_string()));
}

/// `metadata.resourceVersion` parsed as a revision; `Ok(None)` when unset or empty.
pub fn resource_version(obj: &Value) -> Result<Option<i64>, String> {
    match meta_str(obj, "resourceVersion") {
        None | Some("") => Ok(None),
        Some(s) => s.parse().map(Some).map_err(|_| s.to_string()),
    }
}

/// `metadata.labels` as a sorted map (non-string values ignored).
pub fn labels(obj: &Value) -> std::collections::BTreeMap<String, String> {
    obj.get("metadata")
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

/// `metadata.finalizers` (empty if unset).
pub fn finalizers(obj: &Value) -> Vec<String> {
    obj.get("metadata")
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Sets `metadata.finalizers`, removing the field when empty.
pub fn set_finalizers(obj: &mut Value, finalizers: &[String]) {
    if finalizers.is_empty() {
        remove_meta(obj, "finalizers");
    } else {
        set_meta(
            obj,
            "finalizers",
            Value::Array(
                finalizers
                    .iter()
                    .map(|f| Value::String(f.clone()))
                    .collect(),
            ),
        );
    }
}

/// Whether `metadata.deletionTimestamp` is set.
pub fn is_deleting(obj: &Value) -> bool {
    obj.get("metadata")
        .and_then(|m| m.get("deletionTimestamp"))
        .is_some_and(|v| !v.is_null())
}

/// `metadata.deletionGracePeriodSeconds`.
pub fn deletion_grace(obj: &Value) -> Option<i64> {
    obj.get("metadata")?
        .get("deletionGracePeriodSeconds")?
        .as_i64()
}

/// The current time formatted as Kubernetes `Time` (RFC 3339, whole seconds, UTC).
pub fn now_rfc3339(now: jiff::Timestamp) -> String {
    let secs = now.as_second();
    jiff::Timestamp::from_second(secs)
        .unwrap_or(now)
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn times_are_whole_seconds_in_utc() {
        let t: jiff::Timestamp = "2024-05-06T07:08:09.123456Z".parse().expect("ts");
        assert_eq!(now_rfc3339(t), "2024-05-06T07:08:09Z");
    }

    #[test]
    fn finalizers_round_trip() {
        let mut o = json!({"metadata": {"name": "a"}});
        set_finalizers(&mut o, &["x".into()]);
        assert_eq!(finalizers(&o), vec!["x".to_string()]);
        set_finalizers(&mut o, &[]);
        assert!(o["metadata"].get("finalizers").is_none());
    }
}
