//! Authorization on the in-process server in RBAC mode: kube's 403s for resource, watch and
//! non-resource requests, and what RoleBindings and ClusterRoleBindings grant.

use http_body_util::BodyExt;
use serde_json::{json, Value};

use rkcm_apiserver::auth::authorization::Mode;
use rkcm_apiserver::testing::{self, TestServer};

/// A server in RBAC mode knowing the token-file users `jane` and `bob` (group `devs`).
async fn rbac_server() -> (TestServer, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("tokens.csv");
    std::fs::write(&file, "jane-token,jane,1001\nbob-token,bob,1002,devs\n").expect("write");
    let server = testing::start_with(rkcm_apiserver::Config {
        token_auth_file: Some(file),
        authorization_modes: vec![Mode::Rbac],
        ..Default::default()
    })
    .await;
    (server, dir)
}

/// A kube client for `server` presenting `token`.
async fn client(server: &TestServer, token: &str) -> kube::Client {
    server.client_as(json!({ "token": token })).await
}

/// Sends `method path` with a JSON `body` and `headers`; the status code and the JSON answer.
async fn send_with(
    client: &kube::Client,
    method: &str,
    path: &str,
    body: Option<Value>,
    headers: &[(&str, &str)],
) -> (u16, Value) {
    let mut req = http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", "application/json");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let req = req
        .body(body.map(|b| b.to_string().into_bytes()).unwrap_or_default())
        .expect("request");
    let resp = client.send(req.map(Into::into)).await.expect("answered");
    let code = resp.status().as_u16();
    let bytes = resp.into_body().collect().await.expect("body").to_bytes();
    (code, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

async fn send(
    client: &kube::Client,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    send_with(client, method, path, body, &[]).await
}

fn cluster_role(name: &str, rules: Value) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": name}, "rules": rules})
}

fn binding(
    kind: &str,
    ns: Option<&str>,
    name: &str,
    role_kind: &str,
    role: &str,
    subjects: Value,
) -> Value {
    let mut meta = json!({"name": name});
    if let Some(ns) = ns {
        meta["namespace"] = json!(ns);
    }
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": meta,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
        "subjects": subjects})
}

const RBAC: &str = "/apis/rbac.authorization.k8s.io/v1";

#[tokio::test]
async fn requests_nobody_granted_are_forbidden_with_kubes_messages() {
    let (server, _dir) = rbac_server().await;
    let jane = client(&server, "jane-token").await;
    let (code, status) = send(&jane, "GET", "/api/v1/namespaces/default/pods", None).await;
    assert_eq!(code, 403);
    assert_eq!(
        status,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "pods is forbidden: User \"jane\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\"",
            "reason": "Forbidden", "details": {"kind": "pods"}, "code": 403})
    );
    let (code, status) = send(
        &jane,
        "GET",
        "/api/v1/namespaces/default/pods?watch=1",
        None,
    )
    .await;
    assert_eq!(code, 403);
    assert!(
        status["message"]
            .as_str()
            .is_some_and(|m| m.contains("cannot watch resource \"pods\"")),
        "{status}"
    );
    let (code, status) = send(&jane, "GET", "/apis/apps/v1/deployments", None).await;
    assert_eq!(code, 403);
    assert_eq!(
        status["message"],
        "deployments.apps is forbidden: User \"jane\" cannot list resource \"deployments\" in API group \"apps\" at the cluster scope"
    );
    let (code, status) = send(&jane, "DELETE", "/api/v1/nodes/n1", None).await;
    assert_eq!(
        (code, status["details"]["name"].as_str()),
        (403, Some("n1"))
    );
    let (code, status) = send(&jane, "GET", "/metrics", None).await;
    assert_eq!(code, 403);
    assert_eq!(
        status["message"],
        "forbidden: User \"jane\" cannot get path \"/metrics\""
    );
    // The admin is in system:masters.
    assert_eq!(
        send(
            &server.client(),
            "GET",
            "/api/v1/namespaces/default/pods",
            None
        )
        .await
        .0,
        200
    );
}

