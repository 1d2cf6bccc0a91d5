//! A controller's history as ControllerRevisions. Mirrors pkg/controller/history/controller_history.go
//! (`ControllerRevisionName`, `NewControllerRevision`, `HashControllerRevision`,
//! `SortControllerRevisions`, `EqualRevision`, `FindEqualRevisions`, `history.Interface`).
//!
//! StatefulSets and DaemonSets record each distinct pod template they have run as a
//! ControllerRevision named `<parent>-<hash of its data>`, owned by the parent, numbered by
//! `revision`. [`History`] lists, creates (resolving name collisions), renumbers, deletes, adopts
//! and releases them; the free functions are the pure parts.
//!
//! # The bytes that are hashed and compared
//!
//! kube hashes and compares `revision.Data.Raw`, the JSON bytes the controller encoded (a Go
//! `json.Marshal` of a `map[string]interface{}`: keys sorted, compact, `<`, `>`, `&`, U+2028 and
//! U+2029 escaped). rkcm holds `data` as a [`serde_json::Value`] whose maps keep insertion order,
//! so [`encode_data`] writes it the way Go would: object keys sorted at every level, compact, with
//! Go's escapes. The data a controller builds and the data read back from the API server therefore
//! encode to the same bytes, whatever order the server returned the keys in.

use std::borrow::Borrow;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use kube::api::{DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use serde_json::Value;

use crate::api_error;
use crate::controller_ref::{adopt_patch, controller_of, release_patch, OwnerInfo};
use crate::hash::{safe_encode_string, Fnv32};
use crate::informer::Store;
use crate::labels::Selector;
use crate::ObjectKey;

/// The label holding the hash of a ControllerRevision's data.
pub const CONTROLLER_REVISION_HASH_LABEL: &str = "controller.kubernetes.io/hash";

/// Longest prefix kept in a revision name, so that `prefix-hash` fits in 253 bytes.
const MAX_PREFIX_LEN: usize = 223;

/// Errors from reading and writing ControllerRevisions.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// Adoption of a revision that another controller already owns.
    #[error("attempt to adopt revision {revision} owned by {owner}")]
    AlreadyOwned {
        /// The revision, `namespace/name`.
        revision: ObjectKey,
        /// The owner it has, as `kind/name (uid)`.
        owner: String,
    },
    /// The API server refused the request; reads as the server's `Status` message.
    #[error("{}", api_error::message(.0))]
    Api(#[from] kube::Error),
}

impl HistoryError {
    /// The API error, if the server refused the request.
    pub fn api(&self) -> Option<&kube::Error> {
        match self {
            HistoryError::Api(err) => Some(err),
            HistoryError::AlreadyOwned { .. } => None,
        }
    }

    /// Whether the revision does not exist (`apierrors.IsNotFound`).
    pub fn is_not_found(&self) -> bool {
        self.api().is_some_and(api_error::is_not_found)
    }

    /// Whether a write lost an optimistic-concurrency race (`apierrors.IsConflict`).
    pub fn is_conflict(&self) -> bool {
        self.api().is_some_and(api_error::is_conflict)
    }
}

/// Result of history operations.
pub type Result<T, E = HistoryError> = std::result::Result<T, E>;

/// `prefix-hash`, with `prefix` cut to 223 bytes so that the name is at most 253 bytes.
#[doc(alias = "ControllerRevisionName")]
pub fn revision_name(prefix: &str, hash: &str) -> String {
    let mut end = prefix.len().min(MAX_PREFIX_LEN);
    // Object names are ASCII; the boundary check only keeps a malformed name from panicking.
    while !prefix.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}-{hash}", &prefix[..end])
}

/// `value` as Go's `json.Marshal` writes a decoded JSON document: compact, object keys sorted,
/// `<`, `>`, `&`, U+2028 and U+2029 escaped. See the module docs for why.
pub fn encode_data(value: &Value) -> Vec<u8> {
    // Serializing a Value cannot fail: its keys are strings and its numbers are finite.
    let text = serde_json::to_string(&sorted(value)).unwrap_or_default();
    // The escaped characters can only occur inside strings, where an escape means the same thing.
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out.into_bytes()
}

fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let ordered: BTreeMap<&String, Value> =
                map.iter().map(|(k, v)| (k, sorted(v))).collect();
            Value::Object(ordered.into_iter().map(|(k, v)| (k.clone(), v)).collect())
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

/// The bytes of `revision`'s data that are hashed and compared ([`encode_data`]); empty when it
/// has none.
pub fn data_bytes(revision: &ControllerRevision) -> Vec<u8> {
    revision
        .data
        .as_ref()
        .map(|data| encode_data(&data.0))
        .unwrap_or_default()
}

/// The hash of `revision`'s data, with `probe` (a collision count) mixed in as its decimal text,
/// safe-encoded. As kube: FNV-1 32-bit over the data bytes, then the probe.
#[doc(alias = "HashControllerRevision")]
pub fn hash_revision(revision: &ControllerRevision, probe: Option<i32>) -> String {
    let mut h = Fnv32::new();
    h.write(&data_bytes(revision));
    if let Some(probe) = probe {
        h.write(probe.to_string().as_bytes());
    }
    safe_encode_string(&h.sum32().to_string())
}

