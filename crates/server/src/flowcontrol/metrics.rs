//! The `apiserver_flowcontrol_*` metrics, with kube-apiserver's names and labels
//! (`staging/src/k8s.io/apiserver/pkg/util/flowcontrol/metrics/metrics.go`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use super::queueset::Rejection;

/// kube's buckets of the wait and execution histograms.
const BUCKETS: [f64; 13] = [
    0.0, 0.005, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 15.0, 30.0,
];

/// kube's buckets of `work_estimated_seats` (a request takes at most 10 seats).
const SEAT_BUCKETS: [f64; 4] = [1.0, 2.0, 4.0, 10.0];

/// A histogram over `bounds` (one of the bucket constants above).
#[derive(Clone, Debug)]
struct Histogram<const N: usize = 13> {
    bounds: &'static [f64; N],
    buckets: [u64; N],
    count: u64,
    sum: f64,
}

impl Default for Histogram<13> {
    fn default() -> Self {
        Self::new(&BUCKETS)
    }
}

impl Default for Histogram<4> {
    fn default() -> Self {
        Self::new(&SEAT_BUCKETS)
    }
}

impl<const N: usize> Histogram<N> {
    fn new(bounds: &'static [f64; N]) -> Self {
        Self {
            bounds,
            buckets: [0; N],
            count: 0,
            sum: 0.0,
        }
    }

    fn observe(&mut self, value: f64) {
        for (n, bound) in self.buckets.iter_mut().zip(self.bounds) {
            if value <= *bound {
                *n += 1;
            }
        }
        self.count += 1;
        self.sum += value;
    }

    fn encode(&self, out: &mut String, name: &str, labels: &str) {
        for (n, bound) in self.buckets.iter().zip(self.bounds) {
            let _ = writeln!(out, "{name}_bucket{{{labels},le=\"{bound}\"}} {n}");
        }
        let _ = writeln!(
            out,
            "{name}_bucket{{{labels},le=\"+Inf\"}} {c}\n{name}_sum{{{labels}}} {s}\n{name}_count{{{labels}}} {c}",
            c = self.count,
            s = self.sum
        );
    }
}

/// The series of one flow schema at one priority level.
#[derive(Clone, Debug, Default)]
struct Flow {
    dispatched: u64,
    rejected: [u64; 4],
    in_queue: i64,
    executing: i64,
    executing_seats: i64,
    wait_executed: Histogram,
    wait_rejected: Histogram,
    execution: Histogram,
    estimated_seats: Histogram<4>,
}

fn rejection_index(r: Rejection) -> usize {
    match r {
        Rejection::QueueFull => 0,
        Rejection::ConcurrencyLimit => 1,
        Rejection::TimeOut => 2,
        Rejection::Cancelled => 3,
    }
}

const REJECTIONS: [Rejection; 4] = [
    Rejection::QueueFull,
    Rejection::ConcurrencyLimit,
    Rejection::TimeOut,
    Rejection::Cancelled,
];

/// A level's limits, as reported.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LevelLimits {
    /// Its nominal seats.
    pub nominal: usize,
    /// The seats it may use now (the nominal ones: no borrowing).
    pub current: usize,
}

/// A series' key: priority level, then flow schema.
type FlowKey = (Arc<str>, Arc<str>);

/// The metrics of one server's filter; cloned handles share them.
#[derive(Clone, Debug, Default)]
pub struct Metrics {
    flows: Arc<Mutex<BTreeMap<FlowKey, Flow>>>,
}

impl Metrics {
    fn with(&self, level: &Arc<str>, schema: &Arc<str>, f: impl FnOnce(&mut Flow)) {
        let mut flows = self.flows.lock();
        f(flows
            .entry((Arc::clone(level), Arc::clone(schema)))
            .or_default());
    }

    /// A request entered a queue (+1) or left it (-1).
    pub fn in_queue(&self, level: &Arc<str>, schema: &Arc<str>, delta: i64) {
        self.with(level, schema, |f| f.in_queue += delta);
    }

    /// A request of `seats` estimated seats starts executing after waiting `waited` (`None`: it
    /// was not queued).
    pub fn dispatched(
        &self,
        level: &Arc<str>,
        schema: &Arc<str>,
        seats: usize,
        waited: Option<Duration>,
    ) {
        self.with(level, schema, |f| {
            f.dispatched += 1;
            f.estimated_seats.observe(seats as f64);
            f.executing += 1;
            f.executing_seats += seats as i64;
            if let Some(w) = waited {
                f.wait_executed.observe(w.as_secs_f64());
            }
        });
    }

