//! Cases ported from `strategicpatch/patch_test.go` (`strategicMergePatchRawTestCases` and
//! `createStrategicMergePatchTestCaseData`), run against the `mergeItem` test type.
//!
//! Each case applies the two-way patch to the original (expecting the modified document) and the
//! three-way patch to the current document (expecting the result), exactly as the Go tests do.

use serde_json::{json, Value};

use super::{strategic_merge, PatchError, PatchMeta};

/// The schema of Go's `mergeItem` test struct, unrolled to `depth` levels of nesting.
fn merge_item(depth: usize) -> Value {
    let child = if depth == 0 {
        json!({"type": "object"})
    } else {
        merge_item(depth - 1)
    };
    let merging = json!({"type": "array", "items": child,
        "x-kubernetes-patch-strategy": "merge", "x-kubernetes-patch-merge-key": "name"});
    json!({"type": "object", "properties": {
        "name": {"type": "string"},
        "value": {"type": "string"},
        "other": {"type": "string"},
        "mergingList": merging,
        "nonMergingList": {"type": "array", "items": child},
        "mergingIntList": {"type": "array", "items": {"type": "integer"},
            "x-kubernetes-patch-strategy": "merge"},
        "nonMergingIntList": {"type": "array", "items": {"type": "integer"}},
        "mergeItemPtr": merging,
        "simpleMap": {"type": "object", "additionalProperties": {"type": "string"}},
        "replacingItem": {"type": "object", "x-kubernetes-patch-strategy": "replace"},
        "retainKeysMap": {"type": "object", "x-kubernetes-patch-strategy": "retainKeys",
            "properties": {
                "name": {"type": "string"},
                "value": {"type": "string"},
                "other": {"type": "string"},
                "simpleMap": {"type": "object", "additionalProperties": {"type": "string"}},
                "mergingList": merging,
            }},
        "retainKeysMergingList": {"type": "array", "items": child,
            "x-kubernetes-patch-strategy": "merge,retainKeys",
            "x-kubernetes-patch-merge-key": "name"},
    }})
}

fn meta() -> PatchMeta {
    use std::sync::OnceLock;
    static SCHEMA: OnceLock<Value> = OnceLock::new();
    PatchMeta {
        schema: Some(SCHEMA.get_or_init(|| merge_item(3))),
    }
}

fn apply(original: &Value, patch: &Value) -> Result<Value, PatchError> {
    strategic_merge(original, patch, meta())
}

#[track_caller]
fn case(
    description: &str,
    original: Value,
    two_way: Value,
    modified: Value,
    current: Value,
    three_way: Value,
    result: Value,
) {
    assert_eq!(
        apply(&original, &two_way).unwrap(),
        modified,
        "{description}: two-way"
    );
    assert_eq!(
        apply(&current, &three_way).unwrap(),
        result,
        "{description}: three-way"
    );
}

#[test]
fn map_field_cases() {
    case(
        "add field and delete field from map",
        json!({"name": 1}),
        json!({"name": null, "value": 1}),
        json!({"value": 1}),
        json!({"name": 1, "other": "a"}),
        json!({"name": null, "value": 1}),
        json!({"value": 1, "other": "a"}),
    );
    case(
        "delete field from nested map",
        json!({"simpleMap": {"key1": 1, "key2": 1}}),
        json!({"simpleMap": {"key2": null}}),
        json!({"simpleMap": {"key1": 1}}),
        json!({"simpleMap": {"key1": 1, "key2": 1, "other": "a"}}),
        json!({"simpleMap": {"key2": null}}),
        json!({"simpleMap": {"key1": 1, "other": "a"}}),
    );
    case(
        "replace list of scalars",
        json!({"nonMergingIntList": [1, 2]}),
        json!({"nonMergingIntList": [2, 3]}),
        json!({"nonMergingIntList": [2, 3]}),
        json!({"nonMergingIntList": [1, 4]}),
        json!({"nonMergingIntList": [2, 3]}),
        json!({"nonMergingIntList": [2, 3]}),
    );
    case(
        "delete all maps from merging list",
        json!({"mergingList": [{"name": 1}, {"name": 2}]}),
        json!({"mergingList": [{"name": 1, "$patch": "delete"}, {"name": 2, "$patch": "delete"}]}),
        json!({"mergingList": []}),
        json!({"mergingList": [{"name": 1, "other": "a"}, {"name": 2, "other": "b"}]}),
        json!({"mergingList": [{"name": 1, "$patch": "delete"}, {"name": 2, "$patch": "delete"}]}),
        json!({"mergingList": []}),
    );
}

