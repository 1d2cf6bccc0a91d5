//! The ClusterIP range: IPv4 addresses of `--service-cluster-ip-range`.
//!
//! Mirrors `pkg/registry/core/service/ipallocator/bitmap.go` (`Range`): the network and
//! broadcast addresses are never handed out, dynamic allocations prefer the upper part of the
//! range (`calculateRangeOffset`), and the messages are kube's. IPv6 and dual-stack ranges are
//! not supported.

use std::fmt;
use std::net::Ipv4Addr;
use std::str::FromStr;

use super::bitmap::AllocationBitmap;

/// An IPv4 CIDR such as `10.96.0.0/12` (host bits cleared).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ipv4Cidr {
    network: Ipv4Addr,
    prefix: u8,
}

impl Ipv4Cidr {
    /// The network address.
    pub fn network(&self) -> Ipv4Addr {
        self.network
    }

    /// Length of the network part.
    pub fn prefix(&self) -> u8 {
        self.prefix
    }

    /// Number of addresses, network and broadcast included.
    pub fn size(&self) -> u64 {
        1u64 << (32 - u32::from(self.prefix))
    }

    /// Whether `ip` is inside the CIDR.
    pub fn contains(&self, ip: Ipv4Addr) -> bool {
        u64::from(u32::from(ip).wrapping_sub(u32::from(self.network))) < self.size()
            && u32::from(ip) >= u32::from(self.network)
    }

    /// The address `index` places after the network address (`GetIndexedIP`).
    pub fn nth(&self, index: u32) -> Option<Ipv4Addr> {
        (u64::from(index) < self.size()).then(|| Ipv4Addr::from(u32::from(self.network) + index))
    }
}

/// A CIDR that could not be parsed.
#[derive(Debug, thiserror::Error)]
#[error("invalid CIDR address: {0}")]
pub struct InvalidCidr(pub String);

impl FromStr for Ipv4Cidr {
    type Err = InvalidCidr;

    /// Parses `a.b.c.d/n`; host bits are cleared as `ParseCIDRSloppy` does.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || InvalidCidr(s.to_string());
        let (ip, prefix) = s.split_once('/').ok_or_else(bad)?;
        let ip: Ipv4Addr = ip.parse().map_err(|_| bad())?;
        let prefix: u8 = prefix.parse().map_err(|_| bad())?;
        if prefix > 32 {
            return Err(bad());
        }
        let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
        Ok(Self {
            network: Ipv4Addr::from(u32::from(ip) & mask),
            prefix,
        })
    }
}

impl fmt::Display for Ipv4Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.network, self.prefix)
    }
}

/// Why an address could not be allocated; the texts are `ipallocator`'s.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum IpError {
    /// `ErrNotInRange`.
    #[error("provided IP is not in the valid range. The range of valid IPs is {0}")]
    NotInRange(Ipv4Cidr),
    /// `ErrAllocated`.
    #[error("provided IP is already allocated")]
    Allocated,
    /// `ErrFull`.
    #[error("range is full")]
    Full,
    /// `ErrMismatchedNetwork`: no ready ServiceCIDR contains the address.
    #[error("the provided network does not match the current range")]
    MismatchedNetwork,
}

/// Allocated addresses of one CIDR.
#[derive(Clone, Debug)]
pub struct IpRange {
    cidr: Ipv4Cidr,
    /// First usable address (network + 1), as a number.
    base: u32,
    /// Usable addresses.
    max: usize,
    bits: AllocationBitmap,
}

impl IpRange {
    /// An empty range over `cidr`.
    pub fn new(cidr: Ipv4Cidr) -> Self {
        // Neither the network nor the broadcast address is usable.
        let max = cidr.size().saturating_sub(2) as usize;
        Self {
            cidr,
            base: u32::from(cidr.network()).wrapping_add(1),
            max,
            bits: AllocationBitmap::new(max, range_offset(cidr.size())),
        }
    }

    /// The CIDR.
    pub fn cidr(&self) -> Ipv4Cidr {
        self.cidr
    }

    fn offset_of(&self, ip: Ipv4Addr) -> Option<usize> {
        let n = u32::from(ip);
        (self.cidr.contains(ip) && n >= self.base)
            .then(|| (n - self.base) as usize)
            .filter(|&at| at < self.max)
    }

    /// Reserves `ip`.
    pub fn allocate(&mut self, ip: Ipv4Addr) -> Result<(), IpError> {
        let at = self.offset_of(ip).ok_or(IpError::NotInRange(self.cidr))?;
        if self.bits.allocate(at) {
            Ok(())
        } else {
            Err(IpError::Allocated)
        }
    }

    /// Checks that `ip` could be reserved, without reserving it.
    pub fn check(&self, ip: Ipv4Addr) -> Result<(), IpError> {
        let at = self.offset_of(ip).ok_or(IpError::NotInRange(self.cidr))?;
        if self.bits.has(at) {
            Err(IpError::Allocated)
        } else {
            Ok(())
        }
    }

    /// Reserves a free address, from the upper part of the range first.
    pub fn allocate_next(&mut self) -> Result<Ipv4Addr, IpError> {
        let at = self.bits.allocate_next().ok_or(IpError::Full)?;
        Ok(Ipv4Addr::from(self.base + at as u32))
    }

