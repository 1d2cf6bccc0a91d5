//! The filter's state: the configuration in force, a queue set per priority level, and the
//! handling of one request from classification to its end (`apf_controller.go`, `apf_filter.go`).
//!
//! The configuration is asked of its source at each request; when the source answers a new one,
//! the levels are rebuilt: a level whose name and uid stay keeps its queue set (and its waiting
//! requests) with the new limits, a removed level's requests finish in the set they started in.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::response::{IntoResponse, Response};
use http::{header, HeaderName, HeaderValue, StatusCode};
use parking_lot::{Mutex, RwLock};
use tokio::sync::oneshot;

use crate::auth::authorization::Attributes;

use super::config::{nominal_limits, Config, ConfigSource, LevelKind, Schema};
use super::estimate::{self, ObjectCounts};
use super::metrics::{LevelLimits, Metrics};
use super::queueset::{Decision, Limits, QueueSet, Rejection, Start, Ticket};
use super::retry_after::DroppedRequests;

/// `X-Kubernetes-PF-FlowSchema-UID`: the uid of the schema a request matched.
pub static FLOW_SCHEMA_UID: HeaderName = HeaderName::from_static("x-kubernetes-pf-flowschema-uid");
/// `X-Kubernetes-PF-PriorityLevel-UID`: the uid of its priority level.
pub static PRIORITY_LEVEL_UID: HeaderName =
    HeaderName::from_static("x-kubernetes-pf-prioritylevel-uid");

/// The longest a request waits in a queue: a quarter of kube's default 60 s request timeout, as
/// kube-apiserver derives it.
pub const DEFAULT_WAIT_LIMIT: Duration = Duration::from_secs(15);

/// Where the filter's time comes from.
pub trait Clock: Send + Sync {
    /// Now, monotonic.
    fn now(&self) -> Instant;
}

/// The system's monotonic clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
}

/// What a queued request carries: the way to wake it, and what the dumps show of it.
pub struct Waiter {
    tx: oneshot::Sender<Decision>,
    /// The request, as `dump_requests` shows it.
    pub request: Arc<QueuedRequest>,
}

/// A queued request, as the dumps show it.
#[derive(Debug)]
pub struct QueuedRequest {
    /// The schema it matched.
    pub flow_schema: Arc<str>,
    /// Its flow within the schema.
    pub distinguisher: String,
    /// When it arrived (wall clock).
    pub arrived: jiff::Timestamp,
    /// What it asks for.
    pub attributes: Arc<Attributes>,
}

fn notify(waiter: Waiter, decision: Decision) {
    // The receiver is gone when the client went away; its guard withdraws or finishes it.
    let _ = waiter.tx.send(decision);
}

/// One priority level and its queues.
pub struct PriorityLevel {
    /// `metadata.name`.
    pub name: Arc<str>,
    uid: HeaderValue,
    nominal: AtomicUsize,
    /// The most seats one of its requests may take ([`estimate::level_max_seats`]).
    max_seats: AtomicUsize,
    /// Its requests; locked briefly, never across an `.await`.
    pub(crate) set: Mutex<QueueSet<Waiter>>,
}

impl PriorityLevel {
    /// Its nominal seats.
    pub fn nominal_limit(&self) -> usize {
        self.nominal.load(Ordering::Relaxed)
    }
}

struct Matcher {
    schema: Arc<Schema>,
    name: Arc<str>,
    uid: HeaderValue,
    level: Arc<PriorityLevel>,
}

/// The configuration in force.
pub(crate) struct State {
    config: Arc<Config>,
    /// Schemas whose level exists, by matching precedence then name.
    matchers: Vec<Matcher>,
    /// Levels, by name.
    pub(crate) levels: Vec<Arc<PriorityLevel>>,
}

impl State {
    fn empty() -> Self {
        Self {
            config: Arc::new(Config::default()),
            matchers: Vec::new(),
            levels: Vec::new(),
        }
    }

