//! Validation errors of fields, as apimachinery's `pkg/util/validation/field`: the error types,
//! their rendering in `StatusCause`s and the aggregate message of a 422 Invalid.

use std::fmt;

use serde_json::Value;

use crate::catalog::ResourceInfo;

/// The kind of a field validation error, as apimachinery `field.ErrorType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FieldErrorKind {
    /// A required field is missing (`field.Required`).
    Required,
    /// A value is malformed or out of range (`field.Invalid`).
    Invalid,
    /// A value is not one of the supported values (`field.NotSupported`).
    NotSupported,
    /// A value appears twice where it must be unique (`field.Duplicate`).
    Duplicate,
    /// A field may not be set or changed (`field.Forbidden`).
    Forbidden,
    /// A value is longer than allowed (`field.TooLong`).
    TooLong,
    /// A value refers to something that does not exist (`field.NotFound`), e.g. a volume
    /// mount naming no volume.
    NotFound,
    /// A list has more items than allowed (`field.TooMany`).
    TooMany,
    /// A value has the wrong type (`field.TypeInvalid`), reported by schema validation of
    /// custom resources.
    TypeInvalid,
    /// The server failed to check the value (`field.InternalError`).
    Internal,
}

impl FieldErrorKind {
    /// The `reason` of the `StatusCause` kube reports for this kind of error.
    pub fn reason(&self) -> &'static str {
        match self {
            FieldErrorKind::Required => "FieldValueRequired",
            FieldErrorKind::Invalid => "FieldValueInvalid",
            FieldErrorKind::NotSupported => "FieldValueNotSupported",
            FieldErrorKind::Duplicate => "FieldValueDuplicate",
            FieldErrorKind::Forbidden => "FieldValueForbidden",
            FieldErrorKind::TooLong => "FieldValueTooLong",
            FieldErrorKind::NotFound => "FieldValueNotFound",
            FieldErrorKind::TooMany => "FieldValueTooMany",
            FieldErrorKind::TypeInvalid => "FieldValueTypeInvalid",
            FieldErrorKind::Internal => "InternalError",
        }
    }

    /// The human-readable type, as `field.ErrorType.String()` (`Invalid value`).
    pub fn type_str(&self) -> &'static str {
        match self {
            FieldErrorKind::Required => "Required value",
            FieldErrorKind::Invalid => "Invalid value",
            FieldErrorKind::NotSupported => "Unsupported value",
            FieldErrorKind::Duplicate => "Duplicate value",
            FieldErrorKind::Forbidden => "Forbidden",
            FieldErrorKind::TooLong => "Too long",
            FieldErrorKind::NotFound => "Not found",
            FieldErrorKind::TooMany => "Too many",
            FieldErrorKind::TypeInvalid => "Invalid value",
            FieldErrorKind::Internal => "Internal error",
        }
    }
}

/// One validation error of one field, as apimachinery `field.Error`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    /// Path of the field: `spec.replicas`, `metadata.name`, `spec.containers[0].image`.
    pub field: String,
    /// What is wrong.
    pub kind: FieldErrorKind,
    /// The message kube puts in the `StatusCause` (`field.Error.ErrorBody()`): the type, the
    /// rendered bad value where kube shows one, and the detail, e.g.
    /// `Invalid value: -1: must be greater than or equal to 0`.
    pub message: String,
}

impl FieldError {
    /// `field: message`, as `field.Error.Error()`:
    /// `spec.replicas: Invalid value: -1: must be greater than or equal to 0`.
    pub fn message_with_field(&self) -> String {
        format!("{}: {}", self.field, self.message)
    }

    /// A required field is missing; `detail` may be empty.
    pub fn required(field: impl Into<String>, detail: &str) -> Self {
        Self::without_value(field, FieldErrorKind::Required, detail)
    }

    /// A field may not be set or changed.
    pub fn forbidden(field: impl Into<String>, detail: &str) -> Self {
        Self::without_value(field, FieldErrorKind::Forbidden, detail)
    }

