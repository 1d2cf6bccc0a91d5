//! Event recorder that writes core/v1 Events without ever blocking its caller. Mirrors client-go
//! `tools/record` (event.go, events_cache.go).
//!
//! A controller holds an [`EventRecorder`]; each call builds an Event and hands it to a bounded
//! queue (full queue: the event is dropped and counted). One sink task per [`EventBroadcaster`]
//! runs every event through the [`EventCorrelator`] (spam filter, aggregation of similar events,
//! de-duplication into a `count` on the existing Event) and writes it to the API server, retrying
//! transport errors.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use parking_lot::Mutex;
use rand::Rng;
use serde_json::json;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::{Clock, Shutdown, SystemClock};

/// Capacity of the broadcaster's queue (client-go's `maxQueuedEvents`).
pub const MAX_QUEUED_EVENTS: usize = 1000;
/// Entries of each correlator cache (client-go's `maxLruCacheEntries`).
const MAX_LRU_CACHE_ENTRIES: usize = 4096;
/// Similar events (differing only by message) within the interval before they are aggregated.
const AGGREGATE_MAX_EVENTS: usize = 10;
/// The aggregation window.
const AGGREGATE_INTERVAL: Duration = Duration::from_secs(600);
/// Events a source may burst about one object.
const SPAM_BURST: f64 = 25.0;
/// Refill rate of the per-object budget: one event every five minutes.
const SPAM_QPS: f64 = 1.0 / 300.0;

/// The type of an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventType {
    /// Routine: something happened as expected.
    Normal,
    /// Something may need attention.
    Warning,
}

impl EventType {
    /// `"Normal"` or `"Warning"`.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

impl fmt::Display for EventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Tunables of an [`EventBroadcaster`]; the defaults are client-go's.
#[derive(Clone)]
pub struct EventBroadcasterConfig {
    /// Queue capacity; events beyond it are dropped.
    pub queue_len: usize,
    /// Attempts per event on transport errors (client-go's `maxTriesPerEvent`).
    pub max_tries: u32,
    /// Sleep between attempts (the first sleep is randomized in `[0, sleep)`).
    pub retry_sleep: Duration,
    /// Clock for event timestamps and the correlator.
    pub clock: Arc<dyn Clock>,
}

impl Default for EventBroadcasterConfig {
    fn default() -> Self {
        Self {
            queue_len: MAX_QUEUED_EVENTS,
            max_tries: 12,
            retry_sleep: Duration::from_secs(10),
            clock: Arc::new(SystemClock),
        }
    }
}

impl fmt::Debug for EventBroadcasterConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventBroadcasterConfig")
            .field("queue_len", &self.queue_len)
            .field("max_tries", &self.max_tries)
            .field("retry_sleep", &self.retry_sleep)
            .finish()
    }
}

/// Where correlated events are written.
#[async_trait]
pub trait EventSink: Send + Sync + 'static {
    /// Creates `event` in its namespace.
    async fn create(&self, event: &Event) -> Result<Event, kube::Error>;
    /// Applies a strategic-merge `patch` to the existing `event`.
    async fn patch(&self, event: &Event, patch: &serde_json::Value) -> Result<Event, kube::Error>;
}

/// Writes events to core/v1 `Events` through a kube client.
#[derive(Clone)]
pub struct ApiEventSink {
    client: Client,
}

impl ApiEventSink {
    /// A sink writing through `client`.
    pub fn new(client: Client) -> Self {
        Self { client }
    }

    fn api(&self, event: &Event) -> Api<Event> {
        let ns = event.metadata.namespace.as_deref().unwrap_or("default");
        Api::namespaced(self.client.clone(), ns)
    }
}

#[async_trait]
impl EventSink for ApiEventSink {
    async fn create(&self, event: &Event) -> Result<Event, kube::Error> {
        self.api(event).create(&PostParams::default(), event).await
    }

    async fn patch(&self, event: &Event, patch: &serde_json::Value) -> Result<Event, kube::Error> {
        let name = event.metadata.name.as_deref().unwrap_or_default();
        self.api(event)
            .patch(name, &PatchParams::default(), &Patch::Strategic(patch))
            .await
    }
}

