//! Builders for Deployments and ReplicaSets in unit tests, shaped like the helpers of kube's
//! deployment controller tests (`newDeployment`, `rs`, `newRSWithStatus`, `generateDeployment`).

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{
    Deployment, DeploymentSpec, DeploymentStrategy, ReplicaSet, ReplicaSetSpec, ReplicaSetStatus,
    RollingUpdateDeployment,
};
use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, OwnerReference, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::ObjectMeta;

use super::spec::ROLLING_UPDATE;

fn labels(selector: &[(&str, &str)]) -> BTreeMap<String, String> {
    selector
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A timestamp `secs` after a fixed point (2016-05-20T00:00:00Z).
pub fn ts(secs: i64) -> Time {
    Time(jiff::Timestamp::from_second(1_463_702_400 + secs).expect("valid timestamp"))
}

/// kube's `newDeployment`: RollingUpdate with maxSurge and maxUnavailable 0 unless given.
pub fn new_deployment(
    name: &str,
    replicas: i32,
    revision_history_limit: Option<i32>,
    max_surge: Option<IntOrString>,
    max_unavailable: Option<IntOrString>,
    selector: &[(&str, &str)],
) -> Deployment {
    let selector = labels(selector);
    Deployment {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            uid: Some(format!("uid-{name}")),
            annotations: Some(BTreeMap::new()),
            ..Default::default()
        },
        spec: Some(DeploymentSpec {
            replicas: Some(replicas),
            revision_history_limit,
            selector: LabelSelector {
                match_labels: Some(selector.clone()),
                ..Default::default()
            },
            strategy: Some(DeploymentStrategy {
                type_: Some(ROLLING_UPDATE.into()),
                rolling_update: Some(RollingUpdateDeployment {
                    max_surge: Some(max_surge.unwrap_or(IntOrString::Int(0))),
                    max_unavailable: Some(max_unavailable.unwrap_or(IntOrString::Int(0))),
                }),
            }),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(selector),
                    ..Default::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "foo".into(),
                        image: Some("foo/bar".into()),
                        ..Default::default()
                    }],
                    ..Default::default()
                }),
            },
            ..Default::default()
        }),
        status: None,
    }
}

/// A RollingUpdate Deployment with the given size and fenceposts.
pub fn deployment_with_strategy(
    replicas: i32,
    max_surge: IntOrString,
    max_unavailable: IntOrString,
) -> Deployment {
    new_deployment(
        "foo",
        replicas,
        None,
        Some(max_surge),
        Some(max_unavailable),
        &[("foo", "bar")],
    )
}

/// kube's `rs`: a ReplicaSet of `replicas` (spec only) created at `created`.
pub fn rs(
    name: &str,
    replicas: i32,
    selector: &[(&str, &str)],
    created: Option<Time>,
) -> ReplicaSet {
    ReplicaSet {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            uid: Some(format!("uid-{name}")),
            creation_timestamp: created,
            ..Default::default()
        },
        spec: Some(ReplicaSetSpec {
            replicas: Some(replicas),
            selector: LabelSelector {
                match_labels: Some(labels(selector)),
                ..Default::default()
            },
            template: Some(PodTemplateSpec::default()),
            ..Default::default()
        }),
        status: None,
    }
}

/// kube's `newRSWithStatus`: spec and status replicas.
pub fn new_rs_with_status(
    name: &str,
    spec_replicas: i32,
    status_replicas: i32,
    selector: &[(&str, &str)],
) -> ReplicaSet {
    let mut r = rs(name, spec_replicas, selector, None);
    r.status = Some(ReplicaSetStatus {
        replicas: status_replicas,
        ..Default::default()
    });
    r
}

/// Sets `status.availableReplicas`.
pub fn with_available(mut r: ReplicaSet, available: i32) -> ReplicaSet {
    r.status
        .get_or_insert_with(Default::default)
        .available_replicas = Some(available);
    r
}

/// kube's `generateDeployment(image)`: one replica, selector `name=<image>`.
pub fn generate_deployment(image: &str) -> Deployment {
    let mut d = new_deployment(image, 1, None, None, None, &[("name", image)]);
    let spec = d.spec.as_mut().expect("built with a spec");
    spec.template
        .spec
        .as_mut()
        .expect("built with a pod spec")
        .containers = vec![Container {
        name: image.into(),
        image: Some(image.into()),
        image_pull_policy: Some("Always".into()),
        termination_message_path: Some("/dev/termination-log".into()),
        ..Default::default()
    }];
    d
}

/// kube's `generateRS(deployment)`: a ReplicaSet of zero replicas with the Deployment's template,
/// controlled by it.
pub fn generate_rs(d: &Deployment) -> ReplicaSet {
    let template = d
        .spec
        .as_ref()
        .expect("deployment with spec")
        .template
        .clone();
    let labels = template.metadata.as_ref().and_then(|m| m.labels.clone());
    let name = format!("replicaset-{}", rand::random::<u32>());
    ReplicaSet {
        metadata: ObjectMeta {
            uid: Some(format!("uid-{name}")),
            name: Some(name),
            namespace: d.metadata.namespace.clone(),
            labels: labels.clone(),
            owner_references: Some(vec![OwnerReference {
                api_version: "apps/v1".into(),
                kind: "Deployment".into(),
                name: d.metadata.name.clone().unwrap_or_default(),
                uid: d.metadata.uid.clone().unwrap_or_default(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]),
            ..Default::default()
        },
        spec: Some(ReplicaSetSpec {
            replicas: Some(0),
            selector: LabelSelector {
                match_labels: labels,
                ..Default::default()
            },
            template: Some(template),
            ..Default::default()
        }),
        status: None,
    }
}
