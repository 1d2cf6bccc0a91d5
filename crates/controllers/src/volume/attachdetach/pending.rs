//! Attach and detach operations in flight, and the back-off of failed ones
//! (`nestedpendingoperations` with `goroutinemap/exponentialbackoff`): one operation at a time
//! per volume and node, or per volume when it may not be multi-attached.

use std::collections::BTreeMap;
use std::time::Duration;

use jiff::Timestamp;

use super::volume::{NodeName, VolumeName};

/// kube's `initialDurationBeforeRetry`.
pub const INITIAL_DURATION_BEFORE_RETRY: Duration = Duration::from_millis(500);
/// kube's `maxDurationBeforeRetry` (2m2s).
pub const MAX_DURATION_BEFORE_RETRY: Duration = Duration::from_secs(122);

/// The kind of an operation (`AttachOperationName`, `DetachOperationName`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OperationKind {
    /// `volume_attach`.
    Attach,
    /// `volume_detach`.
    Detach,
}

#[derive(Clone, Debug)]
struct Operation {
    kind: OperationKind,
    running: bool,
    /// After a failure: when it may run again, and the back-off that led there.
    retry: Option<(Timestamp, Duration)>,
}

/// The operations of the controller, keyed by volume and node.
#[derive(Clone, Debug, Default)]
pub struct PendingOperations {
    ops: BTreeMap<(VolumeName, NodeName), Operation>,
}

impl PendingOperations {
    /// Whether an operation on `volume` runs on `node`, or on any node when `node` is `None`
    /// (`IsOperationPending`).
    pub fn is_pending(&self, volume: &str, node: Option<&str>) -> bool {
        self.ops
            .iter()
            .any(|((v, n), op)| op.running && v == volume && node.is_none_or(|node| node == n))
    }

    /// Whether a `kind` operation on `volume` (and `node`, or any node) may start now: none runs
    /// and a failed one's back-off has passed (`IsOperationSafeToRetry`).
    pub fn safe_to_retry(
        &self,
        volume: &str,
        node: Option<&str>,
        kind: OperationKind,
        now: Timestamp,
    ) -> bool {
        !self.is_pending(volume, node)
            && !self.ops.iter().any(|((v, n), op)| {
                v == volume
                    && node.is_none_or(|node| node == n)
                    && op.kind == kind
                    && op.retry.is_some_and(|(at, _)| now < at)
            })
    }

    /// Starts a `kind` operation on `volume` and `node`.
    pub fn start(&mut self, volume: &str, node: &str, kind: OperationKind) {
        let op = self
            .ops
            .entry((volume.to_string(), node.to_string()))
            .or_insert(Operation {
                kind,
                running: true,
                retry: None,
            });
        if op.kind != kind {
            op.retry = None;
        }
        op.kind = kind;
        op.running = true;
    }

    /// Ends the operation on `volume` and `node`: forgotten when it succeeded, backed off
    /// (doubling from 500ms to 2m2s) when it failed.
    pub fn finish(&mut self, volume: &str, node: &str, succeeded: bool, now: Timestamp) {
        let key = (volume.to_string(), node.to_string());
        if succeeded {
            self.ops.remove(&key);
            return;
        }
        if let Some(op) = self.ops.get_mut(&key) {
            op.running = false;
            let backoff = match op.retry {
                None => INITIAL_DURATION_BEFORE_RETRY,
                Some((_, last)) => (last * 2).min(MAX_DURATION_BEFORE_RETRY),
            };
            let at = now
                .checked_add(jiff::SignedDuration::try_from(backoff).unwrap_or_default())
                .unwrap_or(now);
            op.retry = Some((at, backoff));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ms: i64) -> Timestamp {
        Timestamp::from_millisecond(1_700_000_000_000 + ms).unwrap()
    }

    // nestedpendingoperations_test.go: one operation per key; an empty node name matches any.
    #[test]
    fn a_running_operation_blocks_its_volume_on_its_node_or_any_node() {
        let mut ops = PendingOperations::default();
        ops.start("v", "n1", OperationKind::Attach);
        assert!(ops.is_pending("v", Some("n1")));
        assert!(!ops.is_pending("v", Some("n2")));
        assert!(ops.is_pending("v", None));
        assert!(!ops.is_pending("w", None));
        ops.finish("v", "n1", true, t(0));
        assert!(!ops.is_pending("v", None));
        assert!(ops.safe_to_retry("v", None, OperationKind::Attach, t(0)));
    }

    // exponentialbackoff: 500ms, doubling, capped at 2m2s; only the failed kind waits.
    #[test]
    fn failures_back_off_exponentially() {
        let mut ops = PendingOperations::default();
        ops.start("v", "n1", OperationKind::Detach);
        ops.finish("v", "n1", false, t(0));
        assert!(!ops.is_pending("v", None));
        assert!(!ops.safe_to_retry("v", Some("n1"), OperationKind::Detach, t(499)));
        assert!(ops.safe_to_retry("v", Some("n1"), OperationKind::Detach, t(500)));
        assert!(ops.safe_to_retry("v", Some("n1"), OperationKind::Attach, t(0)));
        ops.start("v", "n1", OperationKind::Detach);
        ops.finish("v", "n1", false, t(1000));
        assert!(!ops.safe_to_retry("v", None, OperationKind::Detach, t(1999)));
        assert!(ops.safe_to_retry("v", None, OperationKind::Detach, t(2000)));
        for _ in 0..20 {
            ops.start("v", "n1", OperationKind::Detach);
            ops.finish("v", "n1", false, t(0));
        }
        assert!(!ops.safe_to_retry("v", None, OperationKind::Detach, t(121_999)));
        assert!(ops.safe_to_retry("v", None, OperationKind::Detach, t(122_000)));
    }
}
