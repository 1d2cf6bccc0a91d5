//! The `--svg` plot of `rkcm bench all`, written by hand: pods Ready over time per scenario, and
//! the `up` process's RSS against the pods it holds.

use std::fmt::Write as _;

use super::report::Run;

const WIDTH: f64 = 960.0;
const HEIGHT: f64 = 400.0;
const PANEL_WIDTH: f64 = 400.0;
const PANEL_HEIGHT: f64 = 300.0;
const COLORS: [&str; 6] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b",
];

/// A linear map from data values `[d0, d1]` onto pixels `[p0, p1]` (`p1 < p0` for a y axis).
#[derive(Debug, Clone, Copy)]
pub(super) struct Axis {
    d0: f64,
    d1: f64,
    p0: f64,
    p1: f64,
}

impl Axis {
    pub fn new(d0: f64, d1: f64, p0: f64, p1: f64) -> Self {
        Self { d0, d1, p0, p1 }
    }

    /// The pixel of `v` (values outside the domain are clamped to it).
    pub fn map(&self, v: f64) -> f64 {
        let span = self.d1 - self.d0;
        let t = if span > 0.0 {
            ((v - self.d0) / span).clamp(0.0, 1.0)
        } else {
            0.0
        };
        self.p0 + t * (self.p1 - self.p0)
    }
}

/// The smallest "round" number (1, 2 or 5 × 10ⁿ) at or above `v`, so that axes end on a tick; 1
/// for nothing to show.
pub(super) fn nice_max(v: f64) -> f64 {
    if v.is_nan() || v <= 0.0 {
        return 1.0;
    }
    let magnitude = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|c| *c >= v * (1.0 - 1e-9))
        .unwrap_or(10.0 * magnitude)
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn number(v: f64) -> String {
    if v >= 1000.0 && (v / 1000.0).fract() == 0.0 {
        format!("{}k", v / 1000.0)
    } else if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// One panel: axes with five ticks each, a title, and one polyline per series.
struct Panel<'a> {
    left: f64,
    top: f64,
    title: &'a str,
    x_label: &'a str,
    y_label: &'a str,
    series: Vec<(String, Vec<(f64, f64)>)>,
}

impl Panel<'_> {
    fn draw(&self, out: &mut String) {
        let x_max = nice_max(
            self.series
                .iter()
                .flat_map(|(_, p)| p.iter().map(|(x, _)| *x))
                .fold(0.0, f64::max),
        );
        let y_max = nice_max(
            self.series
                .iter()
                .flat_map(|(_, p)| p.iter().map(|(_, y)| *y))
                .fold(0.0, f64::max),
        );
        let (l, t) = (self.left, self.top);
        let (r, b) = (l + PANEL_WIDTH, t + PANEL_HEIGHT);
        let x = Axis::new(0.0, x_max, l, r);
        let y = Axis::new(0.0, y_max, b, t);
        let _ = writeln!(
            out,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-weight="bold">{}</text>"#,
            (l + r) / 2.0,
            t - 12.0,
            escape(self.title)
        );
        let _ = writeln!(
            out,
            r##"<rect x="{l:.1}" y="{t:.1}" width="{PANEL_WIDTH:.1}" height="{PANEL_HEIGHT:.1}" fill="none" stroke="#444"/>"##
        );
        for i in 0..=5 {
            let f = i as f64 / 5.0;
            let (xv, yv) = (x_max * f, y_max * f);
            let (px, py) = (x.map(xv), y.map(yv));
            let _ = writeln!(
                out,
                r##"<line x1="{px:.1}" y1="{b:.1}" x2="{px:.1}" y2="{:.1}" stroke="#444"/><text x="{px:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
                b + 4.0,
                b + 16.0,
                number(xv)
            );
            let _ = writeln!(
                out,
                r##"<line x1="{:.1}" y1="{py:.1}" x2="{l:.1}" y2="{py:.1}" stroke="#444"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
                l - 4.0,
                l - 6.0,
                py + 4.0,
                number(yv)
            );
        }
        let _ = writeln!(
            out,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            (l + r) / 2.0,
            b + 34.0,
            escape(self.x_label)
        );
        let _ = writeln!(
            out,
            r#"<text transform="translate({:.1},{:.1}) rotate(-90)" text-anchor="middle">{}</text>"#,
            l - 44.0,
            (t + b) / 2.0,
            escape(self.y_label)
        );
        for (i, (name, points)) in self.series.iter().enumerate() {
            let color = COLORS[i % COLORS.len()];
            let coords = points
                .iter()
                .map(|(px, py)| format!("{:.1},{:.1}", x.map(*px), y.map(*py)))
                .collect::<Vec<_>>()
                .join(" ");
            let _ = writeln!(
                out,
                r#"<polyline fill="none" stroke="{color}" stroke-width="1.5" points="{coords}"/>"#
            );
            let ly = t + 14.0 + 16.0 * i as f64;
            let _ = writeln!(
                out,
                r#"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{color}" stroke-width="3"/><text x="{:.1}" y="{:.1}">{}</text>"#,
                l + 10.0,
                ly - 4.0,
                l + 26.0,
                ly - 4.0,
                l + 30.0,
                ly,
                escape(name)
            );
        }
    }
}

