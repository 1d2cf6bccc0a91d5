//! What `rkcm bench soak` reports for each store: the figures, printed and as JSON.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

use super::checker::{self, Gap, Lost};
use super::faults::Fault;
use super::load::Timed;

/// p99 latency of the writes acknowledged in one minute of the run.
#[derive(Debug, Clone, Serialize)]
pub struct MinuteLatency {
    /// Minute of the run, from 0.
    pub minute: u64,
    /// Writes acknowledged in it.
    pub acknowledged: usize,
    /// Their 99th percentile latency, milliseconds.
    pub p99_ms: f64,
}

/// The figures of one store's run.
#[derive(Debug, Clone, Serialize)]
pub struct StoreReport {
    /// `embedded` or `etcd`.
    pub store: String,
    /// Length of the load, seconds.
    pub seconds: f64,
    /// Writes acknowledged.
    pub writes_acknowledged: usize,
    /// Writes refused with a 4xx (a create of an existing key, an update of a deleted one).
    pub writes_refused: usize,
    /// Writes with no answer or a 5xx.
    pub writes_indeterminate: usize,
    /// Refused and indeterminate writes by why: status code and reason, or the client's error.
    pub errors: BTreeMap<String, usize>,
    /// Refused writes a watcher saw applied nevertheless (the server said no to a write it
    /// made); reported, not counted as lost.
    pub refused_but_applied: Vec<checker::RefusedButApplied>,
    /// Acknowledged writes lost; must be 0.
    pub writes_lost: usize,
    /// Gaps in the watchers' views; must be 0.
    pub watch_gaps: usize,
    /// Events the watchers received.
    pub watch_events: usize,
    /// Relists after a 410 Gone.
    pub relists: usize,
    /// Watches resumed from the last resourceVersion seen.
    pub resumes: usize,
    /// The faults, when they happened.
    pub faults: Vec<Fault>,
    /// RSS of `up` once the namespaces exist, MiB.
    pub rss_start_mib: f64,
    /// RSS of `up` at the end, MiB (of the last restarted process on the embedded store).
    pub rss_end_mib: f64,
    /// The bound on `rss_end_mib - rss_start_mib`.
    pub rss_growth_limit_mib: f64,
    /// p99 write latency per minute.
    pub latency: Vec<MinuteLatency>,
    /// The first lost writes (up to 20).
    pub lost: Vec<Lost>,
    /// The first gaps (up to 20).
    pub gaps: Vec<Gap>,
    /// No write lost, no gap, at least one fault, RSS within its bound.
    pub passed: bool,
}

/// The whole run.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Seed of the faults and of the writers.
    pub seed: u64,
    /// Writes per second asked for.
    pub rate: f64,
    /// One report per store.
    pub stores: Vec<StoreReport>,
}

/// Prints one store's report.
pub(super) fn print(r: &StoreReport, seed: u64) {
    println!(
        "soak on the {} store: {:.0} s, seed {seed}",
        r.store, r.seconds
    );
    println!(
        "  writes acknowledged:    {} ({} refused, {} indeterminate)",
        r.writes_acknowledged, r.writes_refused, r.writes_indeterminate
    );
    for (reason, n) in &r.errors {
        println!("    {n} × {reason}");
    }
    for w in &r.refused_but_applied {
        let what = if w.value.is_empty() {
            "a delete".to_string()
        } else {
            format!("{:?}", w.value)
        };
        println!(
            "  REFUSED BUT APPLIED {}: {what} refused, yet seen applied at {}",
            w.key, w.rv
        );
    }
    println!("  writes lost:            {}", r.writes_lost);
    println!(
        "  watch gaps:             {} ({} events, {} resumes, {} relists after 410)",
        r.watch_gaps, r.watch_events, r.resumes, r.relists
    );
    for f in &r.faults {
        println!(
            "  fault:                  {} at {:.1} s, serving again at {:.1} s",
            f.what, f.at_seconds, f.back_at_seconds
        );
    }
    println!(
        "  RSS of up:              {:.1} MiB at start, {:.1} MiB at end (bound +{:.0} MiB)",
        r.rss_start_mib, r.rss_end_mib, r.rss_growth_limit_mib
    );
    let p99: Vec<String> = r
        .latency
        .iter()
        .map(|m| format!("{:.1}", m.p99_ms))
        .collect();
    println!("  p99 write ms by minute: {}", p99.join(" "));
    for l in &r.lost {
        println!(
            "  LOST {}: expected one of {:?}, found {:?} (last acknowledged at {})",
            l.key, l.expected, l.found, l.last_acked_rv
        );
    }
    for g in &r.gaps {
        println!(
            "  GAP watcher {} of {}: {:?} at {} {}",
            g.watcher,
            g.namespace,
            g.kind,
            g.rv,
            g.name.as_deref().unwrap_or("")
        );
    }
    println!("  passed:                 {}", r.passed);
}

/// p99 latency of acknowledged writes, by the minute they were issued in.
pub(super) fn per_minute(timed: &[Timed]) -> Vec<MinuteLatency> {
    let mut minutes: BTreeMap<u64, Vec<Duration>> = BTreeMap::new();
    for t in timed {
        if let Some(l) = t.latency {
            minutes.entry(t.issued.as_secs() / 60).or_default().push(l);
        }
    }
    minutes
        .into_iter()
        .map(|(minute, mut v)| {
            v.sort();
            let i = ((v.len() as f64 * 0.99).ceil() as usize).clamp(1, v.len()) - 1;
            MinuteLatency {
                minute,
                acknowledged: v.len(),
                p99_ms: v[i].as_secs_f64() * 1000.0,
            }
        })
        .collect()
}
