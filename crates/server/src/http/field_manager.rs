//! The `fieldManager` and `force` query parameters of writes.
//!
//! Mirrors `managerOrUserAgent` and `prefixFromUserAgent` of kube's `handlers/rest.go` and
//! `ValidatePatchOptions` / `ValidateFieldManager` of apimachinery's
//! `pkg/apis/meta/v1/validation`: an apply needs a field manager, `force` is for applies only,
//! and a manager is at most 128 printable characters.

use serde_json::json;

use crate::error::{ApiError, ApiResult, Cause};
use crate::http::params::Params;

/// The longest field manager (`FieldManagerMaxLength`).
pub const FIELD_MANAGER_MAX_LENGTH: usize = 128;

/// The write's field manager: the `fieldManager` parameter, else the user agent up to its
/// first `/` without unprintable characters (`kubectl/v1.33.0 (linux/amd64)` → `kubectl`).
pub fn manager_or_user_agent(params: &Params, user_agent: &str) -> String {
    if let Some(m) = params.non_empty("fieldManager") {
        return m.to_string();
    }
    let mut out = String::new();
    for c in user_agent.split('/').next().unwrap_or_default().chars() {
        if c.is_control() {
            continue;
        }
        if out.len() + c.len_utf8() > FIELD_MANAGER_MAX_LENGTH {
            break;
        }
        out.push(c);
    }
    out
}

/// Which options a request's query is (`CreateOptions`, `UpdateOptions`, `PatchOptions`); the
/// name their 422 carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptionsKind {
    /// POST.
    Create,
    /// PUT.
    Update,
    /// PATCH, `apply` when it is a server-side apply.
    Patch {
        /// Whether the patch is an apply.
        apply: bool,
    },
}

impl OptionsKind {
    fn name(self) -> &'static str {
        match self {
            OptionsKind::Create => "CreateOptions",
            OptionsKind::Update => "UpdateOptions",
            OptionsKind::Patch { .. } => "PatchOptions",
        }
    }
}

/// Validates `fieldManager` and `force` for a write of `kind` (422 Invalid naming the field).
pub fn validate(params: &Params, kind: OptionsKind) -> ApiResult<()> {
    let mut causes = Vec::new();
    let manager = params.get("fieldManager").unwrap_or_default();
    match kind {
        OptionsKind::Patch { apply: true } => {
            if manager.is_empty() {
                causes.push(cause(
                    "FieldValueRequired",
                    "Required value: is required for apply patch",
                ));
            }
        }
        _ => {
            if params.get("force").is_some() {
                causes.push(Cause {
                    reason: "FieldValueForbidden".into(),
                    message: "Forbidden: may not be specified for non-apply patch".into(),
                    field: "force".into(),
                });
            }
        }
    }
    if manager.len() > FIELD_MANAGER_MAX_LENGTH {
        causes.push(cause(
            "FieldValueTooLong",
            &format!("Too long: may not be more than {FIELD_MANAGER_MAX_LENGTH} bytes"),
        ));
    } else if manager.chars().any(char::is_control) {
        causes.push(cause(
            "FieldValueInvalid",
            &format!(
                "Invalid value: {}: must only contain printable characters",
                json!(manager)
            ),
        ));
    }
    if causes.is_empty() {
        return Ok(());
    }
    let messages: Vec<String> = causes
        .iter()
        .map(|c| format!("{}: {}", c.field, c.message))
        .collect();
    let aggregate = match messages.as_slice() {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    };
    let mut e = ApiError::new(
        422,
        "Invalid",
        format!("{}.meta.k8s.io \"\" is invalid: {aggregate}", kind.name()),
    );
    e.details.name = Some(String::new());
    e.details.group = Some("meta.k8s.io".into());
    e.details.kind = Some(kind.name().into());
    e.details.causes = causes;
    Err(e)
}

fn cause(reason: &str, message: &str) -> Cause {
    Cause {
        reason: reason.into(),
        message: message.into(),
        field: "fieldManager".into(),
    }
}

/// `force` of an apply; 400 when it is not a boolean.
pub fn force(params: &Params) -> ApiResult<bool> {
    match params.get("force") {
        None | Some("") | Some("false") | Some("False") | Some("0") => Ok(false),
        Some("true") | Some("True") | Some("1") => Ok(true),
        Some(v) => Err(ApiError::bad_request(format!(
            "invalid value for force: {v:?}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(q: &str) -> Params {
        Params::parse(Some(q)).expect("query parses")
    }

    #[test]
    fn managers_default_to_the_user_agents_first_segment() {
        let none = params("");
        assert_eq!(
            manager_or_user_agent(&none, "kubectl/v1.33.0 (linux/amd64) kubernetes/abc"),
            "kubectl"
        );
        assert_eq!(
            manager_or_user_agent(&params("fieldManager=m"), "kubectl/v1"),
            "m"
        );
        assert_eq!(manager_or_user_agent(&none, ""), "");
    }

    #[test]
    fn an_apply_without_field_manager_is_invalid_as_kube_says() {
        let e = validate(&params(""), OptionsKind::Patch { apply: true }).unwrap_err();
        assert_eq!(e.code, 422);
        assert_eq!(
            e.message,
            "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"
        );
        assert_eq!(e.details.causes[0].field, "fieldManager");
        let e = validate(&params("force=true"), OptionsKind::Patch { apply: false }).unwrap_err();
        assert_eq!(
            e.message,
            "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for non-apply patch"
        );
        assert!(validate(
            &params("fieldManager=kubectl&force=true"),
            OptionsKind::Patch { apply: true }
        )
        .is_ok());
        let long = format!("fieldManager={}", "a".repeat(129));
        assert!(validate(&params(&long), OptionsKind::Create).is_err());
    }
}
