//! The PodDisruptionBudget math: expected and desired healthy pods from `minAvailable` or
//! `maxUnavailable`, healthy pods, the `disruptedPods` map and the status to write
//! (`getExpectedPodCount`, `countHealthyPods`, `buildDisruptedPodMap`, `updatePdbStatus`,
//! `failSafe` of `pkg/controller/disruption/disruption.go`).

use std::collections::BTreeMap;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::{
    PodDisruptionBudget, PodDisruptionBudgetSpec, PodDisruptionBudgetStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use rkcm_apimachinery::poddisruptionbudget::{
    conditions_are_up_to_date, disruption_allowed_condition, set_status_condition,
    update_disruption_allowed_condition, SYNC_FAILED_REASON,
};

/// How long after an eviction recorded a pod in `disruptedPods` the pod is expected to be
/// terminating; past it the entry is dropped (`DeletionTimeout`).
pub const DELETION_TIMEOUT: Duration = Duration::from_secs(120);

/// An int-or-percent the budget cannot scale (apimachinery `GetScaledValueFromIntOrPercent`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidIntOrPercent {
    /// A string that does not end in `%`.
    #[error("invalid value for IntOrString: invalid type: string is not a percentage")]
    NotAPercentage,
    /// A percentage whose number does not parse.
    #[error("invalid value for IntOrString: invalid value {0:?}: strconv.Atoi: parsing {1:?}: invalid syntax")]
    BadNumber(String, String),
}

/// Scales `value` against `total`: integers as they are, percentages as `value% × total`,
/// rounded up when `round_up` (`intstr.GetScaledValueFromIntOrPercent`).
pub fn scaled_value(
    value: &IntOrString,
    total: i32,
    round_up: bool,
) -> Result<i32, InvalidIntOrPercent> {
    match value {
        IntOrString::Int(i) => Ok(*i),
        IntOrString::String(s) => {
            let number = s
                .strip_suffix('%')
                .ok_or(InvalidIntOrPercent::NotAPercentage)?;
            let pct: i64 = number
                .parse()
                .map_err(|_| InvalidIntOrPercent::BadNumber(s.clone(), number.to_string()))?;
            let scaled = pct as f64 * f64::from(total) / 100.0;
            let rounded = if round_up {
                scaled.ceil()
            } else {
                scaled.floor()
            };
            Ok(rounded as i32)
        }
    }
}

/// Whether the budget needs the scale of the pods' controllers: `maxUnavailable` is set, or
/// `minAvailable` is a percentage. An integer `minAvailable` counts the pods themselves.
pub fn needs_controller_scale(spec: &PodDisruptionBudgetSpec) -> bool {
    spec.max_unavailable.is_some() || matches!(spec.min_available, Some(IntOrString::String(_)))
}

/// `(expectedCount, desiredHealthy)` of a budget (`getExpectedPodCount`): `pods` is how many pods
/// its selector matches; `controller_scale` the sum of their controllers' scales, given when
/// [`needs_controller_scale`].
pub fn expected_and_desired(
    spec: &PodDisruptionBudgetSpec,
    pods: usize,
    controller_scale: Option<i32>,
) -> Result<(i32, i32), InvalidIntOrPercent> {
    let scale = controller_scale.unwrap_or(0);
    if let Some(max_unavailable) = &spec.max_unavailable {
        let unavailable = scaled_value(max_unavailable, scale, true)?;
        return Ok((scale, (scale - unavailable).max(0)));
    }
    match &spec.min_available {
        Some(IntOrString::Int(min)) => Ok((i32::try_from(pods).unwrap_or(i32::MAX), *min)),
        Some(min @ IntOrString::String(_)) => Ok((scale, scaled_value(min, scale, true)?)),
        None => Ok((0, 0)),
    }
}

fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .any(|c| c.type_ == "Ready" && c.status == "True")
}

fn plus_timeout(t: Timestamp) -> Timestamp {
    t.checked_add(SignedDuration::from_secs(DELETION_TIMEOUT.as_secs() as i64))
        .unwrap_or(t)
}

