//! The API server's own metrics and `/metrics`, with kube-apiserver's names and labels
//! (`staging/src/k8s.io/apiserver/pkg/endpoints/metrics/metrics.go`,
//! `test/instrumentation/testdata/stable-metrics-list.yaml`):
//! - `apiserver_request_total` and `apiserver_request_duration_seconds`, by verb (kube's
//!   `CleanVerb`/`CanonicalVerb` names), dry run, group, version, resource, subresource, scope
//!   (`CleanScope`), component and, for the counter, response code;
//! - `apiserver_watch_events_total` by group, version and resource;
//! - `apiserver_storage_objects` by resource, counted when scraped;
//! - the admission webhooks' metrics ([`crate::admission::metrics`]);
//! - the CRD conversion webhooks' durations ([`crate::crd_conversion_metrics`]);
//! - `etcd_request_duration_seconds`, `etcd_requests_total` and `etcd_request_errors_total` by
//!   operation, group and resource: the store's writes and read-throughs, on either backend
//!   (`staging/src/k8s.io/apiserver/pkg/storage/etcd3/metrics/metrics.go`);
//! - `apiserver_storage_transformation_operations_total` and
//!   `apiserver_storage_transformation_duration_seconds` with `--encryption-provider-config`
//!   (`staging/src/k8s.io/apiserver/pkg/storage/value/metrics.go`).
//!
//! A [`tower::Layer`] under the router records each resource request and answers
//! `GET /metrics` in the Prometheus text format. It sits inside the authentication layer, so
//! `/metrics` needs credentials, as on kube-apiserver.

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

use rkcm_apimachinery::catalog::ResourceInfo;

use rkcm_storage::metrics::{Histogram, StorageRequestMetrics};

use crate::admission::metrics::AdmissionMetrics;
use crate::http::path;

/// The `component` label of requests served by the API handlers (kube's `APIServerComponent`).
pub const COMPONENT: &str = "apiserver";

pub use rkcm_storage::metrics::DURATION_BUCKETS;

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
    /// kube's `CleanScope`: `resource` for a named object or a create, `namespace` for a
    /// namespaced collection, `cluster` otherwise.
    pub scope: &'static str,
    /// Whether `dryRun=All` was asked for (label value `All`, else empty).
    pub dry_run: bool,
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
    let scope = if !collection || verb == "POST" {
        "resource"
    } else if parsed.namespace.is_some() {
        "namespace"
    } else {
        "cluster"
    };
    Some(RequestLabels {
        verb,
        group: parsed.info.group,
        version: parsed.info.version,
        resource: parsed.info.plural,
        subresource: subresource.map_or("", |s| s.name),
        scope,
        dry_run: query.is_some_and(dry_run_requested),
        code: 0,
    })
}

/// `dryRun=All` in `query` (kube's `cleanDryRun` reports the sorted values; `All` is the only
/// one the API accepts).
fn dry_run_requested(query: &str) -> bool {
    query
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .any(|(k, v)| k == "dryRun" && v == "All")
}

/// `watch=true` (or any value but `0`/`false`, as `Convert_Slice_string_To_bool`) in `query`.
fn watch_requested(query: &str) -> bool {
    query
        .split('&')
        .filter_map(|kv| kv.split_once('=').or(Some((kv, ""))))
        .find(|(k, _)| *k == "watch")
        .is_some_and(|(_, v)| !matches!(v.to_ascii_lowercase().as_str(), "0" | "false"))
}

/// Counts of stored objects by resource (`deployments.apps`, `pods`), asked for at each scrape.
pub type StorageCounts = Arc<dyn Fn() -> Vec<(String, usize)> + Send + Sync>;

