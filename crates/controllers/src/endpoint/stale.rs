//! Endpoints whose cached copy is known to be out of date (`staleEndpointsTracker`).
//!
//! After an update that changed the resourceVersion, the version the controller replaced is
//! remembered: a later sync that still finds that version in the cache fails and is retried
//! rather than acting on it (kube issues 126578 and 127370).

use std::collections::HashMap;

use k8s_openapi::api::core::v1::Endpoints;
use parking_lot::Mutex;
use rkcm_runtime::ObjectKey;

/// The replaced resourceVersion of each Endpoints object. Safe to share between workers.
#[derive(Default)]
pub struct StaleEndpointsTracker {
    replaced: Mutex<HashMap<ObjectKey, String>>,
}

impl StaleEndpointsTracker {
    /// Remembers that `endpoints` (as cached) has been replaced.
    pub fn stale(&self, endpoints: &Endpoints) {
        self.replaced.lock().insert(
            ObjectKey::from_obj(endpoints),
            endpoints
                .metadata
                .resource_version
                .clone()
                .unwrap_or_default(),
        );
    }

    /// Whether `endpoints` is a version this controller already replaced.
    pub fn is_stale(&self, endpoints: &Endpoints) -> bool {
        let rv = endpoints.metadata.resource_version.as_deref().unwrap_or("");
        self.replaced
            .lock()
            .get(&ObjectKey::from_obj(endpoints))
            .is_some_and(|stale| stale == rv)
    }

    /// Forgets the Endpoints `key`.
    pub fn delete(&self, key: &ObjectKey) {
        self.replaced.lock().remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoints(rv: &str) -> Endpoints {
        let mut e = Endpoints::default();
        e.metadata.name = Some("web".into());
        e.metadata.namespace = Some("ns".into());
        e.metadata.resource_version = Some(rv.into());
        e
    }

    /// Ported from endpoints_tracker_test.go `TestStaleEndpointsTracker`.
    #[test]
    fn only_the_replaced_version_is_stale() {
        let tracker = StaleEndpointsTracker::default();
        assert!(!tracker.is_stale(&endpoints("1")));
        tracker.stale(&endpoints("1"));
        assert!(tracker.is_stale(&endpoints("1")));
        assert!(!tracker.is_stale(&endpoints("2")));
        tracker.delete(&ObjectKey::new("ns", "web"));
        assert!(!tracker.is_stale(&endpoints("1")));
    }
}
