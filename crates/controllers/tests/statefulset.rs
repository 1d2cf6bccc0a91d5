//! The StatefulSet controller against the in-process API server: ordered creation with claims,
//! Parallel creation, rolling updates through ControllerRevisions, adoption of orphans, and
//! scale-down in reverse order. Pods are made Running and Ready by the test (there is no kubelet).

mod support;

use std::collections::BTreeMap;

use anyhow::{Context, Result};
use k8s_openapi::api::apps::v1::{ControllerRevision, StatefulSet};
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use rkcm_controllers::registry::{self, ControllerOptions};
use serde_json::json;
use support::{eventually, Cluster, NS};

async fn start() -> Result<Cluster> {
    let cluster = Cluster::start().await;
    cluster
        .start_registered(&[registry::STATEFULSET], ControllerOptions::default())
        .await?;
    Ok(cluster)
}

fn stateful_set(name: &str, replicas: i32, policy: &str) -> Result<StatefulSet> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "replicas": replicas,
            "serviceName": name,
            "podManagementPolicy": policy,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{
                    "name": "web", "image": "nginx:1.27",
                    "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                }]},
            },
            "volumeClaimTemplates": [{
                "metadata": {"name": "data"},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
            }],
        },
    }))?)
}

async fn pod_names(client: &Client, app: &str) -> Result<Vec<String>> {
    let api: Api<Pod> = Api::namespaced(client.clone(), NS);
    let mut names: Vec<String> = api
        .list(&ListParams::default().labels(&format!("app={app}")))
        .await?
        .items
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter_map(|p| p.metadata.name)
        .collect();
    names.sort_by_key(|n| n.rsplit('-').next().and_then(|o| o.parse::<u32>().ok()));
    Ok(names)
}

/// Marks the pod Running and Ready, as a kubelet would.
async fn make_ready(client: &Client, name: &str) -> Result<()> {
    let api: Api<Pod> = Api::namespaced(client.clone(), NS);
    let patch = json!({"status": {
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": jiff::Timestamp::now().to_string()}],
    }});
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

/// Makes every pod of `app` ready, repeatedly, until `check` holds.
async fn ready_until(
    client: &Client,
    app: &str,
    what: &str,
    check: impl Fn(StatefulSet) -> bool,
) -> Result<()> {
    let sets: Api<StatefulSet> = Api::namespaced(client.clone(), NS);
    eventually(what, || async {
        let api: Api<Pod> = Api::namespaced(client.clone(), NS);
        for pod in api
            .list(&ListParams::default().labels(&format!("app={app}")))
            .await?
            .items
        {
            let ready = pod
                .status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
            if !ready && pod.metadata.deletion_timestamp.is_none() {
                make_ready(client, pod.metadata.name.as_deref().context("name")?).await?;
            }
        }
        Ok(check(sets.get(app).await?).then_some(()))
    })
    .await
}

fn status(set: &StatefulSet) -> k8s_openapi::api::apps::v1::StatefulSetStatus {
    set.status.clone().unwrap_or_default()
}

#[tokio::test]
async fn ordered_ready_creates_pods_and_claims_in_order_and_scales_down_in_reverse() -> Result<()> {
    let h = start().await?;
    let sets: Api<StatefulSet> = Api::namespaced(h.client.clone(), NS);
    sets.create(
        &PostParams::default(),
        &stateful_set("web", 3, "OrderedReady")?,
    )
    .await?;
    eventually("web-0 and its claim", || async {
        Ok((pod_names(&h.client, "web").await? == ["web-0"]).then_some(()))
    })
    .await?;
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(h.client.clone(), NS);
    let claim = claims.get("data-web-0").await?;
    assert_eq!(claim.metadata.labels.context("labels")?["app"], "web");
    // web-1 waits for web-0 to be ready: give the controller a few syncs to misbehave.
    eventually("status observed", || async {
        Ok((status(&sets.get("web").await?).replicas == 1).then_some(()))
    })
    .await?;
    assert_eq!(pod_names(&h.client, "web").await?, ["web-0"]);
    make_ready(&h.client, "web-0").await?;
    eventually("web-1 after web-0 is ready", || async {
        Ok((pod_names(&h.client, "web").await?.len() == 2).then_some(()))
    })
    .await?;
    ready_until(&h.client, "web", "three ready replicas", |s| {
        status(&s).ready_replicas == Some(3)
    })
    .await?;
    let pods: Api<Pod> = Api::namespaced(h.client.clone(), NS);
    let pod = pods.get("web-2").await?;
    let spec = pod.spec.context("spec")?;
    assert_eq!(
        (spec.hostname.as_deref(), spec.subdomain.as_deref()),
        (Some("web-2"), Some("web"))
    );
    let labels = pod.metadata.labels.context("labels")?;
    assert_eq!(labels["statefulset.kubernetes.io/pod-name"], "web-2");
    assert_eq!(labels["apps.kubernetes.io/pod-index"], "2");
    let set = sets.get("web").await?;
    let s = status(&set);
    assert_eq!(
        labels["controller-revision-hash"],
        s.update_revision.clone().context("rev")?
    );
    assert_eq!(s.current_revision, s.update_revision);
    assert_eq!(s.observed_generation, set.metadata.generation);
    let revisions: Api<ControllerRevision> = Api::namespaced(h.client.clone(), NS);
    let rev = revisions
        .get(s.update_revision.as_deref().context("rev")?)
        .await?;
    assert_eq!(rev.revision, 1);
    assert_eq!(
        rev.data.context("data")?.0["spec"]["template"]["$patch"],
        "replace"
    );
    let events: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(h.client.clone(), NS);
    eventually("the SuccessfulCreate event of web-0", || async {
        Ok(events
            .list(&ListParams::default())
            .await?
            .items
            .iter()
            .any(|e| {
                e.reason.as_deref() == Some("SuccessfulCreate")
                    && e.message.as_deref()
                        == Some("create Pod web-0 in StatefulSet web successful")
            })
            .then_some(()))
    })
    .await?;

    sets.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 1}})),
    )
    .await?;
    eventually("scaled down to web-0", || async {
        Ok((pod_names(&h.client, "web").await? == ["web-0"]).then_some(()))
    })
    .await?;
    // Claims are retained by default.
    assert!(claims.get_opt("data-web-2").await?.is_some());
    Ok(())
}

