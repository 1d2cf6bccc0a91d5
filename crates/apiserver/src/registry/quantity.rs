//! Resource quantities (`resource.Quantity`: `500m`, `1Gi`, `1e3`) parsed for comparison.

use serde_json::Value;

/// A parsed quantity in nano-units (10^-9), rounded up as kube rounds sub-nano precision.
pub(crate) fn parse_nanos(v: &Value) -> Option<i128> {
    match v {
        Value::Number(n) => parse_str(&n.to_string()),
        Value::String(s) => parse_str(s.trim()),
        _ => None,
    }
}

fn parse_str(s: &str) -> Option<i128> {
    let (negative, rest) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let num_end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    let (number, suffix) = rest.split_at(num_end);
    let (int_part, frac_part) = number.split_once('.').unwrap_or((number, ""));
    if int_part.is_empty() && frac_part.is_empty() {
        return None;
    }
    if frac_part.contains('.') {
        return None;
    }
    // value = digits * 10^(exp10) * 2^(exp2)
    let digits: String = format!("{int_part}{frac_part}");
    let mut exp10: i32 = -(frac_part.len() as i32);
    let mut exp2: u32 = 0;
    match suffix {
        "" => {}
        "n" => exp10 -= 9,
        "u" => exp10 -= 6,
        "m" => exp10 -= 3,
        "k" => exp10 += 3,
        "M" => exp10 += 6,
        "G" => exp10 += 9,
        "T" => exp10 += 12,
        "P" => exp10 += 15,
        "E" => exp10 += 18,
        "Ki" => exp2 = 10,
        "Mi" => exp2 = 20,
        "Gi" => exp2 = 30,
        "Ti" => exp2 = 40,
        "Pi" => exp2 = 50,
        "Ei" => exp2 = 60,
        other => {
            let exp = other.strip_prefix(['e', 'E'])?;
            exp10 += exp.parse::<i32>().ok()?;
        }
    }
    let mut mantissa: i128 = 0;
    for c in digits.bytes() {
        mantissa = mantissa
            .checked_mul(10)?
            .checked_add(i128::from(c - b'0'))?;
    }
    mantissa = mantissa.checked_mul(1i128.checked_shl(exp2)?)?;
    // Scale to nano-units.
    let scale = exp10 + 9;
    let value = if scale >= 0 {
        mantissa.checked_mul(10i128.checked_pow(scale as u32)?)?
    } else {
        let div = 10i128.checked_pow((-scale) as u32)?;
        (mantissa + div - 1) / div
    };
    Some(if negative { -value } else { value })
}

/// Rewrites quantities given as JSON numbers (`cpu: 1`, `cpu: 0.5`) as quantity strings
/// (`"1"`, `"500m"`), as kube-apiserver serializes every quantity as a string; fractions
/// round up to milli-units (`SetDefaults_ResourceList`).
pub(crate) fn canonicalize_numbers(list: &mut serde_json::Map<String, Value>) {
    for v in list.values_mut() {
        let Value::Number(n) = v else { continue };
        let s = match n.as_i64() {
            Some(i) => i.to_string(),
            None => {
                let milli = (n.as_f64().unwrap_or(0.0) * 1000.0).ceil() as i64;
                if milli % 1000 == 0 {
                    (milli / 1000).to_string()
                } else {
                    format!("{milli}m")
                }
            }
        };
        *v = Value::String(s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn equal_quantities_compare_equal_across_notations() {
        assert_eq!(parse_nanos(&json!("100m")), parse_nanos(&json!("0.1")));
        assert_eq!(
            parse_nanos(&json!("1Gi")),
            parse_nanos(&json!("1073741824"))
        );
        assert_eq!(parse_nanos(&json!("1k")), parse_nanos(&json!("1e3")));
        assert_eq!(parse_nanos(&json!(2)), parse_nanos(&json!("2000m")));
        assert_eq!(parse_nanos(&json!("-1")), Some(-1_000_000_000));
        assert_eq!(parse_nanos(&json!("abc")), None);
        assert_eq!(parse_nanos(&json!("1Zi")), None);
    }

    #[test]
    fn numeric_quantities_become_strings() {
        let mut m = json!({"cpu": 1, "memory": "1Gi", "x": 0.5, "y": 2.0})
            .as_object()
            .cloned()
            .expect("object");
        canonicalize_numbers(&mut m);
        assert_eq!(
            Value::Object(m),
            json!({"cpu": "1", "memory": "1Gi", "x": "500m", "y": "2"})
        );
    }
}
