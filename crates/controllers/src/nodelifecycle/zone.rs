//! Zones and their disruption states: which zone a node is in, how many of a zone's nodes are
//! not ready, and the NoExecute tainting rate each state allows (`ComputeZoneState`,
//! `HealthyQPSFunc`, `ReducedQPSFunc`, `nodetopology.GetZoneKey`).

use k8s_openapi::api::core::v1::{Node, NodeCondition};

/// The disruption state of a zone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZoneState {
    /// Just seen; not evaluated yet.
    Initial,
    /// Enough nodes are ready: taint at `--node-eviction-rate`.
    Normal,
    /// At least `--unhealthy-zone-threshold` of more than two nodes are not ready.
    PartialDisruption,
    /// No node of the zone is ready.
    FullDisruption,
}

impl ZoneState {
    /// The state's name as kube logs and exports it.
    pub fn as_str(self) -> &'static str {
        match self {
            ZoneState::Initial => "Initial",
            ZoneState::Normal => "Normal",
            ZoneState::PartialDisruption => "PartialDisruption",
            ZoneState::FullDisruption => "FullDisruption",
        }
    }
}

/// The zone key of a node: `<region>:\0:<zone>` from the `topology.kubernetes.io` labels (or
/// their deprecated `failure-domain.beta.kubernetes.io` forms), `""` when it has neither.
pub fn zone_key(node: &Node) -> String {
    let labels = node.metadata.labels.as_ref();
    let label = |ga: &str, beta: &str| -> String {
        labels
            .and_then(|l| l.get(ga).or_else(|| l.get(beta)))
            .cloned()
            .unwrap_or_default()
    };
    let region = label(
        "topology.kubernetes.io/region",
        "failure-domain.beta.kubernetes.io/region",
    );
    let zone = label(
        "topology.kubernetes.io/zone",
        "failure-domain.beta.kubernetes.io/zone",
    );
    if region.is_empty() && zone.is_empty() {
        return String::new();
    }
    format!("{region}:\x00:{zone}")
}

/// How many of a zone's nodes are not ready, and the zone's state. A missing Ready condition
/// counts as not ready.
pub fn compute_zone_state(
    ready_conditions: &[Option<&NodeCondition>],
    unhealthy_zone_threshold: f32,
) -> (usize, ZoneState) {
    let ready = ready_conditions
        .iter()
        .filter(|c| c.is_some_and(|c| c.status == "True"))
        .count();
    let not_ready = ready_conditions.len() - ready;
    let state = if ready == 0 && not_ready > 0 {
        ZoneState::FullDisruption
    } else if not_ready > 2
        && not_ready as f32 / (not_ready + ready) as f32 >= unhealthy_zone_threshold
    {
        ZoneState::PartialDisruption
    } else {
        ZoneState::Normal
    };
    (not_ready, state)
}

/// Eviction rates of a zone, from the flags.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rates {
    /// `--node-eviction-rate`.
    pub eviction: f32,
    /// `--secondary-node-eviction-rate`.
    pub secondary: f32,
    /// `--large-cluster-size-threshold`.
    pub large_cluster_threshold: i32,
}

impl Rates {
    /// The tainting rate for a zone of `size` nodes in `state` (`setLimiterInZone`): the normal
    /// rate when Normal or fully disrupted (`HealthyQPSFunc`), the secondary rate for a partially
    /// disrupted large zone and 0 for a small one (`ReducedQPSFunc`).
    pub fn qps(&self, state: ZoneState, size: usize) -> f32 {
        match state {
            ZoneState::PartialDisruption => {
                if i64::try_from(size).unwrap_or(i64::MAX) > i64::from(self.large_cluster_threshold)
                {
                    self.secondary
                } else {
                    0.0
                }
            }
            ZoneState::Initial | ZoneState::Normal | ZoneState::FullDisruption => self.eviction,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn cond(status: &str) -> NodeCondition {
        NodeCondition {
            type_: "Ready".into(),
            status: status.into(),
            ..NodeCondition::default()
        }
    }

    // The zone cases of TestMonitorNodeHealthEvictPods / TestComputeZoneState.
    #[test]
    fn zone_state_follows_the_share_of_not_ready_nodes() {
        let t = cond("True");
        let f = cond("False");
        let u = cond("Unknown");
        let cases: Vec<(Vec<Option<&NodeCondition>>, usize, ZoneState)> = vec![
            (vec![Some(&t), Some(&t)], 0, ZoneState::Normal),
            (vec![Some(&t), Some(&u)], 1, ZoneState::Normal),
            (vec![Some(&u), Some(&f)], 2, ZoneState::FullDisruption),
            (vec![None], 1, ZoneState::FullDisruption),
            // Two not-ready nodes never make a partial disruption, whatever the ratio.
            (vec![Some(&t), Some(&u), Some(&u)], 2, ZoneState::Normal),
            (
                vec![Some(&t), Some(&u), Some(&u), Some(&f)],
                3,
                ZoneState::PartialDisruption,
            ),
            (
                vec![Some(&t), Some(&t), Some(&t), Some(&u), Some(&u), Some(&u)],
                3,
                ZoneState::Normal,
            ),
            (vec![], 0, ZoneState::Normal),
        ];
        for (i, (conditions, not_ready, state)) in cases.into_iter().enumerate() {
            assert_eq!(
                compute_zone_state(&conditions, 0.55),
                (not_ready, state),
                "case {i}"
            );
        }
    }

    #[test]
    fn small_partially_disrupted_zones_stop_tainting_and_large_ones_slow_down() {
        let rates = Rates {
            eviction: 0.1,
            secondary: 0.01,
            large_cluster_threshold: 50,
        };
        assert_eq!(rates.qps(ZoneState::Normal, 10), 0.1);
        assert_eq!(rates.qps(ZoneState::FullDisruption, 10), 0.1);
        assert_eq!(rates.qps(ZoneState::PartialDisruption, 50), 0.0);
        assert_eq!(rates.qps(ZoneState::PartialDisruption, 51), 0.01);
    }

    #[test]
    fn the_zone_key_joins_region_and_zone() {
        let mut node = Node {
            metadata: ObjectMeta::default(),
            ..Node::default()
        };
        assert_eq!(zone_key(&node), "");
        node.metadata.labels = Some(
            [
                (
                    "topology.kubernetes.io/region".to_string(),
                    "r1".to_string(),
                ),
                (
                    "failure-domain.beta.kubernetes.io/zone".to_string(),
                    "z1".to_string(),
                ),
            ]
            .into(),
        );
        assert_eq!(zone_key(&node), "r1:\x00:z1");
    }
}
