//! The generations of the EndpointSlices a controller wrote, per Service, to tell its own writes
//! from others' and a lagging cache from a current one (`EndpointSliceTracker` of
//! k8s.io/endpointslice `util`). Shared by the EndpointSlice and mirroring controllers.

use std::collections::HashMap;

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use parking_lot::Mutex;
use rkcm_runtime::ObjectKey;

use super::slices::SERVICE_NAME_LABEL;

/// Marks a slice the controller deleted and expects to see go.
const DELETION_EXPECTED: i64 = -1;

#[derive(Default)]
struct Inner {
    /// Expected generation by slice UID, per Service.
    generations: HashMap<ObjectKey, HashMap<String, i64>>,
    /// The UID of each tracked Service.
    service_uids: HashMap<ObjectKey, String>,
}

/// Expected slice generations per Service. Safe to share between handlers and workers.
#[derive(Default)]
pub struct EndpointSliceTracker {
    inner: Mutex<Inner>,
}

fn service_of(slice: &EndpointSlice) -> ObjectKey {
    let name = slice
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(SERVICE_NAME_LABEL))
        .cloned()
        .unwrap_or_default();
    ObjectKey::new(slice.metadata.namespace.clone().unwrap_or_default(), name)
}

fn uid(slice: &EndpointSlice) -> String {
    slice.metadata.uid.clone().unwrap_or_default()
}

fn generation(slice: &EndpointSlice) -> i64 {
    slice.metadata.generation.unwrap_or(0)
}

impl EndpointSliceTracker {
    /// Whether the slice is tracked at all.
    pub fn has(&self, slice: &EndpointSlice) -> bool {
        let inner = self.inner.lock();
        inner
            .generations
            .get(&service_of(slice))
            .is_some_and(|g| g.contains_key(&uid(slice)))
    }

    /// Whether a notification about `slice` needs a sync: it is not tracked, or newer than the
    /// generation this controller wrote.
    pub fn should_sync(&self, slice: &EndpointSlice) -> bool {
        let inner = self.inner.lock();
        match inner
            .generations
            .get(&service_of(slice))
            .and_then(|g| g.get(&uid(slice)))
        {
            None => true,
            Some(&g) => generation(slice) > g,
        }
    }

    /// Whether the cached `slices` of `service` lag behind this controller's writes: a slice
    /// older than written, one expected to be deleted, or a written one missing. Tracking from a
    /// previous Service of the same name (another UID) is dropped first.
    pub fn stale_slices(
        &self,
        service: &Service,
        slices: &[std::sync::Arc<EndpointSlice>],
    ) -> bool {
        let key = ObjectKey::from_obj(service);
        let service_uid = service.metadata.uid.clone().unwrap_or_default();
        let mut inner = self.inner.lock();
        if let Some(tracked) = inner.service_uids.get(&key) {
            if !tracked.is_empty() && !service_uid.is_empty() && *tracked != service_uid {
                inner.generations.remove(&key);
            }
        }
        inner.service_uids.insert(key.clone(), service_uid);
        let Some(expected) = inner.generations.get(&key) else {
            return false;
        };
        let mut provided = HashMap::new();
        for slice in slices {
            provided.insert(uid(slice), generation(slice));
            if let Some(&g) = expected.get(&uid(slice)) {
                if g == DELETION_EXPECTED || g > generation(slice) {
                    return true;
                }
            }
        }
        expected
            .iter()
            .any(|(u, &g)| g != DELETION_EXPECTED && !provided.contains_key(u))
    }

    /// Records the generation of a slice this controller just wrote.
    pub fn update(&self, slice: &EndpointSlice) {
        let mut inner = self.inner.lock();
        inner
            .generations
            .entry(service_of(slice))
            .or_default()
            .insert(uid(slice), generation(slice));
    }

    /// Records that this controller deleted `slice`.
    pub fn expect_deletion(&self, slice: &EndpointSlice) {
        let mut inner = self.inner.lock();
        inner
            .generations
            .entry(service_of(slice))
            .or_default()
            .insert(uid(slice), DELETION_EXPECTED);
    }

    /// Forgets `slice`, which is gone; returns whether this controller expected that.
    pub fn handle_deletion(&self, slice: &EndpointSlice) -> bool {
        let mut inner = self.inner.lock();
        if let Some(g) = inner.generations.get_mut(&service_of(slice)) {
            if let Some(expected) = g.remove(&uid(slice)) {
                return expected == DELETION_EXPECTED;
            }
        }
        true
    }

    /// Forgets the Service `key`.
    pub fn delete_service(&self, key: &ObjectKey) {
        let mut inner = self.inner.lock();
        inner.generations.remove(key);
        inner.service_uids.remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::podendpoints::fixtures::service;
    use std::sync::Arc;

    fn slice(uid: &str, generation: i64) -> EndpointSlice {
        let mut s = EndpointSlice::default();
        s.metadata.namespace = Some("ns".into());
        s.metadata.name = Some(format!("web-{uid}"));
        s.metadata.uid = Some(uid.into());
        s.metadata.generation = Some(generation);
        s.metadata.labels = Some([(SERVICE_NAME_LABEL.to_string(), "web".to_string())].into());
        s
    }

    /// Ported from endpointslice_tracker_test.go `TestEndpointSliceTrackerUpdate`,
    /// `TestEndpointSliceTrackerStaleSlices` and `TestEndpointSliceTrackerDeletion`.
    #[test]
    fn generations_tell_own_writes_from_a_lagging_cache() {
        let t = EndpointSliceTracker::default();
        let svc = service("web", Some(&[("app", "web")]));
        let a1 = slice("a", 1);
        assert!(t.should_sync(&a1));
        assert!(!t.has(&a1));
        t.update(&a1);
        assert!(t.has(&a1));
        assert!(!t.should_sync(&a1));
        assert!(t.should_sync(&slice("a", 2)));

        // The cache holds what was written: not stale.
        assert!(!t.stale_slices(&svc, &[Arc::new(a1.clone())]));
        // Written generation 2, cache still at 1: stale.
        t.update(&slice("a", 2));
        assert!(t.stale_slices(&svc, &[Arc::new(a1.clone())]));
        // A written slice missing from the cache: stale.
        assert!(t.stale_slices(&svc, &[]));
        // A deleted one still in the cache: stale; gone: not.
        t.expect_deletion(&slice("a", 2));
        assert!(t.stale_slices(&svc, &[Arc::new(slice("a", 2))]));
        assert!(!t.stale_slices(&svc, &[]));
        assert!(t.handle_deletion(&slice("a", 2)));
        assert!(!t.has(&a1));

        // A deletion nobody expected.
        t.update(&slice("b", 1));
        assert!(!t.handle_deletion(&slice("b", 1)));
        // Untracked: expected, as far as the tracker knows.
        assert!(t.handle_deletion(&slice("c", 1)));
    }

    /// Ported from `TestEndpointSliceTrackerStaleSlicesServiceRecreated`.
    #[test]
    fn a_recreated_service_does_not_inherit_the_old_ones_writes() {
        let t = EndpointSliceTracker::default();
        let svc = service("web", Some(&[("app", "web")]));
        assert!(!t.stale_slices(&svc, &[]));
        t.update(&slice("a", 3));
        assert!(t.stale_slices(&svc, &[]));
        let mut recreated = svc.clone();
        recreated.metadata.uid = Some("new-uid".into());
        assert!(!t.stale_slices(&recreated, &[]));
        t.delete_service(&ObjectKey::new("ns", "web"));
        assert!(t.should_sync(&slice("a", 3)));
    }
}
