//! IPAddresses: `ValidateIPAddress` and `ValidateIPAddressUpdate` of
//! `pkg/apis/networking/validation` (the name is an IP address in canonical form, a parent
//! reference is required, and it never changes).

use std::net::IpAddr;

use rkcm_apimachinery::catalog::ResourceInfo;
use serde_json::Value;

use super::generic::GenericStrategy;
use super::meta::{validate_immutable, validate_path_segment_name};
use super::simple::{no_defaults, SimpleStrategy};
use super::FieldError;

/// `ValidateIPAddressName`: an IP address, written as it prints.
pub fn validate_name(name: &str, _prefix: bool) -> Vec<String> {
    match name.parse::<IpAddr>() {
        Err(_) => vec!["must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)".into()],
        Ok(ip) if ip.to_string() != name => {
            vec![format!("must be in canonical form ({:?})", ip.to_string())]
        }
        Ok(_) => Vec::new(),
    }
}

/// `validateIPAddressParentReference`.
fn validate(obj: &Value) -> Vec<FieldError> {
    const PATH: &str = "spec.parentRef";
    let Some(parent) = obj.pointer("/spec/parentRef").filter(|p| !p.is_null()) else {
        return vec![FieldError::required(PATH, "")];
    };
    let text = |f: &str| parent.get(f).and_then(Value::as_str).unwrap_or_default();
    let mut errs = Vec::new();
    let group = text("group");
    if !group.is_empty() {
        for msg in rkcm_labels::validation::is_dns1123_subdomain(group) {
            errs.push(FieldError::invalid(
                format!("{PATH}.group"),
                &group.into(),
                &msg,
            ));
        }
    }
    for (field, required) in [("resource", true), ("name", true), ("namespace", false)] {
        let value = text(field);
        if value.is_empty() {
            if required {
                errs.push(FieldError::required(format!("{PATH}.{field}"), ""));
            }
            continue;
        }
        for msg in validate_path_segment_name(value, false) {
            errs.push(FieldError::invalid(
                format!("{PATH}.{field}"),
                &value.into(),
                &msg,
            ));
        }
    }
    errs
}

/// `ValidateIPAddressUpdate`: the parent reference is immutable.
fn validate_update(new: &Value, old: &Value) -> Vec<FieldError> {
    validate_immutable(
        new.pointer("/spec/parentRef"),
        old.pointer("/spec/parentRef"),
        "spec.parentRef",
    )
}

/// The strategy of IPAddresses.
pub(crate) fn strategy(info: &'static ResourceInfo) -> SimpleStrategy {
    SimpleStrategy::new(
        GenericStrategy::new(info).with_name_validator(validate_name),
        no_defaults,
        validate,
        validate_update,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Strategy;
    use rkcm_apimachinery::catalog;
    use serde_json::json;

    fn ip(name: &str, parent: Value) -> Value {
        json!({"metadata": {"name": name}, "spec": {"parentRef": parent}})
    }

    fn messages(errs: Vec<FieldError>) -> Vec<String> {
        errs.iter().map(FieldError::message_with_field).collect()
    }

    #[test]
    fn ip_addresses_are_named_by_a_canonical_address_and_name_their_parent() {
        // TestValidateIPAddress (networking validation_test.go).
        let s = strategy(catalog::by_kind("networking.k8s.io/v1", "IPAddress").expect("served"));
        let svc =
            json!({"group": "", "resource": "services", "namespace": "default", "name": "web"});
        for ok in ["10.96.0.10", "2001:db8::1", "::ffff:10.0.0.1"] {
            assert!(s.validate_create(&ip(ok, svc.clone())).is_empty(), "{ok}");
        }
        assert_eq!(
            messages(s.validate_create(&ip("10.96.0.010", svc.clone()))),
            ["metadata.name: Invalid value: \"10.96.0.010\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"]
        );
        assert_eq!(
            messages(s.validate_create(&ip("2001:db8:0::1", svc.clone()))),
            ["metadata.name: Invalid value: \"2001:db8:0::1\": must be in canonical form (\"2001:db8::1\")"]
        );
        assert_eq!(
            messages(s.validate_create(&json!({"metadata": {"name": "10.0.0.1"}, "spec": {}}))),
            ["spec.parentRef: Required value"]
        );
        assert_eq!(
            messages(s.validate_create(&ip("10.0.0.1", json!({"group": "Bad_Group", "namespace": "a/b"})))),
            [
                "spec.parentRef.group: Invalid value: \"Bad_Group\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                "spec.parentRef.resource: Required value",
                "spec.parentRef.name: Required value",
                "spec.parentRef.namespace: Invalid value: \"a/b\": may not contain '/'",
            ]
        );
    }

    #[test]
    fn the_parent_reference_is_immutable() {
        let old = ip("10.0.0.1", json!({"resource": "services", "name": "a"}));
        let new = ip("10.0.0.1", json!({"resource": "services", "name": "b"}));
        assert!(validate_update(&old, &old).is_empty());
        assert_eq!(
            messages(validate_update(&new, &old)),
            ["spec.parentRef: Invalid value: {\"resource\":\"services\",\"name\":\"b\"}: field is immutable"]
        );
    }
}