#[tokio::test]
async fn bindings_grant_their_roles_rules_to_their_subjects() {
    let (server, _dir) = rbac_server().await;
    let admin = server.client();
    let jane = client(&server, "jane-token").await;
    let bob = client(&server, "bob-token").await;
    let pod_reader = cluster_role(
        "pod-reader",
        json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
               {"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]),
    );
    assert_eq!(
        send(
            &admin,
            "POST",
            &format!("{RBAC}/clusterroles"),
            Some(pod_reader)
        )
        .await
        .0,
        201
    );
    let rb = binding(
        "RoleBinding",
        Some("default"),
        "jane-reads",
        "ClusterRole",
        "pod-reader",
        json!([{"kind": "User", "name": "jane", "apiGroup": "rbac.authorization.k8s.io"}]),
    );
    assert_eq!(
        send(
            &admin,
            "POST",
            &format!("{RBAC}/namespaces/default/rolebindings"),
            Some(rb)
        )
        .await
        .0,
        201
    );
    assert_eq!(
        send(&jane, "GET", "/api/v1/namespaces/default/pods", None)
            .await
            .0,
        200
    );
    assert_eq!(
        send(
            &jane,
            "GET",
            "/api/v1/namespaces/default/pods?watch=1&timeoutSeconds=1",
            None
        )
        .await
        .0,
        200
    );
    // A RoleBinding grants no paths: they are cluster-wide.
    assert_eq!(send(&jane, "GET", "/metrics", None).await.0, 403);
    // Only in the binding's namespace, only what the role says.
    assert_eq!(
        send(&jane, "GET", "/api/v1/namespaces/kube-system/pods", None)
            .await
            .0,
        403
    );
    assert_eq!(send(&jane, "GET", "/api/v1/pods", None).await.0, 403);
    assert_eq!(
        send(&jane, "DELETE", "/api/v1/namespaces/default/pods/x", None)
            .await
            .0,
        403
    );
    assert_eq!(
        send(&jane, "GET", "/api/v1/namespaces/default/pods/x/log", None)
            .await
            .0,
        403
    );
    assert_eq!(
        send(&bob, "GET", "/api/v1/namespaces/default/pods", None)
            .await
            .0,
        403
    );
    // A ClusterRoleBinding to bob's group grants it everywhere.
    let crb = binding(
        "ClusterRoleBinding",
        None,
        "devs-read",
        "ClusterRole",
        "pod-reader",
        json!([{"kind": "Group", "name": "devs", "apiGroup": "rbac.authorization.k8s.io"}]),
    );
    assert_eq!(
        send(
            &admin,
            "POST",
            &format!("{RBAC}/clusterrolebindings"),
            Some(crb)
        )
        .await
        .0,
        201
    );
    assert_eq!(send(&bob, "GET", "/api/v1/pods", None).await.0, 200);
    assert_ne!(send(&bob, "GET", "/metrics", None).await.0, 403);
    assert_eq!(
        send(&bob, "GET", "/api/v1/namespaces/kube-system/pods", None)
            .await
            .0,
        200
    );
    // A Role in another namespace, with resource names.
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "one-cm", "namespace": "kube-public"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["cluster-info"], "verbs": ["get"]}]});
    assert_eq!(
        send(
            &admin,
            "POST",
            &format!("{RBAC}/namespaces/kube-public/roles"),
            Some(role)
        )
        .await
        .0,
        201
    );
    let rb = binding(
        "RoleBinding",
        Some("kube-public"),
        "jane-cm",
        "Role",
        "one-cm",
        json!([{"kind": "User", "name": "jane", "apiGroup": "rbac.authorization.k8s.io"}]),
    );
    assert_eq!(
        send(
            &admin,
            "POST",
            &format!("{RBAC}/namespaces/kube-public/rolebindings"),
            Some(rb)
        )
        .await
        .0,
        201
    );
    assert_eq!(
        send(
            &jane,
            "GET",
            "/api/v1/namespaces/kube-public/configmaps/cluster-info",
            None
        )
        .await
        .0,
        404
    );
    assert_eq!(
        send(
            &jane,
            "GET",
            "/api/v1/namespaces/kube-public/configmaps/other",
            None
        )
        .await
        .0,
        403
    );
    assert_eq!(
        send(
            &jane,
            "GET",
            "/api/v1/namespaces/kube-public/configmaps",
            None
        )
        .await
        .0,
        403
    );
    // A binding to a missing role grants nothing, and says so.
    let rb = binding(
        "RoleBinding",
        Some("default"),
        "dangling",
        "ClusterRole",
        "nothing-here",
        json!([{"kind": "User", "name": "jane", "apiGroup": "rbac.authorization.k8s.io"}]),
    );
    assert_eq!(
        send(
            &admin,
            "POST",
            &format!("{RBAC}/namespaces/default/rolebindings"),
            Some(rb)
        )
        .await
        .0,
        201
    );
    let (code, status) = send(&jane, "GET", "/api/v1/namespaces/default/secrets", None).await;
    assert_eq!(code, 403);
    assert_eq!(
        status["message"],
        "secrets is forbidden: User \"jane\" cannot list resource \"secrets\" in API group \"\" in the namespace \"default\": RBAC: clusterrole.rbac.authorization.k8s.io \"nothing-here\" not found"
    );
}

