//! Rollback to an earlier revision: copy that ReplicaSet's template (and annotations) back into the
//! Deployment, which then rolls out as a new revision.
//!
//! Mirrors `pkg/controller/deployment/rollback.go`. apps/v1 has no `spec.rollbackTo`; the API
//! server keeps an extensions/v1beta1 request in the `deprecated.deployment.rollback.to`
//! annotation, which is what this reads. `kubectl rollout undo` instead patches the template
//! directly; the revision mechanics (the reused ReplicaSet gets the next revision, its old
//! revisions go to `revision-history`) are the same either way and live in `annotations`.

use std::sync::Arc;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use rkcm_runtime::events::EventType;

use super::annotations::{
    clear_rollback_to, last_revision, revision, rollback_to, set_deployment_annotations_to,
};
use super::hash::equal_ignore_hash;
use super::replica_sets::rs_template;
use super::spec::POD_TEMPLATE_HASH_LABEL;
use super::sync::{object_reference, Result};
use super::DeploymentController;

/// Event reason: the requested revision does not exist.
pub const ROLLBACK_REVISION_NOT_FOUND: &str = "DeploymentRollbackRevisionNotFound";
/// Event reason: the requested revision has the current template.
pub const ROLLBACK_TEMPLATE_UNCHANGED: &str = "DeploymentRollbackTemplateUnchanged";
/// Event reason: the rollback was done.
pub const ROLLBACK_DONE: &str = "DeploymentRollback";

/// The revision a rollback request resolves to: the requested one, or for 0 the one before the
/// current; `None` when there is none.
pub fn rollback_revision(requested: i64, all_rss: &[Arc<ReplicaSet>]) -> Option<i64> {
    let revision = if requested == 0 {
        last_revision(all_rss.iter().map(|rs| &**rs))
    } else {
        requested
    };
    (revision != 0).then_some(revision)
}

/// Copies `rs`'s template (without the hash label) and annotations into `d`, unless the templates
/// are already equal. Returns whether the template changed (`rollbackToTemplate`).
pub fn set_template_from(d: &mut Deployment, rs: &ReplicaSet) -> bool {
    let template = rs_template(rs);
    let Some(spec) = d.spec.as_mut() else {
        return false;
    };
    if equal_ignore_hash(&spec.template, &template) {
        return false;
    }
    let mut template = template;
    if let Some(labels) = template.metadata.as_mut().and_then(|m| m.labels.as_mut()) {
        labels.remove(POD_TEMPLATE_HASH_LABEL);
    }
    spec.template = template;
    // Take the target's annotations too, or the current ones would be copied onto it afterwards.
    set_deployment_annotations_to(d, rs);
    true
}

impl DeploymentController {
    /// Performs a requested rollback, then clears the request (`rollback`).
    pub(crate) async fn rollback(
        &self,
        d: &mut Deployment,
        rs_list: &[Arc<ReplicaSet>],
    ) -> Result<()> {
        let (new_rs, old_rss) = self
            .all_replica_sets_and_sync_revision(d, rs_list, true)
            .await?;
        let all: Vec<Arc<ReplicaSet>> = old_rss.into_iter().chain(new_rs).collect();
        let requested = rollback_to(d).unwrap_or(0);
        let Some(target) = rollback_revision(requested, &all) else {
            self.rollback_warning(
                d,
                ROLLBACK_REVISION_NOT_FOUND,
                "Unable to find last revision.",
            );
            return self.clear_rollback_to(d).await;
        };
        let Some(rs) = all.iter().find(|rs| revision(rs).ok() == Some(target)) else {
            self.rollback_warning(
                d,
                ROLLBACK_REVISION_NOT_FOUND,
                "Unable to find the revision to rollback to.",
            );
            return self.clear_rollback_to(d).await;
        };
        // The revision number itself moves on at the next sync, when the reused ReplicaSet becomes
        // the new one.
        let performed = set_template_from(d, rs);
        if !performed {
            let name = d.metadata.name.clone().unwrap_or_default();
            self.rollback_warning(
                d,
                ROLLBACK_TEMPLATE_UNCHANGED,
                &format!("The rollback revision contains the same template as current deployment {name:?}"),
            );
        }
        self.clear_rollback_to(d).await?;
        if performed {
            let name = d.metadata.name.clone().unwrap_or_default();
            self.recorder.event(
                &object_reference(d),
                EventType::Normal,
                ROLLBACK_DONE,
                format!("Rolled back deployment {name:?} to revision {target}"),
            );
        }
        Ok(())
    }

    fn rollback_warning(&self, d: &Deployment, reason: &str, message: &str) {
        self.recorder.event(
            &object_reference(d),
            EventType::Warning,
            reason,
            message.to_string(),
        );
    }

    /// Removes the rollback request and writes the Deployment (`updateDeploymentAndClearRollbackTo`).
    async fn clear_rollback_to(&self, d: &mut Deployment) -> Result<()> {
        clear_rollback_to(d);
        self.update_deployment(d).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deployment::annotations::REVISION;
    use crate::deployment::fixtures::{generate_deployment, generate_rs};

    fn with_revision(mut rs: ReplicaSet, rev: &str) -> Arc<ReplicaSet> {
        rs.metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(REVISION.into(), rev.into());
        Arc::new(rs)
    }

    #[test]
    fn revision_zero_means_the_previous_revision() {
        let d = generate_deployment("nginx");
        let rss = vec![
            with_revision(generate_rs(&d), "1"),
            with_revision(generate_rs(&d), "3"),
            with_revision(generate_rs(&d), "2"),
        ];
        assert_eq!(rollback_revision(0, &rss), Some(2));
        assert_eq!(rollback_revision(1, &rss), Some(1));
        assert_eq!(rollback_revision(0, &rss[..1]), None);
    }

    #[test]
    fn rollback_copies_the_template_without_the_hash_and_takes_the_annotations() {
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
            .image = Some("nginx:1".into());
        let mut old_rs = generate_rs(&old_d);
        let t = old_rs.spec.as_mut().unwrap().template.as_mut().unwrap();
        t.metadata
            .as_mut()
            .unwrap()
            .labels
            .as_mut()
            .unwrap()
            .insert(POD_TEMPLATE_HASH_LABEL.into(), "abc".into());
        old_rs.metadata.annotations = Some([("note".to_string(), "v1".to_string())].into());

        let mut d = generate_deployment("nginx");
        d.spec
            .as_mut()
            .unwrap()
            .template
            .spec
            .as_mut()
            .unwrap()
            .containers[0]
            .image = Some("nginx:2".into());
        assert!(set_template_from(&mut d, &old_rs));
        let template = &d.spec.as_ref().unwrap().template;
        assert_eq!(
            template.spec.as_ref().unwrap().containers[0]
                .image
                .as_deref(),
            Some("nginx:1")
        );
        assert!(!template
            .metadata
            .as_ref()
            .unwrap()
            .labels
            .as_ref()
            .unwrap()
            .contains_key(POD_TEMPLATE_HASH_LABEL));
        assert_eq!(
            d.metadata
                .annotations
                .as_ref()
                .unwrap()
                .get("note")
                .map(String::as_str),
            Some("v1")
        );
        // Rolling back to the current template changes nothing.
        assert!(!set_template_from(&mut d, &old_rs));
    }
}
