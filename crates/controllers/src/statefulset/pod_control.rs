//! Creating, updating and deleting a StatefulSet's pods and claims, with kube's events
//! (`StatefulPodControl` of `stateful_pod_control.go`). Reads come from the informer caches,
//! writes go through an [`ObjectManager`] (the API server, or a fake in tests).

use std::sync::Arc;

use async_trait::async_trait;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use kube::api::{DeleteParams, PostParams};
use kube::{Api, Client};
use rkcm_runtime::api_error;
use rkcm_runtime::events::{EventRecorder, EventType};
use rkcm_runtime::informer::Store;
use rkcm_runtime::ObjectKey;

use super::claims::{
    claim_is_stale_for_pod, claim_owner_up_to_date, retention_policy, update_claim_owner_refs,
};
use super::identity::{
    claims_for, identity_matches, name, storage_matches, update_identity, update_storage,
};

/// Reads and writes of pods and claims (`StatefulPodControlObjectManager`).
#[async_trait]
pub trait ObjectManager: Send + Sync {
    /// Creates the pod.
    async fn create_pod(&self, pod: &Pod) -> Result<(), kube::Error>;
    /// The cached pod `namespace/name`.
    fn get_pod(&self, namespace: &str, name: &str) -> Option<Arc<Pod>>;
    /// Replaces the pod.
    async fn update_pod(&self, pod: &Pod) -> Result<(), kube::Error>;
    /// Deletes the pod.
    async fn delete_pod(&self, pod: &Pod) -> Result<(), kube::Error>;
    /// Creates the claim.
    async fn create_claim(&self, claim: &PersistentVolumeClaim) -> Result<(), kube::Error>;
    /// The cached claim `namespace/name`.
    fn get_claim(&self, namespace: &str, name: &str) -> Option<Arc<PersistentVolumeClaim>>;
    /// Replaces the claim.
    async fn update_claim(&self, claim: &PersistentVolumeClaim) -> Result<(), kube::Error>;
}

/// [`ObjectManager`] on the API server and the pod and claim informers' caches.
#[derive(Clone)]
pub struct ApiObjectManager {
    client: Client,
    pods: Store<Pod>,
    claims: Store<PersistentVolumeClaim>,
}

impl ApiObjectManager {
    /// Writes through `client`, reads `pods` and `claims`.
    pub fn new(client: Client, pods: Store<Pod>, claims: Store<PersistentVolumeClaim>) -> Self {
        Self {
            client,
            pods,
            claims,
        }
    }
}

fn ns(meta: &kube::api::ObjectMeta) -> &str {
    meta.namespace.as_deref().unwrap_or_default()
}

fn nm(meta: &kube::api::ObjectMeta) -> &str {
    meta.name.as_deref().unwrap_or_default()
}

#[async_trait]
impl ObjectManager for ApiObjectManager {
    async fn create_pod(&self, pod: &Pod) -> Result<(), kube::Error> {
        Api::<Pod>::namespaced(self.client.clone(), ns(&pod.metadata))
            .create(&PostParams::default(), pod)
            .await
            .map(drop)
    }

    fn get_pod(&self, namespace: &str, name: &str) -> Option<Arc<Pod>> {
        self.pods.get(&ObjectKey::new(namespace, name))
    }

    async fn update_pod(&self, pod: &Pod) -> Result<(), kube::Error> {
        Api::<Pod>::namespaced(self.client.clone(), ns(&pod.metadata))
            .replace(nm(&pod.metadata), &PostParams::default(), pod)
            .await
            .map(drop)
    }

    async fn delete_pod(&self, pod: &Pod) -> Result<(), kube::Error> {
        Api::<Pod>::namespaced(self.client.clone(), ns(&pod.metadata))
            .delete(nm(&pod.metadata), &DeleteParams::default())
            .await
            .map(drop)
    }

