//! Adoption and release of objects by their controller. Mirrors
//! pkg/controller/controller_ref_manager.go (`ClaimPods`, `ClaimReplicaSets`,
//! `RecheckDeletionTimestamp`).
//!
//! A controller *claims* the objects its selector could own: it keeps those it already controls
//! and still selects, adopts matching orphans (after one uncached recheck that it is not being
//! deleted), and releases those it controls but no longer selects.

use std::fmt::{self, Debug, Display};
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use kube::api::{Patch, PatchParams};
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;
use serde_json::json;
use tokio::sync::OnceCell;

use crate::labels::Selector;
use crate::pod_control::{PodControl, PodControlError};
use crate::ObjectKey;

/// The controller (owner) whose controllees are claimed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OwnerInfo {
    /// `apiVersion` of the owner, e.g. `apps/v1`.
    pub api_version: String,
    /// Kind of the owner, e.g. `ReplicaSet`.
    pub kind: String,
    /// Name of the owner.
    pub name: String,
    /// Namespace of the owner.
    pub namespace: String,
    /// UID of the owner.
    pub uid: String,
    /// Set when the owner is being deleted.
    pub deletion_timestamp: Option<Time>,
}

impl OwnerInfo {
    /// The owner described by `obj`'s type and metadata.
    pub fn from_resource<K: Resource<DynamicType = ()>>(obj: &K) -> Self {
        let meta = obj.meta();
        Self {
            api_version: K::api_version(&()).into_owned(),
            kind: K::kind(&()).into_owned(),
            name: meta.name.clone().unwrap_or_default(),
            namespace: meta.namespace.clone().unwrap_or_default(),
            uid: meta.uid.clone().unwrap_or_default(),
            deletion_timestamp: meta.deletion_timestamp.clone(),
        }
    }

    /// The controller reference controllees carry: `controller` and `blockOwnerDeletion` set.
    pub fn controller_ref(&self) -> OwnerReference {
        OwnerReference {
            api_version: self.api_version.clone(),
            kind: self.kind.clone(),
            name: self.name.clone(),
            uid: self.uid.clone(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }
    }

    /// A reference to the owner, for events.
    pub fn object_ref(&self) -> ObjectReference {
        ObjectReference {
            api_version: Some(self.api_version.clone()),
            kind: Some(self.kind.clone()),
            name: Some(self.name.clone()),
            namespace: Some(self.namespace.clone()).filter(|ns| !ns.is_empty()),
            uid: Some(self.uid.clone()),
            ..Default::default()
        }
    }
}

/// The owner reference with `controller: true`, if any (apimachinery `GetControllerOf`).
pub fn controller_of(meta: &ObjectMeta) -> Option<&OwnerReference> {
    meta.owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true))
}

/// What claiming does with one object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClaimDecision {
    /// Already ours and selected: claimed, no action.
    Keep,
    /// A matching orphan: adopt it (claimed if the patch succeeds).
    Adopt,
    /// Ours but no longer selected: release it (not claimed).
    Release,
    /// Someone else's, or nothing to do while the owner or the object is being deleted.
    Ignore,
}

/// Decides what claiming does with an object (the pure core of client-go's `claimObject`).
///
/// `matches` is whether the owner's selector (and any filter) selects the object.
pub fn claim_decision(
    owner_uid: &str,
    owner_being_deleted: bool,
    object: &ObjectMeta,
    matches: bool,
) -> ClaimDecision {
    if let Some(controller) = controller_of(object) {
        if controller.uid != owner_uid {
            return ClaimDecision::Ignore;
        }
        if matches {
            // Claiming what we already own takes no action, so it is allowed while being deleted.
            return ClaimDecision::Keep;
        }
        if owner_being_deleted {
            return ClaimDecision::Ignore;
        }
        return ClaimDecision::Release;
    }
    if owner_being_deleted || !matches || object.deletion_timestamp.is_some() {
        return ClaimDecision::Ignore;
    }
    ClaimDecision::Adopt
}

/// The strategic-merge patch that makes `owner` the controller of the object with `object_uid`.
/// The `uid` precondition fails the patch if the object was deleted and recreated.
pub fn adopt_patch(owner: &OwnerInfo, object_uid: &str) -> serde_json::Value {
    json!({"metadata": {
        "ownerReferences": [{
            "apiVersion": owner.api_version,
            "kind": owner.kind,
            "name": owner.name,
            "uid": owner.uid,
            "controller": true,
            "blockOwnerDeletion": true,
        }],
        "uid": object_uid,
    }})
}

