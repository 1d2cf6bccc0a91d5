//! The replica calculator: how many replicas a metric asks for, from per-pod figures, requests,
//! readiness and tolerance.
//!
//! Mirrors `pkg/controller/podautoscaler/replica_calculator.go` and the ratio helpers of
//! `metrics/utilization.go`. Pure functions over plain values; `now` is injected.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;
use rkcm_apimachinery::quantity::Quantity;

/// One pod's figure for a metric, in milli-units (`PodMetric`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PodMetric {
    /// Milli-value (`250m` CPU is 250).
    pub value: i64,
    /// When it was measured.
    pub timestamp: Timestamp,
    /// The interval it covers.
    pub window: Duration,
}

/// Figures by pod name (`PodMetricsInfo`).
pub type PodMetricsInfo = BTreeMap<String, PodMetric>;

/// Why no replica count could be computed; the message is kube's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CalcError(pub String);

/// Settings of the calculator (`--horizontal-pod-autoscaler-tolerance`,
/// `…-cpu-initialization-period`, `…-initial-readiness-delay`).
#[derive(Clone, Copy, Debug)]
pub struct ReplicaCalculator {
    /// Ratios within `1 ± tolerance` do not scale.
    pub tolerance: f64,
    /// After a pod starts, CPU samples are trusted only once it is ready and a window has passed.
    pub cpu_initialization_period: Duration,
    /// A pod unready this soon after start is taken as never having been ready.
    pub delay_of_initial_readiness_status: Duration,
}

/// A computed proposal: replicas and the current figure to report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Proposal {
    /// Replicas the metric asks for.
    pub replicas: i32,
    /// Current utilization (percentage of request) or average value (milli-units).
    pub utilization: i64,
    /// Average raw value per pod (milli-units), for resource utilization targets.
    pub raw_average: i64,
}

fn ready_condition(pod: &Pod) -> Option<&k8s_openapi::api::core::v1::PodCondition> {
    pod.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "Ready")
}

fn phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("")
}

fn name(pod: &Pod) -> String {
    pod.metadata.name.clone().unwrap_or_default()
}

fn plus(t: Timestamp, d: Duration) -> Timestamp {
    jiff::SignedDuration::try_from(d)
        .ok()
        .and_then(|d| t.checked_add(d).ok())
        .unwrap_or(t)
}

/// Sorts pods into ready ones (counted), ignored ones (pending, or CPU samples not to be trusted
/// yet) and ones without a figure (`groupPods`). Deleted and failed pods are left out.
pub fn group_pods(
    pods: &[Arc<Pod>],
    metrics: &PodMetricsInfo,
    resource: Option<&str>,
    cpu_initialization_period: Duration,
    delay_of_initial_readiness_status: Duration,
    now: Timestamp,
) -> (usize, BTreeSet<String>, BTreeSet<String>) {
    let mut ready = 0;
    let mut ignored = BTreeSet::new();
    let mut missing = BTreeSet::new();
    for pod in pods {
        if pod.metadata.deletion_timestamp.is_some() || phase(pod) == "Failed" {
            continue;
        }
        if phase(pod) == "Pending" {
            ignored.insert(name(pod));
            continue;
        }
        let Some(metric) = metrics.get(&name(pod)) else {
            missing.insert(name(pod));
            continue;
        };
        if resource == Some("cpu") {
            let condition = ready_condition(pod);
            let start = pod.status.as_ref().and_then(|s| s.start_time.as_ref());
            let ignore = match (condition, start) {
                (Some(c), Some(start)) => {
                    let transition = c
                        .last_transition_time
                        .as_ref()
                        .map(|t| t.0)
                        .unwrap_or(Timestamp::UNIX_EPOCH);
                    if plus(start.0, cpu_initialization_period) > now {
                        c.status == "False" || metric.timestamp < plus(transition, metric.window)
                    } else {
                        c.status == "False"
                            && plus(start.0, delay_of_initial_readiness_status) > transition
                    }
                }
                _ => true,
            };
            if ignore {
                ignored.insert(name(pod));
                continue;
            }
        }
        ready += 1;
    }
    (ready, ignored, missing)
}

