//! The kinds of request the approver recognizes, and the permission each needs.
//!
//! Mirrors `recognizers`, `isNodeClientCert` and `isSelfNodeClientCert` of
//! `pkg/controller/certificates/approver/sarapprove.go`.

use std::collections::BTreeSet;

use k8s_openapi::api::certificates::v1::CertificateSigningRequest;

use crate::certificates::request::Request;
use crate::certificates::signer::signers::{
    validate_kubelet_client, KUBE_APISERVER_CLIENT_KUBELET,
};

/// A kind of request the approver may approve, once a SubjectAccessReview allows its requester
/// to `create` `certificatesigningrequests/<subresource>` in `certificates.k8s.io`.
#[derive(Clone, Copy)]
pub struct Recognizer {
    /// Whether a request (with its parsed PKCS#10 data) is of this kind.
    pub recognize: fn(&CertificateSigningRequest, &Request) -> bool,
    /// The subresource of the permission checked.
    pub subresource: &'static str,
    /// The message of the Approved condition.
    pub success_message: &'static str,
}

impl std::fmt::Debug for Recognizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recognizer")
            .field("subresource", &self.subresource)
            .finish_non_exhaustive()
    }
}

/// kube's recognizers, in the order they are tried: a node's own client certificate, then any
/// node client certificate.
pub fn recognizers() -> Vec<Recognizer> {
    vec![
        Recognizer {
            recognize: is_self_node_client_cert,
            subresource: "selfnodeclient",
            success_message:
                "Auto approving self kubelet client certificate after SubjectAccessReview.",
        },
        Recognizer {
            recognize: is_node_client_cert,
            subresource: "nodeclient",
            success_message: "Auto approving kubelet client certificate after SubjectAccessReview.",
        },
    ]
}

/// A kubelet client certificate request (`isNodeClientCert`): kube's kubelet-client signer and
/// the rules of `IsKubeletClientCSR`.
pub fn is_node_client_cert(csr: &CertificateSigningRequest, request: &Request) -> bool {
    if csr.spec.signer_name != KUBE_APISERVER_CLIENT_KUBELET {
        return false;
    }
    let usages: BTreeSet<&str> = csr
        .spec
        .usages
        .iter()
        .flatten()
        .map(String::as_str)
        .collect();
    validate_kubelet_client(request, &usages).is_ok()
}

/// A node asking for its own client certificate (`isSelfNodeClientCert`): the requester is the
/// certificate's common name.
pub fn is_self_node_client_cert(csr: &CertificateSigningRequest, request: &Request) -> bool {
    csr.spec.username.as_deref().unwrap_or_default() == request.subject.common_name
        && is_node_client_cert(csr, request)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::certificates::name::Name;
    use serde_json::json;

    struct Builder {
        cn: &'static str,
        orgs: Vec<&'static str>,
        requestor: &'static str,
        usages: Vec<&'static str>,
    }

    fn good() -> Builder {
        Builder {
            cn: "system:node:foo",
            orgs: vec!["system:nodes"],
            requestor: "system:node:foo",
            usages: vec!["key encipherment", "digital signature", "client auth"],
        }
    }

    fn build(b: &Builder) -> (CertificateSigningRequest, Request) {
        let request = Request {
            subject: Name {
                common_name: b.cn.to_string(),
                organization: b.orgs.iter().map(|s| s.to_string()).collect(),
                ..Name::default()
            },
            ..Request::default()
        };
        let csr = serde_json::from_value(json!({
            "metadata": {"name": "c"},
            "spec": {"request": "", "signerName": KUBE_APISERVER_CLIENT_KUBELET,
                "username": b.requestor, "usages": b.usages},
        }))
        .expect("csr");
        (csr, request)
    }

    /// `TestRecognizers`.
    #[test]
    fn node_client_requests_are_recognized_as_kube_does() {
        let (csr, req) = build(&good());
        assert!(is_node_client_cert(&csr, &req));
        assert!(is_self_node_client_cert(&csr, &req));

        let bad: Vec<fn(&mut Builder)> = vec![
            |b| b.cn = "mike",
            |b| b.orgs = vec![],
            |b| b.orgs = vec!["system:master"],
            |b| b.usages.push("server auth"),
        ];
        for change in bad {
            let mut b = good();
            change(&mut b);
            let (csr, req) = build(&b);
            assert!(!is_node_client_cert(&csr, &req));
            assert!(!is_self_node_client_cert(&csr, &req));
        }

        let different_cn: Vec<fn(&mut Builder)> =
            vec![|b| b.requestor = "joe", |b| b.cn = "system:node:bar"];
        for change in different_cn {
            let mut b = good();
            change(&mut b);
            let (csr, req) = build(&b);
            assert!(is_node_client_cert(&csr, &req));
            assert!(!is_self_node_client_cert(&csr, &req));
        }

        let (mut csr, req) = build(&good());
        csr.spec.signer_name = "kubernetes.io/kube-apiserver-client".into();
        assert!(!is_node_client_cert(&csr, &req));
    }

    /// `TestHasKubeletUsages`.
    #[test]
    fn kubelet_client_usages_are_exact() {
        let cases: [(&[&str], bool); 5] = [
            (&[], false),
            (&["key encipherment", "digital signature"], false),
            (
                &["key encipherment", "digital signature", "server auth"],
                false,
            ),
            (
                &["key encipherment", "digital signature", "client auth"],
                true,
            ),
            (&["digital signature", "client auth"], true),
        ];
        for (usages, want) in cases {
            let mut b = good();
            b.usages = usages.to_vec();
            let (csr, req) = build(&b);
            assert_eq!(is_node_client_cert(&csr, &req), want, "{usages:?}");
        }
    }
}
