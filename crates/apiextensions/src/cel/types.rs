//! The opaque values of kube's CEL libraries: URLs, quantities, IP addresses, CIDRs and named
//! formats.

use std::fmt;
use std::net::IpAddr;

use cel::objects::Opaque;

use crate::validation::formats;

/// cel-go's type names, as kube declares them.
pub const URL_TYPE: &str = "kubernetes.URL";
/// The quantity type.
pub const QUANTITY_TYPE: &str = "kubernetes.Quantity";
/// The IP address type.
pub const IP_TYPE: &str = "net.IP";
/// The CIDR type.
pub const CIDR_TYPE: &str = "net.CIDR";
/// The named format type.
pub const FORMAT_TYPE: &str = "kubernetes.NamedFormat";

/// A URL as Go's `url.ParseRequestURI` reads it (what kube's `url()` accepts).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Url {
    /// The scheme, lower-cased (empty for a path).
    pub scheme: String,
    /// `host[:port]` (IPv6 addresses in brackets).
    pub host: String,
    /// The path as written.
    pub path: String,
    /// The query, without `?`.
    pub raw_query: String,
}

impl Opaque for Url {
    fn runtime_type_name(&self) -> &str {
        URL_TYPE
    }
}

impl Url {
    /// Parses `s` as `url.ParseRequestURI`: an absolute URL or an absolute path.
    pub fn parse(s: &str) -> Result<Url, String> {
        let quoted = format!("parse {:?}: ", s);
        if s.chars().any(|c| c.is_ascii_control()) {
            return Err(format!("{quoted}net/url: invalid control character in URL"));
        }
        if s.is_empty() {
            return Err(format!("{quoted}empty url"));
        }
        let (scheme, rest) = match s.find(':') {
            Some(0) => return Err(format!("{quoted}missing protocol scheme")),
            Some(i)
                if s[..i].starts_with(|c: char| c.is_ascii_alphabetic())
                    && s[..i]
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)) =>
            {
                (s[..i].to_ascii_lowercase(), &s[i + 1..])
            }
            _ => (String::new(), s),
        };
        let (rest, raw_query) = match rest.split_once('?') {
            Some((r, q)) => (r, q.to_string()),
            None => (rest, String::new()),
        };
        if !rest.starts_with('/') {
            if !scheme.is_empty() {
                // An opaque URL (`mailto:x`): no host or path.
                return Ok(Url {
                    scheme,
                    host: String::new(),
                    path: String::new(),
                    raw_query,
                });
            }
            return Err(format!("{quoted}invalid URI for request"));
        }
        let (host, path) = match rest.strip_prefix("//").filter(|_| !scheme.is_empty()) {
            Some(auth) => {
                let (authority, path) = match auth.find('/') {
                    Some(i) => (&auth[..i], &auth[i..]),
                    None => (auth, ""),
                };
                let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
                validate_host(host).map_err(|e| format!("{quoted}{e}"))?;
                (host.to_string(), path.to_string())
            }
            None => (String::new(), rest.to_string()),
        };
        Ok(Url {
            scheme,
            host,
            path,
            raw_query,
        })
    }

    /// The host without port or IPv6 brackets (`url.URL.Hostname`).
    pub fn hostname(&self) -> String {
        let (host, _) = split_host_port(&self.host);
        host.trim_start_matches('[')
            .trim_end_matches(']')
            .to_string()
    }

    /// The port, or empty (`url.URL.Port`).
    pub fn port(&self) -> String {
        split_host_port(&self.host).1.to_string()
    }

    /// The query's values by key, in order (`url.URL.Query`).
    pub fn query(&self) -> Vec<(String, Vec<String>)> {
        let mut out: Vec<(String, Vec<String>)> = Vec::new();
        for pair in self.raw_query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let (Some(k), Some(v)) = (unescape_query(k), unescape_query(v)) else {
                continue;
            };
            match out.iter_mut().find(|(key, _)| *key == k) {
                Some((_, vs)) => vs.push(v),
                None => out.push((k, vec![v])),
            }
        }
        out
    }
}

fn split_host_port(host: &str) -> (&str, &str) {
    if let Some(end) = host.rfind(']') {
        return match host[end + 1..].strip_prefix(':') {
            Some(port) => (&host[..end + 1], port),
            None => (&host[..end + 1], ""),
        };
    }
    match host.rsplit_once(':') {
        Some((h, p)) => (h, p),
        None => (host, ""),
    }
}