/// Each pod's request of `resource` in milli-units, over its containers (and sidecars), or over
/// `container` only (`calculateRequests`).
pub fn calculate_pod_requests(
    pods: &[Arc<Pod>],
    container: Option<&str>,
    resource: &str,
) -> Result<BTreeMap<String, i64>, CalcError> {
    let mut out = BTreeMap::new();
    for pod in pods {
        let Some(spec) = pod.spec.as_ref() else {
            continue;
        };
        let sidecars = spec
            .init_containers
            .iter()
            .flatten()
            .filter(|c| c.restart_policy.as_deref() == Some("Always"));
        let mut sum = 0i64;
        for c in spec.containers.iter().chain(sidecars) {
            if container.is_some_and(|want| want != c.name) {
                continue;
            }
            let request = c
                .resources
                .as_ref()
                .and_then(|r| r.requests.as_ref())
                .and_then(|r| r.get(resource))
                .and_then(|q| Quantity::parse(&q.0).ok());
            match request {
                Some(q) => sum = sum.saturating_add(q.milli_value()),
                None => {
                    return Err(CalcError(format!(
                        "missing request for {resource} in container {} of Pod {}",
                        c.name,
                        name(pod)
                    )))
                }
            }
        }
        out.insert(name(pod), sum);
    }
    Ok(out)
}

/// Usage over requests of the pods with both, against the target percentage
/// (`GetResourceUtilizationRatio`): (ratio, utilization %, raw average milli-value).
pub fn resource_utilization_ratio(
    metrics: &PodMetricsInfo,
    requests: &BTreeMap<String, i64>,
    target_utilization: i32,
) -> Result<(f64, i64, i64), CalcError> {
    let (mut total, mut requested, mut entries) = (0i64, 0i64, 0i64);
    for (pod, metric) in metrics {
        let Some(request) = requests.get(pod) else {
            continue;
        };
        total += metric.value;
        requested += request;
        entries += 1;
    }
    if requested == 0 {
        return Err(CalcError(
            "no metrics returned matched known pods".to_string(),
        ));
    }
    let utilization = total * 100 / requested;
    Ok((
        utilization as f64 / f64::from(target_utilization),
        utilization,
        total / entries,
    ))
}

/// Average figure against a target average (`GetMetricUsageRatio`): (ratio, average).
pub fn metric_usage_ratio(metrics: &PodMetricsInfo, target: i64) -> (f64, i64) {
    let total: i64 = metrics.values().map(|m| m.value).sum();
    let average = total / (metrics.len().max(1) as i64);
    (average as f64 / target as f64, average)
}

fn ceil(x: f64) -> i32 {
    x.ceil() as i32
}

impl ReplicaCalculator {
    fn outside_tolerance(&self, ratio: f64) -> bool {
        (1.0 - ratio).abs() > self.tolerance
    }

