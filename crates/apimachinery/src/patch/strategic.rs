//! Strategic merge patch: JSON merge patch where lists are merged by key when the type says so.
//!
//! A port of the server side of `k8s.io/apimachinery/pkg/util/strategicpatch/patch.go`
//! (`StrategicMergeMapPatch` with `MergeParallelList` and `IgnoreUnmatchedNulls`). Field
//! metadata (patch strategy and merge key) comes from the OpenAPI schema of the object's kind,
//! walked field by field like kube's `PatchMetaFromOpenAPI`.
//!
//! Directives: `$patch: replace|delete` in maps, `$patch: replace|delete` items in merged lists,
//! `$retainKeys`, `$setElementOrder/<list>` and `$deleteFromPrimitiveList/<list>`; `null` deletes a
//! key; lists without the `merge` strategy are replaced.

use serde_json::{Map, Value};

use super::PatchError;
use crate::openapi::definitions;

const DIRECTIVE_MARKER: &str = "$patch";
const DELETE_DIRECTIVE: &str = "delete";
const REPLACE_DIRECTIVE: &str = "replace";
const MERGE_DIRECTIVE: &str = "merge";
const RETAIN_KEYS_DIRECTIVE: &str = "$retainKeys";
const DELETE_FROM_PRIMITIVE_LIST_PREFIX: &str = "$deleteFromPrimitiveList";
const SET_ELEMENT_ORDER_PREFIX: &str = "$setElementOrder";

/// A position in a kind's schema: tells the merge how the fields below it are patched.
///
/// An unknown position (a field the schema does not describe) merges maps and replaces lists,
/// which is also what kube does for `map[string]string` values and atomic lists.
#[derive(Clone, Copy, Debug)]
pub struct PatchMeta {
    schema: Option<&'static Value>,
}

/// Patch metadata of one field, as the Go struct tags declare it.
#[derive(Clone, Copy, Debug)]
struct FieldMeta {
    meta: PatchMeta,
    merge: bool,
    replace: bool,
    merge_key: Option<&'static str>,
}

impl PatchMeta {
    /// Metadata rooted at the OpenAPI definition `name` (e.g. `io.k8s.api.apps.v1.Deployment`).
    pub fn for_definition(name: &str) -> PatchMeta {
        PatchMeta {
            schema: definitions::definitions().get(name),
        }
    }

    /// No metadata: every list is replaced, every map merged (plain JSON merge semantics).
    pub fn unknown() -> PatchMeta {
        PatchMeta { schema: None }
    }

    fn resolved(&self) -> Option<&'static Value> {
        definitions::resolve(self.schema?)
    }

    fn field(&self, key: &str) -> FieldMeta {
        let unknown = FieldMeta {
            meta: PatchMeta::unknown(),
            merge: false,
            replace: false,
            merge_key: None,
        };
        let Some(node) = self.resolved() else {
            return unknown;
        };
        if let Some(prop) = node.get("properties").and_then(|p| p.get(key)) {
            let strategy = prop
                .get("x-kubernetes-patch-strategy")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let mut merge = false;
            let mut replace = false;
            for s in strategy.split(',') {
                match s {
                    MERGE_DIRECTIVE => merge = true,
                    REPLACE_DIRECTIVE => replace = true,
                    _ => {}
                }
            }
            return FieldMeta {
                meta: PatchMeta { schema: Some(prop) },
                merge,
                replace,
                merge_key: prop
                    .get("x-kubernetes-patch-merge-key")
                    .and_then(Value::as_str),
            };
        }
        match node.get("additionalProperties") {
            Some(add) if add.is_object() => FieldMeta {
                meta: PatchMeta { schema: Some(add) },
                ..unknown
            },
            _ => unknown,
        }
    }

    fn items(&self) -> PatchMeta {
        PatchMeta {
            schema: self.resolved().and_then(|n| n.get("items")),
        }
    }
}

/// Applies a strategic merge `patch` to `original`, walking the schema from `meta`.
pub fn strategic_merge(
    original: &Value,
    patch: &Value,
    meta: PatchMeta,
) -> Result<Value, PatchError> {
    let Value::Object(original) = original else {
        return Err(malformed("invalid JSON document"));
    };
    let Value::Object(patch) = patch else {
        return Err(malformed("invalid JSON document"));
    };
    merge_map(original.clone(), patch.clone(), meta).map(Value::Object)
}

fn malformed(msg: impl Into<String>) -> PatchError {
    PatchError::Malformed(msg.into())
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "list",
        Value::Object(_) => "map",
    }
}