/// `apiserver_watch_events_total` labels: group, version, resource.
type WatchLabels = (&'static str, &'static str, &'static str);

#[derive(Debug, Default)]
struct Series {
    requests: BTreeMap<RequestLabels, u64>,
    durations: BTreeMap<RequestLabels, Histogram>,
    watch_events: BTreeMap<WatchLabels, u64>,
}

/// The metrics of one server; cloned handles share them.
#[derive(Clone, Default)]
pub struct RequestMetrics {
    series: Arc<Mutex<Series>>,
    storage: Option<StorageCounts>,
    storage_requests: Option<StorageRequestMetrics>,
    transformations: Option<rkcm_storage::value::TransformationMetrics>,
    admission: Option<AdmissionMetrics>,
    flowcontrol: Option<Arc<crate::flowcontrol::FlowControl>>,
}

impl std::fmt::Debug for RequestMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestMetrics").finish_non_exhaustive()
    }
}

impl RequestMetrics {
    /// Empty metrics, without `apiserver_storage_objects`.
    pub fn new() -> Self {
        Self::default()
    }

    /// Empty metrics that report `apiserver_storage_objects` from `counts`.
    pub fn with_storage_counts(counts: StorageCounts) -> Self {
        Self {
            storage: Some(counts),
            ..Self::default()
        }
    }

    /// These metrics, also reporting the store's requests to its backend from `requests`.
    pub fn with_storage_requests(mut self, requests: StorageRequestMetrics) -> Self {
        self.storage_requests = Some(requests);
        self
    }

    /// These metrics, also reporting the transformations (encryption) of stored values.
    pub fn with_transformations(
        mut self,
        transformations: rkcm_storage::value::TransformationMetrics,
    ) -> Self {
        self.transformations = Some(transformations);
        self
    }

    /// These metrics, also reporting the admission webhooks' calls from `admission`.
    pub fn with_admission(mut self, admission: AdmissionMetrics) -> Self {
        self.admission = Some(admission);
        self
    }

    /// These metrics, also reporting API Priority and Fairness' (`apiserver_flowcontrol_*`).
    pub fn with_flowcontrol(mut self, flowcontrol: Arc<crate::flowcontrol::FlowControl>) -> Self {
        self.flowcontrol = Some(flowcontrol);
        self
    }

    /// Counts one answered request.
    pub fn record(&self, labels: RequestLabels) {
        *self.series.lock().requests.entry(labels).or_insert(0) += 1;
    }

    /// Records one answered request and how long it took. Watches and `CONNECT`s are counted
    /// when their response starts and their duration is not observed: kube records them when the
    /// stream ends, which this layer does not see.
    pub fn observe(&self, labels: RequestLabels, elapsed: std::time::Duration) {
        let mut series = self.series.lock();
        *series.requests.entry(labels).or_insert(0) += 1;
        if matches!(labels.verb, "WATCH" | "CONNECT") {
            return;
        }
        series
            .durations
            .entry(RequestLabels { code: 0, ..labels })
            .or_default()
            .observe(elapsed.as_secs_f64());
    }

    /// Counts one event sent to a watch client of `info`.
    pub fn watch_event(&self, info: &'static ResourceInfo) {
        *self
            .series
            .lock()
            .watch_events
            .entry((info.group, info.version, info.plural))
            .or_insert(0) += 1;
    }