fn validate_host(host: &str) -> Result<(), String> {
    let (h, port) = split_host_port(host);
    if h.starts_with('[') && !h.ends_with(']') {
        return Err("missing ']' in host".to_string());
    }
    // Go's `validOptionalPort`: nothing, or `:` and digits.
    if !port.chars().all(|c| c.is_ascii_digit()) {
        return Err(format!("invalid port {:?} after host", format!(":{port}")));
    }
    Ok(())
}

fn unescape_query(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = s.get(i + 1..i + 3)?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).ok()
}

/// A resource quantity (`resource.Quantity`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Quantity(pub rkcm_apimachinery::quantity::Quantity);

impl Opaque for Quantity {
    fn runtime_type_name(&self) -> &str {
        QUANTITY_TYPE
    }
}

impl Quantity {
    /// Parses a quantity (`resource.ParseQuantity`).
    pub fn parse(s: &str) -> Result<Quantity, String> {
        rkcm_apimachinery::quantity::Quantity::parse(s)
            .map(Quantity)
            .map_err(|e| e.to_string())
    }

    /// An integer quantity.
    pub fn from_int(i: i64) -> Quantity {
        Quantity(rkcm_apimachinery::quantity::Quantity::new(
            i,
            rkcm_apimachinery::quantity::Format::DecimalSI,
        ))
    }

    /// The value as an `int64` when it is a whole number that fits (`AsInt64`).
    pub fn as_integer(&self) -> Option<i64> {
        let v = self.0.scaled_value(0);
        (Quantity::from_int(v).0 == self.0).then_some(v)
    }

    /// The sum (or the difference, `negate`): kube's `add` and `sub`.
    pub fn add(&self, other: Quantity, negate: bool) -> Result<cel::Value, cel::ExecutionError> {
        let r = if negate {
            self.0.checked_sub(&other.0)
        } else {
            self.0.checked_add(&other.0)
        };
        r.map(|q| cel::Value::Opaque(std::sync::Arc::new(Quantity(q))))
            .ok_or_else(|| cel::ExecutionError::function_error("add", "quantity overflow"))
    }
}

/// An IP address (`net.IP`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ip(pub IpAddr);

impl Opaque for Ip {
    fn runtime_type_name(&self) -> &str {
        IP_TYPE
    }
}

impl Ip {
    /// Parses an address as kube's `ip()`: no zone, no IPv4-mapped IPv6 address.
    pub fn parse(s: &str) -> Result<Ip, String> {
        if s.contains('%') {
            return Err("IP address with zone value is not allowed".to_string());
        }
        let ip: IpAddr = s
            .parse()
            .map_err(|_| format!("IP Address {s:?} parse error during conversion from string: ParseAddr({s:?}): unable to parse IP"))?;
        if let IpAddr::V6(v6) = ip {
            if v6.to_ipv4_mapped().is_some() {
                return Err("IPv4-mapped IPv6 address is not allowed".to_string());
            }
        }
        Ok(Ip(ip))
    }

    /// `isLinkLocalMulticast`: 224.0.0.0/24 or ff02::/16.
    pub fn is_link_local_multicast(&self) -> bool {
        match self.0 {
            IpAddr::V4(a) => a.octets()[..3] == [224, 0, 0],
            IpAddr::V6(a) => a.segments()[0] & 0xff0f == 0xff02,
        }
    }

    /// `isLinkLocalUnicast`: 169.254.0.0/16 or fe80::/10.
    pub fn is_link_local_unicast(&self) -> bool {
        match self.0 {
            IpAddr::V4(a) => a.octets()[..2] == [169, 254],
            IpAddr::V6(a) => a.segments()[0] & 0xffc0 == 0xfe80,
        }
    }

    /// `isGlobalUnicast`: neither unspecified, loopback, multicast, link-local nor broadcast.
    pub fn is_global_unicast(&self) -> bool {
        let broadcast = matches!(self.0, IpAddr::V4(a) if a.is_broadcast());
        !(self.0.is_unspecified()
            || self.0.is_loopback()
            || self.0.is_multicast()
            || self.is_link_local_unicast()
            || broadcast)
    }
}