    /// A request finished executing after `took`.
    pub fn finished(&self, level: &Arc<str>, schema: &Arc<str>, seats: usize, took: Duration) {
        self.with(level, schema, |f| {
            f.executing -= 1;
            f.executing_seats -= seats as i64;
            f.execution.observe(took.as_secs_f64());
        });
    }

    /// A request of `seats` estimated seats was refused, after waiting `waited` if it was queued.
    pub fn rejected(
        &self,
        level: &Arc<str>,
        schema: &Arc<str>,
        seats: usize,
        why: Rejection,
        waited: Option<Duration>,
    ) {
        self.with(level, schema, |f| {
            f.rejected[rejection_index(why)] += 1;
            f.estimated_seats.observe(seats as f64);
            if let Some(w) = waited {
                f.wait_rejected.observe(w.as_secs_f64());
            }
        });
    }

    /// Appends the metrics in the Prometheus text format; `levels` are the levels' limits by name.
    pub fn encode(&self, out: &mut String, levels: &[(Arc<str>, LevelLimits)]) {
        let flows = self.flows.lock();
        let lbl = |pl: &str, fs: &str| format!("flow_schema=\"{fs}\",priority_level=\"{pl}\"");
        header(
            out,
            "rejected_requests_total",
            "[BETA] Number of requests rejected by API Priority and Fairness subsystem",
            "counter",
        );
        for ((pl, fs), f) in flows.iter() {
            for r in REJECTIONS {
                let n = f.rejected[rejection_index(r)];
                if n > 0 {
                    let _ = writeln!(
                        out,
                        "apiserver_flowcontrol_rejected_requests_total{{{},reason=\"{}\"}} {n}",
                        lbl(pl, fs),
                        r.reason()
                    );
                }
            }
        }
        header(
            out,
            "dispatched_requests_total",
            "[BETA] Number of requests executed by API Priority and Fairness subsystem",
            "counter",
        );
        for ((pl, fs), f) in flows.iter() {
            let _ = writeln!(
                out,
                "apiserver_flowcontrol_dispatched_requests_total{{{}}} {}",
                lbl(pl, fs),
                f.dispatched
            );
        }
        header(out, "current_inqueue_requests", "[BETA] Number of requests currently pending in queues of the API Priority and Fairness subsystem", "gauge");
        for ((pl, fs), f) in flows.iter() {
            let _ = writeln!(
                out,
                "apiserver_flowcontrol_current_inqueue_requests{{{}}} {}",
                lbl(pl, fs),
                f.in_queue
            );
        }
        header(out, "current_executing_requests", "[BETA] Number of requests in initial (for a WATCH) or any (for a non-WATCH) execution stage in the API Priority and Fairness subsystem", "gauge");
        for ((pl, fs), f) in flows.iter() {
            let _ = writeln!(
                out,
                "apiserver_flowcontrol_current_executing_requests{{{}}} {}",
                lbl(pl, fs),
                f.executing
            );
        }
        header(out, "current_executing_seats", "[BETA] Concurrency (number of seats) occupied by the currently executing (initial stage for a WATCH, any stage otherwise) requests in the API Priority and Fairness subsystem", "gauge");
        for ((pl, fs), f) in flows.iter() {
            let _ = writeln!(
                out,
                "apiserver_flowcontrol_current_executing_seats{{{}}} {}",
                lbl(pl, fs),
                f.executing_seats
            );
        }
        header(
            out,
            "request_wait_duration_seconds",
            "[BETA] Length of time a request spent waiting in its queue",
            "histogram",
        );
        for ((pl, fs), f) in flows.iter() {
            for (execute, h) in [("false", &f.wait_rejected), ("true", &f.wait_executed)] {
                if h.count > 0 {
                    h.encode(
                        out,
                        "apiserver_flowcontrol_request_wait_duration_seconds",
                        &format!("execute=\"{execute}\",{}", lbl(pl, fs)),
                    );
                }
            }
        }
        histograms(out, &flows, "request_execution_seconds", "[ALPHA] Duration of initial stage (for a WATCH) or any (for a non-WATCH) stage of request execution in the API Priority and Fairness subsystem", |f| &f.execution);
        histograms(out, &flows, "work_estimated_seats", "[ALPHA] Number of estimated seats (maximum of initial and final seats) associated with requests in API Priority and Fairness", |f| &f.estimated_seats);
        drop(flows);
        header(
            out,
            "nominal_limit_seats",
            "[BETA] Nominal number of execution seats configured for each priority level",
            "gauge",
        );
        for (pl, l) in levels {
            let _ = writeln!(
                out,
                "apiserver_flowcontrol_nominal_limit_seats{{priority_level=\"{pl}\"}} {}",
                l.nominal
            );
        }
        header(
            out,
            "current_limit_seats",
            "[ALPHA] current derived number of execution seats available to each priority level",
            "gauge",
        );
        for (pl, l) in levels {
            let _ = writeln!(
                out,
                "apiserver_flowcontrol_current_limit_seats{{priority_level=\"{pl}\"}} {}",
                l.current
            );
        }
        header(out, "request_concurrency_limit", "[ALPHA] Nominal number of execution seats configured for each priority level (Deprecated: use apiserver_flowcontrol_nominal_limit_seats)", "gauge");
        for (pl, l) in levels {
            let _ = writeln!(
                out,
                "apiserver_flowcontrol_request_concurrency_limit{{priority_level=\"{pl}\"}} {}",
                l.nominal
            );
        }
    }
}