#[test]
fn lists_of_scalars() {
    case(
        "delete all duplicate items in lists of scalars",
        json!({"mergingIntList": [1, 2, 3, 3]}),
        json!({"$setElementOrder/mergingIntList": [1, 2], "$deleteFromPrimitiveList/mergingIntList": [3]}),
        json!({"mergingIntList": [1, 2]}),
        json!({"mergingIntList": [1, 2, 3, 3, 4]}),
        json!({"$setElementOrder/mergingIntList": [1, 2], "$deleteFromPrimitiveList/mergingIntList": [3]}),
        json!({"mergingIntList": [1, 2, 4]}),
    );
    case(
        "add and delete items in lists of scalars",
        json!({"mergingIntList": [1, 2, 3]}),
        json!({"$setElementOrder/mergingIntList": [1, 2, 4],
               "$deleteFromPrimitiveList/mergingIntList": [3], "mergingIntList": [4]}),
        json!({"mergingIntList": [1, 2, 4]}),
        json!({"mergingIntList": [1, 2, 3, 4]}),
        json!({"$setElementOrder/mergingIntList": [1, 2, 4],
               "$deleteFromPrimitiveList/mergingIntList": [3]}),
        json!({"mergingIntList": [1, 2, 4]}),
    );
    case(
        "add an item in a list of primitives and preserve order",
        json!({"mergingIntList": [1, 2]}),
        json!({"$setElementOrder/mergingIntList": [3, 1, 2], "mergingIntList": [3]}),
        json!({"mergingIntList": [3, 1, 2]}),
        json!({"mergingIntList": [1, 4, 2]}),
        json!({"$setElementOrder/mergingIntList": [3, 1, 2], "mergingIntList": [3]}),
        json!({"mergingIntList": [3, 1, 4, 2]}),
    );
    case(
        "set elements order in a int list with server-only items 3",
        json!({"mergingIntList": [1, 2, 3, 4]}),
        json!({"$setElementOrder/mergingIntList": [2, 1, 4, 3]}),
        json!({"mergingIntList": [2, 1, 4, 3]}),
        json!({"mergingIntList": [1, 2, 7, 9, 8, 3, 4]}),
        json!({"$setElementOrder/mergingIntList": [2, 1, 4, 3]}),
        json!({"mergingIntList": [2, 1, 7, 9, 8, 4, 3]}),
    );
    case(
        "behavior of set element order for a merging int list with duplicate",
        json!({"mergingIntList": [1, 2, 3, 2, 4]}),
        json!({"$setElementOrder/mergingIntList": [2, 1, 4, 3, 2]}),
        json!({"mergingIntList": [2, 2, 1, 4, 3]}),
        json!({"mergingIntList": [1, 2, 3, 2, 4]}),
        json!({"$setElementOrder/mergingIntList": [2, 1, 4, 3, 2]}),
        json!({"mergingIntList": [2, 2, 1, 4, 3]}),
    );
}