/// Ready pods that are neither terminating nor recently evicted (`countHealthyPods`).
pub fn count_healthy_pods(
    pods: &[&Pod],
    disrupted: &BTreeMap<String, Time>,
    now: Timestamp,
) -> i32 {
    let healthy = pods
        .iter()
        .filter(|pod| pod.metadata.deletion_timestamp.is_none())
        .filter(|pod| {
            let name = pod.metadata.name.as_deref().unwrap_or("");
            disrupted.get(name).is_none_or(|t| plus_timeout(t.0) <= now)
        })
        .filter(|pod| is_ready(pod))
        .count();
    i32::try_from(healthy).unwrap_or(i32::MAX)
}

/// The new `disruptedPods` of a budget (`buildDisruptedPodMap`).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct DisruptedPods {
    /// Entries of pods that still exist, are not terminating yet and are within the timeout.
    pub map: BTreeMap<String, Time>,
    /// When the earliest kept entry times out: the budget is to be synced again then.
    pub recheck_at: Option<Timestamp>,
    /// Pods whose entry timed out without them being deleted (a `NotDeleted` event each).
    pub not_deleted: Vec<String>,
}

/// Keeps the entries of `previous` (the budget's `disruptedPods`) for `pods` that are not
/// terminating and whose eviction is less than [`DELETION_TIMEOUT`] old at `now`.
pub fn build_disrupted_pod_map(
    pods: &[&Pod],
    previous: Option<&BTreeMap<String, Time>>,
    now: Timestamp,
) -> DisruptedPods {
    let mut out = DisruptedPods::default();
    let Some(previous) = previous else {
        return out;
    };
    for pod in pods {
        if pod.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let name = pod.metadata.name.clone().unwrap_or_default();
        let Some(at) = previous.get(&name) else {
            continue;
        };
        let expected_deletion = plus_timeout(at.0);
        if expected_deletion < now {
            out.not_deleted.push(name);
        } else {
            if out.recheck_at.is_none_or(|r| expected_deletion < r) {
                out.recheck_at = Some(expected_deletion);
            }
            out.map.insert(name, at.clone());
        }
    }
    out
}

/// The counts the controller computed for a budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// `status.currentHealthy`.
    pub current_healthy: i32,
    /// `status.desiredHealthy`.
    pub desired_healthy: i32,
    /// `status.expectedPods`.
    pub expected_pods: i32,
}

impl Counts {
    /// `status.disruptionsAllowed`: the healthy pods above the desired, and none while no pod is
    /// expected (a budget that matches nothing yet stays safe when its first pods appear).
    pub fn disruptions_allowed(&self) -> i32 {
        let allowed = self.current_healthy - self.desired_healthy;
        if self.expected_pods <= 0 || allowed <= 0 {
            0
        } else {
            allowed
        }
    }
}

/// The budget with its new status, or `None` when its status already says all this
/// (`updatePdbStatus`).
pub fn new_status(
    pdb: &PodDisruptionBudget,
    counts: Counts,
    disrupted: BTreeMap<String, Time>,
    now: Timestamp,
) -> Option<PodDisruptionBudget> {
    let allowed = counts.disruptions_allowed();
    let generation = pdb.metadata.generation.unwrap_or(0);
    let empty = PodDisruptionBudgetStatus::default();
    let old = pdb.status.as_ref().unwrap_or(&empty);
    let same_disrupted = old
        .disrupted_pods
        .as_ref()
        .map_or(disrupted.is_empty(), |m| *m == disrupted);
    if old.current_healthy == counts.current_healthy
        && old.desired_healthy == counts.desired_healthy
        && old.expected_pods == counts.expected_pods
        && old.disruptions_allowed == allowed
        && same_disrupted
        && old.observed_generation.unwrap_or(0) == generation
        && conditions_are_up_to_date(pdb)
    {
        return None;
    }
    let mut new = pdb.clone();
    new.status = Some(PodDisruptionBudgetStatus {
        current_healthy: counts.current_healthy,
        desired_healthy: counts.desired_healthy,
        expected_pods: counts.expected_pods,
        disruptions_allowed: allowed,
        disrupted_pods: (!disrupted.is_empty()).then_some(disrupted),
        observed_generation: Some(generation),
        conditions: old.conditions.clone(),
    });
    update_disruption_allowed_condition(&mut new, now);
    Some(new)
}