/// `mergeMap`: merges `patch` into `original`.
fn merge_map(
    mut original: Map<String, Value>,
    mut patch: Map<String, Value>,
    meta: PatchMeta,
) -> Result<Map<String, Value>, PatchError> {
    if let Some(directive) = patch.get(DIRECTIVE_MARKER) {
        return match directive.as_str() {
            Some(REPLACE_DIRECTIVE) => {
                patch.shift_remove(DIRECTIVE_MARKER);
                // Directives nested in the replacement are processed against nothing.
                merge_map(Map::new(), patch, meta)
            }
            Some(DELETE_DIRECTIVE) => Ok(Map::new()),
            _ => Err(malformed(format!(
                "unknown patch type: {directive} in map: {}",
                Value::Object(patch.clone())
            ))),
        };
    }

    apply_retain_keys_directive(&mut original, &mut patch)?;
    merge_patch_into_original(&mut original, &mut patch, meta)?;

    for (key, patch_value) in patch {
        let (key, is_delete_list) = if key.starts_with(DELETE_FROM_PRIMITIVE_LIST_PREFIX) {
            (
                extract_key(&key, DELETE_FROM_PRIMITIVE_LIST_PREFIX)?.to_string(),
                true,
            )
        } else {
            (key, false)
        };

        if patch_value.is_null() {
            original.shift_remove(&key);
            continue;
        }
        let field = meta.field(&key);
        let Some(original_value) = original.get_mut(&key) else {
            if is_delete_list {
                // Deleting from a list that does not exist changes nothing.
                continue;
            }
            let value = merge_value(Value::Null, patch_value, field, false)?;
            original.insert(key, value);
            continue;
        };
        let current = std::mem::take(original_value);
        *original_value = merge_value(current, patch_value, field, is_delete_list)?;
    }
    Ok(original)
}

/// Merges one field's patch value into its original value (`Null` when absent).
fn merge_value(
    original: Value,
    patch: Value,
    field: FieldMeta,
    is_delete_list: bool,
) -> Result<Value, PatchError> {
    match (original, patch) {
        (Value::Object(o), Value::Object(p)) if !field.replace => {
            merge_map(o, p, field.meta).map(Value::Object)
        }
        (Value::Null, Value::Object(p)) => merge_map(Map::new(), p, field.meta).map(Value::Object),
        (Value::Array(o), Value::Array(p)) if field.merge => {
            merge_slice(o, p, field.meta.items(), field.merge_key, is_delete_list).map(Value::Array)
        }
        (Value::Null, Value::Array(p)) if field.merge => {
            merge_slice(Vec::new(), p, field.meta.items(), field.merge_key, false).map(Value::Array)
        }
        (_, patch) => Ok(patch),
    }
}

/// `extractKey`: the list name after `$deleteFromPrimitiveList/` or `$setElementOrder/`.
fn extract_key<'a>(key: &'a str, prefix: &str) -> Result<&'a str, PatchError> {
    match key.split_once('/') {
        Some((p, rest)) if p == prefix => Ok(rest),
        _ if prefix == DELETE_FROM_PRIMITIVE_LIST_PREFIX => {
            Err(malformed("invalid patch format of primitive list"))
        }
        _ => Err(malformed("invalid patch format of setElementOrder list")),
    }
}

/// `applyRetainKeysDirective`: clears keys of `original` missing from `$retainKeys`.
fn apply_retain_keys_directive(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
) -> Result<(), PatchError> {
    let Some(retain) = patch.shift_remove(RETAIN_KEYS_DIRECTIVE) else {
        return Ok(());
    };
    let Value::Array(retain) = retain else {
        return Err(malformed("invalid patch format of retainKeys"));
    };
    let retained = |k: &str| retain.iter().any(|r| r.as_str() == Some(k));
    for (k, v) in patch.iter() {
        if v.is_null()
            || k.starts_with(DELETE_FROM_PRIMITIVE_LIST_PREFIX)
            || k.starts_with(SET_ELEMENT_ORDER_PREFIX)
        {
            continue;
        }
        if !retained(k) {
            return Err(malformed("invalid patch format of retainKeys"));
        }
    }
    original.retain(|k, _| retained(k));
    Ok(())
}

