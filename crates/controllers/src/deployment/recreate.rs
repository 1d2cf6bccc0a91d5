//! The Recreate strategy: scale every old ReplicaSet to zero, wait until no old pod runs, then
//! scale the new ReplicaSet up.
//!
//! Mirrors `pkg/controller/deployment/recreate.go`.

use std::collections::HashMap;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::Pod;

use super::conditions::deployment_complete;
use super::replica_sets::filter_active;
use super::replicas::actual_replica_count;
use super::scale::ScaleStep;
use super::spec::replicas;
use super::sync::Result;
use super::DeploymentController;

/// Pods of a Deployment grouped by the UID of the ReplicaSet that controls them.
pub type PodMap = HashMap<String, Vec<Arc<Pod>>>;

/// Whether any old pod may still run: an old ReplicaSet reports pods, or a pod of a ReplicaSet other
/// than the new one is in a non-terminal phase (Pending, Running or Unknown).
#[doc(alias = "oldPodsRunning")]
pub fn old_pods_running(
    new_rs: Option<&Arc<ReplicaSet>>,
    old_rss: &[Arc<ReplicaSet>],
    pod_map: &PodMap,
) -> bool {
    if actual_replica_count(old_rss.iter().map(|rs| &**rs)) > 0 {
        return true;
    }
    let new_uid = new_rs.and_then(|rs| rs.metadata.uid.as_deref());
    pod_map
        .iter()
        .filter(|(uid, _)| Some(uid.as_str()) != new_uid)
        .flat_map(|(_, pods)| pods)
        .any(|pod| {
            let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
            !matches!(phase, Some("Failed") | Some("Succeeded"))
        })
}

impl DeploymentController {
    /// One step of a Recreate rollout (`rolloutRecreate`): scale the old ReplicaSets to zero; once no
    /// old pod runs, create and scale up the new one; once complete, clean up the history.
    pub(crate) async fn rollout_recreate(
        &self,
        d: &mut Deployment,
        rs_list: &[Arc<ReplicaSet>],
        pod_map: &PodMap,
    ) -> Result<()> {
        // Do not create the new ReplicaSet before the old pods are gone.
        let (mut new_rs, mut old_rss) = self
            .all_replica_sets_and_sync_revision(d, rs_list, false)
            .await?;
        let mut all: Vec<Arc<ReplicaSet>> = old_rss.iter().cloned().chain(new_rs.clone()).collect();

        let steps: Vec<ScaleStep> = filter_active(&old_rss)
            .iter()
            .filter_map(|rs| ScaleStep::resize(rs, 0))
            .collect();
        if self.apply_scale_steps(d, &steps).await? > 0 {
            return self.sync_rollout_status(d, &all, new_rs.as_ref()).await;
        }
        // Wait for every old pod to stop (the pod-deletion handler requeues the Deployment).
        if old_pods_running(new_rs.as_ref(), &old_rss, pod_map) {
            return self.sync_rollout_status(d, &all, new_rs.as_ref()).await;
        }
        if new_rs.is_none() {
            (new_rs, old_rss) = self
                .all_replica_sets_and_sync_revision(d, rs_list, true)
                .await?;
            all = old_rss.iter().cloned().chain(new_rs.clone()).collect();
        }
        if let Some(step) = new_rs
            .as_ref()
            .and_then(|rs| ScaleStep::resize(rs, replicas(d)))
        {
            self.scale_replica_set(d, &step).await?;
        }
        let current = d.status.clone().unwrap_or_default();
        if deployment_complete(d, &current) {
            self.cleanup_deployment(d, &old_rss).await?;
        }
        self.sync_rollout_status(d, &all, new_rs.as_ref()).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deployment::fixtures::{new_rs_with_status, rs};
    use k8s_openapi::api::core::v1::PodStatus;

    fn pod(phase: &str) -> Arc<Pod> {
        Arc::new(Pod {
            status: Some(PodStatus {
                phase: Some(phase.into()),
                ..Default::default()
            }),
            ..Default::default()
        })
    }

    #[test]
    fn old_pods_run_until_every_old_pod_is_terminal() {
        // TestOldPodsRunning.
        let map = |entries: Vec<(&str, Vec<Arc<Pod>>)>| -> PodMap {
            entries
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect()
        };
        let idle = || vec![Arc::new(new_rs_with_status("rs-1", 0, 0, &[]))];
        let cases: Vec<(&str, Vec<Arc<ReplicaSet>>, PodMap, bool)> = vec![
            ("no old RSs", vec![], PodMap::new(), false),
            (
                "old RSs with running pods",
                vec![
                    Arc::new(rs("some", 1, &[], None)),
                    Arc::new(rs("other", 1, &[], None)),
                ],
                map(vec![
                    ("uid-some", vec![pod("Running")]),
                    ("uid-other", vec![pod("Running")]),
                ]),
                true,
            ),
            (
                "old RSs without pods but with non-zero status replicas",
                vec![Arc::new(new_rs_with_status("rs-1", 0, 1, &[]))],
                PodMap::new(),
                true,
            ),
            (
                "old RSs without pods or non-zero status replicas",
                idle(),
                PodMap::new(),
                false,
            ),
            (
                "terminal pods only",
                idle(),
                map(vec![("uid-1", vec![pod("Failed"), pod("Succeeded")])]),
                false,
            ),
            (
                "a pod in unknown phase",
                idle(),
                map(vec![("uid-1", vec![pod("Unknown")])]),
                true,
            ),
            (
                "a pending pod",
                idle(),
                map(vec![("uid-1", vec![pod("Pending")])]),
                true,
            ),
            (
                "a running pod",
                idle(),
                map(vec![("uid-1", vec![pod("Running")])]),
                true,
            ),
            (
                "terminal and pending pods",
                idle(),
                map(vec![(
                    "uid-1",
                    vec![pod("Failed"), pod("Succeeded"), pod("Pending")],
                )]),
                true,
            ),
        ];
        for (name, olds, pods, expected) in cases {
            assert_eq!(old_pods_running(None, &olds, &pods), expected, "{name}");
        }
        // Pods of the new ReplicaSet do not count.
        let new_rs = Arc::new(rs("new", 1, &[], None));
        let pods = map(vec![("uid-new", vec![pod("Running")])]);
        assert!(!old_pods_running(Some(&new_rs), &idle(), &pods));
    }
}
