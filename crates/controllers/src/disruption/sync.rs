//! `sync(key)` of a budget (`sync`, `trySync`, `getExpectedPodCount`, `getExpectedScale`,
//! `failSafe`) and of a pod with a stale `DisruptionTarget` condition
//! (`syncStalePodDisruption`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::api::{Api, PostParams};
use rkcm_labels::Selector;
use rkcm_runtime::events::EventType;
use rkcm_runtime::{api_error, ObjectKey};

use super::budget::{
    build_disrupted_pod_map, count_healthy_pods, expected_and_desired, fail_safe,
    needs_controller_scale, new_status, Counts,
};
use super::scale::scale_controller;
pub use super::scale::ExpectedCountError;
use super::stale::{reset_disruption_target, stale_disruption_condition};
use super::DisruptionController;

/// Why a sync failed; the key is retried with backoff.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// The budget's selector is invalid.
    #[error("{0}")]
    Selector(String),
    /// The expected pod count could not be computed.
    #[error(transparent)]
    ExpectedCount(#[from] ExpectedCountError),
    /// Writing the budget's status failed.
    #[error("failed to update the status of PodDisruptionBudget {key}: {}", api_error::message(.source))]
    UpdateStatus {
        /// The budget.
        key: ObjectKey,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// Resetting a pod's stale `DisruptionTarget` condition failed.
    #[error("error syncing Pod {key} to clear DisruptionTarget condition: {}", api_error::message(.source))]
    StalePod {
        /// The pod.
        key: ObjectKey,
        /// The API error.
        #[source]
        source: kube::Error,
    },
}

impl SyncError {
    fn is_conflict(&self) -> bool {
        matches!(self, SyncError::UpdateStatus { source, .. } if api_error::is_conflict(source))
    }
}

/// A selector as Go's `%v` prints a `*metav1.LabelSelector`.
fn go_selector(selector: Option<&LabelSelector>) -> String {
    let Some(s) = selector else {
        return "nil".to_string();
    };
    let labels: String = s
        .match_labels
        .iter()
        .flatten()
        .map(|(k, v)| format!("{k}: {v},"))
        .collect();
    let exprs: String = s
        .match_expressions
        .iter()
        .flatten()
        .map(|e| {
            format!(
                "LabelSelectorRequirement{{Key:{},Operator:{},Values:[{}],}},",
                e.key,
                e.operator,
                e.values.clone().unwrap_or_default().join(" ")
            )
        })
        .collect();
    format!("&LabelSelector{{MatchLabels:map[string]string{{{labels}}},MatchExpressions:[]LabelSelectorRequirement{{{exprs}}},}}")
}

impl DisruptionController {
    /// Syncs budget `key`; a failure other than a conflict stops its disruptions (`failSafe`).
    pub async fn sync(&self, key: &ObjectKey) -> Result<(), SyncError> {
        let Some(pdb) = self.pdbs.store().get(key) else {
            tracing::debug!(pdb = %key, "podDisruptionBudget has been deleted");
            return Ok(());
        };
        match self.try_sync(key, &pdb).await {
            Ok(()) => Ok(()),
            Err(e) if e.is_conflict() => Err(e),
            Err(e) => {
                tracing::error!(pdb = %key, error = %e, "Failed to sync PDB");
                let failed = fail_safe(&pdb, e.to_string(), self.clock.now());
                self.write_status(key, &failed).await
            }
        }
    }

    async fn try_sync(&self, key: &ObjectKey, pdb: &PodDisruptionBudget) -> Result<(), SyncError> {
        let spec = pdb.spec.clone().unwrap_or_default();
        let selector = match Selector::from_optional_label_selector(spec.selector.as_ref()) {
            Ok(s) => s,
            Err(e) => {
                self.recorder.event_for(
                    pdb,
                    EventType::Warning,
                    "NoPods",
                    format!("Failed to get pods: {e}"),
                );
                return Err(SyncError::Selector(e.to_string()));
            }
        };
        // The selector's matchLabels narrow the pods read (decoded) to those carrying one of its
        // pairs; the whole selector then decides.
        let match_labels = spec
            .selector
            .as_ref()
            .and_then(|s| s.match_labels.clone())
            .unwrap_or_default();
        let pods: Vec<Arc<Pod>> = self
            .pods
            .store()
            .list_by_labels(key.namespace_str(), &match_labels)
            .into_iter()
            .filter(|p| selector.matches_opt(p.metadata.labels.as_ref()))
            .collect();
        if pods.is_empty() {
            self.recorder
                .event_for(pdb, EventType::Normal, "NoPods", "No matching pods found");
        }
        let pods: Vec<&Pod> = pods.iter().map(|p| &**p).collect();

        let (expected, desired, unmanaged) = match self.expected_pod_count(&spec, &pods).await {
            Ok(counts) => counts,
            Err(e) => {
                self.recorder.event_for(
                    pdb,
                    EventType::Warning,
                    "CalculateExpectedPodCountFailed",
                    format!("Failed to calculate the number of expected pods: {e}"),
                );
                return Err(e.into());
            }
        };
        if !unmanaged.is_empty() {
            tracing::debug!(pdb = %key, pods = ?unmanaged, "Found unmanaged pods associated with this PDB");
            self.recorder.event_for(
                pdb,
                EventType::Warning,
                "UnmanagedPods",
                format!(
                    "Pods selected by this PodDisruptionBudget (selector: {}) were found to be unmanaged. As a result, the status of the PDB cannot be calculated correctly, which may result in undefined behavior. To account for these pods please set \".spec.minAvailable\" field of the PDB to an integer value.",
                    go_selector(spec.selector.as_ref())
                ),
            );
        }

        let now = self.clock.now();
        let previous = pdb.status.as_ref().and_then(|s| s.disrupted_pods.as_ref());
        let disrupted = build_disrupted_pod_map(&pods, previous, now);
        for name in &disrupted.not_deleted {
            if let Some(pod) = pods
                .iter()
                .find(|p| p.metadata.name.as_deref() == Some(name))
            {
                // kube names the budget's namespace twice here.
                self.recorder.event_for(
                    *pod,
                    EventType::Warning,
                    "NotDeleted",
                    format!(
                        "Pod was expected by PDB {0}/{0} to be deleted but it wasn't",
                        key.namespace_str()
                    ),
                );
            }
        }
        let counts = Counts {
            current_healthy: count_healthy_pods(&pods, &disrupted.map, now),
            desired_healthy: desired,
            expected_pods: expected,
        };
        if let Some(new) = new_status(pdb, counts, disrupted.map, now) {
            self.write_status(key, &new).await?;
        }
        if let Some(at) = disrupted.recheck_at {
            let delay = Duration::try_from(now.duration_until(at)).unwrap_or(Duration::ZERO);
            self.recheck_queue.add_after(key.clone(), delay);
        }
        Ok(())
    }

    /// `(expectedCount, desiredHealthy, unmanaged pods)` (`getExpectedPodCount`).
    async fn expected_pod_count(
        &self,
        spec: &k8s_openapi::api::policy::v1::PodDisruptionBudgetSpec,
        pods: &[&Pod],
    ) -> Result<(i32, i32, Vec<String>), ExpectedCountError> {
        let mut unmanaged = Vec::new();
        let scale = if needs_controller_scale(spec) {
            Some(self.expected_scale(pods, &mut unmanaged).await?)
        } else {
            None
        };
        let (expected, desired) = expected_and_desired(spec, pods.len(), scale)?;
        Ok((expected, desired, unmanaged))
    }

    /// The sum of the scales of the pods' controllers, each counted once (`getExpectedScale`).
    async fn expected_scale(
        &self,
        pods: &[&Pod],
        unmanaged: &mut Vec<String>,
    ) -> Result<i32, ExpectedCountError> {
        let mut scales: BTreeMap<String, i32> = BTreeMap::new();
        for pod in pods {
            let name = pod.metadata.name.clone().unwrap_or_default();
            let Some(r) = pod
                .metadata
                .owner_references
                .iter()
                .flatten()
                .find(|r| r.controller == Some(true))
            else {
                unmanaged.push(name);
                continue;
            };
            if scales.contains_key(&r.uid) {
                continue;
            }
            let namespace = pod.metadata.namespace.as_deref().unwrap_or("");
            let found = match self.caches.find(r, namespace)? {
                Some(found) => Some(found),
                None => scale_controller(&self.client, r, namespace).await?,
            };
            let Some(found) = found else {
                return Err(ExpectedCountError::NoControllers(name));
            };
            scales.insert(found.uid, found.scale);
        }
        Ok(scales.values().fold(0i32, |a, b| a.saturating_add(*b)))
    }

    /// Writes `pdb`'s status, once: a failure is retried by requeueing (`writePdbStatus`).
    async fn write_status(
        &self,
        key: &ObjectKey,
        pdb: &PodDisruptionBudget,
    ) -> Result<(), SyncError> {
        let api: Api<PodDisruptionBudget> =
            Api::namespaced(self.client.clone(), key.namespace_str());
        api.replace_status(&key.name, &PostParams::default(), pdb)
            .await
            .map(|_| ())
            .map_err(|source| SyncError::UpdateStatus {
                key: key.clone(),
                source,
            })
    }

    /// Sets pod `key`'s `DisruptionTarget` condition back to `False` once it is stale
    /// (`syncStalePodDisruption`).
    pub async fn sync_stale_pod_disruption(&self, key: &ObjectKey) -> Result<(), SyncError> {
        let Some(pod) = self.pods.store().get(key) else {
            return Ok(());
        };
        let now = self.clock.now();
        match stale_disruption_condition(&pod, self.stale_pod_disruption_timeout, now) {
            None => return Ok(()),
            Some(wait) if !wait.is_zero() => {
                self.stale_pod_queue.add_after(key.clone(), wait);
                return Ok(());
            }
            Some(_) => {}
        }
        let mut new = (*pod).clone();
        if !reset_disruption_target(&mut new, now) {
            return Ok(());
        }
        let api: Api<Pod> = Api::namespaced(self.client.clone(), key.namespace_str());
        api.replace_status(&key.name, &PostParams::default(), &new)
            .await
            .map_err(|source| SyncError::StalePod {
                key: key.clone(),
                source,
            })?;
        tracing::debug!(pod = %key, "Reset stale DisruptionTarget condition to False");
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::super::{Config, DisruptionController};
    use super::*;
    use http::{Method, StatusCode};
    use jiff::Timestamp;
    use k8s_openapi::api::core::v1::Event;
    use k8s_openapi::api::policy::v1::PodDisruptionBudgetStatus;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
    use rkcm_runtime::events::EventRecorder;
    use rkcm_runtime::informer::InformerFactory;
    use rkcm_runtime::testing::{ApiRequest, ApiResponse, FakeApi};
    use rkcm_runtime::FakeClock;
    use serde_json::json;
    use tokio::sync::mpsc;

    const STATUS: &str = "/apis/policy/v1/namespaces/default/poddisruptionbudgets/foobar/status";

    struct Harness {
        ctrl: Arc<DisruptionController>,
        api: FakeApi,
        clock: FakeClock,
        events: mpsc::Receiver<Event>,
    }

    fn now() -> Timestamp {
        "2025-01-01T00:10:00Z".parse().unwrap()
    }

    /// Status writes are echoed back; `extra` answers anything else.
    fn harness_with(
        extra: impl Fn(&ApiRequest) -> Option<ApiResponse> + Send + Sync + 'static,
    ) -> Harness {
        let api = FakeApi::new(move |req| {
            if let Some(answer) = extra(req) {
                return answer;
            }
            if req.method == Method::PUT && req.path.ends_with("/status") {
                return ApiResponse::ok(&req.body);
            }
            ApiResponse::not_found("things", &req.path)
        });
        let factory = InformerFactory::new(api.client(), Duration::ZERO);
        let (recorder, events) = EventRecorder::channel("controllermanager", 100);
        let clock = FakeClock::new(now());
        let ctrl = DisruptionController::new(
            &factory,
            api.client(),
            recorder,
            Config {
                clock: Arc::new(clock.clone()),
                ..Config::default()
            },
        );
        Harness {
            ctrl,
            api,
            clock,
            events,
        }
    }

    fn harness() -> Harness {
        harness_with(|_| None)
    }

    impl Harness {
        fn add_pdb(&self, pdb: &PodDisruptionBudget) -> ObjectKey {
            self.ctrl.pdbs.store().insert(Arc::new(pdb.clone()));
            ObjectKey::from_obj(pdb)
        }

        fn add_pod(&self, pod: &Pod) {
            self.ctrl.pods.store().insert(Arc::new(pod.clone()));
        }

        /// The status of the last budget status write.
        fn written(&self) -> PodDisruptionBudgetStatus {
            let req = self
                .api
                .requests()
                .into_iter()
                .rev()
                .find(|r| r.is(Method::PUT, STATUS))
                .expect("a status write");
            let pdb: PodDisruptionBudget = serde_json::from_value(req.body).expect("a budget");
            pdb.status.expect("a status")
        }

        /// Syncs, then feeds the written budget back into the cache as the informer would.
        async fn sync(&self, key: &ObjectKey) {
            self.ctrl.sync(key).await.expect("sync");
            if let Some(req) = self
                .api
                .requests()
                .into_iter()
                .rev()
                .find(|r| r.is(Method::PUT, STATUS))
            {
                let pdb: PodDisruptionBudget = serde_json::from_value(req.body).expect("a budget");
                self.ctrl.pdbs.store().insert(Arc::new(pdb));
            }
        }

        fn reasons(&mut self) -> Vec<String> {
            let mut out = Vec::new();
            while let Ok(e) = self.events.try_recv() {
                out.push(e.reason.unwrap_or_default());
            }
            out
        }
    }

    /// `(disruptionsAllowed, currentHealthy, desiredHealthy, expectedPods)`, as kube's
    /// `VerifyPdbStatus`.
    fn counts(s: &PodDisruptionBudgetStatus) -> (i32, i32, i32, i32) {
        (
            s.disruptions_allowed,
            s.current_healthy,
            s.desired_healthy,
            s.expected_pods,
        )
    }

    fn owned_by(mut p: Pod, api_version: &str, kind: &str, name: &str, uid: String) -> Pod {
        p.metadata.owner_references = Some(vec![controller_ref(api_version, kind, name, uid)]);
        p
    }

    fn set_ready(p: &mut Pod, ready: bool) {
        p.status.as_mut().unwrap().conditions.as_mut().unwrap()[0].status =
            if ready { "True" } else { "False" }.into();
    }

    fn condition(s: &PodDisruptionBudgetStatus) -> (String, String, String) {
        let c = s
            .conditions
            .iter()
            .flatten()
            .find(|c| c.type_ == "DisruptionAllowed")
            .expect("DisruptionAllowed");
        (c.status.clone(), c.reason.clone(), c.message.clone())
    }

    /// `TestNoSelector`: an empty selector selects every pod of the namespace.
    #[tokio::test]
    async fn an_empty_selector_selects_every_pod() {
        let h = harness();
        let mut budget = pdb(Some(IntOrString::Int(3)), None);
        budget.spec.as_mut().unwrap().selector = Some(Default::default());
        let key = h.add_pdb(&budget);
        h.sync(&key).await;
        assert_eq!(counts(&h.written()), (0, 0, 3, 0));
        h.add_pod(&pod("p"));
        h.sync(&key).await;
        assert_eq!(counts(&h.written()), (0, 1, 3, 1));
        assert_eq!(h.written().observed_generation, Some(1));
    }

    /// `TestUnavailable`: one disruption above minAvailable, none once a pod is unready.
    #[tokio::test]
    async fn unready_pods_are_not_healthy() {
        let mut h = harness();
        let key = h.add_pdb(&pdb(Some(IntOrString::Int(3)), None));
        h.sync(&key).await;
        assert_eq!(h.reasons(), ["NoPods"]);
        let mut pods: Vec<Pod> = (0..4).map(|i| pod(&format!("p{i}"))).collect();
        for p in &pods {
            h.add_pod(p);
        }
        h.sync(&key).await;
        assert_eq!(counts(&h.written()), (1, 4, 3, 4));
        assert_eq!(
            condition(&h.written()),
            ("True".into(), "SufficientPods".into(), String::new())
        );
        set_ready(&mut pods[0], false);
        h.add_pod(&pods[0]);
        h.sync(&key).await;
        assert_eq!(counts(&h.written()), (0, 3, 3, 4));
        assert_eq!(condition(&h.written()).1, "InsufficientPods");
        let writes = h.api.requests().len();
        // Nothing changed: nothing is written.
        h.sync(&key).await;
        assert_eq!(h.api.requests().len(), writes);
    }

    /// `TestIntegerMaxUnavailable`: unmanaged pods give no expected count, hence no disruption,
    /// and an `UnmanagedPods` warning.
    #[tokio::test]
    async fn max_unavailable_with_unmanaged_pods_allows_nothing() {
        let mut h = harness();
        let key = h.add_pdb(&pdb(None, Some(IntOrString::Int(1))));
        h.add_pod(&pod("p"));
        h.sync(&key).await;
        assert_eq!(counts(&h.written()), (0, 1, 0, 0));
        let events: Vec<Event> = std::iter::from_fn(|| h.events.try_recv().ok()).collect();
        let unmanaged = events
            .iter()
            .find(|e| e.reason.as_deref() == Some("UnmanagedPods"))
            .expect("UnmanagedPods");
        assert_eq!(
            unmanaged.message.as_deref(),
            Some("Pods selected by this PodDisruptionBudget (selector: &LabelSelector{MatchLabels:map[string]string{foo: bar,},MatchExpressions:[]LabelSelectorRequirement{},}) were found to be unmanaged. As a result, the status of the PDB cannot be calculated correctly, which may result in undefined behavior. To account for these pods please set \".spec.minAvailable\" field of the PDB to an integer value.")
        );
    }

    /// `TestReplicaSet`: minAvailable 20% of a ReplicaSet of 10.
    #[tokio::test]
    async fn a_percentage_counts_against_the_replica_set_scale() {
        let h = harness();
        let key = h.add_pdb(&pdb(Some(IntOrString::String("20%".into())), None));
        let rs = replica_set("rs", 10);
        h.ctrl.caches.rss.insert(Arc::new(rs.clone()));
        h.add_pod(&owned_by(
            pod("p"),
            "apps/v1",
            "ReplicaSet",
            "rs",
            uid_of(&rs),
        ));
        h.sync(&key).await;
        assert_eq!(counts(&h.written()), (0, 1, 2, 10));
    }

    /// `TestReplicationController` and `TestStatefulSetController`: minAvailable 34% of 3.
    #[tokio::test]
    async fn replication_controllers_and_stateful_sets_give_the_expected_count() {
        for kind in ["ReplicationController", "StatefulSet"] {
            let h = harness();
            let key = h.add_pdb(&pdb(Some(IntOrString::String("34%".into())), None));
            let (api_version, uid) = if kind == "StatefulSet" {
                let ss = stateful_set("c", 3);
                h.ctrl.caches.statefulsets.insert(Arc::new(ss.clone()));
                ("apps/v1", uid_of(&ss))
            } else {
                let rc = replication_controller("c", 3);
                h.ctrl.caches.rcs.insert(Arc::new(rc.clone()));
                ("v1", uid_of(&rc))
            };
            let expected = [(0, 1, 2, 3), (0, 2, 2, 3), (1, 3, 2, 3)];
            for (i, want) in expected.iter().enumerate() {
                h.add_pod(&owned_by(
                    pod(&format!("p{i}")),
                    api_version,
                    kind,
                    "c",
                    uid.clone(),
                ));
                h.sync(&key).await;
                assert_eq!(counts(&h.written()), *want, "{kind} with {} pods", i + 1);
            }
        }
    }

    /// `TestMultipleControllers` / `TestTwoControllers`: the scales of every controller add up,
    /// a Deployment's through its ReplicaSet.
    #[tokio::test]
    async fn the_scales_of_several_controllers_add_up() {
        let h = harness();
        let key = h.add_pdb(&pdb(Some(IntOrString::String("28%".into())), None));
        let rc = replication_controller("rc", 11);
        let d = deployment("d", 11);
        let mut rs = replica_set("d-abc", 11);
        rs.metadata.owner_references = Some(vec![controller_ref(
            "apps/v1",
            "Deployment",
            "d",
            uid_of(&d),
        )]);
        h.ctrl.caches.rcs.insert(Arc::new(rc.clone()));
        h.ctrl.caches.deployments.insert(Arc::new(d));
        h.ctrl.caches.rss.insert(Arc::new(rs.clone()));
        for i in 0..4 {
            h.add_pod(&owned_by(
                pod(&format!("rc-{i}")),
                "v1",
                "ReplicationController",
                "rc",
                uid_of(&rc),
            ));
            h.add_pod(&owned_by(
                pod(&format!("d-{i}")),
                "apps/v1",
                "ReplicaSet",
                "d-abc",
                uid_of(&rs),
            ));
        }
        h.sync(&key).await;
        // 28% of 22, rounded up: 7 desired, 8 healthy.
        assert_eq!(counts(&h.written()), (1, 8, 7, 22));
    }

    /// `TestScaleResource`: a custom kind's scale comes from its `/scale` subresource.
    #[tokio::test]
    async fn other_kinds_are_scaled_through_the_scale_subresource() {
        let uid = "custom-uid".to_string();
        let scale_uid = uid.clone();
        let h = harness_with(move |req| {
            if req.is(Method::GET, "/apis/custom.k8s.io/v1") {
                return Some(ApiResponse::ok(&json!({
                    "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "custom.k8s.io/v1",
                    "resources": [
                        {"name": "customresources", "singularName": "customresource", "namespaced": true, "kind": "CustomResource", "verbs": ["get"]},
                        {"name": "customresources/scale", "singularName": "", "namespaced": true, "group": "autoscaling", "version": "v1", "kind": "Scale", "verbs": ["get"]}
                    ]
                })));
            }
            if req.is(
                Method::GET,
                "/apis/custom.k8s.io/v1/namespaces/default/customresources/cr/scale",
            ) {
                return Some(ApiResponse::ok(&json!({
                    "kind": "Scale", "apiVersion": "autoscaling/v1",
                    "metadata": {"name": "cr", "namespace": "default", "uid": scale_uid},
                    "spec": {"replicas": 10}, "status": {"replicas": 10}
                })));
            }
            None
        });
        let key = h.add_pdb(&pdb(None, Some(IntOrString::Int(5))));
        for i in 0..10 {
            h.add_pod(&owned_by(
                pod(&format!("p{i}")),
                "custom.k8s.io/v1",
                "CustomResource",
                "cr",
                uid.clone(),
            ));
        }
        h.sync(&key).await;
        assert_eq!(counts(&h.written()), (5, 10, 5, 10));
    }

    /// `TestScaleResource` without a `/scale`: the sync fails safe with kube's message.
    #[tokio::test]
    async fn a_kind_without_scale_fails_safe() {
        let mut h = harness_with(|req| {
            req.is(Method::GET, "/apis/custom.k8s.io/v1").then(|| {
                ApiResponse::ok(&json!({
                    "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "custom.k8s.io/v1",
                    "resources": [{"name": "customresources", "singularName": "customresource", "namespaced": true, "kind": "CustomResource", "verbs": ["get"]}]
                }))
            })
        });
        let mut budget = pdb(None, Some(IntOrString::Int(1)));
        budget.status = Some(PodDisruptionBudgetStatus {
            disruptions_allowed: 3,
            ..Default::default()
        });
        let key = h.add_pdb(&budget);
        h.add_pod(&owned_by(
            pod("p"),
            "custom.k8s.io/v1",
            "CustomResource",
            "cr",
            "u".into(),
        ));
        h.sync(&key).await;
        let status = h.written();
        assert_eq!(status.disruptions_allowed, 0);
        assert_eq!(
            condition(&status),
            (
                "False".into(),
                "SyncFailed".into(),
                "customresources.custom.k8s.io does not implement the scale subresource".into()
            )
        );
        assert!(h
            .reasons()
            .contains(&"CalculateExpectedPodCountFailed".to_string()));
    }

    /// A pod whose controller is nowhere: `found no controllers for pod`.
    #[tokio::test]
    async fn a_pod_of_a_missing_controller_fails_safe() {
        let h = harness_with(|req| {
            req.is(Method::GET, "/apis/apps/v1").then(|| {
                ApiResponse::ok(&json!({
                    "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "apps/v1",
                    "resources": [
                        {"name": "replicasets", "singularName": "replicaset", "namespaced": true, "kind": "ReplicaSet", "verbs": ["get"]},
                        {"name": "replicasets/scale", "singularName": "", "namespaced": true, "group": "autoscaling", "version": "v1", "kind": "Scale", "verbs": ["get"]}
                    ]
                }))
            })
        });
        let key = h.add_pdb(&pdb(Some(IntOrString::String("50%".into())), None));
        h.add_pod(&owned_by(
            pod("orphan"),
            "apps/v1",
            "ReplicaSet",
            "gone",
            "u".into(),
        ));
        h.sync(&key).await;
        assert_eq!(
            condition(&h.written()),
            (
                "False".into(),
                "SyncFailed".into(),
                "found no controllers for pod \"orphan\"".into()
            )
        );
    }

    /// `TestPDBNotExist`.
    #[tokio::test]
    async fn a_budget_that_is_gone_is_not_synced() {
        let h = harness();
        h.ctrl
            .sync(&ObjectKey::new("default", "missing"))
            .await
            .expect("sync");
        assert!(h.api.requests().is_empty());
    }

    /// `TestUpdateDisruptedPods`: expired and terminating entries go, recent ones stay and keep
    /// their pods out of the healthy count.
    #[tokio::test]
    async fn disrupted_pods_are_pruned_and_not_counted_healthy() {
        let mut h = harness();
        let mut budget = pdb(Some(IntOrString::Int(1)), None);
        let at = |s: &str| Time(s.parse().unwrap());
        budget.status = Some(PodDisruptionBudgetStatus {
            disrupted_pods: Some(BTreeMap::from([
                ("p1".to_string(), at("2025-01-01T00:09:30Z")),
                ("p2".to_string(), at("2025-01-01T00:05:00Z")),
                ("p3".to_string(), at("2025-01-01T00:09:30Z")),
                ("gone".to_string(), at("2025-01-01T00:09:30Z")),
            ])),
            ..Default::default()
        });
        let key = h.add_pdb(&budget);
        let mut p3 = pod("p3");
        p3.metadata.deletion_timestamp = Some(Time(now()));
        for p in [pod("p1"), pod("p2"), p3, pod("p4")] {
            h.add_pod(&p);
        }
        h.sync(&key).await;
        let status = h.written();
        assert_eq!(
            status
                .disrupted_pods
                .clone()
                .unwrap_or_default()
                .keys()
                .collect::<Vec<_>>(),
            ["p1"]
        );
        // p2 and p4 healthy; p1 evicted, p3 terminating.
        assert_eq!(counts(&status), (1, 2, 1, 4));
        assert!(h.reasons().contains(&"NotDeleted".to_string()));
        // Once p1's entry times out, the next sync drops it.
        h.clock.step(Duration::from_secs(120));
        h.sync(&key).await;
        assert!(h.written().disrupted_pods.is_none());
        assert_eq!(counts(&h.written()), (2, 3, 1, 4));
    }

    /// A conflict on the status write is returned for a retry, without the fail-safe write.
    #[tokio::test]
    async fn a_conflict_is_retried_without_failing_safe() {
        let h = harness_with(|req| {
            (req.method == Method::PUT).then(|| {
                ApiResponse::error(
                    StatusCode::CONFLICT,
                    "Conflict",
                    "the object has been modified",
                )
            })
        });
        let key = h.add_pdb(&pdb(Some(IntOrString::Int(1)), None));
        h.add_pod(&pod("p"));
        let err = h.ctrl.sync(&key).await.expect_err("conflict");
        assert!(err.is_conflict());
        assert_eq!(h.api.requests().len(), 1);
    }

    /// `TestStalePodDisruption`: a stale `DisruptionTarget` is set back to False; a recent one
    /// waits.
    #[tokio::test]
    async fn stale_disruption_targets_are_reset() {
        let h = harness();
        let mut p = pod("p");
        p.status
            .as_mut()
            .unwrap()
            .conditions
            .as_mut()
            .unwrap()
            .push(k8s_openapi::api::core::v1::PodCondition {
                type_: "DisruptionTarget".into(),
                status: "True".into(),
                reason: Some("EvictionByEvictionAPI".into()),
                last_transition_time: Some(at_secs_ago(60)),
                ..Default::default()
            });
        h.add_pod(&p);
        let key = ObjectKey::from_obj(&p);
        h.ctrl.sync_stale_pod_disruption(&key).await.expect("sync");
        assert!(h.api.requests().is_empty(), "not stale yet");
        h.clock.step(Duration::from_secs(60));
        h.ctrl.sync_stale_pod_disruption(&key).await.expect("sync");
        let req = h.api.requests().pop().expect("a pod status write");
        assert!(req.is(Method::PUT, "/api/v1/namespaces/default/pods/p/status"));
        let written: Pod = serde_json::from_value(req.body).expect("pod");
        let cond = written.status.unwrap().conditions.unwrap().pop().unwrap();
        assert_eq!(
            (cond.type_.as_str(), cond.status.as_str()),
            ("DisruptionTarget", "False")
        );
        h.ctrl
            .sync_stale_pod_disruption(&ObjectKey::new("default", "gone"))
            .await
            .expect("a missing pod is fine");
    }

    /// `TestInvalidSelectors`: a selector that does not parse fails safe, with a `NoPods`
    /// warning.
    #[tokio::test]
    async fn an_invalid_selector_fails_safe() {
        let mut h = harness();
        let mut budget = pdb(Some(IntOrString::Int(1)), None);
        budget.spec.as_mut().unwrap().selector = Some(LabelSelector {
            match_expressions: Some(vec![
                k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement {
                    key: "k".into(),
                    operator: "Bogus".into(),
                    values: None,
                },
            ]),
            ..Default::default()
        });
        let key = h.add_pdb(&budget);
        h.sync(&key).await;
        assert_eq!(condition(&h.written()).1, "SyncFailed");
        assert_eq!(h.written().disruptions_allowed, 0);
        let event = h.events.try_recv().expect("an event");
        assert_eq!(event.reason.as_deref(), Some("NoPods"));
        assert_eq!(event.type_.as_deref(), Some("Warning"));
        assert!(event
            .message
            .unwrap_or_default()
            .starts_with("Failed to get pods: "));
    }

    /// `getPdbForPod`: a pod of several budgets queues one and says so on the pod.
    #[tokio::test]
    async fn a_pod_of_several_budgets_queues_one_and_warns() {
        let mut h = harness();
        let mut a = pdb(Some(IntOrString::Int(1)), None);
        a.metadata.name = Some("a".into());
        let mut b = pdb(Some(IntOrString::Int(1)), None);
        b.metadata.name = Some("b".into());
        h.add_pdb(&a);
        h.add_pdb(&b);
        let p = pod("p");
        h.ctrl
            .on_pod(rkcm_runtime::informer::Notification::Add(Arc::new(p)));
        assert_eq!(h.ctrl.queue.len(), 1);
        let event = h.events.try_recv().expect("an event");
        assert_eq!(
            event.reason.as_deref(),
            Some("MultiplePodDisruptionBudgets")
        );
        let chosen = h.ctrl.queue.get().await.expect("a key").name;
        assert_eq!(
            event.message,
            Some(format!("Pod \"default\"/\"p\" matches multiple PodDisruptionBudgets.  Chose {chosen:?} arbitrarily."))
        );
    }

    /// kube's lister lists in Go's randomised map order, so successive events of a pod of
    /// several budgets queue each of them, and no budget is left stale.
    #[tokio::test]
    async fn the_events_of_a_pod_of_several_budgets_queue_each_of_them() {
        let h = harness();
        for name in ["a", "b"] {
            let mut budget = pdb(Some(IntOrString::Int(1)), None);
            budget.metadata.name = Some(name.into());
            h.add_pdb(&budget);
        }
        let p = Arc::new(pod("p"));
        // Both are picked within 64 events but with probability 2^-63.
        for _ in 0..64 {
            h.ctrl.on_pod(rkcm_runtime::informer::Notification::Update {
                old: Arc::clone(&p),
                new: Arc::clone(&p),
            });
        }
        assert_eq!(h.ctrl.queue.len(), 2, "one budget was never queued");
    }

    /// `TestKeepExistingPDBConditionDuringSync`: conditions of other types stay.
    #[tokio::test]
    async fn other_conditions_are_kept() {
        let h = harness();
        let mut budget = pdb(Some(IntOrString::Int(1)), None);
        budget.status = Some(PodDisruptionBudgetStatus {
            conditions: Some(vec![
                k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
                    type_: "ExistingTestCondition".into(),
                    status: "True".into(),
                    reason: "ExistingReason".into(),
                    message: "MessageForExistingCondition".into(),
                    observed_generation: None,
                    last_transition_time: Time(now()),
                },
            ]),
            ..Default::default()
        });
        let key = h.add_pdb(&budget);
        h.add_pod(&pod("p"));
        h.sync(&key).await;
        let types: Vec<String> = h
            .written()
            .conditions
            .unwrap_or_default()
            .into_iter()
            .map(|c| c.type_)
            .collect();
        assert_eq!(types, ["ExistingTestCondition", "DisruptionAllowed"]);
    }

    fn at_secs_ago(secs: i64) -> Time {
        Time(now() - jiff::SignedDuration::from_secs(secs))
    }
}
