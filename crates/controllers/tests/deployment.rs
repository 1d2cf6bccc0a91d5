//! Deployment controller against the in-process API server, with simulated ReplicaSet behaviour and
//! readiness: rolling-update bounds, Recreate, undo, pause, progress deadline, proportional scaling
//! and revision history.

#[path = "deployment/env.rs"]
mod env;
mod support;

use std::collections::BTreeMap;

use anyhow::Result;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use kube::api::{Api, Patch, PatchParams};
use rkcm_controllers::deployment::annotations::{REVISION, REVISION_HISTORY};
use rkcm_controllers::deployment::conditions::{
    deployment_condition, PROGRESSING, TIMED_OUT_REASON,
};
use rkcm_runtime::process;
use serde_json::json;

use env::{deployment, eventually, Env, NEVER_READY_IMAGE};

fn revision_of(rs: &ReplicaSet) -> Option<String> {
    rs.metadata.annotations.as_ref()?.get(REVISION).cloned()
}

fn image_of(rs: &ReplicaSet) -> Option<String> {
    rs.spec
        .as_ref()?
        .template
        .as_ref()?
        .spec
        .as_ref()?
        .containers
        .first()?
        .image
        .clone()
}

fn rs_size(rs: &ReplicaSet) -> i32 {
    rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0)
}

