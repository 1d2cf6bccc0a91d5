//! A kubelet's identity on the in-process server with `--authorization-mode=Node,RBAC` and
//! NodeRestriction: what `system:node:<name>` with a client certificate of the cluster CA may
//! read and change, and kube's 403s for the rest.

use base64::Engine;
use http_body_util::BodyExt;
use serde_json::{json, Value};

use rkcm_apiserver::admission::AdmissionConfig;
use rkcm_apiserver::auth::authorization::Mode;
use rkcm_apiserver::testing::{self, TestServer};

/// A Node,RBAC server with NodeRestriction (ServiceAccount admission off: no controllers
/// create the `default` accounts here).
async fn server() -> TestServer {
    testing::start_with(rkcm_apiserver::Config {
        authorization_modes: vec![Mode::Node, Mode::Rbac],
        admission: AdmissionConfig {
            enable_plugins: vec!["NodeRestriction".into()],
            ..AdmissionConfig::disabling(&["ServiceAccount"])
        },
        ..Default::default()
    })
    .await
}

/// A client presenting a certificate for `system:node:<node>` in `system:nodes`, signed by the
/// server's CA.
async fn node_client(server: &TestServer, node: &str) -> kube::Client {
    let ca_key = rcgen::KeyPair::from_pem(server.ca_key_pem().expect("TLS")).expect("CA key");
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "rkcm-ca");
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let key = rcgen::KeyPair::generate().expect("key");
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    params.distinguished_name = rcgen::DistinguishedName::new();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, format!("system:node:{node}"));
    params
        .distinguished_name
        .push(rcgen::DnType::OrganizationName, "system:nodes");
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    let cert = params.signed_by(&key, &issuer).expect("signed");
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    server
        .client_as(json!({
            "client-certificate-data": b64(&cert.pem()),
            "client-key-data": b64(&key.serialize_pem()),
        }))
        .await
}

