//! End to end: admission webhooks, CRD conversion webhooks and ValidatingAdmissionPolicies on
//! `rkcm up`, driven by the real kubectl against webhook servers the test runs on 127.0.0.1,
//! and cert-manager v1.18's own webhook configurations (`testdata/cert-manager/`).
//!
//! One `rkcm up` serves every scenario; each scenario works in namespaces of its own, its
//! webhooks selected by namespace, so that they run side by side.

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rkcm::testenv::WebhookServing;
use serde_json::{json, Value};
use tokio::sync::watch;

use common::Cluster;

const MINUTE: Duration = Duration::from_secs(60);

/// The names the webhook server's certificate covers besides 127.0.0.1: the Services that
/// route to it through an EndpointSlice.
const SERVICE_NAMES: [&str; 2] = [
    "hooks.e2e-service.svc",
    "cert-manager-webhook.cert-manager.svc",
];

/// The test's webhook server: one HTTPS listener on 127.0.0.1 answering admission reviews and
/// conversion reviews by path, and what it was sent.
struct Hooks {
    port: u16,
    ca_pem: String,
    reviews: Arc<Mutex<Vec<(String, Value)>>>,
    /// Set to `true` to let the answers held back by `/slow` go.
    release: watch::Sender<bool>,
}

impl Hooks {
    /// Binds 127.0.0.1:0 and serves on `runtime`.
    fn start(runtime: &tokio::runtime::Runtime) -> Hooks {
        let serving = runtime
            .block_on(WebhookServing::bind_with_names(&SERVICE_NAMES))
            .expect("webhook serving certificate");
        let tls = serving.server_config().expect("TLS configuration");
        let ca_pem = serving.ca_pem().to_string();
        let (listener, endpoint) = serving.into_parts();
        let reviews = Arc::new(Mutex::new(Vec::new()));
        let (release, released) = watch::channel(false);
        let recorded = Arc::clone(&reviews);
        runtime.spawn(async move {
            let acceptor = tokio_rustls::TlsAcceptor::from(tls);
            while let Ok((tcp, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                let recorded = Arc::clone(&recorded);
                let released = released.clone();
                tokio::spawn(async move {
                    let Ok(stream) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service = hyper::service::service_fn(
                        move |req: http::Request<hyper::body::Incoming>| {
                            let recorded = Arc::clone(&recorded);
                            let mut released = released.clone();
                            async move {
                                let path = req.uri().path().to_string();
                                let body = req.into_body().collect().await?.to_bytes();
                                let review: Value =
                                    serde_json::from_slice(&body).unwrap_or(Value::Null);
                                recorded
                                    .lock()
                                    .expect("reviews")
                                    .push((path.clone(), review.clone()));
                                if path == "/slow" {
                                    // Held until the test has seen the API server give up.
                                    let _ =
                                        tokio::time::timeout(MINUTE, released.wait_for(|go| *go))
                                            .await;
                                }
                                let answer = answer(&path, &review);
                                Ok::<_, hyper::Error>(http::Response::new(Full::new(Bytes::from(
                                    answer.to_string(),
                                ))))
                            }
                        },
                    );
                    let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Hooks {
            port: endpoint.addr().port(),
            ca_pem,
            reviews,
            release,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.port)
    }

    /// The `caBundle` of the server's certificate, base64.
    fn ca_bundle(&self) -> String {
        base64::engine::general_purpose::STANDARD.encode(&self.ca_pem)
    }

    /// `{"url": …, "caBundle": …}` for `path`.
    fn client_config(&self, path: &str) -> Value {
        json!({"url": self.url(path), "caBundle": self.ca_bundle()})
    }

    /// The admission requests sent to `path` for objects named `name` in `namespace`, but for
    /// dry runs.
    fn requests(&self, path: &str, namespace: &str, name: &str) -> Vec<Value> {
        self.all_requests(path, namespace, name)
            .into_iter()
            .filter(|r| r["dryRun"] == false)
            .collect()
    }

    /// The admission requests sent to `path` for objects named `name` in `namespace`.
    fn all_requests(&self, path: &str, namespace: &str, name: &str) -> Vec<Value> {
        self.reviews
            .lock()
            .expect("reviews")
            .iter()
            .filter(|(p, r)| {
                p == path && r["request"]["namespace"] == namespace && r["request"]["name"] == name
            })
            .map(|(_, r)| r["request"].clone())
            .collect()
    }
}

/// The server's answer to a review sent to `path`.
fn answer(path: &str, review: &Value) -> Value {
    if review["kind"] == "ConversionReview" {
        return convert_review(review);
    }
    let request = &review["request"];
    let name = request["name"].as_str().unwrap_or_default();
    let labels = &request["object"]["metadata"]["labels"];
    let mut response = match path {
        "/deny" if name.starts_with("bad") => {
            json!({"allowed": false, "status": {"message": format!("no ConfigMaps named {name}")}})
        }
        "/label" => patch(&[add_label(labels, "mutated-by", json!("webhooks-e2e"))]),
        // Reinvoked once "/second" has labelled the object, "/first" records that it saw it.
        "/first" if labels.get("second").is_some() && labels.get("first").is_none() => {
            patch(&[add_label(labels, "first", json!("saw-second"))])
        }
        "/second" if labels.get("second").is_none() => {
            patch(&[add_label(labels, "second", json!("yes"))])
        }
        "/validate" if name == "refused" => json!({
            "allowed": false,
            "status": {"code": 403, "reason": "Forbidden",
                "message": "the test's webhook refuses Issuer refused"},
        }),
        "/mutate" => patch(&[add_label(labels, "mutated-by", json!("test-webhook"))]),
        _ => json!({"allowed": true}),
    };
    response["uid"] = request["uid"].clone();
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})
}

/// An allowing response with a JSONPatch.
fn patch(ops: &[Value]) -> Value {
    let patch = base64::engine::general_purpose::STANDARD.encode(Value::from(ops).to_string());
    json!({"allowed": true, "patchType": "JSONPatch", "patch": patch})
}

/// The JSONPatch operation that sets label `key` on an object whose labels are `labels`.
fn add_label(labels: &Value, key: &str, value: Value) -> Value {
    if labels.is_object() {
        json!({"op": "add", "path": format!("/metadata/labels/{key}"), "value": value})
    } else {
        json!({"op": "add", "path": "/metadata/labels", "value": {key: value}})
    }
}

/// Widgets: `spec.size` in v1, `spec.length` in v2.
fn convert_review(review: &Value) -> Value {
    let request = &review["request"];
    let desired = request["desiredAPIVersion"].as_str().unwrap_or_default();
    let objects: Vec<Value> = request["objects"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|obj| {
            let mut out = obj.clone();
            out["apiVersion"] = json!(desired);
            let spec = obj["spec"].as_object().cloned().unwrap_or_default();
            let converted: serde_json::Map<String, Value> = spec
                .into_iter()
                .map(|(k, v)| match (k.as_str(), desired.ends_with("/v2")) {
                    ("size", true) => ("length".to_string(), v),
                    ("length", false) => ("size".to_string(), v),
                    _ => (k, v),
                })
                .collect();
            out["spec"] = Value::Object(converted);
            out
        })
        .collect();
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
        "response": {"uid": request["uid"], "result": {"status": "Success"},
            "convertedObjects": objects},
    })
}

/// Manifests written to a directory of the test's, named as kubectl's errors name them.
struct Files {
    dir: tempfile::TempDir,
}

impl Files {
    fn write(&self, name: &str, manifest: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, manifest).expect("manifest written");
        path
    }

    fn write_json(&self, name: &str, objects: &[Value]) -> PathBuf {
        let list = json!({"apiVersion": "v1", "kind": "List", "items": objects});
        self.write(name, &list.to_string())
    }
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Asserts kubectl's exit code, stdout and stderr.
#[track_caller]
fn assert_output(out: &Output, code: i32, stdout: &str, stderr: &str) {
    assert_eq!(
        (
            out.status.code(),
            text(&out.stdout).as_str(),
            text(&out.stderr).as_str()
        ),
        (Some(code), stdout, stderr),
        "kubectl's exit code, stdout and stderr"
    );
}

/// Runs kubectl until `done` accepts its output (the API server's informers have seen what
/// the scenario just created), then returns that output.
fn until(cluster: &Cluster, what: &str, args: &[&str], done: impl Fn(&Output) -> bool) -> Output {
    let deadline = Instant::now() + MINUTE;
    loop {
        let out = cluster.kubectl_output(args);
        if done(&out) {
            return out;
        }
        if Instant::now() > deadline {
            panic!(
                "timed out after {MINUTE:?} waiting for {what}: kubectl {} said {:?} {:?}",
                args.join(" "),
                text(&out.stdout),
                text(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Waits until a server-side dry run of `file` fails with an error containing `needle`: the
/// webhooks or policies just created are in force. (Every webhook here has `sideEffects:
/// None`, so dry runs call it too.)
fn in_force(cluster: &Cluster, what: &str, file: &Path, needle: &str) {
    until(
        cluster,
        what,
        &["apply", "--dry-run=server", "-f", path_str(file)],
        |out| text(&out.stderr).contains(needle),
    );
}

fn namespace(name: &str, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": name, "labels": labels}})
}

fn configmap(namespace: &str, name: &str, labels: Value, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": labels}, "data": data})
}

/// A webhook matching ConfigMap creations in namespace `ns`.
fn webhook(name: &str, ns: &str, client_config: Value) -> Value {
    json!({
        "name": name,
        "clientConfig": client_config,
        "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
            "resources": ["configmaps"]}],
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    })
}

fn validating(name: &str, webhooks: Vec<Value>) -> Value {
    json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration", "metadata": {"name": name}, "webhooks": webhooks})
}

fn mutating(name: &str, webhooks: Vec<Value>) -> Value {
    json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration", "metadata": {"name": name}, "webhooks": webhooks})
}

fn created(kinds_and_names: &[&str]) -> String {
    kinds_and_names
        .iter()
        .map(|n| format!("{n} created\n"))
        .collect()
}

/// A denial carries the webhook's name and message; allowed objects are created.
fn denial(cluster: &Cluster, hooks: &Hooks, files: &Files) {
    let ns = "e2e-deny";
    let setup = files.write_json(
        "deny-setup.json",
        &[
            namespace(ns, json!({})),
            validating(
                "e2e-deny",
                vec![webhook(
                    "deny.e2e.example.com",
                    ns,
                    hooks.client_config("/deny"),
                )],
            ),
        ],
    );
    cluster.kubectl(&["apply", "-f", path_str(&setup)]);
    let bad = files.write_json(
        "deny-bad.json",
        &[configmap(ns, "bad", json!({}), json!({}))],
    );
    let want = format!(
        "Error from server: error when creating \"{}\": admission webhook \"deny.e2e.example.com\" denied the request: no ConfigMaps named bad\n",
        path_str(&bad)
    );
    in_force(cluster, "the denying webhook", &bad, "denied the request");
    let out = cluster.kubectl_output(&["apply", "-f", path_str(&bad)]);
    assert_output(&out, 1, "", &want);
    let good = files.write_json(
        "deny-good.json",
        &[configmap(ns, "good", json!({}), json!({}))],
    );
    let out = cluster.kubectl_output(&["apply", "-f", path_str(&good)]);
    assert_output(&out, 0, &created(&["configmap/good"]), "");
    let out = cluster.kubectl_output(&["get", "configmap", "bad", "-n", ns]);
    assert_output(
        &out,
        1,
        "",
        "Error from server (NotFound): configmaps \"bad\" not found\n",
    );
}

/// A mutating webhook's JSONPatch is applied before the object is stored.
fn mutation(cluster: &Cluster, hooks: &Hooks, files: &Files) {
    let ns = "e2e-mutate";
    let setup = files.write_json(
        "mutate-setup.json",
        &[
            namespace(ns, json!({})),
            mutating(
                "e2e-mutate",
                vec![webhook(
                    "label.e2e.example.com",
                    ns,
                    hooks.client_config("/label"),
                )],
            ),
        ],
    );
    cluster.kubectl(&["apply", "-f", path_str(&setup)]);
    // The dry run shows the mutation once the webhook is active.
    let probe = files.write_json(
        "mutate-probe.json",
        &[configmap(ns, "probe", json!({}), json!({}))],
    );
    until(
        cluster,
        "the mutating webhook",
        &[
            "apply",
            "--dry-run=server",
            "-f",
            path_str(&probe),
            "-o",
            "jsonpath={.metadata.labels.mutated-by}",
        ],
        |out| text(&out.stdout) == "webhooks-e2e",
    );
    let cm = files.write_json(
        "mutate-cm.json",
        &[configmap(ns, "mutated", json!({"app": "e2e"}), json!({}))],
    );
    let out = cluster.kubectl_output(&["apply", "-f", path_str(&cm)]);
    assert_output(&out, 0, &created(&["configmap/mutated"]), "");
    let labels = cluster.jsonpath(
        &["get", "configmap", "mutated", "-n", ns],
        "{.metadata.labels}",
    );
    assert_eq!(
        serde_json::from_str::<Value>(&labels).expect("labels"),
        json!({"app": "e2e", "mutated-by": "webhooks-e2e"})
    );
    let requests = hooks.requests("/label", ns, "mutated");
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0]["operation"], "CREATE");
    assert_eq!(requests[0]["dryRun"], false);
}

/// `reinvocationPolicy: IfNeeded`: the first webhook is called again after the second one
/// changed the object.
fn reinvocation(cluster: &Cluster, hooks: &Hooks, files: &Files) {
    let ns = "e2e-reinvoke";
    let mut first = webhook("first.e2e.example.com", ns, hooks.client_config("/first"));
    first["reinvocationPolicy"] = json!("IfNeeded");
    let second = webhook("second.e2e.example.com", ns, hooks.client_config("/second"));
    let setup = files.write_json(
        "reinvoke-setup.json",
        &[
            namespace(ns, json!({})),
            mutating("e2e-reinvoke", vec![first, second]),
        ],
    );
    cluster.kubectl(&["apply", "-f", path_str(&setup)]);
    let probe = files.write_json(
        "reinvoke-probe.json",
        &[configmap(ns, "probe", json!({}), json!({}))],
    );
    until(
        cluster,
        "the reinvoked webhooks",
        &[
            "apply",
            "--dry-run=server",
            "-f",
            path_str(&probe),
            "-o",
            "jsonpath={.metadata.labels.first}",
        ],
        |out| text(&out.stdout) == "saw-second",
    );
    let cm = files.write_json(
        "reinvoke-cm.json",
        &[configmap(ns, "twice", json!({}), json!({}))],
    );
    let out = cluster.kubectl_output(&["apply", "-f", path_str(&cm)]);
    assert_output(&out, 0, &created(&["configmap/twice"]), "");
    let labels = cluster.jsonpath(
        &["get", "configmap", "twice", "-n", ns],
        "{.metadata.labels}",
    );
    assert_eq!(
        serde_json::from_str::<Value>(&labels).expect("labels"),
        json!({"first": "saw-second", "second": "yes"})
    );
    let first_calls = hooks.requests("/first", ns, "twice");
    assert_eq!(first_calls.len(), 2, "{first_calls:#?}");
    assert_eq!(
        first_calls[1]["object"]["metadata"]["labels"]["second"],
        "yes"
    );
    assert_eq!(
        hooks.requests("/second", ns, "twice").len(),
        1,
        "reinvocationPolicy Never"
    );
}

/// `failurePolicy` decides when the webhook cannot be called: a closed port, a Service without
/// endpoints; `objectSelector` picks which webhook each ConfigMap meets.
fn failure_policies(cluster: &Cluster, files: &Files, closed: u16) {
    let ns = "e2e-failure";
    let closed_url = json!({"url": format!("https://127.0.0.1:{closed}/")});
    let no_endpoints = json!({"service": {"namespace": ns, "name": "no-endpoints",
        "port": 443, "path": "/validate"}});
    let hook = |name: &str, client: &Value, policy: &str| {
        let mut h = webhook(&format!("{name}.e2e.example.com"), ns, client.clone());
        h["failurePolicy"] = json!(policy);
        h["objectSelector"] = json!({"matchLabels": {"case": name}});
        h
    };
    let service = json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "no-endpoints", "namespace": ns},
        "spec": {"ports": [{"name": "https", "port": 443, "targetPort": 8443}]}});
    let setup = files.write_json(
        "failure-setup.json",
        &[
            namespace(ns, json!({})),
            service,
            validating(
                "e2e-failure",
                vec![
                    hook("closed-fail", &closed_url, "Fail"),
                    hook("closed-ignore", &closed_url, "Ignore"),
                    hook("svc-fail", &no_endpoints, "Fail"),
                    hook("svc-ignore", &no_endpoints, "Ignore"),
                ],
            ),
        ],
    );
    cluster.kubectl(&["apply", "-f", path_str(&setup)]);
    let cm = |case: &str| {
        files.write_json(
            &format!("failure-{case}.json"),
            &[configmap(ns, case, json!({"case": case}), json!({}))],
        )
    };
    let closed_fail = cm("closed-fail");
    let want = format!(
        "Error from server (InternalError): error when creating \"{}\": Internal error occurred: failed calling webhook \"closed-fail.e2e.example.com\": failed to call webhook: Post \"https://127.0.0.1:{closed}/?timeout=10s\": dial tcp 127.0.0.1:{closed}: connect: connection refused\n",
        path_str(&closed_fail)
    );
    in_force(
        cluster,
        "the unreachable webhook",
        &closed_fail,
        "failed calling webhook",
    );
    let out = cluster.kubectl_output(&["apply", "-f", path_str(&closed_fail)]);
    assert_output(&out, 1, "", &want);