    async fn create_claim(&self, claim: &PersistentVolumeClaim) -> Result<(), kube::Error> {
        Api::<PersistentVolumeClaim>::namespaced(self.client.clone(), ns(&claim.metadata))
            .create(&PostParams::default(), claim)
            .await
            .map(drop)
    }

    fn get_claim(&self, namespace: &str, name: &str) -> Option<Arc<PersistentVolumeClaim>> {
        self.claims.get(&ObjectKey::new(namespace, name))
    }

    async fn update_claim(&self, claim: &PersistentVolumeClaim) -> Result<(), kube::Error> {
        Api::<PersistentVolumeClaim>::namespaced(self.client.clone(), ns(&claim.metadata))
            .replace(nm(&claim.metadata), &PostParams::default(), claim)
            .await
            .map(drop)
    }
}

/// Why a pod or claim operation failed. Messages are kube's.
#[derive(Debug, thiserror::Error)]
pub enum PodControlError {
    /// The API server refused; reads as its `Status` message.
    #[error("{}", api_error::message(.0))]
    Api(#[from] kube::Error),
    /// Creating or checking claims failed (kube's aggregate of `failed to create PVC …`).
    #[error("{}", .0.join(", "))]
    Claims(Vec<String>),
    /// Bringing the claims' owner references in line with the retention policy failed.
    #[error("Could not update claim {claim} for delete policy ownerRefs: {source}")]
    ClaimUpdate {
        /// The claim.
        claim: String,
        /// The cause.
        #[source]
        source: kube::Error,
    },
}

impl PodControlError {
    /// Whether the object already exists.
    pub fn is_already_exists(&self) -> bool {
        matches!(self, PodControlError::Api(e) if api_error::is_already_exists(e))
    }

