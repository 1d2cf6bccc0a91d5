//! The StatefulSet control loop proper: revisions, then pods in ordinal order, then status,
//! then history truncation (`defaultStatefulSetControl` of kube's `stateful_set_control.go`).
//!
//! `OrderedReady` sets are *monotonic*: pods are created one at a time in ascending ordinal order,
//! each only once its predecessors are Running, Ready and available, and deleted one at a time in
//! descending order. `Parallel` sets create and delete in slow-start batches without waiting.
//! A `RollingUpdate` deletes the highest-ordinal pod not at the update revision, down to the
//! partition, one at a time (`MaxUnavailableStatefulSet` is alpha and off in 1.33, so
//! `maxUnavailable` is not honoured); `OnDelete` leaves updates to whoever deletes pods.

use std::sync::Arc;

use futures::future::join_all;
use k8s_openapi::api::apps::v1::{ControllerRevision, StatefulSet, StatefulSetStatus};
use k8s_openapi::api::core::v1::Pod;
use rkcm_runtime::controller_ref::{controller_of, OwnerInfo};
use rkcm_runtime::history::{self, History, HistoryError};
use rkcm_runtime::labels::Selector;
use rkcm_runtime::Clock;

use super::identity::{
    identity_matches, in_ordinal_range, is_created, is_failed, is_on_delete, is_pending,
    is_running_and_available, is_running_and_ready, is_succeeded, is_terminating, is_unavailable,
    name, new_versioned_pod, ordinal, partition, pod_revision, replicas, sort_descending,
    start_ordinal, storage_matches,
};
use super::pod_control::{PodControlError, StatefulPodControl};
use super::revision::{apply_revision, new_revision, RevisionError};
use super::status::{
    all, complete_rolling_update, inconsistent_status, min_ready_seconds, update_counts,
    StatusUpdater,
};

/// Most concurrent writes of one slow-start batch in `Parallel` mode (`MaxBatchSize`).
pub const MAX_BATCH_SIZE: usize = 500;