/// The section of the histogram `name` with one series per flow that observed something.
fn histograms<const N: usize>(
    out: &mut String,
    flows: &BTreeMap<FlowKey, Flow>,
    name: &str,
    help: &str,
    histogram: impl Fn(&Flow) -> &Histogram<N>,
) {
    header(out, name, help, "histogram");
    for ((pl, fs), f) in flows {
        let h = histogram(f);
        if h.count > 0 {
            h.encode(
                out,
                &format!("apiserver_flowcontrol_{name}"),
                &format!("flow_schema=\"{fs}\",priority_level=\"{pl}\""),
            );
        }
    }
}

fn header(out: &mut String, name: &str, help: &str, kind: &str) {
    let _ = writeln!(
        out,
        "# HELP apiserver_flowcontrol_{name} {help}\n# TYPE apiserver_flowcontrol_{name} {kind}"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_carry_kubes_names_and_labels() {
        let m = Metrics::default();
        let (pl, fs): (Arc<str>, Arc<str>) = ("workload-low".into(), "service-accounts".into());
        m.in_queue(&pl, &fs, 1);
        m.in_queue(&pl, &fs, -1);
        m.dispatched(&pl, &fs, 3, Some(Duration::from_millis(3)));
        m.finished(&pl, &fs, 3, Duration::from_millis(40));
        m.rejected(&pl, &fs, 10, Rejection::QueueFull, None);
        let mut out = String::new();
        m.encode(
            &mut out,
            &[(
                pl.clone(),
                LevelLimits {
                    nominal: 245,
                    current: 245,
                },
            )],
        );
        for line in [
            "apiserver_flowcontrol_rejected_requests_total{flow_schema=\"service-accounts\",priority_level=\"workload-low\",reason=\"queue-full\"} 1",
            "apiserver_flowcontrol_dispatched_requests_total{flow_schema=\"service-accounts\",priority_level=\"workload-low\"} 1",
            "apiserver_flowcontrol_current_inqueue_requests{flow_schema=\"service-accounts\",priority_level=\"workload-low\"} 0",
            "apiserver_flowcontrol_current_executing_requests{flow_schema=\"service-accounts\",priority_level=\"workload-low\"} 0",
            "apiserver_flowcontrol_current_executing_seats{flow_schema=\"service-accounts\",priority_level=\"workload-low\"} 0",
            "apiserver_flowcontrol_request_wait_duration_seconds_bucket{execute=\"true\",flow_schema=\"service-accounts\",priority_level=\"workload-low\",le=\"0.005\"} 1",
            "apiserver_flowcontrol_request_execution_seconds_count{flow_schema=\"service-accounts\",priority_level=\"workload-low\"} 1",
            "apiserver_flowcontrol_work_estimated_seats_bucket{flow_schema=\"service-accounts\",priority_level=\"workload-low\",le=\"2\"} 0",
            "apiserver_flowcontrol_work_estimated_seats_bucket{flow_schema=\"service-accounts\",priority_level=\"workload-low\",le=\"4\"} 1",
            "apiserver_flowcontrol_nominal_limit_seats{priority_level=\"workload-low\"} 245",
            "apiserver_flowcontrol_request_concurrency_limit{priority_level=\"workload-low\"} 245",
        ] {
            assert!(out.lines().any(|l| l == line), "missing {line} in\n{out}");
        }
    }
}