    let svc_fail = cm("svc-fail");
    let out = cluster.kubectl_output(&["apply", "-f", path_str(&svc_fail)]);
    let want = format!(
        "Error from server (InternalError): error when creating \"{}\": Internal error occurred: failed calling webhook \"svc-fail.e2e.example.com\": failed to call webhook: Post \"https://no-endpoints.{ns}.svc:443/validate?timeout=10s\": no endpoints available for service \"no-endpoints\"\n",
        path_str(&svc_fail)
    );
    assert_output(&out, 1, "", &want);

    for case in ["closed-ignore", "svc-ignore"] {
        let out = cluster.kubectl_output(&["apply", "-f", path_str(&cm(case))]);
        assert_output(&out, 0, &created(&[&format!("configmap/{case}")]), "");
    }
}

/// `timeoutSeconds: 1` against a server that answers only after the API server gave up.
fn timeout(cluster: &Cluster, hooks: &Hooks, files: &Files) {
    let ns = "e2e-timeout";
    let hook = |name: &str, policy: &str| {
        let mut h = webhook(
            &format!("{name}.e2e.example.com"),
            ns,
            hooks.client_config("/slow"),
        );
        h["failurePolicy"] = json!(policy);
        h["timeoutSeconds"] = json!(1);
        h["objectSelector"] = json!({"matchLabels": {"case": name}});
        h
    };
    let setup = files.write_json(
        "timeout-setup.json",
        &[
            namespace(ns, json!({})),
            validating(
                "e2e-timeout",
                vec![hook("slow-fail", "Fail"), hook("slow-ignore", "Ignore")],
            ),
        ],
    );
    cluster.kubectl(&["apply", "-f", path_str(&setup)]);
    let cm = |case: &str| {
        files.write_json(
            &format!("timeout-{case}.json"),
            &[configmap(ns, case, json!({"case": case}), json!({}))],
        )
    };
    let slow_fail = cm("slow-fail");
    let url = hooks.url("/slow?timeout=1s");
    let want = format!(
        "Error from server (InternalError): error when creating \"{}\": Internal error occurred: failed calling webhook \"slow-fail.e2e.example.com\": failed to call webhook: Post \"{url}\": context deadline exceeded\n",
        path_str(&slow_fail)
    );
    in_force(
        cluster,
        "the slow webhook",
        &slow_fail,
        "failed calling webhook",
    );
    // On a loaded machine the second can run out before the review is even sent (during the
    // TLS handshake), so the server sees the call at most once: the API server does not retry.
    let started = Instant::now();
    let out = cluster.kubectl_output(&["apply", "-f", path_str(&slow_fail)]);
    assert!(started.elapsed() >= Duration::from_secs(1));
    assert_output(&out, 1, "", &want);
    assert!(hooks.requests("/slow", ns, "slow-fail").len() <= 1);
    // Admitted only once the API server gave up on the webhook.
    let started = Instant::now();
    let out = cluster.kubectl_output(&["apply", "-f", path_str(&cm("slow-ignore"))]);
    assert!(started.elapsed() >= Duration::from_secs(1));
    assert_output(&out, 0, &created(&["configmap/slow-ignore"]), "");
    assert!(hooks.requests("/slow", ns, "slow-ignore").len() <= 1);
    // The answers held back go now that the API server has stopped waiting for them.
    let _ = hooks.release.send(true);
}

