//! What kube's apiextensions controllers do for the CRDs of this server, in one loop over the
//! CRDs in the watch cache:
//!
//! - naming (`pkg/controller/status/naming_controller.go`): `status.acceptedNames` and the
//!   NamesAccepted condition, from [`rkcm_apiextensions::crd::accepted_names`];
//! - establishing (`pkg/controller/establish/`): Established once the names are accepted;
//! - finalizing (`pkg/controller/finalizer/crd_finalizer.go`): for a CRD being deleted, the
//!   Terminating condition, deletion of its custom resources, then removal of the
//!   `customresourcecleanup.apiextensions.k8s.io` finalizer;
//! - serving (`customresource_handler.go`, the discovery controller): the served versions of
//!   established CRDs published in [`super::served`] and the catalog overlay.
//!
//! The loop runs after each change of a CRD, and every half second while a CRD waits for its
//! objects to go (objects with finalizers of their own go when those are removed).

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use rkcm_apiextensions::crd::accepted_names;
use rkcm_apimachinery::catalog::{self, ResourceInfo};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::cleanup::{set_condition, CLEANUP_FINALIZER};
use super::served::{self, ServedVersion};
use rkcm_server::rest as keys;
use rkcm_storage::object;
use rkcm_storage::store::Store;
use rkcm_storage::watch_cache::Next;

/// How often a CRD waiting for its objects to go is looked at again.
const CLEANUP_RECHECK: Duration = Duration::from_millis(500);

fn crd_info() -> &'static ResourceInfo {
    catalog::by_kind("apiextensions.k8s.io/v1", "CustomResourceDefinition")
        .expect("customresourcedefinitions are in the catalog")
}

/// Runs until `shutdown`, keeping the CRDs' status and the served custom resources of `owner`
/// (an id from [`rkcm_apimachinery::custom_resources::new_owner`]) up to date.
pub async fn run(store: Store, owner: u64, shutdown: CancellationToken) {
    let prefix = keys::prefix(crd_info(), None);
    loop {
        let mut sub = match store.cache().watch(&prefix, None) {
            Ok(sub) => sub,
            Err(e) => {
                tracing::warn!(error = %e, "cannot watch customresourcedefinitions; retrying");
                tokio::select! {
                    _ = shutdown.cancelled() => break,
                    _ = tokio::time::sleep(Duration::from_secs(1)) => continue,
                }
            }
        };
        let mut pending = reconcile(&store, owner).await;
        loop {
            let recheck = async {
                if pending {
                    tokio::time::sleep(CLEANUP_RECHECK).await;
                } else {
                    std::future::pending::<()>().await;
                }
            };
            tokio::select! {
                _ = shutdown.cancelled() => {
                    served::set(owner, Vec::new());
                    return;
                }
                _ = recheck => {}
                next = sub.next() => match next {
                    // Any change to a CRD: look at every CRD again below.
                    Next::Events(_) => {}
                    // Fell behind: subscribe again and look at everything.
                    Next::Expired(_) | Next::TooSlow => break,
                    Next::Closed => {
                        served::set(owner, Vec::new());
                        return;
                    }
                },
            }
            pending = reconcile(&store, owner).await;
        }
    }
    served::set(owner, Vec::new());
}

/// A CRD as read from the cache, decoded once per pass.
struct Listed {
    value: Value,
    revision: i64,
}

fn list_crds(store: &Store) -> Vec<(Listed, CustomResourceDefinition)> {
    let prefix = keys::prefix(crd_info(), None);
    let (objs, _, _) = store.cache().list(&prefix, None, 0, &|_| true);
    objs.into_iter()
        .filter_map(|o| {
            let value = o.value();
            let crd = serde_json::from_value(value.clone()).ok()?;
            Some((
                Listed {
                    value,
                    revision: o.revision,
                },
                crd,
            ))
        })
        .collect()
}

fn name_of(crd: &CustomResourceDefinition) -> &str {
    crd.metadata.name.as_deref().unwrap_or("")
}

