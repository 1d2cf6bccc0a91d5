//! The kubeconfig that points clients (kubectl, kube-rs, client-go) at this server.

use base64::Engine;
use kube::config::{
    AuthInfo, Cluster, Context, Kubeconfig, NamedAuthInfo, NamedCluster, NamedContext, Preferences,
};

/// Name of the cluster and of the context.
const CLUSTER: &str = "rkcm";
/// Name of the user.
const USER: &str = "rkcm-admin";

/// A kubeconfig with one cluster at `server_url` (trusting `ca_pem` when given), one user that
/// presents `token`, and the current context `rkcm` in namespace `default`.
pub fn kubeconfig(server_url: &str, ca_pem: Option<&str>, token: &str) -> Kubeconfig {
    Kubeconfig {
        api_version: Some("v1".into()),
        kind: Some("Config".into()),
        preferences: Some(Preferences::default()),
        clusters: vec![NamedCluster {
            name: CLUSTER.into(),
            cluster: Some(Cluster {
                server: Some(server_url.into()),
                certificate_authority_data: ca_pem
                    .map(|pem| base64::engine::general_purpose::STANDARD.encode(pem)),
                ..Cluster::default()
            }),
            ..NamedCluster::default()
        }],
        auth_infos: vec![NamedAuthInfo {
            name: USER.into(),
            auth_info: Some(AuthInfo {
                token: Some(token.into()),
                ..AuthInfo::default()
            }),
            ..NamedAuthInfo::default()
        }],
        contexts: vec![NamedContext {
            name: CLUSTER.into(),
            context: Some(Context {
                cluster: CLUSTER.into(),
                user: Some(USER.into()),
                namespace: Some("default".into()),
                ..Context::default()
            }),
            ..NamedContext::default()
        }],
        current_context: Some(CLUSTER.into()),
        ..Kubeconfig::default()
    }
}

/// [`kubeconfig`] as the text of a kubeconfig file. It is JSON, which is YAML too: kubectl and
/// every client library read it as they read any kubeconfig.
pub fn kubeconfig_yaml(server_url: &str, ca_pem: Option<&str>, token: &str) -> String {
    let mut text = serde_json::to_string_pretty(&kubeconfig(server_url, ca_pem, token))
        .expect("a kubeconfig of strings always serializes");
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kubeconfig_reads_back_as_kubes_own_type() {
        let text = kubeconfig_yaml("https://127.0.0.1:6443", Some("PEM"), "t0k3n");
        let parsed = Kubeconfig::from_yaml(&text).expect("kube parses what the server writes");
        assert_eq!(parsed.current_context.as_deref(), Some("rkcm"));
        let cluster = parsed.clusters[0].cluster.as_ref().expect("cluster");
        assert_eq!(cluster.server.as_deref(), Some("https://127.0.0.1:6443"));
        assert_eq!(cluster.certificate_authority_data.as_deref(), Some("UEVN"));
        let context = parsed.contexts[0].context.as_ref().expect("context");
        assert_eq!(
            (context.cluster.as_str(), context.user.as_deref()),
            ("rkcm", Some("rkcm-admin"))
        );
        assert_eq!(context.namespace.as_deref(), Some("default"));
        let value: serde_json::Value = serde_json::from_str(&text).expect("JSON");
        assert_eq!(value["users"][0]["user"]["token"], "t0k3n");
        assert_eq!(value["apiVersion"], "v1");
        assert_eq!(value["kind"], "Config");
    }

    #[test]
    fn plain_http_servers_carry_no_certificate_authority() {
        let value: serde_json::Value =
            serde_json::from_str(&kubeconfig_yaml("http://127.0.0.1:1", None, "t")).expect("JSON");
        assert!(value["clusters"][0]["cluster"]
            .get("certificate-authority-data")
            .is_none());
    }
}
