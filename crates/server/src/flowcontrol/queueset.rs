//! Fair queuing for server requests: one priority level's queues, dispatched in the order of
//! their virtual finish times (`staging/src/k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing/queueset/queueset.go`).
//!
//! The set is a plain state machine: every call takes the time it happens at, so tests drive it
//! on a fake clock, and the caller (the filter) owns the waiting. A request is `start`ed with a
//! payload; the set answers at once (execute, or reject) or keeps the payload in a queue and
//! hands it back through `notify` when it is dispatched or times out. Each request asks for
//! `seats` seats (the filter asks for one: kube's work estimator is not run).
//!
//! Virtual time `R` counts the seat-seconds each active queue has been entitled to since the
//! start; it advances at `min(seats asked for, concurrency limit) / active queues` per second.
//! A request's work is its seats times the estimated service time `G` (3 ms, as kube); when it
//! ends, its queue is credited with the difference between `G` and the time it really took.
//! Virtual time is an `f64` rather than kube's fixed-point `SeatSeconds`, so no epoch advance is
//! needed (its precision outlasts any process).

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use super::shuffle_sharding::Dealer;

/// The estimated service time of a request, `G` (`estimatedServiceDuration`).
pub const ESTIMATED_SERVICE_DURATION: Duration = Duration::from_millis(3);

/// One request of the set, from `start` to `finish`.
pub type Ticket = u64;

/// Queuing of a limited priority level (`QueuingConfig`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Queuing {
    /// The number of queues (`queues`).
    pub queues: usize,
    /// Queues a flow may use (`handSize`).
    pub hand_size: usize,
    /// Requests a queue holds before the next is rejected (`queueLengthLimit`).
    pub queue_length_limit: usize,
}

/// How a set limits its requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limits {
    /// Never queued nor refused (the exempt level).
    Exempt,
    /// At most `concurrency` seats in use; more requests wait in queues, or are refused when
    /// `queuing` is `None` (`limitResponse.type: Reject`).
    Limited {
        /// Seats (`ConcurrencyLimit`).
        concurrency: usize,
        /// The queues; none for levels that reject.
        queuing: Option<Queuing>,
        /// The longest a request waits in a queue (`RequestWaitLimit`).
        wait_limit: Duration,
    },
}

/// Why a request was not served: the `reason` label of
/// `apiserver_flowcontrol_rejected_requests_total`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rejection {
    /// Its queue was full and every seat taken.
    QueueFull,
    /// Every seat was taken and the level does not queue.
    ConcurrencyLimit,
    /// It waited longer than the wait limit.
    TimeOut,
    /// The client went away while it waited.
    Cancelled,
}

impl Rejection {
    /// kube's label value.
    pub fn reason(&self) -> &'static str {
        match self {
            Rejection::QueueFull => "queue-full",
            Rejection::ConcurrencyLimit => "concurrency-limit",
            Rejection::TimeOut => "time-out",
            Rejection::Cancelled => "cancelled",
        }
    }
}

/// What `start` decided.
#[derive(Debug)]
pub enum Start<T> {
    /// Execute now; `finish` the ticket when done.
    Execute(Ticket),
    /// Queued: the payload comes back through `notify`, with the decision.
    Wait(Ticket),
    /// Refused; the payload is handed back.
    Reject(Rejection, T),
}

/// The decision on a queued request, given to `notify` with its payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Dispatched: it executes, and its ticket is `finish`ed when done.
    Execute,
    /// Timed out in its queue (found at a later enqueue, as kube's).
    TimedOut,
}

struct Waiting<T> {
    ticket: Ticket,
    arrived: Instant,
    arrival_r: f64,
    seats: usize,
    payload: T,
}

impl<T> Waiting<T> {
    fn work(&self) -> f64 {
        work(self.seats)
    }
}

fn work(seats: usize) -> f64 {
    seats as f64 * ESTIMATED_SERVICE_DURATION.as_secs_f64()
}