/// Owns the event queue and the task that writes queued events to a sink.
///
/// Recorders from [`EventBroadcaster::recorder`] never block: when the queue is full the event is
/// dropped and counted in [`EventBroadcaster::dropped`].
pub struct EventBroadcaster {
    tx: mpsc::Sender<Event>,
    dropped: Arc<AtomicU64>,
    clock: Arc<dyn Clock>,
    stop: Shutdown,
    task: JoinHandle<()>,
}

impl fmt::Debug for EventBroadcaster {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventBroadcaster")
            .field("dropped", &self.dropped())
            .finish()
    }
}

impl EventBroadcaster {
    /// A broadcaster writing core/v1 Events through `client`, with client-go's defaults.
    /// Must be called within a tokio runtime.
    pub fn new(client: Client) -> Self {
        Self::with_sink(
            Arc::new(ApiEventSink::new(client)),
            EventBroadcasterConfig::default(),
        )
    }

    /// A broadcaster writing to `sink`, configured by `config`.
    pub fn with_sink(sink: Arc<dyn EventSink>, config: EventBroadcasterConfig) -> Self {
        let (tx, rx) = mpsc::channel(config.queue_len.max(1));
        let stop = Shutdown::new();
        let correlator = EventCorrelator::new(Arc::clone(&config.clock));
        let task = tokio::spawn(sink_loop(
            rx,
            sink,
            correlator,
            config.clone(),
            stop.clone(),
        ));
        Self {
            tx,
            dropped: Arc::new(AtomicU64::new(0)),
            clock: config.clock,
            stop,
            task,
        }
    }

    /// A recorder whose events carry `component` as their source and reporting component.
    pub fn recorder(&self, component: &str) -> EventRecorder {
        EventRecorder {
            tx: self.tx.clone(),
            dropped: Arc::clone(&self.dropped),
            component: Arc::from(component),
            clock: Arc::clone(&self.clock),
        }
    }

    /// Events dropped because the queue was full.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Stops accepting new events from this handle, writes what is queued (one attempt each, no
    /// retry sleeps) and waits for the sink task. Recorders still alive keep their queue open;
    /// their later events are dropped with the task.
    pub async fn shutdown(self) {
        self.stop.cancel();
        drop(self.tx);
        if let Err(err) = self.task.await {
            tracing::error!(error = %err, "event sink task failed");
        }
    }
}

/// Records events about objects. Cheap to clone; never blocks.
#[derive(Clone)]
pub struct EventRecorder {
    tx: mpsc::Sender<Event>,
    dropped: Arc<AtomicU64>,
    component: Arc<str>,
    clock: Arc<dyn Clock>,
}

impl fmt::Debug for EventRecorder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventRecorder")
            .field("component", &self.component)
            .finish()
    }
}

impl EventRecorder {
    /// A recorder feeding a plain channel instead of a broadcaster, for tests: every event it
    /// records arrives, uncorrelated, on the returned receiver (until `capacity` is reached).
    pub fn channel(component: &str, capacity: usize) -> (Self, mpsc::Receiver<Event>) {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        let recorder = Self {
            tx,
            dropped: Arc::new(AtomicU64::new(0)),
            component: Arc::from(component),
            clock: Arc::new(SystemClock),
        };
        (recorder, rx)
    }

    /// Records an event about `obj` (a reference is built from its type and metadata).
    pub fn event_for<K: kube::Resource<DynamicType = ()>>(
        &self,
        obj: &K,
        type_: EventType,
        reason: &str,
        message: impl Into<String>,
    ) {
        self.event(&obj.object_ref(&()), type_, reason, message);
    }

    /// Records an event about `object`. Returns at once; the event may be dropped if the queue is
    /// full or the broadcaster has shut down.
    pub fn event(
        &self,
        object: &ObjectReference,
        type_: EventType,
        reason: &str,
        message: impl Into<String>,
    ) {
        let event = make_event(
            object,
            &self.component,
            self.clock.now(),
            type_,
            reason,
            message.into(),
        );
        if let Err(err) = self.tx.try_send(event) {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            let event = match &err {
                mpsc::error::TrySendError::Full(e) | mpsc::error::TrySendError::Closed(e) => e,
            };
            tracing::debug!(
                reason = event.reason.as_deref().unwrap_or_default(),
                object = event.involved_object.name.as_deref().unwrap_or_default(),
                "event dropped: queue full or closed"
            );
        }
    }
}

