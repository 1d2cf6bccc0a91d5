//! The `Available` condition of an APIService, decided as kube-aggregator's availability
//! controllers decide it (`controllers/status/local` and `remote`): `Local` for an APIService
//! without a service; for one with a service, `ServiceNotFound`, `ServicePortError`,
//! `EndpointsNotFound`, `MissingEndpoints` from the Service and its EndpointSlices, then
//! `FailedDiscoveryCheck` or `Passed` from a GET of its discovery document ([`super::check`]).

use serde_json::{json, Value};

use rkcm_server::webhook::ServiceRef;

/// `type: Available`.
pub const AVAILABLE: &str = "Available";

/// One decided `Available` condition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Condition {
    /// `True` or `False`.
    pub status: &'static str,
    /// `Local`, `ServiceNotFound`, ..., `Passed`.
    pub reason: &'static str,
    /// kube's message for the reason.
    pub message: String,
}

impl Condition {
    fn unavailable(reason: &'static str, message: String) -> Self {
        Self {
            status: "False",
            reason,
            message,
        }
    }
}

/// The condition of an APIService served by this server.
pub fn local() -> Condition {
    Condition {
        status: "True",
        reason: "Local",
        message: "Local APIServices are always available".to_string(),
    }
}

/// What the Service and its EndpointSlices (those labelled with its name) say before anything
/// is dialed; `None` when the discovery check is next. Only a `ClusterIP` Service (the default
/// type) has its port and endpoints checked, as in kube.
pub fn service_condition(
    svc: &ServiceRef,
    service: Option<&Value>,
    slices: &[Value],
) -> Option<Condition> {
    let (name, namespace) = (&svc.name, &svc.namespace);
    let Some(service) = service else {
        return Some(Condition::unavailable(
            "ServiceNotFound",
            format!("service/{name} in {namespace:?} is not present"),
        ));
    };
    let kind = service
        .pointer("/spec/type")
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP");
    if kind != "ClusterIP" {
        return None;
    }
    let port = service
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|p| p.get("port").and_then(Value::as_u64) == Some(u64::from(svc.port)));
    let Some(port) = port else {
        return Some(Condition::unavailable(
            "ServicePortError",
            format!(
                "service/{name} in {namespace:?} is not listening on port {}",
                svc.port
            ),
        ));
    };
    let port_name = port.get("name").and_then(Value::as_str).unwrap_or_default();
    if slices.is_empty() {
        return Some(Condition::unavailable(
            "EndpointsNotFound",
            format!("cannot find endpointslices for service/{name} in {namespace:?}"),
        ));
    }
    if !has_available_endpoint(port_name, slices) {
        return Some(Condition::unavailable(
            "MissingEndpoints",
            format!(
                "endpointslices for service/{name} in {namespace:?} have no addresses with port name {port_name:?}"
            ),
        ));
    }
    None
}

/// `hasAvailableEndpoint`: a slice with an endpoint not marked unready and a port named
/// `port_name` (a port without a name matches no name, not even the empty one).
pub fn has_available_endpoint(port_name: &str, slices: &[Value]) -> bool {
    slices.iter().any(|s| {
        let ready = s
            .get("endpoints")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|e| e.pointer("/conditions/ready").and_then(Value::as_bool) != Some(false));
        let port = s
            .get("ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|p| {
                p.get("name").and_then(Value::as_str) == Some(port_name)
                    && p.get("port").is_some_and(Value::is_number)
            });
        ready && port
    })
}

/// The condition after the discovery check: its error as the message, or `Passed`.
pub fn discovery_condition(result: &Result<(), String>) -> Condition {
    match result {
        Ok(()) => Condition {
            status: "True",
            reason: "Passed",
            message: "all checks passed".to_string(),
        },
        Err(e) => Condition::unavailable("FailedDiscoveryCheck", e.clone()),
    }
}

/// Whether the `Available` condition of `apiservice` is `True`.
pub fn is_available(apiservice: &Value) -> bool {
    available_of(apiservice)
        .and_then(|c| c.get("status"))
        .and_then(Value::as_str)
        == Some("True")
}

