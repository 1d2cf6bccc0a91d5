//! End to end: `rkcm up` serving `metrics.k8s.io` from the simulated pods' usage annotations, and
//! the horizontal pod autoscaler scaling a Deployment on it, driven by the real kubectl, in one
//! cluster with short sync, refresh and stabilization periods.

mod common;

use std::time::Duration;

use common::Cluster;

const MINUTE: Duration = Duration::from_secs(60);

fn apply(cluster: &Cluster, manifest: &str) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("manifest.yaml");
    std::fs::write(&path, manifest).expect("manifest written");
    cluster.kubectl(&["apply", "-f", path.to_str().expect("utf-8 path")]);
}

fn deployment(name: &str, replicas: u32, cpu_usage: &str) -> String {
    format!(
        r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
spec:
  replicas: {replicas}
  selector:
    matchLabels: {{app: {name}}}
  template:
    metadata:
      labels: {{app: {name}}}
      annotations:
        rkcm.io/cpu-usage: "{cpu_usage}"
        rkcm.io/memory-usage: "64Mi"
    spec:
      containers:
        - name: {name}
          image: nginx
          resources:
            requests: {{cpu: 100m}}
"#
    )
}

/// kube's replica count for a utilization target without `behavior`: `ceil(current × usage
/// ratio)` (`GetResourceReplicas`), capped by max(2 × current, 4) and `maxReplicas` and floored
/// at `minReplicas` (`convertDesiredReplicasWithRules`).
fn kube_desired(
    current: i64,
    usage_m: i64,
    request_m: i64,
    target: i64,
    min: i64,
    max: i64,
) -> i64 {
    let utilization = usage_m * 100 / request_m;
    let ratio = utilization as f64 / target as f64;
    let desired = if (1.0 - ratio).abs() <= 0.1 {
        current
    } else {
        (ratio * current as f64).ceil() as i64
    };
    desired.min((2 * current).max(4)).min(max).max(min)
}

