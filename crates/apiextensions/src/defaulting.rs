//! Defaulting of custom resources from a structural schema's `default`s; kube's `schema/defaulting`
//! (algorithm.go, prunenulls.go).
//!
//! kube first drops `null`s that are neither nullable nor defaultable ([`prune_non_nullable_nulls_without_defaults`])
//! and then applies defaults ([`default`]): a missing field, or a `null` in a non-nullable field, gets its default.

use serde_json::Value;

use crate::structural::Structural;

fn is_non_nullable_null(x: &Value, s: Option<&Structural>) -> bool {
    x.is_null() && s.is_some_and(|s| !s.generic.nullable)
}

/// Applies the defaults of `s` to `x`, in objects (known fields and `additionalProperties`) and array items at any
/// depth. Fields that are present keep their value, except a `null` where the schema is not nullable.
pub fn default(x: &mut Value, s: Option<&Structural>) {
    let Some(s) = s else { return };
    match x {
        Value::Object(map) => {
            for (k, prop) in &s.properties {
                let Some(d) = &prop.generic.default else {
                    continue;
                };
                let missing = map
                    .get(k)
                    .is_none_or(|v| is_non_nullable_null(v, Some(prop)));
                if missing {
                    map.insert(k.clone(), d.clone());
                }
            }
            let additional = s.additional_properties_schema();
            let has_additional = s.generic.additional_properties.is_some();
            for (k, v) in map.iter_mut() {
                if let Some(prop) = s.properties.get(k) {
                    default(v, Some(prop));
                } else if has_additional {
                    if is_non_nullable_null(v, additional) {
                        *v = additional
                            .and_then(|a| a.generic.default.clone())
                            .unwrap_or(Value::Null);
                    }
                    default(v, additional);
                }
            }
        }
        Value::Array(items) => {
            let item_schema = s.items.as_deref();
            for v in items.iter_mut() {
                if is_non_nullable_null(v, item_schema) {
                    *v = item_schema
                        .and_then(|i| i.generic.default.clone())
                        .unwrap_or(Value::Null);
                }
                default(v, item_schema);
            }
        }
        _ => {}
    }
}

/// Removes `null`s from objects where the field's schema is neither nullable nor has a default. Nulls that have a
/// default are left for [`default`].
pub fn prune_non_nullable_nulls_without_defaults(x: &mut Value, s: Option<&Structural>) {
    match x {
        Value::Object(map) => {
            map.retain(|k, v| {
                let schema = schema_for_field(k, s);
                let drop = v.is_null()
                    && schema
                        .is_some_and(|sc| !sc.generic.nullable && sc.generic.default.is_none());
                if !drop {
                    prune_non_nullable_nulls_without_defaults(v, schema);
                }
                !drop
            });
        }
        Value::Array(items) => {
            let schema = s.and_then(|s| s.items.as_deref());
            for v in items.iter_mut() {
                prune_non_nullable_nulls_without_defaults(v, schema);
            }
        }
        _ => {}
    }
}

