//! The node CIDRs of one cluster CIDR: a bitmap of `/nodeMask` blocks handed out round robin
//! (`pkg/controller/nodeipam/ipam/cidrset/cidr_set.go`).

use super::cidr::{host_mask, Cidr};

/// Errors of a CIDR set, with kube's messages.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CidrSetError {
    /// Every node CIDR is in use (`ErrCIDRRangeNoCIDRsRemaining`).
    #[error("CIDR allocation failed; there are no remaining CIDRs left to allocate in the accepted range")]
    NoCidrsRemaining,
    /// The node mask leaves too many node CIDRs (`ErrCIDRSetSubNetTooBig`).
    #[error("New CIDR set failed; the node CIDR size is too big")]
    SubNetTooBig,
    /// The node mask is shorter than the cluster's.
    #[error("invalid node CIDR mask size {node_mask}: must be at least the cluster CIDR's {cluster_mask}")]
    MaskTooSmall {
        /// The node mask.
        node_mask: u8,
        /// The cluster mask.
        cluster_mask: u8,
    },
    /// A CIDR outside the cluster CIDR.
    #[error("cidr {cidr} is out the range of cluster cidr {cluster}")]
    OutOfRange {
        /// The CIDR.
        cidr: String,
        /// The cluster CIDR.
        cluster: String,
    },
}

/// Longest run of node-mask bits beyond the cluster mask (`clusterSubnetMaxDiff`).
pub const CLUSTER_SUBNET_MAX_DIFF: u8 = 16;

/// The node CIDRs of one cluster CIDR.
#[derive(Clone, Debug)]
pub struct CidrSet {
    cluster: Cidr,
    node_mask: u8,
    max: usize,
    used: Vec<bool>,
    allocated: usize,
    next_candidate: usize,
}

impl CidrSet {
    /// A set of `/node_mask` blocks of `cluster` (`NewCIDRSet`).
    pub fn new(cluster: Cidr, node_mask: u8) -> Result<Self, CidrSetError> {
        if node_mask < cluster.prefix || node_mask > cluster.bits() {
            return Err(CidrSetError::MaskTooSmall {
                node_mask,
                cluster_mask: cluster.prefix,
            });
        }
        let diff = node_mask - cluster.prefix;
        if diff > CLUSTER_SUBNET_MAX_DIFF {
            return Err(CidrSetError::SubNetTooBig);
        }
        let max = 1usize << diff;
        Ok(Self {
            cluster,
            node_mask,
            max,
            used: vec![false; max],
            allocated: 0,
            next_candidate: 0,
        })
    }

    /// The cluster CIDR.
    pub fn cluster(&self) -> Cidr {
        self.cluster
    }

    /// Node CIDRs in use.
    pub fn allocated(&self) -> usize {
        self.allocated
    }

    fn shift(&self) -> u32 {
        u32::from(self.cluster.bits() - self.node_mask)
    }

    /// The node CIDR number `index` (`indexToCIDRBlock`).
    pub fn index_to_cidr(&self, index: usize) -> Cidr {
        let offset = (index as u128).checked_shl(self.shift()).unwrap_or(0);
        Cidr {
            base: self.cluster.base + offset,
            prefix: self.node_mask,
            v6: self.cluster.v6,
        }
    }

    /// The next free node CIDR after the last one handed out (`AllocateNext`).
    pub fn allocate_next(&mut self) -> Result<Cidr, CidrSetError> {
        if self.allocated == self.max {
            return Err(CidrSetError::NoCidrsRemaining);
        }
        for i in 0..self.max {
            let candidate = (self.next_candidate + i) % self.max;
            if !self.used[candidate] {
                self.used[candidate] = true;
                self.allocated += 1;
                self.next_candidate = (candidate + 1) % self.max;
                return Ok(self.index_to_cidr(candidate));
            }
        }
        Err(CidrSetError::NoCidrsRemaining)
    }

    /// The indices of the node CIDRs `cidr` covers, clipped to the cluster CIDR
    /// (`getBeginningAndEndIndices`).
    fn indices(&self, cidr: &Cidr) -> Result<(usize, usize), CidrSetError> {
        if !self.cluster.overlaps(cidr) {
            return Err(CidrSetError::OutOfRange {
                cidr: cidr.to_string(),
                cluster: self.cluster.to_string(),
            });
        }
        let first = cidr.base.max(self.cluster.base);
        let last = cidr.last().min(self.cluster.last());
        let shift = self.shift();
        let begin = (first - self.cluster.base).checked_shr(shift).unwrap_or(0);
        let end = (last - self.cluster.base).checked_shr(shift).unwrap_or(0);
        let clamp = |v: u128| usize::try_from(v).unwrap_or(usize::MAX).min(self.max - 1);
        Ok((clamp(begin), clamp(end)))
    }

