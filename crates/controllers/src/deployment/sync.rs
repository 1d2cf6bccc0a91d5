//! `syncDeployment`: read a Deployment and its ReplicaSets from the caches, decide with the pure
//! functions, write ReplicaSets and the Deployment status.
//!
//! Mirrors `syncDeployment` (deployment_controller.go) and `pkg/controller/deployment/sync.go`:
//! ReplicaSet claiming, the new ReplicaSet and revisions, scaling, cleanup and status writes.
//! Strategy-specific steps live in `rolling`, `recreate` and `rollback`.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, ReplicaSetSpec};
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, DeleteParams, ObjectMeta, PostParams};
use rkcm_labels::Selector;
use rkcm_runtime::controller_ref::{self, ControllerRefManager, OwnerInfo};
use rkcm_runtime::events::EventType;
use rkcm_runtime::informer::CONTROLLER_UID_INDEX;
use rkcm_runtime::ObjectKey;
use tracing::{debug, info};

use super::annotations::{
    max_revision, replicas_annotations_need_update, rollback_to, set_deployment_revision,
    set_new_replica_set_annotations, set_replicas_annotations, MAX_REV_HISTORY_LENGTH_IN_CHARS,
    REVISION,
};
use super::cleanup::replica_sets_to_delete;
use super::conditions::{
    deployment_condition, new_condition, set_condition, FAILED_RS_CREATE_REASON, FALSE,
    FOUND_NEW_RS_REASON, NEW_REPLICA_SET_REASON, PAUSED_DEPLOY_REASON, PROGRESSING,
    RESUMED_DEPLOY_REASON, TIMED_OUT_REASON, TRUE, UNKNOWN,
};
use super::fenceposts::max_surge;
use super::hash::{compute_hash, equal_ignore_hash};
use super::progress::{progress_check, rollout_status, ProgressCheck};
use super::recreate::PodMap;
use super::replica_sets::find_old_replica_sets;
use super::replicas::{new_rs_new_replicas, NewReplicasError};
use super::scale::{is_scaling_event, plan_scale, ScaleStep};
use super::spec::{
    generation, is_paused, min_ready_seconds, progress_deadline_seconds, replicas, rs_replicas,
    set_defaults, strategy_type, POD_TEMPLATE_HASH_LABEL, RECREATE, ROLLING_UPDATE,
};
use super::status::{calculate_status, status_equal};
use super::DeploymentController;

/// Why a Deployment could not be synced; the key is retried with backoff.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// The Deployment's selector cannot be parsed.
    #[error("deployment {key} has an invalid label selector")]
    InvalidSelector {
        /// The Deployment.
        key: ObjectKey,
        /// The parse error.
        #[source]
        source: rkcm_labels::Error,
    },
    /// Adopting or releasing ReplicaSets failed.
    #[error("failed to claim replica sets for deployment {key}")]
    Claim {
        /// The Deployment.
        key: ObjectKey,
        /// The cause.
        #[source]
        source: controller_ref::Error,
    },
    /// A write to the API server failed.
    #[error("failed to {action} {object}")]
    Api {
        /// What was attempted, e.g. "update status of".
        action: &'static str,
        /// The object, e.g. "deployment default/web".
        object: String,
        /// The cause.
        #[source]
        source: kube::Error,
    },
    /// The new ReplicaSet's size cannot be computed.
    #[error("cannot size the new replica set of deployment {key}")]
    NewReplicas {
        /// The Deployment.
        key: ObjectKey,
        /// The cause.
        #[source]
        source: NewReplicasError,
    },
    /// `spec.strategy.type` is unknown.
    #[error("unexpected deployment strategy type: {0}")]
    UnsupportedStrategy(String),
}

impl SyncError {
    /// Whether the error is a create refused because the namespace is being deleted: nothing more
    /// will succeed there, so the key is not retried.
    pub fn is_namespace_terminating(&self) -> bool {
        match self {
            SyncError::Api { source, .. } => {
                rkcm_runtime::api_error::is_namespace_terminating(source)
            }
            _ => false,
        }
    }
}

pub(crate) type Result<T, E = SyncError> = std::result::Result<T, E>;

pub(crate) fn d_key(d: &Deployment) -> ObjectKey {
    ObjectKey::from_obj(d)
}

fn api_error(
    action: &'static str,
    kind: &str,
    key: &ObjectKey,
) -> impl FnOnce(kube::Error) -> SyncError {
    let object = format!("{kind} {key}");
    move |source| SyncError::Api {
        action,
        object,
        source,
    }
}

