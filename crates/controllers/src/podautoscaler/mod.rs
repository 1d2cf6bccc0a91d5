//! The horizontal pod autoscaler controller: scales the target of each HorizontalPodAutoscaler
//! through its `/scale` subresource so that its metrics meet their targets.
//!
//! Mirrors `pkg/controller/podautoscaler/horizontal.go`: every HPA is reconciled once per
//! `--horizontal-pod-autoscaler-sync-period` (15 s). A reconcile reads the target's Scale (its
//! resource resolved through discovery, so any kind with `/scale` works), computes a replica count
//! per metric ([`replica_calculator`]: Resource and ContainerResource from `metrics.k8s.io`, Pods
//! and Object from `custom.metrics.k8s.io`, External from `external.metrics.k8s.io`), takes the
//! largest, normalizes it ([`normalize`]: min/max, stabilization windows, `behavior` policies),
//! writes the Scale when it changed (event `SuccessfulRescale`) and the status (current metrics,
//! replicas, `lastScaleTime`, the conditions AbleToScale, ScalingActive and ScalingLimited).

pub mod conditions;
pub mod metrics_client;
pub mod normalize;
pub mod replica_calculator;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::autoscaling::v2::{
    ContainerResourceMetricStatus, CrossVersionObjectReference, ExternalMetricStatus,
    HorizontalPodAutoscaler, HorizontalPodAutoscalerStatus, MetricSpec, MetricStatus,
    MetricValueStatus, ObjectMetricStatus, PodsMetricStatus, ResourceMetricStatus,
};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as K8sQuantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use kube::api::{Api, DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use parking_lot::Mutex;
use rkcm_apimachinery::quantity::{Format, Quantity};
use rkcm_labels::Selector;
use rkcm_runtime::events::{EventRecorder, EventType};
use rkcm_runtime::informer::{
    wait_for_cache_sync, HasSynced, InformerFactory, Notification, SharedInformer,
};
use rkcm_runtime::workqueue::RateLimitingQueue;
use rkcm_runtime::{api_error, worker, Clock, ObjectKey, Shutdown, SystemClock};

use conditions::{set_condition, ABLE_TO_SCALE, SCALING_ACTIVE, SCALING_LIMITED};
use normalize::{History, Rules};
use replica_calculator::ReplicaCalculator;

/// Source of the controller's events.
pub const EVENT_SOURCE: &str = "horizontal-pod-autoscaler";

/// Why a reconcile failed; the HPA is retried at the next sync period.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The target's Scale could not be read.
    #[error("{0}")]
    GetScale(String),
    /// No metric gave a replica count.
    #[error("failed to compute desired number of replicas based on listed metrics for {reference}: {message}")]
    ComputeReplicas {
        /// `Kind/namespace/name` of the target.
        reference: String,
        /// kube's message.
        message: String,
    },
    /// Writing the Scale failed.
    #[error("failed to rescale {reference}: {message}")]
    Rescale {
        /// `Kind/namespace/name` of the target.
        reference: String,
        /// The API's message.
        message: String,
    },
    /// Writing the status failed.
    #[error("failed to update status for {name}: {message}")]
    UpdateStatus {
        /// The HPA.
        name: String,
        /// The API's message.
        message: String,
    },
    /// The scale's selector is missing or malformed.
    #[error("{0}")]
    Selector(String),
}

/// Settings (`HPAControllerConfiguration`).
#[derive(Clone)]
pub struct Config {
    /// `--horizontal-pod-autoscaler-sync-period` (15 s).
    pub sync_period: Duration,
    /// `--horizontal-pod-autoscaler-tolerance` (0.1).
    pub tolerance: f64,
    /// `--horizontal-pod-autoscaler-cpu-initialization-period` (5 m).
    pub cpu_initialization_period: Duration,
    /// `--horizontal-pod-autoscaler-initial-readiness-delay` (30 s).
    pub initial_readiness_delay: Duration,
    /// `--horizontal-pod-autoscaler-downscale-stabilization` (5 m).
    pub downscale_stabilization: Duration,
    /// Wall clock.
    pub clock: Arc<dyn Clock>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            sync_period: Duration::from_secs(15),
            tolerance: 0.1,
            cpu_initialization_period: Duration::from_secs(300),
            initial_readiness_delay: Duration::from_secs(30),
            downscale_stabilization: Duration::from_secs(300),
            clock: Arc::new(SystemClock),
        }
    }
}

