//! The certificate controllers of kube-controller-manager: the signer, the cleaner and the
//! approver of CertificateSigningRequests.
//!
//! Mirrors `pkg/controller/certificates`: [`controller`] is the loop the signer and the approver
//! share (`CertificateController`), [`conditions`] the helpers on a request's conditions
//! (`certificates.go`), [`request`] the parsed PKCS#10 request (`ParseCSR`) and [`name`] its
//! subject as Go's `pkix.Name`.

pub mod approver;
pub mod cleaner;
pub mod conditions;
pub mod controller;
pub mod name;
pub mod request;
pub mod signer;
