//! The approving controller: kubelet client certificate requests are approved when a
//! SubjectAccessReview says their requester may create them.
//!
//! Mirrors `pkg/controller/certificates/approver/sarapprove.go`: a [`CertificateController`]
//! loop (`csrapproving`) skips requests that are issued, approved or denied; for each
//! [`recognizers::Recognizer`] that recognizes the request, in order, it asks the API server
//! with an `authorization.k8s.io/v1` SubjectAccessReview for the requester (user, uid, groups,
//! extra of the request) to `create` `certificates.k8s.io/certificatesigningrequests/<kind>`,
//! and approves through `/approval` at the first allowed one. A recognized request nobody allows
//! is retried with backoff; a review that cannot be made (no such API) is an error, retried
//! too: nothing is ever approved without an allowing review.

pub mod recognizers;

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use k8s_openapi::api::certificates::v1::{
    CertificateSigningRequest, CertificateSigningRequestCondition,
};
use kube::api::{Api, PostParams};
use rkcm_runtime::informer::InformerFactory;
use rkcm_runtime::Shutdown;

use self::recognizers::{recognizers, Recognizer};
use super::conditions::{approval, is_issued, APPROVED};
use super::controller::{CertificateController, Handler};
use super::request::{self, ParseError};

/// Name of the controller (`--controllers`).
pub const CONTROLLER_NAME: &str = "certificatesigningrequest-approving-controller";
/// Name of its loop and queue.
pub const LOOP_NAME: &str = "csrapproving";
/// Workers kube starts (`startCSRApprovingController`: `Run(ctx, 5)`).
pub const WORKERS: usize = 5;

/// Why a request was not approved this time; it is retried with backoff.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The request's PKCS#10 data does not parse.
    #[error("unable to parse csr {name:?}")]
    Parse {
        /// The request.
        name: String,
        /// Why.
        #[source]
        source: ParseError,
    },
    /// The SubjectAccessReview could not be made.
    #[error("error creating the SubjectAccessReview for csr {name:?}")]
    Review {
        /// The request.
        name: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// Writing the approval failed.
    #[error("error updating approval for csr")]
    UpdateApproval(#[source] kube::Error),
    /// Recognized, but no review allowed it (kube's `IgnorableError`).
    #[error("recognized csr {name:?} as [{}] but subject access review was not approved", .tried.join(" "))]
    NotAllowed {
        /// The request.
        name: String,
        /// The subresources whose reviews said no.
        tried: Vec<&'static str>,
    },
}

/// What the approver asks of the API server.
pub trait ApproverApi: Send + Sync + 'static {
    /// Creates `review`; whether it is allowed.
    fn review(
        &self,
        review: SubjectAccessReview,
    ) -> impl Future<Output = Result<bool, kube::Error>> + Send;

    /// Writes `csr` (with its new condition) through `/approval`.
    fn update_approval(
        &self,
        csr: &CertificateSigningRequest,
    ) -> impl Future<Output = Result<(), kube::Error>> + Send;
}

impl ApproverApi for kube::Client {
    async fn review(&self, review: SubjectAccessReview) -> Result<bool, kube::Error> {
        let api: Api<SubjectAccessReview> = Api::all(self.clone());
        let answer = api.create(&PostParams::default(), &review).await?;
        Ok(answer.status.is_some_and(|s| s.allowed))
    }

    async fn update_approval(&self, csr: &CertificateSigningRequest) -> Result<(), kube::Error> {
        let api: Api<CertificateSigningRequest> = Api::all(self.clone());
        let name = csr.metadata.name.as_deref().unwrap_or_default();
        api.replace_subresource("approval", name, &PostParams::default(), csr)
            .await
            .map(|_| ())
    }
}

/// The SubjectAccessReview asking whether the requester of `csr` may create
/// `certificatesigningrequests/<subresource>` (`sarApprover.authorize`).
pub fn review_for(csr: &CertificateSigningRequest, subresource: &str) -> SubjectAccessReview {
    let spec = &csr.spec;
    SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: spec.username.clone(),
            uid: spec.uid.clone(),
            groups: spec.groups.clone(),
            extra: spec
                .extra
                .clone()
                .map(|e| e.into_iter().collect::<BTreeMap<_, _>>()),
            resource_attributes: Some(ResourceAttributes {
                group: Some("certificates.k8s.io".to_string()),
                resource: Some("certificatesigningrequests".to_string()),
                verb: Some("create".to_string()),
                subresource: Some(subresource.to_string()),
                ..ResourceAttributes::default()
            }),
            ..SubjectAccessReviewSpec::default()
        },
        ..SubjectAccessReview::default()
    }
}