/// The reference events about `d` point to.
pub(crate) fn object_reference(d: &Deployment) -> ObjectReference {
    ObjectReference {
        api_version: Some("apps/v1".into()),
        kind: Some("Deployment".into()),
        name: d.metadata.name.clone(),
        namespace: d.metadata.namespace.clone(),
        uid: d.metadata.uid.clone(),
        resource_version: d.metadata.resource_version.clone(),
        field_path: None,
    }
}

impl DeploymentController {
    /// Syncs the Deployment `key`. Never run concurrently for the same key.
    #[tracing::instrument(skip(self), fields(controller = "deployment"))]
    pub(crate) async fn sync(&self, key: &ObjectKey) -> Result<()> {
        let started = std::time::Instant::now();
        debug!("started syncing deployment");
        let result = self.sync_deployment(key).await;
        debug!(elapsed = ?started.elapsed(), "finished syncing deployment");
        match result {
            Err(e) if e.is_namespace_terminating() => {
                debug!(error = %e, "namespace is terminating; not retrying");
                Ok(())
            }
            Err(e) => {
                // The worker logs the error itself; the causes are only here.
                debug!(error = %error_chain(&e), "sync failed");
                Err(e)
            }
            Ok(()) => Ok(()),
        }
    }

    async fn sync_deployment(&self, key: &ObjectKey) -> Result<()> {
        let Some(cached) = self.deployments.get(key) else {
            debug!("deployment has been deleted");
            return Ok(());
        };
        // Work on a copy: the cache is shared.
        let mut d = (*cached).clone();
        let selector = d
            .spec
            .as_ref()
            .map(|s| s.selector.clone())
            .unwrap_or_default();
        if rkcm_labels::selects_everything(&selector) {
            self.recorder.event(
                &object_reference(&d),
                EventType::Warning,
                "SelectingAll",
                "This deployment is selecting all pods. A non-empty selector is required.",
            );
            let generation = generation(&d);
            let status = d.status.get_or_insert_with(Default::default);
            if status.observed_generation.unwrap_or(0) < generation {
                status.observed_generation = Some(generation);
                // As kube, the outcome of this write does not matter: the next change resyncs.
                let _ = self.update_status(&mut d).await;
            }
            return Ok(());
        }
        set_defaults(&mut d);

        // The ReplicaSets this Deployment controls, adopting matching orphans and releasing
        // controlled ones that no longer match.
        let rs_list = self.replica_sets_for_deployment(&d, key).await?;

        if d.metadata.deletion_timestamp.is_some() {
            return self.sync_status_only(&mut d, &rs_list).await;
        }
        // Record pause and resume in the Progressing condition, so that a resumed rollout is not
        // reported stuck for the time it was paused.
        self.check_paused_conditions(&mut d).await?;
        if is_paused(&d) {
            return self.sync_scale(&mut d, &rs_list).await;
        }
        // A rollback changes the template; nothing else happens until the request is cleared.
        if rollback_to(&d).is_some() {
            return self.rollback(&mut d, &rs_list).await;
        }
        let (new_rs, old_rss) = self
            .all_replica_sets_and_sync_revision(&mut d, &rs_list, false)
            .await?;
        // Later steps read the new ReplicaSet as just written, not as cached.
        let rs_list = with_replica_set(&rs_list, new_rs.as_ref());
        if is_scaling_event(&d, new_rs.as_ref(), &old_rss) {
            return self.sync_scale(&mut d, &rs_list).await;
        }
        match strategy_type(&d) {
            RECREATE => {
                // kube lists the pods on every sync (`getPodMapForDeployment`), but only the
                // Recreate rollout reads them; other syncs skip reading every pod.
                let pod_map = self.pod_map(&d, &rs_list);
                self.rollout_recreate(&mut d, &rs_list, &pod_map).await
            }
            ROLLING_UPDATE => self.rollout_rolling(&mut d, &rs_list).await,
            other => Err(SyncError::UnsupportedStrategy(other.to_string())),
        }
    }

    /// The ReplicaSets controlled by `d` after adoption and release (`getReplicaSetsForDeployment`).
    async fn replica_sets_for_deployment(
        &self,
        d: &Deployment,
        key: &ObjectKey,
    ) -> Result<Vec<Arc<ReplicaSet>>> {
        let selector = d
            .spec
            .as_ref()
            .map(|s| &s.selector)
            .cloned()
            .unwrap_or_default();
        let selector = Selector::from_label_selector(&selector).map_err(|source| {
            SyncError::InvalidSelector {
                key: key.clone(),
                source,
            }
        })?;
        // kube lists the namespace's ReplicaSets; those another controller owns are skipped by
        // the claim, so the owner's and the orphans are the same candidates without the scan.
        let uid = d.metadata.uid.as_deref().unwrap_or_default();
        let mut candidates = self.replica_sets.claimable(key.namespace_str(), uid);
        candidates.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        let owner = OwnerInfo::from_resource(d);
        // Adoption first re-reads the Deployment from the server: it must not adopt for a
        // Deployment that is being deleted or was replaced (kubernetes#42639).
        let api: Api<Deployment> = Api::namespaced(self.client.clone(), key.namespace_str());
        let recheck = owner.clone();
        let can_adopt = move || {
            let api = api.clone();
            let owner = recheck.clone();
            async move { controller_ref::recheck_owner(&api, &owner).await }
        };
        let manager = ControllerRefManager::<ReplicaSet>::new(
            self.client.clone(),
            owner,
            &selector,
            can_adopt,
        );
        manager
            .claim(&candidates)
            .await
            .map_err(|source| SyncError::Claim {
                key: key.clone(),
                source,
            })
    }

