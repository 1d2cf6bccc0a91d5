//! Go durations (`10s`, `1m30s`, `1.5h`, `300ms`, `-1m`): Go's `time.ParseDuration` and
//! `Duration.String()`, as kube's flags, annotations and messages use them.
//!
//! Mirrors `src/time/format.go` (`ParseDuration`, `quote`) and `src/time/time.go`
//! (`Duration.String`, `fmtFrac`, `fmtInt`); the cases of `time_test.go` are ported below.

use std::fmt;
use std::str::FromStr;

const NANOSECOND: u64 = 1;
const MICROSECOND: u64 = 1_000 * NANOSECOND;
const MILLISECOND: u64 = 1_000 * MICROSECOND;
const SECOND: u64 = 1_000 * MILLISECOND;
const MINUTE: u64 = 60 * SECOND;
const HOUR: u64 = 60 * MINUTE;

/// `1 << 63`: one more than the largest duration, the magnitude of the smallest.
const LIMIT: u64 = 1 << 63;

/// A signed span of nanoseconds, as Go's `time.Duration`: about ±292 years.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration(i64);

/// Why a string is not a Go duration; the messages are Go's, input quoted as Go quotes it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParseDurationError {
    /// Not a sequence of numbers with units, or out of range.
    #[error("time: invalid duration {0}")]
    Invalid(String),
    /// A number without a unit (`"1"`).
    #[error("time: missing unit in duration {0}")]
    MissingUnit(String),
    /// A unit other than `ns`, `us` (`µs`, `μs`), `ms`, `s`, `m`, `h`.
    #[error("time: unknown unit {unit} in duration {input}")]
    UnknownUnit {
        /// The unit, quoted.
        unit: String,
        /// The whole input, quoted.
        input: String,
    },
    /// A valid duration below zero where only zero or more makes sense (a flag, a delay).
    #[error("duration {0} must not be negative")]
    Negative(String),
}

impl Duration {
    /// No time at all.
    pub const ZERO: Duration = Duration(0);

    /// A duration of `nanos` nanoseconds.
    pub const fn from_nanos(nanos: i64) -> Self {
        Duration(nanos)
    }

    /// The duration in nanoseconds.
    pub const fn as_nanos(self) -> i64 {
        self.0
    }

    /// Whether the duration is below zero.
    pub const fn is_negative(self) -> bool {
        self.0 < 0
    }

    /// The duration as a `std::time::Duration`, or `None` when it is negative.
    pub fn to_std(self) -> Option<std::time::Duration> {
        u64::try_from(self.0)
            .ok()
            .map(std::time::Duration::from_nanos)
    }

    /// Go's `time.ParseDuration`: an optional sign, then one or more decimal numbers, each with
    /// an optional fraction and a unit (`"300ms"`, `"-1.5h"`, `"2h45m"`); `"0"` needs no unit.
    pub fn parse(s: &str) -> Result<Self, ParseDurationError> {
        let invalid = || ParseDurationError::Invalid(quote(s));
        let (neg, mut rest) = match s.as_bytes().first() {
            Some(b'-') => (true, &s[1..]),
            Some(b'+') => (false, &s[1..]),
            _ => (false, s),
        };
        if rest == "0" {
            return Ok(Duration::ZERO);
        }
        if rest.is_empty() {
            return Err(invalid());
        }
        let mut total: u64 = 0;
        while !rest.is_empty() {
            // The next character must be [0-9.].
            if !rest.starts_with(|c: char| c == '.' || c.is_ascii_digit()) {
                return Err(invalid());
            }
            let (whole, after_whole) = leading_int(rest).ok_or_else(invalid)?;
            let has_whole = after_whole.len() != rest.len();
            rest = after_whole;
            let mut fraction = (0u64, 1f64);
            let mut has_fraction = false;
            if let Some(after_dot) = rest.strip_prefix('.') {
                let (f, scale, after_fraction) = leading_fraction(after_dot);
                has_fraction = after_fraction.len() != after_dot.len();
                fraction = (f, scale);
                rest = after_fraction;
            }
            if !has_whole && !has_fraction {
                return Err(invalid()); // no digits: ".s", "-.s"
            }
            let unit_end = rest
                .find(|c: char| c == '.' || c.is_ascii_digit())
                .unwrap_or(rest.len());
            if unit_end == 0 {
                return Err(ParseDurationError::MissingUnit(quote(s)));
            }
            let (unit_name, after_unit) = rest.split_at(unit_end);
            rest = after_unit;
            let unit = match unit_name {
                "ns" => NANOSECOND,
                "us" | "µs" | "μs" => MICROSECOND,
                "ms" => MILLISECOND,
                "s" => SECOND,
                "m" => MINUTE,
                "h" => HOUR,
                _ => {
                    return Err(ParseDurationError::UnknownUnit {
                        unit: quote(unit_name),
                        input: quote(s),
                    })
                }
            };
            if whole > LIMIT / unit {
                return Err(invalid());
            }
            let mut value = whole * unit;
            let (f, scale) = fraction;
            if f > 0 {
                // f64 keeps fractions of hours nanosecond-accurate, as Go relies on.
                value += (f as f64 * (unit as f64 / scale)) as u64;
                if value > LIMIT {
                    return Err(invalid());
                }
            }
            total += value;
            if total > LIMIT {
                return Err(invalid());
            }
        }
        if neg {
            // total <= 1 << 63, so its negation fits.
            return Ok(Duration(0i64.wrapping_sub_unsigned(total)));
        }
        i64::try_from(total).map(Duration).map_err(|_| invalid())
    }
}