/// Builds the Event the recorder queues (client-go's `makeEvent`).
fn make_event(
    object: &ObjectReference,
    component: &str,
    now: Timestamp,
    type_: EventType,
    reason: &str,
    message: String,
) -> Event {
    let namespace = object
        .namespace
        .clone()
        .filter(|ns| !ns.is_empty())
        .unwrap_or_else(|| "default".to_string());
    let object_name = object.name.as_deref().unwrap_or_default();
    Event {
        metadata: ObjectMeta {
            name: Some(format!("{object_name}.{:x}", now.as_nanosecond())),
            namespace: Some(namespace),
            ..Default::default()
        },
        involved_object: object.clone(),
        reason: Some(reason.to_string()),
        message: Some(message),
        first_timestamp: Some(Time(now)),
        last_timestamp: Some(Time(now)),
        count: Some(1),
        type_: Some(type_.as_str().to_string()),
        source: Some(EventSource {
            component: Some(component.to_string()),
            host: None,
        }),
        reporting_component: Some(component.to_string()),
        reporting_instance: None,
        ..Default::default()
    }
}

async fn sink_loop(
    mut rx: mpsc::Receiver<Event>,
    sink: Arc<dyn EventSink>,
    correlator: EventCorrelator,
    config: EventBroadcasterConfig,
    stop: Shutdown,
) {
    loop {
        let event = tokio::select! {
            biased;
            event = rx.recv() => event,
            // Recorders may outlive the broadcaster: on shutdown, write what is queued and stop.
            _ = stop.cancelled() => rx.try_recv().ok(),
        };
        let Some(event) = event else { return };
        // kube-controller-manager also logs every event (StartStructuredLogging).
        tracing::debug!(
            object = %format!(
                "{}/{}",
                s(&event.involved_object.namespace),
                s(&event.involved_object.name)
            ),
            kind = s(&event.involved_object.kind),
            type_ = s(&event.type_),
            reason = s(&event.reason),
            message = s(&event.message),
            "event"
        );
        let result = correlator.correlate(event);
        if result.skip {
            continue;
        }
        let mut tries = 0;
        loop {
            if record_event(&*sink, &result.event, result.patch.as_ref(), &correlator).await {
                break;
            }
            tries += 1;
            if tries >= config.max_tries || stop.is_cancelled() {
                tracing::error!(
                    reason = result.event.reason.as_deref().unwrap_or_default(),
                    "unable to write event (retry limit exceeded)"
                );
                break;
            }
            // Randomize the first sleep so that clients do not retry in lockstep after an outage.
            let sleep = if tries == 1 {
                config
                    .retry_sleep
                    .mul_f64(rand::rng().random_range(0.0..1.0))
            } else {
                config.retry_sleep
            };
            tokio::select! {
                _ = stop.cancelled() => {}
                _ = tokio::time::sleep(sleep) => {}
            }
        }
    }
}

/// Writes one event; `true` if it was written or must not be retried (client-go `recordEvent`).
async fn record_event(
    sink: &dyn EventSink,
    event: &Event,
    patch: Option<&serde_json::Value>,
    correlator: &EventCorrelator,
) -> bool {
    let mut result = None;
    if let Some(patch) = patch.filter(|_| event.count.unwrap_or(1) > 1) {
        result = Some(sink.patch(event, patch).await);
    }
    // The patched event may have been removed; then create it afresh.
    let needs_create = match &result {
        None => true,
        Some(Err(kube::Error::Api(status))) => status.code == 404,
        Some(_) => false,
    };
    if needs_create {
        let mut fresh = event.clone();
        fresh.metadata.resource_version = None;
        result = Some(sink.create(&fresh).await);
    }
    match result {
        Some(Ok(written)) => {
            correlator.update_state(&written);
            true
        }
        // The server looked at the event and refused it: retrying will not help.
        Some(Err(err @ kube::Error::Api(_))) => {
            let message = crate::api_error::message(&err);
            if crate::api_error::is_already_exists(&err)
                || crate::api_error::is_namespace_terminating(&err)
            {
                tracing::debug!(%message, "server rejected event (will not retry)");
            } else {
                tracing::error!(%message, "server rejected event (will not retry)");
            }
            true
        }
        Some(Err(kube::Error::BuildRequest(err))) => {
            tracing::error!(error = %err, "unable to construct event request (will not retry)");
            true
        }
        Some(Err(err)) => {
            tracing::warn!(error = %crate::api_error::message(&err), "unable to write event (may retry after sleeping)");
            false
        }
        None => true,
    }
}

