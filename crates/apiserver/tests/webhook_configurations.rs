//! Admission webhook configurations on the served API: kube's v1 defaults and validation.

use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, PostParams};
use serde_json::{json, Value};

fn api_err(e: kube::Error) -> kube::core::Status {
    match e {
        kube::Error::Api(s) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

fn configurations(client: kube::Client, kind: &str) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk(&GroupVersionKind::gvk(
        "admissionregistration.k8s.io",
        "v1",
        kind,
    ));
    Api::all_with(client, &ar)
}

fn configuration(kind: &str, name: &str, webhook: Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
        "metadata": {"name": name},
        "webhooks": [webhook],
    }))
    .expect("configuration")
}

#[tokio::test]
async fn webhook_configurations_are_defaulted_and_validated() {
    let server = rkcm_apiserver::testing::start().await;
    let validating = configurations(server.client(), "ValidatingWebhookConfiguration");
    let webhook = json!({
        "name": "check.example.com",
        "clientConfig": {"service": {"namespace": "default", "name": "checker"}},
        "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}],
        "admissionReviewVersions": ["v1"],
    });

    let e = api_err(
        validating
            .create(
                &PostParams::default(),
                &configuration("ValidatingWebhookConfiguration", "x", webhook.clone()),
            )
            .await
            .expect_err("no sideEffects"),
    );
    assert_eq!((e.code, e.reason.as_str()), (422, "Invalid"), "{e:?}");
    assert_eq!(
        e.message,
        "ValidatingWebhookConfiguration.admissionregistration.k8s.io \"x\" is invalid: webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun"
    );

    let mut complete = webhook.clone();
    complete["sideEffects"] = json!("None");
    let created = validating
        .create(
            &PostParams::default(),
            &configuration("ValidatingWebhookConfiguration", "x", complete.clone()),
        )
        .await
        .expect("create");
    assert_eq!(created.metadata.generation, Some(1));
    let hook = &created.data["webhooks"][0];
    assert_eq!(hook["failurePolicy"], "Fail");
    assert_eq!(hook["matchPolicy"], "Equivalent");
    assert_eq!(hook["namespaceSelector"], json!({}));
    assert_eq!(hook["objectSelector"], json!({}));
    assert_eq!(hook["timeoutSeconds"], 10);
    assert_eq!(hook["rules"][0]["scope"], "*");
    assert_eq!(hook["clientConfig"]["service"]["port"], 443);
    assert_eq!(hook.get("reinvocationPolicy"), None);

    let mutating = configurations(server.client(), "MutatingWebhookConfiguration");
    let created = mutating
        .create(
            &PostParams::default(),
            &configuration("MutatingWebhookConfiguration", "m", complete.clone()),
        )
        .await
        .expect("create mutating");
    assert_eq!(created.data["webhooks"][0]["reinvocationPolicy"], "Never");

    let mut slow = complete;
    slow["timeoutSeconds"] = json!(31);
    let e = api_err(
        mutating
            .create(
                &PostParams::default(),
                &configuration("MutatingWebhookConfiguration", "slow", slow),
            )
            .await
            .expect_err("timeout out of range"),
    );
    assert_eq!(
        e.message,
        "MutatingWebhookConfiguration.admissionregistration.k8s.io \"slow\" is invalid: webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds"
    );
}