    /// Whether the object does not exist.
    pub fn is_not_found(&self) -> bool {
        matches!(self, PodControlError::Api(e) if api_error::is_not_found(e))
    }
}

/// client-go `retry.DefaultBackoff`: 4 attempts, waiting 10ms, 50ms, then 250ms between them.
pub(crate) const CONFLICT_BACKOFF: [std::time::Duration; 3] = [
    std::time::Duration::from_millis(10),
    std::time::Duration::from_millis(50),
    std::time::Duration::from_millis(250),
];
const UPDATE_ATTEMPTS: usize = CONFLICT_BACKOFF.len() + 1;

/// Pod and claim operations with events on the set (`StatefulPodControl`).
#[derive(Clone)]
pub struct StatefulPodControl {
    objects: Arc<dyn ObjectManager>,
    recorder: EventRecorder,
}

fn set_name(set: &StatefulSet) -> &str {
    set.metadata.name.as_deref().unwrap_or_default()
}

fn title(verb: &str) -> String {
    let mut c = verb.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

impl StatefulPodControl {
    /// Operations through `objects`, events through `recorder`.
    pub fn new(objects: Arc<dyn ObjectManager>, recorder: EventRecorder) -> Self {
        Self { objects, recorder }
    }

    /// The object manager (for reads).
    pub fn objects(&self) -> &Arc<dyn ObjectManager> {
        &self.objects
    }

    /// `SuccessfulCreate` "create Pod web-0 in StatefulSet web successful", or
    /// `FailedCreate` "create Pod web-0 in StatefulSet web failed error: …" (`recordPodEvent`).
    fn record_pod_event(
        &self,
        verb: &str,
        set: &StatefulSet,
        pod: &Pod,
        err: Option<&PodControlError>,
    ) {
        match err {
            None => self.recorder.event_for(
                set,
                EventType::Normal,
                &format!("Successful{}", title(verb)),
                format!(
                    "{verb} Pod {} in StatefulSet {} successful",
                    name(pod),
                    set_name(set)
                ),
            ),
            Some(err) => self.recorder.event_for(
                set,
                EventType::Warning,
                &format!("Failed{}", title(verb)),
                format!(
                    "{verb} Pod {} in StatefulSet {} failed error: {err}",
                    name(pod),
                    set_name(set)
                ),
            ),
        }
    }

    /// `recordClaimEvent`.
    fn record_claim_event(
        &self,
        verb: &str,
        set: &StatefulSet,
        pod: &Pod,
        claim: &PersistentVolumeClaim,
        err: Option<&kube::Error>,
    ) {
        let claim_name = nm(&claim.metadata);
        match err {
            None => self.recorder.event_for(
                set,
                EventType::Normal,
                &format!("Successful{}", title(verb)),
                format!(
                    "{verb} Claim {claim_name} Pod {} in StatefulSet {} success",
                    name(pod),
                    set_name(set)
                ),
            ),
            Some(err) => self.recorder.event_for(
                set,
                EventType::Warning,
                &format!("Failed{}", title(verb)),
                format!(
                    "{verb} Claim {claim_name} for Pod {} in StatefulSet {} failed error: {}",
                    name(pod),
                    set_name(set),
                    api_error::message(err)
                ),
            ),
        }
    }

    /// Creates the pod's claims, then the pod, then sets the claims' owner references
    /// (`CreateStatefulPod`). An AlreadyExists of the pod is returned without an event.
    pub async fn create_stateful_pod(
        &self,
        set: &StatefulSet,
        pod: &Pod,
    ) -> Result<(), PodControlError> {
        if let Err(err) = self.create_claims(set, pod).await {
            self.record_pod_event("create", set, pod, Some(&err));
            return Err(err);
        }
        let result = self
            .objects
            .create_pod(pod)
            .await
            .map_err(PodControlError::from);
        if let Err(err) = &result {
            if err.is_already_exists() {
                return result;
            }
        }
        if result.is_ok() {
            if let Err(err) = self.update_claims_for_retention_policy(set, pod).await {
                self.record_pod_event("update", set, pod, Some(&err));
                return Err(err);
            }
        }
        self.record_pod_event("create", set, pod, result.as_ref().err());
        result
    }

    /// Brings the pod's identity, storage and claim owner references in line with the set,
    /// retrying conflicts from the cached pod (`UpdateStatefulPod`).
    pub async fn update_stateful_pod(
        &self,
        set: &StatefulSet,
        pod: &Pod,
    ) -> Result<(), PodControlError> {
        let mut pod = pod.clone();
        let mut attempted = false;
        let mut result = Ok(());
        for attempt in 0..UPDATE_ATTEMPTS {
            let mut consistent = true;
            if !identity_matches(set, &pod) {
                update_identity(set, &mut pod);
                consistent = false;
            }
            if !storage_matches(set, &pod) {
                update_storage(set, &mut pod);
                consistent = false;
                if let Err(err) = self.create_claims(set, &pod).await {
                    self.record_pod_event("update", set, &pod, Some(&err));
                    return Err(err);
                }
            }
            if !self.claims_match_retention_policy(set, &pod) {
                if let Err(err) = self.update_claims_for_retention_policy(set, &pod).await {
                    self.record_pod_event("update", set, &pod, Some(&err));
                    return Err(err);
                }
                consistent = false;
            }
            if consistent {
                result = Ok(());
                break;
            }
            attempted = true;
            match self.objects.update_pod(&pod).await {
                Ok(()) => {
                    result = Ok(());
                    break;
                }
                Err(err) => {
                    if let Some(fresh) = self.objects.get_pod(ns(&set.metadata), nm(&pod.metadata))
                    {
                        pod = (*fresh).clone();
                    }
                    let retry = api_error::is_conflict(&err) && attempt + 1 < UPDATE_ATTEMPTS;
                    result = Err(PodControlError::from(err));
                    if !retry {
                        break;
                    }
                    if let Some(delay) = CONFLICT_BACKOFF.get(attempt) {
                        tokio::time::sleep(*delay).await;
                    }
                }
            }
        }
        if attempted {
            self.record_pod_event("update", set, &pod, result.as_ref().err());
        }
        result
    }

    /// Deletes the pod (`DeleteStatefulPod`): `SuccessfulDelete` or `FailedDelete`.
    pub async fn delete_stateful_pod(
        &self,
        set: &StatefulSet,
        pod: &Pod,
    ) -> Result<(), PodControlError> {
        let result = self
            .objects
            .delete_pod(pod)
            .await
            .map_err(PodControlError::from);
        self.record_pod_event("delete", set, pod, result.as_ref().err());
        result
    }

    /// Whether every existing claim of the pod has the owner references the policy wants
    /// (`ClaimsMatchRetentionPolicy`); missing claims are picked up later.
    pub fn claims_match_retention_policy(&self, set: &StatefulSet, pod: &Pod) -> bool {
        claims_for(set, pod).values().all(|claim| {
            self.objects
                .get_claim(ns(&claim.metadata), nm(&claim.metadata))
                .is_none_or(|existing| claim_owner_up_to_date(&existing, set, pod))
        })
    }

    /// Rewrites the owner references of the pod's claims that disagree with the policy
    /// (`UpdatePodClaimForRetentionPolicy`).
    pub async fn update_claims_for_retention_policy(
        &self,
        set: &StatefulSet,
        pod: &Pod,
    ) -> Result<(), PodControlError> {
        for claim in claims_for(set, pod).values() {
            let Some(existing) = self
                .objects
                .get_claim(ns(&claim.metadata), nm(&claim.metadata))
            else {
                continue;
            };
            if claim_owner_up_to_date(&existing, set, pod) {
                continue;
            }
            let mut updated = (*existing).clone();
            update_claim_owner_refs(&mut updated, set, pod);
            self.objects
                .update_claim(&updated)
                .await
                .map_err(|source| PodControlError::ClaimUpdate {
                    claim: nm(&claim.metadata).to_string(),
                    source,
                })?;
        }
        Ok(())
    }

    /// Whether a claim of the pod to be created still belongs to a former pod of the same name,
    /// which blocks the creation until the garbage collector removes it (`PodClaimIsStale`; only
    /// when `whenScaled` is `Delete`).
    pub fn pod_claim_is_stale(&self, set: &StatefulSet, pod: &Pod) -> bool {
        if retention_policy(set).1 == "Retain" {
            return false;
        }
        claims_for(set, pod).values().any(|claim| {
            self.objects
                .get_claim(ns(&claim.metadata), nm(&claim.metadata))
                .is_some_and(|existing| claim_is_stale_for_pod(&existing, pod))
        })
    }

    /// Creates the pod's missing claims and fixes their owner references
    /// (`createMissingPersistentVolumeClaims`).
    pub async fn create_missing_claims(
        &self,
        set: &StatefulSet,
        pod: &Pod,
    ) -> Result<(), PodControlError> {
        self.create_claims(set, pod).await?;
        if let Err(err) = self.update_claims_for_retention_policy(set, pod).await {
            self.record_pod_event("update", set, pod, Some(&err));
            return Err(err);
        }
        Ok(())
    }

    /// Creates each claim of the pod that the cache lacks (`createPersistentVolumeClaims`).
    async fn create_claims(&self, set: &StatefulSet, pod: &Pod) -> Result<(), PodControlError> {
        let mut errors = Vec::new();
        for claim in claims_for(set, pod).values() {
            let claim_name = nm(&claim.metadata);
            match self.objects.get_claim(ns(&claim.metadata), claim_name) {
                None => {
                    let result = self.objects.create_claim(claim).await;
                    if let Err(err) = &result {
                        errors.push(format!(
                            "failed to create PVC {claim_name}: {}",
                            api_error::message(err)
                        ));
                    }
                    match &result {
                        Err(err) if api_error::is_already_exists(err) => {}
                        _ => self.record_claim_event(
                            "create",
                            set,
                            pod,
                            claim,
                            result.as_ref().err(),
                        ),
                    }
                }
                Some(existing) if existing.metadata.deletion_timestamp.is_some() => {
                    errors.push(format!("pvc {claim_name} is being deleted"));
                }
                Some(_) => {}
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(PodControlError::Claims(errors))
        }
    }
}
