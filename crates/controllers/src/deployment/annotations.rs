//! The `deployment.kubernetes.io/*` annotations: revisions, revision history, desired and maximum
//! replicas, and the deprecated rollback request.
//!
//! Mirrors the annotation helpers of `pkg/controller/deployment/util/deployment_util.go`.
//! `kubectl rollout history|undo` reads the revision annotations of ReplicaSets, so their format is
//! part of the contract.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use tracing::warn;

use super::fenceposts::max_surge;
use super::spec::{replicas, rs_available_replicas, rs_replicas};

/// Revision of a Deployment's ReplicaSet, recording the rollout sequence.
pub const REVISION: &str = "deployment.kubernetes.io/revision";
/// Earlier revisions a ReplicaSet served (comma-separated), kept when a rollback reuses it.
pub const REVISION_HISTORY: &str = "deployment.kubernetes.io/revision-history";
/// `spec.replicas` of the Deployment when it last sized this ReplicaSet.
pub const DESIRED_REPLICAS: &str = "deployment.kubernetes.io/desired-replicas";
/// `spec.replicas + maxSurge` of the Deployment when it last sized this ReplicaSet.
pub const MAX_REPLICAS: &str = "deployment.kubernetes.io/max-replicas";
/// Where the API server keeps extensions/v1beta1 `spec.rollbackTo.revision` for apps/v1 objects.
#[doc(alias = "DeprecatedRollbackTo")]
pub const DEPRECATED_ROLLBACK_TO: &str = "deprecated.deployment.rollback.to";
/// kubectl's client-side apply record, never copied between objects.
pub const LAST_APPLIED_CONFIGURATION: &str = "kubectl.kubernetes.io/last-applied-configuration";
/// Longest revision-history annotation kept (about 100 revisions).
pub const MAX_REV_HISTORY_LENGTH_IN_CHARS: usize = 2000;

/// Annotations that belong to one object and are never copied between a Deployment and its
/// ReplicaSets.
const ANNOTATIONS_TO_SKIP: [&str; 6] = [
    LAST_APPLIED_CONFIGURATION,
    REVISION,
    REVISION_HISTORY,
    DESIRED_REPLICAS,
    MAX_REPLICAS,
    DEPRECATED_ROLLBACK_TO,
];

fn skip_copy(key: &str) -> bool {
    ANNOTATIONS_TO_SKIP.contains(&key)
}

/// A revision annotation that is not an integer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid revision {0:?}")]
pub struct InvalidRevision(pub String);

/// The revision recorded on `annotations` (0 when absent).
pub fn revision_of(annotations: Option<&BTreeMap<String, String>>) -> Result<i64, InvalidRevision> {
    match annotations.and_then(|a| a.get(REVISION)) {
        None => Ok(0),
        Some(v) => v.parse().map_err(|_| InvalidRevision(v.clone())),
    }
}

/// The revision of a ReplicaSet (0 when absent).
#[doc(alias = "Revision")]
pub fn revision(rs: &ReplicaSet) -> Result<i64, InvalidRevision> {
    revision_of(rs.metadata.annotations.as_ref())
}

/// The highest revision among `rss`, skipping unparsable ones.
#[doc(alias = "MaxRevision")]
pub fn max_revision<'a>(rss: impl IntoIterator<Item = &'a ReplicaSet>) -> i64 {
    rss.into_iter()
        .filter_map(|rs| revision(rs).ok())
        .max()
        .unwrap_or(0)
}

/// The second highest revision among `rss` (the one before the current), skipping unparsable ones.
#[doc(alias = "LastRevision")]
pub fn last_revision<'a>(rss: impl IntoIterator<Item = &'a ReplicaSet>) -> i64 {
    let (mut max, mut sec_max) = (0, 0);
    for v in rss.into_iter().filter_map(|rs| revision(rs).ok()) {
        if v >= max {
            sec_max = max;
            max = v;
        } else if v > sec_max {
            sec_max = v;
        }
    }
    sec_max
}

/// Sets the Deployment's revision annotation; true if it changed.
#[doc(alias = "SetDeploymentRevision")]
pub fn set_deployment_revision(d: &mut Deployment, revision: &str) -> bool {
    let annotations = d.metadata.annotations.get_or_insert_with(BTreeMap::new);
    if annotations.get(REVISION).map(String::as_str) == Some(revision) {
        return false;
    }
    annotations.insert(REVISION.to_string(), revision.to_string());
    true
}

