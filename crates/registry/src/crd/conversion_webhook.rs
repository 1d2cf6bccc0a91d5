//! The conversion webhook of a CRD whose `spec.conversion.strategy` is `Webhook`, called as
//! apiextensions-apiserver calls it (`pkg/apiserver/conversion/converter.go`,
//! `webhook_converter.go`): the objects not yet in the desired version go out in one
//! `ConversionReview`, and what comes back is checked (uid, count, apiVersion, kind, name,
//! namespace, uid) and given back the original metadata but for its labels and annotations.
//!
//! One [`Webhook`] is built per CRD when its conversion changes, so its decoded client config
//! and TLS settings are reused from call to call.

use std::time::{Duration, Instant};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::{json, Map, Value};

use rkcm_server::webhook::{Client, ClientConfig};
use rkcm_storage::store::Store;

use crate::meta::{validate_annotations, validate_labels};
use crate::FieldError;

/// How long a call may take (kube's rest client for conversion webhooks: 30 s).
pub const TIMEOUT: Duration = Duration::from_secs(30);

/// A conversion that failed; the message is kube's, and the request fails with it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ConversionFailed(pub String);

/// The `ConversionReview` version sent to a webhook.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReviewVersion {
    /// `apiextensions.k8s.io/v1`: the answer's kind and uid are checked.
    V1,
    /// `apiextensions.k8s.io/v1beta1`: they are not, as kube never checked them.
    V1beta1,
}

impl ReviewVersion {
    fn api_version(self) -> &'static str {
        match self {
            ReviewVersion::V1 => "apiextensions.k8s.io/v1",
            ReviewVersion::V1beta1 => "apiextensions.k8s.io/v1beta1",
        }
    }
}

/// The first version of `conversionReviewVersions` the server speaks
/// (`createConversionReviewObjects`).
pub fn review_version(versions: &[String]) -> Option<ReviewVersion> {
    versions.iter().find_map(|v| match v.as_str() {
        "v1" => Some(ReviewVersion::V1),
        "v1beta1" => Some(ReviewVersion::V1beta1),
        _ => None,
    })
}

/// The conversion webhook of one CRD.
///
/// Shared by the served versions of the CRD and called concurrently; it holds no state
/// besides its client's TLS settings, built once.
#[derive(Debug)]
pub struct Webhook {
    /// The CRD's name (the metric's `crd_name`).
    pub crd_name: String,
    /// `spec.conversion` as written: the webhook is rebuilt when it changes.
    pub spec: Value,
    review_versions: Vec<String>,
    client: Client,
}

impl Webhook {
    /// The webhook of `crd`, when its conversion strategy is `Webhook`.
    pub fn of(crd: &CustomResourceDefinition) -> Option<Self> {
        let conversion = crd.spec.conversion.as_ref()?;
        if conversion.strategy != "Webhook" {
            return None;
        }
        let webhook = conversion.webhook.as_ref();
        let client_config = webhook
            .and_then(|w| w.client_config.as_ref())
            .and_then(|c| serde_json::to_value(c).ok())
            .unwrap_or(Value::Null);
        Some(Self {
            crd_name: crd.metadata.name.clone().unwrap_or_default(),
            spec: serde_json::to_value(conversion).unwrap_or(Value::Null),
            review_versions: webhook
                .map(|w| w.conversion_review_versions.clone())
                .unwrap_or_default(),
            client: Client::new(ClientConfig::decode(&client_config), TIMEOUT),
        })
    }

    /// `objects` in `desired` (an apiVersion), the ones already there untouched and the others
    /// converted in one review (`crConverter.ConvertToVersion`). `gvk` is the input's, as kube
    /// names it in messages (`stable.example.com/v1, Kind=CronTab`, or the list's);
    /// `is_list` says whether the input was a list, which kube names in the inner message.
    pub async fn convert(
        &self,
        store: &Store,
        mut objects: Vec<Value>,
        desired: &str,
        gvk: &str,
        is_list: bool,
    ) -> Result<Vec<Value>, ConversionFailed> {
        let pending = to_convert(&objects, desired);
        if pending.is_empty() {
            return Ok(objects);
        }
        // An object with nothing but its type is converted without a call (`isEmptyUnstructuredObject`).
        if !is_list && objects.len() == 1 && is_empty_object(&objects[0]) {
            objects[0]["apiVersion"] = json!(desired);
            return Ok(objects);
        }
        let sent: Vec<Value> = pending.iter().map(|&i| objects[i].clone()).collect();
        // The webhook converter names the list it was handed, which kube builds without a type
        // for a single object.
        let inner_gvk = if is_list { gvk } else { "/, Kind=" };
        let started = Instant::now();
        let called = self.call(store, &sent, desired, inner_gvk).await;
        rkcm_server::crd_conversion_metrics::observe(
            &self.crd_name,
            version_of(gvk),
            version_of(desired),
            called.is_ok(),
            started.elapsed(),
        );
        let converted = called.map_err(|e| fail(format!("conversion for {gvk} failed: {e}")))?;
        fill_in(objects, &pending, converted, desired, gvk)
    }

