//! The process-wide Prometheus registry, with client-go's `workqueue_*` metric families registered in it.
//!
//! Every component registers its metrics here ([`register`]) so that one `/metrics` endpoint ([`encode_text`])
//! serves them all. Values that are only meaningful at scrape time (how long in-flight work has been running)
//! are refreshed by hooks ([`on_scrape`]) that run at the start of each [`encode_text`].

use std::sync::OnceLock;

use parking_lot::Mutex;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::{Metric, Registry};

/// A scrape-time hook; returns `false` once the thing it refreshes is gone, and is then dropped.
type ScrapeHook = Box<dyn Fn() -> bool + Send + Sync>;

static REGISTRY: OnceLock<Mutex<Registry>> = OnceLock::new();
static SCRAPE_HOOKS: Mutex<Vec<ScrapeHook>> = Mutex::new(Vec::new());

/// The process-wide registry. Hold the lock briefly: registering and encoding both take it.
pub fn registry() -> &'static Mutex<Registry> {
    REGISTRY.get_or_init(|| Mutex::new(Registry::default()))
}

/// Registers `metric` under `name` in the process-wide registry and returns it, so callers keep a handle
/// (metrics are cheap clones sharing one value). Counters get `_total` appended by the encoder.
///
/// Registering the same name twice yields two families with the same name in the output; register each
/// metric once (for example behind a `OnceLock`).
pub fn register<M: Metric + Clone>(name: &str, help: &str, metric: M) -> M {
    registry().lock().register(name, help, metric.clone());
    metric
}

/// Runs `f` with the process-wide registry locked, for registering several metrics or a sub-registry at once.
pub fn register_with<R>(f: impl FnOnce(&mut Registry) -> R) -> R {
    f(&mut registry().lock())
}

/// Runs `hook` at the start of every [`encode_text`], until it returns `false`.
pub fn on_scrape(hook: impl Fn() -> bool + Send + Sync + 'static) {
    SCRAPE_HOOKS.lock().push(Box::new(hook));
}

/// Everything in the registry, in the OpenMetrics text format (which Prometheus scrapes).
pub fn encode_text() -> String {
    SCRAPE_HOOKS.lock().retain(|hook| hook());
    let mut out = String::new();
    let registry = registry().lock();
    if let Err(e) = prometheus_client::encoding::text::encode(&mut out, &registry) {
        tracing::error!(error = %e, "failed to encode metrics");
    }
    out
}

/// Label set of the work queue metrics: the queue's name.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct QueueLabels {
    /// The queue's name, as given to `RateLimitingQueue::new`.
    pub name: String,
}

type HistogramFamily = Family<QueueLabels, Histogram, fn() -> Histogram>;

fn duration_histogram() -> Histogram {
    // component-base workqueue metrics: ExponentialBuckets(10e-7, 10, 10).
    Histogram::new(exponential_buckets(1e-6, 10.0, 10))
}

/// The `workqueue_*` families (names, help texts and buckets as in component-base `workqueue/metrics.go`).
pub(crate) struct WorkqueueFamilies {
    depth: Family<QueueLabels, Gauge>,
    adds: Family<QueueLabels, Counter>,
    latency: HistogramFamily,
    work_duration: HistogramFamily,
    unfinished: Family<QueueLabels, Gauge<f64, std::sync::atomic::AtomicU64>>,
    longest_running: Family<QueueLabels, Gauge<f64, std::sync::atomic::AtomicU64>>,
    retries: Family<QueueLabels, Counter>,
}

fn workqueue_families() -> &'static WorkqueueFamilies {
    static FAMILIES: OnceLock<WorkqueueFamilies> = OnceLock::new();
    FAMILIES.get_or_init(|| WorkqueueFamilies {
        depth: register("workqueue_depth", "Current depth of workqueue", Family::default()),
        adds: register("workqueue_adds", "Total number of adds handled by workqueue", Family::default()),
        latency: register(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested.",
            Family::new_with_constructor(duration_histogram as fn() -> Histogram),
        ),
        work_duration: register(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes.",
            Family::new_with_constructor(duration_histogram as fn() -> Histogram),
        ),
        unfinished: register(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has done that is in progress and hasn't been observed by work_duration. \
             Large values indicate stuck threads. One can deduce the number of stuck threads by observing the \
             rate at which this increases.",
            Family::default(),
        ),
        longest_running: register(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running.",
            Family::default(),
        ),
        retries: register("workqueue_retries", "Total number of retries handled by workqueue", Family::default()),
    })
}

/// The metric handles of one named queue.
#[derive(Clone, Debug)]
pub(crate) struct QueueMetricHandles {
    pub depth: Gauge,
    pub adds: Counter,
    pub latency: Histogram,
    pub work_duration: Histogram,
    pub unfinished: Gauge<f64, std::sync::atomic::AtomicU64>,
    pub longest_running: Gauge<f64, std::sync::atomic::AtomicU64>,
    pub retries: Counter,
}

impl QueueMetricHandles {
    /// Handles for the queue called `name`; queues with the same name share them.
    pub fn for_queue(name: &str) -> Self {
        let f = workqueue_families();
        let labels = QueueLabels {
            name: name.to_string(),
        };
        Self {
            depth: f.depth.get_or_create(&labels).clone(),
            adds: f.adds.get_or_create(&labels).clone(),
            latency: f.latency.get_or_create(&labels).clone(),
            work_duration: f.work_duration.get_or_create(&labels).clone(),
            unfinished: f.unfinished.get_or_create(&labels).clone(),
            longest_running: f.longest_running.get_or_create(&labels).clone(),
            retries: f.retries.get_or_create(&labels).clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registered_metrics_appear_in_the_text_output() {
        let gauge: Gauge = register_with(|r| {
            let g = Gauge::default();
            r.register(
                "rkcm_metrics_test_level",
                "Level seen by the metrics test",
                g.clone(),
            );
            g
        });
        gauge.set(7);
        let counter: Counter = register(
            "rkcm_metrics_test_events",
            "Events seen by the metrics test",
            Counter::default(),
        );
        counter.inc();
        let handles = QueueMetricHandles::for_queue("metrics-test");
        handles.adds.inc();
        handles.depth.set(3);
        let text = encode_text();
        assert!(text.contains("rkcm_metrics_test_events_total 1"), "{text}");
        assert!(text.contains("rkcm_metrics_test_level 7"), "{text}");
        assert!(
            text.contains("workqueue_adds_total{name=\"metrics-test\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("workqueue_depth{name=\"metrics-test\"} 3"),
            "{text}"
        );
        assert!(
            text.contains("# TYPE workqueue_queue_duration_seconds histogram"),
            "{text}"
        );
    }

    #[test]
    fn scrape_hooks_run_until_they_report_they_are_gone() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::sync::Arc;
        let runs = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&runs);
        on_scrape(move || counted.fetch_add(1, Ordering::SeqCst) < 1);
        encode_text();
        encode_text();
        encode_text();
        assert_eq!(
            runs.load(Ordering::SeqCst),
            2,
            "the hook is dropped after returning false"
        );
    }
}
