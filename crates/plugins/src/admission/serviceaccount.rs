//! `ServiceAccount`: every pod runs as a service account that exists, and gets its API
//! credentials (the `kube-api-access-*` projected volume) unless it or its account opts out.
//!
//! Mirrors `plugin/pkg/admission/serviceaccount/admission.go`: on create, `serviceAccountName`
//! defaults to `default`; the account must exist (the `default` one is waited for a little, as
//! its controller creates it just after the namespace); the token volume is mounted at
//! `/var/run/secrets/kubernetes.io/serviceaccount` in every init container and container that
//! has nothing mounted there; the account's `imagePullSecrets` are copied to a pod that has
//! none; an account annotated `kubernetes.io/enforce-mountable-secrets: "true"` limits the
//! secrets the pod may reference. Mirror pods are left alone but may reference no account, no
//! secret and no token projection. (Ephemeral containers cannot be set on create, and rkcm does
//! not serve `pods/ephemeralcontainers`, so their checks do not arise.)

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{json, Value};

use super::plugins::SERVICE_ACCOUNT;
use rkcm_server::admission::attributes::{forbidden, Attributes, Operation};
use rkcm_server::admission::plugin::Plugin;
use rkcm_server::error::{ApiError, ApiResult};
use rkcm_server::rest;
use rkcm_storage::store::Store;

/// The account a pod without `serviceAccountName` runs as (`DefaultServiceAccountName`).
pub const DEFAULT_SERVICE_ACCOUNT_NAME: &str = "default";
/// The annotation making an account limit the secrets its pods reference.
pub const ENFORCE_MOUNTABLE_SECRETS_ANNOTATION: &str = "kubernetes.io/enforce-mountable-secrets";
/// Prefix of the token volume's name (`ServiceAccountVolumeName`), completed with 5 random
/// characters.
pub const SERVICE_ACCOUNT_VOLUME_NAME: &str = "kube-api-access";
/// Where containers find the token, CA and namespace (`DefaultAPITokenMountPath`).
pub const DEFAULT_API_TOKEN_MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
/// The annotation of mirror pods (`MirrorPodAnnotationKey`).
pub const MIRROR_POD_ANNOTATION: &str = "kubernetes.io/config.mirror";
/// Validity asked for the projected token (`WarnOnlyBoundTokenExpirationSeconds`: an hour and
/// 7 seconds, which the token endpoint extends to a year and warns about).
pub const TOKEN_EXPIRATION_SECONDS: i64 = 3607;

/// Lookups of the `default` account before giving up, and the wait between them.
const DEFAULT_ACCOUNT_ATTEMPTS: usize = 10;

/// The plugin.
pub struct ServiceAccount {
    store: Store,
}

impl ServiceAccount {
    /// The plugin, reading service accounts from `store`.
    pub fn new(store: Store) -> Self {
        Self { store }
    }

    /// The account `name` of `namespace`; the `default` account is looked up again for a
    /// while, as it is created by a controller right after its namespace.
    async fn service_account(&self, namespace: &str, name: &str) -> Result<Value, ApiError> {
        let info = service_accounts();
        let key = rest::key(info, Some(namespace), name);
        let attempts = if name == DEFAULT_SERVICE_ACCOUNT_NAME {
            DEFAULT_ACCOUNT_ATTEMPTS
        } else {
            1
        };
        // kube waits 100 to 200 ms between lookups.
        let interval =
            Duration::from_millis(100 + (jiff::Timestamp::now().subsec_nanosecond() as u64 % 100));
        for attempt in 0..attempts {
            if attempt > 0 {
                tokio::time::sleep(interval).await;
            }
            if let Some(sa) = self.store.get(&key) {
                return Ok(sa.value());
            }
        }
        // kube names the resource in the singular here.
        Err(ApiError::new(
            404,
            "NotFound",
            format!("serviceaccount \"{name}\" not found"),
        ))
    }

