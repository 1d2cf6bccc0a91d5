//! Which volumes of a pod the desired state holds (`util.ProcessPodVolumes`,
//! `util.DetermineVolumeAction`, `CreateVolumeSpec`): the attachable volumes of the claims of a
//! scheduled pod, as long as the pod has not terminated (or its node keeps terminated pods'
//! volumes).

use k8s_openapi::api::core::v1::{ContainerStatus, PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::CSIDriver;
use rkcm_runtime::storage::{claim_phase, claim_volume_name, pod_claim_names};

use super::desired_state::PodRef;
use super::volume::AttachableVolume;

/// The pod's name in the desired state.
pub fn pod_ref(pod: &Pod) -> PodRef {
    PodRef {
        uid: pod.metadata.uid.clone().unwrap_or_default(),
        namespace: pod.metadata.namespace.clone().unwrap_or_default(),
        name: pod.metadata.name.clone().unwrap_or_default(),
    }
}

/// The node the pod is scheduled to.
pub fn pod_node(pod: &Pod) -> Option<&str> {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .filter(|n| !n.is_empty())
}

fn not_running(statuses: Option<&Vec<ContainerStatus>>) -> bool {
    statuses.into_iter().flatten().all(|s| {
        s.state
            .as_ref()
            .is_some_and(|st| st.terminated.is_some() || st.waiting.is_some())
    })
}

/// Whether the pod is done with its volumes (`volumeutil.IsPodTerminated`): Succeeded or Failed,
/// or being deleted with no container running.
pub fn is_pod_terminated(pod: &Pod) -> bool {
    let status = pod.status.as_ref();
    let phase = status.and_then(|s| s.phase.as_deref());
    if matches!(phase, Some("Succeeded" | "Failed")) {
        return true;
    }
    pod.metadata.deletion_timestamp.is_some()
        && not_running(status.and_then(|s| s.init_container_statuses.as_ref()))
        && not_running(status.and_then(|s| s.container_statuses.as_ref()))
        && not_running(status.and_then(|s| s.ephemeral_container_statuses.as_ref()))
}

/// Whether the pod's volumes belong in the desired state (`DetermineVolumeAction` with the
/// default action "add").
pub fn keeps_volumes(pod: &Pod, keep_terminated_pod_volumes: bool) -> bool {
    keep_terminated_pod_volumes || !is_pod_terminated(pod)
}

/// The attachable volumes of the pod's claims: each Bound claim's PersistentVolume, when it is
/// an attachable CSI volume. Claims not bound yet and volumes not cached yet are left out (a
/// later claim or volume event brings the pod back).
pub fn attachable_volumes<'a>(
    pod: &Pod,
    claim: impl Fn(&str) -> Option<std::sync::Arc<PersistentVolumeClaim>>,
    volume: impl Fn(&str) -> Option<std::sync::Arc<PersistentVolume>>,
    driver: impl Fn(&str) -> Option<&'a CSIDriver> + Copy,
) -> Vec<AttachableVolume> {
    pod_claim_names(pod)
        .iter()
        .filter_map(|name| {
            let c = claim(name)?;
            if claim_phase(&c) != claim_phase::BOUND || claim_volume_name(&c).is_empty() {
                return None;
            }
            let pv = volume(claim_volume_name(&c))?;
            AttachableVolume::from_pv(&pv, driver)
        })
        .collect()
}

