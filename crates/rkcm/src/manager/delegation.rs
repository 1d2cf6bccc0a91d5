//! The secure port's authenticator and authorizer from the delegation flags, as kube's
//! `DelegatingAuthenticationOptions.ApplyTo` and `DelegatingAuthorizationOptions.ApplyTo`: the
//! clients from `--authentication-kubeconfig`/`--authorization-kubeconfig` (else the in-cluster
//! configuration, else none), the CAs from the files or, unless `--authentication-skip-lookup`,
//! from the `kube-system/extension-apiserver-authentication` ConfigMap.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context as _;
use k8s_openapi::api::core::v1::ConfigMap;
use rkcm_runtime::{Clock, SystemClock};

use super::delegation_flags::{non_empty, DelegationArgs};
use crate::serving::authn::{ApiTokenReviewer, Authenticator, RequestHeaderConfig};
use crate::serving::authz::{ApiAccessReviewer, Authorizer};

/// The ConfigMap the API server publishes its client CAs in.
pub const AUTHENTICATION_CONFIGMAP: (&str, &str) =
    ("kube-system", "extension-apiserver-authentication");

/// What the secure port needs from the delegation flags.
pub struct Delegation {
    /// The authenticator.
    pub authn: Authenticator,
    /// The authorizer.
    pub authz: Authorizer,
    /// Every trusted client CA, PEM, to hint in the TLS handshake.
    pub client_ca_pem: String,
}

/// A client from `kubeconfig`, else the in-cluster configuration; `None` (with kube's warning)
/// when neither exists.
async fn delegated_client(
    kubeconfig: Option<&Path>,
    flag: &str,
) -> anyhow::Result<Option<kube::Client>> {
    let config = match kubeconfig {
        Some(path) => {
            let file = kube::config::Kubeconfig::read_from(path).with_context(|| {
                format!(
                    "failed to get delegated {flag} kubeconfig: reading {}",
                    path.display()
                )
            })?;
            kube::Config::from_custom_kubeconfig(file, &Default::default())
                .await
                .with_context(|| {
                    format!(
                        "failed to get delegated {flag} kubeconfig: loading {}",
                        path.display()
                    )
                })?
        }
        None => match kube::Config::incluster() {
            Ok(config) => config,
            Err(_) => return Ok(None),
        },
    };
    Ok(Some(
        rkcm_runtime::transport::client(config).context("building the delegation client")?,
    ))
}

/// DER certificates of the PEM bundle `pem` (`what` names it in errors).
pub fn certificates(pem: &str, what: &str) -> anyhow::Result<Vec<Vec<u8>>> {
    use rustls::pki_types::pem::PemObject;
    let certs = rustls::pki_types::CertificateDer::pem_slice_iter(pem.as_bytes())
        .map(|c| c.map(|c| c.as_ref().to_vec()))
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("parsing {what}"))?;
    anyhow::ensure!(!certs.is_empty(), "{what}: no certificate found");
    Ok(certs)
}

fn read(path: &Path, flag: &str) -> anyhow::Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("reading {flag} {}", path.display()))
}

/// Reads the string array a key of the authentication ConfigMap holds (JSON, as the API server
/// writes it).
fn string_list(data: &std::collections::BTreeMap<String, String>, key: &str) -> Vec<String> {
    data.get(key)
        .and_then(|raw| serde_json::from_str::<Vec<String>>(raw).ok())
        .unwrap_or_default()
}