/// Approves recognized requests after a SubjectAccessReview (`sarApprover`).
pub struct SarApprover<A> {
    api: A,
    recognizers: Vec<Recognizer>,
}

impl<A: ApproverApi> SarApprover<A> {
    /// An approver with kube's recognizers.
    pub fn new(api: A) -> Self {
        Self::with_recognizers(api, recognizers())
    }

    /// An approver with `recognizers`.
    pub fn with_recognizers(api: A, recognizers: Vec<Recognizer>) -> Self {
        Self { api, recognizers }
    }
}

impl<A: ApproverApi> Handler for SarApprover<A> {
    type Error = Error;

    /// `sarApprover.handle`.
    async fn handle(&self, mut csr: CertificateSigningRequest) -> Result<(), Error> {
        if is_issued(&csr) {
            return Ok(());
        }
        if approval(&csr) != (false, false) {
            return Ok(());
        }
        let name = csr.metadata.name.clone().unwrap_or_default();
        let request = request::parse(&csr.spec.request.0).map_err(|source| Error::Parse {
            name: name.clone(),
            source,
        })?;
        let mut tried = Vec::new();
        for r in &self.recognizers {
            if !(r.recognize)(&csr, &request) {
                continue;
            }
            tried.push(r.subresource);
            let allowed = self
                .api
                .review(review_for(&csr, r.subresource))
                .await
                .map_err(|source| Error::Review {
                    name: name.clone(),
                    source,
                })?;
            if allowed {
                csr.status
                    .get_or_insert_with(Default::default)
                    .conditions
                    .get_or_insert_with(Vec::new)
                    .push(CertificateSigningRequestCondition {
                        type_: APPROVED.to_string(),
                        status: "True".to_string(),
                        reason: Some("AutoApproved".to_string()),
                        message: Some(r.success_message.to_string()),
                        ..CertificateSigningRequestCondition::default()
                    });
                return self
                    .api
                    .update_approval(&csr)
                    .await
                    .map_err(Error::UpdateApproval);
            }
        }
        if tried.is_empty() {
            return Ok(());
        }
        Err(Error::NotAllowed { name, tried })
    }

    fn log_level(error: &Error) -> Option<tracing::Level> {
        matches!(error, Error::NotAllowed { .. }).then_some(tracing::Level::TRACE)
    }
}

/// The approving controller.
pub struct CsrApprovingController {
    inner: Arc<CertificateController<SarApprover<kube::Client>>>,
}

impl CsrApprovingController {
    /// Registers the loop on the factory's request informer.
    pub fn new(factory: &InformerFactory, client: kube::Client) -> Self {
        Self {
            inner: CertificateController::new(LOOP_NAME, factory, SarApprover::new(client)),
        }
    }

