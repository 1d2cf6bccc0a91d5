//! Resource quantities (`500m`, `1.5Gi`, `1e3`): apimachinery's `resource.Quantity`, parsed,
//! compared, added and written back exactly as kube writes them.
//!
//! Mirrors `staging/src/k8s.io/apimachinery/pkg/api/resource/` (`quantity.go`, `amount.go`,
//! `suffix.go`, `math.go`); the table tests of `quantity_test.go` are ported below.
//!
//! A quantity is held as an exact decimal, `unscaled × 10^scale`, with a 128-bit unscaled part.
//! kube's arbitrary-precision fallback (`inf.Dec`) is not reproduced: a number with more than 38
//! significant digits is refused as not numeric, and arithmetic that would not fit returns `None`.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

/// How a quantity is written back (`Format`): the suffix family the parsed string used.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Format {
    /// `12e6`: a power of ten written as an exponent.
    DecimalExponent,
    /// `12Mi`: powers of two (`Ki` … `Ei`).
    BinarySI,
    /// `12M`: SI decimal suffixes (`n`, `u`, `m`, `k`, `M`, `G`, `T`, `P`, `E`).
    #[default]
    DecimalSI,
}

/// Why a string is not a quantity; the messages are kube's (`ErrFormatWrong`, `ErrNumeric`,
/// `ErrSuffix`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    /// The string is not a number followed by a suffix.
    #[error("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")]
    FormatWrong,
    /// The number does not parse (or has more digits than a quantity holds here).
    #[error("unable to parse numeric part of quantity")]
    Numeric,
    /// The suffix is not one of kube's, or its exponent is out of range.
    #[error("unable to parse quantity's suffix")]
    Suffix,
}

/// The exponent of the smallest unit a parsed quantity keeps: nano (`Nano` scale).
const NANO: i32 = -9;
/// The largest BinarySI magnitude a parse keeps (`maxAllowed`, 2^63 - 1).
const MAX_ALLOWED: i128 = i64::MAX as i128;
/// Most decimal digits an `i128` holds whatever they are.
const MAX_DIGITS: usize = 38;

/// A fixed-point number with a suffix format: kube's `resource.Quantity`.
///
/// Equality and ordering are numeric (`Cmp`): `1Gi == 1024Mi`, whatever the formats.
#[derive(Clone, Debug, Default)]
pub struct Quantity {
    /// The value is `unscaled × 10^scale`.
    unscaled: i128,
    scale: i32,
    format: Format,
    /// The parsed string when kube keeps it as the canonical form (`q.s`); cleared by arithmetic.
    cached: Option<Box<str>>,
}

impl Quantity {
    /// `NewQuantity`: `value` units in `format`.
    pub fn new(value: i64, format: Format) -> Self {
        Self::from_parts(i128::from(value), 0, format)
    }

    /// `NewMilliQuantity`: `value` thousandths in `format`.
    pub fn new_milli(value: i64, format: Format) -> Self {
        Self::from_parts(i128::from(value), -3, format)
    }

    /// `NewScaledQuantity`: `value × 10^scale`, DecimalSI.
    pub fn new_scaled(value: i64, scale: i32) -> Self {
        Self::from_parts(i128::from(value), scale, Format::DecimalSI)
    }

    fn from_parts(unscaled: i128, scale: i32, format: Format) -> Self {
        Quantity {
            unscaled,
            scale,
            format,
            cached: None,
        }
    }

    /// The format the quantity is written in.
    pub fn format(&self) -> Format {
        self.format
    }

    /// `ParseQuantity`: a signed decimal number (`1`, `1.5`, `.5`, `1.`) and a suffix (`m`,
    /// `Gi`, `e3`, …). Values finer than a nano-unit round up, away from zero, to the next one;
    /// binary values are capped at 2^63 - 1. No surrounding whitespace is allowed.
    pub fn parse(s: &str) -> Result<Self, QuantityError> {
        if s.is_empty() {
            return Err(QuantityError::FormatWrong);
        }
        if s == "0" {
            return Ok(Quantity {
                cached: Some(s.into()),
                ..Quantity::default()
            });
        }
        let parts = split(s)?;
        let (base, exponent, format) = interpret(parts.suffix).ok_or(QuantityError::Suffix)?;
        let cached = keeps_string(&parts, base, exponent).then(|| s.into());

        // Trailing zeros of the fraction change nothing; dropping them keeps more room.
        let denom = parts.denom.trim_end_matches('0');
        let digits = format!("{}{denom}", parts.num);
        let digits = digits.trim_start_matches('0');
        if digits.len() > MAX_DIGITS {
            return Err(QuantityError::Numeric);
        }
        let mut unscaled: i128 = if digits.is_empty() {
            0
        } else {
            digits.parse().map_err(|_| QuantityError::Numeric)?
        };
        let denom_len = i64::try_from(denom.len()).map_err(|_| QuantityError::Numeric)?;
        let mut scale = -denom_len;
        if base == 10 {
            scale += i64::from(exponent);
        } else {
            // Binary exponents are at most 60, so this only fails on a huge mantissa.
            unscaled = unscaled
                .checked_mul(1i128 << exponent)
                .ok_or(QuantityError::Numeric)?;
        }
        if !parts.positive {
            unscaled = -unscaled;
        }
        let mut q = Quantity {
            unscaled,
            scale: 0,
            format,
            cached,
        };
        // Round non-zero values up to the smallest representable one: who asks for some
        // resource gets some.
        if scale < i64::from(NANO) {
            q.unscaled = div_away_from_zero(unscaled, i64::from(NANO) - scale);
            q.scale = NANO;
        } else {
            q.scale = i32::try_from(scale).map_err(|_| QuantityError::Suffix)?;
        }
        if format == Format::BinarySI {
            if q.cmp_abs_int(MAX_ALLOWED) == Ordering::Greater {
                q = Quantity::from_parts(MAX_ALLOWED * q.unscaled.signum(), 0, format);
            }
            if !q.is_zero() && q.cmp_abs_int(1) == Ordering::Less {
                // Below one, binary suffixes would only confuse: write it as DecimalSI.
                q.format = Format::DecimalSI;
            }
        }
        Ok(q)
    }

