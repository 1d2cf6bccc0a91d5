//! What `rkcm bench all` reports: one [`Scenario`] per scenario, the density ÷ ceiling ratio, the
//! table printed on stdout and the JSON written for comparing runs.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use serde::Serialize;

/// Rows of each profile list printed in the table (the JSON keeps more).
const PROFILE_ROWS: usize = 12;

/// The figures of one scenario.
#[derive(Debug, Clone, Default, Serialize)]
pub(super) struct Scenario {
    /// `density`, `ceiling`, `rollout`, `scale`, `churn` or `hold`.
    pub name: String,
    /// What `objects` counts (`pods`, or `pod creates` for `hold`).
    pub unit: String,
    /// Objects the timed phase handled.
    pub objects: u64,
    /// Wall time of the timed phase.
    pub seconds: f64,
    /// `objects / seconds`.
    pub objects_per_second: f64,
    /// Requests the API server answered during the scenario, by `VERB resource[.group][/sub]`.
    pub requests: BTreeMap<String, f64>,
    /// Pods stored when the memory was read.
    pub pods_held: u64,
    /// RSS of the whole `rkcm up` process with `pods_held` pods stored, MiB.
    pub rss_mib: f64,
    /// `rss_mib` per 1,000 pods held (absent with no pod held).
    pub rss_mib_per_1000_pods: Option<f64>,
    /// Peak RSS of the `rkcm up` process so far (`VmHWM`), MiB.
    pub peak_rss_mib: f64,
    /// CPU seconds (user + system) the `rkcm up` process used during the scenario.
    pub cpu_seconds: f64,
    /// Time from each Deployment's change (creation, template or scale) to its being Available
    /// with every replica updated and available.
    pub deployment_to_available: Option<Latency>,
    /// Pods Ready (seconds since the scenario's start, pods), for the plot.
    pub ready_over_time: Vec<(f64, u64)>,
    /// RSS against pods stored (pods, MiB), for the plot (`hold`).
    pub rss_over_pods: Vec<(u64, f64)>,
    /// Figures particular to the scenario (named with their unit).
    pub extra: BTreeMap<String, f64>,
    /// Where the `up` process spent its CPU during the scenario (`--profile`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<super::profile::Profile>,
}

impl Scenario {
    /// A scenario named `name` whose timed phase handled `objects` `unit` in `elapsed`.
    pub fn new(name: &str, unit: &str, objects: u64, elapsed: Duration) -> Self {
        let seconds = elapsed.as_secs_f64();
        Self {
            name: name.to_string(),
            unit: unit.to_string(),
            objects,
            seconds,
            objects_per_second: rate(objects, seconds),
            ..Self::default()
        }
    }

    /// Records the memory of the `up` process holding `pods` pods.
    pub fn set_memory(&mut self, pods: u64, rss_kib: u64, peak_kib: u64) {
        self.pods_held = pods;
        self.rss_mib = mib(rss_kib);
        self.peak_rss_mib = mib(peak_kib);
        self.rss_mib_per_1000_pods = (pods > 0).then(|| self.rss_mib * 1000.0 / pods as f64);
    }
}

/// p50 and p99 of a set of durations.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(super) struct Latency {
    /// How many were measured.
    pub count: usize,
    pub p50_seconds: f64,
    pub p99_seconds: f64,
    pub max_seconds: f64,
}

impl Latency {
    /// The percentiles of `samples`; `None` when there are none.
    pub fn of(mut samples: Vec<Duration>) -> Option<Self> {
        samples.sort();
        Some(Self {
            count: samples.len(),
            p50_seconds: percentile(&samples, 50.0)?.as_secs_f64(),
            p99_seconds: percentile(&samples, 99.0)?.as_secs_f64(),
            max_seconds: samples.last()?.as_secs_f64(),
        })
    }
}

