//! The claim protection controller (`persistentvolumeclaim-protection-controller`,
//! `pkg/controller/volume/pvcprotection/pvc_protection_controller.go`): every claim gets
//! `kubernetes.io/pvc-protection`; a deleted claim keeps it while a scheduled pod that has not
//! finished uses it. The pod cache is asked first; only when it knows no such pod is a live list
//! of the namespace's pods made, since the cache may not have seen a new pod yet.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use kube::api::{Api, ListParams, PostParams};
use rkcm_runtime::informer::{
    wait_for_cache_sync, HasSynced, InformerFactory, Notification, SharedInformer,
};
use rkcm_runtime::storage::{pod_pvc_index, POD_PVC_INDEX};
use rkcm_runtime::workqueue::RateLimitingQueue;
use rkcm_runtime::{api_error, worker, ObjectKey, Shutdown};

use super::finalizer::{step, with_finalizer, without_finalizer, Step, PVC_PROTECTION_FINALIZER};

/// Why a claim's sync failed; retried with backoff.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Writing the claim's finalizers failed.
    #[error("error updating finalizers of PersistentVolumeClaim {claim}")]
    Update {
        /// The claim.
        claim: ObjectKey,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// Listing the namespace's pods failed.
    #[error("error listing pods in namespace {namespace:?}")]
    ListPods {
        /// The namespace.
        namespace: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
}

fn is_terminal(pod: &Pod) -> bool {
    matches!(
        pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded" | "Failed")
    )
}

/// Whether the claim is controlled by the pod (`ephemeral.VerifyPVCOwner`).
fn owned_by(claim: &PersistentVolumeClaim, pod: &Pod) -> bool {
    claim
        .metadata
        .owner_references
        .iter()
        .flatten()
        .any(|r| r.controller == Some(true) && Some(&r.uid) == pod.metadata.uid.as_ref())
}

/// Whether `pod` keeps `claim` in use (`podUsesPVC`): it is scheduled (the kubelet refuses to
/// start a pod whose claim is being deleted, so an unscheduled one never will), has not finished,
/// and mounts the claim, directly or as its own generic ephemeral volume.
pub fn pod_uses_claim(pod: &Pod, claim: &PersistentVolumeClaim) -> bool {
    let scheduled = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .is_some_and(|n| !n.is_empty());
    if !scheduled || is_terminal(pod) || pod.metadata.namespace != claim.metadata.namespace {
        return false;
    }
    let claim_name = claim.metadata.name.as_deref().unwrap_or_default();
    let pod_name = pod.metadata.name.as_deref().unwrap_or_default();
    pod.spec
        .iter()
        .flat_map(|s| s.volumes.iter().flatten())
        .any(|v| {
            if let Some(c) = &v.persistent_volume_claim {
                return c.claim_name == claim_name;
            }
            v.ephemeral.is_some()
                && format!("{pod_name}-{}", v.name) == claim_name
                && owned_by(claim, pod)
        })
}

/// Keeps `kubernetes.io/pvc-protection` on claims.
pub struct PvcProtectionController {
    client: kube::Client,
    claims: SharedInformer<PersistentVolumeClaim>,
    pods: SharedInformer<Pod>,
    queue: RateLimitingQueue<ObjectKey>,
}

impl PvcProtectionController {
    /// Registers the controller's handlers on the factory's claim and pod informers.
    pub fn new(factory: &InformerFactory, client: kube::Client) -> Arc<Self> {
        let claims = factory.informer::<PersistentVolumeClaim>();
        let pods = factory.informer::<Pod>();
        pods.add_indexer(POD_PVC_INDEX, pod_pvc_index);
        let queue = RateLimitingQueue::new("pvcprotection");
        let q = queue.clone();
        claims.add_event_handler(move |note: Notification<PersistentVolumeClaim>| {
            if let Notification::Add(c) | Notification::Update { new: c, .. } = note {
                if step(&c.metadata, PVC_PROTECTION_FINALIZER) != Step::Nothing {
                    q.add(ObjectKey::from_obj(&*c));
                }
            }
        });
        let q = queue.clone();
        pods.add_event_handler(move |note: Notification<Pod>| {
            // Only a pod that went away or finished can release a claim (`enqueuePVCs`).
            let (pod, deleted) = match &note {
                Notification::Add(p) | Notification::Update { new: p, .. } => (p, false),
                Notification::Delete(d) => (d.object(), true),
            };
            let scheduled = pod
                .spec
                .as_ref()
                .and_then(|s| s.node_name.as_deref())
                .is_some_and(|n| !n.is_empty());
            if !deleted && !is_terminal(pod) && scheduled {
                return;
            }
            for key in pod_pvc_index(pod) {
                if let Ok(key) = key.parse::<ObjectKey>() {
                    q.add(key);
                }
            }
        });
        Arc::new(Self {
            client,
            claims,
            pods,
            queue,
        })
    }

    /// Runs `workers` loops until `shutdown`.
    pub async fn run(self: Arc<Self>, workers: usize, shutdown: Shutdown) {
        tracing::info!(controller = "pvc-protection", "starting controller");
        let synced: [&dyn HasSynced; 2] = [&self.claims, &self.pods];
        if wait_for_cache_sync("PVC protection", &synced, &shutdown).await {
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
        tracing::info!(controller = "pvc-protection", "shutting down controller");
    }

    /// Whether a pod uses the claim: the cache first, then a live list (`isBeingUsed`).
    async fn is_being_used(
        &self,
        key: &ObjectKey,
        claim: &PersistentVolumeClaim,
    ) -> Result<bool, Error> {
        let cached = self.pods.store().by_index(POD_PVC_INDEX, &key.to_string());
        if cached.iter().any(|p| pod_uses_claim(p, claim)) {
            return Ok(true);
        }
        let api: Api<Pod> = Api::namespaced(self.client.clone(), key.namespace_str());
        let pods = api
            .list(&ListParams::default())
            .await
            .map_err(|source| Error::ListPods {
                namespace: key.namespace_str().to_string(),
                source,
            })?;
        Ok(pods.items.iter().any(|p| pod_uses_claim(p, claim)))
    }

    /// Adds or removes the finalizer of the claim `key` (`processPVC`).
    pub async fn sync(&self, key: &ObjectKey) -> Result<(), Error> {
        let Some(claim) = self.claims.store().get(key) else {
            return Ok(());
        };
        let finalizers = match step(&claim.metadata, PVC_PROTECTION_FINALIZER) {
            Step::Nothing => return Ok(()),
            Step::RemoveIfUnused => {
                if self.is_being_used(key, &claim).await? {
                    tracing::debug!(claim = %key, "keeping the finalizer: the claim is in use");
                    return Ok(());
                }
                without_finalizer(&claim.metadata, PVC_PROTECTION_FINALIZER)
            }
            Step::AddFinalizer => with_finalizer(&claim.metadata, PVC_PROTECTION_FINALIZER),
        };
        let mut updated = (*claim).clone();
        updated.metadata.finalizers = Some(finalizers);
        let api: Api<PersistentVolumeClaim> =
            Api::namespaced(self.client.clone(), key.namespace_str());
        match api
            .replace(&key.name, &PostParams::default(), &updated)
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if api_error::is_not_found(&e) => Ok(()),
            Err(source) => Err(Error::Update {
                claim: key.clone(),
                source,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{
        EphemeralVolumeSource, PersistentVolumeClaimVolumeSource, PodSpec, PodStatus, Volume,
    };
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

    fn claim(name: &str) -> PersistentVolumeClaim {
        let mut c = PersistentVolumeClaim::default();
        c.metadata.name = Some(name.into());
        c.metadata.namespace = Some("default".into());
        c
    }

    fn pod(volumes: Vec<Volume>, node: Option<&str>, phase: &str) -> Pod {
        let mut p = Pod::default();
        p.metadata.name = Some("pod1".into());
        p.metadata.namespace = Some("default".into());
        p.metadata.uid = Some("pod-uid".into());
        p.spec = Some(PodSpec {
            node_name: node.map(String::from),
            volumes: Some(volumes),
            ..Default::default()
        });
        p.status = Some(PodStatus {
            phase: Some(phase.into()),
            ..Default::default()
        });
        p
    }

    fn pvc_volume(claim: &str) -> Volume {
        Volume {
            name: "vol".into(),
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name: claim.into(),
                read_only: None,
            }),
            ..Default::default()
        }
    }

    fn ephemeral_volume(name: &str) -> Volume {
        Volume {
            name: name.into(),
            ephemeral: Some(EphemeralVolumeSource::default()),
            ..Default::default()
        }
    }

    fn empty_dir() -> Volume {
        Volume {
            name: "scratch".into(),
            empty_dir: Some(Default::default()),
            ..Default::default()
        }
    }

    // pvc_protection_controller_test.go TestPVCProtectionController, the cases deciding whether
    // a deleted claim keeps its finalizer.
    #[test]
    fn only_scheduled_unfinished_pods_mounting_the_claim_keep_it() {
        let c = claim("pvc1");
        // "pod with the PVC exists -> finalizer is not removed"
        assert!(pod_uses_claim(
            &pod(vec![pvc_volume("pvc1")], Some("node1"), "Running"),
            &c
        ));
        // "pod with unrelated PVC and EmptyDir exists -> finalizer is removed"
        assert!(!pod_uses_claim(
            &pod(
                vec![pvc_volume("unrelated"), empty_dir()],
                Some("node1"),
                "Running"
            ),
            &c
        ));
        // "pod with the PVC finished but is not deleted -> finalizer is removed"
        assert!(!pod_uses_claim(
            &pod(vec![pvc_volume("pvc1")], Some("node1"), "Succeeded"),
            &c
        ));
        assert!(!pod_uses_claim(
            &pod(vec![pvc_volume("pvc1")], Some("node1"), "Failed"),
            &c
        ));
        // "pod with the PVC is not scheduled -> finalizer is removed"
        assert!(!pod_uses_claim(
            &pod(vec![pvc_volume("pvc1")], None, "Pending"),
            &c
        ));
        // A pod of another namespace with the same claim name does not count.
        let mut other = pod(vec![pvc_volume("pvc1")], Some("node1"), "Running");
        other.metadata.namespace = Some("other".into());
        assert!(!pod_uses_claim(&other, &c));
    }

    // "generic ephemeral volume": only the pod that owns the claim keeps it.
    #[test]
    fn an_ephemeral_claim_is_used_only_by_its_owning_pod() {
        let mut c = claim("pod1-cache");
        let p = pod(vec![ephemeral_volume("cache")], Some("node1"), "Running");
        assert!(!pod_uses_claim(&p, &c), "not owned by the pod");
        c.metadata.owner_references = Some(vec![OwnerReference {
            api_version: "v1".into(),
            kind: "Pod".into(),
            name: "pod1".into(),
            uid: "pod-uid".into(),
            controller: Some(true),
            ..Default::default()
        }]);
        assert!(pod_uses_claim(&p, &c));
    }
}