    /// Replicas for a resource utilization target (`GetResourceReplicas`).
    #[allow(clippy::too_many_arguments)]
    pub fn resource_replicas(
        &self,
        current_replicas: i32,
        target_utilization: i32,
        resource: &str,
        container: Option<&str>,
        mut metrics: PodMetricsInfo,
        pods: &[Arc<Pod>],
        now: Timestamp,
    ) -> Result<Proposal, CalcError> {
        if pods.is_empty() {
            return Err(CalcError(
                "no pods returned by selector while calculating replica count".into(),
            ));
        }
        let (ready, ignored, missing) = group_pods(
            pods,
            &metrics,
            Some(resource),
            self.cpu_initialization_period,
            self.delay_of_initial_readiness_status,
            now,
        );
        metrics.retain(|pod, _| !ignored.contains(pod));
        let requests = calculate_pod_requests(pods, container, resource)?;
        if metrics.is_empty() {
            return Err(CalcError(
                "did not receive metrics for any ready pods".into(),
            ));
        }
        let (ratio, utilization, raw) =
            resource_utilization_ratio(&metrics, &requests, target_utilization)?;
        let proposal = |replicas| Proposal {
            replicas,
            utilization,
            raw_average: raw,
        };
        let rebalance_ignored = !ignored.is_empty() && ratio > 1.0;
        if !rebalance_ignored && missing.is_empty() {
            if !self.outside_tolerance(ratio) {
                return Ok(proposal(current_replicas));
            }
            return Ok(proposal(ceil(ratio * ready as f64)));
        }
        let sample = metrics.values().next().copied();
        let at = |value| PodMetric {
            value,
            ..sample.unwrap_or(PodMetric {
                value: 0,
                timestamp: now,
                window: Duration::ZERO,
            })
        };
        if ratio < 1.0 {
            for pod in &missing {
                metrics.insert(pod.clone(), at(requests.get(pod).copied().unwrap_or(0)));
            }
        } else if ratio > 1.0 {
            for pod in &missing {
                metrics.insert(pod.clone(), at(0));
            }
        }
        if rebalance_ignored {
            for pod in &ignored {
                metrics.insert(pod.clone(), at(0));
            }
        }
        let (new_ratio, _, _) =
            resource_utilization_ratio(&metrics, &requests, target_utilization)?;
        if !self.outside_tolerance(new_ratio)
            || (ratio < 1.0 && new_ratio > 1.0)
            || (ratio > 1.0 && new_ratio < 1.0)
        {
            return Ok(proposal(current_replicas));
        }
        let replicas = ceil(new_ratio * metrics.len() as f64);
        if (new_ratio < 1.0 && replicas > current_replicas)
            || (new_ratio > 1.0 && replicas < current_replicas)
        {
            return Ok(proposal(current_replicas));
        }
        Ok(proposal(replicas))
    }

    /// Replicas for an average-value target over per-pod figures (`calcPlainMetricReplicas`):
    /// resource AverageValue targets (`resource` set) and Pods metrics (`resource` `None`).
    pub fn plain_metric_replicas(
        &self,
        current_replicas: i32,
        target: i64,
        resource: Option<&str>,
        mut metrics: PodMetricsInfo,
        pods: &[Arc<Pod>],
        now: Timestamp,
    ) -> Result<Proposal, CalcError> {
        if pods.is_empty() {
            return Err(CalcError(
                "no pods returned by selector while calculating replica count".into(),
            ));
        }
        let (ready, ignored, missing) = group_pods(
            pods,
            &metrics,
            resource,
            self.cpu_initialization_period,
            self.delay_of_initial_readiness_status,
            now,
        );
        metrics.retain(|pod, _| !ignored.contains(pod));
        if metrics.is_empty() {
            return Err(CalcError(
                "did not receive metrics for any ready pods".into(),
            ));
        }
        let (ratio, utilization) = metric_usage_ratio(&metrics, target);
        let proposal = |replicas| Proposal {
            replicas,
            utilization,
            raw_average: utilization,
        };
        let rebalance_ignored = !ignored.is_empty() && ratio > 1.0;
        if !rebalance_ignored && missing.is_empty() {
            if !self.outside_tolerance(ratio) {
                return Ok(proposal(current_replicas));
            }
            return Ok(proposal(ceil(ratio * ready as f64)));
        }
        let sample = metrics.values().next().copied();
        let at = |value| PodMetric {
            value,
            ..sample.unwrap_or(PodMetric {
                value: 0,
                timestamp: now,
                window: Duration::ZERO,
            })
        };
        for pod in &missing {
            metrics.insert(pod.clone(), at(if ratio < 1.0 { target } else { 0 }));
        }
        if rebalance_ignored {
            for pod in &ignored {
                metrics.insert(pod.clone(), at(0));
            }
        }
        let (new_ratio, _) = metric_usage_ratio(&metrics, target);
        if !self.outside_tolerance(new_ratio)
            || (ratio < 1.0 && new_ratio > 1.0)
            || (ratio > 1.0 && new_ratio < 1.0)
        {
            return Ok(proposal(current_replicas));
        }
        Ok(proposal(ceil(new_ratio * metrics.len() as f64)))
    }