    /// The account of the pod, or kube's refusal.
    async fn pod_service_account(&self, attrs: &Attributes, name: &str) -> ApiResult<Value> {
        self.service_account(&attrs.namespace, name)
            .await
            .map_err(|e| {
                forbidden(
                    attrs,
                    &format!(
                        "error looking up service account {}/{name}: {}",
                        attrs.namespace, e.message
                    ),
                )
            })
    }

    /// `Validate` for a pod create (also the end of `Admit`).
    async fn validate_pod(&self, attrs: &Attributes, pod: &Value) -> ApiResult<()> {
        if is_mirror_pod(pod) {
            return match mirror_pod_violation(pod) {
                Some(why) => Err(forbidden(attrs, why)),
                None => Ok(()),
            };
        }
        let name = service_account_name(pod);
        if name.is_empty() {
            return Err(forbidden(
                attrs,
                &format!(
                    "no service account specified for pod {}/{}",
                    attrs.namespace,
                    rkcm_storage::object::name(pod)
                ),
            ));
        }
        let sa = self.pod_service_account(attrs, name).await?;
        if enforce_mountable_secrets(&sa) {
            limit_secret_references(&sa, pod).map_err(|why| forbidden(attrs, &why))?;
        }
        Ok(())
    }
}

/// Whether the request is a pod create or update this plugin looks at (`shouldIgnore`).
fn is_pod_request(attrs: &Attributes) -> bool {
    attrs.resource.group.is_empty()
        && attrs.resource.plural == "pods"
        && (attrs.subresource.is_empty() || attrs.subresource == "ephemeralcontainers")
        && attrs.object().is_some_and(Value::is_object)
}

#[async_trait]
impl Plugin for ServiceAccount {
    fn name(&self) -> &'static str {
        SERVICE_ACCOUNT
    }

    fn handles(&self, operation: Operation) -> bool {
        matches!(operation, Operation::Create | Operation::Update)
    }

    async fn admit(&self, attrs: &mut Attributes) -> ApiResult<()> {
        if !is_pod_request(attrs) || attrs.operation != Operation::Create {
            return Ok(());
        }
        let pod = attrs.object().cloned().unwrap_or(Value::Null);
        if is_mirror_pod(&pod) {
            return self.validate_pod(attrs, &pod).await;
        }
        let name = match service_account_name(&pod) {
            "" => DEFAULT_SERVICE_ACCOUNT_NAME.to_string(),
            n => n.to_string(),
        };
        let sa = self.pod_service_account(attrs, &name).await?;
        let Some(pod) = attrs.object_mut() else {
            return Ok(());
        };
        set_spec(pod, "serviceAccountName", json!(name));
        if should_automount(&sa, pod) {
            let volume_name = format!("{SERVICE_ACCOUNT_VOLUME_NAME}-{}", rest::random_suffix());
            mount_service_account_token(pod, &volume_name);
        }
        copy_image_pull_secrets(&sa, pod);
        let pod = pod.clone();
        self.validate_pod(attrs, &pod).await
    }

    async fn validate(&self, attrs: &Attributes) -> ApiResult<()> {
        if !is_pod_request(attrs) || attrs.operation != Operation::Create {
            return Ok(());
        }
        let pod = attrs.object().cloned().unwrap_or(Value::Null);
        self.validate_pod(attrs, &pod).await
    }
}

fn service_accounts() -> &'static rkcm_apimachinery::catalog::ResourceInfo {
    rkcm_apimachinery::catalog::by_kind("v1", "ServiceAccount")
        .expect("service accounts are in the catalog")
}

fn service_account_name(pod: &Value) -> &str {
    pod.pointer("/spec/serviceAccountName")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn set_spec(pod: &mut Value, field: &str, value: Value) {
    if let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) {
        spec.insert(field.into(), value);
    }
}

/// Whether `pod` is the mirror of a static pod.
pub fn is_mirror_pod(pod: &Value) -> bool {
    pod.pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .is_some_and(|a| a.contains_key(MIRROR_POD_ANNOTATION))
}