/// A revision of `parent` (which becomes its controller) numbered `revision`, labelled with
/// `template_labels` plus the hash label, holding `data`, named `<parent>-<hash>` with
/// `collision_count` mixed into the hash. Its namespace is the parent's.
#[doc(alias = "NewControllerRevision")]
pub fn new_revision(
    parent: &OwnerInfo,
    template_labels: Option<&BTreeMap<String, String>>,
    data: Value,
    revision: i64,
    collision_count: Option<i32>,
) -> ControllerRevision {
    let mut cr = ControllerRevision {
        metadata: ObjectMeta {
            namespace: Some(parent.namespace.clone()).filter(|ns| !ns.is_empty()),
            labels: Some(template_labels.cloned().unwrap_or_default()),
            owner_references: Some(vec![parent.controller_ref()]),
            ..Default::default()
        },
        data: Some(RawExtension(data)),
        revision,
    };
    let hash = hash_revision(&cr, collision_count);
    cr.metadata.name = Some(revision_name(&parent.name, &hash));
    cr.metadata
        .labels
        .get_or_insert_with(BTreeMap::new)
        .insert(CONTROLLER_REVISION_HASH_LABEL.to_string(), hash);
    cr
}

/// Sorts by `revision`, then creation timestamp (absent first), then name; stable.
#[doc(alias = "SortControllerRevisions")]
pub fn sort_revisions<R: Borrow<ControllerRevision>>(revisions: &mut [R]) {
    revisions.sort_by(|a, b| {
        let (a, b) = (a.borrow(), b.borrow());
        a.revision
            .cmp(&b.revision)
            .then_with(|| {
                let ts =
                    |r: &ControllerRevision| r.metadata.creation_timestamp.as_ref().map(|t| t.0);
                ts(a).cmp(&ts(b))
            })
            .then_with(|| a.metadata.name.cmp(&b.metadata.name))
    });
}

fn numeric_hash_label(revision: &ControllerRevision) -> Option<u32> {
    let label = revision
        .metadata
        .labels
        .as_ref()?
        .get(CONTROLLER_REVISION_HASH_LABEL)?;
    // Go parses the label with strconv.ParseInt(hs, 10, 32) and keeps it as uint32. Safe-encoded
    // hashes are rarely numeric, in which case only the data decides.
    label.parse::<i32>().ok().map(|h| h as u32)
}

/// Whether `a` and `b` hold the same data: their hash labels, when both are numbers, agree, and
/// their data bytes are equal.
#[doc(alias = "EqualRevision")]
pub fn equal_revision(a: &ControllerRevision, b: &ControllerRevision) -> bool {
    if let (Some(ha), Some(hb)) = (numeric_hash_label(a), numeric_hash_label(b)) {
        if ha != hb {
            return false;
        }
    }
    data_bytes(a) == data_bytes(b)
}

/// The revisions equal to `needle` ([`equal_revision`]), in their order.
#[doc(alias = "FindEqualRevisions")]
pub fn find_equal_revisions<R>(revisions: &[R], needle: &ControllerRevision) -> Vec<R>
where
    R: Borrow<ControllerRevision> + Clone,
{
    revisions
        .iter()
        .filter(|r| equal_revision((*r).borrow(), needle))
        .cloned()
        .collect()
}

/// The number for a new revision after `sorted` (sorted by [`sort_revisions`]): one more than the
/// last, or 1 when there is none (statefulset `nextRevision`, daemonset `nextRevision`).
#[doc(alias = "nextRevision")]
pub fn next_revision<R: Borrow<ControllerRevision>>(sorted: &[R]) -> i64 {
    sorted.last().map_or(1, |r| r.borrow().revision + 1)
}

/// Whether `revision` may be listed for `parent`: controlled by it or by nothing.
pub fn owned_or_orphaned(parent: &OwnerInfo, revision: &ControllerRevision) -> bool {
    controller_of(&revision.metadata).is_none_or(|r| r.uid == parent.uid)
}

/// A controller's history (`history.Interface`). Implementations never mutate their arguments.
#[async_trait]
pub trait History: Send + Sync {
    /// The revisions in `parent`'s namespace that `selector` selects and that `parent` controls or
    /// nothing controls.
    async fn list_revisions(
        &self,
        parent: &OwnerInfo,
        selector: &Selector,
    ) -> Result<Vec<Arc<ControllerRevision>>>;

    /// Creates `revision` in `parent`'s namespace under the name `<parent>-<hash>`, the hash mixing
    /// in `*collision_count`. When the name is taken by a revision with other data, bumps
    /// `*collision_count` and tries the new name; when it is taken by equal data, returns that one.
    async fn create_revision(
        &self,
        parent: &OwnerInfo,
        revision: &ControllerRevision,
        collision_count: &mut i32,
    ) -> Result<ControllerRevision>;

