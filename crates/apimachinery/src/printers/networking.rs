//! Networking tables: Ingress, IngressClass, NetworkPolicy, ServiceCIDR and IPAddress
//! (`printIngress`, `printIngressClass`, `printNetworkPolicy`, `printServiceCIDR`,
//! `printIPAddress`).

use std::collections::BTreeSet;

use jiff::Timestamp;
use serde_json::Value;

use super::{
    age, array_at, col, format_label_selector, join_strings, name, str_at, Column, Description,
    AGE, NAME,
};

/// Ingress columns.
pub(super) const INGRESS_COLUMNS: &[Column] = &[
    NAME,
    col(
        "Class",
        "string",
        Description::Text(
            "The name of the IngressClass resource that should be used for additional configuration",
        ),
    ),
    col(
        "Hosts",
        "string",
        Description::Text(
            "Hosts that incoming requests are matched against before the ingress rule",
        ),
    ),
    col(
        "Address",
        "string",
        Description::Text("Address is a list containing ingress points for the load-balancer"),
    ),
    col(
        "Ports",
        "string",
        Description::Text("Ports of TLS configurations that open"),
    ),
    AGE,
];

/// `formatHosts`: the first three rule hosts, then ` + N more...` counting rules; `*` when no
/// rule names a host.
fn format_hosts(ingress: &Value) -> String {
    const MAX: usize = 3;
    let rules = array_at(ingress, "/spec/rules");
    let mut list: Vec<&str> = Vec::new();
    let mut more = false;
    for rule in rules {
        if list.len() == MAX {
            more = true;
        }
        let host = str_at(rule, "/host");
        if !more && !host.is_empty() {
            list.push(host);
        }
    }
    if list.is_empty() {
        return "*".to_string();
    }
    let joined = list.join(",");
    if more {
        format!("{joined} + {} more...", rules.len() - MAX)
    } else {
        joined
    }
}

/// `ingressLoadBalancerStatusStringer` as the server calls it (wide, so never clipped): the
/// distinct ingress IPs or host names, sorted.
fn load_balancer_addresses(ingress: &Value) -> String {
    array_at(ingress, "/status/loadBalancer/ingress")
        .iter()
        .filter_map(|i| {
            [str_at(i, "/ip"), str_at(i, "/hostname")]
                .into_iter()
                .find(|s| !s.is_empty())
        })
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect::<Vec<_>>()
        .join(",")
}

/// The cells of one Ingress's row.
pub(super) fn ingress_cells(ingress: &Value, now: Timestamp) -> Vec<Value> {
    let class = ingress
        .pointer("/spec/ingressClassName")
        .and_then(Value::as_str)
        .unwrap_or("<none>");
    let ports = if array_at(ingress, "/spec/tls").is_empty() {
        "80"
    } else {
        "80, 443"
    };
    vec![
        name(ingress),
        class.into(),
        format_hosts(ingress).into(),
        load_balancer_addresses(ingress).into(),
        ports.into(),
        age(ingress, now),
    ]
}

/// IngressClass columns.
pub(super) const INGRESS_CLASS_COLUMNS: &[Column] = &[
    NAME,
    col(
        "Controller",
        "string",
        Description::Text("Controller that is responsible for handling this class"),
    ),
    col(
        "Parameters",
        "string",
        Description::Text("A reference to a resource with additional parameters"),
    ),
    AGE,
];

/// The cells of one IngressClass's row: parameters as `Kind[.apiGroup]/name`.
pub(super) fn ingress_class_cells(class: &Value, now: Timestamp) -> Vec<Value> {
    let parameters = match class.pointer("/spec/parameters").filter(|p| p.is_object()) {
        Some(p) => {
            let kind = match p.get("apiGroup").and_then(Value::as_str) {
                Some(group) => format!("{}.{group}", str_at(p, "/kind")),
                None => str_at(p, "/kind").to_string(),
            };
            format!("{kind}/{}", str_at(p, "/name"))
        }
        None => "<none>".to_string(),
    };
    vec![
        name(class),
        str_at(class, "/spec/controller").into(),
        parameters.into(),
        age(class, now),
    ]
}

/// NetworkPolicy columns.
pub(super) const NETWORK_POLICY_COLUMNS: &[Column] = &[
    NAME,
    col(
        "Pod-Selector",
        "string",
        Description::Field("io.k8s.api.networking.v1.NetworkPolicySpec", "podSelector"),
    ),
    AGE,
];

/// The cells of one NetworkPolicy's row.
pub(super) fn network_policy_cells(np: &Value, now: Timestamp) -> Vec<Value> {
    vec![
        name(np),
        format_label_selector(np.pointer("/spec/podSelector")).into(),
        age(np, now),
    ]
}

/// ServiceCIDR columns.
pub(super) const SERVICE_CIDR_COLUMNS: &[Column] = &[
    NAME,
    col(
        "CIDRs",
        "string",
        Description::Field("io.k8s.api.networking.v1.ServiceCIDRSpec", "cidrs"),
    ),
    AGE,
];

/// The cells of one ServiceCIDR's row.
pub(super) fn service_cidr_cells(cidr: &Value, now: Timestamp) -> Vec<Value> {
    vec![
        name(cidr),
        join_strings(cidr, "/spec/cidrs", ",").into(),
        age(cidr, now),
    ]
}

/// IPAddress columns. kube defines no Age column here yet its rows carry the age as a third
/// cell; kubectl ignores cells past the last column.
pub(super) const IP_ADDRESS_COLUMNS: &[Column] = &[
    NAME,
    col(
        "ParentRef",
        "string",
        Description::Field("io.k8s.api.networking.v1.IPAddressSpec", "parentRef"),
    ),
];

/// The cells of one IPAddress's row: the parent as `resource[.group][/namespace]/name`.
pub(super) fn ip_address_cells(ip: &Value, now: Timestamp) -> Vec<Value> {
    let parent = match ip.pointer("/spec/parentRef").filter(|p| p.is_object()) {
        Some(p) => {
            let (group, resource) = (str_at(p, "/group"), str_at(p, "/resource"));
            let mut parent = if group.is_empty() {
                resource.to_lowercase()
            } else {
                format!("{resource}.{group}").to_lowercase()
            };
            let namespace = str_at(p, "/namespace");
            if !namespace.is_empty() {
                parent = format!("{parent}/{namespace}");
            }
            format!("{parent}/{}", str_at(p, "/name"))
        }
        None => "<none>".to_string(),
    };
    vec![name(ip), parent.into(), age(ip, now)]
}
