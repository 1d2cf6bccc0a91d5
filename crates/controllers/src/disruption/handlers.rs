//! Informer notifications → queued keys: a budget when it changes, the budget of a pod when the
//! pod changes, and a pod whose `DisruptionTarget` condition will go stale (`addPod`,
//! `updatePod`, `deletePod`, `addDB`, `updateDB`, `removeDB`, `getPdbForPod`).

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use rand::seq::IndexedRandom;
use rkcm_labels::Selector;
use rkcm_runtime::events::EventType;
use rkcm_runtime::informer::Notification;
use rkcm_runtime::ObjectKey;

use super::stale::stale_disruption_condition;
use super::DisruptionController;

/// The budgets of `pod`'s namespace whose selector matches its labels, by name
/// (`GetPodPodDisruptionBudgets`): a missing or invalid selector matches nothing, an empty one
/// every pod.
pub fn budgets_of_pod(
    budgets: &[Arc<PodDisruptionBudget>],
    pod: &Pod,
) -> Vec<Arc<PodDisruptionBudget>> {
    let empty = Default::default();
    let labels = pod.metadata.labels.as_ref().unwrap_or(&empty);
    let mut found: Vec<_> = budgets
        .iter()
        .filter(|pdb| pdb.metadata.namespace == pod.metadata.namespace)
        .filter(|pdb| {
            let selector = pdb.spec.as_ref().and_then(|s| s.selector.as_ref());
            Selector::from_optional_label_selector(selector).is_ok_and(|s| s.matches(labels))
        })
        .cloned()
        .collect();
    found.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    found
}

impl DisruptionController {
    /// The budget of `pod`, one chosen at random when several match, with kube's warning event
    /// (`getPdbForPod`).
    ///
    /// kube takes the first budget its lister returns, and the lister lists a namespace in Go map
    /// order, which Go randomises on every iteration: each event of the pod picks any of its
    /// budgets, so every budget over the pod is synced by the pod's later events. Always taking
    /// the same one would leave the others stale until the informer's resync.
    fn pdb_for_pod(&self, pod: &Pod) -> Option<Arc<PodDisruptionBudget>> {
        let namespace = pod.metadata.namespace.as_deref().unwrap_or("");
        let budgets = budgets_of_pod(&self.pdbs.store().list_by_namespace(namespace), pod);
        let chosen = budgets.choose(&mut rand::rng())?.clone();
        if budgets.len() > 1 {
            let msg = format!(
                "Pod {:?}/{:?} matches multiple PodDisruptionBudgets.  Chose {:?} arbitrarily.",
                namespace,
                pod.metadata.name.as_deref().unwrap_or(""),
                chosen.metadata.name.as_deref().unwrap_or("")
            );
            tracing::info!("{msg}");
            self.recorder
                .event_for(pod, EventType::Warning, "MultiplePodDisruptionBudgets", msg);
        }
        Some(chosen)
    }

    fn enqueue_pdb_of(&self, pod: &Pod) {
        if let Some(pdb) = self.pdb_for_pod(pod) {
            self.queue.add(ObjectKey::from_obj(&*pdb));
        }
    }

    fn enqueue_if_stale(&self, pod: &Pod) {
        if let Some(wait) =
            stale_disruption_condition(pod, self.stale_pod_disruption_timeout, self.clock.now())
        {
            self.stale_pod_queue
                .add_after(ObjectKey::from_obj(pod), wait);
        }
    }

    /// A pod was added, changed or deleted: its budget is to be synced, and a stale
    /// `DisruptionTarget` condition reset in time.
    pub(super) fn on_pod(&self, note: Notification<Pod>) {
        match note {
            Notification::Add(pod) | Notification::Update { new: pod, .. } => {
                self.enqueue_pdb_of(&pod);
                self.enqueue_if_stale(&pod);
            }
            Notification::Delete(deleted) => self.enqueue_pdb_of(deleted.object()),
        }
    }

    /// A budget was added, changed or deleted: it is to be synced.
    pub(super) fn on_pdb(&self, note: Notification<PodDisruptionBudget>) {
        let pdb = match &note {
            Notification::Add(pdb) | Notification::Update { new: pdb, .. } => pdb,
            Notification::Delete(deleted) => deleted.object(),
        };
        self.queue.add(ObjectKey::from_obj(&**pdb));
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{pdb, pod};
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    /// disruption_test.go `TestNoSelector` / `TestPDBNotExist`: in policy/v1 an empty selector
    /// matches every pod of the namespace, a missing one none.
    #[test]
    fn an_empty_selector_matches_every_pod_and_a_missing_one_none() {
        let p = pod("p");
        let mut all = pdb(Some(IntOrString::Int(1)), None);
        all.metadata.name = Some("all".into());
        all.spec.as_mut().unwrap().selector = Some(LabelSelector::default());
        let mut none = pdb(Some(IntOrString::Int(1)), None);
        none.metadata.name = Some("none".into());
        none.spec.as_mut().unwrap().selector = None;
        let mut other = pdb(Some(IntOrString::Int(1)), None);
        other.metadata.name = Some("a-other".into());
        other.metadata.namespace = Some("other".into());
        let mut matching = pdb(Some(IntOrString::Int(1)), None);
        matching.metadata.name = Some("b-match".into());
        let budgets: Vec<_> = [all, none, other, matching]
            .into_iter()
            .map(Arc::new)
            .collect();
        let found: Vec<_> = budgets_of_pod(&budgets, &p)
            .iter()
            .map(|b| b.metadata.name.clone().unwrap())
            .collect();
        assert_eq!(found, ["all", "b-match"]);
    }
}
