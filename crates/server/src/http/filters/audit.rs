//! The audit filters (`filters/audit.go` and `WithAuditInit`): every response carries the
//! request's `Audit-Id`, and requests the policy audits generate their events at
//! `RequestReceived`, `ResponseStarted` (long-running requests) and `ResponseComplete` (or
//! `Panic`), with the request's and the response's bodies as the level asks.

use std::net::SocketAddr;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use axum::body::{Body, HttpBody};
use axum::extract::{ConnectInfo, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use bytes::{Bytes, BytesMut};
use futures::{FutureExt, StreamExt};
use http::{header, HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use parking_lot::Mutex;
use serde_json::Value;

use super::AuthenticationFailed;
use crate::audit::event::strip_managed_fields;
use crate::audit::{
    AuditContext, AuditId, Auditor, Event, Level, ObjectReference, RequestAuditConfig,
    ResponseStatus, Stage,
};
use crate::auth::authorization::Attributes;
use crate::auth::{ClientCertificate, UserInfo};

/// kube's `auditinternal.HeaderAuditID`.
pub const AUDIT_ID_HEADER: HeaderName = HeaderName::from_static("audit-id");

/// Most bytes of a response body kept for its event; a larger body is left out of
/// `responseObject` (its status is still recorded).
const MAX_CAPTURED_BYTES: usize = 16 * 1024 * 1024;

/// Most bytes of a request body kept: the handlers refuse larger ones (and drain them, which
/// must not fill a copy).
const MAX_CAPTURED_REQUEST_BYTES: usize = crate::http::body::MAX_BODY_BYTES;

/// `WithAuditInit`: the request's audit id is the client's `Audit-ID` header, else a new UUID;
/// it goes into the request's extensions and into the response's `Audit-Id` header (unless a
/// proxied server already set one). Installed outside authentication, so refused requests
/// carry it too, and (when auditing is on) their `ResponseStarted` event is generated here.
/// Installed whether or not auditing is on, as kube's `DefaultBuildHandlerChain` does.
pub async fn audit_init(
    State(auditor): State<Option<Arc<Auditor>>>,
    mut req: Request,
    next: Next,
) -> Response {
    let client = req
        .headers()
        .get(&AUDIT_ID_HEADER)
        .filter(|v| !v.is_empty() && v.to_str().is_ok())
        .cloned();
    let value = match client {
        Some(v) => v,
        None => HeaderValue::from_str(&uuid::Uuid::new_v4().to_string())
            .expect("a UUID is a valid header value"),
    };
    let id = value.to_str().unwrap_or_default().to_string();
    let received = jiff::Timestamp::now();
    let attempt = auditor
        .as_ref()
        .map(|_| AuthenticationAttempt::of(&req, received));
    req.extensions_mut().insert(AuditId {
        id: id.clone(),
        received,
    });
    let mut resp = next.run(req).await;
    if let (Some(auditor), Some(attempt)) = (&auditor, attempt) {
        if resp.extensions().get::<AuthenticationFailed>().is_some() {
            attempt.audit_failure(auditor, id, resp.status().as_u16());
        }
    }
    if !resp.headers().contains_key(&AUDIT_ID_HEADER) {
        resp.headers_mut().insert(AUDIT_ID_HEADER, value);
    }
    resp
}

/// What kube's failed-authentication audit (`WithFailedAuthenticationAudit`) records of a
/// request, kept before the request goes on: cheap clones of its head.
struct AuthenticationAttempt {
    received: jiff::Timestamp,
    method: Method,
    uri: http::Uri,
    user_agent: Option<HeaderValue>,
    forwarded_for: Option<HeaderValue>,
    real_ip: Option<HeaderValue>,
    peer: Option<ConnectInfo<SocketAddr>>,
    /// `getAuthMethods`: basic, bearer, access_token, x509.
    methods: [bool; 4],
}

impl AuthenticationAttempt {
    fn of(req: &Request, received: jiff::Timestamp) -> Self {
        let headers = req.headers();
        let authorization = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .unwrap_or_default();
        let scheme = |name: &str| {
            authorization
                .split_once(' ')
                .is_some_and(|(s, rest)| s.eq_ignore_ascii_case(name) && !rest.is_empty())
        };
        let access_token = req.uri().query().is_some_and(|q| {
            q.split('&').any(|kv| {
                kv.strip_prefix("access_token=")
                    .is_some_and(|t| !t.trim().is_empty())
            })
        });
        Self {
            received,
            method: req.method().clone(),
            uri: req.uri().clone(),
            user_agent: headers.get(header::USER_AGENT).cloned(),
            forwarded_for: headers.get("x-forwarded-for").cloned(),
            real_ip: headers.get("x-real-ip").cloned(),
            peer: req.extensions().get::<ConnectInfo<SocketAddr>>().cloned(),
            methods: [
                scheme("basic"),
                scheme("bearer"),
                access_token,
                req.extensions().get::<ClientCertificate>().is_some(),
            ],
        }
    }

    /// The `ResponseStarted` event of a request refused with `code` by authentication, if the
    /// policy audits it: the policy sees a request without a user.
    fn audit_failure(self, auditor: &Auditor, audit_id: String, code: u16) {
        let attrs = Attributes::from_request(
            UserInfo::default(),
            &self.method,
            self.uri.path(),
            self.uri.query(),
        );
        let config = auditor.evaluator.evaluate(&attrs);
        crate::audit::metrics::observe_policy_level(config.level);
        if !config.records(Stage::ResponseStarted) {
            return;
        }
        let mut headers = HeaderMap::new();
        if let Some(v) = self.forwarded_for {
            headers.insert("x-forwarded-for", v);
        }
        if let Some(v) = self.real_ip {
            headers.insert("x-real-ip", v);
        }
        if let Some(v) = self.user_agent {
            headers.insert(header::USER_AGENT, v);
        }
        let names = ["basic", "bearer", "access_token", "x509"];
        let attempted: Vec<&str> = names
            .iter()
            .zip(self.methods)
            .filter_map(|(name, used)| used.then_some(*name))
            .collect();
        let message = if attempted.is_empty() {
            "Authentication failed, no credentials provided".to_string()
        } else {
            format!("Authentication failed, attempted: {}", attempted.join(", "))
        };
        let mut event = new_event(
            &config,
            attrs,
            RequestHead {
                audit_id,
                received: self.received,
                uri: &self.uri,
                headers: &headers,
                peer: self.peer.as_ref(),
            },
        );
        event.stage = Stage::ResponseStarted;
        event.stage_timestamp = jiff::Timestamp::now();
        event.response_status = Some(ResponseStatus {
            message,
            code,
            ..ResponseStatus::default()
        });
        auditor.backend.process(event);
    }
}

/// What an event records of the request's head.
struct RequestHead<'a> {
    audit_id: String,
    received: jiff::Timestamp,
    uri: &'a http::Uri,
    headers: &'a HeaderMap,
    peer: Option<&'a ConnectInfo<SocketAddr>>,
}

/// The request's event at `RequestReceived`, which the later stages copy and complete.
fn new_event(config: &RequestAuditConfig, attrs: Attributes, head: RequestHead<'_>) -> Event {
    Event {
        kind: "Event",
        api_version: "audit.k8s.io/v1",
        level: config.level,
        audit_id: head.audit_id,
        stage: Stage::RequestReceived,
        request_uri: request_uri(head.uri),
        object_ref: ObjectReference::from_attributes(&attrs),
        verb: attrs.verb,
        user: attrs.user,
        impersonated_user: None,
        source_ips: source_ips(head.headers, head.peer),
        user_agent: head
            .headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string(),
        response_status: None,
        request_object: None,
        response_object: None,
        request_received_timestamp: head.received,
        stage_timestamp: head.received,
        annotations: Default::default(),
    }
}

/// The path and query as the client sent them.
fn request_uri(uri: &http::Uri) -> String {
    uri.path_and_query()
        .map_or_else(|| uri.path().to_string(), |p| p.as_str().to_string())
}

/// `WithAudit`: evaluates the policy on the authenticated request and, unless its level is
/// `None`, sends its events to the backend. Runs after authentication and before impersonation,
/// as kube's, so the policy sees the user who sent the request.
pub async fn audit(State(auditor): State<Arc<Auditor>>, mut req: Request, next: Next) -> Response {
    let Some(user) = req.extensions().get::<UserInfo>().cloned() else {
        return next.run(req).await;
    };
    let attrs = Attributes::from_request(user, req.method(), req.uri().path(), req.uri().query());
    let config = auditor.evaluator.evaluate(&attrs);
    crate::audit::metrics::observe_policy_level(config.level);
    if config.level == Level::None {
        return next.run(req).await;
    }
    let (audit_id, received) = match req.extensions().get::<AuditId>() {
        Some(init) => (init.id.clone(), init.received),
        None => (uuid::Uuid::new_v4().to_string(), jiff::Timestamp::now()),
    };
    let long_running = is_long_running(&attrs);
    let verb = attrs.verb.clone();
    let event = new_event(
        &config,
        attrs,
        RequestHead {
            audit_id,
            received,
            uri: req.uri(),
            headers: req.headers(),
            peer: req.extensions().get::<ConnectInfo<SocketAddr>>(),
        },
    );
    if config.records(Stage::RequestReceived) {
        auditor.backend.process(event.clone());
    }
    let context = AuditContext::default();
    req.extensions_mut().insert(context.clone());
    let request_body = (config.level >= Level::Request && has_request_object(&verb))
        .then(|| capture_request_body(&mut req));
    let head_request = req.method() == Method::HEAD;
    let mut completion = Completion {
        auditor: Arc::clone(&auditor),
        config,
        event: Some(event),
        context,
        request_body,
        response_body: None,
        code: 0,
    };
    let resp = match AssertUnwindSafe(next.run(req)).catch_unwind().await {
        Ok(resp) => resp,
        Err(panic) => {
            completion.panicked(&panic);
            std::panic::resume_unwind(panic);
        }
    };
    completion.code = resp.status().as_u16();
    if long_running && completion.config.records(Stage::ResponseStarted) {
        if let Some(event) = &completion.event {
            let mut started = event.clone();
            started.stage = Stage::ResponseStarted;
            started.stage_timestamp = jiff::Timestamp::now();
            started.response_status = Some(ResponseStatus::from_response(completion.code, None));
            completion.fill_from_context(&mut started);
            completion.auditor.backend.process(started);
        }
    }
    // An upgraded connection (exec, attach, port-forward) has no body to wait for: its
    // response is complete once the upgrade is answered.
    if resp.status() == StatusCode::SWITCHING_PROTOCOLS {
        completion.complete();
        return resp;
    }
    let capture = resp.status().as_u16() >= 400
        || (completion.config.level == Level::RequestResponse && !long_running);
    if capture {
        completion.response_body = Some(new_capture());
    }
    wrap_response(resp, completion, head_request)
}

/// kube's `BasicLongRunningRequestCheck(watch, proxy; attach, exec, proxy, log, portforward)`:
/// their events include `ResponseStarted` and their bodies are not recorded.
fn is_long_running(attrs: &Attributes) -> bool {
    matches!(attrs.verb.as_str(), "watch" | "proxy")
        || matches!(
            attrs.subresource.as_str(),
            "attach" | "exec" | "proxy" | "log" | "portforward"
        )
}

/// Verbs whose handlers log the request's object (`LogRequestObject`, `LogRequestPatch`).
fn has_request_object(verb: &str) -> bool {
    matches!(
        verb,
        "create" | "update" | "patch" | "delete" | "deletecollection"
    )
}

/// `SourceIPs` of `utilnet`: the addresses of `X-Forwarded-For`, then `X-Real-Ip`, then the
/// peer's, each once.
fn source_ips(headers: &HeaderMap, peer: Option<&ConnectInfo<SocketAddr>>) -> Vec<String> {
    let mut ips: Vec<String> = Vec::new();
    let mut push = |ip: &str| {
        let ip = ip.trim();
        if ip.parse::<std::net::IpAddr>().is_ok() && !ips.iter().any(|i| i == ip) {
            ips.push(ip.to_string());
        }
    };
    if let Some(forwarded) = headers.get("x-forwarded-for").and_then(|v| v.to_str().ok()) {
        forwarded.split(',').for_each(&mut push);
    }
    if let Some(real) = headers.get("x-real-ip").and_then(|v| v.to_str().ok()) {
        push(real);
    }
    if let Some(ConnectInfo(addr)) = peer {
        push(&addr.ip().to_string());
    }
    ips
}

/// The bytes of a body seen on its way, up to a limit; `None` once over it.
type Captured = Arc<Mutex<Option<BytesMut>>>;

/// Lets the request's body through to the handler while keeping a copy of it: the body is
/// read once, by the handler, and the copy costs one buffer only at `Request` level and up.
fn capture_request_body(req: &mut Request) -> Captured {
    let captured = new_capture();
    let sink = Arc::clone(&captured);
    let body = std::mem::take(req.body_mut());
    let stream = body.into_data_stream().map(move |chunk| {
        if let Ok(bytes) = &chunk {
            keep(&sink, bytes, MAX_CAPTURED_REQUEST_BYTES);
        }
        chunk
    });
    *req.body_mut() = Body::from_stream(stream);
    captured
}

fn new_capture() -> Captured {
    Arc::new(Mutex::new(Some(BytesMut::new())))
}

fn keep(captured: &Captured, bytes: &Bytes, limit: usize) {
    let mut slot = captured.lock();
    if slot
        .as_ref()
        .is_some_and(|buf| buf.len() + bytes.len() > limit)
    {
        *slot = None;
    } else if let Some(buf) = slot.as_mut() {
        buf.extend_from_slice(bytes);
    }
}

/// The body's JSON, if it is JSON (YAML bodies of apply patches are turned into JSON);
/// protobuf bodies are left out.
fn parse_body(bytes: &[u8]) -> Option<Value> {
    if bytes.is_empty() {
        return None;
    }
    serde_json::from_slice(bytes)
        .ok()
        .or_else(|| serde_norway::from_slice(bytes).ok())
        .filter(|v: &Value| v.is_object() || v.is_array())
}

/// The response, with a body that generates `ResponseComplete` when it has been sent (or the
/// client went away), keeping the bytes the event needs on the way.
fn wrap_response(resp: Response, completion: Completion, head_request: bool) -> Response {
    let (mut parts, body) = resp.into_parts();
    // The wrapped body no longer knows its length; keep the header hyper would have derived.
    if let Some(len) = body.size_hint().exact() {
        let bodyless = head_request
            || parts.status.is_informational()
            || matches!(
                parts.status,
                StatusCode::NO_CONTENT | StatusCode::NOT_MODIFIED
            );
        if !bodyless && !parts.headers.contains_key(header::CONTENT_LENGTH) {
            parts.headers.insert(header::CONTENT_LENGTH, len.into());
        }
    }
    let sink = completion.response_body.clone();
    let mut completion = Some(completion);
    let mut data = body.into_data_stream();
    let stream = futures::stream::poll_fn(move |cx| {
        let next = data.poll_next_unpin(cx);
        match &next {
            std::task::Poll::Ready(Some(Ok(bytes))) => {
                if let Some(sink) = &sink {
                    keep(sink, bytes, MAX_CAPTURED_BYTES);
                }
            }
            std::task::Poll::Ready(_) => {
                if let Some(c) = completion.as_mut() {
                    c.complete();
                }
                completion = None;
            }
            std::task::Poll::Pending => {}
        }
        next
    });
    Response::from_parts(parts, Body::from_stream(stream))
}

/// The last event of an audited request, sent once its response is complete, when the
/// response's body ends or is dropped (a client that went away), whichever comes first.
struct Completion {
    auditor: Arc<Auditor>,
    config: RequestAuditConfig,
    /// The event so far; taken when sent.
    event: Option<Event>,
    context: AuditContext,
    request_body: Option<Captured>,
    response_body: Option<Captured>,
    code: u16,
}

impl Completion {
    fn fill_from_context(&self, event: &mut Event) {
        event.annotations = self.context.annotations();
        event.impersonated_user = self.context.impersonated_user();
        if let Some(body) = &self.request_body {
            event.request_object = body.lock().as_deref().and_then(parse_body).map(|mut v| {
                if self.config.omit_managed_fields {
                    strip_managed_fields(&mut v);
                }
                v
            });
            // A patch's body is no object (kube completes the reference from the decoded
            // object only).
            if let (Some(reference), Some(object)) = (&mut event.object_ref, &event.request_object)
            {
                if event.verb != "patch" {
                    reference.complete_from(object);
                }
            }
        }
    }

    /// `ResponseComplete`, with the status and, at `RequestResponse`, the object answered.
    fn complete(&mut self) {
        let Some(mut event) = self.event.take() else {
            return;
        };
        if !self.config.records(Stage::ResponseComplete) {
            return;
        }
        self.fill_from_context(&mut event);
        let body = self
            .response_body
            .as_ref()
            .and_then(|b| b.lock().as_deref().and_then(parse_body));
        event.response_status = Some(ResponseStatus::from_response(self.code, body.as_ref()));
        if self.config.level == Level::RequestResponse {
            event.response_object = body.map(|mut v| {
                if self.config.omit_managed_fields {
                    strip_managed_fields(&mut v);
                }
                v
            });
        }
        event.stage = Stage::ResponseComplete;
        event.stage_timestamp = jiff::Timestamp::now();
        self.auditor.backend.process(event);
    }

    /// `Panic`: the handler panicked; kube's status for it.
    fn panicked(&mut self, panic: &(dyn std::any::Any + Send)) {
        let Some(mut event) = self.event.take() else {
            return;
        };
        if !self.config.records(Stage::Panic) {
            return;
        }
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        self.fill_from_context(&mut event);
        event.stage = Stage::Panic;
        event.stage_timestamp = jiff::Timestamp::now();
        event.response_status = Some(ResponseStatus {
            status: "Failure".into(),
            reason: "InternalError".into(),
            message: format!("APIServer panic'd: {what}"),
            code: 500,
            ..ResponseStatus::default()
        });
        self.auditor.backend.process(event);
    }
}

impl Drop for Completion {
    fn drop(&mut self) {
        self.complete();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_ips_are_the_forwarded_then_the_peer_once_each() {
        let mut headers = HeaderMap::new();
        headers.insert(
            "x-forwarded-for",
            HeaderValue::from_static("10.0.0.1, 10.0.0.2"),
        );
        headers.insert("x-real-ip", HeaderValue::from_static("10.0.0.2"));
        let peer = ConnectInfo(SocketAddr::from(([127, 0, 0, 1], 5555)));
        assert_eq!(
            source_ips(&headers, Some(&peer)),
            ["10.0.0.1", "10.0.0.2", "127.0.0.1"]
        );
    }

    #[test]
    fn bodies_over_the_limit_are_not_kept() {
        let captured = new_capture();
        keep(&captured, &Bytes::from_static(b"{}"), 4);
        assert_eq!(captured.lock().as_deref(), Some(&b"{}"[..]));
        keep(&captured, &Bytes::from_static(b"{}  "), 4);
        assert!(captured.lock().is_none());
    }

    #[test]
    fn only_json_and_yaml_objects_are_parsed() {
        assert_eq!(parse_body(b"{\"a\":1}"), Some(serde_json::json!({"a": 1})));
        assert_eq!(parse_body(b"a: 1\n"), Some(serde_json::json!({"a": 1})));
        assert_eq!(parse_body(b"\x0a\x02k8s"), None);
        assert_eq!(parse_body(b""), None);
    }
}