#[tokio::test]
async fn service_accounts_are_authorized_by_bindings_to_them() {
    let (server, _dir) = rbac_server().await;
    let admin = server.client();
    let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "bot"}});
    assert_eq!(
        send(
            &admin,
            "POST",
            "/api/v1/namespaces/default/serviceaccounts",
            Some(sa)
        )
        .await
        .0,
        201
    );
    let (code, tr) = send(
        &admin,
        "POST",
        "/api/v1/namespaces/default/serviceaccounts/bot/token",
        Some(json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}})),
    )
    .await;
    assert_eq!(code, 201);
    let bot = client(&server, tr["status"]["token"].as_str().expect("token")).await;
    assert_eq!(
        send(&bot, "GET", "/api/v1/namespaces/default/configmaps", None)
            .await
            .0,
        403
    );
    let role = cluster_role(
        "cm-reader",
        json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}]),
    );
    assert_eq!(
        send(&admin, "POST", &format!("{RBAC}/clusterroles"), Some(role))
            .await
            .0,
        201
    );
    // A ServiceAccount subject without a namespace is in the binding's.
    let rb = binding(
        "RoleBinding",
        Some("default"),
        "bot",
        "ClusterRole",
        "cm-reader",
        json!([{"kind": "ServiceAccount", "name": "bot"}]),
    );
    assert_eq!(
        send(
            &admin,
            "POST",
            &format!("{RBAC}/namespaces/default/rolebindings"),
            Some(rb)
        )
        .await
        .0,
        201
    );
    assert_eq!(
        send(&bot, "GET", "/api/v1/namespaces/default/configmaps", None)
            .await
            .0,
        200
    );
}

#[tokio::test]
async fn the_bootstrap_policy_grants_kubes_defaults() {
    let (server, _dir) = rbac_server().await;
    let jane = client(&server, "jane-token").await;
    // system:public-info-viewer, system:discovery and system:basic-user.
    assert_eq!(send(&jane, "GET", "/healthz", None).await.0, 200);
    assert_eq!(send(&jane, "GET", "/apis", None).await.0, 200);
    assert_eq!(send(&jane, "GET", "/api/v1", None).await.0, 200);
    let (code, me) = send(
        &jane,
        "POST",
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        Some(json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})),
    )
    .await;
    assert_eq!(
        (code, me["status"]["userInfo"]["username"].as_str()),
        (201, Some("jane"))
    );
    assert_eq!(send(&jane, "GET", "/metrics", None).await.0, 403);
    // `view` through a binding, filled by aggregation: the aggregation controller does not run
    // here, so the binding to `system:aggregate-to-view` shows what `view` will hold.
    let admin = server.client();
    let rb = binding(
        "RoleBinding",
        Some("default"),
        "jane-view",
        "ClusterRole",
        "system:aggregate-to-view",
        json!([{"kind": "User", "name": "jane", "apiGroup": "rbac.authorization.k8s.io"}]),
    );
    assert_eq!(
        send(
            &admin,
            "POST",
            &format!("{RBAC}/namespaces/default/rolebindings"),
            Some(rb)
        )
        .await
        .0,
        201
    );
    assert_eq!(
        send(
            &jane,
            "GET",
            "/apis/apps/v1/namespaces/default/deployments",
            None
        )
        .await
        .0,
        200
    );
    assert_eq!(
        send(&jane, "GET", "/api/v1/namespaces/default/secrets", None)
            .await
            .0,
        403
    );
}

