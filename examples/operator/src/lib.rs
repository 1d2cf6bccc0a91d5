//! An example kube-rs operator: `Greeting` objects become ConfigMaps.
//!
//! For each `Greeting` (group `example.rkcm.dev`, version `v1`) the reconciler server-side
//! applies a ConfigMap named after it, owned by it (so the garbage collector deletes it with
//! its Greeting), holding the message and the greeting's entries; then it applies the
//! Greeting's `.status` on the `/status` subresource. Both writes are `Patch::Apply` with the
//! field manager [`MANAGER`], so the operator owns exactly the fields it sets and other writers
//! can add theirs (the entries are a map list keyed by `name`: each writer owns its own items).
//!
//! Its admission webhooks ([`webhook`]) default an empty message and refuse an entry named
//! `message`.
//!
//! `tests/operator.rs` runs it against `rkcm::testenv`, an API server (and controllers)
//! started inside the test.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use kube::{Client, CustomResource, CustomResourceExt, Resource, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub mod webhook;

/// The field manager of the operator's writes.
pub const MANAGER: &str = "greeting-operator";

/// What a `Greeting` asks for.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "example.rkcm.dev",
    version = "v1",
    kind = "Greeting",
    namespaced,
    status = "GreetingStatus",
    shortname = "gr",
    printcolumn = r#"{"name":"Message","type":"string","jsonPath":".spec.message"}"#,
    printcolumn = r#"{"name":"ConfigMap","type":"string","jsonPath":".status.configMap"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct GreetingSpec {
    /// The message the ConfigMap carries under `message` (the mutating webhook defaults it).
    #[serde(default)]
    pub message: String,
    /// More keys of the ConfigMap; several writers may each apply their own entries.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub entries: Vec<Entry>,
}

/// One key of the ConfigMap.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, JsonSchema)]
pub struct Entry {
    /// The key.
    pub name: String,
    /// Its value.
    pub value: String,
}

/// What the operator observed and made.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GreetingStatus {
    /// The ConfigMap made for this Greeting.
    pub config_map: String,
    /// The `metadata.generation` the ConfigMap reflects.
    pub observed_generation: i64,
}

/// Why a reconcile failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An object without the name or namespace the API server always sets.
    #[error("Greeting has no {0}")]
    Incomplete(&'static str),
    /// The API server refused a write.
    #[error("applying {what} of Greeting {name}")]
    Apply {
        /// What was applied.
        what: &'static str,
        /// The Greeting.
        name: String,
        /// The API server's answer.
        #[source]
        source: kube::Error,
    },
}

/// The operator's shared state.
pub struct Context {
    /// A client of the cluster.
    pub client: Client,
}

/// The CustomResourceDefinition of `Greeting`, as `kubectl apply` or a test installs it.
pub fn crd(
) -> k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition {
    Greeting::crd()
}

/// The ConfigMap a Greeting is made into: its entries and `message`, owned by the Greeting.
pub fn config_map(greeting: &Greeting) -> Result<ConfigMap, Error> {
    let owner = greeting
        .controller_owner_ref(&())
        .ok_or(Error::Incomplete("metadata.uid"))?;
    let mut data: BTreeMap<String, String> = greeting
        .spec
        .entries
        .iter()
        .map(|e| (e.name.clone(), e.value.clone()))
        .collect();
    data.insert("message".into(), greeting.spec.message.clone());
    Ok(ConfigMap {
        metadata: ObjectMeta {
            name: Some(greeting.name_any()),
            namespace: greeting.namespace(),
            owner_references: Some(vec![owner]),
            labels: Some(BTreeMap::from([(
                "app.kubernetes.io/managed-by".to_string(),
                MANAGER.to_string(),
            )])),
            ..ObjectMeta::default()
        },
        data: Some(data),
        ..ConfigMap::default()
    })
}

/// Makes the world match one Greeting: applies its ConfigMap, then its status.
pub async fn reconcile(greeting: Arc<Greeting>, ctx: Arc<Context>) -> Result<Action, Error> {
    let namespace = greeting
        .namespace()
        .ok_or(Error::Incomplete("metadata.namespace"))?;
    let name = greeting.name_any();
    let params = PatchParams::apply(MANAGER).force();
    let config_maps: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &namespace);
    config_maps
        .patch(&name, &params, &Patch::Apply(config_map(&greeting)?))
        .await
        .map_err(|source| Error::Apply {
            what: "the ConfigMap",
            name: name.clone(),
            source,
        })?;
    let status = serde_json::json!({
        "apiVersion": Greeting::api_version(&()),
        "kind": Greeting::kind(&()),
        "status": GreetingStatus {
            config_map: name.clone(),
            observed_generation: greeting.metadata.generation.unwrap_or_default(),
        },
    });
    let greetings: Api<Greeting> = Api::namespaced(ctx.client.clone(), &namespace);
    greetings
        .patch_status(&name, &params, &Patch::Apply(status))
        .await
        .map_err(|source| Error::Apply {
            what: "the status",
            name,
            source,
        })?;
    Ok(Action::await_change())
}

/// Retries a failed reconcile after a short pause.
pub fn error_policy(_: Arc<Greeting>, error: &Error, _: Arc<Context>) -> Action {
    tracing::warn!(error = %error, "reconcile failed");
    Action::requeue(Duration::from_secs(1))
}

/// Runs the operator until `shutdown` completes: Greetings in every namespace and the
/// ConfigMaps they own.
pub async fn run(
    client: Client,
    shutdown: impl std::future::Future<Output = ()> + Send + Sync + 'static,
) {
    let greetings: Api<Greeting> = Api::all(client.clone());
    let config_maps: Api<ConfigMap> = Api::all(client.clone());
    Controller::new(greetings, watcher::Config::default())
        .owns(config_maps, watcher::Config::default())
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy, Arc::new(Context { client }))
        .for_each(|result| async move {
            match result {
                Ok((object, _)) => tracing::debug!(greeting = %object.name, "reconciled"),
                Err(err) => tracing::debug!(error = %err, "reconcile error"),
            }
        })
        .await;
}