/// One pass over every CRD; returns whether a CRD waits for its objects to go.
async fn reconcile(store: &Store, owner: u64) -> bool {
    let crds = list_crds(store);
    let mut all: Vec<CustomResourceDefinition> = crds.iter().map(|(_, c)| c.clone()).collect();
    // Names first, each CRD seeing the names the ones before it were given in this pass.
    let mut writes: Vec<(usize, Value)> = Vec::new();
    for (i, (cached, crd)) in crds.iter().enumerate() {
        if crd.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let next = with_names(&cached.value, crd, &all);
        if next == cached.value {
            continue;
        }
        if let Ok(updated) = serde_json::from_value(next.clone()) {
            all[i] = updated;
        }
        writes.push((i, next));
    }
    // Served before the status says Established, so that a client that waited for the
    // condition finds the resource.
    let mut versions: Vec<Arc<ServedVersion>> = Vec::new();
    for crd in &all {
        if served::condition_true(crd, "Established") {
            versions.extend(served::versions_of(crd).into_iter().map(Arc::new));
        }
    }
    served::set(owner, versions);
    for (i, next) in writes {
        let (cached, crd) = &crds[i];
        let key = keys::key(crd_info(), None, name_of(crd));
        if let Err(e) = store.update(&key, next, cached.revision).await {
            // Changed meanwhile: the change's event brings another pass.
            tracing::debug!(crd = %key, error = %e, "status update skipped");
        }
    }
    let mut pending = false;
    for (cached, crd) in &crds {
        let deleting = crd.metadata.deletion_timestamp.is_some()
            && object::finalizers(&cached.value)
                .iter()
                .any(|f| f == CLEANUP_FINALIZER);
        if deleting {
            let key = keys::key(crd_info(), None, name_of(crd));
            pending |= !finalize(store, &key, cached, crd).await;
        }
    }
    pending
}

/// `value` (the CRD `crd`) with the names and conditions the naming and establishing
/// controllers give it among `all`.
fn with_names(
    value: &Value,
    crd: &CustomResourceDefinition,
    all: &[CustomResourceDefinition],
) -> Value {
    let result = accepted_names(crd, all);
    let mut next = value.clone();
    if let (Some(m), Ok(names)) = (
        next.as_object_mut(),
        serde_json::to_value(&result.accepted_names),
    ) {
        let status = m.entry("status").or_insert_with(|| json!({}));
        if !status.is_object() {
            *status = json!({});
        }
        status["acceptedNames"] = names;
    }
    let c = &result.names_accepted;
    set_condition(
        &mut next,
        "NamesAccepted",
        &c.status,
        c.reason.as_deref().unwrap_or(""),
        c.message.as_deref().unwrap_or(""),
    );
    let established = served::condition_true(crd, "Established");
    if c.status == "True" && !established {
        // The establishing controller's step, taken at once: nothing else must happen first
        // in a single server.
        set_condition(
            &mut next,
            "Established",
            "True",
            "InitialNamesAccepted",
            "the initial names have been accepted",
        );
    } else if !established {
        let e = &result.established;
        set_condition(
            &mut next,
            "Established",
            &e.status,
            e.reason.as_deref().unwrap_or(""),
            e.message.as_deref().unwrap_or(""),
        );
    }
    next
}

/// The finalizer controller's pass over a CRD being deleted: deletes its objects, and once they
/// are gone removes the cleanup finalizer (and the CRD, if nothing else holds it). Returns
/// whether the CRD is done.
async fn finalize(
    store: &Store,
    key: &str,
    cached: &Listed,
    crd: &CustomResourceDefinition,
) -> bool {
    let name = name_of(crd);
    let remaining = match served::all().into_iter().find(|v| v.crd_name == name) {
        Some(version) => delete_objects(store, version.info).await,
        // Never served: no object can exist.
        None => 0,
    };
    let mut next = cached.value.clone();
    if remaining > 0 {
        set_condition(
            &mut next,
            "Terminating",
            "True",
            "InstanceDeletionInProgress",
            "CustomResource deletion is in progress",
        );
        if next != cached.value {
            let _ = store.update(key, next, cached.revision).await;
        }
        return false;
    }
    let finalizers: Vec<String> = object::finalizers(&cached.value)
        .into_iter()
        .filter(|f| f != CLEANUP_FINALIZER)
        .collect();
    let result = if finalizers.is_empty() {
        store.delete(key, Some(cached.revision)).await.map(|_| ())
    } else {
        set_condition(
            &mut next,
            "Terminating",
            "False",
            "InstanceDeletionCompleted",
            &format!("removed all instances of {name}"),
        );
        object::set_finalizers(&mut next, &finalizers);
        store.update(key, next, cached.revision).await.map(|_| ())
    };
    match result {
        Ok(()) => true,
        Err(e) => {
            tracing::debug!(crd = %key, error = %e, "finalizing deferred");
            false
        }
    }
}

