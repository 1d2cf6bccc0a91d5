//! The CertificateSigningRequest table (`printCertificateSigningRequest`, with
//! `extractCSRStatus`).

use jiff::Timestamp;
use serde_json::Value;

use super::{age, array_at, col, duration, name, str_at, Column, Description, AGE, NAME};

const CSR_SPEC: &str = "io.k8s.api.certificates.v1.CertificateSigningRequestSpec";

/// CertificateSigningRequest columns.
pub(super) const COLUMNS: &[Column] = &[
    NAME,
    AGE,
    col(
        "SignerName",
        "string",
        Description::Field(CSR_SPEC, "signerName"),
    ),
    col(
        "Requestor",
        "string",
        Description::Field(CSR_SPEC, "request"),
    ),
    col(
        "RequestedDuration",
        "string",
        Description::Field(CSR_SPEC, "expirationSeconds"),
    ),
    col(
        "Condition",
        "string",
        Description::Field(
            "io.k8s.api.certificates.v1.CertificateSigningRequestStatus",
            "conditions",
        ),
    ),
];

/// `extractCSRStatus`: Denied, Approved or Pending, then `,Failed` and `,Issued`.
fn status(csr: &Value) -> String {
    let has = |type_: &str| {
        array_at(csr, "/status/conditions")
            .iter()
            .any(|c| str_at(c, "/type") == type_)
    };
    let mut status = if has("Denied") {
        "Denied"
    } else if has("Approved") {
        "Approved"
    } else {
        "Pending"
    }
    .to_string();
    if has("Failed") {
        status.push_str(",Failed");
    }
    if !str_at(csr, "/status/certificate").is_empty() {
        status.push_str(",Issued");
    }
    status
}

/// The cells of one CertificateSigningRequest's row.
pub(super) fn cells(csr: &Value, now: Timestamp) -> Vec<Value> {
    let signer = match str_at(csr, "/spec/signerName") {
        "" => "<none>",
        signer => signer,
    };
    let requested = match csr
        .pointer("/spec/expirationSeconds")
        .and_then(Value::as_i64)
    {
        Some(seconds) => duration::human_duration(i128::from(seconds) * 1_000_000_000),
        None => "<none>".to_string(),
    };
    vec![
        name(csr),
        age(csr, now),
        signer.into(),
        str_at(csr, "/spec/username").into(),
        requested.into(),
        status(csr).into(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn csr(spec: Value, status: Value) -> Value {
        json!({"metadata":{"name":"csr","creationTimestamp":"2026-01-01T00:00:01.9Z"},
            "spec":spec,"status":status})
    }

    fn row(csr: &Value) -> Value {
        Value::Array(cells(csr, "2026-01-01T00:00:00Z".parse().unwrap()))
    }

    #[test]
    fn certificate_signing_request_rows_match_kube() {
        // TestPrintCertificateSigningRequest.
        assert_eq!(
            row(&csr(json!({}), json!({}))),
            json!(["csr", "0s", "<none>", "", "<none>", "Pending"])
        );
        let approved = json!({"conditions":[{"type":"Approved","status":"True"}]});
        assert_eq!(
            row(&csr(json!({"username":"CSR Requestor"}), approved.clone())),
            json!(["csr", "0s", "<none>", "CSR Requestor", "<none>", "Approved"])
        );
        // A little more than a week.
        let spec = json!({"username":"CSR Requestor","signerName":"example.com/test-signer",
            "expirationSeconds":(7 * 24 + 1) * 3600});
        assert_eq!(
            row(&csr(spec, approved)),
            json!([
                "csr",
                "0s",
                "example.com/test-signer",
                "CSR Requestor",
                "7d1h",
                "Approved"
            ])
        );
        let issued = json!({"conditions":[{"type":"Approved","status":"True"}],
            "certificate":"Y2VydCBkYXRh"});
        assert_eq!(
            row(&csr(json!({"username":"CSR Requestor"}), issued))[5],
            "Approved,Issued"
        );
        let denied = json!({"conditions":[{"type":"Denied","status":"True"},
            {"type":"Approved","status":"True"},{"type":"Failed","status":"True"}]});
        assert_eq!(row(&csr(json!({}), denied))[5], "Denied,Failed");
    }
}
