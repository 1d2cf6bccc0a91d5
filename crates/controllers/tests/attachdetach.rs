//! The attach/detach controller against the in-process API server, with the test playing the
//! external attacher and the kubelet: a pod's CSI volume gets its VolumeAttachment, is reported
//! in the node's `volumesAttached` once attached, is refused to a second node while attached
//! (Multi-Attach), and is detached when no pod needs it and the node no longer uses it.

mod support;

use anyhow::{bail, Result};
use k8s_openapi::api::core::v1::{Event, Node, PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::VolumeAttachment;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use rkcm_controllers::registry::{ControllerOptions, ATTACH_DETACH};
use rkcm_controllers::volume::attachdetach::volume::attachment_name;
use serde_json::json;
use support::{eventually, Cluster, NS};

const DRIVER: &str = "csi.example.com";
const UNIQUE: &str = "kubernetes.io/csi/csi.example.com^handle-1";

async fn cluster() -> Cluster {
    use rkcm_apiserver::admission::{plugins, AdmissionConfig};
    Cluster::on(
        rkcm_apiserver::testing::start_with(rkcm_apiserver::Config {
            admission: AdmissionConfig::disabling(&[plugins::SERVICE_ACCOUNT]),
            ..rkcm_apiserver::Config::default()
        })
        .await,
    )
}

fn node(name: &str) -> Node {
    serde_json::from_value(json!({
        "metadata": {
            "name": name,
            "annotations": {"volumes.kubernetes.io/controller-managed-attach-detach": "true"},
        },
    }))
    .expect("a Node")
}

fn pod(name: &str, node: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "nodeName": node,
            "containers": [{"name": "c", "image": "busybox"}],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}],
        },
    }))
    .expect("a Pod")
}

async fn set_in_use(nodes: &Api<Node>, node: &str, volumes: &[&str]) -> Result<()> {
    let patch = json!({"status": {"volumesInUse": volumes}});
    nodes
        .patch_status(node, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

async fn attached_on(nodes: &Api<Node>, node: &str) -> Result<Vec<String>> {
    let n = nodes.get(node).await?;
    Ok(n.status
        .and_then(|s| s.volumes_attached)
        .unwrap_or_default()
        .into_iter()
        .map(|a| a.name)
        .collect())
}

async fn events_of(events: &Api<Event>, pod: &str, reason: &str) -> Result<Vec<String>> {
    Ok(events
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter(|e| {
            e.involved_object.name.as_deref() == Some(pod) && e.reason.as_deref() == Some(reason)
        })
        .filter_map(|e| e.message)
        .collect())
}

#[tokio::test]
async fn a_csi_volume_is_attached_for_its_pod_refused_elsewhere_and_detached_when_unused(
) -> Result<()> {
    let cluster = cluster().await;
    let client = cluster.client.clone();
    let nodes: Api<Node> = Api::all(client.clone());
    let pvs: Api<PersistentVolume> = Api::all(client.clone());
    let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), NS);
    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    let vas: Api<VolumeAttachment> = Api::all(client.clone());
    let events: Api<Event> = Api::namespaced(client.clone(), NS);
    let pp = PostParams::default();

    for n in ["node-1", "node-2"] {
        nodes.create(&pp, &node(n)).await?;
    }
    let pv: PersistentVolume = serde_json::from_value(json!({
        "metadata": {"name": "pv-1"},
        "spec": {
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"],
            "csi": {"driver": DRIVER, "volumeHandle": "handle-1", "fsType": "ext4"},
            "claimRef": {"namespace": NS, "name": "data"},
        },
    }))?;
    pvs.create(&pp, &pv).await?;
    let claim: PersistentVolumeClaim = serde_json::from_value(json!({
        "metadata": {"name": "data"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}},
            "volumeName": "pv-1",
        },
    }))?;
    pvcs.create(&pp, &claim).await?;
    pvcs.patch_status(
        "data",
        &PatchParams::default(),
        &Patch::Merge(&json!({"status": {"phase": "Bound"}})),
    )
    .await?;

    cluster
        .start_registered(&[ATTACH_DETACH], ControllerOptions::default())
        .await?;
    pods.create(&pp, &pod("first", "node-1")).await?;

    // The controller creates the attachment the CSI attacher would.
    let name1 = attachment_name("handle-1", DRIVER, "node-1");
    let va = eventually("the VolumeAttachment of node-1", || async {
        Ok(vas.get_opt(&name1).await?)
    })
    .await?;
    assert_eq!(va.spec.attacher, DRIVER);
    assert_eq!(va.spec.node_name, "node-1");
    assert_eq!(
        va.spec.source.persistent_volume_name.as_deref(),
        Some("pv-1")
    );
    // Not attached yet: the node does not list it.
    assert!(attached_on(&nodes, "node-1").await?.is_empty());

    // The external attacher attaches it; the node's status then lists it.
    vas.patch_status(
        &name1,
        &PatchParams::default(),
        &Patch::Merge(&json!({"status": {"attached": true}})),
    )
    .await?;
    eventually("node-1 to list the volume attached", || async {
        Ok((attached_on(&nodes, "node-1").await? == [UNIQUE]).then_some(()))
    })
    .await?;
    let ok = eventually("SuccessfulAttachVolume on the pod", || async {
        let e = events_of(&events, "first", "SuccessfulAttachVolume").await?;
        Ok((!e.is_empty()).then_some(e))
    })
    .await?;
    assert_eq!(ok[0], "AttachVolume.Attach succeeded for volume \"pv-1\" ");
    set_in_use(&nodes, "node-1", &[UNIQUE]).await?;

    // A second pod on another node wants the read-write-once volume: refused with kube's event.
    pods.create(&pp, &pod("second", "node-2")).await?;
    let refused = eventually("the Multi-Attach error", || async {
        let e = events_of(&events, "second", "FailedAttachVolume").await?;
        Ok((!e.is_empty()).then_some(e))
    })
    .await?;
    assert_eq!(
        refused[0],
        "Multi-Attach error for volume \"pv-1\" Volume is already used by pod(s) first"
    );
    let name2 = attachment_name("handle-1", DRIVER, "node-2");
    assert!(vas.get_opt(&name2).await?.is_none());

    // The first pod goes; the node stops using the volume: it is detached and moves to node-2.
    pods.delete("first", &DeleteParams::default().grace_period(0))
        .await?;
    set_in_use(&nodes, "node-1", &[]).await?;
    eventually("the node-1 attachment to be deleted", || async {
        Ok(vas.get_opt(&name1).await?.is_none().then_some(()))
    })
    .await?;
    eventually("node-1 to list nothing attached", || async {
        Ok(attached_on(&nodes, "node-1")
            .await?
            .is_empty()
            .then_some(()))
    })
    .await?;
    eventually("the VolumeAttachment of node-2", || async {
        Ok(vas.get_opt(&name2).await?)
    })
    .await?;
    cluster.stop().await;
    Ok(())
}

