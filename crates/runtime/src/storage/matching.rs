//! Finding the volume a claim binds to: kube's `FindMatchingVolume` (`pv_helpers.go`) and the
//! binder's access-mode index (`pkg/controller/volume/persistentvolume/index.go`).

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, PersistentVolume, PersistentVolumeClaim};
use rkcm_labels::Selector;

use super::helpers::*;
use crate::scheduling::node_affinity;

/// The claim's selector cannot be read.
#[derive(Debug, thiserror::Error)]
#[error("error creating internal label selector for claim: {claim}: {source}")]
pub struct MatchError {
    /// `namespace/name` of the claim.
    pub claim: String,
    /// Why the selector is invalid.
    #[source]
    pub source: rkcm_labels::Error,
}

/// Whether the volume's required node affinity admits a node with `labels` (`CheckNodeAffinity`);
/// a volume without node affinity fits every node.
pub fn volume_fits_node(volume: &PersistentVolume, node: &Node) -> bool {
    match volume
        .spec
        .as_ref()
        .and_then(|s| s.node_affinity.as_ref())
        .and_then(|a| a.required.as_ref())
    {
        None => true,
        Some(selector) => node_affinity::selector_matches(selector, node),
    }
}

/// The best volume for `claim` among `volumes`: one pre-bound to it if any (checked against
/// `node`'s labels when given), else the smallest available one of the claim's class that is
/// large enough, has its volume mode, matches its selector, fits `node` and (scheduler path, with
/// a node) offers its access modes. `excluded` names volumes already chosen for other claims.
/// With `delay_binding` and no node (the binder with a `WaitForFirstConsumer` class), only
/// pre-bound volumes match: the scheduler binds the others.
pub fn find_matching_volume(
    claim: &PersistentVolumeClaim,
    volumes: &[Arc<PersistentVolume>],
    node: Option<&Node>,
    excluded: &[&str],
    delay_binding: bool,
) -> Result<Option<Arc<PersistentVolume>>, MatchError> {
    let requested = requested_storage(claim);
    let requested_class = claim_class(claim);
    let selector = match claim.spec.as_ref().and_then(|s| s.selector.as_ref()) {
        None => None,
        Some(s) => Some(
            Selector::from_label_selector(s).map_err(|source| MatchError {
                claim: claim_key(claim),
                source,
            })?,
        ),
    };
    let mut smallest: Option<&Arc<PersistentVolume>> = None;
    for volume in volumes {
        if excluded.contains(&volume.metadata.name.as_deref().unwrap_or_default()) {
            continue;
        }
        let bound_to_claim = is_volume_bound_to_claim(volume, claim);
        if claim_ref(volume).is_some() && !bound_to_claim {
            continue;
        }
        let capacity = volume_capacity(volume);
        if capacity < requested {
            continue;
        }
        if volume_mode_mismatch(claim, volume) {
            continue;
        }
        if volume.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let node_affinity_valid = node.is_none_or(|n| volume_fits_node(volume, n));
        if bound_to_claim {
            // A pre-bound volume that does not fit the node means no match at all.
            return Ok(node_affinity_valid.then(|| Arc::clone(volume)));
        }
        if node.is_none() && delay_binding {
            continue;
        }
        if volume_phase(volume) != volume_phase::AVAILABLE {
            continue;
        }
        if let Some(selector) = &selector {
            if !selector.matches_opt(volume.metadata.labels.as_ref()) {
                continue;
            }
        }
        if volume_class(volume) != requested_class || !node_affinity_valid {
            continue;
        }
        if node.is_some() && !check_access_modes(claim, volume) {
            continue;
        }
        if smallest.is_none_or(|s| volume_capacity(s) > capacity) {
            smallest = Some(volume);
        }
    }
    Ok(smallest.cloned())
}

/// kube's order of access modes in an index key (`GetAccessModesAsString`).
const MODE_ORDER: [&str; 4] = [
    "ReadWriteOnce",
    "ReadOnlyMany",
    "ReadWriteMany",
    "ReadWriteOncePod",
];

/// The index key of a set of access modes: the modes present, in kube's order.
fn access_modes_key(modes: &[String]) -> Vec<&'static str> {
    MODE_ORDER
        .iter()
        .copied()
        .filter(|m| modes.iter().any(|x| x == m))
        .collect()
}

