//! The TTL a node's objects may be cached for, from the cluster's size, with hysteresis between
//! overlapping size ranges (`ttlBoundaries`, `addNode`, `deleteNode`).

/// One size range and its TTL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Boundary {
    /// Below this many nodes, step down.
    pub size_min: i64,
    /// Above this many nodes, step up.
    pub size_max: i64,
    /// The TTL within the range.
    pub ttl_seconds: i64,
}

/// kube's boundaries: the ranges overlap so that a cluster hovering at a limit does not flap.
pub const BOUNDARIES: [Boundary; 5] = [
    Boundary {
        size_min: 0,
        size_max: 100,
        ttl_seconds: 0,
    },
    Boundary {
        size_min: 90,
        size_max: 500,
        ttl_seconds: 15,
    },
    Boundary {
        size_min: 450,
        size_max: 1000,
        ttl_seconds: 30,
    },
    Boundary {
        size_min: 900,
        size_max: 2000,
        ttl_seconds: 60,
    },
    Boundary {
        size_min: 1800,
        size_max: i32::MAX as i64,
        ttl_seconds: 300,
    },
];

/// The node count and the boundary step it is in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClusterSize {
    /// Nodes seen.
    pub node_count: i64,
    /// Index into [`BOUNDARIES`].
    pub step: usize,
}

impl ClusterSize {
    /// One more node (`addNode`).
    pub fn add_node(&mut self) {
        self.node_count += 1;
        if self.step + 1 < BOUNDARIES.len() && self.node_count > BOUNDARIES[self.step].size_max {
            self.step += 1;
        }
    }

    /// One node fewer (`deleteNode`).
    pub fn delete_node(&mut self) {
        self.node_count -= 1;
        if self.step > 0 && self.node_count < BOUNDARIES[self.step].size_min {
            self.step -= 1;
        }
    }

    /// The TTL every node should carry (`getDesiredTTLSeconds`).
    pub fn desired_ttl_seconds(&self) -> i64 {
        BOUNDARIES[self.step].ttl_seconds
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // TestDesiredTTL of ttl_controller_test.go.
    #[test]
    fn desired_ttl_follows_the_boundaries_with_hysteresis() {
        let cases: &[(&str, i64, usize, i64, usize, i64)] = &[
            // (op, start count, start step, want count, want step, want ttl)
            ("add", 0, 0, 1, 0, 0),
            ("add", 99, 0, 100, 0, 0),
            ("add", 100, 0, 101, 1, 15),
            ("delete", 101, 1, 100, 1, 15),
            ("delete", 91, 1, 90, 1, 15),
            ("delete", 90, 1, 89, 0, 0),
            ("add", 1800, 3, 1801, 3, 60),
            ("add", 2000, 3, 2001, 4, 300),
            ("delete", 1800, 4, 1799, 3, 60),
        ];
        for (i, &(op, count, step, want_count, want_step, want_ttl)) in cases.iter().enumerate() {
            let mut size = ClusterSize {
                node_count: count,
                step,
            };
            match op {
                "add" => size.add_node(),
                _ => size.delete_node(),
            }
            assert_eq!(size.node_count, want_count, "case {i}");
            assert_eq!(size.step, want_step, "case {i}");
            assert_eq!(size.desired_ttl_seconds(), want_ttl, "case {i}");
        }
    }
}