/// Copies the Deployment's annotations (except the skipped ones) onto the ReplicaSet; true if any changed.
fn copy_deployment_annotations_to_replica_set(d: &Deployment, rs: &mut ReplicaSet) -> bool {
    let rs_annotations = rs.metadata.annotations.get_or_insert_with(BTreeMap::new);
    let mut changed = false;
    for (k, v) in d.metadata.annotations.iter().flatten() {
        // The Deployment's own revision is derived from its new ReplicaSet, never the reverse.
        if skip_copy(k) || rs_annotations.get(k) == Some(v) {
            continue;
        }
        rs_annotations.insert(k.clone(), v.clone());
        changed = true;
    }
    changed
}

/// Brings the new ReplicaSet's annotations up to date: copies the Deployment's annotations, raises its
/// revision to `new_revision` (recording the previous one in the revision history, bounded to
/// `rev_history_limit_in_chars`), and for a ReplicaSet about to be created (`!exists`) sets the replicas
/// annotations. Returns whether anything changed.
#[doc(alias = "SetNewReplicaSetAnnotations")]
pub fn set_new_replica_set_annotations(
    d: &Deployment,
    new_rs: &mut ReplicaSet,
    new_revision: &str,
    exists: bool,
    rev_history_limit_in_chars: usize,
) -> bool {
    let mut changed = copy_deployment_annotations_to_replica_set(d, new_rs);
    let annotations = new_rs
        .metadata
        .annotations
        .get_or_insert_with(BTreeMap::new);
    let old_revision = annotations.get(REVISION).cloned();
    let old_revision_int = match old_revision.as_deref() {
        None | Some("") => 0,
        Some(v) => match v.parse::<i64>() {
            Ok(v) => v,
            Err(_) => {
                warn!(revision = v, "replica set revision is not an integer");
                return false;
            }
        },
    };
    let Ok(new_revision_int) = new_revision.parse::<i64>() else {
        warn!(revision = new_revision, "new revision is not an integer");
        return false;
    };
    // The new ReplicaSet's revision only ever grows: old ReplicaSets may have been deleted since it
    // was last raised.
    if old_revision_int < new_revision_int {
        annotations.insert(REVISION.to_string(), new_revision.to_string());
        changed = true;
        // A ReplicaSet that already had a revision and gets a newer one is being rolled back to:
        // keep its earlier revisions for the record.
        if let Some(old_revision) = old_revision {
            let history = annotations
                .get(REVISION_HISTORY)
                .cloned()
                .unwrap_or_default();
            if history.is_empty() {
                annotations.insert(REVISION_HISTORY.to_string(), old_revision);
            } else {
                let old_revisions: Vec<&str> = history.split(',').collect();
                let mut total_len = history.len() + old_revision.len() + 1;
                let mut start = 0;
                while total_len > rev_history_limit_in_chars && start < old_revisions.len() {
                    total_len -= old_revisions[start].len() + 1;
                    start += 1;
                }
                if total_len <= rev_history_limit_in_chars {
                    let mut kept = old_revisions[start..].to_vec();
                    kept.push(&old_revision);
                    let joined = kept.join(",");
                    annotations.insert(REVISION_HISTORY.to_string(), joined);
                } else {
                    warn!(
                        limit = rev_history_limit_in_chars,
                        "not appending revision: history length limit reached"
                    );
                }
            }
        }
    }
    if !exists {
        let desired = replicas(d);
        if set_replicas_annotations(new_rs, desired, desired + max_surge(d)) {
            changed = true;
        }
    }
    changed
}

/// Replaces the Deployment's annotations (except the skipped ones) with the ReplicaSet's: done only
/// when rolling back to that ReplicaSet, so that its annotations are not overwritten afterwards.
#[doc(alias = "SetDeploymentAnnotationsTo")]
pub fn set_deployment_annotations_to(d: &mut Deployment, rollback_to: &ReplicaSet) {
    let mut kept: BTreeMap<String, String> = d
        .metadata
        .annotations
        .take()
        .unwrap_or_default()
        .into_iter()
        .filter(|(k, _)| skip_copy(k))
        .collect();
    for (k, v) in rollback_to.metadata.annotations.iter().flatten() {
        if !skip_copy(k) {
            kept.insert(k.clone(), v.clone());
        }
    }
    d.metadata.annotations = Some(kept);
}

