//! `POST` of the `authorization.k8s.io/v1` reviews, answered by the authorizer and never stored
//! (`pkg/registry/authorization/{subjectaccessreview,localsubjectaccessreview,
//! selfsubjectaccessreview,selfsubjectrulesreview}/rest.go`): whether a user (or the caller) may
//! do something, and which rules the caller holds in a namespace (`kubectl auth can-i`).

use std::collections::BTreeMap;

use axum::body::Body;
use axum::response::Response;
use http::StatusCode;
use serde_json::{json, Map, Value};

use crate::auth::authorization::{aggregate_errors, UserRules};
use crate::auth::{Attributes, Decision, UserInfo};
use crate::error::{ApiError, ApiResult};
use crate::http::body::read_body;
use crate::http::decode::decode_json;
use crate::http::encode::json_value;
use crate::http::handlers::ResourceRequest;
use crate::http::AppState;
use crate::registry::FieldError;

/// Creates the review of `req.info` for the caller `user`.
pub async fn create(
    state: &AppState,
    req: &ResourceRequest<'_>,
    user: Option<&UserInfo>,
    body: Body,
) -> ApiResult<Response> {
    let bytes = read_body(req.headers, body).await?;
    let mut review: Value = decode_json(req.headers, &bytes)?;
    if !review.is_object() {
        return Err(ApiError::bad_request(
            "the request body must be a JSON object",
        ));
    }
    let user = user.ok_or_else(|| ApiError::bad_request("no user present on request"))?;
    let authorizer = &state.authorizer;
    let status = match req.info.kind {
        "SubjectAccessReview" => {
            let errs = validate_subject_access_review(&review, None);
            if !errs.is_empty() {
                return Err(ApiError::invalid(req.info, "", &errs));
            }
            decision_status(&authorizer.authorize(&attributes(&spec_user(&review), &review)))
        }
        "LocalSubjectAccessReview" => {
            let ns = req.namespace.unwrap_or("");
            if ns.is_empty() {
                return Err(ApiError::bad_request(format!(
                    "namespace is required on this type: {ns}"
                )));
            }
            match review.pointer("/metadata/namespace").and_then(Value::as_str) {
                None | Some("") => review["metadata"]["namespace"] = json!(ns),
                Some(other) if other != ns => {
                    return Err(ApiError::bad_request(
                        "the namespace of the provided object does not match the namespace sent on the request",
                    ))
                }
                Some(_) => {}
            }
            let errs = validate_subject_access_review(&review, Some(ns));
            if !errs.is_empty() {
                return Err(ApiError::invalid(req.info, "", &errs));
            }
            decision_status(&authorizer.authorize(&attributes(&spec_user(&review), &review)))
        }
        "SelfSubjectAccessReview" => {
            let errs = validate_attributes_choice(&review);
            if !errs.is_empty() {
                return Err(ApiError::invalid(req.info, "", &errs));
            }
            decision_status(&authorizer.authorize(&attributes(user, &review)))
        }
        "SelfSubjectRulesReview" => {
            let ns = str_at(&review, "/spec/namespace").to_string();
            if ns.is_empty() {
                return Err(ApiError::bad_request("no namespace on request"));
            }
            // kube answers with a new object holding the status only.
            review = json!({"metadata": {"creationTimestamp": null}, "spec": {}});
            rules_status(&authorizer.rules_for(user, &ns))
        }
        _ => return Err(ApiError::method_not_allowed("POST")),
    };
    review["apiVersion"] = json!("authorization.k8s.io/v1");
    review["kind"] = json!(req.info.kind);
    if !review.get("metadata").is_some_and(Value::is_object) {
        review["metadata"] = json!({"creationTimestamp": null});
    }
    review["status"] = status;
    Ok(json_value(StatusCode::CREATED, &review))
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// The user a SubjectAccessReview asks about (`spec.user`, `groups`, `uid`, `extra`).
fn spec_user(review: &Value) -> UserInfo {
    let strings = |v: Option<&Value>| -> Vec<String> {
        v.and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    };
    let extra: BTreeMap<String, Vec<String>> = review
        .pointer("/spec/extra")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), strings(Some(v))))
                .collect()
        })
        .unwrap_or_default();
    UserInfo {
        name: str_at(review, "/spec/user").to_string(),
        uid: str_at(review, "/spec/uid").to_string(),
        groups: strings(review.pointer("/spec/groups")),
        extra,
    }
}

