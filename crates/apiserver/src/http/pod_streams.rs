//! The pod subresources a kubelet serves (`log`, `exec`, `attach`, `portforward`), answered with
//! a `Status` because simulated nodes run no containers.
//!
//! One exception: the simulated kubelet (`rkcm-nodesim`) records what containers that follow its
//! container-command convention print in the pod annotation [`CONTAINER_LOGS_ANNOTATION`], and
//! `pods/log` serves that text, as a kubelet's log endpoint would: a container that printed
//! nothing (one that runs until stopped) has an empty log, and `follow=true` on a running
//! container stays open until it ends ([`crate::http::pod_log_follow`]). The server only reads
//! the pod it stores; it never reaches a node.
//!
//! Mirrors the checks of `pkg/registry/core/pod/strategy.go` (`LogLocation`, `streamLocation`,
//! `PortForwardLocation`) up to the point where kube would proxy the request to the kubelet.
//! Exec, attach and port-forward requests usually ask for a protocol upgrade (SPDY or
//! WebSocket); they get a plain HTTP answer, which clients report as the error it carries.

use axum::response::{IntoResponse, Response};
use http::{header, Method, StatusCode};
use serde_json::Value;

use rkcm_apimachinery::catalog::ResourceInfo;

use tokio_util::sync::CancellationToken;

use crate::error::{ApiError, ApiResult};
use crate::http::params::Params;
use crate::http::pod_log_follow;
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
/// explaining that the pod's node is simulated. Logs are what the container printed (empty for a
/// pod without a node, as kube's); with `follow=true` a running container's log streams on.
#[allow(clippy::too_many_arguments)]
pub fn serve(
    store: &Store,
    shutdown: &CancellationToken,
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
    let stored = rest::get(store, info, namespace, name)?;
    let pod = &stored.value();
    if stream.names_a_container() {
        validate_container(pod, name, params.non_empty("container"))?;
    }
    if stream == PodStream::Log {
        // A pod without a node has no log (`LogLocation` returns no location and kube streams
        // nothing); one with a node has what its container printed, nothing included.
        let text = recorded_log(pod, name, params)?;
        let running = log_container(pod, params).filter(|c| is_running(pod, c));
        if let (true, false, Some(container)) =
            (params.flag("follow"), params.flag("previous"), running)
        {
            let followed = pod_log_follow::Followed {
                key: rest::key(info, namespace, name),
                revision: stored.revision,
                container: container.to_string(),
                restart_count: restart_count(pod, container),
                seen_lines: run_log(pod, container, restart_count(pod, container))
                    .map_or(0, |log| log.split_inclusive('\n').count()),
                timestamps: params.flag("timestamps"),
                bytes_left: params
                    .int("limitBytes")?
                    .and_then(|n| usize::try_from(n).ok())
                    .map(|n| n.saturating_sub(text.len())),
            };
            return pod_log_follow::follow(store, shutdown.clone(), text, followed);
        }
        return Ok((StatusCode::OK, [(header::CONTENT_TYPE, "text/plain")], text).into_response());
    }
    let node = pod
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .unwrap_or("");
    if node.is_empty() {
        return Err(ApiError::bad_request(format!(
            "pod {name} does not have a host assigned"
        )));
    }
    Err(ApiError::bad_request(format!(
        "pod {name:?} runs on simulated node {node:?}: rkcm runs no containers, so {}",
        stream.unavailable()
    )))
}

/// Annotation in which the simulated kubelet records what a container printed. Its value is a JSON
/// object from container name to the container's latest runs, oldest first, each
/// `{"restartCount": N, "log": "<RFC 3339 time> <line>\n…"}` (the format of `rkcm-nodesim`'s
/// `kubelet::logs`, which writes it; this server only reads it).
pub const CONTAINER_LOGS_ANNOTATION: &str = "rkcm.io/container-logs";

/// The container a `pods/log` request names: `container`, else the pod's first container.
pub(crate) fn log_container<'a>(pod: &'a Value, params: &'a Params) -> Option<&'a str> {
    params.non_empty("container").or_else(|| {
        pod.pointer("/spec/containers/0/name")
            .and_then(Value::as_str)
    })
}

