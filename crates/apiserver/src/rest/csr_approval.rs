//! The storage of CertificateSigningRequests (`pkg/registry/certificates/certificates/storage`):
//! `/approval`, which changes `status.conditions` alone, with its own strategy.

use async_trait::async_trait;
use serde_json::Value;

use crate::registry::{self, certificatesigningrequests, FieldError};
use rkcm_server::rest::WriteHooks;

/// The subresource of approvals.
const APPROVAL: &str = "approval";

/// The hooks of CertificateSigningRequests' storage.
pub struct CertificateSigningRequestHooks;

#[async_trait]
impl WriteHooks for CertificateSigningRequestHooks {
    fn prepare_for_subresource_update(
        &self,
        subresource: &str,
        new: &mut Value,
        old: &Value,
    ) -> bool {
        if subresource != APPROVAL {
            return false;
        }
        if let Some(info) = rkcm_apimachinery::catalog::by_kind(
            "certificates.k8s.io/v1",
            "CertificateSigningRequest",
        ) {
            registry::by_kind::strategy(info).default(new);
        }
        certificatesigningrequests::prepare_for_approval(new, old);
        true
    }

    fn validate_subresource_update(
        &self,
        subresource: &str,
        new: &Value,
        old: &Value,
    ) -> Option<Vec<FieldError>> {
        (subresource == APPROVAL).then(|| certificatesigningrequests::validate_approval(new, old))
    }
}