/// `ResourceAttributesFrom` / `NonResourceAttributesFrom` of `spec` for `user`.
pub fn attributes(user: &UserInfo, review: &Value) -> Attributes {
    if let Some(r) = review
        .pointer("/spec/resourceAttributes")
        .filter(|r| r.is_object())
    {
        Attributes {
            api_version: str_at(r, "/version").to_string(),
            subresource: str_at(r, "/subresource").to_string(),
            // `fieldSelector.rawSelector` (what the Node authorizer reads of a list or watch).
            field_selector: str_at(r, "/fieldSelector/rawSelector").to_string(),
            ..Attributes::resource(
                user.clone(),
                str_at(r, "/verb"),
                str_at(r, "/group"),
                str_at(r, "/resource"),
                str_at(r, "/namespace"),
                str_at(r, "/name"),
            )
        }
    } else {
        let n = review
            .pointer("/spec/nonResourceAttributes")
            .unwrap_or(&Value::Null);
        Attributes::non_resource(user.clone(), str_at(n, "/verb"), str_at(n, "/path"))
    }
}

fn present(review: &Value, field: &str) -> bool {
    review
        .pointer(&format!("/spec/{field}"))
        .is_some_and(|v| !v.is_null())
}

/// `ValidateSelfSubjectAccessReviewSpec`: exactly one kind of attributes.
fn validate_attributes_choice(review: &Value) -> Vec<FieldError> {
    let resource = present(review, "resourceAttributes");
    let non_resource = present(review, "nonResourceAttributes");
    let value = review
        .pointer("/spec/nonResourceAttributes")
        .cloned()
        .unwrap_or(Value::Null);
    match (resource, non_resource) {
        (true, true) => vec![FieldError::invalid(
            "spec.nonResourceAttributes",
            &value,
            "cannot be specified in combination with resourceAttributes",
        )],
        (false, false) => vec![FieldError::invalid(
            "spec.resourceAttributes",
            &value,
            "exactly one of nonResourceAttributes or resourceAttributes must be specified",
        )],
        _ => Vec::new(),
    }
}

/// Whether `metadata` holds nothing but nulls (and, for a local review, its namespace).
fn metadata_is_empty(review: &Value, local: bool) -> bool {
    review
        .get("metadata")
        .and_then(Value::as_object)
        .is_none_or(|m| {
            m.iter()
                .all(|(k, v)| v.is_null() || (local && k == "namespace"))
        })
}

/// `ValidateSubjectAccessReview` (`namespace: None`) and `ValidateLocalSubjectAccessReview`.
fn validate_subject_access_review(review: &Value, namespace: Option<&str>) -> Vec<FieldError> {
    let mut errs = validate_attributes_choice(review);
    let user = str_at(review, "/spec/user");
    let no_groups = review
        .pointer("/spec/groups")
        .and_then(Value::as_array)
        .is_none_or(|g| g.is_empty());
    if user.is_empty() && no_groups {
        errs.push(FieldError::invalid(
            "spec.user",
            &json!(user),
            "at least one of user or group must be specified",
        ));
    }
    if !metadata_is_empty(review, namespace.is_some()) {
        errs.push(FieldError::invalid_omitting_value(
            "metadata",
            "must be empty",
        ));
    }
    if let Some(ns) = namespace {
        if present(review, "resourceAttributes")
            && str_at(review, "/spec/resourceAttributes/namespace") != ns
        {
            errs.push(FieldError::invalid(
                "spec.resourceAttributes.namespace",
                &json!(str_at(review, "/spec/resourceAttributes/namespace")),
                "must match metadata.namespace",
            ));
        }
        if present(review, "nonResourceAttributes") {
            errs.push(FieldError::invalid_omitting_value(
                "spec.nonResourceAttributes",
                "disallowed on this kind of request",
            ));
        }
    }
    errs
}

/// `SubjectAccessReviewStatus` of a decision.
pub fn decision_status(decision: &Decision) -> Value {
    let mut status = json!({"allowed": decision.is_allowed()});
    if matches!(decision, Decision::Deny(_)) {
        status["denied"] = json!(true);
    }
    if !decision.reason().is_empty() {
        status["reason"] = json!(decision.reason());
    }
    status
}

