//! Gives back the spare capacity decoding leaves in cached objects.
//!
//! serde grows a JSON array's `Vec` as it reads it, so a list of one to three small elements keeps
//! room for four: on a pod with a service-account volume, tolerations and a volume mount, about
//! 1.6 KB of the 12 KB a decoded `k8s_openapi` Pod takes. A cache holds its objects for their
//! whole life, so the informer trims that capacity once, before caching; the content is unchanged.

use std::any::Any;

use k8s_openapi::api::core::v1::{Container, Pod, PodSpec, PodStatus, Volume};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// Trims the spare capacity of `obj` where its type is known to carry some (pods); other types
/// are left as they are.
pub(crate) fn shrink<K: Any>(obj: &mut K) {
    let obj: &mut dyn Any = obj;
    if let Some(pod) = obj.downcast_mut::<Pod>() {
        shrink_pod(pod);
    }
}

fn fit<T>(v: &mut Option<Vec<T>>) -> Option<&mut Vec<T>> {
    let v = v.as_mut()?;
    v.shrink_to_fit();
    Some(v)
}

fn shrink_meta(meta: &mut ObjectMeta) {
    fit(&mut meta.owner_references);
    fit(&mut meta.finalizers);
    fit(&mut meta.managed_fields);
}

/// Trims the spare capacity of every list in `pod`.
fn shrink_pod(pod: &mut Pod) {
    shrink_meta(&mut pod.metadata);
    if let Some(spec) = &mut pod.spec {
        shrink_spec(spec);
    }
    if let Some(status) = &mut pod.status {
        shrink_status(status);
    }
}

fn shrink_spec(spec: &mut PodSpec) {
    for containers in [&mut spec.containers]
        .into_iter()
        .chain(spec.init_containers.as_mut())
    {
        containers.shrink_to_fit();
        containers.iter_mut().for_each(shrink_container);
    }
    if let Some(ephemeral) = fit(&mut spec.ephemeral_containers) {
        for c in ephemeral {
            fit(&mut c.args);
            fit(&mut c.command);
            fit(&mut c.env);
            fit(&mut c.env_from);
            fit(&mut c.ports);
            fit(&mut c.volume_mounts);
            fit(&mut c.volume_devices);
            fit(&mut c.resize_policy);
        }
    }
    if let Some(volumes) = fit(&mut spec.volumes) {
        volumes.iter_mut().for_each(shrink_volume);
    }
    fit(&mut spec.tolerations);
    fit(&mut spec.image_pull_secrets);
    fit(&mut spec.host_aliases);
    fit(&mut spec.readiness_gates);
    fit(&mut spec.resource_claims);
    fit(&mut spec.scheduling_gates);
    fit(&mut spec.topology_spread_constraints);
}

fn shrink_container(c: &mut Container) {
    fit(&mut c.args);
    fit(&mut c.command);
    fit(&mut c.env);
    fit(&mut c.env_from);
    fit(&mut c.ports);
    fit(&mut c.volume_mounts);
    fit(&mut c.volume_devices);
    fit(&mut c.resize_policy);
}

fn shrink_volume(v: &mut Volume) {
    if let Some(projected) = &mut v.projected {
        if let Some(sources) = fit(&mut projected.sources) {
            for source in sources {
                if let Some(cm) = &mut source.config_map {
                    fit(&mut cm.items);
                }
                if let Some(secret) = &mut source.secret {
                    fit(&mut secret.items);
                }
                if let Some(downward) = &mut source.downward_api {
                    fit(&mut downward.items);
                }
            }
        }
    }
    if let Some(cm) = &mut v.config_map {
        fit(&mut cm.items);
    }
    if let Some(secret) = &mut v.secret {
        fit(&mut secret.items);
    }
    if let Some(downward) = &mut v.downward_api {
        fit(&mut downward.items);
    }
}

fn shrink_status(status: &mut PodStatus) {
    fit(&mut status.conditions);
    fit(&mut status.container_statuses);
    fit(&mut status.init_container_statuses);
    fit(&mut status.ephemeral_container_statuses);
    fit(&mut status.pod_ips);
    fit(&mut status.host_ips);
    fit(&mut status.resource_claim_statuses);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pod decoded from JSON text, as the reflector decodes (a `serde_json::Value` would tell
    /// serde every list's length).
    fn decoded() -> Pod {
        let text = serde_json::json!({
            "metadata": {"name": "p", "namespace": "default", "finalizers": ["a"]},
            "spec": {
                "containers": [{"name": "c", "image": "i", "args": ["x"],
                    "volumeMounts": [{"name": "v", "mountPath": "/v"}]}],
                "tolerations": [{"key": "a", "operator": "Exists"}],
                "volumes": [{"name": "v", "projected": {"sources": [
                    {"configMap": {"name": "c", "items": [{"key": "k", "path": "p"}]}},
                    {"downwardAPI": {"items": [{"path": "n", "fieldRef": {"fieldPath": "metadata.namespace"}}]}}
                ]}}]
            },
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}
        })
        .to_string();
        serde_json::from_str(&text).expect("a pod")
    }

    #[test]
    fn a_decoded_pod_keeps_its_content_and_loses_its_spare_capacity() {
        let mut pod = decoded();
        let spec = pod.spec.as_ref().expect("spec");
        assert!(
            spec.tolerations.as_ref().expect("tolerations").capacity() > 1,
            "serde leaves room: this test would prove nothing otherwise"
        );
        let before = pod.clone();
        shrink(&mut pod);
        assert_eq!(pod, before, "content unchanged");
        let spec = pod.spec.as_ref().expect("spec");
        let container = &spec.containers[0];
        let projected = spec.volumes.as_ref().expect("volumes")[0]
            .projected
            .as_ref()
            .expect("projected");
        let sources = projected.sources.as_ref().expect("sources");
        let capacities = [
            spec.tolerations.as_ref().map(Vec::capacity),
            container.args.as_ref().map(Vec::capacity),
            container.volume_mounts.as_ref().map(Vec::capacity),
            pod.metadata.finalizers.as_ref().map(Vec::capacity),
            sources[0]
                .config_map
                .as_ref()
                .and_then(|c| c.items.as_ref())
                .map(Vec::capacity),
            sources[1]
                .downward_api
                .as_ref()
                .and_then(|d| d.items.as_ref())
                .map(Vec::capacity),
            pod.status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .map(Vec::capacity),
        ];
        assert_eq!(capacities, [Some(1); 7]);
        assert_eq!(sources.capacity(), 2);
    }

    #[test]
    fn other_types_are_left_alone() {
        let mut v: Vec<u8> = Vec::with_capacity(8);
        v.push(1);
        shrink(&mut v);
        assert_eq!(v.capacity(), 8);
    }
}
