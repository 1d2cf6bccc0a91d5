//! The availability controller (kube-aggregator's `controllers/status`, local and remote): one
//! loop in the API server that gives every APIService its `Available` condition and publishes
//! the remote ones to the proxy and to discovery.
//!
//! A pass looks at every APIService; it runs at start, after each change of an APIService, of
//! a Service an APIService names or of an EndpointSlice in its namespace, and every 30 s (kube's
//! resync of APIServices, which notices a server that stopped answering). While a check fails,
//! passes come sooner, from 1 s doubling up to 30 s (kube requeues failures with backoff).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use rkcm_apimachinery::catalog::{self, ResourceInfo};
use rkcm_server::webhook::ServiceRef;

use super::available::{self, Condition};
use super::check;
use super::remote::{self, Aggregator, Remote};
use crate::object;
use crate::rest;
use crate::store::Store;
use crate::watch_cache::{CachedObject, Next};

/// How often every APIService is checked again.
pub const RESYNC: Duration = Duration::from_secs(30);
/// The first delay before checking again after a failure.
const FIRST_RETRY: Duration = Duration::from_secs(1);

fn info(api_version: &str, kind: &str) -> &'static ResourceInfo {
    catalog::by_kind(api_version, kind)
        .expect("APIServices, Services and EndpointSlices are in the catalog")
}

fn apiservices() -> &'static ResourceInfo {
    info("apiregistration.k8s.io/v1", "APIService")
}

fn services() -> &'static ResourceInfo {
    info("v1", "Service")
}

fn endpoint_slices() -> &'static ResourceInfo {
    info("discovery.k8s.io/v1", "EndpointSlice")
}

/// What one pass found.
#[derive(Debug, Default)]
struct Outcome {
    /// Whether every remote APIService is available.
    healthy: bool,
    /// Storage keys of the Services named by APIServices.
    services: BTreeSet<String>,
    /// Storage prefixes of the EndpointSlices of their namespaces.
    slices: BTreeSet<String>,
}

impl Outcome {
    fn concerns(&self, key: &str) -> bool {
        self.services.contains(key) || self.slices.iter().any(|p| key.starts_with(p.as_str()))
    }
}

/// The delay before the next pass: [`RESYNC`], or a backoff while something fails.
fn next_delay(failures: u32) -> Duration {
    if failures == 0 {
        return RESYNC;
    }
    FIRST_RETRY
        .saturating_mul(1 << failures.saturating_sub(1).min(5))
        .min(RESYNC)
}

/// Runs until `shutdown`, keeping the APIServices' `Available` condition and the table of
/// `aggregator` up to date.
pub async fn run(store: Store, aggregator: Arc<Aggregator>, shutdown: CancellationToken) {
    let watch = |prefix: String| store.cache().watch(&prefix, None);
    loop {
        let subs = (
            watch(rest::prefix(apiservices(), None)),
            watch(rest::prefix(services(), None)),
            watch(rest::prefix(endpoint_slices(), None)),
        );
        let (Ok(mut apis), Ok(mut svcs), Ok(mut slices)) = subs else {
            tracing::warn!("cannot watch APIServices, Services and EndpointSlices; retrying");
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(FIRST_RETRY) => continue,
            }
        };
        let mut failures = 0u32;
        let Some(mut outcome) = until_shutdown(pass(&store, &aggregator), &shutdown).await else {
            return;
        };
        'subscribed: loop {
            failures = if outcome.healthy {
                0
            } else {
                failures.saturating_add(1)
            };
            // Events that concern no APIService do not postpone the next pass.
            let due = tokio::time::Instant::now() + next_delay(failures);
            'waiting: loop {
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    _ = tokio::time::sleep_until(due) => break 'waiting,
                    next = apis.next() => match next {
                        Next::Events(_) => break 'waiting,
                        Next::Expired(_) | Next::TooSlow => break 'subscribed,
                        Next::Closed => return,
                    },
                    next = svcs.next() => match next {
                        Next::Events(events) if events.iter().any(|e| outcome.concerns(&e.key)) => break 'waiting,
                        Next::Events(_) => {}
                        Next::Expired(_) | Next::TooSlow => break 'subscribed,
                        Next::Closed => return,
                    },
                    next = slices.next() => match next {
                        Next::Events(events) if events.iter().any(|e| outcome.concerns(&e.key)) => break 'waiting,
                        Next::Events(_) => {}
                        Next::Expired(_) | Next::TooSlow => break 'subscribed,
                        Next::Closed => return,
                    },
                }
            }
            match until_shutdown(pass(&store, &aggregator), &shutdown).await {
                Some(next) => outcome = next,
                None => return,
            }
        }
    }
}

/// `work`'s output, or `None` once `shutdown` is cancelled: a pass waits on the network, and
/// shutdown does not wait for it.
async fn until_shutdown<T>(
    work: impl std::future::Future<Output = T>,
    shutdown: &CancellationToken,
) -> Option<T> {
    tokio::select! {
        _ = shutdown.cancelled() => None,
        out = work => Some(out),
    }
}