/// `mergePatchIntoOriginal`: merges each list named by a `$setElementOrder/<list>` directive
/// and orders it: `$setElementOrder` first, then the patch's order, then the live order.
fn merge_patch_into_original(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
    meta: PatchMeta,
) -> Result<(), PatchError> {
    let order_keys: Vec<String> = patch
        .keys()
        .filter(|k| k.starts_with(SET_ELEMENT_ORDER_PREFIX))
        .cloned()
        .collect();
    for key in order_keys {
        let Some(order) = patch.shift_remove(&key) else {
            continue;
        };
        let Value::Array(order) = order else {
            return Err(malformed("invalid patch format of setElementOrder list"));
        };
        let list_key = extract_key(&key, SET_ELEMENT_ORDER_PREFIX)?.to_string();
        let original_list = match original.get(&list_key) {
            None => None,
            Some(Value::Array(l)) => Some(l.clone()),
            Some(other) => {
                return Err(malformed(format!(
                    "expected a list for {list_key}, got {}",
                    type_name(other)
                )))
            }
        };
        let patch_list = match patch.get(&list_key) {
            None => None,
            Some(Value::Array(l)) => Some(l.clone()),
            Some(other) => {
                return Err(malformed(format!(
                    "expected a list for {list_key}, got {}",
                    type_name(other)
                )))
            }
        };
        let field = meta.field(&list_key);
        let merge_key = if field.merge { field.merge_key } else { None };
        validate_patch_with_set_order_list(
            patch_list.as_deref().unwrap_or(&[]),
            &order,
            merge_key,
        )?;

        let merged = match (&original_list, &patch_list) {
            (Some(o), None) => o.clone(),
            (None, Some(p)) => {
                if field.merge {
                    merge_slice(Vec::new(), p.clone(), field.meta.items(), merge_key, false)?
                } else {
                    p.clone()
                }
            }
            (Some(o), Some(p)) => {
                if field.merge {
                    merge_slice(o.clone(), p.clone(), field.meta.items(), merge_key, false)?
                } else {
                    p.clone()
                }
            }
            (None, None) => continue,
        };

        let (patch_items, server_only) = partition(merged, &order, merge_key)?;
        let server_order = match (original_list, &patch_list, merge_key) {
            (Some(o), Some(p), Some(key)) if field.merge => go_aliased_original(o, p, key),
            (o, _, _) => o.unwrap_or_default(),
        };
        let is_map = element_is_map(&server_order, patch_list.as_deref().unwrap_or(&[]), &order);
        let both = normalize_element_order(
            patch_items,
            server_only,
            &order,
            &server_order,
            merge_key,
            is_map,
        )?;
        original.insert(list_key.clone(), Value::Array(both));
        patch.shift_remove(&list_key);
    }
    Ok(())
}

/// The live list as Go's `mergePatchIntoOriginal` sees it after merging: `mergeSlice` deletes
/// and appends in place in the caller's backing array, so the order it then uses for server-only
/// items is the original list with deleted items shifted out and appended items written into the
/// freed slots (truncated to the original length). kube's ordering of server-only items when a
/// patch both deletes and adds depends on this, so it is reproduced here.
fn go_aliased_original(original: Vec<Value>, patch: &[Value], merge_key: &str) -> Vec<Value> {
    let n = original.len();
    let mut backing = original;
    let mut len = n;
    let mut replace = false;
    for item in patch {
        match directive_of(item) {
            Some(DELETE_DIRECTIVE) => {
                let Some(value) = item.get(merge_key) else {
                    continue;
                };
                while let Some(k) = backing[..len]
                    .iter()
                    .position(|o| o.get(merge_key) == Some(value))
                {
                    for i in k..len - 1 {
                        backing[i] = backing[i + 1].clone();
                    }
                    len -= 1;
                }
            }
            Some(REPLACE_DIRECTIVE) => replace = true,
            _ => {}
        }
    }
    if replace {
        return backing;
    }
    // Go's local slice after the deletions; appends past the original length are not visible
    // to the caller.
    let mut local: Vec<Value> = backing[..len].to_vec();
    for item in patch.iter().filter(|i| i.get(DIRECTIVE_MARKER).is_none()) {
        let value = item.get(merge_key);
        if !local.iter().any(|o| o.get(merge_key) == value) {
            if local.len() < n {
                backing[local.len()] = item.clone();
            }
            local.push(item.clone());
        }
    }
    backing
}

fn element_is_map(a: &[Value], b: &[Value], c: &[Value]) -> bool {
    a.iter()
        .chain(b)
        .chain(c)
        .next()
        .is_some_and(Value::is_object)
}

/// `validatePatchWithSetOrderList`: the patch list must follow the `$setElementOrder` order.
fn validate_patch_with_set_order_list(
    patch_list: &[Value],
    order: &[Value],
    merge_key: Option<&str>,
) -> Result<(), PatchError> {
    if order.is_empty() || patch_list.is_empty() {
        return Ok(());
    }
    let non_delete: Vec<&Value> = if merge_key.is_some() {
        patch_list
            .iter()
            .filter(|v| directive_of(v) != Some(DELETE_DIRECTIVE))
            .collect()
    } else {
        patch_list.iter().collect()
    };
    let (mut pi, mut oi) = (0, 0);
    while pi < non_delete.len() && oi < order.len() {
        if non_delete[pi].get(DIRECTIVE_MARKER).is_some() {
            pi += 1;
            continue;
        }
        if merge_key_value_equal(non_delete[pi], &order[oi], merge_key)? {
            pi += 1;
        }
        oi += 1;
    }
    if pi < non_delete.len() && oi >= order.len() {
        return Err(malformed(format!(
            "The order in patch list:\n{}\n doesn't match $setElementOrder list:\n{}\n",
            Value::Array(patch_list.to_vec()),
            Value::Array(order.to_vec())
        )));
    }
    Ok(())
}

fn directive_of(v: &Value) -> Option<&str> {
    v.get(DIRECTIVE_MARKER).and_then(Value::as_str)
}