#[test]
fn merging_lists_of_maps() {
    case(
        "merge lists of maps",
        json!({"mergingList": [{"name": 1}, {"name": 2, "value": 2}]}),
        json!({"$setElementOrder/mergingList": [{"name": 4}, {"name": 1}, {"name": 2}, {"name": 3}],
               "mergingList": [{"name": 4, "value": 4}, {"name": 3, "value": 3}]}),
        json!({"mergingList": [{"name": 4, "value": 4}, {"name": 1}, {"name": 2, "value": 2},
                               {"name": 3, "value": 3}]}),
        json!({"mergingList": [{"name": 1, "other": "a"}, {"name": 2, "value": 2, "other": "b"}]}),
        json!({"$setElementOrder/mergingList": [{"name": 4}, {"name": 1}, {"name": 2}, {"name": 3}],
               "mergingList": [{"name": 4, "value": 4}, {"name": 3, "value": 3}]}),
        json!({"mergingList": [{"name": 4, "value": 4}, {"name": 1, "other": "a"},
                               {"name": 2, "value": 2, "other": "b"}, {"name": 3, "value": 3}]}),
    );
    case(
        "delete duplicate field in merging list",
        json!({"mergingList": [{"name": 1}, {"name": 1}]}),
        json!({"mergingList": {}}),
        json!({"mergingList": {}}),
        json!({"mergingList": [{"name": 1}, {"name": 1}]}),
        json!({"mergingList": {}}),
        json!({"mergingList": {}}),
    );
    case(
        "delete missing map from merging list with conflict",
        json!({"mergingList": [{"name": 1}, {"name": 2}]}),
        json!({"$setElementOrder/mergingList": [{"name": 2}],
               "mergingList": [{"name": 1, "$patch": "delete"}]}),
        json!({"mergingList": [{"name": 2}]}),
        json!({"mergingList": [{"name": 3, "other": "a"}]}),
        json!({"$setElementOrder/mergingList": [{"name": 2}],
               "mergingList": [{"name": 2}, {"name": 1, "$patch": "delete"}]}),
        json!({"mergingList": [{"name": 2}, {"name": 3, "other": "a"}]}),
    );
    case(
        "add map and delete map from merging list",
        json!({"mergingList": [{"name": 1}, {"name": 2}]}),
        json!({"$setElementOrder/mergingList": [{"name": 2}, {"name": 3}],
               "mergingList": [{"name": 3}, {"name": 1, "$patch": "delete"}]}),
        json!({"mergingList": [{"name": 2}, {"name": 3}]}),
        json!({"mergingList": [{"name": 1}, {"name": 2, "other": "b"}, {"name": 4, "other": "c"}]}),
        json!({"$setElementOrder/mergingList": [{"name": 2}, {"name": 3}],
               "mergingList": [{"name": 3}, {"name": 1, "$patch": "delete"}]}),
        json!({"mergingList": [{"name": 2, "other": "b"}, {"name": 4, "other": "c"}, {"name": 3}]}),
    );
    case(
        "add map and delete map from merging list with conflict",
        json!({"mergingList": [{"name": 1}, {"name": 2}]}),
        json!({"$setElementOrder/mergingList": [{"name": 2}, {"name": 3}],
               "mergingList": [{"name": 3}, {"name": 1, "$patch": "delete"}]}),
        json!({"mergingList": [{"name": 2}, {"name": 3}]}),
        json!({"mergingList": [{"name": 1, "other": "a"}, {"name": 4, "other": "c"}]}),
        json!({"$setElementOrder/mergingList": [{"name": 2}, {"name": 3}],
               "mergingList": [{"name": 2}, {"name": 3}, {"name": 1, "$patch": "delete"}]}),
        json!({"mergingList": [{"name": 4, "other": "c"}, {"name": 2}, {"name": 3}]}),
    );
    case(
        "replace non merging list nested in merging list",
        json!({"mergingList": [{"name": 1, "nonMergingList": [{"name": 1}, {"name": 2, "value": 2}]},
                               {"name": 2}]}),
        json!({"$setElementOrder/mergingList": [{"name": 1}, {"name": 2}],
               "mergingList": [{"name": 1, "nonMergingList": [{"name": 1, "value": 1}]}]}),
        json!({"mergingList": [{"name": 1, "nonMergingList": [{"name": 1, "value": 1}]}, {"name": 2}]}),
        json!({"mergingList": [{"name": 1, "other": "a",
                                "nonMergingList": [{"name": 1}, {"name": 2, "value": 2}]},
                               {"name": 2, "other": "b"}]}),
        json!({"$setElementOrder/mergingList": [{"name": 1}, {"name": 2}],
               "mergingList": [{"name": 1, "nonMergingList": [{"name": 1, "value": 1}]}]}),
        json!({"mergingList": [{"name": 1, "other": "a", "nonMergingList": [{"name": 1, "value": 1}]},
                               {"name": 2, "other": "b"}]}),
    );
    case(
        "add field to map in merging list nested in merging list with deletion conflict",
        json!({"mergingList": [{"name": 1, "mergingList": [{"name": 1}, {"name": 2, "value": 2}]},
                               {"name": 2}]}),
        json!({"$setElementOrder/mergingList": [{"name": 1}, {"name": 2}],
               "mergingList": [{"$setElementOrder/mergingList": [{"name": 2}, {"name": 1}],
                                "name": 1, "mergingList": [{"name": 1, "value": 1}]}]}),
        json!({"mergingList": [{"name": 1, "mergingList": [{"name": 2, "value": 2}, {"name": 1, "value": 1}]},
                               {"name": 2}]}),
        json!({"mergingList": [{"name": 1, "other": "a",
                                "mergingList": [{"name": 2, "value": 2, "other": "d"}]},
                               {"name": 2, "other": "b"}]}),
        json!({"$setElementOrder/mergingList": [{"name": 1}, {"name": 2}],
               "mergingList": [{"$setElementOrder/mergingList": [{"name": 2}, {"name": 1}],
                                "name": 1, "mergingList": [{"name": 1, "value": 1}]}]}),
        json!({"mergingList": [{"name": 1, "other": "a",
                                "mergingList": [{"name": 2, "value": 2, "other": "d"}, {"name": 1, "value": 1}]},
                               {"name": 2, "other": "b"}]}),
    );
    case(
        "add map to merging list by pointer",
        json!({"mergeItemPtr": [{"name": 1}]}),
        json!({"$setElementOrder/mergeItemPtr": [{"name": 1}, {"name": 2}], "mergeItemPtr": [{"name": 2}]}),
        json!({"mergeItemPtr": [{"name": 1}, {"name": 2}]}),
        json!({"mergeItemPtr": [{"name": 1, "other": "a"}, {"name": 3}]}),
        json!({"$setElementOrder/mergeItemPtr": [{"name": 1}, {"name": 2}], "mergeItemPtr": [{"name": 2}]}),
        json!({"mergeItemPtr": [{"name": 1, "other": "a"}, {"name": 2}, {"name": 3}]}),
    );
}

