//! Classification of API errors, as client-go's `k8s.io/apimachinery/pkg/api/errors`
//! (`IsNotFound`, `IsAlreadyExists`, `IsConflict`, `HasStatusCause`).
//!
//! The server's answer is a `Status`; kube-rs hands it over as [`kube::Error::Api`]. These
//! functions take the [`kube::Error`] a call returned, so that a transport or decoding error is
//! none of them.

/// `v1.NamespaceTerminatingCause`: creates in a namespace being deleted fail with this cause.
pub const NAMESPACE_TERMINATING_CAUSE: &str = "NamespaceTerminating";

fn status(err: &kube::Error) -> Option<&kube::core::Status> {
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
    status(err).is_some_and(|s| {
        s.reason == reason || (!KNOWN_REASONS.contains(&s.reason.as_str()) && s.code == code)
    })
}

/// `IsNotFound`: reason `NotFound`, or code 404 with a reason client-go does not know.
pub fn is_not_found(err: &kube::Error) -> bool {
    reason_or_code(err, "NotFound", 404)
}

/// `IsAlreadyExists`: reason `AlreadyExists`, or code 409 with an unknown reason.
pub fn is_already_exists(err: &kube::Error) -> bool {
    reason_or_code(err, "AlreadyExists", 409)
}

/// `IsConflict`: reason `Conflict`, or code 409 with an unknown reason.
pub fn is_conflict(err: &kube::Error) -> bool {
    reason_or_code(err, "Conflict", 409)
}

/// `HasStatusCause`: the Status's details list a cause of type `cause`.
pub fn has_status_cause(err: &kube::Error, cause: &str) -> bool {
    status(err)
        .and_then(|s| s.details.as_ref())
        .is_some_and(|d| d.causes.iter().any(|c| c.reason == cause))
}

/// Whether a create failed because its namespace is being deleted.
pub fn is_namespace_terminating(err: &kube::Error) -> bool {
    has_status_cause(err, NAMESPACE_TERMINATING_CAUSE)
}

/// What to show a person for `err`: the Status message when the server sent one (as Go's
/// `%v` of a `StatusError`), else the error's own text.
pub fn message(err: &kube::Error) -> String {
    match status(err) {
        Some(s) if !s.message.is_empty() => s.message.clone(),
        _ => err.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::Status;
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
        assert!(is_already_exists(&api(409, "", &[])));
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

    #[test]
    fn the_message_is_the_status_message() {
        assert_eq!(message(&api(404, "NotFound", &[])), "NotFound happened");
    }
}