async fn set_image(api: &Api<Deployment>, name: &str, image: &str) -> Result<()> {
    let patch =
        json!({"spec": {"template": {"spec": {"containers": [{"name": "app", "image": image}]}}}});
    api.patch(name, &PatchParams::default(), &Patch::Strategic(patch))
        .await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn rolling_update_stays_within_surge_and_unavailable_bounds() -> Result<()> {
    let env = Env::start().await;
    let api = env.deployments();
    // 10 replicas, maxSurge 3 (30% rounds up), maxUnavailable 2 (25% rounds down).
    let mut d = deployment("web", 10, "app:v1");
    let ru = d
        .spec
        .as_mut()
        .unwrap()
        .strategy
        .as_mut()
        .unwrap()
        .rolling_update
        .as_mut()
        .unwrap();
    ru.max_surge =
        Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::String("30%".into()));
    ru.max_unavailable =
        Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::String("25%".into()));
    api.create(&Default::default(), &d).await?;
    env.wait_complete("web", 10).await;

    let samples = env.sample_pods("app=web");
    set_image(&api, "web", "app:v2").await?;
    env.wait_complete("web", 10).await;
    let samples = samples.stop().await;
    assert!(
        samples.len() > 5,
        "sampler took too few samples: {}",
        samples.len()
    );
    for s in &samples {
        assert!(s.total <= 13, "more than replicas + maxSurge pods: {s:?}");
        assert!(
            s.ready >= 8,
            "fewer than replicas - maxUnavailable ready pods: {s:?}"
        );
    }
    assert!(
        samples.iter().any(|s| s.images.len() == 2),
        "old and new pods overlapped at some point"
    );
    let rss = env.replica_sets("app=web").await?;
    let new = rss
        .iter()
        .find(|rs| image_of(rs).as_deref() == Some("app:v2"))
        .expect("new replica set");
    assert_eq!(revision_of(new).as_deref(), Some("2"));
    assert_eq!(rs_size(new), 10);
    let old = rss
        .iter()
        .find(|rs| image_of(rs).as_deref() == Some("app:v1"))
        .expect("old replica set kept");
    assert_eq!(rs_size(old), 0);
    env.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn recreate_never_runs_old_and_new_pods_together() -> Result<()> {
    let env = Env::start().await;
    let api = env.deployments();
    let mut d = deployment("batch", 4, "job:v1");
    d.spec.as_mut().unwrap().strategy = Some(k8s_openapi::api::apps::v1::DeploymentStrategy {
        type_: Some("Recreate".into()),
        rolling_update: None,
    });
    api.create(&Default::default(), &d).await?;
    env.wait_complete("batch", 4).await;

    let samples = env.sample_pods("app=batch");
    set_image(&api, "batch", "job:v2").await?;
    env.wait_complete("batch", 4).await;
    let samples = samples.stop().await;
    for s in &samples {
        assert!(s.images.len() <= 1, "old and new pods ran together: {s:?}");
    }
    assert!(samples.iter().any(|s| s.images.contains("job:v2")));
    env.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn rollout_undo_restores_the_previous_template_as_a_new_revision() -> Result<()> {
    let env = Env::start().await;
    let api = env.deployments();
    api.create(&Default::default(), &deployment("undo", 3, "app:v1"))
        .await?;
    env.wait_complete("undo", 3).await;
    set_image(&api, "undo", "app:v2").await?;
    env.wait_complete("undo", 3).await;

    // What `kubectl rollout undo` does: replace the template with the previous ReplicaSet's
    // (without the hash label). kubectl sends a JSON patch; a merge patch of the whole template has
    // the same effect here.
    let rss = env.replica_sets("app=undo").await?;
    let previous = rss
        .iter()
        .find(|rs| revision_of(rs).as_deref() == Some("1"))
        .expect("revision 1");
    let mut template = previous.spec.as_ref().unwrap().template.clone().unwrap();
    template
        .metadata
        .as_mut()
        .unwrap()
        .labels
        .as_mut()
        .unwrap()
        .remove("pod-template-hash");
    api.patch(
        "undo",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"template": template}})),
    )
    .await?;
    env.wait_complete("undo", 3).await;

    let rss = env.replica_sets("app=undo").await?;
    assert_eq!(rss.len(), 2, "the old replica set is reused, not recreated");
    let reused = rss
        .iter()
        .find(|rs| image_of(rs).as_deref() == Some("app:v1"))
        .unwrap();
    assert_eq!(revision_of(reused).as_deref(), Some("3"));
    assert_eq!(
        reused
            .metadata
            .annotations
            .as_ref()
            .unwrap()
            .get(REVISION_HISTORY)
            .map(String::as_str),
        Some("1")
    );
    assert_eq!(rs_size(reused), 3);
    let d = api.get("undo").await?;
    assert_eq!(
        d.metadata
            .annotations
            .as_ref()
            .unwrap()
            .get(REVISION)
            .map(String::as_str),
        Some("3")
    );
    env.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_paused_deployment_does_not_roll_out_until_resumed() -> Result<()> {
    let env = Env::start().await;
    let api = env.deployments();
    api.create(&Default::default(), &deployment("paused", 2, "app:v1"))
        .await?;
    env.wait_complete("paused", 2).await;
    api.patch(
        "paused",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"paused": true}})),
    )
    .await?;
    set_image(&api, "paused", "app:v2").await?;
    let d = api.get("paused").await?;
    let generation = d.metadata.generation.unwrap();
    // Once the controller has seen the change, it reports it and still has not rolled out.
    let d = eventually("paused deployment observed", || async {
        let d = api.get("paused").await.ok()?;
        let status = d.status.clone()?;
        (status.observed_generation? >= generation).then_some(d)
    })
    .await;
    let progressing = deployment_condition(&d, PROGRESSING).cloned();
    assert_eq!(
        progressing.and_then(|c| c.reason).as_deref(),
        Some("DeploymentPaused")
    );
    assert_eq!(
        env.replica_sets("app=paused").await?.len(),
        1,
        "no new replica set while paused"
    );

    api.patch(
        "paused",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"paused": false}})),
    )
    .await?;
    env.wait_complete("paused", 2).await;
    let rss = env.replica_sets("app=paused").await?;
    assert!(rss
        .iter()
        .any(|rs| image_of(rs).as_deref() == Some("app:v2") && rs_size(rs) == 2));
    env.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_stuck_rollout_exceeds_its_progress_deadline() -> Result<()> {
    let env = Env::start().await;
    let api = env.deployments();
    let mut d = deployment("stuck", 2, NEVER_READY_IMAGE);
    d.spec.as_mut().unwrap().progress_deadline_seconds = Some(2);
    api.create(&Default::default(), &d).await?;
    let condition = eventually("ProgressDeadlineExceeded", || async {
        let d = api.get("stuck").await.ok()?;
        let c = d
            .status?
            .conditions?
            .into_iter()
            .find(|c| c.type_ == PROGRESSING)?;
        (c.reason.as_deref() == Some(TIMED_OUT_REASON)).then_some(c)
    })
    .await;
    assert_eq!(condition.status, "False");
    assert!(condition
        .message
        .unwrap_or_default()
        .contains("has timed out progressing"));
    env.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn scaling_in_the_middle_of_a_rollout_is_proportional() -> Result<()> {
    let env = Env::start().await;
    let api = env.deployments();
    let mut d = deployment("prop", 10, "app:v1");
    let ru = d
        .spec
        .as_mut()
        .unwrap()
        .strategy
        .as_mut()
        .unwrap()
        .rolling_update
        .as_mut()
        .unwrap();
    ru.max_surge = Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(3));
    ru.max_unavailable = Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(2));
    api.create(&Default::default(), &d).await?;
    env.wait_complete("prop", 10).await;
    // A rollout to an image that never becomes ready stalls at old 8 / new 5
    // (13 pods = 10 + maxSurge, 8 available = 10 - maxUnavailable).
    set_image(&api, "prop", NEVER_READY_IMAGE).await?;
    env.wait_sizes("app=prop", &[("app:v1", 8), (NEVER_READY_IMAGE, 5)])
        .await;
    api.patch(
        "prop",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 20}})),
    )
    .await?;
    // 23 = 20 + maxSurge spread as 8·23/13 ≈ 14 and 5·23/13 ≈ 9.
    env.wait_sizes("app=prop", &[("app:v1", 14), (NEVER_READY_IMAGE, 9)])
        .await;
    env.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn old_replica_sets_beyond_the_history_limit_are_deleted_oldest_first() -> Result<()> {
    let env = Env::start().await;
    let api = env.deployments();
    let mut d = deployment("hist", 1, "app:v1");
    d.spec.as_mut().unwrap().revision_history_limit = Some(1);
    api.create(&Default::default(), &d).await?;
    env.wait_complete("hist", 1).await;
    for image in ["app:v2", "app:v3", "app:v4"] {
        set_image(&api, "hist", image).await?;
        env.wait_complete("hist", 1).await;
    }
    let rss = eventually("history trimmed to one old replica set", || async {
        let rss = env.replica_sets("app=hist").await.ok()?;
        (rss.len() == 2).then_some(rss)
    })
    .await;
    let mut revisions: Vec<String> = rss.iter().filter_map(revision_of).collect();
    revisions.sort();
    assert_eq!(revisions, ["3", "4"]);
    env.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn status_reports_counts_and_availability() -> Result<()> {
    let env = Env::start().await;
    let api = env.deployments();
    api.create(&Default::default(), &deployment("stat", 3, "app:v1"))
        .await?;
    env.wait_complete("stat", 3).await;
    let d = api.get("stat").await?;
    let status = d.status.unwrap();
    assert_eq!(status.replicas, Some(3));
    assert_eq!(status.updated_replicas, Some(3));
    assert_eq!(status.ready_replicas, Some(3));
    assert_eq!(status.available_replicas, Some(3));
    let conditions: BTreeMap<String, (String, Option<String>)> = status
        .conditions
        .unwrap_or_default()
        .into_iter()
        .map(|c| (c.type_, (c.status, c.reason)))
        .collect();
    assert_eq!(
        conditions["Available"],
        (
            "True".to_string(),
            Some("MinimumReplicasAvailable".to_string())
        )
    );
    assert_eq!(
        conditions["Progressing"],
        (
            "True".to_string(),
            Some("NewReplicaSetAvailable".to_string())
        )
    );
    env.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_rollback_request_restores_the_previous_revision_and_is_cleared() -> Result<()> {
    let env = Env::start().await;
    let api = env.deployments();
    api.create(&Default::default(), &deployment("rb", 2, "app:v1"))
        .await?;
    env.wait_complete("rb", 2).await;
    set_image(&api, "rb", "app:v2").await?;
    env.wait_complete("rb", 2).await;
    // extensions/v1beta1 `spec.rollbackTo: {revision: 0}` as the API server stores it for apps/v1.
    let patch = json!({"metadata": {"annotations": {"deprecated.deployment.rollback.to": "0"}}});
    api.patch("rb", &PatchParams::default(), &Patch::Merge(patch))
        .await?;
    let d = eventually("rollback request cleared", || async {
        let d = api.get("rb").await.ok()?;
        let cleared = !d
            .metadata
            .annotations
            .as_ref()?
            .contains_key("deprecated.deployment.rollback.to");
        cleared.then_some(d)
    })
    .await;
    let image = d.spec.unwrap().template.spec.unwrap().containers[0]
        .image
        .clone();
    assert_eq!(image.as_deref(), Some("app:v1"));
    env.wait_complete("rb", 2).await;
    let events = env.events_for("rb").await?;
    assert!(
        events
            .iter()
            .any(|(reason, msg)| reason == "DeploymentRollback" && msg.contains("to revision 1")),
        "no DeploymentRollback event in {events:?}"
    );
    env.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_orphan_replica_set_with_the_template_is_adopted() -> Result<()> {
    let env = Env::start().await;
    let api = env.deployments();
    let d = deployment("adopt", 2, "app:v1");
    let template = d.spec.as_ref().unwrap().template.clone();
    let orphan = ReplicaSet {
        metadata: kube::api::ObjectMeta {
            name: Some("adopt-orphan".into()),
            labels: template.metadata.as_ref().unwrap().labels.clone(),
            ..Default::default()
        },
        spec: Some(k8s_openapi::api::apps::v1::ReplicaSetSpec {
            replicas: Some(2),
            selector: d.spec.as_ref().unwrap().selector.clone(),
            template: Some(template),
            ..Default::default()
        }),
        status: None,
    };
    env.replica_set_api()
        .create(&Default::default(), &orphan)
        .await?;
    let created = api.create(&Default::default(), &d).await?;
    env.wait_complete("adopt", 2).await;
    let rss = env.replica_sets("app=adopt").await?;
    assert_eq!(rss.len(), 1, "the orphan is the new replica set: {rss:?}");
    let owner = rss[0].metadata.owner_references.as_ref().unwrap();
    assert_eq!(owner[0].uid, created.metadata.uid.unwrap());
    assert_eq!(owner[0].controller, Some(true));
    env.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_hash_collision_bumps_the_collision_count() -> Result<()> {
    let env = Env::start().await;
    let api = env.deployments();
    let mut d = deployment("coll", 1, "app:v1");
    d.spec.as_mut().unwrap().paused = Some(true);
    api.create(&Default::default(), &d).await?;
    // The name the controller will try: the hash of the template as stored (with defaults).
    let stored = api.get("coll").await?;
    let hash =
        rkcm_controllers::deployment::hash::compute_hash(&stored.spec.unwrap().template, None);
    let squatter = ReplicaSet {
        metadata: kube::api::ObjectMeta {
            name: Some(format!("coll-{hash}")),
            labels: Some([("app".to_string(), "other".to_string())].into()),
            ..Default::default()
        },
        spec: Some(k8s_openapi::api::apps::v1::ReplicaSetSpec {
            replicas: Some(0),
            selector: k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector {
                match_labels: Some([("app".to_string(), "other".to_string())].into()),
                ..Default::default()
            },
            template: Some(deployment("other", 0, "other:v1").spec.unwrap().template),
            ..Default::default()
        }),
        status: None,
    };
    env.replica_set_api()
        .create(&Default::default(), &squatter)
        .await?;
    api.patch(
        "coll",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"paused": false}})),
    )
    .await?;
    env.wait_complete("coll", 1).await;
    let d = api.get("coll").await?;
    assert_eq!(d.status.unwrap().collision_count, Some(1));
    let rss = env.replica_sets("app=coll").await?;
    assert_eq!(rss.len(), 1);
    assert_ne!(
        rss[0].metadata.name.as_deref(),
        Some(format!("coll-{hash}").as_str())
    );
    env.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn rollout_restart_creates_a_new_revision() -> Result<()> {
    let env = Env::start().await;
    let api = env.deployments();
    api.create(&Default::default(), &deployment("restart", 2, "app:v1"))
        .await?;
    env.wait_complete("restart", 2).await;
    // What `kubectl rollout restart` sends.
    let patch = json!({"spec": {"template": {"metadata": {"annotations": {"kubectl.kubernetes.io/restartedAt": "2026-01-01T00:00:00Z"}}}}});
    api.patch("restart", &PatchParams::default(), &Patch::Strategic(patch))
        .await?;
    env.wait_complete("restart", 2).await;
    let rss = env.replica_sets("app=restart").await?;
    let mut revisions: Vec<String> = rss.iter().filter_map(revision_of).collect();
    revisions.sort();
    assert_eq!(revisions, ["1", "2"]);
    let events = env.events_for("restart").await?;
    assert!(
        events
            .iter()
            .any(|(reason, msg)| reason == "ScalingReplicaSet"
                && msg.starts_with("Scaled up replica set restart-")),
        "no ScalingReplicaSet event in {events:?}"
    );
    env.stop().await;
    Ok(())
}

/// The issue-8 benchmark: a rolling update of many Deployments at once. Sizes come from
/// `BENCH_DEPLOYMENTS` (100) and `BENCH_REPLICAS` (20). Run with
/// `cargo test --release -p rkcm-controllers --test deployment -- --ignored --nocapture bench`.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "benchmark"]
async fn bench_rolling_update_of_many_deployments() -> Result<()> {
    let n: usize = std::env::var("BENCH_DEPLOYMENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let replicas: i32 = std::env::var("BENCH_REPLICAS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let writes = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let env = Env::start_counting(writes.clone()).await;
    let api = env.deployments();
    let names: Vec<String> = (0..n).map(|i| format!("bench-{i}")).collect();
    for name in &names {
        api.create(&Default::default(), &deployment(name, replicas, "app:v1"))
            .await?;
    }
    for name in &names {
        env.wait_complete(name, replicas).await;
    }
    let before = writes.load(std::sync::atomic::Ordering::Relaxed);
    let cpu_before = process::cpu_seconds();
    let started = std::time::Instant::now();
    for name in &names {
        set_image(&api, name, "app:v2").await?;
    }
    for name in &names {
        env.wait_complete(name, replicas).await;
    }
    let elapsed = started.elapsed();
    let cpu = process::cpu_seconds() - cpu_before;
    let rollout_writes = writes.load(std::sync::atomic::Ordering::Relaxed) - before;
    let replaced = n as f64 * f64::from(replicas);
    println!(
        "deployments={n} replicas={replicas} rollout_time={:.2}s deployment_controller_writes={rollout_writes} \
         writes_per_replaced_pod={:.2} process_cpu_seconds={cpu:.2} peak_rss_mib={:.1}",
        elapsed.as_secs_f64(),
        rollout_writes as f64 / replaced,
        process::peak_rss_kib() as f64 / 1024.0,
    );
    env.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_rollover_mid_rollout_ends_on_the_latest_template() -> Result<()> {
    let env = Env::start().await;
    let api = env.deployments();
    let mut d = deployment("roll", 4, "app:v1");
    d.spec.as_mut().unwrap().min_ready_seconds = Some(0);
    api.create(&Default::default(), &d).await?;
    env.wait_complete("roll", 4).await;
    // v2 never becomes ready; v3 replaces it before it finishes.
    set_image(&api, "roll", NEVER_READY_IMAGE).await?;
    eventually("the v2 replica set to exist", || async {
        let rss = env.replica_sets("app=roll").await.ok()?;
        rss.iter()
            .any(|rs| image_of(rs).as_deref() == Some(NEVER_READY_IMAGE) && rs_size(rs) > 0)
            .then_some(())
    })
    .await;
    set_image(&api, "roll", "app:v3").await?;
    env.wait_complete("roll", 4).await;
    let rss = env.replica_sets("app=roll").await?;
    let sizes: BTreeMap<String, i32> = rss
        .iter()
        .map(|rs| (image_of(rs).unwrap_or_default(), rs_size(rs)))
        .collect();
    assert_eq!(sizes.get("app:v3"), Some(&4));
    assert_eq!(sizes.get("app:v1"), Some(&0));
    assert_eq!(sizes.get(NEVER_READY_IMAGE), Some(&0));
    let revisions: Vec<String> = rss.iter().filter_map(revision_of).collect();
    assert!(revisions.contains(&"3".to_string()), "{revisions:?}");
    env.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn min_ready_seconds_and_annotations_reach_the_replica_set() -> Result<()> {
    let env = Env::start().await;
    let api = env.deployments();
    let mut d = deployment("mrs", 1, "app:v1");
    d.spec.as_mut().unwrap().min_ready_seconds = Some(1);
    d.metadata.annotations = Some([("team".to_string(), "web".to_string())].into());
    api.create(&Default::default(), &d).await?;
    env.wait_complete("mrs", 1).await;
    let rss = env.replica_sets("app=mrs").await?;
    assert_eq!(rss.len(), 1);
    assert_eq!(rss[0].spec.as_ref().unwrap().min_ready_seconds, Some(1));
    let annotations = rss[0].metadata.annotations.clone().unwrap_or_default();
    assert_eq!(annotations.get("team").map(String::as_str), Some("web"));
    assert_eq!(
        annotations
            .get("deployment.kubernetes.io/desired-replicas")
            .map(String::as_str),
        Some("1")
    );
    assert_eq!(
        annotations
            .get("deployment.kubernetes.io/max-replicas")
            .map(String::as_str),
        Some("2")
    );
    env.stop().await;
    Ok(())
}