/// `namespaceSelector` and `objectSelector` choose the requests a webhook sees; with
/// `sideEffects: None` it is called for `--dry-run=server` requests too, told they are dry
/// runs, and configurations with `sideEffects: Unknown` are refused in v1.
fn selectors_and_dry_run(cluster: &Cluster, hooks: &Hooks, files: &Files) {
    let (selected, other) = ("e2e-selected", "e2e-unselected");
    let mut hook = webhook("select.e2e.example.com", "", hooks.client_config("/deny"));
    hook["namespaceSelector"] = json!({"matchLabels": {"e2e-webhooks": "deny"}});
    hook["objectSelector"] =
        json!({"matchExpressions": [{"key": "skip", "operator": "DoesNotExist"}]});
    let setup = files.write_json(
        "select-setup.json",
        &[
            namespace(selected, json!({"e2e-webhooks": "deny"})),
            namespace(other, json!({})),
            validating("e2e-select", vec![hook.clone()]),
        ],
    );
    cluster.kubectl(&["apply", "-f", path_str(&setup)]);

    let dry = files.write_json(
        "select-dry.json",
        &[configmap(selected, "bad-dry", json!({}), json!({}))],
    );
    let want = format!(
        "Error from server: error when creating \"{}\": admission webhook \"select.e2e.example.com\" denied the request: no ConfigMaps named bad-dry\n",
        path_str(&dry)
    );
    in_force(cluster, "the selecting webhook", &dry, "denied the request");
    let out = cluster.kubectl_output(&["apply", "--dry-run=server", "-f", path_str(&dry)]);
    assert_output(&out, 1, "", &want);
    let dry_runs = hooks.all_requests("/deny", selected, "bad-dry");
    assert!(!dry_runs.is_empty());
    assert!(
        dry_runs.iter().all(|r| r["dryRun"] == true),
        "{dry_runs:#?}"
    );

    let good = files.write_json(
        "select-good.json",
        &[configmap(selected, "good-dry", json!({}), json!({}))],
    );
    let out = cluster.kubectl_output(&["apply", "--dry-run=server", "-f", path_str(&good)]);
    assert_output(&out, 0, "configmap/good-dry created (server dry run)\n", "");
    let out = cluster.kubectl_output(&["get", "configmap", "good-dry", "-n", selected]);
    assert_output(
        &out,
        1,
        "",
        "Error from server (NotFound): configmaps \"good-dry\" not found\n",
    );

    let bad = files.write_json(
        "select-bad.json",
        &[configmap(selected, "bad", json!({}), json!({}))],
    );
    let out = cluster.kubectl_output(&["apply", "-f", path_str(&bad)]);
    let want = format!(
        "Error from server: error when creating \"{}\": admission webhook \"select.e2e.example.com\" denied the request: no ConfigMaps named bad\n",
        path_str(&bad)
    );
    assert_output(&out, 1, "", &want);
    // Skipped by the object selector, and in a namespace the namespace selector leaves out.
    let skipped = files.write_json(
        "select-skipped.json",
        &[
            configmap(selected, "bad-skipped", json!({"skip": "yes"}), json!({})),
            configmap(other, "bad", json!({}), json!({})),
        ],
    );
    let out = cluster.kubectl_output(&["apply", "-f", path_str(&skipped)]);
    assert_output(
        &out,
        0,
        &created(&["configmap/bad-skipped", "configmap/bad"]),
        "",
    );
    assert!(hooks
        .all_requests("/deny", selected, "bad-skipped")
        .is_empty());
    assert!(hooks.all_requests("/deny", other, "bad").is_empty());

    let mut unknown = hook;
    unknown["name"] = json!("unknown.e2e.example.com");
    unknown["sideEffects"] = json!("Unknown");
    let refused = files.write_json(
        "select-unknown.json",
        &[validating("e2e-unknown", vec![unknown])],
    );
    let out = cluster.kubectl_output(&["apply", "-f", path_str(&refused)]);
    assert_output(
        &out,
        1,
        "",
        "The ValidatingWebhookConfiguration \"e2e-unknown\" is invalid: webhooks[0].sideEffects: Unsupported value: \"Unknown\": supported values: \"None\", \"NoneOnDryRun\"\n",
    );
}