    fn build(
        old: &State,
        config: Arc<Config>,
        server_concurrency: usize,
        wait_limit: Duration,
        now: Instant,
    ) -> Self {
        let nominal = nominal_limits(server_concurrency, &config.levels);
        let mut levels: Vec<Arc<PriorityLevel>> = Vec::with_capacity(config.levels.len());
        for (level, nominal) in config.levels.iter().zip(nominal) {
            let hand_size = match level.kind {
                LevelKind::Limited {
                    queuing: Some(q), ..
                } => Some(q.hand_size),
                _ => None,
            };
            let max_seats = estimate::level_max_seats(nominal, hand_size);
            let limits = match level.kind {
                LevelKind::Exempt => Limits::Exempt,
                LevelKind::Limited { queuing } => Limits::Limited {
                    concurrency: nominal,
                    queuing,
                    wait_limit,
                },
            };
            let uid = HeaderValue::from_str(&level.uid).unwrap_or(HeaderValue::from_static(""));
            let kept = old
                .levels
                .iter()
                .find(|l| *l.name == *level.name && l.uid == uid);
            let state = match kept {
                Some(l) => {
                    l.set.lock().set_limits(limits, now, &mut notify);
                    l.nominal.store(nominal, Ordering::Relaxed);
                    l.max_seats.store(max_seats, Ordering::Relaxed);
                    Arc::clone(l)
                }
                None => Arc::new(PriorityLevel {
                    name: level.name.as_str().into(),
                    uid,
                    nominal: AtomicUsize::new(nominal),
                    max_seats: AtomicUsize::new(max_seats),
                    set: Mutex::new(QueueSet::new(limits, now)),
                }),
            };
            levels.push(state);
        }
        levels.sort_by(|a, b| a.name.cmp(&b.name));
        levels.dedup_by(|a, b| a.name == b.name);
        let mut schemas: Vec<&Arc<Schema>> = config.schemas.iter().collect();
        schemas.sort_by(|a, b| {
            (a.matching_precedence, &a.name).cmp(&(b.matching_precedence, &b.name))
        });
        let matchers = schemas
            .into_iter()
            .filter_map(|s| {
                // A schema naming a missing level is dangling: it matches nothing.
                let level = levels.iter().find(|l| *l.name == *s.priority_level)?;
                Some(Matcher {
                    schema: Arc::clone(s),
                    name: s.name.as_str().into(),
                    uid: HeaderValue::from_str(&s.uid).unwrap_or(HeaderValue::from_static("")),
                    level: Arc::clone(level),
                })
            })
            .collect();
        Self {
            config,
            matchers,
            levels,
        }
    }

    fn classify(&self, request: &Attributes) -> Option<&Matcher> {
        self.matchers.iter().find(|m| m.schema.matches(request))
    }
}

/// API Priority and Fairness: classifies each request by the flow schemas, and queues it at its
/// priority level until a seat is free (kube's `configController`). Shared by every request.
pub struct FlowControl {
    server_concurrency: usize,
    wait_limit: Duration,
    source: Box<dyn ConfigSource>,
    clock: Arc<dyn Clock>,
    counts: Box<dyn ObjectCounts>,
    state: RwLock<Arc<State>>,
    metrics: Metrics,
    dropped: DroppedRequests,
}

impl FlowControl {
    /// The filter for `server_concurrency` seats in all (`--max-requests-inflight` plus
    /// `--max-mutating-requests-inflight`), following `source`'s configuration.
    pub fn new(server_concurrency: usize, source: Box<dyn ConfigSource>) -> Self {
        Self::with_clock(server_concurrency, source, Arc::new(SystemClock))
    }

