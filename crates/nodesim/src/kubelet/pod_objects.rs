//! The Secrets and ConfigMaps a pod needs before its containers start, checked as the kubelet
//! checks them.
//!
//! Volumes as the secret, configMap and projected volume plugins' `SetUp` does
//! (`pkg/volume/secret/secret.go`, `pkg/volume/configmap/configmap.go`,
//! `pkg/volume/projected/projected.go`): the object must exist unless the source is
//! `optional`, and so must every key its `items` name. A container's environment as
//! `makeEnvironmentVariables` (`pkg/kubelet/kubelet_pods.go`) builds it: `envFrom` sources
//! first (the object must exist unless optional; its keys do not matter), then `env` entries
//! with `configMapKeyRef`/`secretKeyRef` (object and key must exist unless optional). Objects
//! come from the kubelet's secret and configMap managers, whose not-found errors name the
//! resource in the singular (`secret "s" not found`, `configmap "c" not found`).

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{ConfigMap, Container, KeyToPath, Pod, PodSpec, Secret};

/// The names of the Secrets and ConfigMaps a pod's volumes and containers' environment use.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct References {
    /// Secret names.
    pub secrets: BTreeSet<String>,
    /// ConfigMap names.
    pub config_maps: BTreeSet<String>,
}

impl References {
    /// Whether the pod uses no Secret and no ConfigMap.
    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty() && self.config_maps.is_empty()
    }
}

/// The Secrets and ConfigMaps volumes (secret, configMap and projected sources) and the
/// environment of init and regular containers refer to. Image pull secrets are left out: a
/// missing one does not keep a pod from starting.
pub fn references(spec: &PodSpec) -> References {
    let mut refs = References::default();
    for volume in spec.volumes.iter().flatten() {
        if let Some(name) = volume.secret.as_ref().and_then(|s| s.secret_name.as_ref()) {
            refs.secrets.insert(name.clone());
        }
        if let Some(c) = &volume.config_map {
            refs.config_maps.insert(c.name.clone());
        }
        for source in volume
            .projected
            .iter()
            .flat_map(|p| p.sources.iter().flatten())
        {
            if let Some(s) = &source.secret {
                refs.secrets.insert(s.name.clone());
            }
            if let Some(c) = &source.config_map {
                refs.config_maps.insert(c.name.clone());
            }
        }
    }
    for container in spec
        .init_containers
        .iter()
        .flatten()
        .chain(&spec.containers)
    {
        for from in container.env_from.iter().flatten() {
            if let Some(s) = &from.secret_ref {
                refs.secrets.insert(s.name.clone());
            }
            if let Some(c) = &from.config_map_ref {
                refs.config_maps.insert(c.name.clone());
            }
        }
        for source in container
            .env
            .iter()
            .flatten()
            .filter_map(|e| e.value_from.as_ref())
        {
            if let Some(s) = &source.secret_key_ref {
                refs.secrets.insert(s.name.clone());
            }
            if let Some(c) = &source.config_map_key_ref {
                refs.config_maps.insert(c.name.clone());
            }
        }
    }
    refs
}

/// What the kubelet found of a pod's [`References`]: `None` for an object that does not exist.
/// A name missing from the maps counts as not existing.
#[derive(Clone, Debug, Default)]
pub struct Objects {
    /// Secrets by name.
    pub secrets: BTreeMap<String, Option<Secret>>,
    /// ConfigMaps by name.
    pub config_maps: BTreeMap<String, Option<ConfigMap>>,
}

impl Objects {
    fn secret(&self, name: &str) -> Result<&Secret, String> {
        self.secrets
            .get(name)
            .and_then(Option::as_ref)
            .ok_or_else(|| not_found("secret", name))
    }

    fn config_map(&self, name: &str) -> Result<&ConfigMap, String> {
        self.config_maps
            .get(name)
            .and_then(Option::as_ref)
            .ok_or_else(|| not_found("configmap", name))
    }
}

