//! The PersistentVolume binder against the in-process API server: static binding by size,
//! release of a Retain volume, a claim Lost with its volume, and a WaitForFirstConsumer claim
//! handed to its external provisioner once a node is selected.

mod support;

use anyhow::Result;
use k8s_openapi::api::core::v1::{Event, PersistentVolume, PersistentVolumeClaim};
use k8s_openapi::api::storage::v1::StorageClass;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use rkcm_controllers::registry::{ControllerOptions, PERSISTENTVOLUME_BINDER};
use serde_json::json;
use support::{eventually, Cluster};

/// Polls `check` until it succeeds; its last failure says what was still missing.
async fn until<F, Fut>(what: &str, check: F) -> Result<()>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<()>>,
{
    let last = std::sync::Mutex::new(String::new());
    let result = eventually(what, || async {
        match check().await {
            Ok(()) => Ok(Some(())),
            Err(e) => {
                *last.lock().unwrap() = format!("{e:#}");
                Ok(None)
            }
        }
    })
    .await;
    result.map_err(|e| e.context(last.lock().unwrap().clone()))
}

fn pv(name: &str, size: &str, policy: &str) -> PersistentVolume {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": size},
            "accessModes": ["ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": policy,
            "hostPath": {"path": format!("/tmp/{name}")},
        },
    }))
    .expect("a PersistentVolume")
}

fn pvc(name: &str, size: &str, class: Option<&str>) -> PersistentVolumeClaim {
    let mut spec = json!({
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": size}},
    });
    if let Some(class) = class {
        spec["storageClassName"] = json!(class);
    }
    serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec})).expect("a claim")
}

fn options() -> ControllerOptions {
    ControllerOptions {
        pvclaimbinder_sync_period: std::time::Duration::from_secs(1),
        ..ControllerOptions::default()
    }
}

async fn phase_of_claim(api: &Api<PersistentVolumeClaim>, name: &str) -> Result<String> {
    let c = api.get(name).await?;
    Ok(c.status.and_then(|s| s.phase).unwrap_or_default())
}

async fn phase_of_volume(api: &Api<PersistentVolume>, name: &str) -> Result<String> {
    let v = api.get(name).await?;
    Ok(v.status.and_then(|s| s.phase).unwrap_or_default())
}

#[tokio::test]
async fn claims_bind_the_smallest_fitting_volume_and_release_it_when_deleted() -> Result<()> {
    let cluster = Cluster::start().await;
    cluster
        .start_registered(&[PERSISTENTVOLUME_BINDER], options())
        .await?;
    let pvs: Api<PersistentVolume> = Api::all(cluster.client.clone());
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(cluster.client.clone(), "default");
    let pp = PostParams::default();
    pvs.create(&pp, &pv("big", "10Gi", "Retain")).await?;
    pvs.create(&pp, &pv("small", "2Gi", "Retain")).await?;
    pvs.create(&pp, &pv("tiny", "500Mi", "Retain")).await?;
    claims.create(&pp, &pvc("data", "1Gi", Some(""))).await?;

    until(
        "the claim is Bound to the smallest fitting volume",
        || async {
            let c = claims.get("data").await?;
            let bound = c.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound");
            let volume = c.spec.as_ref().and_then(|s| s.volume_name.clone());
            anyhow::ensure!(bound && volume.as_deref() == Some("small"), "{c:?}");
            let annotations = c.metadata.annotations.unwrap_or_default();
            anyhow::ensure!(annotations.contains_key("pv.kubernetes.io/bind-completed"));
            anyhow::ensure!(annotations.contains_key("pv.kubernetes.io/bound-by-controller"));
            let capacity = c.status.unwrap().capacity.unwrap_or_default();
            anyhow::ensure!(capacity.get("storage").map(|q| q.0.as_str()) == Some("2Gi"));
            Ok(())
        },
    )
    .await?;
    until("the volume is Bound with a claimRef", || async {
        let v = pvs.get("small").await?;
        let r = v
            .spec
            .as_ref()
            .and_then(|s| s.claim_ref.clone())
            .unwrap_or_default();
        anyhow::ensure!(r.name.as_deref() == Some("data") && r.uid.is_some());
        anyhow::ensure!(phase_of_volume(&pvs, "small").await? == "Bound");
        anyhow::ensure!(phase_of_volume(&pvs, "big").await? == "Available");
        Ok(())
    })
    .await?;

    claims.delete("data", &DeleteParams::default()).await?;
    until("the Retain volume is Released", || async {
        anyhow::ensure!(phase_of_volume(&pvs, "small").await? == "Released");
        Ok(())
    })
    .await?;

    // A claim whose volume is deleted is Lost.
    claims.create(&pp, &pvc("other", "5Gi", Some(""))).await?;
    until("the second claim binds the big volume", || async {
        anyhow::ensure!(phase_of_claim(&claims, "other").await? == "Bound");
        Ok(())
    })
    .await?;
    pvs.delete("big", &DeleteParams::default()).await?;
    until("the claim is Lost", || async {
        anyhow::ensure!(phase_of_claim(&claims, "other").await? == "Lost");
        Ok(())
    })
    .await?;
    cluster.stop().await;
    Ok(())
}