    /// Reads a quantity from JSON as kube's `UnmarshalJSON` does: a string (surrounding
    /// whitespace ignored) or a bare number. Anything else, `null` included, is not a quantity.
    pub fn from_json(value: &Value) -> Result<Self, QuantityError> {
        match value {
            Value::String(s) => Quantity::parse(s.trim()),
            Value::Number(n) => Quantity::parse(&n.to_string()),
            _ => Err(QuantityError::FormatWrong),
        }
    }

    /// Whether the quantity is zero.
    pub fn is_zero(&self) -> bool {
        self.unscaled == 0
    }

    /// `Sign`: -1, 0 or 1.
    pub fn sign(&self) -> i32 {
        self.unscaled.signum() as i32
    }

    /// `Value`: the value in units, rounded away from zero (`1500m` → 2), saturating at the
    /// bounds of `i64`.
    pub fn value(&self) -> i64 {
        self.scaled_value(0)
    }

    /// `MilliValue`: the value in thousandths, rounded away from zero (`1n` → 1), saturating at
    /// the bounds of `i64`.
    pub fn milli_value(&self) -> i64 {
        self.scaled_value(-3)
    }

    /// `ScaledValue`: the value in units of `10^scale`, rounded away from zero, saturating at
    /// the bounds of `i64`.
    pub fn scaled_value(&self, scale: i32) -> i64 {
        let shift = i64::from(self.scale) - i64::from(scale);
        let v = if shift >= 0 {
            u32::try_from(shift)
                .ok()
                .and_then(|s| 10i128.checked_pow(s))
                .and_then(|p| self.unscaled.checked_mul(p))
                .unwrap_or(if self.unscaled < 0 {
                    i128::MIN
                } else {
                    i128::MAX
                })
        } else {
            div_away_from_zero(self.unscaled, -shift)
        };
        if self.unscaled == 0 {
            return 0;
        }
        i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX })
    }

    /// `AsApproximateFloat64`: the nearest `f64`, or an infinity when out of its range.
    pub fn as_approximate_f64(&self) -> f64 {
        let base = self.unscaled as f64;
        if self.scale == 0 {
            return base;
        }
        base * 10f64.powi(self.scale)
    }

    /// `Neg`: the same amount with the other sign, in the same format.
    pub fn neg(&self) -> Quantity {
        Quantity::from_parts(
            self.unscaled.checked_neg().unwrap_or(i128::MAX),
            self.scale,
            self.format,
        )
    }

    /// `Add`: the sum, in this quantity's format (the other's when this one is zero); `None`
    /// when the exact sum does not fit.
    pub fn checked_add(&self, other: &Quantity) -> Option<Quantity> {
        let (a, b, scale) = align(self, other)?;
        let format = if self.is_zero() {
            other.format
        } else {
            self.format
        };
        Some(Quantity::from_parts(a.checked_add(b)?, scale, format))
    }

    /// `Sub`: the difference, in this quantity's format (the other's when this one is zero);
    /// `None` when the exact difference does not fit.
    pub fn checked_sub(&self, other: &Quantity) -> Option<Quantity> {
        let (a, b, scale) = align(self, other)?;
        let format = if self.is_zero() {
            other.format
        } else {
            self.format
        };
        Some(Quantity::from_parts(a.checked_sub(b)?, scale, format))
    }

    /// `|self|` compared with the integer `limit`.
    fn cmp_abs_int(&self, limit: i128) -> Ordering {
        self.abs().cmp(&Quantity::from_parts(limit, 0, self.format))
    }

    fn abs(&self) -> Quantity {
        if self.unscaled < 0 {
            self.neg()
        } else {
            self.clone()
        }
    }

    /// The value as an integer, if it is one and fits (`AsScale(0)` when exact).
    fn as_integer(&self) -> Option<i128> {
        if self.scale >= 0 {
            10i128
                .checked_pow(u32::try_from(self.scale).ok()?)
                .and_then(|p| self.unscaled.checked_mul(p))
        } else {
            let p = 10i128.checked_pow(self.scale.unsigned_abs())?;
            (self.unscaled % p == 0).then(|| self.unscaled / p)
        }
    }

    /// `CanonicalizeBytes`: the number and suffix kube writes for this quantity.
    fn canonical(&self) -> String {
        if self.is_zero() {
            return "0".to_string();
        }
        if self.format == Format::BinarySI && self.cmp_abs_int(1024) != Ordering::Less {
            if let Some(integer) = self.as_integer() {
                let (amount, power) = remove_factors(integer, 1024);
                if let Some(suffix) = binary_suffix(power) {
                    return format!("{amount}{suffix}");
                }
                // Past Ei there is no binary suffix: the exact decimal form follows.
                return decimal(self.unscaled, self.scale, Format::DecimalExponent);
            }
        }
        let format = match self.format {
            // Small or fractional binary values are written in decimal so nothing is rounded.
            Format::BinarySI => Format::DecimalSI,
            other => other,
        };
        decimal(self.unscaled, self.scale, format)
    }
}