fn schema_for_field<'a>(field: &str, s: Option<&'a Structural>) -> Option<&'a Structural> {
    let s = s?;
    match s.properties.get(field) {
        Some(p) => Some(p),
        None => s.additional_properties_schema(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps;
    use serde_json::json;

    fn schema(v: Value) -> Structural {
        let props: JSONSchemaProps = serde_json::from_value(v).expect("test schema parses");
        Structural::from_props(&props).expect("converts")
    }

    fn defaulted(input: Value, s: Option<&Structural>) -> Value {
        let mut x = input;
        default(&mut x, s);
        x
    }

    // Cases of TestDefault (algorithm_test.go).
    #[test]
    fn empty_and_scalars_are_left_alone() {
        assert_eq!(defaulted(Value::Null, None), Value::Null);
        assert_eq!(
            defaulted(json!(4), Some(&schema(json!({"default": "foo"})))),
            json!(4)
        );
        assert_eq!(
            defaulted(
                json!([1, 2]),
                Some(&schema(json!({"items": {"default": "foo"}})))
            ),
            json!([1, 2])
        );
    }

    #[test]
    fn object_array() {
        let s = schema(
            json!({"items": {"properties": {"a": {"default": "A"}, "b": {"default": "B"}, "c": {"default": "C"}}}}),
        );
        assert_eq!(
            defaulted(json!([{"a": 1}, {"b": 1}, {"c": 1}]), Some(&s)),
            json!([{"a": 1, "b": "B", "c": "C"}, {"a": "A", "b": 1, "c": "C"}, {"a": "A", "b": "B", "c": 1}])
        );
    }

    #[test]
    fn object_array_object() {
        let s = schema(json!({"properties": {
            "array": {"items": {"properties": {"a": {"default": "A"}, "b": {"default": "B"}}}},
            "object": {"properties": {"a": {"default": "N"}, "b": {"default": "O"}}},
            "additionalProperties": {"additionalProperties": {"properties": {"a": {"default": "alpha"}, "b": {"default": "beta"}}}},
            "foo": {"default": "bar"},
        }}));
        assert_eq!(
            defaulted(
                json!({"array": [{"a": 1}, {"b": 2}], "object": {"a": 1}, "additionalProperties": {"x": {"a": 1}, "y": {"b": 2}}}),
                Some(&s)
            ),
            json!({
                "array": [{"a": 1, "b": "B"}, {"a": "A", "b": 2}],
                "object": {"a": 1, "b": "O"},
                "additionalProperties": {"x": {"a": 1, "b": "beta"}, "y": {"a": "alpha", "b": 2}},
                "foo": "bar",
            })
        );
    }

    #[test]
    fn empty_and_null() {
        let s = schema(json!({"items": {"properties": {"a": {"default": "A"}}}}));
        assert_eq!(
            defaulted(
                json!([{}, {"a": 1}, {"a": 0}, {"a": 0.0}, {"a": ""}, {"a": null}, {"a": []}, {"a": {}}]),
                Some(&s)
            ),
            json!([{"a": "A"}, {"a": 1}, {"a": 0}, {"a": 0.0}, {"a": ""}, {"a": "A"}, {"a": []}, {"a": {}}])
        );
    }

    #[test]
    fn nulls_are_defaulted_only_where_not_nullable() {
        let nullable_list =
            schema(json!({"nullable": true, "items": {"properties": {"a": {"default": "A"}}}}));
        assert_eq!(
            defaulted(json!([null]), Some(&nullable_list)),
            json!([null])
        );
        let non_nullable_list = schema(json!({"items": {"default": "A"}}));
        assert_eq!(
            defaulted(json!([null]), Some(&non_nullable_list)),
            json!(["A"])
        );
        let nullable_object =
            schema(json!({"properties": {"a": {"nullable": true, "default": "A"}}}));
        assert_eq!(
            defaulted(json!({"a": null}), Some(&nullable_object)),
            json!({"a": null})
        );
        let non_nullable_object = schema(json!({"properties": {"a": {"default": "A"}}}));
        assert_eq!(
            defaulted(json!({"a": null}), Some(&non_nullable_object)),
            json!({"a": "A"})
        );
        let nullable_additional =
            schema(json!({"additionalProperties": {"nullable": true, "default": "A"}}));
        assert_eq!(
            defaulted(json!({"a": null}), Some(&nullable_additional)),
            json!({"a": null})
        );
        let non_nullable_additional = schema(json!({"additionalProperties": {"default": "A"}}));
        assert_eq!(
            defaulted(json!({"a": null}), Some(&non_nullable_additional)),
            json!({"a": "A"})
        );
        let unknown = schema(json!({"additionalProperties": true}));
        assert_eq!(
            defaulted(json!({"a": null}), Some(&unknown)),
            json!({"a": null})
        );
    }

    // TestPruneNonNullableNullsWithoutDefaults (prunenulls_test.go).
    #[test]
    fn non_nullable_nulls_without_defaults_are_dropped() {
        let mut x = json!([1, null]);
        prune_non_nullable_nulls_without_defaults(&mut x, None);
        assert_eq!(x, json!([1, null]));

        let s = schema(json!({"items": {"properties": {
            "a": {"default": "A"},
            "b": {"nullable": true},
            "c": {"default": "C", "nullable": true},
            "d": {},
        }}}));
        let mut x = json!([{"a": null}, {"b": null}, {"c": null}, {"d": null}, {"e": null}]);
        prune_non_nullable_nulls_without_defaults(&mut x, Some(&s));
        assert_eq!(
            x,
            json!([{"a": null}, {"b": null}, {"c": null}, {}, {"e": null}])
        );
    }
}
