//! Endpoints: port protocols default to TCP, and subsets are checked as `ValidateEndpoints`
//! (addresses are IPs outside the special ranges, ports are numbered, named when several,
//! and carry a supported protocol).
//!
//! Mirrors `pkg/registry/core/endpoint/strategy.go`, `SetDefaults_EndpointPort` and
//! `validateEndpointSubsets` of `pkg/apis/core/validation/validation.go`.

use std::net::{IpAddr, Ipv4Addr};

use rkcm_apimachinery::catalog::ResourceInfo;
use serde_json::{json, Value};

use super::generic::GenericStrategy;
use super::hooked::{nothing, nothing_on_update, HookedStrategy, Hooks};
use super::meta::{is_dns1123_label, is_dns1123_subdomain, is_qualified_name};
use super::object::{default_field, get, get_str};
use super::podspec::push_invalid_names;
use super::FieldError;

const PROTOCOLS: &[&str] = &["SCTP", "TCP", "UDP"];

/// `SetDefaults_EndpointPort`.
fn default_endpoints(obj: &mut Value) {
    let Some(subsets) = obj.get_mut("subsets").and_then(Value::as_array_mut) else {
        return;
    };
    for subset in subsets {
        if let Some(ports) = subset.get_mut("ports").and_then(Value::as_array_mut) {
            for port in ports.iter_mut().filter_map(Value::as_object_mut) {
                default_field(port, "protocol", json!("TCP"));
            }
        }
    }
}

/// `netutils.ParseIPSloppy`: Go's parser as it was before 1.17, which allows leading zeros in
/// IPv4 octets (`010.0.0.1` is `10.0.0.1`).
fn parse_ip_sloppy(s: &str) -> Option<IpAddr> {
    if let Ok(ip) = s.parse::<IpAddr>() {
        return Some(ip);
    }
    let octets: Vec<&str> = s.split('.').collect();
    if octets.len() != 4 {
        return None;
    }
    let mut out = [0u8; 4];
    for (o, text) in out.iter_mut().zip(octets) {
        if text.is_empty() || text.len() > 3 || !text.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        *o = text.parse().ok()?;
    }
    Some(IpAddr::V4(Ipv4Addr::from(out)))
}

/// `IsValidIPForLegacyField` (with `StrictIPCIDRValidation` off, as in 1.33).
fn validate_legacy_ip(ip: &str, path: &str, errs: &mut Vec<FieldError>) {
    if parse_ip_sloppy(ip).is_none() {
        errs.push(FieldError::invalid(
            path,
            &json!(ip),
            "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
        ));
    }
}

/// `ValidateNonSpecialIP`.
fn validate_non_special_ip(ip: &str, path: &str, errs: &mut Vec<FieldError>) {
    let value = json!(ip);
    let Some(addr) = parse_ip_sloppy(ip) else {
        errs.push(FieldError::invalid(
            path,
            &value,
            "must be a valid IP address",
        ));
        return;
    };
    // An IPv4-mapped IPv6 address is judged as the IPv4 address, as Go does.
    let addr = match addr {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(addr, IpAddr::V4),
        v4 => v4,
    };
    if addr.is_unspecified() {
        errs.push(FieldError::invalid(
            path,
            &value,
            &format!("may not be unspecified ({ip})"),
        ));
    }
    if addr.is_loopback() {
        errs.push(FieldError::invalid(
            path,
            &value,
            "may not be in the loopback range (127.0.0.0/8, ::1/128)",
        ));
    }
    let (link_local, link_local_multicast) = match addr {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            (v4.is_link_local(), o[0] == 224 && o[1] == 0 && o[2] == 0)
        }
        IpAddr::V6(v6) => {
            let s = v6.segments();
            ((s[0] & 0xffc0) == 0xfe80, (s[0] & 0xff0f) == 0xff02)
        }
    };
    if link_local {
        errs.push(FieldError::invalid(
            path,
            &value,
            "may not be in the link-local range (169.254.0.0/16, fe80::/10)",
        ));
    }
    if link_local_multicast {
        errs.push(FieldError::invalid(
            path,
            &value,
            "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)",
        ));
    }
}