    /// Replicas for a usage ratio of an object or external metric (`getUsageRatioReplicaCount`):
    /// scaled over the ready pods, or to `ceil(ratio)` from zero.
    pub fn usage_ratio_replicas(
        &self,
        current_replicas: i32,
        ratio: f64,
        ready_pods: usize,
    ) -> i32 {
        if current_replicas == 0 {
            return ceil(ratio);
        }
        if !self.outside_tolerance(ratio) {
            return current_replicas;
        }
        ceil(ratio * ready_pods as f64)
    }

    /// Replicas for a per-pod average target of a total (`GetObjectPerPodMetricReplicas`,
    /// `GetExternalPerPodMetricReplicas`): (replicas, average per current replica).
    pub fn per_pod_replicas(
        &self,
        status_replicas: i32,
        total: i64,
        target_per_pod: i64,
    ) -> (i32, i64) {
        let mut replicas = status_replicas;
        let ratio = total as f64 / (target_per_pod as f64 * f64::from(status_replicas));
        if self.outside_tolerance(ratio) {
            replicas = ceil(total as f64 / target_per_pod as f64);
        }
        let average = (total as f64 / f64::from(status_replicas.max(1))).ceil() as i64;
        (replicas, average)
    }
}

/// Pods Running and Ready (`getReadyPodsCount`).
pub fn ready_pods(pods: &[Arc<Pod>]) -> Result<usize, CalcError> {
    if pods.is_empty() {
        return Err(CalcError(
            "no pods returned by selector while calculating replica count".into(),
        ));
    }
    Ok(pods
        .iter()
        .filter(|p| phase(p) == "Running" && ready_condition(p).is_some_and(|c| c.status == "True"))
        .count())
}

#[cfg(test)]
mod tests {
    //! Cases of `replica_calculator_test.go`.

    use k8s_openapi::api::core::v1::{
        Container, PodCondition, PodSpec, PodStatus, ResourceRequirements,
    };
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity as Q;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

    use super::*;

    fn now() -> Timestamp {
        "2026-01-01T12:00:00Z".parse().expect("time")
    }

    fn ago(secs: i64) -> Timestamp {
        now() - jiff::SignedDuration::from_secs(secs)
    }

    fn calc() -> ReplicaCalculator {
        ReplicaCalculator {
            tolerance: 0.1,
            cpu_initialization_period: Duration::from_secs(120),
            delay_of_initial_readiness_status: Duration::from_secs(10),
        }
    }

    /// A pod as the tests' `prepareTestClientSet`: started and ready long ago unless told.
    struct P {
        phase: &'static str,
        ready: &'static str,
        start: Timestamp,
        transition: Timestamp,
        request: Option<&'static str>,
        deleted: bool,
    }

    fn p() -> P {
        P {
            phase: "Running",
            ready: "True",
            start: ago(3600),
            transition: ago(3600),
            request: Some("1"),
            deleted: false,
        }
    }