/// One metric's proposal.
struct MetricProposal {
    replicas: i32,
    name: String,
    status: MetricStatus,
}

/// One metric's failure: the ScalingActive reason and kube's message.
struct MetricFailure {
    reason: &'static str,
    message: String,
}

/// The HPA controller.
pub struct HorizontalController {
    client: kube::Client,
    hpas: SharedInformer<HorizontalPodAutoscaler>,
    pods: SharedInformer<Pod>,
    queue: RateLimitingQueue<ObjectKey>,
    recorder: EventRecorder,
    config: Config,
    calculator: ReplicaCalculator,
    histories: Mutex<HashMap<ObjectKey, History>>,
    resources: Mutex<HashMap<(String, String), ApiResource>>,
}

fn spec_changed(old: &HorizontalPodAutoscaler, new: &HorizontalPodAutoscaler) -> bool {
    old.spec != new.spec || old.metadata.uid != new.metadata.uid
}

impl HorizontalController {
    /// Registers the controller's handlers on the factory's HPA and pod informers.
    pub fn new(
        factory: &InformerFactory,
        client: kube::Client,
        recorder: EventRecorder,
        config: Config,
    ) -> Arc<Self> {
        let queue = RateLimitingQueue::new("horizontalpodautoscaler");
        let hpas = factory.informer::<HorizontalPodAutoscaler>();
        let pods = factory.informer::<Pod>();
        // Resynced every --horizontal-pod-autoscaler-sync-period, as kube's handler
        // (`AddEventHandlerWithResyncPeriod(..., resyncPeriod)`); a resync leaves the spec
        // alone, and each HPA is already requeued a period after its sync.
        let q = queue.clone();
        hpas.add_event_handler_with_resync_period(
            move |note: Notification<HorizontalPodAutoscaler>| match note {
                Notification::Add(hpa) => q.add(ObjectKey::from_obj(&*hpa)),
                Notification::Update { old, new } => {
                    // The controller's own status writes must not start a sync loop.
                    if spec_changed(&old, &new) {
                        q.add(ObjectKey::from_obj(&*new));
                    }
                }
                Notification::Delete(_) => {}
            },
            config.sync_period,
        );
        let calculator = ReplicaCalculator {
            tolerance: config.tolerance,
            cpu_initialization_period: config.cpu_initialization_period,
            delay_of_initial_readiness_status: config.initial_readiness_delay,
        };
        Arc::new(Self {
            client,
            hpas,
            pods,
            queue,
            recorder,
            config,
            calculator,
            histories: Mutex::new(HashMap::new()),
            resources: Mutex::new(HashMap::new()),
        })
    }

    /// Runs `workers` sync loops until `shutdown`.
    pub async fn run(self: Arc<Self>, workers: usize, shutdown: Shutdown) {
        tracing::info!(
            controller = "horizontal-pod-autoscaler",
            "starting controller"
        );
        let synced: [&dyn HasSynced; 2] = [&self.hpas, &self.pods];
        if wait_for_cache_sync("HPA", &synced, &shutdown).await {
            let this = Arc::clone(&self);
            worker::run(
                self.queue.clone(),
                workers,
                shutdown,
                worker::ErrorPolicy::handle_error(),
                move |key| {
                    let this = Arc::clone(&this);
                    async move { this.sync(&key).await }
                },
            )
            .await;
        }
        tracing::info!(
            controller = "horizontal-pod-autoscaler",
            "shutting down controller"
        );
    }

    /// Reconciles the HPA `key` and requeues it for the next sync period, failed or not, as
    /// kube's fixed-interval queue does.
    pub async fn sync(&self, key: &ObjectKey) -> Result<(), Error> {
        let Some(hpa) = self.hpas.store().get(key) else {
            self.histories.lock().remove(key);
            return Ok(());
        };
        let result = self.reconcile(key, (*hpa).clone()).await;
        self.queue.add_after(key.clone(), self.config.sync_period);
        if let Err(e) = &result {
            tracing::warn!(hpa = %key, error = %e, "failed to reconcile HorizontalPodAutoscaler");
        }
        Ok(())
    }