    /// One review: POSTed, decoded and checked (`webhookConverter.Convert`); the error is the
    /// cause kube reports.
    async fn call(
        &self,
        store: &Store,
        objects: &[Value],
        desired: &str,
        gvk: &str,
    ) -> Result<Vec<Value>, String> {
        let version = review_version(&self.review_versions)
            .ok_or_else(|| "no supported conversion review versions".to_string())?;
        let uid = uuid::Uuid::new_v4().to_string();
        let review = json!({
            "kind": "ConversionReview",
            "apiVersion": version.api_version(),
            "request": {"uid": uid, "desiredAPIVersion": desired, "objects": objects},
        });
        let body = serde_json::to_vec(&review).map_err(|e| e.to_string())?;
        let failed = |e: String| format!("conversion webhook for {gvk} failed: {e}");
        let answer = self.client.post(store, body).await.map_err(failed)?;
        let answer: Value = serde_json::from_slice(&answer).map_err(|e| failed(e.to_string()))?;
        converted_objects(version, &uid, &answer).map_err(failed)
    }
}

fn fail(message: String) -> ConversionFailed {
    ConversionFailed(message)
}

/// The indexes of the objects not already in `desired` (`getObjectsToConvert`).
pub fn to_convert(objects: &[Value], desired: &str) -> Vec<usize> {
    (0..objects.len())
        .filter(|&i| api_version(&objects[i]) != desired)
        .collect()
}

/// `objects` with the webhook's `converted` objects in the places `pending` names, each
/// checked and given back its original metadata (the second half of
/// `crConverter.ConvertToVersion`).
pub fn fill_in(
    mut objects: Vec<Value>,
    pending: &[usize],
    converted: Vec<Value>,
    desired: &str,
    gvk: &str,
) -> Result<Vec<Value>, ConversionFailed> {
    if converted.len() != pending.len() {
        return Err(fail(format!(
            "conversion for {gvk} returned {} objects, expected {}",
            converted.len(),
            pending.len()
        )));
    }
    for (n, (&i, mut out)) in pending.iter().zip(converted).enumerate() {
        // kube counts from 1 here: the index is advanced before it is reported.
        let index = n + 1;
        let original = &objects[i];
        let got = api_version(&out);
        if got != desired {
            return Err(fail(format!(
                "conversion for {gvk} returned invalid converted object at index {index}: invalid groupVersion (expected {desired}, received {got})"
            )));
        }
        let (expected, got) = (kind(original), kind(&out));
        if expected != got {
            return Err(fail(format!(
                "conversion for {gvk} returned invalid converted object at index {index}: invalid kind (expected {expected}, received {got})"
            )));
        }
        validate_converted(original, &out).map_err(|e| {
            fail(format!(
                "conversion for {gvk} returned invalid converted object at index {index}: {e}"
            ))
        })?;
        restore_object_meta(original, &mut out).map_err(|e| {
            fail(format!(
                "conversion for {gvk} returned invalid metadata in object at index {index}: {e}"
            ))
        })?;
        objects[i] = out;
    }
    Ok(objects)
}

fn api_version(obj: &Value) -> &str {
    obj.get("apiVersion").and_then(Value::as_str).unwrap_or("")
}

fn kind(obj: &Value) -> &str {
    obj.get("kind").and_then(Value::as_str).unwrap_or("")
}

fn meta_str<'a>(obj: &'a Value, field: &str) -> &'a str {
    obj.get("metadata")
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The version of an apiVersion (`stable.example.com/v1` → `v1`) or of a GVK string
/// (`stable.example.com/v1, Kind=CronTab` → `v1`).
fn version_of(s: &str) -> &str {
    let gv = s.split(", Kind=").next().unwrap_or(s);
    gv.rsplit_once('/').map_or(gv, |(_, v)| v)
}

/// Kube's GVK string of an object or list: `group/version, Kind=kind`.
pub fn gvk_string(obj: &Value) -> String {
    let av = api_version(obj);
    let gv = if av.contains('/') {
        av.to_string()
    } else {
        format!("/{av}")
    };
    format!("{gv}, Kind={}", kind(obj))
}