#[test]
fn element_order_with_server_only_items() {
    case(
        "delete an item in a list and preserve order",
        json!({"mergingList": [{"name": 1}, {"name": 3, "value": 3}, {"name": 2, "value": 2}]}),
        json!({"$setElementOrder/mergingList": [{"name": 2}, {"name": 1}],
               "mergingList": [{"name": 3, "$patch": "delete"}]}),
        json!({"mergingList": [{"name": 2, "value": 2}, {"name": 1}]}),
        json!({"mergingList": [{"name": 1, "other": "a"}, {"name": 2, "value": 2, "other": "b"},
                               {"name": 3, "value": 3}]}),
        json!({"$setElementOrder/mergingList": [{"name": 2}, {"name": 1}],
               "mergingList": [{"name": 3, "$patch": "delete"}]}),
        json!({"mergingList": [{"name": 2, "value": 2, "other": "b"}, {"name": 1, "other": "a"}]}),
    );
    case(
        "add and delete an item in a list and preserve order",
        json!({"mergingList": [{"name": 1}, {"name": 3, "value": 3}, {"name": 2, "value": 2}]}),
        json!({"$setElementOrder/mergingList": [{"name": 4}, {"name": 2}, {"name": 1}],
               "mergingList": [{"name": 4, "value": 4}, {"name": 3, "$patch": "delete"}]}),
        json!({"mergingList": [{"name": 4, "value": 4}, {"name": 2, "value": 2}, {"name": 1}]}),
        json!({"mergingList": [{"name": 1, "other": "a"}, {"name": 2, "value": 2, "other": "b"},
                               {"name": 3, "value": 3}]}),
        json!({"$setElementOrder/mergingList": [{"name": 4}, {"name": 2}, {"name": 1}],
               "mergingList": [{"name": 4, "value": 4}, {"name": 3, "$patch": "delete"}]}),
        json!({"mergingList": [{"name": 4, "value": 4}, {"name": 2, "value": 2, "other": "b"},
                               {"name": 1, "other": "a"}]}),
    );
    case(
        "set elements order in a list with server-only items 3",
        json!({"mergingList": [{"name": 1}, {"name": 2, "value": 2}, {"name": 3, "value": 3},
                               {"name": 4, "value": 4}]}),
        json!({"$setElementOrder/mergingList": [{"name": 2}, {"name": 1}, {"name": 4}, {"name": 3}]}),
        json!({"mergingList": [{"name": 2, "value": 2}, {"name": 1}, {"name": 4, "value": 4},
                               {"name": 3, "value": 3}]}),
        json!({"mergingList": [{"name": 1, "other": "a"}, {"name": 2, "value": 2}, {"name": 7},
                               {"name": 9}, {"name": 8}, {"name": 3, "value": 3}, {"name": 4, "value": 4}]}),
        json!({"$setElementOrder/mergingList": [{"name": 2}, {"name": 1}, {"name": 4}, {"name": 3}]}),
        json!({"mergingList": [{"name": 2, "value": 2}, {"name": 1, "other": "a"}, {"name": 7},
                               {"name": 9}, {"name": 8}, {"name": 4, "value": 4}, {"name": 3, "value": 3}]}),
    );
    case(
        "behavior of set element order for a merging list with duplicate",
        json!({"mergingList": [{"name": 1}, {"name": 2, "value": "dup1"}, {"name": 3},
                               {"name": 2, "value": "dup2"}, {"name": 4}]}),
        json!({"$setElementOrder/mergingList": [{"name": 2}, {"name": 1}, {"name": 4}, {"name": 3},
                                                {"name": 2}]}),
        json!({"mergingList": [{"name": 2, "value": "dup1"}, {"name": 2, "value": "dup2"}, {"name": 1},
                               {"name": 4}, {"name": 3}]}),
        json!({"mergingList": [{"name": 1}, {"name": 2, "value": "dup1"}, {"name": 3},
                               {"name": 2, "value": "dup2"}, {"name": 4}]}),
        json!({"$setElementOrder/mergingList": [{"name": 2}, {"name": 1}, {"name": 4}, {"name": 3},
                                                {"name": 2}]}),
        json!({"mergingList": [{"name": 2, "value": "dup1"}, {"name": 2, "value": "dup2"}, {"name": 1},
                               {"name": 4}, {"name": 3}]}),
    );
}