/// The strategic-merge patch that removes `owner`'s reference from the object with `object_uid`.
pub fn release_patch(owner: &OwnerInfo, object_uid: &str) -> serde_json::Value {
    json!({"metadata": {
        "ownerReferences": [{"$patch": "delete", "uid": owner.uid}],
        "uid": object_uid,
    }})
}

/// Why a patch of a controllee failed.
#[derive(Debug, thiserror::Error)]
pub enum PatchError {
    /// The object no longer exists.
    #[error("not found")]
    NotFound,
    /// The server refused the patch (for example a `uid` precondition mismatch).
    #[error("invalid: {0}")]
    Invalid(String),
    /// Any other failure (an API error reads as its `Status` message).
    #[error("{}", crate::api_error::chain(.0.as_ref()))]
    Other(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl From<kube::Error> for PatchError {
    fn from(err: kube::Error) -> Self {
        match &err {
            kube::Error::Api(s) if s.code == 404 => PatchError::NotFound,
            kube::Error::Api(s) if s.code == 422 => PatchError::Invalid(s.message.clone()),
            _ => PatchError::Other(Box::new(err)),
        }
    }
}

impl From<PodControlError> for PatchError {
    fn from(err: PodControlError) -> Self {
        match err {
            PodControlError::Api(err) => PatchError::from(err),
            PodControlError::NotFound => PatchError::NotFound,
            PodControlError::Invalid(m) => PatchError::Invalid(m),
            other => PatchError::Other(Box::new(other)),
        }
    }
}

/// Writes adoption and release patches.
#[async_trait]
pub trait OwnerRefPatcher: Send + Sync {
    /// Applies the strategic-merge `patch` to `namespace/name`.
    async fn patch(
        &self,
        namespace: &str,
        name: &str,
        patch: &serde_json::Value,
    ) -> Result<(), PatchError>;
}

/// Patches objects of type `K` through a kube client.
pub struct ApiPatcher<K> {
    client: Client,
    _kind: PhantomData<fn() -> K>,
}

impl<K> ApiPatcher<K> {
    /// A patcher writing through `client`.
    pub fn new(client: Client) -> Self {
        Self {
            client,
            _kind: PhantomData,
        }
    }
}

#[async_trait]
impl<K> OwnerRefPatcher for ApiPatcher<K>
where
    K: Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + Debug
        + Send
        + Sync
        + 'static,
{
    async fn patch(
        &self,
        namespace: &str,
        name: &str,
        patch: &serde_json::Value,
    ) -> Result<(), PatchError> {
        let api: Api<K> = Api::namespaced(self.client.clone(), namespace);
        api.patch(name, &PatchParams::default(), &Patch::Strategic(patch))
            .await
            .map(|_| ())
            .map_err(PatchError::from)
    }
}

/// Patches pods through a [`PodControl`], as the ReplicaSet controller does (so a
/// `FakePodControl` records adoptions and releases).
#[derive(Clone)]
pub struct PodControlPatcher(pub Arc<dyn PodControl>);

#[async_trait]
impl OwnerRefPatcher for PodControlPatcher {
    async fn patch(
        &self,
        namespace: &str,
        name: &str,
        patch: &serde_json::Value,
    ) -> Result<(), PatchError> {
        self.0
            .patch_pod(namespace, name, patch)
            .await
            .map_err(PatchError::from)
    }
}

/// Errors from claiming.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The adoption precheck failed (owner gone, replaced or being deleted, or the GET failed).
    #[error("can't adopt {object}: {reason}")]
    CannotAdopt {
        /// The object that was to be adopted.
        object: ObjectKey,
        /// Why adoption is refused.
        reason: String,
    },
    /// Patching an object's owner references failed.
    #[error("failed to {action} {object}")]
    Patch {
        /// `adopt` or `release`.
        action: &'static str,
        /// The patched object.
        object: ObjectKey,
        /// The cause.
        #[source]
        source: PatchError,
    },
    /// Several objects failed; each error is listed.
    #[error("{}", .0.iter().map(|e| crate::api_error::chain(e)).collect::<Vec<_>>().join("; "))]
    Aggregate(Vec<Error>),
    /// The uncached recheck of the owner failed or found it unfit to adopt.
    #[error("{0}")]
    Recheck(String),
}

/// A boxed adoption precheck.
type CanAdopt<'a> = Box<
    dyn Fn() -> Pin<Box<dyn Future<Output = Result<(), String>> + Send + 'a>> + Send + Sync + 'a,
>;

/// Claims objects of type `K` (pods, replica sets) for one owner during one sync.
///
/// `can_adopt` runs at most once, lazily, before the first adoption; its result is remembered
/// for the life of the manager (make a new manager per sync).
pub struct ControllerRefManager<'a, K> {
    owner: OwnerInfo,
    selector: &'a Selector,
    patcher: Arc<dyn OwnerRefPatcher>,
    can_adopt: CanAdopt<'a>,
    can_adopt_result: OnceCell<Result<(), String>>,
    _kind: PhantomData<fn(K)>,
}

