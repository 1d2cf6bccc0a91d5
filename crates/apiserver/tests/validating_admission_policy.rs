//! ValidatingAdmissionPolicies through the served API: a policy with a ConfigMap of params,
//! bound to deny, to warn, and with either failure policy.

use k8s_openapi::api::admissionregistration::v1::{
    ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, PostParams};
use rkcm_apiserver::testing;
use serde_json::{json, Value};

fn api_err(e: kube::Error) -> kube::core::Status {
    match e {
        kube::Error::Api(s) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

fn deployment(name: &str, replicas: i32) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    })
}

fn policy(name: &str, failure_policy: &str, expression: &str) -> ValidatingAdmissionPolicy {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "failurePolicy": failure_policy,
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "matchConstraints": {"resourceRules": [{
                "apiGroups": ["apps"], "apiVersions": ["v1"],
                "operations": ["CREATE", "UPDATE"], "resources": ["deployments"],
            }]},
            "validations": [{
                "expression": expression,
                "messageExpression": "'replicas must be at most ' + params.data.maxReplicas",
                "reason": "Invalid",
            }],
        },
    }))
    .expect("policy")
}

fn binding(name: &str, policy: &str, actions: &[&str]) -> ValidatingAdmissionPolicyBinding {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "policyName": policy,
            "paramRef": {"name": "replica-limits", "namespace": "default", "parameterNotFoundAction": "Deny"},
            "validationActions": actions,
        },
    }))
    .expect("binding")
}

async fn post(server: &testing::TestServer, body: &Value) -> http::Response<kube::client::Body> {
    let request = http::Request::post("/apis/apps/v1/namespaces/default/deployments")
        .header("content-type", "application/json")
        .body(kube::client::Body::from(
            serde_json::to_vec(body).expect("body"),
        ))
        .expect("request");
    server.client().send(request).await.expect("sent")
}

fn warnings(response: &http::Response<kube::client::Body>) -> Vec<String> {
    response
        .headers()
        .get_all("warning")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .map(str::to_string)
        .collect()
}

#[tokio::test]
async fn a_policy_with_params_denies_warns_and_follows_its_failure_policy() {
    let server = testing::start().await;
    let deployments: Api<Deployment> = Api::namespaced(server.client(), "default");
    let policies: Api<ValidatingAdmissionPolicy> = Api::all(server.client());
    let bindings: Api<ValidatingAdmissionPolicyBinding> = Api::all(server.client());
    let pp = PostParams::default();
    let create = |name: &str, replicas: i32| {
        let d: Deployment = serde_json::from_value(deployment(name, replicas)).expect("deployment");
        let deployments = deployments.clone();
        async move { deployments.create(&PostParams::default(), &d).await }
    };

    policies
        .create(
            &pp,
            &policy(
                "max-replicas",
                "Fail",
                "object.spec.replicas <= int(params.data.maxReplicas)",
            ),
        )
        .await
        .expect("policy stored");
    bindings
        .create(
            &pp,
            &binding("max-replicas-deny", "max-replicas", &["Deny"]),
        )
        .await
        .expect("binding stored");

    // The params do not exist yet: `parameterNotFoundAction: Deny`.
    let e = api_err(create("early", 1).await.expect_err("no params"));
    assert_eq!(e.code, 422);
    assert_eq!(e.reason, "Invalid");
    assert_eq!(
        e.message,
        "deployments.apps \"early\" is forbidden: ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas-deny' denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"
    );

    let configmaps: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    configmaps
        .create(
            &pp,
            &serde_json::from_value(json!({
                "metadata": {"name": "replica-limits"},
                "data": {"maxReplicas": "5"},
            }))
            .expect("configmap"),
        )
        .await
        .expect("params stored");

    create("small", 3).await.expect("within the limit");
    let e = api_err(create("big", 10).await.expect_err("too many replicas"));
    assert_eq!(e.code, 422);
    assert_eq!(e.reason, "Invalid");
    assert_eq!(
        e.message,
        "deployments.apps \"big\" is forbidden: ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas-deny' denied request: replicas must be at most 5"
    );
    assert!(deployments.get_opt("big").await.expect("get").is_none());

    // Warn only: the write succeeds with kube's warning.
    bindings
        .delete("max-replicas-deny", &DeleteParams::default())
        .await
        .expect("deleted");
    bindings
        .create(
            &pp,
            &binding("max-replicas-warn", "max-replicas", &["Warn"]),
        )
        .await
        .expect("binding stored");
    let response = post(&server, &deployment("big", 10)).await;
    assert_eq!(response.status(), 201);
    assert_eq!(
        warnings(&response),
        ["299 - \"Validation failed for ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas-warn': replicas must be at most 5\""]
    );

    // An expression that cannot be evaluated: denied under Fail, skipped under Ignore.
    policies
        .create(&pp, &policy("broken-fail", "Fail", "object.spec.nope > 1"))
        .await
        .expect("policy stored");
    bindings
        .create(&pp, &binding("broken-fail", "broken-fail", &["Deny"]))
        .await
        .expect("binding stored");
    let e = api_err(create("broken", 1).await.expect_err("evaluation error"));
    assert_eq!(e.code, 422);
    assert!(
        e.message.starts_with(
            "deployments.apps \"broken\" is forbidden: ValidatingAdmissionPolicy 'broken-fail' with binding 'broken-fail' denied request: expression 'object.spec.nope > 1' resulted in error: "
        ),
        "{}",
        e.message
    );
    policies
        .delete("broken-fail", &DeleteParams::default())
        .await
        .expect("deleted");
    policies
        .create(
            &pp,
            &policy("broken-ignore", "Ignore", "object.spec.nope > 1"),
        )
        .await
        .expect("policy stored");
    bindings
        .create(&pp, &binding("broken-ignore", "broken-ignore", &["Deny"]))
        .await
        .expect("binding stored");
    create("broken", 1).await.expect("the error is ignored");

    // Policies and bindings are never checked by policies, so none can keep itself in place.
    let deny_all: ValidatingAdmissionPolicy = serde_json::from_value(json!({
        "metadata": {"name": "deny-all"},
        "spec": {
            "matchConstraints": {"resourceRules": [{
                "apiGroups": ["*"], "apiVersions": ["*"], "operations": ["*"], "resources": ["*"],
            }]},
            "validations": [{"expression": "false", "message": "nothing goes"}],
        },
    }))
    .expect("policy");
    policies
        .create(&pp, &deny_all)
        .await
        .expect("policy stored");
    let deny_all_binding: ValidatingAdmissionPolicyBinding = serde_json::from_value(json!({
        "metadata": {"name": "deny-all"},
        "spec": {"policyName": "deny-all", "validationActions": ["Deny"]},
    }))
    .expect("binding");
    bindings
        .create(&pp, &deny_all_binding)
        .await
        .expect("binding stored");
    let e = api_err(create("any", 1).await.expect_err("denied"));
    assert_eq!(
        e.message,
        "deployments.apps \"any\" is forbidden: ValidatingAdmissionPolicy 'deny-all' with binding 'deny-all' denied request: nothing goes"
    );
    bindings
        .delete("broken-ignore", &DeleteParams::default())
        .await
        .expect("bindings are exempt");
    bindings
        .delete("deny-all", &DeleteParams::default())
        .await
        .expect("bindings are exempt");
    create("any", 1).await.expect("no binding left");
}

