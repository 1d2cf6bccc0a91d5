//! `POST serviceaccounts/{name}/token`: a TokenRequest (`authentication.k8s.io/v1`), answered
//! with a bound service-account token, as kube's `TokenREST`
//! (`pkg/registry/core/serviceaccount/storage/token.go`).

use axum::body::Body;
use axum::response::Response;
use http::StatusCode;
use serde_json::{json, Value};

use rkcm_apimachinery::catalog::{self, ResourceInfo, Scope};

use crate::auth::serviceaccount::{
    ObjectRef, TokenClaims, EXPIRATION_EXTENSION_SECONDS, WARN_ONLY_BOUND_TOKEN_EXPIRATION_SECONDS,
};
use crate::error::{ApiError, ApiResult};
use crate::http::body::read_body;
use crate::http::decode::decode_json;
use crate::http::encode::json_value;
use crate::http::handlers::ResourceRequest;
use crate::http::AppState;
use crate::http::TokenExpiration;
use crate::object;
use crate::registry::FieldError;

/// Default `spec.expirationSeconds` (`SetDefaults_TokenRequestSpec`: one hour).
pub const DEFAULT_EXPIRATION_SECONDS: i64 = 60 * 60;
/// Shortest validity a client may ask for (`ValidateTokenRequest`: ten minutes).
pub const MIN_EXPIRATION_SECONDS: i64 = 10 * 60;
/// Longest validity a client may ask for (2^32 seconds).
pub const MAX_EXPIRATION_SECONDS: i64 = u32::MAX as i64;

/// The kind a TokenRequest's validation errors name.
static TOKEN_REQUEST: ResourceInfo = ResourceInfo {
    group: "authentication.k8s.io",
    version: "v1",
    kind: "TokenRequest",
    plural: "tokenrequests",
    singular: "tokenrequest",
    short_names: &[],
    categories: &[],
    scope: Scope::Namespaced,
    verbs: &["create"],
    subresources: &[],
};

/// The validity a token gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Expiration {
    /// Seconds the token is valid for (`exp - iat`).
    pub token_seconds: i64,
    /// `kubernetes.io.warnafter`, seconds after issue, for extended tokens.
    pub warn_after: Option<i64>,
    /// `spec.expirationSeconds` of the answer, from which `status.expirationTimestamp` is
    /// computed (kube reports the requested validity of an extended token).
    pub reported_seconds: i64,
}

/// kube's expiration rules: a pod-bound token for the API server's audiences asking for the
/// warn-only 3607 s lives a year (`--service-account-extend-token-expiration`); otherwise a
/// request beyond `--service-account-max-token-expiration` is cut down to it.
pub fn expiration(
    requested: i64,
    pod_bound: bool,
    api_audiences_only: bool,
    limits: TokenExpiration,
) -> Expiration {
    if limits.extend
        && pod_bound
        && api_audiences_only
        && requested == WARN_ONLY_BOUND_TOKEN_EXPIRATION_SECONDS
    {
        let extended = match limits.max_seconds {
            Some(max) if max > EXPIRATION_EXTENSION_SECONDS => max,
            _ => EXPIRATION_EXTENSION_SECONDS,
        };
        return Expiration {
            token_seconds: extended,
            warn_after: Some(requested),
            reported_seconds: requested,
        };
    }
    let seconds = match limits.max_seconds {
        Some(max) if max > 0 && requested > max => max,
        _ => requested,
    };
    Expiration {
        token_seconds: seconds,
        warn_after: None,
        reported_seconds: seconds,
    }
}

/// `ValidateTokenRequest` of `spec.expirationSeconds`.
fn validate_expiration(seconds: i64) -> Vec<FieldError> {
    let field = "spec.expirationSeconds";
    let mut errors = Vec::new();
    if seconds < MIN_EXPIRATION_SECONDS {
        errors.push(FieldError::invalid(
            field,
            &json!(seconds),
            "may not specify a duration less than 10 minutes",
        ));
    }
    if seconds > MAX_EXPIRATION_SECONDS {
        errors.push(FieldError::invalid(
            field,
            &json!(seconds),
            "may not specify a duration larger than 2^32 seconds",
        ));
    }
    errors
}

