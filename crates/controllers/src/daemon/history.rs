//! The revision history of a DaemonSet: one ControllerRevision per template it has had, the
//! current one found or created, duplicates removed, and old ones cleaned up beyond
//! `revisionHistoryLimit` (`constructHistory`, `snapshot`, `dedupCurHistories`, `cleanupHistory`,
//! `Match` and `getPatch` in `pkg/controller/daemon/update.go`).
//!
//! A revision's `data` is the strategic-merge patch that restores the template,
//! `{"spec":{"template":{…,"$patch":"replace"}}}`, which is what `kubectl rollout undo` applies.
//! It is compared as kube compares it, byte for byte in Go's encoding
//! ([`rkcm_runtime::history::encode_data`]), and stored with its keys in that order so that
//! kubectl's own byte comparison can find the current revision. Revisions are renumbered and
//! deleted through the shared [`History`]; they are named and created the DaemonSet way (template
//! hash with the collision count, not the data hash of `pkg/controller/history`).

use std::collections::HashSet;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{ControllerRevision, DaemonSet};
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use rkcm_runtime::api_error;
use rkcm_runtime::controller_ref::{recheck_owner, ControllerRefManager, OwnerInfo};
use rkcm_runtime::history::{data_bytes, encode_data, sort_revisions};
use serde_json::{json, Map, Value};

use crate::deployment::hash::compute_hash;

use super::handlers::selector_of;
use super::node_pods::NodeToDaemonPods;
use super::pod_template::CONTROLLER_REVISION_HASH_LABEL;
use super::DaemonSetsController;