    /// Sets `revision`'s number to `new_revision`, retrying on conflict.
    async fn update_revision(
        &self,
        revision: &ControllerRevision,
        new_revision: i64,
    ) -> Result<ControllerRevision>;

    /// Deletes `revision`.
    async fn delete_revision(&self, revision: &ControllerRevision) -> Result<()>;

    /// Makes `parent` the controller of the orphan `revision`; an error if something controls it.
    async fn adopt_revision(
        &self,
        parent: &OwnerInfo,
        revision: &ControllerRevision,
    ) -> Result<ControllerRevision>;

    /// Removes `parent`'s reference from `revision`. `None` when the revision is gone or `parent`
    /// no longer owns it.
    async fn release_revision(
        &self,
        parent: &OwnerInfo,
        revision: &ControllerRevision,
    ) -> Result<Option<ControllerRevision>>;
}

/// client-go `retry.DefaultBackoff`: 4 attempts, 10ms growing fivefold, 10% jitter.
const CONFLICT_BACKOFF: [Duration; 3] = [
    Duration::from_millis(10),
    Duration::from_millis(50),
    Duration::from_millis(250),
];

fn jittered(d: Duration) -> Duration {
    d.mul_f64(1.0 + rand::random::<f64>() * 0.1)
}

/// [`History`] on the API server, listing from a ControllerRevision informer's cache.
#[doc(alias = "NewHistory")]
#[derive(Clone)]
pub struct ApiHistory {
    client: Client,
    store: Store<ControllerRevision>,
}

impl std::fmt::Debug for ApiHistory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiHistory").finish_non_exhaustive()
    }
}

impl ApiHistory {
    /// Writes through `client`, lists from `store`.
    pub fn new(client: Client, store: Store<ControllerRevision>) -> Self {
        Self { client, store }
    }

    fn api(&self, namespace: &str) -> Api<ControllerRevision> {
        Api::namespaced(self.client.clone(), namespace)
    }
}

fn namespace_of(revision: &ControllerRevision) -> &str {
    revision.metadata.namespace.as_deref().unwrap_or_default()
}

fn name_of(revision: &ControllerRevision) -> &str {
    revision.metadata.name.as_deref().unwrap_or_default()
}

/// The revisions of `store` that [`History::list_revisions`] returns.
pub fn list_from_store(
    store: &Store<ControllerRevision>,
    parent: &OwnerInfo,
    selector: &Selector,
) -> Vec<Arc<ControllerRevision>> {
    store
        .list_by_namespace(&parent.namespace)
        .into_iter()
        .filter(|r| selector.matches_opt(r.metadata.labels.as_ref()))
        .filter(|r| owned_or_orphaned(parent, r))
        .collect()
}

#[async_trait]
impl History for ApiHistory {
    async fn list_revisions(
        &self,
        parent: &OwnerInfo,
        selector: &Selector,
    ) -> Result<Vec<Arc<ControllerRevision>>> {
        Ok(list_from_store(&self.store, parent, selector))
    }

    async fn create_revision(
        &self,
        parent: &OwnerInfo,
        revision: &ControllerRevision,
        collision_count: &mut i32,
    ) -> Result<ControllerRevision> {
        let api = self.api(&parent.namespace);
        let mut clone = revision.clone();
        clone.metadata.namespace = Some(parent.namespace.clone()).filter(|ns| !ns.is_empty());
        let wanted = data_bytes(revision);
        loop {
            let hash = hash_revision(revision, Some(*collision_count));
            clone.metadata.name = Some(revision_name(&parent.name, &hash));
            match api.create(&PostParams::default(), &clone).await {
                Err(err) if api_error::is_already_exists(&err) => {
                    let exists = api.get(name_of(&clone)).await?;
                    if data_bytes(&exists) == wanted {
                        return Ok(exists);
                    }
                    *collision_count += 1;
                }
                other => return Ok(other?),
            }
        }
    }

    async fn update_revision(
        &self,
        revision: &ControllerRevision,
        new_revision: i64,
    ) -> Result<ControllerRevision> {
        let mut clone = revision.clone();
        let mut backoff = CONFLICT_BACKOFF.iter();
        loop {
            if clone.revision == new_revision {
                return Ok(clone);
            }
            clone.revision = new_revision;
            let api = self.api(namespace_of(&clone));
            match api
                .replace(name_of(&clone), &PostParams::default(), &clone)
                .await
            {
                Ok(updated) => return Ok(updated),
                Err(err) => {
                    // Start again from the cached copy, as kube does (or from the caller's copy
                    // when the cache has none, rather than believe the failed write).
                    clone = self
                        .store
                        .get(&ObjectKey::new(namespace_of(&clone), name_of(&clone)))
                        .map_or_else(|| revision.clone(), |cached| (*cached).clone());
                    match backoff.next() {
                        Some(delay) if api_error::is_conflict(&err) => {
                            tokio::time::sleep(jittered(*delay)).await;
                        }
                        _ => return Err(err.into()),
                    }
                }
            }
        }
    }