fn merge_key_value_equal(
    left: &Value,
    right: &Value,
    merge_key: Option<&str>,
) -> Result<bool, PatchError> {
    let Some(key) = merge_key else {
        return Ok(left == right);
    };
    let l = left.get(key).ok_or_else(|| no_merge_key(left, key))?;
    let r = right.get(key).ok_or_else(|| no_merge_key(right, key))?;
    Ok(l == r)
}

fn no_merge_key(v: &Value, key: &str) -> PatchError {
    malformed(format!(
        "map: {v} does not contain declared merge key: {key}"
    ))
}

/// `mergeSlice`: merges a list with the `merge` strategy.
fn merge_slice(
    original: Vec<Value>,
    patch: Vec<Value>,
    elem_meta: PatchMeta,
    merge_key: Option<&str>,
    is_delete_list: bool,
) -> Result<Vec<Value>, PatchError> {
    if original.is_empty() && patch.is_empty() {
        return Ok(original);
    }
    let is_map = slice_element_is_map(&original, &patch)?;
    let (server_order, patch, merged) = if !is_map {
        if is_delete_list {
            return Ok(original
                .into_iter()
                .filter(|v| !patch.contains(v))
                .collect());
        }
        let mut merged: Vec<Value> = Vec::with_capacity(original.len() + patch.len());
        for v in original.iter().chain(&patch) {
            if !merged.contains(v) {
                merged.push(v.clone());
            }
        }
        (original, patch, merged)
    } else {
        let Some(key) = merge_key else {
            return Err(malformed(
                "cannot merge lists without merge key for type map",
            ));
        };
        let (original, patch) = merge_slice_with_special_elements(original, patch, key)?;
        let merged =
            merge_slice_without_special_elements(original.clone(), &patch, key, elem_meta)?;
        (original, patch, merged)
    };
    let key = if is_map { merge_key } else { None };
    let (patch_items, server_only) = partition(merged, &patch, key)?;
    normalize_element_order(patch_items, server_only, &patch, &server_order, key, is_map)
}

/// `sliceElementType`: all elements share one JSON type, which is not a list.
fn slice_element_is_map(a: &[Value], b: &[Value]) -> Result<bool, PatchError> {
    let mut first: Option<&'static str> = None;
    for v in a.iter().chain(b) {
        let t = type_name(v);
        if t == "list" {
            return Err(PatchError::Failed(
                "lists of lists are not supported".to_string(),
            ));
        }
        match first {
            None => first = Some(t),
            Some(f) if f != t => {
                return Err(malformed(format!(
                    "list element types are not identical: {} and {}",
                    Value::Array(a.to_vec()),
                    Value::Array(b.to_vec())
                )))
            }
            Some(_) => {}
        }
    }
    Ok(first == Some("map"))
}

/// `mergeSliceWithSpecialElements`: applies `$patch: delete|replace` items.
/// Returns the updated original and the patch without directive items.
fn merge_slice_with_special_elements(
    mut original: Vec<Value>,
    patch: Vec<Value>,
    merge_key: &str,
) -> Result<(Vec<Value>, Vec<Value>), PatchError> {
    let mut plain = Vec::with_capacity(patch.len());
    let mut replace = false;
    for item in patch {
        match item.get(DIRECTIVE_MARKER) {
            None => plain.push(item),
            Some(d) => match d.as_str() {
                Some(DELETE_DIRECTIVE) => {
                    let value = item
                        .get(merge_key)
                        .ok_or_else(|| no_merge_key(&item, merge_key))?;
                    original.retain(|o| o.get(merge_key) != Some(value));
                }
                Some(REPLACE_DIRECTIVE) => replace = true,
                Some(MERGE_DIRECTIVE) => {
                    return Err(malformed(
                        "merging lists cannot yet be specified in the patch",
                    ))
                }
                _ => return Err(malformed(format!("unknown patch type: {d} in map: {item}"))),
            },
        }
    }
    if replace {
        return Ok((plain, Vec::new()));
    }
    Ok((original, plain))
}

/// `mergeSliceWithoutSpecialElements`: merges items with equal merge keys, appends the rest.
fn merge_slice_without_special_elements(
    mut original: Vec<Value>,
    patch: &[Value],
    merge_key: &str,
    elem_meta: PatchMeta,
) -> Result<Vec<Value>, PatchError> {
    for item in patch {
        let Value::Object(patch_map) = item else {
            return Err(malformed(format!(
                "expected a map in a merged list, got {item}"
            )));
        };
        let value = patch_map
            .get(merge_key)
            .ok_or_else(|| no_merge_key(item, merge_key))?;
        match original
            .iter()
            .position(|o| o.get(merge_key) == Some(value))
        {
            Some(i) => {
                let current = match std::mem::take(&mut original[i]) {
                    Value::Object(m) => m,
                    other => {
                        return Err(malformed(format!(
                            "expected a map in a merged list, got {other}"
                        )))
                    }
                };
                original[i] = Value::Object(merge_map(current, patch_map.clone(), elem_meta)?);
            }
            None => original.push(Value::Object(merge_map(
                Map::new(),
                patch_map.clone(),
                elem_meta,
            )?)),
        }
    }
    Ok(original)
}

