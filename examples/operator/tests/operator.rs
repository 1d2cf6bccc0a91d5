//! The example operator against an API server (and controllers) started inside the test.

use std::time::Duration;

use greeting_operator::webhook::{self, DEFAULT_MESSAGE, VALIDATING_WEBHOOK};
use greeting_operator::{Greeting, MANAGER};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::{Client, ResourceExt};
use rkcm::testenv::{eventually, TestEnv, WebhookServing};
use serde_json::json;

/// Ample for a controller to act on a loaded 2-core machine; a timeout means it did not.
const TIMEOUT: Duration = Duration::from_secs(60);

/// Starts the operator on `client`; it stops when the returned sender is dropped.
fn start_operator(client: Client) -> tokio::sync::oneshot::Sender<()> {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(greeting_operator::run(client, async move {
        let _ = stopped.await;
    }));
    stop
}

fn greeting(name: &str, message: &str, entries: serde_json::Value) -> serde_json::Value {
    json!({"apiVersion": "example.rkcm.dev/v1", "kind": "Greeting",
        "metadata": {"name": name}, "spec": {"message": message, "entries": entries}})
}

async fn apply(
    api: &Api<Greeting>,
    manager: &str,
    body: serde_json::Value,
    force: bool,
) -> kube::Result<Greeting> {
    let mut params = PatchParams::apply(manager);
    params.force = force;
    let name = body["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    api.patch(&name, &params, &Patch::Apply(body)).await
}

#[tokio::test]
async fn a_greeting_gets_its_config_map_and_status_and_follows_spec_changes() {
    let env = TestEnv::start().await.expect("test environment starts");
    env.install_crd(greeting_operator::crd())
        .await
        .expect("CRD established");
    let _operator = start_operator(env.client());
    let greetings: Api<Greeting> = Api::namespaced(env.client(), "default");
    let config_maps: Api<ConfigMap> = Api::namespaced(env.client(), "default");

    let created = apply(
        &greetings,
        "user",
        greeting("hello", "hi", json!([{"name": "lang", "value": "en"}])),
        false,
    )
    .await
    .expect("Greeting applied");
    let cm = eventually("the ConfigMap of Greeting hello", TIMEOUT, || async {
        config_maps.get_opt("hello").await.ok().flatten()
    })
    .await
    .expect("operator makes the ConfigMap");
    let data = cm.data.clone().unwrap_or_default();
    assert_eq!(data.get("message").map(String::as_str), Some("hi"));
    assert_eq!(data.get("lang").map(String::as_str), Some("en"));
    let owner = &cm.owner_references()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str(), owner.controller),
        ("Greeting", "hello", Some(true))
    );
    assert_eq!(owner.uid, created.uid().unwrap_or_default());
    // The ConfigMap's fields are the operator's, by apply.
    let managers: Vec<(String, String)> = cm
        .managed_fields()
        .iter()
        .map(|m| {
            (
                m.manager.clone().unwrap_or_default(),
                m.operation.clone().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(managers, vec![(MANAGER.to_string(), "Apply".to_string())]);

    let status = eventually("the status of Greeting hello", TIMEOUT, || async {
        let g = greetings.get("hello").await.ok()?;
        g.status.filter(|s| s.observed_generation == 1)
    })
    .await
    .expect("operator writes the status");
    assert_eq!(status.config_map, "hello");

    // A new message reaches the ConfigMap, and the status reports the new generation.
    apply(
        &greetings,
        "user",
        greeting("hello", "bonjour", json!([{"name": "lang", "value": "fr"}])),
        false,
    )
    .await
    .expect("Greeting applied again");
    eventually("the ConfigMap to say bonjour in fr", TIMEOUT, || async {
        let cm = config_maps.get("hello").await.ok()?;
        let data = cm.data?;
        (data.get("message")? == "bonjour" && data.get("lang")? == "fr").then_some(())
    })
    .await
    .expect("operator updates the ConfigMap");
    eventually("observedGeneration 2", TIMEOUT, || async {
        let g = greetings.get("hello").await.ok()?;
        g.status.filter(|s| s.observed_generation == 2)
    })
    .await
    .expect("operator updates the status");
    env.stop().await;
}

#[tokio::test]
async fn two_managers_own_their_own_entries_and_conflict_on_a_shared_one() {
    let env = TestEnv::start().await.expect("test environment starts");
    env.install_crd(greeting_operator::crd())
        .await
        .expect("CRD established");
    let greetings: Api<Greeting> = Api::namespaced(env.client(), "default");

    apply(
        &greetings,
        "alice",
        greeting("shared", "hi", json!([{"name": "a", "value": "1"}])),
        false,
    )
    .await
    .expect("alice applies");
    // `entries` is a map list keyed by name: bob's item merges next to alice's.
    let both = apply(
        &greetings,
        "bob",
        json!({"apiVersion": "example.rkcm.dev/v1", "kind": "Greeting", "metadata": {"name": "shared"},
            "spec": {"entries": [{"name": "b", "value": "2"}]}}),
        false,
    )
    .await
    .expect("bob adds his own entry without conflict");
    let names: Vec<&str> = both.spec.entries.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["a", "b"]);

    // Bob changing alice's item conflicts on exactly that field, with kube's message.
    let takeover = json!({"apiVersion": "example.rkcm.dev/v1", "kind": "Greeting", "metadata": {"name": "shared"},
        "spec": {"entries": [{"name": "a", "value": "changed"}, {"name": "b", "value": "2"}]}});
    let err = apply(&greetings, "bob", takeover.clone(), false)
        .await
        .expect_err("a conflict");
    let kube::Error::Api(status) = err else {
        panic!("expected an API error, got {err:?}");
    };
    assert_eq!(status.code, 409);
    assert_eq!(
        status.message,
        "Apply failed with 1 conflict: conflict with \"alice\": .spec.entries[name=\"a\"].value"
    );

    // With force bob takes the field; alice keeps the rest of her item.
    let forced = apply(&greetings, "bob", takeover, true)
        .await
        .expect("force takes the field");
    assert_eq!(forced.spec.entries[0].value, "changed");
    assert_eq!(forced.spec.message, "hi");
    env.stop().await;
}

#[tokio::test]
async fn deleting_a_greeting_deletes_its_config_map_through_the_garbage_collector() {
    let env = TestEnv::builder()
        .controllers(true)
        .nodes(1)
        .start()
        .await
        .expect("test environment with controllers starts");
    env.install_crd(greeting_operator::crd())
        .await
        .expect("CRD established");
    let _operator = start_operator(env.client());
    let greetings: Api<Greeting> = Api::namespaced(env.client(), "default");
    let config_maps: Api<ConfigMap> = Api::namespaced(env.client(), "default");

    apply(
        &greetings,
        "user",
        greeting("bye", "ciao", json!([])),
        false,
    )
    .await
    .expect("Greeting applied");
    eventually("the ConfigMap of Greeting bye", TIMEOUT, || async {
        config_maps.get_opt("bye").await.ok().flatten()
    })
    .await
    .expect("operator makes the ConfigMap");

    greetings
        .delete("bye", &DeleteParams::default())
        .await
        .expect("Greeting deleted");
    eventually(
        "the garbage collector to delete ConfigMap bye",
        TIMEOUT,
        || async { matches!(config_maps.get_opt("bye").await, Ok(None)).then_some(()) },
    )
    .await
    .expect("the owned ConfigMap is collected");
    env.stop().await;
}

/// Starts the webhook server in the test and installs both configurations, pointed at it.
async fn install_webhooks(env: &TestEnv) {
    let serving = WebhookServing::bind().await.expect("serving certificate");
    let tls = serving.server_config().expect("TLS configuration");
    let (listener, endpoint) = serving.into_parts();
    tokio::spawn(webhook::serve(listener, tls));
    // A valid Greeting: both webhooks are called for it and admit it.
    let probe: Greeting = serde_json::from_value(json!({"apiVersion": "example.rkcm.dev/v1",
        "kind": "Greeting", "metadata": {"name": "probe", "namespace": "default"},
        "spec": {"message": "hi"}}))
    .expect("probe");
    env.webhooks(&endpoint)
        .mutating(webhook::mutating_webhook_configuration())
        .validating(webhook::validating_webhook_configuration())
        .install(&probe)
        .await
        .expect("webhooks answer");
}

#[tokio::test]
async fn the_webhooks_default_the_message_and_deny_a_reserved_entry() {
    let env = TestEnv::start().await.expect("test environment starts");
    env.install_crd(greeting_operator::crd())
        .await
        .expect("CRD established");
    install_webhooks(&env).await;
    let greetings: Api<Greeting> = Api::namespaced(env.client(), "default");

    // The mutating webhook's JSONPatch fills in the message.
    let defaulted = apply(
        &greetings,
        "user",
        json!({"apiVersion": "example.rkcm.dev/v1", "kind": "Greeting",
            "metadata": {"name": "quiet"}, "spec": {"entries": [{"name": "lang", "value": "en"}]}}),
        false,
    )
    .await
    .expect("Greeting without a message admitted");
    assert_eq!(defaulted.spec.message, DEFAULT_MESSAGE);
    let kept = apply(&greetings, "user", greeting("loud", "HI", json!([])), false)
        .await
        .expect("Greeting with a message admitted");
    assert_eq!(kept.spec.message, "HI");
    assert!(
        greetings.get_opt("probe").await.expect("get").is_none(),
        "the probe was a dry run"
    );

    // The validating webhook denies an entry named `message`, on create and on update.
    let reserved = json!([{"name": "lang", "value": "en"}, {"name": "message", "value": "x"}]);
    for name in ["reserved", "loud"] {
        let err = apply(
            &greetings,
            "user",
            greeting(name, "hi", reserved.clone()),
            false,
        )
        .await
        .expect_err("denied");
        let kube::Error::Api(status) = err else {
            panic!("expected an API error, got {err:?}");
        };
        assert_eq!(
            status.message,
            format!(
                "admission webhook \"{VALIDATING_WEBHOOK}\" denied the request: \
                 spec.entries[1].name: \"message\" is reserved for spec.message"
            )
        );
    }
    assert!(greetings.get_opt("reserved").await.expect("get").is_none());
    assert_eq!(
        greetings.get("loud").await.expect("get").spec.entries,
        Vec::new()
    );
    env.stop().await;
}