    async fn delete_revision(&self, revision: &ControllerRevision) -> Result<()> {
        self.api(namespace_of(revision))
            .delete(name_of(revision), &DeleteParams::default())
            .await?;
        Ok(())
    }

    async fn adopt_revision(
        &self,
        parent: &OwnerInfo,
        revision: &ControllerRevision,
    ) -> Result<ControllerRevision> {
        if let Some(owner) = controller_of(&revision.metadata) {
            return Err(HistoryError::AlreadyOwned {
                revision: ObjectKey::new(namespace_of(revision), name_of(revision)),
                owner: format!("{}/{} ({})", owner.kind, owner.name, owner.uid),
            });
        }
        let uid = revision.metadata.uid.as_deref().unwrap_or_default();
        let patch = adopt_patch(parent, uid);
        Ok(self
            .api(&parent.namespace)
            .patch(
                name_of(revision),
                &PatchParams::default(),
                &Patch::Strategic(&patch),
            )
            .await?)
    }

    async fn release_revision(
        &self,
        parent: &OwnerInfo,
        revision: &ControllerRevision,
    ) -> Result<Option<ControllerRevision>> {
        let uid = revision.metadata.uid.as_deref().unwrap_or_default();
        let patch = release_patch(parent, uid);
        match self
            .api(namespace_of(revision))
            .patch(
                name_of(revision),
                &PatchParams::default(),
                &Patch::Strategic(&patch),
            )
            .await
        {
            Ok(released) => Ok(Some(released)),
            // A deleted revision, or one that the parent no longer owns (or nothing owns).
            Err(err) if api_error::is_not_found(&err) || api_error::is_invalid(&err) => Ok(None),
            Err(err) => Err(err.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{ApiRequest, ApiResponse, FakeApi, FakeHistory};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use parking_lot::Mutex;
    use serde_json::json;
    use std::collections::HashMap;

    const PARENT_KIND: (&str, &str) = ("apps/v1", "StatefulSet");

    fn parent(name: &str, uid: &str) -> OwnerInfo {
        OwnerInfo {
            api_version: PARENT_KIND.0.into(),
            kind: PARENT_KIND.1.into(),
            name: name.into(),
            namespace: "default".into(),
            uid: uid.into(),
            deletion_timestamp: None,
        }
    }

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// A StatefulSet's pod template as a revision's data (statefulset `getPatch`).
    fn raw_template(image: &str, template_labels: &BTreeMap<String, String>) -> Value {
        json!({"spec": {"template": {
            "$patch": "replace",
            "metadata": {"labels": template_labels},
            "spec": {"containers": [{"name": "nginx", "image": image}]},
        }}})
    }

    fn revision_of(p: &OwnerInfo, sel: &[(&str, &str)], image: &str, n: i64) -> ControllerRevision {
        let l = labels(sel);
        new_revision(p, Some(&l), raw_template(image, &l), n, None)
    }

    fn names(revisions: &[Arc<ControllerRevision>]) -> Vec<String> {
        let mut n: Vec<_> = revisions.iter().map(|r| name_of(r).to_string()).collect();
        n.sort();
        n
    }

    #[test]
    fn revision_names_cut_long_prefixes_to_fit_253_bytes() {
        assert_eq!(revision_name("web", "abc"), "web-abc");
        let long = "x".repeat(300);
        let name = revision_name(&long, "0123456789");
        assert_eq!(name.len(), 223 + 1 + 10);
        assert!(name.starts_with(&"x".repeat(223)) && name.ends_with("-0123456789"));
    }

    #[test]
    fn data_is_encoded_as_go_marshals_it() {
        let a = json!({"b": 1, "a": {"z": [{"y": 1, "x": "<&>"}], "c": null}});
        assert_eq!(
            String::from_utf8(encode_data(&a)).unwrap(),
            r#"{"a":{"c":null,"z":[{"x":"\u003c\u0026\u003e","y":1}]},"b":1}"#
        );
        // Key order as received does not change the bytes.
        let b: Value =
            serde_json::from_str(r#"{"a":{"z":[{"x":"<&>","y":1}],"c":null},"b":1}"#).unwrap();
        assert_eq!(encode_data(&a), encode_data(&b));
    }

    #[test]
    fn new_revisions_are_named_labelled_and_owned_by_their_parent() {
        let p = parent("ss1", "ss1-uid");
        let l = labels(&[("foo", "bar")]);
        let rev = new_revision(&p, Some(&l), raw_template("nginx", &l), 3, Some(0));
        let hash = hash_revision(&rev, Some(0));
        assert_eq!(name_of(&rev), format!("ss1-{hash}"));
        assert_eq!(namespace_of(&rev), "default");
        assert_eq!(rev.revision, 3);
        let got = rev.metadata.labels.as_ref().unwrap();
        assert_eq!(got["foo"], "bar");
        assert_eq!(got[CONTROLLER_REVISION_HASH_LABEL], hash);
        let owner = controller_of(&rev.metadata).unwrap();
        assert_eq!(
            (owner.kind.as_str(), owner.uid.as_str()),
            ("StatefulSet", "ss1-uid")
        );
        assert_eq!(owner.block_owner_deletion, Some(true));
        // The hash covers only the data (and probe), not labels or the revision number.
        let again = new_revision(&p, None, raw_template("nginx", &l), 9, Some(0));
        assert_eq!(name_of(&again), name_of(&rev));
    }

    #[test]
    fn the_probe_changes_the_hash() {
        let rev = revision_of(&parent("ss1", "u"), &[("foo", "bar")], "nginx", 1);
        let none = hash_revision(&rev, None);
        assert_ne!(none, hash_revision(&rev, Some(0)));
        assert_ne!(hash_revision(&rev, Some(0)), hash_revision(&rev, Some(1)));
        assert!(none
            .bytes()
            .all(|b| crate::hash::SAFE_ALPHABET.contains(&b)));
        let other = revision_of(&parent("ss1", "u"), &[("foo", "bar")], "httpd", 1);
        assert_ne!(none, hash_revision(&other, None));
    }

    #[test]
    fn revisions_sort_by_number_then_creation_then_name() {
        // TestSortControllerRevisions.
        let p = parent("ss1", "u");
        let at = |secs: i64| {
            Some(Time(
                jiff::Timestamp::from_second(1_700_000_000 + secs).unwrap(),
            ))
        };
        let mk = |name: &str, n: i64, created: Option<Time>| {
            let mut r = revision_of(&p, &[("foo", "bar")], name, n);
            r.metadata.name = Some(name.into());
            r.metadata.creation_timestamp = created;
            r
        };
        let cases: Vec<(&str, Vec<ControllerRevision>, Vec<&str>)> = vec![
            (
                "out of order",
                vec![
                    mk("ss1-2", 2, at(0)),
                    mk("ss1-1", 1, at(0)),
                    mk("ss1-3", 3, at(0)),
                ],
                vec!["ss1-1", "ss1-2", "ss1-3"],
            ),
            (
                "sorted",
                vec![
                    mk("ss1-1", 1, at(0)),
                    mk("ss1-2", 2, at(0)),
                    mk("ss1-3", 3, at(0)),
                ],
                vec!["ss1-1", "ss1-2", "ss1-3"],
            ),
            (
                "reversed",
                vec![
                    mk("ss1-3", 3, at(0)),
                    mk("ss1-2", 2, at(0)),
                    mk("ss1-1", 1, at(0)),
                ],
                vec!["ss1-1", "ss1-2", "ss1-3"],
            ),
            (
                "with ties",
                vec![
                    mk("ss1-3", 3, at(0)),
                    mk("ss1-2", 2, at(1)),
                    mk("ss1-1", 2, at(0)),
                    mk("ss1-0", 2, at(1)),
                ],
                vec!["ss1-1", "ss1-0", "ss1-2", "ss1-3"],
            ),
            ("empty", vec![], vec![]),
        ];
        for (name, mut revisions, want) in cases {
            sort_revisions(&mut revisions);
            let got: Vec<_> = revisions.iter().map(name_of).collect();
            assert_eq!(got, want, "{name}");
        }
    }

    #[test]
    fn equal_revisions_have_equal_data() {
        // TestEqualRevision.
        let p1 = parent("ss1", "ss1");
        let p2 = parent("ss2", "ss2");
        let ss1 = revision_of(&p1, &[("foo", "bar")], "nginx", 1);
        let ss1_again = revision_of(&p1, &[("foo", "bar")], "nginx", 2);
        let ss2 = revision_of(&p2, &[("goo", "car")], "nginx", 1);
        let mut ss1_changed_hash = ss1.clone();
        ss1_changed_hash
            .metadata
            .labels
            .as_mut()
            .unwrap()
            .insert(CONTROLLER_REVISION_HASH_LABEL.into(), "1".into());
        let mut ss1_other_hash = ss1.clone();
        ss1_other_hash
            .metadata
            .labels
            .as_mut()
            .unwrap()
            .insert(CONTROLLER_REVISION_HASH_LABEL.into(), "2".into());
        assert!(equal_revision(&ss1, &ss1_again), "same data");
        assert!(!equal_revision(&ss1, &ss2), "different data");
        assert!(
            equal_revision(&ss1, &ss1_changed_hash),
            "a non-numeric label is ignored"
        );
        assert!(
            !equal_revision(&ss1_changed_hash, &ss1_other_hash),
            "numeric hash labels that differ decide"
        );
        let mut no_data = ss1.clone();
        no_data.data = None;
        assert!(equal_revision(&no_data, &no_data.clone()));
        assert!(!equal_revision(&no_data, &ss1));
    }

    #[test]
    fn equal_revisions_are_found_in_order() {
        // TestFindEqualRevisions.
        let p1 = parent("ss1", "ss1");
        let p2 = parent("ss2", "ss2");
        let ss1_rev1 = revision_of(&p1, &[("foo", "bar")], "nginx", 1);
        let ss1_rev2 = revision_of(&p1, &[("foo", "bar")], "nginx", 2);
        let ss2_rev1 = revision_of(&p2, &[("goo", "car")], "nginx", 1);
        let ss2_rev2 = revision_of(&p2, &[("goo", "car")], "httpd", 2);
        let all = vec![
            ss1_rev1.clone(),
            ss1_rev2.clone(),
            ss2_rev1.clone(),
            ss2_rev2.clone(),
        ];
        let found = find_equal_revisions(&all, &ss1_rev1);
        assert_eq!(found, vec![ss1_rev1.clone(), ss1_rev2.clone()]);
        let found = find_equal_revisions(&all, &ss2_rev2);
        assert_eq!(found, vec![ss2_rev2.clone()]);
        assert!(find_equal_revisions(&all[..0], &ss1_rev1).is_empty());
    }

    #[test]
    fn next_revision_follows_the_last() {
        let p = parent("ss1", "u");
        assert_eq!(next_revision::<ControllerRevision>(&[]), 1);
        let revs = vec![revision_of(&p, &[], "a", 1), revision_of(&p, &[], "b", 4)];
        assert_eq!(next_revision(&revs), 5);
    }

    fn store_with(revisions: &[&ControllerRevision]) -> Store<ControllerRevision> {
        let store = Store::new();
        for r in revisions {
            store.insert(Arc::new((*r).clone()));
        }
        store
    }

    #[tokio::test]
    async fn listing_selects_own_history_and_orphans() {
        // TestRealHistory_ListControllerRevisions and TestFakeHistory_ListControllerRevisions.
        let ss1 = parent("ss1", "ss1");
        let ss2 = parent("ss2", "ss2");
        let sel1 = Selector::from_map(&labels(&[("foo", "bar")]));
        let ss1_rev1 = revision_of(&ss1, &[("foo", "bar")], "nginx", 1);
        let ss1_rev2 = revision_of(&ss1, &[("foo", "bar")], "httpd", 2);
        let ss2_rev1 = revision_of(&ss2, &[("goo", "car")], "nginx", 1);
        let mut ss1_orphan = revision_of(&ss1, &[("foo", "bar")], "redis", 3);
        ss1_orphan.metadata.owner_references = None;
        // Selected by ss1's selector but controlled by ss2.
        let mut ss2_owned_match = revision_of(&ss2, &[("foo", "bar")], "mysql", 1);
        ss2_owned_match.metadata.name = Some("ss2-matching".into());
        let name = |r: &ControllerRevision| name_of(r).to_string();
        let cases: Vec<(&str, Vec<&ControllerRevision>, Vec<String>)> = vec![
            ("selects none", vec![], vec![]),
            (
                "selects all",
                vec![&ss1_rev1, &ss1_rev2],
                vec![name(&ss1_rev1), name(&ss1_rev2)],
            ),
            (
                "doesn't select another Objects history",
                vec![&ss1_rev1, &ss1_rev2, &ss2_rev1, &ss2_owned_match],
                vec![name(&ss1_rev1), name(&ss1_rev2)],
            ),
            (
                "selects orphans",
                vec![&ss1_rev1, &ss1_rev2, &ss1_orphan],
                vec![name(&ss1_rev1), name(&ss1_rev2), name(&ss1_orphan)],
            ),
        ];
        for (case, existing, mut want) in cases {
            want.sort();
            let store = store_with(&existing);
            let real = ApiHistory::new(crate::testing::offline_client(), store.clone());
            let got = real.list_revisions(&ss1, &sel1).await.unwrap();
            assert_eq!(names(&got), want, "real: {case}");
            let fake = FakeHistory::new(store);
            let got = fake.list_revisions(&ss1, &sel1).await.unwrap();
            assert_eq!(names(&got), want, "fake: {case}");
        }
    }

    /// A ControllerRevision endpoint keeping objects by name, answering create, get and update.
    fn revision_server(
        conflicts_on_update: usize,
    ) -> (FakeApi, Arc<Mutex<HashMap<String, Value>>>) {
        let objects: Arc<Mutex<HashMap<String, Value>>> = Arc::default();
        let conflicts = Arc::new(Mutex::new(conflicts_on_update));
        let state = Arc::clone(&objects);
        let api = FakeApi::new(move |req: &ApiRequest| {
            let base = "/apis/apps/v1/namespaces/default/controllerrevisions";
            let mut objects = state.lock();
            if req.is(http::Method::POST, base) {
                let name = req.body["metadata"]["name"].as_str().unwrap_or_default();
                if objects.contains_key(name) {
                    return ApiResponse::error(
                        http::StatusCode::CONFLICT,
                        "AlreadyExists",
                        &format!("controllerrevisions.apps \"{name}\" already exists"),
                    );
                }
                objects.insert(name.to_string(), req.body.clone());
                return ApiResponse::ok(&req.body);
            }
            let Some(name) = req.path.strip_prefix(&format!("{base}/")) else {
                return ApiResponse::not_found("controllerrevisions.apps", "?");
            };
            match req.method {
                http::Method::GET => match objects.get(name) {
                    Some(obj) => ApiResponse::ok(obj),
                    None => ApiResponse::not_found("controllerrevisions.apps", name),
                },
                http::Method::PUT => {
                    let mut left = conflicts.lock();
                    if *left > 0 {
                        *left -= 1;
                        return ApiResponse::error(
                            http::StatusCode::CONFLICT,
                            "Conflict",
                            "the object has been modified",
                        );
                    }
                    objects.insert(name.to_string(), req.body.clone());
                    ApiResponse::ok(&req.body)
                }
                http::Method::PATCH => match objects.get(name) {
                    Some(obj) => ApiResponse::ok(obj),
                    None => ApiResponse::not_found("controllerrevisions.apps", name),
                },
                _ => ApiResponse::not_found("controllerrevisions.apps", name),
            }
        });
        (api, objects)
    }

    #[tokio::test]
    async fn real_create_renames_on_a_collision_with_other_data_only() {
        // TestRealHistory_CreateControllerRevision.
        let ss1 = parent("ss1", "ss1");
        let ss2 = parent("ss2", "ss2");
        let ss1_rev1 = revision_of(&ss1, &[("foo", "bar")], "nginx", 1);
        let ss2_rev1 = revision_of(&ss2, &[("goo", "car")], "nginx", 1);
        // Same name and hash label as ss1_rev1, other template: a hash collision.
        let mut ss1_rev2 = revision_of(&ss1, &[("foo", "bar")], "not_nginx", 2);
        ss1_rev2.metadata.name = ss1_rev1.metadata.name.clone();
        ss1_rev2.metadata.labels = ss1_rev1.metadata.labels.clone();

        // creates new
        let (api, _) = revision_server(0);
        let history = ApiHistory::new(api.client(), Store::new());
        let mut count = 0;
        let hash0 = hash_revision(&ss1_rev1, Some(0));
        let created = history
            .create_revision(&ss1, &ss1_rev1, &mut count)
            .await
            .unwrap();
        assert_eq!(name_of(&created), format!("ss1-{hash0}"));
        assert_eq!(count, 0);

        // create doesn't conflict when parents differ
        let mut count = 0;
        let created = history
            .create_revision(&ss2, &ss2_rev1, &mut count)
            .await
            .unwrap();
        assert!(name_of(&created).starts_with("ss2-"));
        assert_eq!(count, 0);

        // create renames on conflict
        let (api, _) = revision_server(0);
        let history = ApiHistory::new(api.client(), Store::new());
        let mut existing = ss1_rev2.clone();
        existing.metadata.name = Some(format!("ss1-{hash0}"));
        let mut zero = 0;
        // Occupy the first name with other data.
        history
            .api("default")
            .create(&PostParams::default(), &existing)
            .await
            .unwrap();
        let created = history
            .create_revision(&ss1, &ss1_rev1, &mut zero)
            .await
            .unwrap();
        assert_eq!(zero, 1);
        assert_eq!(
            name_of(&created),
            revision_name("ss1", &hash_revision(&ss1_rev1, Some(1)))
        );
        // The second collision is with an identical revision: it is returned, the count stays.
        let again = history
            .create_revision(&ss1, &ss1_rev1, &mut zero)
            .await
            .unwrap();
        assert_eq!(zero, 1);
        assert_eq!(name_of(&again), name_of(&created));
    }

    #[tokio::test]
    async fn fake_create_renames_on_every_collision() {
        // TestFakeHistory_CreateControllerRevision.
        let ss1 = parent("ss1", "ss1");
        let ss2 = parent("ss2", "ss2");
        let ss1_rev1 = revision_of(&ss1, &[("foo", "bar")], "nginx", 1);
        let ss2_rev1 = revision_of(&ss2, &[("goo", "car")], "nginx", 1);
        let history = FakeHistory::new(Store::new());
        let mut count = 0;
        let created = history
            .create_revision(&ss1, &ss1_rev1, &mut count)
            .await
            .unwrap();
        assert_eq!(
            name_of(&created),
            revision_name("ss1", &hash_revision(&ss1_rev1, Some(0)))
        );
        let created = history
            .create_revision(&ss2, &ss2_rev1, &mut count)
            .await
            .unwrap();
        assert!(name_of(&created).starts_with("ss2-") && count == 0);
        let renamed = history
            .create_revision(&ss1, &ss1_rev1, &mut count)
            .await
            .unwrap();
        assert_eq!(count, 1);
        assert_eq!(
            name_of(&renamed),
            revision_name("ss1", &hash_revision(&ss1_rev1, Some(1)))
        );
        history
            .create_revision(&ss1, &ss1_rev1, &mut count)
            .await
            .unwrap();
        assert_eq!(count, 2);
    }

    #[tokio::test]
    async fn real_update_retries_conflicts_then_gives_up() {
        // TestRealHistory_UpdateControllerRevision.
        tokio::time::pause();
        let ss1 = parent("ss1", "ss1");
        let mut rev = revision_of(&ss1, &[("foo", "bar")], "nginx", 1);
        rev.metadata.namespace = Some("default".into());
        for (case, conflicts, new_revision, ok, puts) in [
            ("update succeeds", 0, 2, true, 1),
            ("update same revision is a no-op", 0, 1, true, 0),
            ("update conflict then succeeds", 2, 2, true, 3),
            ("update conflict forever fails", 100, 2, false, 4),
        ] {
            let (api, objects) = revision_server(conflicts);
            objects.lock().insert(
                name_of(&rev).to_string(),
                serde_json::to_value(&rev).unwrap(),
            );
            let history = ApiHistory::new(api.client(), Store::new());
            let result = history.update_revision(&rev, new_revision).await;
            assert_eq!(result.is_ok(), ok, "{case}");
            if let Ok(updated) = result {
                assert_eq!(updated.revision, new_revision, "{case}");
            } else {
                assert!(result.unwrap_err().is_conflict(), "{case}");
            }
            let put_count = api
                .requests()
                .iter()
                .filter(|r| r.method == http::Method::PUT)
                .count();
            assert_eq!(put_count, puts, "{case}");
        }
    }

    #[tokio::test]
    async fn real_adopt_and_release_send_kubes_patches() {
        // TestRealHistory_AdoptControllerRevision, TestRealHistory_ReleaseControllerRevision.
        let ss1 = parent("ss1", "ss1");
        let ss2 = parent("ss2", "ss2");
        let mut orphan = revision_of(&ss1, &[("foo", "bar")], "nginx", 1);
        orphan.metadata.owner_references = None;
        orphan.metadata.uid = Some("rev-uid".into());
        let owned = revision_of(&ss2, &[("foo", "bar")], "nginx", 1);
        let (api, objects) = revision_server(0);
        objects.lock().insert(
            name_of(&orphan).to_string(),
            serde_json::to_value(&orphan).unwrap(),
        );
        let history = ApiHistory::new(api.client(), Store::new());

        let err = history.adopt_revision(&ss1, &owned).await.unwrap_err();
        assert!(matches!(err, HistoryError::AlreadyOwned { .. }), "{err}");
        assert!(
            api.requests().is_empty(),
            "an owned revision is not patched"
        );

        history.adopt_revision(&ss1, &orphan).await.unwrap();
        let patch = api.requests().pop().unwrap();
        assert_eq!(patch.method, http::Method::PATCH);
        assert_eq!(
            patch.body,
            json!({"metadata": {"ownerReferences": [{
                "apiVersion": "apps/v1", "kind": "StatefulSet", "name": "ss1", "uid": "ss1",
                "controller": true, "blockOwnerDeletion": true,
            }], "uid": "rev-uid"}})
        );

        assert!(history
            .release_revision(&ss1, &orphan)
            .await
            .unwrap()
            .is_some());
        let patch = api.requests().pop().unwrap();
        assert_eq!(
            patch.body,
            json!({"metadata": {"ownerReferences": [{"$patch": "delete", "uid": "ss1"}], "uid": "rev-uid"}})
        );
        // A revision that is gone is released without error.
        let mut gone = orphan.clone();
        gone.metadata.name = Some("gone".into());
        assert!(history
            .release_revision(&ss1, &gone)
            .await
            .unwrap()
            .is_none());
    }

    #[tokio::test]
    async fn fake_adopt_release_update_and_delete_change_the_store() {
        // TestFakeHistory_{Adopt,Release,Update,Delete}ControllerRevision.
        let ss1 = parent("ss1", "ss1");
        let ss2 = parent("ss2", "ss2");
        let sel = Selector::from_map(&labels(&[("foo", "bar")]));
        let mut orphan = revision_of(&ss1, &[("foo", "bar")], "nginx", 1);
        orphan.metadata.owner_references = None;
        let store = store_with(&[&orphan]);
        let history = FakeHistory::new(store.clone());

        let adopted = history.adopt_revision(&ss1, &orphan).await.unwrap();
        assert_eq!(controller_of(&adopted.metadata).unwrap().uid, "ss1");
        assert!(history.adopt_revision(&ss2, &adopted).await.is_err());
        assert!(history.list_revisions(&ss2, &sel).await.unwrap().is_empty());

        let updated = history.update_revision(&adopted, 7).await.unwrap();
        assert_eq!(updated.revision, 7);
        assert_eq!(
            history.list_revisions(&ss1, &sel).await.unwrap()[0].revision,
            7
        );

        let released = history
            .release_revision(&ss1, &updated)
            .await
            .unwrap()
            .unwrap();
        assert!(released
            .metadata
            .owner_references
            .unwrap_or_default()
            .is_empty());
        assert_eq!(history.list_revisions(&ss2, &sel).await.unwrap().len(), 1);

        history.delete_revision(&updated).await.unwrap();
        assert!(store.is_empty());
        assert!(history
            .delete_revision(&updated)
            .await
            .unwrap_err()
            .is_not_found());
        assert!(history
            .release_revision(&ss1, &updated)
            .await
            .unwrap()
            .is_none());
    }
}