    /// The API resource of `apiVersion`/`kind`, from discovery (cached).
    async fn resource_for(&self, api_version: &str, kind: &str) -> Result<ApiResource, String> {
        let cache_key = (api_version.to_string(), kind.to_string());
        if let Some(r) = self.resources.lock().get(&cache_key) {
            return Ok(r.clone());
        }
        let (group, version) = match api_version.split_once('/') {
            Some((g, v)) => (g, v),
            None => ("", api_version),
        };
        let gvk = GroupVersionKind::gvk(group, version, kind);
        let (resource, _) = kube::discovery::pinned_kind(&self.client, &gvk)
            .await
            .map_err(|e| match e {
                kube::Error::Discovery(_) => {
                    format!("no matches for kind {kind:?} in group {group:?}")
                }
                other => api_error::message(&other),
            })?;
        self.resources.lock().insert(cache_key, resource.clone());
        Ok(resource)
    }

    async fn scale_api(
        &self,
        namespace: &str,
        target: &CrossVersionObjectReference,
    ) -> Result<Api<DynamicObject>, String> {
        let api_version = target.api_version.clone().unwrap_or_default();
        let resource = self.resource_for(&api_version, &target.kind).await?;
        Ok(Api::namespaced_with(
            self.client.clone(),
            namespace,
            &resource,
        ))
    }

    fn pods_for(&self, namespace: &str, selector: &Selector) -> Vec<Arc<Pod>> {
        self.pods
            .store()
            .list_by_namespace(namespace)
            .into_iter()
            .filter(|p| selector.matches_opt(p.metadata.labels.as_ref()))
            .collect()
    }

    #[tracing::instrument(skip(self, hpa), fields(controller = "horizontal-pod-autoscaler"))]
    async fn reconcile(
        &self,
        key: &ObjectKey,
        mut hpa: HorizontalPodAutoscaler,
    ) -> Result<(), Error> {
        let now = self.config.clock.now();
        let original = hpa.status.clone();
        let spec = hpa.spec.clone().unwrap_or_default();
        let namespace = key.namespace_str().to_string();
        let target = spec.scale_target_ref.clone();
        let reference = format!("{}/{}/{}", target.kind, namespace, target.name);
        let mut conds = hpa
            .status
            .as_ref()
            .and_then(|s| s.conditions.clone())
            .unwrap_or_default();

        let scaled = match self.scale_api(&namespace, &target).await {
            Ok(api) => api
                .get_scale(&target.name)
                .await
                .map(|s| (api, s))
                .map_err(|e| api_error::message(&e)),
            Err(e) => Err(e),
        };
        let (api, mut scale) = match scaled {
            Ok(s) => s,
            Err(e) => {
                let message = format!("unable to get scale for {reference}: {e}");
                self.recorder
                    .event_for(&hpa, EventType::Warning, "FailedGetScale", &message);
                set_condition(
                    &mut conds,
                    ABLE_TO_SCALE,
                    false,
                    "FailedGetScale",
                    format!("the HPA controller was unable to get the target's current scale: {message}"),
                    now,
                );
                let (current, desired, metrics) = current_status(&hpa);
                self.write_status(&mut hpa, &original, conds, current, desired, metrics, None)
                    .await?;
                return Err(Error::GetScale(message));
            }
        };
        set_condition(
            &mut conds,
            ABLE_TO_SCALE,
            true,
            "SucceededGetScale",
            "the HPA controller was able to get the target's current scale",
            now,
        );
        let current = scale.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0);
        let status_replicas = scale.status.as_ref().map(|s| s.replicas).unwrap_or(0);
        let min = spec.min_replicas.unwrap_or(1);
        let max = spec.max_replicas;
        normalize::record_initial_recommendation(
            self.histories.lock().entry(key.clone()).or_default(),
            current,
            now,
        );

