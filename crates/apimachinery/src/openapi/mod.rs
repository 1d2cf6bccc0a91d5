//! OpenAPI documents of the served resources, as kubectl fetches them.
//!
//! - `/openapi/v2`: one swagger 2.0 document ([`v2`]).
//! - `/openapi/v3`: an index of group versions ([`v3_index`]) pointing at one document per group
//!   version ([`v3_document`]), each URL carrying a content hash so clients can cache it.
//!
//! kubectl reads the PATCH operations (with `x-kubernetes-group-version-kind`) to learn that the
//! server validates fields (`fieldValidation`), and `kubectl explain` renders the schemas, whose
//! descriptions come from k8s-openapi. Documents are generated once, on first use, as JSON; the
//! v2 document also in gnostic's protobuf form ([`v2_protobuf`]), which kubectl ≤ 1.28 fetches
//! for client-side validation and for the patches of `kubectl apply`.

pub mod definitions;
mod operations;
mod v2;
mod v2_protobuf;
mod v3;

use std::sync::OnceLock;

use serde_json::{json, Map, Value};

/// The Kubernetes version the documents describe (the API types are those of k8s-openapi v1_33).
pub const KUBE_VERSION: &str = "v1.33.0";

/// Content types a PATCH operation consumes.
const PATCH_CONTENT_TYPES: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
];

/// Content types operations produce.
const RESPONSE_CONTENT_TYPES: &[&str] = &["application/json", "application/yaml"];

struct Documents {
    v2: Vec<u8>,
    v2_protobuf: Vec<u8>,
    v3_index: Vec<u8>,
    /// `(key, hash, document)`, key like `apis/apps/v1`.
    v3: Vec<(String, String, Vec<u8>)>,
}

static DOCUMENTS: OnceLock<Documents> = OnceLock::new();

fn documents() -> &'static Documents {
    DOCUMENTS.get_or_init(|| {
        let v2_doc = v2::document();
        let v2 = to_bytes(&v2_doc);
        let v2_protobuf = v2_protobuf::document(&v2_doc);
        let mut v3 = Vec::new();
        let mut index = Map::new();
        for gv in operations::group_versions() {
            let doc = to_bytes(&v3::document(&gv));
            let hash = content_hash(&doc);
            index.insert(
                gv.key.clone(),
                json!({"serverRelativeURL": format!("/openapi/v3/{}?hash={hash}", gv.key)}),
            );
            v3.push((gv.key, hash, doc));
        }
        Documents {
            v2,
            v2_protobuf,
            v3_index: to_bytes(&json!({"paths": index})),
            v3,
        }
    })
}

fn to_bytes(v: &Value) -> Vec<u8> {
    // Serializing a `Value` cannot fail: its keys are strings.
    serde_json::to_vec(v).expect("a JSON value always serializes")
}

/// A stable content hash (two FNV-1a 64 passes with different offsets), upper-case hex like kube's.
fn content_hash(bytes: &[u8]) -> String {
    let fnv = |offset: u64| {
        bytes.iter().fold(offset, |h, b| {
            (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
        })
    };
    format!(
        "{:016X}{:016X}",
        fnv(0xcbf2_9ce4_8422_2325),
        fnv(0x8422_2325_cbf2_9ce4)
    )
}

/// The swagger 2.0 document served at `/openapi/v2` (JSON).
pub fn v2() -> &'static [u8] {
    &documents().v2
}

/// The swagger 2.0 document in gnostic's protobuf encoding (`openapi.v2.Document`), served at
/// `/openapi/v2` for `Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf`.
pub fn v2_protobuf() -> &'static [u8] {
    &documents().v2_protobuf
}

/// The gnostic protobuf encoding of a swagger 2.0 JSON document built at run time (the built-in
/// document extended with custom resources); `None` when `json` is not JSON.
pub fn v2_protobuf_of(json: &[u8]) -> Option<Vec<u8>> {
    let doc: Value = serde_json::from_slice(json).ok()?;
    Some(v2_protobuf::document(&doc))
}

/// The index served at `/openapi/v3`: `{"paths":{"apis/apps/v1":{"serverRelativeURL":...}}}`.
pub fn v3_index() -> &'static [u8] {
    &documents().v3_index
}

fn v3_entry(path: &str) -> Option<&'static (String, String, Vec<u8>)> {
    let path = path.split('?').next().unwrap_or_default();
    let path = path.trim_start_matches('/');
    let path = path.strip_prefix("openapi/v3/").unwrap_or(path);
    let path = path.trim_end_matches('/');
    documents().v3.iter().find(|(key, _, _)| key == path)
}

/// The v3 document of a group version; `path` is `api/v1` or `apis/<group>/<version>`, with or
/// without a leading `/openapi/v3/` and a `?hash=` query.
pub fn v3_document(path: &str) -> Option<&'static [u8]> {
    v3_entry(path).map(|(_, _, doc)| doc.as_slice())
}

/// The content hash in the index URL of a group version's v3 document, usable as an ETag.
pub fn v3_hash(path: &str) -> Option<&'static str> {
    v3_entry(path).map(|(_, hash, _)| hash.as_str())
}

