//! `greeting-operator`: runs the example operator against the cluster of the current kubeconfig
//! (`rkcm up`'s, for instance), after applying its CustomResourceDefinition.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams};
use kube::ResourceExt;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    let client = kube::Client::try_default().await?;
    let crd = greeting_operator::crd();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.patch(
        &crd.name_any(),
        &PatchParams::apply(greeting_operator::MANAGER).force(),
        &Patch::Apply(&crd),
    )
    .await?;
    tracing::info!(crd = %crd.name_any(), "CustomResourceDefinition applied; reconciling Greetings");
    // The operator stops on Ctrl-C (its shutdown future must be `Sync`: a channel's receiver).
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        let _ = tokio::signal::ctrl_c().await;
        let _ = stop.send(());
    });
    greeting_operator::run(client, async move {
        let _ = stopped.await;
    })
    .await;
    Ok(())
}