#[test]
fn retain_keys_maps() {
    case(
        "retainKeys map should clear defaulted field with conflict (discriminated union)",
        json!({}),
        json!({"retainKeysMap": {"name": "type2", "other": "bar"}}),
        json!({"retainKeysMap": {"name": "type2", "other": "bar"}}),
        json!({"retainKeysMap": {"name": "type1", "value": "foo"}}),
        json!({"retainKeysMap": {"$retainKeys": ["name", "other"], "name": "type2", "other": "bar"}}),
        json!({"retainKeysMap": {"name": "type2", "other": "bar"}}),
    );
    case(
        "retainKeys map deletes a field and clears a field",
        json!({"retainKeysMap": {"name": "foo", "value": "bar"}}),
        json!({"retainKeysMap": {"$retainKeys": ["name"], "value": null}}),
        json!({"retainKeysMap": {"name": "foo"}}),
        json!({"retainKeysMap": {"name": "foo", "value": "bar", "other": "a"}}),
        json!({"retainKeysMap": {"$retainKeys": ["name"], "value": null}}),
        json!({"retainKeysMap": {"name": "foo"}}),
    );
    case(
        "retainKeys map adds a field in a nested map",
        json!({"retainKeysMap": {"name": "foo", "value": "bar", "simpleMap": {"key1": "a"}}}),
        json!({"retainKeysMap": {"$retainKeys": ["name", "simpleMap", "value"],
                                 "simpleMap": {"key2": "b"}}}),
        json!({"retainKeysMap": {"name": "foo", "value": "bar",
                                 "simpleMap": {"key1": "a", "key2": "b"}}}),
        json!({"retainKeysMap": {"name": "foo", "value": "bar",
                                 "simpleMap": {"key1": "a", "key3": "c"}}}),
        json!({"retainKeysMap": {"$retainKeys": ["name", "simpleMap", "value"],
                                 "simpleMap": {"key2": "b"}}}),
        json!({"retainKeysMap": {"name": "foo", "value": "bar",
                                 "simpleMap": {"key1": "a", "key2": "b", "key3": "c"}}}),
    );
}

#[test]
fn error_cases() {
    let original = json!({"mergingList": [{"name": 1}, {"name": 3}, {"name": 2}]});
    let patch = json!({"$setElementOrder/mergingList": [{"name": 1}, {"name": 2}, {"name": 3}],
        "mergingList": [{"name": 3, "value": 3}, {"name": 1, "value": 1}]});
    let err = apply(&original, &patch).unwrap_err();
    assert!(err.to_string().contains("doesn't match"), "{err}");

    let original = json!({"mergingIntList": [1, 3, 2]});
    let patch = json!({"$setElementOrder/mergingIntList": [1, 2, 3], "mergingIntList": [3, 1]});
    let err = apply(&original, &patch).unwrap_err();
    assert!(err.to_string().contains("doesn't match"), "{err}");

    let original = json!({"mergingList": [{"name": 1, "value": "a"}]});
    let patch = json!({"mergingList": [{"value": "b"}]});
    let err = apply(&original, &patch).unwrap_err();
    assert!(
        err.to_string()
            .contains("does not contain declared merge key"),
        "{err}"
    );
}
