//! The identities of the simulated components of `rkcm up`, as kubeadm gives them to a
//! cluster's kubelets and scheduler: a client certificate of the cluster CA for
//! `system:node:<node>` in `system:nodes` per simulated kubelet, and one for
//! `system:kube-scheduler`. The simulated provisioner, which no kube role fits (it also
//! creates its StorageClass), is `rkcm:simulated-provisioner` with a ClusterRole of that name,
//! as an external provisioner's deployment binds its own. The certificates and keys live in
//! memory only.

use anyhow::Context;
use base64::Engine;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};

use rkcm_apiserver::auth::node_identity::{node_user_name, NODES_GROUP};

/// kube-scheduler's user (kubeadm's `scheduler.conf`), bound to `system:kube-scheduler` and
/// `system:volume-scheduler` by kube's bootstrap policy.
pub const SCHEDULER_USER: &str = "system:kube-scheduler";

/// The simulated provisioner's user, and its ClusterRole and ClusterRoleBinding.
pub const PROVISIONER_USER: &str = "rkcm:simulated-provisioner";

/// What the simulated provisioner does: create, update and delete volumes, write claims'
/// status, create its StorageClass and CSIDriver, record events, and attach its volumes
/// (the external-attacher stand-in).
fn provisioner_role() -> ClusterRole {
    let rule = |groups: &[&str], resources: &[&str], verbs: &[&str]| PolicyRule {
        api_groups: Some(groups.iter().map(|s| s.to_string()).collect()),
        resources: Some(resources.iter().map(|s| s.to_string()).collect()),
        verbs: verbs.iter().map(|s| s.to_string()).collect(),
        ..PolicyRule::default()
    };
    ClusterRole {
        metadata: ObjectMeta {
            name: Some(PROVISIONER_USER.into()),
            ..ObjectMeta::default()
        },
        rules: Some(vec![
            rule(
                &[""],
                &["persistentvolumes"],
                &[
                    "get", "list", "watch", "create", "update", "patch", "delete",
                ],
            ),
            rule(
                &[""],
                &["persistentvolumeclaims"],
                &["get", "list", "watch", "update", "patch"],
            ),
            rule(
                &[""],
                &["persistentvolumeclaims/status"],
                &["update", "patch"],
            ),
            rule(
                &["storage.k8s.io"],
                &["storageclasses"],
                &["get", "list", "watch", "create"],
            ),
            rule(
                &["", "events.k8s.io"],
                &["events"],
                &["create", "update", "patch"],
            ),
            // The external-attacher stand-in of the simulated CSI driver, and its CSIDriver.
            rule(
                &["storage.k8s.io"],
                &["volumeattachments"],
                &["get", "list", "watch", "update", "patch"],
            ),
            rule(
                &["storage.k8s.io"],
                &["volumeattachments/status"],
                &["update", "patch"],
            ),
            rule(&["storage.k8s.io"], &["csidrivers"], &["get", "create"]),
        ]),
        ..ClusterRole::default()
    }
}

fn provisioner_binding() -> ClusterRoleBinding {
    ClusterRoleBinding {
        metadata: ObjectMeta {
            name: Some(PROVISIONER_USER.into()),
            ..ObjectMeta::default()
        },
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "ClusterRole".into(),
            name: PROVISIONER_USER.into(),
        },
        subjects: Some(vec![Subject {
            api_group: Some("rbac.authorization.k8s.io".into()),
            kind: "User".into(),
            name: PROVISIONER_USER.into(),
            ..Subject::default()
        }]),
    }
}

/// Creates the provisioner's ClusterRole and ClusterRoleBinding with `admin`, or brings their
/// rules and subjects back to these.
pub async fn ensure_provisioner_role(admin: &kube::Client) -> anyhow::Result<()> {
    let roles: Api<ClusterRole> = Api::all(admin.clone());
    let role = provisioner_role();
    match roles.create(&PostParams::default(), &role).await {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.code == 409 => {
            roles
                .patch(
                    PROVISIONER_USER,
                    &PatchParams::default(),
                    &Patch::Merge(serde_json::json!({ "rules": role.rules })),
                )
                .await
                .context("updating the provisioner's ClusterRole")?;
        }
        Err(e) => return Err(e).context("creating the provisioner's ClusterRole"),
    }
    let bindings: Api<ClusterRoleBinding> = Api::all(admin.clone());
    let binding = provisioner_binding();
    match bindings.create(&PostParams::default(), &binding).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 409 => bindings
            .patch(
                PROVISIONER_USER,
                &PatchParams::default(),
                &Patch::Merge(serde_json::json!({ "subjects": binding.subjects })),
            )
            .await
            .map(|_| ())
            .context("updating the provisioner's ClusterRoleBinding"),
        Err(e) => Err(e).context("creating the provisioner's ClusterRoleBinding"),
    }
}

