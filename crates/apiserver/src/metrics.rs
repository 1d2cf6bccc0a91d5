//! Request counting and `/metrics`: kube-apiserver's `apiserver_request_total`.
//!
//! A [`tower::Layer`] under the router counts every resource request by verb, group, version,
//! resource, subresource and response code, with kube's verb names (`CleanVerb` and
//! `CanonicalVerb` in `staging/src/k8s.io/apiserver/pkg/endpoints/metrics/metrics.go`), and
//! answers `GET /metrics` with the counters in the Prometheus text format. It sits inside the
//! authentication layer, so `/metrics` needs the token, as on kube-apiserver.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::fmt::Write as _;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use http::{header, Method, StatusCode};
use parking_lot::Mutex;

use crate::http::path;

/// Labels of one `apiserver_request_total` series.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct RequestLabels {
    /// `GET`, `LIST`, `WATCH`, `POST`, `PUT`, `PATCH`, `APPLY`, `DELETE`, `DELETECOLLECTION`,
    /// `CONNECT`.
    pub verb: &'static str,
    /// API group, empty for the core group.
    pub group: &'static str,
    /// API version.
    pub version: &'static str,
    /// Resource plural.
    pub resource: &'static str,
    /// Subresource, empty when none.
    pub subresource: &'static str,
    /// HTTP status code of the response.
    pub code: u16,
}

/// The verb kube-apiserver reports for a request, or `None` when `path` addresses no served
/// resource (discovery, `/version`, …: not counted).
///
/// GETs of a collection are `LIST`, or `WATCH` with `?watch=true` or the legacy `/watch/` prefix;
/// a DELETE of a collection is `DELETECOLLECTION`; a PATCH with the apply content type is
/// `APPLY`; requests to streaming subresources (`exec`, `attach`, `portforward`, `log` excepted)
/// are `CONNECT`.
pub fn labels_for(
    method: &Method,
    path: &str,
    query: Option<&str>,
    content_type: Option<&str>,
) -> Option<RequestLabels> {
    let parsed = path::parse(path)?;
    let subresource = parsed
        .subresource
        .as_deref()
        .and_then(|s| parsed.info.subresource(s));
    let collection = parsed.name.is_none();
    let watch = parsed.watch || query.is_some_and(watch_requested);
    let verb = if subresource.is_some_and(|s| matches!(s.name, "exec" | "attach" | "portforward")) {
        "CONNECT"
    } else {
        match *method {
            Method::GET | Method::HEAD if watch => "WATCH",
            Method::GET | Method::HEAD if collection => "LIST",
            Method::GET | Method::HEAD => "GET",
            Method::POST => "POST",
            Method::PUT => "PUT",
            Method::PATCH
                if content_type.is_some_and(|c| c.starts_with("application/apply-patch")) =>
            {
                "APPLY"
            }
            Method::PATCH => "PATCH",
            Method::DELETE if collection => "DELETECOLLECTION",
            Method::DELETE => "DELETE",
            _ => "other",
        }
    };
    Some(RequestLabels {
        verb,
        group: parsed.info.group,
        version: parsed.info.version,
        resource: parsed.info.plural,
        subresource: subresource.map_or("", |s| s.name),
        code: 0,
    })
}

/// `watch=true` (or any value but `0`/`false`, as `Convert_Slice_string_To_bool`) in `query`.
fn watch_requested(query: &str) -> bool {
    query
        .split('&')
        .filter_map(|kv| kv.split_once('=').or(Some((kv, ""))))
        .find(|(k, _)| *k == "watch")
        .is_some_and(|(_, v)| !matches!(v.to_ascii_lowercase().as_str(), "0" | "false"))
}

/// The counters of one server; cloned handles share them.
#[derive(Clone, Debug, Default)]
pub struct RequestMetrics {
    counts: Arc<Mutex<BTreeMap<RequestLabels, u64>>>,
}

impl RequestMetrics {
    /// Empty counters.
    pub fn new() -> Self {
        Self::default()
    }

    /// Counts one answered request.
    pub fn record(&self, labels: RequestLabels) {
        *self.counts.lock().entry(labels).or_insert(0) += 1;
    }

    /// The counters in the Prometheus text exposition format.
    pub fn encode(&self) -> String {
        let mut out = String::from(
            "# HELP apiserver_request_total Counter of apiserver requests broken out for each verb, group, version, resource, subresource, and HTTP response code.\n\
             # TYPE apiserver_request_total counter\n",
        );
        for (l, n) in self.counts.lock().iter() {
            let _ = writeln!(
                out,
                "apiserver_request_total{{code=\"{}\",group=\"{}\",resource=\"{}\",subresource=\"{}\",verb=\"{}\",version=\"{}\"}} {n}",
                l.code, l.group, l.resource, l.subresource, l.verb, l.version
            );
        }
        out
    }
}

impl<S> tower::Layer<S> for RequestMetrics {
    type Service = Counted<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Counted {
            inner,
            metrics: self.clone(),
        }
    }
}

/// A service that counts the requests it answers and serves `GET /metrics` (see [`RequestMetrics`]).
#[derive(Clone)]
pub struct Counted<S> {
    inner: S,
    metrics: RequestMetrics,
}

