//! `Semantic.DeepEqual` over JSON values typed by their Go structs.

use jiff::Timestamp;
use serde_json::{Map, Value};

use super::shape::{Shape, Zero};
use crate::quantity::Quantity;

/// Whether `a` and `b`, both JSON of the Go type `shape` (such as
/// [`types::POD_TEMPLATE_SPEC`](super::types::POD_TEMPLATE_SPEC)), are equal as
/// `apiequality.Semantic.DeepEqual` finds the decoded Go values.
///
/// Keys the table does not know (fields newer than the table) compare as JSON, absent equal to
/// null, so that no difference is ever hidden.
#[doc(alias = "Semantic.DeepEqual")]
pub fn deep_equal(shape: &Shape, a: &Value, b: &Value) -> bool {
    equal(shape, present(Some(a)), present(Some(b)))
}

/// JSON null decodes to Go's zero value exactly as an absent field does.
fn present(v: Option<&Value>) -> Option<&Value> {
    v.filter(|v| !v.is_null())
}

fn equal(shape: &Shape, a: Option<&Value>, b: Option<&Value>) -> bool {
    match shape {
        Shape::Scalar(zero) => scalar_equal(*zero, a, b),
        Shape::IntOrString => scalar_equal(Zero::Number, a, b),
        Shape::Pointer(inner) => match (a, b) {
            (None, None) => true,
            (Some(_), Some(_)) => equal(inner, a, b),
            _ => false,
        },
        Shape::Slice(inner) => {
            let a = a.and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
            let b = b.and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
            a.len() == b.len()
                && a.iter()
                    .zip(b)
                    .all(|(x, y)| equal(inner, present(Some(x)), present(Some(y))))
        }
        Shape::Map(inner) => {
            let empty = Map::new();
            let a = a.and_then(Value::as_object).unwrap_or(&empty);
            let b = b.and_then(Value::as_object).unwrap_or(&empty);
            a.len() == b.len()
                && a.iter().all(|(k, x)| {
                    b.contains_key(k) && equal(inner, present(Some(x)), present(b.get(k)))
                })
        }
        Shape::Struct(_) => match shape.fields() {
            Some(fields) => {
                let empty = Map::new();
                let a = a.and_then(Value::as_object).unwrap_or(&empty);
                let b = b.and_then(Value::as_object).unwrap_or(&empty);
                let known = |k: &str| fields.iter().any(|f| f.json == k);
                fields
                    .iter()
                    .all(|f| equal(&f.shape, present(a.get(f.json)), present(b.get(f.json))))
                    && a.keys()
                        .chain(b.keys())
                        .filter(|k| !known(k))
                        .all(|k| present(a.get(k)) == present(b.get(k)))
            }
            // A struct missing from the table: nothing can be assumed about its fields.
            None => a == b,
        },
        Shape::Quantity => {
            // An absent Quantity is Go's zero value.
            let read = |v: Option<&Value>| match v {
                None => Some(Quantity::default()),
                Some(v) => Quantity::from_json(v).ok(),
            };
            match (read(a), read(b)) {
                (Some(x), Some(y)) => x == y,
                _ => a == b,
            }
        }
        Shape::Time => {
            let read = |v: Option<&Value>| match v {
                None => Timestamp::from_second(GO_ZERO_TIME_SECONDS).ok(),
                Some(v) => v.as_str().and_then(|s| s.parse::<Timestamp>().ok()),
            };
            match (read(a), read(b)) {
                (Some(x), Some(y)) => x == y,
                _ => a == b,
            }
        }
        Shape::Json => a == b,
    }
}

/// Go's zero `time.Time`, 0001-01-01T00:00:00Z, which `metav1.Time` writes as null.
const GO_ZERO_TIME_SECONDS: i64 = -62_135_596_800;