/// Parses a Go duration that must not be negative (a flag, an annotation, a delay), as the
/// `std::time::Duration` callers sleep and compare with.
pub fn parse_non_negative(s: &str) -> Result<std::time::Duration, ParseDurationError> {
    Duration::parse(s)?
        .to_std()
        .ok_or_else(|| ParseDurationError::Negative(quote(s)))
}

/// Formats a `std::time::Duration` as Go's `Duration.String()` does (`1m30s`, `1.5s`, `0s`),
/// saturating at Go's largest duration.
pub fn format_std(d: std::time::Duration) -> String {
    Duration::from(d).to_string()
}

impl From<std::time::Duration> for Duration {
    /// Saturates at Go's largest duration (about 292 years).
    fn from(d: std::time::Duration) -> Self {
        Duration(i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
    }
}

impl FromStr for Duration {
    type Err = ParseDurationError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Duration::parse(s)
    }
}

impl fmt::Display for Duration {
    /// Go's `Duration.String()`: `72h3m0.5s`, `1.5ms`, `-1m0s`, `0s`. Units below a second are
    /// used only for durations shorter than one.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut u = self.0.unsigned_abs();
        let mut out = String::new();
        if u < SECOND {
            let (prec, unit) = match u {
                0 => return f.write_str("0s"),
                u if u < MICROSECOND => (0, "ns"),
                u if u < MILLISECOND => (3, "µs"),
                _ => (6, "ms"),
            };
            let (frac, int) = fraction(u, prec);
            out = format!("{int}{frac}{unit}");
        } else {
            let (frac, secs) = fraction(u, 9);
            u = secs;
            out.insert_str(0, &format!("{}{frac}s", u % 60));
            u /= 60;
            if u > 0 {
                out.insert_str(0, &format!("{}m", u % 60));
                u /= 60;
                // Hours are the largest unit: days differ in length.
                if u > 0 {
                    out.insert_str(0, &format!("{u}h"));
                }
            }
        }
        if self.0 < 0 {
            out.insert(0, '-');
        }
        f.write_str(&out)
    }
}

/// `fmtFrac`: the fraction of `v / 10^prec` (`".12345"`, trailing zeros and a zero fraction
/// left out) and the integer part.
fn fraction(mut v: u64, prec: u32) -> (String, u64) {
    let mut digits = Vec::new();
    let mut printed = false;
    for _ in 0..prec {
        let digit = v % 10;
        printed = printed || digit != 0;
        if printed {
            digits.push(char::from(b'0' + digit as u8));
        }
        v /= 10;
    }
    if printed {
        digits.push('.');
    }
    (digits.into_iter().rev().collect(), v)
}