    /// As [`FlowControl::new`], with time from `clock`.
    pub fn with_clock(
        server_concurrency: usize,
        source: Box<dyn ConfigSource>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            server_concurrency,
            wait_limit: DEFAULT_WAIT_LIMIT,
            source,
            clock,
            counts: Box::new(|_: &str, _: &str| 0),
            state: RwLock::new(Arc::new(State::empty())),
            metrics: Metrics::default(),
            dropped: DroppedRequests::default(),
        }
    }

    /// This filter with requests waiting at most `limit` in a queue.
    pub fn with_wait_limit(mut self, limit: Duration) -> Self {
        self.wait_limit = limit;
        self
    }

    /// This filter estimating LISTs' seats from `counts` (without, every request takes one).
    pub fn with_object_counts(mut self, counts: Box<dyn ObjectCounts>) -> Self {
        self.counts = counts;
        self
    }

    /// The configuration in force, rebuilt when the source has a new one.
    pub(crate) fn state(&self) -> Arc<State> {
        let config = self.source.config();
        {
            let state = self.state.read();
            if Arc::ptr_eq(&state.config, &config) {
                return Arc::clone(&state);
            }
        }
        let mut state = self.state.write();
        if !Arc::ptr_eq(&state.config, &config) {
            *state = Arc::new(State::build(
                &state,
                config,
                self.server_concurrency,
                self.wait_limit,
                self.clock.now(),
            ));
        }
        Arc::clone(&state)
    }

    /// The names of the schema and level `request` classifies to.
    pub fn classify(&self, request: &Attributes) -> Option<(Arc<str>, Arc<str>)> {
        let state = self.state();
        state
            .classify(request)
            .map(|m| (Arc::clone(&m.name), Arc::clone(&m.level.name)))
    }

    /// The metrics in the Prometheus text format, appended to `out`.
    pub fn encode_metrics(&self, out: &mut String) {
        let levels: Vec<(Arc<str>, LevelLimits)> = self
            .state()
            .levels
            .iter()
            .map(|l| {
                let nominal = l.nominal_limit();
                (
                    Arc::clone(&l.name),
                    LevelLimits {
                        nominal,
                        current: nominal,
                    },
                )
            })
            .collect();
        self.metrics.encode(out, &levels);
    }

    /// Serves `request` with `serve` once its level has the seats it takes (estimated from its
    /// verb, `query` and the stored object counts); answers 429 when it is refused. Waiting
    /// ends when seats free, at the wait limit, or when the caller drops the future (the client
    /// went away).
    pub async fn handle(
        self: &Arc<Self>,
        request: Arc<Attributes>,
        query: Option<&str>,
        serve: impl Future<Output = Response>,
    ) -> Response {
        let state = self.state();
        let Some(m) = state.classify(&request) else {
            // Without the mandatory catch-all nothing may match: serve unlimited.
            return serve.await;
        };
        let level = Arc::clone(&m.level);
        let schema_name = Arc::clone(&m.name);
        let headers = [
            (FLOW_SCHEMA_UID.clone(), m.uid.clone()),
            (PRIORITY_LEVEL_UID.clone(), level.uid.clone()),
        ];
        let distinguisher = m.schema.flow_distinguisher(&request).to_string();
        let hash = flow_hash(&schema_name, &distinguisher);
        let is_watch = request.verb == "watch";
        drop(state);
        let seats = estimate::seats(
            &request,
            query,
            &*self.counts,
            level.max_seats.load(Ordering::Relaxed),
        );
        let (tx, mut rx) = oneshot::channel();
        let waiter = Waiter {
            tx,
            request: Arc::new(QueuedRequest {
                flow_schema: Arc::clone(&schema_name),
                distinguisher,
                arrived: jiff::Timestamp::now(),
                attributes: request,
            }),
        };
        let arrived = self.clock.now();
        let start = level
            .set
            .lock()
            .start(arrived, hash, seats, waiter, &mut notify);
        let (ticket, waited) = match start {
            Start::Execute(ticket) => (ticket, None),
            Start::Reject(why, _) => {
                return self.reject(&level, &schema_name, seats, why, None, headers);
            }
            Start::Wait(ticket) => {
                let mut queued = Queued {
                    fc: self,
                    level: &level,
                    schema: &schema_name,
                    ticket,
                    seats,
                    arrived,
                    armed: true,
                };
                self.metrics.in_queue(&level.name, &schema_name, 1);
                let decision = tokio::time::timeout(self.wait_limit, &mut rx).await;
                queued.armed = false;
                drop(queued);
                let waited = self.clock.now().saturating_duration_since(arrived);
                let executes = match decision {
                    Ok(Ok(Decision::Execute)) => true,
                    Ok(Ok(Decision::TimedOut)) | Ok(Err(_)) => false,
                    // Still queued at the wait limit, unless decided just now.
                    Err(_) => {
                        let withdrawn = level
                            .set
                            .lock()
                            .withdraw(ticket, self.clock.now(), true)
                            .is_some();
                        !withdrawn && matches!(rx.try_recv(), Ok(Decision::Execute))
                    }
                };
                if !executes {
                    return self.reject(
                        &level,
                        &schema_name,
                        seats,
                        Rejection::TimeOut,
                        Some(waited),
                        headers,
                    );
                }
                (ticket, Some(waited))
            }
        };
        self.metrics
            .dispatched(&level.name, &schema_name, seats, waited);
        let running = Running {
            fc: Arc::clone(self),
            level: Arc::clone(&level),
            schema: Arc::clone(&schema_name),
            ticket,
            seats,
            started: self.clock.now(),
        };
        let response = serve.await;
        // As kube's handler writes its body before the filter lets go of its seats, the seats
        // are kept until the body has been sent; a watch gives them back once it is set up.
        let mut response = if is_watch {
            drop(running);
            response
        } else {
            crate::http::held::hold_until_sent(response, running)
        };
        response.headers_mut().extend(headers);
        response
    }

    fn reject(
        &self,
        level: &PriorityLevel,
        schema: &Arc<str>,
        seats: usize,
        why: Rejection,
        waited: Option<Duration>,
        headers: [(HeaderName, HeaderValue); 2],
    ) -> Response {
        self.metrics
            .rejected(&level.name, schema, seats, why, waited);
        let now = jiff::Timestamp::now().as_second();
        self.dropped.record(&level.name, now);
        let retry_after = self.dropped.retry_after(&level.name);
        let mut response = too_many_requests(retry_after);
        response.headers_mut().extend(headers);
        response
    }
}