/// Why a sync of a set's pods failed. Several failures read as kube's aggregate `[a, b]`.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    /// The set's selector does not parse.
    #[error("{0}")]
    Selector(String),
    /// Reading or writing ControllerRevisions failed.
    #[error(transparent)]
    History(#[from] HistoryError),
    /// A revision could not be applied.
    #[error(transparent)]
    Revision(#[from] RevisionError),
    /// A pod or claim operation failed.
    #[error(transparent)]
    Pod(#[from] PodControlError),
    /// Writing `/status` failed.
    #[error("{}", rkcm_runtime::api_error::message(.0))]
    Status(#[source] kube::Error),
    /// Several failures.
    #[error("[{}]", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "))]
    Aggregate(Vec<ControlError>),
}

fn aggregate(mut errors: Vec<ControlError>) -> Result<(), ControlError> {
    match errors.len() {
        0 => Ok(()),
        1 => Err(errors.remove(0)),
        _ => Err(ControlError::Aggregate(errors)),
    }
}

/// The selector of the set.
pub fn selector_of(set: &StatefulSet) -> Result<Selector, ControlError> {
    Selector::from_optional_label_selector(set.spec.as_ref().map(|s| &s.selector))
        .map_err(|e| ControlError::Selector(e.to_string()))
}

/// Syncs one set's revisions, pods and status (`StatefulSetControlInterface`).
pub struct StatefulSetControl {
    pod_control: StatefulPodControl,
    status_updater: Arc<dyn StatusUpdater>,
    history: Arc<dyn History>,
    clock: Arc<dyn Clock>,
}

/// The outcome of one step over one pod: whether to stop this round, and any failure.
type Step = (bool, Result<(), ControlError>);

/// The revisions a sync works with.
struct Revisions {
    current: ControllerRevision,
    update: ControllerRevision,
    collision_count: i32,
}

fn rev_name(r: &ControllerRevision) -> &str {
    r.metadata.name.as_deref().unwrap_or_default()
}

impl StatefulSetControl {
    /// Control through `pod_control`, `status_updater` and `history`, timing availability on
    /// `clock`.
    pub fn new(
        pod_control: StatefulPodControl,
        status_updater: Arc<dyn StatusUpdater>,
        history: Arc<dyn History>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            pod_control,
            status_updater,
            history,
            clock,
        }
    }

    /// The set's revisions: selected, owned by it or by nothing (`ListRevisions`).
    pub async fn list_revisions(
        &self,
        set: &StatefulSet,
    ) -> Result<Vec<Arc<ControllerRevision>>, ControlError> {
        let selector = selector_of(set)?;
        Ok(self
            .history
            .list_revisions(&OwnerInfo::from_resource(set), &selector)
            .await?)
    }

    /// Adopts the set's orphaned revisions (`AdoptOrphanRevisions`).
    pub async fn adopt_orphan_revisions(
        &self,
        set: &StatefulSet,
        revisions: &[Arc<ControllerRevision>],
    ) -> Result<(), ControlError> {
        let owner = OwnerInfo::from_resource(set);
        for revision in revisions {
            self.history.adopt_revision(&owner, revision).await?;
        }
        Ok(())
    }

    /// Brings the set's pods toward its spec and writes its status (`UpdateStatefulSet`). Returns
    /// the status computed, when one was.
    pub async fn update_stateful_set(
        &self,
        set: &StatefulSet,
        pods: &[Arc<Pod>],
    ) -> Result<Option<StatefulSetStatus>, ControlError> {
        let mut revisions = self.list_revisions(set).await?;
        history::sort_revisions(&mut revisions);
        let (revs, result) = self.perform_update(set, pods, &revisions).await;
        let truncated = self
            .truncate_history(set, pods, &revisions, revs.as_ref())
            .await;
        match result {
            Ok(status) => truncated.map(|()| Some(status)),
            Err(err) => {
                let mut errors = match err {
                    ControlError::Aggregate(errs) => errs,
                    other => vec![other],
                };
                if let Err(t) = truncated {
                    errors.push(t);
                }
                aggregate(errors).map(|()| None)
            }
        }
    }

    async fn perform_update(
        &self,
        set: &StatefulSet,
        pods: &[Arc<Pod>],
        revisions: &[Arc<ControllerRevision>],
    ) -> (Option<Revisions>, Result<StatefulSetStatus, ControlError>) {
        let revs = match self.stateful_set_revisions(set, revisions).await {
            Ok(revs) => revs,
            Err(err) => return (None, Err(err)),
        };
        let (status, err) = self.update_set(set, &revs, pods).await;
        let Some(mut status) = status else {
            return (Some(revs), Err(err.expect("no status only on error")));
        };
        let status_err = self.update_set_status(set, &mut status).await.err();
        let result = match (err, status_err) {
            (Some(err), Some(status_err)) => {
                tracing::error!(error = %status_err, "could not update status");
                Err(err)
            }
            (Some(err), None) => Err(err),
            (None, Some(status_err)) => Err(status_err),
            (None, None) => Ok(status),
        };
        (Some(revs), result)
    }

    /// Deletes the oldest revisions no pod, nor the current or update revision, uses, beyond
    /// `revisionHistoryLimit` (`truncateHistory`).
    async fn truncate_history(
        &self,
        set: &StatefulSet,
        pods: &[Arc<Pod>],
        revisions: &[Arc<ControllerRevision>],
        revs: Option<&Revisions>,
    ) -> Result<(), ControlError> {
        let mut live: Vec<&str> = pods.iter().map(|p| pod_revision(p)).collect();
        if let Some(revs) = revs {
            live.push(rev_name(&revs.current));
            live.push(rev_name(&revs.update));
        }
        let history: Vec<&Arc<ControllerRevision>> = revisions
            .iter()
            .filter(|r| !live.contains(&rev_name(r)))
            .collect();
        let limit = set
            .spec
            .as_ref()
            .and_then(|s| s.revision_history_limit)
            .unwrap_or(10);
        if limit < 0 || history.len() <= limit as usize {
            return Ok(());
        }
        for revision in &history[..history.len() - limit as usize] {
            self.history.delete_revision(revision).await?;
        }
        Ok(())
    }

    /// The current and update revisions, creating the update revision or renumbering an equal
    /// older one (a rollback), and the collision count used (`getStatefulSetRevisions`).
    async fn stateful_set_revisions(
        &self,
        set: &StatefulSet,
        revisions: &[Arc<ControllerRevision>],
    ) -> Result<Revisions, ControlError> {
        let mut collision_count = set
            .status
            .as_ref()
            .and_then(|s| s.collision_count)
            .unwrap_or(0);
        let candidate = new_revision(set, history::next_revision(revisions), collision_count);
        let equal = history::find_equal_revisions(revisions, &candidate);
        let update = match (equal.last(), revisions.last()) {
            (Some(eq), Some(last)) if history::equal_revision(last, eq) => (**last).clone(),
            (Some(eq), _) => self.history.update_revision(eq, candidate.revision).await?,
            (None, _) => {
                self.history
                    .create_revision(
                        &OwnerInfo::from_resource(set),
                        &candidate,
                        &mut collision_count,
                    )
                    .await?
            }
        };
        let current_name = set
            .status
            .as_ref()
            .and_then(|s| s.current_revision.as_deref())
            .unwrap_or_default();
        let current = revisions
            .iter()
            .find(|r| rev_name(r) == current_name)
            .map_or_else(|| update.clone(), |r| (**r).clone());
        Ok(Revisions {
            current,
            update,
            collision_count,
        })
    }

    /// Creates, fixes and deletes pods (`updateStatefulSet`). Returns the status to record (none
    /// only when the revisions could not be applied) and the first failure.
    async fn update_set(
        &self,
        set: &StatefulSet,
        revs: &Revisions,
        pods: &[Arc<Pod>],
    ) -> (Option<StatefulSetStatus>, Option<ControlError>) {
        let current_set = match apply_revision(set, &revs.current) {
            Ok(s) => s,
            Err(err) => return (None, Some(err.into())),
        };
        let update_set = match apply_revision(set, &revs.update) {
            Ok(s) => s,
            Err(err) => return (None, Some(err.into())),
        };
        let now = self.clock.now();
        let min_ready = min_ready_seconds(set);
        let (current_name, update_name) = (rev_name(&revs.current), rev_name(&revs.update));
        let mut status = StatefulSetStatus {
            observed_generation: set.metadata.generation,
            current_revision: Some(current_name.to_string()),
            update_revision: Some(update_name.to_string()),
            collision_count: Some(revs.collision_count),
            ..Default::default()
        };
        update_counts(
            &mut status,
            min_ready,
            current_name,
            update_name,
            pods.iter().map(|p| &**p),
            now,
        );

        let start = start_ordinal(set);
        let count = replicas(set).max(0) as usize;
        let mut slots: Vec<Option<Arc<Pod>>> = vec![None; count];
        let mut condemned: Vec<Arc<Pod>> = Vec::new();
        for pod in pods {
            if in_ordinal_range(pod, set) {
                slots[(ordinal(pod) - start) as usize] = Some(Arc::clone(pod));
            } else if ordinal(pod) >= 0 {
                condemned.push(Arc::clone(pod));
            }
        }
        let replicas_list: Vec<Arc<Pod>> = slots
            .into_iter()
            .enumerate()
            .map(|(i, slot)| {
                slot.unwrap_or_else(|| {
                    Arc::new(new_versioned_pod(
                        &current_set,
                        &update_set,
                        current_name,
                        update_name,
                        start + i as i64,
                    ))
                })
            })
            .collect();
        sort_descending(&mut condemned);

        // The first unavailable pod: among replicas by ascending ordinal, else among the
        // condemned from the lowest ordinal.
        let first_unavailable = replicas_list
            .iter()
            .chain(condemned.iter().rev())
            .find(|p| is_unavailable(p, min_ready, now))
            .cloned();

        let recount = |status: &mut StatefulSetStatus| {
            update_counts(
                status,
                min_ready,
                current_name,
                update_name,
                all(&[&replicas_list, &condemned]),
                now,
            )
        };

        if set.metadata.deletion_timestamp.is_some() {
            return (Some(status), None);
        }
        let monotonic = !allows_burst(set);

        let (stop, err) = self
            .run_for_all(replicas_list.len(), monotonic, |i| {
                self.process_replica(set, &update_set, monotonic, &replicas_list[i])
            })
            .await;
        if stop || err.is_some() {
            recount(&mut status);
            return (Some(status), err);
        }

        let (stop, err) = self
            .run_for_all(condemned.len(), monotonic, |i| {
                let pod = Arc::clone(&condemned[i]);
                let update_set = &update_set;
                async move {
                    if self
                        .pod_control
                        .claims_match_retention_policy(update_set, &pod)
                    {
                        return (false, Ok(()));
                    }
                    match self
                        .pod_control
                        .update_claims_for_retention_policy(update_set, &pod)
                        .await
                    {
                        Ok(()) => (false, Ok(())),
                        Err(err) => (true, Err(err.into())),
                    }
                }
            })
            .await;
        if stop || err.is_some() {
            recount(&mut status);
            return (Some(status), err);
        }

        let (stop, err) = self
            .run_for_all(condemned.len(), monotonic, |i| {
                self.process_condemned(
                    set,
                    first_unavailable.as_ref(),
                    monotonic,
                    &condemned[i],
                    min_ready,
                )
            })
            .await;
        if stop || err.is_some() {
            recount(&mut status);
            return (Some(status), err);
        }

        recount(&mut status);
        if is_on_delete(set) {
            return (Some(status), None);
        }

        // Rolling update, one pod at a time from the highest ordinal down to the partition.
        let update_min = partition(set).max(0) as usize;
        for target in (update_min..replicas_list.len()).rev() {
            let pod = &replicas_list[target];
            if pod_revision(pod) != update_name && !is_terminating(pod) {
                tracing::info!(
                    pod = name(pod),
                    "Pod of StatefulSet is terminating for update"
                );
                if let Err(err) = self.pod_control.delete_stateful_pod(set, pod).await {
                    if !err.is_not_found() {
                        return (Some(status), Some(err.into()));
                    }
                }
                status.current_replicas = Some(status.current_replicas.unwrap_or(0) - 1);
                return (Some(status), None);
            }
            if is_unavailable(pod, min_ready, now) {
                return (Some(status), None);
            }
        }
        (Some(status), None)
    }

    /// `runForAll`: in order, stopping at the first step that asks to, when monotonic; else in
    /// slow-start batches (1, 2, 4, … up to [`MAX_BATCH_SIZE`]) until a batch fails.
    async fn run_for_all<'a, F, Fut>(
        &self,
        len: usize,
        monotonic: bool,
        step: F,
    ) -> (bool, Option<ControlError>)
    where
        F: Fn(usize) -> Fut,
        Fut: std::future::Future<Output = Step> + 'a,
    {
        if monotonic {
            for i in 0..len {
                let (stop, result) = step(i).await;
                if stop || result.is_err() {
                    return (true, result.err());
                }
            }
            return (false, None);
        }
        let mut next = 0;
        let mut batch = 1.min(len);
        while batch > 0 {
            let results = join_all((next..next + batch).map(&step)).await;
            next += batch;
            let errors: Vec<ControlError> =
                results.into_iter().filter_map(|(_, r)| r.err()).collect();
            if !errors.is_empty() {
                return (true, aggregate(errors).err());
            }
            batch = (2 * batch).min(len - next).min(MAX_BATCH_SIZE);
        }
        (false, None)
    }

    /// One pod in range (`processReplica`): replace it if it failed, create it if missing, wait
    /// for it in monotonic mode, else fix its identity, storage and claims.
    async fn process_replica(
        &self,
        set: &StatefulSet,
        update_set: &StatefulSet,
        monotonic: bool,
        pod: &Arc<Pod>,
    ) -> Step {
        let pc = &self.pod_control;
        if is_failed(pod) || is_succeeded(pod) {
            if !is_terminating(pod) {
                if let Err(err) = pc.delete_stateful_pod(set, pod).await {
                    return (true, Err(err.into()));
                }
            }
            // The replacement is created by a later sync, once the pod is gone.
            return (true, Ok(()));
        }
        if !is_created(pod) {
            if pc.pod_claim_is_stale(set, pod) {
                return (true, Ok(()));
            }
            if let Err(err) = pc.create_stateful_pod(set, pod).await {
                return (true, Err(err.into()));
            }
            if monotonic {
                return (true, Ok(()));
            }
        }
        if is_pending(pod) {
            if let Err(err) = pc.create_missing_claims(set, pod).await {
                return (true, Err(err.into()));
            }
        }
        if is_terminating(pod) && monotonic {
            tracing::debug!(
                pod = name(pod),
                "StatefulSet is waiting for Pod to Terminate"
            );
            return (true, Ok(()));
        }
        if !is_running_and_ready(pod) && monotonic {
            tracing::debug!(
                pod = name(pod),
                "StatefulSet is waiting for Pod to be Running and Ready"
            );
            return (true, Ok(()));
        }
        if !is_running_and_available(pod, min_ready_seconds(set), self.clock.now()) && monotonic {
            tracing::debug!(
                pod = name(pod),
                "StatefulSet is waiting for Pod to be Available"
            );
            return (true, Ok(()));
        }
        let retention_match = pc.claims_match_retention_policy(update_set, pod);
        if identity_matches(set, pod) && storage_matches(set, pod) && retention_match {
            return (false, Ok(()));
        }
        match pc.update_stateful_pod(update_set, pod).await {
            Ok(()) => (false, Ok(())),
            Err(err) => (true, Err(err.into())),
        }
    }

    /// One pod out of range (`processCondemned`): delete it, in monotonic mode only once it is the
    /// first unhealthy pod or everything before it is healthy.
    async fn process_condemned(
        &self,
        set: &StatefulSet,
        first_unavailable: Option<&Arc<Pod>>,
        monotonic: bool,
        pod: &Arc<Pod>,
        min_ready: i32,
    ) -> Step {
        if is_terminating(pod) {
            return (monotonic, Ok(()));
        }
        let is_first = first_unavailable.is_some_and(|f| Arc::ptr_eq(f, pod));
        if !is_running_and_ready(pod) && monotonic && !is_first {
            return (true, Ok(()));
        }
        if !is_running_and_available(pod, min_ready, self.clock.now()) && monotonic && !is_first {
            return (true, Ok(()));
        }
        tracing::info!(
            pod = name(pod),
            "Pod of StatefulSet is terminating for scale down"
        );
        (
            true,
            self.pod_control
                .delete_stateful_pod(set, pod)
                .await
                .map_err(Into::into),
        )
    }

    /// Completes a finished rolling update and writes the status if it changed
    /// (`updateStatefulSetStatus`).
    async fn update_set_status(
        &self,
        set: &StatefulSet,
        status: &mut StatefulSetStatus,
    ) -> Result<(), ControlError> {
        complete_rolling_update(set, status);
        if !inconsistent_status(set, status) {
            return Ok(());
        }
        self.status_updater
            .update_status(set, status)
            .await
            .map_err(ControlError::Status)
    }
}

/// Whether pods are managed in parallel (`allowsBurst`: `podManagementPolicy: Parallel`).
pub fn allows_burst(set: &StatefulSet) -> bool {
    set.spec
        .as_ref()
        .and_then(|s| s.pod_management_policy.as_deref())
        == Some("Parallel")
}

/// The revisions of `revisions` that no controller owns.
pub fn orphans(revisions: &[Arc<ControllerRevision>]) -> Vec<Arc<ControllerRevision>> {
    revisions
        .iter()
        .filter(|r| controller_of(&r.metadata).is_none())
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::statefulset::fixtures::{
        new_stateful_set, set_image, set_pending, set_ready, set_running, FakeObjectManager,
        FakeStatusUpdater,
    };
    use crate::statefulset::identity::{claims_for, is_healthy};
    use crate::statefulset::pod_control::ObjectManager;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use rkcm_runtime::events::EventRecorder;
    use rkcm_runtime::informer::Store;
    use rkcm_runtime::testing::FakeHistory;
    use rkcm_runtime::FakeClock;

    /// kube's test harness: a control over fakes, and a set whose status is read back after
    /// each sync.
    struct Harness {
        objects: Arc<FakeObjectManager>,
        statuses: Arc<FakeStatusUpdater>,
        revisions: Store<ControllerRevision>,
        control: StatefulSetControl,
        clock: FakeClock,
        events: tokio::sync::mpsc::Receiver<k8s_openapi::api::core::v1::Event>,
    }

    fn harness() -> Harness {
        let objects = Arc::new(FakeObjectManager::default());
        let statuses = Arc::new(FakeStatusUpdater::default());
        let revisions = Store::new();
        let clock = FakeClock::default();
        let (recorder, events) = EventRecorder::channel("statefulset-controller", 10_000);
        let control = StatefulSetControl::new(
            StatefulPodControl::new(objects.clone(), recorder),
            statuses.clone(),
            Arc::new(FakeHistory::new(revisions.clone())),
            Arc::new(clock.clone()),
        );
        Harness {
            objects,
            statuses,
            revisions,
            control,
            clock,
            events,
        }
    }

    impl Harness {
        /// The set's pods, by ascending ordinal.
        fn pods(&self) -> Vec<Arc<Pod>> {
            let mut pods = self.objects.pods.list();
            pods.sort_by_key(|p| ordinal(p));
            pods
        }

        fn names(&self) -> Vec<String> {
            self.pods().iter().map(|p| name(p).to_string()).collect()
        }

        /// One sync; the written status becomes the set's.
        async fn sync(&self, set: &mut StatefulSet) -> Result<(), ControlError> {
            let result = self.control.update_stateful_set(set, &self.pods()).await;
            if let Some(status) = self.statuses.written.lock().last() {
                set.status = Some(status.clone());
            }
            result.map(drop)
        }

        fn edit(&self, pod: &Pod, f: impl FnOnce(&mut Pod)) {
            let mut p = pod.clone();
            f(&mut p);
            self.objects.pods.insert(Arc::new(p));
        }

        /// kube's "move one pod forward": every pod without a phase becomes Pending, then the
        /// lowest-ordinal pod that is not ready moves Pending → Running → Ready.
        fn advance(&self) {
            for pod in self.pods() {
                if !is_created(&pod) {
                    self.edit(&pod, set_pending);
                }
            }
            if let Some(pod) = self.pods().into_iter().find(|p| !is_healthy(p)) {
                if is_pending(&pod) {
                    self.edit(&pod, set_running);
                } else {
                    let now = self.clock.now();
                    self.edit(&pod, |p| set_ready(p, now));
                }
            }
        }

        /// Every pod without a phase becomes Pending, as the API server leaves created pods.
        fn pend_all(&self) {
            for pod in self.pods() {
                if !is_created(&pod) {
                    self.edit(&pod, set_pending);
                }
            }
        }

        /// Every pod ready and running.
        fn make_all_ready(&self) {
            let now = self.clock.now();
            for pod in self.pods() {
                self.edit(&pod, |p| {
                    set_running(p);
                    set_ready(p, now);
                });
            }
        }

        fn ready(&self, set: &StatefulSet) -> i32 {
            set.status
                .as_ref()
                .and_then(|s| s.ready_replicas)
                .unwrap_or(0)
        }

        /// kube's `assertMonotonicInvariants`: no pod exists before its predecessors are
        /// running and ready, identities and storage match, claims exist.
        fn assert_monotonic_invariants(&self, set: &StatefulSet) {
            let pods = self.pods();
            for (i, pod) in pods.iter().enumerate() {
                assert_eq!(
                    ordinal(pod),
                    start_ordinal(set) + i as i64,
                    "pods are contiguous"
                );
                if i > 0 && is_created(pod) {
                    assert!(
                        is_running_and_ready(&pods[i - 1]),
                        "successor {} created before predecessor ready",
                        name(pod)
                    );
                }
                assert!(identity_matches(set, pod), "identity of {}", name(pod));
                assert!(storage_matches(set, pod), "storage of {}", name(pod));
                for claim in claims_for(set, pod).values() {
                    assert!(
                        self.objects
                            .get_claim("default", claim.metadata.name.as_deref().unwrap())
                            .is_some(),
                        "claim of {}",
                        name(pod)
                    );
                }
            }
        }

        /// Syncs until `replicas` pods are ready, checking the invariants (`scaleUpStatefulSetControl`).
        async fn scale_up(&self, set: &mut StatefulSet) {
            for _ in 0..200 {
                if self.ready(set) >= replicas(set) as i32 {
                    return;
                }
                self.advance();
                self.sync(set).await.expect("sync");
                if !allows_burst(set) {
                    self.assert_monotonic_invariants(set);
                }
            }
            panic!("set never became ready: {:?}", set.status);
        }

        /// Syncs until only `replicas` pods remain (`scaleDownStatefulSetControl`).
        async fn scale_down(&self, set: &mut StatefulSet) {
            for _ in 0..200 {
                if set.status.as_ref().map_or(0, |s| s.replicas) == replicas(set) as i32
                    && self.pods().len() as i64 == replicas(set)
                {
                    return;
                }
                self.sync(set).await.expect("sync");
                if !allows_burst(set) {
                    self.assert_monotonic_invariants(set);
                }
            }
            panic!("set never scaled down: {:?}", self.names());
        }

        fn event_reasons(&mut self) -> Vec<String> {
            let mut out = Vec::new();
            while let Ok(e) = self.events.try_recv() {
                out.push(format!(
                    "{}: {}",
                    e.reason.unwrap_or_default(),
                    e.message.unwrap_or_default()
                ));
            }
            out
        }
    }

    fn set_replicas(set: &mut StatefulSet, n: i32) {
        set.spec.as_mut().unwrap().replicas = Some(n);
    }

    fn set_parallel(set: &mut StatefulSet) {
        set.spec.as_mut().unwrap().pod_management_policy = Some("Parallel".into());
    }

    fn set_partition(set: &mut StatefulSet, p: i32) {
        set.spec
            .as_mut()
            .unwrap()
            .update_strategy
            .as_mut()
            .unwrap()
            .rolling_update
            .as_mut()
            .unwrap()
            .partition = Some(p);
    }

    #[tokio::test]
    async fn ordered_ready_creates_pods_one_at_a_time_in_order() {
        // TestStatefulSetControl/CreatesPods (OrderedReady).
        let mut h = harness();
        let mut set = new_stateful_set("foo", 3);
        h.sync(&mut set).await.unwrap();
        assert_eq!(
            h.names(),
            ["foo-0"],
            "only the first pod before it is ready"
        );
        h.pend_all();
        h.sync(&mut set).await.unwrap();
        assert_eq!(h.names(), ["foo-0"], "blocked on an unready pod");
        h.scale_up(&mut set).await;
        assert_eq!(h.names(), ["foo-0", "foo-1", "foo-2"]);
        let status = set.status.clone().unwrap();
        assert_eq!(status.replicas, 3);
        assert_eq!(status.ready_replicas, Some(3));
        assert_eq!(status.current_replicas, Some(3));
        assert_eq!(status.updated_replicas, Some(3));
        assert_eq!(status.observed_generation, Some(1));
        assert_eq!(status.current_revision, status.update_revision);
        let pod = h.objects.get_pod("default", "foo-1").unwrap();
        let spec = pod.spec.as_ref().unwrap();
        assert_eq!(spec.hostname.as_deref(), Some("foo-1"));
        assert_eq!(spec.subdomain.as_deref(), Some("governingsvc"));
        let labels = pod.metadata.labels.as_ref().unwrap();
        assert_eq!(labels[super::super::identity::POD_INDEX_LABEL], "1");
        assert_eq!(
            labels[super::super::identity::REVISION_LABEL],
            status.update_revision.clone().unwrap()
        );
        assert!(h.objects.get_claim("default", "datadir-foo-2").is_some());
        let events = h.event_reasons();
        assert!(
            events.contains(
                &"SuccessfulCreate: create Pod foo-0 in StatefulSet foo successful".to_string()
            ),
            "{events:?}"
        );
        assert!(events.contains(&"SuccessfulCreate: create Claim datadir-foo-0 Pod foo-0 in StatefulSet foo success".to_string()), "{events:?}");
    }

    #[tokio::test]
    async fn ordered_ready_scales_down_in_reverse_order_one_at_a_time() {
        // TestStatefulSetControl/ScaleDown.
        let h = harness();
        let mut set = new_stateful_set("foo", 4);
        h.scale_up(&mut set).await;
        set_replicas(&mut set, 1);
        h.sync(&mut set).await.unwrap();
        assert_eq!(
            *h.objects.deleted.lock(),
            ["foo-3"],
            "one deletion per sync, highest first"
        );
        h.scale_down(&mut set).await;
        assert_eq!(*h.objects.deleted.lock(), ["foo-3", "foo-2", "foo-1"]);
        assert_eq!(h.names(), ["foo-0"]);
        // Claims are retained by default.
        assert!(h.objects.get_claim("default", "datadir-foo-3").is_some());
    }

    #[tokio::test]
    async fn scale_down_waits_for_unhealthy_pods_that_are_not_first() {
        // TestStatefulSetControlScaleDownDeleteError's sibling: OrderedReady blocks deletion while
        // a lower pod is unhealthy.
        let h = harness();
        let mut set = new_stateful_set("foo", 3);
        h.scale_up(&mut set).await;
        // foo-1 becomes unready: foo-2 must not be deleted.
        let pod = h.objects.get_pod("default", "foo-1").unwrap();
        h.edit(&pod, |p| {
            p.status.as_mut().unwrap().conditions = None;
        });
        set_replicas(&mut set, 2);
        h.sync(&mut set).await.unwrap();
        assert!(h.objects.deleted.lock().is_empty());
        h.make_all_ready();
        h.sync(&mut set).await.unwrap();
        assert_eq!(*h.objects.deleted.lock(), ["foo-2"]);
    }

    #[tokio::test]
    async fn parallel_creates_and_deletes_without_waiting() {
        // TestStatefulSetControl with Parallel pod management.
        let h = harness();
        let mut set = new_stateful_set("foo", 5);
        set_parallel(&mut set);
        h.sync(&mut set).await.unwrap();
        assert_eq!(h.names(), ["foo-0", "foo-1", "foo-2", "foo-3", "foo-4"]);
        h.pend_all();
        set_replicas(&mut set, 2);
        h.sync(&mut set).await.unwrap();
        assert_eq!(
            h.names(),
            ["foo-0", "foo-1"],
            "unready pods are deleted too"
        );
    }

    #[tokio::test]
    async fn failed_pods_are_deleted_and_recreated() {
        // TestStatefulSetControl/RecreatesFailedPod and RecreatesSucceededPod.
        for phase in ["Failed", "Succeeded"] {
            let h = harness();
            let mut set = new_stateful_set("foo", 3);
            h.scale_up(&mut set).await;
            let pod = h.objects.get_pod("default", "foo-0").unwrap();
            h.edit(&pod, |p| {
                p.status.as_mut().unwrap().phase = Some(phase.into())
            });
            h.sync(&mut set).await.unwrap();
            assert_eq!(*h.objects.deleted.lock(), ["foo-0"], "{phase}");
            h.sync(&mut set).await.unwrap();
            let recreated = h.objects.get_pod("default", "foo-0").unwrap();
            assert!(
                !is_created(&recreated),
                "{phase}: a new pod, not yet running"
            );
            assert_ne!(recreated.metadata.uid, pod.metadata.uid);
        }
    }

    #[tokio::test]
    async fn terminating_pods_block_ordered_ready_progress() {
        let h = harness();
        let mut set = new_stateful_set("foo", 2);
        h.scale_up(&mut set).await;
        let pod = h.objects.get_pod("default", "foo-0").unwrap();
        h.edit(&pod, |p| {
            p.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::UNIX_EPOCH))
        });
        set_replicas(&mut set, 3);
        h.sync(&mut set).await.unwrap();
        assert_eq!(
            h.names(),
            ["foo-0", "foo-1"],
            "no new pod while foo-0 terminates"
        );
    }

    #[tokio::test]
    async fn a_deleted_set_only_updates_status() {
        let h = harness();
        let mut set = new_stateful_set("foo", 3);
        set.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::UNIX_EPOCH));
        h.sync(&mut set).await.unwrap();
        assert!(h.pods().is_empty());
        assert!(!h.statuses.written.lock().is_empty());
    }

    #[tokio::test]
    async fn create_failures_are_returned_and_reported() {
        // TestStatefulSetControl/CreatePodFailure.
        let mut h = harness();
        let mut set = new_stateful_set("foo", 3);
        h.objects.fail.lock().create_pod = 1;
        let err = h.sync(&mut set).await.unwrap_err();
        assert!(err.to_string().contains("injected failure"), "{err}");
        let events = h.event_reasons();
        assert!(
            events.iter().any(|e| e.starts_with(
                "FailedCreate: create Pod foo-0 in StatefulSet foo failed error: injected failure"
            )),
            "{events:?}"
        );
        h.scale_up(&mut set).await;
        assert_eq!(h.names(), ["foo-0", "foo-1", "foo-2"]);
    }

    #[tokio::test]
    async fn pods_that_lost_their_identity_are_updated_and_failures_reported() {
        // TestStatefulSetControl/UpdatePodFailure and TestStatefulPodControlUpdatesIdentity.
        let mut h = harness();
        let mut set = new_stateful_set("foo", 2);
        h.scale_up(&mut set).await;
        h.event_reasons();
        let pod = h.objects.get_pod("default", "foo-0").unwrap();
        h.edit(&pod, |p| {
            p.metadata
                .labels
                .as_mut()
                .unwrap()
                .remove(super::super::identity::POD_NAME_LABEL);
        });
        h.objects.fail.lock().update_pod = 1;
        let err = h.sync(&mut set).await.unwrap_err();
        assert!(err.to_string().contains("injected failure"), "{err}");
        let events = h.event_reasons();
        assert!(
            events.iter().any(|e| e
                .starts_with("FailedUpdate: update Pod foo-0 in StatefulSet foo failed error:")),
            "{events:?}"
        );
        h.sync(&mut set).await.unwrap();
        let fixed = h.objects.get_pod("default", "foo-0").unwrap();
        assert!(identity_matches(&set, &fixed));
        assert!(h.event_reasons().contains(
            &"SuccessfulUpdate: update Pod foo-0 in StatefulSet foo successful".to_string()
        ));
    }

    #[tokio::test]
    async fn status_write_failures_are_returned() {
        // TestStatefulSetControl/UpdateSetStatusFailure.
        let h = harness();
        let mut set = new_stateful_set("foo", 3);
        *h.statuses.failures.lock() = 1;
        assert!(h.sync(&mut set).await.is_err());
        h.scale_up(&mut set).await;
    }

    #[tokio::test]
    async fn rolling_update_replaces_pods_from_the_highest_ordinal() {
        // TestStatefulSetControlRollingUpdate.
        let h = harness();
        let mut set = new_stateful_set("foo", 3);
        h.scale_up(&mut set).await;
        let first = set.status.clone().unwrap().update_revision.unwrap();
        set_image(&mut set, "nginx:2");
        set.metadata.generation = Some(2);
        h.sync(&mut set).await.unwrap();
        assert_eq!(*h.objects.deleted.lock(), ["foo-2"]);
        let status = set.status.clone().unwrap();
        assert_ne!(status.update_revision.as_deref(), Some(first.as_str()));
        assert_eq!(status.current_revision.as_deref(), Some(first.as_str()));
        // Run to completion.
        for _ in 0..100 {
            if set.status.as_ref().unwrap().current_revision
                == set.status.as_ref().unwrap().update_revision
            {
                break;
            }
            h.advance();
            h.sync(&mut set).await.unwrap();
        }
        let status = set.status.clone().unwrap();
        assert_eq!(status.current_revision, status.update_revision);
        assert_eq!(*h.objects.deleted.lock(), ["foo-2", "foo-1", "foo-0"]);
        for pod in h.pods() {
            assert_eq!(
                pod_revision(&pod),
                status.update_revision.as_deref().unwrap()
            );
            assert_eq!(
                pod.spec.as_ref().unwrap().containers[0].image.as_deref(),
                Some("nginx:2")
            );
        }
    }

    #[tokio::test]
    async fn rolling_update_stops_at_the_partition() {
        // TestStatefulSetControlRollingUpdateWithPartition.
        let h = harness();
        let mut set = new_stateful_set("foo", 5);
        h.scale_up(&mut set).await;
        let first = set.status.clone().unwrap().update_revision.unwrap();
        set_partition(&mut set, 3);
        set_image(&mut set, "nginx:2");
        for _ in 0..100 {
            h.advance();
            h.sync(&mut set).await.unwrap();
        }
        let status = set.status.clone().unwrap();
        let update = status.update_revision.clone().unwrap();
        for pod in h.pods() {
            let want = if ordinal(&pod) >= 3 { &update } else { &first };
            assert_eq!(pod_revision(&pod), want, "{}", name(&pod));
        }
        assert_eq!(status.current_revision.as_deref(), Some(first.as_str()));
        assert_eq!(status.updated_replicas, Some(2));
        // A pod below the partition recreated by hand stays at the current revision.
        let pod = h.objects.get_pod("default", "foo-1").unwrap();
        h.objects
            .pods
            .remove(&rkcm_runtime::ObjectKey::from_obj(&*pod));
        h.sync(&mut set).await.unwrap();
        assert_eq!(
            pod_revision(&h.objects.get_pod("default", "foo-1").unwrap()),
            first
        );
        // Partition 0 finishes the rollout.
        set_partition(&mut set, 0);
        for _ in 0..100 {
            h.advance();
            h.sync(&mut set).await.unwrap();
        }
        let status = set.status.clone().unwrap();
        assert_eq!(status.current_revision, status.update_revision);
        assert_eq!(status.current_replicas, Some(5));
    }

    #[tokio::test]
    async fn on_delete_updates_only_pods_deleted_by_hand() {
        // TestStatefulSetControlOnDeleteUpdate.
        let h = harness();
        let mut set = new_stateful_set("foo", 3);
        set.spec.as_mut().unwrap().update_strategy =
            Some(k8s_openapi::api::apps::v1::StatefulSetUpdateStrategy {
                type_: Some("OnDelete".into()),
                rolling_update: None,
            });
        h.scale_up(&mut set).await;
        let first = set.status.clone().unwrap().update_revision.unwrap();
        set_image(&mut set, "nginx:2");
        for _ in 0..10 {
            h.sync(&mut set).await.unwrap();
        }
        assert!(h.objects.deleted.lock().is_empty());
        assert!(h.pods().iter().all(|p| pod_revision(p) == first));
        let pod = h.objects.get_pod("default", "foo-2").unwrap();
        h.objects
            .pods
            .remove(&rkcm_runtime::ObjectKey::from_obj(&*pod));
        h.sync(&mut set).await.unwrap();
        let update = set.status.clone().unwrap().update_revision.unwrap();
        assert_ne!(update, first);
        assert_eq!(
            pod_revision(&h.objects.get_pod("default", "foo-2").unwrap()),
            update
        );
        assert_eq!(
            pod_revision(&h.objects.get_pod("default", "foo-1").unwrap()),
            first
        );
    }

    #[tokio::test]
    async fn a_rollback_renumbers_the_equal_revision_and_history_is_truncated() {
        // TestStatefulSetControlRollback and TestStatefulSetControlLimitsHistory.
        let h = harness();
        let mut set = new_stateful_set("foo", 2);
        h.scale_up(&mut set).await;
        let first = set.status.clone().unwrap().update_revision.unwrap();
        set_image(&mut set, "nginx:2");
        for _ in 0..50 {
            h.advance();
            h.sync(&mut set).await.unwrap();
        }
        set_image(&mut set, "nginx");
        for _ in 0..50 {
            h.advance();
            h.sync(&mut set).await.unwrap();
        }
        let status = set.status.clone().unwrap();
        assert_eq!(
            status.update_revision.as_deref(),
            Some(first.as_str()),
            "rolled back to the first revision"
        );
        let mut revisions = h.revisions.list();
        history::sort_revisions(&mut revisions);
        assert_eq!(
            rev_name(revisions.last().unwrap()),
            first,
            "renumbered as the newest"
        );
        assert_eq!(revisions.last().unwrap().revision, 3);
        // Many more rollouts: history stays within revisionHistoryLimit (2) plus the live ones.
        for i in 3..8 {
            set_image(&mut set, &format!("nginx:{i}"));
            for _ in 0..50 {
                h.advance();
                h.sync(&mut set).await.unwrap();
            }
            assert!(
                h.revisions.len() <= 2 + 2,
                "{} revisions",
                h.revisions.len()
            );
        }
    }

    #[tokio::test]
    async fn ordinals_start_shifts_names() {
        // TestStatefulSetControl with spec.ordinals.start.
        let h = harness();
        let mut set = new_stateful_set("foo", 2);
        set.spec.as_mut().unwrap().ordinals =
            Some(k8s_openapi::api::apps::v1::StatefulSetOrdinals { start: Some(3) });
        h.scale_up(&mut set).await;
        assert_eq!(h.names(), ["foo-3", "foo-4"]);
        set.spec.as_mut().unwrap().ordinals =
            Some(k8s_openapi::api::apps::v1::StatefulSetOrdinals { start: Some(4) });
        for _ in 0..20 {
            h.advance();
            h.sync(&mut set).await.unwrap();
        }
        assert_eq!(h.names(), ["foo-4", "foo-5"]);
    }

    #[tokio::test]
    async fn min_ready_seconds_delays_availability_and_progress() {
        let h = harness();
        let mut set = new_stateful_set("foo", 2);
        set.spec.as_mut().unwrap().min_ready_seconds = Some(30);
        h.advance();
        h.sync(&mut set).await.unwrap();
        h.advance();
        h.advance();
        h.advance();
        h.sync(&mut set).await.unwrap();
        assert_eq!(h.names(), ["foo-0"], "ready but not yet available");
        assert_eq!(set.status.as_ref().unwrap().available_replicas, Some(0));
        h.clock.step(std::time::Duration::from_secs(31));
        h.sync(&mut set).await.unwrap();
        assert_eq!(h.names(), ["foo-0", "foo-1"]);
        assert_eq!(set.status.as_ref().unwrap().available_replicas, Some(1));
    }

    #[tokio::test]
    async fn claims_get_owner_refs_from_the_retention_policy() {
        let h = harness();
        let mut set = new_stateful_set("foo", 2);
        crate::statefulset::fixtures::set_policy(&mut set, "Delete", "Delete");
        h.scale_up(&mut set).await;
        let claim = h.objects.get_claim("default", "datadir-foo-1").unwrap();
        let refs = claim.metadata.owner_references.clone().unwrap();
        assert_eq!(refs.len(), 1);
        assert_eq!(
            (refs[0].kind.as_str(), refs[0].uid.as_str()),
            ("StatefulSet", "foo-uid")
        );
        // Scaled down: the claim moves to the pod before the pod is deleted.
        set_replicas(&mut set, 1);
        h.sync(&mut set).await.unwrap();
        let claim = h.objects.get_claim("default", "datadir-foo-1").unwrap();
        let refs = claim.metadata.owner_references.clone().unwrap();
        assert_eq!(refs.len(), 1);
        assert_eq!(refs[0].kind, "Pod");
    }
}
