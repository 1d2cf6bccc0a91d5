//! JSON numbers as Go's `encoding/json` writes them, for values encoded from typed structs.
//!
//! Go writes a `float64` that holds a whole number below 1e21 without a fraction or exponent
//! (`floatEncoder` formats with `'f'` between 1e-6 and 1e21), so a CRD schema's
//! `maximum: 10`, decoded into `JSONSchemaProps.Maximum *float64` and stored again, stays `10`.
//! serde_json writes an `f64` of 10 as `10.0`, which kubectl shows back to the user and which
//! clients that compare text (or decode `10.0` as a float where they expect an integer) see
//! as a change. [`to_value`] gives such floats back as integers.
//!
//! Whole floats outside the range of `i64` and `u64` stay floats (serde_json has no bigger
//! integer); they are equal by value to what Go writes, only spelt with an exponent.

use serde::Serialize;
use serde_json::{Number, Value};

/// `value` encoded as JSON with whole floats written as integers, as Go's `json.Marshal` would.
pub fn to_value<T: Serialize>(value: &T) -> serde_json::Result<Value> {
    let mut v = serde_json::to_value(value)?;
    whole_floats_as_integers(&mut v);
    Ok(v)
}

/// Rewrites every float in `v` that holds a whole number in `i64` or `u64` range as that
/// integer (`10.0` → `10`, `-0.0` → `0`); other numbers are left alone.
pub fn whole_floats_as_integers(v: &mut Value) {
    match v {
        Value::Number(n) => {
            if let Some(i) = n.as_f64().and_then(whole).filter(|_| n.is_f64()) {
                *n = i;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(whole_floats_as_integers),
        Value::Object(m) => m.values_mut().for_each(whole_floats_as_integers),
        Value::Null | Value::Bool(_) | Value::String(_) => {}
    }
}

/// The integer `f` holds, if it is whole and fits `i64` or `u64` exactly.
fn whole(f: f64) -> Option<Number> {
    if !f.is_finite() || f.fract() != 0.0 {
        return None;
    }
    // 2^63 and 2^64 are exact in f64; the bounds are exclusive above because `as` saturates.
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    const TWO_64: f64 = 18_446_744_073_709_551_616.0;
    if (-TWO_63..TWO_63).contains(&f) {
        Some(Number::from(f as i64))
    } else if (0.0..TWO_64).contains(&f) {
        Some(Number::from(f as u64))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Serialize)]
    struct Props {
        maximum: Option<f64>,
        minimum: Option<f64>,
        #[serde(rename = "multipleOf")]
        multiple_of: Option<f64>,
        items: Vec<f64>,
    }

    #[test]
    fn whole_floats_of_a_typed_struct_are_written_as_go_writes_them() {
        let props = Props {
            maximum: Some(10.0),
            minimum: Some(-0.0),
            multiple_of: Some(0.5),
            items: vec![1e15, 1e21, 1e-7, -3.0],
        };
        let v = to_value(&props).expect("encodes");
        assert_eq!(
            serde_json::to_string(&v).expect("encodes"),
            r#"{"maximum":10,"minimum":0,"multipleOf":0.5,"items":[1000000000000000,1e+21,1e-7,-3]}"#
        );
        // serde_json alone writes the float.
        assert_eq!(
            serde_json::to_string(&serde_json::to_value(10.0).expect("encodes")).expect("encodes"),
            "10.0"
        );
    }

    #[test]
    fn integers_and_fractions_are_left_alone() {
        let mut v = json!({"a": [1, -2, u64::MAX, 1.25], "b": {"c": 2.5e-3}, "d": "10.0"});
        let before = v.clone();
        whole_floats_as_integers(&mut v);
        assert_eq!(v.to_string(), before.to_string());
    }

    #[test]
    fn whole_floats_at_the_integer_limits_keep_their_value() {
        // 2^63, 2^64 and -2^63 as floats.
        let mut v = json!([2f64.powi(63), 2f64.powi(64), -(2f64.powi(63))]);
        whole_floats_as_integers(&mut v);
        assert_eq!(v[0], json!(9_223_372_036_854_775_808u64));
        // 2^64 does not fit u64: it stays a float.
        assert!(v[1].is_f64());
        assert_eq!(v[2], json!(i64::MIN));
    }
}