struct Queue<T> {
    waiting: VecDeque<Waiting<T>>,
    waiting_seats: usize,
    executing: usize,
    seats_in_use: usize,
    /// The virtual time its next request starts at (`nextDispatchR`).
    next_dispatch_r: f64,
}

impl<T> Queue<T> {
    fn new() -> Self {
        Self {
            waiting: VecDeque::new(),
            waiting_seats: 0,
            executing: 0,
            seats_in_use: 0,
            next_dispatch_r: 0.0,
        }
    }

    fn is_empty(&self) -> bool {
        self.waiting.is_empty() && self.executing == 0
    }

    /// The anti-windup bound: dispatch in the virtual world never precedes arrival
    /// (`boundNextDispatchLocked`).
    fn bound_next_dispatch(&mut self) {
        if let Some(head) = self.waiting.front() {
            if self.next_dispatch_r < head.arrival_r {
                self.next_dispatch_r = head.arrival_r;
            }
        }
    }
}

struct Executing {
    queue: Option<usize>,
    started: Instant,
    seats: usize,
}

/// Counters of a set since it was made, for the dumps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// Requests waiting in queues now.
    pub waiting: usize,
    /// Requests executing now.
    pub executing: usize,
    /// Seats in use now.
    pub seats_in_use: usize,
    /// Seats the waiting requests ask for.
    pub seats_waiting: usize,
    /// Requests that executed.
    pub dispatched: u64,
    /// Requests refused (time-outs and cancellations included).
    pub rejected: u64,
    /// Requests that timed out in a queue.
    pub timed_out: u64,
    /// Requests cancelled while queued.
    pub cancelled: u64,
}

/// One queue as the dumps show it.
#[derive(Debug)]
pub struct QueueView<'a, T> {
    /// Requests waiting, oldest first: their payload and arrival.
    pub waiting: Vec<(&'a T, Instant, usize)>,
    /// Requests executing from it.
    pub executing: usize,
    /// Seats they hold.
    pub seats_in_use: usize,
    /// Its virtual start time, in seat-seconds.
    pub next_dispatch_r: f64,
    /// Seats its waiting requests ask for.
    pub waiting_seats: usize,
}

/// One priority level's requests (kube's `queueSet`). Not synchronised: its owner locks it.
pub struct QueueSet<T> {
    limits: Limits,
    dealer: Option<Dealer>,
    queues: Vec<Queue<T>>,
    current_r: f64,
    last_real: Instant,
    robin_index: usize,
    enqueues: usize,
    executing: HashMap<Ticket, Executing>,
    next_ticket: Ticket,
    totals: Totals,
}

impl<T> QueueSet<T> {
    /// An idle set with `limits`, its virtual clock starting at `now`.
    pub fn new(limits: Limits, now: Instant) -> Self {
        let mut set = Self {
            limits: Limits::Exempt,
            dealer: None,
            queues: Vec::new(),
            current_r: 0.0,
            last_real: now,
            robin_index: 0,
            enqueues: 0,
            executing: HashMap::new(),
            next_ticket: 0,
            totals: Totals::default(),
        };
        set.set_limits(limits, now, &mut |_, _| {});
        set
    }

    /// The limits in force.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Counters, for the dumps.
    pub fn totals(&self) -> Totals {
        self.totals
    }

    /// Whether nothing waits or executes.
    pub fn is_idle(&self) -> bool {
        self.totals.waiting == 0 && self.totals.executing == 0
    }