/// The whole plot as an SVG document.
pub(super) fn plot(run: &Run) -> String {
    let ready = Panel {
        left: 70.0,
        top: 50.0,
        title: "Pods Ready over time",
        x_label: "seconds since the scenario started",
        y_label: "pods Ready",
        series: run
            .scenarios
            .iter()
            .filter(|s| !s.ready_over_time.is_empty())
            .map(|s| {
                let points = s
                    .ready_over_time
                    .iter()
                    .map(|(t, n)| (*t, *n as f64))
                    .collect();
                (s.name.clone(), points)
            })
            .collect(),
    };
    let memory = Panel {
        left: 70.0 + PANEL_WIDTH + 90.0,
        top: 50.0,
        title: "RSS of rkcm up against pods held",
        x_label: "pods stored",
        y_label: "RSS MiB",
        series: run
            .scenarios
            .iter()
            .filter(|s| !s.rss_over_pods.is_empty())
            .map(|s| {
                let points = s
                    .rss_over_pods
                    .iter()
                    .map(|(p, m)| (*p as f64, *m))
                    .collect();
                (s.name.clone(), points)
            })
            .collect(),
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(
        out,
        r#"<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>"#
    );
    let _ = writeln!(
        out,
        r#"<text x="{:.1}" y="18" text-anchor="middle" font-size="13">{}</text>"#,
        WIDTH / 2.0,
        escape(&format!(
            "rkcm bench all --size {}: {} Deployments × {} replicas, hold {} pods ({} build)",
            run.size, run.deployments, run.replicas, run.hold_pods, run.profile
        ))
    );
    ready.draw(&mut out);
    memory.draw(&mut out);
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::report::Scenario;
    use super::*;

    #[test]
    fn axes_map_the_domain_onto_pixels_and_clamp() {
        let x = Axis::new(0.0, 100.0, 70.0, 470.0);
        assert_eq!(x.map(0.0), 70.0);
        assert_eq!(x.map(50.0), 270.0);
        assert_eq!(x.map(100.0), 470.0);
        assert_eq!(x.map(200.0), 470.0);
        assert_eq!(x.map(-5.0), 70.0);
        // A y axis runs upwards.
        let y = Axis::new(0.0, 10.0, 350.0, 50.0);
        assert_eq!(y.map(10.0), 50.0);
        assert_eq!(y.map(5.0), 200.0);
        // An empty domain puts everything at the origin instead of dividing by zero.
        assert_eq!(Axis::new(0.0, 0.0, 1.0, 2.0).map(3.0), 1.0);
    }

    #[test]
    fn axes_end_on_round_numbers() {
        assert_eq!(nice_max(0.0), 1.0);
        assert_eq!(nice_max(f64::NAN), 1.0);
        assert_eq!(nice_max(1.0), 1.0);
        assert_eq!(nice_max(1.2), 2.0);
        assert_eq!(nice_max(3.0), 5.0);
        assert_eq!(nice_max(7.5), 10.0);
        assert_eq!(nice_max(10_000.0), 10_000.0);
        assert_eq!(nice_max(10_001.0), 20_000.0);
        assert_eq!(nice_max(0.03), 0.05);
        assert_eq!(number(20_000.0), "20k");
        assert_eq!(number(4.0), "4");
        assert_eq!(number(0.5), "0.5");
    }

    #[test]
    fn the_plot_has_a_line_per_series_in_both_panels() {
        let mut density = Scenario::new("density", "pods", 100, Duration::from_secs(2));
        density.ready_over_time = vec![(0.0, 0), (1.0, 50), (2.0, 100)];
        let mut hold = Scenario::new("hold", "pod creates", 1000, Duration::from_secs(1));
        hold.rss_over_pods = vec![(0, 30.0), (1000, 45.5)];
        let run = Run {
            size: "small<&>".into(),
            deployments: 10,
            replicas: 10,
            hold_pods: 1000,
            nodes: 2,
            concurrency: 16,
            pod_ready_delay_seconds: 0.0,
            cpus: 2,
            profile: "debug".into(),
            scenarios: vec![density, hold],
            density_over_ceiling: None,
        };
        let svg = plot(&run);
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert!(svg.contains("small&lt;&amp;&gt;"), "titles are escaped");
        // density: 100 pods at 2 s is the top-right corner of the first panel (x 0..2, y 0..100).
        assert!(svg.contains("470.0,50.0"), "{svg}");
        // hold: 1,000 pods at 45.5 MiB on axes 0..1000 × 0..50.
        let (l, b) = (70.0 + PANEL_WIDTH + 90.0, 50.0 + PANEL_HEIGHT);
        let y = b - 45.5 / 50.0 * PANEL_HEIGHT;
        assert!(
            svg.contains(&format!("{:.1},{:.1}", l + PANEL_WIDTH, y)),
            "{svg}"
        );
    }
}