/// Builds the authenticator and authorizer of the secure port.
pub async fn from_flags(args: &DelegationArgs) -> anyhow::Result<Delegation> {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let authn_client =
        delegated_client(args.authentication_kubeconfig.as_deref(), "authentication").await?;
    let mut client_ca_pem = String::new();
    let mut client_ca = Vec::new();
    if let Some(path) = &args.client_ca_file {
        let pem = read(path, "--client-ca-file")?;
        client_ca = certificates(&pem, "--client-ca-file")?;
        client_ca_pem.push_str(&pem);
    }
    let mut request_header = None;
    if let Some(path) = &args.requestheader_client_ca_file {
        let pem = read(path, "--requestheader-client-ca-file")?;
        request_header = Some(RequestHeaderConfig {
            client_ca: certificates(&pem, "--requestheader-client-ca-file")?,
            allowed_names: non_empty(&args.requestheader_allowed_names),
            username_headers: non_empty(&args.requestheader_username_headers),
            uid_headers: non_empty(&args.requestheader_uid_headers),
            group_headers: non_empty(&args.requestheader_group_headers),
            extra_headers_prefix: non_empty(&args.requestheader_extra_headers_prefix),
        });
        client_ca_pem.push('\n');
        client_ca_pem.push_str(&pem);
    }
    let missing_client_ca = args.client_ca_file.is_none();
    let missing_request_header = args.requestheader_client_ca_file.is_none();
    if (missing_client_ca || missing_request_header) && !args.authentication_skip_lookup {
        let (namespace, name) = AUTHENTICATION_CONFIGMAP;
        match &authn_client {
            None => {
                if missing_client_ca {
                    tracing::warn!("No authentication-kubeconfig provided in order to lookup client-ca-file in configmap/{name} in {namespace}, so client certificate authentication won't work.");
                }
                if missing_request_header {
                    tracing::warn!("No authentication-kubeconfig provided in order to lookup requestheader-client-ca-file in configmap/{name} in {namespace}, so request-header client certificate authentication won't work.");
                }
            }
            Some(client) => {
                let api: kube::Api<ConfigMap> = kube::Api::namespaced(client.clone(), namespace);
                match api.get(name).await {
                    Ok(cm) => {
                        let data = cm.data.unwrap_or_default();
                        if missing_client_ca {
                            if let Some(pem) =
                                data.get("client-ca-file").filter(|p| !p.trim().is_empty())
                            {
                                client_ca = certificates(
                                    pem,
                                    "client-ca-file of the authentication ConfigMap",
                                )?;
                                client_ca_pem.push_str(pem);
                            }
                        }
                        if missing_request_header {
                            if let Some(pem) = data
                                .get("requestheader-client-ca-file")
                                .filter(|p| !p.trim().is_empty())
                            {
                                request_header = Some(RequestHeaderConfig {
                                    client_ca: certificates(pem, "requestheader-client-ca-file of the authentication ConfigMap")?,
                                    allowed_names: string_list(&data, "requestheader-allowed-names"),
                                    username_headers: string_list(&data, "requestheader-username-headers"),
                                    uid_headers: string_list(&data, "requestheader-uid-headers"),
                                    group_headers: string_list(&data, "requestheader-group-headers"),
                                    extra_headers_prefix: string_list(&data, "requestheader-extra-headers-prefix"),
                                });
                                client_ca_pem.push('\n');
                                client_ca_pem.push_str(pem);
                            }
                        }
                    }
                    // kube's request-header controller: a missing ConfigMap configures nothing.
                    Err(err) if rkcm_runtime::api_error::is_not_found(&err) => {
                        tracing::debug!("configmap/{name} in {namespace} not found; no client CA from the cluster");
                    }
                    Err(err) if args.authentication_tolerate_lookup_failure => {
                        tracing::warn!(
                            "Error looking up in-cluster authentication configuration: {err}"
                        );
                        tracing::warn!("Continuing without authentication configuration. This may treat all requests as anonymous.");
                        tracing::warn!("To require authentication configuration lookup to succeed, set --authentication-tolerate-lookup-failure=false");
                    }
                    Err(err) => {
                        if matches!(&err, kube::Error::Api(status) if status.code == 403) {
                            tracing::info!("Unable to get configmap/{name} in {namespace}.  Usually fixed by 'kubectl create rolebinding -n {namespace} ROLEBINDING_NAME --role=extension-apiserver-authentication-reader --serviceaccount=YOUR_NS:YOUR_SA'");
                        }
                        anyhow::bail!(
                            "unable to load configmap based request-header-client-ca-file: {err}"
                        )
                    }
                }
            }
        }
    }
    let tokens = authn_client
        .map(|c| Arc::new(ApiTokenReviewer(c)) as Arc<dyn crate::serving::authn::TokenReviewer>);
    let authn = Authenticator::new(
        client_ca,
        request_header,
        tokens,
        args.authentication_token_webhook_cache_ttl,
        Arc::clone(&clock),
    );
    let authz_client =
        delegated_client(args.authorization_kubeconfig.as_deref(), "authorization").await?;
    if authz_client.is_none() {
        tracing::warn!("No authorization-kubeconfig provided, so SubjectAccessReview of authorization tokens won't work.");
    }
    let authz = Authorizer::new(
        non_empty(&args.authorization_always_allow_paths),
        authz_client.map(|c| {
            Arc::new(ApiAccessReviewer(c)) as Arc<dyn crate::serving::authz::AccessReviewer>
        }),
        args.authorization_webhook_cache_authorized_ttl,
        args.authorization_webhook_cache_unauthorized_ttl,
        clock,
    );
    Ok(Delegation {
        authn,
        authz,
        client_ca_pem,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(extra: &[&str]) -> DelegationArgs {
        use clap::Parser;
        let mut argv = vec!["rkcm", "controller-manager"];
        argv.extend_from_slice(extra);
        match crate::cli::Cli::try_parse_from(argv)
            .expect("flags parse")
            .command
        {
            crate::cli::Command::ControllerManager(m) => m.delegation,
            other => panic!("unexpected command {other:?}"),
        }
    }

    /// A kubeconfig for an API server that is not there (nothing listens on port 1).
    fn dead_kubeconfig(dir: &Path) -> String {
        let path = dir.join("dead.conf");
        std::fs::write(
            &path,
            r#"{"apiVersion": "v1", "kind": "Config", "current-context": "c",
                "clusters": [{"name": "k", "cluster": {"server": "http://127.0.0.1:1"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}]}"#,
        )
        .expect("kubeconfig written");
        path.display().to_string()
    }

    /// kube's `DelegatingAuthenticationOptions.ApplyTo`: a failed lookup of the authentication
    /// ConfigMap is fatal unless tolerated, and not tried with --authentication-skip-lookup.
    #[tokio::test]
    async fn a_failed_lookup_is_fatal_unless_tolerated_or_skipped() {
        let dir = tempfile::tempdir().expect("temp dir");
        let conf = dead_kubeconfig(dir.path());
        let kubeconfig = format!("--authentication-kubeconfig={conf}");
        let err = from_flags(&args(&[&kubeconfig]))
            .await
            .err()
            .expect("lookup fails");
        assert!(
            err.to_string()
                .starts_with("unable to load configmap based request-header-client-ca-file: "),
            "{err}"
        );
        let tolerated = from_flags(&args(&[
            &kubeconfig,
            "--authentication-tolerate-lookup-failure",
        ]))
        .await
        .expect("tolerated");
        assert!(tolerated.authn.client_ca.is_empty() && tolerated.authn.request_header.is_none());
        assert!(
            tolerated.authn.tokens.is_some(),
            "tokens are still reviewed"
        );
        from_flags(&args(&[&kubeconfig, "--authentication-skip-lookup"]))
            .await
            .expect("no lookup");
    }

    #[tokio::test]
    async fn ca_files_are_read_and_bad_ones_refused() {
        let dir = tempfile::tempdir().expect("temp dir");
        let key = rcgen::KeyPair::generate().expect("key");
        let ca = rcgen::CertificateParams::new(Vec::<String>::new())
            .expect("params")
            .self_signed(&key)
            .expect("ca");
        let good = dir.path().join("ca.crt");
        std::fs::write(&good, ca.pem()).expect("written");
        let bad = dir.path().join("bad.crt");
        std::fs::write(&bad, "not a certificate").expect("written");
        let (good, bad) = (good.display().to_string(), bad.display().to_string());
        let d = from_flags(&args(&[
            &format!("--client-ca-file={good}"),
            &format!("--requestheader-client-ca-file={good}"),
            "--requestheader-allowed-names=front-proxy-client",
        ]))
        .await
        .expect("files read");
        assert_eq!(d.authn.client_ca, [ca.der().to_vec()]);
        let rh = d.authn.request_header.expect("request header");
        assert_eq!(rh.allowed_names, ["front-proxy-client"]);
        assert_eq!(rh.username_headers, ["x-remote-user"]);
        assert!(d.client_ca_pem.contains("BEGIN CERTIFICATE"));
        let err = from_flags(&args(&[&format!("--client-ca-file={bad}")]))
            .await
            .err()
            .expect("refused");
        assert!(format!("{err:#}").contains("--client-ca-file"), "{err:#}");
    }
}
