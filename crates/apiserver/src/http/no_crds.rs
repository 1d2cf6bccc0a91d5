//! The one CustomResourceDefinition request answered: listing them, which gives no items.
//!
//! kubectl validates the kinds that have no PATCH operation in the OpenAPI (Binding,
//! TokenReview, Eviction, the access reviews) by asking whether they are CRDs: it lists
//! `apiextensions.k8s.io/v1` `customresourcedefinitions` and fails with "failed to check CRD"
//! when that list fails (`cli-runtime`'s `QueryParamVerifier`, kube-apiserver answers it with its
//! CRDs). The CRD API itself is not served: the group is not in discovery and every other
//! request on it is 404.

use axum::response::Response;
use http::{Method, StatusCode};
use serde_json::json;

use crate::http::encode::json_value;

/// The path kubectl's CRD finder lists.
pub const CRD_LIST_PATH: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

/// Whether `method` `path` is the list of CRDs.
pub fn is_crd_list(method: &Method, path: &str) -> bool {
    method == Method::GET && path.trim_end_matches('/') == CRD_LIST_PATH
}

/// An empty `CustomResourceDefinitionList` at `revision`.
pub fn empty_list(revision: i64) -> Response {
    json_value(
        StatusCode::OK,
        &json!({
            "kind": "CustomResourceDefinitionList",
            "apiVersion": "apiextensions.k8s.io/v1",
            "metadata": {"resourceVersion": revision.to_string()},
            "items": [],
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_list_of_crds_is_answered() {
        assert!(is_crd_list(&Method::GET, CRD_LIST_PATH));
        assert!(is_crd_list(
            &Method::GET,
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
        ));
        assert!(!is_crd_list(&Method::POST, CRD_LIST_PATH));
        assert!(!is_crd_list(
            &Method::GET,
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/foos.example.com"
        ));
        assert!(!is_crd_list(&Method::GET, "/apis/apiextensions.k8s.io/v1"));
    }
}