/// The message of the managers' `NewNotFound(corev1.Resource("secret"), name)`.
fn not_found(resource: &str, name: &str) -> String {
    format!("{resource} {} not found", go_quote(name))
}

/// Go's `%q` of a name (object and volume names are DNS names: quotes and backslashes are
/// all there could be to escape).
fn go_quote(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

fn secret_has(secret: &Secret, key: &str) -> bool {
    secret.data.as_ref().is_some_and(|d| d.contains_key(key))
        || secret
            .string_data
            .as_ref()
            .is_some_and(|d| d.contains_key(key))
}

fn config_map_data_has(config_map: &ConfigMap, key: &str) -> bool {
    config_map
        .data
        .as_ref()
        .is_some_and(|d| d.contains_key(key))
}

/// A volume that cannot be set up, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MountFailure {
    /// The pod's name for the volume.
    pub volume: String,
    /// The plugin's error (`secret "s" not found`).
    pub error: String,
}

impl MountFailure {
    /// The `FailedMount` event's message, as the operation generator words a failed
    /// `SetUp` (`MountVolume.SetUp failed for volume "v" : secret "s" not found`).
    pub fn message(&self) -> String {
        format!(
            "MountVolume.SetUp failed for volume {} : {}",
            go_quote(&self.volume),
            self.error
        )
    }
}

/// The `items` error of a secret source (`secret.MakePayload`).
fn secret_items_error(items: Option<&Vec<KeyToPath>>, secret: &Secret) -> Option<String> {
    items?
        .iter()
        .find(|ktp| !secret_has(secret, &ktp.key))
        .map(|ktp| format!("references non-existent secret key: {}", ktp.key))
}

/// The `items` error of a configMap source (`configmap.MakePayload`: `data` or `binaryData`).
fn config_map_items_error(
    items: Option<&Vec<KeyToPath>>,
    config_map: &ConfigMap,
) -> Option<String> {
    let has = |key: &str| {
        config_map_data_has(config_map, key)
            || config_map
                .binary_data
                .as_ref()
                .is_some_and(|d| d.contains_key(key))
    };
    items?
        .iter()
        .find(|ktp| !has(&ktp.key))
        .map(|ktp| format!("configmap references non-existent config key: {}", ktp.key))
}

/// The error of one secret source: a missing object or item key, unless `optional` (an
/// optional source skips what is missing).
fn secret_source_error(
    objects: &Objects,
    name: &str,
    items: Option<&Vec<KeyToPath>>,
    optional: Option<bool>,
) -> Option<String> {
    if optional == Some(true) {
        return None;
    }
    match objects.secret(name) {
        Ok(secret) => secret_items_error(items, secret),
        Err(e) => Some(e),
    }
}

/// The error of one configMap source, as [`secret_source_error`].
fn config_map_source_error(
    objects: &Objects,
    name: &str,
    items: Option<&Vec<KeyToPath>>,
    optional: Option<bool>,
) -> Option<String> {
    if optional == Some(true) {
        return None;
    }
    match objects.config_map(name) {
        Ok(config_map) => config_map_items_error(items, config_map),
        Err(e) => Some(e),
    }
}

/// `utilerrors.NewAggregate(errs).Error()`: one error as it is, several de-duplicated in
/// brackets.
fn aggregate(errors: Vec<String>) -> Option<String> {
    let mut seen = BTreeSet::new();
    let unique: Vec<String> = errors
        .into_iter()
        .filter(|e| seen.insert(e.clone()))
        .collect();
    match unique.len() {
        0 => None,
        1 => unique.into_iter().next(),
        _ => Some(format!("[{}]", unique.join(", "))),
    }
}

