//! What a CertificateSigningRequest's conditions say: approved, denied, failed, issued.
//!
//! Mirrors `pkg/controller/certificates/certificates.go` (`GetCertApprovalCondition`,
//! `IsCertificateRequestApproved`, `HasTrueCondition`).

use k8s_openapi::api::certificates::v1::{
    CertificateSigningRequest, CertificateSigningRequestCondition,
};

/// Condition type of an approved request.
pub const APPROVED: &str = "Approved";
/// Condition type of a denied request.
pub const DENIED: &str = "Denied";
/// Condition type of a request its signer refused.
pub const FAILED: &str = "Failed";

fn conditions(csr: &CertificateSigningRequest) -> &[CertificateSigningRequestCondition] {
    csr.status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or_default()
}

/// Whether the request has an Approved and a Denied condition (`GetCertApprovalCondition`:
/// by type only, whatever their status).
pub fn approval(csr: &CertificateSigningRequest) -> (bool, bool) {
    let has = |ty: &str| conditions(csr).iter().any(|c| c.type_ == ty);
    (has(APPROVED), has(DENIED))
}

/// Approved and not denied (`IsCertificateRequestApproved`).
pub fn is_approved(csr: &CertificateSigningRequest) -> bool {
    approval(csr) == (true, false)
}

/// Whether a condition of `ty` is true; an empty status counts as true, as for conditions
/// written before status was required (`HasTrueCondition`).
pub fn has_true_condition(csr: &CertificateSigningRequest, ty: &str) -> bool {
    conditions(csr)
        .iter()
        .any(|c| c.type_ == ty && (c.status.is_empty() || c.status == "True"))
}

/// Whether the request holds a certificate.
pub fn is_issued(csr: &CertificateSigningRequest) -> bool {
    csr.status
        .as_ref()
        .and_then(|s| s.certificate.as_ref())
        .is_some_and(|c| !c.0.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn csr(conditions: serde_json::Value) -> CertificateSigningRequest {
        serde_json::from_value(json!({"metadata": {"name": "c"},
            "spec": {"request": "", "signerName": "x.io/y"},
            "status": {"conditions": conditions}}))
        .expect("csr")
    }

    #[test]
    fn approval_is_by_type_and_a_denial_wins() {
        assert!(is_approved(&csr(
            json!([{"type": "Approved", "status": ""}])
        )));
        assert!(!is_approved(&csr(json!([
            {"type": "Approved", "status": "True"}, {"type": "Denied", "status": "True"}
        ]))));
        assert!(!is_approved(&csr(json!([]))));
        assert_eq!(
            approval(&csr(json!([{"type": "Denied", "status": "True"}]))),
            (false, true)
        );
    }

    #[test]
    fn true_conditions_include_those_without_a_status() {
        assert!(has_true_condition(
            &csr(json!([{"type": "Failed", "status": ""}])),
            FAILED
        ));
        assert!(has_true_condition(
            &csr(json!([{"type": "Failed", "status": "True"}])),
            FAILED
        ));
        assert!(!has_true_condition(
            &csr(json!([{"type": "Failed", "status": "False"}])),
            FAILED
        ));
        assert!(!is_issued(&csr(json!([]))));
    }
}