        let mut metric_statuses = Vec::new();
        let mut rescale_reason = String::new();
        let desired;
        let mut rescale = true;
        if current == 0 && min != 0 {
            desired = 0;
            rescale = false;
            set_condition(
                &mut conds,
                SCALING_ACTIVE,
                false,
                "ScalingDisabled",
                "scaling is disabled since the replica count of the target is zero",
                now,
            );
        } else if current > max {
            rescale_reason = "Current number of replicas above Spec.MaxReplicas".into();
            desired = max;
        } else if current < min {
            rescale_reason = "Current number of replicas below Spec.MinReplicas".into();
            desired = min;
        } else {
            let selector = scale
                .status
                .as_ref()
                .and_then(|s| s.selector.clone())
                .unwrap_or_default();
            let selector = match self.parse_selector(&hpa, &selector, &mut conds, now) {
                Ok(s) => s,
                Err(e) => {
                    let desired_before = original_desired(&hpa);
                    self.write_status(
                        &mut hpa,
                        &original,
                        conds,
                        current,
                        desired_before,
                        metric_statuses,
                        None,
                    )
                    .await?;
                    return Err(e);
                }
            };
            let pods = self.pods_for(&namespace, &selector);
            let selector_text = scale
                .status
                .as_ref()
                .and_then(|s| s.selector.clone())
                .unwrap_or_default();
            let specs = spec.metrics.clone().unwrap_or_default();
            let mut best: Option<(i32, String)> = None;
            let mut invalid = 0usize;
            let mut first_failure: Option<MetricFailure> = None;
            for spec in &specs {
                match self
                    .replicas_for_metric(
                        &namespace,
                        spec,
                        current,
                        status_replicas,
                        &selector_text,
                        &pods,
                        now,
                    )
                    .await
                {
                    Ok(p) => {
                        metric_statuses.push(p.status);
                        if best
                            .as_ref()
                            .is_none_or(|(r, _)| *r == 0 || p.replicas > *r)
                        {
                            best = Some((p.replicas, p.name));
                        }
                    }
                    Err(f) => {
                        self.recorder
                            .event_for(&hpa, EventType::Warning, f.reason, &f.message);
                        if first_failure.is_none() {
                            first_failure = Some(f);
                        }
                        invalid += 1;
                    }
                }
            }
            let (metric_replicas, metric_name) = best.unwrap_or((0, String::new()));
            if invalid >= specs.len() || (invalid > 0 && metric_replicas < current) {
                let failure = first_failure.unwrap_or(MetricFailure {
                    reason: "FailedGetResourceMetric",
                    message: "no metrics are defined".into(),
                });
                set_condition(
                    &mut conds,
                    SCALING_ACTIVE,
                    false,
                    failure.reason,
                    format!(
                        "the HPA was unable to compute the replica count: {}",
                        failure.message
                    ),
                    now,
                );
                let message = format!(
                    "invalid metrics ({invalid} invalid out of {}), first error is: {}",
                    specs.len(),
                    failure.message
                );
                let (_, desired_before, metrics_before) = current_status(&hpa);
                self.write_status(
                    &mut hpa,
                    &original,
                    conds,
                    current,
                    desired_before,
                    metrics_before,
                    None,
                )
                .await?;
                self.recorder.event_for(
                    &hpa,
                    EventType::Warning,
                    "FailedComputeMetricsReplicas",
                    &message,
                );
                return Err(Error::ComputeReplicas { reference, message });
            }
            set_condition(
                &mut conds,
                SCALING_ACTIVE,
                true,
                "ValidMetricFound",
                format!(
                    "the HPA was able to successfully calculate a replica count from {metric_name}"
                ),
                now,
            );
            if metric_replicas > current {
                rescale_reason = format!("{metric_name} above target");
            }
            if metric_replicas < current {
                rescale_reason = "All metrics below target".into();
            }
            let normalized = {
                let mut histories = self.histories.lock();
                let history = histories.entry(key.clone()).or_default();
                match &spec.behavior {
                    None => normalize::normalize_desired_replicas(
                        history,
                        current,
                        metric_replicas,
                        min,
                        max,
                        self.config.downscale_stabilization,
                        now,
                    ),
                    Some(b) => normalize::normalize_desired_replicas_with_behaviors(
                        history,
                        current,
                        metric_replicas,
                        min,
                        max,
                        &Rules::scale_up(b.scale_up.as_ref()),
                        &Rules::scale_down(
                            b.scale_down.as_ref(),
                            self.config.downscale_stabilization,
                        ),
                        now,
                    ),
                }
            };
            let (reason, message) = normalized.able_to_scale;
            set_condition(&mut conds, ABLE_TO_SCALE, true, reason, message, now);
            let (limited, reason, message) = normalized.scaling_limited;
            set_condition(&mut conds, SCALING_LIMITED, limited, reason, message, now);
            desired = normalized.replicas;
            rescale = desired != current;
        }