    fn pods(list: Vec<P>) -> Vec<Arc<Pod>> {
        list.into_iter()
            .enumerate()
            .map(|(i, p)| {
                Arc::new(Pod {
                    metadata: ObjectMeta {
                        name: Some(format!("test-pod-{i}")),
                        deletion_timestamp: p.deleted.then(|| Time(now())),
                        ..ObjectMeta::default()
                    },
                    spec: Some(PodSpec {
                        containers: vec![Container {
                            name: "c".into(),
                            resources: Some(ResourceRequirements {
                                requests: p.request.map(|r| {
                                    [("cpu".to_string(), Q(r.into()))].into_iter().collect()
                                }),
                                ..ResourceRequirements::default()
                            }),
                            ..Container::default()
                        }],
                        ..PodSpec::default()
                    }),
                    status: Some(PodStatus {
                        phase: Some(p.phase.into()),
                        start_time: Some(Time(p.start)),
                        conditions: Some(vec![PodCondition {
                            type_: "Ready".into(),
                            status: p.ready.into(),
                            last_transition_time: Some(Time(p.transition)),
                            ..PodCondition::default()
                        }]),
                        ..PodStatus::default()
                    }),
                })
            })
            .collect()
    }

    fn metrics(values: &[(usize, i64)]) -> PodMetricsInfo {
        values
            .iter()
            .map(|(i, v)| {
                (
                    format!("test-pod-{i}"),
                    PodMetric {
                        value: *v,
                        timestamp: now(),
                        window: Duration::from_secs(60),
                    },
                )
            })
            .collect()
    }

    fn cpu(
        current: i32,
        target: i32,
        pods_: Vec<P>,
        m: &[(usize, i64)],
    ) -> Result<Proposal, CalcError> {
        calc().resource_replicas(
            current,
            target,
            "cpu",
            None,
            metrics(m),
            &pods(pods_),
            now(),
        )
    }

    #[test]
    fn scale_up_cpu() {
        // TestReplicaCalcScaleUp: requests 1.0 each, usage 300/500/700m, target 30%.
        let got = cpu(3, 30, vec![p(), p(), p()], &[(0, 300), (1, 500), (2, 700)]).expect("ok");
        assert_eq!((got.replicas, got.utilization), (5, 50));
    }

    #[test]
    fn scale_up_unready_less_scale() {
        // TestReplicaCalcScaleUpUnreadyLessScale: one pod unready (never ready after start).
        let unready = P {
            ready: "False",
            start: ago(60),
            transition: ago(60),
            ..p()
        };
        let got = cpu(
            3,
            30,
            vec![unready, p(), p()],
            &[(0, 300), (1, 500), (2, 700)],
        )
        .expect("ok");
        assert_eq!((got.replicas, got.utilization), (4, 60));
    }

    #[test]
    fn scale_up_hot_cpu_no_scale() {
        // TestReplicaCalcScaleHotCpuNoScale: pods ready within a window of their last transition.
        let hot = || P {
            start: ago(60),
            transition: ago(30),
            ..p()
        };
        let got = cpu(
            3,
            30,
            vec![hot(), hot(), p()],
            &[(0, 300), (1, 500), (2, 700)],
        )
        .expect("ok");
        assert_eq!(got.replicas, 3);
    }

    #[test]
    fn scale_up_ignores_failed_and_deleted_pods() {
        // TestReplicaCalcScaleUpIgnoresFailedPods / IgnoresDeletionPods.
        let failed = || P {
            phase: "Failed",
            ..p()
        };
        let got = cpu(
            2,
            30,
            vec![p(), p(), failed(), failed()],
            &[(0, 500), (1, 700)],
        )
        .expect("ok");
        assert_eq!((got.replicas, got.utilization), (4, 60));
        let deleted = || P {
            deleted: true,
            ..p()
        };
        let got = cpu(
            2,
            30,
            vec![p(), p(), deleted(), deleted()],
            &[(0, 500), (1, 700)],
        )
        .expect("ok");
        assert_eq!(got.replicas, 4);
    }

    #[test]
    fn scale_down() {
        // TestReplicaCalcScaleDown: 5 pods, usage 100/300/500/250/250m, target 50%.
        let got = cpu(
            5,
            50,
            vec![p(), p(), p(), p(), p()],
            &[(0, 100), (1, 300), (2, 500), (3, 250), (4, 250)],
        )
        .expect("ok");
        assert_eq!((got.replicas, got.utilization), (3, 28));
    }