/// `validateEndpointAddress`.
fn validate_address(addr: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let ip = get_str(addr, &["ip"]).unwrap_or("");
    let ip_path = format!("{path}.ip");
    validate_legacy_ip(ip, &ip_path, errs);
    if let Some(hostname) = get_str(addr, &["hostname"]).filter(|h| !h.is_empty()) {
        push_invalid_names(
            errs,
            &format!("{path}.hostname"),
            hostname,
            is_dns1123_label(hostname),
        );
    }
    if let Some(node) = get_str(addr, &["nodeName"]) {
        push_invalid_names(
            errs,
            &format!("{path}.nodeName"),
            node,
            is_dns1123_subdomain(node),
        );
    }
    validate_non_special_ip(ip, &ip_path, errs);
}

/// `validateEndpointPort`.
fn validate_port(port: &Value, require_name: bool, path: &str, errs: &mut Vec<FieldError>) {
    let name = get_str(port, &["name"]).unwrap_or("");
    if require_name && name.is_empty() {
        errs.push(FieldError::required(format!("{path}.name"), ""));
    } else if !name.is_empty() {
        push_invalid_names(errs, &format!("{path}.name"), name, is_dns1123_label(name));
    }
    let number = get(port, &["port"]).cloned().unwrap_or(json!(0));
    if !number.as_i64().is_some_and(|n| (1..=65535).contains(&n)) {
        errs.push(FieldError::invalid(
            format!("{path}.port"),
            &number,
            "must be between 1 and 65535, inclusive",
        ));
    }
    match get_str(port, &["protocol"]).unwrap_or("") {
        "" => errs.push(FieldError::required(format!("{path}.protocol"), "")),
        p if PROTOCOLS.contains(&p) => {}
        p => errs.push(FieldError::not_supported(
            format!("{path}.protocol"),
            &json!(p),
            PROTOCOLS,
        )),
    }
    if let Some(app) = get_str(port, &["appProtocol"]) {
        push_invalid_names(
            errs,
            &format!("{path}.appProtocol"),
            app,
            is_qualified_name(app),
        );
    }
}

/// `validateEndpointSubsets`.
fn validate(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let subsets = get(obj, &["subsets"]).and_then(Value::as_array);
    for (i, subset) in subsets.into_iter().flatten().enumerate() {
        let path = format!("subsets[{i}]");
        let list = |key: &str| {
            get(subset, &[key])
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        };
        let (ready, not_ready, ports) =
            (list("addresses"), list("notReadyAddresses"), list("ports"));
        if ready.is_empty() && not_ready.is_empty() {
            errs.push(FieldError::required(
                path.as_str(),
                "must specify `addresses` or `notReadyAddresses`",
            ));
        }
        for (j, a) in ready.iter().enumerate() {
            validate_address(a, &format!("{path}.addresses[{j}]"), &mut errs);
        }
        for (j, a) in not_ready.iter().enumerate() {
            validate_address(a, &format!("{path}.notReadyAddresses[{j}]"), &mut errs);
        }
        // kube requires names once there are several ports but does not check that they
        // are unique.
        for (j, p) in ports.iter().enumerate() {
            validate_port(p, ports.len() > 1, &format!("{path}.ports[{j}]"), &mut errs);
        }
    }
    errs
}

fn validate_update(new: &Value, _old: &Value) -> Vec<FieldError> {
    validate(new)
}

static HOOKS: Hooks = Hooks {
    default: default_endpoints,
    prepare_create: nothing,
    prepare_update: nothing_on_update,
    prepare_status_update: nothing_on_update,
    validate,
    validate_update,
    fields: &[],
};