/// `SubjectRulesReviewStatus` of the rules a user holds.
pub fn rules_status(rules: &UserRules) -> Value {
    let list = |l: &Option<Vec<String>>| l.clone().unwrap_or_default();
    let resource_rules: Vec<Value> = rules
        .resource_rules
        .iter()
        .map(|r| {
            let mut m = Map::new();
            m.insert("verbs".into(), json!(r.verbs));
            for (k, v) in [
                ("apiGroups", list(&r.api_groups)),
                ("resources", list(&r.resources)),
                ("resourceNames", list(&r.resource_names)),
            ] {
                if !v.is_empty() {
                    m.insert(k.into(), json!(v));
                }
            }
            Value::Object(m)
        })
        .collect();
    let non_resource_rules: Vec<Value> = rules
        .non_resource_rules
        .iter()
        .map(|r| json!({"verbs": r.verbs, "nonResourceURLs": list(&r.non_resource_urls)}))
        .collect();
    let mut status = json!({
        "resourceRules": resource_rules,
        "nonResourceRules": non_resource_rules,
        "incomplete": false,
    });
    if !rules.errors.is_empty() {
        status["evaluationError"] = json!(aggregate_errors(&rules.errors));
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::authorization::rules::rule;

    #[test]
    fn attributes_come_from_the_resource_or_the_non_resource_attributes() {
        let u = UserInfo::new("jane", &[]);
        let review = json!({"spec": {"resourceAttributes": {"namespace": "ns", "verb": "create", "group": "apps", "resource": "deployments", "subresource": "scale", "name": "web"}}});
        let a = attributes(&u, &review);
        assert!(a.resource_request);
        assert_eq!(
            (
                a.verb.as_str(),
                a.api_group.as_str(),
                a.resource.as_str(),
                a.subresource.as_str(),
                a.namespace.as_str(),
                a.name.as_str()
            ),
            ("create", "apps", "deployments", "scale", "ns", "web")
        );
        let a = attributes(
            &u,
            &json!({"spec": {"nonResourceAttributes": {"path": "/api", "verb": "get"}}}),
        );
        assert!(!a.resource_request);
        assert_eq!((a.path.as_str(), a.verb.as_str()), ("/api", "get"));
    }

    /// Cases of `TestValidateSARSpec` (authorization validation_test.go).
    #[test]
    fn subject_access_reviews_are_validated_as_kube_does() {
        let msgs = |review: Value, ns: Option<&str>| -> Vec<String> {
            validate_subject_access_review(&review, ns)
                .iter()
                .map(FieldError::message_with_field)
                .collect()
        };
        assert!(msgs(
            json!({"spec": {"user": "me", "resourceAttributes": {}}}),
            None
        )
        .is_empty());
        assert_eq!(
            msgs(json!({"spec": {"user": "me"}}), None),
            ["spec.resourceAttributes: Invalid value: null: exactly one of nonResourceAttributes or resourceAttributes must be specified"]
        );
        assert_eq!(
            msgs(json!({"spec": {"user": "me", "resourceAttributes": {}, "nonResourceAttributes": {}}}), None),
            ["spec.nonResourceAttributes: Invalid value: {}: cannot be specified in combination with resourceAttributes"]
        );
        assert_eq!(
            msgs(json!({"spec": {"resourceAttributes": {}}}), None),
            ["spec.user: Invalid value: \"\": at least one of user or group must be specified"]
        );
        assert!(msgs(
            json!({"spec": {"groups": ["g"], "resourceAttributes": {}}}),
            None
        )
        .is_empty());
        assert_eq!(
            msgs(
                json!({"metadata": {"name": "x"}, "spec": {"user": "me", "resourceAttributes": {}}}),
                None
            ),
            ["metadata: Invalid value: must be empty"]
        );
        assert!(msgs(json!({"metadata": {"creationTimestamp": null}, "spec": {"user": "me", "resourceAttributes": {}}}), None).is_empty());
        // local reviews
        assert!(msgs(json!({"metadata": {"namespace": "ns"}, "spec": {"user": "me", "resourceAttributes": {"namespace": "ns"}}}), Some("ns")).is_empty());
        assert_eq!(
            msgs(json!({"metadata": {"namespace": "ns"}, "spec": {"user": "me", "resourceAttributes": {"namespace": "other"}}}), Some("ns")),
            ["spec.resourceAttributes.namespace: Invalid value: \"other\": must match metadata.namespace"]
        );
    }

    #[test]
    fn statuses_have_kubes_shape() {
        assert_eq!(
            decision_status(&Decision::Allow(String::new())),
            json!({"allowed": true})
        );
        assert_eq!(
            decision_status(&Decision::NoOpinion("RBAC: x".into())),
            json!({"allowed": false, "reason": "RBAC: x"})
        );
        assert_eq!(
            decision_status(&Decision::Deny("no".into())),
            json!({"allowed": false, "denied": true, "reason": "no"})
        );
        let rules = UserRules {
            resource_rules: vec![rule(&["get"], &[""], &["pods"], &["p"], &[])],
            non_resource_rules: vec![rule(&["get"], &[], &[], &[], &["/api"])],
            errors: vec!["clusterrole.rbac.authorization.k8s.io \"x\" not found".into()],
        };
        assert_eq!(
            rules_status(&rules),
            json!({"resourceRules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "resourceNames": ["p"]}],
                "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/api"]}],
                "incomplete": false,
                "evaluationError": "clusterrole.rbac.authorization.k8s.io \"x\" not found"})
        );
    }
}
