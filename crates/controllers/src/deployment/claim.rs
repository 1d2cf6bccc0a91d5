//! Adopting and releasing ReplicaSets by controller reference (`ClaimReplicaSets`).
//!
//! TODO: switch to `rkcm_runtime::controller_ref::ControllerRefManager` once the runtime provides
//! it; this is the same algorithm (`pkg/controller/controller_ref_manager.go`) specialised to
//! Deployments and ReplicaSets.

use std::sync::Arc;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use kube::api::{Api, Patch, PatchParams};
use rkcm_labels::Selector;
use serde_json::json;

use super::handlers::controller_of;

/// Why claiming failed.
#[derive(Debug, thiserror::Error)]
pub enum ClaimError {
    /// The Deployment changed or is being deleted: it may not adopt.
    #[error("deployment {0} cannot adopt: {1}")]
    CannotAdopt(String, String),
    /// A patch failed.
    #[error("failed to {0} replica set {1}")]
    Patch(&'static str, String, #[source] kube::Error),
}

fn matches(selector: &Selector, rs: &ReplicaSet) -> bool {
    rs.metadata
        .labels
        .as_ref()
        .is_some_and(|l| selector.matches(l))
        || (rs.metadata.labels.is_none() && selector.matches(&Default::default()))
}

/// The ReplicaSets in `candidates` that `d` controls after adopting matching orphans and releasing
/// controlled ReplicaSets that no longer match. Adoption first re-reads `d` from the server.
pub async fn claim_replica_sets(
    client: &kube::Client,
    d: &Deployment,
    selector: &Selector,
    candidates: &[Arc<ReplicaSet>],
) -> Result<Vec<Arc<ReplicaSet>>, ClaimError> {
    let namespace = d.metadata.namespace.clone().unwrap_or_default();
    let name = d.metadata.name.clone().unwrap_or_default();
    let uid = d.metadata.uid.clone().unwrap_or_default();
    let rs_api: Api<ReplicaSet> = Api::namespaced(client.clone(), &namespace);
    let mut can_adopt: Option<Result<(), String>> = None;
    let mut claimed = Vec::new();
    let mut first_error = None;
    for rs in candidates {
        let rs_name = rs.metadata.name.clone().unwrap_or_default();
        let rs_uid = rs.metadata.uid.clone().unwrap_or_default();
        match controller_of(rs.metadata.owner_references.as_ref()) {
            Some(owner) if owner.uid != uid => continue,
            Some(_) => {
                if matches(selector, rs) {
                    claimed.push(Arc::clone(rs));
                    continue;
                }
                if d.metadata.deletion_timestamp.is_some() {
                    continue;
                }
                let patch = json!({"metadata": {"ownerReferences": [{"$patch": "delete", "uid": uid}], "uid": rs_uid}});
                match rs_api
                    .patch(&rs_name, &PatchParams::default(), &Patch::Strategic(patch))
                    .await
                {
                    Ok(_) => {}
                    // Gone or replaced: nothing to release.
                    Err(kube::Error::Api(s)) if s.is_not_found() || s.is_invalid() => {}
                    Err(e) => {
                        first_error.get_or_insert(ClaimError::Patch("release", rs_name, e));
                    }
                }
            }
            None => {
                if d.metadata.deletion_timestamp.is_some()
                    || !matches(selector, rs)
                    || rs.metadata.deletion_timestamp.is_some()
                {
                    continue;
                }
                let allowed = match &can_adopt {
                    Some(result) => result.clone(),
                    None => {
                        let d_api: Api<Deployment> = Api::namespaced(client.clone(), &namespace);
                        let result = match d_api.get(&name).await {
                            Ok(fresh) if fresh.metadata.uid.as_deref() != Some(uid.as_str()) => {
                                Err(format!(
                                    "original deployment is gone: got uid {:?}, wanted {uid}",
                                    fresh.metadata.uid
                                ))
                            }
                            Ok(fresh) if fresh.metadata.deletion_timestamp.is_some() => {
                                Err("deployment is being deleted".to_string())
                            }
                            Ok(_) => Ok(()),
                            Err(e) => Err(e.to_string()),
                        };
                        can_adopt = Some(result.clone());
                        result
                    }
                };
                if let Err(reason) = allowed {
                    first_error.get_or_insert(ClaimError::CannotAdopt(name.clone(), reason));
                    continue;
                }
                let patch = json!({"metadata": {"ownerReferences": [{
                    "apiVersion": "apps/v1", "kind": "Deployment", "name": name, "uid": uid,
                    "controller": true, "blockOwnerDeletion": true,
                }], "uid": rs_uid}});
                match rs_api
                    .patch(&rs_name, &PatchParams::default(), &Patch::Strategic(patch))
                    .await
                {
                    Ok(adopted) => claimed.push(Arc::new(adopted)),
                    Err(kube::Error::Api(s)) if s.is_not_found() => {}
                    Err(e) => {
                        first_error.get_or_insert(ClaimError::Patch("adopt", rs_name, e));
                    }
                }
            }
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(claimed),
    }
}
