//! Services: defaults (type `ClusterIP`, session affinity `None`, port protocol and target
//! port, traffic policies), the ports and type checks of `ValidateService`, and the
//! immutable cluster IPs.
//!
//! Mirrors `pkg/registry/core/service/strategy.go`, `pkg/apis/core/v1/defaults.go`
//! (`SetDefaults_Service`) and core validation. Cluster IPs, node ports and the IP family
//! fields are allocated and filled on the write path by [`crate::allocators`].

use std::collections::BTreeSet;

use rkcm_apimachinery::catalog::ResourceInfo;
use serde_json::{json, Value};

use super::generic::GenericStrategy;
use super::meta::{self, name_is_dns1035_label};
use super::object::{default_field, get, get_str, object_mut};
use super::simple::SimpleStrategy;
use super::FieldError;

const SERVICE_TYPES: &[&str] = &["ClusterIP", "NodePort", "LoadBalancer", "ExternalName"];

/// `SetDefaults_Service`.
fn default_service(obj: &mut Value) {
    let Some(spec) = object_mut(obj, &["spec"]) else {
        return;
    };
    default_field(spec, "sessionAffinity", json!("None"));
    match spec.get("sessionAffinity").and_then(Value::as_str) {
        Some("None") => {
            spec.remove("sessionAffinityConfig");
        }
        Some("ClientIP") => {
            let has_timeout = spec
                .get("sessionAffinityConfig")
                .and_then(|c| c.get("clientIP"))
                .and_then(|c| c.get("timeoutSeconds"))
                .is_some_and(|t| !t.is_null());
            if !has_timeout {
                // DefaultClientIPServiceAffinitySeconds: three hours.
                spec.insert(
                    "sessionAffinityConfig".to_string(),
                    json!({"clientIP": {"timeoutSeconds": 10800}}),
                );
            }
        }
        _ => {}
    }
    default_field(spec, "type", json!("ClusterIP"));
    let ty = spec
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let has_external_ips = spec
        .get("externalIPs")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty());
    // service.ExternallyAccessible
    if ty == "NodePort" || ty == "LoadBalancer" || (ty == "ClusterIP" && has_external_ips) {
        default_field(spec, "externalTrafficPolicy", json!("Cluster"));
    }
    if ty == "NodePort" || ty == "LoadBalancer" || ty == "ClusterIP" {
        default_field(spec, "internalTrafficPolicy", json!("Cluster"));
    }
    if ty == "LoadBalancer" {
        default_field(spec, "allocateLoadBalancerNodePorts", json!(true));
    }
    if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
        for p in ports.iter_mut().filter_map(Value::as_object_mut) {
            default_field(p, "protocol", json!("TCP"));
            if let Some(port) = p.get("port").cloned() {
                match p.get("targetPort") {
                    None | Some(Value::Null) => {
                        p.insert("targetPort".to_string(), port);
                    }
                    Some(Value::Number(n)) if n.as_i64() == Some(0) => {
                        p.insert("targetPort".to_string(), port);
                    }
                    Some(Value::String(s)) if s.is_empty() => {
                        p.insert("targetPort".to_string(), port);
                    }
                    Some(_) => {}
                }
            }
        }
    }
}

