//! One HorizontalPodAutoscaler served in autoscaling/v1 and autoscaling/v2: written in either
//! version, read, listed, patched and watched in both, with kube's conversion.

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::autoscaling::{v1, v2};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use rkcm_apiserver::testing;
use serde_json::json;

#[tokio::test]
async fn a_v1_hpa_is_one_object_in_both_versions() {
    let server = testing::start().await;
    let v1_api: Api<v1::HorizontalPodAutoscaler> = Api::namespaced(server.client(), "default");
    let v2_api: Api<v2::HorizontalPodAutoscaler> = Api::namespaced(server.client(), "default");
    let hpa: v1::HorizontalPodAutoscaler = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                 "maxReplicas": 3, "targetCPUUtilizationPercentage": 50},
    }))
    .expect("hpa");
    let created = v1_api
        .create(&PostParams::default(), &hpa)
        .await
        .expect("create in v1");
    let spec = created.spec.expect("spec");
    assert_eq!(spec.target_cpu_utilization_percentage, Some(50));
    assert_eq!(spec.min_replicas, Some(1), "defaulted");

    let as_v2 = v2_api.get("web").await.expect("read in v2");
    let metrics = as_v2.spec.expect("spec").metrics.expect("metrics");
    assert_eq!(metrics.len(), 1);
    let resource = metrics[0].resource.as_ref().expect("resource metric");
    assert_eq!(
        (resource.name.as_str(), resource.target.average_utilization),
        ("cpu", Some(50))
    );

    // A v2-only metric survives a v1 round trip in kube's annotation.
    v2_api
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"metrics": [
                {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}},
                {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "100Mi"}}},
            ]}})),
        )
        .await
        .expect("patch in v2");
    let read = v1_api.get("web").await.expect("read in v1");
    let annotations = read.metadata.annotations.clone().unwrap_or_default();
    assert!(
        annotations["autoscaling.alpha.kubernetes.io/metrics"].contains("memory"),
        "{annotations:?}"
    );
    // Patches in v1 are applied to the v1 object; the memory metric stays.
    let patched = v1_api
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"spec": {"targetCPUUtilizationPercentage": 70, "maxReplicas": 4}}),
            ),
        )
        .await
        .expect("patch in v1");
    assert_eq!(
        patched
            .spec
            .expect("spec")
            .target_cpu_utilization_percentage,
        Some(70)
    );
    let metrics = v2_api
        .get("web")
        .await
        .expect("read in v2")
        .spec
        .expect("spec")
        .metrics
        .expect("metrics");
    let names: Vec<&str> = metrics
        .iter()
        .filter_map(|m| m.resource.as_ref().map(|r| r.name.as_str()))
        .collect();
    assert_eq!(names, ["memory", "cpu"]);

    // Invalid objects are refused with kube's field path whatever the version.
    let bad: v1::HorizontalPodAutoscaler = serde_json::from_value(json!({
        "metadata": {"name": "bad"},
        "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 0},
    }))
    .expect("hpa");
    let err = v1_api
        .create(&PostParams::default(), &bad)
        .await
        .expect_err("maxReplicas 0 is invalid");
    match err {
        kube::Error::Api(s) => {
            assert_eq!(s.code, 422);
            assert!(s.message.contains("spec.maxReplicas"), "{}", s.message);
        }
        e => panic!("unexpected {e}"),
    }

    let list = v1_api
        .list(&ListParams::default())
        .await
        .expect("list in v1");
    assert_eq!(list.items.len(), 1);
    assert_eq!(
        list.items[0]
            .spec
            .as_ref()
            .and_then(|s| s.target_cpu_utilization_percentage),
        Some(70)
    );

    // Watch in v1 sees a v2 write as a v1 object.
    let rv = list.metadata.resource_version.clone().expect("rv");
    let mut events = v1_api
        .watch(&WatchParams::default().timeout(10), &rv)
        .await
        .expect("watch in v1")
        .boxed();
    v2_api
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"maxReplicas": 6}})),
        )
        .await
        .expect("patch in v2");
    let event = tokio::time::timeout(std::time::Duration::from_secs(10), events.try_next())
        .await
        .expect("a watch event within 10s (the converted stream probably stalls)")
        .expect("watch stream")
        .expect("an event");
    match event {
        WatchEvent::Modified(obj) => {
            let spec = obj.spec.expect("spec");
            assert_eq!(
                (spec.max_replicas, spec.target_cpu_utilization_percentage),
                (6, Some(70))
            );
        }
        e => panic!("unexpected {e:?}"),
    }
    server.stop().await;
}
