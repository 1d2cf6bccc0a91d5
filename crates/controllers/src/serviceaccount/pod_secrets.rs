//! The Secrets a pod refers to, as `podutil.VisitPodSecretNames` visits them.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{Container, EphemeralContainer, Pod, Volume};

/// Every Secret name `pod` uses: image pull secrets, `envFrom` and `env` references of every
/// container (init and ephemeral ones too), and the Secrets of its volumes.
pub fn pod_secret_names(pod: &Pod) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let Some(spec) = &pod.spec else {
        return names;
    };
    let mut add = |name: Option<&str>| {
        if let Some(n) = name.filter(|n| !n.is_empty()) {
            names.insert(n.to_string());
        }
    };
    for s in spec.image_pull_secrets.iter().flatten() {
        add(Some(s.name.as_str()));
    }
    let containers = spec
        .containers
        .iter()
        .chain(spec.init_containers.iter().flatten());
    for c in containers {
        visit_container(c, &mut add);
    }
    for c in spec.ephemeral_containers.iter().flatten() {
        visit_ephemeral(c, &mut add);
    }
    for v in spec.volumes.iter().flatten() {
        visit_volume(v, &mut add);
    }
    names
}

fn visit_container(c: &Container, add: &mut impl FnMut(Option<&str>)) {
    for e in c.env_from.iter().flatten() {
        add(e.secret_ref.as_ref().map(|r| r.name.as_str()));
    }
    for e in c.env.iter().flatten() {
        let secret = e
            .value_from
            .as_ref()
            .and_then(|v| v.secret_key_ref.as_ref());
        add(secret.map(|r| r.name.as_str()));
    }
}

fn visit_ephemeral(c: &EphemeralContainer, add: &mut impl FnMut(Option<&str>)) {
    for e in c.env_from.iter().flatten() {
        add(e.secret_ref.as_ref().map(|r| r.name.as_str()));
    }
    for e in c.env.iter().flatten() {
        let secret = e
            .value_from
            .as_ref()
            .and_then(|v| v.secret_key_ref.as_ref());
        add(secret.map(|r| r.name.as_str()));
    }
}

fn visit_volume(v: &Volume, add: &mut impl FnMut(Option<&str>)) {
    if let Some(s) = &v.azure_file {
        add(Some(s.secret_name.as_str()));
    }
    if let Some(s) = &v.cephfs {
        add(s.secret_ref.as_ref().map(|r| r.name.as_str()));
    }
    if let Some(s) = &v.cinder {
        add(s.secret_ref.as_ref().map(|r| r.name.as_str()));
    }
    if let Some(s) = &v.flex_volume {
        add(s.secret_ref.as_ref().map(|r| r.name.as_str()));
    }
    if let Some(p) = &v.projected {
        for source in p.sources.iter().flatten() {
            add(source.secret.as_ref().map(|s| s.name.as_str()));
        }
    }
    if let Some(s) = &v.rbd {
        add(s.secret_ref.as_ref().map(|r| r.name.as_str()));
    }
    if let Some(s) = &v.secret {
        add(s.secret_name.as_deref());
    }
    if let Some(s) = &v.scale_io {
        add(Some(s.secret_ref.name.as_str()));
    }
    if let Some(s) = &v.iscsi {
        add(s.secret_ref.as_ref().map(|r| r.name.as_str()));
    }
    if let Some(s) = &v.storageos {
        add(s.secret_ref.as_ref().map(|r| r.name.as_str()));
    }
    if let Some(s) = &v.csi {
        add(s.node_publish_secret_ref.as_ref().map(|r| r.name.as_str()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Cases of pod_util_test.go's TestPodSecrets.
    #[test]
    fn every_kind_of_secret_reference_is_visited() {
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "spec": {
                "imagePullSecrets": [{"name": "pull"}],
                "containers": [{"name": "c", "envFrom": [{"secretRef": {"name": "env-from"}}],
                    "env": [{"name": "E", "valueFrom": {"secretKeyRef": {"name": "env", "key": "k"}}}]}],
                "initContainers": [{"name": "i", "envFrom": [{"secretRef": {"name": "init-env-from"}}]}],
                "ephemeralContainers": [{"name": "e",
                    "env": [{"name": "E", "valueFrom": {"secretKeyRef": {"name": "ephemeral-env", "key": "k"}}}]}],
                "volumes": [
                    {"name": "a", "secret": {"secretName": "volume"}},
                    {"name": "b", "projected": {"sources": [{"secret": {"name": "projected"}}]}},
                    {"name": "c", "csi": {"driver": "d", "nodePublishSecretRef": {"name": "csi"}}},
                    {"name": "d", "azureFile": {"secretName": "azure", "shareName": "s"}},
                    {"name": "e", "cephfs": {"monitors": ["m"], "secretRef": {"name": "ceph"}}}
                ]
            }
        }))
        .expect("a pod");
        let names: Vec<_> = pod_secret_names(&pod).into_iter().collect();
        assert_eq!(
            names,
            [
                "azure",
                "ceph",
                "csi",
                "env",
                "env-from",
                "ephemeral-env",
                "init-env-from",
                "projected",
                "pull",
                "volume"
            ]
        );
        assert!(pod_secret_names(&Pod::default()).is_empty());
    }
}