/// The status of `container` among the pod's container, init container and ephemeral
/// container statuses.
fn container_status<'a>(pod: &'a Value, container: &str) -> Option<&'a Value> {
    [
        "containerStatuses",
        "initContainerStatuses",
        "ephemeralContainerStatuses",
    ]
    .iter()
    .filter_map(|field| pod.pointer(&format!("/status/{field}"))?.as_array())
    .flatten()
    .find(|s| s.get("name").and_then(Value::as_str) == Some(container))
}

/// The `restartCount` of `container` (0 before it has a status).
pub(crate) fn restart_count(pod: &Value, container: &str) -> i64 {
    container_status(pod, container)
        .and_then(|s| s.get("restartCount").and_then(Value::as_i64))
        .unwrap_or(0)
}

/// Whether `container`'s status says it runs.
pub(crate) fn is_running(pod: &Value, container: &str) -> bool {
    container_status(pod, container).is_some_and(|s| s.pointer("/state/running").is_some())
}

/// The timestamped lines recorded in [`CONTAINER_LOGS_ANNOTATION`] for run `restart_count` of
/// `container`, if that run is recorded.
pub(crate) fn run_log(pod: &Value, container: &str, restart_count: i64) -> Option<String> {
    let logs: Value = pod
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(CONTAINER_LOGS_ANNOTATION))
        .and_then(Value::as_str)
        .and_then(|v| serde_json::from_str(v).ok())?;
    logs.get(container)?
        .as_array()?
        .iter()
        .find(|r| r.get("restartCount").and_then(Value::as_i64) == Some(restart_count))
        .and_then(|r| r.get("log").and_then(Value::as_str))
        .map(str::to_string)
}

/// The log of the container a `pods/log` request names, from [`CONTAINER_LOGS_ANNOTATION`];
/// empty when nothing is recorded (the container printed nothing, as one that runs until
/// stopped).
///
/// Picks the run whose `restartCount` is the container's current one (`previous=true`: the one
/// before, or 400 as the kubelet when there is none), then applies `sinceSeconds`/`sinceTime`,
/// `tailLines`, `timestamps` and `limitBytes` in the kubelet's order.
fn recorded_log(pod: &Value, name: &str, params: &Params) -> ApiResult<String> {
    let Some(container) = log_container(pod, params) else {
        return Ok(String::new());
    };
    let previous = params.flag("previous");
    let current = restart_count(pod, container);
    let wanted = if previous { current - 1 } else { current };
    let log = match run_log(pod, container, wanted) {
        Some(log) => log,
        None if previous => {
            return Err(ApiError::bad_request(format!(
                "previous terminated container {container:?} in pod {name:?} not found"
            )))
        }
        // The current run has printed nothing (yet).
        None => String::new(),
    };
    let since = match (params.int("sinceSeconds")?, params.non_empty("sinceTime")) {
        (Some(seconds), _) => jiff::Timestamp::now()
            .checked_sub(jiff::SignedDuration::from_secs(seconds))
            .ok(),
        (None, Some(time)) => Some(time.parse::<jiff::Timestamp>().map_err(|_| {
            ApiError::bad_request(format!("invalid value for sinceTime: {time:?}"))
        })?),
        (None, None) => None,
    };
    let options = LogOptions {
        since,
        tail_lines: params.int("tailLines")?,
        timestamps: params.flag("timestamps"),
        limit_bytes: params.int("limitBytes")?,
    };
    Ok(select_log(&log, &options))
}

/// The options of `PodLogOptions` that apply to a recorded log.
#[derive(Clone, Debug, Default)]
pub(crate) struct LogOptions {
    pub(crate) since: Option<jiff::Timestamp>,
    pub(crate) tail_lines: Option<i64>,
    pub(crate) timestamps: bool,
    pub(crate) limit_bytes: Option<i64>,
}

