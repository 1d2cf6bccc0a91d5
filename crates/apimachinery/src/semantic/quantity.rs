//! A private reading of `resource.Quantity` for comparison: the value in nano-units.
//!
//! TODO: switch to the crate's Quantity type (`crate::quantity`) once it exists; this covers the
//! decimal, binary-suffix and exponent forms but not values beyond ±1.7e29 (compared as text).

use serde_json::Value;

/// The quantity's value in nano-units (10^-9), rounded up below that as kube rounds; `None` if it
/// does not parse or does not fit.
pub(super) fn nanos(v: &Value) -> Option<i128> {
    match v {
        Value::Number(n) => parse(&n.to_string()),
        Value::String(s) => parse(s.trim()),
        _ => None,
    }
}

fn parse(s: &str) -> Option<i128> {
    let (negative, rest) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    let (number, suffix) = rest.split_at(end);
    let (int_part, frac_part) = number.split_once('.').unwrap_or((number, ""));
    if (int_part.is_empty() && frac_part.is_empty()) || frac_part.contains('.') {
        return None;
    }
    // value = digits × 10^exp10 × 2^exp2
    let mut exp10 = -i32::try_from(frac_part.len()).ok()?;
    let exp2: u32 = match suffix {
        "Ki" => 10,
        "Mi" => 20,
        "Gi" => 30,
        "Ti" => 40,
        "Pi" => 50,
        "Ei" => 60,
        _ => {
            exp10 += match suffix {
                "" => 0,
                "n" => -9,
                "u" => -6,
                "m" => -3,
                "k" => 3,
                "M" => 6,
                "G" => 9,
                "T" => 12,
                "P" => 15,
                "E" => 18,
                other => other.strip_prefix(['e', 'E'])?.parse::<i32>().ok()?,
            };
            0
        }
    };
    let mut mantissa: i128 = 0;
    for c in int_part.bytes().chain(frac_part.bytes()) {
        mantissa = mantissa
            .checked_mul(10)?
            .checked_add(i128::from(c - b'0'))?;
    }
    mantissa = mantissa.checked_mul(1i128.checked_shl(exp2)?)?;
    let scale = exp10.checked_add(9)?;
    let value = if scale >= 0 {
        mantissa.checked_mul(10i128.checked_pow(u32::try_from(scale).ok()?)?)?
    } else {
        let div = 10i128.checked_pow(u32::try_from(-scale).ok()?)?;
        (mantissa + div - 1) / div
    };
    Some(if negative { -value } else { value })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn forms_of_the_same_value_read_alike() {
        let n = |v: Value| nanos(&v);
        assert_eq!(n(json!("1")), n(json!("1000m")));
        assert_eq!(n(json!("1")), n(json!(1)));
        assert_eq!(n(json!("0.5")), n(json!("500m")));
        assert_eq!(n(json!("1Ki")), n(json!("1024")));
        assert_eq!(n(json!("1k")), n(json!("1e3")));
        assert_eq!(n(json!("0")), Some(0));
        assert_eq!(n(json!("-1m")), Some(-1_000_000));
        assert_ne!(n(json!("1Mi")), n(json!("1M")));
        assert_eq!(n(json!("1Q")), None);
        assert_eq!(n(json!("")), None);
    }
}