/// A tiny least-recently-used map (the correlator's caches hold at most 4096 entries each).
struct Lru<V> {
    capacity: usize,
    tick: u64,
    entries: HashMap<String, (V, u64)>,
    order: BTreeMap<u64, String>,
}

impl<V> Lru<V> {
    fn new(capacity: usize) -> Self {
        Self {
            capacity,
            tick: 0,
            entries: HashMap::new(),
            order: BTreeMap::new(),
        }
    }

    /// Takes the entry out (the caller puts it back with `put`, marking it most recent).
    fn take(&mut self, key: &str) -> Option<V> {
        let (value, tick) = self.entries.remove(key)?;
        self.order.remove(&tick);
        Some(value)
    }

    fn put(&mut self, key: String, value: V) {
        if let Some((_, tick)) = self.entries.remove(&key) {
            self.order.remove(&tick);
        }
        self.tick += 1;
        self.order.insert(self.tick, key.clone());
        self.entries.insert(key, (value, self.tick));
        while self.entries.len() > self.capacity {
            let Some((_, oldest)) = self.order.pop_first() else {
                break;
            };
            self.entries.remove(&oldest);
        }
    }
}

fn s(v: &Option<String>) -> &str {
    v.as_deref().unwrap_or_default()
}

/// Key of identical events: source, object, type, reason and message (client-go `getEventKey`).
fn event_key(e: &Event) -> String {
    let src = e.source.clone().unwrap_or_default();
    let o = &e.involved_object;
    [
        s(&src.component),
        s(&src.host),
        s(&o.kind),
        s(&o.namespace),
        s(&o.name),
        s(&o.field_path),
        s(&o.uid),
        s(&o.api_version),
        s(&e.type_),
        s(&e.reason),
        s(&e.message),
    ]
    .concat()
}

/// Key of the spam budget: source and object (client-go `getSpamKey`).
fn spam_key(e: &Event) -> String {
    let src = e.source.clone().unwrap_or_default();
    let o = &e.involved_object;
    [
        s(&src.component),
        s(&src.host),
        s(&o.kind),
        s(&o.namespace),
        s(&o.name),
        s(&o.uid),
        s(&o.api_version),
    ]
    .concat()
}

/// Key of similar events (all but the message), and the message (client-go
/// `EventAggregatorByReasonFunc`).
fn aggregate_key(e: &Event) -> (String, String) {
    let src = e.source.clone().unwrap_or_default();
    let o = &e.involved_object;
    let key = [
        s(&src.component),
        s(&src.host),
        s(&o.kind),
        s(&o.namespace),
        s(&o.name),
        s(&o.uid),
        s(&o.api_version),
        s(&e.type_),
        s(&e.reason),
        s(&e.reporting_component),
        s(&e.reporting_instance),
    ]
    .concat();
    (key, s(&e.message).to_string())
}

/// A token bucket over the injectable clock.
struct TokenBucket {
    tokens: f64,
    last: Timestamp,
}

struct AggregateRecord {
    local_keys: HashSet<String>,
    last: Timestamp,
}

struct EventLog {
    count: i32,
    first_timestamp: Option<Time>,
    name: Option<String>,
    resource_version: Option<String>,
}

