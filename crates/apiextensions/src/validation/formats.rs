//! The string formats kube-openapi's `strfmt.Default` registry knows, and their checks.
//!
//! Format names are normalized by dropping dashes (`date-time` is `datetime`), as the registry does. A format
//! the registry does not know is not checked.

use std::net::{IpAddr, Ipv6Addr};
use std::sync::LazyLock;

use regex::Regex;

fn normalize(name: &str) -> String {
    name.replace('-', "")
}

/// Whether `format` names a format that is checked.
pub(crate) fn is_known(format: &str) -> bool {
    matches!(
        normalize(format).as_str(),
        "bsonobjectid"
            | "byte"
            | "cidr"
            | "date"
            | "datetime"
            | "duration"
            | "email"
            | "hexcolor"
            | "hostname"
            | "ipv4"
            | "ipv6"
            | "mac"
            | "password"
            | "ssn"
            | "uri"
            | "uuid"
            | "uuid3"
            | "uuid4"
            | "uuid5"
    )
}

/// The formats a CRD schema may use in Kubernetes 1.33 (apiextensions `validation/formats.go`), normalized. Any
/// other format is removed from the schema before validation (`StripUnsupportedFormatsPostProcess`), whatever the
/// type; `k8s-short-name` and `k8s-long-name` only come with 1.34.
const SUPPORTED_FORMATS: [&str; 24] = [
    "bsonobjectid",
    "uri",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "cidr",
    "mac",
    "uuid",
    "uuid3",
    "uuid4",
    "uuid5",
    "isbn",
    "isbn10",
    "isbn13",
    "creditcard",
    "ssn",
    "hexcolor",
    "rgbcolor",
    "byte",
    "password",
    "date",
    "duration",
    "datetime",
];

/// The format kube keeps of a schema node: `format` if it is supported, else none.
pub(crate) fn supported_format(format: &str) -> &str {
    if SUPPORTED_FORMATS.contains(&normalize(format).as_str()) {
        format
    } else {
        ""
    }
}

macro_rules! regex {
    ($name:ident, $re:expr) => {
        static $name: LazyLock<Regex> =
            LazyLock::new(|| Regex::new($re).expect("format regex is valid"));
    };
}

regex!(
    HOSTNAME,
    r"^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9\-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z\p{L}]){2,63})$"
);
regex!(
    UUID,
    r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$"
);
regex!(
    UUID3,
    r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$"
);
regex!(
    UUID4,
    r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$"
);
regex!(
    UUID5,
    r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$"
);
regex!(
    DATE_TIME_TAIL,
    r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$"
);
regex!(HEXCOLOR, r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$");
regex!(SSN, r"^[0-9]{3}[- ]?[0-9]{2}[- ]?[0-9]{4}$");
regex!(BSON_OBJECT_ID, r"^[0-9a-fA-F]{24}$");
regex!(
    MAC,
    r"^([0-9A-Fa-f]{2}[:-]){5}([0-9A-Fa-f]{2})$|^([0-9A-Fa-f]{2}[:-]){7}([0-9A-Fa-f]{2})$|^([0-9A-Fa-f]{2}[:-]){19}([0-9A-Fa-f]{2})$|^([0-9A-Fa-f]{4}\.){2}([0-9A-Fa-f]{4})$|^([0-9A-Fa-f]{4}\.){3}([0-9A-Fa-f]{4})$|^([0-9A-Fa-f]{4}\.){9}([0-9A-Fa-f]{4})$"
);
regex!(
    BASE64,
    r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$"
);
regex!(EMAIL, r"^[^\s@<>()\[\]\\,;:]+@[^\s@<>()\[\]\\,;:]+$");
regex!(DURATION_UNITS, r"(\d+)\s*([A-Za-zµ]+)");
regex!(URI_SCHEME, r"^[A-Za-z][A-Za-z0-9+.\-]*:");

/// Whether `s` is valid for the known `format`.
pub(crate) fn validates(format: &str, s: &str) -> bool {
    match normalize(format).as_str() {
        "bsonobjectid" => BSON_OBJECT_ID.is_match(s),
        "byte" => BASE64.is_match(s),
        "cidr" => is_cidr(s),
        "date" => is_date(s),
        "datetime" => is_date_time(s),
        "duration" => is_go_duration(s) || is_unit_duration(s),
        "email" => EMAIL.is_match(s),
        "hexcolor" => HEXCOLOR.is_match(s),
        "hostname" => HOSTNAME.is_match(s) && s.split('.').all(|p| p.len() <= 63),
        "ipv4" => s.contains('.') && parse_ip_sloppy(s).is_some(),
        "ipv6" => s.contains(':') && s.parse::<Ipv6Addr>().is_ok(),
        "mac" => MAC.is_match(s),
        "password" => true,
        "ssn" => SSN.is_match(s),
        "uri" => is_request_uri(s),
        "uuid" => UUID.is_match(s),
        "uuid3" => UUID3.is_match(s),
        "uuid4" => UUID4.is_match(s),
        "uuid5" => UUID5.is_match(s),
        _ => true,
    }
}

/// Go's `time.Parse("2006-01-02", s)`.
fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let num = |r: std::ops::Range<usize>| {
        s.get(r)
            .filter(|p| p.bytes().all(|c| c.is_ascii_digit()))
            .and_then(|p| p.parse::<i16>().ok())
    };
    match (num(0..4), num(5..7), num(8..10)) {
        (Some(y), Some(m), Some(d)) => jiff::civil::Date::new(y, m as i8, d as i8).is_ok(),
        _ => false,
    }
}

