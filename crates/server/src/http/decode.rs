//! Request decoding: bodies into objects (JSON or protobuf), patch types, and the query and
//! body into write and delete options.

use bytes::Bytes;
use http::HeaderMap;
use serde_json::Value;

use rkcm_apimachinery::catalog::ResourceInfo;
use rkcm_apimachinery::patch::PatchType;

use crate::error::{ApiError, ApiResult};
use crate::http::field_validation::{check_fields, field_validation, remove_path, Decoding};
use crate::http::params::Params;
use crate::rest::{DeleteOptions, Resources, WriteOptions};
use rkcm_protobuf as protobuf;

/// Decodes a JSON body (400 when malformed, 415 for media types other than JSON).
pub fn decode_json(headers: &HeaderMap, bytes: &Bytes) -> ApiResult<Value> {
    let ct = headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json");
    let media = ct
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if media == "application/vnd.kubernetes.protobuf" {
        return protobuf::decode(bytes).map_err(|e| match e {
            protobuf::Error::UnknownKind(_) => ApiError::unsupported_media_type(e.to_string()),
            _ => ApiError::bad_request(format!("error decoding request body: {e}")),
        });
    }
    if !(media.is_empty() || media == "application/json" || media == "*/*" || media == "text/plain")
    {
        return Err(ApiError::unsupported_media_type(format!(
            "the body of the request was in an unknown format - accepted media types include: application/json (got {ct})"
        )));
    }
    serde_json::from_slice(bytes)
        .map_err(|e| ApiError::bad_request(format!("error decoding request body: {e}")))
}

/// Decodes an object body and applies `fieldValidation` (Strict → 400, Warn → warnings).
pub fn decode_object(
    resources: &dyn Resources,
    info: &ResourceInfo,
    headers: &HeaderMap,
    bytes: &Bytes,
    params: &Params,
) -> ApiResult<(Value, Vec<String>)> {
    let obj = decode_json(headers, bytes)?;
    if !obj.is_object() {
        return Err(ApiError::bad_request(
            "the request body must be a JSON object",
        ));
    }
    let mode = field_validation(params)?;
    // Protobuf bodies cannot carry unknown or duplicate fields.
    if bytes.starts_with(protobuf::MAGIC) {
        return Ok((obj, Vec::new()));
    }
    let check = check_fields(resources, info, bytes, &obj, mode, Decoding::Object)?;
    let mut obj = obj;
    for path in &check.unknown {
        remove_path(&mut obj, path);
    }
    Ok((obj, check.warnings))
}

/// The patch types kube accepts for `info`, in the order its 415 lists them: built-in kinds
/// take all four (`installer.go`), custom resources all but strategic merge, which needs patch
/// metadata a schema does not carry (`customresource_handler.go`, with `ServerSideApply` on).
pub fn accepted_patch_types(info: &ResourceInfo) -> &'static [PatchType] {
    if rkcm_apimachinery::custom_resources::is_custom(info) {
        &[PatchType::Json, PatchType::Merge, PatchType::Apply]
    } else {
        &[
            PatchType::Json,
            PatchType::Merge,
            PatchType::StrategicMerge,
            PatchType::Apply,
        ]
    }
}

/// The patch type a PATCH of `info` names in its `Content-Type`: 415 for media types that are
/// no patch type of `info`, worded as `negotiation.NewUnsupportedMediaTypeError`.
pub fn patch_type(info: &ResourceInfo, headers: &HeaderMap) -> ApiResult<PatchType> {
    let ct = headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let accepted = accepted_patch_types(info);
    match PatchType::from_content_type(ct) {
        Some(t) if accepted.contains(&t) => Ok(t),
        _ => {
            let list: Vec<&str> = accepted.iter().map(|t| t.content_type()).collect();
            Err(ApiError::unsupported_media_type(format!(
                "the body of the request was in an unknown format - accepted media types include: {}",
                list.join(", ")
            )))
        }
    }
}

/// `dryRun` of a write.
pub fn write_options(params: &Params) -> ApiResult<WriteOptions> {
    Ok(WriteOptions {
        dry_run: params.dry_run()?,
        server_owned: false,
        admission: None,
        field_manager: params.non_empty("fieldManager").map(str::to_string),
    })
}

/// `DeleteOptions` from the query and, when there is one, the body.
pub fn delete_options(
    headers: &HeaderMap,
    params: &Params,
    body: &Bytes,
) -> ApiResult<DeleteOptions> {
    let mut opts = DeleteOptions {
        grace_period_seconds: params.int("gracePeriodSeconds")?,
        propagation_policy: params.non_empty("propagationPolicy").map(str::to_string),
        orphan_dependents: params.non_empty("orphanDependents").map(|v| v == "true"),
        dry_run: params.dry_run()?,
        ..DeleteOptions::default()
    };
    if !body.iter().all(u8::is_ascii_whitespace) {
        let v = decode_json(headers, body)?;
        opts.merge_body(&v)?;
    }
    Ok(opts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rkcm_apimachinery::custom_resources::{self, CustomResource};

    fn with_content_type(ct: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_str(ct).expect("a valid header value"),
        );
        headers
    }

    fn custom_widgets() -> &'static ResourceInfo {
        custom_resources::intern(&CustomResource {
            group: "example.com".into(),
            version: "v1".into(),
            kind: "Widget".into(),
            plural: "widgets".into(),
            singular: "widget".into(),
            namespaced: true,
            ..CustomResource::default()
        })
    }

    #[test]
    fn a_strategic_merge_patch_of_a_custom_resource_is_refused_with_kubes_accepted_list() {
        let err = patch_type(
            custom_widgets(),
            &with_content_type("application/strategic-merge-patch+json"),
        )
        .expect_err("custom resources take no strategic merge patch");
        assert_eq!(err.code, 415);
        assert_eq!(err.reason, "UnsupportedMediaType");
        assert_eq!(
            err.message,
            "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
        );
        for ok in [
            "application/json-patch+json",
            "application/merge-patch+json; charset=utf-8",
            "application/apply-patch+yaml",
        ] {
            assert!(
                patch_type(custom_widgets(), &with_content_type(ok)).is_ok(),
                "{ok}"
            );
        }
    }

    #[test]
    fn built_in_kinds_take_the_four_patch_types_and_list_them_in_kubes_order() {
        let deployments = rkcm_apimachinery::catalog::by_plural("apps", "v1", "deployments")
            .expect("deployments are served");
        assert_eq!(
            patch_type(
                deployments,
                &with_content_type("application/strategic-merge-patch+json")
            )
            .ok(),
            Some(PatchType::StrategicMerge)
        );
        let err = patch_type(deployments, &with_content_type("application/json"))
            .expect_err("plain JSON is no patch type");
        assert_eq!(err.code, 415);
        assert_eq!(
            err.message,
            "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml"
        );
    }
}
