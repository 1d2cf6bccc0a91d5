//! PATCH bodies: JSON patch, JSON merge patch and strategic merge patch, applied to JSON objects.
//!
//! Mirrors the patch handling of `k8s.io/apiserver/pkg/endpoints/handlers/patch.go`: the server
//! picks the algorithm from the request's `Content-Type`, applies it to the stored object's JSON
//! and decodes the result. Server-side apply (`application/apply-patch+yaml`) needs the
//! object's managers and is done by [`crate::apply::FieldManager`].

mod json;
mod merge;
pub mod merge_keys;
mod strategic;

use serde_json::Value;

pub use strategic::{strategic_merge, PatchMeta};

/// The kind of PATCH body, chosen by the request's `Content-Type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatchType {
    /// RFC 6902 JSON patch (`application/json-patch+json`).
    Json,
    /// RFC 7386 JSON merge patch (`application/merge-patch+json`).
    Merge,
    /// Kubernetes strategic merge patch (`application/strategic-merge-patch+json`).
    StrategicMerge,
    /// Server-side apply (`application/apply-patch+yaml`).
    Apply,
}

impl PatchType {
    /// The patch type for a `Content-Type` header value; media type parameters are ignored.
    pub fn from_content_type(ct: &str) -> Option<PatchType> {
        let media = ct.split(';').next().unwrap_or_default().trim();
        match media.to_ascii_lowercase().as_str() {
            "application/json-patch+json" => Some(PatchType::Json),
            "application/merge-patch+json" => Some(PatchType::Merge),
            "application/strategic-merge-patch+json" => Some(PatchType::StrategicMerge),
            "application/apply-patch+yaml" | "application/apply-patch+cbor" => {
                Some(PatchType::Apply)
            }
            _ => None,
        }
    }

    /// The media type kube expects for this patch type.
    pub fn content_type(self) -> &'static str {
        match self {
            PatchType::Json => "application/json-patch+json",
            PatchType::Merge => "application/merge-patch+json",
            PatchType::StrategicMerge => "application/strategic-merge-patch+json",
            PatchType::Apply => "application/apply-patch+yaml",
        }
    }
}

/// Why a patch could not be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatchError {
    /// The patch body is not valid for its type (kube answers 400 Bad Request).
    #[error("{0}")]
    Malformed(String),
    /// The patch is well formed but cannot be applied to this object: a JSON patch `test`
    /// failed or a path does not exist (kube answers 422 Unprocessable Entity).
    #[error("{0}")]
    Failed(String),
    /// The patch type is not supported for this object (kube answers 415 Unsupported Media Type).
    #[error("{0}")]
    Unsupported(String),
}

impl PatchError {
    /// The HTTP status code kube answers with for this error.
    pub fn status_code(&self) -> u16 {
        match self {
            PatchError::Malformed(_) => 400,
            PatchError::Failed(_) => 422,
            PatchError::Unsupported(_) => 415,
        }
    }
}

