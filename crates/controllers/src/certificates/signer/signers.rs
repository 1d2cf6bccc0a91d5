//! The four `kubernetes.io` signers kube-controller-manager signs for, and what each accepts.
//!
//! Mirrors `getCSRVerificationFuncForSignerName` and `isKubeletServing`, `isKubeletClient`,
//! `isKubeAPIServerClient`, `isLegacyUnknown`, `validAPIServerClientUsages` of
//! `pkg/controller/certificates/signer/signer.go`, and `ValidateKubeletServingCSR` /
//! `ValidateKubeletClientCSR` of `pkg/apis/certificates/helpers.go` (messages as kube's).

use std::collections::BTreeSet;

use crate::certificates::request::Request;

/// A signer of kube-controller-manager.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Signer {
    /// `kubernetes.io/kubelet-serving`: kubelets' serving certificates.
    KubeletServing,
    /// `kubernetes.io/kube-apiserver-client-kubelet`: kubelets' client certificates.
    KubeletClient,
    /// `kubernetes.io/kube-apiserver-client`: client certificates for the API server.
    KubeApiserverClient,
    /// `kubernetes.io/legacy-unknown`: no restrictions, kept for compatibility.
    LegacyUnknown,
}

/// `capi.KubeletServingSignerName`.
pub const KUBELET_SERVING: &str = "kubernetes.io/kubelet-serving";
/// `capi.KubeAPIServerClientKubeletSignerName`.
pub const KUBE_APISERVER_CLIENT_KUBELET: &str = "kubernetes.io/kube-apiserver-client-kubelet";
/// `capi.KubeAPIServerClientSignerName`.
pub const KUBE_APISERVER_CLIENT: &str = "kubernetes.io/kube-apiserver-client";
/// `capiv1beta1.LegacyUnknownSignerName`.
pub const LEGACY_UNKNOWN: &str = "kubernetes.io/legacy-unknown";

impl Signer {
    /// Every signer, in the order kube starts their loops.
    pub const ALL: [Signer; 4] = [
        Signer::KubeletServing,
        Signer::KubeletClient,
        Signer::KubeApiserverClient,
        Signer::LegacyUnknown,
    ];

    /// The signer called `name` (`getCSRVerificationFuncForSignerName`).
    pub fn from_name(name: &str) -> Option<Signer> {
        Signer::ALL.into_iter().find(|s| s.name() == name)
    }

    /// The `spec.signerName` it signs for.
    pub fn name(self) -> &'static str {
        match self {
            Signer::KubeletServing => KUBELET_SERVING,
            Signer::KubeletClient => KUBE_APISERVER_CLIENT_KUBELET,
            Signer::KubeApiserverClient => KUBE_APISERVER_CLIENT,
            Signer::LegacyUnknown => LEGACY_UNKNOWN,
        }
    }

    /// The name of its loop (and queue).
    pub fn controller_name(self) -> &'static str {
        match self {
            Signer::KubeletServing => "csrsigning-kubelet-serving",
            Signer::KubeletClient => "csrsigning-kubelet-client",
            Signer::KubeApiserverClient => "csrsigning-kube-apiserver-client",
            Signer::LegacyUnknown => "csrsigning-legacy-unknown",
        }
    }

    /// Whether this signer may sign `request` with `usages`: `Err` with kube's message when the
    /// request is for it but breaks its rules (the request then gets a `Failed` condition).
    pub fn validate(self, request: &Request, usages: &[String]) -> Result<(), String> {
        let set: BTreeSet<&str> = usages.iter().map(String::as_str).collect();
        match self {
            Signer::KubeletServing => validate_kubelet_serving(request, &set),
            Signer::KubeletClient => validate_kubelet_client(request, &set),
            Signer::KubeApiserverClient => valid_api_server_client_usages(usages),
            // No restrictions, to keep v1beta1's behaviour.
            Signer::LegacyUnknown => Ok(()),
        }
    }
}

const ORGANIZATION_NOT_SYSTEM_NODES: &str = "subject organization is not system:nodes";
const COMMON_NAME_NOT_SYSTEM_NODE: &str = "subject common name does not begin with system:node:";

