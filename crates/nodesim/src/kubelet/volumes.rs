//! The kubelet's view of a pod's attachable volumes (its volume manager's
//! `WaitForAttachAndMount` and `GetVolumesInUse`): the unique names of the CSI volumes behind the
//! pod's claims, the volumes a node reports in `status.volumesInUse`, and which of a pod's volumes
//! the attach/detach controller has not yet reported in `status.volumesAttached`.

use std::collections::BTreeSet;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::CSIDriver;
use rkcm_runtime::storage::csi::{csi_source, unique_volume_name};
use rkcm_runtime::storage::{claim_volume_name, pod_claim_names};

/// The pod's volumes that need attaching, or `None` while one of its claims is not bound or its
/// volume is not cached yet (the kubelet cannot tell then).
pub fn attachable_volumes(
    pod: &Pod,
    claim: impl Fn(&str) -> Option<Arc<PersistentVolumeClaim>>,
    volume: impl Fn(&str) -> Option<Arc<PersistentVolume>>,
    driver: impl Fn(&str) -> Option<Arc<CSIDriver>>,
) -> Option<BTreeSet<String>> {
    let mut names = BTreeSet::new();
    for claim_name in pod_claim_names(pod) {
        let c = claim(&claim_name)?;
        let volume_name = claim_volume_name(&c);
        if volume_name.is_empty() {
            return None;
        }
        let pv = volume(volume_name)?;
        let Some((d, handle)) = csi_source(&pv) else {
            continue;
        };
        let attach_required = driver(d)
            .and_then(|obj| obj.spec.attach_required)
            .unwrap_or(true);
        if attach_required {
            names.insert(unique_volume_name(d, handle));
        }
    }
    Some(names)
}

/// The node's `status.volumesAttached` names.
pub fn attached_on(node: &Node) -> BTreeSet<String> {
    node.status
        .iter()
        .flat_map(|s| s.volumes_attached.iter().flatten())
        .map(|a| a.name.clone())
        .collect()
}

/// The node's `status.volumesInUse`, as reported.
pub fn reported_in_use(node: &Node) -> BTreeSet<String> {
    node.status
        .iter()
        .flat_map(|s| s.volumes_in_use.iter().flatten())
        .cloned()
        .collect()
}

/// The pod's volumes the node does not list attached yet.
pub fn unattached(needed: &BTreeSet<String>, node: &Node) -> Vec<String> {
    let attached = attached_on(node);
    needed.difference(&attached).cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{
        AttachedVolume, CSIPersistentVolumeSource, NodeStatus, PersistentVolumeClaimSpec,
        PersistentVolumeClaimVolumeSource, PersistentVolumeSpec, PodSpec, Volume,
    };
    use k8s_openapi::api::storage::v1::CSIDriverSpec;

    fn pod(claims: &[&str]) -> Pod {
        let mut p = Pod::default();
        p.metadata.name = Some("p".into());
        p.spec = Some(PodSpec {
            volumes: Some(
                claims
                    .iter()
                    .map(|c| Volume {
                        name: c.to_string(),
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
        p
    }

    fn claim(volume: &str) -> Arc<PersistentVolumeClaim> {
        Arc::new(PersistentVolumeClaim {
            spec: Some(PersistentVolumeClaimSpec {
                volume_name: Some(volume.into()).filter(|v: &String| !v.is_empty()),
                ..Default::default()
            }),
            ..Default::default()
        })
    }

    fn csi_pv(driver: &str, handle: &str) -> Arc<PersistentVolume> {
        Arc::new(PersistentVolume {
            spec: Some(PersistentVolumeSpec {
                csi: Some(CSIPersistentVolumeSource {
                    driver: driver.into(),
                    volume_handle: handle.into(),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        })
    }

    #[test]
    fn a_pods_csi_volumes_are_named_as_the_controller_names_them() {
        let p = pod(&["a", "b", "c"]);
        let got = attachable_volumes(
            &p,
            |c| Some(claim(&format!("pv-{c}"))),
            |v| match v {
                "pv-a" => Some(csi_pv("d", "h1")),
                "pv-b" => Some(csi_pv("no-attach", "h2")),
                _ => Some(Arc::new(PersistentVolume::default())),
            },
            |d| {
                (d == "no-attach").then(|| {
                    Arc::new(CSIDriver {
                        spec: CSIDriverSpec {
                            attach_required: Some(false),
                            ..Default::default()
                        },
                        ..Default::default()
                    })
                })
            },
        );
        assert_eq!(got, Some(["kubernetes.io/csi/d^h1".to_string()].into()));
    }

    #[test]
    fn an_unbound_claim_or_uncached_volume_leaves_the_answer_open() {
        let p = pod(&["a"]);
        assert_eq!(
            attachable_volumes(&p, |_| Some(claim("")), |_| None, |_| None),
            None
        );
        assert_eq!(attachable_volumes(&p, |_| None, |_| None, |_| None), None);
        assert_eq!(
            attachable_volumes(&p, |_| Some(claim("pv")), |_| None, |_| None),
            None
        );
        assert_eq!(
            attachable_volumes(&pod(&[]), |_| None, |_| None, |_| None),
            Some(BTreeSet::new())
        );
    }

    #[test]
    fn volumes_wait_until_the_node_lists_them_attached() {
        let mut node = Node::default();
        let needed: BTreeSet<String> = ["v1".to_string(), "v2".to_string()].into();
        assert_eq!(unattached(&needed, &node), ["v1", "v2"]);
        node.status = Some(NodeStatus {
            volumes_attached: Some(vec![AttachedVolume {
                name: "v1".into(),
                device_path: String::new(),
            }]),
            volumes_in_use: Some(vec!["v1".into()]),
            ..Default::default()
        });
        assert_eq!(unattached(&needed, &node), ["v2"]);
        assert_eq!(reported_in_use(&node), ["v1".to_string()].into());
    }
}
