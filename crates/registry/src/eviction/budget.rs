//! A pod's PodDisruptionBudgets and whether one of them allows evicting it
//! (`getPodDisruptionBudgets`, `checkAndDecrement`).

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use rkcm_apimachinery::poddisruptionbudget::{to_seconds, update_disruption_allowed_condition};
use rkcm_labels::Selector;

use rkcm_server::error::{ApiError, Cause};

/// Most entries `status.disruptedPods` may hold before evictions are refused: that many
/// evictions were approved and the disruption controller has not seen them yet.
pub const MAX_DISRUPTED_POD_SIZE: usize = 2000;

/// The cause type of a refusal by a budget (`policyv1.DisruptionBudgetCause`).
pub const DISRUPTION_BUDGET_CAUSE: &str = "DisruptionBudget";

/// The message of a 429 refusal.
pub const VIOLATES_BUDGET: &str =
    "Cannot evict pod as it would violate the pod's disruption budget.";

/// The message when a pod is covered by several budgets (answered with code 500).
pub const MORE_THAN_ONE_BUDGET: &str =
    "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.";

/// The budgets among `budgets` whose selector matches `pod`'s labels, in `pod`'s namespace. A
/// budget whose selector is missing, empty or invalid covers nothing.
pub fn budgets_for_pod<'a>(
    budgets: &'a [PodDisruptionBudget],
    pod: &Pod,
) -> Vec<&'a PodDisruptionBudget> {
    let empty = Default::default();
    let labels = pod.metadata.labels.as_ref().unwrap_or(&empty);
    budgets
        .iter()
        .filter(|pdb| pdb.metadata.namespace == pod.metadata.namespace)
        .filter(|pdb| {
            let selector = pdb.spec.as_ref().and_then(|s| s.selector.as_ref());
            match Selector::from_optional_label_selector(selector) {
                Ok(sel) => !sel.is_empty() && !sel.is_nothing() && sel.matches(labels),
                Err(_) => false,
            }
        })
        .collect()
}

/// Whether a pod that is not ready may be evicted under `pdb` without taking a disruption from
/// it: always with `unhealthyPodEvictionPolicy: AlwaysAllow`, otherwise (`IfHealthyBudget`, the
/// default) only when the budget has the healthy pods it needs.
pub fn unhealthy_pod_may_go(pdb: &PodDisruptionBudget) -> bool {
    let policy = pdb
        .spec
        .as_ref()
        .and_then(|s| s.unhealthy_pod_eviction_policy.as_deref());
    if policy == Some("AlwaysAllow") {
        return true;
    }
    let (current, desired) = pdb
        .status
        .as_ref()
        .map_or((0, 0), |s| (s.current_healthy, s.desired_healthy));
    current >= desired && desired > 0
}

fn refusal(message: String, retry_after: u32) -> ApiError {
    let mut e = ApiError::new(429, "TooManyRequests", VIOLATES_BUDGET);
    e.details.causes.push(Cause {
        reason: DISRUPTION_BUDGET_CAUSE.to_string(),
        message,
        field: String::new(),
    });
    if retry_after > 0 {
        e.details.retry_after = Some(retry_after);
    }
    e
}

/// The 429 of a budget the controller has not processed yet, or of a delete that raced with the
/// pod becoming ready (`createTooManyRequestsError`).
pub fn too_many_requests(budget: &str) -> ApiError {
    refusal(
        format!("The disruption budget {budget} is still being processed by the server."),
        10,
    )
}

fn forbidden(budget: &str, why: &str) -> ApiError {
    let mut e = ApiError::new(
        403,
        "Forbidden",
        format!("poddisruptionbudget.policy \"{budget}\" is forbidden: {why}"),
    );
    e.details.name = Some(budget.to_string());
    e.details.group = Some("policy".to_string());
    e.details.kind = Some("poddisruptionbudget".to_string());
    e
}