/// The budget with no disruption allowed and `DisruptionAllowed=False`/`SyncFailed` carrying
/// `message` (`failSafe`): if the controller cannot compute a status, evictions stop.
pub fn fail_safe(
    pdb: &PodDisruptionBudget,
    message: String,
    now: Timestamp,
) -> PodDisruptionBudget {
    let mut new = pdb.clone();
    let condition = disruption_allowed_condition(&new, "False", SYNC_FAILED_REASON, message);
    let status = new.status.get_or_insert_with(Default::default);
    status.disruptions_allowed = 0;
    set_status_condition(
        status.conditions.get_or_insert_with(Vec::new),
        condition,
        now,
    );
    new
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{PodCondition, PodStatus};

    fn ts(s: &str) -> Timestamp {
        s.parse().expect("a timestamp")
    }

    fn pod(name: &str, ready: bool) -> Pod {
        let mut pod = Pod::default();
        pod.metadata.name = Some(name.into());
        pod.status = Some(PodStatus {
            conditions: Some(vec![PodCondition {
                type_: "Ready".into(),
                status: if ready { "True" } else { "False" }.into(),
                ..Default::default()
            }]),
            ..Default::default()
        });
        pod
    }

    fn spec(min: Option<IntOrString>, max: Option<IntOrString>) -> PodDisruptionBudgetSpec {
        PodDisruptionBudgetSpec {
            min_available: min,
            max_unavailable: max,
            ..Default::default()
        }
    }

    fn pct(s: &str) -> IntOrString {
        IntOrString::String(s.into())
    }

    #[test]
    fn percentages_scale_rounding_up_and_bad_ones_carry_kubes_message() {
        assert_eq!(scaled_value(&IntOrString::Int(3), 10, true), Ok(3));
        assert_eq!(scaled_value(&pct("28%"), 4, true), Ok(2));
        assert_eq!(scaled_value(&pct("28%"), 4, false), Ok(1));
        assert_eq!(scaled_value(&pct("100%"), 7, true), Ok(7));
        let err = scaled_value(&pct("28"), 4, true).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid value for IntOrString: invalid type: string is not a percentage"
        );
        assert!(scaled_value(&pct("x%"), 4, true).is_err());
    }

    /// disruption_test.go `TestIntegerMaxUnavailable`, `TestIntegerMaxUnavailableWithScaling`,
    /// `TestPercentageMaxUnavailableWithScaling`, `TestReplicaSet` (minAvailable 20%),
    /// `TestMultipleControllers` (minAvailable 1%).
    #[test]
    fn expected_and_desired_follow_min_available_or_max_unavailable() {
        // An integer minAvailable counts the pods, not the controllers.
        assert_eq!(
            expected_and_desired(&spec(Some(IntOrString::Int(3)), None), 1, None),
            Ok((1, 3))
        );
        // maxUnavailable 1 of a scale of 1: nothing need stay healthy.
        assert_eq!(
            expected_and_desired(&spec(None, Some(IntOrString::Int(1))), 1, Some(1)),
            Ok((1, 0))
        );
        // maxUnavailable 2 of 7 replicas.
        assert_eq!(
            expected_and_desired(&spec(None, Some(IntOrString::Int(2))), 1, Some(7)),
            Ok((7, 5))
        );
        // maxUnavailable 30% of 7, rounded up to 3.
        assert_eq!(
            expected_and_desired(&spec(None, Some(pct("30%"))), 1, Some(7)),
            Ok((7, 4))
        );
        // minAvailable 20% of 10, rounded up.
        assert_eq!(
            expected_and_desired(&spec(Some(pct("20%")), None), 1, Some(10)),
            Ok((10, 2))
        );
        // minAvailable 1% of 11 (two controllers), rounded up to 1.
        assert_eq!(
            expected_and_desired(&spec(Some(pct("1%")), None), 2, Some(11)),
            Ok((11, 1))
        );
        // maxUnavailable above the scale leaves nothing desired.
        assert_eq!(
            expected_and_desired(&spec(None, Some(IntOrString::Int(5))), 1, Some(3)),
            Ok((3, 0))
        );
        assert!(needs_controller_scale(&spec(
            None,
            Some(IntOrString::Int(0))
        )));
        assert!(needs_controller_scale(&spec(Some(pct("50%")), None)));
        assert!(!needs_controller_scale(&spec(
            Some(IntOrString::Int(1)),
            None
        )));
    }

    /// disruption_test.go `TestUpdateDisruptedPods`: entries of missing, terminating and
    /// timed-out pods go; the earliest kept one decides the recheck.
    #[test]
    fn disrupted_pods_expire_after_the_deletion_timeout() {
        let now = ts("2025-01-01T00:10:00Z");
        let mut terminating = pod("p3", true);
        terminating.metadata.deletion_timestamp = Some(Time(now));
        let p1 = pod("p1", true);
        let p2 = pod("p2", true);
        let p4 = pod("p4", true);
        let previous = BTreeMap::from([
            ("p1".to_string(), Time(ts("2025-01-01T00:09:00Z"))),
            ("p2".to_string(), Time(ts("2025-01-01T00:09:30Z"))),
            ("p3".to_string(), Time(ts("2025-01-01T00:09:00Z"))),
            ("p4".to_string(), Time(ts("2025-01-01T00:07:00Z"))),
            ("gone".to_string(), Time(ts("2025-01-01T00:09:00Z"))),
        ]);
        let pods = [&p1, &p2, &terminating, &p4];
        let out = build_disrupted_pod_map(&pods, Some(&previous), now);
        assert_eq!(out.map.keys().collect::<Vec<_>>(), ["p1", "p2"]);
        assert_eq!(out.recheck_at, Some(ts("2025-01-01T00:11:00Z")));
        assert_eq!(out.not_deleted, ["p4"]);
        assert_eq!(
            build_disrupted_pod_map(&pods, None, now),
            DisruptedPods::default()
        );
    }

    /// disruption_test.go `TestUnavailable` / `TestUpdateDisruptedPods`: terminating, unready
    /// and recently evicted pods are not healthy.
    #[test]
    fn healthy_pods_are_ready_not_terminating_and_not_recently_evicted() {
        let now = ts("2025-01-01T00:10:00Z");
        let mut terminating = pod("t", true);
        terminating.metadata.deletion_timestamp = Some(Time(now));
        let ready = pod("r", true);
        let unready = pod("u", false);
        let evicted = pod("e", true);
        let evicted_long_ago = pod("old", true);
        let disrupted = BTreeMap::from([
            ("e".to_string(), Time(ts("2025-01-01T00:09:00Z"))),
            ("old".to_string(), Time(ts("2025-01-01T00:05:00Z"))),
        ]);
        let pods = [&terminating, &ready, &unready, &evicted, &evicted_long_ago];
        assert_eq!(count_healthy_pods(&pods, &disrupted, now), 2);
    }

    #[test]
    fn disruptions_allowed_needs_expected_pods_and_never_goes_negative() {
        let c = |current, desired, expected| Counts {
            current_healthy: current,
            desired_healthy: desired,
            expected_pods: expected,
        };
        assert_eq!(c(4, 3, 4).disruptions_allowed(), 1);
        assert_eq!(c(2, 3, 4).disruptions_allowed(), 0);
        assert_eq!(c(2, 0, 0).disruptions_allowed(), 0);
        assert_eq!(c(3, 3, 3).disruptions_allowed(), 0);
    }

    #[test]
    fn an_unchanged_status_is_not_written_and_a_failure_stops_disruptions() {
        let now = ts("2025-01-01T00:00:00Z");
        let mut pdb = PodDisruptionBudget::default();
        pdb.metadata.generation = Some(1);
        let counts = Counts {
            current_healthy: 3,
            desired_healthy: 2,
            expected_pods: 3,
        };
        let written = new_status(&pdb, counts, BTreeMap::new(), now).expect("first status");
        let status = written.status.as_ref().unwrap();
        assert_eq!(status.disruptions_allowed, 1);
        assert_eq!(status.observed_generation, Some(1));
        assert!(status.disrupted_pods.is_none());
        let cond = &status.conditions.as_ref().unwrap()[0];
        assert_eq!(
            (
                cond.type_.as_str(),
                cond.status.as_str(),
                cond.reason.as_str()
            ),
            ("DisruptionAllowed", "True", "SufficientPods")
        );
        assert!(new_status(&written, counts, BTreeMap::new(), now).is_none());

        let failed = fail_safe(&written, "found no controllers for pod \"p\"".into(), now);
        let status = failed.status.as_ref().unwrap();
        assert_eq!(status.disruptions_allowed, 0);
        let cond = &status.conditions.as_ref().unwrap()[0];
        assert_eq!(
            (cond.status.as_str(), cond.reason.as_str()),
            ("False", "SyncFailed")
        );
        assert_eq!(cond.message, "found no controllers for pod \"p\"");
        // Once the cause is gone, the next sync writes the counts again.
        assert!(new_status(&failed, counts, BTreeMap::new(), now).is_some());
    }
}