impl<K> Debug for ControllerRefManager<'_, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ControllerRefManager")
            .field("owner", &self.owner)
            .field("selector", &self.selector.to_string())
            .finish_non_exhaustive()
    }
}

impl<'a, K> ControllerRefManager<'a, K>
where
    K: Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + Debug
        + Send
        + Sync
        + 'static,
{
    /// A manager that patches through `client`.
    pub fn new<F, Fut, E>(
        client: Client,
        owner: OwnerInfo,
        selector: &'a Selector,
        can_adopt: F,
    ) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'a,
        Fut: Future<Output = Result<(), E>> + Send + 'a,
        E: Display,
    {
        Self::with_patcher(
            Arc::new(ApiPatcher::<K>::new(client)),
            owner,
            selector,
            can_adopt,
        )
    }
}

impl<'a, K: Resource> ControllerRefManager<'a, K> {
    /// A manager that patches through `patcher` (for example a [`PodControlPatcher`]).
    pub fn with_patcher<F, Fut, E>(
        patcher: Arc<dyn OwnerRefPatcher>,
        owner: OwnerInfo,
        selector: &'a Selector,
        can_adopt: F,
    ) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'a,
        Fut: Future<Output = Result<(), E>> + Send + 'a,
        E: Display,
    {
        let can_adopt: CanAdopt<'a> = Box::new(move || {
            let fut = can_adopt();
            Box::pin(async move { fut.await.map_err(|e| e.to_string()) })
        });
        Self {
            owner,
            selector,
            patcher,
            can_adopt,
            can_adopt_result: OnceCell::new(),
            _kind: PhantomData,
        }
    }

    /// Claims `objects`: returns those the owner now controls, adopting matching orphans and
    /// releasing owned objects the selector no longer matches. Every object is tried; failures
    /// are returned together (and then the claimed list is not).
    pub async fn claim(&self, objects: &[Arc<K>]) -> Result<Vec<Arc<K>>, Error> {
        self.claim_with_filter(objects, |_| true).await
    }

    /// As [`claim`](Self::claim), but an object must also pass `filter` to be selected.
    pub async fn claim_with_filter(
        &self,
        objects: &[Arc<K>],
        filter: impl Fn(&K) -> bool,
    ) -> Result<Vec<Arc<K>>, Error> {
        let mut claimed = Vec::new();
        let mut errors = Vec::new();
        let owner_being_deleted = self.owner.deletion_timestamp.is_some();
        for obj in objects {
            let meta = obj.meta();
            // Another controller's object is ignored whatever its labels (`ClaimObject`): no
            // selector to match.
            if controller_of(meta).is_some_and(|c| c.uid != self.owner.uid) {
                continue;
            }
            // Check the selector first so filters only run on potentially matching objects.
            let matches = self.selector.matches_opt(meta.labels.as_ref()) && filter(obj);
            match claim_decision(&self.owner.uid, owner_being_deleted, meta, matches) {
                ClaimDecision::Keep => claimed.push(Arc::clone(obj)),
                ClaimDecision::Ignore => {}
                ClaimDecision::Adopt => match self.adopt(meta).await {
                    Ok(true) => claimed.push(Arc::clone(obj)),
                    Ok(false) => {}
                    Err(err) => errors.push(err),
                },
                ClaimDecision::Release => {
                    if let Err(err) = self.release(meta).await {
                        errors.push(err);
                    }
                }
            }
        }
        match errors.len() {
            0 => Ok(claimed),
            1 => Err(errors.remove(0)),
            _ => Err(Error::Aggregate(errors)),
        }
    }

    /// Adopts one orphan; `Ok(false)` if it vanished meanwhile.
    async fn adopt(&self, meta: &ObjectMeta) -> Result<bool, Error> {
        let key = key_of(meta);
        let can_adopt = self
            .can_adopt_result
            .get_or_init(|| (self.can_adopt)())
            .await;
        if let Err(reason) = can_adopt {
            return Err(Error::CannotAdopt {
                object: key,
                reason: reason.clone(),
            });
        }
        let uid = meta.uid.as_deref().unwrap_or_default();
        let patch = adopt_patch(&self.owner, uid);
        match self
            .patcher
            .patch(key.namespace_str(), &key.name, &patch)
            .await
        {
            Ok(()) => Ok(true),
            // The object no longer exists: nothing to adopt.
            Err(PatchError::NotFound) => Ok(false),
            Err(source) => Err(Error::Patch {
                action: "adopt",
                object: key,
                source,
            }),
        }
    }

    /// Releases one owned object; NotFound and Invalid (gone, or recreated with a new uid) are
    /// success.
    async fn release(&self, meta: &ObjectMeta) -> Result<(), Error> {
        let key = key_of(meta);
        tracing::debug!(object = %key, owner = %self.owner.name, kind = %self.owner.kind, "releasing controllee");
        let uid = meta.uid.as_deref().unwrap_or_default();
        let patch = release_patch(&self.owner, uid);
        match self
            .patcher
            .patch(key.namespace_str(), &key.name, &patch)
            .await
        {
            Ok(()) | Err(PatchError::NotFound) | Err(PatchError::Invalid(_)) => Ok(()),
            Err(source) => Err(Error::Patch {
                action: "release",
                object: key,
                source,
            }),
        }
    }
}

