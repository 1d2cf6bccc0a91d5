//! PodDisruptionBudgets, HorizontalPodAutoscalers, RBAC and PriorityClasses through the API:
//! defaults and initial status as kube writes them, 422s with kube's messages, nothing
//! written on bad input.

use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::rbac::v1::RoleBinding;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

fn api_err(e: kube::Error) -> kube::core::Status {
    match e {
        kube::Error::Api(s) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_pdb_gets_its_zero_status_and_bad_budgets_are_refused() {
    let server = rkcm_apiserver::testing::start().await;
    let pdbs: Api<PodDisruptionBudget> = Api::namespaced(server.client(), "default");
    let good: PodDisruptionBudget = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}
    }))
    .expect("pdb");
    let created = pdbs
        .create(&PostParams::default(), &good)
        .await
        .expect("create");
    assert_eq!(created.metadata.generation, Some(1));
    let status = created.status.expect("status");
    assert_eq!(
        (
            status.disruptions_allowed,
            status.current_healthy,
            status.desired_healthy,
            status.expected_pods
        ),
        (0, 0, 0, 0)
    );

    let bad: PodDisruptionBudget = serde_json::from_value(json!({
        "metadata": {"name": "bad"}, "spec": {"maxUnavailable": "150%"}
    }))
    .expect("pdb");
    let status = api_err(
        pdbs.create(&PostParams::default(), &bad)
            .await
            .expect_err("invalid"),
    );
    assert_eq!(status.code, 422);
    assert_eq!(
        status.message,
        "PodDisruptionBudget.policy \"bad\" is invalid: spec.maxUnavailable: Invalid value: \"150%\": must not be greater than 100%"
    );
    assert!(pdbs.get_opt("bad").await.expect("get").is_none());
}

#[tokio::test]
async fn an_hpa_is_defaulted_as_autoscaling_v2() {
    let server = rkcm_apiserver::testing::start().await;
    let hpas: Api<HorizontalPodAutoscaler> = Api::namespaced(server.client(), "default");
    let hpa: HorizontalPodAutoscaler = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "maxReplicas": 4, "behavior": {"scaleDown": {"stabilizationWindowSeconds": 30}}}
    }))
    .expect("hpa");
    let created = hpas
        .create(&PostParams::default(), &hpa)
        .await
        .expect("create");
    let spec = created.spec.expect("spec");
    assert_eq!(spec.min_replicas, Some(1));
    let metric = &spec.metrics.expect("metrics")[0];
    assert_eq!(
        metric
            .resource
            .as_ref()
            .and_then(|r| r.target.average_utilization),
        Some(80)
    );
    let down = spec.behavior.and_then(|b| b.scale_down).expect("scaleDown");
    assert_eq!(down.stabilization_window_seconds, Some(30));
    assert_eq!(down.select_policy.as_deref(), Some("Max"));

    let status = api_err(
        hpas.patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"minReplicas": 5}})),
        )
        .await
        .expect_err("invalid"),
    );
    assert_eq!(status.code, 422);
    assert!(
        status.message.ends_with(
            "spec.maxReplicas: Invalid value: 4: must be greater than or equal to `minReplicas`"
        ),
        "{}",
        status.message
    );
}

#[tokio::test]
async fn role_refs_and_priority_class_values_do_not_change() {
    let server = rkcm_apiserver::testing::start().await;
    let bindings: Api<RoleBinding> = Api::namespaced(server.client(), "default");
    let rb: RoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "viewers"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [{"kind": "Group", "name": "devs", "apiGroup": "rbac.authorization.k8s.io"}]
    }))
    .expect("binding");
    bindings
        .create(&PostParams::default(), &rb)
        .await
        .expect("create");
    let status = api_err(
        bindings
            .patch(
                "viewers",
                &PatchParams::default(),
                &Patch::Merge(json!({"roleRef": {"name": "edit"}})),
            )
            .await
            .expect_err("immutable"),
    );
    assert_eq!(
        status.message,
        "RoleBinding.rbac.authorization.k8s.io \"viewers\" is invalid: roleRef: Invalid value: rbac.RoleRef{APIGroup:\"rbac.authorization.k8s.io\", Kind:\"ClusterRole\", Name:\"edit\"}: cannot change roleRef"
    );

    let classes: Api<PriorityClass> = Api::all(server.client());
    let pc: PriorityClass =
        serde_json::from_value(json!({"metadata": {"name": "high"}, "value": 1000})).expect("pc");
    let created = classes
        .create(&PostParams::default(), &pc)
        .await
        .expect("create");
    assert_eq!(
        created.preemption_policy.as_deref(),
        Some("PreemptLowerPriority")
    );
    let status = api_err(
        classes
            .patch(
                "high",
                &PatchParams::default(),
                &Patch::Merge(json!({"value": 2000})),
            )
            .await
            .expect_err("immutable"),
    );
    assert_eq!(
        status.message,
        "PriorityClass.scheduling.k8s.io \"high\" is invalid: value: Forbidden: may not be changed in an update."
    );
    let reserved: PriorityClass =
        serde_json::from_value(json!({"metadata": {"name": "system-mine"}, "value": 1}))
            .expect("pc");
    let status = api_err(
        classes
            .create(&PostParams::default(), &reserved)
            .await
            .expect_err("reserved"),
    );
    assert_eq!(status.code, 422);
}

#[tokio::test]
async fn the_built_in_priority_classes_exist_from_the_start() {
    let server = rkcm_apiserver::testing::start().await;
    let classes: Api<PriorityClass> = Api::all(server.client());
    let node = classes
        .get("system-node-critical")
        .await
        .expect("system-node-critical exists");
    assert_eq!(node.value, 2_000_001_000);
    let cluster = classes
        .get("system-cluster-critical")
        .await
        .expect("system-cluster-critical exists");
    assert_eq!(cluster.value, 2_000_000_000);
    assert_eq!(
        cluster.preemption_policy.as_deref(),
        Some("PreemptLowerPriority")
    );
    server.stop().await;
}
