//! IP prefixes of ServiceCIDRs and which ServiceCIDRs contain or overlap an address or a prefix
//! (`pkg/api/servicecidr/servicecidr.go`), for IPv4 and IPv6 alike.

use std::net::IpAddr;
use std::str::FromStr;

/// An IP prefix such as `10.96.0.0/12` or `2001:db8::/64`, host bits cleared (`netip.Prefix`
/// after `Masked`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Prefix {
    /// The network address as a number; IPv4 addresses use the low 32 bits.
    network: u128,
    bits: u8,
    v6: bool,
}

fn width(v6: bool) -> u8 {
    if v6 {
        128
    } else {
        32
    }
}

fn to_number(ip: IpAddr) -> (u128, bool) {
    match ip {
        IpAddr::V4(v4) => (u128::from(u32::from(v4)), false),
        IpAddr::V6(v6) => (u128::from(v6), true),
    }
}

/// Every bit of a `total`-bit address.
fn all_ones(total: u8) -> u128 {
    if total == 128 {
        u128::MAX
    } else {
        (1u128 << total) - 1
    }
}

/// The mask of the top `bits` of a `total`-bit address.
fn mask(bits: u8, total: u8) -> u128 {
    let all = all_ones(total);
    let host = u32::from(total - bits);
    if host >= 128 {
        0
    } else {
        all & !((1u128 << host) - 1)
    }
}

impl Prefix {
    /// Number of leading bits that name the network.
    pub fn bits(&self) -> u8 {
        self.bits
    }

    /// Whether this is an IPv6 prefix.
    pub fn is_ipv6(&self) -> bool {
        self.v6
    }

    /// The last address of the prefix (all host bits set).
    fn last(&self) -> u128 {
        self.network | (!mask(self.bits, width(self.v6)) & all_ones(width(self.v6)))
    }

    /// Whether `ip` lies in the prefix (`netip.Prefix.Contains`).
    pub fn contains(&self, ip: IpAddr) -> bool {
        let (n, v6) = to_number(ip);
        v6 == self.v6 && n & mask(self.bits, width(v6)) == self.network
    }

    /// Whether the two prefixes share an address (`netip.Prefix.Overlaps`).
    pub fn overlaps(&self, other: &Prefix) -> bool {
        self.v6 == other.v6 && self.network <= other.last() && other.network <= self.last()
    }

    /// Whether `other` lies entirely inside this prefix (`Overlaps` and no longer than it, as
    /// `ContainsPrefix` checks).
    pub fn contains_prefix(&self, other: &Prefix) -> bool {
        self.overlaps(other) && self.bits <= other.bits
    }

    /// Whether a ServiceCIDR of this prefix could have allocated `ip` (`PrefixContainsIP`): inside
    /// it, neither its network address nor, for IPv4, its broadcast address.
    pub fn contains_ip(&self, ip: IpAddr) -> bool {
        let (n, v6) = to_number(ip);
        if v6 != self.v6 || n == self.network || (!v6 && n == self.last()) {
            return false;
        }
        self.contains(ip)
    }
}

/// A string that is not a CIDR.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("invalid CIDR address: {0}")]
pub struct InvalidPrefix(pub String);

impl FromStr for Prefix {
    type Err = InvalidPrefix;

    /// Parses `address/bits` (`netip.ParsePrefix`, then `Masked`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || InvalidPrefix(s.to_string());
        let (ip, bits) = s.split_once('/').ok_or_else(bad)?;
        let ip: IpAddr = ip.parse().map_err(|_| bad())?;
        if bits.is_empty() || !bits.bytes().all(|b| b.is_ascii_digit()) || bits.len() > 3 {
            return Err(bad());
        }
        let bits: u8 = bits.parse().map_err(|_| bad())?;
        let (n, v6) = to_number(ip);
        if bits > width(v6) {
            return Err(bad());
        }
        Ok(Self {
            network: n & mask(bits, width(v6)),
            bits,
            v6,
        })
    }
}

/// The parseable prefixes among `cidrs` (a ServiceCIDR's `spec.cidrs`; the server validated them,
/// so nothing is expected to be skipped).
pub fn parse_all<'a>(cidrs: impl IntoIterator<Item = &'a String>) -> Vec<Prefix> {
    cidrs.into_iter().filter_map(|c| c.parse().ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Prefix {
        s.parse().expect("valid prefix")
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("valid address")
    }

    #[test]
    fn prefixes_are_masked_and_bad_ones_refused() {
        assert_eq!(p("10.96.5.7/12"), p("10.96.0.0/12"));
        assert_eq!(p("2001:db2::1/64"), p("2001:db2::/64"));
        for bad in [
            "10.0.0.0",
            "10.0.0.0/33",
            "2001:db2::/129",
            "x/8",
            "10.0.0.0/+8",
            "/8",
        ] {
            assert!(bad.parse::<Prefix>().is_err(), "{bad}");
        }
        assert!(p("0.0.0.0/0").contains(ip("255.255.255.255")));
        assert!(p("::/0").contains(ip("ffff::1")));
    }

    #[test]
    fn the_network_address_and_the_ipv4_broadcast_are_not_contained() {
        // PrefixContainsIP, as TestController_ipToCidrs exercises it.
        let v4 = p("192.168.0.0/24");
        assert!(v4.contains_ip(ip("192.168.0.23")));
        assert!(!v4.contains_ip(ip("192.168.0.0")));
        assert!(!v4.contains_ip(ip("192.168.0.255")));
        assert!(!v4.contains_ip(ip("192.168.1.1")));
        assert!(
            !v4.contains_ip(ip("::ffff:192.168.0.23")),
            "families differ"
        );
        let v6 = p("2001:db2::/64");
        assert!(!v6.contains_ip(ip("2001:db2::")));
        assert!(v6.contains_ip(ip("2001:0db2::ffff:ffff:ffff:ffff")));
        assert!(v6.contains_ip(ip("2001:db2::1")));
        assert!(!p("192.168.0.0/26").contains_ip(ip("192.168.0.63")));
    }

    #[test]
    fn overlap_and_containment_of_prefixes() {
        let a = p("192.168.0.0/24");
        assert!(a.overlaps(&p("192.168.0.0/16")));
        assert!(a.overlaps(&p("192.168.0.0/26")));
        assert!(!a.overlaps(&p("192.168.255.0/26")));
        assert!(!a.overlaps(&p("10.0.0.0/8")));
        assert!(!a.overlaps(&p("2001:db2::/64")));
        assert!(p("192.168.0.0/16").contains_prefix(&a));
        assert!(a.contains_prefix(&a));
        assert!(!p("192.168.0.0/26").contains_prefix(&a));
        assert!(p("2001:db2::/48").contains_prefix(&p("2001:db2::/64")));
        assert!(!p("2001:db2:a:b::/64").overlaps(&p("2001:db2::/64")));
    }
}