/// The v3 document of a group version of custom resources (`/openapi/v3/apis/<group>/<version>`):
/// for each resource, its paths and the definition `definition` named `name`
/// (`com.example.stable.v1.CronTab`, from the CRD's schema), plus a list definition and the
/// built-in definitions they refer to.
pub fn custom_resource_v3_document(
    group: &str,
    version: &str,
    resources: &[(&'static crate::catalog::ResourceInfo, String, Value)],
) -> Vec<u8> {
    to_bytes(&v3::custom_document(group, version, resources))
}

/// The content hash of a document, as the `/openapi/v3` index puts it in URLs.
pub fn hash(bytes: &[u8]) -> String {
    content_hash(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// kubectl's client-side `apply` sends a strategic merge patch when the PATCH operation of
    /// the kind consumes one; custom resources refuse it, so their operations must not list it.
    #[test]
    fn custom_resource_patches_consume_no_strategic_merge_patch() {
        let info = crate::custom_resources::intern(&crate::custom_resources::CustomResource {
            group: "stable.example.com".into(),
            version: "v1".into(),
            kind: "CronTab".into(),
            plural: "crontabs".into(),
            singular: "crontab".into(),
            namespaced: true,
            ..Default::default()
        });
        let doc = parse(&custom_resource_v3_document(
            "stable.example.com",
            "v1",
            &[(
                info,
                "com.example.stable.v1.CronTab".into(),
                json!({"type": "object"}),
            )],
        ));
        let mut patches = 0;
        for item in doc["paths"].as_object().expect("paths").values() {
            if let Some(content) = item.pointer("/patch/requestBody/content") {
                patches += 1;
                let types: Vec<&String> = content.as_object().expect("content").keys().collect();
                assert_eq!(
                    types,
                    [
                        "application/json-patch+json",
                        "application/merge-patch+json",
                        "application/apply-patch+yaml"
                    ]
                );
            }
        }
        assert!(patches > 0, "the object's path has a PATCH operation");
        // Built-in kinds keep strategic merge patch.
        let apps = parse(v3_document("apis/apps/v1").expect("apps/v1"));
        let deployment = &apps["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"];
        assert!(deployment
            .pointer("/patch/requestBody/content/application~1strategic-merge-patch+json")
            .is_some());
    }

    fn parse(bytes: &[u8]) -> Value {
        serde_json::from_slice(bytes).expect("valid JSON")
    }

    /// What kubectl's query param verifier (query_param_verifier_v3.go) checks.
    fn patch_supports_field_validation(
        doc: &Value,
        group: &str,
        version: &str,
        kind: &str,
    ) -> bool {
        doc["paths"].as_object().unwrap().values().any(|item| {
            let Some(patch) = item.get("patch") else {
                return false;
            };
            let gvk = &patch["x-kubernetes-group-version-kind"];
            gvk["group"] == group
                && gvk["version"] == version
                && gvk["kind"] == kind
                && patch["parameters"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|p| p["name"] == "fieldValidation" && p["in"] == "query")
        })
    }

    #[test]
    fn v3_index_points_at_every_group_version_with_a_hash() {
        let index = parse(v3_index());
        let url = index["paths"]["apis/apps/v1"]["serverRelativeURL"]
            .as_str()
            .unwrap();
        let hash = v3_hash("apis/apps/v1").unwrap();
        assert_eq!(url, format!("/openapi/v3/apis/apps/v1?hash={hash}"));
        assert!(index["paths"]["api/v1"].is_object());
        assert!(v3_document(url).is_some());
        assert!(v3_document("/openapi/v3/api/v1").is_some());
        assert!(v3_document("apis/batch/v1").is_some());
        assert!(v3_document("apis/resource.k8s.io/v1beta1").is_none());
    }

    #[test]
    fn apps_v1_document_has_deployment_with_gvk_and_patch_field_validation() {
        let doc = parse(v3_document("apis/apps/v1").unwrap());
        assert_eq!(doc["openapi"], "3.0.0");
        let deployment = &doc["components"]["schemas"]["io.k8s.api.apps.v1.Deployment"];
        assert_eq!(
            deployment["x-kubernetes-group-version-kind"][0]["kind"],
            "Deployment"
        );
        assert!(deployment["properties"]["spec"]["description"].is_string());
        for kind in ["Deployment", "ReplicaSet", "ControllerRevision"] {
            assert!(
                patch_supports_field_validation(&doc, "apps", "v1", kind),
                "{kind}"
            );
        }
        // Every reference in the document resolves inside it.
        let text = String::from_utf8(v3_document("apis/apps/v1").unwrap().to_vec()).unwrap();
        for part in text.split("\"$ref\":\"#/components/schemas/").skip(1) {
            let name = &part[..part.find('"').unwrap()];
            assert!(doc["components"]["schemas"].get(name).is_some(), "{name}");
        }
    }

    #[test]
    fn core_document_covers_pods_and_nodes() {
        let doc = parse(v3_document("api/v1").unwrap());
        for kind in [
            "Pod",
            "Node",
            "Namespace",
            "Service",
            "ConfigMap",
            "Event",
            "ReplicationController",
        ] {
            assert!(
                patch_supports_field_validation(&doc, "", "v1", kind),
                "{kind}"
            );
        }
        let containers =
            &doc["components"]["schemas"]["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"];
        assert_eq!(containers["x-kubernetes-patch-merge-key"], "name");
    }

    #[test]
    fn v2_document_uses_definitions_and_has_patch_operations() {
        let doc = parse(v2());
        assert_eq!(doc["swagger"], "2.0");
        let defs = doc["definitions"].as_object().unwrap();
        assert!(defs.contains_key("io.k8s.api.apps.v1.Deployment"));
        let text = String::from_utf8(v2().to_vec()).unwrap();
        assert!(!text.contains("#/components/schemas/"));
        let patch =
            &doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"];
        assert_eq!(
            patch["x-kubernetes-group-version-kind"]["kind"],
            "Deployment"
        );
        assert!(patch["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "fieldValidation"));
        assert_eq!(
            defs["io.k8s.api.apps.v1.Deployment"]["properties"]["spec"]["$ref"],
            "#/definitions/io.k8s.api.apps.v1.DeploymentSpec"
        );
    }
}