    /// Pods of `d`'s ReplicaSets that match its selector, grouped by ReplicaSet UID
    /// (`getPodMapForDeployment`).
    fn pod_map(&self, d: &Deployment, rs_list: &[Arc<ReplicaSet>]) -> PodMap {
        let selector = d
            .spec
            .as_ref()
            .and_then(|s| Selector::from_label_selector(&s.selector).ok())
            .unwrap_or_else(Selector::nothing);
        let empty = BTreeMap::new();
        rs_list
            .iter()
            .filter_map(|rs| rs.metadata.uid.clone())
            .map(|uid| {
                let pods = self
                    .pods
                    .by_index(CONTROLLER_UID_INDEX, &uid)
                    .into_iter()
                    .filter(|p| selector.matches(p.metadata.labels.as_ref().unwrap_or(&empty)))
                    .collect();
                (uid, pods)
            })
            .collect()
    }

    /// The new ReplicaSet (created when `create` and missing) and all old ones, with the new
    /// ReplicaSet's and the Deployment's revision brought up to date (`getAllReplicaSetsAndSyncRevision`).
    pub(crate) async fn all_replica_sets_and_sync_revision(
        &self,
        d: &mut Deployment,
        rs_list: &[Arc<ReplicaSet>],
        create: bool,
    ) -> Result<(Option<Arc<ReplicaSet>>, Vec<Arc<ReplicaSet>>)> {
        let (_, all_old) = find_old_replica_sets(d, rs_list);
        let new_rs = self.new_replica_set(d, rs_list, &all_old, create).await?;
        Ok((new_rs, all_old))
    }

    /// Finds, updates or creates the ReplicaSet for the Deployment's current template
    /// (`getNewReplicaSet`).
    async fn new_replica_set(
        &self,
        d: &mut Deployment,
        rs_list: &[Arc<ReplicaSet>],
        old_rss: &[Arc<ReplicaSet>],
        create: bool,
    ) -> Result<Option<Arc<ReplicaSet>>> {
        let key = d_key(d);
        let existing = super::replica_sets::find_new_replica_set(d, rs_list);
        let new_revision = (max_revision(old_rss.iter().map(|rs| &**rs)) + 1).to_string();

        if let Some(existing) = existing {
            // Sync its annotations (copied from the Deployment, revision, replicas) and
            // minReadySeconds, then the Deployment's revision.
            let mut copy = (*existing).clone();
            let annotations_updated = set_new_replica_set_annotations(
                d,
                &mut copy,
                &new_revision,
                true,
                MAX_REV_HISTORY_LENGTH_IN_CHARS,
            );
            let spec = copy.spec.get_or_insert_with(Default::default);
            let min_ready_needs_update =
                spec.min_ready_seconds.unwrap_or(0) != min_ready_seconds(d);
            if annotations_updated || min_ready_needs_update {
                spec.min_ready_seconds = Some(min_ready_seconds(d));
                let rs_key = ObjectKey::from_obj(&copy);
                let api: Api<ReplicaSet> =
                    Api::namespaced(self.client.clone(), key.namespace_str());
                let updated = api
                    .replace(&rs_key.name, &PostParams::default(), &copy)
                    .await
                    .map_err(api_error("update", "replica set", &rs_key))?;
                return Ok(Some(Arc::new(updated)));
            }
            // The revision on the ReplicaSet is authoritative: it was set by an earlier sync.
            let revision = copy
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(REVISION))
                .cloned()
                .unwrap_or_default();
            let mut needs_update = set_deployment_revision(d, &revision);
            // A Deployment that starts tracking progress late: count from the first time its new
            // ReplicaSet is seen.
            if progress_deadline_seconds(d).is_some()
                && deployment_condition(d, PROGRESSING).is_none()
            {
                let msg = format!(
                    "Found new replica set {:?}",
                    copy.metadata.name.as_deref().unwrap_or_default()
                );
                let condition = new_condition(
                    PROGRESSING,
                    TRUE,
                    FOUND_NEW_RS_REASON,
                    msg,
                    self.clock.now(),
                );
                set_condition(d.status.get_or_insert_with(Default::default), condition);
                needs_update = true;
            }
            if needs_update {
                self.update_status(d).await?;
            }
            return Ok(Some(existing));
        }