/// `unscaled × 10^scale` written with its exponent lowered to a multiple of three, and the
/// suffix of `format` for it; a DecimalSI exponent without a suffix (past `E`, below `n`) is
/// written as an exponent (`1e21`).
fn decimal(unscaled: i128, scale: i32, format: Format) -> String {
    let (mut amount, times) = remove_factors(unscaled, 10);
    let mut exponent = i64::from(scale) + i64::from(times);
    while exponent.rem_euclid(3) != 0 {
        match amount.checked_mul(10) {
            Some(a) => amount = a,
            None => break,
        }
        exponent -= 1;
    }
    let suffix = match format {
        Format::DecimalSI => decimal_suffix(exponent).map(str::to_string),
        _ => None,
    };
    match suffix {
        Some(suffix) => format!("{amount}{suffix}"),
        None if exponent == 0 => amount.to_string(),
        None => format!("{amount}e{exponent}"),
    }
}

/// Divides out every factor `base` of `value`: `(value / base^n, n)`.
fn remove_factors(mut value: i128, base: i128) -> (i128, i32) {
    let mut times = 0;
    while value != 0 && value % base == 0 {
        value /= base;
        times += 1;
    }
    (value, times)
}

/// `value / 10^digits`, rounded away from zero.
fn div_away_from_zero(value: i128, digits: i64) -> i128 {
    let Some(divisor) = u32::try_from(digits)
        .ok()
        .and_then(|d| 10i128.checked_pow(d))
    else {
        return value.signum();
    };
    let (q, r) = (value / divisor, value % divisor);
    if r == 0 {
        q
    } else {
        q + value.signum()
    }
}

/// Both unscaled values at the finer of the two scales, or `None` when one does not fit.
fn align(a: &Quantity, b: &Quantity) -> Option<(i128, i128, i32)> {
    let scale = a.scale.min(b.scale);
    let widen = |q: &Quantity| -> Option<i128> {
        if q.unscaled == 0 {
            return Some(0);
        }
        let shift = u32::try_from(i64::from(q.scale) - i64::from(scale)).ok()?;
        q.unscaled.checked_mul(10i128.checked_pow(shift)?)
    };
    Some((widen(a)?, widen(b)?, scale))
}

/// The parts of a quantity string (`parseQuantityString`): sign, digits before and after the
/// point (leading zeros of the integer part dropped, `"0"` when none are left), and suffix.
struct Parts<'a> {
    positive: bool,
    num: &'a str,
    denom: &'a str,
    suffix: &'a str,
}

fn split(s: &str) -> Result<Parts<'_>, QuantityError> {
    let (positive, rest) = match s.as_bytes().first() {
        Some(b'-') => (false, &s[1..]),
        Some(b'+') => (true, &s[1..]),
        _ => (true, s),
    };
    let rest = rest.trim_start_matches('0');
    let digits_end = |t: &str| t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let num_end = digits_end(rest);
    let num = if num_end == 0 { "0" } else { &rest[..num_end] };
    let mut rest = &rest[num_end..];
    let mut denom = "";
    if let Some(after_point) = rest.strip_prefix('.') {
        let end = digits_end(after_point);
        denom = &after_point[..end];
        rest = &after_point[end..];
    }
    // The suffix: letters of "eEinumkKMGTP", an optional sign, then digits to the end.
    let letters = rest
        .find(|c: char| !"eEinumkKMGTP".contains(c))
        .unwrap_or(rest.len());
    let after_letters = &rest[letters..];
    let after_sign = after_letters
        .strip_prefix(['+', '-'])
        .unwrap_or(after_letters);
    if !after_sign.bytes().all(|c| c.is_ascii_digit()) {
        return Err(QuantityError::FormatWrong);
    }
    Ok(Parts {
        positive,
        num,
        denom,
        suffix: rest,
    })
}

/// `suffixHandler.interpret`: the base, exponent and format a suffix stands for.
fn interpret(suffix: &str) -> Option<(u32, i32, Format)> {
    let decimal = |e| Some((10, e, Format::DecimalSI));
    let binary = |e| Some((2, e, Format::BinarySI));
    match suffix {
        "n" => decimal(-9),
        "u" => decimal(-6),
        "m" => decimal(-3),
        "" => decimal(0),
        "k" => decimal(3),
        "M" => decimal(6),
        "G" => decimal(9),
        "T" => decimal(12),
        "P" => decimal(15),
        "E" => decimal(18),
        "Ki" => binary(10),
        "Mi" => binary(20),
        "Gi" => binary(30),
        "Ti" => binary(40),
        "Pi" => binary(50),
        "Ei" => binary(60),
        _ => {
            let exponent = suffix.strip_prefix(['e', 'E'])?;
            // Go's ParseInt: an optional sign and digits; the exponent must stay within
            // ±MaxInt32 rather than be truncated to an unrelated value.
            let digits = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
            if digits.is_empty() {
                return None;
            }
            let e: i64 = exponent.parse().ok()?;
            let e = i32::try_from(e).ok().filter(|e| *e != i32::MIN)?;
            Some((10, e, Format::DecimalExponent))
        }
    }
}

fn decimal_suffix(exponent: i64) -> Option<&'static str> {
    Some(match exponent {
        -9 => "n",
        -6 => "u",
        -3 => "m",
        0 => "",
        3 => "k",
        6 => "M",
        9 => "G",
        12 => "T",
        15 => "P",
        18 => "E",
        _ => return None,
    })
}

fn binary_suffix(power_of_1024: i32) -> Option<&'static str> {
    ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
        .get(usize::try_from(power_of_1024).ok()?)
        .copied()
}

/// Whether kube's parse keeps the input as the quantity's string (`q.s`), which `String()` and
/// JSON then write unchanged: the int64 fast path, with a number already in canonical shape.
fn keeps_string(parts: &Parts<'_>, base: u32, exponent: i32) -> bool {
    let (num, denom) = (parts.num, parts.denom);
    if base == 2 {
        let precision = 15 - num.len() as i64 - (exponent as f32 * 3.0 / 10.0) as i64 - 1;
        if exponent < 0 || !denom.is_empty() || precision < 0 {
            return false;
        }
        let Ok(value) = num.parse::<i64>() else {
            return false;
        };
        let fits = value.checked_mul(1i64 << exponent).is_some();
        return fits && exponent % 10 == 0 && value & 0x07 != 0;
    }
    let precision = 18 - (num.len() + denom.len()) as i64;
    let scale = i64::from(exponent) - denom.len() as i64;
    if precision < 0 || scale < i64::from(NANO) {
        return false;
    }
    let shifted = format!("{num}{denom}");
    scale % 3 == 0 && !shifted.ends_with("000") && !shifted.starts_with('0')
}

