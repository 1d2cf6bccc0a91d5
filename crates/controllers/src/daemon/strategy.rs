//! The update strategy of a DaemonSet: OnDelete or RollingUpdate, and how many pods a rolling
//! update may surge or take down (`SurgeCount`, `UnavailableCount`, `AllowsSurge` in
//! `daemonset_util.go`).

use k8s_openapi::api::apps::v1::{DaemonSet, RollingUpdateDaemonSet};

use crate::deployment::fenceposts::{scaled_value, InvalidIntOrPercent};

/// The `RollingUpdate` strategy type.
pub const ROLLING_UPDATE: &str = "RollingUpdate";
/// The `OnDelete` strategy type.
pub const ON_DELETE: &str = "OnDelete";

/// The strategy type (`RollingUpdate` when unset, as the API defaults it).
pub fn strategy_type(ds: &DaemonSet) -> &str {
    ds.spec
        .as_ref()
        .and_then(|s| s.update_strategy.as_ref())
        .and_then(|u| u.type_.as_deref())
        .unwrap_or(ROLLING_UPDATE)
}

fn rolling_update(ds: &DaemonSet) -> Option<&RollingUpdateDaemonSet> {
    if strategy_type(ds) != ROLLING_UPDATE {
        return None;
    }
    ds.spec
        .as_ref()?
        .update_strategy
        .as_ref()?
        .rolling_update
        .as_ref()
}

/// How many extra pods a rolling update may start out of `number_to_schedule`: 0 unless
/// `maxSurge` is set, percentages rounded up.
pub fn surge_count(ds: &DaemonSet, number_to_schedule: i32) -> Result<i32, InvalidIntOrPercent> {
    match rolling_update(ds).and_then(|r| r.max_surge.as_ref()) {
        None => Ok(0),
        Some(v) => scaled_value(v, number_to_schedule, true),
    }
}

/// How many pods a rolling update may take down out of `number_to_schedule`, percentages
/// rounded up. An unset `maxUnavailable` counts as 0 (Go's nil `IntOrString`).
pub fn unavailable_count(
    ds: &DaemonSet,
    number_to_schedule: i32,
) -> Result<i32, InvalidIntOrPercent> {
    let Some(r) = rolling_update(ds) else {
        return Ok(0);
    };
    match r.max_unavailable.as_ref() {
        None => Ok(0),
        Some(v) => scaled_value(v, number_to_schedule, true),
    }
}

/// Whether a node may run more than one pod of the set during an update.
pub fn allows_surge(ds: &DaemonSet) -> bool {
    surge_count(ds, 1).is_ok_and(|n| n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::daemon::fixtures::{new_daemon_set, with_rolling_update};
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    /// Ported from daemonset_util_test.go `TestSurgeCount` and `TestUnavailableCount`.
    #[test]
    fn surge_and_unavailability_scale_against_the_nodes_to_schedule() {
        let ds = with_rolling_update(
            new_daemon_set("ds"),
            IntOrString::Int(0),
            IntOrString::String("25%".into()),
        );
        assert_eq!(surge_count(&ds, 5), Ok(2));
        assert_eq!(surge_count(&ds, 1), Ok(1));
        assert_eq!(unavailable_count(&ds, 5), Ok(0));
        assert!(allows_surge(&ds));

        let ds = with_rolling_update(
            new_daemon_set("ds"),
            IntOrString::String("10%".into()),
            IntOrString::Int(0),
        );
        assert_eq!(unavailable_count(&ds, 15), Ok(2));
        assert_eq!(surge_count(&ds, 15), Ok(0));
        assert!(!allows_surge(&ds));

        let mut on_delete = new_daemon_set("ds");
        on_delete
            .spec
            .as_mut()
            .unwrap()
            .update_strategy
            .as_mut()
            .unwrap()
            .type_ = Some(ON_DELETE.into());
        assert_eq!(unavailable_count(&on_delete, 5), Ok(0));
        assert_eq!(surge_count(&on_delete, 5), Ok(0));

        let bad = with_rolling_update(
            new_daemon_set("ds"),
            IntOrString::String("x".into()),
            IntOrString::Int(0),
        );
        assert!(unavailable_count(&bad, 5).is_err());
    }
}