        if !create {
            return Ok(None);
        }

        // Name the new ReplicaSet after its template hash, so that creating it is idempotent.
        let spec = d.spec.clone().unwrap_or_default();
        let collision_count = d.status.as_ref().and_then(|s| s.collision_count);
        let hash = compute_hash(&spec.template, collision_count);
        let mut template = spec.template.clone();
        template
            .metadata
            .get_or_insert_with(Default::default)
            .labels
            .get_or_insert_with(BTreeMap::new)
            .insert(POD_TEMPLATE_HASH_LABEL.to_string(), hash.clone());
        let mut selector = spec.selector.clone();
        selector
            .match_labels
            .get_or_insert_with(BTreeMap::new)
            .insert(POD_TEMPLATE_HASH_LABEL.to_string(), hash.clone());
        let name = format!("{}-{}", key.name, hash);
        let mut new_rs = ReplicaSet {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(key.namespace_str().to_string()),
                owner_references: Some(vec![OwnerReference {
                    api_version: "apps/v1".into(),
                    kind: "Deployment".into(),
                    name: key.name.clone(),
                    uid: d.metadata.uid.clone().unwrap_or_default(),
                    controller: Some(true),
                    block_owner_deletion: Some(true),
                }]),
                labels: template.metadata.as_ref().and_then(|m| m.labels.clone()),
                ..Default::default()
            },
            spec: Some(ReplicaSetSpec {
                replicas: Some(0),
                min_ready_seconds: Some(min_ready_seconds(d)),
                selector,
                template: Some(template),
            }),
            status: None,
        };
        let all: Vec<&ReplicaSet> = old_rss.iter().map(|rs| &**rs).chain([&new_rs]).collect();
        let new_replicas =
            new_rs_new_replicas(d, all, &new_rs).map_err(|source| SyncError::NewReplicas {
                key: key.clone(),
                source,
            })?;
        new_rs.spec.get_or_insert_with(Default::default).replicas = Some(new_replicas);
        set_new_replica_set_annotations(
            d,
            &mut new_rs,
            &new_revision,
            false,
            MAX_REV_HISTORY_LENGTH_IN_CHARS,
        );

        let api: Api<ReplicaSet> = Api::namespaced(self.client.clone(), key.namespace_str());
        let rs_key = ObjectKey::new(key.namespace_str(), name.clone());
        let (created, already_existed) = match api.create(&PostParams::default(), &new_rs).await {
            Ok(created) => (Arc::new(created), false),
            Err(kube::Error::Api(status)) if status.is_already_exists() => {
                // A slow cache, or a hash collision. Read the ReplicaSet from the server: ours if we
                // control it and its template is the Deployment's.
                let existing =
                    api.get(&name)
                        .await
                        .map_err(api_error("get", "replica set", &rs_key))?;
                let ours =
                    super::handlers::controller_of(existing.metadata.owner_references.as_ref())
                        .is_some_and(|r| Some(&r.uid) == d.metadata.uid.as_ref());
                let same_template = existing
                    .spec
                    .as_ref()
                    .and_then(|s| s.template.as_ref())
                    .is_some_and(|t| equal_ignore_hash(&spec.template, t));
                if ours && same_template {
                    (Arc::new(existing), true)
                } else {
                    // A collision: bump collisionCount so the next sync computes another name.
                    let status = d.status.get_or_insert_with(Default::default);
                    let before = status.collision_count.unwrap_or(0);
                    status.collision_count = Some(before + 1);
                    if self.update_status(d).await.is_ok() {
                        info!(
                            from = before,
                            to = before + 1,
                            "found a hash collision for deployment; bumping collisionCount"
                        );
                    }
                    return Err(SyncError::Api {
                        action: "create",
                        object: format!("replica set {rs_key}"),
                        source: kube::Error::Api(status_already_exists(&name)),
                    });
                }
            }
            Err(source) => {
                let err = SyncError::Api {
                    action: "create",
                    object: format!("replica set {rs_key}"),
                    source,
                };
                if err.is_namespace_terminating() {
                    return Err(err);
                }
                let msg = create_failed_message(&name, &err);
                if progress_deadline_seconds(d).is_some() {
                    let condition = new_condition(
                        PROGRESSING,
                        FALSE,
                        FAILED_RS_CREATE_REASON,
                        msg.clone(),
                        self.clock.now(),
                    );
                    set_condition(d.status.get_or_insert_with(Default::default), condition);
                    // The failure to report matters more than this write's outcome.
                    let _ = self.update_status(d).await;
                }
                self.recorder.event(
                    &object_reference(d),
                    EventType::Warning,
                    FAILED_RS_CREATE_REASON,
                    msg,
                );
                return Err(err);
            }
        };
        if !already_existed && new_replicas > 0 {
            self.recorder.event(
                &object_reference(d),
                EventType::Normal,
                "ScalingReplicaSet",
                format!("Scaled up replica set {name} from 0 to {new_replicas}"),
            );
        }
        let mut needs_update = set_deployment_revision(d, &new_revision);
        if !already_existed && progress_deadline_seconds(d).is_some() {
            let msg = format!("Created new replica set {name:?}");
            let condition = new_condition(
                PROGRESSING,
                TRUE,
                NEW_REPLICA_SET_REASON,
                msg,
                self.clock.now(),
            );
            set_condition(d.status.get_or_insert_with(Default::default), condition);
            needs_update = true;
        }
        if needs_update {
            self.update_status(d).await?;
        }
        Ok(Some(created))
    }

    /// Writes `d.status` (and, as kube's status strategy allows for Deployments, its annotations),
    /// then continues with the stored object so later writes in this sync carry the new
    /// resourceVersion.
    pub(crate) async fn update_status(&self, d: &mut Deployment) -> Result<()> {
        let key = d_key(d);
        let api: Api<Deployment> = Api::namespaced(self.client.clone(), key.namespace_str());
        let updated = api
            .replace_status(&key.name, &PostParams::default(), d)
            .await
            .map_err(api_error("update status of", "deployment", &key))?;
        *d = updated;
        set_defaults(d);
        Ok(())
    }

    /// Writes `d`'s spec and metadata (used by rollback).
    pub(crate) async fn update_deployment(&self, d: &mut Deployment) -> Result<()> {
        let key = d_key(d);
        let api: Api<Deployment> = Api::namespaced(self.client.clone(), key.namespace_str());
        let updated = api
            .replace(&key.name, &PostParams::default(), d)
            .await
            .map_err(api_error("update", "deployment", &key))?;
        *d = updated;
        set_defaults(d);
        Ok(())
    }

    /// Sets the ReplicaSet's size and its replicas annotations (`scaleReplicaSet`). Returns whether
    /// the size changed, and the ReplicaSet as stored.
    pub(crate) async fn scale_replica_set(
        &self,
        d: &Deployment,
        step: &ScaleStep,
    ) -> Result<(bool, Arc<ReplicaSet>)> {
        let rs = &step.rs;
        let from = rs_replicas(rs);
        let want = replicas(d);
        let max = want + max_surge(d);
        let size_needs_update = from != step.to;
        if !size_needs_update && !replicas_annotations_need_update(rs, want, max) {
            return Ok((false, Arc::clone(rs)));
        }
        let mut copy = (**rs).clone();
        copy.spec.get_or_insert_with(Default::default).replicas = Some(step.to);
        set_replicas_annotations(&mut copy, want, max);
        let rs_key = ObjectKey::from_obj(&copy);
        let api: Api<ReplicaSet> = Api::namespaced(self.client.clone(), rs_key.namespace_str());
        let updated = api
            .replace(&rs_key.name, &PostParams::default(), &copy)
            .await
            .map_err(api_error("scale", "replica set", &rs_key))?;
        if size_needs_update {
            self.recorder.event(
                &object_reference(d),
                EventType::Normal,
                "ScalingReplicaSet",
                format!(
                    "Scaled {} replica set {} from {from} to {}",
                    step.operation,
                    step.name(),
                    step.to
                ),
            );
        }
        Ok((size_needs_update, Arc::new(updated)))
    }

    /// Applies `steps` in order, stopping at the first failure. Returns how many changed a size.
    ///
    /// A later step on a ReplicaSet written earlier starts from the object the server returned,
    /// as kube passes the updated ReplicaSet on, so it carries the new resourceVersion.
    pub(crate) async fn apply_scale_steps(
        &self,
        d: &Deployment,
        steps: &[ScaleStep],
    ) -> Result<usize> {
        let mut scaled = 0;
        let mut written: Vec<Arc<ReplicaSet>> = Vec::new();
        for step in steps {
            let step = carry_forward(step, &written);
            let (changed, stored) = self.scale_replica_set(d, &step).await?;
            if changed {
                scaled += 1;
            }
            written.retain(|rs| !same_object(rs, &stored));
            written.push(stored);
        }
        Ok(scaled)
    }

    /// Deletes the old ReplicaSets beyond the revision history limit (`cleanupDeployment`).
    pub(crate) async fn cleanup_deployment(
        &self,
        d: &Deployment,
        old_rss: &[Arc<ReplicaSet>],
    ) -> Result<()> {
        for rs in replica_sets_to_delete(d, old_rss) {
            let rs_key = ObjectKey::from_obj(&*rs);
            debug!(replica_set = %rs_key, "deleting old replica set beyond the revision history limit");
            let api: Api<ReplicaSet> = Api::namespaced(self.client.clone(), rs_key.namespace_str());
            match api.delete(&rs_key.name, &DeleteParams::default()).await {
                Ok(_) => {}
                Err(kube::Error::Api(status)) if status.is_not_found() => {}
                Err(source) => return Err(api_error("delete", "replica set", &rs_key)(source)),
            }
        }
        Ok(())
    }

    /// Updates only the status: for Deployments being deleted (`syncStatusOnly`).
    async fn sync_status_only(
        &self,
        d: &mut Deployment,
        rs_list: &[Arc<ReplicaSet>],
    ) -> Result<()> {
        let (new_rs, old_rss) = self
            .all_replica_sets_and_sync_revision(d, rs_list, false)
            .await?;
        let all: Vec<Arc<ReplicaSet>> = old_rss.into_iter().chain(new_rs.clone()).collect();
        self.sync_deployment_status(d, &all, new_rs.as_ref()).await
    }

    /// Reconciles a scaling event or a paused Deployment: proportional scaling, history cleanup
    /// when paused, status (kube's `sync`).
    async fn sync_scale(&self, d: &mut Deployment, rs_list: &[Arc<ReplicaSet>]) -> Result<()> {
        let (new_rs, old_rss) = self
            .all_replica_sets_and_sync_revision(d, rs_list, false)
            .await?;
        let steps = plan_scale(d, new_rs.as_ref(), &old_rss);
        // On failure the key is requeued and this sync ends here.
        self.apply_scale_steps(d, &steps).await?;
        if is_paused(d) && rollback_to(d).is_none() {
            self.cleanup_deployment(d, &old_rss).await?;
        }
        let all: Vec<Arc<ReplicaSet>> = old_rss.into_iter().chain(new_rs.clone()).collect();
        self.sync_deployment_status(d, &all, new_rs.as_ref()).await
    }

    /// Adds `DeploymentPaused` / `DeploymentResumed` to the Progressing condition when the pause
    /// state changed (`checkPausedConditions`). A timed-out condition is kept.
    async fn check_paused_conditions(&self, d: &mut Deployment) -> Result<()> {
        if progress_deadline_seconds(d).is_none() {
            return Ok(());
        }
        let reason = deployment_condition(d, PROGRESSING).and_then(|c| c.reason.clone());
        if reason.as_deref() == Some(TIMED_OUT_REASON) {
            return Ok(());
        }
        let paused_condition_exists = reason.as_deref() == Some(PAUSED_DEPLOY_REASON);
        let condition = match (is_paused(d), paused_condition_exists) {
            (true, false) => new_condition(
                PROGRESSING,
                UNKNOWN,
                PAUSED_DEPLOY_REASON,
                "Deployment is paused",
                self.clock.now(),
            ),
            (false, true) => new_condition(
                PROGRESSING,
                UNKNOWN,
                RESUMED_DEPLOY_REASON,
                "Deployment is resumed",
                self.clock.now(),
            ),
            _ => return Ok(()),
        };
        set_condition(d.status.get_or_insert_with(Default::default), condition);
        self.update_status(d).await
    }

    /// Writes the status computed from the ReplicaSets if it changed (`syncDeploymentStatus`).
    pub(crate) async fn sync_deployment_status(
        &self,
        d: &mut Deployment,
        all_rss: &[Arc<ReplicaSet>],
        new_rs: Option<&Arc<ReplicaSet>>,
    ) -> Result<()> {
        let new_status = calculate_status(d, all_rss, new_rs, self.clock.now());
        if status_equal(&d.status.clone().unwrap_or_default(), &new_status) {
            return Ok(());
        }
        d.status = Some(new_status);
        self.update_status(d).await
    }

    /// Writes the rollout status with its Progressing condition if it changed; otherwise schedules
    /// the next progress check of a stuck rollout (`syncRolloutStatus`).
    pub(crate) async fn sync_rollout_status(
        &self,
        d: &mut Deployment,
        all_rss: &[Arc<ReplicaSet>],
        new_rs: Option<&Arc<ReplicaSet>>,
    ) -> Result<()> {
        let now = self.clock.now();
        let new_status = rollout_status(d, all_rss, new_rs, now);
        if status_equal(&d.status.clone().unwrap_or_default(), &new_status) {
            match progress_check(d, &new_status, now) {
                ProgressCheck::None => {}
                // Rate limited, so a rollout at its deadline cannot spin.
                ProgressCheck::Now => self.queue.add_rate_limited(d_key(d)),
                ProgressCheck::After(after) => self.queue.add_after(d_key(d), after),
            }
            return Ok(());
        }
        d.status = Some(new_status);
        self.update_status(d).await
    }
}

