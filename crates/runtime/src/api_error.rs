//! API errors as client-go's `k8s.io/apimachinery/pkg/api/errors` treats them: how one reads in
//! logs, events and conditions (its `Status` message, as `StatusError.Error()`, never a `Debug`
//! dump of the `Status`), and how one is classified (`IsNotFound`, `IsAlreadyExists`,
//! `IsConflict`, `HasStatusCause`). A transport or decoding error is none of these.

use std::error::Error as StdError;
use std::fmt;

use kube::core::Status;

/// The text client-go gives a failed request: the `Status` message of an API error (its reason,
/// or its code, when the server sent no message); any other error's own text.
pub fn message(err: &kube::Error) -> String {
    match err {
        kube::Error::Api(status) => status_message(status),
        other => other.to_string(),
    }
}

/// The `Status` message; its reason, or its code, when the message is empty.
pub fn status_message(status: &Status) -> String {
    if !status.message.is_empty() {
        status.message.clone()
    } else if !status.reason.is_empty() {
        status.reason.clone()
    } else {
        format!("the server responded with status code {}", status.code)
    }
}

/// `error: cause: cause…` for logs and messages. Each API error in the chain reads as its
/// `Status` message (and ends the chain: its only source is that `Status`); a cause whose text
/// the line already holds is left out.
pub struct Chain<'a>(pub &'a (dyn StdError + 'static));

impl fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::new();
        let mut next = Some(self.0);
        while let Some(err) = next {
            let (text, source) = if let Some(api) = err.downcast_ref::<kube::Error>() {
                match api {
                    kube::Error::Api(status) => (status_message(status), None),
                    other => (other.to_string(), other.source()),
                }
            } else if let Some(status) = err.downcast_ref::<Status>() {
                (status_message(status), None)
            } else {
                (err.to_string(), err.source())
            };
            if !text.is_empty() && !out.contains(&text) {
                if !out.is_empty() {
                    out.push_str(": ");
                }
                out.push_str(&text);
            }
            next = source;
        }
        f.write_str(&out)
    }
}