/// Takes one disruption from `pdb` for evicting pod `pod` at `now` (`checkAndDecrement`), or
/// refuses: 429 while the budget's generation is not observed or no disruption is left, 403 when
/// its status is corrupt or too many evictions are unconfirmed.
///
/// On success `pdb` holds the status to write: one disruption fewer, its condition updated when
/// none is left, and (unless `dry_run`) `disruptedPods[pod] = now`.
pub fn check_and_decrement(
    pdb: &mut PodDisruptionBudget,
    pod: &str,
    now: Timestamp,
    dry_run: bool,
) -> Result<(), ApiError> {
    let name = pdb.metadata.name.clone().unwrap_or_default();
    let generation = pdb.metadata.generation.unwrap_or(0);
    let status = pdb.status.get_or_insert_with(Default::default);
    if status.observed_generation.unwrap_or(0) < generation {
        return Err(too_many_requests(&name));
    }
    if status.disruptions_allowed < 0 {
        return Err(forbidden(&name, "pdb disruptions allowed is negative"));
    }
    if status.disrupted_pods.as_ref().map_or(0, |m| m.len()) > MAX_DISRUPTED_POD_SIZE {
        return Err(forbidden(
            &name,
            "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
        ));
    }
    if status.disruptions_allowed == 0 {
        return Err(refusal(
            format!(
                "The disruption budget {name} needs {} healthy pods and has {} currently",
                status.desired_healthy, status.current_healthy
            ),
            0,
        ));
    }
    status.disruptions_allowed -= 1;
    if status.disruptions_allowed == 0 {
        update_disruption_allowed_condition(pdb, now);
    }
    if dry_run {
        return Ok(());
    }
    pdb.status
        .get_or_insert_with(Default::default)
        .disrupted_pods
        .get_or_insert_with(Default::default)
        .insert(pod.to_string(), Time(to_seconds(now)));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::policy::v1::{PodDisruptionBudgetSpec, PodDisruptionBudgetStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
    use std::collections::BTreeMap;

    fn now() -> Timestamp {
        "2025-01-01T00:00:00Z".parse().unwrap()
    }

    fn pdb(
        name: &str,
        selector: Option<LabelSelector>,
        status: PodDisruptionBudgetStatus,
    ) -> PodDisruptionBudget {
        let mut pdb = PodDisruptionBudget::default();
        pdb.metadata.name = Some(name.into());
        pdb.metadata.namespace = Some("default".into());
        pdb.metadata.generation = Some(1);
        pdb.spec = Some(PodDisruptionBudgetSpec {
            selector,
            ..Default::default()
        });
        pdb.status = Some(status);
        pdb
    }

    fn labels(a: &str) -> LabelSelector {
        LabelSelector {
            match_labels: Some(BTreeMap::from([("a".to_string(), a.to_string())])),
            ..Default::default()
        }
    }

    fn status(allowed: i32, current: i32, desired: i32) -> PodDisruptionBudgetStatus {
        PodDisruptionBudgetStatus {
            disruptions_allowed: allowed,
            current_healthy: current,
            desired_healthy: desired,
            expected_pods: current,
            observed_generation: Some(1),
            ..Default::default()
        }
    }

    fn pod(a: &str) -> Pod {
        let mut pod = Pod::default();
        pod.metadata.name = Some("foo".into());
        pod.metadata.namespace = Some("default".into());
        pod.metadata.labels = Some(BTreeMap::from([("a".to_string(), a.to_string())]));
        pod
    }

    #[test]
    fn budgets_match_by_selector_and_an_empty_or_missing_selector_matches_nothing() {
        let mut other_ns = pdb("other", Some(labels("true")), status(1, 1, 1));
        other_ns.metadata.namespace = Some("kube-system".into());
        let budgets = vec![
            pdb("match", Some(labels("true")), status(1, 1, 1)),
            pdb("nomatch", Some(labels("false")), status(1, 1, 1)),
            pdb("empty", Some(LabelSelector::default()), status(1, 1, 1)),
            pdb("none", None, status(1, 1, 1)),
            other_ns,
        ];
        let found: Vec<_> = budgets_for_pod(&budgets, &pod("true"))
            .iter()
            .map(|p| p.metadata.name.clone().unwrap())
            .collect();
        assert_eq!(found, ["match"]);
    }

    /// eviction_test.go `TestEviction`: a budget with no disruption left refuses with 429.
    #[test]
    fn a_budget_without_disruptions_refuses_with_kubes_message_and_cause() {
        let mut p = pdb("foo", Some(labels("true")), status(0, 2, 3));
        let err = check_and_decrement(&mut p, "pod", now(), false).unwrap_err();
        assert_eq!(err.code, 429);
        assert_eq!(err.reason, "TooManyRequests");
        assert_eq!(err.message, VIOLATES_BUDGET);
        assert_eq!(err.details.causes[0].reason, "DisruptionBudget");
        assert_eq!(
            err.details.causes[0].message,
            "The disruption budget foo needs 3 healthy pods and has 2 currently"
        );
        assert_eq!(err.details.retry_after, None);
    }

    #[test]
    fn a_budget_not_yet_observed_is_still_being_processed() {
        let mut p = pdb("foo", Some(labels("true")), status(1, 1, 1));
        p.metadata.generation = Some(2);
        let err = check_and_decrement(&mut p, "pod", now(), false).unwrap_err();
        assert_eq!(err.code, 429);
        assert_eq!(
            err.details.causes[0].message,
            "The disruption budget foo is still being processed by the server."
        );
        assert_eq!(err.details.retry_after, Some(10));
    }

    #[test]
    fn a_negative_budget_or_an_overfull_disrupted_map_is_forbidden() {
        let mut p = pdb("foo", Some(labels("true")), status(-1, 1, 1));
        let err = check_and_decrement(&mut p, "pod", now(), false).unwrap_err();
        assert_eq!(err.code, 403);
        assert_eq!(
            err.message,
            "poddisruptionbudget.policy \"foo\" is forbidden: pdb disruptions allowed is negative"
        );
        let mut full = status(1, 1, 1);
        full.disrupted_pods = Some(
            (0..=MAX_DISRUPTED_POD_SIZE)
                .map(|i| (format!("p{i}"), Time(now())))
                .collect(),
        );
        let mut p = pdb("foo", Some(labels("true")), full);
        let err = check_and_decrement(&mut p, "pod", now(), false).unwrap_err();
        assert_eq!(err.code, 403);
        assert!(err.message.ends_with(
            "DisruptedPods map too big - too many evictions not confirmed by PDB controller"
        ));
    }

    #[test]
    fn an_allowed_eviction_takes_one_disruption_and_records_the_pod() {
        let mut p = pdb("foo", Some(labels("true")), status(1, 3, 2));
        check_and_decrement(&mut p, "pod", now(), false).unwrap();
        let s = p.status.as_ref().unwrap();
        assert_eq!(s.disruptions_allowed, 0);
        assert_eq!(s.disrupted_pods.as_ref().unwrap()["pod"].0, now());
        let cond = &s.conditions.as_ref().unwrap()[0];
        assert_eq!(
            (cond.status.as_str(), cond.reason.as_str()),
            ("False", "InsufficientPods")
        );

        let mut p = pdb("foo", Some(labels("true")), status(2, 3, 1));
        check_and_decrement(&mut p, "pod", now(), false).unwrap();
        assert_eq!(p.status.as_ref().unwrap().disruptions_allowed, 1);
        assert!(p.status.as_ref().unwrap().conditions.is_none());
    }

    #[test]
    fn a_dry_run_eviction_records_nothing() {
        let mut p = pdb("foo", Some(labels("true")), status(1, 3, 2));
        check_and_decrement(&mut p, "pod", now(), true).unwrap();
        assert!(p.status.as_ref().unwrap().disrupted_pods.is_none());
    }

    /// eviction_test.go `TestEvictionIgnorePDB` / `TestEvictionPDBStatus`: the budget of an
    /// unready pod, by policy.
    #[test]
    fn unready_pods_go_when_the_budget_is_healthy_or_the_policy_always_allows() {
        assert!(unhealthy_pod_may_go(&pdb("b", None, status(0, 2, 2))));
        assert!(!unhealthy_pod_may_go(&pdb("b", None, status(0, 1, 2))));
        assert!(!unhealthy_pod_may_go(&pdb("b", None, status(0, 0, 0))));
        let mut always = pdb("b", None, status(0, 0, 2));
        always.spec.as_mut().unwrap().unhealthy_pod_eviction_policy = Some("AlwaysAllow".into());
        assert!(unhealthy_pod_may_go(&always));
        let mut if_healthy = pdb("b", None, status(0, 1, 2));
        if_healthy
            .spec
            .as_mut()
            .unwrap()
            .unhealthy_pod_eviction_policy = Some("IfHealthyBudget".into());
        assert!(!unhealthy_pod_may_go(&if_healthy));
    }
}