/// `rs_list` with the entry of `rs` (same UID) replaced by `rs`.
pub(crate) fn with_replica_set(
    rs_list: &[Arc<ReplicaSet>],
    rs: Option<&Arc<ReplicaSet>>,
) -> Vec<Arc<ReplicaSet>> {
    rs_list
        .iter()
        .map(|cached| match rs {
            Some(rs) if rs.metadata.uid == cached.metadata.uid => Arc::clone(rs),
            _ => Arc::clone(cached),
        })
        .collect()
}

fn same_object(a: &ReplicaSet, b: &ReplicaSet) -> bool {
    a.metadata.uid == b.metadata.uid
        && a.metadata.namespace == b.metadata.namespace
        && a.metadata.name == b.metadata.name
}

/// `step`, starting from the stored ReplicaSet when an earlier step of the same sync wrote it.
fn carry_forward(step: &ScaleStep, written: &[Arc<ReplicaSet>]) -> ScaleStep {
    match written.iter().find(|rs| same_object(rs, &step.rs)) {
        Some(stored) => ScaleStep {
            rs: Arc::clone(stored),
            ..step.clone()
        },
        None => step.clone(),
    }
}

/// The messages of an error and its sources, joined (an API error as its `Status` message).
fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    rkcm_runtime::api_error::chain(err)
}

