//! `sync(key)`: adopt the set's orphaned revisions and its pods, then run the control loop
//! (`sync`, `adoptOrphanRevisions`, `getPodsForStatefulSet`, `syncStatefulSet` of kube's
//! `stateful_set.go`).

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use rkcm_runtime::controller_ref::{self, recheck_owner, ControllerRefManager, OwnerInfo};
use rkcm_runtime::ObjectKey;

use super::control::{orphans, selector_of, ControlError};
use super::identity::{is_member_of, replicas};
use super::StatefulSetController;

/// Why a sync failed; the key is retried with rate limiting.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// Orphaned revisions could not be adopted.
    #[error("can't adopt ControllerRevisions: {0}")]
    AdoptRevisions(String),
    /// Adopting or releasing pods failed.
    #[error(transparent)]
    Claim(#[from] controller_ref::Error),
    /// The control loop failed.
    #[error(transparent)]
    Control(#[from] ControlError),
}

impl StatefulSetController {
    /// Syncs the set with `key`. Not called concurrently for one key.
    pub async fn sync(&self, key: &ObjectKey) -> Result<(), SyncError> {
        let started = std::time::Instant::now();
        let result = self.sync_inner(key).await;
        tracing::debug!(%key, elapsed = ?started.elapsed(), "Finished syncing statefulset");
        result
    }

    async fn sync_inner(&self, key: &ObjectKey) -> Result<(), SyncError> {
        let Some(set) = self.set_store.get(key) else {
            tracing::info!(%key, "StatefulSet has been deleted");
            return Ok(());
        };
        let selector = match selector_of(&set) {
            Ok(s) => s,
            Err(err) => {
                // Not transient: the next update of the set retries.
                tracing::error!(%key, error = %err, "error converting StatefulSet selector");
                return Ok(());
            }
        };
        let owner = OwnerInfo::from_resource(&*set);
        let api: Api<StatefulSet> = Api::namespaced(self.client.clone(), key.namespace_str());

        // adoptOrphanRevisions
        let revisions = self.control.list_revisions(&set).await?;
        let orphaned = orphans(&revisions);
        if !orphaned.is_empty() {
            recheck_owner(&api, &owner)
                .await
                .map_err(|e| SyncError::AdoptRevisions(e.to_string()))?;
            self.control
                .adopt_orphan_revisions(&set, &orphaned)
                .await
                .map_err(|e| SyncError::AdoptRevisions(e.to_string()))?;
        }

        // getPodsForStatefulSet: every pod of the namespace, claimed if its name says it is a
        // member of the set. The claim skips pods other controllers own, so the set's own pods
        // and the namespace's orphans are the same candidates, without decoding the namespace.
        let uid = set.metadata.uid.as_deref().unwrap_or("");
        let pods: Vec<Arc<Pod>> = self.pod_store.claimable(key.namespace_str(), uid);
        let recheck_info = owner.clone();
        let can_adopt = move || {
            let (api, info) = (api.clone(), recheck_info.clone());
            async move { recheck_owner(&api, &info).await }
        };
        let pods =
            ControllerRefManager::<Pod>::new(self.client.clone(), owner, &selector, can_adopt)
                .claim_with_filter(&pods, |pod| is_member_of(&set, pod))
                .await?;

        // syncStatefulSet
        let status = self.control.update_stateful_set(&set, &pods).await?;
        let min_ready = super::status::min_ready_seconds(&set);
        if let Some(status) = status {
            if min_ready > 0 && i64::from(status.available_replicas.unwrap_or(0)) != replicas(&set)
            {
                // One more sync for the clock skew, and to record availability.
                self.queue
                    .add_after(key.clone(), Duration::from_secs(min_ready as u64));
            }
        }
        Ok(())
    }
}