#[tokio::test]
async fn a_wait_for_first_consumer_claim_waits_for_a_node_then_asks_its_provisioner() -> Result<()>
{
    let cluster = Cluster::start().await;
    cluster
        .start_registered(&[PERSISTENTVOLUME_BINDER], options())
        .await?;
    let classes: Api<StorageClass> = Api::all(cluster.client.clone());
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(cluster.client.clone(), "default");
    let events: Api<Event> = Api::namespaced(cluster.client.clone(), "default");
    let pp = PostParams::default();
    classes
        .create(
            &pp,
            &serde_json::from_value(json!({
                "metadata": {"name": "standard", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
                "provisioner": "example.com/csi",
                "volumeBindingMode": "WaitForFirstConsumer",
            }))?,
        )
        .await?;
    // No class at all: the binder gives it the default class.
    claims.create(&pp, &pvc("wait", "1Gi", None)).await?;
    until(
        "the default class is assigned and the claim waits for a consumer",
        || async {
            let c = claims.get("wait").await?;
            anyhow::ensure!(
                c.spec
                    .as_ref()
                    .and_then(|s| s.storage_class_name.as_deref())
                    == Some("standard")
            );
            let list = events.list(&ListParams::default()).await?;
            anyhow::ensure!(list.items.iter().any(|e| {
                e.reason.as_deref() == Some("WaitForFirstConsumer")
                    && e.message.as_deref()
                        == Some("waiting for first consumer to be created before binding")
            }));
            anyhow::ensure!(phase_of_claim(&claims, "wait").await? == "Pending");
            Ok(())
        },
    )
    .await?;
    claims
        .patch(
            "wait",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"volume.kubernetes.io/selected-node": "node-1"}}})),
        )
        .await?;
    until("the claim is annotated for its provisioner", || async {
        let c = claims.get("wait").await?;
        let a = c.metadata.annotations.unwrap_or_default();
        anyhow::ensure!(
            a.get("volume.kubernetes.io/storage-provisioner")
                .map(String::as_str)
                == Some("example.com/csi")
        );
        anyhow::ensure!(
            a.get("volume.beta.kubernetes.io/storage-provisioner")
                .map(String::as_str)
                == Some("example.com/csi")
        );
        let list = events.list(&ListParams::default()).await?;
        anyhow::ensure!(list
            .items
            .iter()
            .any(|e| e.reason.as_deref() == Some("ExternalProvisioning")));
        Ok(())
    })
    .await?;
    // The provisioner's volume, pre-bound to the claim, is bound by the binder.
    let claim = claims.get("wait").await?;
    let pvs: Api<PersistentVolume> = Api::all(cluster.client.clone());
    let mut volume = pv("pvc-wait", "1Gi", "Delete");
    let spec = volume.spec.as_mut().unwrap();
    spec.storage_class_name = Some("standard".into());
    spec.claim_ref = Some(k8s_openapi::api::core::v1::ObjectReference {
        kind: Some("PersistentVolumeClaim".into()),
        namespace: Some("default".into()),
        name: Some("wait".into()),
        uid: claim.metadata.uid.clone(),
        ..Default::default()
    });
    volume.metadata.annotations = Some(
        [(
            "pv.kubernetes.io/provisioned-by".to_string(),
            "example.com/csi".to_string(),
        )]
        .into(),
    );
    pvs.create(&pp, &volume).await?;
    until("the provisioned volume is bound", || async {
        anyhow::ensure!(phase_of_claim(&claims, "wait").await? == "Bound");
        anyhow::ensure!(phase_of_volume(&pvs, "pvc-wait").await? == "Bound");
        Ok(())
    })
    .await?;
    claims.delete("wait", &DeleteParams::default()).await?;
    until(
        "a provisioned Delete volume is Released for its provisioner",
        || async {
            anyhow::ensure!(phase_of_volume(&pvs, "pvc-wait").await? == "Released");
            Ok(())
        },
    )
    .await?;
    cluster.stop().await;
    Ok(())
}
