//! Cluster IPs allocated from every ready ServiceCIDR, as kube-apiserver's `MetaAllocator`
//! (`ipallocator/cidrallocator.go`) does with one `Allocator` (`ipallocator.go`) per CIDR.
//!
//! What is held is the set of IPAddress objects (plus the addresses of writes in flight): an
//! address is free only if no IPAddress names it, whichever range it belongs to, so overlapping
//! ServiceCIDRs never hand out one address twice. Each range keeps a bitmap of the held addresses
//! it contains, to pick a free one quickly with kube's preference for the upper part of the range.

use std::collections::BTreeSet;
use std::net::Ipv4Addr;

use serde_json::Value;

use super::ip::{IpError, IpRange, Ipv4Cidr};

/// ServiceCIDR ranges shorter than this are not allocated from: their bitmap would be too large
/// (kube's `--service-cluster-ip-range` refuses IPv4 ranges shorter than /12 for the same reason).
pub const SHORTEST_PREFIX: u8 = 8;

/// The ranges of the ready ServiceCIDRs and the addresses held.
#[derive(Clone, Debug)]
pub struct ClusterIps {
    /// `--service-cluster-ip-range`: the `kubernetes` Service's address comes from it.
    primary: Ipv4Cidr,
    ranges: Vec<IpRange>,
    held: BTreeSet<Ipv4Addr>,
}

impl ClusterIps {
    /// Nothing held; the one range `primary` until [`ClusterIps::set_ranges`] says otherwise.
    pub fn new(primary: Ipv4Cidr) -> Self {
        Self {
            primary,
            ranges: vec![IpRange::new(primary)],
            held: BTreeSet::new(),
        }
    }

    /// `--service-cluster-ip-range`.
    pub fn primary(&self) -> Ipv4Cidr {
        self.primary
    }

    /// The ranges allocated from, in the order given to [`ClusterIps::set_ranges`].
    pub fn ranges(&self) -> Vec<Ipv4Cidr> {
        self.ranges.iter().map(IpRange::cidr).collect()
    }

    /// Allocates from `cidrs` from now on (the ready ServiceCIDRs' IPv4 ranges, as
    /// `syncAllocators` keeps them); a range kept keeps its bitmap, a new one gets the held
    /// addresses it contains.
    pub fn set_ranges(&mut self, cidrs: &[Ipv4Cidr]) {
        if self.ranges() == cidrs {
            return;
        }
        let mut old = std::mem::take(&mut self.ranges);
        for cidr in cidrs {
            if self.ranges.iter().any(|r| r.cidr() == *cidr) {
                continue;
            }
            if let Some(at) = old.iter().position(|r| r.cidr() == *cidr) {
                self.ranges.push(old.swap_remove(at));
                continue;
            }
            if cidr.prefix() < SHORTEST_PREFIX {
                tracing::warn!(%cidr, "ServiceCIDR range too large to allocate from; skipped");
                continue;
            }
            let mut range = IpRange::new(*cidr);
            for ip in &self.held {
                let _ = range.allocate(*ip);
            }
            self.ranges.push(range);
        }
    }

    /// Reserves `ip` (`MetaAllocator.AllocateService`): a ready range must contain it
    /// (`ErrMismatchedNetwork` otherwise) and no IPAddress may name it (`ErrAllocated`).
    pub fn allocate(&mut self, ip: Ipv4Addr) -> Result<(), IpError> {
        if !self
            .ranges
            .iter()
            .any(|r| r.check(ip) != Err(IpError::NotInRange(r.cidr())))
        {
            return Err(IpError::MismatchedNetwork);
        }
        if self.held.contains(&ip) {
            return Err(IpError::Allocated);
        }
        self.hold(ip);
        Ok(())
    }

    /// Reserves a free address of the first range that has one (`AllocateNextService`).
    pub fn allocate_next(&mut self) -> Result<Ipv4Addr, IpError> {
        for i in 0..self.ranges.len() {
            if let Ok(ip) = self.ranges[i].allocate_next() {
                self.hold(ip);
                return Ok(ip);
            }
        }
        Err(IpError::Full)
    }

    /// Marks `ip` held, whether or not a range contains it (an IPAddress object exists).
    pub fn hold(&mut self, ip: Ipv4Addr) {
        self.held.insert(ip);
        for r in &mut self.ranges {
            let _ = r.allocate(ip);
        }
    }