/// Why a mirror pod is refused, if it is: it names an account, references a secret or projects
/// a token.
pub fn mirror_pod_violation(pod: &Value) -> Option<&'static str> {
    if !service_account_name(pod).is_empty() {
        return Some("a mirror pod may not reference service accounts");
    }
    if !pod_secret_names(pod).is_empty() {
        return Some("a mirror pod may not reference secrets");
    }
    let projects_token = volumes(pod).iter().any(|v| {
        v.pointer("/projected/sources")
            .and_then(Value::as_array)
            .is_some_and(|s| s.iter().any(|s| s.get("serviceAccountToken").is_some()))
    });
    projects_token.then_some("a mirror pod may not use ServiceAccountToken volume projections")
}

/// `shouldAutomount`: the pod's `automountServiceAccountToken`, else the account's, else true.
pub fn should_automount(sa: &Value, pod: &Value) -> bool {
    pod.pointer("/spec/automountServiceAccountToken")
        .and_then(Value::as_bool)
        .or_else(|| {
            sa.get("automountServiceAccountToken")
                .and_then(Value::as_bool)
        })
        .unwrap_or(true)
}

/// Whether the account limits the secrets of its pods (the annotation parses as Go's true).
pub fn enforce_mountable_secrets(sa: &Value) -> bool {
    sa.pointer("/metadata/annotations")
        .and_then(|a| a.get(ENFORCE_MOUNTABLE_SECRETS_ANNOTATION))
        .and_then(Value::as_str)
        .is_some_and(|v| matches!(v, "1" | "t" | "T" | "true" | "TRUE" | "True"))
}

/// The projected volume source of the API credentials (`TokenVolumeSource`).
pub fn token_volume_source() -> Value {
    json!({
        "defaultMode": 420,
        "sources": [
            {"serviceAccountToken": {"path": "token", "expirationSeconds": TOKEN_EXPIRATION_SECONDS}},
            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
        ],
    })
}

fn volumes(pod: &Value) -> Vec<Value> {
    pod.pointer("/spec/volumes")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// Mounts the token volume in every init container and container without a mount at
/// [`DEFAULT_API_TOKEN_MOUNT_PATH`], adding the volume (named `new_volume_name` unless a
/// `kube-api-access-*` volume is already there) when one of them needs it.
pub fn mount_service_account_token(pod: &mut Value, new_volume_name: &str) {
    let existing = volumes(pod).iter().find_map(|v| {
        v.get("name")
            .and_then(Value::as_str)
            .filter(|n| n.starts_with(&format!("{SERVICE_ACCOUNT_VOLUME_NAME}-")))
            .map(str::to_string)
    });
    let volume_name = existing
        .clone()
        .unwrap_or_else(|| new_volume_name.to_string());
    let mount =
        json!({"name": volume_name, "readOnly": true, "mountPath": DEFAULT_API_TOKEN_MOUNT_PATH});
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let mut needs_volume = false;
    for list in ["initContainers", "containers"] {
        let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) else {
            continue;
        };
        for c in containers.iter_mut().filter_map(Value::as_object_mut) {
            let mounts = c.entry("volumeMounts").or_insert_with(|| json!([]));
            if !mounts.is_array() {
                *mounts = json!([]);
            }
            let Some(mounts) = mounts.as_array_mut() else {
                continue;
            };
            let mounted = mounts.iter().any(|m| {
                m.get("mountPath").and_then(Value::as_str) == Some(DEFAULT_API_TOKEN_MOUNT_PATH)
            });
            if !mounted {
                mounts.push(mount.clone());
                needs_volume = true;
            }
        }
    }
    if existing.is_none() && needs_volume {
        let volumes = spec.entry("volumes").or_insert_with(|| json!([]));
        if !volumes.is_array() {
            *volumes = json!([]);
        }
        if let Some(v) = volumes.as_array_mut() {
            v.push(json!({"name": volume_name, "projected": token_volume_source()}));
        }
    }
}