/// kube's `tooManyRequests`: 429, the `Retry-After` of the level, a plain-text body.
fn too_many_requests(retry_after: i64) -> Response {
    (
        StatusCode::TOO_MANY_REQUESTS,
        [
            (header::RETRY_AFTER, HeaderValue::from(retry_after)),
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain; charset=utf-8"),
            ),
            (
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            ),
        ],
        crate::http::inflight::TOO_MANY_REQUESTS,
    )
        .into_response()
}

/// The flow's hash: the first 8 bytes (little-endian) of the SHA-256 of the schema's name, a
/// zero byte and the distinguisher (`hashFlowID`).
pub fn flow_hash(schema: &str, distinguisher: &str) -> u64 {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    ctx.update(schema.as_bytes());
    ctx.update(&[0]);
    ctx.update(distinguisher.as_bytes());
    let digest = ctx.finish();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest.as_ref()[..8]);
    u64::from_le_bytes(first)
}

/// A queued request; when dropped while still armed (the client went away), it leaves its
/// queue, or ends at once if it was dispatched meanwhile.
struct Queued<'a> {
    fc: &'a FlowControl,
    level: &'a PriorityLevel,
    schema: &'a Arc<str>,
    ticket: Ticket,
    seats: usize,
    arrived: Instant,
    armed: bool,
}

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        self.fc.metrics.in_queue(&self.level.name, self.schema, -1);
        if !self.armed {
            return;
        }
        let now = self.fc.clock.now();
        let mut set = self.level.set.lock();
        if set.withdraw(self.ticket, now, false).is_some() {
            drop(set);
            let waited = now.saturating_duration_since(self.arrived);
            self.fc.metrics.rejected(
                &self.level.name,
                self.schema,
                self.seats,
                Rejection::Cancelled,
                Some(waited),
            );
        } else {
            set.finish(self.ticket, now, &mut notify);
        }
    }
}

/// An executing request; its seats are given back when it is dropped: once its response body
/// has been sent, or however else the request ended.
struct Running {
    fc: Arc<FlowControl>,
    level: Arc<PriorityLevel>,
    schema: Arc<str>,
    ticket: Ticket,
    seats: usize,
    started: Instant,
}

impl Drop for Running {
    fn drop(&mut self) {
        let now = self.fc.clock.now();
        self.level.set.lock().finish(self.ticket, now, &mut notify);
        self.fc.metrics.finished(
            &self.level.name,
            &self.schema,
            self.seats,
            now.saturating_duration_since(self.started),
        );
    }
}
