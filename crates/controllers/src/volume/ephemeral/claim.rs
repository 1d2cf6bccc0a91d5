//! The claim of a generic ephemeral volume (`k8s.io/component-helpers/storage/ephemeral`).

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod, Volume};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

/// A claim of the volume's name exists but the pod does not own it.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("PVC {namespace}/{claim} was not created for pod {namespace}/{pod} (pod is not owner)")]
pub struct NotOwner {
    /// The namespace.
    pub namespace: String,
    /// The claim.
    pub claim: String,
    /// The pod.
    pub pod: String,
}

/// The names of the claims of the pod's generic ephemeral volumes, `<pod>-<volume>`
/// (`VolumeClaimName`).
pub fn ephemeral_claim_names(pod: &Pod) -> Vec<String> {
    let pod_name = pod.metadata.name.as_deref().unwrap_or_default();
    pod.spec
        .iter()
        .flat_map(|s| s.volumes.iter().flatten())
        .filter(|v| v.ephemeral.is_some())
        .map(|v| format!("{pod_name}-{}", v.name))
        .collect()
}

/// Whether the pod is the claim's controller (`VerifyPVCOwner`).
pub fn verify_owner(claim: &PersistentVolumeClaim, pod: &Pod) -> Result<(), NotOwner> {
    let owned = claim
        .metadata
        .owner_references
        .iter()
        .flatten()
        .any(|r| r.controller == Some(true) && Some(&r.uid) == pod.metadata.uid.as_ref());
    if owned {
        return Ok(());
    }
    Err(NotOwner {
        namespace: claim.metadata.namespace.clone().unwrap_or_default(),
        claim: claim.metadata.name.clone().unwrap_or_default(),
        pod: pod.metadata.name.clone().unwrap_or_default(),
    })
}

/// The claim to create for the pod's ephemeral `volume`: named `<pod>-<volume>`, controlled by the
/// pod (blocking its deletion), with the template's labels, annotations and spec. `None` for a
/// volume without a claim template.
pub fn claim_for(pod: &Pod, volume: &Volume) -> Option<PersistentVolumeClaim> {
    let template = volume.ephemeral.as_ref()?.volume_claim_template.as_ref()?;
    let pod_name = pod.metadata.name.clone().unwrap_or_default();
    let meta = template.metadata.clone().unwrap_or_default();
    Some(PersistentVolumeClaim {
        metadata: ObjectMeta {
            name: Some(format!("{pod_name}-{}", volume.name)),
            namespace: pod.metadata.namespace.clone(),
            labels: meta.labels,
            annotations: meta.annotations,
            owner_references: Some(vec![OwnerReference {
                api_version: "v1".into(),
                kind: "Pod".into(),
                name: pod_name,
                uid: pod.metadata.uid.clone().unwrap_or_default(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]),
            ..Default::default()
        },
        spec: Some(template.spec.clone()),
        status: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{
        EphemeralVolumeSource, PersistentVolumeClaimSpec, PersistentVolumeClaimTemplate, PodSpec,
    };
    use std::collections::BTreeMap;

    fn pod() -> Pod {
        let mut p = Pod::default();
        p.metadata.name = Some("web".into());
        p.metadata.namespace = Some("ns".into());
        p.metadata.uid = Some("pod-uid".into());
        p.spec = Some(PodSpec {
            volumes: Some(vec![
                Volume {
                    name: "scratch".into(),
                    ephemeral: Some(EphemeralVolumeSource {
                        volume_claim_template: Some(PersistentVolumeClaimTemplate {
                            metadata: Some(ObjectMeta {
                                labels: Some(BTreeMap::from([("a".to_string(), "b".to_string())])),
                                ..Default::default()
                            }),
                            spec: PersistentVolumeClaimSpec {
                                access_modes: Some(vec!["ReadWriteOnce".into()]),
                                ..Default::default()
                            },
                        }),
                    }),
                    ..Default::default()
                },
                Volume {
                    name: "plain".into(),
                    empty_dir: Some(Default::default()),
                    ..Default::default()
                },
            ]),
            ..Default::default()
        });
        p
    }

    // controller_test.go TestSyncHandler: "create" and "found" cases.
    #[test]
    fn the_claim_is_named_for_pod_and_volume_and_owned_by_the_pod() {
        let p = pod();
        assert_eq!(ephemeral_claim_names(&p), ["web-scratch"]);
        let volume = &p.spec.as_ref().unwrap().volumes.as_ref().unwrap()[0];
        let claim = claim_for(&p, volume).expect("a template");
        assert_eq!(claim.metadata.name.as_deref(), Some("web-scratch"));
        assert_eq!(claim.metadata.labels.as_ref().unwrap()["a"], "b");
        let owner = &claim.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.uid.as_str()),
            ("Pod", "pod-uid")
        );
        assert_eq!(owner.controller, Some(true));
        assert_eq!(owner.block_owner_deletion, Some(true));
        assert!(verify_owner(&claim, &p).is_ok());
    }

    // controller_test.go "wrong-PVC-owner": kube's message, reported on the pod.
    #[test]
    fn a_claim_of_the_same_name_not_owned_by_the_pod_is_refused() {
        let p = pod();
        let mut foreign = PersistentVolumeClaim::default();
        foreign.metadata.name = Some("web-scratch".into());
        foreign.metadata.namespace = Some("ns".into());
        assert_eq!(
            verify_owner(&foreign, &p).unwrap_err().to_string(),
            "PVC ns/web-scratch was not created for pod ns/web (pod is not owner)"
        );
    }
}