/// strfmt's `IsDateTime`: a date, a `t`, and a time with zone, compared as strfmt compares it.
fn is_date_time(s: &str) -> bool {
    if s.len() < 4 {
        return false;
    }
    let lower = s.to_lowercase();
    let parts: Vec<&str> = lower.split('t').collect();
    if parts.len() < 2 || !is_date(parts[0]) {
        return false;
    }
    let Some(m) = DATE_TIME_TAIL.captures(parts[1]) else {
        return false;
    };
    let (h, mi, se) = (&m[1], &m[2], &m[3]);
    h <= "23" && mi <= "59" && se <= "59"
}

/// Go's `time.ParseDuration`: a signed sequence of decimal numbers with units ns, us, µs, ms, s, m, h.
fn is_go_duration(s: &str) -> bool {
    let s = s.strip_prefix(['+', '-']).unwrap_or(s);
    if s == "0" {
        return true;
    }
    if s.is_empty() {
        return false;
    }
    let mut rest = s;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number = &rest[..digits];
        if number.is_empty() || number == "." || number.matches('.').count() > 1 {
            return false;
        }
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        if !matches!(
            &rest[..unit_len],
            "ns" | "us" | "µs" | "μs" | "ms" | "s" | "m" | "h"
        ) {
            return false;
        }
        rest = &rest[unit_len..];
    }
    true
}

/// strfmt's fallback for durations Go cannot parse: any `<digits> <unit>` (`3 days`, `2wk`) in the string.
fn is_unit_duration(s: &str) -> bool {
    const UNITS: [&[&str]; 8] = [
        &["ns", "nano"],
        &["us", "µs", "micro"],
        &["ms", "milli"],
        &["s", "sec"],
        &["m", "min"],
        &["h", "hr", "hour"],
        &["d", "day"],
        &["w", "wk", "week"],
    ];
    DURATION_UNITS.captures_iter(s).any(|m| {
        if m[1].parse::<i32>().is_err() {
            return false;
        }
        let unit = m[2].trim().to_lowercase();
        UNITS.iter().any(|variants| {
            variants
                .iter()
                .enumerate()
                .any(|(i, v)| (i == variants.len() - 1 && unit.starts_with(v)) || unit == *v)
        })
    })
}

/// netutils' `ParseIPSloppy`: an IP address, tolerating leading zeros in IPv4 octets.
fn parse_ip_sloppy(s: &str) -> Option<IpAddr> {
    if s.contains(':') {
        return s.parse::<Ipv6Addr>().ok().map(IpAddr::V6);
    }
    let octets: Vec<&str> = s.split('.').collect();
    if octets.len() != 4 {
        return None;
    }
    let mut out = [0u8; 4];
    for (i, o) in octets.iter().enumerate() {
        if o.is_empty() || o.len() > 3 || !o.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        out[i] = o.parse::<u8>().ok()?;
    }
    Some(IpAddr::from(out))
}

fn is_cidr(s: &str) -> bool {
    let Some((ip, bits)) = s.split_once('/') else {
        return false;
    };
    let Some(ip) = parse_ip_sloppy(ip) else {
        return false;
    };
    if bits.is_empty() || bits.len() > 3 || !bits.bytes().all(|c| c.is_ascii_digit()) {
        return false;
    }
    let max = if ip.is_ipv4() { 32 } else { 128 };
    bits.parse::<u32>().is_ok_and(|b| b <= max)
}

/// govalidator's `IsRequestURI` (Go's `url.ParseRequestURI`): an absolute URI or an absolute path.
pub(crate) fn is_request_uri(s: &str) -> bool {
    if s.is_empty() || s.chars().any(|c| c.is_control() || c == ' ') {
        return false;
    }
    s.starts_with('/') || URI_SCHEME.is_match(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn date_time_follows_strfmt() {
        assert!(validates("date-time", "2024-01-02T03:04:05Z"));
        assert!(validates("date-time", "2024-01-02t03:04:05.123+01:00"));
        assert!(!validates("date-time", "2024-01-02"));
        assert!(!validates("date-time", "2024-02-30T03:04:05Z"));
        assert!(!validates("datetime", "2024-01-02T24:04:05Z"));
    }

    #[test]
    fn formats_accept_and_refuse() {
        let cases = [
            ("date", "2024-02-29", true),
            ("date", "2023-02-29", false),
            ("duration", "1h30m", true),
            ("duration", "1.5s", true),
            ("duration", "3 days", true),
            ("duration", "forever", false),
            ("uuid", "123e4567-e89b-12d3-a456-426614174000", true),
            ("uuid", "nope", false),
            ("ipv4", "10.0.0.1", true),
            ("ipv4", "010.0.0.1", true),
            ("ipv4", "::1", false),
            ("ipv6", "::1", true),
            ("cidr", "10.0.0.0/8", true),
            ("cidr", "10.0.0.0/33", false),
            ("mac", "01:23:45:67:89:ab", true),
            ("hostname", "example.com", true),
            ("hostname", "-x", false),
            ("email", "a@b.c", true),
            ("email", "nope", false),
            ("byte", "aGVsbG8=", true),
            ("byte", "hello!", false),
            ("uri", "https://example.com/x", true),
            ("uri", "relative/path", false),
        ];
        for (format, value, ok) in cases {
            assert!(is_known(format), "{format}");
            assert_eq!(validates(format, value), ok, "{format} {value}");
        }
        assert!(!is_known("int32"));
        assert!(!is_known("whatever"));
    }

    #[test]
    fn unsupported_formats_are_dropped_whatever_the_type() {
        assert_eq!(supported_format("date-time"), "date-time");
        assert_eq!(supported_format("int32"), "");
        assert_eq!(supported_format("k8s-short-name"), "");
        assert_eq!(supported_format("isbn"), "isbn");
    }
}