/// An object with no field but `apiVersion` and `kind`.
fn is_empty_object(obj: &Value) -> bool {
    obj.as_object()
        .is_some_and(|m| m.len() == 2 && m.contains_key("apiVersion") && m.contains_key("kind"))
}

/// The converted objects of a webhook's answer, after kube's checks of the answer
/// (`getConvertedObjectsFromResponse`).
pub fn converted_objects(
    version: ReviewVersion,
    uid: &str,
    answer: &Value,
) -> Result<Vec<Value>, String> {
    if version == ReviewVersion::V1 {
        let got = gvk_string(answer);
        let expected = "apiextensions.k8s.io/v1, Kind=ConversionReview";
        if got != expected {
            return Err(format!(
                "expected webhook response of {expected}, got {got}"
            ));
        }
    }
    let response = match answer.get("response") {
        Some(r) if r.is_object() => r,
        _ => return Err("no response provided".to_string()),
    };
    if version == ReviewVersion::V1 {
        let got = response.get("uid").and_then(Value::as_str).unwrap_or("");
        if got != uid {
            return Err(format!("expected response.uid={uid:?}, got {got:?}"));
        }
    }
    let result = response.get("result");
    let status = result
        .and_then(|r| r.get("status"))
        .and_then(Value::as_str)
        .unwrap_or("");
    if status != "Success" {
        let message = result
            .and_then(|r| r.get("message"))
            .and_then(Value::as_str)
            .unwrap_or("");
        if !message.is_empty() {
            return Err(message.to_string());
        }
        return Err(format!(
            "response.result.status was '{status}', not 'Success'"
        ));
    }
    let objects = match response.get("convertedObjects") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items.clone(),
        Some(other) => {
            return Err(format!(
                "json: cannot unmarshal {} into Go struct field ConversionResponse.response.convertedObjects of type []runtime.RawExtension",
                go_json_type(other)
            ))
        }
    };
    for o in &objects {
        if !o.is_object() {
            return Err(format!(
                "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                go_json_type(o)
            ));
        }
    }
    Ok(objects)
}

fn go_json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The converted object keeps the kind, name, namespace and uid of the original
/// (`validateConvertedObject`).
pub fn validate_converted(original: &Value, converted: &Value) -> Result<(), String> {
    let (e, a) = (kind(original), kind(converted));
    if e != a {
        return Err(format!("must have the same kind: {e} != {a}"));
    }
    for (field, what) in [("name", "name"), ("namespace", "namespace"), ("uid", "UID")] {
        let (e, a) = (meta_str(original, field), meta_str(converted, field));
        if e != a {
            return Err(format!("must have the same {what}: {e} != {a}"));
        }
    }
    Ok(())
}

/// The original's metadata in `converted`, with the labels and annotations the webhook
/// answered, validated when they changed (`restoreObjectMeta`).
pub fn restore_object_meta(original: &Value, converted: &mut Value) -> Result<(), String> {
    let converted_meta = converted.get("metadata").cloned();
    let original_meta = original.get("metadata");
    let converted_meta = match (converted_meta, original_meta) {
        (None, None) => return Ok(()),
        (None, Some(_)) => return Err("missing metadata in converted object".to_string()),
        (Some(c), _) => c,
    };
    let Value::Object(converted_meta) = converted_meta else {
        return Err(format!(
            "invalid metadata of type {} in converted object",
            go_type(&converted_meta)
        ));
    };
    let original_meta = match original_meta {
        None => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(other) => {
            return Err(format!(
                "invalid metadata of type {} in input object",
                go_type(other)
            ))
        }
    };
    let mut result = original_meta.clone();
    for field in ["labels", "annotations"] {
        let answered = match converted_meta.get(field) {
            None | Some(Value::Null) => {
                result.remove(field);
                continue;
            }
            Some(Value::Object(m)) => m,
            Some(other) => {
                return Err(format!(
                    "invalid metadata.{field} of type {} in converted object",
                    go_type(other)
                ))
            }
        };
        let before = original_meta.get(field).and_then(Value::as_object);
        let mut changed = before.map_or(0, Map::len) != answered.len();
        for (k, v) in answered {
            if !v.is_string() {
                return Err(format!(
                    "metadata.{field}[{k}] must be a string, but is {} in converted object",
                    go_type(v)
                ));
            }
            if before.and_then(|b| b.get(k)) != Some(v) {
                changed = true;
            }
        }
        if changed {
            let value = Value::Object(answered.clone());
            let errs = if field == "labels" {
                validate_labels(Some(&value), "metadata.labels")
            } else {
                // kube's path says `annotation`.
                validate_annotations(Some(&value), "metadata.annotation")
            };
            if !errs.is_empty() {
                return Err(aggregate(&errs));
            }
        }
        result.insert(field.to_string(), Value::Object(answered.clone()));
    }
    converted["metadata"] = Value::Object(result);
    Ok(())
}