/// Applies `options` to timestamped lines (`<RFC 3339 time> <text>`).
pub(crate) fn select_log(log: &str, options: &LogOptions) -> String {
    let lines: Vec<(Option<jiff::Timestamp>, &str, &str)> = log
        .split_inclusive('\n')
        .map(|line| match line.split_once(' ') {
            Some((stamp, text)) => match stamp.parse::<jiff::Timestamp>() {
                Ok(at) => (Some(at), stamp, text),
                Err(_) => (None, "", line),
            },
            None => (None, "", line),
        })
        .filter(|(at, _, _)| match (options.since, at) {
            (Some(since), Some(at)) => *at >= since,
            _ => true,
        })
        .collect();
    let skip = options
        .tail_lines
        .and_then(|n| usize::try_from(n).ok())
        .map_or(0, |n| lines.len().saturating_sub(n));
    let mut out = String::new();
    for (_, stamp, text) in &lines[skip..] {
        if options.timestamps && !stamp.is_empty() {
            out.push_str(stamp);
            out.push(' ');
        }
        out.push_str(text);
    }
    if let Some(limit) = options.limit_bytes.and_then(|n| usize::try_from(n).ok()) {
        let mut cut = limit.min(out.len());
        while !out.is_char_boundary(cut) {
            cut -= 1;
        }
        out.truncate(cut);
    }
    out
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

    fn params(query: &str) -> Params {
        Params::parse(Some(query)).expect("query")
    }

    fn logged_pod(restart_count: i64) -> Value {
        let logs = json!({"app": [
            {"restartCount": 0, "log": "2026-01-01T00:00:00Z first\n"},
            {"restartCount": 1, "log": "2026-01-01T00:00:10Z one\n2026-01-01T00:00:12Z two\n2026-01-01T00:00:14Z thrée\n"},
        ]});
        json!({
            "metadata": {"annotations": {CONTAINER_LOGS_ANNOTATION: logs.to_string()}},
            "spec": {"containers": [{"name": "app"}, {"name": "other"}]},
            "status": {"containerStatuses": [{"name": "app", "restartCount": restart_count}]},
        })
    }

    #[test]
    fn recorded_logs_serve_the_current_or_previous_run() {
        let pod = logged_pod(1);
        let log = |q: &str| recorded_log(&pod, "p", &params(q)).expect("served");
        assert_eq!(log("container=app"), "one\ntwo\nthrée\n");
        assert_eq!(log("container=app&previous=true"), "first\n");
        assert_eq!(
            log("container=other"),
            "",
            "nothing recorded: a container that printed nothing has an empty log"
        );
        // Restarted and running: the new run has printed nothing yet.
        let running = logged_pod(2);
        assert_eq!(
            recorded_log(&running, "p", &params("container=app")).expect("served"),
            ""
        );
        let first = logged_pod(0);
        assert_eq!(
            recorded_log(&first, "p", &params("container=app&previous=true"))
                .expect_err("no previous run")
                .message,
            "previous terminated container \"app\" in pod \"p\" not found"
        );
    }

    #[test]
    fn log_options_select_lines_as_the_kubelet_does() {
        let log =
            "2026-01-01T00:00:10Z one\n2026-01-01T00:00:12Z two\n2026-01-01T00:00:14Z thrée\n";
        let select = |options: LogOptions| select_log(log, &options);
        assert_eq!(
            select(LogOptions {
                tail_lines: Some(2),
                ..Default::default()
            }),
            "two\nthrée\n"
        );
        assert_eq!(
            select(LogOptions {
                tail_lines: Some(0),
                ..Default::default()
            }),
            ""
        );
        assert_eq!(
            select(LogOptions {
                timestamps: true,
                tail_lines: Some(1),
                ..Default::default()
            }),
            "2026-01-01T00:00:14Z thrée\n"
        );
        assert_eq!(
            select(LogOptions {
                limit_bytes: Some(6),
                ..Default::default()
            }),
            "one\ntw"
        );
        assert_eq!(
            select(LogOptions {
                limit_bytes: Some(12),
                ..Default::default()
            }),
            "one\ntwo\nthr",
            "never cuts a character in half"
        );
        assert_eq!(
            select(LogOptions {
                since: Some("2026-01-01T00:00:12Z".parse().expect("time")),
                ..Default::default()
            }),
            "two\nthrée\n"
        );
    }
}