    /// Runs `workers` workers until `shutdown`.
    pub async fn run(self, workers: usize, shutdown: Shutdown) {
        self.inner.run(workers, shutdown).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::certificates::request::testing::request_pem;
    use parking_lot::Mutex;
    use serde_json::json;

    /// Records the calls; reviews answer `allowed`, or fail as when the API is not served.
    struct FakeApi {
        allowed: Option<bool>,
        calls: Mutex<Vec<String>>,
        approved: Mutex<Vec<CertificateSigningRequest>>,
    }

    impl FakeApi {
        fn new(allowed: Option<bool>) -> Self {
            Self {
                allowed,
                calls: Mutex::new(Vec::new()),
                approved: Mutex::new(Vec::new()),
            }
        }
    }

    impl ApproverApi for Arc<FakeApi> {
        async fn review(&self, review: SubjectAccessReview) -> Result<bool, kube::Error> {
            let attrs = review
                .spec
                .resource_attributes
                .expect("resource attributes");
            self.calls.lock().push(format!(
                "create subjectaccessreviews {} {}",
                review.spec.user.unwrap_or_default(),
                attrs.subresource.unwrap_or_default()
            ));
            self.allowed.ok_or_else(|| {
                kube::Error::Api(Box::new(
                    kube::core::Status::failure(
                        "the server could not find the requested resource",
                        "NotFound",
                    )
                    .with_code(404),
                ))
            })
        }

        async fn update_approval(
            &self,
            csr: &CertificateSigningRequest,
        ) -> Result<(), kube::Error> {
            self.calls.lock().push("update approval".to_string());
            self.approved.lock().push(csr.clone());
            Ok(())
        }
    }

    fn csr(conditions: serde_json::Value) -> CertificateSigningRequest {
        let pem = request_pem("test-cert", &[], &[]);
        use base64::Engine as _;
        serde_json::from_value(json!({
            "metadata": {"name": "test-csr"},
            "spec": {"request": base64::engine::general_purpose::STANDARD.encode(pem),
                "signerName": "x.io/y", "username": "system:node:foo"},
            "status": {"conditions": conditions},
        }))
        .expect("csr")
    }

    fn approver(recognized: bool, api: &Arc<FakeApi>) -> SarApprover<Arc<FakeApi>> {
        let recognize: fn(&CertificateSigningRequest, &request::Request) -> bool = if recognized {
            |_, _| true
        } else {
            |_, _| false
        };
        SarApprover::with_recognizers(
            Arc::clone(api),
            vec![Recognizer {
                recognize,
                subresource: "baz",
                success_message: "tester",
            }],
        )
    }

    /// `TestHandle`.
    #[tokio::test]
    async fn a_recognized_request_is_approved_only_after_an_allowing_review() {
        for (recognized, allowed) in [(false, false), (false, true)] {
            let api = Arc::new(FakeApi::new(Some(allowed)));
            approver(recognized, &api)
                .handle(csr(json!([])))
                .await
                .expect("nothing to do");
            assert!(api.calls.lock().is_empty());
        }

        let api = Arc::new(FakeApi::new(Some(false)));
        let err = approver(true, &api)
            .handle(csr(json!([])))
            .await
            .expect_err("not allowed");
        assert_eq!(
            err.to_string(),
            "recognized csr \"test-csr\" as [baz] but subject access review was not approved"
        );
        assert_eq!(
            SarApprover::<Arc<FakeApi>>::log_level(&err),
            Some(tracing::Level::TRACE)
        );
        assert_eq!(
            *api.calls.lock(),
            ["create subjectaccessreviews system:node:foo baz"]
        );

        let api = Arc::new(FakeApi::new(Some(true)));
        approver(true, &api)
            .handle(csr(json!([])))
            .await
            .expect("approved");
        assert_eq!(
            *api.calls.lock(),
            [
                "create subjectaccessreviews system:node:foo baz",
                "update approval"
            ]
        );
        let approved = api.approved.lock();
        let c = &approved[0]
            .status
            .as_ref()
            .unwrap()
            .conditions
            .as_ref()
            .unwrap()[0];
        assert_eq!(
            (
                c.type_.as_str(),
                c.status.as_str(),
                c.reason.as_deref(),
                c.message.as_deref()
            ),
            ("Approved", "True", Some("AutoApproved"), Some("tester"))
        );
    }

    #[tokio::test]
    async fn without_the_review_api_nothing_is_approved() {
        let api = Arc::new(FakeApi::new(None));
        let err = approver(true, &api)
            .handle(csr(json!([])))
            .await
            .expect_err("no review API");
        assert!(matches!(err, Error::Review { .. }), "{err}");
        assert_eq!(SarApprover::<Arc<FakeApi>>::log_level(&err), None);
        assert!(api.approved.lock().is_empty());
    }

    #[tokio::test]
    async fn decided_requests_are_left_alone() {
        for conditions in [
            json!([{"type": "Approved", "status": "True"}]),
            json!([{"type": "Denied", "status": "True"}]),
        ] {
            let api = Arc::new(FakeApi::new(Some(true)));
            approver(true, &api)
                .handle(csr(conditions))
                .await
                .expect("nothing to do");
            assert!(api.calls.lock().is_empty());
        }
    }

    #[test]
    fn the_review_carries_the_requester_and_the_permission() {
        let mut c = csr(json!([]));
        c.spec.uid = Some("u-1".into());
        c.spec.groups = Some(vec!["system:nodes".into()]);
        c.spec.extra = Some([("k".to_string(), vec!["v".to_string()])].into());
        let review = review_for(&c, "selfnodeclient");
        assert_eq!(review.spec.user.as_deref(), Some("system:node:foo"));
        assert_eq!(review.spec.uid.as_deref(), Some("u-1"));
        assert_eq!(review.spec.groups, Some(vec!["system:nodes".to_string()]));
        assert_eq!(
            review.spec.extra.as_ref().and_then(|e| e.get("k")).cloned(),
            Some(vec!["v".to_string()])
        );
        let attrs = review.spec.resource_attributes.expect("attributes");
        assert_eq!(attrs.group.as_deref(), Some("certificates.k8s.io"));
        assert_eq!(
            attrs.resource.as_deref(),
            Some("certificatesigningrequests")
        );
        assert_eq!(attrs.verb.as_deref(), Some("create"));
        assert_eq!(attrs.subresource.as_deref(), Some("selfnodeclient"));
    }
}