/// Splits `merged` into items present in `by` (by merge key or value) and server-only items.
fn partition(
    merged: Vec<Value>,
    by: &[Value],
    merge_key: Option<&str>,
) -> Result<(Vec<Value>, Vec<Value>), PatchError> {
    let mut in_patch = Vec::with_capacity(merged.len());
    let mut server_only = Vec::with_capacity(merged.len());
    for v in merged {
        let found = match merge_key {
            None => by.contains(&v),
            Some(key) => {
                let value = v.get(key).ok_or_else(|| no_merge_key(&v, key))?;
                let mut found = false;
                for b in by {
                    if !b.is_object() {
                        return Err(malformed(format!("value {b} is not a map")));
                    }
                    if b.get(key) == Some(value) {
                        found = true;
                        break;
                    }
                }
                found
            }
        };
        if found {
            in_patch.push(v);
        } else {
            server_only.push(v);
        }
    }
    Ok((in_patch, server_only))
}

/// `normalizeElementOrder`: orders patch items by `patch_order`, server-only items by
/// `server_order`, then interleaves them by `server_order`.
fn normalize_element_order(
    patch: Vec<Value>,
    server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    merge_key: Option<&str>,
    is_map: bool,
) -> Result<Vec<Value>, PatchError> {
    let patch = normalize_slice_order(patch, patch_order, merge_key, is_map)?;
    let server_only = normalize_slice_order(server_only, server_order, merge_key, is_map)?;
    Ok(merge_sorted_slice(
        server_only,
        patch,
        server_order,
        merge_key,
        is_map,
    ))
}

/// `index`: the position of `value` in `list`, comparing merge keys for maps.
fn index(list: &[Value], value: &Value, merge_key: Option<&str>, is_map: bool) -> Option<usize> {
    if is_map {
        let key = merge_key.unwrap_or_default();
        let wanted = value.get(key);
        list.iter().position(|v| v.get(key) == wanted)
    } else {
        list.iter().position(|v| v == value)
    }
}

/// `normalizeSliceOrder`: sorts `to_sort` by `order`; `$patch: delete` items go last.
///
/// Go uses `sort.SliceStable` with a comparator that answers "less" whenever either item is
/// missing from `order`; for the short lists in objects that is an insertion sort, done here.
fn normalize_slice_order(
    to_sort: Vec<Value>,
    order: &[Value],
    merge_key: Option<&str>,
    is_map: bool,
) -> Result<Vec<Value>, PatchError> {
    let (mut to_sort, to_delete) = if is_map {
        let key = merge_key.unwrap_or_default();
        for v in to_sort.iter().chain(order) {
            if !v.is_object() {
                return Err(malformed(format!("value {v} is not a map")));
            }
            if v.get(key).is_none() {
                return Err(no_merge_key(v, key));
            }
        }
        to_sort
            .into_iter()
            .partition(|v| directive_of(v) != Some(DELETE_DIRECTIVE))
    } else {
        (to_sort, Vec::new())
    };
    let less = |a: &Value, b: &Value| match (
        index(order, a, merge_key, is_map),
        index(order, b, merge_key, is_map),
    ) {
        (Some(i), Some(j)) => i < j,
        _ => true,
    };
    for i in 1..to_sort.len() {
        let mut j = i;
        while j > 0 && less(&to_sort[j], &to_sort[j - 1]) {
            to_sort.swap(j, j - 1);
            j -= 1;
        }
    }
    to_sort.extend(to_delete);
    Ok(to_sort)
}

