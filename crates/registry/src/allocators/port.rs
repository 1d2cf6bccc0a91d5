//! The NodePort range: ports of `--service-node-port-range`.
//!
//! Mirrors `pkg/registry/core/service/portallocator/allocator.go` and
//! `k8s.io/apimachinery/pkg/util/net.PortRange`: dynamic allocations prefer the upper part of
//! the range (`calculateRangeOffset`), and the messages are kube's.

use std::fmt;
use std::str::FromStr;

use super::bitmap::AllocationBitmap;

/// An inclusive port range such as `30000-32767`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortRange {
    base: u16,
    size: u32,
}

impl PortRange {
    /// The first port.
    pub fn base(&self) -> u16 {
        self.base
    }

    /// Whether `port` is inside the range.
    pub fn contains(&self, port: i64) -> bool {
        port >= i64::from(self.base) && port < i64::from(self.base) + i64::from(self.size)
    }
}

/// A port range that could not be parsed.
#[derive(Debug, thiserror::Error)]
#[error("unable to parse port range: {0}")]
pub struct InvalidPortRange(pub String);

impl FromStr for PortRange {
    type Err = InvalidPortRange;

    /// Parses `low-high`, `base+offset` or a single port, as `net.ParsePortRange`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || InvalidPortRange(s.to_string());
        let num = |p: &str| p.trim().parse::<u16>().map_err(|_| bad());
        let (base, last) = if let Some((low, high)) = s.split_once('-') {
            (num(low)?, num(high)?)
        } else if let Some((base, extra)) = s.split_once('+') {
            let base = num(base)?;
            (base, base.checked_add(num(extra)?).ok_or_else(bad)?)
        } else {
            let p = num(s)?;
            (p, p)
        };
        if last < base {
            return Err(bad());
        }
        Ok(Self {
            base,
            size: u32::from(last - base) + 1,
        })
    }
}

impl fmt::Display for PortRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let last = u32::from(self.base) + self.size - 1;
        write!(f, "{}-{last}", self.base)
    }
}

/// Why a port could not be allocated; the texts are `portallocator`'s.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PortError {
    /// `ErrNotInRange`.
    #[error("provided port is not in the valid range. The range of valid ports is {0}")]
    NotInRange(PortRange),
    /// `ErrAllocated`.
    #[error("provided port is already allocated")]
    Allocated,
    /// `ErrFull`.
    #[error("range is full")]
    Full,
}

/// Allocated ports of one range.
#[derive(Clone, Debug)]
pub struct PortAllocator {
    range: PortRange,
    bits: AllocationBitmap,
}

impl PortAllocator {
    /// An empty allocator over `range`.
    pub fn new(range: PortRange) -> Self {
        let size = range.size as usize;
        Self {
            range,
            bits: AllocationBitmap::new(size, range_offset(size)),
        }
    }

    /// The range.
    pub fn range(&self) -> PortRange {
        self.range
    }

    fn offset_of(&self, port: i64) -> Option<usize> {
        self.range
            .contains(port)
            .then(|| (port - i64::from(self.range.base)) as usize)
    }

    /// Reserves `port`.
    pub fn allocate(&mut self, port: i64) -> Result<(), PortError> {
        let at = self
            .offset_of(port)
            .ok_or(PortError::NotInRange(self.range))?;
        if self.bits.allocate(at) {
            Ok(())
        } else {
            Err(PortError::Allocated)
        }
    }

    /// Reserves a free port, from the upper part of the range first.
    pub fn allocate_next(&mut self) -> Result<i64, PortError> {
        let at = self.bits.allocate_next().ok_or(PortError::Full)?;
        Ok(i64::from(self.range.base) + at as i64)
    }

    /// Frees `port`; freeing a free or foreign port does nothing.
    pub fn release(&mut self, port: i64) {
        if let Some(at) = self.offset_of(port) {
            self.bits.release(at);
        }
    }

    /// Whether `port` is reserved.
    pub fn has(&self, port: i64) -> bool {
        self.offset_of(port).is_some_and(|at| self.bits.has(at))
    }

    /// Ports still free.
    pub fn free(&self) -> usize {
        self.bits.free()
    }
}

