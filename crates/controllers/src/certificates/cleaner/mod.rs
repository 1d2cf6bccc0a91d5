//! The cleaner controller: deletes old CertificateSigningRequests so that they do not pile up.
//!
//! Mirrors `pkg/controller/certificates/cleaner/cleaner.go`: every hour (and once at start) the
//! cached requests are checked; one is deleted when it was approved and issued more than an
//! hour ago, denied or failed more than an hour ago, left pending (no condition) for more than a
//! day, or issued a certificate that has expired. [`decide`] is that decision.

use std::sync::Arc;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, DeleteParams};
use rkcm_runtime::informer::{wait_for_cache_sync, HasSynced, InformerFactory, SharedInformer};
use rkcm_runtime::{api_error, Clock, Shutdown};

use super::conditions::{is_issued, APPROVED, DENIED, FAILED};

/// Name of the controller (`--controllers`).
pub const CONTROLLER_NAME: &str = "certificatesigningrequest-cleaner-controller";
/// How often the requests are checked (`pollingInterval`).
pub const POLLING_INTERVAL: Duration = Duration::from_secs(3600);
/// How long an approved and issued request is kept (`approvedExpiration`).
pub const APPROVED_EXPIRATION: Duration = Duration::from_secs(3600);
/// How long a denied (or failed) request is kept (`deniedExpiration`).
pub const DENIED_EXPIRATION: Duration = Duration::from_secs(3600);
/// How long a request without any condition is kept (`pendingExpiration`).
pub const PENDING_EXPIRATION: Duration = Duration::from_secs(24 * 3600);

/// Why a request is deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cleanup {
    /// Approved and issued more than [`APPROVED_EXPIRATION`] ago.
    IssuedPastDeadline,
    /// Denied more than [`DENIED_EXPIRATION`] ago.
    DeniedPastDeadline,
    /// Failed more than [`DENIED_EXPIRATION`] ago.
    FailedPastDeadline,
    /// Without any condition for more than [`PENDING_EXPIRATION`].
    PendingPastDeadline,
    /// Approved, and its certificate has expired.
    IssuedExpired,
}

impl Cleanup {
    /// kube's log line for it.
    pub fn message(self) -> &'static str {
        match self {
            Cleanup::IssuedPastDeadline => {
                "Cleaning CSR as it is more than approvedExpiration duration old and approved."
            }
            Cleanup::DeniedPastDeadline => {
                "Cleaning CSR as it is more than deniedExpiration duration old and denied."
            }
            Cleanup::FailedPastDeadline => {
                "Cleaning CSR as it is more than deniedExpiration duration old and failed."
            }
            Cleanup::PendingPastDeadline => {
                "Cleaning CSR as it is more than pendingExpiration duration old and unhandled."
            }
            Cleanup::IssuedExpired => "Cleaning CSR as the associated certificate is expired.",
        }
    }
}

/// `isOlderThan`: a set time more than `d` before `now`.
fn is_older_than(t: Option<&Time>, d: Duration, now: Timestamp) -> bool {
    let Some(t) = t else {
        return false;
    };
    let age = now.duration_since(t.0);
    age > SignedDuration::try_from(d).unwrap_or(SignedDuration::MAX)
}

/// `isExpired`: the first certificate of the PEM data has a NotAfter before `now`; data that
/// does not parse is not expired.
fn is_expired(csr: &CertificateSigningRequest, now: Timestamp) -> bool {
    let Some(cert) = csr.status.as_ref().and_then(|s| s.certificate.as_ref()) else {
        return false;
    };
    let Ok((_, pem)) = x509_parser::pem::parse_x509_pem(&cert.0) else {
        return false;
    };
    let Ok(parsed) = pem.parse_x509() else {
        return false;
    };
    now.as_second() > parsed.validity().not_after.timestamp()
}