    /// The queues, for the dumps.
    pub fn queues(&self) -> impl Iterator<Item = QueueView<'_, T>> {
        self.queues.iter().map(|q| QueueView {
            waiting: q
                .waiting
                .iter()
                .map(|w| (&w.payload, w.arrived, w.seats))
                .collect(),
            executing: q.executing,
            seats_in_use: q.seats_in_use,
            next_dispatch_r: q.next_dispatch_r,
            waiting_seats: q.waiting_seats,
        })
    }

    /// Virtual time now, in seat-seconds.
    pub fn current_r(&self) -> f64 {
        self.current_r
    }

    /// Changes the limits (`BeginConfigChange`/`Complete`): queues are added at once and
    /// removed as they go empty; waiting requests that now fit are dispatched.
    pub fn set_limits(
        &mut self,
        limits: Limits,
        now: Instant,
        notify: &mut dyn FnMut(T, Decision),
    ) {
        self.sync_time(now);
        let desired = match limits {
            Limits::Limited {
                queuing: Some(q), ..
            } => match Dealer::new(q.queues, q.hand_size) {
                Ok(dealer) => {
                    self.dealer = Some(dealer);
                    q.queues
                }
                Err(e) => {
                    tracing::warn!(error = %e, "invalid queuing configuration; the level does not queue");
                    self.dealer = None;
                    0
                }
            },
            _ => {
                self.dealer = None;
                0
            }
        };
        while self.queues.len() < desired {
            self.queues.push(Queue::new());
        }
        self.limits = limits;
        self.trim_queues();
        self.dispatch_as_much_as_possible(now, notify);
    }

    fn desired_queues(&self) -> usize {
        match (self.limits, self.dealer) {
            (
                Limits::Limited {
                    queuing: Some(q), ..
                },
                Some(_),
            ) => q.queues,
            _ => 0,
        }
    }

    fn concurrency_limit(&self) -> usize {
        match self.limits {
            Limits::Exempt => usize::MAX,
            Limits::Limited { concurrency, .. } => concurrency,
        }
    }

    /// Advances virtual time to `now` under the state in effect since the last call
    /// (`syncTimeLocked`).
    fn sync_time(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.last_real);
        self.last_real = self.last_real.max(now);
        let mut active = 0usize;
        let mut seats = 0usize;
        for q in &self.queues {
            seats += q.seats_in_use + q.waiting_seats;
            if !q.is_empty() {
                active += 1;
            }
        }
        if active > 0 {
            let ratio = seats.min(self.concurrency_limit()) as f64 / active as f64;
            self.current_r += ratio * elapsed.as_secs_f64();
        }
    }

    /// Admits a request of `seats` seats from the flow hashed to `hash` (`StartRequest`).
    /// Requests of this and other flows dispatched meanwhile come back through `notify`.
    pub fn start(
        &mut self,
        now: Instant,
        hash: u64,
        seats: usize,
        payload: T,
        notify: &mut dyn FnMut(T, Decision),
    ) -> Start<T> {
        self.sync_time(now);
        let seats = seats.max(1);
        let Some(dealer) = self.dealer.filter(|_| self.desired_queues() > 0) else {
            if !self.can_accommodate(seats) {
                self.totals.rejected += 1;
                return Start::Reject(Rejection::ConcurrencyLimit, payload);
            }
            let ticket = self.execute(None, now, seats);
            return Start::Execute(ticket);
        };
        let queue = self.shuffle_shard(&dealer, hash);
        self.remove_timed_out(queue, now, notify);
        let (concurrency, queue_length_limit) = match self.limits {
            Limits::Limited {
                concurrency,
                queuing: Some(q),
                ..
            } => (concurrency, q.queue_length_limit),
            _ => (usize::MAX, usize::MAX),
        };
        if self.totals.seats_in_use >= concurrency
            && self.queues[queue].waiting.len() >= queue_length_limit
        {
            self.queues[queue].bound_next_dispatch();
            self.totals.rejected += 1;
            return Start::Reject(Rejection::QueueFull, payload);
        }
        let ticket = self.next_ticket();
        let current_r = self.current_r;
        let q = &mut self.queues[queue];
        if q.is_empty() {
            q.next_dispatch_r = current_r;
        }
        q.waiting.push_back(Waiting {
            ticket,
            arrived: now,
            arrival_r: current_r,
            seats,
            payload,
        });
        q.waiting_seats += seats;
        q.bound_next_dispatch();
        self.totals.waiting += 1;
        self.totals.seats_waiting += seats;
        self.dispatch_as_much_as_possible(now, notify);
        Start::Wait(ticket)
    }

    fn next_ticket(&mut self) -> Ticket {
        self.next_ticket += 1;
        self.next_ticket
    }

    /// The queue of the flow's hand holding the least work, starting the visit at a rotating
    /// offset so that overlapping hands are not biased (`shuffleShardLocked`).
    fn shuffle_shard(&mut self, dealer: &Dealer, hash: u64) -> usize {
        let mut buf = [0usize; 64];
        let hand = dealer.deal_into_hand(hash, &mut buf);
        let offset = self.enqueues % hand.len();
        self.enqueues = self.enqueues.wrapping_add(1);
        let mut best = hand[offset];
        for i in 0..hand.len() {
            let q = hand[(offset + i) % hand.len()];
            if self.queues[q].waiting_seats < self.queues[best].waiting_seats {
                best = q;
            }
        }
        best
    }

    /// Rejects the requests of `queue` that waited longer than the wait limit
    /// (`removeTimedOutRequestsFromQueueToBoundLocked`).
    fn remove_timed_out(
        &mut self,
        queue: usize,
        now: Instant,
        notify: &mut dyn FnMut(T, Decision),
    ) {
        let Limits::Limited { wait_limit, .. } = self.limits else {
            return;
        };
        let q = &mut self.queues[queue];
        while q
            .waiting
            .front()
            .is_some_and(|w| now.saturating_duration_since(w.arrived) > wait_limit)
        {
            let Some(w) = q.waiting.pop_front() else {
                break;
            };
            q.waiting_seats -= w.seats;
            self.totals.waiting -= 1;
            self.totals.seats_waiting -= w.seats;
            self.totals.rejected += 1;
            self.totals.timed_out += 1;
            notify(w.payload, Decision::TimedOut);
        }
        q.bound_next_dispatch();
    }

    /// Takes a queued request out of its queue, because it timed out (`timed_out`) or its
    /// client went away. `None` when it is no longer queued (it was dispatched, or rejected,
    /// meanwhile); else its payload.
    pub fn withdraw(&mut self, ticket: Ticket, now: Instant, timed_out: bool) -> Option<T> {
        self.sync_time(now);
        for q in &mut self.queues {
            if let Some(i) = q.waiting.iter().position(|w| w.ticket == ticket) {
                let w = q.waiting.remove(i)?;
                q.waiting_seats -= w.seats;
                q.bound_next_dispatch();
                self.totals.waiting -= 1;
                self.totals.seats_waiting -= w.seats;
                self.totals.rejected += 1;
                if timed_out {
                    self.totals.timed_out += 1;
                } else {
                    self.totals.cancelled += 1;
                }
                self.trim_queues();
                return Some(w.payload);
            }
        }
        None
    }

    fn execute(&mut self, queue: Option<usize>, now: Instant, seats: usize) -> Ticket {
        let ticket = self.next_ticket();
        self.executing.insert(
            ticket,
            Executing {
                queue,
                started: now,
                seats,
            },
        );
        self.totals.executing += 1;
        self.totals.seats_in_use += seats;
        self.totals.dispatched += 1;
        if let Some(q) = queue.and_then(|q| self.queues.get_mut(q)) {
            q.executing += 1;
            q.seats_in_use += seats;
        }
        ticket
    }

    fn can_accommodate(&self, seats: usize) -> bool {
        match self.limits {
            Limits::Exempt => true,
            // A request wider than the level runs alone (kube's quick fix).
            Limits::Limited { concurrency, .. } if seats > concurrency => {
                self.totals.executing == 0
            }
            Limits::Limited { concurrency, .. } => self.totals.seats_in_use + seats <= concurrency,
        }
    }

    fn dispatch_as_much_as_possible(&mut self, now: Instant, notify: &mut dyn FnMut(T, Decision)) {
        while self.totals.waiting > 0
            && self.totals.seats_in_use < self.concurrency_limit()
            && self.dispatch(now, notify)
        {}
    }

    /// Dispatches the head of the queue with the earliest virtual finish time, visiting the
    /// queues round robin from the one after the last dispatched from (`dispatchLocked`).
    fn dispatch(&mut self, now: Instant, notify: &mut dyn FnMut(T, Decision)) -> bool {
        let n = self.queues.len();
        let mut best: Option<(usize, f64)> = None;
        for _ in 0..n {
            self.robin_index = (self.robin_index + 1) % n;
            let q = &self.queues[self.robin_index];
            if let Some(head) = q.waiting.front() {
                let finish = q.next_dispatch_r + head.work();
                if best.is_none_or(|(_, f)| finish < f) {
                    best = Some((self.robin_index, finish));
                }
            }
        }
        let Some((index, _)) = best else {
            return false;
        };
        let seats = self.queues[index].waiting.front().map_or(1, |w| w.seats);
        if !self.can_accommodate(seats) {
            return false;
        }
        let Some(w) = self.queues[index].waiting.pop_front() else {
            return false;
        };
        self.robin_index = index;
        self.totals.waiting -= 1;
        self.totals.seats_waiting -= w.seats;
        let q = &mut self.queues[index];
        q.waiting_seats -= w.seats;
        q.next_dispatch_r += w.work();
        q.bound_next_dispatch();
        let ticket = w.ticket;
        self.executing.insert(
            ticket,
            Executing {
                queue: Some(index),
                started: now,
                seats: w.seats,
            },
        );
        let q = &mut self.queues[index];
        q.executing += 1;
        q.seats_in_use += w.seats;
        self.totals.executing += 1;
        self.totals.seats_in_use += w.seats;
        self.totals.dispatched += 1;
        notify(w.payload, Decision::Execute);
        true
    }

    /// Ends an executing request and dispatches what now fits
    /// (`finishRequestAndDispatchAsMuchAsPossible`). Its queue is credited with the difference
    /// between the estimated and the real service time.
    pub fn finish(&mut self, ticket: Ticket, now: Instant, notify: &mut dyn FnMut(T, Decision)) {
        self.sync_time(now);
        let Some(e) = self.executing.remove(&ticket) else {
            return;
        };
        self.totals.executing -= 1;
        self.totals.seats_in_use -= e.seats;
        if let Some(q) = e.queue.and_then(|q| self.queues.get_mut(q)) {
            q.executing -= 1;
            q.seats_in_use -= e.seats;
            let served = now.saturating_duration_since(e.started).as_secs_f64();
            q.next_dispatch_r -=
                e.seats as f64 * (ESTIMATED_SERVICE_DURATION.as_secs_f64() - served);
            q.bound_next_dispatch();
        }
        self.trim_queues();
        self.dispatch_as_much_as_possible(now, notify);
    }

    /// Drops the queues beyond the desired number once they are empty; only trailing ones go,
    /// so the indices of the others (held by executing requests) stay (`removeQueueIfEmptyLocked`).
    fn trim_queues(&mut self) {
        let desired = self.desired_queues();
        while self.queues.len() > desired && self.queues.last().is_some_and(Queue::is_empty) {
            self.queues.pop();
        }
        if self.robin_index >= self.queues.len() {
            self.robin_index = self.queues.len().saturating_sub(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A clock the tests move by hand.
    struct FakeClock(Instant);

    impl FakeClock {
        fn new() -> Self {
            Self(Instant::now())
        }
        fn now(&self) -> Instant {
            self.0
        }
        fn step(&mut self, d: Duration) {
            self.0 += d;
        }
    }

    fn limited(concurrency: usize, queues: usize, hand_size: usize, qll: usize) -> Limits {
        Limits::Limited {
            concurrency,
            queuing: Some(Queuing {
                queues,
                hand_size,
                queue_length_limit: qll,
            }),
            wait_limit: Duration::from_secs(15),
        }
    }

    #[test]
    fn exempt_sets_never_refuse() {
        let clock = FakeClock::new();
        let mut qs = QueueSet::new(Limits::Exempt, clock.now());
        for i in 0..1000 {
            assert!(matches!(
                qs.start(clock.now(), i, 1, (), &mut |_, _| {}),
                Start::Execute(_)
            ));
        }
        assert_eq!(qs.totals().executing, 1000);
    }

    #[test]
    fn a_level_without_queues_rejects_beyond_its_seats() {
        let clock = FakeClock::new();
        let limits = Limits::Limited {
            concurrency: 2,
            queuing: None,
            wait_limit: Duration::from_secs(15),
        };
        let mut qs = QueueSet::new(limits, clock.now());
        let Start::Execute(a) = qs.start(clock.now(), 1, 1, (), &mut |_, _| {}) else {
            panic!("first executes");
        };
        assert!(matches!(
            qs.start(clock.now(), 1, 1, (), &mut |_, _| {}),
            Start::Execute(_)
        ));
        assert!(matches!(
            qs.start(clock.now(), 1, 1, (), &mut |_, _| {}),
            Start::Reject(Rejection::ConcurrencyLimit, ())
        ));
        qs.finish(a, clock.now(), &mut |_, _| {});
        assert!(matches!(
            qs.start(clock.now(), 1, 1, (), &mut |_, _| {}),
            Start::Execute(_)
        ));
    }

    #[test]
    fn a_full_queue_rejects_and_old_requests_time_out() {
        let mut clock = FakeClock::new();
        let mut qs = QueueSet::new(limited(1, 1, 1, 2), clock.now());
        let mut decided = Vec::new();
        let mut starts = Vec::new();
        for i in 0..4 {
            starts.push(qs.start(clock.now(), 7, 1, i, &mut |p, d| decided.push((p, d))));
        }
        // The first is dispatched at once, two wait, the fourth finds the queue full.
        assert_eq!(decided, [(0, Decision::Execute)]);
        assert!(matches!(starts[3], Start::Reject(Rejection::QueueFull, 3)));
        assert_eq!(qs.totals().waiting, 2);
        clock.step(Duration::from_secs(16));
        decided.clear();
        let late = qs.start(clock.now(), 7, 1, 9, &mut |p, d| decided.push((p, d)));
        assert_eq!(decided, [(1, Decision::TimedOut), (2, Decision::TimedOut)]);
        assert!(matches!(late, Start::Wait(_)));
        assert_eq!(qs.totals().timed_out, 2);
    }

    #[test]
    fn withdrawing_a_waiting_request_frees_its_place() {
        let clock = FakeClock::new();
        let mut qs = QueueSet::new(limited(1, 1, 1, 5), clock.now());
        qs.start(clock.now(), 1, 1, 0, &mut |_, _| {});
        let Start::Wait(t) = qs.start(clock.now(), 1, 1, 1, &mut |_, _| {}) else {
            panic!("second waits");
        };
        assert_eq!(qs.withdraw(t, clock.now(), false), Some(1));
        assert_eq!(qs.withdraw(t, clock.now(), false), None);
        assert_eq!(qs.totals().cancelled, 1);
        assert_eq!(qs.totals().waiting, 0);
    }

    /// Two flows share one seat: a heavy one with many requests queued and a light one with
    /// one at a time. Fair queuing serves them alternately, whatever the heavy one's backlog.
    #[test]
    fn a_flooding_flow_does_not_starve_another() {
        let mut clock = FakeClock::new();
        // Distinct queues for the two flows: hand size 1 over 64 queues, hashes 0 and 1.
        let mut qs: QueueSet<(&str, usize)> = QueueSet::new(limited(1, 64, 1, 1000), clock.now());
        let mut running: VecDeque<((&str, usize), Ticket)> = VecDeque::new();
        let mut dispatched: Vec<(&str, usize)> = Vec::new();
        let mut ticket_of: HashMap<(&str, usize), Ticket> = HashMap::new();
        for i in 0..100 {
            match qs.start(clock.now(), 0, 1, ("heavy", i), &mut |p, d| {
                assert_eq!(d, Decision::Execute);
                dispatched.push(p);
            }) {
                Start::Wait(t) => {
                    ticket_of.insert(("heavy", i), t);
                }
                other => panic!("heavy request {i}: {other:?}"),
            }
        }
        let mut light_sent = 0;
        let mut order = Vec::new();
        for _round in 0..40 {
            // The light flow keeps one request queued.
            if !ticket_of.keys().any(|(f, _)| *f == "light") {
                let p = ("light", light_sent);
                light_sent += 1;
                if let Start::Wait(t) =
                    qs.start(clock.now(), 1, 1, p, &mut |p, _| dispatched.push(p))
                {
                    ticket_of.insert(p, t);
                }
            }
            for p in dispatched.drain(..) {
                let t = ticket_of.remove(&p).expect("known request");
                running.push_back((p, t));
            }
            // Each request runs 3 ms, as estimated.
            clock.step(ESTIMATED_SERVICE_DURATION);
            let (p, t) = running.pop_front().expect("one request running");
            order.push(p.0);
            qs.finish(t, clock.now(), &mut |p, _| dispatched.push(p));
        }
        let light = order.iter().filter(|f| **f == "light").count();
        assert!(
            (18..=22).contains(&light),
            "the light flow got {light} of 40 turns: {order:?}"
        );
        // Never two light requests in a row while the heavy one has a backlog.
        assert!(
            order.windows(2).all(|w| w != ["light", "light"]),
            "{order:?}"
        );
    }

    /// Three flows with backlogs share two seats: each gets its share of the dispatches.
    #[test]
    fn backlogged_flows_share_the_seats_equally() {
        let mut clock = FakeClock::new();
        let mut qs: QueueSet<u64> = QueueSet::new(limited(2, 128, 1, 1000), clock.now());
        let mut dispatched: Vec<u64> = Vec::new();
        let mut tickets: HashMap<u64, VecDeque<Ticket>> = HashMap::new();
        let flows = [3u64, 5, 11];
        let mut waiting: HashMap<u64, VecDeque<Ticket>> = HashMap::new();
        for &f in &flows {
            for _ in 0..200 {
                if let Start::Wait(t) =
                    qs.start(clock.now(), f, 1, f, &mut |p, _| dispatched.push(p))
                {
                    waiting.entry(f).or_default().push_back(t);
                }
            }
        }
        let mut running: VecDeque<Ticket> = VecDeque::new();
        let mut served: HashMap<u64, usize> = HashMap::new();
        for _ in 0..300 {
            for f in dispatched.drain(..) {
                let t = waiting
                    .get_mut(&f)
                    .and_then(VecDeque::pop_front)
                    .expect("queued");
                tickets.entry(f).or_default().push_back(t);
                running.push_back(t);
                *served.entry(f).or_default() += 1;
            }
            clock.step(Duration::from_millis(5));
            let t = running.pop_front().expect("running");
            qs.finish(t, clock.now(), &mut |p, _| dispatched.push(p));
        }
        for f in flows {
            let n = served.get(&f).copied().unwrap_or(0);
            assert!(
                (95..=107).contains(&n),
                "flow {f} served {n} of ~300: {served:?}"
            );
        }
    }

    #[test]
    fn more_seats_dispatch_waiting_requests_and_fewer_queues_drain_first() {
        let clock = FakeClock::new();
        let mut qs = QueueSet::new(limited(1, 8, 2, 10), clock.now());
        let mut dispatched = Vec::new();
        for i in 0..4 {
            qs.start(clock.now(), i, 1, i, &mut |p, _| dispatched.push(p));
        }
        assert_eq!(dispatched.len(), 1);
        qs.set_limits(limited(3, 2, 1, 10), clock.now(), &mut |p, _| {
            dispatched.push(p)
        });
        assert_eq!(dispatched.len(), 3);
        assert!(qs.queues().count() >= 2, "queues with requests stay");
    }
}