impl fmt::Debug for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// [`Chain`] of `err` as a string.
pub fn chain(err: &(dyn StdError + 'static)) -> String {
    Chain(err).to_string()
}

/// `v1.NamespaceTerminatingCause`: creates in a namespace being deleted fail with this cause.
pub const NAMESPACE_TERMINATING_CAUSE: &str = "NamespaceTerminating";

fn api_status(err: &kube::Error) -> Option<&kube::core::Status> {
    match err {
        kube::Error::Api(status) => Some(status),
        _ => None,
    }
}

/// The reasons client-go knows (`knownReasons`): a Status with another reason (or none) is
/// classified by its code instead.
const KNOWN_REASONS: &[&str] = &[
    "Unauthorized",
    "Forbidden",
    "NotFound",
    "AlreadyExists",
    "Conflict",
    "Gone",
    "Invalid",
    "ServerTimeout",
    "StoreReadError",
    "Timeout",
    "TooManyRequests",
    "BadRequest",
    "MethodNotAllowed",
    "NotAcceptable",
    "RequestEntityTooLarge",
    "UnsupportedMediaType",
    "InternalError",
    "Expired",
    "ServiceUnavailable",
];

// kube-core's `Status::is_not_found` & co. look up the expected reason instead of the
// Status's among the known ones, so they never fall back to the code; client-go does.
fn reason_or_code(err: &kube::Error, reason: &str, code: u16) -> bool {
    api_status(err).is_some_and(|s| {
        s.reason == reason || (!KNOWN_REASONS.contains(&s.reason.as_str()) && s.code == code)
    })
}

/// `IsNotFound`: reason `NotFound`, or code 404 with a reason client-go does not know.
pub fn is_not_found(err: &kube::Error) -> bool {
    reason_or_code(err, "NotFound", 404)
}

/// `IsAlreadyExists`: reason `AlreadyExists` (a 409 without it is a conflict).
pub fn is_already_exists(err: &kube::Error) -> bool {
    api_status(err).is_some_and(|s| s.reason == "AlreadyExists")
}

/// `IsConflict`: reason `Conflict`, or code 409 with an unknown reason.
pub fn is_conflict(err: &kube::Error) -> bool {
    reason_or_code(err, "Conflict", 409)
}

/// `IsInvalid`: reason `Invalid`, or code 422 with an unknown reason.
pub fn is_invalid(err: &kube::Error) -> bool {
    reason_or_code(err, "Invalid", 422)
}

/// `IsTimeout`: reason `Timeout`, or code 504 with an unknown reason.
pub fn is_timeout(err: &kube::Error) -> bool {
    reason_or_code(err, "Timeout", 504)
}

/// `HasStatusCause`: the Status's details list a cause of type `cause`.
pub fn has_status_cause(err: &kube::Error, cause: &str) -> bool {
    api_status(err)
        .and_then(|s| s.details.as_ref())
        .is_some_and(|d| d.causes.iter().any(|c| c.reason == cause))
}

/// Whether a create failed because its namespace is being deleted.
pub fn is_namespace_terminating(err: &kube::Error) -> bool {
    has_status_cause(err, NAMESPACE_TERMINATING_CAUSE)
}

/// Whether `err` is an API error with HTTP status `code`.
pub fn has_code(err: &kube::Error, code: u16) -> bool {
    matches!(err, kube::Error::Api(status) if status.code == code)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn api(code: u16, reason: &str, causes: &[&str]) -> kube::Error {
        let causes: Vec<_> = causes.iter().map(|c| json!({"reason": c})).collect();
        let status: Status = serde_json::from_value(json!({
            "status": "Failure",
            "code": code,
            "reason": reason,
            "message": format!("{reason} happened"),
            "details": {"causes": causes},
        }))
        .expect("a Status");
        kube::Error::Api(Box::new(status))
    }

    #[test]
    fn errors_are_classified_by_reason_then_code() {
        assert!(is_not_found(&api(404, "NotFound", &[])));
        assert!(is_not_found(&api(404, "", &[])));
        assert!(!is_not_found(&api(410, "Gone", &[])));
        assert!(!is_not_found(&kube::Error::LinesCodecMaxLineLengthExceeded));
        assert!(is_already_exists(&api(409, "AlreadyExists", &[])));
        assert!(!is_already_exists(&api(409, "Conflict", &[])));
        // client-go's IsAlreadyExists has no fallback on the code: 409 alone is a conflict.
        assert!(!is_already_exists(&api(409, "", &[])));
        assert!(is_conflict(&api(409, "", &[])));
        assert!(is_invalid(&api(422, "", &[])) && is_invalid(&api(422, "Invalid", &[])));
        assert!(is_timeout(&api(504, "", &[])) && !is_timeout(&api(504, "NotFound", &[])));
        assert!(is_conflict(&api(409, "SomethingNew", &[])));
        assert!(is_conflict(&api(409, "Conflict", &[])));
        assert!(!is_conflict(&api(409, "AlreadyExists", &[])));
    }

    #[test]
    fn causes_are_found_in_the_details() {
        let err = api(403, "Forbidden", &["Other", NAMESPACE_TERMINATING_CAUSE]);
        assert!(is_namespace_terminating(&err));
        assert!(!is_namespace_terminating(&api(403, "Forbidden", &[])));
    }

    fn conflict() -> kube::Error {
        kube::Error::Api(
            Status::failure(
                "Operation cannot be fulfilled on replicasets.apps \"web\": the object has been modified; please apply your changes to the latest version and try again",
                "Conflict",
            )
            .with_code(409)
            .boxed(),
        )
    }

    #[test]
    fn an_api_error_renders_as_its_status_message() {
        let err = conflict();
        // kube's own Display carries the whole Status in Debug form: this is what logs must avoid.
        assert!(err.to_string().contains("Status {"));
        assert_eq!(
            message(&err),
            "Operation cannot be fulfilled on replicasets.apps \"web\": the object has been modified; please apply your changes to the latest version and try again"
        );
        assert_eq!(chain(&err), message(&err));
    }

    #[test]
    fn a_status_without_message_falls_back_to_its_reason_then_its_code() {
        let status = Status::failure("", "Forbidden").with_code(403);
        assert_eq!(status_message(&status), "Forbidden");
        let status = Status::failure("", "").with_code(500);
        assert_eq!(
            status_message(&status),
            "the server responded with status code 500"
        );
    }

    #[derive(Debug, thiserror::Error)]
    #[error("failed to update status of default/web")]
    struct StatusUpdate(#[source] kube::Error);

    #[derive(Debug, thiserror::Error)]
    #[error("sync of default/web failed")]
    struct Sync(#[source] StatusUpdate);

    #[test]
    fn a_chain_names_each_cause_once_and_ends_with_the_api_message() {
        let err = Sync(StatusUpdate(conflict()));
        let line = chain(&err);
        assert_eq!(
            line,
            "sync of default/web failed: failed to update status of default/web: Operation cannot be fulfilled on replicasets.apps \"web\": the object has been modified; please apply your changes to the latest version and try again"
        );
        assert!(!line.contains("Status {"), "{line}");
        assert!(
            !line.contains("Conflict"),
            "the reason is not repeated: {line}"
        );
    }

    #[test]
    fn a_cause_already_in_the_message_is_not_repeated() {
        #[derive(Debug, thiserror::Error)]
        #[error("connecting: {0}")]
        struct Connect(#[source] std::io::Error);
        let err = Connect(std::io::Error::other("connection refused"));
        assert_eq!(chain(&err), "connecting: connection refused");
    }

    #[test]
    fn other_client_errors_keep_their_text_and_causes() {
        let err = kube::Error::LinesCodecMaxLineLengthExceeded;
        assert_eq!(message(&err), err.to_string());
        assert_eq!(chain(&err), err.to_string());
    }

    #[test]
    fn has_code_matches_api_errors_only() {
        assert!(has_code(&conflict(), 409));
        assert!(!has_code(&conflict(), 404));
        assert!(!has_code(
            &kube::Error::LinesCodecMaxLineLengthExceeded,
            409
        ));
    }
}