/// Whether `csr` is to be deleted at `now`, and why (kube's checks in kube's order).
pub fn decide(csr: &CertificateSigningRequest, now: Timestamp) -> Option<Cleanup> {
    let conditions = csr
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or_default();
    let of = |ty: &'static str| conditions.iter().filter(move |c| c.type_ == ty);
    let issued = is_issued(csr);
    if issued
        && of(APPROVED)
            .any(|c| is_older_than(c.last_update_time.as_ref(), APPROVED_EXPIRATION, now))
    {
        return Some(Cleanup::IssuedPastDeadline);
    }
    if of(DENIED).any(|c| is_older_than(c.last_update_time.as_ref(), DENIED_EXPIRATION, now)) {
        return Some(Cleanup::DeniedPastDeadline);
    }
    if of(FAILED).any(|c| is_older_than(c.last_update_time.as_ref(), DENIED_EXPIRATION, now)) {
        return Some(Cleanup::FailedPastDeadline);
    }
    if conditions.is_empty()
        && is_older_than(
            csr.metadata.creation_timestamp.as_ref(),
            PENDING_EXPIRATION,
            now,
        )
    {
        return Some(Cleanup::PendingPastDeadline);
    }
    if issued && of(APPROVED).next().is_some() && is_expired(csr, now) {
        return Some(Cleanup::IssuedExpired);
    }
    None
}

/// Deletes old requests every [`POLLING_INTERVAL`].
pub struct CsrCleanerController {
    client: kube::Client,
    csrs: SharedInformer<CertificateSigningRequest>,
    clock: Arc<dyn Clock>,
}

impl CsrCleanerController {
    /// Uses the factory's request informer.
    pub fn new(factory: &InformerFactory, client: kube::Client, clock: Arc<dyn Clock>) -> Self {
        Self {
            client,
            csrs: factory.informer::<CertificateSigningRequest>(),
            clock,
        }
    }

    /// Checks every cached request now, then every [`POLLING_INTERVAL`], until `shutdown`.
    pub async fn run(self, shutdown: Shutdown) {
        tracing::info!(
            controller = CONTROLLER_NAME,
            "Starting CSR cleaner controller"
        );
        let synced: [&dyn HasSynced; 1] = [&self.csrs];
        if wait_for_cache_sync("csrcleaner", &synced, &shutdown).await {
            let mut ticks = tokio::time::interval(POLLING_INTERVAL);
            loop {
                tokio::select! {
                    _ = shutdown.cancelled() => break,
                    _ = ticks.tick() => {
                        self.clean().await;
                    }
                }
            }
        }
        tracing::info!(
            controller = CONTROLLER_NAME,
            "Shutting down CSR cleaner controller"
        );
    }

