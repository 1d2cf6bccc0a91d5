//! Adopting and releasing pods through controller references (`ClaimPods` of
//! `pkg/controller/controller_ref_manager.go`).
//!
//! TODO: the runtime is to provide this as `rkcm_runtime::controller_ref::ControllerRefManager`;
//! switch over and delete this file once it lands.

use std::future::Future;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use rkcm_labels::Selector;
use rkcm_runtime::ObjectKey;
use tokio::sync::OnceCell;

use super::handlers::controller_of;
use super::pod_control::{PodControl, PodControlError};

/// Why claiming pods failed.
#[derive(Debug, thiserror::Error)]
pub enum ClaimError {
    /// The owner may not adopt: it is being deleted or was replaced (the uncached recheck).
    #[error("cannot adopt pods: {0}")]
    CannotAdopt(String),
    /// Adopting or releasing a pod failed.
    #[error("failed to {action} pod {pod}: {source}")]
    Patch {
        /// `adopt` or `release`.
        action: &'static str,
        /// The pod.
        pod: ObjectKey,
        /// The failure.
        #[source]
        source: PodControlError,
    },
}

/// The owner claiming pods: its controller reference and whether it is being deleted.
#[derive(Clone, Debug)]
pub struct Claimant {
    /// The reference adopted pods get.
    pub controller_ref: OwnerReference,
    /// The owner's namespace.
    pub namespace: String,
    /// True if the owner has a deletion timestamp: it then neither adopts nor releases.
    pub deleting: bool,
}

/// Returns the `pods` `owner` owns after adopting matching orphans and releasing owned pods
/// that no longer match `selector`. Pods controlled by someone else are left alone. The first
/// adoption runs `can_adopt` once (an uncached read of the owner); NotFound on adopt or release
/// is ignored, as is Invalid on release (the pod was replaced). Every other failure is returned
/// after all pods were tried.
pub async fn claim_pods<F, Fut>(
    pod_control: &dyn PodControl,
    owner: &Claimant,
    selector: &Selector,
    pods: &[Arc<Pod>],
    can_adopt: F,
) -> Result<Vec<Arc<Pod>>, ClaimError>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Result<(), String>>,
{
    let adoptable: OnceCell<Result<(), String>> = OnceCell::new();
    let owner_uid = owner.controller_ref.uid.as_str();
    let mut claimed = Vec::new();
    let mut first_error = None;
    for pod in pods {
        let labels = pod.metadata.labels.clone().unwrap_or_default();
        let matches = selector.matches(&labels);
        let pod_key = ObjectKey::from_obj(&**pod);
        let pod_uid = pod.metadata.uid.clone().unwrap_or_default();
        if let Some(existing) = controller_of(&**pod) {
            if existing.uid != owner_uid {
                // Owned by someone else.
                continue;
            }
            if matches {
                claimed.push(Arc::clone(pod));
                continue;
            }
            if owner.deleting {
                // A deleting owner does not release: the garbage collector handles its pods.
                continue;
            }
            let patch = serde_json::json!({
                "metadata": {
                    "ownerReferences": [{ "$patch": "delete", "uid": owner_uid }],
                    "uid": pod_uid,
                }
            });
            tracing::info!(pod = %pod_key, "releasing pod whose labels no longer match");
            match pod_control
                .patch_pod(&owner.namespace, &pod_key.name, &patch)
                .await
            {
                Ok(()) => {}
                // Gone, or replaced by a pod with the same name: nothing to release.
                Err(PodControlError::NotFound) | Err(PodControlError::Invalid(_)) => {}
                Err(source) => {
                    first_error.get_or_insert(ClaimError::Patch {
                        action: "release",
                        pod: pod_key,
                        source,
                    });
                }
            }
            continue;
        }
        // An orphan.
        if owner.deleting || !matches || pod.metadata.deletion_timestamp.is_some() {
            continue;
        }
        if pod.metadata.namespace.as_deref().unwrap_or("") != owner.namespace {
            continue;
        }
        if let Err(reason) = adoptable.get_or_init(&can_adopt).await {
            first_error.get_or_insert(ClaimError::CannotAdopt(reason.clone()));
            continue;
        }
        let mut controller_ref = owner.controller_ref.clone();
        controller_ref.controller = Some(true);
        controller_ref.block_owner_deletion = Some(true);
        let patch = serde_json::json!({
            "metadata": {
                "ownerReferences": [controller_ref],
                "uid": pod_uid,
            }
        });
        tracing::info!(pod = %pod_key, "adopting orphan pod");
        match pod_control
            .patch_pod(&owner.namespace, &pod_key.name, &patch)
            .await
        {
            Ok(()) => claimed.push(Arc::clone(pod)),
            Err(PodControlError::NotFound) => {}
            Err(source) => {
                first_error.get_or_insert(ClaimError::Patch {
                    action: "adopt",
                    pod: pod_key,
                    source,
                });
            }
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(claimed),
    }
}
