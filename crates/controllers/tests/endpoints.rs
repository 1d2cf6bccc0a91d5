//! The Endpoints, EndpointSlice and mirroring controllers against the embedded API server:
//! addresses follow pod readiness and deletion, slices carry kube's labels and conditions,
//! selectorless Services get their hand-written Endpoints mirrored, and deleting a Service
//! deletes its Endpoints.

use anyhow::Result;
use k8s_openapi::api::core::v1::{
    Container, ContainerPort, EndpointAddress, EndpointPort, EndpointSubset, Endpoints, Node, Pod,
    PodSpec, Service, ServicePort, ServiceSpec,
};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use rkcm_controllers::registry::{self, ControllerOptions};
use serde_json::json;

mod support;
use support::{eventually, Cluster, NS};

async fn start() -> Result<Cluster> {
    let cluster = Cluster::start().await;
    let nodes: Api<Node> = Api::all(cluster.client.clone());
    let node = Node {
        metadata: ObjectMeta {
            name: Some("node-1".into()),
            labels: Some(
                [(
                    "topology.kubernetes.io/zone".to_string(),
                    "zone-a".to_string(),
                )]
                .into(),
            ),
            ..Default::default()
        },
        ..Default::default()
    };
    nodes.create(&PostParams::default(), &node).await?;
    cluster
        .start_registered(
            &[
                registry::ENDPOINTS,
                registry::ENDPOINTSLICE,
                registry::ENDPOINTSLICE_MIRRORING,
            ],
            ControllerOptions::default(),
        )
        .await?;
    Ok(cluster)
}