    /// One pass over the cached requests (`worker`); returns the names it deleted.
    pub async fn clean(&self) -> Vec<String> {
        let api: Api<CertificateSigningRequest> = Api::all(self.client.clone());
        let now = self.clock.now();
        let mut deleted = Vec::new();
        for csr in self.csrs.store().list() {
            let Some(why) = decide(&csr, now) else {
                continue;
            };
            let name = csr.metadata.name.clone().unwrap_or_default();
            tracing::info!(csr = %name, "{}", why.message());
            match api.delete(&name, &DeleteParams::default()).await {
                Ok(_) => deleted.push(name),
                Err(e) if api_error::is_not_found(&e) => {}
                Err(e) => tracing::error!(
                    csr = %name,
                    error = %api_error::Chain(&e),
                    "Error while attempting to clean CSR: unable to delete CSR"
                ),
            }
        }
        deleted
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    const NOW: &str = "2026-01-01T12:00:00Z";

    fn now() -> Timestamp {
        NOW.parse().unwrap()
    }

    /// `now` moved by `secs` (negative: earlier), as RFC 3339.
    fn ago(secs: i64) -> String {
        now()
            .checked_sub(SignedDuration::from_secs(secs))
            .unwrap()
            .to_string()
    }

    fn certificate(not_after: Timestamp) -> String {
        let key = rcgen::KeyPair::generate().expect("key");
        let mut params = rcgen::CertificateParams::new(vec!["x".to_string()]).expect("params");
        params.not_before =
            time::OffsetDateTime::from_unix_timestamp(not_after.as_second() - 86400).unwrap();
        params.not_after =
            time::OffsetDateTime::from_unix_timestamp(not_after.as_second()).unwrap();
        params.self_signed(&key).expect("cert").pem()
    }

    fn csr(
        created: i64,
        certificate: Option<&str>,
        conditions: Value,
    ) -> CertificateSigningRequest {
        let mut status = json!({"conditions": conditions});
        if let Some(c) = certificate {
            use base64::Engine as _;
            status["certificate"] = json!(base64::engine::general_purpose::STANDARD.encode(c));
        }
        serde_json::from_value(json!({
            "metadata": {"name": "fake-csr", "creationTimestamp": ago(created)},
            "spec": {"request": "", "signerName": "x.io/y"},
            "status": status,
        }))
        .expect("csr")
    }

    fn condition(ty: &str, updated_ago: i64) -> Value {
        json!({"type": ty, "status": "True", "lastUpdateTime": ago(updated_ago)})
    }

    /// `TestCleanerWithApprovedExpiredCSR`.
    #[test]
    fn requests_go_after_kubes_deadlines() {
        let unexpired = certificate(
            now()
                .checked_add(SignedDuration::from_hours(24 * 365))
                .unwrap(),
        );
        let expired = certificate(now().checked_sub(SignedDuration::from_hours(1)).unwrap());
        let (min, hour) = (60, 3600);
        let cases: Vec<(&str, CertificateSigningRequest, Option<Cleanup>)> = vec![
            (
                "no delete approved not passed deadline",
                csr(
                    min,
                    Some(&unexpired),
                    json!([condition("Approved", 50 * min)]),
                ),
                None,
            ),
            (
                "no delete approved passed deadline not issued",
                csr(min, None, json!([condition("Approved", 50 * min)])),
                None,
            ),
            (
                "delete approved passed deadline",
                csr(
                    min,
                    Some(&unexpired),
                    json!([condition("Approved", 2 * hour)]),
                ),
                Some(Cleanup::IssuedPastDeadline),
            ),
            (
                "no delete denied not passed deadline",
                csr(min, None, json!([condition("Denied", 50 * min)])),
                None,
            ),
            (
                "delete denied passed deadline",
                csr(min, None, json!([condition("Denied", 2 * hour)])),
                Some(Cleanup::DeniedPastDeadline),
            ),
            (
                "no delete failed not passed deadline",
                csr(
                    min,
                    None,
                    json!([
                        condition("Approved", 2 * hour),
                        condition("Failed", 50 * min)
                    ]),
                ),
                None,
            ),
            (
                "delete failed passed deadline",
                csr(
                    min,
                    None,
                    json!([
                        condition("Approved", 2 * hour),
                        condition("Failed", 2 * hour)
                    ]),
                ),
                Some(Cleanup::FailedPastDeadline),
            ),
            (
                "no delete pending not passed deadline",
                csr(5 * hour, None, json!([])),
                None,
            ),
            (
                "delete pending passed deadline",
                csr(25 * hour, None, json!([])),
                Some(Cleanup::PendingPastDeadline),
            ),
            (
                "no delete approved not passed deadline unexpired",
                csr(
                    min,
                    Some(&unexpired),
                    json!([condition("Approved", 50 * min)]),
                ),
                None,
            ),
            (
                "delete approved not passed deadline expired",
                csr(
                    min,
                    Some(&expired),
                    json!([condition("Approved", 50 * min)]),
                ),
                Some(Cleanup::IssuedExpired),
            ),
            (
                "delete approved passed deadline unparseable",
                csr(
                    min,
                    Some("garbage"),
                    json!([condition("Approved", 2 * hour)]),
                ),
                Some(Cleanup::IssuedPastDeadline),
            ),
            (
                "no delete approved not passed deadline unparseable",
                csr(
                    min,
                    Some("garbage"),
                    json!([condition("Approved", 50 * min)]),
                ),
                None,
            ),
        ];
        for (name, csr, want) in cases {
            assert_eq!(decide(&csr, now()), want, "{name}");
        }
    }

    #[test]
    fn conditions_without_an_update_time_never_expire() {
        let c = csr(
            48 * 3600,
            None,
            json!([{"type": "Denied", "status": "True"}]),
        );
        assert_eq!(decide(&c, now()), None);
    }
}
