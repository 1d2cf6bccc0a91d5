//! The `endpoints.kubernetes.io/last-change-trigger-time` of each Service's next write
//! (`TriggerTimeTracker` of k8s.io/endpointslice `util`).

use std::collections::HashMap;
use std::sync::Arc;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Pod, Service};
use parking_lot::Mutex;
use rkcm_runtime::ObjectKey;

use crate::replicaset::pod_state::ready_condition;

#[derive(Default)]
struct ServiceState {
    last_service_trigger: Option<Timestamp>,
    last_pod_triggers: HashMap<String, Timestamp>,
}

/// Remembers, per Service, the trigger times (the pods' Ready transitions and the Service's
/// creation) its last sync saw, to tell which changed since.
///
/// Safe to share between workers; each Service is computed by one worker at a time (the queue
/// guarantees it), as kube's contract requires. Like kube's, it can misattribute the time when an
/// object changes several times between two syncs.
#[derive(Default)]
pub struct TriggerTimeTracker {
    states: Mutex<HashMap<ObjectKey, ServiceState>>,
}

fn pod_trigger(pod: &Pod) -> Option<Timestamp> {
    ready_condition(pod)?
        .last_transition_time
        .as_ref()
        .map(|t| t.0)
}

fn earliest(current: Option<Timestamp>, new: Timestamp) -> Option<Timestamp> {
    Some(current.map_or(new, |c| c.min(new)))
}

impl TriggerTimeTracker {
    /// Records what this sync of `service` sees and returns the time to publish: the Service's
    /// creation for a Service not seen before, else the earliest trigger time that changed since
    /// the last call; `None` when nothing did (the annotation is then removed)
    /// (`ComputeEndpointLastChangeTriggerTime`).
    pub fn compute(&self, service: &Service, pods: &[Arc<Pod>]) -> Option<Timestamp> {
        let key = ObjectKey::from_obj(service);
        let mut states = self.states.lock();
        let was_known = states.contains_key(&key);
        let state = states.entry(key).or_default();
        let mut min_changed = None;
        let mut pod_triggers = HashMap::new();
        for pod in pods {
            let Some(at) = pod_trigger(pod) else { continue };
            let name = pod.metadata.name.clone().unwrap_or_default();
            if state
                .last_pod_triggers
                .get(&name)
                .is_none_or(|last| at > *last)
            {
                min_changed = earliest(min_changed, at);
            }
            pod_triggers.insert(name, at);
        }
        let service_trigger = service.metadata.creation_timestamp.as_ref().map(|t| t.0);
        if let Some(at) = service_trigger {
            if state.last_service_trigger.is_none_or(|last| at > last) {
                min_changed = earliest(min_changed, at);
            }
        }
        state.last_pod_triggers = pod_triggers;
        state.last_service_trigger = service_trigger;
        if !was_known {
            return service_trigger;
        }
        min_changed
    }

    /// Forgets a deleted Service.
    pub fn delete_service(&self, key: &ObjectKey) {
        self.states.lock().remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::podendpoints::fixtures::{pod, service, t0};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn at(secs: i64) -> Timestamp {
        t0() + jiff::SignedDuration::from_secs(secs)
    }

    fn pod_ready_at(name: &str, secs: i64) -> Arc<Pod> {
        let mut p = pod(name, "10.0.0.1", true);
        p.status.as_mut().unwrap().conditions.as_mut().unwrap()[0].last_transition_time =
            Some(Time(at(secs)));
        Arc::new(p)
    }

    /// Ported from k8s.io/endpointslice util `TestNewServiceNoPods`, `TestNewServiceExistingPods`,
    /// `TestPodsAdded`, `TestPodsUpdated`, `TestPodsUpdatedNoOp`, `TestPodDeletedThenAdded`,
    /// `TestServiceCreatedThenDeleted`.
    #[test]
    fn the_trigger_time_is_the_earliest_change_since_the_last_sync() {
        let tracker = TriggerTimeTracker::default();
        let svc = service("web", Some(&[("app", "web")]));
        // A new Service: its creation time, whatever its pods.
        assert_eq!(tracker.compute(&svc, &[pod_ready_at("a", 5)]), Some(t0()));
        // Nothing changed.
        assert_eq!(tracker.compute(&svc, &[pod_ready_at("a", 5)]), None);
        // Pods added: the earliest of them.
        let pods = [
            pod_ready_at("a", 5),
            pod_ready_at("b", 20),
            pod_ready_at("c", 10),
        ];
        assert_eq!(tracker.compute(&svc, &pods), Some(at(10)));
        // A pod updated.
        let pods = [
            pod_ready_at("a", 30),
            pod_ready_at("b", 20),
            pod_ready_at("c", 10),
        ];
        assert_eq!(tracker.compute(&svc, &pods), Some(at(30)));
        // A pod deleted then added again with an older time still counts as a change.
        assert_eq!(tracker.compute(&svc, &[pod_ready_at("a", 30)]), None);
        assert_eq!(
            tracker.compute(&svc, &[pod_ready_at("a", 30), pod_ready_at("b", 20)]),
            Some(at(20))
        );
        // A deleted Service starts over.
        tracker.delete_service(&ObjectKey::from_obj(&svc));
        assert_eq!(tracker.compute(&svc, &[]), Some(t0()));
    }
}