#[tokio::test]
async fn expressions_ask_the_authorizer_about_the_user_and_service_accounts() {
    use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
    let server = testing::start_with(rkcm_apiserver::Config {
        authorization_modes: vec![rkcm_apiserver::auth::authorization::Mode::Rbac],
        ..testing::config()
    })
    .await;
    let pp = PostParams::default();
    let policy: ValidatingAdmissionPolicy = serde_json::from_value(json!({
        "metadata": {"name": "authz"},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{
                "apiGroups": ["apps"], "apiVersions": ["v1"],
                "operations": ["CREATE"], "resources": ["deployments"],
            }]},
            "validations": [
                {"expression": "authorizer.requestResource.check('create').allowed() && authorizer.path('/healthz').check('get').errored() == false"},
                {"expression": "!authorizer.serviceAccount('default', 'deployer').group('apps').resource('deployments').namespace('default').check('create').allowed()",
                 "message": "deployer may create deployments"},
            ],
        },
    }))
    .expect("policy");
    Api::<ValidatingAdmissionPolicy>::all(server.client())
        .create(&pp, &policy)
        .await
        .expect("policy stored");
    let binding: ValidatingAdmissionPolicyBinding = serde_json::from_value(json!({
        "metadata": {"name": "authz"},
        "spec": {"policyName": "authz", "validationActions": ["Deny"]},
    }))
    .expect("binding");
    Api::<ValidatingAdmissionPolicyBinding>::all(server.client())
        .create(&pp, &binding)
        .await
        .expect("binding stored");
    let deployments: Api<Deployment> = Api::namespaced(server.client(), "default");
    let d = |name: &str| -> Deployment {
        serde_json::from_value(deployment(name, 1)).expect("deployment")
    };
    deployments
        .create(&pp, &d("before"))
        .await
        .expect("the requester may, the deployer may not");

    let role: ClusterRole = serde_json::from_value(json!({
        "metadata": {"name": "deployer"},
        "rules": [{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["create"]}],
    }))
    .expect("role");
    Api::<ClusterRole>::all(server.client())
        .create(&pp, &role)
        .await
        .expect("role stored");
    let grant: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "deployer"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "deployer"},
        "subjects": [{"kind": "ServiceAccount", "name": "deployer", "namespace": "default"}],
    }))
    .expect("binding");
    Api::<ClusterRoleBinding>::all(server.client())
        .create(&pp, &grant)
        .await
        .expect("grant stored");
    let e = api_err(
        deployments
            .create(&pp, &d("after"))
            .await
            .expect_err("the deployer may now"),
    );
    assert_eq!(e.code, 422);
    assert_eq!(
        e.message,
        "deployments.apps \"after\" is forbidden: ValidatingAdmissionPolicy 'authz' with binding 'authz' denied request: deployer may create deployments"
    );
}
