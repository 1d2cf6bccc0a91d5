//! The pod subresources a kubelet serves (`log`, `exec`, `attach`, `portforward`), answered with
//! a `Status` because simulated nodes run no containers.
//!
//! Mirrors the checks of `pkg/registry/core/pod/strategy.go` (`LogLocation`, `streamLocation`,
//! `PortForwardLocation`) up to the point where kube would proxy the request to the kubelet.
//! Exec, attach and port-forward requests usually ask for a protocol upgrade (SPDY or
//! WebSocket); they get a plain HTTP answer, which clients report as the error it carries.

use axum::response::{IntoResponse, Response};
use http::{header, Method, StatusCode};
use serde_json::Value;

use rkcm_apimachinery::catalog::ResourceInfo;

use crate::error::{ApiError, ApiResult};
use crate::http::params::Params;
use crate::registry::FieldError;
use crate::rest;
use crate::store::Store;

/// A pod subresource that streams from the node's containers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PodStream {
    /// `pods/log` (GET).
    Log,
    /// `pods/exec` (GET or POST, usually upgraded).
    Exec,
    /// `pods/attach` (GET or POST, usually upgraded).
    Attach,
    /// `pods/portforward` (GET or POST, usually upgraded).
    PortForward,
}

impl PodStream {
    /// The stream served at subresource `name` of a pod, if it is one.
    pub fn from_subresource(info: &ResourceInfo, name: &str) -> Option<Self> {
        if !(info.group.is_empty() && info.kind == "Pod") {
            return None;
        }
        match name {
            "log" => Some(Self::Log),
            "exec" => Some(Self::Exec),
            "attach" => Some(Self::Attach),
            "portforward" => Some(Self::PortForward),
            _ => None,
        }
    }

    /// What a simulated node cannot offer, ending the refusal's message.
    fn unavailable(self) -> &'static str {
        match self {
            Self::Log => "logs are not available",
            Self::Exec => "commands cannot be executed in it",
            Self::Attach => "there is no container process to attach to",
            Self::PortForward => "there are no ports to forward to",
        }
    }

    /// Whether kube checks the `container` parameter (`validateContainer`) for this stream.
    fn names_a_container(self) -> bool {
        !matches!(self, Self::PortForward)
    }
}

/// Answers a request for `stream` of pod `name`: 422 for invalid log options, 404 for a missing
/// pod, 400 for a container the pod does not have or a pod without a node, as kube; then 400
/// explaining that the pod's node is simulated. Logs of a pod without a node are empty, as kube's.
pub fn serve(
    store: &Store,
    info: &'static ResourceInfo,
    namespace: Option<&str>,
    name: &str,
    stream: PodStream,
    method: &Method,
    params: &Params,
) -> ApiResult<Response> {
    let allowed = match stream {
        PodStream::Log => *method == Method::GET,
        _ => *method == Method::GET || *method == Method::POST,
    };
    if !allowed {
        return Err(ApiError::method_not_allowed(method.as_str()));
    }
    if stream == PodStream::Log {
        validate_log_options(info, name, params)?;
    }
    let pod = rest::get(store, info, namespace, name)?;
    let pod = &pod.value;
    if stream.names_a_container() {
        validate_container(pod, name, params.non_empty("container"))?;
    }
    let node = pod
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .unwrap_or("");
    if node.is_empty() {
        if stream == PodStream::Log {
            // `LogLocation` returns no location, and kube streams nothing.
            return Ok((
                StatusCode::OK,
                [(header::CONTENT_TYPE, "text/plain")],
                Vec::<u8>::new(),
            )
                .into_response());
        }
        return Err(ApiError::bad_request(format!(
            "pod {name} does not have a host assigned"
        )));
    }
    Err(ApiError::bad_request(format!(
        "pod {name:?} runs on simulated node {node:?}: rkcm runs no containers, so {}",
        stream.unavailable()
    )))
}

