//! Field paths and field errors as apimachinery's `pkg/util/validation/field` has them.
//!
//! A [`FieldError`] prints as kube's `field.Error` does (`spec.replicas: Invalid value: "x": detail`) and turns
//! into the `details.causes[]` entry of a 422 `Status` with [`FieldError::cause`].

use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::StatusCause;
use serde_json::Value;

use crate::go_format;

/// A path to a field, printed as kube prints `field.Path`: `spec.versions[0].schema.properties[foo]`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Path(String);

impl Path {
    /// The empty path (an object's root).
    pub fn root() -> Self {
        Path(String::new())
    }

    /// A path starting at `name`.
    pub fn new(name: &str) -> Self {
        Path(name.to_string())
    }

    /// `self.name`, or `name` at the root.
    pub fn child(&self, name: &str) -> Self {
        if self.0.is_empty() {
            Path(name.to_string())
        } else {
            Path(format!("{}.{name}", self.0))
        }
    }

    /// `self[key]`: a map key.
    pub fn key(&self, key: &str) -> Self {
        Path(format!("{}[{key}]", self.0))
    }

    /// `self[index]`: a list index.
    pub fn index(&self, index: usize) -> Self {
        Path(format!("{}[{index}]", self.0))
    }

    /// The printed path.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether this is the root.
    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What is wrong with a field; kube's `field.ErrorType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorType {
    /// `FieldValueNotFound`.
    NotFound,
    /// `FieldValueRequired`.
    Required,
    /// `FieldValueDuplicate`.
    Duplicate,
    /// `FieldValueInvalid`.
    Invalid,
    /// `FieldValueNotSupported`.
    NotSupported,
    /// `FieldValueForbidden`.
    Forbidden,
    /// `FieldValueTooLong`.
    TooLong,
    /// `FieldValueTooMany`.
    TooMany,
    /// `InternalError`.
    Internal,
    /// `FieldValueTypeInvalid`.
    TypeInvalid,
}

impl ErrorType {
    /// The machine-readable reason, used as a Status cause's `reason`.
    pub fn reason(self) -> &'static str {
        match self {
            ErrorType::NotFound => "FieldValueNotFound",
            ErrorType::Required => "FieldValueRequired",
            ErrorType::Duplicate => "FieldValueDuplicate",
            ErrorType::Invalid => "FieldValueInvalid",
            ErrorType::NotSupported => "FieldValueNotSupported",
            ErrorType::Forbidden => "FieldValueForbidden",
            ErrorType::TooLong => "FieldValueTooLong",
            ErrorType::TooMany => "FieldValueTooMany",
            ErrorType::Internal => "InternalError",
            ErrorType::TypeInvalid => "FieldValueTypeInvalid",
        }
    }

    /// The words kube prints for the type (`Required value`, `Invalid value`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorType::NotFound => "Not found",
            ErrorType::Required => "Required value",
            ErrorType::Duplicate => "Duplicate value",
            ErrorType::Invalid | ErrorType::TypeInvalid => "Invalid value",
            ErrorType::NotSupported => "Unsupported value",
            ErrorType::Forbidden => "Forbidden",
            ErrorType::TooLong => "Too long",
            ErrorType::TooMany => "Too many",
            ErrorType::Internal => "Internal error",
        }
    }
}

impl fmt::Display for ErrorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The offending value of a field error.
#[derive(Clone, Debug, PartialEq)]
pub enum BadValue {
    /// No value is printed (kube's `omitValue`).
    Omitted,
    /// A JSON value, printed as Go prints the decoded value.
    Json(Value),
    /// A Go `int` (counts such as `Too many: 3`).
    Int(i64),
    /// A value already rendered (a Go struct kube prints with `%#v`, shown here as JSON).
    Raw(String),
}

impl BadValue {
    fn render(&self) -> String {
        match self {
            BadValue::Omitted => String::new(),
            BadValue::Int(i) => i.to_string(),
            BadValue::Raw(s) => s.clone(),
            // field.Error prints nil as the string "null", quoted.
            BadValue::Json(Value::Null) => go_format::quote("null"),
            BadValue::Json(v) => go_format::sharp_v(v),
        }
    }
}

impl From<Value> for BadValue {
    fn from(v: Value) -> Self {
        BadValue::Json(v)
    }
}

impl From<&str> for BadValue {
    fn from(v: &str) -> Self {
        BadValue::Json(Value::String(v.to_string()))
    }
}

impl From<bool> for BadValue {
    fn from(v: bool) -> Self {
        BadValue::Json(Value::Bool(v))
    }
}

/// One field-level validation error; kube's `field.Error`.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldError {
    /// What is wrong.
    pub error_type: ErrorType,
    /// The field's path.
    pub field: String,
    /// The offending value.
    pub bad_value: BadValue,
    /// Why, in words.
    pub detail: String,
}

/// A list of field errors; kube's `field.ErrorList`.
pub type ErrorList = Vec<FieldError>;

impl FieldError {
    fn new(
        error_type: ErrorType,
        path: &Path,
        bad_value: BadValue,
        detail: impl Into<String>,
    ) -> Self {
        FieldError {
            error_type,
            field: path.to_string(),
            bad_value,
            detail: detail.into(),
        }
    }

    /// `field.Required`: a value is missing.
    pub fn required(path: &Path, detail: impl Into<String>) -> Self {
        Self::new(ErrorType::Required, path, BadValue::from(""), detail)
    }

