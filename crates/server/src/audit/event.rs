//! One audit event (`audit.k8s.io/v1` `Event`, `staging/src/k8s.io/apiserver/pkg/apis/audit/v1/types.go`)
//! and its JSON line, as kube's log backend writes it.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use super::policy::{Level, Stage};
use crate::auth::authorization::Attributes;
use crate::auth::UserInfo;

/// An audit event: what one request asked, who asked and how it ended, at one [`Stage`].
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    /// Always `Event`.
    pub kind: &'static str,
    /// Always `audit.k8s.io/v1`.
    pub api_version: &'static str,
    /// The level the policy gave the request.
    #[serde(serialize_with = "level_name")]
    pub level: Level,
    /// The request's id, the same in all of its events and its `Audit-Id` header.
    #[serde(rename = "auditID")]
    pub audit_id: String,
    /// The stage this event was generated at.
    #[serde(serialize_with = "stage_name")]
    pub stage: Stage,
    /// The request's path and query as sent.
    #[serde(rename = "requestURI")]
    pub request_uri: String,
    /// kube's verb of the request (`get`, `list`, `watch`, `create`, ...; the lower-cased method
    /// of a non-resource request).
    pub verb: String,
    /// Who sent the request (the authenticated user, before impersonation).
    #[serde(serialize_with = "user_json")]
    pub user: UserInfo,
    /// Who the request impersonated, if anyone.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "optional_user_json"
    )]
    pub impersonated_user: Option<UserInfo>,
    /// The client's address, after those of `X-Forwarded-For` and `X-Real-Ip`.
    #[serde(rename = "sourceIPs", skip_serializing_if = "Vec::is_empty")]
    pub source_ips: Vec<String>,
    /// The `User-Agent` header.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub user_agent: String,
    /// The object of a resource request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object_ref: Option<ObjectReference>,
    /// The answer's status; at [`Stage::RequestReceived`] there is none yet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_status: Option<ResponseStatus>,
    /// The request's body, from [`Level::Request`] on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_object: Option<Value>,
    /// The response's body, at [`Level::RequestResponse`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_object: Option<Value>,
    /// When the request arrived (kube's `MicroTime`).
    #[serde(serialize_with = "micro_time")]
    pub request_received_timestamp: jiff::Timestamp,
    /// When this stage was reached.
    #[serde(serialize_with = "micro_time")]
    pub stage_timestamp: jiff::Timestamp,
    /// Notes of the filters and handlers (`authorization.k8s.io/decision`, ...).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// The object a resource request is about (`audit.ObjectReference`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectReference {
    /// `pods`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub resource: String,
    /// Empty for cluster-scoped objects and requests across namespaces.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Empty for collections (and for creates whose name is in the body).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Empty for the core group.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api_group: String,
    /// `v1`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// The object's `metadata.uid`, when the request's body has it.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// The object's `metadata.resourceVersion`, when the request's body has it.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub resource_version: String,
    /// `status`, `log`, ...
    #[serde(skip_serializing_if = "String::is_empty")]
    pub subresource: String,
}

/// The bounded fields of the response's `Status` (`metav1.Status` as `LogResponseObject` copies
/// it): a code alone for successes.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ResponseStatus {
    /// Always empty, as kube writes it.
    pub metadata: serde_json::Map<String, Value>,
    /// `Success` or `Failure`, for errors.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub status: String,
    /// What went wrong.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// `Forbidden`, `NotFound`, ...
    #[serde(skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// The Status' details.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    /// The HTTP status code.
    pub code: u16,
}

impl ResponseStatus {
    /// The status of a response with `code` whose body is `body` (a `Status` for errors).
    pub fn from_response(code: u16, body: Option<&Value>) -> Self {
        let mut status = Self {
            code,
            ..Self::default()
        };
        let Some(body) = body.filter(|b| b.get("kind").and_then(Value::as_str) == Some("Status"))
        else {
            return status;
        };
        let text = |k: &str| body.get(k).and_then(Value::as_str).unwrap_or_default();
        status.status = text("status").to_string();
        status.message = text("message").to_string();
        status.reason = text("reason").to_string();
        status.details = body.get("details").cloned();
        status
    }
}