fn int_annotation(rs: &ReplicaSet, key: &str) -> Option<i32> {
    let value = rs.metadata.annotations.as_ref()?.get(key)?;
    match value.parse() {
        Ok(v) => Some(v),
        Err(_) => {
            tracing::debug!(
                key,
                value = value.as_str(),
                "replica set annotation is not an integer"
            );
            None
        }
    }
}

/// The desired-replicas annotation of a ReplicaSet.
#[doc(alias = "GetDesiredReplicasAnnotation")]
pub fn desired_replicas_annotation(rs: &ReplicaSet) -> Option<i32> {
    int_annotation(rs, DESIRED_REPLICAS)
}

/// The max-replicas annotation of a ReplicaSet.
pub fn max_replicas_annotation(rs: &ReplicaSet) -> Option<i32> {
    int_annotation(rs, MAX_REPLICAS)
}

/// Sets the desired-replicas and max-replicas annotations; true if either changed.
#[doc(alias = "SetReplicasAnnotations")]
pub fn set_replicas_annotations(rs: &mut ReplicaSet, desired: i32, max: i32) -> bool {
    let annotations = rs.metadata.annotations.get_or_insert_with(BTreeMap::new);
    let mut updated = false;
    for (key, value) in [(DESIRED_REPLICAS, desired), (MAX_REPLICAS, max)] {
        let value = value.to_string();
        if annotations.get(key) != Some(&value) {
            annotations.insert(key.to_string(), value);
            updated = true;
        }
    }
    updated
}

/// Whether [`set_replicas_annotations`] would change anything.
#[doc(alias = "ReplicasAnnotationsNeedUpdate")]
pub fn replicas_annotations_need_update(rs: &ReplicaSet, desired: i32, max: i32) -> bool {
    let Some(annotations) = rs.metadata.annotations.as_ref() else {
        return true;
    };
    annotations.get(DESIRED_REPLICAS) != Some(&desired.to_string())
        || annotations.get(MAX_REPLICAS) != Some(&max.to_string())
}

/// Whether the new ReplicaSet owns all the Deployment's replicas, both by size and by annotation, and
/// all of them are available.
#[doc(alias = "IsSaturated")]
pub fn is_saturated(d: &Deployment, rs: Option<&ReplicaSet>) -> bool {
    let Some(rs) = rs else { return false };
    let Some(desired) = rs
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(DESIRED_REPLICAS))
        .and_then(|v| v.parse::<i32>().ok())
    else {
        return false;
    };
    let want = replicas(d);
    rs_replicas(rs) == want && desired == want && rs_available_replicas(rs) == want
}

/// The revision requested through the deprecated `spec.rollbackTo` (0 means "the previous one"),
/// or `None` when no rollback is requested or the value is not an integer.
#[doc(alias = "getRollbackTo")]
pub fn rollback_to(d: &Deployment) -> Option<i64> {
    let value = d
        .metadata
        .annotations
        .as_ref()?
        .get(DEPRECATED_ROLLBACK_TO)?;
    if value.is_empty() {
        return None;
    }
    value.parse().ok()
}

