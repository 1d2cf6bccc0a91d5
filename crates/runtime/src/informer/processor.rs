//! Fan-out of one informer's notifications to many handlers, and which of them are due a resync.
//! Mirrors client-go's `sharedProcessor` and `processorListener` (shared_informer.go).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::Notification;
use crate::Shutdown;

/// Shortest resync period honoured (client-go's `minimumResyncPeriod`).
pub(crate) const MINIMUM_RESYNC_PERIOD: Duration = Duration::from_secs(1);

/// An event handler: called once per notification, in order, from the handler's own task.
pub(crate) type Handler<K> = Arc<dyn Fn(Notification<K>) + Send + Sync>;

/// Fan-out of one informer's notifications to many handlers.
///
/// Each handler gets its notifications in order, from its own task and unbounded buffer, so a slow
/// handler never blocks the reflector or another handler. Handlers return quickly: real work goes
/// to a queue. Each handler has its own resync period; the informer checks every
/// [`Processor::resync_check_period`] which of them are due ([`Processor::should_resync`]) and
/// sends resync updates to those only ([`Processor::distribute_sync`]).
pub(crate) struct Processor<K> {
    /// Invariant: one listener per registered handler, in registration order.
    listeners: Vec<Listener<K>>,
    /// Handlers registered before [`Processor::start`], waiting for a task.
    pending: Vec<(Handler<K>, mpsc::UnboundedReceiver<Notification<K>>)>,
    /// Set once started: new listeners get their task immediately.
    shutdown: Option<Shutdown>,
    /// The listeners' tasks, awaited by [`Processor::take_tasks`] callers on shutdown.
    tasks: Vec<JoinHandle<()>>,
    /// How often the informer looks for listeners due a resync (client-go's
    /// `resyncCheckPeriod`): the informer's default period, lowered before start to the shortest
    /// period a handler asks for; zero: the informer never resyncs.
    resync_check_period: Duration,
}

/// One handler's channel and resync schedule (`processorListener`).
struct Listener<K> {
    tx: mpsc::UnboundedSender<Notification<K>>,
    /// The period the handler asked for (`requestedResyncPeriod`); zero: never.
    requested_resync: Duration,
    /// The period it gets: the requested one, raised to the check period; zero: never.
    resync: Duration,
    /// When it is next due.
    next_resync: Instant,
    /// Whether the last check found it due: resync notifications go to it until the next check
    /// (`sharedProcessor.listeners`' value).
    syncing: bool,
}

/// The resync period a handler asking for `desired` gets under `check` (client-go's
/// `determineResyncPeriod`).
fn determine_resync_period(desired: Duration, check: Duration) -> Duration {
    if desired.is_zero() {
        return desired;
    }
    if check.is_zero() {
        tracing::warn!(
            ?desired,
            "the specified resync period is invalid because this shared informer doesn't support resyncing"
        );
        return Duration::ZERO;
    }
    desired.max(check)
}