fn usages_match(set: &BTreeSet<&str>, required: &[&str], without_rsa: &[&str]) -> bool {
    let same = |want: &[&str]| set.len() == want.len() && want.iter().all(|u| set.contains(u));
    same(required) || same(without_rsa)
}

/// `usages did not match [a b c]`, the required set listed sorted as Go's `sets.String.List`.
fn usages_mismatch(required: &[&str]) -> String {
    let mut sorted = required.to_vec();
    sorted.sort_unstable();
    format!("usages did not match [{}]", sorted.join(" "))
}

/// `ValidateKubeletServingCSR`.
pub fn validate_kubelet_serving(request: &Request, usages: &BTreeSet<&str>) -> Result<(), String> {
    const REQUIRED: &[&str] = &["digital signature", "key encipherment", "server auth"];
    if request.subject.organization != ["system:nodes"] {
        return Err(ORGANIZATION_NOT_SYSTEM_NODES.into());
    }
    if request.dns_names.is_empty() && request.ip_addresses.is_empty() {
        return Err("DNS or IP subjectAltName is required".into());
    }
    if !request.email_addresses.is_empty() {
        return Err("Email subjectAltNames are not allowed".into());
    }
    if !request.uris.is_empty() {
        return Err("URI subjectAltNames are not allowed".into());
    }
    if !usages_match(usages, REQUIRED, &["digital signature", "server auth"]) {
        return Err(usages_mismatch(REQUIRED));
    }
    if !request.subject.common_name.starts_with("system:node:") {
        return Err(COMMON_NAME_NOT_SYSTEM_NODE.into());
    }
    Ok(())
}

/// `ValidateKubeletClientCSR`.
pub fn validate_kubelet_client(request: &Request, usages: &BTreeSet<&str>) -> Result<(), String> {
    const REQUIRED: &[&str] = &["digital signature", "key encipherment", "client auth"];
    if request.subject.organization != ["system:nodes"] {
        return Err(ORGANIZATION_NOT_SYSTEM_NODES.into());
    }
    if !request.dns_names.is_empty() {
        return Err("DNS subjectAltNames are not allowed".into());
    }
    if !request.email_addresses.is_empty() {
        return Err("Email subjectAltNames are not allowed".into());
    }
    if !request.ip_addresses.is_empty() {
        return Err("IP subjectAltNames are not allowed".into());
    }
    if !request.uris.is_empty() {
        return Err("URI subjectAltNames are not allowed".into());
    }
    if !request.subject.common_name.starts_with("system:node:") {
        return Err(COMMON_NAME_NOT_SYSTEM_NODE.into());
    }
    if !usages_match(usages, REQUIRED, &["digital signature", "client auth"]) {
        return Err(usages_mismatch(REQUIRED));
    }
    Ok(())
}

