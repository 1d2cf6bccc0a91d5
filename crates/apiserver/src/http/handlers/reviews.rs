//! `POST` of the `authentication.k8s.io/v1` reviews, answered and never stored: TokenReview
//! (`pkg/registry/authentication/tokenreview/storage.go`) runs a token through the token
//! authenticators; SelfSubjectReview (`selfsubjectreview/rest.go`) tells the caller who it is.

use axum::body::Body;
use axum::response::Response;
use http::StatusCode;
use serde_json::{json, Value};

use crate::auth::{TokenResult, UserInfo};
use crate::error::{ApiError, ApiResult};
use crate::http::body::read_body;
use crate::http::decode::decode_json;
use crate::http::encode::json_value;
use crate::http::handlers::ResourceRequest;
use crate::http::AppState;

/// Creates the review of `req.info` (`tokenreviews` or `selfsubjectreviews`) for `user`.
pub async fn create(
    state: &AppState,
    req: &ResourceRequest<'_>,
    user: Option<&UserInfo>,
    body: Body,
) -> ApiResult<Response> {
    let bytes = read_body(req.headers, body).await?;
    match req.info.kind {
        "TokenReview" => token_review(state, decode_json(req.headers, &bytes)?),
        "SelfSubjectReview" => {
            let user = user.ok_or_else(|| {
                ApiError::internal("reviewing the caller", "no user in the request context")
            })?;
            Ok(json_value(StatusCode::CREATED, &self_subject_review(user)))
        }
        _ => Err(ApiError::method_not_allowed("POST")),
    }
}

/// The SelfSubjectReview of `user`.
pub fn self_subject_review(user: &UserInfo) -> Value {
    json!({
        "kind": "SelfSubjectReview",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"creationTimestamp": null},
        "status": {"userInfo": user.to_json()},
    })
}

fn token_review(state: &AppState, mut review: Value) -> ApiResult<Response> {
    let token = review
        .pointer("/spec/token")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if token.is_empty() {
        return Err(ApiError::bad_request(
            "token is required for TokenReview in authentication",
        ));
    }
    let requested: Option<Vec<String>> = review
        .pointer("/spec/audiences")
        .and_then(Value::as_array)
        .filter(|a| !a.is_empty())
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        });
    let result =
        state
            .auth
            .authenticate_token(&token, requested.as_deref(), jiff::Timestamp::now());
    review["apiVersion"] = json!("authentication.k8s.io/v1");
    review["kind"] = json!("TokenReview");
    if !review.get("metadata").is_some_and(Value::is_object) {
        review["metadata"] = json!({"creationTimestamp": null});
    }
    review["status"] = token_review_status(&result);
    Ok(json_value(StatusCode::CREATED, &review))
}

/// `status` of a TokenReview for what the authenticators made of the token.
pub fn token_review_status(result: &TokenResult) -> Value {
    match result {
        TokenResult::Authenticated { user, audiences } => json!({
            "authenticated": true,
            "user": user.to_json(),
            "audiences": audiences,
        }),
        TokenResult::Unauthenticated { error } => {
            let mut status = json!({ "user": {} });
            if let Some(e) = error {
                status["error"] = json!(e);
            }
            status
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn review_statuses_have_kubes_shape() {
        let ok = token_review_status(&TokenResult::Authenticated {
            user: UserInfo::new("alice", &["system:authenticated"]),
            audiences: vec!["api".into()],
        });
        assert_eq!(
            ok,
            json!({"authenticated": true, "user": {"username": "alice", "groups": ["system:authenticated"]}, "audiences": ["api"]})
        );
        let bad = token_review_status(&TokenResult::Unauthenticated {
            error: Some("service account token has expired".into()),
        });
        assert_eq!(
            bad,
            json!({"user": {}, "error": "service account token has expired"})
        );
        let me = self_subject_review(&UserInfo::new("bob", &[]));
        assert_eq!(me["status"]["userInfo"]["username"], "bob");
    }
}