impl fmt::Display for Ip {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A CIDR (`net.IPPrefix`): the address as written and the prefix length.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cidr {
    /// The address as written (not masked).
    pub addr: IpAddr,
    /// The prefix length.
    pub prefix: u8,
}

impl Opaque for Cidr {
    fn runtime_type_name(&self) -> &str {
        CIDR_TYPE
    }
}

impl Cidr {
    /// Parses a CIDR as kube's `cidr()`.
    pub fn parse(s: &str) -> Result<Cidr, String> {
        let err = || {
            format!("network address parse error during conversion from string: netip.ParsePrefix({s:?}): bad prefix")
        };
        let (a, p) = s.split_once('/').ok_or_else(err)?;
        let addr = Ip::parse(a)?.0;
        if p.is_empty()
            || p.len() > 3
            || !p.chars().all(|c| c.is_ascii_digit())
            || (p.len() > 1 && p.starts_with('0'))
        {
            return Err(err());
        }
        let prefix: u8 = p.parse().map_err(|_| err())?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        if prefix > max {
            return Err(err());
        }
        Ok(Cidr { addr, prefix })
    }

    fn mask(addr: IpAddr, prefix: u8) -> IpAddr {
        match addr {
            IpAddr::V4(a) => {
                let m = if prefix == 0 {
                    0
                } else {
                    u32::MAX << (32 - prefix)
                };
                IpAddr::V4((u32::from(a) & m).into())
            }
            IpAddr::V6(a) => {
                let m = if prefix == 0 {
                    0
                } else {
                    u128::MAX << (128 - prefix)
                };
                IpAddr::V6((u128::from(a) & m).into())
            }
        }
    }

    /// The CIDR with the host bits cleared.
    pub fn masked(&self) -> Cidr {
        Cidr {
            addr: Cidr::mask(self.addr, self.prefix),
            prefix: self.prefix,
        }
    }

    /// Whether `ip` is in the range.
    pub fn contains_ip(&self, ip: &Ip) -> bool {
        self.addr.is_ipv4() == ip.0.is_ipv4()
            && Cidr::mask(ip.0, self.prefix) == Cidr::mask(self.addr, self.prefix)
    }