/// `leadingInt`: the leading `[0-9]*` of `s` and the rest; `None` when it exceeds `1 << 63`.
fn leading_int(s: &str) -> Option<(u64, &str)> {
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let mut x: u64 = 0;
    for c in s[..end].bytes() {
        if x > LIMIT / 10 {
            return None;
        }
        x = x * 10 + u64::from(c - b'0');
        if x > LIMIT {
            return None;
        }
    }
    Some((x, &s[end..]))
}

/// `leadingFraction`: the leading `[0-9]*` of `s` as `x / scale`, and the rest. Digits past
/// what fits are consumed without adding precision.
fn leading_fraction(s: &str) -> (u64, f64, &str) {
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (mut x, mut scale, mut overflow) = (0u64, 1f64, false);
    for c in s[..end].bytes() {
        if overflow {
            continue;
        }
        if x > (LIMIT - 1) / 10 {
            overflow = true;
            continue;
        }
        let y = x * 10 + u64::from(c - b'0');
        if y > LIMIT {
            overflow = true;
            continue;
        }
        x = y;
        scale *= 10.0;
    }
    (x, scale, &s[end..])
}

/// Go's `time.quote`: double quotes, `"` and `\` escaped, bytes of non-ASCII or control
/// characters as `\xNN`.
fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        if !c.is_ascii() || c < ' ' {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("\\x{b:02x}"));
            }
        } else {
            if c == '"' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const NS: i64 = 1;
    const US: i64 = 1_000;
    const MS: i64 = 1_000_000;
    const S: i64 = 1_000_000_000;
    const M: i64 = 60 * S;
    const H: i64 = 60 * M;

    #[test]
    fn parses_what_go_parses() {
        let cases: &[(&str, i64)] = &[
            ("0", 0),
            ("5s", 5 * S),
            ("30s", 30 * S),
            ("1478s", 1478 * S),
            ("-5s", -5 * S),
            ("+5s", 5 * S),
            ("-0", 0),
            ("+0", 0),
            ("5.0s", 5 * S),
            ("5.6s", 5 * S + 600 * MS),
            ("5.s", 5 * S),
            (".5s", 500 * MS),
            ("1.0s", S),
            ("1.00s", S),
            ("1.004s", S + 4 * MS),
            ("1.0040s", S + 4 * MS),
            ("100.00100s", 100 * S + MS),
            ("10ns", 10 * NS),
            ("11us", 11 * US),
            ("12µs", 12 * US),
            ("12μs", 12 * US),
            ("13ms", 13 * MS),
            ("14s", 14 * S),
            ("15m", 15 * M),
            ("16h", 16 * H),
            ("3h30m", 3 * H + 30 * M),
            ("10.5s4m", 4 * M + 10 * S + 500 * MS),
            ("-2m3.4s", -(2 * M + 3 * S + 400 * MS)),
            (
                "1h2m3s4ms5us6ns",
                H + 2 * M + 3 * S + 4 * MS + 5 * US + 6 * NS,
            ),
            ("39h9m14.425s", 39 * H + 9 * M + 14 * S + 425 * MS),
            ("52763797000ns", 52_763_797_000),
            ("0.3333333333333333333h", 20 * M),
            ("9007199254740993ns", (1 << 53) + 1),
            ("9223372036854775807ns", i64::MAX),
            ("9223372036854775.807us", i64::MAX),
            ("9223372036s854ms775us807ns", i64::MAX),
            ("-9223372036854775808ns", i64::MIN),
            ("-9223372036854775.808us", i64::MIN),
            ("-9223372036s854ms775us808ns", i64::MIN),
            ("-2562047h47m16.854775808s", i64::MIN),
            ("0.100000000000000000000h", 6 * M),
            ("0.830103483285477580700h", 49 * M + 48 * S + 372_539_827),
            // What kube's flags and our annotations take.
            ("10s", 10 * S),
            ("1m30s", 90 * S),
            ("1h", H),
            ("1.5h", 90 * M),
            ("300ms", 300 * MS),
            ("-1m", -M),
            ("12h0m0s", 12 * H),
            ("15s", 15 * S),
            ("500ms", 500 * MS),
            ("2s", 2 * S),
            ("10us", 10 * US),
        ];
        for &(input, nanos) in cases {
            assert_eq!(Duration::parse(input), Ok(Duration(nanos)), "{input}");
        }
    }

    #[test]
    fn refuses_what_go_refuses_with_gos_messages() {
        let cases = [
            ("", "time: invalid duration \"\""),
            ("3", "time: missing unit in duration \"3\""),
            ("1", "time: missing unit in duration \"1\""),
            ("-", "time: invalid duration \"-\""),
            ("s", "time: invalid duration \"s\""),
            (".", "time: invalid duration \".\""),
            ("-.", "time: invalid duration \"-.\""),
            (".s", "time: invalid duration \".s\""),
            ("+.s", "time: invalid duration \"+.s\""),
            ("1d", "time: unknown unit \"d\" in duration \"1d\""),
            ("1x", "time: unknown unit \"x\" in duration \"1x\""),
            ("3d", "time: unknown unit \"d\" in duration \"3d\""),
            ("5x", "time: unknown unit \"x\" in duration \"5x\""),
            ("15", "time: missing unit in duration \"15\""),
            ("\u{FFFD}", "time: invalid duration \"\\xef\\xbf\\xbd\""),
            (
                "\u{FFFD} hello \u{FFFD} world",
                "time: invalid duration \"\\xef\\xbf\\xbd hello \\xef\\xbf\\xbd world\"",
            ),
            (
                "9223372036854775810ns",
                "time: invalid duration \"9223372036854775810ns\"",
            ),
            (
                "9223372036854775808ns",
                "time: invalid duration \"9223372036854775808ns\"",
            ),
            (
                "-9223372036854775809ns",
                "time: invalid duration \"-9223372036854775809ns\"",
            ),
            (
                "9223372036854776us",
                "time: invalid duration \"9223372036854776us\"",
            ),
            ("3000000h", "time: invalid duration \"3000000h\""),
            (
                "9223372036854775.808us",
                "time: invalid duration \"9223372036854775.808us\"",
            ),
            (
                "9223372036854ms775us808ns",
                "time: invalid duration \"9223372036854ms775us808ns\"",
            ),
        ];
        for (input, message) in cases {
            let err = Duration::parse(input).expect_err(input);
            assert_eq!(err.to_string(), message, "{input:?}");
        }
    }

    #[test]
    fn formats_as_go_does() {
        let cases: &[(&str, i64)] = &[
            ("0s", 0),
            ("1ns", NS),
            ("1.1µs", 1100 * NS),
            ("2.2ms", 2200 * US),
            ("3.3s", 3300 * MS),
            ("4m5s", 4 * M + 5 * S),
            ("4m5.001s", 4 * M + 5001 * MS),
            ("5h6m7.001s", 5 * H + 6 * M + 7001 * MS),
            ("8m0.000000001s", 8 * M + NS),
            ("2562047h47m16.854775807s", i64::MAX),
            ("-2562047h47m16.854775808s", i64::MIN),
            ("1m30s", 90 * S),
            ("1.5s", 1500 * MS),
            ("-1m0s", -M),
            ("12h0m0s", 12 * H),
        ];
        for &(text, nanos) in cases {
            assert_eq!(Duration(nanos).to_string(), text);
            // Go's output parses back to the same duration.
            assert_eq!(Duration::parse(text), Ok(Duration(nanos)), "{text}");
        }
        assert_eq!(format_std(std::time::Duration::from_millis(1500)), "1.5s");
        assert_eq!(
            format_std(std::time::Duration::from_secs(u64::MAX)),
            "2562047h47m16.854775807s"
        );
    }

    #[test]
    fn negative_durations_are_refused_where_they_make_no_sense() {
        assert_eq!(
            parse_non_negative("1m30s"),
            Ok(std::time::Duration::from_secs(90))
        );
        assert_eq!(parse_non_negative("-0"), Ok(std::time::Duration::ZERO));
        assert_eq!(
            parse_non_negative("-1s").map_err(|e| e.to_string()),
            Err("duration \"-1s\" must not be negative".to_string())
        );
        assert!(matches!(
            parse_non_negative("2"),
            Err(ParseDurationError::MissingUnit(_))
        ));
        assert_eq!(Duration::parse("-1m").map(Duration::to_std), Ok(None));
    }
}
