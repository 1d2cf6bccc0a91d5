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

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;
    use crate::audit::event::example;

    #[test]
    fn a_full_buffer_drops_and_counts_the_event() {
        // No writer: the buffer of one fills at once.
        let (events, _rx) = mpsc::channel(1);
        let backend = LogBackend { events };
        let before = metrics::log_errors();
        backend.process(example("kept"));
        backend.process(example("dropped"));
        assert!(metrics::log_errors() > before);
    }

    #[test]
    fn events_are_written_as_json_lines_in_order() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("logs/audit.log");
        let target = LogTarget::File {
            path: path.clone(),
            rotation: Rotation::default(),
        };
        let backend = LogBackend::start(target, 16).expect("writer");
        for id in ["a", "b", "c"] {
            backend.process(example(id));
        }
        drop(backend);
        let deadline = Instant::now() + Duration::from_secs(10);
        let ids = loop {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let ids: Vec<String> = text
                .lines()
                .map(|l| {
                    let v: serde_json::Value = serde_json::from_str(l).expect("a JSON line");
                    v["auditID"].as_str().unwrap_or_default().to_string()
                })
                .collect();
            if ids.len() == 3 || Instant::now() > deadline {
                break ids;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        assert_eq!(ids, ["a", "b", "c"], "the writer thread likely stopped");
    }
}