        if rescale {
            scale.spec.get_or_insert_with(Default::default).replicas = Some(desired);
            if let Err(e) = api
                .replace_scale(&target.name, &PostParams::default(), &scale)
                .await
            {
                let message = api_error::message(&e);
                self.recorder.event_for(
                    &hpa,
                    EventType::Warning,
                    "FailedRescale",
                    format!("New size: {desired}; reason: {rescale_reason}; error: {message}"),
                );
                set_condition(
                    &mut conds,
                    ABLE_TO_SCALE,
                    false,
                    "FailedUpdateScale",
                    format!("the HPA controller was unable to update the target scale: {message}"),
                    now,
                );
                let (_, desired_before, metrics) = current_status(&hpa);
                self.write_status(
                    &mut hpa,
                    &original,
                    conds,
                    current,
                    desired_before,
                    metrics,
                    None,
                )
                .await?;
                return Err(Error::Rescale { reference, message });
            }
            set_condition(
                &mut conds,
                ABLE_TO_SCALE,
                true,
                "SucceededRescale",
                format!("the HPA controller was able to update the target scale to {desired}"),
                now,
            );
            self.recorder.event_for(
                &hpa,
                EventType::Normal,
                "SuccessfulRescale",
                format!("New size: {desired}; reason: {rescale_reason}"),
            );
            if let Some(b) = &spec.behavior {
                let mut histories = self.histories.lock();
                normalize::store_scale_event(
                    histories.entry(key.clone()).or_default(),
                    &Rules::scale_up(b.scale_up.as_ref()),
                    &Rules::scale_down(b.scale_down.as_ref(), self.config.downscale_stabilization),
                    current,
                    desired,
                    now,
                );
            }
            tracing::info!(hpa = %key, old = current, new = desired, reason = %rescale_reason, "successful rescale");
            self.write_status(
                &mut hpa,
                &original,
                conds,
                current,
                desired,
                metric_statuses,
                Some(now),
            )
            .await
        } else {
            self.write_status(
                &mut hpa,
                &original,
                conds,
                current,
                current,
                metric_statuses,
                None,
            )
            .await
        }
    }

    fn parse_selector(
        &self,
        hpa: &HorizontalPodAutoscaler,
        selector: &str,
        conds: &mut Vec<k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscalerCondition>,
        now: Timestamp,
    ) -> Result<Selector, Error> {
        if selector.is_empty() {
            let message = "selector is required";
            self.recorder
                .event_for(hpa, EventType::Warning, "SelectorRequired", message);
            set_condition(
                conds,
                SCALING_ACTIVE,
                false,
                "InvalidSelector",
                "the HPA target's scale is missing a selector",
                now,
            );
            return Err(Error::Selector(message.into()));
        }
        Selector::parse(selector).map_err(|e| {
            let message = format!(
                "couldn't convert selector into a corresponding internal selector object: {e}"
            );
            self.recorder
                .event_for(hpa, EventType::Warning, "InvalidSelector", &message);
            set_condition(
                conds,
                SCALING_ACTIVE,
                false,
                "InvalidSelector",
                message.clone(),
                now,
            );
            Error::Selector(message)
        })
    }

    /// The replica count one metric asks for (`computeReplicasForMetric`).
    #[allow(clippy::too_many_arguments)]
    async fn replicas_for_metric(
        &self,
        namespace: &str,
        spec: &MetricSpec,
        current: i32,
        status_replicas: i32,
        selector: &str,
        pods: &[Arc<Pod>],
        now: Timestamp,
    ) -> Result<MetricProposal, MetricFailure> {
        match spec.type_.as_str() {
            "Resource" | "ContainerResource" => {
                let container_source = spec.container_resource.as_ref();
                let (resource, container, target, reason) =
                    match (spec.resource.as_ref(), container_source) {
                        (Some(r), _) if spec.type_ == "Resource" => (
                            r.name.clone(),
                            None,
                            r.target.clone(),
                            "FailedGetResourceMetric",
                        ),
                        (_, Some(c)) if spec.type_ == "ContainerResource" => (
                            c.name.clone(),
                            Some(c.container.clone()),
                            c.target.clone(),
                            "FailedGetContainerResourceMetric",
                        ),
                        _ => {
                            return Err(MetricFailure {
                                reason: "InvalidMetricSourceType",
                                message: format!("invalid metric source type: {}", spec.type_),
                            })
                        }
                    };
                let fail = |message: String| MetricFailure { reason, message };
                let (metrics, _) = metrics_client::resource_metric(
                    &self.client,
                    &resource,
                    namespace,
                    selector,
                    container.as_deref(),
                )
                .await
                .map_err(|e| {
                    fail(format!(
                        "unable to get metrics for resource {resource}: {e}"
                    ))
                })?;
                let label = |kind: &str| match &container {
                    None => format!("{resource} resource{kind}"),
                    Some(_) => format!("{resource} container resource{kind}"),
                };
                let (replicas, name, current_value) = if let Some(utilization) =
                    target.average_utilization
                {
                    let p = self
                        .calculator
                        .resource_replicas(
                            current,
                            utilization,
                            &resource,
                            container.as_deref(),
                            metrics,
                            pods,
                            now,
                        )
                        .map_err(|e| fail(e.0))?;
                    (
                        p.replicas,
                        label(" utilization (percentage of request)"),
                        MetricValueStatus {
                            average_utilization: Some(p.utilization as i32),
                            average_value: Some(milli_quantity(p.raw_average)),
                            value: None,
                        },
                    )
                } else if let Some(value) = target_milli(target.average_value.as_ref()) {
                    let p = self
                        .calculator
                        .plain_metric_replicas(current, value, Some(&resource), metrics, pods, now)
                        .map_err(|e| fail(e.0))?;
                    (
                        p.replicas,
                        label(""),
                        MetricValueStatus {
                            average_value: Some(milli_quantity(p.utilization)),
                            ..MetricValueStatus::default()
                        },
                    )
                } else {
                    return Err(fail(
                        "invalid resource metric source: neither an average utilization target nor an average value (usage) target was set".into(),
                    ));
                };
                let status = match container {
                    None => MetricStatus {
                        type_: "Resource".into(),
                        resource: Some(ResourceMetricStatus {
                            name: resource,
                            current: current_value,
                        }),
                        ..MetricStatus::default()
                    },
                    Some(container) => MetricStatus {
                        type_: "ContainerResource".into(),
                        container_resource: Some(ContainerResourceMetricStatus {
                            name: resource,
                            container,
                            current: current_value,
                        }),
                        ..MetricStatus::default()
                    },
                };
                Ok(MetricProposal {
                    replicas,
                    name,
                    status,
                })
            }
            "Pods" => {
                let fail = |message: String| MetricFailure {
                    reason: "FailedGetPodsMetric",
                    message,
                };
                let source = spec
                    .pods
                    .as_ref()
                    .ok_or_else(|| fail("invalid pods metric source".into()))?;
                let metric = &source.metric.name;
                let metric_selector = selector_string(source.metric.selector.as_ref());
                let target =
                    target_milli(source.target.average_value.as_ref()).ok_or_else(|| {
                        fail(
                            "invalid pods metric source: the average value target is required"
                                .into(),
                        )
                    })?;
                let (metrics, _) = metrics_client::pods_metric(
                    &self.client,
                    metric,
                    namespace,
                    selector,
                    &metric_selector,
                )
                .await
                .map_err(|e| fail(format!("unable to get metric {metric}: {e}")))?;
                let p = self
                    .calculator
                    .plain_metric_replicas(current, target, None, metrics, pods, now)
                    .map_err(|e| fail(e.0))?;
                Ok(MetricProposal {
                    replicas: p.replicas,
                    name: format!("pods metric {metric}"),
                    status: MetricStatus {
                        type_: "Pods".into(),
                        pods: Some(PodsMetricStatus {
                            metric: source.metric.clone(),
                            current: MetricValueStatus {
                                average_value: Some(milli_quantity(p.utilization)),
                                ..MetricValueStatus::default()
                            },
                        }),
                        ..MetricStatus::default()
                    },
                })
            }
            "Object" => {
                let fail = |message: String| MetricFailure {
                    reason: "FailedGetObjectMetric",
                    message,
                };
                let source = spec
                    .object
                    .as_ref()
                    .ok_or_else(|| fail("invalid object metric source".into()))?;
                let metric = &source.metric.name;
                let described = &source.described_object;
                let group_resource = match self
                    .resource_for(
                        described.api_version.as_deref().unwrap_or("v1"),
                        &described.kind,
                    )
                    .await
                {
                    Ok(r) if r.group.is_empty() => r.plural,
                    Ok(r) => format!("{}.{}", r.plural, r.group),
                    Err(e) => return Err(fail(format!("unable to get metric {metric}: {e}"))),
                };
                let (value, _) = metrics_client::object_metric(
                    &self.client,
                    metric,
                    namespace,
                    &group_resource,
                    &described.name,
                    &selector_string(source.metric.selector.as_ref()),
                )
                .await
                .map_err(|e| {
                    fail(format!(
                        "unable to get metric {metric}: {} on {namespace} {}/{e}",
                        described.kind, described.name
                    ))
                })?;
                let (replicas, current_value) = if let Some(target) =
                    target_milli(source.target.value.as_ref())
                {
                    let ready = replica_calculator::ready_pods(pods).map_err(|e| fail(e.0))?;
                    let ratio = value as f64 / target as f64;
                    (
                        self.calculator.usage_ratio_replicas(current, ratio, ready),
                        MetricValueStatus {
                            value: Some(milli_quantity(value)),
                            ..MetricValueStatus::default()
                        },
                    )
                } else if let Some(target) = target_milli(source.target.average_value.as_ref()) {
                    let (replicas, average) =
                        self.calculator
                            .per_pod_replicas(status_replicas, value, target);
                    (
                        replicas,
                        MetricValueStatus {
                            average_value: Some(milli_quantity(average)),
                            ..MetricValueStatus::default()
                        },
                    )
                } else {
                    return Err(fail("invalid object metric source: neither a value target nor an average value target was set".into()));
                };
                Ok(MetricProposal {
                    replicas,
                    name: format!("{} metric {metric}", described.kind),
                    status: MetricStatus {
                        type_: "Object".into(),
                        object: Some(ObjectMetricStatus {
                            described_object: described.clone(),
                            metric: source.metric.clone(),
                            current: current_value,
                        }),
                        ..MetricStatus::default()
                    },
                })
            }
            "External" => {
                let fail = |message: String| MetricFailure {
                    reason: "FailedGetExternalMetric",
                    message,
                };
                let source = spec
                    .external
                    .as_ref()
                    .ok_or_else(|| fail("invalid external metric source".into()))?;
                let metric = &source.metric.name;
                let metric_selector = selector_string(source.metric.selector.as_ref());
                let (values, _) = metrics_client::external_metric(
                    &self.client,
                    metric,
                    namespace,
                    &metric_selector,
                )
                .await
                .map_err(|e| {
                    fail(format!(
                        "unable to get external metric {namespace}/{metric}/{metric_selector}: {e}"
                    ))
                })?;
                let total: i64 = values.iter().sum();
                let (replicas, current_value) = if let Some(target) =
                    target_milli(source.target.value.as_ref())
                {
                    let ready = replica_calculator::ready_pods(pods).map_err(|e| fail(e.0))?;
                    (
                        self.calculator.usage_ratio_replicas(
                            current,
                            total as f64 / target as f64,
                            ready,
                        ),
                        MetricValueStatus {
                            value: Some(milli_quantity(total)),
                            ..MetricValueStatus::default()
                        },
                    )
                } else if let Some(target) = target_milli(source.target.average_value.as_ref()) {
                    let (replicas, average) =
                        self.calculator
                            .per_pod_replicas(status_replicas, total, target);
                    (
                        replicas,
                        MetricValueStatus {
                            average_value: Some(milli_quantity(average)),
                            ..MetricValueStatus::default()
                        },
                    )
                } else {
                    return Err(fail("invalid external metric source: neither a value target nor an average value target was set".into()));
                };
                Ok(MetricProposal {
                    replicas,
                    name: format!("external metric {metric}({metric_selector})"),
                    status: MetricStatus {
                        type_: "External".into(),
                        external: Some(ExternalMetricStatus {
                            metric: source.metric.clone(),
                            current: current_value,
                        }),
                        ..MetricStatus::default()
                    },
                })
            }
            other => Err(MetricFailure {
                reason: "InvalidMetricSourceType",
                message: format!("unknown metric source type {other:?}"),
            }),
        }
    }

    /// Writes the new status if it differs from `original` (`setStatus`, `updateStatusIfNeeded`).
    #[allow(clippy::too_many_arguments)]
    async fn write_status(
        &self,
        hpa: &mut HorizontalPodAutoscaler,
        original: &Option<HorizontalPodAutoscalerStatus>,
        conditions: Vec<k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscalerCondition>,
        current: i32,
        desired: i32,
        metrics: Vec<MetricStatus>,
        scaled_at: Option<Timestamp>,
    ) -> Result<(), Error> {
        let last_scale_time = scaled_at
            .map(Time)
            .or_else(|| hpa.status.as_ref().and_then(|s| s.last_scale_time.clone()));
        let status = HorizontalPodAutoscalerStatus {
            current_replicas: Some(current),
            desired_replicas: desired,
            last_scale_time,
            current_metrics: Some(metrics).filter(|m| !m.is_empty()),
            conditions: Some(conditions),
            observed_generation: hpa.status.as_ref().and_then(|s| s.observed_generation),
        };
        if original.as_ref() == Some(&status) {
            return Ok(());
        }
        hpa.status = Some(status);
        let name = hpa.metadata.name.clone().unwrap_or_default();
        let api: Api<HorizontalPodAutoscaler> = Api::namespaced(
            self.client.clone(),
            hpa.metadata.namespace.as_deref().unwrap_or_default(),
        );
        if let Err(e) = api
            .replace_status(&name, &PostParams::default(), &*hpa)
            .await
        {
            let message = api_error::message(&e);
            self.recorder
                .event_for(&*hpa, EventType::Warning, "FailedUpdateStatus", &message);
            return Err(Error::UpdateStatus { name, message });
        }
        Ok(())
    }
}

