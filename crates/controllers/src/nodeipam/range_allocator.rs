//! The range allocator's bookkeeping: one CIDR set per cluster CIDR (one per IP family), the
//! service range taken out, node CIDRs occupied or handed out
//! (`pkg/controller/nodeipam/ipam/range_allocator.go`).

use k8s_openapi::api::core::v1::Node;

use super::cidr::Cidr;
use super::cidr_set::{CidrSet, CidrSetError};

/// Errors of the range allocator.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AllocatorError {
    /// A cluster CIDR has no free node CIDR left.
    #[error("failed to allocate cidr from cluster cidr at idx:{index}: {source}")]
    Allocate {
        /// Which cluster CIDR.
        index: usize,
        /// Why.
        #[source]
        source: CidrSetError,
    },
    /// The node's CIDRs cannot be parsed or lie outside the cluster CIDRs.
    #[error(
        "failed to mark cidr[{index}] at idx [{index}] as occupied for node: {node}: {reason}"
    )]
    Occupy {
        /// The node.
        node: String,
        /// Which CIDR.
        index: usize,
        /// Why.
        reason: String,
    },
}

/// The node CIDRs of every cluster CIDR.
#[derive(Clone, Debug)]
pub struct RangeAllocator {
    sets: Vec<CidrSet>,
}

/// The node's `spec.podCIDRs` (or `podCIDR` alone).
pub fn node_pod_cidrs(node: &Node) -> Vec<String> {
    let spec = node.spec.as_ref();
    let many = spec
        .and_then(|s| s.pod_cidrs.clone())
        .filter(|v| !v.is_empty());
    many.or_else(|| {
        spec.and_then(|s| s.pod_cidr.clone())
            .filter(|c| !c.is_empty())
            .map(|c| vec![c])
    })
    .unwrap_or_default()
}

impl RangeAllocator {
    /// One set per cluster CIDR with its family's node mask; the service range, where it overlaps
    /// a cluster CIDR, is occupied (`filterOutServiceRange`).
    pub fn new(
        cluster_cidrs: &[Cidr],
        mask_v4: u8,
        mask_v6: u8,
        service_range: Option<Cidr>,
    ) -> Result<Self, CidrSetError> {
        let mut sets = Vec::new();
        for cluster in cluster_cidrs {
            let mask = if cluster.v6 { mask_v6 } else { mask_v4 };
            let mut set = CidrSet::new(*cluster, mask)?;
            if let Some(service) = service_range.filter(|s| s.overlaps(cluster)) {
                set.occupy(&service)?;
            }
            sets.push(set);
        }
        Ok(Self { sets })
    }

    /// The cluster CIDRs.
    pub fn clusters(&self) -> Vec<Cidr> {
        self.sets.iter().map(CidrSet::cluster).collect()
    }

    /// Marks the node's CIDRs used (`occupyCIDRs`).
    pub fn occupy(&mut self, node: &Node) -> Result<(), AllocatorError> {
        let name = node.metadata.name.clone().unwrap_or_default();
        for (index, raw) in node_pod_cidrs(node).iter().enumerate() {
            let fail = |reason: String| AllocatorError::Occupy {
                node: name.clone(),
                index,
                reason,
            };
            let cidr: Cidr = raw.parse().map_err(|e| fail(format!("{e}")))?;
            let Some(set) = self.sets.get_mut(index) else {
                return Err(fail("no cluster CIDR for it".into()));
            };
            set.occupy(&cidr).map_err(|e| fail(e.to_string()))?;
        }
        Ok(())
    }

    /// One node CIDR from each cluster CIDR; on failure nothing stays allocated.
    pub fn allocate(&mut self) -> Result<Vec<Cidr>, AllocatorError> {
        let mut got = Vec::new();
        for index in 0..self.sets.len() {
            match self.sets[index].allocate_next() {
                Ok(c) => got.push(c),
                Err(source) => {
                    self.release_cidrs(&got);
                    return Err(AllocatorError::Allocate { index, source });
                }
            }
        }
        Ok(got)
    }

    /// Frees CIDRs handed out by [`allocate`](Self::allocate).
    pub fn release_cidrs(&mut self, cidrs: &[Cidr]) {
        for (set, cidr) in self.sets.iter_mut().zip(cidrs) {
            let _ = set.release(cidr);
        }
    }

