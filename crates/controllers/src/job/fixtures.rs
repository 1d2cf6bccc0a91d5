//! Jobs and pods for the unit tests (job_controller_test.go's `newJob`, `newPod`, …).

use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{Container, Pod, PodSpec, PodStatus, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelector, ObjectMeta, OwnerReference, Time,
};

use super::indexed::JOB_COMPLETION_INDEX_ANNOTATION;
use super::pods::JOB_TRACKING_FINALIZER;

/// A time `s` seconds after a fixed instant.
pub fn ts(s: i64) -> Time {
    Time(jiff::Timestamp::from_second(1_700_000_000 + s).expect("valid"))
}

fn labels() -> BTreeMap<String, String> {
    BTreeMap::from([("foo".to_string(), "bar".to_string())])
}

/// A NonIndexed Job `name` in `default` with `parallelism`, `completions` and backoffLimit 6.
pub fn job(name: &str, parallelism: Option<i32>, completions: Option<i32>) -> Job {
    Job {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            uid: Some(format!("uid-{name}")),
            resource_version: Some("1".into()),
            ..Default::default()
        },
        spec: Some(JobSpec {
            parallelism,
            completions,
            backoff_limit: Some(6),
            selector: Some(LabelSelector {
                match_labels: Some(labels()),
                ..Default::default()
            }),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels()),
                    ..Default::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "c".into(),
                        image: Some("busybox".into()),
                        ..Default::default()
                    }],
                    restart_policy: Some("Never".into()),
                    ..Default::default()
                }),
            },
            ..Default::default()
        }),
        status: None,
    }
}

/// A pod of `job` named `name` in `phase`, with the tracking finalizer and the Job as controller.
pub fn pod(job: &Job, name: &str, phase: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            uid: Some(format!("uid-{name}")),
            resource_version: Some("1".into()),
            labels: Some(labels()),
            finalizers: Some(vec![JOB_TRACKING_FINALIZER.into()]),
            owner_references: Some(vec![OwnerReference {
                api_version: "batch/v1".into(),
                kind: "Job".into(),
                name: job.metadata.name.clone().unwrap_or_default(),
                uid: job.metadata.uid.clone().unwrap_or_default(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]),
            ..Default::default()
        },
        spec: Some(PodSpec::default()),
        status: Some(PodStatus {
            phase: Some(phase.into()),
            ..Default::default()
        }),
    }
}

/// [`pod`] with completion index `index`.
pub fn indexed_pod(job: &Job, name: &str, phase: &str, index: usize) -> Pod {
    let mut p = pod(job, name, phase);
    p.metadata.annotations = Some(BTreeMap::from([(
        JOB_COMPLETION_INDEX_ANNOTATION.to_string(),
        index.to_string(),
    )]));
    p
}

/// [`pod`] created at `s` and, being terminal, marked not ready at `s` (its finish time).
pub fn failed_at(job: &Job, name: &str, phase: &str, s: i64) -> Pod {
    let mut p = pod(job, name, phase);
    p.metadata.creation_timestamp = Some(ts(s));
    p.status.get_or_insert_with(Default::default).conditions =
        Some(vec![k8s_openapi::api::core::v1::PodCondition {
            type_: "Ready".into(),
            status: "False".into(),
            last_transition_time: Some(ts(s)),
            ..Default::default()
        }]);
    p
}
