//! Which ReplicaSets of a Deployment are new, old and active, and the orders kube sorts them in.
//!
//! Mirrors `FindNewReplicaSet`, `FindOldReplicaSets`, `FindActiveOrLatest` and the sort types of
//! `pkg/controller/deployment/util/deployment_util.go` and `pkg/controller/controller_utils.go`.

use std::cmp::Ordering;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::PodTemplateSpec;

use super::annotations::revision;
use super::hash::equal_ignore_hash;
use super::spec::rs_replicas;

/// Oldest first; ties broken by name.
#[doc(alias = "ReplicaSetsByCreationTimestamp")]
pub fn by_creation_timestamp(a: &ReplicaSet, b: &ReplicaSet) -> Ordering {
    let ta = a.metadata.creation_timestamp.as_ref().map(|t| t.0);
    let tb = b.metadata.creation_timestamp.as_ref().map(|t| t.0);
    ta.cmp(&tb)
        .then_with(|| a.metadata.name.cmp(&b.metadata.name))
}

/// Largest first; among equal sizes, older first (used when scaling down).
#[doc(alias = "ReplicaSetsBySizeOlder")]
pub fn by_size_older(a: &ReplicaSet, b: &ReplicaSet) -> Ordering {
    rs_replicas(b)
        .cmp(&rs_replicas(a))
        .then_with(|| by_creation_timestamp(a, b))
}

/// Largest first; among equal sizes, newer first (used when scaling up).
#[doc(alias = "ReplicaSetsBySizeNewer")]
pub fn by_size_newer(a: &ReplicaSet, b: &ReplicaSet) -> Ordering {
    rs_replicas(b)
        .cmp(&rs_replicas(a))
        .then_with(|| by_creation_timestamp(b, a))
}

/// kube's `ReplicaSetsByRevision.Less`: the lower revision first; when the revisions are equal or
/// either cannot be parsed, the older first (then by name). A missing annotation is revision 0.
#[doc(alias = "ReplicaSetsByRevision")]
pub fn revision_less(a: &ReplicaSet, b: &ReplicaSet) -> bool {
    match (revision(a), revision(b)) {
        (Ok(ra), Ok(rb)) if ra != rb => ra < rb,
        _ => by_creation_timestamp(a, b) == Ordering::Less,
    }
}

/// Sorts `rss` with [`revision_less`], lowest revision first.
///
/// That order is not total when revisions are unparsable (a cycle of revision, time and time), so
/// it cannot be given to `sort_by`. An insertion sort is what Go's `sort.Sort` runs on lists of
/// twelve or fewer, so for those the order is kube's.
pub fn sort_by_revision(rss: &mut [Arc<ReplicaSet>]) {
    for i in 1..rss.len() {
        let mut j = i;
        while j > 0 && revision_less(&rss[j], &rss[j - 1]) {
            rss.swap(j, j - 1);
            j -= 1;
        }
    }
}

/// The pod template of a ReplicaSet (empty when unset).
pub fn rs_template(rs: &ReplicaSet) -> PodTemplateSpec {
    rs.spec
        .as_ref()
        .and_then(|s| s.template.clone())
        .unwrap_or_default()
}

fn template_matches(d: &Deployment, rs: &ReplicaSet) -> bool {
    let Some(spec) = d.spec.as_ref() else {
        return false;
    };
    match rs.spec.as_ref().and_then(|s| s.template.as_ref()) {
        Some(t) => equal_ignore_hash(t, &spec.template),
        None => equal_ignore_hash(&PodTemplateSpec::default(), &spec.template),
    }
}

/// The ReplicaSet whose template equals the Deployment's (ignoring the hash label). When several
/// match (possible after upgrades, kubernetes#40415), the oldest one.
#[doc(alias = "FindNewReplicaSet")]
pub fn find_new_replica_set(d: &Deployment, rss: &[Arc<ReplicaSet>]) -> Option<Arc<ReplicaSet>> {
    let mut sorted: Vec<&Arc<ReplicaSet>> = rss.iter().collect();
    sorted.sort_by(|a, b| by_creation_timestamp(a, b));
    sorted
        .into_iter()
        .find(|rs| template_matches(d, rs))
        .cloned()
}

/// The old ReplicaSets, oldest first: those with replicas (`required`) and all of them (`all`).
#[doc(alias = "FindOldReplicaSets")]
pub fn find_old_replica_sets(
    d: &Deployment,
    rss: &[Arc<ReplicaSet>],
) -> (Vec<Arc<ReplicaSet>>, Vec<Arc<ReplicaSet>>) {
    let new_uid = find_new_replica_set(d, rss).and_then(|rs| rs.metadata.uid.clone());
    let mut sorted: Vec<Arc<ReplicaSet>> = rss.to_vec();
    sorted.sort_by(|a, b| by_creation_timestamp(a, b));
    let all: Vec<Arc<ReplicaSet>> = sorted
        .into_iter()
        .filter(|rs| new_uid.is_none() || rs.metadata.uid != new_uid)
        .collect();
    let required = all
        .iter()
        .filter(|rs| rs_replicas(rs) != 0)
        .cloned()
        .collect();
    (required, all)
}

/// ReplicaSets with a non-zero `spec.replicas`.
#[doc(alias = "FilterActiveReplicaSets")]
pub fn filter_active<'a>(
    rss: impl IntoIterator<Item = &'a Arc<ReplicaSet>>,
) -> Vec<Arc<ReplicaSet>> {
    rss.into_iter()
        .filter(|rs| rs_replicas(rs) > 0)
        .cloned()
        .collect()
}

