//! The Pod table: `printPod` from `pkg/printers/internalversion/printers.go`.

use jiff::Timestamp;
use serde_json::{json, Value};

use super::{
    age, array_at, col, int_at, name, since, str_at, time_at, wide, Column, Description, AGE, NAME,
};

const POD_STATUS: &str = "io.k8s.api.core.v1.PodStatus";
const POD_SPEC: &str = "io.k8s.api.core.v1.PodSpec";

/// Pod columns.
pub(super) const COLUMNS: &[Column] = &[
    NAME,
    col(
        "Ready",
        "string",
        Description::Text("The aggregate readiness state of this pod for accepting traffic."),
    ),
    col(
        "Status",
        "string",
        Description::Text("The aggregate status of the containers in this pod."),
    ),
    col(
        "Restarts",
        "string",
        Description::Text("The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."),
    ),
    AGE,
    wide("IP", "string", Description::Field(POD_STATUS, "podIP")),
    wide("Node", "string", Description::Field(POD_SPEC, "nodeName")),
    wide(
        "Nominated Node",
        "string",
        Description::Field(POD_STATUS, "nominatedNodeName"),
    ),
    wide(
        "Readiness Gates",
        "string",
        Description::Field(POD_SPEC, "readinessGates"),
    ),
];

/// `row.Conditions` for pods that finished.
pub(super) fn conditions(pod: &Value) -> Option<Value> {
    match str_at(pod, "/status/phase") {
        "Succeeded" => Some(
            json!([{"type":"Completed","status":"True","reason":"Succeeded",
            "message":"The pod has completed successfully."}]),
        ),
        "Failed" => Some(
            json!([{"type":"Completed","status":"True","reason":"Failed",
            "message":"The pod failed."}]),
        ),
        _ => None,
    }
}

fn condition_true(pod: &Value, type_: &str) -> bool {
    array_at(pod, "/status/conditions")
        .iter()
        .any(|c| str_at(c, "/type") == type_ && str_at(c, "/status") == "True")
}

/// Whether an init container is a sidecar (`restartPolicy: Always`).
fn is_restartable_init_container(pod: &Value, name: &str) -> bool {
    array_at(pod, "/spec/initContainers")
        .iter()
        .any(|c| str_at(c, "/name") == name && str_at(c, "/restartPolicy") == "Always")
}

fn last_terminated(status: &Value) -> Option<Timestamp> {
    time_at(status, "/lastState/terminated/finishedAt")
}

fn later(a: Option<Timestamp>, b: Option<Timestamp>) -> Option<Timestamp> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

fn terminated_reason(prefix: &str, terminated: &Value) -> String {
    let reason = str_at(terminated, "/reason");
    if !reason.is_empty() {
        return format!("{prefix}{reason}");
    }
    let signal = int_at(terminated, "/signal", 0);
    if signal != 0 {
        format!("{prefix}Signal:{signal}")
    } else {
        format!("{prefix}ExitCode:{}", int_at(terminated, "/exitCode", 0))
    }
}