fn service(name: &str, selector: Option<&str>) -> Service {
    Service {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some([("team".to_string(), "a".to_string())].into()),
            ..Default::default()
        },
        spec: Some(ServiceSpec {
            selector: selector.map(|app| [("app".to_string(), app.to_string())].into()),
            ports: Some(vec![ServicePort {
                port: 80,
                target_port: Some(IntOrString::String("http".into())),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Creates pod `name` (label `app=web`, port `http` 8080 on node-1) and gives it `ip` and a
/// Ready condition.
async fn pod(cluster: &Cluster, name: &str, ip: &str, ready: bool) -> Result<()> {
    let pods: Api<Pod> = Api::namespaced(cluster.client.clone(), NS);
    let pod = Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some([("app".to_string(), "web".to_string())].into()),
            ..Default::default()
        },
        spec: Some(PodSpec {
            node_name: Some("node-1".into()),
            containers: vec![Container {
                name: "web".into(),
                image: Some("nginx".into()),
                ports: Some(vec![ContainerPort {
                    name: Some("http".into()),
                    container_port: 8080,
                    ..Default::default()
                }]),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    };
    pods.create(&PostParams::default(), &pod).await?;
    set_ready(cluster, name, ip, ready).await
}

async fn set_ready(cluster: &Cluster, name: &str, ip: &str, ready: bool) -> Result<()> {
    let pods: Api<Pod> = Api::namespaced(cluster.client.clone(), NS);
    let status = json!({"status": {
        "phase": "Running",
        "podIP": ip,
        "podIPs": [{"ip": ip}],
        "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" },
                        "lastTransitionTime": "2025-01-01T00:00:00Z"}],
    }});
    pods.patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
        .await?;
    Ok(())
}

fn ips(list: &Option<Vec<EndpointAddress>>) -> Vec<String> {
    let mut ips: Vec<String> = list.iter().flatten().map(|a| a.ip.clone()).collect();
    ips.sort();
    ips
}

/// (ready, not ready) addresses of the Endpoints `name` once they equal `want`.
async fn endpoints_become(
    cluster: &Cluster,
    name: &str,
    want: (&[&str], &[&str]),
) -> Result<Endpoints> {
    let api: Api<Endpoints> = Api::namespaced(cluster.client.clone(), NS);
    eventually(&format!("endpoints {name} to list {want:?}"), || {
        let api = api.clone();
        async move {
            let Some(e) = api.get_opt(name).await? else {
                return Ok(None);
            };
            let subsets = e.subsets.clone().unwrap_or_default();
            let ready: Vec<String> = subsets.iter().flat_map(|s| ips(&s.addresses)).collect();
            let not_ready: Vec<String> = subsets
                .iter()
                .flat_map(|s| ips(&s.not_ready_addresses))
                .collect();
            Ok((ready == want.0 && not_ready == want.1).then_some(e))
        }
    })
    .await
}

async fn slices_of(cluster: &Cluster, service: &str) -> Result<Vec<EndpointSlice>> {
    let api: Api<EndpointSlice> = Api::namespaced(cluster.client.clone(), NS);
    let list = api
        .list(&ListParams::default().labels(&format!("kubernetes.io/service-name={service}")))
        .await?;
    Ok(list.items)
}

/// The (address, ready) pairs of the Service's slices once they equal `want`.
async fn slices_become(
    cluster: &Cluster,
    service: &str,
    want: &[(&str, bool)],
) -> Result<Vec<EndpointSlice>> {
    eventually(&format!("slices of {service} to hold {want:?}"), || async {
        let slices = slices_of(cluster, service).await?;
        let mut got: Vec<(String, bool)> = slices
            .iter()
            .flat_map(|s| s.endpoints.iter())
            .map(|e| {
                let ready = e.conditions.as_ref().and_then(|c| c.ready).unwrap_or(false);
                (e.addresses[0].clone(), ready)
            })
            .collect();
        got.sort();
        let want: Vec<(String, bool)> = want.iter().map(|(a, r)| (a.to_string(), *r)).collect();
        Ok((got == want).then_some(slices))
    })
    .await
}

#[tokio::test]
async fn endpoints_and_slices_follow_the_selected_pods() -> Result<()> {
    let cluster = start().await?;
    let services: Api<Service> = Api::namespaced(cluster.client.clone(), NS);
    pod(&cluster, "a", "10.244.1.2", true).await?;
    pod(&cluster, "b", "10.244.1.3", false).await?;
    services
        .create(&PostParams::default(), &service("web", Some("web")))
        .await?;

    // Ready and not-ready addresses, the named port resolved, the Service's labels.
    let e = endpoints_become(&cluster, "web", (&["10.244.1.2"], &["10.244.1.3"])).await?;
    let subset: &EndpointSubset = &e.subsets.as_ref().unwrap()[0];
    assert_eq!(
        subset.ports.as_deref(),
        Some(
            &[EndpointPort {
                port: 8080,
                protocol: Some("TCP".into()),
                ..Default::default()
            }][..]
        )
    );
    let labels = e.metadata.labels.clone().unwrap_or_default();
    assert_eq!(labels.get("team").map(String::as_str), Some("a"));
    assert!(e
        .metadata
        .annotations
        .unwrap_or_default()
        .contains_key("endpoints.kubernetes.io/last-change-trigger-time"));
    let address = &subset.addresses.as_ref().unwrap()[0];
    assert_eq!(address.node_name.as_deref(), Some("node-1"));
    assert_eq!(
        address.target_ref.as_ref().and_then(|r| r.name.as_deref()),
        Some("a")
    );

    // One slice: labels, owner, zone, conditions.
    let slices = slices_become(
        &cluster,
        "web",
        &[("10.244.1.2", true), ("10.244.1.3", false)],
    )
    .await?;
    assert_eq!(slices.len(), 1);
    let slice = &slices[0];
    let labels = slice.metadata.labels.clone().unwrap_or_default();
    assert_eq!(
        labels
            .get("endpointslice.kubernetes.io/managed-by")
            .map(String::as_str),
        Some("endpointslice-controller.k8s.io")
    );
    assert_eq!(labels.get("team").map(String::as_str), Some("a"));
    assert!(slice.metadata.name.as_deref().unwrap().starts_with("web-"));
    let owner = &slice.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("Service", "web")
    );
    assert_eq!(slice.address_type, "IPv4");
    assert_eq!(slice.endpoints[0].zone.as_deref(), Some("zone-a"));

    // b becomes ready, then a goes away.
    set_ready(&cluster, "b", "10.244.1.3", true).await?;
    endpoints_become(&cluster, "web", (&["10.244.1.2", "10.244.1.3"], &[])).await?;
    slices_become(
        &cluster,
        "web",
        &[("10.244.1.2", true), ("10.244.1.3", true)],
    )
    .await?;
    let pods: Api<Pod> = Api::namespaced(cluster.client.clone(), NS);
    pods.delete("a", &DeleteParams::default().grace_period(0))
        .await?;
    endpoints_become(&cluster, "web", (&["10.244.1.3"], &[])).await?;
    slices_become(&cluster, "web", &[("10.244.1.3", true)]).await?;

    // Deleting the Service deletes its Endpoints.
    services.delete("web", &DeleteParams::default()).await?;
    let endpoints: Api<Endpoints> = Api::namespaced(cluster.client.clone(), NS);
    eventually("the endpoints of the deleted service to go", || async {
        Ok(endpoints.get_opt("web").await?.is_none().then_some(()))
    })
    .await?;
    cluster.stop().await;
    Ok(())
}

#[tokio::test]
async fn hand_written_endpoints_of_a_selectorless_service_are_mirrored() -> Result<()> {
    let cluster = start().await?;
    let services: Api<Service> = Api::namespaced(cluster.client.clone(), NS);
    services
        .create(&PostParams::default(), &service("ext", None))
        .await?;
    let endpoints: Api<Endpoints> = Api::namespaced(cluster.client.clone(), NS);
    let manual = Endpoints {
        metadata: ObjectMeta {
            name: Some("ext".into()),
            ..Default::default()
        },
        subsets: Some(vec![EndpointSubset {
            addresses: Some(vec![EndpointAddress {
                ip: "192.0.2.10".into(),
                ..Default::default()
            }]),
            not_ready_addresses: Some(vec![EndpointAddress {
                ip: "192.0.2.11".into(),
                ..Default::default()
            }]),
            ports: Some(vec![EndpointPort {
                port: 5432,
                protocol: Some("TCP".into()),
                ..Default::default()
            }]),
        }]),
    };
    endpoints.create(&PostParams::default(), &manual).await?;
    let slices = slices_become(
        &cluster,
        "ext",
        &[("192.0.2.10", true), ("192.0.2.11", false)],
    )
    .await?;
    let labels = slices[0].metadata.labels.clone().unwrap_or_default();
    assert_eq!(
        labels
            .get("endpointslice.kubernetes.io/managed-by")
            .map(String::as_str),
        Some("endpointslicemirroring-controller.k8s.io")
    );
    let owner = &slices[0].metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(owner.kind, "Endpoints");
    // The Endpoints controller leaves hand-written Endpoints alone.
    assert_eq!(
        ips(&endpoints.get("ext").await?.subsets.unwrap()[0].addresses),
        ["192.0.2.10"]
    );

    // The Endpoints go: so do the mirrored slices.
    endpoints.delete("ext", &DeleteParams::default()).await?;
    eventually("the mirrored slices to go", || async {
        Ok(slices_of(&cluster, "ext").await?.is_empty().then_some(()))
    })
    .await?;

    // The `kubernetes` Service's Endpoints are labelled skip-mirror: never mirrored.
    let api: Api<EndpointSlice> = Api::namespaced(cluster.client.clone(), NS);
    let mirrored = api
        .list(&ListParams::default().labels(
            "endpointslice.kubernetes.io/managed-by=endpointslicemirroring-controller.k8s.io",
        ))
        .await?;
    assert!(mirrored.items.is_empty());
    cluster.stop().await;
    Ok(())
}