/// Where the API server is and the CA that signs the components' certificates.
pub struct ClusterCa<'a> {
    /// `https://host:port`.
    pub server_url: &'a str,
    /// The cluster CA's certificate (PEM), trusted by the clients.
    pub ca_pem: &'a str,
    /// The cluster CA's key (PEM), signing the clients' certificates.
    pub ca_key_pem: &'a str,
}

/// The kubeconfig of `user` in `groups` with a fresh client certificate (as JSON, which is YAML).
fn kubeconfig_text(ca: &ClusterCa<'_>, user: &str, groups: &[&str]) -> anyhow::Result<String> {
    let crate::client_identity::ClientCertificate { cert_pem, key_pem } =
        crate::client_identity::issue(ca.ca_pem, ca.ca_key_pem, user, groups)?;
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    Ok(serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "rkcm", "cluster": {
            "server": ca.server_url,
            "certificate-authority-data": b64(ca.ca_pem),
        }}],
        "users": [{"name": user, "user": {
            "client-certificate-data": b64(&cert_pem),
            "client-key-data": b64(&key_pem),
        }}],
        "contexts": [{"name": "rkcm", "context": {"cluster": "rkcm", "user": user}}],
        "current-context": "rkcm",
    })
    .to_string())
}

/// A client that authenticates as `user` in `groups` with a certificate of the cluster CA.
pub async fn certificate_client(
    ca: &ClusterCa<'_>,
    user: &str,
    groups: &[&str],
) -> anyhow::Result<kube::Client> {
    let kubeconfig = Kubeconfig::from_yaml(&kubeconfig_text(ca, user, groups)?)
        .with_context(|| format!("the kubeconfig of {user}"))?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .with_context(|| format!("loading the kubeconfig of {user}"))?;
    rkcm_runtime::transport::client(config)
        .with_context(|| format!("building the client of {user}"))
}

/// The clients of the node simulation: each of `nodes` as itself, the scheduler as
/// `system:kube-scheduler`, the provisioner as [`PROVISIONER_USER`] (whose role `simulator`
/// creates), and the rest with `simulator`.
pub async fn node_sim_clients(
    ca: &ClusterCa<'_>,
    simulator: kube::Client,
    nodes: impl IntoIterator<Item = String>,
) -> anyhow::Result<rkcm_nodesim::Clients> {
    let scheduler = certificate_client(ca, SCHEDULER_USER, &[]).await?;
    ensure_provisioner_role(&simulator).await?;
    let provisioner = certificate_client(ca, PROVISIONER_USER, &[]).await?;
    let mut kubelets = std::collections::HashMap::new();
    for node in nodes {
        let client = certificate_client(ca, &node_user_name(&node), &[NODES_GROUP]).await?;
        kubelets.insert(node, client);
    }
    Ok(rkcm_nodesim::Clients::new(simulator, scheduler, kubelets).with_provisioner(provisioner))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kubeconfig_carries_a_certificate_for_the_user_and_the_ca() {
        let tls = rkcm_apiserver::tls::generate(&[]).expect("CA");
        let ca = ClusterCa {
            server_url: "https://127.0.0.1:6443",
            ca_pem: &tls.ca_pem,
            ca_key_pem: &tls.ca_key_pem,
        };
        let text = kubeconfig_text(&ca, "system:node:n1", &[NODES_GROUP]).expect("kubeconfig");
        let kubeconfig = Kubeconfig::from_yaml(&text).expect("parses");
        let user = kubeconfig.auth_infos[0].auth_info.as_ref().expect("user");
        let cert = base64::engine::general_purpose::STANDARD
            .decode(user.client_certificate_data.as_deref().expect("cert"))
            .expect("base64");
        use rustls::pki_types::pem::PemObject;
        let der = rustls::pki_types::CertificateDer::from_pem_slice(&cert).expect("pem");
        let ca_der =
            rustls::pki_types::CertificateDer::from_pem_slice(tls.ca_pem.as_bytes()).expect("pem");
        let now = jiff::Timestamp::now().as_second();
        let parsed = rkcm_apiserver::auth::x509::verify(&der, &ca_der, now)
            .expect("signed by the cluster CA")
            .expect("a user");
        assert_eq!(parsed.name, "system:node:n1");
        assert_eq!(parsed.groups, ["system:nodes"]);
    }
}
