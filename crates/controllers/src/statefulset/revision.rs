//! A StatefulSet's revisions: the data recorded for a pod template and its restoration
//! (`getPatch`, `newRevision`, `ApplyRevision` of kube's `stateful_set_utils.go`).
//!
//! A revision holds `{"spec": {"template": <template>, "$patch": "replace"}}` with `$patch` inside
//! the template: the strategic-merge patch that `kubectl rollout undo statefulset` applies to put
//! the template back, and that [`apply_revision`] applies here.

use k8s_openapi::api::apps::v1::{ControllerRevision, StatefulSet};
use k8s_openapi::api::core::v1::PodTemplateSpec;
use rkcm_runtime::controller_ref::OwnerInfo;
use rkcm_runtime::history;
use serde_json::{json, Value};

/// Why a revision could not be applied.
#[derive(Debug, thiserror::Error)]
pub enum RevisionError {
    /// The revision's data holds no `spec.template`, or one that is not a pod template.
    #[error("revision {name} does not hold a pod template: {reason}")]
    BadData {
        /// The revision.
        name: String,
        /// What is wrong.
        reason: String,
    },
}

/// The data of a revision of `set`: its pod template as a replacing strategic-merge patch
/// (`getPatch`).
#[doc(alias = "getPatch")]
pub fn patch_of(set: &StatefulSet) -> Value {
    let template = set
        .spec
        .as_ref()
        .map(|s| s.template.clone())
        .unwrap_or_default();
    // Serializing a k8s-openapi struct cannot fail: every field is plain data with string keys.
    let mut template = serde_json::to_value(&template).unwrap_or_else(|_| json!({}));
    if let Some(obj) = template.as_object_mut() {
        obj.insert("$patch".into(), json!("replace"));
    }
    json!({"spec": {"template": template}})
}

/// A revision of `set` numbered `revision`, named with `collision_count`, labelled with the
/// template's labels and annotated with the set's annotations (`newRevision`).
#[doc(alias = "newRevision")]
pub fn new_revision(set: &StatefulSet, revision: i64, collision_count: i32) -> ControllerRevision {
    let labels = set
        .spec
        .as_ref()
        .and_then(|s| s.template.metadata.as_ref())
        .and_then(|m| m.labels.as_ref());
    let mut cr = history::new_revision(
        &OwnerInfo::from_resource(set),
        labels,
        patch_of(set),
        revision,
        Some(collision_count),
    );
    let annotations = cr.metadata.annotations.get_or_insert_with(Default::default);
    annotations.extend(set.metadata.annotations.clone().unwrap_or_default());
    cr
}

/// `set` with its pod template replaced by the one `revision` recorded (`ApplyRevision`: the
/// strategic merge of a `$patch: replace` template is a replacement).
#[doc(alias = "ApplyRevision")]
pub fn apply_revision(
    set: &StatefulSet,
    revision: &ControllerRevision,
) -> Result<StatefulSet, RevisionError> {
    let name = revision.metadata.name.clone().unwrap_or_default();
    let bad = |reason: String| RevisionError::BadData {
        name: name.clone(),
        reason,
    };
    let mut template = revision
        .data
        .as_ref()
        .and_then(|d| d.0.get("spec"))
        .and_then(|s| s.get("template"))
        .cloned()
        .ok_or_else(|| bad("no spec.template".into()))?;
    if let Some(obj) = template.as_object_mut() {
        obj.remove("$patch");
    }
    let template: PodTemplateSpec =
        serde_json::from_value(template).map_err(|e| bad(e.to_string()))?;
    let mut restored = set.clone();
    if let Some(spec) = restored.spec.as_mut() {
        spec.template = template;
    }
    Ok(restored)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::statefulset::fixtures::{new_stateful_set, set_image};

    #[test]
    fn a_revision_restores_the_template_it_recorded() {
        // TestApplyRevision: a revision of the old set applied to the changed set gives back the
        // old template; the changed set's revision gives back the changed one.
        let set = new_stateful_set("foo", 3);
        let rev = new_revision(&set, 1, 0);
        let mut changed = set.clone();
        set_image(&mut changed, "nginx:2");
        let restored = apply_revision(&changed, &rev).unwrap();
        assert_eq!(
            restored.spec.as_ref().unwrap().template,
            set.spec.as_ref().unwrap().template
        );
        let rev2 = new_revision(&changed, 2, 0);
        let restored = apply_revision(&set, &rev2).unwrap();
        assert_eq!(
            restored.spec.as_ref().unwrap().template,
            changed.spec.as_ref().unwrap().template
        );
        assert!(!history::equal_revision(&rev, &rev2));
        assert!(history::equal_revision(&rev, &new_revision(&set, 5, 0)));
    }

    #[test]
    fn revision_data_is_a_replacing_template_patch_with_the_sets_labels_and_annotations() {
        let mut set = new_stateful_set("foo", 3);
        set.metadata.annotations = Some([("a".to_string(), "b".to_string())].into());
        let rev = new_revision(&set, 1, 0);
        let data = &rev.data.as_ref().unwrap().0;
        assert_eq!(data["spec"]["template"]["$patch"], "replace");
        assert_eq!(data["spec"].as_object().unwrap().len(), 1);
        assert_eq!(rev.metadata.annotations.as_ref().unwrap()["a"], "b");
        assert_eq!(rev.metadata.labels.as_ref().unwrap()["foo"], "bar");
        assert!(rev.metadata.name.as_ref().unwrap().starts_with("foo-"));
        assert_ne!(rev.metadata.name, new_revision(&set, 1, 1).metadata.name);
    }

    #[test]
    fn a_revision_without_a_template_is_refused() {
        let set = new_stateful_set("foo", 1);
        let mut rev = new_revision(&set, 1, 0);
        rev.data = Some(k8s_openapi::apimachinery::pkg::runtime::RawExtension(
            json!({"spec": {}}),
        ));
        assert!(apply_revision(&set, &rev).is_err());
    }
}