    /// Every metric in the Prometheus text exposition format.
    pub fn encode(&self) -> String {
        let mut out = String::from(
            "# HELP apiserver_request_total [STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.\n\
             # TYPE apiserver_request_total counter\n",
        );
        let series = self.series.lock();
        for (l, n) in &series.requests {
            let _ = writeln!(
                out,
                "apiserver_request_total{{code=\"{}\",{}}} {n}",
                l.code,
                common_labels(l)
            );
        }
        out.push_str(
            "# HELP apiserver_request_duration_seconds [STABLE] Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.\n\
             # TYPE apiserver_request_duration_seconds histogram\n",
        );
        for (l, h) in &series.durations {
            let labels = common_labels(l);
            for (n, bound) in h.buckets.iter().zip(DURATION_BUCKETS) {
                let _ = writeln!(
                    out,
                    "apiserver_request_duration_seconds_bucket{{{labels},le=\"{bound}\"}} {n}"
                );
            }
            let _ = writeln!(
                out,
                "apiserver_request_duration_seconds_bucket{{{labels},le=\"+Inf\"}} {}\n\
                 apiserver_request_duration_seconds_sum{{{labels}}} {}\n\
                 apiserver_request_duration_seconds_count{{{labels}}} {}",
                h.count, h.sum, h.count
            );
        }
        out.push_str(
            "# HELP apiserver_watch_events_total [ALPHA] Number of events sent in watch clients\n\
             # TYPE apiserver_watch_events_total counter\n",
        );
        for ((group, version, resource), n) in &series.watch_events {
            let _ = writeln!(
                out,
                "apiserver_watch_events_total{{group=\"{group}\",resource=\"{resource}\",version=\"{version}\"}} {n}"
            );
        }
        drop(series);
        if let Some(counts) = &self.storage {
            out.push_str(
                "# HELP apiserver_storage_objects [STABLE] Number of stored objects at the time of last check split by kind. In case of a fetching error, the value will be -1.\n\
                 # TYPE apiserver_storage_objects gauge\n",
            );
            let mut counts = counts();
            counts.sort();
            for (resource, n) in counts {
                let _ = writeln!(
                    out,
                    "apiserver_storage_objects{{resource=\"{resource}\"}} {n}"
                );
            }
        }
        if let Some(requests) = &self.storage_requests {
            requests.encode(&mut out);
        }
        if let Some(transformations) = &self.transformations {
            transformations.encode(&mut out);
        }
        if let Some(admission) = &self.admission {
            admission.encode(&mut out);
        }
        if let Some(flowcontrol) = &self.flowcontrol {
            flowcontrol.encode_metrics(&mut out);
        }
        crate::crd_conversion_metrics::encode(&mut out);
        crate::audit::metrics::encode(&mut out);
        out
    }
}

