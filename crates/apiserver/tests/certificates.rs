//! CertificateSigningRequests through the API: the requester recorded at create, approval and
//! denial through `/approval`, the certificate through `/status`, with kube's refusals.

use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::ByteString;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{json, Value};

use rkcm_apiserver::testing;

fn api_err(e: kube::Error) -> kube::core::Status {
    match e {
        kube::Error::Api(s) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// A CSR named `name` for `CN=jane,O=devs`, made with a fresh key.
fn csr(name: &str) -> CertificateSigningRequest {
    let key = rcgen::KeyPair::generate().expect("key");
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    params.distinguished_name = rcgen::DistinguishedName::new();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "jane");
    params
        .distinguished_name
        .push(rcgen::DnType::OrganizationName, "devs");
    let pem = params
        .serialize_request(&key)
        .expect("csr")
        .pem()
        .expect("pem");
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"request": base64_of(pem.as_bytes()),
            "signerName": "kubernetes.io/kube-apiserver-client", "usages": ["client auth"],
            "username": "mallory", "groups": ["system:masters"]},
    }))
    .expect("CSR")
}

fn base64_of(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A self-signed certificate, as a signer would put in `status.certificate`.
fn certificate_pem() -> String {
    let key = rcgen::KeyPair::generate().expect("key");
    rcgen::CertificateParams::new(vec!["jane".to_string()])
        .expect("params")
        .self_signed(&key)
        .expect("cert")
        .pem()
}

fn condition(ty: &str, reason: &str) -> Value {
    json!({"type": ty, "status": "True", "reason": reason, "message": "by the test"})
}

fn with_conditions(
    csr: &CertificateSigningRequest,
    conditions: Value,
) -> CertificateSigningRequest {
    let mut v = serde_json::to_value(csr).expect("encode");
    v["status"]["conditions"] = conditions;
    serde_json::from_value(v).expect("decode")
}

/// `v` (a CSR or its JSON) as the typed object.
fn typed(v: &impl serde::Serialize) -> CertificateSigningRequest {
    serde_json::from_value(serde_json::to_value(v).expect("encode")).expect("a CSR")
}

fn condition_types(csr: &CertificateSigningRequest) -> Vec<String> {
    csr.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .map(|c| c.iter().map(|c| c.type_.clone()).collect())
        .unwrap_or_default()
}

#[tokio::test]
async fn approval_and_certificates_go_through_their_subresources() {
    let server = testing::start().await;
    let csrs: Api<CertificateSigningRequest> = Api::all(server.client());
    let pp = PostParams::default();

    // The requester is the caller, whatever the body says.
    let created = csrs.create(&pp, &csr("jane")).await.expect("created");
    let spec = &created.spec;
    assert_eq!(spec.username.as_deref(), Some("kubernetes-admin"));
    let groups = spec.groups.clone().unwrap_or_default();
    assert!(groups.contains(&"system:masters".to_string()), "{groups:?}");
    assert!(
        groups.contains(&"system:authenticated".to_string()),
        "{groups:?}"
    );

    // /status cannot approve.
    let approve = with_conditions(&created, json!([condition("Approved", "KubectlApprove")]));
    let err = api_err(
        csrs.replace_status("jane", &pp, &typed(&approve))
            .await
            .expect_err("approval through /status"),
    );
    assert_eq!(err.code, 422);
    assert!(
        err.message
            .contains("updates may not add a condition of type \"Approved\""),
        "{}",
        err.message
    );

    // PUT /approval approves (what kubectl certificate approve sends), with timestamps.
    let approved = csrs
        .replace_subresource("approval", "jane", &pp, &approve)
        .await
        .expect("approved");
    assert_eq!(condition_types(&approved), ["Approved"]);
    let c = &approved
        .status
        .as_ref()
        .expect("status")
        .conditions
        .as_ref()
        .expect("conditions")[0];
    assert!(c.last_update_time.is_some() && c.last_transition_time.is_some());
    assert_eq!(c.reason.as_deref(), Some("KubectlApprove"));
    let fetched: CertificateSigningRequest = csrs
        .get_subresource("approval", "jane")
        .await
        .expect("GET /approval");
    assert_eq!(condition_types(&fetched), ["Approved"]);

    // Once approved, neither denied nor unapproved.
    let both = with_conditions(
        &approved,
        json!([
            condition("Approved", "KubectlApprove"),
            condition("Denied", "KubectlDeny")
        ]),
    );
    let err = api_err(
        csrs.replace_subresource("approval", "jane", &pp, &both)
            .await
            .expect_err("approved and denied"),
    );
    assert_eq!(err.code, 422);
    assert!(
        err.message.contains(
            "status.conditions[1].type: Invalid value: \"Denied\": Approved and Denied conditions are mutually exclusive"
        ),
        "{}",
        err.message
    );
    let none = with_conditions(&approved, json!([]));
    let err = api_err(
        csrs.replace_subresource("approval", "jane", &pp, &none)
            .await
            .expect_err("approval removed"),
    );
    assert!(
        err.message
            .contains("updates may not remove a condition of type \"Approved\""),
        "{}",
        err.message
    );

    // /approval changes nothing but the conditions.
    let mut sneaky = serde_json::to_value(&approved).expect("encode");
    sneaky["spec"]["signerName"] = json!("example.com/other");
    sneaky["status"]["certificate"] = json!(base64_of(certificate_pem().as_bytes()));
    let kept = csrs
        .replace_subresource("approval", "jane", &pp, &sneaky)
        .await
        .expect("no-op approval");
    assert_eq!(kept.spec.signer_name, "kubernetes.io/kube-apiserver-client");
    assert!(kept
        .status
        .as_ref()
        .and_then(|s| s.certificate.as_ref())
        .is_none());

    // /status sets the certificate once and keeps the approval as stored.
    let cert = certificate_pem();
    let mut issued = serde_json::to_value(&kept).expect("encode");
    issued["status"]["certificate"] = json!(base64_of(cert.as_bytes()));
    issued["status"]["conditions"][0]["reason"] = json!("Changed");
    let issued = csrs
        .replace_status("jane", &pp, &typed(&issued))
        .await
        .expect("certificate set");
    let status = issued.status.as_ref().expect("status");
    assert_eq!(
        status.certificate,
        Some(ByteString(cert.clone().into_bytes()))
    );
    assert_eq!(
        status.conditions.as_ref().expect("conditions")[0]
            .reason
            .as_deref(),
        Some("KubectlApprove")
    );
    let mut again = serde_json::to_value(&issued).expect("encode");
    again["status"]["certificate"] = json!(base64_of(certificate_pem().as_bytes()));
    let err = api_err(
        csrs.replace_status("jane", &pp, &typed(&again))
            .await
            .expect_err("certificate replaced"),
    );
    assert!(
        err.message.contains(
            "status.certificate: Forbidden: updates may not modify existing certificate content"
        ),
        "{}",
        err.message
    );

    // PATCH /approval denies another request; a denial stays.
    csrs.create(&pp, &csr("bob")).await.expect("created");
    let denied = csrs
        .patch_subresource(
            "approval",
            "bob",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"conditions": [condition("Denied", "KubectlDeny")]}})),
        )
        .await
        .expect("denied");
    assert_eq!(condition_types(&denied), ["Denied"]);
    let err = api_err(
        csrs.patch_subresource(
            "approval",
            "bob",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"status": {"conditions": [condition("Approved", "KubectlApprove")]}}),
            ),
        )
        .await
        .expect_err("denial replaced"),
    );
    assert!(
        err.message
            .contains("updates may not remove a condition of type \"Denied\""),
        "{}",
        err.message
    );

    // A missing request is 404.
    let mut missing = serde_json::to_value(&approve).expect("encode");
    missing["metadata"] = json!({"name": "nobody"});
    let err = api_err(
        csrs.replace_subresource("approval", "nobody", &pp, &missing)
            .await
            .expect_err("missing"),
    );
    assert_eq!(err.code, 404);
    server.stop().await;
}