impl<K: Send + Sync + 'static> Processor<K> {
    /// A processor with no handlers, not started, whose informer resyncs every
    /// `resync_check_period` (zero: never).
    pub(crate) fn new(resync_check_period: Duration) -> Self {
        Self {
            listeners: Vec::new(),
            pending: Vec::new(),
            shutdown: None,
            tasks: Vec::new(),
            resync_check_period,
        }
    }

    /// Registers `handler`, resynced every `resync` (zero: never), as client-go's
    /// `AddEventHandlerWithResyncPeriod`: periods under a second are raised to one; a shorter
    /// period than the check period lowers the check period before start, and is raised to it
    /// after. `initial` notifications are queued for it before anything else.
    ///
    /// The caller holds the informer's distribution lock, so that `initial` (a snapshot of the
    /// store) and later notifications neither overlap nor leave a gap.
    pub(crate) fn add(
        &mut self,
        handler: Handler<K>,
        initial: Vec<Notification<K>>,
        resync: Duration,
        now: Instant,
    ) {
        let mut requested = resync;
        if !requested.is_zero() {
            if requested < MINIMUM_RESYNC_PERIOD {
                tracing::warn!(
                    ?requested,
                    "resync period is too small; changing it to the minimum allowed value of 1s"
                );
                requested = MINIMUM_RESYNC_PERIOD;
            }
            if requested < self.resync_check_period {
                if self.shutdown.is_some() {
                    tracing::warn!(
                        ?requested,
                        check = ?self.resync_check_period,
                        "resync period is smaller than the resync check period and the informer has already started; changing it to the check period"
                    );
                    requested = self.resync_check_period;
                } else {
                    self.resync_check_period = requested;
                    for listener in &mut self.listeners {
                        listener.resync =
                            determine_resync_period(listener.requested_resync, requested);
                    }
                }
            }
        }
        let resync = determine_resync_period(requested, self.resync_check_period);
        // Unbounded on purpose, as client-go's growing ring buffer: a slow handler must not block
        // the reflector; memory is bounded by the watch rate times the handler's lag.
        let (tx, rx) = mpsc::unbounded_channel();
        for note in initial {
            // The receiver is alive: it is in our hands until spawned.
            let _ = tx.send(note);
        }
        self.listeners.push(Listener {
            tx,
            requested_resync: requested,
            resync,
            next_resync: now + resync,
            syncing: false,
        });
        match &self.shutdown {
            Some(shutdown) => self
                .tasks
                .push(spawn_listener(handler, rx, shutdown.clone())),
            None => self.pending.push((handler, rx)),
        }
    }

    /// Starts a task per handler registered so far; later handlers start when added.
    pub(crate) fn start(&mut self, shutdown: Shutdown) {
        for (handler, rx) in self.pending.drain(..) {
            self.tasks
                .push(spawn_listener(handler, rx, shutdown.clone()));
        }
        self.shutdown = Some(shutdown);
    }

    /// The listener tasks spawned so far (they end once the shutdown token is cancelled).
    pub(crate) fn take_tasks(&mut self) -> Vec<JoinHandle<()>> {
        std::mem::take(&mut self.tasks)
    }

    /// Queues `note` for every handler.
    pub(crate) fn distribute(&mut self, note: Notification<K>) {
        // A closed listener (its task ended on shutdown) is dropped.
        self.listeners.retain(|l| l.tx.send(note.clone()).is_ok());
    }

    /// Queues `note`, a resync (an update that did not change the object), for the handlers the
    /// last [`Processor::should_resync`] found due.
    pub(crate) fn distribute_sync(&mut self, note: Notification<K>) {
        self.listeners
            .retain(|l| !l.syncing || l.tx.send(note.clone()).is_ok());
    }

    /// Marks the handlers due a resync at `now` and schedules their next one; whether any is
    /// due (client-go's `shouldResync`).
    pub(crate) fn should_resync(&mut self, now: Instant) -> bool {
        let mut due = false;
        for listener in &mut self.listeners {
            listener.syncing = !listener.resync.is_zero() && now >= listener.next_resync;
            if listener.syncing {
                due = true;
                listener.next_resync = now + listener.resync;
            }
        }
        due
    }
}

impl<K> Processor<K> {
    /// Number of registered handlers still listening.
    pub(crate) fn len(&self) -> usize {
        self.listeners.len()
    }

    /// How often the informer should look for handlers due a resync; zero: never.
    pub(crate) fn resync_check_period(&self) -> Duration {
        self.resync_check_period
    }
}

