//! The certificate controllers against the in-process API server: the signer issues approved
//! requests from the CA files and fails those its rules refuse; the cleaner deletes requests
//! past kube's deadlines.

mod support;

use std::sync::Arc;

use anyhow::Result;
use base64::Engine as _;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use kube::api::{Api, Patch, PatchParams, PostParams};
use rkcm_controllers::certificates::cleaner::CsrCleanerController;
use rkcm_controllers::certificates::signer::config::{SignerFiles, SigningConfig};
use rkcm_controllers::registry::{ControllerOptions, CSR_SIGNING};
use rkcm_runtime::FakeClock;
use serde_json::json;
use support::{eventually, Cluster};

fn request(cn: &str, orgs: &[&str]) -> String {
    let key = rcgen::KeyPair::generate().expect("key");
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    params.distinguished_name = rcgen::DistinguishedName::new();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, cn);
    for o in orgs {
        params
            .distinguished_name
            .push(rcgen::DnType::OrganizationName, *o);
    }
    params
        .serialize_request(&key)
        .expect("csr")
        .pem()
        .expect("pem")
}

fn csr(name: &str, request: &str, signer: &str, usages: &[&str]) -> CertificateSigningRequest {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"request": base64::engine::general_purpose::STANDARD.encode(request),
            "signerName": signer, "usages": usages},
    }))
    .expect("CSR")
}

async fn set_condition(api: &Api<CertificateSigningRequest>, name: &str, ty: &str) -> Result<()> {
    api.patch_subresource(
        "approval",
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"conditions": [
            {"type": ty, "status": "True", "reason": "Test", "message": "by the test"}
        ]}})),
    )
    .await?;
    Ok(())
}

#[tokio::test]
async fn approved_requests_are_signed_and_refused_ones_fail() -> Result<()> {
    let cluster = Cluster::start().await;
    let dir = tempfile::tempdir()?;
    let (cert, key) = (dir.path().join("ca.crt"), dir.path().join("ca.key"));
    std::fs::write(&cert, cluster.server.ca_pem().expect("TLS"))?;
    std::fs::write(&key, cluster.server.ca_key_pem().expect("TLS"))?;
    let options = ControllerOptions {
        csr_signing: SigningConfig {
            cluster_signing: SignerFiles::new(&cert, &key),
            ..SigningConfig::default()
        },
        ..ControllerOptions::default()
    };
    cluster.start_registered(&[CSR_SIGNING], options).await?;
    let api: Api<CertificateSigningRequest> = Api::all(cluster.client.clone());
    let pp = PostParams::default();

    let client = "kubernetes.io/kube-apiserver-client";
    api.create(
        &pp,
        &csr(
            "jane",
            &request("jane", &["devs"]),
            client,
            &["client auth"],
        ),
    )
    .await?;
    api.create(
        &pp,
        &csr(
            "node",
            &request("node-1", &["system:nodes"]),
            "kubernetes.io/kube-apiserver-client-kubelet",
            &["client auth", "digital signature"],
        ),
    )
    .await?;
    api.create(
        &pp,
        &csr(
            "other",
            &request("x", &[]),
            "example.com/signer",
            &["client auth"],
        ),
    )
    .await?;
    api.create(
        &pp,
        &csr("pending", &request("p", &[]), client, &["client auth"]),
    )
    .await?;
    for name in ["other", "jane", "node"] {
        set_condition(&api, name, "Approved").await?;
    }

    let issued = eventually("jane's certificate", || async {
        Ok(api
            .get("jane")
            .await?
            .status
            .and_then(|s| s.certificate)
            .map(|c| c.0))
    })
    .await?;
    let text = String::from_utf8(issued)?;
    assert!(text.starts_with("-----BEGIN CERTIFICATE-----"), "{text}");

    // The kubelet signer refuses a subject that is not a node's.
    let failed = eventually("the node request to fail", || async {
        let c = api.get("node").await?;
        Ok(c.status
            .and_then(|s| s.conditions)
            .and_then(|cs| cs.into_iter().find(|c| c.type_ == "Failed")))
    })
    .await?;
    assert_eq!(failed.reason.as_deref(), Some("SignerValidationFailure"));
    assert_eq!(
        failed.message.as_deref(),
        Some("subject common name does not begin with system:node:")
    );
    assert!(failed.last_update_time.is_some());

    // Other signers' requests (approved before the others were handled) and unapproved ones
    // are left alone.
    for name in ["other", "pending"] {
        let status = api.get(name).await?.status.unwrap_or_default();
        assert!(status.certificate.is_none(), "{name} got a certificate");
        assert!(
            !status
                .conditions
                .unwrap_or_default()
                .iter()
                .any(|c| c.type_ == "Failed"),
            "{name} failed"
        );
    }
    cluster.stop().await;
    Ok(())
}

#[tokio::test]
async fn the_cleaner_deletes_requests_past_their_deadlines() -> Result<()> {
    let cluster = Cluster::start().await;
    let start = jiff::Timestamp::now();
    let clock = FakeClock::new(start);
    let later = |secs: i64| {
        start
            .checked_add(jiff::SignedDuration::from_secs(secs))
            .expect("in range")
    };
    let cleaner = CsrCleanerController::new(
        &cluster.factory,
        cluster.client.clone(),
        Arc::new(clock.clone()),
    );
    cluster.start_informers();
    let api: Api<CertificateSigningRequest> = Api::all(cluster.client.clone());
    let pp = PostParams::default();
    let client = "kubernetes.io/kube-apiserver-client";
    for name in ["denied", "pending"] {
        api.create(
            &pp,
            &csr(name, &request(name, &[]), client, &["client auth"]),
        )
        .await?;
    }
    set_condition(&api, "denied", "Denied").await?;
    eventually("the cache to see the denial", || async {
        let seen = cleaner_sees_denial(&cluster).await;
        Ok(seen.then_some(()))
    })
    .await?;

    assert!(cleaner.clean().await.is_empty(), "nothing is old yet");
    clock.set(later(3600 + 10));
    assert_eq!(cleaner.clean().await, ["denied"]);
    clock.set(later(23 * 3600));
    assert!(
        cleaner.clean().await.is_empty(),
        "pending for less than a day"
    );
    clock.set(later(24 * 3600 + 10));
    assert_eq!(cleaner.clean().await, ["pending"]);
    assert!(api.get_opt("pending").await?.is_none());
    cluster.stop().await;
    Ok(())
}

async fn cleaner_sees_denial(cluster: &Cluster) -> bool {
    cluster
        .factory
        .informer::<CertificateSigningRequest>()
        .store()
        .get(&rkcm_runtime::ObjectKey::cluster("denied"))
        .and_then(|c| c.status.clone())
        .and_then(|s| s.conditions)
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Denied"))
}
