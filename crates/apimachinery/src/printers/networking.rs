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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn now() -> Timestamp {
        "2026-01-01T00:00:00Z".parse().unwrap()
    }

    #[test]
    fn ingress_rows_match_kube() {
        // TestPrintIngress.
        let ing = json!({"metadata":{"name":"test1","creationTimestamp":"2016-01-01T00:00:00Z"},
            "spec":{"ingressClassName":"foo",
                "defaultBackend":{"service":{"name":"default-backend","port":{"name":"default-backend"}}}},
            "status":{"loadBalancer":{"ingress":[
                {"ip":"2.3.4.5","hostname":"localhost.localdomain"}]}}});
        assert_eq!(
            Value::Array(ingress_cells(&ing, now())),
            json!(["test1", "foo", "*", "2.3.4.5", "80", "10y"])
        );
        let no_class = json!({"metadata":{"name":"test2"}});
        assert_eq!(
            Value::Array(ingress_cells(&no_class, now())),
            json!(["test2", "<none>", "*", "", "80", "<unknown>"])
        );
    }

    #[test]
    fn ingress_hosts_addresses_and_ports() {
        let ing = json!({"metadata":{"name":"i"},
            "spec":{"tls":[{"hosts":["a.example.com"]}],
                "rules":[{"host":"a.example.com"},{},{"host":"b.example.com"},
                    {"host":"c.example.com"},{"host":"d.example.com"}]},
            "status":{"loadBalancer":{"ingress":[{"hostname":"lb.example.com"},
                {"ip":"10.0.0.2"},{"ip":"10.0.0.1"},{"ip":"10.0.0.2"}]}}});
        let c = ingress_cells(&ing, now());
        // Three hosts, then the count of the remaining rules; addresses sorted and distinct,
        // never clipped as the server prints wide.
        assert_eq!(
            c[2],
            "a.example.com,b.example.com,c.example.com + 2 more..."
        );
        assert_eq!(c[3], "10.0.0.1,10.0.0.2,lb.example.com");
        assert_eq!(c[4], "80, 443");
    }

    #[test]
    fn ingress_class_rows_match_kube() {
        // TestPrintIngressClass.
        let with_group = json!({"metadata":{"name":"test1","creationTimestamp":"2016-01-01T00:00:00Z"},
            "spec":{"controller":"example.com/controller",
                "parameters":{"kind":"customgroup","name":"example","apiGroup":"example.com"}}});
        assert_eq!(
            Value::Array(ingress_class_cells(&with_group, now())),
            json!([
                "test1",
                "example.com/controller",
                "customgroup.example.com/example",
                "10y"
            ])
        );
        let core = json!({"metadata":{"name":"test2","creationTimestamp":"2025-12-31T23:55:00Z"},
            "spec":{"controller":"example.com/controller",
                "parameters":{"kind":"customgroup","name":"example"}}});
        assert_eq!(ingress_class_cells(&core, now())[2], "customgroup/example");
        let none =
            json!({"metadata":{"name":"test3"},"spec":{"controller":"example.com/controller"}});
        assert_eq!(ingress_class_cells(&none, now())[2], "<none>");
    }

    #[test]
    fn network_policy_rows_match_kube() {
        // TestPrintNetworkPolicy.
        let empty = json!({"metadata":{"name":"policy1","creationTimestamp":"2026-01-01T00:00:01.9Z"},
            "spec":{}});
        assert_eq!(
            Value::Array(network_policy_cells(&empty, now())),
            json!(["policy1", "<none>", "0s"])
        );
        let selected = json!({"metadata":{"name":"policy2"},
            "spec":{"podSelector":{"matchLabels":{"foo":"bar"}}}});
        assert_eq!(network_policy_cells(&selected, now())[1], "foo=bar");
    }

    #[test]
    fn service_cidr_rows_match_kube() {
        // TestPrintServiceCIDR.
        let dual = json!({"metadata":{"name":"test9"},
            "spec":{"cidrs":["10.1.0.0/16","fd00:1:1::/64"]}});
        assert_eq!(
            Value::Array(service_cidr_cells(&dual, now())),
            json!(["test9", "10.1.0.0/16,fd00:1:1::/64", "<unknown>"])
        );
    }

    #[test]
    fn ip_address_rows_match_kube() {
        // TestPrintIPAddress: three cells under two columns, as kube serves them.
        let ip = json!({"metadata":{"name":"192.168.2.2","creationTimestamp":"2016-01-03T00:00:00Z"},
            "spec":{"parentRef":{"group":"mygroup","resource":"myresource",
                "namespace":"mynamespace","name":"myname"}}});
        assert_eq!(
            Value::Array(ip_address_cells(&ip, now())),
            json!([
                "192.168.2.2",
                "myresource.mygroup/mynamespace/myname",
                "10y"
            ])
        );
        let core = json!({"metadata":{"name":"10.0.0.10"},
            "spec":{"parentRef":{"resource":"Services","name":"kubernetes","namespace":"default"}}});
        assert_eq!(
            ip_address_cells(&core, now())[1],
            "services/default/kubernetes"
        );
        let orphan = json!({"metadata":{"name":"10.0.0.11"},"spec":{}});
        assert_eq!(ip_address_cells(&orphan, now())[1], "<none>");
        assert_eq!(IP_ADDRESS_COLUMNS.len(), 2);
    }
}