    /// Frees `ip`; freeing a free address does nothing.
    pub fn release(&mut self, ip: Ipv4Addr) {
        self.held.remove(&ip);
        for r in &mut self.ranges {
            r.release(ip);
        }
    }

    /// Whether `ip` is held.
    pub fn has(&self, ip: Ipv4Addr) -> bool {
        self.held.contains(&ip)
    }

    /// Whether a ready range could hand out `ip` (`PrefixContainsIP` of any of them).
    pub fn in_range(&self, ip: Ipv4Addr) -> bool {
        self.ranges
            .iter()
            .any(|r| r.check(ip) != Err(IpError::NotInRange(r.cidr())))
    }

    /// Addresses held.
    pub fn used(&self) -> usize {
        self.held.len()
    }

    /// Forgets every held address.
    pub fn clear(&mut self) {
        let cidrs = self.ranges();
        self.held.clear();
        self.ranges = cidrs.into_iter().map(IpRange::new).collect();
    }
}

/// The IPv4 ranges of the ServiceCIDRs allocators may use (`syncAllocators`): not being deleted
/// and Ready, or without a Ready condition yet (kube assumes those ready, for clusters without a
/// controller manager). Ranges come in the order of `service_cidrs`, each once.
pub fn ready_ranges<'a>(service_cidrs: impl IntoIterator<Item = &'a Value>) -> Vec<Ipv4Cidr> {
    let mut out = Vec::new();
    for cidr in service_cidrs {
        if cidr
            .pointer("/metadata/deletionTimestamp")
            .is_some_and(|t| !t.is_null())
        {
            continue;
        }
        let ready = cidr
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .and_then(|cs| cs.iter().find(|c| c["type"] == "Ready"))
            .is_none_or(|c| c["status"] == "True");
        if !ready {
            continue;
        }
        let ranges = cidr.pointer("/spec/cidrs").and_then(Value::as_array);
        for r in ranges.into_iter().flatten().filter_map(Value::as_str) {
            // IPv6 ranges are not allocated from: Services are IPv4 single-stack.
            if let Ok(parsed) = r.parse::<Ipv4Cidr>() {
                if !out.contains(&parsed) {
                    out.push(parsed);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cidr(s: &str) -> Ipv4Cidr {
        s.parse().expect("valid CIDR")
    }

    fn ip(s: &str) -> Ipv4Addr {
        s.parse().expect("valid IP")
    }

    /// An allocator with no range yet, as `newTestMetaAllocator` starts.
    fn empty() -> ClusterIps {
        let mut a = ClusterIps::new(cidr("10.96.0.0/12"));
        a.set_ranges(&[]);
        assert_eq!(a.allocate_next(), Err(IpError::Full));
        a
    }

    /// `for r.Free() > 0 { AllocateNext }`: every address handed out once.
    fn drain(a: &mut ClusterIps, found: &mut BTreeSet<Ipv4Addr>) -> usize {
        let mut count = 0;
        while let Ok(ip) = a.allocate_next() {
            assert!(found.insert(ip), "allocated {ip} twice");
            count += 1;
        }
        count
    }

    #[test]
    fn cidr_allocate_multiple() {
        // TestCIDRAllocateMultiple (cidrallocator_test.go).
        let mut a = empty();
        a.set_ranges(&[cidr("192.168.0.0/28")]);
        let mut found = BTreeSet::new();
        assert_eq!(drain(&mut a, &mut found), 14);
        a.set_ranges(&[cidr("192.168.0.0/28"), cidr("10.0.0.0/28")]);
        assert_eq!(a.allocate(ip("10.0.0.11")), Ok(()));
        found.insert(ip("10.0.0.11"));
        assert_eq!(1 + 14 + drain(&mut a, &mut found), 28);
        assert_eq!(a.allocate_next(), Err(IpError::Full));
    }

    #[test]
    fn cidr_allocate_shadow() {
        // TestCIDRAllocateShadow: the network address of a /24 is an ordinary one of a /16.
        let mut a = empty();
        a.set_ranges(&[cidr("192.168.1.0/24")]);
        assert!(a.allocate(ip("192.168.1.0")).is_err());
        assert_eq!(a.used(), 0);
        a.set_ranges(&[cidr("192.168.1.0/24"), cidr("192.168.0.0/16")]);
        assert_eq!(a.allocate(ip("192.168.1.0")), Ok(()));
        assert_eq!(a.used(), 1);
    }

    #[test]
    fn cidr_allocate_grow() {
        // TestCIDRAllocateGrow: a /24 over a full /28 hands out the rest of the /24.
        let mut a = empty();
        a.set_ranges(&[cidr("192.168.0.0/28")]);
        let mut found = BTreeSet::new();
        assert_eq!(drain(&mut a, &mut found), 14);
        a.set_ranges(&[cidr("192.168.0.0/28"), cidr("192.168.0.0/24")]);
        assert_eq!(14 + drain(&mut a, &mut found), 254);
        assert_eq!(a.allocate_next(), Err(IpError::Full));
    }

    #[test]
    fn cidr_allocate_shrink() {
        // TestCIDRAllocateShrink: a /24 emptied and replaced by a /28.
        let mut a = empty();
        a.set_ranges(&[cidr("192.168.0.0/24")]);
        let mut found = BTreeSet::new();
        assert_eq!(drain(&mut a, &mut found), 254);
        for ip in &found {
            a.release(*ip);
        }
        assert_eq!(a.used(), 0);
        a.set_ranges(&[cidr("192.168.0.0/28")]);
        assert_eq!(
            a.allocate(ip("192.168.0.253")),
            Err(IpError::MismatchedNetwork)
        );
        assert_eq!(drain(&mut a, &mut BTreeSet::new()), 14);
    }

    #[test]
    fn requested_addresses_are_held_once_and_a_range_no_longer_ready_takes_none() {
        let mut a = empty();
        a.set_ranges(&[cidr("192.168.0.0/28"), cidr("10.0.0.0/24")]);
        assert_eq!(a.allocate(ip("10.0.0.5")), Ok(()));
        assert_eq!(a.allocate(ip("10.0.0.5")), Err(IpError::Allocated));
        for outside in ["192.168.0.0", "192.168.0.15", "10.0.0.255", "172.16.0.1"] {
            assert_eq!(
                a.allocate(ip(outside)).map_err(|e| e.to_string()),
                Err("the provided network does not match the current range".into()),
                "{outside}"
            );
        }
        a.set_ranges(&[cidr("192.168.0.0/28")]);
        assert_eq!(a.allocate(ip("10.0.0.6")), Err(IpError::MismatchedNetwork));
        assert!(a.has(ip("10.0.0.5")), "what it held stays held");
        a.release(ip("10.0.0.5"));
        assert!(!a.has(ip("10.0.0.5")));
    }

    #[test]
    fn held_addresses_outside_every_range_count_when_a_range_appears() {
        let mut a = ClusterIps::new(cidr("10.96.0.0/12"));
        a.hold(ip("10.200.0.1"));
        a.set_ranges(&[cidr("10.96.0.0/12"), cidr("10.200.0.0/30")]);
        assert_eq!(a.allocate(ip("10.200.0.1")), Err(IpError::Allocated));
        assert_eq!(a.allocate(ip("10.200.0.2")), Ok(()));
        a.set_ranges(&[cidr("10.0.0.0/7")]);
        assert!(a.ranges().is_empty(), "too large to allocate from");
    }

    #[test]
    fn ready_ranges_skip_deleted_and_not_ready_service_cidrs() {
        let cidrs = [
            json!({"metadata": {"name": "kubernetes"}, "spec": {"cidrs": ["10.96.0.0/12", "fd00::/108"]},
                   "status": {"conditions": [{"type": "Ready", "status": "True"}]}}),
            json!({"metadata": {"name": "new"}, "spec": {"cidrs": ["10.200.0.0/24"]}}),
            json!({"metadata": {"name": "same"}, "spec": {"cidrs": ["10.96.0.0/12"]}}),
            json!({"metadata": {"name": "gone", "deletionTimestamp": "2024-01-01T00:00:00Z"},
                   "spec": {"cidrs": ["10.201.0.0/24"]}}),
            json!({"metadata": {"name": "held"}, "spec": {"cidrs": ["10.202.0.0/24"]},
                   "status": {"conditions": [{"type": "Ready", "status": "False", "reason": "Terminating"}]}}),
        ];
        assert_eq!(
            ready_ranges(cidrs.iter()),
            vec![cidr("10.96.0.0/12"), cidr("10.200.0.0/24")]
        );
    }
}
