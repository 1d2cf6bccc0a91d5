//! Equality and total order of JSON values, as structured-merge-diff's `value.Equals` and
//! `value.Compare`.
//!
//! Numbers are compared by value, not by how they are written: `10`, `10.0` and `1e1` are the
//! same number. kube decodes JSON into Go's `int64` or `float64` and its comparisons turn an
//! int into a float when the other side is a float (`value/value.go`), so an object that
//! round-trips through a float field (`10` read back as `10.0`) is unchanged.

use std::cmp::Ordering;

use serde_json::{Number, Value};

/// Whether `a` and `b` are the same value (`value.Equals`): numbers by numeric value, maps
/// whatever their key order, lists item by item.
pub fn equals(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => numbers_equal(x, y),
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Null, Value::Null) => true,
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| equals(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, xv)| y.get(k).is_some_and(|yv| equals(xv, yv)))
        }
        _ => false,
    }
}

/// Ints compare as ints; as soon as one side is a float both are compared as floats.
fn numbers_equal(x: &Number, y: &Number) -> bool {
    if x.is_f64() || y.is_f64() {
        return x.as_f64() == y.as_f64();
    }
    match (x.as_i64(), y.as_i64()) {
        (Some(x), Some(y)) => x == y,
        // Beyond i64 (Go would not have decoded these as int64 either).
        _ => x.as_u64() == y.as_u64(),
    }
}

/// The total order of values (`value.Compare`): numbers (ints and floats numerically), then
/// strings, booleans, lists, maps and null. Two values compare `Equal` exactly when
/// [`equals`] holds.
pub fn compare(a: &Value, b: &Value) -> Ordering {
    fn rank(v: &Value) -> u8 {
        match v {
            Value::Number(_) => 0,
            Value::String(_) => 1,
            Value::Bool(_) => 2,
            Value::Array(_) => 3,
            Value::Object(_) => 4,
            Value::Null => 5,
        }
    }
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => compare_numbers(x, y),
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Array(x), Value::Array(y)) => {
            for (x, y) in x.iter().zip(y) {
                let c = compare(x, y);
                if c != Ordering::Equal {
                    return c;
                }
            }
            x.len().cmp(&y.len())
        }
        (Value::Object(x), Value::Object(y)) => {
            let mut xs: Vec<_> = x.iter().collect();
            let mut ys: Vec<_> = y.iter().collect();
            xs.sort_by(|a, b| a.0.cmp(b.0));
            ys.sort_by(|a, b| a.0.cmp(b.0));
            for ((xk, xv), (yk, yv)) in xs.iter().zip(&ys) {
                let c = xk.cmp(yk).then_with(|| compare(xv, yv));
                if c != Ordering::Equal {
                    return c;
                }
            }
            xs.len().cmp(&ys.len())
        }
        _ => rank(a).cmp(&rank(b)),
    }
}