/// The `ReplicaSetCreateError` condition and event message of kube's `getNewReplicaSet`:
/// `Failed to create new replica set %q: %v`, the error being the API's.
fn create_failed_message(name: &str, err: &SyncError) -> String {
    let cause = match err {
        SyncError::Api { source, .. } => rkcm_runtime::api_error::message(source),
        other => error_chain(other),
    };
    format!("Failed to create new replica set {name:?}: {cause}")
}

fn status_already_exists(name: &str) -> Box<kube::core::Status> {
    kube::core::Status::failure(
        &format!("replicasets.apps {name:?} already exists"),
        "AlreadyExists",
    )
    .with_code(409)
    .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deployment::fixtures::rs;

    #[test]
    fn a_namespace_terminating_cause_is_recognised() {
        // As the API server sends it.
        let status: kube::core::Status = serde_json::from_value(serde_json::json!({
            "status": "Failure", "code": 403, "reason": "Forbidden",
            "message": "unable to create new content in namespace default because it is being terminated",
            "details": {"causes": [{"reason": rkcm_runtime::api_error::NAMESPACE_TERMINATING_CAUSE, "message": "namespace default is being terminated"}]},
        }))
        .expect("a valid Status");
        let err = SyncError::Api {
            action: "create",
            object: "replica set default/web-abc".into(),
            source: kube::Error::Api(status.boxed()),
        };
        assert!(err.is_namespace_terminating());
        let other = SyncError::UnsupportedStrategy("BlueGreen".into());
        assert!(!other.is_namespace_terminating());
    }

    fn forbidden(message: &str) -> kube::Error {
        kube::Error::Api(
            kube::core::Status::failure(message, "Forbidden")
                .with_code(403)
                .boxed(),
        )
    }

    #[test]
    fn a_failed_create_is_reported_with_the_status_message() {
        // sync.go: msg := fmt.Sprintf("Failed to create new replica set %q: %v", newRS.Name, err)
        let err = SyncError::Api {
            action: "create",
            object: "replica set default/web-abc".into(),
            source: forbidden("replicasets.apps \"web-abc\" is forbidden: exceeded quota: q"),
        };
        assert_eq!(
            create_failed_message("web-abc", &err),
            "Failed to create new replica set \"web-abc\": replicasets.apps \"web-abc\" is forbidden: exceeded quota: q"
        );
    }

    #[test]
    fn an_error_chain_ends_with_the_status_message_not_a_dump() {
        let err = SyncError::Api {
            action: "update status of",
            object: "deployment default/web".into(),
            source: forbidden("nope"),
        };
        assert_eq!(
            error_chain(&err),
            "failed to update status of deployment default/web: nope"
        );
        assert_eq!(error_chain(&forbidden("nope")), "nope");
    }

    #[test]
    fn a_second_step_on_a_written_replica_set_starts_from_the_stored_object() {
        let cached = Arc::new(rs("old", 10, &[], None));
        let mut stored = rs("old", 9, &[], None);
        stored.metadata.resource_version = Some("7".into());
        let stored = Arc::new(stored);
        let mut planned = (*cached).clone();
        planned.spec.as_mut().unwrap().replicas = Some(9);
        let second = ScaleStep {
            rs: Arc::new(planned),
            to: 8,
            operation: "down",
        };
        let step = carry_forward(&second, std::slice::from_ref(&stored));
        assert!(Arc::ptr_eq(&step.rs, &stored));
        assert_eq!((step.to, step.operation), (8, "down"));
        let other = Arc::new(rs("other", 3, &[], None));
        assert!(Arc::ptr_eq(
            &carry_forward(
                &ScaleStep {
                    rs: other.clone(),
                    to: 1,
                    operation: "down"
                },
                &[stored]
            )
            .rs,
            &other
        ));
    }

    #[test]
    fn a_written_replica_set_replaces_its_cached_copy() {
        let cached = vec![
            Arc::new(rs("a", 1, &[], None)),
            Arc::new(rs("b", 1, &[], None)),
        ];
        let written = Arc::new(rs("b", 5, &[], None));
        let list = with_replica_set(&cached, Some(&written));
        assert!(Arc::ptr_eq(&list[0], &cached[0]));
        assert!(Arc::ptr_eq(&list[1], &written));
        assert_eq!(with_replica_set(&cached, None).len(), 2);
    }
}