/// Sends `method path` with a JSON `body` (merge patch for PATCH); the status and the answer.
async fn send(
    client: &kube::Client,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let content_type = if method == "PATCH" {
        "application/merge-patch+json"
    } else {
        "application/json"
    };
    let req = http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", content_type)
        .body(body.map(|b| b.to_string().into_bytes()).unwrap_or_default())
        .expect("request");
    let resp = client.send(req.map(Into::into)).await.expect("answered");
    let code = resp.status().as_u16();
    let bytes = resp.into_body().collect().await.expect("body").to_bytes();
    (code, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

fn message(v: &Value) -> &str {
    v.get("message").and_then(Value::as_str).unwrap_or_default()
}

async fn seed(admin: &kube::Client) {
    for (path, body) in [
        ("/api/v1/namespaces", json!({"metadata": {"name": "work"}})),
        ("/api/v1/nodes", json!({"metadata": {"name": "node-a"}})),
        ("/api/v1/nodes", json!({"metadata": {"name": "node-b"}})),
        (
            "/api/v1/namespaces/work/secrets",
            json!({"metadata": {"name": "used"}, "data": {"k": "dg=="}}),
        ),
        (
            "/api/v1/namespaces/work/secrets",
            json!({"metadata": {"name": "unused"}, "data": {"k": "dg=="}}),
        ),
        (
            "/api/v1/namespaces/work/pods",
            json!({"metadata": {"name": "p"}, "spec": {"nodeName": "node-a", "serviceAccountName": "default",
                "containers": [{"name": "c", "image": "busybox"}],
                "volumes": [{"name": "s", "secret": {"secretName": "used"}}]}}),
        ),
        (
            "/api/v1/namespaces/work/pods",
            json!({"metadata": {"name": "elsewhere"}, "spec": {"nodeName": "node-b",
                "containers": [{"name": "c", "image": "busybox"}]}}),
        ),
    ] {
        let (code, body) = send(admin, "POST", path, Some(body)).await;
        assert_eq!(code, 201, "{path}: {body}");
    }
}

#[tokio::test]
async fn a_node_reads_what_its_pods_use_and_its_own_node_only() {
    let server = server().await;
    let admin = server.client();
    seed(&admin).await;
    let node = node_client(&server, "node-a").await;

    let (code, body) = send(&node, "GET", "/api/v1/namespaces/work/secrets/used", None).await;
    assert_eq!(code, 200, "{body}");
    let (code, body) = send(&node, "GET", "/api/v1/namespaces/work/secrets/unused", None).await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        message(&body),
        "secrets \"unused\" is forbidden: User \"system:node:node-a\" cannot get resource \"secrets\" in API group \"\" in the namespace \"work\": no relationship found between node 'node-a' and this object"
    );
    let (code, _) = send(&node, "GET", "/api/v1/nodes/node-a", None).await;
    assert_eq!(code, 200);
    let (code, body) = send(&node, "GET", "/api/v1/nodes/node-b", None).await;
    assert_eq!(code, 403);
    assert_eq!(
        message(&body),
        "nodes \"node-b\" is forbidden: User \"system:node:node-a\" cannot get resource \"nodes\" in API group \"\" at the cluster scope: node 'node-a' cannot read 'node-b', only its own Node object"
    );
    let (code, body) = send(
        &node,
        "GET",
        "/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-a",
        None,
    )
    .await;
    assert_eq!(code, 200, "{body}");
    let names: Vec<&str> = body["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|p| p.pointer("/metadata/name").and_then(Value::as_str))
        .collect();
    assert_eq!(names, ["p"]);
    let (code, body) = send(&node, "GET", "/api/v1/pods", None).await;
    assert_eq!(code, 403);
    assert!(
        message(&body).ends_with("can only list/watch pods with spec.nodeName field selector"),
        "{body}"
    );

    // SubjectAccessReviews see the same, field selector included.
    let review = |selector: Value| {
        json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": {"user": "system:node:node-a", "groups": ["system:nodes"],
                "resourceAttributes": {"verb": "list", "resource": "pods", "fieldSelector": selector}}})
    };
    let sar = "/apis/authorization.k8s.io/v1/subjectaccessreviews";
    let (code, body) = send(
        &admin,
        "POST",
        sar,
        Some(review(json!({"rawSelector": "spec.nodeName=node-a"}))),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(
        body.pointer("/status/allowed"),
        Some(&json!(true)),
        "{body}"
    );
    let (_, body) = send(&admin, "POST", sar, Some(review(json!({})))).await;
    assert_eq!(
        body.pointer("/status/allowed"),
        Some(&json!(false)),
        "{body}"
    );

    // The pod is gone: so is the node's access to its secret.
    let (code, _) = send(
        &admin,
        "DELETE",
        "/api/v1/namespaces/work/pods/p",
        Some(json!({"gracePeriodSeconds": 0})),
    )
    .await;
    assert_eq!(code, 200);
    let (code, _) = send(&node, "GET", "/api/v1/namespaces/work/secrets/used", None).await;
    assert_eq!(code, 403);
    server.stop().await;
}