/// The labels `apiserver_request_total` and `apiserver_request_duration_seconds` share, in
/// Prometheus' sorted order.
fn common_labels(l: &RequestLabels) -> String {
    format!(
        "component=\"{COMPONENT}\",dry_run=\"{}\",group=\"{}\",resource=\"{}\",scope=\"{}\",subresource=\"{}\",verb=\"{}\",version=\"{}\"",
        if l.dry_run { "All" } else { "" },
        l.group,
        l.resource,
        l.scope,
        l.subresource,
        l.verb,
        l.version
    )
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
        let started = std::time::Instant::now();
        let fut = self.inner.call(req);
        Box::pin(async move {
            let resp = fut.await?;
            if let Some(labels) = labels {
                metrics.observe(
                    RequestLabels {
                        code: resp.status().as_u16(),
                        ..labels
                    },
                    started.elapsed(),
                );
            }
            Ok(resp)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_requests_by_operation_group_and_resource() {
        let requests = StorageRequestMetrics::default();
        let ms = std::time::Duration::from_millis;
        requests.record("create", "/core/pods/default/a", ms(3), false);
        requests.record("create", "/core/pods/default/b", ms(30), false);
        requests.record("update", "/apps/deployments/default/d", ms(1), true);
        let text = RequestMetrics::new()
            .with_storage_requests(requests)
            .encode();
        for line in [
            "etcd_request_duration_seconds_bucket{group=\"\",operation=\"create\",resource=\"pods\",le=\"0.005\"} 1\n",
            "etcd_request_duration_seconds_bucket{group=\"\",operation=\"create\",resource=\"pods\",le=\"0.05\"} 2\n",
            "etcd_request_duration_seconds_count{group=\"\",operation=\"create\",resource=\"pods\"} 2\n",
            "etcd_requests_total{group=\"\",operation=\"create\",resource=\"pods\"} 2\n",
            "etcd_requests_total{group=\"apps\",operation=\"update\",resource=\"deployments\"} 1\n",
            "etcd_request_errors_total{group=\"apps\",operation=\"update\",resource=\"deployments\"} 1\n",
        ] {
            assert!(text.contains(line), "{line} missing from:\n{text}");
        }
        assert!(
            !text.contains("etcd_request_errors_total{group=\"\",operation=\"create\""),
            "no error series for requests that never failed"
        );
    }

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
    fn scope_and_dry_run_are_labelled_as_kube_clean_scope_does() {
        let scope = |method: Method, path: &str| {
            labels_for(&method, path, None, None).expect("served").scope
        };
        assert_eq!(
            scope(Method::GET, "/api/v1/namespaces/ns/pods"),
            "namespace"
        );
        assert_eq!(scope(Method::GET, "/api/v1/pods"), "cluster");
        assert_eq!(scope(Method::GET, "/api/v1/nodes"), "cluster");
        assert_eq!(scope(Method::GET, "/api/v1/nodes/n1"), "resource");
        assert_eq!(
            scope(Method::GET, "/api/v1/namespaces/ns/pods/p"),
            "resource"
        );
        assert_eq!(
            scope(Method::POST, "/api/v1/namespaces/ns/pods"),
            "resource"
        );
        let dry = |query: &str| {
            labels_for(
                &Method::POST,
                "/api/v1/namespaces/ns/pods",
                Some(query),
                None,
            )
            .expect("served")
            .dry_run
        };
        assert!(dry("dryRun=All"));
        assert!(dry("fieldManager=x&dryRun=All"));
        assert!(!dry("fieldManager=x"));
    }

    #[test]
    fn durations_fill_kube_buckets_and_watch_events_are_counted() {
        let metrics = RequestMetrics::new();
        let get = RequestLabels {
            code: 200,
            ..labels_for(&Method::GET, "/api/v1/namespaces/ns/pods/p", None, None).expect("served")
        };
        metrics.observe(get, std::time::Duration::from_millis(30));
        metrics.observe(get, std::time::Duration::from_millis(70));
        let watch = RequestLabels {
            code: 200,
            ..labels_for(&Method::GET, "/api/v1/pods", Some("watch=1"), None).expect("served")
        };
        metrics.observe(watch, std::time::Duration::from_secs(100));
        let pods = rkcm_apimachinery::catalog::by_plural("", "v1", "pods").expect("pods");
        metrics.watch_event(pods);
        metrics.watch_event(pods);
        let text = metrics.encode();
        let labels = "component=\"apiserver\",dry_run=\"\",group=\"\",resource=\"pods\",scope=\"resource\",subresource=\"\",verb=\"GET\",version=\"v1\"";
        for (le, n) in [
            ("0.025", 0),
            ("0.05", 1),
            ("0.1", 2),
            ("60", 2),
            ("+Inf", 2),
        ] {
            let line =
                format!("apiserver_request_duration_seconds_bucket{{{labels},le=\"{le}\"}} {n}\n");
            assert!(text.contains(&line), "{line} in {text}");
        }
        assert!(text.contains(&format!(
            "apiserver_request_duration_seconds_count{{{labels}}} 2\n"
        )));
        // A watch is counted, its duration is not observed.
        assert!(text.contains("apiserver_request_total{code=\"200\",component=\"apiserver\",dry_run=\"\",group=\"\",resource=\"pods\",scope=\"cluster\",subresource=\"\",verb=\"WATCH\",version=\"v1\"} 1\n"), "{text}");
        assert!(
            !text.contains("verb=\"WATCH\",version=\"v1\",le="),
            "{text}"
        );
        assert!(
            text.contains(
                "apiserver_watch_events_total{group=\"\",resource=\"pods\",version=\"v1\"} 2\n"
            ),
            "{text}"
        );
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
                "apiserver_request_total{code=\"201\",component=\"apiserver\",dry_run=\"\",group=\"\",resource=\"events\",scope=\"resource\",subresource=\"\",verb=\"POST\",version=\"v1\"} 2\n"
            ),
            "{text}"
        );
    }
}