fn spawn_listener<K: Send + Sync + 'static>(
    handler: Handler<K>,
    mut rx: mpsc::UnboundedReceiver<Notification<K>>,
    shutdown: Shutdown,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            let note = tokio::select! {
                biased;
                _ = shutdown.cancelled() => return,
                note = rx.recv() => note,
            };
            let Some(note) = note else { return };
            // A panicking handler loses this notification but keeps receiving the next ones
            // (client-go's HandleCrash logs and, by default, crashes the process instead).
            if catch_unwind(AssertUnwindSafe(|| handler(note))).is_err() {
                tracing::error!("informer event handler panicked; notification dropped");
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use parking_lot::Mutex;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_slow_handler_does_not_block_the_others_and_each_sees_every_note_in_order() {
        let mut processor = Processor::<u32>::new(Duration::ZERO);
        let (release, gate) = std::sync::mpsc::channel::<()>();
        let gate = Arc::new(Mutex::new(gate));
        let slow_seen = Arc::new(Mutex::new(Vec::new()));
        let fast_seen = Arc::new(Mutex::new(Vec::new()));
        {
            let gate = Arc::clone(&gate);
            let seen = Arc::clone(&slow_seen);
            processor.add(
                Arc::new(move |n| {
                    // Blocks this listener's task until the test releases it.
                    let _ = gate.lock().recv();
                    if let Notification::Add(v) = n {
                        seen.lock().push(*v);
                    }
                }),
                vec![],
                Duration::ZERO,
                Instant::now(),
            );
        }
        {
            let seen = Arc::clone(&fast_seen);
            processor.add(
                Arc::new(move |n| {
                    if let Notification::Add(v) = n {
                        seen.lock().push(*v);
                    }
                }),
                vec![Notification::Add(Arc::new(0))],
                Duration::ZERO,
                Instant::now(),
            );
        }
        let shutdown = Shutdown::new();
        processor.start(shutdown.clone());
        for i in 1..=3 {
            processor.distribute(Notification::Add(Arc::new(i)));
        }
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while fast_seen.lock().len() < 4 {
            assert!(
                tokio::time::Instant::now() < deadline,
                "fast handler was blocked by the slow one"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(*fast_seen.lock(), [0, 1, 2, 3]);
        for _ in 0..3 {
            release.send(()).expect("slow handler is alive");
        }
        while slow_seen.lock().len() < 3 {
            assert!(
                tokio::time::Instant::now() < deadline,
                "slow handler never caught up"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(*slow_seen.lock(), [1, 2, 3]);
        assert_eq!(processor.len(), 2);
        shutdown.cancel();
    }

    fn noop() -> Handler<u32> {
        Arc::new(|_| {})
    }

    fn syncing(processor: &Processor<u32>) -> Vec<bool> {
        processor.listeners.iter().map(|l| l.syncing).collect()
    }

    /// client-go's `TestSharedInformerResyncPeriods` / `determineResyncPeriod` cases.
    #[tokio::test]
    async fn each_handler_resyncs_on_its_own_period_and_the_shortest_sets_the_check_period() {
        const HOURS_12: Duration = Duration::from_secs(12 * 3600);
        let now = Instant::now();
        let mut processor = Processor::<u32>::new(HOURS_12);
        processor.add(noop(), vec![], HOURS_12, now);
        processor.add(noop(), vec![], Duration::from_secs(30), now);
        processor.add(noop(), vec![], Duration::ZERO, now);
        assert_eq!(processor.resync_check_period(), Duration::from_secs(30));
        assert!(!processor.should_resync(now + Duration::from_secs(29)));
        assert!(processor.should_resync(now + Duration::from_secs(30)));
        assert_eq!(syncing(&processor), [false, true, false]);
        assert!(!processor.should_resync(now + Duration::from_secs(59)));
        assert_eq!(syncing(&processor), [false, false, false]);
        assert!(processor.should_resync(now + HOURS_12));
        assert_eq!(syncing(&processor), [true, true, false]);

        // Once started, a shorter period is raised to the check period, and a sub-second one
        // to a second first.
        processor.start(Shutdown::new());
        processor.add(noop(), vec![], Duration::from_secs(10), now);
        processor.add(noop(), vec![], Duration::from_millis(10), now);
        assert_eq!(processor.resync_check_period(), Duration::from_secs(30));
        let periods: Vec<Duration> = processor.listeners.iter().map(|l| l.resync).collect();
        assert_eq!(periods[3..], [Duration::from_secs(30); 2]);

        // An informer that never resyncs gives no handler a resync.
        let mut never = Processor::<u32>::new(Duration::ZERO);
        never.add(noop(), vec![], Duration::from_secs(30), now);
        assert_eq!(never.resync_check_period(), Duration::ZERO);
        assert!(!never.should_resync(now + HOURS_12));
    }

    #[tokio::test]
    async fn resync_notifications_go_only_to_the_handlers_found_due() {
        let now = Instant::now();
        let mut processor = Processor::<u32>::new(Duration::from_secs(60));
        processor.add(noop(), vec![], Duration::from_secs(60), now);
        processor.add(noop(), vec![], Duration::ZERO, now);
        assert!(processor.should_resync(now + Duration::from_secs(60)));
        processor.distribute_sync(Notification::Add(Arc::new(7)));
        processor.distribute(Notification::Add(Arc::new(8)));
        let mut received = Vec::new();
        for (_, rx) in &mut processor.pending {
            let mut seen = Vec::new();
            while let Ok(Notification::Add(v)) = rx.try_recv() {
                seen.push(*v);
            }
            received.push(seen);
        }
        assert_eq!(received, [vec![7, 8], vec![8]]);
    }
}