/// Applies `patch` of `patch_type` to `original`, an object of `api_version`/`kind`.
///
/// Strategic merge patches need the kind's patch metadata (merge keys and strategies); kinds the
/// server does not know are refused as kube refuses strategic merge patches for custom resources.
pub fn apply(
    patch_type: PatchType,
    original: &Value,
    patch: &[u8],
    api_version: &str,
    kind: &str,
) -> Result<Value, PatchError> {
    match patch_type {
        PatchType::Json => json::apply(original, patch),
        PatchType::Merge => merge::apply(original, patch),
        PatchType::StrategicMerge => {
            let patch: Value = serde_json::from_slice(patch)
                .map_err(|e| PatchError::Malformed(format!("invalid JSON patch body: {e}")))?;
            let root = crate::openapi::definitions::root_definition(api_version, kind).ok_or_else(
                || {
                    PatchError::Unsupported(format!(
                        "strategic merge patch is not supported for {api_version}, Kind={kind}"
                    ))
                },
            )?;
            strategic_merge(original, &patch, PatchMeta::for_definition(root))
        }
        // An apply needs the object's managers and a field manager: the API server runs
        // `crate::apply::FieldManager` for the kinds it applies, and only the others get here
        // (the `/scale` view, kinds served in a version other than their storage version).
        PatchType::Apply => Err(PatchError::Unsupported(format!(
            "server-side apply is not supported for {api_version}, Kind={kind}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn content_types_map_to_patch_types_ignoring_parameters() {
        assert_eq!(
            PatchType::from_content_type("application/json-patch+json"),
            Some(PatchType::Json)
        );
        assert_eq!(
            PatchType::from_content_type("application/merge-patch+json; charset=utf-8"),
            Some(PatchType::Merge)
        );
        assert_eq!(
            PatchType::from_content_type("application/strategic-merge-patch+json"),
            Some(PatchType::StrategicMerge)
        );
        assert_eq!(
            PatchType::from_content_type("application/apply-patch+yaml"),
            Some(PatchType::Apply)
        );
        assert_eq!(PatchType::from_content_type("application/json"), None);
    }

    #[test]
    fn strategic_merge_of_unknown_kind_is_unsupported() {
        let err = apply(
            PatchType::StrategicMerge,
            &json!({}),
            b"{}",
            "example.com/v1",
            "Widget",
        )
        .unwrap_err();
        assert_eq!(err.status_code(), 415);
    }

    #[test]
    fn apply_patches_are_unsupported() {
        let err = apply(PatchType::Apply, &json!({}), b"{}", "v1", "Pod").unwrap_err();
        assert!(matches!(err, PatchError::Unsupported(_)));
    }

    #[test]
    fn rollout_restart_merges_template_annotations() {
        let original = json!({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},
            "spec":{"template":{"metadata":{"annotations":{"a":"1"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}});
        let patch = br#"{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":"2026-01-01T00:00:00Z"}}}}}"#;
        let out = apply(
            PatchType::StrategicMerge,
            &original,
            patch,
            "apps/v1",
            "Deployment",
        )
        .unwrap();
        assert_eq!(
            out["spec"]["template"]["metadata"]["annotations"],
            json!({"a":"1","kubectl.kubernetes.io/restartedAt":"2026-01-01T00:00:00Z"})
        );
        assert_eq!(
            out["spec"]["template"]["spec"]["containers"][0]["image"],
            "i"
        );
    }

    #[test]
    fn kubectl_apply_patch_changes_image_and_deletes_env_and_container() {
        // The patch kubectl 1.32 computed from this server's OpenAPI v3 document for
        // `kubectl apply` dropping env A and container "side" and bumping the image.
        let live = json!({"apiVersion":"apps/v1","kind":"Deployment",
            "metadata":{"name":"web","namespace":"default","uid":"u1","resourceVersion":"5"},
            "spec":{"replicas":1,"selector":{"matchLabels":{"app":"web"}},
                "template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[
                    {"name":"c","image":"nginx:1.24","env":[{"name":"A","value":"1"}]},
                    {"name":"side","image":"busybox"}]}}}});
        let patch = br#"{"metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{}\n"}},"spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"c"}],"containers":[{"$setElementOrder/env":[{"name":"B"}],"env":[{"name":"B","value":"2"},{"$patch":"delete","name":"A"}],"image":"nginx:1.25","name":"c"},{"$patch":"delete","name":"side"}]}}}}"#;
        let out = apply(
            PatchType::StrategicMerge,
            &live,
            patch,
            "apps/v1",
            "Deployment",
        )
        .unwrap();
        assert_eq!(
            out["spec"]["template"]["spec"]["containers"],
            json!([{"name":"c","image":"nginx:1.25","env":[{"name":"B","value":"2"}]}])
        );
        assert_eq!(out["spec"]["replicas"], 1);
        assert_eq!(
            out["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"],
            "{}\n"
        );
    }
}