    #[test]
    fn tolerance_keeps_the_count() {
        // TestReplicaCalcTolerance: 1.08 ratio.
        let got = cpu(
            3,
            100,
            vec![p(), p(), p()],
            &[(0, 1010), (1, 1090), (2, 1140)],
        )
        .expect("ok");
        assert_eq!(got.replicas, 3);
    }

    #[test]
    fn missing_metrics_on_scale_down_count_as_full_request() {
        // TestReplicaCalcMissingMetricsNoChangeGt / ScaleDown with a missing pod.
        let got = cpu(
            4,
            50,
            vec![p(), p(), p(), p()],
            &[(0, 400), (1, 95), (2, 110)],
        )
        .expect("ok");
        // Ratio 0.405: the missing pod counts as 100%, giving (400+95+110+1000)/4000 = 40%.
        assert_eq!(got.replicas, 4);
        assert_eq!(got.utilization, 20);
    }

    #[test]
    fn missing_metrics_on_scale_up_count_as_zero() {
        // TestReplicaCalcMissingMetricsScaleUp-like: ratio stays above one with the missing pod at 0.
        let got = cpu(
            4,
            30,
            vec![p(), p(), p(), p()],
            &[(0, 900), (1, 900), (2, 900)],
        )
        .expect("ok");
        assert_eq!(got.replicas, 9);
    }

    #[test]
    fn missing_request_is_an_error() {
        let no_request = P {
            request: None,
            ..p()
        };
        let err = cpu(1, 50, vec![no_request], &[(0, 100)]).expect_err("no request");
        assert_eq!(
            err.0,
            "missing request for cpu in container c of Pod test-pod-0"
        );
    }

    #[test]
    fn no_pods_and_no_metrics_are_errors() {
        assert_eq!(
            cpu(1, 50, vec![], &[]).expect_err("no pods").0,
            "no pods returned by selector while calculating replica count"
        );
        let pending = P {
            phase: "Pending",
            ..p()
        };
        assert_eq!(
            cpu(1, 50, vec![pending], &[(0, 100)])
                .expect_err("ignored")
                .0,
            "did not receive metrics for any ready pods"
        );
    }

    #[test]
    fn plain_metrics_scale_up_and_down() {
        // TestReplicaCalcScaleUpCM: qps 20k/10k/30k milli, target 15k.
        let got = calc()
            .plain_metric_replicas(
                3,
                15000,
                None,
                metrics(&[(0, 20000), (1, 10000), (2, 30000)]),
                &pods(vec![p(), p(), p()]),
                now(),
            )
            .expect("ok");
        assert_eq!((got.replicas, got.utilization), (4, 20000));
        // TestReplicaCalcScaleDownCM: 12k/12k/12k/12k/2k, target 20k.
        let got = calc()
            .plain_metric_replicas(
                5,
                20000,
                None,
                metrics(&[(0, 12000), (1, 12000), (2, 12000), (3, 12000), (4, 2000)]),
                &pods(vec![p(), p(), p(), p(), p()]),
                now(),
            )
            .expect("ok");
        assert_eq!((got.replicas, got.utilization), (3, 10000));
    }

    #[test]
    fn object_and_external_ratios() {
        // TestReplicaCalcScaleUpCMObject: 10000m on the object, target 5000m, 3 ready pods.
        assert_eq!(calc().usage_ratio_replicas(3, 10000.0 / 5000.0, 3), 6);
        // Within tolerance.
        assert_eq!(calc().usage_ratio_replicas(3, 1.05, 3), 3);
        // From zero replicas: ceil(ratio).
        assert_eq!(calc().usage_ratio_replicas(0, 2.5, 0), 3);
        // TestReplicaCalcScaleUpCMExternalNoLabels-like per-pod: 8600m total, 2150m per pod, 3 replicas.
        assert_eq!(calc().per_pod_replicas(3, 8600, 2150), (4, 2867));
    }
}