/// `clientConfig.service` with a port and a path, routed by an EndpointSlice at 127.0.0.1 to
/// the test's server, for a Service without a selector.
fn service_reference(cluster: &Cluster, hooks: &Hooks, files: &Files) {
    let ns = "e2e-service";
    let service = json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "hooks", "namespace": ns},
        "spec": {"ports": [{"name": "webhooks", "port": 8443, "targetPort": 9443}]}});
    let slice = json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "hooks-1", "namespace": ns,
            "labels": {"kubernetes.io/service-name": "hooks"}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": true}}],
        "ports": [{"name": "webhooks", "port": hooks.port, "protocol": "TCP"}]});
    let hook = webhook(
        "service.e2e.example.com",
        ns,
        json!({"service": {"namespace": ns, "name": "hooks", "port": 8443, "path": "/deny"},
            "caBundle": hooks.ca_bundle()}),
    );
    let setup = files.write_json(
        "service-setup.json",
        &[
            namespace(ns, json!({})),
            service,
            slice,
            validating("e2e-service", vec![hook]),
        ],
    );
    cluster.kubectl(&["apply", "-f", path_str(&setup)]);
    let bad = files.write_json(
        "service-bad.json",
        &[configmap(ns, "bad-via-service", json!({}), json!({}))],
    );
    let want = format!(
        "Error from server: error when creating \"{}\": admission webhook \"service.e2e.example.com\" denied the request: no ConfigMaps named bad-via-service\n",
        path_str(&bad)
    );
    in_force(
        cluster,
        "the webhook behind the Service",
        &bad,
        "denied the request",
    );
    let out = cluster.kubectl_output(&["apply", "-f", path_str(&bad)]);
    assert_output(&out, 1, "", &want);
    let good = files.write_json(
        "service-good.json",
        &[configmap(ns, "good", json!({}), json!({}))],
    );
    let out = cluster.kubectl_output(&["apply", "-f", path_str(&good)]);
    assert_output(&out, 0, &created(&["configmap/good"]), "");
    assert_eq!(hooks.requests("/deny", ns, "good").len(), 1);
}