/// The strategy of endpoints.
pub(crate) fn strategy(info: &'static ResourceInfo) -> HookedStrategy {
    HookedStrategy::new(GenericStrategy::new(info), HOOKS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Strategy;
    use rkcm_apimachinery::catalog;

    fn s() -> HookedStrategy {
        strategy(catalog::by_kind("v1", "Endpoints").expect("served"))
    }

    fn endpoints(subsets: Value) -> Value {
        json!({"metadata": {"name": "web", "namespace": "default"}, "subsets": subsets})
    }

    fn messages(obj: &Value) -> Vec<String> {
        s().validate_create(obj)
            .iter()
            .map(FieldError::message_with_field)
            .collect()
    }

    #[test]
    fn port_protocol_defaults_to_tcp() {
        let mut obj = endpoints(json!([{"addresses": [{"ip": "10.1.2.3"}],
            "ports": [{"name": "a", "port": 80}, {"name": "b", "port": 53, "protocol": "UDP"}]}]));
        s().default(&mut obj);
        assert_eq!(obj["subsets"][0]["ports"][0]["protocol"], "TCP");
        assert_eq!(obj["subsets"][0]["ports"][1]["protocol"], "UDP");
        assert!(messages(&obj).is_empty());
    }

    #[test]
    fn subsets_are_validated_as_kube_does() {
        // Cases of TestValidateEndpointsCreate (validation_test.go).
        let cases: Vec<(Value, Vec<&str>)> = vec![
            (
                json!([{"ports": [{"port": 80, "protocol": "TCP"}]}]),
                vec!["subsets[0]: Required value: must specify `addresses` or `notReadyAddresses`"],
            ),
            (
                json!([{"addresses": [{"ip": "127.0.0.1"}]}]),
                vec!["subsets[0].addresses[0].ip: Invalid value: \"127.0.0.1\": may not be in the loopback range (127.0.0.0/8, ::1/128)"],
            ),
            (
                json!([{"addresses": [{"ip": "169.254.169.254"}]}]),
                vec!["subsets[0].addresses[0].ip: Invalid value: \"169.254.169.254\": may not be in the link-local range (169.254.0.0/16, fe80::/10)"],
            ),
            (
                json!([{"notReadyAddresses": [{"ip": "224.0.0.1"}]}]),
                vec!["subsets[0].notReadyAddresses[0].ip: Invalid value: \"224.0.0.1\": may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"],
            ),
            (
                json!([{"addresses": [{"ip": "0.0.0.0"}]}]),
                vec!["subsets[0].addresses[0].ip: Invalid value: \"0.0.0.0\": may not be unspecified (0.0.0.0)"],
            ),
            (
                json!([{"addresses": [{"ip": "[2001:db8::1]"}]}]),
                vec![
                    "subsets[0].addresses[0].ip: Invalid value: \"[2001:db8::1]\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
                    "subsets[0].addresses[0].ip: Invalid value: \"[2001:db8::1]\": must be a valid IP address",
                ],
            ),
            (json!([{"addresses": [{"ip": "010.001.002.003"}]}]), vec![]),
            (
                json!([{"addresses": [{"ip": "bad", "hostname": "Bad_Host"}]}]),
                vec![
                    "subsets[0].addresses[0].ip: Invalid value: \"bad\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
                    "subsets[0].addresses[0].hostname: Invalid value: \"Bad_Host\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
                    "subsets[0].addresses[0].ip: Invalid value: \"bad\": must be a valid IP address",
                ],
            ),
            (json!([{"addresses": [{"ip": "2001:db8::1", "hostname": "a"}]}]), vec![]),
            (
                json!([{"addresses": [{"ip": "10.1.2.3"}],
                    "ports": [{"port": 0, "protocol": "TCP"}, {"name": "b", "port": 80, "protocol": "HTTP"}]}]),
                vec![
                    "subsets[0].ports[0].name: Required value",
                    "subsets[0].ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
                    "subsets[0].ports[1].protocol: Unsupported value: \"HTTP\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
                ],
            ),
            (
                json!([{"addresses": [{"ip": "10.1.2.3"}], "ports": [{"port": 80}]}]),
                vec!["subsets[0].ports[0].protocol: Required value"],
            ),
        ];
        for (subsets, want) in cases {
            assert_eq!(messages(&endpoints(subsets.clone())), want, "{subsets}");
        }
    }
}