/// `ValidatePodLogOptions`: 422 `PodLogOptions "<pod>" is invalid` for negative `tailLines`,
/// non-positive `limitBytes` or `sinceSeconds`, or both `sinceSeconds` and `sinceTime`; 400 for
/// parameters that are not integers.
fn validate_log_options(info: &ResourceInfo, name: &str, params: &Params) -> ApiResult<()> {
    let mut errs = Vec::new();
    if let Some(n) = params.int("tailLines")?.filter(|n| *n < 0) {
        errs.push(FieldError::invalid(
            "tailLines",
            &Value::from(n),
            "must be greater than or equal to 0",
        ));
    }
    if let Some(n) = params.int("limitBytes")?.filter(|n| *n < 1) {
        errs.push(FieldError::invalid(
            "limitBytes",
            &Value::from(n),
            "must be greater than 0",
        ));
    }
    match (params.int("sinceSeconds")?, params.non_empty("sinceTime")) {
        (Some(_), Some(_)) => errs.push(FieldError::forbidden(
            "",
            "at most one of `sinceTime` or `sinceSeconds` may be specified",
        )),
        (Some(n), None) if n < 1 => errs.push(FieldError::invalid(
            "sinceSeconds",
            &Value::from(n),
            "must be greater than 0",
        )),
        _ => {}
    }
    if errs.is_empty() {
        return Ok(());
    }
    let mut e = ApiError::invalid(info, name, &errs);
    e.message = e.message.replacen(info.kind, "PodLogOptions", 1);
    e.details.kind = Some("PodLogOptions".into());
    Err(e)
}

/// The names of every container of a pod: containers, init containers, ephemeral containers
/// (`podutil.VisitContainers` order).
fn container_names(pod: &Value) -> Vec<&str> {
    ["initContainers", "containers", "ephemeralContainers"]
        .iter()
        .filter_map(|field| pod.pointer(&format!("/spec/{field}"))?.as_array())
        .flatten()
        .filter_map(|c| c.get("name")?.as_str())
        .collect()
}

/// `validateContainer`: a named container must exist; without a name the pod must have exactly
/// one container.
fn validate_container(pod: &Value, name: &str, container: Option<&str>) -> ApiResult<()> {
    let names = container_names(pod);
    match container {
        Some(c) if names.contains(&c) => Ok(()),
        Some(c) => Err(ApiError::bad_request(format!(
            "container {c} is not valid for pod {name}"
        ))),
        None => {
            let regular = pod
                .pointer("/spec/containers")
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            match regular {
                1 => Ok(()),
                0 => Err(ApiError::bad_request(format!(
                    "pod {name} does not have a container"
                ))),
                _ => Err(ApiError::bad_request(format!(
                    "a container name must be specified for pod {name}, choose one of: [{}]",
                    names.join(" ")
                ))),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn containers_are_validated_as_kube() {
        let pod = json!({"spec": {
            "initContainers": [{"name": "init"}],
            "containers": [{"name": "a"}, {"name": "b"}],
        }});
        assert!(validate_container(&pod, "p", Some("init")).is_ok());
        assert_eq!(
            validate_container(&pod, "p", Some("x"))
                .expect_err("unknown")
                .message,
            "container x is not valid for pod p"
        );
        assert_eq!(
            validate_container(&pod, "p", None)
                .expect_err("ambiguous")
                .message,
            "a container name must be specified for pod p, choose one of: [init a b]"
        );
        let single = json!({"spec": {"containers": [{"name": "a"}]}});
        assert!(validate_container(&single, "p", None).is_ok());
        let none = json!({"spec": {}});
        assert_eq!(
            validate_container(&none, "p", None)
                .expect_err("no containers")
                .message,
            "pod p does not have a container"
        );
    }

    #[test]
    fn only_pod_subresources_stream() {
        let pods = rkcm_apimachinery::catalog::by_kind("v1", "Pod").expect("served");
        let nodes = rkcm_apimachinery::catalog::by_kind("v1", "Node").expect("served");
        assert_eq!(
            PodStream::from_subresource(pods, "portforward"),
            Some(PodStream::PortForward)
        );
        assert_eq!(PodStream::from_subresource(pods, "status"), None);
        assert_eq!(PodStream::from_subresource(nodes, "log"), None);
    }
}
