//! The `AdmissionReview` a webhook is sent and the answer it gives (`request/admissionreview.go`:
//! `CreateAdmissionObjects`, `VerifyAdmissionResponse`).

use base64::Engine as _;
use serde_json::{json, Map, Value};

use rkcm_server::admission::attributes::{Attributes, Operation};

use super::hook::Hook;

/// The review versions the server speaks, preferred first.
const SUPPORTED: &[&str] = &["v1", "v1beta1"];

/// The first of the webhook's `admissionReviewVersions` the server speaks.
pub fn version(hook: &Hook) -> Result<&'static str, String> {
    hook.review_versions
        .iter()
        .find_map(|v| SUPPORTED.iter().find(|s| **s == v.as_str()).copied())
        .ok_or_else(|| {
            format!(
                "webhook does not accept known AdmissionReview versions ({})",
                SUPPORTED.join(", ")
            )
        })
}

/// The options object of the operation, as kube sends it (`CreateOptions`, ...).
fn options(attrs: &Attributes) -> Value {
    let kind = match attrs.operation {
        Operation::Create => "CreateOptions",
        Operation::Update => "UpdateOptions",
        Operation::Delete => "DeleteOptions",
        Operation::Connect => return Value::Null,
    };
    let mut options = json!({"kind": kind, "apiVersion": "meta.k8s.io/v1"});
    if attrs.dry_run {
        options["dryRun"] = json!(["All"]);
    }
    options
}

fn kind_of(attrs: &Attributes) -> Value {
    json!({"group": attrs.kind.group, "version": attrs.kind.version, "kind": attrs.kind.kind})
}

fn resource_of(attrs: &Attributes) -> Value {
    json!({
        "group": attrs.resource.group,
        "version": attrs.resource.version,
        "resource": attrs.resource.plural,
    })
}

/// The review with id `uid`, in review version `version`, of the request `original` as the
/// webhook sees it, `attrs` (`kind`, `resource` and the objects in the version its rules name,
/// see [`super::matching::Invocation`]); `requestKind`, `requestResource` and
/// `requestSubResource` are the request's own.
pub fn request(attrs: &Attributes, original: &Attributes, uid: &str, version: &str) -> Value {
    let kind = kind_of(attrs);
    let resource = resource_of(attrs);
    let user = &attrs.user;
    let mut user_info = Map::new();
    user_info.insert("username".into(), json!(user.name));
    if !user.uid.is_empty() {
        user_info.insert("uid".into(), json!(user.uid));
    }
    if !user.groups.is_empty() {
        user_info.insert("groups".into(), json!(user.groups));
    }
    if !user.extra.is_empty() {
        user_info.insert("extra".into(), json!(user.extra));
    }
    let mut request = Map::new();
    request.insert("uid".into(), json!(uid));
    request.insert("kind".into(), kind);
    request.insert("resource".into(), resource);
    if !attrs.subresource.is_empty() {
        request.insert("subResource".into(), json!(attrs.subresource));
    }
    request.insert("requestKind".into(), kind_of(original));
    request.insert("requestResource".into(), resource_of(original));
    if !original.subresource.is_empty() {
        request.insert("requestSubResource".into(), json!(original.subresource));
    }
    if !attrs.name.is_empty() {
        request.insert("name".into(), json!(attrs.name));
    }
    if !attrs.namespace.is_empty() {
        request.insert("namespace".into(), json!(attrs.namespace));
    }
    request.insert("operation".into(), json!(attrs.operation.as_str()));
    request.insert("userInfo".into(), Value::Object(user_info));
    request.insert(
        "object".into(),
        attrs.object().cloned().unwrap_or(Value::Null),
    );
    request.insert(
        "oldObject".into(),
        attrs.old_object().cloned().unwrap_or(Value::Null),
    );
    request.insert("dryRun".into(), json!(attrs.dry_run));
    request.insert("options".into(), options(attrs));
    json!({
        "kind": "AdmissionReview",
        "apiVersion": format!("admission.k8s.io/{version}"),
        "request": request,
    })
}