/// A CRD served in v1 and v2, converted by the test's webhook: created in v1, read and
/// watched in v2, listed in both.
fn conversion(cluster: &Cluster, hooks: &Hooks, files: &Files) {
    let ns = "e2e-conversion";
    let schema = |field: &str| {
        json!({"openAPIV3Schema": {"type": "object", "properties": {
            "spec": {"type": "object", "properties": {field: {"type": "integer"}}}}}})
    };
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.e2e.example.com"},
        "spec": {
            "group": "e2e.example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": schema("size")},
                {"name": "v2", "served": true, "storage": false, "schema": schema("length")},
            ],
            "conversion": {"strategy": "Webhook", "webhook": {
                "clientConfig": hooks.client_config("/convert"),
                "conversionReviewVersions": ["v1"],
            }},
        }
    });
    let setup = files.write_json("conversion-setup.json", &[namespace(ns, json!({})), crd]);
    cluster.kubectl(&["apply", "-f", path_str(&setup)]);
    let widget = |name: &str, size: i64| {
        json!({"apiVersion": "e2e.example.com/v1", "kind": "Widget",
            "metadata": {"name": name, "namespace": ns}, "spec": {"size": size}})
    };
    let first = files.write_json("conversion-w1.json", &[widget("w1", 3)]);
    let out = until(
        cluster,
        "v1 widgets to be served",
        &["apply", "-f", path_str(&first)],
        |out| out.status.success(),
    );
    assert_output(&out, 0, "widget.e2e.example.com/w1 created\n", "");

    let v2 = cluster.jsonpath(
        &["get", "widgets.v2.e2e.example.com", "w1", "-n", ns],
        "{.apiVersion} {.spec}",
    );
    assert_eq!(v2, "e2e.example.com/v2 {\"length\":3}");
    let v1 = cluster.jsonpath(
        &["get", "widgets.v1.e2e.example.com", "-n", ns],
        "{.items[*].apiVersion} {.items[*].spec}",
    );
    assert_eq!(v1, "e2e.example.com/v1 {\"size\":3}");
    let v2 = cluster.jsonpath(
        &["get", "widgets.v2.e2e.example.com", "-n", ns],
        "{.items[*].apiVersion} {.items[*].spec}",
    );
    assert_eq!(v2, "e2e.example.com/v2 {\"length\":3}");

    // A watch in v2 sees an object created in v1, converted.
    let mut watch = cluster
        .kubectl_cmd(&[
            "get",
            "widgets.v2.e2e.example.com",
            "-n",
            ns,
            "--watch",
            "-o",
            "jsonpath={.metadata.name} {.apiVersion} {.spec}{\"\\n\"}",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl watch starts");
    let stdout = watch.stdout.take().expect("piped stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    // The watch lists first: once w1 is printed, it is watching.
    let initial = rx.recv_timeout(MINUTE).expect("the watch lists w1");
    assert_eq!(initial, "w1 e2e.example.com/v2 {\"length\":3}");
    let second = files.write_json("conversion-w2.json", &[widget("w2", 7)]);
    cluster.kubectl(&["apply", "-f", path_str(&second)]);
    let event = rx.recv_timeout(MINUTE).expect("the watch sees w2");
    let _ = watch.kill();
    let _ = watch.wait();
    assert_eq!(event, "w2 e2e.example.com/v2 {\"length\":7}");
    let converted = hooks
        .reviews
        .lock()
        .expect("reviews")
        .iter()
        .filter(|(p, _)| p == "/convert")
        .count();
    assert!(converted >= 4, "{converted} conversion reviews");
}

/// A ValidatingAdmissionPolicy whose limit is a ConfigMap named by its binding's `paramRef`.
fn policy_with_params(cluster: &Cluster, files: &Files) {
    let (params_ns, ns) = ("e2e-vap-params", "e2e-vap");
    let policy = json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "e2e-max-keys"},
        "spec": {
            "failurePolicy": "Fail",
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["CREATE", "UPDATE"], "resources": ["configmaps"]}]},
            "validations": [{
                "expression": "!has(object.data) || size(object.data) <= int(params.data.maxKeys)",
                "messageExpression": "'at most ' + params.data.maxKeys + ' keys'",
            }],
        },
    });
    let binding = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "e2e-max-keys-binding"},
        "spec": {
            "policyName": "e2e-max-keys",
            "validationActions": ["Deny"],
            "paramRef": {"name": "limits", "namespace": params_ns,
                "parameterNotFoundAction": "Deny"},
            "matchResources": {"namespaceSelector": {"matchLabels": {
                "kubernetes.io/metadata.name": ns}}},
        },
    });
    let setup = files.write_json(
        "vap-setup.json",
        &[
            namespace(params_ns, json!({})),
            namespace(ns, json!({})),
            configmap(params_ns, "limits", json!({}), json!({"maxKeys": "1"})),
            policy,
            binding,
        ],
    );
    cluster.kubectl(&["apply", "-f", path_str(&setup)]);
    let two = files.write_json(
        "vap-two.json",
        &[configmap(ns, "two", json!({}), json!({"a": "1", "b": "2"}))],
    );
    let want = "The configmaps \"two\" is invalid: : ValidatingAdmissionPolicy 'e2e-max-keys' with binding 'e2e-max-keys-binding' denied request: at most 1 keys\n";
    in_force(cluster, "the policy and its param", &two, "denied request");
    let out = cluster.kubectl_output(&["apply", "--dry-run=server", "-f", path_str(&two)]);
    assert_output(&out, 1, "", want);
    let out = cluster.kubectl_output(&["apply", "-f", path_str(&two)]);
    assert_output(&out, 1, "", want);
    let one = files.write_json(
        "vap-one.json",
        &[configmap(ns, "one", json!({}), json!({"a": "1"}))],
    );
    let out = cluster.kubectl_output(&["apply", "-f", path_str(&one)]);
    assert_output(&out, 0, &created(&["configmap/one"]), "");

    // A new limit in the param takes effect.
    cluster.kubectl(&[
        "patch",
        "configmap",
        "limits",
        "-n",
        params_ns,
        "--type=merge",
        "-p",
        r#"{"data":{"maxKeys":"2"}}"#,
    ]);
    let out = until(
        cluster,
        "the policy's new param",
        &["apply", "-f", path_str(&two)],
        |out| out.status.success(),
    );
    assert_output(&out, 0, &created(&["configmap/two"]), "");
}