#[tokio::test]
async fn the_bootstrap_policy_is_reconciled_at_start_keeping_user_changes() {
    let data = tempfile::tempdir().expect("tempdir");
    let server = testing::start_with(rkcm_apiserver::Config {
        data_dir: Some(data.path().to_path_buf()),
        ..Default::default()
    })
    .await;
    let admin = server.client();
    let (code, roles) = send(&admin, "GET", &format!("{RBAC}/clusterroles"), None).await;
    assert_eq!(code, 200);
    let names: Vec<&str> = roles["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|r| r["metadata"]["name"].as_str())
        .collect();
    for want in [
        "cluster-admin",
        "admin",
        "edit",
        "view",
        "system:controller:job-controller",
    ] {
        assert!(names.contains(&want), "{want} missing");
    }
    // A user adds a rule to a default role, takes a subject from a default binding, protects
    // another role, and deletes one.
    let path = |kind: &str, name: &str| format!("{RBAC}/{kind}/{name}");
    let (_, mut basic) = send(
        &admin,
        "GET",
        &path("clusterroles", "system:basic-user"),
        None,
    )
    .await;
    basic["rules"]
        .as_array_mut()
        .expect("rules")
        .push(json!({"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}));
    basic["rules"].as_array_mut().expect("rules").remove(0);
    assert_eq!(
        send(
            &admin,
            "PUT",
            &path("clusterroles", "system:basic-user"),
            Some(basic)
        )
        .await
        .0,
        200
    );
    let (_, mut discovery) = send(
        &admin,
        "GET",
        &path("clusterrolebindings", "system:discovery"),
        None,
    )
    .await;
    discovery["subjects"] =
        json!([{"kind": "User", "name": "someone", "apiGroup": "rbac.authorization.k8s.io"}]);
    assert_eq!(
        send(
            &admin,
            "PUT",
            &path("clusterrolebindings", "system:discovery"),
            Some(discovery)
        )
        .await
        .0,
        200
    );
    let (_, mut monitoring) = send(
        &admin,
        "GET",
        &path("clusterroles", "system:monitoring"),
        None,
    )
    .await;
    monitoring["metadata"]["annotations"]
        [rkcm_apiserver::auth::bootstrap_policy::AUTOUPDATE_ANNOTATION] = json!("false");
    monitoring["rules"] = json!([{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]);
    assert_eq!(
        send(
            &admin,
            "PUT",
            &path("clusterroles", "system:monitoring"),
            Some(monitoring)
        )
        .await
        .0,
        200
    );
    assert_eq!(
        send(&admin, "DELETE", &path("clusterroles", "edit"), None)
            .await
            .0,
        200
    );
    drop(admin);
    server.stop().await;

    // The previous server's writer thread may hold the store file briefly.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let server = loop {
        let dir = data.path().to_path_buf();
        let attempt = tokio::spawn(async move {
            testing::start_with(rkcm_apiserver::Config {
                data_dir: Some(dir),
                ..Default::default()
            })
            .await
        })
        .await;
        match attempt {
            Ok(server) => break server,
            Err(_) if std::time::Instant::now() < deadline => tokio::task::yield_now().await,
            Err(e) => panic!("server did not restart: {e}"),
        }
    };
    let admin = server.client();
    let (_, basic) = send(
        &admin,
        "GET",
        &path("clusterroles", "system:basic-user"),
        None,
    )
    .await;
    let rules = basic["rules"].to_string();
    assert!(
        rules.contains("configmaps"),
        "the user's rule is kept: {rules}"
    );
    assert!(
        rules.contains("selfsubjectaccessreviews"),
        "the default rule is back: {rules}"
    );
    let (_, discovery) = send(
        &admin,
        "GET",
        &path("clusterrolebindings", "system:discovery"),
        None,
    )
    .await;
    assert_eq!(
        discovery["subjects"],
        json!([{"kind": "User", "name": "someone", "apiGroup": "rbac.authorization.k8s.io"},
               {"kind": "Group", "name": "system:authenticated", "apiGroup": "rbac.authorization.k8s.io"}])
    );
    let (_, monitoring) = send(
        &admin,
        "GET",
        &path("clusterroles", "system:monitoring"),
        None,
    )
    .await;
    assert_eq!(
        monitoring["rules"],
        json!([{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}])
    );
    let (code, edit) = send(&admin, "GET", &path("clusterroles", "edit"), None).await;
    assert_eq!(code, 200);
    assert!(edit["aggregationRule"]["clusterRoleSelectors"].is_array());
}

const AUTHZ: &str = "/apis/authorization.k8s.io/v1";

fn ssar(attributes: Value) -> Value {
    json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "spec": attributes})
}

#[tokio::test]
async fn access_reviews_answer_with_the_authorizers_decision() {
    let (server, _dir) = rbac_server().await;
    let admin = server.client();
    let jane = client(&server, "jane-token").await;
    let can = |c: &kube::Client, verb: &str, resource: &str, ns: &str| {
        let c = c.clone();
        let body = ssar(
            json!({"resourceAttributes": {"verb": verb, "resource": resource, "namespace": ns}}),
        );
        async move {
            let (code, review) = send(
                &c,
                "POST",
                &format!("{AUTHZ}/selfsubjectaccessreviews"),
                Some(body),
            )
            .await;
            assert_eq!(code, 201, "{review}");
            assert_eq!(review["kind"], "SelfSubjectAccessReview");
            review["status"]["allowed"].as_bool().expect("allowed")
        }
    };
    assert!(!can(&jane, "list", "pods", "default").await);
    assert!(can(&admin, "list", "pods", "default").await);
    let rb = binding(
        "RoleBinding",
        Some("default"),
        "jane-pods",
        "ClusterRole",
        "system:aggregate-to-view",
        json!([{"kind": "User", "name": "jane", "apiGroup": "rbac.authorization.k8s.io"}]),
    );
    assert_eq!(
        send(
            &admin,
            "POST",
            &format!("{RBAC}/namespaces/default/rolebindings"),
            Some(rb)
        )
        .await
        .0,
        201
    );
    assert!(can(&jane, "list", "pods", "default").await);
    assert!(!can(&jane, "list", "pods", "kube-system").await);
    assert!(!can(&jane, "create", "pods", "default").await);
    let (_, review) = send(
        &jane,
        "POST",
        &format!("{AUTHZ}/selfsubjectaccessreviews"),
        Some(ssar(
            json!({"nonResourceAttributes": {"verb": "get", "path": "/version"}}),
        )),
    )
    .await;
    assert_eq!(review["status"]["allowed"], true);
    assert!(
        review["status"]["reason"]
            .as_str()
            .is_some_and(|r| r.starts_with("RBAC: allowed by ClusterRoleBinding ")),
        "{review}"
    );
    let (code, e) = send(
        &jane,
        "POST",
        &format!("{AUTHZ}/selfsubjectaccessreviews"),
        Some(ssar(json!({}))),
    )
    .await;
    assert_eq!((code, e["reason"].as_str()), (422, Some("Invalid")));

    // SubjectAccessReview: about someone else; jane may not ask.
    let sar = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {"user": "jane", "resourceAttributes": {"verb": "get", "resource": "pods", "namespace": "default"}}});
    let (code, review) = send(
        &admin,
        "POST",
        &format!("{AUTHZ}/subjectaccessreviews"),
        Some(sar.clone()),
    )
    .await;
    assert_eq!(code, 201);
    assert_eq!(review["status"]["allowed"], true);
    assert_eq!(
        review["status"]["reason"],
        "RBAC: allowed by RoleBinding \"jane-pods/default\" of ClusterRole \"system:aggregate-to-view\" to User \"jane\""
    );
    let (code, e) = send(
        &jane,
        "POST",
        &format!("{AUTHZ}/subjectaccessreviews"),
        Some(sar),
    )
    .await;
    assert_eq!(code, 403);
    assert_eq!(e["message"], "subjectaccessreviews.authorization.k8s.io is forbidden: User \"jane\" cannot create resource \"subjectaccessreviews\" in API group \"authorization.k8s.io\" at the cluster scope");
    let (code, e) = send(
        &admin,
        "POST",
        &format!("{AUTHZ}/subjectaccessreviews"),
        Some(json!({"spec": {"resourceAttributes": {"verb": "get"}}})),
    )
    .await;
    assert_eq!(code, 422);
    assert_eq!(e["message"], "SubjectAccessReview.authorization.k8s.io \"\" is invalid: spec.user: Invalid value: \"\": at least one of user or group must be specified");

    // LocalSubjectAccessReview: the namespace of the path.
    let lsar = |ns: &str| {
        json!({"apiVersion": "authorization.k8s.io/v1", "kind": "LocalSubjectAccessReview",
        "spec": {"user": "jane", "resourceAttributes": {"verb": "get", "resource": "pods", "namespace": ns}}})
    };
    let (code, review) = send(
        &admin,
        "POST",
        &format!("{AUTHZ}/namespaces/default/localsubjectaccessreviews"),
        Some(lsar("default")),
    )
    .await;
    assert_eq!(
        (code, review["status"]["allowed"].as_bool()),
        (201, Some(true)),
        "{review}"
    );
    assert_eq!(review["metadata"]["namespace"], "default");
    let (code, e) = send(
        &admin,
        "POST",
        &format!("{AUTHZ}/namespaces/default/localsubjectaccessreviews"),
        Some(lsar("kube-system")),
    )
    .await;
    assert_eq!(code, 422, "{e}");
    assert!(e["message"]
        .as_str()
        .is_some_and(|m| m.contains("must match metadata.namespace")));

    // SelfSubjectRulesReview: what `kubectl auth can-i --list` shows.
    let ssrr = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview", "spec": {"namespace": "default"}});
    let (code, review) = send(
        &jane,
        "POST",
        &format!("{AUTHZ}/selfsubjectrulesreviews"),
        Some(ssrr),
    )
    .await;
    assert_eq!(code, 201);
    assert_eq!(review["status"]["incomplete"], false);
    let rules = review["status"]["resourceRules"].to_string();
    assert!(
        rules.contains("selfsubjectaccessreviews") && rules.contains("\"pods\""),
        "{rules}"
    );
    assert!(review["status"]["nonResourceRules"]
        .to_string()
        .contains("/healthz"));
    let (code, e) = send(&jane, "POST", &format!("{AUTHZ}/selfsubjectrulesreviews"),
        Some(json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview", "spec": {}}))).await;
    assert_eq!(
        (code, e["message"].as_str()),
        (400, Some("no namespace on request"))
    );
}

#[tokio::test]
async fn impersonation_needs_the_impersonate_verb_on_each_part() {
    let (server, _dir) = rbac_server().await;
    let admin = server.client();
    let jane = client(&server, "jane-token").await;
    let as_jane = [("Impersonate-User", "jane")];
    // The admin may impersonate anyone, and then has only jane's rights.
    let (code, e) = send_with(
        &admin,
        "GET",
        "/api/v1/namespaces/default/pods",
        None,
        &as_jane,
    )
    .await;
    assert_eq!(code, 403);
    assert_eq!(e["message"], "pods is forbidden: User \"jane\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\"");
    let (code, me) = send_with(
        &admin,
        "POST",
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        Some(json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})),
        &[("Impersonate-User", "jane"), ("Impersonate-Group", "devs")],
    )
    .await;
    assert_eq!(code, 201);
    assert_eq!(
        me["status"]["userInfo"],
        json!({"username": "jane", "groups": ["devs", "system:authenticated"]})
    );
    // jane may not impersonate bob...
    let (code, e) = send_with(
        &jane,
        "GET",
        "/api/v1/namespaces/default/pods",
        None,
        &[("Impersonate-User", "bob")],
    )
    .await;
    assert_eq!(code, 403);
    assert_eq!(e["message"], "users \"bob\" is forbidden: User \"jane\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope");
    // ...until a role lets her impersonate users named bob.
    let role = cluster_role(
        "impersonate-bob",
        json!([{"apiGroups": [""], "resources": ["users"], "resourceNames": ["bob"], "verbs": ["impersonate"]}]),
    );
    assert_eq!(
        send(&admin, "POST", &format!("{RBAC}/clusterroles"), Some(role))
            .await
            .0,
        201
    );
    let crb = binding(
        "ClusterRoleBinding",
        None,
        "jane-as-bob",
        "ClusterRole",
        "impersonate-bob",
        json!([{"kind": "User", "name": "jane", "apiGroup": "rbac.authorization.k8s.io"}]),
    );
    assert_eq!(
        send(
            &admin,
            "POST",
            &format!("{RBAC}/clusterrolebindings"),
            Some(crb)
        )
        .await
        .0,
        201
    );
    let (code, e) = send_with(
        &jane,
        "GET",
        "/api/v1/namespaces/default/pods",
        None,
        &[("Impersonate-User", "bob")],
    )
    .await;
    assert_eq!(code, 403);
    assert!(
        e["message"]
            .as_str()
            .is_some_and(|m| m.contains("User \"bob\" cannot list")),
        "{e}"
    );
    let (code, _) = send_with(
        &jane,
        "GET",
        "/api/v1/namespaces/default/pods",
        None,
        &[
            ("Impersonate-User", "bob"),
            ("Impersonate-Group", "system:masters"),
        ],
    )
    .await;
    assert_eq!(code, 403, "groups need their own permission");
}