/// `validAPIServerClientUsages`: `client auth` required, `digital signature` and
/// `key encipherment` allowed, nothing else.
pub fn valid_api_server_client_usages(usages: &[String]) -> Result<(), String> {
    let mut client_auth = false;
    for u in usages {
        match u.as_str() {
            "digital signature" | "key encipherment" => {}
            "client auth" => client_auth = true,
            other => return Err(format!("invalid usage for client certificate: {other}")),
        }
    }
    if !client_auth {
        return Err("missing required usage for client certificate: client auth".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::certificates::name::Name;

    fn request(cn: &str, orgs: &[&str], dns: &[&str]) -> Request {
        Request {
            subject: Name {
                common_name: cn.into(),
                organization: orgs.iter().map(|s| s.to_string()).collect(),
                ..Name::default()
            },
            dns_names: dns.iter().map(|s| s.to_string()).collect(),
            ..Request::default()
        }
    }

    fn usages(u: &[&str]) -> Vec<String> {
        u.iter().map(|s| s.to_string()).collect()
    }

    /// The validation outcomes of `TestHandle`'s cases.
    #[test]
    fn each_signer_accepts_what_kube_accepts() {
        let client = usages(&["client auth", "digital signature", "key encipherment"]);
        assert_eq!(
            Signer::KubeApiserverClient
                .validate(&request("hello-world", &["some-org"], &[]), &client),
            Ok(())
        );
        assert_eq!(
            Signer::KubeApiserverClient.validate(
                &request("hello-world", &["some-org"], &[]),
                &usages(&[
                    "server auth",
                    "client auth",
                    "digital signature",
                    "key encipherment"
                ])
            ),
            Err("invalid usage for client certificate: server auth".into())
        );
        assert_eq!(
            Signer::KubeletClient.validate(
                &request("system:node:hello-world", &["system:nodes"], &[]),
                &client
            ),
            Ok(())
        );
        assert_eq!(
            Signer::LegacyUnknown.validate(&Request::default(), &[]),
            Ok(())
        );
        assert_eq!(
            Signer::KubeletServing.validate(
                &request("system:node:testnode", &["system:nodes"], &["example.com"]),
                &usages(&["server auth", "digital signature", "key encipherment"])
            ),
            Ok(())
        );
    }

    #[test]
    fn api_server_clients_need_client_auth() {
        assert_eq!(
            valid_api_server_client_usages(&usages(&["digital signature"])),
            Err("missing required usage for client certificate: client auth".into())
        );
        assert_eq!(
            valid_api_server_client_usages(&usages(&["client auth"])),
            Ok(())
        );
    }

    #[test]
    fn kubelet_certificates_need_a_node_subject_and_exact_usages() {
        let serving = |r: &Request, u: &[&str]| Signer::KubeletServing.validate(r, &usages(u));
        let ok = ["digital signature", "server auth"];
        assert_eq!(
            serving(
                &request("system:node:n", &["system:nodes", "x"], &["n"]),
                &ok
            ),
            Err(ORGANIZATION_NOT_SYSTEM_NODES.into())
        );
        assert_eq!(
            serving(&request("system:node:n", &["system:nodes"], &[]), &ok),
            Err("DNS or IP subjectAltName is required".into())
        );
        let mut with_ip = request("system:node:n", &["system:nodes"], &[]);
        with_ip.ip_addresses.push("10.0.0.1".parse().unwrap());
        assert_eq!(serving(&with_ip, &ok), Ok(()));
        let mut with_email = request("system:node:n", &["system:nodes"], &["n"]);
        with_email.email_addresses.push("a@b.c".into());
        assert_eq!(
            serving(&with_email, &ok),
            Err("Email subjectAltNames are not allowed".into())
        );
        assert_eq!(
            serving(
                &request("system:node:n", &["system:nodes"], &["n"]),
                &["server auth"]
            ),
            Err("usages did not match [digital signature key encipherment server auth]".into())
        );
        assert_eq!(
            serving(&request("node:n", &["system:nodes"], &["n"]), &ok),
            Err(COMMON_NAME_NOT_SYSTEM_NODE.into())
        );
        let client = |r: &Request, u: &[&str]| Signer::KubeletClient.validate(r, &usages(u));
        assert_eq!(
            client(
                &request("system:node:n", &["system:nodes"], &["n"]),
                &["client auth"]
            ),
            Err("DNS subjectAltNames are not allowed".into())
        );
        assert_eq!(
            client(
                &request("system:node:n", &["system:nodes"], &[]),
                &["client auth"]
            ),
            Err("usages did not match [client auth digital signature key encipherment]".into())
        );
        assert_eq!(
            client(
                &request("system:node:n", &["system:nodes"], &[]),
                &["client auth", "digital signature", "digital signature"]
            ),
            Ok(())
        );
    }

    #[test]
    fn signer_names_map_to_their_loops() {
        assert_eq!(
            Signer::from_name(KUBE_APISERVER_CLIENT),
            Some(Signer::KubeApiserverClient)
        );
        assert_eq!(Signer::from_name("kubernetes.io/not-a-real-signer"), None);
        assert_eq!(Signer::from_name("example.com/sample-name"), None);
        assert_eq!(
            Signer::KubeletServing.controller_name(),
            "csrsigning-kubelet-serving"
        );
    }
}
