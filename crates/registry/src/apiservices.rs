//! APIServices (kube-aggregator's `pkg/registry/apiservice` and
//! `pkg/apis/apiregistration/validation`): named `<version>.<group>`, kube's ranges for the
//! priorities, a Service reference (port 443 by default) or none for `Local` APIs.

use rkcm_apimachinery::catalog::ResourceInfo;
use serde_json::{json, Value};

use super::generic::GenericStrategy;
use super::hooked::{HookedStrategy, Hooks};
use super::meta::is_dns1123_subdomain;
use super::object::{get, get_str};
use super::FieldError;
use rkcm_labels::validation::is_dns1035_label;

/// `SetDefaults_ServiceReference`: port 443.
fn default_apiservice(obj: &mut Value) {
    if let Some(service) = obj
        .pointer_mut("/spec/service")
        .and_then(Value::as_object_mut)
    {
        if service.get("port").is_none_or(Value::is_null) {
            service.insert("port".into(), json!(443));
        }
    }
}

/// `ValidateAPIService` (the path-segment rule of the name is the base's name validator).
fn validate(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let name = get_str(obj, &["metadata", "name"]).unwrap_or("");
    let group = get_str(obj, &["spec", "group"]).unwrap_or("");
    let version = get_str(obj, &["spec", "version"]).unwrap_or("");
    let required_name = format!("{version}.{group}");
    let path_segment_ok = super::rbac::name_is_path_segment(name, false).is_empty();
    if path_segment_ok && !name.is_empty() && name != required_name {
        errs.push(FieldError::invalid(
            "metadata.name",
            &json!(name),
            &format!("must be `spec.version+\".\"+spec.group`: {required_name:?}"),
        ));
    }
    if group.is_empty() && version != "v1" {
        errs.push(FieldError::required(
            "spec.group",
            "only v1 may have an empty group and it better be legacy kube",
        ));
    }
    if !group.is_empty() {
        for m in is_dns1123_subdomain(group) {
            errs.push(FieldError::invalid("spec.group", &json!(group), &m));
        }
    }
    for m in is_dns1035_label(version) {
        errs.push(FieldError::invalid("spec.version", &json!(version), &m));
    }
    let int = |path: &[&str]| get(obj, path).and_then(Value::as_i64).unwrap_or(0);
    let group_priority = int(&["spec", "groupPriorityMinimum"]);
    if group_priority <= 0 || group_priority > 20000 {
        errs.push(FieldError::invalid(
            "spec.groupPriorityMinimum",
            &json!(group_priority),
            "must be positive and less than 20000",
        ));
    }
    let version_priority = int(&["spec", "versionPriority"]);
    if version_priority <= 0 || version_priority > 1000 {
        errs.push(FieldError::invalid(
            "spec.versionPriority",
            &json!(version_priority),
            "must be positive and less than 1000",
        ));
    }
    let ca_bundle = get_str(obj, &["spec", "caBundle"]).unwrap_or("");
    let insecure = get(obj, &["spec", "insecureSkipTLSVerify"])
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let Some(service) = get(obj, &["spec", "service"]).filter(|s| s.is_object()) else {
        if !ca_bundle.is_empty() {
            // The base64 text's decoded length, as kube counts the bytes.
            let bytes = ca_bundle.trim_end_matches('=').len() * 3 / 4;
            errs.push(FieldError::invalid(
                "spec.caBundle",
                &json!(format!("{bytes} bytes")),
                "local APIServices may not have a caBundle",
            ));
        }
        if insecure {
            errs.push(FieldError::invalid(
                "spec.insecureSkipTLSVerify",
                &json!(true),
                "local APIServices may not have insecureSkipTLSVerify",
            ));
        }
        return errs;
    };
    for field in ["namespace", "name"] {
        if get_str(service, &[field]).unwrap_or("").is_empty() {
            errs.push(FieldError::required(format!("spec.service.{field}"), ""));
        }
    }
    let port = get(service, &["port"])
        .and_then(Value::as_i64)
        .unwrap_or(443);
    if !(1..=65535).contains(&port) {
        errs.push(FieldError::invalid(
            "spec.service.port",
            &json!(port),
            "must be between 1 and 65535, inclusive",
        ));
    }
    if insecure && !ca_bundle.is_empty() {
        errs.push(FieldError::invalid(
            "spec.insecureSkipTLSVerify",
            &json!(true),
            "may not be true if caBundle is present",
        ));
    }
    errs
}

fn validate_update(new: &Value, _old: &Value) -> Vec<FieldError> {
    validate(new)
}

/// The strategy of APIServices.
pub(crate) fn strategy(info: &'static ResourceInfo) -> HookedStrategy {
    HookedStrategy::new(
        GenericStrategy::new(info).with_name_validator(super::rbac::name_is_path_segment),
        Hooks {
            default: default_apiservice,
            validate,
            validate_update,
            ..Hooks::NONE
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(obj: &Value) -> Vec<String> {
        validate(obj)
            .iter()
            .map(FieldError::message_with_field)
            .collect()
    }

    fn apiservice(name: &str, group: &str, version: &str) -> Value {
        json!({"metadata": {"name": name},
               "spec": {"group": group, "version": version, "groupPriorityMinimum": 17800, "versionPriority": 15}})
    }

    // Cases of kube-aggregator's validation_test.go.
    #[test]
    fn local_apiservices_named_version_dot_group_are_valid() {
        assert!(messages(&apiservice("v1.apps", "apps", "v1")).is_empty());
        assert!(messages(&apiservice("v1.", "", "v1")).is_empty());
    }

    #[test]
    fn the_name_must_be_version_dot_group() {
        assert_eq!(
            messages(&apiservice("v1.batch", "apps", "v1")),
            [
                r#"metadata.name: Invalid value: "v1.batch": must be `spec.version+"."+spec.group`: "v1.apps""#
            ]
        );
    }

    #[test]
    fn only_v1_may_have_an_empty_group() {
        assert_eq!(
            messages(&apiservice("v2.", "", "v2")),
            ["spec.group: Required value: only v1 may have an empty group and it better be legacy kube"]
        );
    }

    #[test]
    fn priorities_are_bounded() {
        let mut obj = apiservice("v1.apps", "apps", "v1");
        obj["spec"]["groupPriorityMinimum"] = json!(0);
        obj["spec"]["versionPriority"] = json!(1001);
        assert_eq!(
            messages(&obj),
            [
                "spec.groupPriorityMinimum: Invalid value: 0: must be positive and less than 20000",
                "spec.versionPriority: Invalid value: 1001: must be positive and less than 1000",
            ]
        );
    }

    #[test]
    fn service_references_need_a_namespace_and_name_and_default_port_443() {
        let mut obj = apiservice("v1beta1.metrics.k8s.io", "metrics.k8s.io", "v1beta1");
        obj["spec"]["service"] = json!({"name": "metrics-server"});
        default_apiservice(&mut obj);
        assert_eq!(obj["spec"]["service"]["port"], 443);
        assert_eq!(messages(&obj), ["spec.service.namespace: Required value"]);
        let mut local = apiservice("v1.apps", "apps", "v1");
        local["spec"]["insecureSkipTLSVerify"] = json!(true);
        assert_eq!(
            messages(&local),
            ["spec.insecureSkipTLSVerify: Invalid value: true: local APIServices may not have insecureSkipTLSVerify"]
        );
    }
}