    /// Whether `other` lies within the range.
    pub fn contains_cidr(&self, other: &Cidr) -> bool {
        other.prefix >= self.prefix && self.contains_ip(&Ip(other.addr))
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

/// A named format of kube's `format` library.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Format(&'static str);

impl Opaque for Format {
    fn runtime_type_name(&self) -> &str {
        FORMAT_TYPE
    }
}

/// The names `format.named` knows.
pub const FORMAT_NAMES: [&str; 13] = [
    "dns1123Label",
    "dns1123Subdomain",
    "dns1035Label",
    "qualifiedName",
    "dns1123LabelPrefix",
    "dns1123SubdomainPrefix",
    "dns1035LabelPrefix",
    "labelValue",
    "uri",
    "uuid",
    "byte",
    "date",
    "datetime",
];

impl Format {
    /// The format called `name`.
    pub fn named(name: &str) -> Option<Format> {
        FORMAT_NAMES.iter().find(|n| **n == name).map(|n| Format(n))
    }

    /// The errors of `s` against the format (empty: valid).
    pub fn validate(&self, s: &str) -> Vec<String> {
        use rkcm_labels::validation as v;
        let check = |ok: bool, msg: &str| {
            if ok {
                Vec::new()
            } else {
                vec![msg.to_string()]
            }
        };
        match self.0 {
            "dns1123Label" => v::is_dns1123_label(s),
            "dns1123Subdomain" => v::is_dns1123_subdomain(s),
            "dns1035Label" => v::is_dns1035_label(s),
            "qualifiedName" => v::is_qualified_name(s),
            "dns1123LabelPrefix" => v::name_is_dns_label(s, true),
            "dns1123SubdomainPrefix" => v::name_is_dns_subdomain(s, true),
            "dns1035LabelPrefix" => v::name_is_dns1035_label(s, true),
            "labelValue" => v::is_valid_label_value(s),
            "uri" => check(formats::is_request_uri(s), "invalid URI"),
            "uuid" => check(
                formats::validates("uuid", s),
                "does not match the UUID format",
            ),
            "byte" => check(formats::validates("byte", s), "invalid base64"),
            "date" => check(formats::validates("date", s), "invalid date"),
            _ => check(formats::validates("date-time", s), "invalid datetime"),
        }
    }
}

/// The semver type.
pub const SEMVER_TYPE: &str = "kubernetes.Semver";

/// A semantic version as blang/semver v4 (kube's `semver()`) reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Semver {
    major: u64,
    minor: u64,
    patch: u64,
    pre: Vec<PreRelease>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum PreRelease {
    Num(u64),
    Str(String),
}

impl Opaque for Semver {
    fn runtime_type_name(&self) -> &str {
        SEMVER_TYPE
    }
}

fn only(s: &str, f: impl Fn(char) -> bool) -> bool {
    s.chars().all(f)
}

fn leading_zero(s: &str) -> bool {
    s.len() > 1 && s.starts_with('0')
}

fn version_number(s: &str, what: &str) -> Result<u64, String> {
    if s.is_empty() || !only(s, |c| c.is_ascii_digit()) {
        return Err(format!(
            "Invalid character(s) found in {} number {s:?}",
            what.to_lowercase()
        ));
    }
    if leading_zero(s) {
        return Err(format!(
            "{what} number must not contain leading zeroes {s:?}"
        ));
    }
    s.parse().map_err(|e| format!("{e}"))
}

impl Semver {
    /// `semver.Parse`: `MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD]`, strictly.
    pub fn parse(s: &str) -> Result<Semver, String> {
        if s.is_empty() {
            return Err("Version string empty".to_string());
        }
        let parts: Vec<&str> = s.splitn(3, '.').collect();
        let [major, minor, rest] = parts[..] else {
            return Err("No Major.Minor.Patch elements found".to_string());
        };
        let major = version_number(major, "Major")?;
        let minor = version_number(minor, "Minor")?;
        let mut patch = rest;
        if let Some((p, build)) = patch.split_once('+') {
            for b in build.split('.') {
                if b.is_empty() {
                    return Err("Build meta data is empty".to_string());
                }
                if !only(b, |c| c.is_ascii_alphanumeric() || c == '-') {
                    return Err(format!(
                        "Invalid character(s) found in build meta data {b:?}"
                    ));
                }
            }
            patch = p;
        }
        let mut pre = Vec::new();
        if let Some((p, prerelease)) = patch.split_once('-') {
            for id in prerelease.split('.') {
                if id.is_empty() {
                    return Err("Prerelease is empty".to_string());
                }
                if only(id, |c| c.is_ascii_digit()) {
                    if leading_zero(id) {
                        return Err(format!(
                            "Numeric PreRelease version must not contain leading zeroes {id:?}"
                        ));
                    }
                    pre.push(PreRelease::Num(id.parse().map_err(|e| format!("{e}"))?));
                } else if only(id, |c| c.is_ascii_alphanumeric() || c == '-') {
                    pre.push(PreRelease::Str(id.to_string()));
                } else {
                    return Err(format!("Invalid character(s) found in prerelease {id:?}"));
                }
            }
            patch = p;
        }
        let patch = version_number(patch, "Patch")?;
        Ok(Semver {
            major,
            minor,
            patch,
            pre,
        })
    }

    /// kube's `normalizeAndParse`: no `v` prefix, leading zeros dropped, missing minor and
    /// patch numbers taken as 0.
    pub fn parse_normalized(s: &str) -> Result<Semver, String> {
        let s = s.strip_prefix('v').unwrap_or(s);
        let mut parts: Vec<String> = s
            .splitn(3, '.')
            .map(|p| {
                if p.len() > 1 {
                    let t = p.trim_start_matches('0');
                    if t.is_empty() || !t.starts_with(|c: char| c.is_ascii_digit()) {
                        return format!("0{t}");
                    }
                    return t.to_string();
                }
                p.to_string()
            })
            .collect();
        if parts.len() < 3 {
            if parts.last().is_some_and(|p| p.contains(['+', '-'])) {
                return Err("short version cannot contain PreRelease/Build meta data".to_string());
            }
            parts.resize(3, "0".to_string());
        }
        Semver::parse(&parts.join("."))
    }

    /// The major, minor and patch numbers.
    pub fn numbers(&self) -> (u64, u64, u64) {
        (self.major, self.minor, self.patch)
    }
}

impl Ord for PreRelease {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        match (self, other) {
            (PreRelease::Num(a), PreRelease::Num(b)) => a.cmp(b),
            (PreRelease::Num(_), PreRelease::Str(_)) => std::cmp::Ordering::Less,
            (PreRelease::Str(_), PreRelease::Num(_)) => std::cmp::Ordering::Greater,
            (PreRelease::Str(a), PreRelease::Str(b)) => a.cmp(b),
        }
    }
}

impl PartialOrd for PreRelease {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Semver {
    /// Precedence: numbers, then a version without pre-release above one with, then the
    /// pre-release identifiers in turn (build metadata is ignored).
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.numbers().cmp(&other.numbers()).then_with(|| {
            match (self.pre.is_empty(), other.pre.is_empty()) {
                (true, true) => std::cmp::Ordering::Equal,
                (true, false) => std::cmp::Ordering::Greater,
                (false, true) => std::cmp::Ordering::Less,
                (false, false) => self.pre.cmp(&other.pre),
            }
        })
    }
}

impl PartialOrd for Semver {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
