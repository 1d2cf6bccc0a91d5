//! API errors and their `Status` bodies (apimachinery `pkg/api/errors/errors.go`).

use axum::response::{IntoResponse, Response};
use http::StatusCode;
use serde_json::{json, Value};

use rkcm_apimachinery::catalog::ResourceInfo;

use rkcm_apimachinery::field::{invalid_message, FieldError};

/// One cause of an error, as `details.causes[]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cause {
    /// Machine-readable reason (`FieldValueInvalid`, `NamespaceTerminating`).
    pub reason: String,
    /// Human-readable message.
    pub message: String,
    /// Field path (`spec.replicas`), empty when not about a field.
    pub field: String,
}

/// An error answered as a Kubernetes `Status` object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiError {
    /// HTTP status code.
    pub code: u16,
    /// `reason` (`NotFound`, `AlreadyExists`, `Conflict`, `Invalid`, ...).
    pub reason: &'static str,
    /// `message`.
    pub message: String,
    /// `details` (boxed: errors travel through many `Result`s).
    pub details: Box<Details>,
}

/// `details` of a `Status`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Details {
    /// `details.name`.
    pub name: Option<String>,
    /// `details.group`.
    pub group: Option<String>,
    /// `details.kind`.
    pub kind: Option<String>,
    /// `details.causes`.
    pub causes: Vec<Cause>,
    /// `details.retryAfterSeconds`.
    pub retry_after: Option<u32>,
    /// `metadata.continue` of the Status: the token to go on with after an expired one.
    pub list_continue: Option<String>,
}

/// Result of API handlers.
pub type ApiResult<T> = Result<T, ApiError>;

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}): {}", self.reason, self.code, self.message)
    }
}

impl std::error::Error for ApiError {}

