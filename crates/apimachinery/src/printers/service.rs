//! The Service table: `printService` from `pkg/printers/internalversion/printers.go`.

use std::collections::BTreeSet;

use jiff::Timestamp;
use serde_json::Value;

use super::{
    age, array_at, col, format_labels, name, str_at, wide, Column, Description, AGE, NAME,
};

const SPEC: &str = "io.k8s.api.core.v1.ServiceSpec";

/// Service columns.
pub(super) const COLUMNS: &[Column] = &[
    NAME,
    col("Type", "string", Description::Field(SPEC, "type")),
    col(
        "Cluster-IP",
        "string",
        Description::Field(SPEC, "clusterIP"),
    ),
    col(
        "External-IP",
        "string",
        Description::Field(SPEC, "externalIPs"),
    ),
    col("Port(s)", "string", Description::Field(SPEC, "ports")),
    AGE,
    wide("Selector", "string", Description::Field(SPEC, "selector")),
];

fn strings(v: &Value, pointer: &str) -> Vec<String> {
    array_at(v, pointer)
        .iter()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

/// `loadBalancerStatusStringer` (wide, so never clipped): the distinct ingress IPs or host
/// names, sorted, as kube collects them in a string set.
fn load_balancer_ips(svc: &Value) -> Vec<String> {
    array_at(svc, "/status/loadBalancer/ingress")
        .iter()
        .filter_map(|i| {
            [str_at(i, "/ip"), str_at(i, "/hostname")]
                .into_iter()
                .find(|s| !s.is_empty())
                .map(str::to_string)
        })
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// `getServiceExternalIP`.
fn external_ip(svc: &Value) -> String {
    let external_ips = strings(svc, "/spec/externalIPs");
    // spec.type defaults to ClusterIP.
    match str_at(svc, "/spec/type") {
        "" | "ClusterIP" | "NodePort" => {
            if external_ips.is_empty() {
                "<none>".to_string()
            } else {
                external_ips.join(",")
            }
        }
        "LoadBalancer" => {
            let mut all = load_balancer_ips(svc);
            all.extend(external_ips);
            if all.is_empty() {
                "<pending>".to_string()
            } else {
                all.join(",")
            }
        }
        "ExternalName" => str_at(svc, "/spec/externalName").to_string(),
        _ => "<unknown>".to_string(),
    }
}

/// `makePortString`: `port[:nodePort]/protocol`, comma-separated.
fn ports(svc: &Value) -> String {
    let ports: Vec<String> = array_at(svc, "/spec/ports")
        .iter()
        .map(|p| {
            let port = p.get("port").and_then(Value::as_i64).unwrap_or(0);
            let protocol = match str_at(p, "/protocol") {
                "" => "TCP",
                proto => proto,
            };
            match p
                .get("nodePort")
                .and_then(Value::as_i64)
                .filter(|n| *n != 0)
            {
                Some(node_port) => format!("{port}:{node_port}/{protocol}"),
                None => format!("{port}/{protocol}"),
            }
        })
        .collect();
    if ports.is_empty() {
        "<none>".to_string()
    } else {
        ports.join(",")
    }
}

/// The cells of one service's row.
pub(super) fn cells(svc: &Value, now: Timestamp) -> Vec<Value> {
    let cluster_ip = array_at(svc, "/spec/clusterIPs")
        .first()
        .and_then(Value::as_str)
        .or_else(|| svc.pointer("/spec/clusterIP").and_then(Value::as_str))
        .filter(|s| !s.is_empty())
        .unwrap_or("<none>");
    let type_ = match str_at(svc, "/spec/type") {
        "" => "ClusterIP",
        t => t,
    };
    vec![
        name(svc),
        type_.into(),
        cluster_ip.into(),
        external_ip(svc).into(),
        ports(svc).into(),
        age(svc, now),
        format_labels(svc.pointer("/spec/selector")).into(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn cluster_ip_and_node_port_services() {
        let now = "2026-01-01T00:00:00Z".parse().unwrap();
        let svc = json!({"metadata":{"name":"web"},"spec":{"type":"NodePort","clusterIPs":["10.96.0.10"],
            "ports":[{"port":80,"nodePort":30080,"protocol":"TCP"},{"port":53,"protocol":"UDP"}],
            "selector":{"app":"web"}}});
        let c = cells(&svc, now);
        assert_eq!(
            Value::Array(c),
            json!([
                "web",
                "NodePort",
                "10.96.0.10",
                "<none>",
                "80:30080/TCP,53/UDP",
                "<unknown>",
                "app=web"
            ])
        );
        let lb = json!({"metadata":{"name":"lb"},"spec":{"type":"LoadBalancer"}});
        assert_eq!(cells(&lb, now)[3], "<pending>");
        assert_eq!(cells(&lb, now)[2], "<none>");
        assert_eq!(cells(&lb, now)[4], "<none>");
    }

    #[test]
    fn load_balancer_addresses_are_sorted_and_distinct_before_external_ips() {
        // TestPrintService test6.
        let now = "2026-01-01T00:00:00Z".parse().unwrap();
        let svc = json!({"metadata":{"name":"test6"},"spec":{"type":"LoadBalancer",
                "clusterIPs":["10.9.8.7"],"ports":[{"protocol":"tcp","port":8888}],
                "externalIPs":["80.11.12.10","80.11.12.11"]},
            "status":{"loadBalancer":{"ingress":[
                {"ip":"3.4.5.6","hostname":"test.cluster.com"},
                {"ip":"2.3.4.5","hostname":"test.cluster.local"},
                {"ip":"3.4.5.6"}]}}});
        assert_eq!(
            cells(&svc, now)[3],
            "2.3.4.5,3.4.5.6,80.11.12.10,80.11.12.11"
        );
    }
}