const CERT_MANAGER: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/testdata/cert-manager/cert-manager.yaml"
);

/// What kube 1.33's `SetDefaults_*Webhook` and `SetDefaults_Rule`/`ServiceReference` make of
/// cert-manager's webhook as written (`pkg/apis/admissionregistration/v1/defaults.go`).
fn cert_manager_defaulted(kind: &str) -> Value {
    match kind {
        "validatingwebhookconfiguration" => json!({
            "name": "webhook.cert-manager.io",
            "namespaceSelector": {"matchExpressions": [{"key": "cert-manager.io/disable-validation",
                "operator": "NotIn", "values": ["true"]}]},
            "objectSelector": {},
            "rules": [{"apiGroups": ["cert-manager.io", "acme.cert-manager.io"],
                "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["*/*"],
                "scope": "*"}],
            "admissionReviewVersions": ["v1"],
            "matchPolicy": "Equivalent",
            "timeoutSeconds": 30,
            "failurePolicy": "Fail",
            "sideEffects": "None",
            "clientConfig": {"service": {"name": "cert-manager-webhook",
                "namespace": "cert-manager", "path": "/validate", "port": 443}},
        }),
        _ => json!({
            "name": "webhook.cert-manager.io",
            "namespaceSelector": {},
            "objectSelector": {},
            "reinvocationPolicy": "Never",
            "rules": [{"apiGroups": ["cert-manager.io"], "apiVersions": ["v1"],
                "operations": ["CREATE"], "resources": ["certificaterequests"], "scope": "*"}],
            "admissionReviewVersions": ["v1"],
            "matchPolicy": "Equivalent",
            "timeoutSeconds": 30,
            "failurePolicy": "Fail",
            "sideEffects": "None",
            "clientConfig": {"service": {"name": "cert-manager-webhook",
                "namespace": "cert-manager", "path": "/mutate", "port": 443}},
        }),
    }
}

/// cert-manager's release objects, applied unchanged: with nothing serving its webhook an
/// Issuer is refused with kube's "failed calling webhook"; pointed at the test's server (an
/// EndpointSlice for `cert-manager-webhook`, the CA patched in as cainjector would), its
/// webhooks deny and mutate as that server answers.
fn cert_manager(cluster: &Cluster, hooks: &Hooks, files: &Files) {
    let out = cluster.kubectl_output(&["apply", "-f", CERT_MANAGER]);
    assert_output(
        &out,
        0,
        "namespace/cert-manager created\n\
         customresourcedefinition.apiextensions.k8s.io/issuers.cert-manager.io created\n\
         customresourcedefinition.apiextensions.k8s.io/certificaterequests.cert-manager.io created\n\
         service/cert-manager-webhook created\n\
         mutatingwebhookconfiguration.admissionregistration.k8s.io/cert-manager-webhook created\n\
         validatingwebhookconfiguration.admissionregistration.k8s.io/cert-manager-webhook created\n",
        "",
    );
    for kind in [
        "validatingwebhookconfiguration",
        "mutatingwebhookconfiguration",
    ] {
        let hook = cluster.jsonpath(&["get", kind, "cert-manager-webhook"], "{.webhooks[0]}");
        assert_eq!(
            serde_json::from_str::<Value>(&hook).expect("webhook"),
            cert_manager_defaulted(kind),
            "{kind} as read back"
        );
    }
    cluster.kubectl(&[
        "wait",
        "--for=condition=Established",
        "crd/issuers.cert-manager.io",
        "crd/certificaterequests.cert-manager.io",
        "--timeout=60s",
    ]);

    let ns = "e2e-issuers";
    let issuer = |name: &str, ns: &str| {
        json!({"apiVersion": "cert-manager.io/v1", "kind": "Issuer",
            "metadata": {"name": name, "namespace": ns}, "spec": {"selfSigned": {}}})
    };
    let setup = files.write_json(
        "cm-namespaces.json",
        &[
            namespace(ns, json!({})),
            namespace(
                "e2e-issuers-unvalidated",
                json!({"cert-manager.io/disable-validation": "true"}),
            ),
        ],
    );
    cluster.kubectl(&["apply", "-f", path_str(&setup)]);
    let down = files.write_json("cm-issuer-down.json", &[issuer("selfsigned", ns)]);
    let want = format!(
        "Error from server (InternalError): error when creating \"{}\": Internal error occurred: failed calling webhook \"webhook.cert-manager.io\": failed to call webhook: Post \"https://cert-manager-webhook.cert-manager.svc:443/validate?timeout=30s\": no endpoints available for service \"cert-manager-webhook\"\n",
        path_str(&down)
    );
    in_force(
        cluster,
        "Issuers to be served",
        &down,
        "failed calling webhook",
    );
    let out = cluster.kubectl_output(&["apply", "-f", path_str(&down)]);
    assert_output(&out, 1, "", &want);
    // A namespace labelled to opt out of validation is left alone, as its selector says.
    let unvalidated = files.write_json(
        "cm-issuer-unvalidated.json",
        &[issuer("selfsigned", "e2e-issuers-unvalidated")],
    );
    let out = cluster.kubectl_output(&["apply", "-f", path_str(&unvalidated)]);
    assert_output(&out, 0, "issuer.cert-manager.io/selfsigned created\n", "");

    // The test's server stands in for cert-manager's webhook pods.
    let slice = json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "cert-manager-webhook-test", "namespace": "cert-manager",
            "labels": {"kubernetes.io/service-name": "cert-manager-webhook",
                "endpointslice.kubernetes.io/managed-by": "webhooks-e2e.example.com"}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": true}}],
        "ports": [{"name": "https", "port": hooks.port, "protocol": "TCP"}]});
    let slice = files.write_json("cm-slice.json", &[slice]);
    cluster.kubectl(&["apply", "-f", path_str(&slice)]);
    let ca = format!(
        r#"[{{"op":"add","path":"/webhooks/0/clientConfig/caBundle","value":"{}"}}]"#,
        hooks.ca_bundle()
    );
    for kind in [
        "validatingwebhookconfiguration",
        "mutatingwebhookconfiguration",
    ] {
        cluster.kubectl(&[
            "patch",
            kind,
            "cert-manager-webhook",
            "--type=json",
            "-p",
            &ca,
        ]);
    }
    let refused = files.write_json("cm-issuer-refused.json", &[issuer("refused", ns)]);
    let want = format!(
        "Error from server (Forbidden): error when creating \"{}\": admission webhook \"webhook.cert-manager.io\" denied the request: the test's webhook refuses Issuer refused\n",
        path_str(&refused)
    );
    in_force(
        cluster,
        "cert-manager's webhook to reach the test's server",
        &refused,
        "denied the request",
    );
    let out = cluster.kubectl_output(&["apply", "-f", path_str(&refused)]);
    assert_output(&out, 1, "", &want);
    let out = cluster.kubectl_output(&["apply", "-f", path_str(&down)]);
    assert_output(&out, 0, "issuer.cert-manager.io/selfsigned created\n", "");
    let validated = hooks.requests("/validate", ns, "selfsigned");
    assert_eq!(validated.len(), 1);
    assert_eq!(
        validated[0]["kind"],
        json!({"group": "cert-manager.io",
        "version": "v1", "kind": "Issuer"})
    );

    let request = json!({"apiVersion": "cert-manager.io/v1", "kind": "CertificateRequest",
        "metadata": {"name": "req", "namespace": ns},
        "spec": {"request": base64::engine::general_purpose::STANDARD.encode("not a CSR"),
            "issuerRef": {"name": "selfsigned"}}});
    let request = files.write_json("cm-request.json", &[request]);
    let out = cluster.kubectl_output(&["apply", "-f", path_str(&request)]);
    assert_output(
        &out,
        0,
        "certificaterequest.cert-manager.io/req created\n",
        "",
    );
    let labels = cluster.jsonpath(
        &["get", "certificaterequest", "req", "-n", ns],
        "{.metadata.labels}",
    );
    assert_eq!(
        serde_json::from_str::<Value>(&labels).expect("labels"),
        json!({"mutated-by": "test-webhook"})
    );
    assert_eq!(
        hooks.requests("/validate", ns, "req").len(),
        1,
        "the validating webhook sees the mutated request"
    );
}

/// A scenario, run on a thread of its own.
type Scenario<'a> = Box<dyn FnOnce() + Send + 'a>;

/// A port on 127.0.0.1 that refuses connections: bound (so that nothing else takes it while
/// the socket is kept) but not listening.
fn closed_port(runtime: &tokio::runtime::Runtime) -> (tokio::net::TcpSocket, u16) {
    let _guard = runtime.enter();
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket
        .bind("127.0.0.1:0".parse().expect("address"))
        .expect("bind");
    let port = socket.local_addr().expect("address").port();
    (socket, port)
}

#[test]
fn webhooks_conversion_and_policies_through_kubectl() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let hooks = Hooks::start(&runtime);
    let (_closed_socket, closed) = closed_port(&runtime);
    let cluster = Cluster::start(&["--nodes", "0"]);
    let files = Files {
        dir: tempfile::tempdir().expect("temp dir"),
    };
    let started = Instant::now();
    let timings = Mutex::new(BTreeMap::new());
    std::thread::scope(|s| {
        let scenarios: Vec<(&str, Scenario<'_>)> = vec![
            ("denial", Box::new(|| denial(&cluster, &hooks, &files))),
            ("mutation", Box::new(|| mutation(&cluster, &hooks, &files))),
            (
                "reinvocation",
                Box::new(|| reinvocation(&cluster, &hooks, &files)),
            ),
            (
                "failure policies",
                Box::new(|| failure_policies(&cluster, &files, closed)),
            ),
            ("timeout", Box::new(|| timeout(&cluster, &hooks, &files))),
            (
                "selectors and dry run",
                Box::new(|| selectors_and_dry_run(&cluster, &hooks, &files)),
            ),
            (
                "service reference",
                Box::new(|| service_reference(&cluster, &hooks, &files)),
            ),
            (
                "conversion",
                Box::new(|| conversion(&cluster, &hooks, &files)),
            ),
            (
                "policy with params",
                Box::new(|| policy_with_params(&cluster, &files)),
            ),
            (
                "cert-manager",
                Box::new(|| cert_manager(&cluster, &hooks, &files)),
            ),
        ];
        for (name, scenario) in scenarios {
            let timings = &timings;
            std::thread::Builder::new()
                .name(name.to_string())
                .spawn_scoped(s, move || {
                    let t = Instant::now();
                    scenario();
                    timings.lock().expect("timings").insert(name, t.elapsed());
                })
                .expect("scenario thread");
        }
    });
    eprintln!(
        "scenarios took {:?} in all: {:?}",
        started.elapsed(),
        timings.lock().expect("timings")
    );
}
