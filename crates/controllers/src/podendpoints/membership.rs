//! Which Services a pod change concerns (`GetPodServiceMemberships`,
//! `GetServicesToUpdateOnPodChange`, `podEndpointsChanged` of k8s.io/endpointslice `util`).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Pod, Service};
use rkcm_runtime::ObjectKey;

use crate::replicaset::pod_state::is_pod_ready;

fn matches(selector: &BTreeMap<String, String>, labels: &BTreeMap<String, String>) -> bool {
    selector.iter().all(|(k, v)| labels.get(k) == Some(v))
}

/// Keys of the Services among `services` (those of the pod's namespace) whose selector matches
/// `labels`. A Service without a selector matches nothing.
fn matching(services: &[Arc<Service>], labels: &BTreeMap<String, String>) -> BTreeSet<ObjectKey> {
    services
        .iter()
        .filter(|s| {
            s.spec
                .as_ref()
                .and_then(|spec| spec.selector.as_ref())
                .is_some_and(|sel| matches(sel, labels))
        })
        .map(|s| ObjectKey::from_obj(&**s))
        .collect()
}

fn labels_of(pod: &Pod) -> BTreeMap<String, String> {
    pod.metadata.labels.clone().unwrap_or_default()
}

/// The Services (among `services`, those of the pod's namespace) that select `pod`.
pub fn services_for_pod(services: &[Arc<Service>], pod: &Pod) -> BTreeSet<ObjectKey> {
    matching(services, &labels_of(pod))
}

/// Whether a pod update may change its endpoints (first) and which Services select it (second)
/// (`podEndpointsChanged`).
pub fn pod_endpoints_changed(old: &Pod, new: &Pod) -> (bool, bool) {
    let host = |p: &Pod| {
        p.spec
            .as_ref()
            .map(|s| (s.hostname.clone(), s.subdomain.clone()))
    };
    let labels_changed = old.metadata.labels != new.metadata.labels || host(old) != host(new);
    if old.metadata.deletion_timestamp != new.metadata.deletion_timestamp
        || is_pod_ready(old) != is_pod_ready(new)
    {
        return (true, labels_changed);
    }
    let ips = |p: &Pod| -> Vec<String> {
        p.status
            .as_ref()
            .and_then(|s| s.pod_ips.as_ref())
            .into_iter()
            .flatten()
            .map(|ip| ip.ip.clone())
            .collect()
    };
    (ips(old) != ips(new), labels_changed)
}

/// The Services to sync after `old` became `new` (`GetServicesToUpdateOnPodChange`): none for a
/// resync (same resourceVersion) or a change that matters to no endpoint; the Services selecting
/// the pod when only its endpoint changed; when its labels changed, every Service that selected it
/// before or after if its endpoint changed too, else only those it joined or left.
pub fn services_to_update_on_pod_change(
    services: &[Arc<Service>],
    old: &Pod,
    new: &Pod,
) -> BTreeSet<ObjectKey> {
    if old.metadata.resource_version == new.metadata.resource_version {
        return BTreeSet::new();
    }
    let (pod_changed, labels_changed) = pod_endpoints_changed(old, new);
    if !pod_changed && !labels_changed {
        return BTreeSet::new();
    }
    let now = services_for_pod(services, new);
    if !labels_changed {
        return now;
    }
    let before = services_for_pod(services, old);
    if pod_changed {
        now.union(&before).cloned().collect()
    } else {
        now.symmetric_difference(&before).cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::podendpoints::fixtures::{pod, service};
    use k8s_openapi::api::core::v1::PodIP;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn services() -> Vec<Arc<Service>> {
        vec![
            Arc::new(service("web", Some(&[("app", "web")]))),
            Arc::new(service("db", Some(&[("app", "db")]))),
            Arc::new(service("manual", None)),
            Arc::new(service("all", Some(&[]))),
        ]
    }

    fn names(keys: BTreeSet<ObjectKey>) -> Vec<String> {
        keys.into_iter().map(|k| k.name).collect()
    }

    fn bumped(p: &Pod) -> Pod {
        let mut p = p.clone();
        p.metadata.resource_version = Some("2".into());
        p
    }

    #[test]
    fn a_pod_belongs_to_the_services_whose_selector_matches_and_never_to_selectorless_ones() {
        assert_eq!(
            names(services_for_pod(&services(), &pod("a", "10.0.0.1", true))),
            ["all", "web"]
        );
    }

    /// Ported from k8s.io/endpointslice util `TestGetServicesToUpdateOnPodChange`.
    #[test]
    fn pod_changes_queue_the_services_they_concern() {
        let svcs = services();
        let old = pod("a", "10.0.0.1", true);
        // A resync queues nothing.
        assert!(services_to_update_on_pod_change(&svcs, &old, &old).is_empty());
        // An unrelated change queues nothing.
        let mut annotated = bumped(&old);
        annotated.metadata.annotations = Some([("x".to_string(), "y".to_string())].into());
        assert!(services_to_update_on_pod_change(&svcs, &old, &annotated).is_empty());
        // Readiness, IP or deletion changes queue the pod's Services.
        let mut unready = bumped(&old);
        unready
            .status
            .as_mut()
            .unwrap()
            .conditions
            .as_mut()
            .unwrap()[0]
            .status = "False".into();
        assert_eq!(
            names(services_to_update_on_pod_change(&svcs, &old, &unready)),
            ["all", "web"]
        );
        let mut moved = bumped(&old);
        moved.status.as_mut().unwrap().pod_ips = Some(vec![PodIP {
            ip: "10.0.0.2".into(),
        }]);
        assert_eq!(
            names(services_to_update_on_pod_change(&svcs, &old, &moved)),
            ["all", "web"]
        );
        let mut deleting = bumped(&old);
        deleting.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::UNIX_EPOCH));
        assert_eq!(
            names(services_to_update_on_pod_change(&svcs, &old, &deleting)),
            ["all", "web"]
        );
        // Only labels changed: the Services joined or left.
        let mut relabelled = bumped(&old);
        relabelled.metadata.labels = Some([("app".to_string(), "db".to_string())].into());
        assert_eq!(
            names(services_to_update_on_pod_change(&svcs, &old, &relabelled)),
            ["db", "web"]
        );
        // Labels and readiness changed: every Service before and after.
        relabelled.status = unready.status.clone();
        assert_eq!(
            names(services_to_update_on_pod_change(&svcs, &old, &relabelled)),
            ["all", "db", "web"]
        );
        // A hostname change counts as a label change.
        let mut renamed = bumped(&old);
        renamed.spec.as_mut().unwrap().hostname = Some("h".into());
        assert!(services_to_update_on_pod_change(&svcs, &old, &renamed).is_empty());
    }
}