/// The pod's volumes that cannot be set up with `objects`, in the order of `spec.volumes`.
pub fn mount_failures(pod: &Pod, objects: &Objects) -> Vec<MountFailure> {
    let Some(spec) = &pod.spec else {
        return Vec::new();
    };
    let mut failures = Vec::new();
    for volume in spec.volumes.iter().flatten() {
        let error = if let Some(s) = &volume.secret {
            s.secret_name
                .as_deref()
                .and_then(|name| secret_source_error(objects, name, s.items.as_ref(), s.optional))
        } else if let Some(c) = &volume.config_map {
            config_map_source_error(objects, &c.name, c.items.as_ref(), c.optional)
        } else if let Some(p) = &volume.projected {
            // A projected volume collects every source's error (`collectData`).
            let errors = p
                .sources
                .iter()
                .flatten()
                .filter_map(|source| {
                    if let Some(s) = &source.secret {
                        secret_source_error(objects, &s.name, s.items.as_ref(), s.optional)
                    } else if let Some(c) = &source.config_map {
                        config_map_source_error(objects, &c.name, c.items.as_ref(), c.optional)
                    } else {
                        None
                    }
                })
                .collect();
            aggregate(errors)
        } else {
            None
        };
        if let Some(error) = error {
            failures.push(MountFailure {
                volume: volume.name.clone(),
                error,
            });
        }
    }
    failures
}

/// Why the environment of `container` (of a pod in `namespace`) cannot be built, in
/// `makeEnvironmentVariables`' words; the kubelet then leaves the container waiting in
/// `CreateContainerConfigError` with this message.
pub fn container_config_error(
    container: &Container,
    namespace: &str,
    objects: &Objects,
) -> Option<String> {
    for from in container.env_from.iter().flatten() {
        if let Some(c) = &from.config_map_ref {
            if let Err(e) = objects.config_map(&c.name) {
                if c.optional != Some(true) {
                    return Some(e);
                }
            }
        } else if let Some(s) = &from.secret_ref {
            if let Err(e) = objects.secret(&s.name) {
                if s.optional != Some(true) {
                    return Some(e);
                }
            }
        }
    }
    for env in container.env.iter().flatten() {
        // A value wins over a source (validation allows only one of them).
        if env.value.as_deref().is_some_and(|v| !v.is_empty()) {
            continue;
        }
        let Some(source) = &env.value_from else {
            continue;
        };
        if let Some(c) = &source.config_map_key_ref {
            let optional = c.optional == Some(true);
            match objects.config_map(&c.name) {
                Err(_) if optional => {}
                Err(e) => return Some(e),
                Ok(config_map) if config_map_data_has(config_map, &c.key) || optional => {}
                Ok(_) => {
                    return Some(format!(
                        "couldn't find key {} in ConfigMap {namespace}/{}",
                        c.key, c.name
                    ))
                }
            }
        } else if let Some(s) = &source.secret_key_ref {
            let optional = s.optional == Some(true);
            match objects.secret(&s.name) {
                Err(_) if optional => {}
                Err(e) => return Some(e),
                Ok(secret) if secret_has(secret, &s.key) || optional => {}
                Ok(_) => {
                    return Some(format!(
                        "couldn't find key {} in Secret {namespace}/{}",
                        s.key, s.name
                    ))
                }
            }
        }
    }
    None
}