/// The binder's search (`findBestMatchForClaim`): volumes are grouped by their set of access
/// modes; the groups offering every mode the claim asks for are searched with
/// [`find_matching_volume`] from the fewest modes up, so a claim gets the volume with the least
/// it does not need.
pub fn find_best_match_for_claim(
    claim: &PersistentVolumeClaim,
    volumes: &[Arc<PersistentVolume>],
    delay_binding: bool,
) -> Result<Option<Arc<PersistentVolume>>, MatchError> {
    let mut groups: BTreeMap<Vec<&'static str>, Vec<Arc<PersistentVolume>>> = BTreeMap::new();
    for volume in volumes {
        groups
            .entry(access_modes_key(volume_access_modes(volume)))
            .or_default()
            .push(Arc::clone(volume));
    }
    let requested = claim_access_modes(claim);
    let mut candidates: Vec<(&Vec<&'static str>, &Vec<Arc<PersistentVolume>>)> = groups
        .iter()
        .filter(|(modes, _)| requested.iter().all(|m| modes.contains(&m.as_str())))
        .collect();
    candidates.sort_by_key(|(modes, _)| modes.len());
    for (_, group) in candidates {
        if let Some(volume) = find_matching_volume(claim, group, None, &[], delay_binding)? {
            return Ok(Some(volume));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{
        NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, ObjectReference,
        PersistentVolumeClaimSpec, PersistentVolumeSpec, PersistentVolumeStatus,
        VolumeNodeAffinity, VolumeResourceRequirements,
    };
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity as Q;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};

    fn claim(name: &str, size: &str, modes: &[&str]) -> PersistentVolumeClaim {
        let mut c = PersistentVolumeClaim::default();
        c.metadata.name = Some(name.into());
        c.metadata.namespace = Some("myns".into());
        c.metadata.uid = Some(format!("uid-{name}"));
        c.spec = Some(PersistentVolumeClaimSpec {
            access_modes: Some(modes.iter().map(|m| m.to_string()).collect()),
            resources: Some(VolumeResourceRequirements {
                requests: Some([("storage".to_string(), Q(size.into()))].into()),
                ..Default::default()
            }),
            ..Default::default()
        });
        c
    }

    fn volume(name: &str, size: &str, modes: &[&str]) -> PersistentVolume {
        let mut v = PersistentVolume::default();
        v.metadata.name = Some(name.into());
        v.spec = Some(PersistentVolumeSpec {
            access_modes: Some(modes.iter().map(|m| m.to_string()).collect()),
            capacity: Some([("storage".to_string(), Q(size.into()))].into()),
            ..Default::default()
        });
        v.status = Some(PersistentVolumeStatus {
            phase: Some("Available".into()),
            ..Default::default()
        });
        v
    }

    fn with_class(mut v: PersistentVolume, class: &str) -> PersistentVolume {
        v.spec.as_mut().unwrap().storage_class_name = Some(class.into());
        v
    }

    fn claim_with_class(mut c: PersistentVolumeClaim, class: &str) -> PersistentVolumeClaim {
        c.spec.as_mut().unwrap().storage_class_name = Some(class.into());
        c
    }

    fn with_claim_ref(mut v: PersistentVolume, claim: &str, uid: Option<&str>) -> PersistentVolume {
        v.spec.as_mut().unwrap().claim_ref = Some(ObjectReference {
            name: Some(claim.into()),
            namespace: Some("myns".into()),
            uid: uid.map(String::from),
            ..Default::default()
        });
        v
    }

    fn labelled(mut v: PersistentVolume, key: &str, value: &str) -> PersistentVolume {
        v.metadata.labels = Some([(key.to_string(), value.to_string())].into());
        v
    }

    fn arcs(vs: Vec<PersistentVolume>) -> Vec<Arc<PersistentVolume>> {
        vs.into_iter().map(Arc::new).collect()
    }

    fn name(v: Option<Arc<PersistentVolume>>) -> Option<String> {
        v.and_then(|v| v.metadata.name.clone())
    }

    const RWO: &str = "ReadWriteOnce";
    const ROX: &str = "ReadOnlyMany";
    const RWX: &str = "ReadWriteMany";

    /// The volumes of index_test.go's `createTestVolumes`, reduced to what decides matching.
    fn test_volumes() -> Vec<Arc<PersistentVolume>> {
        arcs(vec![
            with_claim_ref(volume("gce-pd-1", "1G", &[RWO, ROX]), "other", Some("x")),
            volume("gce-pd-5", "5G", &[RWO, ROX]),
            volume("gce-pd-10", "10G", &[RWO, ROX]),
            volume("gce-pd-20", "20G", &[RWO, ROX]),
            volume("nfs-1", "1G", &[RWO, ROX, RWX]),
            volume("nfs-5", "5G", &[RWO, ROX, RWX]),
            volume("nfs-10", "10G", &[RWO, ROX, RWX]),
            labelled(
                volume("gce-pd-ssd", "10G", &[RWO, ROX]),
                "should-exist",
                "true",
            ),
            with_class(volume("gold-1", "10G", &[RWO]), "gold"),
            with_class(volume("silver-1", "15G", &[RWO]), "silver"),
        ])
    }

    // index_test.go TestMatchVolume.
    #[test]
    fn claims_get_the_smallest_volume_with_the_fewest_extra_modes() {
        let volumes = test_volumes();
        let cases: Vec<(&str, PersistentVolumeClaim, Option<&str>)> = vec![
            (
                "successful-match-gce-10",
                claim("c", "8G", &[ROX, RWO]),
                Some("gce-pd-10"),
            ),
            (
                "successful-match-nfs-5",
                claim("c", "5G", &[ROX, RWO, RWX]),
                Some("nfs-5"),
            ),
            (
                "successful-skip-1g-bound-volume",
                claim("c", "1G", &[ROX, RWO]),
                Some("gce-pd-5"),
            ),
            ("successful-no-match", claim("c", "999G", &[ROX]), None),
            (
                "successful-match-with-class",
                claim_with_class(claim("c", "1G", &[RWO]), "gold"),
                Some("gold-1"),
            ),
            (
                "successful-match-with-class-and-labels",
                {
                    let mut c = claim_with_class(claim("c", "1G", &[RWO]), "silver");
                    c.spec.as_mut().unwrap().selector = Some(LabelSelector {
                        match_labels: None,
                        match_expressions: None,
                    });
                    c
                },
                Some("silver-1"),
            ),
            (
                "successful-match-with-selector",
                {
                    let mut c = claim("c", "1G", &[RWO]);
                    c.spec.as_mut().unwrap().selector = Some(LabelSelector {
                        match_labels: Some(
                            [("should-exist".to_string(), "true".to_string())].into(),
                        ),
                        match_expressions: None,
                    });
                    c
                },
                Some("gce-pd-ssd"),
            ),
            (
                "no-match-due-to-label",
                {
                    let mut c = claim("c", "999G", &[RWO]);
                    c.spec.as_mut().unwrap().selector = Some(LabelSelector {
                        match_labels: Some(
                            [("should-not-exist".to_string(), "true".to_string())].into(),
                        ),
                        match_expressions: None,
                    });
                    c
                },
                None,
            ),
            (
                "no-match-due-to-size-constraint-with-label-selector",
                {
                    let mut c = claim("c", "20000G", &[RWO]);
                    c.spec.as_mut().unwrap().selector = Some(LabelSelector {
                        match_labels: Some(
                            [("should-exist".to_string(), "true".to_string())].into(),
                        ),
                        match_expressions: None,
                    });
                    c
                },
                None,
            ),
            (
                "no-match-with-class",
                claim_with_class(claim("c", "1G", &[RWO]), "copper"),
                None,
            ),
        ];
        for (case, claim, want) in cases {
            let got = find_best_match_for_claim(&claim, &volumes, false).unwrap();
            assert_eq!(name(got).as_deref(), want, "{case}");
        }
    }

    // index_test.go TestMatchingWithBoundVolumes.
    #[test]
    fn a_volume_bound_to_another_claim_is_skipped() {
        let volumes = arcs(vec![
            with_claim_ref(volume("gce001", "1G", &[RWO, ROX]), "someother", Some("x")),
            volume("gce002", "1G", &[RWO, ROX]),
        ]);
        let got =
            find_best_match_for_claim(&claim("c", "1G", &[RWO, ROX]), &volumes, false).unwrap();
        assert_eq!(name(got).as_deref(), Some("gce002"));
    }

    // index_test.go TestFindingVolumeWithDifferentAccessModes.
    #[test]
    fn the_group_with_the_fewest_modes_is_searched_first() {
        let volumes = arcs(vec![
            volume("gce", "10G", &[RWO, ROX]),
            volume("ebs", "10G", &[RWO]),
            volume("nfs", "10G", &[RWO, ROX, RWX]),
        ]);
        for (modes, want) in [
            (vec![RWO], "ebs"),
            (vec![ROX], "gce"),
            (vec![RWX], "nfs"),
            (vec![RWO, ROX], "gce"),
            (vec![RWO, ROX, RWX], "nfs"),
            (vec![RWX, ROX], "nfs"),
        ] {
            let got =
                find_best_match_for_claim(&claim("c", "1G", &modes), &volumes, false).unwrap();
            assert_eq!(name(got).as_deref(), Some(want), "{modes:?}");
        }
    }

    // index_test.go TestFindingPreboundVolumes.
    #[test]
    fn a_pre_bound_volume_wins_over_a_better_fit() {
        let c = claim("claim01", "1Gi", &[RWO]);
        let pv1 = volume("pv1", "1Gi", &[RWO]);
        let pv5 = volume("pv5", "5Gi", &[RWO]);
        let pv8 = with_claim_ref(volume("pv8", "8Gi", &[RWO]), "claim01", None);
        let volumes = arcs(vec![pv1, pv5, pv8.clone()]);
        let got = find_best_match_for_claim(&c, &volumes, false).unwrap();
        assert_eq!(name(got).as_deref(), Some("pv8"));
        // Pre-bound with the claim's UID, to a larger claim request.
        let big = claim("claim01", "7Gi", &[RWO]);
        let got = find_best_match_for_claim(&big, &volumes, false).unwrap();
        assert_eq!(name(got).as_deref(), Some("pv8"));
        // Bound to another UID: not ours.
        let other = arcs(vec![with_claim_ref(
            volume("pv8", "8Gi", &[RWO]),
            "claim01",
            Some("other"),
        )]);
        assert!(find_best_match_for_claim(&c, &other, false)
            .unwrap()
            .is_none());
    }

    // index_test.go TestBestMatchDelayed: only pre-bound volumes match with delayed binding.
    #[test]
    fn delayed_binding_matches_only_pre_bound_volumes() {
        let volumes = test_volumes();
        let c = claim("c", "8G", &[ROX, RWO]);
        assert!(find_best_match_for_claim(&c, &volumes, true)
            .unwrap()
            .is_none());
        let prebound = arcs(vec![with_claim_ref(
            volume("pre", "10G", &[RWO, ROX]),
            "c",
            None,
        )]);
        let got = find_best_match_for_claim(&c, &prebound, true).unwrap();
        assert_eq!(name(got).as_deref(), Some("pre"));
    }

    // index_test.go TestVolumeModeCheck and TestFilteringVolumeModes.
    #[test]
    fn volume_modes_must_agree_unset_reading_filesystem() {
        let mut block = volume("block", "10G", &[RWO]);
        block.spec.as_mut().unwrap().volume_mode = Some("Block".into());
        let fs = volume("fs", "10G", &[RWO]);
        let c = claim("c", "1G", &[RWO]);
        assert!(volume_mode_mismatch(&c, &block));
        assert!(!volume_mode_mismatch(&c, &fs));
        let mut block_claim = claim("c", "1G", &[RWO]);
        block_claim.spec.as_mut().unwrap().volume_mode = Some("Block".into());
        let volumes = arcs(vec![block, fs]);
        let got = find_best_match_for_claim(&block_claim, &volumes, false).unwrap();
        assert_eq!(name(got).as_deref(), Some("block"));
        let got = find_best_match_for_claim(&c, &volumes, false).unwrap();
        assert_eq!(name(got).as_deref(), Some("fs"));
    }

    // index_test.go TestFindMatchVolumeWithNode and the non-available / deleted cases.
    #[test]
    fn the_scheduler_path_checks_node_affinity_and_access_modes() {
        let mut node1 = Node::default();
        node1.metadata.name = Some("node1".into());
        node1.metadata.labels = Some([("key1".to_string(), "value1".to_string())].into());
        let mut affine = volume("affine", "10G", &[RWO]);
        affine.spec.as_mut().unwrap().node_affinity = Some(VolumeNodeAffinity {
            required: Some(NodeSelector {
                node_selector_terms: vec![NodeSelectorTerm {
                    match_expressions: Some(vec![NodeSelectorRequirement {
                        key: "key1".into(),
                        operator: "In".into(),
                        values: Some(vec!["value2".into()]),
                    }]),
                    match_fields: None,
                }],
            }),
        });
        let mut released = volume("released", "10G", &[RWO]);
        released.status.as_mut().unwrap().phase = Some("Released".into());
        let mut deleting = volume("deleting", "10G", &[RWO]);
        deleting.metadata.deletion_timestamp = Some(Time("2025-01-01T00:00:00Z".parse().unwrap()));
        let rox_only = volume("rox", "10G", &[ROX]);
        let volumes = arcs(vec![affine, released, deleting, rox_only]);
        let c = claim("c", "1G", &[RWO]);
        assert!(find_matching_volume(&c, &volumes, Some(&node1), &[], true)
            .unwrap()
            .is_none());
        let mut node2 = node1.clone();
        node2.metadata.labels = Some([("key1".to_string(), "value2".to_string())].into());
        let got = find_matching_volume(&c, &volumes, Some(&node2), &[], true).unwrap();
        assert_eq!(name(got).as_deref(), Some("affine"));
        assert!(
            find_matching_volume(&c, &volumes, Some(&node2), &["affine"], true)
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn an_invalid_selector_is_an_error_naming_the_claim() {
        let mut c = claim("c", "1G", &[RWO]);
        c.spec.as_mut().unwrap().selector = Some(LabelSelector {
            match_labels: Some([("bad key!".to_string(), "v".to_string())].into()),
            match_expressions: None,
        });
        let err = find_best_match_for_claim(&c, &test_volumes(), false).unwrap_err();
        assert!(err
            .to_string()
            .starts_with("error creating internal label selector for claim: myns/c: "));
    }
}
