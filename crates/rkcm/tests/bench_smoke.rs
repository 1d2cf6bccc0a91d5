//! `rkcm bench all --size small`, as CI runs it: it completes, and its JSON and SVG are
//! well-formed with every scenario. Nothing about time is asserted.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const SCENARIOS: [&str; 7] = [
    "ceiling", "density", "rollout", "scale", "churn", "burst", "hold",
];

fn number(v: &Value, field: &str) -> f64 {
    v[field]
        .as_f64()
        .unwrap_or_else(|| panic!("{field} is not a number in {v}"))
}

#[test]
fn the_small_suite_runs_and_reports_every_scenario() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let json_path = dir.path().join("bench.json");
    let svg_path = dir.path().join("bench.svg");
    let mut child = Command::new(env!("CARGO_BIN_EXE_rkcm"))
        .args(["bench", "all", "--size", "small", "--json"])
        .arg(&json_path)
        .arg("--svg")
        .arg(&svg_path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("rkcm starts");
    // A bound on a hung run, not a timing assertion.
    let deadline = Instant::now() + Duration::from_secs(600);
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting for rkcm") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("rkcm bench all --size small still running after 10 minutes");
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let output = child.wait_with_output().expect("rkcm output");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        status.success(),
        "rkcm bench failed: {status}\nstdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // Stderr is no terminal here: no progress line is drawn into it.
    assert!(
        !String::from_utf8_lossy(&output.stderr).contains('\r'),
        "progress drawn without a terminal"
    );

    let run: Value =
        serde_json::from_str(&std::fs::read_to_string(&json_path).expect("JSON written"))
            .expect("the JSON parses");
    assert_eq!(run["size"], "small");
    let (deployments, replicas) = (number(&run, "deployments"), number(&run, "replicas"));
    let pods = deployments * replicas;
    let scenarios = run["scenarios"].as_array().expect("scenarios");
    let names: Vec<&str> = scenarios
        .iter()
        .filter_map(|s| s["name"].as_str())
        .collect();
    assert_eq!(names, SCENARIOS);
    for s in scenarios {
        let name = s["name"].as_str().unwrap_or_default();
        assert!(number(s, "seconds") > 0.0, "{name}: {s}");
        assert!(number(s, "objects_per_second") > 0.0, "{name}: {s}");
        assert!(number(s, "rss_mib") > 0.0, "{name}: {s}");
        assert!(
            number(s, "peak_rss_mib") >= number(s, "rss_mib"),
            "{name}: {s}"
        );
        assert!(number(s, "cpu_seconds") >= 0.0, "{name}: {s}");
        assert!(number(s, "rss_mib_per_1000_pods") > 0.0, "{name}: {s}");
        let requests = s["requests"]
            .as_object()
            .expect("requests by verb and resource");
        assert!(!requests.is_empty(), "{name}: no request counted");
        let expected_objects = match name {
            "ceiling" | "density" | "rollout" | "churn" => pods,
            "scale" => 2.0 * pods,
            "burst" | "hold" => number(s, "objects"),
            other => panic!("unexpected scenario {other}"),
        };
        assert_eq!(number(s, "objects"), expected_objects, "{name}");
        match name {
            "density" | "rollout" | "scale" => {
                let l = &s["deployment_to_available"];
                assert_eq!(
                    number(l, "count") as usize,
                    if name == "scale" { 2 } else { 1 } * deployments as usize,
                    "{name}: {l}"
                );
                assert!(
                    number(l, "p50_seconds") <= number(l, "p99_seconds"),
                    "{name}: {l}"
                );
                let curve = s["ready_over_time"].as_array().expect("curve");
                let last = curve.last().and_then(|p| p[1].as_f64());
                assert_eq!(last, Some(pods), "{name}: ends with every pod Ready");
            }
            "ceiling" | "churn" => {
                assert!(s["deployment_to_available"].is_null());
                let curve = s["ready_over_time"].as_array().expect("curve");
                assert_eq!(curve.last().and_then(|p| p[1].as_f64()), Some(pods));
            }
            "hold" => {
                assert!(number(s, "objects") >= 1000.0);
                assert_eq!(number(s, "pods_held"), number(s, "objects"));
                assert!(s["rss_over_pods"].as_array().is_some_and(|c| c.len() >= 2));
                assert!(number(&s["extra"], "idle_cpu_percent") >= 0.0);
            }
            _ => {}
        }
    }
    // Requests are the server's own counters: the ceiling's client made exactly these writes.
    let ceiling = &scenarios[0]["requests"];
    assert_eq!(number(ceiling, "POST pods"), pods);
    assert_eq!(number(ceiling, "PATCH pods/status"), pods);
    assert_eq!(number(ceiling, "DELETE pods"), pods);
    // Density's pods were made by the ReplicaSet controller and bound by the scheduler.
    let density = &scenarios[1]["requests"];
    assert_eq!(number(density, "POST deployments.apps"), deployments);
    assert!(number(density, "POST pods") >= pods);
    assert!(number(density, "POST pods/binding") >= pods);
    assert!(number(&run, "density_over_ceiling") > 0.0);

    for name in SCENARIOS {
        assert!(
            stdout.lines().any(|l| l.starts_with(name)),
            "table row {name}:\n{stdout}"
        );
    }
    let svg = std::fs::read_to_string(&svg_path).expect("SVG written");
    assert!(svg.starts_with("<svg ") && svg.trim_end().ends_with("</svg>"));
    // Five Ready curves and hold's RSS curve.
    assert_eq!(svg.matches("<polyline").count(), 6, "{svg}");
}
