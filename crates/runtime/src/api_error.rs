//! How an error reads in logs, events and conditions: an API error is its `Status` message (as
//! client-go's `StatusError.Error()`), never a `Debug` dump of the `Status`.

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

/// Whether `err` is an API error with HTTP status `code`.
pub fn has_code(err: &kube::Error, code: u16) -> bool {
    matches!(err, kube::Error::Api(status) if status.code == code)
}

#[cfg(test)]
mod tests {
    use super::*;

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