/// `calculateRangeOffset` of portallocator: `min(max(16, size/32), 128)`, 0 for tiny ranges.
/// The `data` of kube's RangeAllocation snapshot of `ports` in `range`
/// (`AllocationBitmap.Snapshot`): a big-endian integer whose bit `i` is the port `base + i`,
/// without leading zero bytes.
pub fn snapshot_data(range: PortRange, ports: impl IntoIterator<Item = i64>) -> Vec<u8> {
    let offsets: Vec<usize> = ports
        .into_iter()
        .filter(|&p| range.contains(p))
        .map(|p| (p - i64::from(range.base)) as usize)
        .collect();
    let Some(&highest) = offsets.iter().max() else {
        return Vec::new();
    };
    let len = highest / 8 + 1;
    let mut data = vec![0u8; len];
    for at in offsets {
        data[len - 1 - at / 8] |= 1 << (at % 8);
    }
    data
}

/// The ports a RangeAllocation snapshot's `data` holds in `range` (`AllocationBitmap.Restore`).
pub fn snapshot_ports(range: PortRange, data: &[u8]) -> Vec<i64> {
    let mut ports = Vec::new();
    for (i, byte) in data.iter().rev().enumerate() {
        for bit in 0..8 {
            if byte & (1 << bit) != 0 {
                let port = i64::from(range.base) + (i * 8 + bit) as i64;
                if range.contains(port) {
                    ports.push(port);
                }
            }
        }
    }
    ports
}

fn range_offset(size: usize) -> usize {
    const MIN: usize = 16;
    const MAX: usize = 128;
    const STEP: usize = 32;
    if size <= MIN {
        return 0;
    }
    (size / STEP).clamp(MIN, MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(s: &str) -> PortRange {
        s.parse().expect("valid range")
    }

    #[test]
    fn snapshots_are_kube_big_endian_bitmaps() {
        let r = range("30000-32767");
        assert!(snapshot_data(r, []).is_empty());
        // Offsets 0 and 9: bits 0 and 9 of the integer 0x0201.
        assert_eq!(snapshot_data(r, [30000, 30009]), vec![0x02, 0x01]);
        let ports = [30000, 30009, 31234, 32767];
        let mut back = snapshot_ports(r, &snapshot_data(r, ports));
        back.sort();
        assert_eq!(back, ports);
        // Ports outside the range are neither written nor read.
        assert!(snapshot_data(r, [29999, 32768]).is_empty());
        assert_eq!(
            snapshot_ports(range("30000-30003"), &[0xff]),
            vec![30000, 30001, 30002, 30003]
        );
    }

    #[test]
    fn ranges_parse_as_net_parse_port_range() {
        assert_eq!(range("30000-32767").to_string(), "30000-32767");
        assert_eq!(range("30000+2767"), range("30000-32767"));
        assert_eq!(range("8080").to_string(), "8080-8080");
        for bad in ["", "a-b", "32767-30000", "30000-70000", "1-"] {
            assert!(bad.parse::<PortRange>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn every_port_is_handed_out_once_then_the_range_is_full() {
        // TestAllocate (portallocator/allocator_test.go): 10000-10200.
        let mut a = PortAllocator::new(range("10000-10200"));
        assert_eq!(a.free(), 201);
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..201 {
            let p = a.allocate_next().expect("not full");
            assert!(range("10000-10200").contains(p));
            assert!(seen.insert(p), "{p} twice");
        }
        assert_eq!(a.allocate_next(), Err(PortError::Full));
        a.release(10111);
        assert_eq!(a.allocate_next(), Ok(10111));
    }

    #[test]
    fn requested_ports_must_be_in_range_and_free() {
        // TestAllocateReserved / TestForEach: the messages clients see.
        let mut a = PortAllocator::new(range("30000-32767"));
        assert_eq!(a.allocate(30080), Ok(()));
        assert_eq!(
            a.allocate(30080).unwrap_err().to_string(),
            "provided port is already allocated"
        );
        assert_eq!(
            a.allocate(8080).unwrap_err().to_string(),
            "provided port is not in the valid range. The range of valid ports is 30000-32767"
        );
        assert!(a.has(30080));
        a.release(30080);
        a.release(30080);
        assert!(!a.has(30080));
        assert_eq!(a.free(), 2768);
    }

    #[test]
    fn dynamic_ports_avoid_the_lower_band() {
        // 2768 ports: offset 86, so the first 2682 dynamic ports are 30086 and above.
        assert_eq!(range_offset(2768), 86);
        assert_eq!(range_offset(16), 0);
        assert_eq!(range_offset(100_000), 128);
        let mut a = PortAllocator::new(range("30000-32767"));
        for _ in 0..(2768 - 86) {
            assert!(a.allocate_next().expect("free") >= 30086);
        }
        assert!(a.allocate_next().expect("lower band") < 30086);
    }
}