fn key_of(meta: &ObjectMeta) -> ObjectKey {
    ObjectKey {
        namespace: meta.namespace.clone().filter(|ns| !ns.is_empty()),
        name: meta.name.clone().unwrap_or_default(),
    }
}

/// Refuses adoption if the freshly read owner is being deleted (client-go
/// `RecheckDeletionTimestamp`). `fresh` is an uncached GET of the owner.
pub async fn recheck_deletion_timestamp<K, E>(
    fresh: impl Future<Output = Result<K, E>>,
) -> Result<(), Error>
where
    K: Resource,
    E: Display,
{
    let obj = fresh
        .await
        .map_err(|e| Error::Recheck(format!("can't recheck DeletionTimestamp: {e}")))?;
    check_not_deleted(obj.meta())
}

fn check_not_deleted(meta: &ObjectMeta) -> Result<(), Error> {
    if let Some(ts) = &meta.deletion_timestamp {
        return Err(Error::Recheck(format!(
            "{}/{} has just been deleted at {}",
            meta.namespace.as_deref().unwrap_or_default(),
            meta.name.as_deref().unwrap_or_default(),
            ts.0
        )));
    }
    Ok(())
}

/// The adoption precheck the ReplicaSet and Deployment controllers use: an uncached GET of the
/// owner through `api`, refusing if it is gone, was replaced (different uid), or is being deleted.
pub async fn recheck_owner<K>(api: &Api<K>, owner: &OwnerInfo) -> Result<(), Error>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    let fresh = api.get(&owner.name).await.map_err(|e| {
        Error::Recheck(format!(
            "can't recheck DeletionTimestamp: {}",
            crate::api_error::message(&e)
        ))
    })?;
    let uid = fresh.meta().uid.as_deref().unwrap_or_default();
    if uid != owner.uid {
        return Err(Error::Recheck(format!(
            "original {} {}/{} is gone: got uid {uid}, wanted {}",
            owner.kind, owner.namespace, owner.name, owner.uid
        )));
    }
    check_not_deleted(fresh.meta())
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Pod;
    use parking_lot::Mutex;
    use std::collections::BTreeMap;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn now() -> Time {
        Time(jiff::Timestamp::from_second(1_700_000_000).expect("valid"))
    }

    fn owner(deleting: bool) -> OwnerInfo {
        OwnerInfo {
            api_version: "apps/v1".into(),
            kind: "ReplicaSet".into(),
            name: "web".into(),
            namespace: "ns".into(),
            uid: "rs-uid".into(),
            deletion_timestamp: deleting.then(now),
        }
    }

    fn pod(
        name: &str,
        labels: &[(&str, &str)],
        controller_uid: Option<&str>,
        deleting: bool,
    ) -> Arc<Pod> {
        Arc::new(Pod {
            metadata: ObjectMeta {
                namespace: Some("ns".into()),
                name: Some(name.into()),
                uid: Some(format!("{name}-uid")),
                labels: Some(
                    labels
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect::<BTreeMap<_, _>>(),
                ),
                owner_references: controller_uid.map(|uid| {
                    vec![OwnerReference {
                        api_version: "apps/v1".into(),
                        kind: "ReplicaSet".into(),
                        name: "x".into(),
                        uid: uid.into(),
                        controller: Some(true),
                        block_owner_deletion: Some(true),
                    }]
                }),
                deletion_timestamp: deleting.then(now),
                ..Default::default()
            },
            ..Default::default()
        })
    }

    #[test]
    fn claim_decisions_follow_claim_object() {
        use ClaimDecision::*;
        // (case, owner deleting, controller uid, object deleting, matches, expected)
        let cases = [
            (
                "owned and matching is kept",
                false,
                Some("rs-uid"),
                false,
                true,
                Keep,
            ),
            (
                "owned and matching is kept while owner is deleted",
                true,
                Some("rs-uid"),
                false,
                true,
                Keep,
            ),
            (
                "owned object being deleted and matching is kept",
                false,
                Some("rs-uid"),
                true,
                true,
                Keep,
            ),
            (
                "owned but not matching is released",
                false,
                Some("rs-uid"),
                false,
                false,
                Release,
            ),
            (
                "owned, not matching, owner deleted: left alone",
                true,
                Some("rs-uid"),
                false,
                false,
                Ignore,
            ),
            (
                "owned by another controller is ignored",
                false,
                Some("other"),
                false,
                true,
                Ignore,
            ),
            (
                "matching orphan is adopted",
                false,
                None,
                false,
                true,
                Adopt,
            ),
            (
                "non-matching orphan is ignored",
                false,
                None,
                false,
                false,
                Ignore,
            ),
            (
                "orphan is not adopted by a deleted owner",
                true,
                None,
                false,
                true,
                Ignore,
            ),
            (
                "orphan being deleted is not adopted",
                false,
                None,
                true,
                true,
                Ignore,
            ),
        ];
        for (case, owner_deleting, controller, obj_deleting, matches, want) in cases {
            let p = pod("p", &[], controller, obj_deleting);
            assert_eq!(
                claim_decision("rs-uid", owner_deleting, &p.metadata, matches),
                want,
                "{case}"
            );
        }
    }

    #[test]
    fn adopt_and_release_patches_have_kube_shape() {
        let o = owner(false);
        assert_eq!(
            adopt_patch(&o, "pod-uid"),
            json!({"metadata": {"ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                "name": "web", "uid": "rs-uid", "controller": true, "blockOwnerDeletion": true}],
                "uid": "pod-uid"}})
        );
        assert_eq!(
            release_patch(&o, "pod-uid"),
            json!({"metadata": {"ownerReferences": [{"$patch": "delete", "uid": "rs-uid"}], "uid": "pod-uid"}})
        );
    }

    /// Records patches; answers per object name.
    #[derive(Default)]
    struct Patches {
        seen: Mutex<Vec<(String, serde_json::Value)>>,
        fail: Mutex<BTreeMap<String, fn() -> PatchError>>,
    }

    #[async_trait]
    impl OwnerRefPatcher for Patches {
        async fn patch(
            &self,
            _ns: &str,
            name: &str,
            patch: &serde_json::Value,
        ) -> Result<(), PatchError> {
            if let Some(f) = self.fail.lock().get(name) {
                return Err(f());
            }
            self.seen.lock().push((name.to_string(), patch.clone()));
            Ok(())
        }
    }

    fn names(pods: &[Arc<Pod>]) -> Vec<String> {
        pods.iter()
            .map(|p| p.metadata.name.clone().unwrap_or_default())
            .collect()
    }

    #[tokio::test]
    async fn claim_adopts_orphans_releases_mismatches_and_rechecks_once() {
        let patcher = Arc::new(Patches::default());
        let selector = Selector::parse("app=web").expect("valid selector");
        let rechecks = AtomicUsize::new(0);
        let m: ControllerRefManager<'_, Pod> =
            ControllerRefManager::with_patcher(patcher.clone(), owner(false), &selector, || {
                rechecks.fetch_add(1, Ordering::SeqCst);
                async { Ok::<(), String>(()) }
            });
        let pods = vec![
            pod("mine", &[("app", "web")], Some("rs-uid"), false),
            pod("orphan1", &[("app", "web")], None, false),
            pod("orphan2", &[("app", "web")], None, false),
            pod("strayed", &[("app", "db")], Some("rs-uid"), false),
            pod("theirs", &[("app", "web")], Some("other"), false),
        ];
        fn assert_send<T: Send>(t: T) -> T {
            t
        }
        // Controllers call claim from spawned workers: the future must be Send.
        let claimed = assert_send(m.claim(&pods)).await.expect("claim succeeds");
        assert_eq!(names(&claimed), ["mine", "orphan1", "orphan2"]);
        assert_eq!(rechecks.load(Ordering::SeqCst), 1, "recheck is memoized");
        let seen = patcher.seen.lock().clone();
        let patched: Vec<&str> = seen.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(patched, ["orphan1", "orphan2", "strayed"]);
        assert_eq!(seen[0].1, adopt_patch(&owner(false), "orphan1-uid"));
        assert_eq!(seen[2].1, release_patch(&owner(false), "strayed-uid"));
    }

    #[tokio::test]
    async fn no_recheck_without_an_adoption_and_a_failed_recheck_blocks_every_adoption() {
        let patcher = Arc::new(Patches::default());
        let selector = Selector::parse("app=web").expect("valid selector");
        let rechecks = AtomicUsize::new(0);
        let m: ControllerRefManager<'_, Pod> =
            ControllerRefManager::with_patcher(patcher.clone(), owner(false), &selector, || {
                rechecks.fetch_add(1, Ordering::SeqCst);
                async { Err::<(), _>("ns/web has just been deleted") }
            });
        let owned = vec![pod("mine", &[("app", "web")], Some("rs-uid"), false)];
        assert_eq!(names(&m.claim(&owned).await.expect("ok")), ["mine"]);
        assert_eq!(rechecks.load(Ordering::SeqCst), 0);

        let orphans = vec![
            pod("o1", &[("app", "web")], None, false),
            pod("o2", &[("app", "web")], None, false),
        ];
        let err = m.claim(&orphans).await.expect_err("adoption refused");
        assert!(
            matches!(&err, Error::Aggregate(errs) if errs.len() == 2),
            "{err}"
        );
        assert!(err.to_string().contains("has just been deleted"));
        assert_eq!(rechecks.load(Ordering::SeqCst), 1);
        assert!(patcher.seen.lock().is_empty());
    }

    #[tokio::test]
    async fn vanished_objects_are_not_errors_but_other_patch_failures_are() {
        let patcher = Arc::new(Patches::default());
        patcher
            .fail
            .lock()
            .insert("gone".into(), || PatchError::NotFound);
        patcher.fail.lock().insert("recreated".into(), || {
            PatchError::Invalid("uid mismatch".into())
        });
        patcher
            .fail
            .lock()
            .insert("busy".into(), || PatchError::Other("conflict".into()));
        let selector = Selector::parse("app=web").expect("valid selector");
        let m: ControllerRefManager<'_, Pod> = ControllerRefManager::with_patcher(
            patcher.clone(),
            owner(false),
            &selector,
            || async { Ok::<(), String>(()) },
        );
        let pods = vec![
            pod("gone", &[("app", "web")], None, false), // adopt → NotFound: skipped
            pod("recreated", &[("app", "db")], Some("rs-uid"), false), // release → Invalid: ok
        ];
        assert!(m.claim(&pods).await.expect("ok").is_empty());
        let busy = vec![pod("busy", &[("app", "web")], None, false)];
        let err = m.claim(&busy).await.expect_err("adopt failed");
        assert!(matches!(
            err,
            Error::Patch {
                action: "adopt",
                ..
            }
        ));
    }

    #[tokio::test]
    async fn recheck_refuses_a_deleted_owner() {
        let fresh = pod("web", &[], None, true);
        let err = recheck_deletion_timestamp(async { Ok::<_, String>((*fresh).clone()) })
            .await
            .expect_err("being deleted");
        assert!(err.to_string().contains("has just been deleted"));
        let alive = pod("web", &[], None, false);
        assert!(
            recheck_deletion_timestamp(async { Ok::<_, String>((*alive).clone()) })
                .await
                .is_ok()
        );
        assert!(recheck_deletion_timestamp(async { Err::<Pod, _>("boom") })
            .await
            .is_err());
    }
}