#[tokio::test]
async fn attachments_found_at_start_are_detached_only_once_the_node_stops_using_them() -> Result<()>
{
    let cluster = cluster().await;
    let client = cluster.client.clone();
    let nodes: Api<Node> = Api::all(client.clone());
    let vas: Api<VolumeAttachment> = Api::all(client.clone());
    let pvs: Api<PersistentVolume> = Api::all(client.clone());
    let pp = PostParams::default();
    nodes.create(&pp, &node("node-1")).await?;
    // Two attachments found at start, of volumes no pod uses; the node still mounts the first.
    let mut names = Vec::new();
    for i in 1..=2 {
        let pv: PersistentVolume = serde_json::from_value(json!({
            "metadata": {"name": format!("pv-{i}")},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce"],
                "csi": {"driver": DRIVER, "volumeHandle": format!("handle-{i}")},
            },
        }))?;
        pvs.create(&pp, &pv).await?;
        let name = attachment_name(&format!("handle-{i}"), DRIVER, "node-1");
        let va: VolumeAttachment = serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {"attacher": DRIVER, "nodeName": "node-1", "source": {"persistentVolumeName": format!("pv-{i}")}},
        }))?;
        vas.create(&pp, &va).await?;
        names.push(name);
    }
    set_in_use(&nodes, "node-1", &[UNIQUE]).await?;
    cluster
        .start_registered(&[ATTACH_DETACH], ControllerOptions::default())
        .await?;
    eventually("the unused attachment to be deleted", || async {
        Ok(vas.get_opt(&names[1]).await?.is_none().then_some(()))
    })
    .await?;
    // The reconciler has run; the one the node uses is kept until the node's report frees it.
    if vas.get_opt(&names[0]).await?.is_none() {
        bail!("a volume the node uses was detached");
    }
    set_in_use(&nodes, "node-1", &[]).await?;
    eventually("the attachment the node released to be deleted", || async {
        Ok(vas.get_opt(&names[0]).await?.is_none().then_some(()))
    })
    .await?;
    cluster.stop().await;
    Ok(())
}

#[tokio::test]
async fn the_volumes_of_a_deleted_node_are_detached_once_its_pods_are_gone() -> Result<()> {
    let cluster = cluster().await;
    let client = cluster.client.clone();
    let nodes: Api<Node> = Api::all(client.clone());
    let vas: Api<VolumeAttachment> = Api::all(client.clone());
    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), NS);
    let pp = PostParams::default();
    nodes.create(&pp, &node("node-1")).await?;
    let pv: PersistentVolume = serde_json::from_value(json!({
        "metadata": {"name": "pv-1"},
        "spec": {
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"],
            "csi": {"driver": DRIVER, "volumeHandle": "handle-1"},
            "claimRef": {"namespace": NS, "name": "data"},
        },
    }))?;
    Api::<PersistentVolume>::all(client.clone())
        .create(&pp, &pv)
        .await?;
    let claim: PersistentVolumeClaim = serde_json::from_value(json!({
        "metadata": {"name": "data"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}},
            "volumeName": "pv-1",
        },
    }))?;
    pvcs.create(&pp, &claim).await?;
    pvcs.patch_status(
        "data",
        &PatchParams::default(),
        &Patch::Merge(&json!({"status": {"phase": "Bound"}})),
    )
    .await?;
    cluster
        .start_registered(&[ATTACH_DETACH], ControllerOptions::default())
        .await?;
    pods.create(&pp, &pod("app", "node-1")).await?;
    let name = attachment_name("handle-1", DRIVER, "node-1");
    eventually("the VolumeAttachment", || async {
        Ok(vas.get_opt(&name).await?)
    })
    .await?;
    vas.patch_status(
        &name,
        &PatchParams::default(),
        &Patch::Merge(&json!({"status": {"attached": true}})),
    )
    .await?;
    eventually("node-1 to list the volume attached", || async {
        Ok((attached_on(&nodes, "node-1").await? == [UNIQUE]).then_some(()))
    })
    .await?;
    set_in_use(&nodes, "node-1", &[UNIQUE]).await?;
    // The node goes (nothing mounts there any more, its status cannot be written), then its pod.
    nodes.delete("node-1", &DeleteParams::default()).await?;
    pods.delete("app", &DeleteParams::default().grace_period(0))
        .await?;
    eventually("the deleted node's attachment to be deleted", || async {
        Ok(vas.get_opt(&name).await?.is_none().then_some(()))
    })
    .await?;
    cluster.stop().await;
    Ok(())
}
