//! The soak's load: writer tasks creating, updating and deleting ConfigMaps at a steady rate,
//! and watcher tasks following each namespace, both recording what the server answered.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchParams};
use kube::core::WatchEvent;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;
use tokio::sync::watch;

use super::checker::{Event, Key, Outcome, StreamEnd, WatchStep, WatcherLog, Write};

/// A write and when it was issued, with its latency when acknowledged.
pub struct Timed {
    /// The write and its outcome.
    pub write: Write,
    /// Time from the start of the load to the request.
    pub issued: Duration,
    /// Time to the answer, for acknowledged writes.
    pub latency: Option<Duration>,
    /// Why the write was refused or its outcome is unknown (status code and reason, or the
    /// client's error).
    pub error: Option<String>,
}

/// resourceVersion of an object the server returned; `None` when absent or not a number.
fn rv_of(cm: &ConfigMap) -> Option<u64> {
    cm.metadata.resource_version.as_deref()?.parse().ok()
}

fn value_of(cm: &ConfigMap) -> Option<String> {
    cm.data.as_ref()?.get("v").cloned()
}

/// The outcome of a request: acknowledged with the object's resourceVersion, refused (a 4xx
/// other than 408 and 429, which are treated as unknown: always safe, only less strict), or
/// unknown (no answer, a 5xx).
fn outcome<T>(result: &Result<T, kube::Error>, rv: impl Fn(&T) -> Option<u64>) -> Outcome {
    match result {
        Ok(obj) => match rv(obj) {
            Some(rv) => Outcome::Acked { rv },
            None => Outcome::AckedWithoutRv,
        },
        Err(kube::Error::Api(e))
            if (400..500).contains(&e.code) && ![408, 429].contains(&e.code) =>
        {
            Outcome::Refused
        }
        Err(_) => Outcome::Unknown,
    }
}

/// Why a write failed, for the report: the status code and reason, or the client's error
/// (shortened).
fn error_reason<T>(result: &Result<T, kube::Error>) -> String {
    match result {
        Ok(_) => "acknowledged".to_string(),
        Err(kube::Error::Api(e)) => format!("{} {}", e.code, e.reason),
        Err(e) => {
            let text = e.to_string();
            text.chars().take(60).collect()
        }
    }
}

/// One writer: owns `keys`, and every `period` writes one of them — a create when it believes
/// the key absent, else an update (4 in 5) or a delete. A 404 or 409 corrects its belief.
pub async fn writer(
    api_of: impl Fn(&str) -> Api<ConfigMap>,
    keys: Vec<Key>,
    period: Duration,
    seed: u64,
    started: Instant,
    stop: watch::Receiver<bool>,
) -> Vec<Timed> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut present = vec![false; keys.len()];
    let mut counter = 0u64;
    let mut out = Vec::new();
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    while !*stop.borrow() {
        tick.tick().await;
        if keys.is_empty() {
            break;
        }
        let i = rng.random_range(0..keys.len());
        let key = &keys[i];
        let api = api_of(&key.namespace);
        counter += 1;
        let value = format!("{}#{counter}", key.name);
        let issued = started.elapsed();
        let at = Instant::now();
        let (value, outcome, reason) = if !present[i] {
            let cm: ConfigMap = match serde_json::from_value(json!({
                "metadata": {"name": key.name},
                "data": {"v": value},
            })) {
                Ok(cm) => cm,
                Err(_) => continue,
            };
            let r = api.create(&PostParams::default(), &cm).await;
            let o = outcome(&r, rv_of);
            present[i] = !matches!(o, Outcome::Refused) || is_code(&r, 409);
            (Some(value), o, error_reason(&r))
        } else if rng.random_range(0..5) < 4 {
            let patch = json!({"data": {"v": value}});
            let r = api
                .patch(&key.name, &PatchParams::default(), &Patch::Merge(&patch))
                .await;
            let o = outcome(&r, rv_of);
            present[i] = !is_code(&r, 404);
            (Some(value), o, error_reason(&r))
        } else {
            let r = api.delete(&key.name, &DeleteParams::default()).await;
            // As on kube, a ConfigMap's delete answers with a Status (no resourceVersion).
            let o = outcome(&r, |e| e.as_ref().left().and_then(rv_of));
            present[i] = false;
            (None, o, error_reason(&r))
        };
        let latency = matches!(outcome, Outcome::Acked { .. } | Outcome::AckedWithoutRv)
            .then(|| at.elapsed());
        out.push(Timed {
            write: Write {
                key: key.clone(),
                value,
                outcome,
                issued,
                answered: started.elapsed(),
            },
            issued,
            latency,
            error: matches!(outcome, Outcome::Unknown | Outcome::Refused).then_some(reason),
        });
    }
    out
}

fn is_code<T>(r: &Result<T, kube::Error>, code: u16) -> bool {
    matches!(r, Err(kube::Error::Api(e)) if e.code == code)
}

/// Lists `api`'s namespace: resourceVersion and name → `data.v`.
pub async fn list(api: &Api<ConfigMap>) -> Result<(u64, BTreeMap<String, String>), kube::Error> {
    let list = api.list(&ListParams::default()).await?;
    let rv = list
        .metadata
        .resource_version
        .as_deref()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let items = list
        .items
        .iter()
        .filter_map(|cm| Some((cm.metadata.name.clone()?, value_of(cm)?)))
        .collect();
    Ok((rv, items))
}