/// Go's `%T` of a decoded JSON value.
fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(_) => "int64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// `ToAggregate().Error()`: one message alone, several in brackets.
fn aggregate(errs: &[FieldError]) -> String {
    let mut messages: Vec<String> = Vec::new();
    for e in errs {
        let m = e.message_with_field();
        if !messages.contains(&m) {
            messages.push(m);
        }
    }
    if messages.len() == 1 {
        messages.remove(0)
    } else {
        format!("[{}]", messages.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn versions(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_first_supported_review_version_is_used() {
        assert_eq!(
            review_version(&versions(&["v1", "v1beta1"])),
            Some(ReviewVersion::V1)
        );
        assert_eq!(
            review_version(&versions(&["v2", "v1beta1", "v1"])),
            Some(ReviewVersion::V1beta1)
        );
        assert_eq!(review_version(&versions(&["v2"])), None);
        assert_eq!(review_version(&[]), None);
    }

    fn answer(uid: &str, objects: Value) -> Value {
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "response": {"uid": uid, "result": {"status": "Success"}, "convertedObjects": objects}})
    }

    #[test]
    fn v1_answers_are_checked_for_their_kind_and_uid() {
        let objs = json!([{"apiVersion": "g/v2", "kind": "K"}]);
        assert_eq!(
            converted_objects(ReviewVersion::V1, "u1", &answer("u1", objs.clone())),
            Ok(vec![json!({"apiVersion": "g/v2", "kind": "K"})])
        );
        assert_eq!(
            converted_objects(ReviewVersion::V1, "u1", &answer("u2", objs.clone())),
            Err(r#"expected response.uid="u1", got "u2""#.to_string())
        );
        let mut beta = answer("u2", objs.clone());
        beta["apiVersion"] = json!("apiextensions.k8s.io/v1beta1");
        assert_eq!(
            converted_objects(ReviewVersion::V1, "u1", &beta),
            Err("expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got apiextensions.k8s.io/v1beta1, Kind=ConversionReview".to_string())
        );
        // v1beta1 answers were never checked for either.
        assert!(converted_objects(ReviewVersion::V1beta1, "u1", &beta).is_ok());
        assert_eq!(
            converted_objects(
                ReviewVersion::V1,
                "u1",
                &json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview"})
            ),
            Err("no response provided".to_string())
        );
    }

    #[test]
    fn a_failed_result_gives_its_message_or_its_status() {
        let mut a = answer("u", json!([]));
        a["response"]["result"] = json!({"status": "Failure", "message": "no way"});
        assert_eq!(
            converted_objects(ReviewVersion::V1, "u", &a),
            Err("no way".to_string())
        );
        a["response"]["result"] = json!({"status": "Failure"});
        assert_eq!(
            converted_objects(ReviewVersion::V1, "u", &a),
            Err("response.result.status was 'Failure', not 'Success'".to_string())
        );
        a["response"]["result"] = json!({});
        assert_eq!(
            converted_objects(ReviewVersion::V1, "u", &a),
            Err("response.result.status was '', not 'Success'".to_string())
        );
    }

    fn cr(version: &str) -> Value {
        json!({"apiVersion": format!("stable.example.com/{version}"), "kind": "CronTab",
            "metadata": {"name": "a", "namespace": "ns", "uid": "1", "resourceVersion": "7",
                         "labels": {"app": "x"}, "annotations": {"note": "y"}},
            "spec": {}})
    }

    #[test]
    fn converted_objects_keep_kind_name_namespace_and_uid() {
        assert_eq!(validate_converted(&cr("v1"), &cr("v2")), Ok(()));
        let mut renamed = cr("v2");
        renamed["metadata"]["name"] = json!("b");
        assert_eq!(
            validate_converted(&cr("v1"), &renamed),
            Err("must have the same name: a != b".to_string())
        );
        let mut moved = cr("v2");
        moved["metadata"]["uid"] = json!("2");
        assert_eq!(
            validate_converted(&cr("v1"), &moved),
            Err("must have the same UID: 1 != 2".to_string())
        );
        let mut other = cr("v2");
        other["kind"] = json!("Other");
        assert_eq!(
            validate_converted(&cr("v1"), &other),
            Err("must have the same kind: CronTab != Other".to_string())
        );
    }

    #[test]
    fn metadata_is_restored_but_for_labels_and_annotations() {
        let mut out = cr("v2");
        out["metadata"]["resourceVersion"] = json!("99");
        out["metadata"]["generation"] = json!(5);
        out["metadata"]["labels"] = json!({"app": "x", "added": "yes"});
        out["metadata"]
            .as_object_mut()
            .expect("object")
            .remove("annotations");
        restore_object_meta(&cr("v1"), &mut out).expect("valid");
        assert_eq!(
            out["metadata"],
            json!({"name": "a", "namespace": "ns", "uid": "1", "resourceVersion": "7",
                   "labels": {"app": "x", "added": "yes"}})
        );
    }

    #[test]
    fn changed_labels_and_annotations_are_validated() {
        let mut out = cr("v2");
        out["metadata"]["labels"] = json!({"bad key!": "x"});
        let err = restore_object_meta(&cr("v1"), &mut out).expect_err("invalid label");
        assert!(
            err.starts_with("metadata.labels: Invalid value: \"bad key!\""),
            "{err}"
        );
        let mut out = cr("v2");
        out["metadata"]["annotations"] = json!({"n": 1});
        assert_eq!(
            restore_object_meta(&cr("v1"), &mut out),
            Err(
                "metadata.annotations[n] must be a string, but is int64 in converted object"
                    .to_string()
            )
        );
        let mut out = cr("v2");
        out["metadata"] = json!("x");
        assert_eq!(
            restore_object_meta(&cr("v1"), &mut out),
            Err("invalid metadata of type string in converted object".to_string())
        );
        let mut out = cr("v2");
        out.as_object_mut().expect("object").remove("metadata");
        assert_eq!(
            restore_object_meta(&cr("v1"), &mut out),
            Err("missing metadata in converted object".to_string())
        );
    }

    #[test]
    fn only_objects_in_another_version_are_sent_and_answers_fill_their_places() {
        let objects = vec![cr("v1"), cr("v2"), cr("v1")];
        let pending = to_convert(&objects, "stable.example.com/v2");
        assert_eq!(pending, [0, 2]);
        let gvk = "stable.example.com/v1, Kind=CronTabList";
        let mut second = cr("v2");
        second["spec"] = json!({"converted": true});
        let filled = fill_in(
            objects.clone(),
            &pending,
            vec![cr("v2"), second.clone()],
            "stable.example.com/v2",
            gvk,
        )
        .expect("valid answer");
        assert_eq!(filled, vec![cr("v2"), cr("v2"), second]);
        assert_eq!(
            fill_in(
                objects.clone(),
                &pending,
                vec![cr("v2")],
                "stable.example.com/v2",
                gvk
            ),
            Err(ConversionFailed(format!(
                "conversion for {gvk} returned 1 objects, expected 2"
            )))
        );
        // kube reports the index counted from 1.
        assert_eq!(
            fill_in(objects.clone(), &pending, vec![cr("v2"), cr("v3")], "stable.example.com/v2", gvk),
            Err(ConversionFailed(format!(
                "conversion for {gvk} returned invalid converted object at index 2: invalid groupVersion (expected stable.example.com/v2, received stable.example.com/v3)"
            )))
        );
        let mut renamed = cr("v2");
        renamed["metadata"]["namespace"] = json!("other");
        assert_eq!(
            fill_in(objects.clone(), &pending, vec![renamed, cr("v2")], "stable.example.com/v2", gvk),
            Err(ConversionFailed(format!(
                "conversion for {gvk} returned invalid converted object at index 1: must have the same namespace: ns != other"
            )))
        );
        let mut unlabelled = cr("v2");
        unlabelled["metadata"]["labels"] = json!(["x"]);
        assert_eq!(
            fill_in(objects, &pending, vec![unlabelled, cr("v2")], "stable.example.com/v2", gvk),
            Err(ConversionFailed(format!(
                "conversion for {gvk} returned invalid metadata in object at index 1: invalid metadata.labels of type []interface {{}} in converted object"
            )))
        );
    }

    #[test]
    fn versions_and_gvks_are_named_as_kube_names_them() {
        assert_eq!(gvk_string(&cr("v1")), "stable.example.com/v1, Kind=CronTab");
        assert_eq!(version_of("stable.example.com/v1, Kind=CronTab"), "v1");
        assert_eq!(version_of("stable.example.com/v2"), "v2");
        assert!(is_empty_object(&json!({"apiVersion": "a/v1", "kind": "K"})));
        assert!(!is_empty_object(&cr("v1")));
    }
}