/// The core/v1 object `plural`/`name` (in `ns` when namespaced), or kube's 404.
fn core_object(req: &ResourceRequest<'_>, plural: &str, ns: &str, name: &str) -> ApiResult<Value> {
    let info = catalog::by_plural("", "v1", plural).expect("core resources are in the catalog");
    let namespace = info.namespaced().then_some(ns);
    req.store()
        .get(&crate::rest::key(info, namespace, name))
        .map(|o| o.value())
        .ok_or_else(|| ApiError::not_found(info, name))
}

/// Creates a token for the service account `name`; 201 with the TokenRequest and its status.
pub async fn create_token(
    state: &AppState,
    req: &ResourceRequest<'_>,
    name: &str,
    body: Body,
) -> ApiResult<Response> {
    let ns = req.namespace.ok_or_else(ApiError::no_route)?;
    let bytes = read_body(req.headers, body).await?;
    let tr = decode_json(req.headers, &bytes)?;
    if !tr.is_object() {
        return Err(ApiError::bad_request(
            "the request body must be a JSON object",
        ));
    }
    match object::namespace(&tr) {
        "" => {}
        n if n == ns => {}
        _ => return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        )),
    }
    match object::name(&tr) {
        "" => {}
        n if n == name => {}
        _ => {
            return Err(ApiError::bad_request(
                "the name of the provided object does not match the name sent on the request",
            ))
        }
    }
    // NodeRestriction looks at a node's TokenRequests, and admission webhooks at every one
    // (the only plugins that do here).
    let admission = req.admission();
    let mut attrs = admission.attributes(
        crate::admission::Operation::Create,
        req.info,
        "token",
        Some(ns),
        name,
        Some(tr.clone()),
        None,
        false,
    );
    attrs.kind = crate::admission::Kind {
        group: "authentication.k8s.io",
        version: "v1",
        kind: "TokenRequest",
    };
    super::subresource_admission::admit_subresource_create(&admission, &mut attrs).await?;
    // A mutating webhook may have changed the request.
    let mut tr = attrs.into_object().unwrap_or(tr);
    let spec = tr.get("spec").cloned().unwrap_or_else(|| json!({}));
    let requested = match spec.get("expirationSeconds") {
        None | Some(Value::Null) => DEFAULT_EXPIRATION_SECONDS,
        Some(v) => v.as_i64().ok_or_else(|| {
            ApiError::bad_request(
                "error decoding request body: spec.expirationSeconds must be an integer",
            )
        })?,
    };
    let errors = validate_expiration(requested);
    if !errors.is_empty() {
        return Err(ApiError::invalid(&TOKEN_REQUEST, name, &errors));
    }

    let account = core_object(req, "serviceaccounts", ns, name)?;
    let mut claims = TokenClaims {
        namespace: ns.to_string(),
        service_account: ObjectRef {
            name: name.to_string(),
            uid: object::uid(&account).to_string(),
        },
        ..TokenClaims::default()
    };
    if let Some(bound) = spec.get("boundObjectRef").filter(|b| b.is_object()) {
        let s = |k: &str| bound.get(k).and_then(Value::as_str).unwrap_or("");
        let (api_version, kind, bound_name, bound_uid) =
            (s("apiVersion"), s("kind"), s("name"), s("uid"));
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        let obj = match (group, kind) {
            ("", "Pod") => {
                let pod = core_object(req, "pods", ns, bound_name)?;
                let pod_sa = pod
                    .pointer("/spec/serviceAccountName")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                if pod_sa != name {
                    return Err(ApiError::bad_request(format!(
                        "cannot bind token for serviceaccount {name:?} to pod running with serviceaccount {pod_sa:?}"
                    )));
                }
                // The node of the pod is named in the token when it still exists.
                let node_name = pod
                    .pointer("/spec/nodeName")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                if !node_name.is_empty() {
                    claims.node =
                        core_object(req, "nodes", "", node_name)
                            .ok()
                            .map(|n| ObjectRef {
                                name: node_name.to_string(),
                                uid: object::uid(&n).to_string(),
                            });
                }
                claims.pod = Some(ObjectRef {
                    name: bound_name.to_string(),
                    uid: object::uid(&pod).to_string(),
                });
                pod
            }
            ("", "Secret") => {
                let secret = core_object(req, "secrets", ns, bound_name)?;
                claims.secret = Some(ObjectRef {
                    name: bound_name.to_string(),
                    uid: object::uid(&secret).to_string(),
                });
                secret
            }
            ("", "Node") => {
                let node = core_object(req, "nodes", "", bound_name)?;
                claims.node = Some(ObjectRef {
                    name: bound_name.to_string(),
                    uid: object::uid(&node).to_string(),
                });
                node
            }
            _ => {
                return Err(ApiError::bad_request(format!(
                    "cannot bind token to object of type {group}/{version}, Kind={kind}"
                )))
            }
        };
        if !bound_uid.is_empty() && bound_uid != object::uid(&obj) {
            return Err(ApiError::new(
                409,
                "Conflict",
                format!(
                    "Operation cannot be fulfilled on {kind} {bound_name:?}: the UID in the bound object reference ({bound_uid}) does not match the UID in record. The object might have been deleted and then recreated"
                ),
            ));
        }
    }

    let api_audiences = state.auth.service_accounts().audiences().to_vec();
    let audiences: Vec<String> = match spec.get("audiences").and_then(Value::as_array) {
        Some(a) if !a.is_empty() => a
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        _ => api_audiences.clone(),
    };
    // kube's `isKubeAudiences`: every requested audience is one of the API server's.
    let api_audiences_only =
        !api_audiences.is_empty() && audiences.iter().all(|a| api_audiences.contains(a));
    let exp = expiration(
        requested,
        claims.pod.is_some(),
        api_audiences_only,
        state.token_expiration,
    );
    let now = jiff::Timestamp::now().as_second();
    claims.audiences = audiences.clone();
    claims.issued_at = now;
    claims.expires_at = now + exp.token_seconds;
    claims.warn_after = exp.warn_after.map(|w| now + w);
    claims.id = uuid::Uuid::new_v4().to_string();
    let token = state.auth.service_accounts().issue(&claims);
    let expires = jiff::Timestamp::from_second(now + exp.reported_seconds)
        .map_err(|e| ApiError::internal("computing the token expiration", e))?;

    object::set_meta(&mut tr, "name", json!(name));
    object::set_meta(&mut tr, "namespace", json!(ns));
    tr["apiVersion"] = json!("authentication.k8s.io/v1");
    tr["kind"] = json!("TokenRequest");
    let mut spec = spec;
    spec["audiences"] = json!(audiences);
    spec["expirationSeconds"] = json!(exp.reported_seconds);
    tr["spec"] = spec;
    tr["status"] = json!({
        "token": token,
        "expirationTimestamp": object::now_rfc3339(expires),
    });
    Ok(json_value(StatusCode::CREATED, &tr))
}