    /// Frees the node's CIDRs (`ReleaseCIDR`); unparsable ones are skipped.
    pub fn release(&mut self, node: &Node) {
        for (set, raw) in self.sets.iter_mut().zip(node_pod_cidrs(node)) {
            if let Ok(cidr) = raw.parse::<Cidr>() {
                let _ = set.release(&cidr);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::NodeSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn cidr(s: &str) -> Cidr {
        s.parse().unwrap()
    }

    fn node(name: &str, cidrs: &[&str]) -> Node {
        Node {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..ObjectMeta::default()
            },
            spec: Some(NodeSpec {
                pod_cidr: cidrs.first().map(|c| c.to_string()),
                pod_cidrs: Some(cidrs.iter().map(|c| c.to_string()).collect()),
                ..NodeSpec::default()
            }),
            ..Node::default()
        }
    }

    // TestAllocateOrOccupyCIDRSuccess: "When there's no ServiceCIDR return first CIDR in range".
    #[test]
    fn the_first_block_comes_first() {
        let mut a = RangeAllocator::new(&[cidr("127.123.234.0/24")], 30, 64, None).unwrap();
        assert_eq!(a.allocate().unwrap()[0].to_string(), "127.123.234.0/30");
    }

    // "Correctly filter out ServiceCIDR".
    #[test]
    fn the_service_range_is_filtered_out() {
        let mut a = RangeAllocator::new(
            &[cidr("127.123.234.0/24")],
            30,
            64,
            Some(cidr("127.123.234.0/26")),
        )
        .unwrap();
        assert_eq!(a.allocate().unwrap()[0].to_string(), "127.123.234.64/30");
    }

    // "Correctly ignore already allocated CIDRs".
    #[test]
    fn occupied_node_cidrs_are_skipped() {
        let mut a = RangeAllocator::new(
            &[cidr("127.123.234.0/24")],
            30,
            64,
            Some(cidr("127.123.234.0/26")),
        )
        .unwrap();
        for c in [
            "127.123.234.64/30",
            "127.123.234.68/30",
            "127.123.234.72/30",
            "127.123.234.80/30",
        ] {
            a.occupy(&node("n", &[c])).unwrap();
        }
        assert_eq!(a.allocate().unwrap()[0].to_string(), "127.123.234.76/30");
    }

    // "Dualstack CIDRs v4,v6".
    #[test]
    fn dual_stack_gives_one_block_per_family() {
        let mut a = RangeAllocator::new(
            &[cidr("127.123.234.0/8"), cidr("ace:cab:deca::/84")],
            24,
            98,
            None,
        )
        .unwrap();
        let got = a.allocate().unwrap();
        assert_eq!(got[0].to_string(), "127.0.0.0/24");
        assert_eq!(got[1].to_string(), "ace:cab:deca::/98");
    }

    // TestAllocateOrOccupyCIDRFailure: "When there's no ServiceCIDR return first CIDR in range"
    // with every block taken.
    #[test]
    fn a_full_range_fails_with_kubes_message() {
        let mut a = RangeAllocator::new(&[cidr("127.123.234.0/28")], 30, 64, None).unwrap();
        for c in [
            "127.123.234.0/30",
            "127.123.234.4/30",
            "127.123.234.8/30",
            "127.123.234.12/30",
        ] {
            a.occupy(&node("n", &[c])).unwrap();
        }
        let err = a.allocate().unwrap_err();
        assert_eq!(
            err.to_string(),
            "failed to allocate cidr from cluster cidr at idx:0: CIDR allocation failed; there are no remaining CIDRs left to allocate in the accepted range"
        );
    }

    // TestReleaseCIDRSuccess: a released block is handed out again.
    #[test]
    fn a_released_block_is_handed_out_again() {
        let mut a = RangeAllocator::new(&[cidr("127.123.234.0/28")], 30, 64, None).unwrap();
        for c in [
            "127.123.234.0/30",
            "127.123.234.4/30",
            "127.123.234.8/30",
            "127.123.234.12/30",
        ] {
            a.occupy(&node("n", &[c])).unwrap();
        }
        a.release(&node("n", &["127.123.234.4/30"]));
        assert_eq!(a.allocate().unwrap()[0].to_string(), "127.123.234.4/30");
    }

    #[test]
    fn a_node_cidr_outside_the_cluster_cidr_is_an_error() {
        let mut a = RangeAllocator::new(&[cidr("10.244.0.0/16")], 24, 64, None).unwrap();
        assert!(a.occupy(&node("n", &["192.168.0.0/24"])).is_err());
        assert!(a.occupy(&node("n", &["bogus"])).is_err());
    }
}