/// What to do with one event after correlation.
#[derive(Debug)]
pub struct CorrelateResult {
    /// The event to write (possibly an aggregate, possibly with a higher `count`).
    pub event: Event,
    /// If set, strategic-merge patch the existing event (`count`, `lastTimestamp`, `message`).
    pub patch: Option<serde_json::Value>,
    /// Drop the event: the source exhausted its budget for this object.
    pub skip: bool,
}

/// Filters, aggregates and de-duplicates events before they reach the API server
/// (client-go `EventCorrelator`).
///
/// - Aggregation: after 10 events that differ only by message within 600 s, a single event
///   `"(combined from similar events): <msg>"` stands for them.
/// - De-duplication: an identical event increments `count` on the existing Event via a patch.
/// - Spam filter: each source may send 25 events about an object, refilled at one per 5 min.
pub struct EventCorrelator {
    clock: Arc<dyn Clock>,
    state: Mutex<CorrelatorState>,
}

struct CorrelatorState {
    spam: Lru<TokenBucket>,
    aggregate: Lru<AggregateRecord>,
    logs: Lru<EventLog>,
}

impl fmt::Debug for EventCorrelator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventCorrelator").finish_non_exhaustive()
    }
}

impl EventCorrelator {
    /// A correlator with client-go's defaults, reading time from `clock`.
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        Self {
            clock,
            state: Mutex::new(CorrelatorState {
                spam: Lru::new(MAX_LRU_CACHE_ENTRIES),
                aggregate: Lru::new(MAX_LRU_CACHE_ENTRIES),
                logs: Lru::new(MAX_LRU_CACHE_ENTRIES),
            }),
        }
    }

    /// Aggregates, counts and filters `event` (client-go `EventCorrelate`).
    pub fn correlate(&self, event: Event) -> CorrelateResult {
        let now = self.clock.now();
        let mut state = self.state.lock();
        let (aggregated, cache_key) = aggregate(&mut state.aggregate, event, now);
        let (observed, patch) = observe(&mut state.logs, aggregated, &cache_key);
        if spam_filtered(&mut state.spam, &observed, now) {
            return CorrelateResult {
                event: observed,
                patch: None,
                skip: true,
            };
        }
        CorrelateResult {
            event: observed,
            patch,
            skip: false,
        }
    }

    /// Records the server's copy of a written event, so the next duplicate patches it.
    pub fn update_state(&self, event: &Event) {
        let key = event_key(event);
        self.state.lock().logs.put(
            key,
            EventLog {
                count: event.count.unwrap_or(1),
                first_timestamp: event.first_timestamp.clone(),
                name: event.metadata.name.clone(),
                resource_version: event.metadata.resource_version.clone(),
            },
        );
    }
}

/// Returns the event to write and its cache key (the aggregate key for aggregated events).
fn aggregate(cache: &mut Lru<AggregateRecord>, event: Event, now: Timestamp) -> (Event, String) {
    let full_key = event_key(&event);
    let (agg_key, local_key) = aggregate_key(&event);
    let mut record = cache
        .take(&agg_key)
        .filter(|r| now.duration_since(r.last).unsigned_abs() <= AGGREGATE_INTERVAL)
        .unwrap_or_else(|| AggregateRecord {
            local_keys: HashSet::new(),
            last: now,
        });
    record.local_keys.insert(local_key);
    record.last = now;
    let over = record.local_keys.len() >= AGGREGATE_MAX_EVENTS;
    if over {
        // Do not grow the set beyond the maximum.
        if let Some(any) = record.local_keys.iter().next().cloned() {
            record.local_keys.remove(&any);
        }
    }
    cache.put(agg_key.clone(), record);
    if !over {
        return (event, full_key);
    }
    let object_name = s(&event.involved_object.name).to_string();
    let combined = Event {
        metadata: ObjectMeta {
            name: Some(format!("{object_name}.{:x}", now.as_nanosecond())),
            namespace: event.metadata.namespace.clone(),
            ..Default::default()
        },
        count: Some(1),
        first_timestamp: Some(Time(now)),
        last_timestamp: Some(Time(now)),
        involved_object: event.involved_object.clone(),
        message: Some(format!(
            "(combined from similar events): {}",
            s(&event.message)
        )),
        type_: event.type_.clone(),
        reason: event.reason.clone(),
        source: event.source.clone(),
        reporting_component: event.reporting_component.clone(),
        ..Default::default()
    };
    (combined, agg_key)
}