    /// `field.Invalid`: the value is malformed or out of range.
    pub fn invalid(path: &Path, value: impl Into<BadValue>, detail: impl Into<String>) -> Self {
        Self::new(ErrorType::Invalid, path, value.into(), detail)
    }

    /// `field.TypeInvalid`: the value has the wrong type.
    pub fn type_invalid(
        path: &Path,
        value: impl Into<BadValue>,
        detail: impl Into<String>,
    ) -> Self {
        Self::new(ErrorType::TypeInvalid, path, value.into(), detail)
    }

    /// `field.Forbidden`: the field may not be set here.
    pub fn forbidden(path: &Path, detail: impl Into<String>) -> Self {
        Self::new(ErrorType::Forbidden, path, BadValue::from(""), detail)
    }

    /// `field.Duplicate`: the value appears twice where it must be unique.
    pub fn duplicate(path: &Path, value: impl Into<BadValue>) -> Self {
        Self::new(ErrorType::Duplicate, path, value.into(), "")
    }

    /// `field.NotSupported`: the value is not one of `valid` (printed quoted, in the given order).
    pub fn not_supported<S: AsRef<str>>(
        path: &Path,
        value: impl Into<BadValue>,
        valid: &[S],
    ) -> Self {
        let detail = if valid.is_empty() {
            String::new()
        } else {
            let quoted: Vec<String> = valid.iter().map(|v| go_format::quote(v.as_ref())).collect();
            format!("supported values: {}", quoted.join(", "))
        };
        Self::new(ErrorType::NotSupported, path, value.into(), detail)
    }

    /// `field.TooLong`: a string longer than `max` (negative: unknown).
    pub fn too_long(path: &Path, max: i64) -> Self {
        let detail = if max >= 0 {
            format!(
                "may not be more than {max} {}",
                if max == 1 { "byte" } else { "bytes" }
            )
        } else {
            "value is too long".to_string()
        };
        Self::new(ErrorType::TooLong, path, BadValue::Omitted, detail)
    }

    /// `field.TooMany`: `actual` items where at most `max` are allowed (negative: unknown).
    pub fn too_many(path: &Path, actual: i64, max: i64) -> Self {
        let detail = if max >= 0 {
            format!("must have at most {max} items")
        } else {
            "has too many items".to_string()
        };
        let value = if actual >= 0 {
            BadValue::Int(actual)
        } else {
            BadValue::Omitted
        };
        Self::new(ErrorType::TooMany, path, value, detail)
    }

    /// `field.InternalError`.
    pub fn internal(path: &Path, detail: impl Into<String>) -> Self {
        Self::new(ErrorType::Internal, path, BadValue::Omitted, detail)
    }

    /// The message without the field (kube's `ErrorBody`), used as a Status cause's `message`.
    pub fn body(&self) -> String {
        let mut s = match (self.error_type, &self.bad_value) {
            (
                ErrorType::Required
                | ErrorType::Forbidden
                | ErrorType::TooLong
                | ErrorType::Internal,
                _,
            )
            | (_, BadValue::Omitted) => self.error_type.to_string(),
            (t, v) => format!("{t}: {}", v.render()),
        };
        if !self.detail.is_empty() {
            s.push_str(": ");
            s.push_str(&self.detail);
        }
        s
    }

    /// The `details.causes[]` entry of a 422 Invalid `Status`.
    pub fn cause(&self) -> StatusCause {
        StatusCause {
            field: Some(self.field.clone()),
            message: Some(self.body()),
            reason: Some(self.error_type.reason().to_string()),
        }
    }
}

impl fmt::Display for FieldError {
    /// `field: body`, as kube's `field.Error.Error()`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.body())
    }
}

impl std::error::Error for FieldError {}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_print_like_field_path() {
        let p = Path::new("spec")
            .child("versions")
            .index(0)
            .child("schema")
            .child("properties")
            .key("foo");
        assert_eq!(p.as_str(), "spec.versions[0].schema.properties[foo]");
        assert_eq!(Path::root().child("a").as_str(), "a");
    }

    #[test]
    fn errors_print_like_field_error() {
        let p = Path::new("spec").child("replicas");
        assert_eq!(
            FieldError::invalid(&p, json!(0), "must be positive").to_string(),
            "spec.replicas: Invalid value: 0: must be positive"
        );
        assert_eq!(
            FieldError::required(&p, "").to_string(),
            "spec.replicas: Required value"
        );
        assert_eq!(
            FieldError::not_supported(&p, json!("x"), &["a", "b"]).to_string(),
            r#"spec.replicas: Unsupported value: "x": supported values: "a", "b""#
        );
        assert_eq!(
            FieldError::invalid(&p, Value::Null, "x").to_string(),
            r#"spec.replicas: Invalid value: "null": x"#
        );
        assert_eq!(
            FieldError::too_many(&p, 3, 2).to_string(),
            "spec.replicas: Too many: 3: must have at most 2 items"
        );
        assert_eq!(
            FieldError::too_long(&p, 5).to_string(),
            "spec.replicas: Too long: may not be more than 5 bytes"
        );
        assert_eq!(
            FieldError::forbidden(&p, "no").to_string(),
            "spec.replicas: Forbidden: no"
        );
    }

    #[test]
    fn cause_carries_reason_field_and_body() {
        let c = FieldError::duplicate(&Path::new("spec").child("l").index(1), json!("a")).cause();
        assert_eq!(c.reason.as_deref(), Some("FieldValueDuplicate"));
        assert_eq!(c.field.as_deref(), Some("spec.l[1]"));
        assert_eq!(c.message.as_deref(), Some(r#"Duplicate value: "a""#));
    }
}