/// Clears the rollback request.
#[doc(alias = "setRollbackTo")]
pub fn clear_rollback_to(d: &mut Deployment) {
    if let Some(annotations) = d.metadata.annotations.as_mut() {
        annotations.remove(DEPRECATED_ROLLBACK_TO);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deployment::fixtures::{generate_deployment, generate_rs};

    #[test]
    fn new_replica_set_revision_grows_and_history_is_bounded() {
        // TestAnnotationUtils/SetNewReplicaSetAnnotations.
        let mut d = generate_deployment("nginx");
        let mut rs = generate_rs(&d);
        d.metadata
            .annotations
            .get_or_insert_with(BTreeMap::new)
            .insert(REVISION.into(), "1".into());
        for i in 10..20 {
            let next = (i + 1).to_string();
            set_new_replica_set_annotations(&d, &mut rs, &next, true, 5);
            let annotations = rs.metadata.annotations.as_ref().unwrap();
            if i >= 12 {
                assert_eq!(annotations[REVISION_HISTORY], format!("{},{}", i - 1, i));
            }
            assert_eq!(annotations[REVISION], next);
        }
    }

    #[test]
    fn replicas_annotations_are_set_and_saturation_follows_them() {
        // TestAnnotationUtils/SetReplicasAnnotations and IsSaturated.
        let d = generate_deployment("nginx");
        let mut rs = generate_rs(&d);
        assert!(set_replicas_annotations(&mut rs, 10, 11));
        assert!(!set_replicas_annotations(&mut rs, 10, 11));
        assert_eq!(desired_replicas_annotation(&rs), Some(10));
        assert_eq!(max_replicas_annotation(&rs), Some(11));
        assert!(!replicas_annotations_need_update(&rs, 10, 11));
        assert!(replicas_annotations_need_update(&rs, 10, 12));

        set_replicas_annotations(&mut rs, 1, 1);
        rs.spec.as_mut().unwrap().replicas = Some(1);
        rs.status
            .get_or_insert_with(Default::default)
            .available_replicas = Some(1);
        assert!(is_saturated(&d, Some(&rs)));
        rs.status.as_mut().unwrap().available_replicas = Some(0);
        assert!(!is_saturated(&d, Some(&rs)));
        assert!(!is_saturated(&d, None));
    }

    #[test]
    fn deployment_annotations_are_copied_except_revision_bookkeeping() {
        let mut d = generate_deployment("nginx");
        let a = d.metadata.annotations.get_or_insert_with(BTreeMap::new);
        a.insert("team".into(), "web".into());
        a.insert(REVISION.into(), "7".into());
        a.insert(LAST_APPLIED_CONFIGURATION.into(), "{}".into());
        let mut rs = generate_rs(&d);
        assert!(set_new_replica_set_annotations(
            &d, &mut rs, "3", false, 2000
        ));
        let got = rs.metadata.annotations.as_ref().unwrap();
        assert_eq!(got["team"], "web");
        assert_eq!(got[REVISION], "3");
        assert_eq!(got[DESIRED_REPLICAS], "1");
        assert!(!got.contains_key(LAST_APPLIED_CONFIGURATION));
        assert!(!got.contains_key(REVISION_HISTORY));
    }

    #[test]
    fn rollback_takes_the_replica_set_annotations_but_keeps_the_deployment_bookkeeping() {
        let mut d = generate_deployment("nginx");
        let a = d.metadata.annotations.get_or_insert_with(BTreeMap::new);
        a.insert("team".into(), "web".into());
        a.insert(REVISION.into(), "4".into());
        let mut rs = generate_rs(&d);
        rs.metadata.annotations = Some(BTreeMap::from([
            ("owner".to_string(), "ops".to_string()),
            (REVISION.to_string(), "2".to_string()),
        ]));
        set_deployment_annotations_to(&mut d, &rs);
        let got = d.metadata.annotations.unwrap();
        assert_eq!(got.get("owner").map(String::as_str), Some("ops"));
        assert_eq!(got.get("team"), None);
        assert_eq!(got[REVISION], "4");
    }

    #[test]
    fn max_and_last_revision_skip_unparsable_values() {
        let d = generate_deployment("nginx");
        let with_rev = |v: &str| {
            let mut rs = generate_rs(&d);
            rs.metadata.annotations = Some(BTreeMap::from([(REVISION.to_string(), v.to_string())]));
            rs
        };
        let rss = [with_rev("3"), with_rev("x"), with_rev("5"), with_rev("1")];
        assert_eq!(max_revision(&rss), 5);
        assert_eq!(last_revision(&rss), 3);
        assert_eq!(last_revision(&rss[..1]), 0);
    }

    #[test]
    fn rollback_request_is_read_from_the_deprecated_annotation() {
        let mut d = generate_deployment("nginx");
        assert_eq!(rollback_to(&d), None);
        d.metadata
            .annotations
            .get_or_insert_with(BTreeMap::new)
            .insert(DEPRECATED_ROLLBACK_TO.into(), "0".into());
        assert_eq!(rollback_to(&d), Some(0));
        clear_rollback_to(&mut d);
        assert_eq!(rollback_to(&d), None);
    }
}