/// Counts repeats of the event under `key`; a repeat gets the first one's name and a patch.
fn observe(
    logs: &mut Lru<EventLog>,
    mut event: Event,
    key: &str,
) -> (Event, Option<serde_json::Value>) {
    let mut patch = None;
    if let Some(last) = logs.take(key).filter(|l| l.count > 0) {
        event.metadata.name = last.name;
        event.metadata.resource_version = last.resource_version;
        event.first_timestamp = last.first_timestamp;
        event.count = Some(last.count + 1);
        patch = Some(json!({
            "count": event.count,
            "lastTimestamp": event.last_timestamp,
            "message": event.message,
        }));
    }
    logs.put(
        key.to_string(),
        EventLog {
            count: event.count.unwrap_or(1),
            first_timestamp: event.first_timestamp.clone(),
            name: event.metadata.name.clone(),
            resource_version: event.metadata.resource_version.clone(),
        },
    );
    (event, patch)
}

/// Whether the source has exhausted its budget for the event's object.
fn spam_filtered(cache: &mut Lru<TokenBucket>, event: &Event, now: Timestamp) -> bool {
    let key = spam_key(event);
    let mut bucket = cache.take(&key).unwrap_or(TokenBucket {
        tokens: SPAM_BURST,
        last: now,
    });
    let elapsed = now.duration_since(bucket.last).as_secs_f64().max(0.0);
    bucket.tokens = (bucket.tokens + elapsed * SPAM_QPS).min(SPAM_BURST);
    bucket.last = now;
    let accepted = bucket.tokens >= 1.0;
    if accepted {
        bucket.tokens -= 1.0;
    }
    cache.put(key, bucket);
    !accepted
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::FakeEventSink;
    use crate::FakeClock;

    fn api_error(code: u16, reason: &str, message: &str) -> kube::Error {
        kube::Error::Api(
            kube::core::Status::failure(message, reason)
                .with_code(code)
                .boxed(),
        )
    }

    #[tokio::test]
    async fn an_expired_event_is_created_afresh_when_its_patch_gets_404() {
        // client-go TestUpdateExpiredEvent: a repeat is a patch of the existing Event; when that
        // Event has expired (404), a new one is posted, without the stale resourceVersion.
        let clock = FakeClock::default();
        let correlator = EventCorrelator::new(Arc::new(clock.clone()));
        let sink = FakeEventSink::new();
        let first = correlator.correlate(event(&clock, "web", "R", "same"));
        assert!(record_event(&sink, &first.event, first.patch.as_ref(), &correlator).await);

        sink.fail_patches(u32::MAX, || api_error(404, "NotFound", ""));
        clock.step(Duration::from_secs(1));
        let repeat = correlator.correlate(event(&clock, "web", "R", "same"));
        assert_eq!(repeat.event.count, Some(2));
        assert!(repeat.event.metadata.resource_version.is_some());
        assert!(
            record_event(&sink, &repeat.event, repeat.patch.as_ref(), &correlator).await,
            "written, nothing left to retry"
        );
        assert_eq!(sink.patch_calls(), 1);
        let created = sink.created();
        assert_eq!(created.len(), 2, "the expired event was posted again");
        assert_eq!(created[1].metadata.resource_version, None);
        assert_eq!(created[1].count, Some(2));
        assert_eq!(created[1].metadata.name, first.event.metadata.name);
    }

    #[tokio::test]
    async fn a_patch_refused_otherwise_is_neither_posted_nor_retried() {
        let clock = FakeClock::default();
        let correlator = EventCorrelator::new(Arc::new(clock.clone()));
        let sink = FakeEventSink::new();
        let first = correlator.correlate(event(&clock, "web", "R", "same"));
        assert!(record_event(&sink, &first.event, first.patch.as_ref(), &correlator).await);
        sink.fail_patches(1, || {
            api_error(422, "Invalid", "Event \"web.1\" is invalid")
        });
        let repeat = correlator.correlate(event(&clock, "web", "R", "same"));
        assert!(record_event(&sink, &repeat.event, repeat.patch.as_ref(), &correlator).await);
        assert_eq!(sink.created().len(), 1);

        // A transport error is retried.
        sink.fail_patches(1, || kube::Error::LinesCodecMaxLineLengthExceeded);
        let again = correlator.correlate(event(&clock, "web", "R", "same"));
        assert!(!record_event(&sink, &again.event, again.patch.as_ref(), &correlator).await);
    }

    fn pod_ref(name: &str) -> ObjectReference {
        ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Pod".into()),
            namespace: Some("ns".into()),
            name: Some(name.into()),
            uid: Some(format!("uid-{name}")),
            ..Default::default()
        }
    }

    fn event(clock: &FakeClock, obj: &str, reason: &str, message: &str) -> Event {
        make_event(
            &pod_ref(obj),
            "replicaset-controller",
            clock.now(),
            EventType::Normal,
            reason,
            message.to_string(),
        )
    }

    #[test]
    fn event_names_the_object_and_lands_in_its_namespace_or_default() {
        let clock = FakeClock::default();
        let e = event(&clock, "web", "SuccessfulCreate", "Created pod: web-1");
        assert!(e
            .metadata
            .name
            .as_deref()
            .unwrap_or_default()
            .starts_with("web."));
        assert_eq!(e.metadata.namespace.as_deref(), Some("ns"));
        assert_eq!(e.count, Some(1));
        assert_eq!(
            e.source.and_then(|s| s.component).as_deref(),
            Some("replicaset-controller")
        );
        let mut node = pod_ref("n1");
        node.namespace = None;
        let e = make_event(&node, "c", clock.now(), EventType::Warning, "R", "m".into());
        assert_eq!(e.metadata.namespace.as_deref(), Some("default"));
        assert_eq!(e.type_.as_deref(), Some("Warning"));
    }

    #[test]
    fn identical_events_are_counted_and_patched_onto_the_first() {
        let clock = FakeClock::default();
        let c = EventCorrelator::new(Arc::new(clock.clone()));
        let first = c.correlate(event(&clock, "web", "R", "same"));
        assert!(!first.skip && first.patch.is_none());
        assert_eq!(first.event.count, Some(1));
        clock.step(Duration::from_secs(5));
        let second = c.correlate(event(&clock, "web", "R", "same"));
        assert_eq!(second.event.count, Some(2));
        assert_eq!(second.event.metadata.name, first.event.metadata.name);
        assert_eq!(second.event.first_timestamp, first.event.first_timestamp);
        let patch = second.patch.expect("a repeat is a patch");
        assert_eq!(patch["count"], 2);
        assert_eq!(patch["message"], "same");
        assert!(patch["lastTimestamp"].is_string());
    }

    #[test]
    fn ten_similar_events_within_ten_minutes_are_combined() {
        let clock = FakeClock::default();
        let c = EventCorrelator::new(Arc::new(clock.clone()));
        for i in 0..9 {
            let r = c.correlate(event(&clock, "web", "R", &format!("msg {i}")));
            assert_eq!(
                r.event.message.as_deref(),
                Some(format!("msg {i}").as_str())
            );
        }
        let tenth = c.correlate(event(&clock, "web", "R", "msg 9"));
        assert_eq!(
            tenth.event.message.as_deref(),
            Some("(combined from similar events): msg 9")
        );
        assert_eq!(tenth.event.count, Some(1));
        let eleventh = c.correlate(event(&clock, "web", "R", "msg 10"));
        assert_eq!(
            eleventh.event.message.as_deref(),
            Some("(combined from similar events): msg 10")
        );
        assert_eq!(eleventh.event.count, Some(2), "aggregate is counted");
        assert_eq!(eleventh.event.metadata.name, tenth.event.metadata.name);

        // After the window, similar events start afresh.
        clock.step(Duration::from_secs(601));
        let later = c.correlate(event(&clock, "web", "R", "msg 11"));
        assert_eq!(later.event.message.as_deref(), Some("msg 11"));
    }

    #[test]
    fn spam_filter_allows_a_burst_of_25_per_object_then_one_per_five_minutes() {
        let clock = FakeClock::default();
        let c = EventCorrelator::new(Arc::new(clock.clone()));
        // Distinct reasons avoid aggregation; the spam key ignores reason and message.
        for i in 0..25 {
            assert!(
                !c.correlate(event(&clock, "web", &format!("R{i}"), "m"))
                    .skip,
                "event {i}"
            );
        }
        assert!(c.correlate(event(&clock, "web", "R25", "m")).skip);
        assert!(
            !c.correlate(event(&clock, "other", "R0", "m")).skip,
            "budgets are per object"
        );
        clock.step(Duration::from_secs(300));
        assert!(!c.correlate(event(&clock, "web", "R26", "m")).skip);
        assert!(c.correlate(event(&clock, "web", "R27", "m")).skip);
    }

    #[test]
    fn lru_evicts_the_least_recently_used_entry() {
        let mut lru = Lru::new(2);
        lru.put("a".into(), 1);
        lru.put("b".into(), 2);
        let a = lru.take("a").expect("present");
        lru.put("a".into(), a);
        lru.put("c".into(), 3);
        assert!(lru.take("b").is_none());
        assert_eq!(lru.take("a"), Some(1));
        assert_eq!(lru.take("c"), Some(3));
    }

    #[tokio::test(start_paused = true)]
    async fn broadcaster_retries_transport_errors_and_patches_repeats() {
        let sink = Arc::new(FakeEventSink::new());
        sink.fail_creates(2, || kube::Error::LinesCodecMaxLineLengthExceeded);
        let clock = FakeClock::default();
        let broadcaster = EventBroadcaster::with_sink(
            sink.clone(),
            EventBroadcasterConfig {
                clock: Arc::new(clock.clone()),
                ..Default::default()
            },
        );
        let recorder = broadcaster.recorder("replicaset-controller");
        recorder.event(
            &pod_ref("web"),
            EventType::Normal,
            "SuccessfulCreate",
            "Created pod: a",
        );
        recorder.event(
            &pod_ref("web"),
            EventType::Normal,
            "SuccessfulCreate",
            "Created pod: a",
        );
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        while sink.patched().is_empty() {
            assert!(
                tokio::time::Instant::now() < deadline,
                "events never written"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let created = sink.created();
        assert_eq!(created.len(), 1);
        assert_eq!(sink.create_calls(), 3, "two transport errors, then written");
        let patched = sink.patched();
        assert_eq!(
            patched[0].0,
            created[0].metadata.name.clone().unwrap_or_default()
        );
        assert_eq!(patched[0].1["count"], 2);
        assert_eq!(broadcaster.dropped(), 0);
        broadcaster.shutdown().await;
    }

    #[tokio::test]
    async fn event_for_references_the_object() {
        let (recorder, mut rx) = EventRecorder::channel("c", 2);
        let pod = k8s_openapi::api::core::v1::Pod {
            metadata: ObjectMeta {
                namespace: Some("ns".into()),
                name: Some("web-1".into()),
                uid: Some("u".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        recorder.event_for(&pod, EventType::Warning, "Failed", "boom");
        let e = rx.recv().await.expect("event");
        assert_eq!(e.involved_object.kind.as_deref(), Some("Pod"));
        assert_eq!(e.involved_object.name.as_deref(), Some("web-1"));
        assert_eq!(e.involved_object.uid.as_deref(), Some("u"));
        assert_eq!(e.metadata.namespace.as_deref(), Some("ns"));
    }

    #[tokio::test]
    async fn a_full_queue_drops_instead_of_blocking() {
        let (recorder, mut rx) = EventRecorder::channel("c", 2);
        for i in 0..5 {
            recorder.event(&pod_ref("web"), EventType::Normal, "R", format!("{i}"));
        }
        assert_eq!(recorder.dropped.load(Ordering::Relaxed), 3);
        assert_eq!(
            rx.recv().await.and_then(|e| e.message).as_deref(),
            Some("0")
        );
    }
}