/// The pods of the desired state the pod cache no longer holds (same namespace, name and UID),
/// whose volumes a missed deletion left behind (`findAndRemoveDeletedPods`).
pub fn deleted_pods<'a>(
    recorded: impl IntoIterator<Item = (&'a PodRef, &'a str)>,
    cached_uid: impl Fn(&PodRef) -> Option<String>,
) -> Vec<(PodRef, String)> {
    recorded
        .into_iter()
        .filter(|(pod, _)| cached_uid(pod).as_deref() != Some(pod.uid.as_str()))
        .map(|(pod, node)| (pod.clone(), node.to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::super::volume::fixtures::csi_pv;
    use super::*;
    use k8s_openapi::api::core::v1::{
        ContainerState, ContainerStateRunning, ContainerStateTerminated, PersistentVolumeClaimSpec,
        PersistentVolumeClaimStatus, PersistentVolumeClaimVolumeSource, PodSpec, PodStatus, Volume,
    };
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn pod_with_claims(claims: &[&str]) -> Pod {
        let mut pod = Pod::default();
        pod.metadata.name = Some("p".into());
        pod.metadata.namespace = Some("ns".into());
        pod.spec = Some(PodSpec {
            node_name: Some("n1".into()),
            volumes: Some(
                claims
                    .iter()
                    .map(|c| Volume {
                        name: format!("vol-{c}"),
                        persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                            claim_name: c.to_string(),
                            read_only: None,
                        }),
                        ..Default::default()
                    })
                    .collect(),
            ),
            ..Default::default()
        });
        pod
    }

    fn claim(name: &str, volume: Option<&str>) -> Arc<PersistentVolumeClaim> {
        Arc::new(PersistentVolumeClaim {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns".into()),
                ..Default::default()
            },
            spec: Some(PersistentVolumeClaimSpec {
                volume_name: volume.map(Into::into),
                ..Default::default()
            }),
            status: Some(PersistentVolumeClaimStatus {
                phase: Some(if volume.is_some() { "Bound" } else { "Pending" }.into()),
                ..Default::default()
            }),
        })
    }

    // desired_state_of_world_populator_test.go TestFindAndAddActivePods_FindAndRemoveDeletedPods:
    // a pod gone from the cache, or replaced by one of the same name, is removed.
    #[test]
    fn pods_missing_from_the_cache_or_replaced_are_deleted() {
        let p = |uid: &str, name: &str| PodRef {
            uid: uid.into(),
            namespace: "ns".into(),
            name: name.into(),
        };
        let (kept, gone, replaced) = (p("u1", "a"), p("u2", "b"), p("u3", "c"));
        let recorded = [(&kept, "n1"), (&gone, "n1"), (&replaced, "n2")];
        let stale = deleted_pods(recorded, |pod| match pod.name.as_str() {
            "a" => Some("u1".into()),
            "c" => Some("u9".into()),
            _ => None,
        });
        assert_eq!(
            stale,
            [
                (gone.clone(), "n1".to_string()),
                (replaced.clone(), "n2".to_string())
            ]
        );
    }

    #[test]
    fn only_bound_claims_of_cached_csi_volumes_count() {
        let pod = pod_with_claims(&["bound", "pending", "missing", "uncached"]);
        let claims = |name: &str| match name {
            "bound" => Some(claim("bound", Some("pv1"))),
            "pending" => Some(claim("pending", None)),
            "uncached" => Some(claim("uncached", Some("pv9"))),
            _ => None,
        };
        let volumes = |name: &str| (name == "pv1").then(|| Arc::new(csi_pv("pv1", "d", &[])));
        let got = attachable_volumes(&pod, claims, volumes, |_| None);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].pv_name, "pv1");
    }

    fn status(phase: &str, running: bool) -> PodStatus {
        let state = if running {
            ContainerState {
                running: Some(ContainerStateRunning::default()),
                ..Default::default()
            }
        } else {
            ContainerState {
                terminated: Some(ContainerStateTerminated::default()),
                ..Default::default()
            }
        };
        PodStatus {
            phase: Some(phase.into()),
            container_statuses: Some(vec![ContainerStatus {
                name: "c".into(),
                state: Some(state),
                ..Default::default()
            }]),
            ..Default::default()
        }
    }

    // util_test.go TestDetermineVolumeAction / IsPodTerminated cases.
    #[test]
    fn terminated_pods_release_their_volumes_unless_the_node_keeps_them() {
        let mut pod = pod_with_claims(&[]);
        pod.status = Some(status("Running", true));
        assert!(keeps_volumes(&pod, false));
        // Deleted but a container still runs: still in use.
        pod.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::UNIX_EPOCH));
        assert!(keeps_volumes(&pod, false));
        // Deleted and nothing runs: terminated.
        pod.status = Some(status("Running", false));
        assert!(!keeps_volumes(&pod, false));
        assert!(keeps_volumes(&pod, true));
        // Succeeded or Failed: terminated.
        let mut done = pod_with_claims(&[]);
        done.status = Some(status("Succeeded", false));
        assert!(is_pod_terminated(&done));
        done.status = Some(status("Failed", false));
        assert!(is_pod_terminated(&done));
        done.status = Some(status("Pending", false));
        assert!(!is_pod_terminated(&done));
    }
}