/// Gives a pod without `imagePullSecrets` those of its account.
pub fn copy_image_pull_secrets(sa: &Value, pod: &mut Value) {
    let has = pod
        .pointer("/spec/imagePullSecrets")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty());
    if has {
        return;
    }
    let from_sa: Vec<Value> = sa
        .get("imagePullSecrets")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|r| r.get("name").cloned())
        .map(|name| json!({"name": name}))
        .collect();
    if !from_sa.is_empty() {
        set_spec(pod, "imagePullSecrets", Value::Array(from_sa));
    }
}

fn names(list: Option<&Value>) -> Vec<String> {
    list.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|r| r.get("name").and_then(Value::as_str).map(str::to_string))
        .collect()
}

/// Every secret a pod references (`VisitPodSecretNames` over all containers).
fn pod_secret_names(pod: &Value) -> Vec<String> {
    let mut out = names(pod.pointer("/spec/imagePullSecrets"));
    for list in ["initContainers", "containers", "ephemeralContainers"] {
        let containers = pod
            .pointer(&format!("/spec/{list}"))
            .and_then(Value::as_array);
        for c in containers.into_iter().flatten() {
            for e in c
                .get("envFrom")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(n) = e.pointer("/secretRef/name").and_then(Value::as_str) {
                    out.push(n.to_string());
                }
            }
            for e in c.get("env").and_then(Value::as_array).into_iter().flatten() {
                if let Some(n) = e
                    .pointer("/valueFrom/secretKeyRef/name")
                    .and_then(Value::as_str)
                {
                    out.push(n.to_string());
                }
            }
        }
    }
    for v in volumes(pod) {
        let Some(sources) = v.as_object() else {
            continue;
        };
        for (kind, source) in sources {
            let name = match kind.as_str() {
                "secret" => source.get("secretName"),
                "azureFile" => source.get("secretName"),
                "csi" => source.pointer("/nodePublishSecretRef/name"),
                _ => source.pointer("/secretRef/name"),
            };
            if let Some(n) = name.and_then(Value::as_str) {
                out.push(n.to_string());
            }
        }
        for s in v
            .pointer("/projected/sources")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(n) = s.pointer("/secret/name").and_then(Value::as_str) {
                out.push(n.to_string());
            }
        }
    }
    out
}