impl PartialEq for Quantity {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Quantity {}

impl PartialOrd for Quantity {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Quantity {
    /// `Cmp`: numeric order, exact whatever the scales.
    fn cmp(&self, other: &Self) -> Ordering {
        let signs = self.unscaled.signum().cmp(&other.unscaled.signum());
        if signs != Ordering::Equal || self.unscaled == 0 {
            return signs;
        }
        match align(self, other) {
            Some((a, b, _)) => a.cmp(&b),
            // One side does not fit at the finer scale, so its magnitude is the larger.
            None => {
                let self_wider = self.scale > other.scale;
                let larger_magnitude = if self_wider {
                    Ordering::Greater
                } else {
                    Ordering::Less
                };
                if self.unscaled > 0 {
                    larger_magnitude
                } else {
                    larger_magnitude.reverse()
                }
            }
        }
    }
}

impl fmt::Display for Quantity {
    /// `String()`: the canonical form (`1500m`, `1536Mi`, `1e3`), or the parsed string when
    /// kube keeps it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.cached {
            Some(s) => f.write_str(s),
            None => f.write_str(&self.canonical()),
        }
    }
}

impl FromStr for Quantity {
    type Err = QuantityError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Quantity::parse(s)
    }
}

impl Serialize for Quantity {
    /// As a JSON string, as kube does.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Quantity {
    /// From a string or, as kube accepts, a number.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct QuantityVisitor;

        impl Visitor<'_> for QuantityVisitor {
            type Value = Quantity;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a quantity such as \"500m\" or \"1Gi\"")
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<Quantity, E> {
                Quantity::parse(v.trim()).map_err(E::custom)
            }

            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Quantity, E> {
                Quantity::parse(&v.to_string()).map_err(E::custom)
            }

            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Quantity, E> {
                Quantity::parse(&v.to_string()).map_err(E::custom)
            }

            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Quantity, E> {
                Quantity::parse(&v.to_string()).map_err(E::custom)
            }

            fn visit_unit<E: de::Error>(self) -> Result<Quantity, E> {
                Ok(Quantity::default())
            }
        }

        deserializer.deserialize_any(QuantityVisitor)
    }
}