fn validate(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let ty = get(obj, &["spec", "type"]);
    let ty_str = ty.and_then(Value::as_str).unwrap_or("");
    if !SERVICE_TYPES.contains(&ty_str) {
        errs.push(FieldError::not_supported(
            "spec.type",
            ty.unwrap_or(&Value::Null),
            SERVICE_TYPES,
        ));
    }
    let headless = get_str(obj, &["spec", "clusterIP"]) == Some("None");
    let ports = get(obj, &["spec", "ports"]).and_then(Value::as_array);
    if ports.is_none_or(Vec::is_empty) && !headless && ty_str != "ExternalName" {
        errs.push(FieldError::required("spec.ports", ""));
    }
    let ports = ports.map(Vec::as_slice).unwrap_or_default();
    let mut names = BTreeSet::new();
    for (i, p) in ports.iter().enumerate() {
        let path = format!("spec.ports[{i}]");
        let name = get_str(p, &["name"]).unwrap_or("");
        if ports.len() > 1 && name.is_empty() {
            errs.push(FieldError::required(format!("{path}.name"), ""));
        } else if !name.is_empty() {
            for m in meta::is_dns1123_label(name) {
                errs.push(FieldError::invalid(
                    format!("{path}.name"),
                    &json!(name),
                    &m,
                ));
            }
            if !names.insert(name) {
                errs.push(FieldError::duplicate(format!("{path}.name"), &json!(name)));
            }
        }
        let node_port = get(p, &["nodePort"]).and_then(Value::as_i64).unwrap_or(0);
        if ty_str == "ClusterIP" && node_port != 0 {
            errs.push(FieldError::forbidden(
                format!("{path}.nodePort"),
                "may not be used when `type` is 'ClusterIP'",
            ));
        }
        let port = get(p, &["port"]).cloned().unwrap_or(json!(0));
        if !port.as_i64().is_some_and(|n| (1..=65535).contains(&n)) {
            errs.push(FieldError::invalid(
                format!("{path}.port"),
                &port,
                "must be between 1 and 65535, inclusive",
            ));
        }
        match get(p, &["protocol"]).and_then(Value::as_str) {
            None | Some("") => errs.push(FieldError::required(format!("{path}.protocol"), "")),
            Some("TCP" | "UDP" | "SCTP") => {}
            Some(other) => errs.push(FieldError::not_supported(
                format!("{path}.protocol"),
                &json!(other),
                &["SCTP", "TCP", "UDP"],
            )),
        }
    }
    // A health check node port only serves LoadBalancers with local traffic policy.
    let health_check = get(obj, &["spec", "healthCheckNodePort"]);
    if let Some(hc) = health_check.filter(|v| v.as_i64().is_some_and(|n| n != 0)) {
        let local = get_str(obj, &["spec", "externalTrafficPolicy"]) == Some("Local");
        if ty_str != "LoadBalancer" || !local {
            errs.push(FieldError::invalid(
                "spec.healthCheckNodePort",
                hc,
                "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'",
            ));
        }
    }
    errs.extend(meta::validate_labels(
        get(obj, &["spec", "selector"]),
        "spec.selector",
    ));
    let affinity = get(obj, &["spec", "sessionAffinity"]);
    if !affinity
        .and_then(Value::as_str)
        .is_some_and(|s| s == "None" || s == "ClientIP")
    {
        errs.push(FieldError::not_supported(
            "spec.sessionAffinity",
            affinity.unwrap_or(&Value::Null),
            &["ClientIP", "None"],
        ));
    }
    errs
}

/// `validateUpgradeDowngradeClusterIPs` of `ValidateServiceUpdate` for a single-stack
/// cluster: allocated cluster IPs do not change, except to or from ExternalName (which drops or
/// allocates them).
fn validate_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let ty = |o: &Value| get_str(o, &["spec", "type"]).unwrap_or("").to_string();
    if ty(new) == "ExternalName" || ty(old) == "ExternalName" {
        return Vec::new();
    }
    let headless = |o: &Value| get_str(o, &["spec", "clusterIP"]) == Some("None");
    if headless(new) && headless(old) {
        return Vec::new();
    }
    let ips = |o: &Value| -> Vec<Value> {
        get(o, &["spec", "clusterIPs"])
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let (new_ips, old_ips) = (ips(new), ips(old));
    let value = Value::Array(new_ips.clone());
    let changed = |i: usize| {
        FieldError::invalid(
            format!("spec.clusterIPs[{i}]"),
            &value,
            "may not change once set",
        )
    };
    let mut errs = Vec::new();
    if old_ips.len() == new_ips.len() {
        errs.extend(
            old_ips
                .iter()
                .zip(&new_ips)
                .enumerate()
                .filter(|(_, (o, n))| o != n)
                .map(|(i, _)| changed(i)),
        );
    } else if new_ips.is_empty() {
        errs.push(FieldError::invalid(
            "spec.clusterIPs[0]",
            &value,
            "primary clusterIP can not be unset",
        ));
    } else if !old_ips.is_empty() && new_ips[0] != old_ips[0] {
        errs.push(changed(0));
    }
    errs
}

