//! The ServiceCIDR controller on the in-process API server: finalizer and Ready condition, and a
//! deletion held while an allocated address depends on the range alone.

mod support;

use anyhow::Result;
use k8s_openapi::api::networking::v1::{IPAddress, ServiceCIDR};
use kube::api::{Api, DeleteParams, PostParams};
use rkcm_controllers::registry::{ControllerOptions, SERVICE_CIDR};
use rkcm_controllers::servicecidrs::SERVICE_CIDR_FINALIZER;
use serde_json::json;
use support::{eventually, Cluster};

fn ready(cidr: &ServiceCIDR) -> Option<(String, String, String)> {
    let c = cidr
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "Ready")?;
    Some((c.status.clone(), c.reason.clone(), c.message.clone()))
}

fn has_finalizer(cidr: &ServiceCIDR) -> bool {
    cidr.metadata
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == SERVICE_CIDR_FINALIZER)
}

async fn wait_ready(api: &Api<ServiceCIDR>, name: &str) -> Result<()> {
    eventually(
        &format!("ServiceCIDR {name} Ready with its finalizer"),
        || async {
            let c = api.get(name).await?;
            Ok((has_finalizer(&c)
                && ready(&c)
                    .is_some_and(|r| r.0 == "True" && r.2 == "Kubernetes Service CIDR is ready"))
            .then_some(()))
        },
    )
    .await
}

async fn create_cidr(api: &Api<ServiceCIDR>, name: &str, cidr: &str) -> Result<()> {
    let obj: ServiceCIDR = serde_json::from_value(json!({
        "metadata": {"name": name}, "spec": {"cidrs": [cidr]},
    }))?;
    api.create(&PostParams::default(), &obj).await?;
    Ok(())
}

async fn create_ip(api: &Api<IPAddress>, ip: &str) -> Result<()> {
    let obj: IPAddress = serde_json::from_value(json!({
        "metadata": {"name": ip, "labels": {
            "ipaddress.kubernetes.io/managed-by": "ipallocator.k8s.io",
            "ipaddress.kubernetes.io/ip-family": "IPv4",
        }},
        "spec": {"parentRef": {"group": "", "resource": "services", "namespace": "default", "name": "held"}},
    }))?;
    api.create(&PostParams::default(), &obj).await?;
    Ok(())
}

#[tokio::test]
async fn service_cidrs_get_ready_and_a_held_one_stays_terminating_until_its_addresses_go(
) -> Result<()> {
    let cluster = Cluster::start().await;
    cluster
        .start_registered(&[SERVICE_CIDR], ControllerOptions::default())
        .await?;
    let cidrs: Api<ServiceCIDR> = Api::all(cluster.client.clone());
    let ips: Api<IPAddress> = Api::all(cluster.client.clone());

    // The default ServiceCIDR the server created gets the finalizer and the controller's word.
    wait_ready(&cidrs, "kubernetes").await?;

    // A second range gets Ready.
    create_cidr(&cidrs, "extra", "10.200.0.0/24").await?;
    wait_ready(&cidrs, "extra").await?;

    // An allocated address only it covers holds its deletion: Ready=False, Terminating.
    create_ip(&ips, "10.200.0.10").await?;
    cidrs.delete("extra", &DeleteParams::default()).await?;
    eventually("extra Terminating", || async {
        let c = cidrs.get("extra").await?;
        Ok((c.metadata.deletion_timestamp.is_some()
            && ready(&c)
                == Some((
                    "False".into(),
                    "Terminating".into(),
                    "There are still IPAddresses referencing the ServiceCIDR, please remove them or create a new ServiceCIDR".into(),
                )))
        .then_some(()))
    })
    .await?;
    assert!(has_finalizer(&cidrs.get("extra").await?));

    // Once the address goes, the finalizer goes after the grace period, and the object with it.
    ips.delete("10.200.0.10", &DeleteParams::default()).await?;
    eventually("extra removed", || async {
        Ok(cidrs.get_opt("extra").await?.is_none().then_some(()))
    })
    .await?;

    // A range inside another one may go at once although an address lies in it.
    create_cidr(&cidrs, "inner", "10.96.200.0/24").await?;
    wait_ready(&cidrs, "inner").await?;
    create_ip(&ips, "10.96.200.7").await?;
    cidrs.delete("inner", &DeleteParams::default()).await?;
    eventually("inner removed", || async {
        Ok(cidrs.get_opt("inner").await?.is_none().then_some(()))
    })
    .await?;
    cluster.stop().await;
    Ok(())
}