#[cfg(test)]
mod deletion_race_tests {
    use std::time::Duration;

    use super::*;
    use crate::deployment::Config;
    use rkcm_runtime::events::EventBroadcaster;
    use rkcm_runtime::informer::InformerFactory;
    use serde_json::json;

    #[tokio::test]
    async fn a_deployment_deleted_behind_a_stale_cache_adopts_nothing() {
        // TestSyncDeploymentDeletionRace: the cache says the Deployment is not being deleted,
        // the server says it is. Adopting the matching orphan first re-reads the Deployment
        // uncached; that finds the deletion, so the sync fails (to retry once the cache has
        // caught up) and nothing is adopted or written.
        let server = rkcm_apiserver::testing::start().await;
        let client = server.client();
        let d_api: Api<Deployment> = Api::namespaced(client.clone(), "default");
        let rs_api: Api<ReplicaSet> = Api::namespaced(client.clone(), "default");
        let template = json!({"metadata": {"labels": {"foo": "bar"}},
            "spec": {"containers": [{"name": "app", "image": "app:v1"}]}});
        let d: Deployment = serde_json::from_value(json!({
            "metadata": {"name": "foo", "finalizers": ["example.com/hold"]},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"foo": "bar"}}, "template": template},
        }))
        .expect("a valid Deployment");
        let cached = d_api
            .create(&PostParams::default(), &d)
            .await
            .expect("create");
        d_api
            .delete("foo", &DeleteParams::default())
            .await
            .expect("delete");
        let deleting = d_api
            .get("foo")
            .await
            .expect("still there, held by its finalizer");
        assert!(deleting.metadata.deletion_timestamp.is_some());

        // The recheck is only triggered if a matching orphan exists.
        let orphan: ReplicaSet = serde_json::from_value(json!({
            "metadata": {"name": "rs1", "labels": {"foo": "bar"}},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"foo": "bar"}}, "template": template},
        }))
        .expect("a valid ReplicaSet");
        let orphan = rs_api
            .create(&PostParams::default(), &orphan)
            .await
            .expect("create");

        // Caches that are never started: they hold what the test puts there.
        let factory = InformerFactory::new(client.clone(), Duration::ZERO);
        let recorder =
            EventBroadcaster::new(client.clone()).recorder(crate::deployment::EVENT_SOURCE);
        let ctrl = DeploymentController::new(&factory, client.clone(), recorder, Config::default());
        ctrl.deployments.insert(Arc::new(cached.clone()));
        ctrl.replica_sets.insert(Arc::new(orphan.clone()));

        let key = ObjectKey::new("default", "foo");
        let err = ctrl
            .sync(&key)
            .await
            .expect_err("the sync fails to be retried");
        assert!(matches!(err, SyncError::Claim { .. }), "{err}");

        let after = rs_api.get("rs1").await.expect("the orphan");
        assert_eq!(after.metadata.owner_references, None, "not adopted");
        assert_eq!(
            after.metadata.resource_version,
            orphan.metadata.resource_version
        );
        assert_eq!(
            rs_api
                .list(&Default::default())
                .await
                .expect("list")
                .items
                .len(),
            1
        );
        let d_after = d_api.get("foo").await.expect("the deployment");
        assert_eq!(
            d_after.metadata.resource_version, deleting.metadata.resource_version,
            "nothing else is written"
        );
    }
}