    /// Marks every node CIDR `cidr` covers as used (`Occupy`).
    pub fn occupy(&mut self, cidr: &Cidr) -> Result<(), CidrSetError> {
        let (begin, end) = self.indices(cidr)?;
        for i in begin..=end {
            if !self.used[i] {
                self.used[i] = true;
                self.allocated += 1;
            }
        }
        Ok(())
    }

    /// Frees every node CIDR `cidr` covers (`Release`).
    pub fn release(&mut self, cidr: &Cidr) -> Result<(), CidrSetError> {
        let (begin, end) = self.indices(cidr)?;
        for i in begin..=end {
            if self.used[i] {
                self.used[i] = false;
                self.allocated -= 1;
            }
        }
        Ok(())
    }

    /// Whether the node CIDR containing `cidr`'s first address is used.
    pub fn is_used(&self, cidr: &Cidr) -> bool {
        self.indices(cidr).is_ok_and(|(b, _)| self.used[b])
    }
}

/// The host-bit mask of a node CIDR (for tests and callers checking alignment).
pub fn node_host_mask(cidr: &Cidr) -> u128 {
    host_mask(cidr.bits(), cidr.prefix)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cidr(s: &str) -> Cidr {
        s.parse().unwrap()
    }

    // TestCIDRSetFullyAllocated.
    #[test]
    fn a_fully_allocated_set_refuses_until_a_release() {
        let mut set = CidrSet::new(cidr("127.123.234.0/30"), 30).unwrap();
        let p = set.allocate_next().unwrap();
        assert_eq!(p.to_string(), "127.123.234.0/30");
        assert_eq!(set.allocate_next(), Err(CidrSetError::NoCidrsRemaining));
        set.release(&p).unwrap();
        assert_eq!(set.allocate_next().unwrap().to_string(), "127.123.234.0/30");
    }

    // TestIndexToCIDRBlock.
    #[test]
    fn index_to_cidr_block() {
        let set = CidrSet::new(cidr("127.123.3.0/16"), 24).unwrap();
        assert_eq!(set.index_to_cidr(0).to_string(), "127.123.0.0/24");
        assert_eq!(set.index_to_cidr(15).to_string(), "127.123.15.0/24");
        let set = CidrSet::new(cidr("2001:0db8:1234:3::/48"), 64).unwrap();
        assert_eq!(set.index_to_cidr(0).to_string(), "2001:db8:1234::/64");
        assert_eq!(set.index_to_cidr(15).to_string(), "2001:db8:1234:f::/64");
    }

    // TestCIDRSet_RandomishAllocation: every block once, then full, then all again after release.
    #[test]
    fn allocates_every_block_once_then_again_after_release() {
        let mut set = CidrSet::new(cidr("127.123.234.0/16"), 24).unwrap();
        let mut got = Vec::new();
        for _ in 0..256 {
            got.push(set.allocate_next().unwrap());
        }
        assert_eq!(set.allocate_next(), Err(CidrSetError::NoCidrsRemaining));
        for c in &got {
            set.release(c).unwrap();
        }
        for c in &got {
            assert_eq!(set.allocate_next().unwrap(), *c);
        }
    }

    // TestCIDRSet_AllocationOccupied: occupied blocks are skipped.
    #[test]
    fn occupied_blocks_are_skipped() {
        let mut set = CidrSet::new(cidr("127.123.234.0/16"), 24).unwrap();
        set.occupy(&cidr("127.123.0.0/22")).unwrap();
        assert_eq!(set.allocated(), 4);
        assert_eq!(set.allocate_next().unwrap().to_string(), "127.123.4.0/24");
        // A range wider than the cluster CIDR occupies all of it.
        let mut small = CidrSet::new(cidr("10.0.0.0/23"), 24).unwrap();
        small.occupy(&cidr("10.0.0.0/8")).unwrap();
        assert_eq!(small.allocate_next(), Err(CidrSetError::NoCidrsRemaining));
    }

    // TestCIDRSetSubNetTooBig and mask checks.
    #[test]
    fn too_many_node_cidrs_or_a_short_mask_are_refused() {
        assert_eq!(
            CidrSet::new(cidr("10.0.0.0/8"), 25).unwrap_err(),
            CidrSetError::SubNetTooBig
        );
        assert!(CidrSet::new(cidr("10.0.0.0/16"), 8).is_err());
        assert!(CidrSet::new(cidr("10.0.0.0/8"), 24).is_ok());
    }

    #[test]
    fn out_of_range_cidrs_are_refused() {
        let mut set = CidrSet::new(cidr("10.244.0.0/16"), 24).unwrap();
        assert!(matches!(
            set.occupy(&cidr("10.96.0.0/16")),
            Err(CidrSetError::OutOfRange { .. })
        ));
        assert_eq!(node_host_mask(&cidr("10.0.0.0/24")), 255);
    }
}
