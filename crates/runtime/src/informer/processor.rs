//! Fan-out of one informer's notifications to many handlers. Mirrors client-go's
//! `sharedProcessor` and `processorListener` (shared_informer.go).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::Notification;
use crate::Shutdown;

/// An event handler: called once per notification, in order, from the handler's own task.
pub(crate) type Handler<K> = Arc<dyn Fn(Notification<K>) + Send + Sync>;

/// Fan-out of one informer's notifications to many handlers.
///
/// Each handler gets its notifications in order, from its own task and unbounded buffer, so a slow
/// handler never blocks the reflector or another handler. Handlers return quickly: real work goes
/// to a queue.
pub(crate) struct Processor<K> {
    /// Invariant: one sender per registered handler, in registration order.
    listeners: Vec<mpsc::UnboundedSender<Notification<K>>>,
    /// Handlers registered before [`Processor::start`], waiting for a task.
    pending: Vec<(Handler<K>, mpsc::UnboundedReceiver<Notification<K>>)>,
    /// Set once started: new listeners get their task immediately.
    shutdown: Option<Shutdown>,
    /// The listeners' tasks, awaited by [`Processor::take_tasks`] callers on shutdown.
    tasks: Vec<JoinHandle<()>>,
}

impl<K: Send + Sync + 'static> Processor<K> {
    /// A processor with no handlers, not started.
    pub(crate) fn new() -> Self {
        Self {
            listeners: Vec::new(),
            pending: Vec::new(),
            shutdown: None,
            tasks: Vec::new(),
        }
    }

    /// Registers `handler`; `initial` notifications are queued for it before anything else.
    ///
    /// The caller holds the informer's distribution lock, so that `initial` (a snapshot of the
    /// store) and later notifications neither overlap nor leave a gap.
    pub(crate) fn add(&mut self, handler: Handler<K>, initial: Vec<Notification<K>>) {
        // Unbounded on purpose, as client-go's growing ring buffer: a slow handler must not block
        // the reflector; memory is bounded by the watch rate times the handler's lag.
        let (tx, rx) = mpsc::unbounded_channel();
        for note in initial {
            // The receiver is alive: it is in our hands until spawned.
            let _ = tx.send(note);
        }
        self.listeners.push(tx);
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
        self.listeners.retain(|tx| tx.send(note.clone()).is_ok());
    }
}

impl<K> Processor<K> {
    /// Number of registered handlers still listening.
    pub(crate) fn len(&self) -> usize {
        self.listeners.len()
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
    use std::time::Duration;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_slow_handler_does_not_block_the_others_and_each_sees_every_note_in_order() {
        let mut processor = Processor::<u32>::new();
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
}