fn available_of(apiservice: &Value) -> Option<&Value> {
    apiservice
        .pointer("/status/conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(AVAILABLE))
}

/// `SetAPIServiceCondition`: the status of `apiservice` with `condition`, or `None` when it
/// already says so. The transition time moves only when the status changes; the reason and
/// message are replaced.
pub fn set_condition(apiservice: &Value, condition: &Condition, now: &str) -> Option<Value> {
    let current = available_of(apiservice);
    let str_of = |c: &Value, k: &str| c.get(k).and_then(Value::as_str).map(str::to_string);
    let transition = match current {
        Some(c) if str_of(c, "status").as_deref() == Some(condition.status) => {
            if str_of(c, "reason").as_deref() == Some(condition.reason)
                && str_of(c, "message").as_deref() == Some(condition.message.as_str())
            {
                return None;
            }
            c.get("lastTransitionTime").cloned().unwrap_or(json!(now))
        }
        _ => json!(now),
    };
    let updated = json!({
        "type": AVAILABLE,
        "status": condition.status,
        "lastTransitionTime": transition,
        "reason": condition.reason,
        "message": condition.message,
    });
    let mut status = apiservice
        .get("status")
        .filter(|s| s.is_object())
        .cloned()
        .unwrap_or_else(|| json!({}));
    let conditions = status
        .get("conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut replaced = false;
    let mut out: Vec<Value> = conditions
        .into_iter()
        .map(|c| {
            if c.get("type").and_then(Value::as_str) == Some(AVAILABLE) {
                replaced = true;
                updated.clone()
            } else {
                c
            }
        })
        .collect();
    if !replaced {
        out.push(updated);
    }
    status["conditions"] = Value::Array(out);
    Some(status)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn svc_ref() -> ServiceRef {
        ServiceRef {
            namespace: "ns".into(),
            name: "api".into(),
            path: String::new(),
            port: 443,
        }
    }

    fn service(port_name: &str) -> Value {
        json!({"spec": {"ports": [{"name": port_name, "port": 443, "targetPort": 8443}]}})
    }

    fn slice(ready: Option<bool>, port_name: Option<&str>) -> Value {
        let mut endpoint = json!({"addresses": ["127.0.0.1"]});
        if let Some(r) = ready {
            endpoint["conditions"] = json!({"ready": r});
        }
        let mut port = json!({"port": 8443});
        if let Some(n) = port_name {
            port["name"] = json!(n);
        }
        json!({"endpoints": [endpoint], "ports": [port]})
    }

    // Cases of remote_available_controller_test.go's TestSync.
    #[test]
    fn a_missing_service_is_service_not_found() {
        let c = service_condition(&svc_ref(), None, &[]).expect("decided");
        assert_eq!(c.reason, "ServiceNotFound");
        assert_eq!(c.message, "service/api in \"ns\" is not present");
    }

    #[test]
    fn a_service_without_the_port_is_a_port_error() {
        let mut s = service("https");
        s["spec"]["ports"][0]["port"] = json!(6443);
        let c = service_condition(&svc_ref(), Some(&s), &[slice(None, Some("https"))])
            .expect("decided");
        assert_eq!(c.reason, "ServicePortError");
        assert_eq!(
            c.message,
            "service/api in \"ns\" is not listening on port 443"
        );
    }

    #[test]
    fn no_slices_then_no_ready_endpoint_are_reported() {
        let s = service("https");
        let c = service_condition(&svc_ref(), Some(&s), &[]).expect("decided");
        assert_eq!(c.reason, "EndpointsNotFound");
        assert_eq!(
            c.message,
            "cannot find endpointslices for service/api in \"ns\""
        );
        let c = service_condition(&svc_ref(), Some(&s), &[slice(Some(false), Some("https"))])
            .expect("decided");
        assert_eq!(c.reason, "MissingEndpoints");
        assert_eq!(
            c.message,
            "endpointslices for service/api in \"ns\" have no addresses with port name \"https\""
        );
        // The slice's port must carry the service port's name.
        let c = service_condition(&svc_ref(), Some(&s), &[slice(Some(true), Some("http"))])
            .expect("decided");
        assert_eq!(c.reason, "MissingEndpoints");
        let unnamed = service("");
        assert!(service_condition(&svc_ref(), Some(&unnamed), &[slice(None, None)]).is_some());
        assert!(service_condition(&svc_ref(), Some(&unnamed), &[slice(None, Some(""))]).is_none());
    }

    #[test]
    fn ready_or_unknown_endpoints_go_on_to_the_discovery_check() {
        let s = service("https");
        assert_eq!(
            service_condition(&svc_ref(), Some(&s), &[slice(Some(true), Some("https"))]),
            None
        );
        assert_eq!(
            service_condition(&svc_ref(), Some(&s), &[slice(None, Some("https"))]),
            None
        );
        let mut external = json!({"spec": {"type": "NodePort", "ports": []}});
        assert_eq!(service_condition(&svc_ref(), Some(&external), &[]), None);
        external["spec"]["type"] = json!("ClusterIP");
        assert!(service_condition(&svc_ref(), Some(&external), &[]).is_some());
    }

    #[test]
    fn the_discovery_check_passes_or_reports_its_error() {
        assert_eq!(discovery_condition(&Ok(())).reason, "Passed");
        assert_eq!(discovery_condition(&Ok(())).message, "all checks passed");
        let c = discovery_condition(&Err("failing or missing response from x".into()));
        assert_eq!((c.status, c.reason), ("False", "FailedDiscoveryCheck"));
        assert_eq!(c.message, "failing or missing response from x");
    }

    #[test]
    fn conditions_keep_their_transition_time_while_the_status_holds() {
        let obj = json!({"status": {"conditions": [{"type": "Other", "status": "True"}]}});
        let down = Condition::unavailable("MissingEndpoints", "m".into());
        let status = set_condition(&obj, &down, "t1").expect("added");
        assert_eq!(status["conditions"][0]["type"], "Other");
        assert_eq!(status["conditions"][1]["lastTransitionTime"], "t1");
        let obj = json!({"status": status});
        assert!(!is_available(&obj));
        assert_eq!(set_condition(&obj, &down, "t2"), None);

        let other = Condition::unavailable("ServiceNotFound", "n".into());
        let status = set_condition(&obj, &other, "t2").expect("reason changed");
        assert_eq!(status["conditions"][1]["lastTransitionTime"], "t1");
        assert_eq!(status["conditions"][1]["reason"], "ServiceNotFound");

        let status = set_condition(&obj, &local(), "t3").expect("now available");
        assert_eq!(status["conditions"][1]["lastTransitionTime"], "t3");
        assert_eq!(status["conditions"].as_array().map(Vec::len), Some(2));
        assert!(is_available(&json!({"status": status})));
    }
}