#[cfg(test)]
mod tests {
    use super::*;

    const UNLIMITED: TokenExpiration = TokenExpiration {
        max_seconds: None,
        extend: true,
    };

    #[test]
    fn requested_expirations_below_ten_minutes_or_above_two_to_the_32_are_invalid() {
        assert!(validate_expiration(600).is_empty());
        assert!(validate_expiration(MAX_EXPIRATION_SECONDS).is_empty());
        let e = validate_expiration(599);
        assert_eq!(
            e[0].message_with_field(),
            "spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes"
        );
        assert_eq!(validate_expiration(MAX_EXPIRATION_SECONDS + 1).len(), 1);
    }

    // token_test.go: the warn-only expiration of pod-bound tokens is extended to a year.
    #[test]
    fn pod_bound_warn_only_requests_are_extended_to_a_year() {
        let e = expiration(3607, true, true, UNLIMITED);
        assert_eq!(
            e,
            Expiration {
                token_seconds: EXPIRATION_EXTENSION_SECONDS,
                warn_after: Some(3607),
                reported_seconds: 3607
            }
        );
        // Not for other audiences, unbound tokens, or with the extension off.
        assert_eq!(expiration(3607, true, false, UNLIMITED).token_seconds, 3607);
        assert_eq!(expiration(3607, false, true, UNLIMITED).token_seconds, 3607);
        let off = TokenExpiration {
            extend: false,
            ..UNLIMITED
        };
        assert_eq!(expiration(3607, true, true, off).token_seconds, 3607);
    }

    #[test]
    fn requests_beyond_the_maximum_are_cut_down_to_it() {
        let max = TokenExpiration {
            max_seconds: Some(7200),
            extend: true,
        };
        assert_eq!(expiration(86400, false, true, max).token_seconds, 7200);
        assert_eq!(expiration(86400, false, true, max).reported_seconds, 7200);
        assert_eq!(expiration(3600, false, true, max).token_seconds, 3600);
        assert_eq!(
            expiration(86400, false, true, UNLIMITED).token_seconds,
            86400
        );
    }
}