/// The only active ReplicaSet, or the newest when none is active; `None` when several are active (then
/// they are scaled proportionally) or there are no ReplicaSets at all.
#[doc(alias = "FindActiveOrLatest")]
pub fn find_active_or_latest(
    new_rs: Option<&Arc<ReplicaSet>>,
    old_rss: &[Arc<ReplicaSet>],
) -> Option<Arc<ReplicaSet>> {
    if new_rs.is_none() && old_rss.is_empty() {
        return None;
    }
    let mut olds: Vec<Arc<ReplicaSet>> = old_rss.to_vec();
    olds.sort_by(|a, b| by_creation_timestamp(b, a));
    let active = filter_active(olds.iter().chain(new_rs));
    match active.len() {
        0 => new_rs.cloned().or_else(|| olds.first().cloned()),
        1 => active.into_iter().next(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deployment::fixtures::{generate_deployment, generate_rs, rs, ts};
    use crate::deployment::spec::POD_TEMPLATE_HASH_LABEL;

    fn names(rss: &[Arc<ReplicaSet>]) -> Vec<String> {
        rss.iter()
            .map(|r| r.metadata.name.clone().unwrap())
            .collect()
    }

    fn with_hash(mut r: ReplicaSet, hash: &str, created: i64) -> ReplicaSet {
        r.metadata
            .labels
            .get_or_insert_with(Default::default)
            .insert(POD_TEMPLATE_HASH_LABEL.into(), hash.into());
        r.metadata.creation_timestamp = Some(ts(created));
        r
    }

    fn fixtures() -> (
        Deployment,
        Arc<ReplicaSet>,
        Arc<ReplicaSet>,
        Arc<ReplicaSet>,
    ) {
        let d = generate_deployment("nginx");
        let mut new_rs = with_hash(generate_rs(&d), "hash", 60);
        new_rs.spec.as_mut().unwrap().replicas = Some(1);
        let dup = with_hash(generate_rs(&d), "different-hash", 0);
        let mut old_d = generate_deployment("nginx");
        old_d
            .spec
            .as_mut()
            .unwrap()
            .template
            .spec
            .as_mut()
            .unwrap()
            .containers[0]
            .name = "nginx-old-1".into();
        let mut old = generate_rs(&old_d);
        old.metadata.creation_timestamp = Some(ts(-60));
        (d, Arc::new(new_rs), Arc::new(dup), Arc::new(old))
    }

    #[test]
    fn new_replica_set_is_the_oldest_with_the_deployment_template() {
        // TestFindNewReplicaSet.
        let (d, new_rs, dup, old) = fixtures();
        assert_eq!(
            find_new_replica_set(&d, &[new_rs.clone(), old.clone()]),
            Some(new_rs.clone())
        );
        assert_eq!(
            find_new_replica_set(&d, &[new_rs.clone(), old.clone(), dup.clone()]),
            Some(dup)
        );
        assert_eq!(find_new_replica_set(&d, &[old]), None);
    }

    #[test]
    fn old_replica_sets_are_all_but_the_new_one() {
        // TestFindOldReplicaSets.
        let (d, new_rs, dup, old) = fixtures();
        let (required, all) = find_old_replica_sets(&d, &[new_rs.clone(), old.clone()]);
        assert_eq!(names(&all), names(std::slice::from_ref(&old)));
        assert!(required.is_empty(), "the old replica set has zero replicas");
        let (_, all) = find_old_replica_sets(&d, std::slice::from_ref(&old));
        assert_eq!(names(&all), names(std::slice::from_ref(&old)));
        let (required, all) = find_old_replica_sets(&d, &[old.clone(), new_rs.clone(), dup]);
        assert_eq!(names(&all), names(&[old, new_rs.clone()]));
        assert_eq!(names(&required), names(std::slice::from_ref(&new_rs)));
        let (required, all) = find_old_replica_sets(&d, &[new_rs]);
        assert!(all.is_empty() && required.is_empty());
    }

    #[test]
    fn active_or_latest_is_the_single_active_or_the_newest() {
        let a = Arc::new(rs("a", 0, &[], Some(ts(0))));
        let b = Arc::new(rs("b", 0, &[], Some(ts(10))));
        let c = Arc::new(rs("c", 3, &[], Some(ts(5))));
        let n = Arc::new(rs("n", 2, &[], Some(ts(20))));
        assert_eq!(find_active_or_latest(None, &[]), None);
        assert_eq!(
            find_active_or_latest(None, &[a.clone(), b.clone()]),
            Some(b.clone())
        );
        assert_eq!(
            find_active_or_latest(None, &[a.clone(), c.clone()]),
            Some(c.clone())
        );
        assert_eq!(
            find_active_or_latest(Some(&n), std::slice::from_ref(&a)),
            Some(n.clone())
        );
        assert_eq!(find_active_or_latest(Some(&n), &[c]), None);
    }

    #[test]
    fn size_orders_break_ties_by_age_in_opposite_directions() {
        let old = rs("old", 2, &[], Some(ts(0)));
        let new = rs("new", 2, &[], Some(ts(10)));
        let big = rs("big", 5, &[], Some(ts(5)));
        let mut v = [&old, &new, &big];
        v.sort_by(|a, b| by_size_older(a, b));
        assert_eq!(
            v.iter()
                .map(|r| r.metadata.name.clone().unwrap())
                .collect::<Vec<_>>(),
            ["big", "old", "new"]
        );
        v.sort_by(|a, b| by_size_newer(a, b));
        assert_eq!(
            v.iter()
                .map(|r| r.metadata.name.clone().unwrap())
                .collect::<Vec<_>>(),
            ["big", "new", "old"]
        );
    }
}
