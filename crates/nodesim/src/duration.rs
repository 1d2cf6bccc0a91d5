//! Parsing of Go-style durations ("500ms", "2s", "1m30s") used in pod annotations.

use std::time::Duration;

/// Parses a duration written as Go's `time.ParseDuration` accepts it: a sequence of decimal numbers,
/// each with an optional fraction and a unit (`ns`, `us`, `µs`, `ms`, `s`, `m`, `h`), such as `"1m30s"`
/// or `"1.5s"`. A bare number is read as seconds, and `"0"` is zero. Negative durations are rejected.
pub fn parse_duration(s: &str) -> Option<Duration> {
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    if let Ok(seconds) = s.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds));
    }
    let mut rest = s.strip_prefix('+').unwrap_or(s);
    let mut total = Duration::ZERO;
    while !rest.is_empty() {
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if number_end == 0 {
            return None;
        }
        let number: f64 = rest[..number_end].parse().ok()?;
        rest = &rest[number_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let nanos_per_unit: f64 = match &rest[..unit_end] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        rest = &rest[unit_end..];
        let nanos = number * nanos_per_unit;
        if !nanos.is_finite() || nanos > u64::MAX as f64 {
            return None;
        }
        total = total.checked_add(Duration::from_nanos(nanos.round() as u64))?;
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_go_durations_and_bare_seconds() {
        let cases = [
            ("500ms", Some(Duration::from_millis(500))),
            ("2s", Some(Duration::from_secs(2))),
            ("1m30s", Some(Duration::from_secs(90))),
            ("1.5s", Some(Duration::from_millis(1500))),
            ("1h", Some(Duration::from_secs(3600))),
            ("10us", Some(Duration::from_micros(10))),
            ("3", Some(Duration::from_secs(3))),
            ("0", Some(Duration::ZERO)),
            ("", None),
            ("-1s", None),
            ("5x", None),
            ("s", None),
        ];
        for (input, want) in cases {
            assert_eq!(parse_duration(input), want, "{input}");
        }
    }
}