#[tokio::test]
async fn node_restriction_keeps_a_node_to_its_own_objects() {
    let server = server().await;
    let admin = server.client();
    seed(&admin).await;
    let node = node_client(&server, "node-a").await;

    let (code, body) = send(
        &node,
        "PATCH",
        "/api/v1/nodes/node-b",
        Some(json!({"metadata": {"labels": {"x": "y"}}})),
    )
    .await;
    assert_eq!(code, 403);
    assert_eq!(
        message(&body),
        "nodes \"node-b\" is forbidden: node \"node-a\" is not allowed to modify node \"node-b\""
    );
    let (code, body) = send(
        &node,
        "PATCH",
        "/api/v1/nodes/node-a",
        Some(json!({"metadata": {"labels": {"node-role.kubernetes.io/control-plane": ""}}})),
    )
    .await;
    assert_eq!(code, 403);
    assert_eq!(
        message(&body),
        "nodes \"node-a\" is forbidden: is not allowed to modify labels: node-role.kubernetes.io/control-plane"
    );
    let (code, body) = send(
        &node,
        "PATCH",
        "/api/v1/nodes/node-a",
        Some(json!({"metadata": {"labels": {"node.kubernetes.io/exclude-from-external-load-balancers": "true"}}})),
    )
    .await;
    assert_eq!(code, 200, "{body}");
    let (code, body) = send(
        &node,
        "PATCH",
        "/api/v1/nodes/node-a",
        Some(json!({"spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]}})),
    )
    .await;
    assert_eq!(code, 403);
    assert_eq!(
        message(&body),
        "nodes \"node-a\" is forbidden: node \"node-a\" is not allowed to modify taints"
    );

    // Pod status: its own pods only.
    let status = json!({"status": {"phase": "Running"}});
    let (code, body) = send(
        &node,
        "PATCH",
        "/api/v1/namespaces/work/pods/p/status",
        Some(status.clone()),
    )
    .await;
    assert_eq!(code, 200, "{body}");
    let (code, body) = send(
        &node,
        "PATCH",
        "/api/v1/namespaces/work/pods/elsewhere/status",
        Some(status),
    )
    .await;
    assert_eq!(code, 403);
    assert_eq!(
        message(&body),
        "pods \"elsewhere\" is forbidden: node \"node-a\" can only update pod status for pods with spec.nodeName set to itself"
    );
    let (code, body) = send(
        &node,
        "DELETE",
        "/api/v1/namespaces/work/pods/elsewhere",
        None,
    )
    .await;
    assert_eq!(code, 403);
    assert_eq!(
        message(&body),
        "pods \"elsewhere\" is forbidden: node \"node-a\" can only delete pods with spec.nodeName set to itself"
    );

    // Tokens for its pods' service accounts, bound to such a pod only; evictions of its pods.
    for (path, body) in [(
        "/api/v1/namespaces/work/serviceaccounts",
        json!({"metadata": {"name": "default"}}),
    )] {
        let (code, body) = send(&admin, "POST", path, Some(body)).await;
        assert_eq!(code, 201, "{body}");
    }
    let (_, pod) = send(&admin, "GET", "/api/v1/namespaces/work/pods/p", None).await;
    let uid = pod
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .expect("uid");
    let token = "/api/v1/namespaces/work/serviceaccounts/default/token";
    let request = |bound: Value| json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"boundObjectRef": bound}});
    let (code, body) = send(
        &node,
        "POST",
        token,
        Some(request(
            json!({"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": uid}),
        )),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let (code, body) = send(&node, "POST", token, Some(request(Value::Null))).await;
    assert_eq!(code, 403);
    assert_eq!(
        message(&body),
        "serviceaccounts \"default\" is forbidden: node requested token not bound to a pod"
    );
    let (code, body) = send(
        &node,
        "POST",
        "/api/v1/namespaces/work/pods/elsewhere/eviction",
        Some(json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "elsewhere"}})),
    )
    .await;
    assert_eq!(code, 403);
    assert_eq!(
        message(&body),
        "pods \"elsewhere\" is forbidden: node node-a can only evict pods with spec.nodeName set to itself"
    );

    // Its own lease, not another's.
    let lease = |name: &str| json!({"metadata": {"name": name}, "spec": {"holderIdentity": name, "leaseDurationSeconds": 40}});
    let leases = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases";
    let (code, body) = send(&node, "POST", leases, Some(lease("node-a"))).await;
    assert_eq!(code, 201, "{body}");
    let (code, body) = send(&node, "POST", leases, Some(lease("node-b"))).await;
    assert_eq!(code, 403);
    assert_eq!(
        message(&body),
        "leases.coordination.k8s.io \"node-b\" is forbidden: can only access node lease with the same name as the requesting node"
    );
    server.stop().await;
}