#[tokio::test]
async fn roles_and_bindings_granting_more_than_their_author_holds_are_refused() {
    let (server, _dir) = rbac_server().await;
    let admin = server.client();
    let jane = client(&server, "jane-token").await;
    // jane may manage roles and bindings in default (admin's aggregated rules, here directly).
    let rb = binding(
        "RoleBinding",
        Some("default"),
        "jane-admin",
        "ClusterRole",
        "system:aggregate-to-admin",
        json!([{"kind": "User", "name": "jane", "apiGroup": "rbac.authorization.k8s.io"}]),
    );
    assert_eq!(
        send(
            &admin,
            "POST",
            &format!("{RBAC}/namespaces/default/rolebindings"),
            Some(rb)
        )
        .await
        .0,
        201
    );
    let role = |name: &str, rules: Value| {
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": name, "namespace": "default"}, "rules": rules})
    };
    let secrets = json!([{"apiGroups": [""], "resources": ["secrets"], "verbs": ["*"]}]);
    let (code, e) = send(
        &jane,
        "POST",
        &format!("{RBAC}/namespaces/default/roles"),
        Some(role("secrets", secrets.clone())),
    )
    .await;
    assert_eq!(code, 403);
    assert_eq!(
        e["message"],
        "roles.rbac.authorization.k8s.io \"secrets\" is forbidden: user \"jane\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"*\"]}"
    );
    // What she holds she may grant; growing it later by PUT or PATCH is refused as well.
    let held = json!([{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"], "verbs": ["get"]}]);
    assert_eq!(
        send(
            &jane,
            "POST",
            &format!("{RBAC}/namespaces/default/roles"),
            Some(role("reader", held))
        )
        .await
        .0,
        201
    );
    let (code, _) = send(
        &jane,
        "PUT",
        &format!("{RBAC}/namespaces/default/roles/reader"),
        Some(role("reader", secrets.clone())),
    )
    .await;
    assert_eq!(code, 403);
    let req = http::Request::patch(format!("{RBAC}/namespaces/default/roles/reader"))
        .header("content-type", "application/merge-patch+json")
        .body(json!({"rules": secrets}).to_string().into_bytes())
        .expect("request");
    let resp = jane.send(req.map(Into::into)).await.expect("answered");
    assert_eq!(resp.status().as_u16(), 403);
    // Binding a role she does not hold is refused; the admin's role is created by the admin.
    let (code, _) = send(
        &admin,
        "POST",
        &format!("{RBAC}/namespaces/default/roles"),
        Some(role(
            "secrets",
            json!([{"apiGroups": [""], "resources": ["secrets"], "verbs": ["*"]}]),
        )),
    )
    .await;
    assert_eq!(code, 201);
    let bind = binding(
        "RoleBinding",
        Some("default"),
        "bob-secrets",
        "Role",
        "secrets",
        json!([{"kind": "User", "name": "bob", "apiGroup": "rbac.authorization.k8s.io"}]),
    );
    let (code, e) = send(
        &jane,
        "POST",
        &format!("{RBAC}/namespaces/default/rolebindings"),
        Some(bind.clone()),
    )
    .await;
    assert_eq!(code, 403, "{e}");
    assert!(e["message"].as_str().is_some_and(|m| m.starts_with(
        "rolebindings.rbac.authorization.k8s.io \"bob-secrets\" is forbidden: user \"jane\""
    )));
    // ...unless she may `bind` it.
    let binder = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "binder", "namespace": "default"},
        "rules": [{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"], "resourceNames": ["secrets"], "verbs": ["bind"]}]});
    assert_eq!(
        send(
            &admin,
            "POST",
            &format!("{RBAC}/namespaces/default/roles"),
            Some(binder)
        )
        .await
        .0,
        201
    );
    let rb = binding(
        "RoleBinding",
        Some("default"),
        "jane-binder",
        "Role",
        "binder",
        json!([{"kind": "User", "name": "jane", "apiGroup": "rbac.authorization.k8s.io"}]),
    );
    assert_eq!(
        send(
            &admin,
            "POST",
            &format!("{RBAC}/namespaces/default/rolebindings"),
            Some(rb)
        )
        .await
        .0,
        201
    );
    assert_eq!(
        send(
            &jane,
            "POST",
            &format!("{RBAC}/namespaces/default/rolebindings"),
            Some(bind)
        )
        .await
        .0,
        201
    );
}