/// `response.status` of a refusal.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Refusal {
    /// `code`.
    pub code: u16,
    /// `reason`.
    pub reason: String,
    /// `message`.
    pub message: String,
}

/// What a webhook answered.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Response {
    /// `allowed`.
    pub allowed: bool,
    /// `status`.
    pub status: Refusal,
    /// The JSON patch of a mutating webhook, decoded.
    pub patch: Option<Vec<u8>>,
    /// `warnings`.
    pub warnings: Vec<String>,
}

/// "group/version, Kind=kind", as Go prints a `GroupVersionKind`.
fn gvk_string(review: &Value) -> String {
    let api_version = review
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let kind = review
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    format!("{group}/{version}, Kind={kind}")
}

/// The response in `body` to the review `uid` of `version` (`VerifyAdmissionResponse`).
pub fn response(body: &[u8], uid: &str, version: &str, mutating: bool) -> Result<Response, String> {
    let review: Value = serde_json::from_slice(body).map_err(|e| e.to_string())?;
    let Some(r) = review.get("response").filter(|r| r.is_object()) else {
        return Err("webhook response was absent".into());
    };
    if version == "v1" {
        let got = r.get("uid").and_then(Value::as_str).unwrap_or_default();
        if got != uid {
            return Err(format!("expected response.uid={uid:?}, got {got:?}"));
        }
        let gvk = gvk_string(&review);
        if gvk != "admission.k8s.io/v1, Kind=AdmissionReview" {
            return Err(format!(
                "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got {gvk}"
            ));
        }
    }
    let patch_type = r
        .get("patchType")
        .and_then(Value::as_str)
        .unwrap_or_default();
    // `patch` is a []byte: base64 text, or (as Go's encoding/json also decodes it, and as
    // kube-rs' AdmissionResponse sends it) an array of byte values.
    let patch = match r.get("patch") {
        Some(Value::String(p)) if mutating && !p.is_empty() => Some(
            base64::engine::general_purpose::STANDARD
                .decode(p)
                .map_err(|e| format!("illegal base64 data in response.patch: {e}"))?,
        ),
        Some(Value::Array(bytes)) if mutating && !bytes.is_empty() => Some(
            bytes
                .iter()
                .map(|b| b.as_u64().and_then(|b| u8::try_from(b).ok()))
                .collect::<Option<Vec<u8>>>()
                .ok_or("cannot unmarshal response.patch: an element is not a byte")?,
        ),
        _ => None,
    };
    if version == "v1" {
        if !patch_type.is_empty() && !mutating {
            return Err("validating webhook may not return response.patchType".into());
        }
        if patch.is_some() && patch_type.is_empty() {
            return Err(
                "mutating webhook returned response.patch but not response.patchType".into(),
            );
        }
    }
    if patch.is_some() && !patch_type.is_empty() && patch_type != "JSONPatch" {
        return Err(format!(
            "mutating webhook returned invalid response.patchType of {patch_type:?}"
        ));
    }
    let status = r.get("status").cloned().unwrap_or(Value::Null);
    let text = |k: &str| {
        status
            .get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    Ok(Response {
        allowed: r.get("allowed").and_then(Value::as_bool).unwrap_or(false),
        status: Refusal {
            code: status
                .get("code")
                .and_then(Value::as_u64)
                .and_then(|c| u16::try_from(c).ok())
                .unwrap_or(0),
            reason: text("reason"),
            message: text("message"),
        },
        patch,
        warnings: r
            .get("warnings")
            .and_then(Value::as_array)
            .map(|w| {
                w.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rkcm_server::auth::UserInfo;
    use std::sync::Arc;

    fn pod_update() -> Attributes {
        Attributes::new(
            Operation::Update,
            rkcm_apimachinery::catalog::by_kind("v1", "Pod").expect("pods"),
            "status",
            Some("ns"),
            "p",
            Some(json!({"metadata": {"name": "p"}})),
            Some(Arc::new(
                json!({"metadata": {"name": "p", "labels": {"a": "b"}}}),
            )),
            Arc::new(UserInfo::new("alice", &["dev"])),
            true,
        )
    }

    #[test]
    fn requests_carry_kube_fields() {
        let r = request(&pod_update(), &pod_update(), "u-1", "v1");
        assert_eq!(r["apiVersion"], "admission.k8s.io/v1");
        let q = &r["request"];
        assert_eq!(q["uid"], "u-1");
        assert_eq!(
            q["kind"],
            json!({"group": "", "version": "v1", "kind": "Pod"})
        );
        assert_eq!(
            q["resource"],
            json!({"group": "", "version": "v1", "resource": "pods"})
        );
        assert_eq!(q["subResource"], "status");
        assert_eq!(q["requestSubResource"], "status");
        assert_eq!(q["operation"], "UPDATE");
        assert_eq!(
            q["userInfo"],
            json!({"username": "alice", "groups": ["dev"]})
        );
        assert_eq!(q["oldObject"]["metadata"]["labels"]["a"], "b");
        assert_eq!(q["dryRun"], true);
        assert_eq!(
            q["options"],
            json!({"kind": "UpdateOptions", "apiVersion": "meta.k8s.io/v1", "dryRun": ["All"]})
        );
        assert_eq!(
            request(&pod_update(), &pod_update(), "u", "v1beta1")["apiVersion"],
            "admission.k8s.io/v1beta1"
        );
    }

    #[test]
    fn v1_responses_must_name_the_review_and_its_uid() {
        let ok = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "response": {"uid": "u", "allowed": true}});
        assert!(
            response(ok.to_string().as_bytes(), "u", "v1", false)
                .expect("ok")
                .allowed
        );
        assert_eq!(
            response(ok.to_string().as_bytes(), "other", "v1", false).expect_err("uid"),
            "expected response.uid=\"other\", got \"u\""
        );
        let untyped = json!({"response": {"uid": "u", "allowed": true}});
        assert_eq!(
            response(untyped.to_string().as_bytes(), "u", "v1", false).expect_err("gvk"),
            "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got /, Kind="
        );
        assert!(
            response(untyped.to_string().as_bytes(), "x", "v1beta1", false)
                .expect("lenient")
                .allowed
        );
        assert_eq!(
            response(b"{}", "u", "v1", false).expect_err("absent"),
            "webhook response was absent"
        );
    }

    #[test]
    fn patches_are_decoded_for_mutating_webhooks() {
        let patch = base64::engine::general_purpose::STANDARD.encode(b"[]");
        let body = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "response": {"uid": "u", "allowed": true, "patchType": "JSONPatch", "patch": patch,
                "warnings": ["careful"]}});
        let r = response(body.to_string().as_bytes(), "u", "v1", true).expect("ok");
        assert_eq!(r.patch.as_deref(), Some(&b"[]"[..]));
        assert_eq!(r.warnings, ["careful"]);
        assert_eq!(
            response(body.to_string().as_bytes(), "u", "v1", false).expect_err("validating"),
            "validating webhook may not return response.patchType"
        );
    }

    #[test]
    fn patches_given_as_arrays_of_bytes_are_decoded() {
        let review = |patch: Value| {
            json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                "response": {"uid": "u", "allowed": true, "patchType": "JSONPatch", "patch": patch}})
            .to_string()
        };
        let r = response(review(json!([91, 93])).as_bytes(), "u", "v1", true).expect("decodes");
        assert_eq!(r.patch.as_deref(), Some(&b"[]"[..]));
        let err = response(review(json!([91, 300])).as_bytes(), "u", "v1", true).expect_err("bad");
        assert!(err.contains("not a byte"), "{err}");
    }
}