/// Rewrites the quantities of a resource list given as JSON numbers (`cpu: 1`, `cpu: 0.5`) as
/// the strings kube writes for them (`"1"`, `"500m"`): kube-apiserver serializes every quantity
/// as a string. Values that are not quantities are left for validation to report.
pub fn canonicalize_json_numbers(list: &mut Map<String, Value>) {
    for v in list.values_mut() {
        if !v.is_number() {
            continue;
        }
        if let Ok(q) = Quantity::from_json(v) {
            *v = Value::String(q.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    fn dec(unscaled: i128, scale: i32, format: Format) -> Quantity {
        Quantity::from_parts(unscaled, scale, format)
    }

    use Format::{BinarySI, DecimalExponent, DecimalSI};

    #[test]
    fn parses_kubes_table_with_value_and_format() {
        const KI: i128 = 1024;
        let table: Vec<(&str, Quantity)> = vec![
            ("0", dec(0, 0, DecimalSI)),
            ("0n", dec(0, 0, DecimalSI)),
            ("0u", dec(0, 0, DecimalSI)),
            ("0m", dec(0, 0, DecimalSI)),
            ("0Ki", dec(0, 0, BinarySI)),
            ("0k", dec(0, 0, DecimalSI)),
            ("0Mi", dec(0, 0, BinarySI)),
            ("0M", dec(0, 0, DecimalSI)),
            ("0Gi", dec(0, 0, BinarySI)),
            ("0G", dec(0, 0, DecimalSI)),
            ("0Ti", dec(0, 0, BinarySI)),
            ("0T", dec(0, 0, DecimalSI)),
            ("1", dec(1, 0, DecimalSI)),
            ("1Ki", dec(KI, 0, BinarySI)),
            ("8Ki", dec(8 * KI, 0, BinarySI)),
            ("7Mi", dec(7 * KI.pow(2), 0, BinarySI)),
            ("6Gi", dec(6 * KI.pow(3), 0, BinarySI)),
            ("5Ti", dec(5 * KI.pow(4), 0, BinarySI)),
            ("4Pi", dec(4 * KI.pow(5), 0, BinarySI)),
            ("3Ei", dec(3 * KI.pow(6), 0, BinarySI)),
            ("10Ti", dec(10 * KI.pow(4), 0, BinarySI)),
            ("100Ti", dec(100 * KI.pow(4), 0, BinarySI)),
            ("5n", dec(5, -9, DecimalSI)),
            ("4u", dec(4, -6, DecimalSI)),
            ("3m", dec(3, -3, DecimalSI)),
            ("9", dec(9, 0, DecimalSI)),
            ("8k", dec(8, 3, DecimalSI)),
            ("50k", dec(5, 4, DecimalSI)),
            ("7M", dec(7, 6, DecimalSI)),
            ("6G", dec(6, 9, DecimalSI)),
            ("5T", dec(5, 12, DecimalSI)),
            ("40T", dec(4, 13, DecimalSI)),
            ("300T", dec(3, 14, DecimalSI)),
            ("2P", dec(2, 15, DecimalSI)),
            ("1E", dec(1, 18, DecimalSI)),
            ("1E-3", dec(1, -3, DecimalExponent)),
            ("1e3", dec(1, 3, DecimalExponent)),
            ("1E6", dec(1, 6, DecimalExponent)),
            ("1e9", dec(1, 9, DecimalExponent)),
            ("1E12", dec(1, 12, DecimalExponent)),
            ("1e15", dec(1, 15, DecimalExponent)),
            ("1E18", dec(1, 18, DecimalExponent)),
            ("1e14", dec(1, 14, DecimalExponent)),
            ("1e13", dec(1, 13, DecimalExponent)),
            ("100.035k", dec(100035, 0, DecimalSI)),
            ("0.001", dec(1, -3, DecimalSI)),
            ("0.0005k", dec(5, -1, DecimalSI)),
            ("0.005", dec(5, -3, DecimalSI)),
            ("0.05", dec(5, -2, DecimalSI)),
            ("0.5", dec(5, -1, DecimalSI)),
            ("0.00050k", dec(5, -1, DecimalSI)),
            ("0.00500", dec(5, -3, DecimalSI)),
            ("0.05000", dec(5, -2, DecimalSI)),
            ("0.50000", dec(5, -1, DecimalSI)),
            ("0.5e0", dec(5, -1, DecimalExponent)),
            ("0.5e-1", dec(5, -2, DecimalExponent)),
            ("0.5e-2", dec(5, -3, DecimalExponent)),
            ("10.035M", dec(10035, 3, DecimalSI)),
            ("1.2e3", dec(12, 2, DecimalExponent)),
            ("1.3E+6", dec(13, 5, DecimalExponent)),
            ("1.40e9", dec(14, 8, DecimalExponent)),
            ("1.53E12", dec(153, 10, DecimalExponent)),
            ("1.6e15", dec(16, 14, DecimalExponent)),
            ("1.7E18", dec(17, 17, DecimalExponent)),
            ("9.01", dec(901, -2, DecimalSI)),
            ("8.1k", dec(81, 2, DecimalSI)),
            ("7.123456M", dec(7123456, 0, DecimalSI)),
            ("6.987654321G", dec(6987654321, 0, DecimalSI)),
            ("5.444T", dec(5444, 9, DecimalSI)),
            ("40.1T", dec(401, 11, DecimalSI)),
            ("300.2T", dec(3002, 11, DecimalSI)),
            ("2.5P", dec(25, 14, DecimalSI)),
            ("1.01E", dec(101, 16, DecimalSI)),
            // Things that saturate or round.
            ("3.001n", dec(4, -9, DecimalSI)),
            ("1.1E-9", dec(2, -9, DecimalExponent)),
            ("0.0000000001", dec(1, -9, DecimalSI)),
            ("0.0000000005", dec(1, -9, DecimalSI)),
            ("0.00000000050", dec(1, -9, DecimalSI)),
            ("0.5e-9", dec(1, -9, DecimalExponent)),
            ("0.9n", dec(1, -9, DecimalSI)),
            ("0.00000012345", dec(124, -9, DecimalSI)),
            ("0.00000012354", dec(124, -9, DecimalSI)),
            ("9Ei", dec(MAX_ALLOWED, 0, BinarySI)),
            ("9223372036854775807Ki", dec(MAX_ALLOWED, 0, BinarySI)),
            ("12E", dec(12, 18, DecimalSI)),
            // Fractional binary values.
            ("100.035Ki", dec(10243584, -2, BinarySI)),
            ("0.5Mi", dec(512 * KI, 0, BinarySI)),
            ("0.05Gi", dec(536870912, -1, BinarySI)),
            ("0.025Ti", dec(274877906944, -1, BinarySI)),
            // Written by trolls.
            ("0.000000000001Ki", dec(2, -9, DecimalSI)),
            (".001", dec(1, -3, DecimalSI)),
            (".0001k", dec(100, -3, DecimalSI)),
            ("1.", dec(1, 0, DecimalSI)),
            ("1.G", dec(1, 9, DecimalSI)),
            (".", dec(0, 0, DecimalSI)),
        ];
        for (input, want) in &table {
            let got = q(input);
            assert_eq!(got, *want, "{input}: got {got}, want {want}");
            assert_eq!(got.format(), want.format(), "{input}");
            // The negative and the explicitly positive versions of everything.
            let neg = q(&format!("-{input}"));
            assert_eq!(neg, want.neg(), "-{input}");
            assert_eq!(neg.format(), want.format(), "-{input}");
            let pos = q(&format!("+{input}"));
            assert_eq!(pos, *want, "+{input}");
            assert_eq!(pos.format(), want.format(), "+{input}");
        }
    }

    #[test]
    fn refuses_what_kube_refuses_with_its_messages() {
        for input in [
            "1.1.M",
            "1+1.0M",
            "0.1mi",
            "0.1am",
            "aoeu",
            ".5i",
            "1i",
            "-3.01i",
            "-3.01e-",
            "1e4294967297",
            "E2147483648",
            "1e-2147483648",
            " 1",
            "1 ",
            "",
            "abc",
            "1Zi",
            "1.2.3",
            "1Qi",
            "1e",
            "1K",
        ] {
            assert!(Quantity::parse(input).is_err(), "{input:?} parsed");
        }
        assert_eq!(
            Quantity::parse("").unwrap_err().to_string(),
            "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
        );
        assert_eq!(
            Quantity::parse("1Zi").unwrap_err(),
            QuantityError::FormatWrong
        );
        assert_eq!(
            Quantity::parse("1i").unwrap_err().to_string(),
            "unable to parse quantity's suffix"
        );
        assert!(Quantity::parse("1e2147483647").is_ok());
        assert_eq!(Quantity::parse("-."), Ok(dec(0, 0, DecimalSI)));
    }

    #[test]
    fn writes_the_canonical_form_kube_writes() {
        const KI: i128 = 1024;
        let table = [
            (dec(KI.pow(3), 0, BinarySI), "1Gi", "1024Mi"),
            (dec(300 * KI.pow(2), 0, BinarySI), "300Mi", "307200Ki"),
            (dec(6 * KI, 0, BinarySI), "6Ki", ""),
            (dec(1001 * KI.pow(3), 0, BinarySI), "1001Gi", "1025024Mi"),
            (dec(KI.pow(4), 0, BinarySI), "1Ti", "1024Gi"),
            (dec(5, 0, BinarySI), "5", "5000m"),
            (dec(500, -3, BinarySI), "500m", "0.5"),
            (dec(1, 9, DecimalSI), "1G", "1000M"),
            (dec(1000, 6, DecimalSI), "1G", "0.001T"),
            (dec(1000000, 3, DecimalSI), "1G", ""),
            (dec(1000000000, 0, DecimalSI), "1G", ""),
            (dec(1, -3, DecimalSI), "1m", "1000u"),
            (dec(80, -3, DecimalSI), "80m", ""),
            (dec(1080, -3, DecimalSI), "1080m", "1.08"),
            (dec(108, -2, DecimalSI), "1080m", "1080000000n"),
            (dec(10800, -4, DecimalSI), "1080m", ""),
            (dec(300, 6, DecimalSI), "300M", ""),
            (dec(1, 12, DecimalSI), "1T", ""),
            (dec(1, 18, DecimalSI), "1E", ""),
            (dec(1, 21, DecimalSI), "1e21", "1000E"),
            (dec(5, 21, DecimalSI), "5e21", "5000E"),
            (dec(1, 24, DecimalSI), "1e24", "1000000E"),
            (dec(1, 70, BinarySI), "10e69", ""),
            (dec(2, 70, BinarySI), "20e69", ""),
            (dec(1, 72, BinarySI), "1e72", ""),
            (dec(1234567, 6, DecimalSI), "1234567M", ""),
            (dec(1234567, -3, BinarySI), "1234567m", ""),
            (dec(3, 3, DecimalSI), "3k", ""),
            (dec(1025, 0, BinarySI), "1025", ""),
            (dec(0, 0, DecimalSI), "0", ""),
            (dec(0, 0, BinarySI), "0", ""),
            (dec(1, 9, DecimalExponent), "1e9", ".001e12"),
            (dec(1, -3, DecimalExponent), "1e-3", "0.001e0"),
            (dec(1, -9, DecimalExponent), "1e-9", "1000e-12"),
            (dec(80, -3, DecimalExponent), "80e-3", ""),
            (dec(300, 6, DecimalExponent), "300e6", ""),
            (dec(1, 12, DecimalExponent), "1e12", ""),
            (dec(1, 3, DecimalExponent), "1e3", ""),
            (dec(3, 3, DecimalExponent), "3e3", ""),
            (dec(3, 3, DecimalSI), "3k", ""),
            (dec(0, 0, DecimalExponent), "0", "00"),
            (dec(1, -9, DecimalSI), "1n", ""),
            (dec(80, -9, DecimalSI), "80n", ""),
            (dec(1080, -9, DecimalSI), "1080n", ""),
            (dec(108, -8, DecimalSI), "1080n", ""),
            (dec(10800, -10, DecimalSI), "1080n", ""),
            (dec(1, -6, DecimalSI), "1u", ""),
            (dec(80, -6, DecimalSI), "80u", ""),
            (dec(1080, -6, DecimalSI), "1080u", ""),
        ];
        for (quantity, canonical, alternate) in &table {
            assert_eq!(quantity.to_string(), *canonical);
            // The canonical string parses to itself, and is kept as the parsed string.
            let parsed = q(canonical);
            assert_eq!(parsed.to_string(), *canonical);
            assert_eq!(parsed.cached.as_deref(), Some(*canonical), "{canonical}");
            if !alternate.is_empty() {
                let parsed = q(alternate);
                assert_eq!(parsed.cached, None, "{alternate}");
                assert_eq!(parsed.to_string(), *canonical, "{alternate}");
            }
            if !quantity.is_zero() {
                assert_eq!(quantity.neg().to_string(), format!("-{canonical}"));
            }
        }
        // Binary values with no 1024 factor, and values below a nano-unit (from arithmetic).
        assert_eq!(dec(2000, 0, BinarySI).to_string(), "2000");
        assert_eq!(dec(-2000, 0, BinarySI).to_string(), "-2000");
        assert_eq!(dec(1, -12, DecimalSI).to_string(), "1e-12");
        assert_eq!(dec(1, -10, DecimalSI).to_string(), "100e-12");
        // 2^70 is past Ei and has no factor of ten: the exact integer.
        let past_ei = q("1Ei").checked_add(&dec(KI.pow(7) - KI.pow(6), 0, BinarySI));
        assert_eq!(
            past_ei.map(|q| q.to_string()).as_deref(),
            Some("1180591620717411303424")
        );
    }

    #[test]
    fn parse_then_emit_round_trips_as_kube() {
        for (input, emitted) in [
            ("1Ki", "1Ki"),
            ("1Mi", "1Mi"),
            ("1Gi", "1Gi"),
            ("1024Mi", "1Gi"),
            ("1000M", "1G"),
            (".001Ki", "1024m"),
            (".000001Ki", "1024u"),
            (".000000001Ki", "1024n"),
            (".000000000001Ki", "2n"),
            ("1.5Gi", "1536Mi"),
            ("1500m", "1500m"),
            ("1e3", "1e3"),
            ("0.1", "100m"),
        ] {
            assert_eq!(q(input).to_string(), emitted, "{input}");
            assert_eq!(q(&format!("-{input}")).to_string(), format!("-{emitted}"));
        }
        // kube keeps a parsed string whose digits are already canonical, leading zeros and all.
        assert_eq!(q("00100m").to_string(), "00100m");
        assert_eq!(q("+1").to_string(), "+1");
    }

    #[test]
    fn compares_numerically_across_notations() {
        for (x, y, want) in [
            ("0", "0", Ordering::Equal),
            ("100m", "50m", Ordering::Greater),
            ("50m", "100m", Ordering::Less),
            ("10000T", "100Gi", Ordering::Greater),
            ("100m", "0.1", Ordering::Equal),
            ("1Gi", "1073741824", Ordering::Equal),
            ("1k", "1e3", Ordering::Equal),
            ("2", "2000m", Ordering::Equal),
            ("-1", "1n", Ordering::Less),
            ("1e2147483647", "9Ei", Ordering::Greater),
            ("-1e2147483647", "-9Ei", Ordering::Less),
            ("1n", "1e-2147483", Ordering::Equal),
        ] {
            assert_eq!(q(x).cmp(&q(y)), want, "{x} vs {y}");
            assert_eq!(q(y).cmp(&q(x)), want.reverse(), "{y} vs {x}");
        }
        let most_positive = i128::from(i64::MAX);
        let most_negative = i128::from(i64::MIN);
        let e18 = 1_000_000_000_000_000_000i128;
        for (a, b, want) in [
            (
                dec(901, -2, DecimalSI),
                dec(901, -2, DecimalSI),
                Ordering::Equal,
            ),
            (
                dec(90, -1, DecimalSI),
                dec(901, -2, DecimalSI),
                Ordering::Less,
            ),
            (
                dec(901, -2, DecimalSI),
                dec(900, -2, DecimalSI),
                Ordering::Greater,
            ),
            (dec(0, 1, DecimalSI), dec(0, -1, DecimalSI), Ordering::Equal),
            (
                dec(800, -3, DecimalSI),
                dec(1, 0, DecimalSI),
                Ordering::Less,
            ),
            (
                dec(800, -3, DecimalSI),
                dec(79, -2, DecimalSI),
                Ordering::Greater,
            ),
            (
                dec(most_positive, 0, DecimalSI),
                dec(1, -1, DecimalSI),
                Ordering::Greater,
            ),
            (
                dec(most_positive, 1, DecimalSI),
                dec(1, 0, DecimalSI),
                Ordering::Greater,
            ),
            (
                dec(most_positive, 1, DecimalSI),
                dec(0, 1, DecimalSI),
                Ordering::Greater,
            ),
            (
                dec(most_positive, -16, DecimalSI),
                dec(1, 3, DecimalSI),
                Ordering::Less,
            ),
            (
                dec(most_negative, 0, DecimalSI),
                dec(0, 0, DecimalSI),
                Ordering::Less,
            ),
            (
                dec(most_negative, -18, DecimalSI),
                dec(-1, 0, DecimalSI),
                Ordering::Less,
            ),
            (
                dec(most_negative, -19, DecimalSI),
                dec(-1, 0, DecimalSI),
                Ordering::Greater,
            ),
            (
                dec(e18, -17, DecimalSI),
                dec(1, 1, DecimalSI),
                Ordering::Equal,
            ),
            (
                dec(e18, -17, DecimalSI),
                dec(-10, 0, DecimalSI),
                Ordering::Greater,
            ),
            (
                dec(-e18, -17, DecimalSI),
                dec(-10, 0, DecimalSI),
                Ordering::Equal,
            ),
            (
                dec(e18, -17, DecimalSI),
                dec(1, 0, DecimalSI),
                Ordering::Greater,
            ),
            (
                dec(e18 + 1, -17, DecimalSI),
                dec(1, 1, DecimalSI),
                Ordering::Greater,
            ),
            (
                dec(e18 - 1, -17, DecimalSI),
                dec(1, 1, DecimalSI),
                Ordering::Less,
            ),
        ] {
            assert_eq!(a.cmp(&b), want, "{a} vs {b}");
            assert_eq!(b.cmp(&a), want.reverse(), "{b} vs {a}");
        }
    }

    #[test]
    fn adds_and_subtracts_keeping_the_format_of_the_left_side() {
        for (a, b, sum) in [
            (
                dec(10, 0, DecimalSI),
                dec(1, 1, DecimalSI),
                dec(20, 0, DecimalSI),
            ),
            (
                dec(10, 0, DecimalSI),
                dec(1, 0, BinarySI),
                dec(11, 0, DecimalSI),
            ),
            (
                dec(10, 0, BinarySI),
                dec(1, 0, DecimalSI),
                dec(11, 0, BinarySI),
            ),
            (
                dec(10, 0, DecimalSI),
                dec(0, 0, BinarySI),
                dec(10, 0, DecimalSI),
            ),
            (
                dec(0, 0, DecimalSI),
                dec(10, 0, BinarySI),
                dec(10, 0, BinarySI),
            ),
            (
                dec(1, 0, DecimalSI),
                dec(-1, 0, DecimalSI),
                dec(0, 0, DecimalSI),
            ),
            (
                dec(5, -3, DecimalSI),
                dec(2, 0, DecimalSI),
                dec(2005, -3, DecimalSI),
            ),
        ] {
            let got = a.checked_add(&b).expect("fits");
            assert_eq!(got, sum, "{a} + {b}");
            assert_eq!(got.format(), sum.format(), "{a} + {b}");
            let back = got.checked_sub(&b).expect("fits");
            assert_eq!(back, a, "{got} - {b}");
        }
        // Adding or subtracting zero keeps the suffix, whichever side the zero is on.
        for value in ["100m", "1Gi"] {
            let zero = q("0");
            assert_eq!(
                q(value)
                    .checked_add(&zero)
                    .map(|q| q.to_string())
                    .as_deref(),
                Some(value)
            );
            assert_eq!(
                zero.checked_add(&q(value))
                    .map(|q| q.to_string())
                    .as_deref(),
                Some(value)
            );
            assert_eq!(
                q(value)
                    .checked_sub(&zero)
                    .map(|q| q.to_string())
                    .as_deref(),
                Some(value)
            );
            assert_eq!(
                zero.checked_sub(&q(value)).map(|q| q.to_string()),
                Some(q(value).neg().to_string())
            );
        }
        assert_eq!(
            q("1")
                .checked_sub(&q("1500m"))
                .map(|q| q.to_string())
                .as_deref(),
            Some("-500m")
        );
        assert_eq!(q("1e2147483647").checked_add(&q("1n")), None);
    }

    #[test]
    fn negation_does_not_change_the_source() {
        let a = dec(901, -2, DecimalSI);
        let negated = a.neg();
        assert_ne!(negated, a);
        assert_eq!(negated.to_string(), "-9010m");
    }

    #[test]
    fn milli_and_unit_values_round_away_from_zero() {
        for (input, milli, value) in [
            ("100m", 100, 1),
            ("2", 2000, 2),
            ("1.5", 1500, 2),
            ("0.1", 100, 1),
            ("1Ki", 1_024_000, 1024),
            ("128Mi", 128 * 1024 * 1024 * 1000, 128 * 1024 * 1024),
            ("32Gi", 32 * 1024_i64.pow(3) * 1000, 32 * 1024_i64.pow(3)),
            ("1k", 1_000_000, 1000),
            ("1G", 1_000_000_000_000, 1_000_000_000),
            ("1e3", 1_000_000, 1000),
            ("1E-3", 1, 1),
            ("110", 110_000, 110),
            ("-1", -1000, -1),
            ("500u", 1, 1),
            ("1n", 1, 1),
            ("-1n", -1, -1),
            ("-1.5", -1500, -2),
            ("0", 0, 0),
            ("9.01", 9010, 10),
            ("1e30", i64::MAX, i64::MAX),
            ("-1e30", i64::MIN, i64::MIN),
        ] {
            assert_eq!(q(input).milli_value(), milli, "{input} milli");
            assert_eq!(q(input).value(), value, "{input} value");
        }
        assert_eq!(q("9.01").scaled_value(-2), 901);
        assert_eq!(q("9.01").scaled_value(-1), 91);
        assert_eq!(q("-9.01").scaled_value(-1), -91);
        assert_eq!(q("9.01").scaled_value(2), 1);
    }

    #[test]
    fn approximates_floats() {
        for (input, want) in [
            ("0", 0.0),
            ("100m", 0.1),
            ("1.5Gi", 1_610_612_736.0),
            ("1e3", 1000.0),
            ("-2.5k", -2500.0),
            ("1n", 1e-9),
        ] {
            let got = q(input).as_approximate_f64();
            assert!((got - want).abs() <= want.abs() * 1e-12, "{input}: {got}");
        }
        assert_eq!(q("1e400").as_approximate_f64(), f64::INFINITY);
    }

    #[test]
    fn milli_constructors_write_as_kube_does() {
        assert_eq!(Quantity::new_milli(1, DecimalSI).to_string(), "1m");
        assert_eq!(Quantity::new_milli(1000, DecimalSI).to_string(), "1");
        assert_eq!(Quantity::new_milli(1234000, DecimalSI).to_string(), "1234");
        assert_eq!(Quantity::new_milli(1024, BinarySI).to_string(), "1024m");
        assert_eq!(
            Quantity::new_milli(1024 * 1024, BinarySI).to_string(),
            "1048576m"
        );
        assert_eq!(Quantity::new(8 * 1024, BinarySI).to_string(), "8Ki");
        assert_eq!(Quantity::new_scaled(5, 3).to_string(), "5k");
    }

    #[test]
    fn json_is_a_string_and_numbers_are_accepted() {
        for (input, want) in [
            (r#"" 1""#, "1"),
            (r#""1 ""#, "1"),
            ("1", "1"),
            (" 1", "1"),
            ("1 ", "1"),
            ("10", "10"),
            ("-1", "-1"),
            (" -1", "-1"),
            ("0.5", "500m"),
            (r#""1.5Gi""#, "1536Mi"),
            ("null", "0"),
        ] {
            let parsed: Quantity =
                serde_json::from_str(input).unwrap_or_else(|e| panic!("{input}: {e}"));
            assert_eq!(parsed.to_string(), want, "{input}");
            assert_eq!(serde_json::to_value(&parsed).ok(), Some(json!(want)));
        }
        let err = serde_json::from_str::<Quantity>(r#""1Zi""#).unwrap_err();
        assert!(err.to_string().contains("quantities must match"), "{err}");
        assert!(serde_json::from_str::<Quantity>("true").is_err());
        assert_eq!(Quantity::from_json(&json!(" 2Gi ")), Ok(q("2Gi")));
        assert_eq!(Quantity::from_json(&json!(2)), Ok(q("2")));
        assert_eq!(Quantity::from_json(&json!(2)), Ok(q("2000m")));
        assert_eq!(q("-1").scaled_value(-9), -1_000_000_000);
        assert_eq!(
            Quantity::from_json(&json!(true)),
            Err(QuantityError::FormatWrong)
        );
    }

    #[test]
    fn numeric_quantities_become_strings() {
        let mut m =
            json!({"cpu": 1, "memory": "1Gi", "x": 0.5, "y": 2.0, "z": 0.0001, "w": "1000m"})
                .as_object()
                .cloned()
                .expect("object");
        canonicalize_json_numbers(&mut m);
        assert_eq!(
            Value::Object(m),
            json!({"cpu": "1", "memory": "1Gi", "x": "500m", "y": "2", "z": "100u", "w": "1000m"})
        );
    }
}