/// Deletes every object of `info` (all versions share one storage prefix); objects with
/// finalizers are marked for deletion and left to their finalizers. Returns how many remain.
async fn delete_objects(store: &Store, info: &'static ResourceInfo) -> usize {
    let prefix = keys::prefix(info, None);
    let (objs, _, _) = store.cache().list(&prefix, None, 0, &|_| true);
    let mut remaining = 0;
    for o in objs {
        let v = &o.value();
        let name = v
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        let ns = v.pointer("/metadata/namespace").and_then(Value::as_str);
        let key = keys::key(info, ns, name);
        if object::finalizers(v).is_empty() {
            if store.delete(&key, Some(o.revision)).await.is_err() {
                remaining += 1;
            }
            continue;
        }
        remaining += 1;
        if !object::is_deleting(v) {
            let mut next = v.clone();
            object::set_meta(
                &mut next,
                "deletionTimestamp",
                json!(object::now_rfc3339(jiff::Timestamp::now())),
            );
            object::set_meta(&mut next, "deletionGracePeriodSeconds", json!(0));
            let _ = store.update(&key, next, o.revision).await;
        }
    }
    remaining
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd(plural: &str, short: &str) -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": format!("{plural}.example.com")},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": plural, "singular": plural.trim_end_matches('s'),
                          "kind": plural.trim_end_matches('s').to_uppercase(),
                          "listKind": format!("{}List", plural.trim_end_matches('s').to_uppercase()),
                          "shortNames": [short]},
                "versions": [{"name": "v1", "served": true, "storage": true}]}
        })
    }

    fn typed(v: &Value) -> CustomResourceDefinition {
        serde_json::from_value(v.clone()).expect("a CRD")
    }

    fn condition<'a>(v: &'a Value, type_: &str) -> &'a Value {
        v["status"]["conditions"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["type"] == type_))
            .unwrap_or(&Value::Null)
    }

    #[test]
    fn free_names_are_accepted_and_the_crd_established() {
        let foos = crd("foos", "fo");
        let next = with_names(&foos, &typed(&foos), &[typed(&foos)]);
        assert_eq!(next["status"]["acceptedNames"]["plural"], "foos");
        assert_eq!(next["status"]["acceptedNames"]["shortNames"], json!(["fo"]));
        assert_eq!(condition(&next, "NamesAccepted")["status"], "True");
        assert_eq!(condition(&next, "Established")["status"], "True");
        assert_eq!(
            condition(&next, "Established")["reason"],
            "InitialNamesAccepted"
        );
        // A second pass changes nothing, transition times included.
        let again = with_names(&next, &typed(&next), &[typed(&next)]);
        assert_eq!(again, next);
    }

    #[test]
    fn a_short_name_taken_in_the_group_is_a_conflict_and_nothing_is_established() {
        let foos = crd("foos", "x");
        let foos = with_names(&foos, &typed(&foos), &[typed(&foos)]);
        let bars = crd("bars", "x");
        let all = [typed(&foos), typed(&bars)];
        let next = with_names(&bars, &typed(&bars), &all);
        assert_eq!(condition(&next, "NamesAccepted")["status"], "False");
        assert_eq!(
            condition(&next, "NamesAccepted")["reason"],
            "ShortNamesConflict"
        );
        assert_eq!(condition(&next, "Established")["status"], "False");
        assert!(!served::condition_true(&typed(&next), "Established"));
    }
}