impl<S> tower::Service<Request> for Counted<S>
where
    S: tower::Service<Request, Response = Response, Error = Infallible>,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        if req.uri().path() == "/metrics" && req.method() == Method::GET {
            let body = self.metrics.encode();
            return Box::pin(async move {
                Ok(Response::builder()
                    .status(StatusCode::OK)
                    .header(header::CONTENT_TYPE, "text/plain; version=0.0.4")
                    .body(Body::from(body))
                    .unwrap_or_else(|_| Response::new(Body::empty())))
            });
        }
        let labels = labels_for(
            req.method(),
            req.uri().path(),
            req.uri().query(),
            req.headers()
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok()),
        );
        let metrics = self.metrics.clone();
        let fut = self.inner.call(req);
        Box::pin(async move {
            let resp = fut.await?;
            if let Some(labels) = labels {
                metrics.record(RequestLabels {
                    code: resp.status().as_u16(),
                    ..labels
                });
            }
            Ok(resp)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verb(
        method: Method,
        path: &str,
        query: Option<&str>,
        content_type: Option<&str>,
    ) -> &'static str {
        labels_for(&method, path, query, content_type)
            .expect("a resource path")
            .verb
    }

    #[test]
    fn verbs_are_named_as_kube_apiserver_names_them() {
        let pods = "/api/v1/namespaces/ns/pods";
        assert_eq!(verb(Method::GET, pods, None, None), "LIST");
        assert_eq!(
            verb(
                Method::GET,
                pods,
                Some("watch=true&resourceVersion=5"),
                None
            ),
            "WATCH"
        );
        assert_eq!(verb(Method::GET, pods, Some("watch=false"), None), "LIST");
        assert_eq!(
            verb(Method::GET, "/api/v1/watch/namespaces/ns/pods", None, None),
            "WATCH"
        );
        assert_eq!(
            verb(Method::GET, "/api/v1/namespaces/ns/pods/p", None, None),
            "GET"
        );
        assert_eq!(verb(Method::POST, pods, None, None), "POST");
        assert_eq!(verb(Method::DELETE, pods, None, None), "DELETECOLLECTION");
        assert_eq!(
            verb(Method::DELETE, "/api/v1/namespaces/ns/pods/p", None, None),
            "DELETE"
        );
        let rs = "/apis/apps/v1/namespaces/ns/replicasets/r/status";
        assert_eq!(verb(Method::PUT, rs, None, None), "PUT");
        assert_eq!(
            verb(
                Method::PATCH,
                rs,
                None,
                Some("application/strategic-merge-patch+json")
            ),
            "PATCH"
        );
        assert_eq!(
            verb(
                Method::PATCH,
                rs,
                None,
                Some("application/apply-patch+yaml")
            ),
            "APPLY"
        );
        assert_eq!(
            verb(
                Method::POST,
                "/api/v1/namespaces/ns/pods/p/exec",
                None,
                None
            ),
            "CONNECT"
        );
    }

    #[test]
    fn labels_name_the_group_version_resource_and_subresource() {
        let l = labels_for(
            &Method::PUT,
            "/apis/apps/v1/namespaces/ns/replicasets/r/status",
            None,
            None,
        )
        .expect("served");
        assert_eq!(
            (l.group, l.version, l.resource, l.subresource),
            ("apps", "v1", "replicasets", "status")
        );
        let l =
            labels_for(&Method::POST, "/api/v1/namespaces/ns/events", None, None).expect("served");
        assert_eq!((l.group, l.resource, l.subresource), ("", "events", ""));
        assert!(labels_for(&Method::GET, "/version", None, None).is_none());
        assert!(labels_for(&Method::GET, "/apis/apps/v1", None, None).is_none());
    }

    #[test]
    fn counters_are_exposed_in_the_text_format() {
        let metrics = RequestMetrics::new();
        let created = RequestLabels {
            code: 201,
            ..labels_for(&Method::POST, "/api/v1/namespaces/ns/events", None, None).expect("served")
        };
        metrics.record(created);
        metrics.record(created);
        let text = metrics.encode();
        assert!(
            text.contains(
                "apiserver_request_total{code=\"201\",group=\"\",resource=\"events\",subresource=\"\",verb=\"POST\",version=\"v1\"} 2\n"
            ),
            "{text}"
        );
    }
}

#[cfg(test)]
mod served {
    use k8s_openapi::api::core::v1::Namespace;
    use kube::api::{Api, PostParams};

    #[tokio::test]
    async fn metrics_count_requests_and_need_the_token() {
        let server = crate::testing::start().await;
        let client = server.client();
        let namespaces: Api<Namespace> = Api::all(client.clone());
        let ns: Namespace =
            serde_json::from_value(serde_json::json!({"metadata": {"name": "counted"}}))
                .expect("namespace");
        namespaces
            .create(&PostParams::default(), &ns)
            .await
            .expect("created");
        let text = client
            .request_text(
                http::Request::get("/metrics")
                    .body(Vec::new())
                    .expect("request"),
            )
            .await
            .expect("metrics");
        assert!(
            text.contains("apiserver_request_total{code=\"201\",group=\"\",resource=\"namespaces\",subresource=\"\",verb=\"POST\",version=\"v1\"} 1\n"),
            "{text}"
        );

        let mut anonymous = server.kube_config();
        anonymous.auth_info = Default::default();
        let anonymous = kube::Client::try_from(anonymous).expect("client");
        let refused = anonymous
            .request_text(
                http::Request::get("/metrics")
                    .body(Vec::new())
                    .expect("request"),
            )
            .await
            .expect_err("no token");
        assert!(
            matches!(&refused, kube::Error::Api(s) if s.code == 401),
            "{refused}"
        );
    }
}
