//! Parsing of Kubernetes resource quantities ("100m", "1.5", "128Mi", "1e3") into milli-units.

/// Parses a Kubernetes quantity into thousandths of its base unit, rounding up as
/// `resource.Quantity.MilliValue()` does. Returns `None` for malformed or out-of-range input.
///
/// `"100m"` → 100, `"2"` → 2000, `"1Ki"` → 1_024_000, `"1.5"` → 1500.
pub fn parse_milli(s: &str) -> Option<i128> {
    let s = s.trim();
    let (negative, rest) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let number_end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    let (number, suffix) = rest.split_at(number_end);
    if number.is_empty() || number == "." || number.matches('.').count() > 1 {
        return None;
    }
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    let mut mantissa: i128 = 0;
    for digit in whole.bytes().chain(fraction.bytes()) {
        mantissa = mantissa
            .checked_mul(10)?
            .checked_add(i128::from(digit - b'0'))?;
    }
    let fraction_digits = i32::try_from(fraction.len()).ok()?;
    let (binary_multiplier, decimal_exponent) = suffix_scale(suffix)?;
    let value = mantissa.checked_mul(binary_multiplier)?;
    // value × 10^(decimal_exponent + 3 − fraction_digits) milli-units.
    let exponent = decimal_exponent
        .checked_add(3)?
        .checked_sub(fraction_digits)?;
    let milli = if exponent >= 0 {
        value.checked_mul(10i128.checked_pow(u32::try_from(exponent).ok()?)?)?
    } else {
        let divisor = 10i128.checked_pow(u32::try_from(-exponent).ok()?)?;
        // Round up, like MilliValue(): a request of "0.0001" still asks for 1m.
        (value + divisor - 1) / divisor
    };
    Some(if negative { -milli } else { milli })
}

/// The binary multiplier and the decimal exponent a suffix stands for.
fn suffix_scale(suffix: &str) -> Option<(i128, i32)> {
    const KI: i128 = 1024;
    Some(match suffix {
        "" => (1, 0),
        "n" => (1, -9),
        "u" => (1, -6),
        "m" => (1, -3),
        "k" => (1, 3),
        "M" => (1, 6),
        "G" => (1, 9),
        "T" => (1, 12),
        "P" => (1, 15),
        "E" => (1, 18),
        "Ki" => (KI, 0),
        "Mi" => (KI.pow(2), 0),
        "Gi" => (KI.pow(3), 0),
        "Ti" => (KI.pow(4), 0),
        "Pi" => (KI.pow(5), 0),
        "Ei" => (KI.pow(6), 0),
        _ => {
            let exponent = suffix.strip_prefix(['e', 'E'])?;
            if exponent.is_empty() {
                return None;
            }
            (1, exponent.parse::<i32>().ok()?)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_decimal_binary_and_exponent_forms_into_milli_units() {
        let cases = [
            ("100m", Some(100)),
            ("2", Some(2000)),
            ("1.5", Some(1500)),
            ("0.1", Some(100)),
            ("1Ki", Some(1_024_000)),
            ("128Mi", Some(128 * 1024 * 1024 * 1000)),
            ("32Gi", Some(32 * 1024_i128.pow(3) * 1000)),
            ("1k", Some(1_000_000)),
            ("1G", Some(1_000_000_000_000)),
            ("1e3", Some(1_000_000)),
            ("1E-3", Some(1)),
            ("110", Some(110_000)),
            ("-1", Some(-1000)),
            ("500u", Some(1)),
            ("0", Some(0)),
            ("", None),
            ("abc", None),
            ("1.2.3", None),
            ("1Qi", None),
            ("1e", None),
        ];
        for (input, want) in cases {
            assert_eq!(parse_milli(input), want, "{input}");
        }
    }
}