/// Until told to stop: what resourceVersion the watcher must reach before it may stop.
pub type StopAt = watch::Receiver<Option<u64>>;

/// One watcher of `namespace`: lists, watches from the list's resourceVersion, resumes from
/// the last resourceVersion seen when a stream ends, relists after a 410 Gone. Stops once told
/// to and caught up with the target resourceVersion, or at `deadline` after being told.
pub async fn watcher(
    api: Api<ConfigMap>,
    namespace: String,
    mut stop_at: StopAt,
    give_up: Duration,
) -> WatcherLog {
    let mut steps = Vec::new();
    let mut position: Option<u64> = None;
    let mut told: Option<Instant> = None;
    let done = |position: Option<u64>, target: Option<u64>| match (position, target) {
        (Some(p), Some(t)) => p >= t,
        _ => false,
    };
    loop {
        let target = *stop_at.borrow();
        if target.is_some() {
            let since = *told.get_or_insert_with(Instant::now);
            if done(position, target) || since.elapsed() > give_up {
                break;
            }
        }
        let Some(from) = position else {
            match list(&api).await {
                Ok((rv, items)) => {
                    steps.push(WatchStep::List { rv, items });
                    position = Some(rv);
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
            }
            continue;
        };
        let params = WatchParams::default().timeout(30);
        let mut events = Vec::new();
        let mut last = from;
        let end = match api.watch(&params, &from.to_string()).await {
            Err(_) => StreamEnd::Broken,
            Ok(stream) => {
                let mut stream = stream.boxed();
                loop {
                    let next = tokio::select! {
                        next = stream.try_next() => next,
                        changed = stop_at.changed() => {
                            if changed.is_err() || done(Some(last), *stop_at.borrow()) {
                                break StreamEnd::Stopped;
                            }
                            continue;
                        }
                    };
                    match next {
                        Ok(Some(WatchEvent::Added(cm))) | Ok(Some(WatchEvent::Modified(cm))) => {
                            push(&mut events, &mut last, &cm, value_of(&cm))
                        }
                        Ok(Some(WatchEvent::Deleted(cm))) => {
                            push(&mut events, &mut last, &cm, None)
                        }
                        Ok(Some(WatchEvent::Bookmark(_))) => {}
                        Ok(Some(WatchEvent::Error(e))) if e.code == 410 => break StreamEnd::Gone,
                        Ok(Some(WatchEvent::Error(_))) | Err(_) => break StreamEnd::Broken,
                        Ok(None) => break StreamEnd::Closed,
                    }
                    if done(Some(last), *stop_at.borrow()) {
                        break StreamEnd::Stopped;
                    }
                }
            }
        };
        steps.push(WatchStep::Stream { from, events, end });
        position = match end {
            StreamEnd::Gone => None,
            _ => Some(last),
        };
        match end {
            StreamEnd::Stopped => break,
            // A refused or broken watch while the server restarts: not too fast a retry loop.
            StreamEnd::Broken => tokio::time::sleep(Duration::from_millis(100)).await,
            _ => {}
        }
    }
    WatcherLog { namespace, steps }
}

fn push(events: &mut Vec<Event>, last: &mut u64, cm: &ConfigMap, value: Option<String>) {
    let rv = rv_of(cm).unwrap_or(0);
    *last = (*last).max(rv);
    events.push(Event {
        rv,
        name: cm.metadata.name.clone().unwrap_or_default(),
        value,
    });
}

/// Name of the ConfigMap [`fence`] writes.
pub const FENCE: &str = "fence";

/// One last write in `api`'s namespace, sent once every writer has stopped, so that its
/// resourceVersion bounds every delete's and the watchers have a last write to reach. Applied
/// (server-side apply, so a retry after an unknown outcome is harmless) until acknowledged or
/// `within` passes; every attempt is recorded.
pub async fn fence(
    api: &Api<ConfigMap>,
    namespace: &str,
    started: Instant,
    within: Duration,
) -> anyhow::Result<Vec<Timed>> {
    let body = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": FENCE},
        "data": {"v": "fence"},
    });
    let params = PatchParams::apply("rkcm-bench-soak").force();
    let deadline = Instant::now() + within;
    let mut out = Vec::new();
    loop {
        let issued = started.elapsed();
        let at = Instant::now();
        let r = api.patch(FENCE, &params, &Patch::Apply(&body)).await;
        let o = outcome(&r, rv_of);
        out.push(Timed {
            write: Write {
                key: Key {
                    namespace: namespace.to_string(),
                    name: FENCE.to_string(),
                },
                value: Some("fence".to_string()),
                outcome: o,
                issued,
                answered: started.elapsed(),
            },
            issued,
            latency: matches!(o, Outcome::Acked { .. }).then(|| at.elapsed()),
            error: matches!(o, Outcome::Unknown | Outcome::Refused).then(|| error_reason(&r)),
        });
        match (o, r) {
            (Outcome::Acked { .. }, _) => return Ok(out),
            (_, Err(e)) if Instant::now() > deadline => {
                return Err(e).context(format!("writing the fence of {namespace}"))
            }
            _ => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}