#[test]
fn metrics_api_and_horizontal_pod_autoscaler() {
    let cluster = Cluster::start(&[
        "--pod-ready-delay",
        "100ms",
        "--metric-resolution",
        "2s",
        "--horizontal-pod-autoscaler-sync-period",
        "2s",
        "--horizontal-pod-autoscaler-downscale-stabilization",
        "10s",
        "--horizontal-pod-autoscaler-cpu-initialization-period",
        "5s",
        "--horizontal-pod-autoscaler-initial-readiness-delay",
        "1s",
    ]);

    // The metrics group is discovered, as an aggregated metrics-server's would be.
    let resources = cluster.kubectl(&["api-resources", "--api-group=metrics.k8s.io"]);
    assert!(resources.contains("PodMetrics"), "{resources}");
    assert!(resources.contains("NodeMetrics"), "{resources}");

    // `kubectl top` shows the annotated usage once a snapshot has been taken.
    apply(&cluster, &deployment("web", 1, "200m"));
    let pod_line = cluster.eventually("kubectl top pod shows the annotated usage", MINUTE, || {
        let out = cluster.kubectl_output(&["top", "pod", "-l", "app=web", "--no-headers"]);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        (out.status.success() && text.contains("200m")).then_some(text)
    });
    assert!(pod_line.contains("64Mi"), "{pod_line}");
    let nodes = cluster.eventually("kubectl top node sums the pods' usage", MINUTE, || {
        let out = cluster.kubectl_output(&["top", "node", "--no-headers"]);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        (out.status.success() && text.contains("200m")).then_some(text)
    });
    assert_eq!(nodes.lines().count(), 3, "{nodes}");
    let raw = cluster.kubectl(&[
        "get",
        "--raw",
        "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods",
    ]);
    let list: serde_json::Value = serde_json::from_str(&raw).expect("PodMetricsList");
    assert_eq!(list["kind"], "PodMetricsList");
    assert_eq!(list["items"][0]["window"], "2s");

    // The autoscaler scales up by kube's formula: 200m of 100m requested is 200 % against 50 %.
    cluster.kubectl(&[
        "autoscale",
        "deployment",
        "web",
        "--cpu-percent=50",
        "--min=1",
        "--max=5",
    ]);
    let first = kube_desired(1, 200, 100, 50, 1, 5);
    assert_eq!(first, 4);
    let expected = format!(
        "New size: {first}; reason: cpu resource utilization (percentage of request) above target"
    );
    cluster.eventually("the first rescale event", MINUTE, || {
        let events = cluster.kubectl(&[
            "get",
            "events",
            "--field-selector",
            "involvedObject.kind=HorizontalPodAutoscaler,reason=SuccessfulRescale",
            "-o",
            "jsonpath={.items[*].message}",
        ]);
        events.contains(&expected).then_some(())
    });
    // With four pods at 200 % it goes on to the maximum.
    let then = kube_desired(first, 200, 100, 50, 1, 5);
    cluster.eventually("the Deployment at the maximum", MINUTE, || {
        let replicas = cluster.jsonpath(&["get", "deployment", "web"], "{.spec.replicas}");
        (replicas == then.to_string()).then_some(())
    });
    let hpa = cluster.eventually("kubectl get hpa shows the targets", MINUTE, || {
        let out = cluster.kubectl(&["get", "hpa", "web"]);
        out.contains("cpu: 200%/50%").then_some(out)
    });
    assert!(hpa.contains("Deployment/web"), "{hpa}");
    let describe = cluster.kubectl(&["describe", "hpa", "web"]);
    for needle in [
        "AbleToScale",
        "ScalingActive",
        "ValidMetricFound",
        "ScalingLimited",
        "SuccessfulRescale",
        &expected,
    ] {
        assert!(
            describe.contains(needle),
            "describe lacks {needle}:\n{describe}"
        );
    }

    // Usage drops: after the (shortened) stabilization window it scales down to the minimum.
    cluster.kubectl(&[
        "patch",
        "deployment",
        "web",
        "-p",
        r#"{"spec":{"template":{"metadata":{"annotations":{"rkcm.io/cpu-usage":"10m"}}}}}"#,
    ]);
    let low = kube_desired(then, 10, 100, 50, 1, 5);
    assert_eq!(low, 1);
    cluster.eventually(
        "the Deployment scaled down to the minimum",
        2 * MINUTE,
        || {
            let replicas = cluster.jsonpath(&["get", "deployment", "web"], "{.spec.replicas}");
            (replicas == low.to_string()).then_some(())
        },
    );
    let describe = cluster.kubectl(&["describe", "hpa", "web"]);
    assert!(
        describe.contains("New size: 1; reason: All metrics below target"),
        "{describe}"
    );
    let last_scale = cluster.jsonpath(&["get", "hpa", "web"], "{.status.lastScaleTime}");
    assert!(!last_scale.is_empty());

    // Custom metrics are not served: a Pods metric fails with kube's condition and event.
    apply(&cluster, &deployment("qps", 1, "0"));
    apply(
        &cluster,
        r#"apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: qps
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: qps}
  minReplicas: 1
  maxReplicas: 3
  metrics:
    - type: Pods
      pods:
        metric: {name: requests-per-second}
        target: {type: AverageValue, averageValue: "10"}
"#,
    );
    cluster.eventually(
        "ScalingActive False with FailedGetPodsMetric",
        MINUTE,
        || {
            let reason = cluster.jsonpath(
                &["get", "hpa", "qps"],
                r#"{.status.conditions[?(@.type=="ScalingActive")].reason}"#,
            );
            (reason == "FailedGetPodsMetric").then_some(())
        },
    );
    let events = cluster.kubectl(&[
        "get",
        "events",
        "--field-selector",
        "involvedObject.name=qps,reason=FailedGetPodsMetric",
        "-o",
        "jsonpath={.items[*].message}",
    ]);
    assert!(
        events.contains("unable to get metric requests-per-second: unable to fetch metrics from custom metrics API"),
        "{events}"
    );
    assert_eq!(
        cluster.jsonpath(&["get", "deployment", "qps"], "{.spec.replicas}"),
        "1"
    );
}