impl ObjectReference {
    /// The object of a resource request; `None` for other requests.
    pub fn from_attributes(attrs: &Attributes) -> Option<Self> {
        attrs.resource_request.then(|| Self {
            resource: attrs.resource.clone(),
            namespace: attrs.namespace.clone(),
            name: attrs.name.clone(),
            api_group: attrs.api_group.clone(),
            api_version: attrs.api_version.clone(),
            subresource: attrs.subresource.clone(),
            ..Self::default()
        })
    }

    /// Fills the fields the path did not give from the request's object, as
    /// `LogRequestObject` does: the name of a create, the uid and resourceVersion of an update.
    pub fn complete_from(&mut self, object: &Value) {
        let meta = |k: &str| {
            object
                .pointer(&format!("/metadata/{k}"))
                .and_then(Value::as_str)
                .unwrap_or_default()
        };
        for (field, key) in [
            (&mut self.name, "name"),
            (&mut self.namespace, "namespace"),
            (&mut self.uid, "uid"),
            (&mut self.resource_version, "resourceVersion"),
        ] {
            if field.is_empty() {
                *field = meta(key).to_string();
            }
        }
    }
}

impl Event {
    /// The event's JSON line, newline included (`json` format of the log backend).
    pub fn to_json_line(&self) -> Vec<u8> {
        let mut line = serde_json::to_vec(self).expect("an event always serializes to JSON");
        line.push(b'\n');
        line
    }
}

/// kube's `MicroTime`: RFC 3339 in UTC with microseconds.
pub fn format_micro_time(t: jiff::Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%S.%6fZ").to_string()
}

/// Leaves `metadata.managedFields` out of `obj` and out of each of its `items` (lists), as
/// `omitManagedFields` asks (`removeManagedFields` of `pkg/audit/request.go`).
pub fn strip_managed_fields(obj: &mut Value) {
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
    if let Some(items) = obj.get_mut("items").and_then(Value::as_array_mut) {
        for item in items {
            if let Some(meta) = item.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.remove("managedFields");
            }
        }
    }
}

fn level_name<S: serde::Serializer>(level: &Level, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(level.as_str())
}

fn stage_name<S: serde::Serializer>(stage: &Stage, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(stage.as_str())
}

/// The user as `authentication.k8s.io/v1` `UserInfo`; `{}` for no user (a request whose
/// authentication failed), as kube writes it.
fn user_json<S: serde::Serializer>(user: &UserInfo, s: S) -> Result<S::Ok, S::Error> {
    if *user == UserInfo::default() {
        return serde_json::Map::new().serialize(s);
    }
    user.to_json().serialize(s)
}

fn optional_user_json<S: serde::Serializer>(
    user: &Option<UserInfo>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match user {
        Some(user) => user.to_json().serialize(s),
        None => s.serialize_none(),
    }
}

fn micro_time<S: serde::Serializer>(t: &jiff::Timestamp, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format_micro_time(*t))
}

