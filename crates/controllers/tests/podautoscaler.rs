//! The horizontal pod autoscaler against the in-process API server serving `metrics.k8s.io` from
//! a fixed source: a ReplicaSet (found through discovery, scaled through its `/scale`) is scaled up
//! as far as its `behavior` allows.

mod support;

use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, PostParams};
use rkcm_apiserver::resource_metrics::{ContainerUsage, MetricsSource, PodUsage, UsageSnapshot};
use rkcm_controllers::registry::{self, ControllerOptions};
use support::{eventually, Cluster, NS};

struct Fixed(Arc<UsageSnapshot>);

impl MetricsSource for Fixed {
    fn snapshot(&self) -> Option<Arc<UsageSnapshot>> {
        Some(Arc::clone(&self.0))
    }
}

fn usage(pods: &[&str], cpu_millis: i64) -> Fixed {
    Fixed(Arc::new(UsageSnapshot {
        timestamp: jiff::Timestamp::now(),
        window: Duration::from_secs(15),
        pods: pods
            .iter()
            .map(|name| PodUsage {
                namespace: NS.into(),
                name: name.to_string(),
                labels: [("app".to_string(), "rs".to_string())]
                    .into_iter()
                    .collect(),
                containers: vec![ContainerUsage {
                    name: "c".into(),
                    cpu_nanocores: cpu_millis * 1_000_000,
                    memory_bytes: 0,
                }],
            })
            .collect(),
        nodes: Vec::new(),
    }))
}

async fn running_pod(client: &kube::Client, name: &str) -> Result<()> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    let pod: Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "labels": {"app": "rs"}},
        "spec": {"containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "100m"}}}]},
    }))?;
    let mut created = pods.create(&PostParams::default(), &pod).await?;
    let long_ago = (jiff::Timestamp::now() - jiff::SignedDuration::from_hours(1)).to_string();
    created.status = Some(serde_json::from_value(serde_json::json!({
        "phase": "Running",
        "startTime": long_ago,
        "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": long_ago}],
    }))?);
    pods.replace_status(name, &PostParams::default(), &created)
        .await?;
    Ok(())
}

#[tokio::test]
async fn a_replicaset_is_scaled_up_as_far_as_its_behavior_allows() -> Result<()> {
    let server = rkcm_apiserver::testing::start_with_metrics(
        rkcm_apiserver::testing::config(),
        Arc::new(usage(&["p1", "p2"], 300)),
    )
    .await;
    let cluster = Cluster::on(server);
    let client = cluster.client.clone();
    let rs: ReplicaSet = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "rs"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "rs"}},
            "template": {"metadata": {"labels": {"app": "rs"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}},
        },
    }))?;
    Api::<ReplicaSet>::namespaced(client.clone(), NS)
        .create(&PostParams::default(), &rs)
        .await?;
    running_pod(&client, "p1").await?;
    running_pod(&client, "p2").await?;
    let hpa: HorizontalPodAutoscaler = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "rs"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs"},
            "minReplicas": 1,
            "maxReplicas": 10,
            "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}],
            "behavior": {"scaleUp": {"policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}]}},
        },
    }))?;
    let hpas: Api<HorizontalPodAutoscaler> = Api::namespaced(client.clone(), NS);
    hpas.create(&PostParams::default(), &hpa).await?;
    cluster
        .start_registered(
            &[registry::HORIZONTAL_POD_AUTOSCALER],
            ControllerOptions {
                horizontal_pod_autoscaler_sync_period: Duration::from_millis(200),
                ..ControllerOptions::default()
            },
        )
        .await?;

    // 300m of 100m is 300 % against 50 %: kube asks for ceil(2 × 6) = 12, the policy allows one
    // more pod per minute.
    let rss: Api<ReplicaSet> = Api::namespaced(client.clone(), NS);
    eventually("the ReplicaSet scaled to 3", || async {
        let rs = rss.get("rs").await?;
        Ok((rs.spec.and_then(|s| s.replicas) == Some(3)).then_some(()))
    })
    .await?;
    let status = eventually("the HPA status", || async {
        let hpa = hpas.get("rs").await?;
        Ok(hpa
            .status
            .filter(|s| s.desired_replicas == 3 && s.last_scale_time.is_some()))
    })
    .await?;
    let conditions = status.conditions.unwrap_or_default();
    let limited = conditions
        .iter()
        .find(|c| c.type_ == "ScalingLimited")
        .expect("ScalingLimited set");
    assert_eq!(
        (limited.status.as_str(), limited.reason.as_deref()),
        ("True", Some("ScaleUpLimit"))
    );
    let current = &status.current_metrics.unwrap_or_default()[0];
    assert_eq!(
        current
            .resource
            .as_ref()
            .and_then(|r| r.current.average_utilization),
        Some(300)
    );
    // Within the policy period the next syncs add nothing: AbleToScale leaves SucceededRescale.
    eventually("a later sync that did not rescale", || async {
        let hpa = hpas.get("rs").await?;
        let settled = hpa
            .status
            .and_then(|s| s.conditions)
            .unwrap_or_default()
            .iter()
            .any(|c| c.type_ == "AbleToScale" && c.reason.as_deref() == Some("ReadyForNewScale"));
        Ok(settled.then_some(()))
    })
    .await?;
    let rs = rss.get("rs").await?;
    assert_eq!(rs.spec.and_then(|s| s.replicas), Some(3));
    cluster.stop().await;
    Ok(())
}