/// Checks every APIService (the remote ones concurrently), publishes the remote ones, then
/// writes the conditions that changed: a client that reads a condition finds the proxy
/// already acting on it.
async fn pass(store: &Store, aggregator: &Aggregator) -> Outcome {
    let (listed, _, _) = store
        .cache()
        .list(&rest::prefix(apiservices(), None), None, 0, &|_| true);
    let now = object::now_rfc3339(jiff::Timestamp::now());
    let synced = futures::future::join_all(listed.iter().map(|o| sync(store, o, &now))).await;
    let mut outcome = Outcome {
        healthy: true,
        ..Outcome::default()
    };
    let mut remotes = Vec::new();
    let mut writes = Vec::new();
    for (remote, write) in synced {
        writes.extend(write);
        let Some(remote) = remote else {
            continue;
        };
        outcome.healthy &= remote.available;
        outcome.services.insert(rest::key(
            services(),
            Some(&remote.service.namespace),
            &remote.service.name,
        ));
        outcome.slices.insert(rest::prefix(
            endpoint_slices(),
            Some(&remote.service.namespace),
        ));
        remotes.push(remote);
    }
    aggregator.set(remotes);
    for (name, obj, revision) in writes {
        let key = rest::key(apiservices(), None, &name);
        if let Err(e) = store.update(&key, obj, revision).await {
            // Another writer came first; the watch brings its change and another pass.
            tracing::debug!(apiservice = %name, error = %e, "cannot write the APIService status");
        }
    }
    outcome
}

/// The EndpointSlices of `svc`'s Service (labelled `kubernetes.io/service-name`).
fn slices_of(store: &Store, svc: &ServiceRef) -> Vec<Value> {
    let prefix = rest::prefix(endpoint_slices(), Some(&svc.namespace));
    let (items, _, _) = store.cache().list(&prefix, None, 0, &|_| true);
    items
        .iter()
        .map(|o| o.value())
        .filter(|s| {
            s.pointer("/metadata/labels/kubernetes.io~1service-name")
                .and_then(Value::as_str)
                == Some(svc.name.as_str())
        })
        .collect()
}

/// A status write: the APIService's name, the object with its new status, the revision it
/// was read at.
type Write = (String, Value, i64);

/// Decides the condition of one APIService: the remote one it is, and the write of its status
/// when the condition changed.
async fn sync(
    store: &Store,
    listed: &Arc<CachedObject>,
    now: &str,
) -> (Option<Remote>, Option<Write>) {
    let mut obj = listed.value();
    let name = object::name(&obj).to_string();
    let service = remote::service_ref(&obj);
    let (condition, ready): (Condition, bool) = match &service {
        None => (available::local(), false),
        Some(svc) => {
            let found = store
                .get(&rest::key(services(), Some(&svc.namespace), &svc.name))
                .map(|s| s.value());
            match available::service_condition(svc, found.as_ref(), &slices_of(store, svc)) {
                Some(c) => (c, false),
                None => {
                    let group = obj
                        .pointer("/spec/group")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    let version = obj
                        .pointer("/spec/version")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    let result = check::available(store, svc, group, version).await;
                    if let Err(e) = &result {
                        tracing::debug!(apiservice = %name, error = %e, "discovery check failed");
                    }
                    let ok = result.is_ok();
                    (available::discovery_condition(&result), ok)
                }
            }
        }
    };
    let mut write = None;
    if let Some(status) = available::set_condition(&obj, &condition, now) {
        if available::is_available(&obj) != (condition.status == "True") {
            tracing::info!(apiservice = %name, reason = condition.reason, message = %condition.message, "changing APIService availability");
        }
        obj["status"] = status;
        write = Some((name.clone(), obj.clone(), listed.revision));
    }
    let Some(mut remote) = Remote::from_apiservice(&obj, None) else {
        return (None, write);
    };
    if ready {
        if let Ok(tls) = &remote.tls {
            let (group, version) = (remote.group.clone(), remote.version.clone());
            match check::resources(store, &remote.service, Arc::clone(tls), &group, &version).await
            {
                Ok(list) => remote.resources = Some(list),
                Err(e) => {
                    tracing::debug!(apiservice = %name, error = %e, "cannot fetch the discovery document")
                }
            }
        }
    }
    (Some(remote), write)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_are_checked_again_sooner_up_to_the_resync() {
        assert_eq!(next_delay(0), RESYNC);
        assert_eq!(next_delay(1), Duration::from_secs(1));
        assert_eq!(next_delay(2), Duration::from_secs(2));
        assert_eq!(next_delay(5), Duration::from_secs(16));
        assert_eq!(next_delay(6), RESYNC);
        assert_eq!(next_delay(60), RESYNC);
    }

    #[test]
    fn only_the_named_services_and_their_namespaces_slices_concern_the_controller() {
        let mut outcome = Outcome::default();
        outcome
            .services
            .insert(rest::key(services(), Some("ns"), "api"));
        outcome
            .slices
            .insert(rest::prefix(endpoint_slices(), Some("ns")));
        assert!(outcome.concerns(&rest::key(services(), Some("ns"), "api")));
        assert!(!outcome.concerns(&rest::key(services(), Some("ns"), "other")));
        assert!(outcome.concerns(&rest::key(endpoint_slices(), Some("ns"), "api-x1")));
        assert!(!outcome.concerns(&rest::key(endpoint_slices(), Some("other"), "api-x1")));
    }
}