/// A `Metadata` event of a `get` of ConfigMap `default/x` by `jane`, for tests.
#[cfg(test)]
pub(crate) fn example(audit_id: &str) -> Event {
    let attrs = Attributes {
        api_version: "v1".into(),
        ..Attributes::resource(
            UserInfo::new("jane", &["system:authenticated"]),
            "get",
            "",
            "configmaps",
            "default",
            "x",
        )
    };
    let at: jiff::Timestamp = "2026-01-02T03:04:05.000001Z".parse().expect("timestamp");
    Event {
        kind: "Event",
        api_version: "audit.k8s.io/v1",
        level: Level::Metadata,
        audit_id: audit_id.into(),
        stage: Stage::ResponseComplete,
        request_uri: "/api/v1/namespaces/default/configmaps/x".into(),
        verb: "get".into(),
        user: attrs.user.clone(),
        impersonated_user: None,
        source_ips: vec!["127.0.0.1".into()],
        user_agent: "kubectl".into(),
        object_ref: ObjectReference::from_attributes(&attrs),
        response_status: Some(ResponseStatus::from_response(200, None)),
        request_object: None,
        response_object: None,
        request_received_timestamp: at,
        stage_timestamp: at,
        annotations: BTreeMap::new(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn at(s: &str) -> jiff::Timestamp {
        s.parse().expect("timestamp")
    }

    #[test]
    fn micro_time_has_six_fraction_digits_in_utc() {
        assert_eq!(
            format_micro_time(at("2026-01-02T03:04:05.123456789Z")),
            "2026-01-02T03:04:05.123456Z"
        );
        assert_eq!(
            format_micro_time(at("2026-01-02T03:04:05Z")),
            "2026-01-02T03:04:05.000000Z"
        );
    }

    #[test]
    fn an_event_serializes_as_kubes_audit_v1_event() {
        let mut event = example("id-1");
        event.stage_timestamp = at("2026-01-02T03:04:05.000002Z");
        event
            .annotations
            .insert("authorization.k8s.io/decision".into(), "allow".into());
        let line = event.to_json_line();
        assert_eq!(line.last(), Some(&b'\n'));
        let value: Value = serde_json::from_slice(&line).expect("JSON");
        assert_eq!(
            value,
            json!({
                "kind": "Event",
                "apiVersion": "audit.k8s.io/v1",
                "level": "Metadata",
                "auditID": "id-1",
                "stage": "ResponseComplete",
                "requestURI": "/api/v1/namespaces/default/configmaps/x",
                "verb": "get",
                "user": {"username": "jane", "groups": ["system:authenticated"]},
                "sourceIPs": ["127.0.0.1"],
                "userAgent": "kubectl",
                "objectRef": {
                    "resource": "configmaps",
                    "namespace": "default",
                    "name": "x",
                    "apiVersion": "v1",
                },
                "responseStatus": {"metadata": {}, "code": 200},
                "requestReceivedTimestamp": "2026-01-02T03:04:05.000001Z",
                "stageTimestamp": "2026-01-02T03:04:05.000002Z",
                "annotations": {"authorization.k8s.io/decision": "allow"},
            })
        );
    }

    #[test]
    fn an_error_status_keeps_its_status_message_and_reason() {
        let body = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": "configmaps \"x\" is forbidden",
            "reason": "Forbidden",
            "details": {"name": "x", "kind": "configmaps"},
            "code": 403,
        });
        let status = ResponseStatus::from_response(403, Some(&body));
        assert_eq!(
            serde_json::to_value(&status).expect("JSON"),
            json!({
                "metadata": {},
                "status": "Failure",
                "message": "configmaps \"x\" is forbidden",
                "reason": "Forbidden",
                "details": {"name": "x", "kind": "configmaps"},
                "code": 403,
            })
        );
    }

    #[test]
    fn the_object_reference_is_completed_from_the_request_object() {
        let mut reference = ObjectReference {
            resource: "configmaps".into(),
            namespace: "default".into(),
            ..ObjectReference::default()
        };
        reference.complete_from(&json!({"metadata": {
            "name": "x", "namespace": "other", "uid": "u-1", "resourceVersion": "7"}}));
        assert_eq!(reference.name, "x");
        assert_eq!(reference.namespace, "default", "the path's namespace stays");
        assert_eq!(reference.uid, "u-1");
        assert_eq!(reference.resource_version, "7");
    }

    #[test]
    fn managed_fields_are_left_out_of_objects_and_list_items() {
        let mut obj = json!({
            "metadata": {"name": "a", "managedFields": [{"manager": "m"}]},
            "items": [{"metadata": {"name": "b", "managedFields": []}}],
        });
        strip_managed_fields(&mut obj);
        assert_eq!(
            obj,
            json!({"metadata": {"name": "a"}, "items": [{"metadata": {"name": "b"}}]})
        );
    }
}