/// The status's current replicas, desired replicas and metrics before this reconcile.
fn current_status(hpa: &HorizontalPodAutoscaler) -> (i32, i32, Vec<MetricStatus>) {
    let s = hpa.status.clone().unwrap_or_default();
    (
        s.current_replicas.unwrap_or(0),
        s.desired_replicas,
        s.current_metrics.unwrap_or_default(),
    )
}

fn original_desired(hpa: &HorizontalPodAutoscaler) -> i32 {
    current_status(hpa).1
}

/// A target quantity in milli-units.
fn target_milli(q: Option<&K8sQuantity>) -> Option<i64> {
    q.and_then(|q| Quantity::parse(&q.0).ok())
        .map(|q| q.milli_value())
}

/// `resource.NewMilliQuantity(v, DecimalSI)`.
fn milli_quantity(milli: i64) -> K8sQuantity {
    K8sQuantity(Quantity::new_milli(milli, Format::DecimalSI).to_string())
}

/// A metric's label selector as a selector string (empty for none).
fn selector_string(selector: Option<&LabelSelector>) -> String {
    let Some(selector) = selector else {
        return String::new();
    };
    let mut terms: Vec<String> = selector
        .match_labels
        .iter()
        .flatten()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    for e in selector.match_expressions.iter().flatten() {
        let values = e.values.clone().unwrap_or_default().join(",");
        terms.push(match e.operator.as_str() {
            "In" => format!("{} in ({values})", e.key),
            "NotIn" => format!("{} notin ({values})", e.key),
            "Exists" => e.key.clone(),
            _ => format!("!{}", e.key),
        });
    }
    terms.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_quantities_are_milli_quantities() {
        assert_eq!(milli_quantity(200).0, "200m");
        assert_eq!(milli_quantity(2000).0, "2");
        assert_eq!(target_milli(Some(&K8sQuantity("1.5".into()))), Some(1500));
    }

    #[test]
    fn metric_selectors_become_selector_strings() {
        let s: LabelSelector = serde_json::from_value(serde_json::json!({
            "matchLabels": {"a": "b"},
            "matchExpressions": [{"key": "c", "operator": "In", "values": ["d", "e"]}],
        }))
        .expect("selector");
        assert_eq!(selector_string(Some(&s)), "a=b,c in (d,e)");
        assert_eq!(selector_string(None), "");
    }
}