/// `limitSecretReferences`: the secret volumes, the secret env of every container and the
/// image pull secrets of the pod must be among those the account lists.
pub fn limit_secret_references(sa: &Value, pod: &Value) -> Result<(), String> {
    let account = sa
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mountable = names(sa.get("secrets"));
    for v in volumes(pod) {
        if let Some(secret) = v.pointer("/secret/secretName").and_then(Value::as_str) {
            if !mountable.iter().any(|m| m == secret) {
                return Err(format!(
                    "volume with secret.secretName=\"{secret}\" is not allowed because service account {account} does not reference that secret"
                ));
            }
        }
    }
    for (list, what) in [
        ("initContainers", "init container"),
        ("containers", "container"),
        ("ephemeralContainers", "ephemeral container"),
    ] {
        let containers = pod
            .pointer(&format!("/spec/{list}"))
            .and_then(Value::as_array);
        for c in containers.into_iter().flatten() {
            let container = c.get("name").and_then(Value::as_str).unwrap_or_default();
            for e in c.get("env").and_then(Value::as_array).into_iter().flatten() {
                let Some(secret) = e
                    .pointer("/valueFrom/secretKeyRef/name")
                    .and_then(Value::as_str)
                else {
                    continue;
                };
                if !mountable.iter().any(|m| m == secret) {
                    let env = e.get("name").and_then(Value::as_str).unwrap_or_default();
                    return Err(format!(
                        "{what} {container} with envVar {env} referencing secret.secretName=\"{secret}\" is not allowed because service account {account} does not reference that secret"
                    ));
                }
            }
            for e in c
                .get("envFrom")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let Some(secret) = e.pointer("/secretRef/name").and_then(Value::as_str) else {
                    continue;
                };
                if !mountable.iter().any(|m| m == secret) {
                    return Err(format!(
                        "{what} {container} with envFrom referencing secret.secretName=\"{secret}\" is not allowed because service account {account} does not reference that secret"
                    ));
                }
            }
        }
    }
    let pull = names(sa.get("imagePullSecrets"));
    for (i, secret) in names(pod.pointer("/spec/imagePullSecrets"))
        .iter()
        .enumerate()
    {
        if !pull.contains(secret) {
            return Err(format!(
                "imagePullSecrets[{i}].name=\"{secret}\" is not allowed because service account {account} does not reference that imagePullSecret"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::testing::{attributes, store_with};

    fn sa(name: &str, extra: Value) -> Value {
        let mut sa = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": "ns"}});
        if let (Some(m), Some(e)) = (sa.as_object_mut(), extra.as_object()) {
            for (k, v) in e {
                if k == "annotations" {
                    m["metadata"]["annotations"] = v.clone();
                } else {
                    m.insert(k.clone(), v.clone());
                }
            }
        }
        sa
    }

    fn pod(spec: Value) -> Value {
        json!({"metadata": {"name": "p", "namespace": "ns"}, "spec": spec})
    }

    fn plain_pod() -> Value {
        pod(json!({"containers": [{"name": "c", "image": "i"}]}))
    }

    async fn plugin(accounts: &[Value]) -> ServiceAccount {
        ServiceAccount::new(store_with(accounts).await)
    }

    async fn admit(plugin: &ServiceAccount, pod: Value) -> ApiResult<Value> {
        let mut attrs = attributes(Operation::Create, "Pod", "ns", Some(pod), None);
        plugin.admit(&mut attrs).await?;
        plugin.validate(&attrs).await?;
        Ok(attrs.into_object().expect("object"))
    }

    #[tokio::test]
    async fn ignores_updates_other_resources_and_subresources() {
        let p = plugin(&[]).await;
        let mut update = attributes(
            Operation::Update,
            "Pod",
            "ns",
            Some(plain_pod()),
            Some(plain_pod()),
        );
        p.admit(&mut update).await.expect("updates are not mutated");
        assert_eq!(update.object(), Some(&plain_pod()));
        let mut cm = attributes(
            Operation::Create,
            "ConfigMap",
            "ns",
            Some(json!({"metadata": {"name": "c"}})),
            None,
        );
        p.admit(&mut cm).await.expect("not a pod");
    }

    #[tokio::test]
    async fn assigns_the_default_service_account_and_mounts_the_api_access_volume() {
        let p = plugin(&[sa("default", json!({}))]).await;
        let out = admit(
            &p,
            pod(json!({
                "initContainers": [{"name": "i", "image": "i"}],
                "containers": [{"name": "c", "image": "i"}, {"name": "d", "image": "i"}],
            })),
        )
        .await
        .expect("admitted");
        assert_eq!(out["spec"]["serviceAccountName"], "default");
        let volumes = out["spec"]["volumes"].as_array().expect("volumes");
        assert_eq!(volumes.len(), 1);
        let name = volumes[0]["name"].as_str().expect("name");
        assert!(
            name.starts_with("kube-api-access-") && name.len() == "kube-api-access-".len() + 5,
            "{name}"
        );
        assert_eq!(volumes[0]["projected"], token_volume_source());
        assert_eq!(
            volumes[0]["projected"]["sources"][0]["serviceAccountToken"]["expirationSeconds"],
            3607
        );
        for list in ["initContainers", "containers"] {
            for c in out["spec"][list].as_array().expect("containers") {
                assert_eq!(
                    c["volumeMounts"],
                    json!([{"name": name, "readOnly": true, "mountPath": DEFAULT_API_TOKEN_MOUNT_PATH}])
                );
            }
        }
    }

    #[tokio::test]
    async fn refuses_a_missing_service_account_with_kubes_message() {
        let p = plugin(&[sa("default", json!({}))]).await;
        let err = admit(&p, pod(json!({"serviceAccountName": "missing", "containers": [{"name": "c", "image": "i"}]})))
            .await
            .expect_err("missing");
        assert_eq!(err.code, 403);
        assert_eq!(
            err.message,
            "pods \"p\" is forbidden: error looking up service account ns/missing: serviceaccount \"missing\" not found"
        );
    }

    #[tokio::test]
    async fn waits_a_little_for_the_default_service_account() {
        let store = store_with(&[]).await;
        let p = ServiceAccount::new(store.clone());
        let late = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(250)).await;
            let info = service_accounts();
            store
                .create(
                    &rest::key(info, Some("ns"), "default"),
                    sa("default", json!({})),
                )
                .await
                .expect("stored");
        });
        let out = admit(&p, plain_pod())
            .await
            .expect("found on a later lookup");
        assert_eq!(out["spec"]["serviceAccountName"], "default");
        late.await.expect("creator");
    }

    #[tokio::test]
    async fn automount_follows_the_pod_then_the_account() {
        let opted_out = sa("quiet", json!({"automountServiceAccountToken": false}));
        let p = plugin(&[sa("default", json!({})), opted_out]).await;
        let out = admit(
            &p,
            pod(
                json!({"serviceAccountName": "quiet", "containers": [{"name": "c", "image": "i"}]}),
            ),
        )
        .await
        .expect("admitted");
        assert!(out["spec"].get("volumes").is_none());
        let out = admit(&p, pod(json!({"serviceAccountName": "quiet", "automountServiceAccountToken": true, "containers": [{"name": "c", "image": "i"}]})))
            .await
            .expect("admitted");
        assert_eq!(out["spec"]["volumes"].as_array().map(Vec::len), Some(1));
        let out = admit(&p, pod(json!({"automountServiceAccountToken": false, "containers": [{"name": "c", "image": "i"}]})))
            .await
            .expect("admitted");
        assert!(out["spec"].get("volumes").is_none());
        assert!(out["spec"]["containers"][0]
            .get("volumeMounts")
            .is_none_or(|m| m == &json!([])));
    }

    #[tokio::test]
    async fn respects_an_existing_mount_at_the_token_path() {
        let p = plugin(&[sa("default", json!({}))]).await;
        let mine = json!({"name": "mine", "mountPath": DEFAULT_API_TOKEN_MOUNT_PATH});
        let out = admit(
            &p,
            pod(json!({
                "volumes": [{"name": "mine", "emptyDir": {}}],
                "containers": [{"name": "c", "image": "i", "volumeMounts": [mine.clone()]}],
            })),
        )
        .await
        .expect("admitted");
        assert_eq!(out["spec"]["containers"][0]["volumeMounts"], json!([mine]));
        assert_eq!(out["spec"]["volumes"].as_array().map(Vec::len), Some(1));
        // A kube-api-access volume already there is reused, not duplicated.
        let mut p2 = plain_pod();
        p2["spec"]["volumes"] =
            json!([{"name": "kube-api-access-abcde", "projected": token_volume_source()}]);
        mount_service_account_token(&mut p2, "kube-api-access-zzzzz");
        assert_eq!(p2["spec"]["volumes"].as_array().map(Vec::len), Some(1));
        assert_eq!(
            p2["spec"]["containers"][0]["volumeMounts"][0]["name"],
            "kube-api-access-abcde"
        );
    }

    #[tokio::test]
    async fn mirror_pods_are_left_alone_but_may_not_reference_accounts_or_secrets() {
        let p = plugin(&[sa("default", json!({}))]).await;
        let mirror = |spec: Value| {
            let mut m = pod(spec);
            m["metadata"]["annotations"] = json!({MIRROR_POD_ANNOTATION: "x"});
            m
        };
        let plain = mirror(json!({"containers": [{"name": "c", "image": "i"}]}));
        assert_eq!(admit(&p, plain.clone()).await.expect("admitted"), plain);
        let cases = [
            (
                json!({"serviceAccountName": "default", "containers": []}),
                "a mirror pod may not reference service accounts",
            ),
            (
                json!({"volumes": [{"name": "s", "secret": {"secretName": "s"}}], "containers": []}),
                "a mirror pod may not reference secrets",
            ),
            (
                json!({"containers": [{"name": "c", "image": "i", "env": [{"name": "E", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]}]}),
                "a mirror pod may not reference secrets",
            ),
            (
                json!({"volumes": [{"name": "t", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}}], "containers": []}),
                "a mirror pod may not use ServiceAccountToken volume projections",
            ),
        ];
        for (spec, why) in cases {
            let err = admit(&p, mirror(spec)).await.expect_err(why);
            assert_eq!(err.message, format!("pods \"p\" is forbidden: {why}"));
        }
    }

    #[tokio::test]
    async fn enforced_accounts_limit_the_secrets_their_pods_reference() {
        let enforced = sa(
            "strict",
            json!({
                "annotations": {ENFORCE_MOUNTABLE_SECRETS_ANNOTATION: "true"},
                "secrets": [{"name": "ok"}],
                "imagePullSecrets": [{"name": "pull"}],
            }),
        );
        let permissive = sa("loose", json!({"secrets": [{"name": "ok"}]}));
        let p = plugin(&[enforced, permissive]).await;
        let with = |account: &str, extra: Value| {
            let mut spec = json!({"serviceAccountName": account, "automountServiceAccountToken": false, "containers": [{"name": "c", "image": "i"}]});
            for (k, v) in extra.as_object().expect("object") {
                if k == "env" || k == "envFrom" {
                    spec["containers"][0][k] = v.clone();
                } else if k == "initEnv" {
                    spec["initContainers"] = json!([{"name": "init", "image": "i", "env": v}]);
                } else {
                    spec[k] = v.clone();
                }
            }
            pod(spec)
        };
        admit(
            &p,
            with(
                "strict",
                json!({"volumes": [{"name": "v", "secret": {"secretName": "ok"}}]}),
            ),
        )
        .await
        .expect("referenced secret");
        admit(
            &p,
            with(
                "loose",
                json!({"volumes": [{"name": "v", "secret": {"secretName": "other"}}]}),
            ),
        )
        .await
        .expect("permissive account");
        let refused = [
            (json!({"volumes": [{"name": "v", "secret": {"secretName": "other"}}]}),
             "volume with secret.secretName=\"other\" is not allowed because service account strict does not reference that secret"),
            (json!({"env": [{"name": "E", "valueFrom": {"secretKeyRef": {"name": "other", "key": "k"}}}]}),
             "container c with envVar E referencing secret.secretName=\"other\" is not allowed because service account strict does not reference that secret"),
            (json!({"initEnv": [{"name": "E", "valueFrom": {"secretKeyRef": {"name": "other", "key": "k"}}}]}),
             "init container init with envVar E referencing secret.secretName=\"other\" is not allowed because service account strict does not reference that secret"),
            (json!({"envFrom": [{"secretRef": {"name": "other"}}]}),
             "container c with envFrom referencing secret.secretName=\"other\" is not allowed because service account strict does not reference that secret"),
            (json!({"imagePullSecrets": [{"name": "pull"}, {"name": "other"}]}),
             "imagePullSecrets[1].name=\"other\" is not allowed because service account strict does not reference that imagePullSecret"),
        ];
        for (extra, why) in refused {
            let err = admit(&p, with("strict", extra)).await.expect_err(why);
            assert_eq!(err.code, 403);
            assert_eq!(err.message, format!("pods \"p\" is forbidden: {why}"));
        }
    }

    #[tokio::test]
    async fn image_pull_secrets_come_from_the_account_unless_the_pod_has_some() {
        let p = plugin(&[sa(
            "default",
            json!({"imagePullSecrets": [{"name": "a"}, {"name": "b"}]}),
        )])
        .await;
        let out = admit(&p, plain_pod()).await.expect("admitted");
        assert_eq!(
            out["spec"]["imagePullSecrets"],
            json!([{"name": "a"}, {"name": "b"}])
        );
        let mut own = plain_pod();
        own["spec"]["imagePullSecrets"] = json!([{"name": "mine"}]);
        let out = admit(&p, own).await.expect("admitted");
        assert_eq!(out["spec"]["imagePullSecrets"], json!([{"name": "mine"}]));
    }
}
