//! Validation ratcheting: which old value a new value is compared with, and when kube considers it unchanged
//! (apiextensions `pkg/apiserver/validation/ratcheting.go`).

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool,
};
use serde_json::Value;

/// The old item an array item is compared with when ratcheting: by key in `map` lists, by index in lists
/// without a list type, none in `set` and `atomic` lists (kube's `correlateOldValueForChildAtNewIndex`).
pub(super) fn correlate_item<'a>(
    s: &JSONSchemaProps,
    old: &'a Value,
    new_item: &Value,
    index: usize,
) -> Option<&'a Value> {
    let old_items = old.as_array()?;
    match s.x_kubernetes_list_type.as_deref() {
        Some("map") => {
            let keys = s.x_kubernetes_list_map_keys.as_deref().unwrap_or(&[]);
            let item_schema = match &s.items {
                Some(JSONSchemaPropsOrArray::Schema(i)) => Some(i.as_ref()),
                _ => None,
            };
            let key_of = |v: &Value| -> Option<Vec<Option<Value>>> {
                let m = v.as_object()?;
                Some(
                    keys.iter()
                        .map(|k| {
                            m.get(k).cloned().or_else(|| {
                                // A missing key takes its default, as kube's map lists do.
                                item_schema
                                    .and_then(|i| i.properties.as_ref())
                                    .and_then(|p| p.get(k))
                                    .and_then(|p| p.default.as_ref())
                                    .map(|d| d.0.clone())
                            })
                        })
                        .collect(),
                )
            };
            let wanted = key_of(new_item)?;
            old_items
                .iter()
                .find(|o| key_of(o).as_ref() == Some(&wanted))
        }
        Some("set") | Some("atomic") => None,
        _ => old_items.get(index),
    }
}

/// Whether the update left `new` equal to `old` as kube's ratcheting sees it (`CachedDeepEqual`): objects compare
/// by the fields their schema covers (a field the schema does not cover makes them unequal), lists item by item as
/// correlated, and everything else by value.
pub(super) fn ratchet_equal(old: &Value, new: &Value, s: Option<&JSONSchemaProps>) -> bool {
    match (old, new) {
        (Value::Null, Value::Null) => true,
        (Value::Null, _) | (_, Value::Null) => false,
        (Value::Array(o), Value::Array(n)) => {
            if o.len() != n.len() {
                return false;
            }
            let Some(s) = s else { return o.is_empty() };
            let item_schema = match &s.items {
                Some(JSONSchemaPropsOrArray::Schema(i)) => i.as_ref(),
                _ => return o.is_empty(),
            };
            n.iter().enumerate().all(|(i, item)| {
                correlate_item(s, old, item, i)
                    .is_some_and(|o_item| ratchet_equal(o_item, item, Some(item_schema)))
            })
        }
        (Value::Object(o), Value::Object(n)) => {
            if o.len() != n.len() {
                return false;
            }
            if o.is_empty() {
                return true;
            }
            let Some(s) = s else { return false };
            o.iter().all(|(k, o_v)| {
                let Some(n_v) = n.get(k) else { return false };
                let sub = match s.properties.as_ref().and_then(|p| p.get(k)) {
                    Some(p) => Some(p),
                    None => match &s.additional_properties {
                        Some(JSONSchemaPropsOrBool::Schema(a)) => Some(a.as_ref()),
                        _ => None,
                    },
                };
                sub.is_some_and(|sub| ratchet_equal(o_v, n_v, Some(sub)))
            })
        }
        (Value::Array(_), _)
        | (_, Value::Array(_))
        | (Value::Object(_), _)
        | (_, Value::Object(_)) => false,
        (o, n) => o == n,
    }
}