    /// Frees `ip`; freeing a free or foreign address does nothing.
    pub fn release(&mut self, ip: Ipv4Addr) {
        if let Some(at) = self.offset_of(ip) {
            self.bits.release(at);
        }
    }

    /// Whether `ip` is reserved.
    pub fn has(&self, ip: Ipv4Addr) -> bool {
        self.offset_of(ip).is_some_and(|at| self.bits.has(at))
    }

    /// Addresses reserved.
    pub fn used(&self) -> usize {
        self.max - self.bits.free()
    }

    /// Addresses still free.
    pub fn free(&self) -> usize {
        self.bits.free()
    }
}

/// `calculateRangeOffset` of ipallocator: `min(max(16, size/16), 256)`, 0 for tiny ranges.
fn range_offset(size: u64) -> usize {
    const MIN: u64 = 16;
    const MAX: u64 = 256;
    const STEP: u64 = 16;
    if size <= MIN {
        return 0;
    }
    (size / STEP).clamp(MIN, MAX) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cidr(s: &str) -> Ipv4Cidr {
        s.parse().expect("valid CIDR")
    }

    fn ip(s: &str) -> Ipv4Addr {
        s.parse().expect("valid IP")
    }

    #[test]
    fn cidrs_parse_with_host_bits_cleared() {
        assert_eq!(cidr("10.96.0.0/12").to_string(), "10.96.0.0/12");
        assert_eq!(cidr("192.168.1.7/24").to_string(), "192.168.1.0/24");
        for bad in [
            "10.96.0.0",
            "10.96.0.0/33",
            "fd00::/108",
            "10.96.0.0/1x",
            "x/8",
        ] {
            assert!(bad.parse::<Ipv4Cidr>().is_err(), "{bad}");
        }
    }

    #[test]
    fn a_24_hands_out_254_addresses_never_the_network_or_broadcast() {
        // TestAllocate (ipallocator/bitmap_test.go), 192.168.1.0/24.
        let mut r = IpRange::new(cidr("192.168.1.0/24"));
        assert_eq!(r.free(), 254);
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..254 {
            let got = r.allocate_next().expect("not full");
            assert!(got != ip("192.168.1.0") && got != ip("192.168.1.255"));
            assert!(seen.insert(got), "{got} twice");
        }
        assert_eq!(r.allocate_next(), Err(IpError::Full));
        r.release(ip("192.168.1.10"));
        assert_eq!(r.allocate_next(), Ok(ip("192.168.1.10")));
    }

    #[test]
    fn requested_addresses_must_be_in_range_and_free() {
        let mut r = IpRange::new(cidr("10.96.0.0/12"));
        assert_eq!(r.allocate(ip("10.96.0.10")), Ok(()));
        assert_eq!(r.allocate(ip("10.96.0.10")), Err(IpError::Allocated));
        for outside in ["10.96.0.0", "10.111.255.255", "10.112.0.1", "192.168.0.1"] {
            let err = r.allocate(ip(outside)).unwrap_err();
            assert_eq!(
                err.to_string(),
                "provided IP is not in the valid range. The range of valid IPs is 10.96.0.0/12",
                "{outside}"
            );
        }
        assert_eq!(r.allocate(ip("10.111.255.254")), Ok(()));
        assert!(r.has(ip("10.96.0.10")));
        r.release(ip("10.96.0.10"));
        assert!(!r.has(ip("10.96.0.10")));
        assert_eq!(r.check(ip("10.96.0.10")), Ok(()));
    }

    #[test]
    fn dynamic_addresses_avoid_the_lower_band_of_the_range() {
        // TestAllocateReserved: a /25 (126 usable) reserves offset 16 for static requests.
        assert_eq!(range_offset(1 << 20), 256);
        assert_eq!(range_offset(128), 16);
        assert_eq!(range_offset(16), 0);
        let mut r = IpRange::new(cidr("192.168.1.0/25"));
        for _ in 0..(126 - 16) {
            let got = u32::from(r.allocate_next().expect("free"));
            assert!(
                got >= u32::from(ip("192.168.1.17")),
                "{}",
                Ipv4Addr::from(got)
            );
        }
        for n in 1..=16 {
            assert_eq!(r.allocate(ip(&format!("192.168.1.{n}"))), Ok(()));
        }
        assert_eq!(r.allocate_next(), Err(IpError::Full));
    }

    #[test]
    fn tiny_ranges_have_no_usable_addresses() {
        let mut r = IpRange::new(cidr("10.0.0.0/32"));
        assert_eq!(r.allocate_next(), Err(IpError::Full));
        let mut r = IpRange::new(cidr("10.0.0.0/31"));
        assert_eq!(r.allocate_next(), Err(IpError::Full));
        let mut r = IpRange::new(cidr("10.0.0.0/30"));
        assert_eq!(r.allocate(ip("10.0.0.1")), Ok(()));
        assert_eq!(r.allocate(ip("10.0.0.2")), Ok(()));
        assert!(r.allocate(ip("10.0.0.3")).is_err());
    }
}