/// `mergeSortedSlice`: inserts each server-only item (`left`) among the patch items (`right`)
/// before the first patch item that comes after it in the live list.
fn merge_sorted_slice(
    left: Vec<Value>,
    right: Vec<Value>,
    server_order: &[Value],
    merge_key: Option<&str>,
    is_map: bool,
) -> Vec<Value> {
    let mut out = Vec::with_capacity(left.len() + right.len());
    let mut left = left.into_iter().peekable();
    let mut right = right.into_iter().peekable();
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(l), Some(r)) => matches!(
                (
                    index(server_order, l, merge_key, is_map),
                    index(server_order, r, merge_key, is_map),
                ),
                (Some(li), Some(ri)) if li < ri
            ),
        };
        let next = if take_left { left.next() } else { right.next() };
        out.extend(next);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn smp(kind: &str, original: Value, patch: Value) -> Result<Value, PatchError> {
        let def = match kind {
            "Pod" => "io.k8s.api.core.v1.Pod",
            "Deployment" => "io.k8s.api.apps.v1.Deployment",
            "Node" => "io.k8s.api.core.v1.Node",
            "Service" => "io.k8s.api.core.v1.Service",
            _ => panic!("unknown test kind {kind}"),
        };
        strategic_merge(&original, &patch, PatchMeta::for_definition(def))
    }

    fn pod(spec: Value) -> Value {
        json!({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":spec})
    }

    #[test]
    fn nulls_delete_keys_and_maps_merge() {
        let out = smp(
            "Pod",
            json!({"metadata":{"labels":{"a":"1","b":"2"}}}),
            json!({"metadata":{"labels":{"a":null,"c":"3"}}}),
        )
        .unwrap();
        assert_eq!(out, json!({"metadata":{"labels":{"b":"2","c":"3"}}}));
    }

    #[test]
    fn containers_are_merged_by_name() {
        let original = pod(json!({"containers":[
            {"name":"a","image":"a:1"},{"name":"b","image":"b:1"}]}));
        let out = smp(
            "Pod",
            original,
            json!({"spec":{"containers":[{"name":"b","image":"b:2"}]}}),
        )
        .unwrap();
        assert_eq!(
            out["spec"]["containers"],
            json!([{"name":"a","image":"a:1"},{"name":"b","image":"b:2"}])
        );
    }

    #[test]
    fn deployment_pod_template_containers_merge_by_name_with_set_element_order() {
        // The patch kubectl apply computes when only an image changes.
        let original = json!({"spec":{"template":{"spec":{"containers":[
            {"name":"web","image":"nginx:1.24","ports":[{"containerPort":80}]},
            {"name":"sidecar","image":"busybox"}]}}}});
        let patch = json!({"spec":{"template":{"spec":{
            "$setElementOrder/containers":[{"name":"web"},{"name":"sidecar"}],
            "containers":[{"name":"web","image":"nginx:1.25"}]}}}});
        let out = smp("Deployment", original, patch).unwrap();
        assert_eq!(
            out["spec"]["template"]["spec"]["containers"],
            json!([{"name":"web","image":"nginx:1.25","ports":[{"containerPort":80}]},
                   {"name":"sidecar","image":"busybox"}])
        );
    }

    #[test]
    fn set_element_order_reorders_the_merged_list() {
        let original = pod(json!({"containers":[{"name":"a"},{"name":"b"},{"name":"c"}]}));
        let patch = json!({"spec":{"$setElementOrder/containers":[{"name":"c"},{"name":"a"},{"name":"b"}]}});
        let out = smp("Pod", original, patch).unwrap();
        assert_eq!(
            out["spec"]["containers"],
            json!([{"name":"c"},{"name":"a"},{"name":"b"}])
        );
    }

    #[test]
    fn kubectl_edit_removing_a_list_item_uses_delete_directive() {
        let original = pod(json!({"containers":[{"name":"a"},{"name":"b"}]}));
        let patch = json!({"spec":{"$setElementOrder/containers":[{"name":"a"}],
            "containers":[{"$patch":"delete","name":"b"}]}});
        let out = smp("Pod", original, patch).unwrap();
        assert_eq!(out["spec"]["containers"], json!([{"name":"a"}]));
    }

    #[test]
    fn adopt_adds_a_controller_owner_reference() {
        let original = json!({"metadata":{"name":"p","uid":"pod-uid","ownerReferences":[
            {"apiVersion":"v1","kind":"X","name":"other","uid":"u0"}]}});
        let patch = json!({"metadata":{"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet",
            "name":"rs","uid":"u1","controller":true,"blockOwnerDeletion":true}],"uid":"pod-uid"}});
        let out = smp("Pod", original, patch).unwrap();
        let refs = out["metadata"]["ownerReferences"].as_array().unwrap();
        // Without $setElementOrder, Go's mergeSortedSlice puts patch items before server-only ones.
        assert_eq!(refs.len(), 2);
        assert_eq!(refs[0]["uid"], "u1");
        assert_eq!(refs[0]["controller"], true);
        assert_eq!(refs[1]["uid"], "u0");
    }

    #[test]
    fn release_deletes_the_owner_reference_by_uid() {
        let original = json!({"metadata":{"name":"p","uid":"pod-uid","ownerReferences":[
            {"apiVersion":"apps/v1","kind":"ReplicaSet","name":"rs","uid":"u1","controller":true},
            {"apiVersion":"v1","kind":"X","name":"other","uid":"u0"}]}});
        let patch = json!({"metadata":{"ownerReferences":[{"$patch":"delete","uid":"u1"}],"uid":"pod-uid"}});
        let out = smp("Pod", original, patch).unwrap();
        assert_eq!(
            out["metadata"]["ownerReferences"],
            json!([{"apiVersion":"v1","kind":"X","name":"other","uid":"u0"}])
        );
    }

    #[test]
    fn release_when_no_owner_references_exist_adds_nothing() {
        let out = smp(
            "Pod",
            json!({"metadata":{"name":"p","uid":"x"}}),
            json!({"metadata":{"ownerReferences":[{"$patch":"delete","uid":"u1"}],"uid":"x"}}),
        )
        .unwrap();
        assert_eq!(out["metadata"]["ownerReferences"], json!([]));
    }

    #[test]
    fn finalizers_merge_as_a_set_and_delete_from_primitive_list() {
        let original = json!({"metadata":{"finalizers":["a","b"]}});
        let out = smp(
            "Pod",
            original.clone(),
            json!({"metadata":{"finalizers":["b","c"]}}),
        )
        .unwrap();
        assert_eq!(out["metadata"]["finalizers"], json!(["a", "b", "c"]));
        let out = smp(
            "Pod",
            original,
            json!({"metadata":{"$deleteFromPrimitiveList/finalizers":["a"]}}),
        )
        .unwrap();
        assert_eq!(out["metadata"]["finalizers"], json!(["b"]));
    }

    #[test]
    fn lists_without_merge_strategy_are_replaced() {
        let original =
            pod(json!({"tolerations":[{"key":"a"}],"containers":[{"name":"c","args":["x","y"]}]}));
        let patch =
            json!({"spec":{"tolerations":[{"key":"b"}],"containers":[{"name":"c","args":["z"]}]}});
        let out = smp("Pod", original, patch).unwrap();
        assert_eq!(out["spec"]["tolerations"], json!([{"key":"b"}]));
        assert_eq!(out["spec"]["containers"][0]["args"], json!(["z"]));
    }

    #[test]
    fn env_and_ports_merge_by_their_keys() {
        let original = pod(json!({"containers":[{"name":"c",
            "env":[{"name":"A","value":"1"},{"name":"B","value":"2"}],
            "ports":[{"containerPort":80,"name":"http"}]}]}));
        let patch = json!({"spec":{"containers":[{"name":"c",
            "env":[{"name":"B","value":"3"},{"name":"C","value":"4"}],
            "ports":[{"containerPort":443,"name":"https"}]}]}});
        let out = smp("Pod", original, patch).unwrap();
        let c = &out["spec"]["containers"][0];
        // A server-only item stays before a patched item that follows it in the live list;
        // new items (absent from the live list) go before the remaining server-only items.
        assert_eq!(
            c["env"],
            json!([{"name":"A","value":"1"},{"name":"B","value":"3"},{"name":"C","value":"4"}])
        );
        assert_eq!(
            c["ports"],
            json!([{"containerPort":443,"name":"https"},{"containerPort":80,"name":"http"}])
        );
    }

    #[test]
    fn patch_replace_directive_in_a_map_replaces_it() {
        let original = json!({"metadata":{"labels":{"a":"1","b":"2"}}});
        let out = smp(
            "Pod",
            original,
            json!({"metadata":{"labels":{"$patch":"replace","c":"3"}}}),
        )
        .unwrap();
        assert_eq!(out["metadata"]["labels"], json!({"c":"3"}));
    }

    #[test]
    fn patch_delete_directive_in_a_map_empties_it() {
        let original = json!({"metadata":{"labels":{"a":"1"}}});
        let out = smp(
            "Pod",
            original,
            json!({"metadata":{"labels":{"$patch":"delete"}}}),
        )
        .unwrap();
        assert_eq!(out["metadata"]["labels"], json!({}));
    }

    #[test]
    fn patch_replace_item_in_a_merged_list_replaces_the_list() {
        let original = pod(json!({"containers":[{"name":"a"},{"name":"b"}]}));
        let patch = json!({"spec":{"containers":[{"name":"c"},{"$patch":"replace"}]}});
        let out = smp("Pod", original, patch).unwrap();
        assert_eq!(out["spec"]["containers"], json!([{"name":"c"}]));
    }

    #[test]
    fn patch_merge_item_in_a_list_is_rejected() {
        let original = pod(json!({"containers":[{"name":"a"}]}));
        let patch = json!({"spec":{"containers":[{"$patch":"merge"}]}});
        assert!(matches!(
            smp("Pod", original, patch),
            Err(PatchError::Malformed(_))
        ));
    }

    #[test]
    fn unknown_map_directive_is_rejected() {
        let patch = json!({"metadata":{"labels":{"$patch":"frobnicate"}}});
        assert!(matches!(
            smp("Pod", json!({"metadata":{}}), patch),
            Err(PatchError::Malformed(_))
        ));
    }

    #[test]
    fn merge_list_items_need_the_merge_key() {
        let original = pod(json!({"containers":[{"name":"a"}]}));
        let patch = json!({"spec":{"containers":[{"image":"x"}]}});
        assert!(smp("Pod", original, patch).is_err());
    }

    #[test]
    fn retain_keys_clears_fields_missing_from_the_list() {
        // kubectl apply switching a Deployment from RollingUpdate to Recreate.
        let original = json!({"spec":{"strategy":{"type":"RollingUpdate",
            "rollingUpdate":{"maxSurge":1,"maxUnavailable":0}}}});
        let patch = json!({"spec":{"strategy":{"$retainKeys":["type"],"type":"Recreate","rollingUpdate":null}}});
        let out = smp("Deployment", original, patch).unwrap();
        assert_eq!(out["spec"]["strategy"], json!({"type":"Recreate"}));
    }

    #[test]
    fn retain_keys_rejects_patch_fields_missing_from_the_list() {
        let original = json!({"spec":{"strategy":{"type":"RollingUpdate"}}});
        let patch =
            json!({"spec":{"strategy":{"$retainKeys":["type"],"type":"Recreate","other":1}}});
        assert!(matches!(
            smp("Deployment", original, patch),
            Err(PatchError::Malformed(_))
        ));
    }

    #[test]
    fn volumes_with_retain_keys_switch_source() {
        let original = pod(json!({"volumes":[{"name":"v","emptyDir":{}}]}));
        let patch = json!({"spec":{"volumes":[{"name":"v","$retainKeys":["name","hostPath"],
            "hostPath":{"path":"/tmp"}}]}});
        let out = smp("Pod", original, patch).unwrap();
        assert_eq!(
            out["spec"]["volumes"],
            json!([{"name":"v","hostPath":{"path":"/tmp"}}])
        );
    }

    #[test]
    fn node_conditions_merge_by_type() {
        let original = json!({"status":{"conditions":[
            {"type":"Ready","status":"True"},{"type":"MemoryPressure","status":"False"}]}});
        let patch = json!({"status":{"conditions":[{"type":"Ready","status":"False","reason":"KubeletDown"}]}});
        let out = smp("Node", original, patch).unwrap();
        assert_eq!(
            out["status"]["conditions"],
            json!([{"type":"Ready","status":"False","reason":"KubeletDown"},
                   {"type":"MemoryPressure","status":"False"}])
        );
    }

    #[test]
    fn service_ports_merge_by_port() {
        let original = json!({"spec":{"ports":[{"port":80,"targetPort":8080}]}});
        let patch = json!({"spec":{"ports":[{"port":80,"targetPort":9090},{"port":443}]}});
        let out = smp("Service", original, patch).unwrap();
        assert_eq!(
            out["spec"]["ports"],
            json!([{"port":80,"targetPort":9090},{"port":443}])
        );
    }

    #[test]
    fn new_items_in_patch_order_interleave_with_server_items() {
        // patch_test.go "Merge with setElementOrder": server-only items keep their live position.
        let original = pod(json!({"containers":[{"name":"1"},{"name":"2"},{"name":"3"}]}));
        let patch = json!({"spec":{
            "$setElementOrder/containers":[{"name":"4"},{"name":"2"},{"name":"1"}],
            "containers":[{"name":"4"}]}});
        let out = smp("Pod", original, patch).unwrap();
        assert_eq!(
            out["spec"]["containers"],
            json!([{"name":"4"},{"name":"2"},{"name":"1"},{"name":"3"}])
        );
    }

    #[test]
    fn set_element_order_for_primitive_lists() {
        let original = json!({"metadata":{"finalizers":["a","b","c"]}});
        let patch = json!({"metadata":{"$setElementOrder/finalizers":["c","d","a","b"],"finalizers":["d"]}});
        let out = smp("Pod", original, patch).unwrap();
        assert_eq!(out["metadata"]["finalizers"], json!(["c", "d", "a", "b"]));
    }

    #[test]
    fn patch_list_out_of_set_element_order_is_rejected() {
        let original = pod(json!({"containers":[{"name":"a"},{"name":"b"}]}));
        let patch = json!({"spec":{"$setElementOrder/containers":[{"name":"a"},{"name":"b"}],
            "containers":[{"name":"b","image":"x"},{"name":"a","image":"y"}]}});
        assert!(matches!(
            smp("Pod", original, patch),
            Err(PatchError::Malformed(_))
        ));
    }

    #[test]
    fn type_changes_replace_the_value() {
        let out = smp(
            "Pod",
            json!({"spec":{"containers":[{"name":"a"}]}}),
            json!({"spec":{"containers":"oops"}}),
        )
        .unwrap();
        assert_eq!(out["spec"]["containers"], "oops");
    }

    #[test]
    fn directives_in_new_values_are_processed_not_stored() {
        let out = smp(
            "Pod",
            json!({"spec":{}}),
            json!({"spec":{"containers":[{"name":"a","env":[{"name":"X","$patch":"delete"}]}]}}),
        )
        .unwrap();
        assert_eq!(out["spec"]["containers"], json!([{"name":"a","env":[]}]));
    }

    #[test]
    fn lists_of_lists_are_refused() {
        let out = smp(
            "Pod",
            json!({"metadata":{"finalizers":[["a"]]}}),
            json!({"metadata":{"finalizers":[["b"]]}}),
        );
        assert!(matches!(out, Err(PatchError::Failed(_))));
    }
}

#[cfg(test)]
#[path = "strategic_go_cases.rs"]
mod go_cases;