fn scalar_equal(zero: Zero, a: Option<&Value>, b: Option<&Value>) -> bool {
    let zero_value = match zero {
        Zero::String => Value::String(String::new()),
        Zero::Number => Value::from(0),
        Zero::Bool => Value::Bool(false),
    };
    let a = a.unwrap_or(&zero_value);
    let b = b.unwrap_or(&zero_value);
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x == y,
            _ => x.as_f64() == y.as_f64(),
        },
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::semantic::types;
    use serde_json::json;

    const INTS: Shape = Shape::Slice(&Shape::Scalar(Zero::Number));
    const STRINGS: Shape = Shape::Slice(&Shape::Scalar(Zero::String));
    const INT_MAP: Shape = Shape::Map(&Shape::Scalar(Zero::Number));
    const INT_SLICE_MAP: Shape = Shape::Map(&INTS);

    #[test]
    fn nil_and_empty_slices_and_maps_are_equal_and_filled_ones_are_not() {
        // TestEqualities (deep_equal_test.go), the cases without custom equality functions, as
        // DeepEqual answers them: JSON null and absence stand for Go's nil.
        let cases = [
            (INT_MAP, json!({"foo": 1}), json!({}), false),
            (INT_MAP, json!({"foo": 1}), json!({"foo": 1}), true),
            (INT_MAP, json!({"foo": 1}), json!({"foo": 2}), false),
            (
                INT_MAP,
                json!({"foo": 1}),
                json!({"foo": 1, "bar": 6}),
                false,
            ),
            (
                INT_MAP,
                json!({"foo": 1, "bar": 6}),
                json!({"foo": 1}),
                false,
            ),
            (INT_MAP, json!({}), json!(null), true),
            (STRINGS, json!(null), json!(null), true),
            (STRINGS, json!([]), json!(null), true),
            (STRINGS, json!(null), json!([]), true),
            (INTS, json!([]), json!(null), true),
            (STRINGS, json!(["1"]), json!(null), false),
            (STRINGS, json!([]), json!(["1"]), false),
            (STRINGS, json!([]), json!(["1", "2", "3"]), false),
            (INTS, json!([]), json!([1, 2, 3]), false),
            (INT_MAP, json!({}), json!({"foo": 1}), false),
            (STRINGS, json!(["1"]), json!([]), false),
            (STRINGS, json!(["1"]), json!(["1", "2", "3"]), false),
            (STRINGS, json!(["1", "2", "3"]), json!([]), false),
            (INTS, json!([1, 2, 3]), json!([]), false),
            (INT_SLICE_MAP, json!({}), json!(null), true),
            (
                INT_SLICE_MAP,
                json!({"foo": null}),
                json!({"foo": []}),
                true,
            ),
            (STRINGS, json!(["foo"]), json!(["foo"]), true),
            (STRINGS, json!(["foo"]), json!(["fo"]), false),
        ];
        for (i, (shape, a, b, expected)) in cases.iter().enumerate() {
            assert_eq!(deep_equal(shape, a, b), *expected, "case {i}: {a} vs {b}");
            assert_eq!(deep_equal(shape, b, a), *expected, "case {i} reversed");
        }
    }

    #[test]
    fn absent_scalars_and_value_structs_are_zero_but_nil_pointers_are_not() {
        let pod = |spec: Value| json!({"metadata": {"name": "p"}, "spec": spec});
        let eq = |a: Value, b: Value| deep_equal(&types::POD, &pod(a), &pod(b));
        // Non-pointer scalars: absent is the zero value.
        assert!(eq(json!({"hostNetwork": false}), json!({})));
        assert!(eq(json!({"nodeName": ""}), json!({})));
        assert!(!eq(json!({"nodeName": "n"}), json!({})));
        // Pointers: nil differs from a pointer to the zero value.
        assert!(!eq(json!({"securityContext": {}}), json!({})));
        assert!(eq(json!({"securityContext": null}), json!({})));
        assert!(!eq(json!({"terminationGracePeriodSeconds": 0}), json!({})));
        assert!(eq(
            json!({"terminationGracePeriodSeconds": 30}),
            json!({"terminationGracePeriodSeconds": 30})
        ));
        // A value struct: `{}` is the zero struct.
        assert!(eq(
            json!({"containers": [{"name": "a", "resources": {}}]}),
            json!({"containers": [{"name": "a"}]})
        ));
        assert!(!eq(
            json!({"containers": [{"name": "a", "resources": {"limits": {"cpu": "1"}}}]}),
            json!({"containers": [{"name": "a"}]})
        ));
        // IntOrString: the integer 8080 is not the string "8080".
        let probe = |port: Value| json!({"containers": [{"name": "a", "livenessProbe": {"httpGet": {"port": port}}}]});
        assert!(eq(probe(json!(8080)), probe(json!(8080))));
        assert!(!eq(probe(json!(8080)), probe(json!("8080"))));
    }

    #[test]
    fn quantities_compare_by_value_and_times_by_instant() {
        // semantic.go: Quantity by Cmp, Time by UTC instant.
        let resources = |limits: Value| json!({"spec": {"containers": [{"name": "a", "resources": {"limits": limits}}]}});
        let eq = |a: Value, b: Value| {
            deep_equal(&types::POD_TEMPLATE_SPEC, &resources(a), &resources(b))
        };
        assert!(eq(json!({"cpu": "1"}), json!({"cpu": "1000m"})));
        assert!(eq(
            json!({"memory": "1Gi"}),
            json!({"memory": "1073741824"})
        ));
        assert!(eq(json!({"cpu": "0"}), json!({"cpu": null})));
        assert!(!eq(json!({"cpu": "1"}), json!({"cpu": "2"})));
        assert!(!eq(json!({"cpu": "1"}), json!({"memory": "1"})));

        let meta = |t: Value| json!({"metadata": {"creationTimestamp": t}});
        let eq = |a: Value, b: Value| deep_equal(&types::POD_TEMPLATE_SPEC, &meta(a), &meta(b));
        assert!(eq(
            json!("2024-05-01T12:00:00Z"),
            json!("2024-05-01T14:00:00+02:00")
        ));
        assert!(!eq(
            json!("2024-05-01T12:00:00Z"),
            json!("2024-05-01T12:00:01Z")
        ));
        assert!(eq(json!(null), json!("0001-01-01T00:00:00Z")));
        assert!(!eq(json!(null), json!("2024-05-01T12:00:00Z")));
    }

    #[test]
    fn a_template_sent_back_by_rollout_undo_equals_the_stored_one() {
        // What the ReplicaSet holds, and what `kubectl rollout undo` writes into the Deployment.
        let stored = json!({
            "metadata": {"labels": {"app": "web"}},
            "spec": {
                "containers": [{"name": "web", "image": "nginx:1.27",
                    "terminationMessagePath": "/dev/termination-log", "imagePullPolicy": "IfNotPresent"}],
                "restartPolicy": "Always",
                "securityContext": {},
            },
        });
        let undone = json!({
            "metadata": {"creationTimestamp": null, "labels": {"app": "web"}},
            "spec": {
                "containers": [{"name": "web", "image": "nginx:1.27", "resources": {},
                    "terminationMessagePath": "/dev/termination-log", "imagePullPolicy": "IfNotPresent"}],
                "restartPolicy": "Always",
                "securityContext": {},
            },
        });
        assert!(deep_equal(&types::POD_TEMPLATE_SPEC, &stored, &undone));
        let mut other_image = undone.clone();
        other_image["spec"]["containers"][0]["image"] = json!("nginx:1.28");
        assert!(!deep_equal(
            &types::POD_TEMPLATE_SPEC,
            &stored,
            &other_image
        ));
    }

    #[test]
    fn fields_unknown_to_the_table_compare_as_json() {
        let a = json!({"spec": {"containers": [{"name": "a", "futureField": {"x": 1}}]}});
        let b = json!({"spec": {"containers": [{"name": "a"}]}});
        assert!(!deep_equal(&types::POD_TEMPLATE_SPEC, &a, &b));
        assert!(deep_equal(&types::POD_TEMPLATE_SPEC, &a, &a.clone()));
        let c = json!({"spec": {"containers": [{"name": "a", "futureField": null}]}});
        assert!(deep_equal(&types::POD_TEMPLATE_SPEC, &b, &c));
    }
}