/// The whole run, as written to `--json`.
#[derive(Debug, Clone, Serialize)]
pub(super) struct Run {
    /// `small`, `large` or `custom`.
    pub size: String,
    pub deployments: usize,
    pub replicas: i32,
    pub hold_pods: usize,
    pub nodes: usize,
    pub concurrency: usize,
    pub pod_ready_delay_seconds: f64,
    /// CPUs this machine has.
    pub cpus: usize,
    /// Rust build profile of the binary (`release` or `debug`).
    pub profile: String,
    pub scenarios: Vec<Scenario>,
    /// density's pods/s ÷ ceiling's, both measured in this run.
    pub density_over_ceiling: Option<f64>,
}

impl Run {
    /// The named scenario, if it ran.
    pub fn scenario(&self, name: &str) -> Option<&Scenario> {
        self.scenarios.iter().find(|s| s.name == name)
    }

    /// Sets `density_over_ceiling` from the scenarios that ran.
    pub fn compute_ratio(&mut self) {
        self.density_over_ceiling = ratio(self.scenario("density"), self.scenario("ceiling"));
    }
}

/// Objects per second of `density` ÷ those of `ceiling`, when both ran and the ceiling moved.
pub(super) fn ratio(density: Option<&Scenario>, ceiling: Option<&Scenario>) -> Option<f64> {
    let (d, c) = (density?, ceiling?);
    (c.objects_per_second > 0.0).then(|| d.objects_per_second / c.objects_per_second)
}

/// The nearest-rank percentile `p` (0–100) of `sorted` (ascending): the smallest value with at
/// least `p` % of the values at or below it. `None` for an empty slice.
pub(super) fn percentile<T: Copy>(sorted: &[T], p: f64) -> Option<T> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (p / 100.0 * sorted.len() as f64).ceil() as usize;
    sorted.get(rank.clamp(1, sorted.len()) - 1).copied()
}