fn compare_numbers(x: &Number, y: &Number) -> Ordering {
    if !x.is_f64() && !y.is_f64() {
        match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => return x.cmp(&y),
            (None, None) => return x.as_u64().cmp(&y.as_u64()),
            // Only an integer beyond i64 has no i64: it is the larger one.
            (Some(_), None) => return Ordering::Less,
            (None, Some(_)) => return Ordering::Greater,
        }
    }
    // JSON has no NaN, so every pair of floats is ordered.
    let (x, y) = (x.as_f64().unwrap_or(0.0), y.as_f64().unwrap_or(0.0));
    x.partial_cmp(&y).unwrap_or(Ordering::Equal)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The cases of structured-merge-diff's `value/less_test.go` that valid JSON can express:
    /// `a` < `b`, or `a` equal to `b` where `eq`.
    #[test]
    fn values_compare_and_equal_as_structured_merge_diff_values_do() {
        let table: &[(&str, Value, Value, bool)] = &[
            // (less_test.go compares 1.14 with 3.14, which clippy takes for a poor PI.)
            ("Float-1", json!(1.14), json!(3.25), false),
            ("Float-2", json!(1.0), json!(1.0), true),
            ("Float-3", json!(1.0), json!(1), true),
            ("Float-4", json!(1.0), json!(2), false),
            ("Float-5", json!(1.0), json!("aoeu"), false),
            ("Float-6", json!(1.0), json!(true), false),
            ("Float-7", json!(1.0), json!([]), false),
            ("Float-8", json!(1.0), json!({}), false),
            ("Float-9", json!(1.0), Value::Null, false),
            ("Int-1", json!(1), json!(2), false),
            ("Int-2", json!(1), json!(1), true),
            ("Int-3", json!(1), json!(1.0), true),
            ("Int-4", json!(1), json!(2.0), false),
            ("Int-5", json!(1), json!("aoeu"), false),
            ("Int-6", json!(1), json!(true), false),
            ("Int-7", json!(1), json!([]), false),
            ("Int-8", json!(1), json!({}), false),
            ("Int-9", json!(1), Value::Null, false),
            ("String-1", json!("b-12"), json!("b-9"), false),
            ("String-2", json!("folate"), json!("folate"), true),
            ("String-3", json!("folate"), json!(true), false),
            ("String-4", json!("folate"), json!([]), false),
            ("String-5", json!("folate"), json!({}), false),
            ("String-6", json!("folate"), Value::Null, false),
            ("Bool-1", json!(false), json!(true), false),
            ("Bool-2", json!(false), json!(false), true),
            ("Bool-3", json!(true), json!(true), true),
            ("Bool-4", json!(false), json!([]), false),
            ("Bool-5", json!(false), json!({}), false),
            ("Bool-6", json!(false), Value::Null, false),
            ("List-1", json!([]), json!([]), true),
            ("List-2", json!([1]), json!([1]), true),
            ("List-3", json!([1]), json!([2]), false),
            ("List-4", json!([1]), json!([1, 1]), false),
            ("List-5", json!([1, 1]), json!([2]), false),
            ("List-6", json!([]), json!({}), false),
            ("List-7", json!([]), Value::Null, false),
            ("Map-1", json!({}), json!({}), true),
            (
                "Map-2",
                json!({"carotine": 1}),
                json!({"carotine": 1}),
                true,
            ),
            (
                "Map-3",
                json!({"carotine": 1}),
                json!({"carotine": 2}),
                false,
            ),
            (
                "Map-4",
                json!({"carotine": 1}),
                json!({"ethanol": 1}),
                false,
            ),
            (
                "Map-5",
                json!({"carotine": 1, "ethanol": 1}),
                json!({"ethanol": 1, "carotine": 1}),
                true,
            ),
            (
                "Map-6",
                json!({"carotine": 1, "ethanol": 1}),
                json!({"ethanol": 1, "carotine": 2}),
                false,
            ),
            (
                "Map-7",
                json!({"carotine": 1}),
                json!({"ethanol": 1, "carotine": 2}),
                false,
            ),
            (
                "Map-8",
                json!({"carotine": 1}),
                json!({"ethanol": 1, "carotine": 1}),
                false,
            ),
            (
                "Map-9",
                json!({"carotine": 1, "ethanol": 1}),
                json!({"carotine": 2}),
                false,
            ),
            ("Map-10", json!({}), Value::Null, false),
        ];
        for (name, a, b, eq) in table {
            assert_eq!(equals(a, b), *eq, "{name}: equals({a}, {b})");
            assert_eq!(equals(b, a), *eq, "{name}: equals({b}, {a})");
            assert!(equals(b, b), "{name}: equals({b}, {b})");
            let (ab, ba) = if *eq {
                (Ordering::Equal, Ordering::Equal)
            } else {
                (Ordering::Less, Ordering::Greater)
            };
            assert_eq!(compare(a, b), ab, "{name}: compare({a}, {b})");
            assert_eq!(compare(b, a), ba, "{name}: compare({b}, {a})");
        }
    }

    #[test]
    fn whole_floats_equal_ints_inside_lists_and_maps() {
        let ints = json!({"maximum": 10, "minimum": 0, "enum": [1, 2]});
        let floats: Value =
            serde_json::from_str(r#"{"minimum": 0.0, "enum": [1.0, 2e0], "maximum": 10.0}"#)
                .expect("valid JSON");
        assert!(equals(&ints, &floats));
        assert_eq!(compare(&ints, &floats), Ordering::Equal);
        assert!(!equals(&json!({"maximum": 10}), &json!({"maximum": 10.5})));
    }

    #[test]
    fn integers_beyond_i64_stay_exact() {
        assert!(equals(&json!(u64::MAX), &json!(u64::MAX)));
        assert!(!equals(&json!(u64::MAX), &json!(u64::MAX - 1)));
        assert_eq!(compare(&json!(-1), &json!(u64::MAX)), Ordering::Less);
        assert_eq!(
            compare(&json!(u64::MAX), &json!(i64::MAX)),
            Ordering::Greater
        );
    }
}