/// The cells of one pod's row.
pub(super) fn cells(pod: &Value, now: Timestamp) -> Vec<Value> {
    let init_specs = array_at(pod, "/spec/initContainers");
    let mut total_containers = array_at(pod, "/spec/containers").len();
    total_containers += init_specs
        .iter()
        .filter(|c| str_at(c, "/restartPolicy") == "Always")
        .count();
    let mut ready_containers = 0;
    let mut restarts: i64 = 0;
    let mut restartable_init_restarts: i64 = 0;
    let mut last_restart: Option<Timestamp> = None;
    let mut last_restartable_init_restart: Option<Timestamp> = None;

    let phase = str_at(pod, "/status/phase");
    let mut reason = phase.to_string();
    let status_reason = str_at(pod, "/status/reason");
    if !status_reason.is_empty() {
        reason = status_reason.to_string();
    }
    for c in array_at(pod, "/status/conditions") {
        if str_at(c, "/type") == "PodScheduled" && str_at(c, "/reason") == "SchedulingGated" {
            reason = "SchedulingGated".to_string();
        }
    }

    let mut initializing = false;
    for (i, container) in array_at(pod, "/status/initContainerStatuses")
        .iter()
        .enumerate()
    {
        let cname = str_at(container, "/name");
        restarts += int_at(container, "/restartCount", 0);
        last_restart = later(last_restart, last_terminated(container));
        let restartable = is_restartable_init_container(pod, cname);
        if restartable {
            restartable_init_restarts += int_at(container, "/restartCount", 0);
            last_restartable_init_restart =
                later(last_restartable_init_restart, last_terminated(container));
        }
        let terminated = container.pointer("/state/terminated");
        let waiting_reason = str_at(container, "/state/waiting/reason");
        if terminated.is_some_and(|t| int_at(t, "/exitCode", 0) == 0) {
            continue;
        }
        if restartable && container.get("started").and_then(Value::as_bool) == Some(true) {
            if container.get("ready").and_then(Value::as_bool) == Some(true) {
                ready_containers += 1;
            }
            continue;
        }
        if let Some(t) = terminated {
            reason = terminated_reason("Init:", t);
        } else if !waiting_reason.is_empty() && waiting_reason != "PodInitializing" {
            reason = format!("Init:{waiting_reason}");
        } else {
            reason = format!("Init:{i}/{}", init_specs.len());
        }
        initializing = true;
        break;
    }

    if !initializing || condition_true(pod, "Initialized") {
        restarts = restartable_init_restarts;
        last_restart = last_restartable_init_restart;
        let mut has_running = false;
        for container in array_at(pod, "/status/containerStatuses").iter().rev() {
            restarts += int_at(container, "/restartCount", 0);
            last_restart = later(last_restart, last_terminated(container));
            let waiting_reason = str_at(container, "/state/waiting/reason");
            let terminated = container.pointer("/state/terminated");
            if !waiting_reason.is_empty() {
                reason = waiting_reason.to_string();
            } else if let Some(t) = terminated {
                reason = terminated_reason("", t);
            } else if container.get("ready").and_then(Value::as_bool) == Some(true)
                && container.pointer("/state/running").is_some()
            {
                has_running = true;
                ready_containers += 1;
            }
        }
        if reason == "Completed" && has_running {
            reason = if condition_true(pod, "Ready") {
                "Running".to_string()
            } else {
                "NotReady".to_string()
            };
        }
    }

    let deleting = pod
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|d| !d.is_null());
    if deleting && status_reason == "NodeLost" {
        reason = "Unknown".to_string();
    } else if deleting && phase != "Succeeded" && phase != "Failed" {
        reason = "Terminating".to_string();
    }

    let restarts_text = match last_restart {
        Some(t) if restarts != 0 => format!("{restarts} ({} ago)", since(Some(t), now)),
        _ => restarts.to_string(),
    };

    let mut pod_ip = array_at(pod, "/status/podIPs")
        .first()
        .map(|ip| str_at(ip, "/ip"))
        .unwrap_or_else(|| str_at(pod, "/status/podIP"));
    if pod_ip.is_empty() {
        pod_ip = "<none>";
    }
    let none_if_empty = |s: &str| {
        if s.is_empty() {
            "<none>".to_string()
        } else {
            s.to_string()
        }
    };
    let gates = array_at(pod, "/spec/readinessGates");
    let readiness_gates = if gates.is_empty() {
        "<none>".to_string()
    } else {
        let true_conditions = gates
            .iter()
            .filter(|g| {
                let t = str_at(g, "/conditionType");
                array_at(pod, "/status/conditions")
                    .iter()
                    .find(|c| str_at(c, "/type") == t)
                    .is_some_and(|c| str_at(c, "/status") == "True")
            })
            .count();
        format!("{true_conditions}/{}", gates.len())
    };

    vec![
        name(pod),
        Value::String(format!("{ready_containers}/{total_containers}")),
        Value::String(reason),
        Value::String(restarts_text),
        age(pod, now),
        Value::String(pod_ip.to_string()),
        Value::String(none_if_empty(str_at(pod, "/spec/nodeName"))),
        Value::String(none_if_empty(str_at(pod, "/status/nominatedNodeName"))),
        Value::String(readiness_gates),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> Timestamp {
        "2026-01-01T01:00:00Z".parse().unwrap()
    }

    fn status_of(pod: Value) -> (String, String, String) {
        let c = cells(&pod, now());
        (
            c[1].as_str().unwrap().to_string(),
            c[2].as_str().unwrap().to_string(),
            c[3].as_str().unwrap().to_string(),
        )
    }

    fn pod(containers: usize, status: Value) -> Value {
        let containers: Vec<Value> = (0..containers)
            .map(|i| json!({"name": format!("c{i}"), "image": "img"}))
            .collect();
        json!({"metadata":{"name":"p","creationTimestamp":"2026-01-01T00:55:00Z"},
               "spec":{"containers":containers},"status":status})
    }

    #[test]
    fn running_ready_pod() {
        let p = pod(
            1,
            json!({"phase":"Running","podIP":"10.0.0.1","containerStatuses":[
            {"name":"c0","ready":true,"restartCount":0,"state":{"running":{"startedAt":"2026-01-01T00:56:00Z"}}}]}),
        );
        let c = cells(&p, now());
        assert_eq!(c[0], "p");
        assert_eq!(c[1], "1/1");
        assert_eq!(c[2], "Running");
        assert_eq!(c[3], "0");
        assert_eq!(c[4], "5m");
        assert_eq!(c[5], "10.0.0.1");
        assert_eq!(c[6], "<none>");
    }

    #[test]
    fn pending_pod_with_container_creating() {
        let p = pod(
            2,
            json!({"phase":"Pending","containerStatuses":[
            {"name":"c0","ready":false,"restartCount":0,"state":{"waiting":{"reason":"ContainerCreating"}}},
            {"name":"c1","ready":false,"restartCount":0,"state":{"waiting":{"reason":"ContainerCreating"}}}]}),
        );
        assert_eq!(
            status_of(p),
            ("0/2".into(), "ContainerCreating".into(), "0".into())
        );
    }

    #[test]
    fn restarts_show_how_long_ago_the_last_one_was() {
        let p = pod(
            1,
            json!({"phase":"Running","containerStatuses":[
            {"name":"c0","ready":true,"restartCount":2,"state":{"running":{}},
             "lastState":{"terminated":{"exitCode":1,"finishedAt":"2026-01-01T00:55:00Z"}}}]}),
        );
        assert_eq!(status_of(p).2, "2 (5m ago)");
    }

    #[test]
    fn crash_loop_back_off_is_the_waiting_reason() {
        let p = pod(
            1,
            json!({"phase":"Running","containerStatuses":[
            {"name":"c0","ready":false,"restartCount":5,"state":{"waiting":{"reason":"CrashLoopBackOff"}}}]}),
        );
        assert_eq!(status_of(p).1, "CrashLoopBackOff");
    }

    #[test]
    fn completed_pod_and_its_row_condition() {
        let p = pod(
            1,
            json!({"phase":"Succeeded","containerStatuses":[
            {"name":"c0","ready":false,"restartCount":0,"state":{"terminated":{"exitCode":0,"reason":"Completed"}}}]}),
        );
        assert_eq!(
            status_of(p.clone()),
            ("0/1".into(), "Completed".into(), "0".into())
        );
        assert_eq!(conditions(&p).unwrap()[0]["reason"], "Succeeded");
    }

    #[test]
    fn terminated_without_reason_shows_exit_code_or_signal() {
        let p = pod(
            1,
            json!({"phase":"Failed","containerStatuses":[
            {"name":"c0","state":{"terminated":{"exitCode":137}}}]}),
        );
        assert_eq!(status_of(p).1, "ExitCode:137");
        let p = pod(
            1,
            json!({"phase":"Failed","containerStatuses":[
            {"name":"c0","state":{"terminated":{"exitCode":1,"signal":9}}}]}),
        );
        assert_eq!(status_of(p).1, "Signal:9");
    }

    #[test]
    fn deleting_pod_is_terminating() {
        let mut p = pod(
            1,
            json!({"phase":"Running","containerStatuses":[
            {"name":"c0","ready":true,"state":{"running":{}}}]}),
        );
        p["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:59:00Z");
        assert_eq!(status_of(p.clone()).1, "Terminating");
        p["status"]["reason"] = json!("NodeLost");
        assert_eq!(status_of(p).1, "Unknown");
    }

    #[test]
    fn init_containers_show_progress() {
        let mut p = pod(
            1,
            json!({"phase":"Pending","initContainerStatuses":[
            {"name":"i0","state":{"terminated":{"exitCode":0}}},
            {"name":"i1","state":{"running":{}}}]}),
        );
        p["spec"]["initContainers"] = json!([{"name":"i0"},{"name":"i1"}]);
        assert_eq!(status_of(p.clone()).1, "Init:1/2");
        p["status"]["initContainerStatuses"][1]["state"] =
            json!({"waiting":{"reason":"ImagePullBackOff"}});
        assert_eq!(status_of(p.clone()).1, "Init:ImagePullBackOff");
        p["status"]["initContainerStatuses"][1]["state"] = json!({"terminated":{"exitCode":2}});
        assert_eq!(status_of(p).1, "Init:ExitCode:2");
    }

    #[test]
    fn sidecar_init_containers_count_as_containers() {
        let mut p = pod(
            1,
            json!({"phase":"Running",
            "conditions":[{"type":"Initialized","status":"True"}],
            "initContainerStatuses":[{"name":"side","started":true,"ready":true,"restartCount":1,"state":{"running":{}}}],
            "containerStatuses":[{"name":"c0","ready":true,"restartCount":0,"state":{"running":{}}}]}),
        );
        p["spec"]["initContainers"] = json!([{"name":"side","restartPolicy":"Always"}]);
        assert_eq!(status_of(p), ("2/2".into(), "Running".into(), "1".into()));
    }

    #[test]
    fn scheduling_gated_pod() {
        let p = pod(
            1,
            json!({"phase":"Pending","conditions":[
            {"type":"PodScheduled","status":"False","reason":"SchedulingGated"}]}),
        );
        assert_eq!(status_of(p).1, "SchedulingGated");
    }

    #[test]
    fn readiness_gates_count_true_conditions() {
        let mut p = pod(
            1,
            json!({"phase":"Running","conditions":[
            {"type":"example.com/ready","status":"True"}]}),
        );
        p["spec"]["readinessGates"] =
            json!([{"conditionType":"example.com/ready"},{"conditionType":"other"}]);
        p["spec"]["nodeName"] = json!("node-1");
        let c = cells(&p, now());
        assert_eq!(c[6], "node-1");
        assert_eq!(c[8], "1/2");
    }
}