fn rate(objects: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        objects as f64 / seconds
    } else {
        0.0
    }
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// The table printed on stdout: one row per scenario, then each one's requests.
pub(super) fn table(run: &Run) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "rkcm bench all --size {}: {} Deployments × {} replicas, hold {} pods, {} nodes, concurrency {}, {} build, {} CPUs",
        run.size,
        run.deployments,
        run.replicas,
        run.hold_pods,
        run.nodes,
        run.concurrency,
        run.profile,
        run.cpus
    );
    let header = [
        "scenario",
        "objects",
        "time s",
        "objects/s",
        "pods held",
        "RSS MiB",
        "MiB/1k pods",
        "CPU s",
        "D→Available p50/p99 s",
    ];
    let rows: Vec<[String; 9]> = run
        .scenarios
        .iter()
        .map(|s| {
            [
                s.name.clone(),
                format!("{} {}", s.objects, s.unit),
                format!("{:.2}", s.seconds),
                format!("{:.0}", s.objects_per_second),
                s.pods_held.to_string(),
                format!("{:.1}", s.rss_mib),
                s.rss_mib_per_1000_pods
                    .map_or("-".into(), |v| format!("{v:.1}")),
                format!("{:.1}", s.cpu_seconds),
                s.deployment_to_available.map_or("-".into(), |l| {
                    format!("{:.2}/{:.2}", l.p50_seconds, l.p99_seconds)
                }),
            ]
        })
        .collect();
    let widths: Vec<usize> = (0..header.len())
        .map(|i| {
            rows.iter()
                .map(|r| r[i].chars().count())
                .chain([header[i].chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: &[String]| {
        cells
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (c, w))| {
                if i == 0 {
                    format!("{c:<w$}")
                } else {
                    format!("{c:>w$}")
                }
            })
            .collect::<Vec<_>>()
            .join("  ")
    };
    let _ = writeln!(out, "{}", line(&header.map(String::from)).trim_end());
    for r in &rows {
        let _ = writeln!(out, "{}", line(r));
    }
    if let Some(r) = run.density_over_ceiling {
        let _ = writeln!(out, "density ÷ ceiling (pods/s): {r:.2}");
    }
    for s in &run.scenarios {
        let requests = s
            .requests
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", ");
        let _ = writeln!(out, "{} requests: {requests}", s.name);
        if !s.extra.is_empty() {
            let extra = s
                .extra
                .iter()
                .map(|(k, v)| format!("{k} {v:.2}"))
                .collect::<Vec<_>>()
                .join(", ");
            let _ = writeln!(out, "{} also: {extra}", s.name);
        }
        if let Some(profile) = &s.profile {
            let _ = writeln!(
                out,
                "{} profile ({}), inclusive / self % of the `up` process's samples:",
                s.name,
                profile.data.display()
            );
            for hot in profile.inclusive.iter().take(PROFILE_ROWS) {
                let _ = writeln!(
                    out,
                    "  {:6.2} {:6.2}  {}",
                    hot.inclusive_percent, hot.self_percent, hot.symbol
                );
            }
            let _ = writeln!(out, "{} profile, self time:", s.name);
            for hot in profile.self_time.iter().take(PROFILE_ROWS) {
                let _ = writeln!(out, "  {:6.2}  {}", hot.self_percent, hot.symbol);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let v: Vec<u32> = (1..=100).collect();
        assert_eq!(percentile(&v, 50.0), Some(50));
        assert_eq!(percentile(&v, 99.0), Some(99));
        assert_eq!(percentile(&v, 100.0), Some(100));
        assert_eq!(percentile(&v, 0.0), Some(1));
        assert_eq!(percentile(&[7], 99.0), Some(7));
        assert_eq!(percentile(&[1, 2, 3, 4], 50.0), Some(2));
        assert_eq!(percentile(&[1, 2, 3, 4], 51.0), Some(3));
        assert_eq!(percentile::<u32>(&[], 50.0), None);
    }

    #[test]
    fn latency_sorts_its_samples() {
        let ms = |v: u64| Duration::from_millis(v);
        let l = Latency::of(vec![ms(300), ms(100), ms(200)]).expect("samples");
        assert_eq!(l.count, 3);
        assert_eq!(l.p50_seconds, 0.2);
        assert_eq!(l.p99_seconds, 0.3);
        assert_eq!(l.max_seconds, 0.3);
        assert_eq!(Latency::of(Vec::new()), None);
    }

    #[test]
    fn ratio_is_density_over_ceiling_in_objects_per_second() {
        let d = Scenario::new("density", "pods", 800, Duration::from_secs(2));
        let c = Scenario::new("ceiling", "pods", 1000, Duration::from_secs(2));
        assert_eq!(d.objects_per_second, 400.0);
        assert_eq!(ratio(Some(&d), Some(&c)), Some(0.8));
        assert_eq!(ratio(Some(&d), None), None);
        let stalled = Scenario::new("ceiling", "pods", 0, Duration::ZERO);
        assert_eq!(stalled.objects_per_second, 0.0);
        assert_eq!(ratio(Some(&d), Some(&stalled)), None);
        let mut run = Run {
            size: "small".into(),
            deployments: 1,
            replicas: 1,
            hold_pods: 1,
            nodes: 1,
            concurrency: 1,
            pod_ready_delay_seconds: 0.0,
            cpus: 2,
            profile: "debug".into(),
            scenarios: vec![d, c],
            density_over_ceiling: None,
        };
        run.compute_ratio();
        assert_eq!(run.density_over_ceiling, Some(0.8));
        let table = table(&run);
        assert!(
            table.contains("density ÷ ceiling (pods/s): 0.80"),
            "{table}"
        );
        assert!(table.lines().any(|l| l.starts_with("density ")), "{table}");
    }

    #[test]
    fn memory_per_thousand_pods() {
        let mut s = Scenario::new("hold", "pods", 2000, Duration::from_secs(1));
        s.set_memory(2000, 200 * 1024, 300 * 1024);
        assert_eq!(s.rss_mib, 200.0);
        assert_eq!(s.peak_rss_mib, 300.0);
        assert_eq!(s.rss_mib_per_1000_pods, Some(100.0));
        s.set_memory(0, 1024, 1024);
        assert_eq!(s.rss_mib_per_1000_pods, None);
    }
}