/// Why the history could not be built or cleaned.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// An API call failed.
    #[error("{}", api_error::message(.0))]
    Api(#[source] kube::Error),
    /// Adopting or releasing revisions failed.
    #[error(transparent)]
    Claim(#[from] rkcm_runtime::controller_ref::Error),
    /// Renumbering or deleting a revision failed.
    #[error(transparent)]
    Revision(#[from] rkcm_runtime::history::HistoryError),
    /// The collision count used for the hash was stale; retried once the cache catches up.
    #[error("found a stale collision count ({cached:?}, expected {current:?}) of DaemonSet {name:?} while processing; will retry until it is updated")]
    StaleCollisionCount {
        /// The DaemonSet.
        name: String,
        /// Collision count in the cache.
        cached: Option<i32>,
        /// Collision count on the server.
        current: Option<i32>,
    },
}

impl From<kube::Error> for HistoryError {
    fn from(e: kube::Error) -> Self {
        HistoryError::Api(e)
    }
}

/// Adds the fields Go's `json.Marshal` writes for zero values of the template's struct types and
/// serde leaves out: `metadata.creationTimestamp: null` and each container's `resources: {}`.
/// kube's revision data has them, and kubectl compares its own encoding against it.
fn add_go_zero_values(template: &mut Map<String, Value>) {
    let metadata = template
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(metadata) = metadata.as_object_mut() {
        metadata.entry("creationTimestamp").or_insert(Value::Null);
    }
    let spec = template
        .entry("spec")
        .or_insert_with(|| json!({"containers": null}));
    for list in ["containers", "initContainers", "ephemeralContainers"] {
        for container in spec
            .get_mut(list)
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            if let Some(container) = container.as_object_mut() {
                container
                    .entry("resources")
                    .or_insert_with(|| Value::Object(Map::new()));
            }
        }
    }
}

/// The patch that restores `ds`'s template (`getPatch`).
pub fn get_patch(ds: &DaemonSet) -> Value {
    let template = ds
        .spec
        .as_ref()
        .map(|s| serde_json::to_value(&s.template).unwrap_or(Value::Null))
        .unwrap_or(Value::Null);
    let mut template = match template {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    add_go_zero_values(&mut template);
    template.insert("$patch".into(), json!("replace"));
    let patch = json!({ "spec": { "template": Value::Object(template) } });
    // Re-read from Go's encoding: the same document with its keys in Go's order.
    serde_json::from_slice(&encode_data(&patch)).unwrap_or(patch)
}

/// Whether `history` holds `ds`'s current template (`Match`: the bytes are equal).
pub fn matches(ds: &DaemonSet, history: &ControllerRevision) -> bool {
    history.data.is_some() && data_bytes(history) == encode_data(&get_patch(ds))
}

/// The highest revision number among `histories` (0 for none).
pub fn max_revision(histories: &[Arc<ControllerRevision>]) -> i64 {
    histories.iter().map(|h| h.revision).max().unwrap_or(0)
}

fn hash_label(history: &ControllerRevision) -> Option<&str> {
    history
        .metadata
        .labels
        .as_ref()?
        .get(CONTROLLER_REVISION_HASH_LABEL)
        .map(String::as_str)
}

/// Of several revisions that all match the template, the one to keep: the highest revision
/// (the last one listed among equals), as `dedupCurHistories`.
pub fn revision_to_keep(current: &[Arc<ControllerRevision>]) -> Option<&Arc<ControllerRevision>> {
    let mut keep: Option<&Arc<ControllerRevision>> = None;
    for cur in current {
        if keep.is_none_or(|k| cur.revision >= k.revision) {
            keep = Some(cur);
        }
    }
    keep
}

/// The old revisions to delete so that at most `limit` remain, oldest first, never one whose
/// hash a live pod still carries (`cleanupHistory`).
pub fn revisions_to_clean_up(
    old: &[Arc<ControllerRevision>],
    limit: i32,
    by_node: &NodeToDaemonPods,
) -> Vec<String> {
    let mut to_kill = old.len() as i64 - i64::from(limit.max(0));
    if to_kill <= 0 {
        return Vec::new();
    }
    let live: HashSet<&str> = by_node
        .values()
        .flatten()
        .filter_map(|p| {
            p.metadata
                .labels
                .as_ref()?
                .get(CONTROLLER_REVISION_HASH_LABEL)
        })
        .map(String::as_str)
        .filter(|h| !h.is_empty())
        .collect();
    let mut sorted_old: Vec<Arc<ControllerRevision>> = old.to_vec();
    sort_revisions(&mut sorted_old);
    let mut names = Vec::new();
    for history in &sorted_old {
        if to_kill <= 0 {
            break;
        }
        if hash_label(history).is_some_and(|h| live.contains(h)) {
            continue;
        }
        names.extend(history.metadata.name.clone());
        to_kill -= 1;
    }
    names
}

/// The revision `snapshot` creates for `ds` at `revision` with `hash`.
pub fn new_revision(ds: &DaemonSet, hash: &str, revision: i64) -> ControllerRevision {
    let name = ds.metadata.name.clone().unwrap_or_default();
    let mut labels = ds
        .spec
        .as_ref()
        .and_then(|s| s.template.metadata.as_ref())
        .and_then(|m| m.labels.clone())
        .unwrap_or_default();
    labels.insert(CONTROLLER_REVISION_HASH_LABEL.into(), hash.into());
    ControllerRevision {
        metadata: ObjectMeta {
            name: Some(format!("{name}-{hash}")),
            namespace: ds.metadata.namespace.clone(),
            labels: Some(labels),
            annotations: ds.metadata.annotations.clone(),
            owner_references: Some(vec![OwnerInfo::from_resource(ds).controller_ref()]),
            ..Default::default()
        },
        data: Some(RawExtension(get_patch(ds))),
        revision,
    }
}

impl DaemonSetsController {
    /// The revisions `ds` controls, adopting matching orphans and releasing those that stopped
    /// matching (`controlledHistories`).
    async fn controlled_histories(
        &self,
        ds: &Arc<DaemonSet>,
    ) -> Result<Vec<Arc<ControllerRevision>>, HistoryError> {
        let namespace = ds.metadata.namespace.as_deref().unwrap_or("");
        let mut histories = self.history_store.list_by_namespace(namespace);
        histories.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        let selector = selector_of(ds);
        let owner = OwnerInfo::from_resource(&**ds);
        let api: Api<DaemonSet> = Api::namespaced(self.client.clone(), namespace);
        let recheck = owner.clone();
        let can_adopt = move || {
            let (api, info) = (api.clone(), recheck.clone());
            async move { recheck_owner(&api, &info).await }
        };
        let claimed = ControllerRefManager::<ControllerRevision>::new(
            self.client.clone(),
            owner,
            &selector,
            can_adopt,
        )
        .claim(&histories)
        .await;
        Ok(claimed?)
    }

    /// Finds the revision of `ds`'s current template, creating it if needed and bringing its
    /// revision number above every old one; returns it with the old revisions
    /// (`constructHistory`).
    pub(crate) async fn construct_history(
        &self,
        ds: &Arc<DaemonSet>,
    ) -> Result<(ControllerRevision, Vec<Arc<ControllerRevision>>), HistoryError> {
        let namespace = ds.metadata.namespace.as_deref().unwrap_or("");
        let api: Api<ControllerRevision> = Api::namespaced(self.client.clone(), namespace);
        let mut current = Vec::new();
        let mut old = Vec::new();
        for history in self.controlled_histories(ds).await? {
            // Revisions from before the hash label get it, named after the revision itself.
            let history = if hash_label(&history).is_none() {
                let mut labelled = (*history).clone();
                labelled
                    .metadata
                    .labels
                    .get_or_insert_with(Default::default)
                    .insert(
                        CONTROLLER_REVISION_HASH_LABEL.into(),
                        labelled.metadata.name.clone().unwrap_or_default(),
                    );
                let name = labelled.metadata.name.clone().unwrap_or_default();
                Arc::new(
                    api.replace(&name, &PostParams::default(), &labelled)
                        .await?,
                )
            } else {
                history
            };
            if matches(ds, &history) {
                current.push(history);
            } else {
                old.push(history);
            }
        }
        let next_revision = max_revision(&old) + 1;
        let cur = if current.is_empty() {
            self.snapshot(ds, next_revision).await?
        } else {
            let keep = self.dedup_current_histories(ds, &current).await?;
            if keep.revision < next_revision {
                self.history.update_revision(&keep, next_revision).await?;
            }
            // kube goes on with the revision as it was before the bump; only its hash matters.
            keep
        };
        Ok((cur, old))
    }

    /// Keeps one of several revisions matching the template, relabels pods carrying the others'
    /// hashes and deletes the others (`dedupCurHistories`).
    async fn dedup_current_histories(
        &self,
        ds: &Arc<DaemonSet>,
        current: &[Arc<ControllerRevision>],
    ) -> Result<ControllerRevision, HistoryError> {
        let keep = revision_to_keep(current).expect("current is not empty");
        if current.len() == 1 {
            return Ok((**keep).clone());
        }
        let namespace = ds.metadata.namespace.as_deref().unwrap_or("");
        let keep_hash = hash_label(keep).unwrap_or("").to_string();
        let pods = self.daemon_pods(ds).await?;
        let pod_api: Api<k8s_openapi::api::core::v1::Pod> =
            Api::namespaced(self.client.clone(), namespace);
        for pod in &pods {
            let hash = pod
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(CONTROLLER_REVISION_HASH_LABEL))
                .map(String::as_str)
                .unwrap_or("");
            if hash != keep_hash {
                let patch =
                    json!({"metadata": {"labels": {CONTROLLER_REVISION_HASH_LABEL: keep_hash}}});
                let name = pod.metadata.name.as_deref().unwrap_or("");
                pod_api
                    .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await?;
            }
        }
        for cur in current {
            if cur.metadata.name == keep.metadata.name {
                continue;
            }
            self.history.delete_revision(cur).await?;
        }
        Ok((**keep).clone())
    }

    /// Creates the revision of the current template (`snapshot`). A revision of that name with
    /// another template is a hash collision: the collision count is bumped and the sync retried.
    async fn snapshot(
        &self,
        ds: &Arc<DaemonSet>,
        revision: i64,
    ) -> Result<ControllerRevision, HistoryError> {
        let namespace = ds.metadata.namespace.as_deref().unwrap_or("");
        let name = ds.metadata.name.as_deref().unwrap_or("");
        let collision_count = ds.status.as_ref().and_then(|s| s.collision_count);
        let template = ds
            .spec
            .as_ref()
            .map(|s| s.template.clone())
            .unwrap_or_default();
        let hash = compute_hash(&template, collision_count);
        let history = new_revision(ds, &hash, revision);
        let api: Api<ControllerRevision> = Api::namespaced(self.client.clone(), namespace);
        let err = match api.create(&PostParams::default(), &history).await {
            Ok(created) => return Ok(created),
            Err(e) if api_error::is_already_exists(&e) => e,
            Err(e) => return Err(e.into()),
        };
        let history_name = history.metadata.name.clone().unwrap_or_default();
        let existing = api.get(&history_name).await?;
        if matches(ds, &existing) {
            return Ok(existing);
        }
        // A different template with the same hash: bump the collision count, from the server's
        // copy so that it only moves when needed.
        let ds_api: Api<DaemonSet> = Api::namespaced(self.client.clone(), namespace);
        let mut current = ds_api.get(name).await?;
        let current_count = current.status.as_ref().and_then(|s| s.collision_count);
        if current_count != collision_count {
            return Err(HistoryError::StaleCollisionCount {
                name: name.to_string(),
                cached: collision_count,
                current: current_count,
            });
        }
        let status = current.status.get_or_insert_with(Default::default);
        status.collision_count = Some(status.collision_count.unwrap_or(0) + 1);
        let bumped = status.collision_count;
        ds_api
            .replace_status(name, &PostParams::default(), &current)
            .await?;
        tracing::debug!(daemonset = name, collision_count = ?bumped, "found a hash collision for DaemonSet - bumping collisionCount to resolve it");
        Err(err.into())
    }

    /// Deletes old revisions beyond `revisionHistoryLimit` that no pod uses (`cleanupHistory`).
    pub(crate) async fn cleanup_history(
        &self,
        ds: &Arc<DaemonSet>,
        old: &[Arc<ControllerRevision>],
    ) -> Result<(), HistoryError> {
        let limit = ds
            .spec
            .as_ref()
            .and_then(|s| s.revision_history_limit)
            .unwrap_or(10);
        if old.len() as i64 <= i64::from(limit) {
            return Ok(());
        }
        // Terminal pods being deleted still count: their revision stays until they are gone.
        let by_node = self.nodes_to_daemon_pods(ds, true).await?;
        for name in revisions_to_clean_up(old, limit, &by_node) {
            if let Some(revision) = old
                .iter()
                .find(|r| r.metadata.name.as_deref() == Some(&*name))
            {
                self.history.delete_revision(revision).await?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::daemon::fixtures::{new_daemon_set, new_pod, with_hash};

    fn revision(name: &str, hash: &str, revision: i64) -> Arc<ControllerRevision> {
        Arc::new(ControllerRevision {
            metadata: ObjectMeta {
                name: Some(name.into()),
                labels: Some(
                    [(CONTROLLER_REVISION_HASH_LABEL.to_string(), hash.to_string())].into(),
                ),
                ..Default::default()
            },
            data: None,
            revision,
        })
    }

    #[test]
    fn the_patch_replaces_the_template_with_sorted_keys() {
        let ds = new_daemon_set("ds");
        let patch = get_patch(&ds);
        let text = serde_json::to_string(&patch).unwrap();
        assert!(text.starts_with(r#"{"spec":{"template":{"$patch":"replace","metadata":{"creationTimestamp":null,"labels":{"name":"simple-daemon","type":"production"}},"spec":{"containers":[{"image":"foo/bar","name":"foo","resources":{}}]"#), "{text}");
        let rev = new_revision(&ds, "abc", 3);
        assert!(matches(&ds, &rev));
        assert_eq!(rev.metadata.name.as_deref(), Some("ds-abc"));
        assert_eq!(rev.revision, 3);
        let mut changed = ds.clone();
        changed
            .spec
            .as_mut()
            .unwrap()
            .template
            .spec
            .as_mut()
            .unwrap()
            .containers[0]
            .image = Some("foo/baz".into());
        assert!(!matches(&changed, &rev));
    }

    /// Ported from update_test.go `TestGetNodesToDaemonPods`-adjacent history cases
    /// (`TestDaemonSetHistoryCleanup`... of kube's integration tests): the oldest unused
    /// revisions go first, revisions of live pods stay.
    #[test]
    fn cleanup_removes_the_oldest_revisions_no_pod_uses() {
        let ds = new_daemon_set("ds");
        let old = vec![
            revision("r3", "h3", 3),
            revision("r1", "h1", 1),
            revision("r2", "h2", 2),
            revision("r4", "h4", 4),
        ];
        let mut by_node = NodeToDaemonPods::new();
        by_node.insert(
            "n".into(),
            vec![Arc::new(with_hash(new_pod("p", Some("n"), &ds), "h1"))],
        );
        assert_eq!(revisions_to_clean_up(&old, 2, &by_node), ["r2", "r3"]);
        assert_eq!(
            revisions_to_clean_up(&old, 4, &by_node),
            Vec::<String>::new()
        );
        assert_eq!(
            revisions_to_clean_up(&old, 0, &NodeToDaemonPods::new()).len(),
            4
        );
    }

    #[test]
    fn dedup_keeps_the_highest_revision() {
        let current = vec![
            revision("a", "h", 2),
            revision("b", "h", 5),
            revision("c", "h", 5),
        ];
        assert_eq!(
            revision_to_keep(&current).and_then(|r| r.metadata.name.as_deref()),
            Some("c")
        );
        assert_eq!(max_revision(&current), 5);
        assert_eq!(max_revision(&[]), 0);
    }
}
