//! The log backend (`staging/src/k8s.io/apiserver/plugin/pkg/audit/log/backend.go` behind
//! `plugin/pkg/audit/buffered`): events go through a bounded buffer to a thread that writes
//! them as JSON lines to `--audit-log-path` (`-` for stdout), so a slow disk never holds up a
//! request. When the buffer is full the event is dropped and counted in
//! `apiserver_audit_error_total{plugin="log"}`.

use std::io::{self, Write};
use std::path::PathBuf;

use tokio::sync::mpsc;

use super::event::Event;
use super::metrics;
use super::rotation::{RotatingFile, Rotation};

/// kube's `--audit-log-batch-buffer-size` default: events waiting to be written.
pub const DEFAULT_BUFFER_SIZE: usize = 10_000;

/// Where the log backend writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LogTarget {
    /// The process' standard output (`--audit-log-path=-`).
    Stdout,
    /// A file rotated by size.
    File {
        /// The log's path.
        path: PathBuf,
        /// When it rotates and which backups are kept.
        rotation: Rotation,
    },
}

/// The sending side of the log backend. Cheap to clone; the writer thread ends, after writing
/// what is buffered, once every handle is dropped.
#[derive(Clone, Debug)]
pub struct LogBackend {
    events: mpsc::Sender<Event>,
}

impl LogBackend {
    /// Starts the writer thread for `target` with room for `buffer` events.
    pub fn start(target: LogTarget, buffer: usize) -> io::Result<Self> {
        let (events, rx) = mpsc::channel(buffer.max(1));
        std::thread::Builder::new()
            .name("audit-log".to_string())
            .spawn(move || write_events(rx, target))?;
        Ok(Self { events })
    }

    /// Hands `event` to the writer without waiting (`ProcessEvents` of the buffered backend);
    /// drops and counts it when the buffer is full.
    pub fn process(&self, event: Event) {
        metrics::observe_event();
        if self.events.try_send(event).is_err() {
            metrics::observe_log_errors(1);
            tracing::warn!("audit log buffer full: an audit event was dropped");
        }
    }
}

/// Either sink the writer thread writes to.
enum Sink {
    Stdout(io::Stdout),
    File(RotatingFile),
}

impl Sink {
    fn write(&mut self, line: &[u8]) -> io::Result<()> {
        match self {
            Sink::Stdout(out) => out.lock().write_all(line),
            Sink::File(file) => file.write_at(line, jiff::Timestamp::now()),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Sink::Stdout(out) => out.lock().flush(),
            Sink::File(file) => file.flush(),
        }
    }
}

/// The writer thread: writes what has arrived, flushes, then waits for more.
fn write_events(mut rx: mpsc::Receiver<Event>, target: LogTarget) {
    let mut sink = match target {
        LogTarget::Stdout => Sink::Stdout(io::stdout()),
        LogTarget::File { path, rotation } => Sink::File(RotatingFile::new(path, rotation)),
    };
    while let Some(first) = rx.blocking_recv() {
        let mut next = Some(first);
        while let Some(event) = next {
            if let Err(e) = sink.write(&event.to_json_line()) {
                metrics::observe_log_errors(1);
                tracing::error!(error = %e, "unable to write an audit event");
            }
            next = rx.try_recv().ok();
        }
        if let Err(e) = sink.flush() {
            tracing::error!(error = %e, "unable to flush the audit log");
        }
    }
}
