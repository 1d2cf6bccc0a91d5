//! The API Priority and Fairness filter (`staging/src/k8s.io/apiserver/pkg/server/filters/priority-and-fairness.go`).
//!
//! Long-running requests other than watches (`proxy`, and the `attach`, `exec`, `log`,
//! `portforward` subresources) bypass it. A request holds its seats until its response body has
//! been sent, as kube's does (its handler writes the body before the filter returns); a watch
//! holds them until its handler answers, that is until the watch is set up and its response
//! starts, as kube holds one until the watch's initialization; the events that follow hold none.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;

use crate::auth::authorization::Attributes;
use crate::auth::UserInfo;

use super::controller::FlowControl;

/// Subresources of long-running requests (`BasicLongRunningRequestCheck`).
const LONG_RUNNING_SUBRESOURCES: [&str; 5] = ["attach", "exec", "proxy", "log", "portforward"];

/// Whether `request` is long-running and not a watch: such requests are not limited.
pub fn bypasses(request: &Attributes) -> bool {
    request.verb == "proxy"
        || (request.resource_request
            && LONG_RUNNING_SUBRESOURCES.contains(&request.subresource.as_str()))
}

/// The middleware; it runs after authentication and authorization, which leave the request's
/// [`Attributes`] in its extensions (they are derived here otherwise).
pub async fn priority_and_fairness(
    State(fc): State<Arc<FlowControl>>,
    req: Request,
    next: Next,
) -> Response {
    let attributes = match req.extensions().get::<Arc<Attributes>>() {
        Some(a) => Arc::clone(a),
        None => {
            let user = req
                .extensions()
                .get::<UserInfo>()
                .cloned()
                .unwrap_or_else(UserInfo::anonymous);
            Arc::new(Attributes::from_request(
                user,
                req.method(),
                req.uri().path(),
                req.uri().query(),
            ))
        }
    };
    if bypasses(&attributes) {
        return next.run(req).await;
    }
    // Only LISTs and WATCHes are estimated from their query.
    let query = matches!(attributes.verb.as_str(), "list" | "watch")
        .then(|| req.uri().query().map(str::to_owned))
        .flatten();
    fc.handle(attributes, query.as_deref(), next.run(req)).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::user::SYSTEM_MASTERS;
    use crate::flowcontrol::config::{
        Config, Level, LevelKind, PolicyRules, ResourceRule, Schema, Subject,
    };
    use crate::flowcontrol::queueset::Queuing;
    use crate::http::gate::Gate;
    use axum::body::{to_bytes, Body};
    use http::{header, Method, StatusCode};
    use tower::ServiceExt;

    fn schema(name: &str, precedence: i32, level: &str, subject: Subject) -> Arc<Schema> {
        Arc::new(Schema {
            name: name.into(),
            uid: format!("{name}-uid"),
            matching_precedence: precedence,
            priority_level: level.into(),
            distinguisher: None,
            rules: vec![PolicyRules {
                subjects: vec![subject],
                resource_rules: vec![ResourceRule {
                    verbs: vec!["*".into()],
                    api_groups: vec!["*".into()],
                    resources: vec!["*".into()],
                    cluster_scope: true,
                    namespaces: vec!["*".into()],
                }],
                non_resource_rules: vec![],
            }],
        })
    }

    /// One seat for everyone but `system:masters`, one queue of one request.
    fn config() -> Arc<Config> {
        Arc::new(Config {
            schemas: vec![
                schema("exempt", 1, "exempt", Subject::Group(SYSTEM_MASTERS.into())),
                schema("everyone", 100, "tiny", Subject::Group("*".into())),
            ],
            levels: vec![
                Level {
                    name: "exempt".into(),
                    uid: "exempt-uid".into(),
                    nominal_concurrency_shares: 0,
                    kind: LevelKind::Exempt,
                },
                Level {
                    name: "tiny".into(),
                    uid: "tiny-uid".into(),
                    nominal_concurrency_shares: 1,
                    kind: LevelKind::Limited {
                        queuing: Some(Queuing {
                            queues: 1,
                            hand_size: 1,
                            queue_length_limit: 1,
                        }),
                    },
                },
            ],
        })
    }

    /// `dump_priority_levels`' row of `tiny`: its cells, trimmed.
    fn tiny(fc: &FlowControl) -> Vec<String> {
        fc.dump_priority_levels()
            .lines()
            .find(|l| l.starts_with("tiny,"))
            .map(|l| l.split(',').map(|c| c.trim().to_string()).collect())
            .unwrap_or_default()
    }

    fn request(user: &UserInfo) -> Request {
        let mut req = Request::builder()
            .method(Method::GET)
            .uri("/api/v1/namespaces/ns/configmaps")
            .body(Body::empty())
            .expect("request");
        req.extensions_mut().insert(user.clone());
        req
    }

    #[tokio::test]
    async fn a_saturated_level_queues_then_refuses_while_exempt_requests_pass() {
        let gate = Gate::default();
        let fc = Arc::new(FlowControl::new(1, Box::new(config())));
        let app = gate.router().layer(axum::middleware::from_fn_with_state(
            Arc::clone(&fc),
            priority_and_fairness,
        ));
        let jane = UserInfo::new("jane", &["system:authenticated"]);
        let admin = UserInfo::new("admin", &[SYSTEM_MASTERS, "system:authenticated"]);

        let first = tokio::spawn(app.clone().oneshot(request(&jane)));
        gate.entered().await;
        let second = tokio::spawn(app.clone().oneshot(request(&jane)));
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while tiny(&fc)[4..] != ["1", "1"] {
            assert!(
                std::time::Instant::now() < deadline,
                "second request never queued:\n{}",
                fc.dump_priority_levels()
            );
            tokio::task::yield_now().await;
        }
        assert!(fc
            .dump_requests(true)
            .lines()
            .any(|l| l.starts_with("tiny, ") && l.contains("jane")));

        let refused = app.clone().oneshot(request(&jane)).await.expect("answered");
        assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
        let h = refused.headers();
        assert_eq!(
            h.get(header::RETRY_AFTER).map(|v| v.as_bytes()),
            Some(&b"1"[..])
        );
        assert_eq!(
            h.get("X-Kubernetes-PF-FlowSchema-UID")
                .map(|v| v.as_bytes()),
            Some(&b"everyone-uid"[..])
        );
        assert_eq!(
            h.get("X-Kubernetes-PF-PriorityLevel-UID")
                .map(|v| v.as_bytes()),
            Some(&b"tiny-uid"[..])
        );
        let body = to_bytes(refused.into_body(), 1024).await.expect("body");
        assert_eq!(
            &body[..],
            crate::http::inflight::TOO_MANY_REQUESTS.as_bytes()
        );

        // The exempt level is never queued: the admin's request enters while jane's wait.
        let privileged = tokio::spawn(app.clone().oneshot(request(&admin)));
        gate.entered().await;
        gate.open(3);
        for task in [first, second, privileged] {
            let resp = task.await.expect("joined").expect("answered");
            assert_eq!(resp.status(), StatusCode::OK);
        }
        let mut metrics = String::new();
        fc.encode_metrics(&mut metrics);
        for line in [
            "apiserver_flowcontrol_rejected_requests_total{flow_schema=\"everyone\",priority_level=\"tiny\",reason=\"queue-full\"} 1",
            "apiserver_flowcontrol_dispatched_requests_total{flow_schema=\"everyone\",priority_level=\"tiny\"} 2",
            "apiserver_flowcontrol_dispatched_requests_total{flow_schema=\"exempt\",priority_level=\"exempt\"} 1",
            "apiserver_flowcontrol_current_executing_requests{flow_schema=\"everyone\",priority_level=\"tiny\"} 0",
            "apiserver_flowcontrol_current_inqueue_requests{flow_schema=\"everyone\",priority_level=\"tiny\"} 0",
            "apiserver_flowcontrol_nominal_limit_seats{priority_level=\"tiny\"} 1",
        ] {
            assert!(metrics.lines().any(|l| l == line), "missing {line} in\n{metrics}");
        }
    }

    #[tokio::test]
    async fn a_list_takes_a_seat_per_hundred_stored_objects() {
        let gate = Gate::default();
        // 60 seats, one queue of hand 1: a request may take up to ceil(0.15 × 60) = 9.
        let fc = Arc::new(
            FlowControl::new(60, Box::new(config())).with_object_counts(Box::new(
                |group: &str, resource: &str| {
                    if group.is_empty() && resource == "configmaps" {
                        750
                    } else {
                        0
                    }
                },
            )),
        );
        let app = gate.router().layer(axum::middleware::from_fn_with_state(
            Arc::clone(&fc),
            priority_and_fairness,
        ));
        let jane = UserInfo::new("jane", &["system:authenticated"]);
        let executing_seats = |fc: &FlowControl| {
            let mut metrics = String::new();
            fc.encode_metrics(&mut metrics);
            metrics
                .lines()
                .find_map(|l| {
                    l.strip_prefix("apiserver_flowcontrol_current_executing_seats{flow_schema=\"everyone\",priority_level=\"tiny\"} ")
                        .map(str::to_owned)
                })
                .unwrap_or_default()
        };

        let list = tokio::spawn(app.clone().oneshot(request(&jane)));
        gate.entered().await;
        assert_eq!(executing_seats(&fc), "8");
        gate.open(1);
        assert_eq!(
            list.await.expect("joined").expect("answered").status(),
            StatusCode::OK
        );

        // A LIST of an uncounted resource, and a GET, take one.
        for uri in [
            "/api/v1/namespaces/ns/secrets",
            "/api/v1/namespaces/ns/configmaps/one",
        ] {
            let mut req = request(&jane);
            *req.uri_mut() = uri.parse().expect("uri");
            let task = tokio::spawn(app.clone().oneshot(req));
            gate.entered().await;
            assert_eq!(executing_seats(&fc), "1", "{uri}");
            gate.open(1);
            assert_eq!(
                task.await.expect("joined").expect("answered").status(),
                StatusCode::OK
            );
        }
        let mut metrics = String::new();
        fc.encode_metrics(&mut metrics);
        for line in [
            "apiserver_flowcontrol_work_estimated_seats_bucket{flow_schema=\"everyone\",priority_level=\"tiny\",le=\"1\"} 2",
            "apiserver_flowcontrol_work_estimated_seats_bucket{flow_schema=\"everyone\",priority_level=\"tiny\",le=\"10\"} 3",
        ] {
            assert!(metrics.lines().any(|l| l == line), "missing {line} in\n{metrics}");
        }
    }

    #[tokio::test]
    async fn a_request_keeps_its_seat_until_its_body_has_been_read() {
        let gate = Gate::default();
        let fc = Arc::new(FlowControl::new(1, Box::new(config())));
        let app = gate.router().layer(axum::middleware::from_fn_with_state(
            Arc::clone(&fc),
            priority_and_fairness,
        ));
        let jane = UserInfo::new("jane", &["system:authenticated"]);
        gate.open(1);
        let answered = app.clone().oneshot(request(&jane)).await.expect("answered");
        assert_eq!(answered.status(), StatusCode::OK);
        // Answered, its body not sent yet: the level's one seat is still taken.
        assert_eq!(tiny(&fc)[5], "1", "{}", fc.dump_priority_levels());
        let body = to_bytes(answered.into_body(), 1024).await.expect("body");
        assert_eq!(&body[..], b"served");
        assert_eq!(tiny(&fc)[5], "0", "{}", fc.dump_priority_levels());
    }

    #[tokio::test]
    async fn a_client_that_goes_away_leaves_its_queue() {
        let gate = Gate::default();
        let fc = Arc::new(FlowControl::new(1, Box::new(config())));
        let app = gate.router().layer(axum::middleware::from_fn_with_state(
            Arc::clone(&fc),
            priority_and_fairness,
        ));
        let jane = UserInfo::new("jane", &["system:authenticated"]);
        let first = tokio::spawn(app.clone().oneshot(request(&jane)));
        gate.entered().await;
        let second = tokio::spawn(app.clone().oneshot(request(&jane)));
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while tiny(&fc)[4..] != ["1", "1"] {
            assert!(
                std::time::Instant::now() < deadline,
                "second request never queued"
            );
            tokio::task::yield_now().await;
        }
        second.abort();
        let _ = second.await;
        assert!(
            tiny(&fc)[4..] == ["0", "1"],
            "{}",
            fc.dump_priority_levels()
        );
        gate.open(1);
        assert_eq!(
            first.await.expect("joined").expect("answered").status(),
            StatusCode::OK
        );
        assert!(tiny(&fc)[2] == "true");
    }
}
