//! The PersistentVolume binder against the in-process API server: static binding by size,
//! release of a Retain volume, a claim Lost with its volume, and a WaitForFirstConsumer claim
//! handed to its external provisioner once a node is selected.

mod support;

use anyhow::Result;
use k8s_openapi::api::core::v1::{Event, PersistentVolume, PersistentVolumeClaim};
use k8s_openapi::api::storage::v1::StorageClass;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use rkcm_controllers::registry::{ControllerOptions, PERSISTENTVOLUME_BINDER, PVC_PROTECTION};
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

/// A server without the StorageObjectInUseProtection admission plugin, as kube's volume
/// integration tests run: a deleted volume goes at once, so its claim can be seen Lost.
async fn without_volume_protection() -> Cluster {
    use rkcm_apiserver::admission::{plugins, AdmissionConfig};
    Cluster::on(
        rkcm_apiserver::testing::start_with(rkcm_apiserver::Config {
            admission: AdmissionConfig::disabling(&[
                plugins::SERVICE_ACCOUNT,
                plugins::STORAGE_OBJECT_IN_USE_PROTECTION,
            ]),
            ..rkcm_apiserver::Config::default()
        })
        .await,
    )
}

#[tokio::test]
async fn claims_bind_the_smallest_fitting_volume_and_release_it_when_deleted() -> Result<()> {
    let cluster = without_volume_protection().await;
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
        .start_registered(&[PERSISTENTVOLUME_BINDER, PVC_PROTECTION], options())
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

#[tokio::test]
async fn protection_finalizers_hold_claims_in_use_and_bound_volumes() -> Result<()> {
    use k8s_openapi::api::core::v1::Pod;
    use rkcm_controllers::registry::PV_PROTECTION;
    let cluster = Cluster::start().await;
    cluster
        .start_registered(&[PVC_PROTECTION, PV_PROTECTION], options())
        .await?;
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(cluster.client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(cluster.client.clone(), "default");
    let pvs: Api<PersistentVolume> = Api::all(cluster.client.clone());
    let pp = PostParams::default();
    claims.create(&pp, &pvc("used", "1Gi", Some(""))).await?;
    claims.create(&pp, &pvc("free", "1Gi", Some(""))).await?;
    pvs.create(&pp, &pv("kept", "1Gi", "Retain")).await?;
    until("both get their finalizers", || async {
        let c = claims.get("free").await?;
        anyhow::ensure!(c.metadata.finalizers.is_some());
        let c = claims.get("used").await?;
        anyhow::ensure!(c.metadata.finalizers == Some(vec!["kubernetes.io/pvc-protection".into()]));
        let v = pvs.get("kept").await?;
        anyhow::ensure!(v.metadata.finalizers == Some(vec!["kubernetes.io/pv-protection".into()]));
        Ok(())
    })
    .await?;
    pods.create(
        &pp,
        &serde_json::from_value(json!({
            "metadata": {"name": "user"},
            "spec": {
                "nodeName": "node-1",
                "containers": [{"name": "c", "image": "busybox"}],
                "volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "used"}}],
            },
        }))?,
    )
    .await?;
    claims.delete("used", &DeleteParams::default()).await?;
    claims.delete("free", &DeleteParams::default()).await?;
    // The unused claim, queued after the used one, goes: the used one was decided on already.
    until("the unused claim goes", || async {
        anyhow::ensure!(claims.get_opt("free").await?.is_none());
        Ok(())
    })
    .await?;
    let mut v = pvs.get("kept").await?;
    v.status.get_or_insert_with(Default::default).phase = Some("Bound".into());
    pvs.replace_status("kept", &pp, &v).await?;
    pvs.delete("kept", &DeleteParams::default()).await?;
    let c = claims.get("used").await?;
    assert!(c.metadata.deletion_timestamp.is_some());
    assert!(c.metadata.finalizers.is_some());
    pods.delete(
        "user",
        &DeleteParams {
            grace_period_seconds: Some(0),
            ..DeleteParams::default()
        },
    )
    .await?;
    until("the claim goes once its pod is gone", || async {
        anyhow::ensure!(claims.get_opt("used").await?.is_none());
        Ok(())
    })
    .await?;
    let v = pvs.get("kept").await?;
    assert!(
        v.metadata.deletion_timestamp.is_some(),
        "a Bound volume stays"
    );
    let mut released = v.clone();
    released.status.get_or_insert_with(Default::default).phase = Some("Released".into());
    pvs.replace_status("kept", &pp, &released).await?;
    until("the volume goes once it is not Bound", || async {
        anyhow::ensure!(pvs.get_opt("kept").await?.is_none());
        Ok(())
    })
    .await?;
    cluster.stop().await;
    Ok(())
}

#[tokio::test]
async fn ephemeral_volumes_get_claims_owned_by_their_pods() -> Result<()> {
    use k8s_openapi::api::core::v1::Pod;
    use rkcm_controllers::registry::EPHEMERAL_VOLUME;
    let cluster = Cluster::start().await;
    cluster
        .start_registered(&[EPHEMERAL_VOLUME], options())
        .await?;
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(cluster.client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(cluster.client.clone(), "default");
    let events: Api<Event> = Api::namespaced(cluster.client.clone(), "default");
    let pp = PostParams::default();
    let pod = |name: &str| -> Result<Pod> {
        Ok(serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {
                "containers": [{"name": "c", "image": "busybox"}],
                "volumes": [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {
                    "metadata": {"labels": {"type": "scratch"}},
                    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
                }}}],
            },
        }))?)
    };
    let created = pods.create(&pp, &pod("web")?).await?;
    until(
        "the pod's ephemeral claim exists, owned by the pod",
        || async {
            let c = claims.get("web-scratch").await?;
            let owner = c.metadata.owner_references.clone().unwrap_or_default();
            anyhow::ensure!(
                owner.len() == 1 && Some(&owner[0].uid) == created.metadata.uid.as_ref()
            );
            anyhow::ensure!(owner[0].controller == Some(true));
            anyhow::ensure!(
                c.metadata
                    .labels
                    .unwrap_or_default()
                    .get("type")
                    .map(String::as_str)
                    == Some("scratch")
            );
            Ok(())
        },
    )
    .await?;
    // A claim of the pod's name that someone else made is not taken over.
    claims
        .create(&pp, &pvc("other-scratch", "1Gi", Some("")))
        .await?;
    pods.create(&pp, &pod("other")?).await?;
    until("the conflict is reported on the pod", || async {
        let list = events.list(&ListParams::default()).await?;
        anyhow::ensure!(list.items.iter().any(|e| {
            e.reason.as_deref() == Some("FailedBinding")
                && e.message.as_deref()
                    == Some("PVC default/other-scratch was not created for pod default/other (pod is not owner)")
        }));
        Ok(())
    })
    .await?;
    let c = claims.get("other-scratch").await?;
    assert!(c.metadata.owner_references.is_none());
    cluster.stop().await;
    Ok(())
}