impl ApiError {
    /// An error without details.
    pub fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            reason,
            message: message.into(),
            details: Box::default(),
        }
    }

    fn with_resource(mut self, info: &ResourceInfo, name: &str) -> Self {
        self.details.name = Some(name.to_string());
        self.details.group = Some(info.group.to_string());
        self.details.kind = Some(info.plural.to_string());
        self
    }

    /// 400 BadRequest.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// 401 Unauthorized.
    pub fn unauthorized() -> Self {
        Self::new(401, "Unauthorized", "Unauthorized")
    }

    /// 404 NotFound for a resource: `pods "x" not found`.
    pub fn not_found(info: &ResourceInfo, name: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("{} \"{}\" not found", info.qualified_plural(), name),
        )
        .with_resource(info, name)
    }

    /// 404 NotFound for a path that serves nothing.
    pub fn no_route() -> Self {
        Self::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
    }

    /// 405 MethodNotAllowed.
    pub fn method_not_allowed(method: &str) -> Self {
        Self::new(
            405,
            "MethodNotAllowed",
            format!("the server does not allow this method on the requested resource ({method})"),
        )
    }

    /// 409 AlreadyExists: `deployments.apps "x" already exists`.
    pub fn already_exists(info: &ResourceInfo, name: &str) -> Self {
        Self::new(
            409,
            "AlreadyExists",
            format!("{} \"{}\" already exists", info.qualified_plural(), name),
        )
        .with_resource(info, name)
    }

    /// 409 Conflict for a stale resourceVersion.
    pub fn conflict(info: &ResourceInfo, name: &str) -> Self {
        Self::conflict_with(
            info,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 409 Conflict with a specific explanation.
    pub fn conflict_with(info: &ResourceInfo, name: &str, why: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{}\": {}",
                info.qualified_plural(),
                name,
                why
            ),
        )
        .with_resource(info, name)
    }

    /// 403 Forbidden for a resource: `<resource> "<name>" is forbidden: <why>`.
    pub fn forbidden(info: &ResourceInfo, name: &str, why: &str) -> Self {
        Self::new(
            403,
            "Forbidden",
            format!(
                "{} \"{}\" is forbidden: {}",
                info.qualified_plural(),
                name,
                why
            ),
        )
        .with_resource(info, name)
    }

    /// 410 Expired (`too old resource version`, expired continue token).
    pub fn expired(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    /// 504 Timeout with cause `ResourceVersionTooLarge`: a read at a revision the cache did not
    /// reach in time (`storage.NewTooLargeResourceVersionError`); the client retries after 1 s
    /// (`resourceVersionTooHighRetrySeconds`).
    pub fn too_large_resource_version(requested: i64, current: i64) -> Self {
        let mut e = Self::new(
            504,
            "Timeout",
            format!("Timeout: Too large resource version: {requested}, current: {current}"),
        );
        e.details.causes.push(Cause {
            reason: "ResourceVersionTooLarge".into(),
            message: "Too large resource version".into(),
            field: String::new(),
        });
        e.details.retry_after = Some(1);
        e
    }

    /// 503 ServiceUnavailable: the storage cannot be reached (kube answers the same when etcd is
    /// down and its client fails fast).
    pub fn service_unavailable(message: impl Into<String>) -> Self {
        Self::new(503, "ServiceUnavailable", message)
    }

    /// 504 Timeout: the storage did not answer within the request's time.
    pub fn timeout(message: impl Into<String>) -> Self {
        Self::new(504, "Timeout", message)
    }

    /// 413 RequestEntityTooLarge.
    pub fn too_large() -> Self {
        Self::new(
            413,
            "RequestEntityTooLarge",
            "Request entity too large: limit is 3145728",
        )
    }

    /// 415 UnsupportedMediaType.
    pub fn unsupported_media_type(message: impl Into<String>) -> Self {
        Self::new(415, "UnsupportedMediaType", message)
    }

    /// 422 Invalid: `Deployment.apps "x" is invalid: spec.replicas: ...`, one cause per error.
    pub fn invalid(info: &ResourceInfo, name: &str, errors: &[FieldError]) -> Self {
        let mut e = Self::new(422, "Invalid", invalid_message(info, name, errors));
        e.details.name = Some(name.to_string());
        e.details.group = Some(info.group.to_string());
        e.details.kind = Some(info.kind.to_string());
        e.details.causes = errors
            .iter()
            .map(|f| Cause {
                reason: f.kind.reason().to_string(),
                message: f.message.clone(),
                field: f.field.clone(),
            })
            .collect();
        e
    }

    /// 500 InternalError; the cause is logged, the client gets a plain message.
    pub fn internal(context: &str, err: impl std::fmt::Display) -> Self {
        tracing::error!(error = %err, "{context}");
        Self::new(
            500,
            "InternalError",
            format!("Internal error occurred: {context}"),
        )
    }

    /// The `Status` object.
    pub fn status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if self.reason.is_empty() {
            // A `Status` a REST handler returns without a reason (eviction's "more than one
            // PodDisruptionBudget") carries none.
            if let Some(m) = status.as_object_mut() {
                m.remove("reason");
            }
        }
        let mut details = serde_json::Map::new();
        if let Some(n) = &self.details.name {
            details.insert("name".into(), json!(n));
        }
        if let Some(g) = &self.details.group {
            if !g.is_empty() {
                details.insert("group".into(), json!(g));
            }
        }
        if let Some(k) = &self.details.kind {
            details.insert("kind".into(), json!(k));
        }
        if !self.details.causes.is_empty() {
            let causes: Vec<Value> = self
                .details
                .causes
                .iter()
                .map(|c| {
                    let mut m = serde_json::Map::new();
                    m.insert("reason".into(), json!(c.reason));
                    m.insert("message".into(), json!(c.message));
                    if !c.field.is_empty() {
                        m.insert("field".into(), json!(c.field));
                    }
                    Value::Object(m)
                })
                .collect();
            details.insert("causes".into(), Value::Array(causes));
        }
        if let Some(r) = self.details.retry_after {
            details.insert("retryAfterSeconds".into(), json!(r));
        }
        if !details.is_empty() {
            status["details"] = Value::Object(details);
        }
        if let Some(token) = &self.details.list_continue {
            status["metadata"] = json!({"continue": token});
        }
        status
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let code = StatusCode::from_u16(self.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let body = serde_json::to_vec(&self.status()).unwrap_or_default();
        let mut builder = Response::builder()
            .status(code)
            .header(http::header::CONTENT_TYPE, "application/json");
        // As kube's `ErrorNegotiated`: a suggested delay is also a `Retry-After` header.
        if let Some(delay) = self.details.retry_after.filter(|d| *d > 0) {
            builder = builder.header(http::header::RETRY_AFTER, delay.to_string());
        }
        builder
            .body(axum::body::Body::from(body))
            .unwrap_or_else(|_| code.into_response())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rkcm_apimachinery::catalog;

    #[test]
    fn messages_match_kube() {
        let deploy = catalog::by_kind("apps/v1", "Deployment").expect("served");
        assert_eq!(
            ApiError::already_exists(deploy, "web").message,
            "deployments.apps \"web\" already exists"
        );
        assert_eq!(
            ApiError::conflict(deploy, "web").message,
            "Operation cannot be fulfilled on deployments.apps \"web\": the object has been modified; please apply your changes to the latest version and try again"
        );
        let st = ApiError::not_found(deploy, "web").status();
        assert_eq!(st["details"]["group"], "apps");
        assert_eq!(st["details"]["kind"], "deployments");
        assert_eq!(st["code"], 404);
    }
}
