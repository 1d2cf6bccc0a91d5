//! `MutatingAdmissionWebhook` and `ValidatingAdmissionWebhook`: the writes that the rules,
//! namespace selector and object selector of a stored webhook configuration match are sent to
//! the webhook as an `AdmissionReview`; a mutating webhook may patch the object, either kind
//! may refuse the write.
//!
//! Mirrors `staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook`. The configurations are
//! read from a cache fed by the watch cache ([`source`]); a server without any pays a revision
//! check per write.

mod dispatch;
pub mod hook;
pub mod match_conditions;
pub mod matching;
pub mod review;
pub mod source;

pub use dispatch::{denied, MutatingWebhook, ValidatingWebhook};