/// [`container_config_error`] for every init and regular container of the pod that has one,
/// by container name.
pub fn config_errors(pod: &Pod, objects: &Objects) -> BTreeMap<String, String> {
    let Some(spec) = &pod.spec else {
        return BTreeMap::new();
    };
    let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
    spec.init_containers
        .iter()
        .flatten()
        .chain(&spec.containers)
        .filter_map(|c| container_config_error(c, namespace, objects).map(|e| (c.name.clone(), e)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{
        ConfigMapEnvSource, ConfigMapKeySelector, ConfigMapProjection, ConfigMapVolumeSource,
        EnvFromSource, EnvVar, EnvVarSource, ProjectedVolumeSource, SecretEnvSource,
        SecretKeySelector, SecretProjection, SecretVolumeSource, Volume, VolumeProjection,
    };
    use k8s_openapi::ByteString;

    fn secret(keys: &[&str]) -> Option<Secret> {
        Some(Secret {
            data: Some(
                keys.iter()
                    .map(|k| (k.to_string(), ByteString(b"v".to_vec())))
                    .collect(),
            ),
            ..Default::default()
        })
    }

    fn config_map(keys: &[&str], binary: &[&str]) -> Option<ConfigMap> {
        Some(ConfigMap {
            data: Some(keys.iter().map(|k| (k.to_string(), "v".into())).collect()),
            binary_data: Some(
                binary
                    .iter()
                    .map(|k| (k.to_string(), ByteString(b"v".to_vec())))
                    .collect(),
            ),
            ..Default::default()
        })
    }

    fn objects(
        secrets: &[(&str, Option<Secret>)],
        config_maps: &[(&str, Option<ConfigMap>)],
    ) -> Objects {
        Objects {
            secrets: secrets
                .iter()
                .map(|(n, s)| (n.to_string(), s.clone()))
                .collect(),
            config_maps: config_maps
                .iter()
                .map(|(n, c)| (n.to_string(), c.clone()))
                .collect(),
        }
    }

    fn items(keys: &[&str]) -> Option<Vec<KeyToPath>> {
        Some(
            keys.iter()
                .map(|k| KeyToPath {
                    key: k.to_string(),
                    path: k.to_string(),
                    mode: None,
                })
                .collect(),
        )
    }

    fn pod(volumes: Vec<Volume>, containers: Vec<Container>) -> Pod {
        Pod {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some("p".into()),
                namespace: Some("default".into()),
                ..Default::default()
            },
            spec: Some(PodSpec {
                volumes: Some(volumes),
                containers,
                ..Default::default()
            }),
            status: None,
        }
    }

    fn secret_volume(name: &str, secret: &str, keys: &[&str], optional: Option<bool>) -> Volume {
        Volume {
            name: name.into(),
            secret: Some(SecretVolumeSource {
                secret_name: Some(secret.into()),
                items: (!keys.is_empty()).then(|| items(keys)).flatten(),
                optional,
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn config_map_volume(name: &str, cm: &str, keys: &[&str], optional: Option<bool>) -> Volume {
        Volume {
            name: name.into(),
            config_map: Some(ConfigMapVolumeSource {
                name: cm.into(),
                items: (!keys.is_empty()).then(|| items(keys)).flatten(),
                optional,
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn projected(name: &str, secret: &str, cm: &str) -> Volume {
        Volume {
            name: name.into(),
            projected: Some(ProjectedVolumeSource {
                sources: Some(vec![
                    VolumeProjection {
                        secret: Some(SecretProjection {
                            name: secret.into(),
                            ..Default::default()
                        }),
                        ..Default::default()
                    },
                    VolumeProjection {
                        config_map: Some(ConfigMapProjection {
                            name: cm.into(),
                            items: items(&["ca.crt"]),
                            ..Default::default()
                        }),
                        ..Default::default()
                    },
                ]),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn messages(pod: &Pod, objects: &Objects) -> Vec<String> {
        mount_failures(pod, objects)
            .iter()
            .map(MountFailure::message)
            .collect()
    }

    #[test]
    fn missing_secret_and_config_map_volumes_fail_with_the_kubelets_words() {
        let p = pod(
            vec![
                secret_volume("certs", "webhook-cert", &[], None),
                config_map_volume("conf", "settings", &[], None),
            ],
            vec![],
        );
        assert_eq!(
            messages(&p, &Objects::default()),
            [
                r#"MountVolume.SetUp failed for volume "certs" : secret "webhook-cert" not found"#,
                r#"MountVolume.SetUp failed for volume "conf" : configmap "settings" not found"#,
            ]
        );
        let all = objects(
            &[("webhook-cert", secret(&["tls.crt"]))],
            &[("settings", config_map(&[], &[]))],
        );
        assert_eq!(messages(&p, &all), Vec::<String>::new());
    }

    #[test]
    fn optional_volumes_may_miss_their_object_and_keys() {
        let p = pod(
            vec![
                secret_volume("s", "absent", &["k"], Some(true)),
                config_map_volume("c", "absent", &["k"], Some(true)),
            ],
            vec![],
        );
        assert!(mount_failures(&p, &Objects::default()).is_empty());
        let present = objects(
            &[("absent", secret(&[]))],
            &[("absent", config_map(&[], &[]))],
        );
        assert!(mount_failures(&p, &present).is_empty());
    }

    #[test]
    fn items_must_name_existing_keys() {
        let p = pod(
            vec![
                secret_volume("s", "sec", &["tls.crt", "tls.key"], None),
                config_map_volume("c", "cm", &["a", "bin", "missing"], None),
            ],
            vec![],
        );
        let found = objects(
            &[("sec", secret(&["tls.crt"]))],
            &[("cm", config_map(&["a"], &["bin"]))],
        );
        assert_eq!(
            messages(&p, &found),
            [
                r#"MountVolume.SetUp failed for volume "s" : references non-existent secret key: tls.key"#,
                r#"MountVolume.SetUp failed for volume "c" : configmap references non-existent config key: missing"#,
            ]
        );
    }

    #[test]
    fn projected_volumes_aggregate_their_sources_errors() {
        let p = pod(
            vec![projected(
                "kube-api-access-x1y2z",
                "tok",
                "kube-root-ca.crt",
            )],
            vec![],
        );
        assert_eq!(
            messages(&p, &objects(&[("tok", secret(&[]))], &[])),
            [
                r#"MountVolume.SetUp failed for volume "kube-api-access-x1y2z" : configmap "kube-root-ca.crt" not found"#
            ]
        );
        assert_eq!(
            messages(
                &p,
                &objects(&[], &[("kube-root-ca.crt", config_map(&["other"], &[]))])
            ),
            [
                r#"MountVolume.SetUp failed for volume "kube-api-access-x1y2z" : [secret "tok" not found, configmap references non-existent config key: ca.crt]"#
            ]
        );
        let all = objects(
            &[("tok", secret(&[]))],
            &[("kube-root-ca.crt", config_map(&["ca.crt"], &[]))],
        );
        assert!(mount_failures(&p, &all).is_empty());
    }

    fn container(env_from: Vec<EnvFromSource>, env: Vec<EnvVar>) -> Container {
        Container {
            name: "app".into(),
            env_from: Some(env_from),
            env: Some(env),
            ..Default::default()
        }
    }

    fn secret_key(var: &str, name: &str, key: &str, optional: Option<bool>) -> EnvVar {
        EnvVar {
            name: var.into(),
            value_from: Some(EnvVarSource {
                secret_key_ref: Some(SecretKeySelector {
                    name: name.into(),
                    key: key.into(),
                    optional,
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn config_map_key(var: &str, name: &str, key: &str, optional: Option<bool>) -> EnvVar {
        EnvVar {
            name: var.into(),
            value_from: Some(EnvVarSource {
                config_map_key_ref: Some(ConfigMapKeySelector {
                    name: name.into(),
                    key: key.into(),
                    optional,
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn env_key_refs_need_their_object_and_key() {
        let c = container(
            vec![],
            vec![
                secret_key("PASSWORD", "s", "k", None),
                config_map_key("MODE", "c", "k", None),
            ],
        );
        let error = |o: &Objects| container_config_error(&c, "default", o);
        assert_eq!(
            error(&Objects::default()).as_deref(),
            Some(r#"secret "s" not found"#)
        );
        assert_eq!(
            error(&objects(&[("s", secret(&["other"]))], &[])).as_deref(),
            Some("couldn't find key k in Secret default/s")
        );
        assert_eq!(
            error(&objects(&[("s", secret(&["k"]))], &[])).as_deref(),
            Some(r#"configmap "c" not found"#)
        );
        // `binaryData` keys do not count for the environment.
        assert_eq!(
            error(&objects(
                &[("s", secret(&["k"]))],
                &[("c", config_map(&[], &["k"]))]
            ))
            .as_deref(),
            Some("couldn't find key k in ConfigMap default/c")
        );
        assert_eq!(
            error(&objects(
                &[("s", secret(&["k"]))],
                &[("c", config_map(&["k"], &[]))]
            )),
            None
        );
    }

    #[test]
    fn optional_env_key_refs_may_miss_object_or_key() {
        let c = container(
            vec![],
            vec![
                secret_key("A", "s", "k", Some(true)),
                config_map_key("B", "c", "k", Some(true)),
            ],
        );
        assert_eq!(
            container_config_error(&c, "default", &Objects::default()),
            None
        );
        let without_keys = objects(&[("s", secret(&[]))], &[("c", config_map(&[], &[]))]);
        assert_eq!(container_config_error(&c, "default", &without_keys), None);
    }

    #[test]
    fn env_from_needs_its_object_but_not_any_key_and_comes_first() {
        let c = container(
            vec![
                EnvFromSource {
                    config_map_ref: Some(ConfigMapEnvSource {
                        name: "c".into(),
                        optional: None,
                    }),
                    ..Default::default()
                },
                EnvFromSource {
                    secret_ref: Some(SecretEnvSource {
                        name: "s".into(),
                        optional: None,
                    }),
                    ..Default::default()
                },
                EnvFromSource {
                    secret_ref: Some(SecretEnvSource {
                        name: "maybe".into(),
                        optional: Some(true),
                    }),
                    ..Default::default()
                },
            ],
            vec![secret_key("X", "other", "k", None)],
        );
        let error = |o: &Objects| container_config_error(&c, "default", o);
        assert_eq!(
            error(&Objects::default()).as_deref(),
            Some(r#"configmap "c" not found"#)
        );
        assert_eq!(
            error(&objects(&[], &[("c", config_map(&[], &[]))])).as_deref(),
            Some(r#"secret "s" not found"#)
        );
        let both = objects(
            &[("s", secret(&[])), ("other", secret(&["k"]))],
            &[("c", config_map(&[], &[]))],
        );
        assert_eq!(error(&both), None);
    }

    #[test]
    fn references_cover_volumes_projections_and_every_containers_environment() {
        let mut p = pod(
            vec![
                secret_volume("a", "s1", &[], None),
                config_map_volume("b", "c1", &[], None),
                projected("c", "s2", "c2"),
            ],
            vec![container(
                vec![EnvFromSource {
                    secret_ref: Some(SecretEnvSource {
                        name: "s3".into(),
                        optional: None,
                    }),
                    ..Default::default()
                }],
                vec![config_map_key("X", "c3", "k", None)],
            )],
        );
        p.spec.as_mut().unwrap().init_containers = Some(vec![container(
            vec![],
            vec![secret_key("Y", "s4", "k", None)],
        )]);
        let refs = references(p.spec.as_ref().unwrap());
        assert_eq!(
            refs.secrets.iter().map(String::as_str).collect::<Vec<_>>(),
            ["s1", "s2", "s3", "s4"]
        );
        assert_eq!(
            refs.config_maps
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>(),
            ["c1", "c2", "c3"]
        );
        assert!(references(&PodSpec::default()).is_empty());
    }

    #[test]
    fn config_errors_are_keyed_by_container_name() {
        let mut p = pod(vec![], vec![container(vec![], vec![])]);
        p.spec.as_mut().unwrap().init_containers = Some(vec![Container {
            name: "init".into(),
            env: Some(vec![secret_key("Y", "s", "k", None)]),
            ..Default::default()
        }]);
        let errors = config_errors(&p, &Objects::default());
        assert_eq!(
            errors.into_iter().collect::<Vec<_>>(),
            [("init".to_string(), r#"secret "s" not found"#.to_string())]
        );
    }
}
