//! Builders of the objects the disruption controller's tests use (`disruption_test.go`'s
//! `newPod`, `newReplicaSet`, … helpers).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use k8s_openapi::api::apps::v1::{
    Deployment, DeploymentSpec, ReplicaSet, ReplicaSetSpec, StatefulSet, StatefulSetSpec,
};
use k8s_openapi::api::core::v1::{
    Pod, PodCondition, PodStatus, ReplicationController, ReplicationControllerSpec,
};
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

fn meta(name: &str) -> ObjectMeta {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    ObjectMeta {
        name: Some(name.into()),
        namespace: Some("default".into()),
        uid: Some(format!("uid-{}", NEXT.fetch_add(1, Ordering::Relaxed))),
        resource_version: Some("18".into()),
        generation: Some(1),
        labels: Some(foo_bar()),
        ..ObjectMeta::default()
    }
}

/// `{"foo": "bar"}`, the labels every fixture carries.
pub fn foo_bar() -> BTreeMap<String, String> {
    BTreeMap::from([("foo".to_string(), "bar".to_string())])
}

/// The UID of `obj`.
pub fn uid_of<K: kube::Resource>(obj: &K) -> String {
    obj.meta().uid.clone().unwrap_or_default()
}

/// A controller reference.
pub fn controller_ref(api_version: &str, kind: &str, name: &str, uid: String) -> OwnerReference {
    OwnerReference {
        api_version: api_version.into(),
        kind: kind.into(),
        name: name.into(),
        uid,
        controller: Some(true),
        ..OwnerReference::default()
    }
}

/// A ready, running pod labelled `foo=bar`.
pub fn pod(name: &str) -> Pod {
    Pod {
        metadata: meta(name),
        status: Some(PodStatus {
            phase: Some("Running".into()),
            conditions: Some(vec![PodCondition {
                type_: "Ready".into(),
                status: "True".into(),
                ..PodCondition::default()
            }]),
            ..PodStatus::default()
        }),
        ..Pod::default()
    }
}

/// A budget selecting `foo=bar` with `minAvailable` or `maxUnavailable`.
pub fn pdb(
    min_available: Option<IntOrString>,
    max_unavailable: Option<IntOrString>,
) -> PodDisruptionBudget {
    PodDisruptionBudget {
        metadata: meta("foobar"),
        spec: Some(PodDisruptionBudgetSpec {
            min_available,
            max_unavailable,
            selector: Some(LabelSelector {
                match_labels: Some(foo_bar()),
                ..LabelSelector::default()
            }),
            ..PodDisruptionBudgetSpec::default()
        }),
        status: None,
    }
}

/// A ReplicaSet of `replicas` selecting `foo=bar`.
pub fn replica_set(name: &str, replicas: i32) -> ReplicaSet {
    ReplicaSet {
        metadata: meta(name),
        spec: Some(ReplicaSetSpec {
            replicas: Some(replicas),
            ..ReplicaSetSpec::default()
        }),
        status: None,
    }
}

/// A Deployment of `replicas`.
pub fn deployment(name: &str, replicas: i32) -> Deployment {
    Deployment {
        metadata: meta(name),
        spec: Some(DeploymentSpec {
            replicas: Some(replicas),
            ..DeploymentSpec::default()
        }),
        status: None,
    }
}

/// A StatefulSet of `replicas`.
pub fn stateful_set(name: &str, replicas: i32) -> StatefulSet {
    StatefulSet {
        metadata: meta(name),
        spec: Some(StatefulSetSpec {
            replicas: Some(replicas),
            ..StatefulSetSpec::default()
        }),
        status: None,
    }
}

/// A ReplicationController of `replicas`.
pub fn replication_controller(name: &str, replicas: i32) -> ReplicationController {
    ReplicationController {
        metadata: meta(name),
        spec: Some(ReplicationControllerSpec {
            replicas: Some(replicas),
            ..ReplicationControllerSpec::default()
        }),
        status: None,
    }
}