/// The strategy of services.
pub(crate) fn strategy(info: &'static ResourceInfo) -> SimpleStrategy {
    SimpleStrategy::new(
        GenericStrategy::new(info).with_name_validator(name_is_dns1035_label),
        default_service,
        validate,
        validate_update,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Strategy;
    use rkcm_apimachinery::catalog;

    fn s() -> SimpleStrategy {
        strategy(catalog::by_kind("v1", "Service").expect("served"))
    }

    #[test]
    fn defaults_set_type_affinity_protocol_and_target_port() {
        let mut svc = json!({"metadata": {"name": "web", "namespace": "default"},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}});
        s().default(&mut svc);
        s().prepare_for_create(&mut svc);
        assert_eq!(svc["spec"]["type"], "ClusterIP");
        assert_eq!(svc["spec"]["sessionAffinity"], "None");
        assert_eq!(svc["spec"]["internalTrafficPolicy"], "Cluster");
        assert_eq!(
            svc["spec"]["ports"][0],
            json!({"port": 80, "protocol": "TCP", "targetPort": 80})
        );
        assert!(
            s().validate_create(&svc).is_empty(),
            "{:?}",
            s().validate_create(&svc)
        );
    }

    #[test]
    fn load_balancers_and_client_ip_affinity_get_their_defaults() {
        let mut svc = json!({"metadata": {"name": "lb", "namespace": "default"},
            "spec": {"type": "LoadBalancer", "sessionAffinity": "ClientIP", "ports": [{"port": 443, "targetPort": "https"}]}});
        s().default(&mut svc);
        assert_eq!(svc["spec"]["externalTrafficPolicy"], "Cluster");
        assert_eq!(svc["spec"]["allocateLoadBalancerNodePorts"], true);
        assert_eq!(
            svc["spec"]["sessionAffinityConfig"]["clientIP"]["timeoutSeconds"],
            10800
        );
        assert_eq!(svc["spec"]["ports"][0]["targetPort"], "https");
    }

    #[test]
    fn names_are_dns_1035_labels_and_ports_are_required() {
        let mut svc = json!({"metadata": {"name": "1web", "namespace": "default"}, "spec": {}});
        s().default(&mut svc);
        let fields: Vec<String> = s()
            .validate_create(&svc)
            .iter()
            .map(|e| e.field.clone())
            .collect();
        assert_eq!(fields, ["metadata.name", "spec.ports"]);
    }

    #[test]
    fn node_ports_and_health_check_ports_only_go_with_types_that_use_them() {
        let mut svc = json!({"metadata": {"name": "web", "namespace": "default"},
            "spec": {"healthCheckNodePort": 31000, "ports": [{"port": 80, "nodePort": 30080}]}});
        s().default(&mut svc);
        let messages: Vec<String> = s()
            .validate_create(&svc)
            .iter()
            .map(FieldError::message_with_field)
            .collect();
        assert_eq!(
            messages,
            [
                "spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'",
                "spec.healthCheckNodePort: Invalid value: 31000: may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'"
            ]
        );
        svc["spec"]["type"] = json!("LoadBalancer");
        svc["spec"]["externalTrafficPolicy"] = json!("Local");
        assert!(s().validate_create(&svc).is_empty());
    }

    #[test]
    fn a_set_cluster_ip_is_immutable() {
        let old = json!({"metadata": {"name": "web", "namespace": "default"},
            "spec": {"type": "ClusterIP", "sessionAffinity": "None", "clusterIP": "10.0.0.10", "clusterIPs": ["10.0.0.10"], "ports": [{"port": 80, "protocol": "TCP"}]}});
        let mut new = old.clone();
        new["spec"]["clusterIP"] = json!("10.0.0.11");
        new["spec"]["clusterIPs"] = json!(["10.0.0.11"]);
        let errs = s().validate_update(&new, &old);
        assert_eq!(
            errs[0].message_with_field(),
            "spec.clusterIPs[0]: Invalid value: [\"10.0.0.11\"]: may not change once set"
        );
        new["spec"]["clusterIPs"] = json!([]);
        assert_eq!(
            s().validate_update(&new, &old)[0].message,
            "Invalid value: []: primary clusterIP can not be unset"
        );
        // Becoming an ExternalName drops the cluster IP.
        new["spec"]["type"] = json!("ExternalName");
        assert!(s().validate_update(&new, &old).is_empty());
    }
}