#[tokio::test]
async fn parallel_creates_every_pod_at_once() -> Result<()> {
    let h = start().await?;
    let sets: Api<StatefulSet> = Api::namespaced(h.client.clone(), NS);
    sets.create(&PostParams::default(), &stateful_set("par", 4, "Parallel")?)
        .await?;
    eventually("four pods without any being ready", || async {
        Ok(
            (pod_names(&h.client, "par").await? == ["par-0", "par-1", "par-2", "par-3"])
                .then_some(()),
        )
    })
    .await
}

#[tokio::test]
async fn a_template_change_rolls_pods_to_a_new_revision_and_back() -> Result<()> {
    let h = start().await?;
    let sets: Api<StatefulSet> = Api::namespaced(h.client.clone(), NS);
    sets.create(
        &PostParams::default(),
        &stateful_set("roll", 2, "OrderedReady")?,
    )
    .await?;
    ready_until(&h.client, "roll", "two ready replicas", |s| {
        status(&s).ready_replicas == Some(2)
    })
    .await?;
    let first = status(&sets.get("roll").await?)
        .update_revision
        .context("rev")?;
    let image = |i: &str| json!({"spec": {"template": {"spec": {"containers": [{"name": "web", "image": i}]}}}});
    sets.patch(
        "roll",
        &PatchParams::default(),
        &Patch::Strategic(image("nginx:1.28")),
    )
    .await?;
    ready_until(&h.client, "roll", "rollout to the new revision", |s| {
        let st = status(&s);
        st.update_revision.as_deref() != Some(first.as_str())
            && st.current_revision == st.update_revision
            && st.updated_replicas == Some(2)
            && st.ready_replicas == Some(2)
    })
    .await?;
    let after = sets.get("roll").await?;
    assert_eq!(after.metadata.generation, Some(2));
    assert_eq!(status(&after).observed_generation, Some(2));
    let pods: Api<Pod> = Api::namespaced(h.client.clone(), NS);
    let image_of = |p: Pod| p.spec.and_then(|s| s.containers[0].image.clone());
    assert_eq!(
        image_of(pods.get("roll-0").await?).as_deref(),
        Some("nginx:1.28")
    );
    // Back to the first template: the first revision is reused and renumbered.
    sets.patch(
        "roll",
        &PatchParams::default(),
        &Patch::Strategic(image("nginx:1.27")),
    )
    .await?;
    ready_until(&h.client, "roll", "rollback to the first revision", |s| {
        let st = status(&s);
        st.update_revision.as_deref() == Some(first.as_str())
            && st.current_revision == st.update_revision
            && st.ready_replicas == Some(2)
    })
    .await?;
    let revisions: Api<ControllerRevision> = Api::namespaced(h.client.clone(), NS);
    let rev = revisions.get(&first).await?;
    assert_eq!(rev.revision, 3);
    assert_eq!(revisions.list(&ListParams::default()).await?.items.len(), 2);
    Ok(())
}

#[tokio::test]
async fn orphaned_pods_and_revisions_are_adopted() -> Result<()> {
    let h = start().await?;
    let pods: Api<Pod> = Api::namespaced(h.client.clone(), NS);
    let labels: BTreeMap<String, String> = [("app".to_string(), "adopt".to_string())].into();
    let orphan: Pod = serde_json::from_value(json!({
        "metadata": {"name": "adopt-0", "labels": labels},
        "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]},
    }))?;
    pods.create(&PostParams::default(), &orphan).await?;
    let revisions: Api<ControllerRevision> = Api::namespaced(h.client.clone(), NS);
    let old_revision: ControllerRevision = serde_json::from_value(json!({
        "metadata": {"name": "adopt-old", "labels": labels},
        "data": {"spec": {"template": {"$patch": "replace", "metadata": {"labels": labels},
            "spec": {"containers": [{"name": "web", "image": "nginx:1.26"}]}}}},
        "revision": 1,
    }))?;
    revisions
        .create(&PostParams::default(), &old_revision)
        .await?;
    let sets: Api<StatefulSet> = Api::namespaced(h.client.clone(), NS);
    let set = sets
        .create(
            &PostParams::default(),
            &stateful_set("adopt", 1, "OrderedReady")?,
        )
        .await?;
    let uid = set.metadata.uid.context("uid")?;
    eventually("the orphaned revision adopted", || async {
        let rev = revisions.get("adopt-old").await?;
        Ok(rev
            .metadata
            .owner_references
            .unwrap_or_default()
            .iter()
            .any(|r| r.uid == uid && r.controller == Some(true))
            .then_some(()))
    })
    .await?;
    eventually("the orphan adopted", || async {
        let pod = pods.get("adopt-0").await?;
        Ok(pod
            .metadata
            .owner_references
            .unwrap_or_default()
            .iter()
            .any(|r| r.uid == uid && r.controller == Some(true))
            .then_some(()))
    })
    .await
}
