//! IPv4 and IPv6 CIDRs as numbers: parsing (`net.ParseCIDR`), containment and formatting.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

/// A CIDR block, its address held as a `u128` (IPv4 in the low 32 bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Cidr {
    /// The first address of the block (host bits cleared).
    pub base: u128,
    /// The prefix length.
    pub prefix: u8,
    /// Whether this is an IPv6 block.
    pub v6: bool,
}

/// A string that is not a CIDR.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("invalid CIDR address: {0}")]
pub struct ParseCidrError(pub String);

impl Cidr {
    /// Bits in an address of this family.
    pub fn bits(&self) -> u8 {
        if self.v6 {
            128
        } else {
            32
        }
    }

    /// The last address of the block.
    pub fn last(&self) -> u128 {
        self.base | host_mask(self.bits(), self.prefix)
    }

    /// Whether the two blocks share an address.
    pub fn overlaps(&self, other: &Cidr) -> bool {
        self.v6 == other.v6 && self.base <= other.last() && other.base <= self.last()
    }

    /// Whether `ip` lies in the block.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let (value, v6) = ip_value(ip);
        v6 == self.v6 && self.base <= value && value <= self.last()
    }
}

/// The value and family of an address.
pub fn ip_value(ip: IpAddr) -> (u128, bool) {
    match ip {
        IpAddr::V4(v4) => (u128::from(u32::from(v4)), false),
        IpAddr::V6(v6) => (u128::from(v6), true),
    }
}

/// The host bits of a `prefix` in a `bits`-bit address.
pub fn host_mask(bits: u8, prefix: u8) -> u128 {
    let host = u32::from(bits.saturating_sub(prefix));
    if host >= 128 {
        u128::MAX
    } else {
        (1u128 << host) - 1
    }
}

impl FromStr for Cidr {
    type Err = ParseCidrError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || ParseCidrError(s.to_string());
        let (addr, prefix) = s.trim().split_once('/').ok_or_else(err)?;
        let ip: IpAddr = addr.parse().map_err(|_| err())?;
        let prefix: u8 = prefix.parse().map_err(|_| err())?;
        let (value, v6) = ip_value(ip);
        let bits = if v6 { 128 } else { 32 };
        if prefix > bits {
            return Err(err());
        }
        Ok(Cidr {
            base: value & !host_mask(bits, prefix),
            prefix,
            v6,
        })
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.v6 {
            write!(f, "{}/{}", Ipv6Addr::from(self.base), self.prefix)
        } else {
            let v4 = u32::try_from(self.base).unwrap_or(0);
            write!(f, "{}/{}", Ipv4Addr::from(v4), self.prefix)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_clears_host_bits_and_prints_back() {
        let c: Cidr = "10.244.3.7/16".parse().unwrap();
        assert_eq!(c.to_string(), "10.244.0.0/16");
        let c: Cidr = "2001:db8::1/64".parse().unwrap();
        assert_eq!(c.to_string(), "2001:db8::/64");
        assert!("10.0.0.0/33".parse::<Cidr>().is_err());
        assert!("10.0.0.0".parse::<Cidr>().is_err());
    }

    #[test]
    fn overlap_and_containment() {
        let a: Cidr = "10.96.0.0/12".parse().unwrap();
        let b: Cidr = "10.100.0.0/16".parse().unwrap();
        let c: Cidr = "10.244.0.0/16".parse().unwrap();
        assert!(a.overlaps(&b));
        assert!(!a.overlaps(&c));
        assert!(c.contains("10.244.1.5".parse().unwrap()));
        assert!(!c.contains("10.245.0.1".parse().unwrap()));
    }
}