    /// A value is too long; `max` is the limit in bytes (`field.TooLong`).
    pub fn too_long(field: impl Into<String>, max: usize) -> Self {
        let unit = if max == 1 { "byte" } else { "bytes" };
        Self::without_value(
            field,
            FieldErrorKind::TooLong,
            &format!("may not be more than {max} {unit}"),
        )
    }

    /// A value is invalid; `value` is rendered as kube renders the bad value.
    pub fn invalid(field: impl Into<String>, value: &Value, detail: &str) -> Self {
        Self::with_value(field, FieldErrorKind::Invalid, value, detail)
    }

    /// A value is invalid and kube leaves it out of the message (`field.OmitValueType{}`).
    pub fn invalid_omitting_value(field: impl Into<String>, detail: &str) -> Self {
        Self::without_value(field, FieldErrorKind::Invalid, detail)
    }

    /// A list has `actual` items where at most `max` are allowed.
    pub fn too_many(field: impl Into<String>, actual: usize, max: usize) -> Self {
        let items = if max == 1 { "item" } else { "items" };
        Self::with_value(
            field,
            FieldErrorKind::TooMany,
            &Value::from(actual),
            &format!("must have at most {max} {items}"),
        )
    }

    /// A value refers to something that does not exist.
    pub fn not_found(field: impl Into<String>, value: &Value) -> Self {
        Self::with_value(field, FieldErrorKind::NotFound, value, "")
    }

    /// A value appears twice.
    pub fn duplicate(field: impl Into<String>, value: &Value) -> Self {
        Self::with_value(field, FieldErrorKind::Duplicate, value, "")
    }

    /// A value is not one of `supported`.
    pub fn not_supported(field: impl Into<String>, value: &Value, supported: &[&str]) -> Self {
        let quoted: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
        let detail = if quoted.is_empty() {
            String::new()
        } else {
            format!("supported values: {}", quoted.join(", "))
        };
        Self::with_value(field, FieldErrorKind::NotSupported, value, &detail)
    }

    fn without_value(field: impl Into<String>, kind: FieldErrorKind, detail: &str) -> Self {
        let mut message = kind.type_str().to_string();
        if !detail.is_empty() {
            message.push_str(": ");
            message.push_str(detail);
        }
        FieldError {
            field: field.into(),
            kind,
            message,
        }
    }

    fn with_value(
        field: impl Into<String>,
        kind: FieldErrorKind,
        value: &Value,
        detail: &str,
    ) -> Self {
        let mut message = format!("{}: {}", kind.type_str(), render_value(value));
        if !detail.is_empty() {
            message.push_str(": ");
            message.push_str(detail);
        }
        FieldError {
            field: field.into(),
            kind,
            message,
        }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message_with_field())
    }
}

impl std::error::Error for FieldError {}

/// Renders a bad value as `field.Error.ErrorBody` does: strings quoted, numbers and booleans
/// plain, `null` for absent values, other values as JSON.
/// A bad value as kube renders it in a field error (`field.Error.ErrorBody`).
pub fn render_value(value: &Value) -> String {
    match value {
        Value::Null => "null".to_string(),
        Value::String(s) => format!("{s:?}"),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        other => other.to_string(),
    }
}

/// The message of a 422 Invalid `Status`, as apimachinery `errors.NewInvalid`:
/// `Deployment.apps "web" is invalid: spec.replicas: Invalid value: -1: ...`, with the errors
/// in brackets when there are several.
pub fn invalid_message(info: &ResourceInfo, name: &str, errors: &[FieldError]) -> String {
    let kind = if info.group.is_empty() {
        info.kind.to_string()
    } else {
        format!("{}.{}", info.kind, info.group)
    };
    let mut messages: Vec<String> = Vec::new();
    for e in errors {
        let m = e.message_with_field();
        if !messages.contains(&m) {
            messages.push(m);
        }
    }
    let aggregate = match messages.len() {
        0 => String::new(),
        1 => messages.remove(0),
        _ => format!("[{}]", messages.join(", ")),
    };
    format!("{kind} {name:?} is invalid: {aggregate}")
}
