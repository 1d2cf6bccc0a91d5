//! OpenAPI schemas of the served kinds, generated once from k8s-openapi's `JsonSchema` impls.
//!
//! Definitions are named like kube's (`io.k8s.api.apps.v1.Deployment`) and refer to each other
//! with `#/components/schemas/<name>`. After generation they are annotated with what the Go
//! types carry in struct tags: `x-kubernetes-patch-strategy` / `x-kubernetes-patch-merge-key`
//! (from [`crate::patch::merge_keys`]) and `x-kubernetes-group-version-kind` on top-level kinds.
//! List kinds (`PodList`, ...) are synthesized because k8s-openapi has no schema for them.

use std::sync::OnceLock;

use k8s_openapi::schemars::generate::{SchemaGenerator, SchemaSettings};
use k8s_openapi::schemars::JsonSchema;
use serde_json::{json, Map, Value};

use crate::patch::merge_keys;

/// The `$ref` prefix of the generated schemas.
pub const REF_PREFIX: &str = "#/components/schemas/";

/// A top-level kind with its OpenAPI definition name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KindDefinition {
    /// API group, empty for core.
    pub group: &'static str,
    /// API version.
    pub version: &'static str,
    /// Kind.
    pub kind: &'static str,
    /// OpenAPI definition name, e.g. `io.k8s.api.apps.v1.Deployment`.
    pub definition: String,
    /// Definition name of the list kind, e.g. `io.k8s.api.apps.v1.DeploymentList`, when served.
    pub list_definition: Option<String>,
}

struct Generated {
    schemas: Map<String, Value>,
    kinds: Vec<KindDefinition>,
}

static GENERATED: OnceLock<Generated> = OnceLock::new();

fn generated() -> &'static Generated {
    GENERATED.get_or_init(generate)
}

/// All generated definitions by name.
pub fn definitions() -> &'static Map<String, Value> {
    &generated().schemas
}

/// Every top-level kind with a definition: the catalog's kinds and the kinds of subresources.
pub fn kinds() -> &'static [KindDefinition] {
    &generated().kinds
}

/// The definition name of the kind `api_version`/`kind`, if it has a schema.
pub fn root_definition(api_version: &str, kind: &str) -> Option<&'static str> {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    kinds()
        .iter()
        .find(|k| k.group == group && k.version == version && k.kind == kind)
        .map(|k| k.definition.as_str())
}

/// The schema a `$ref` (`#/components/schemas/<name>` or `#/definitions/<name>`) points to.
pub fn resolve_ref(reference: &str) -> Option<&'static Value> {
    let name = reference
        .strip_prefix(REF_PREFIX)
        .or_else(|| reference.strip_prefix("#/definitions/"))?;
    definitions().get(name)
}

/// Follows `$ref` and single-element `allOf` wrappers to the schema that describes a value.
/// Returns `None` for a reference to an unknown definition (or a reference cycle of wrappers).
pub fn resolve(mut node: &'static Value) -> Option<&'static Value> {
    for _ in 0..16 {
        if let Some(r) = node.get("$ref").and_then(Value::as_str) {
            node = resolve_ref(r)?;
        } else if let Some([inner]) = node
            .get("allOf")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
        {
            node = inner;
        } else {
            return Some(node);
        }
    }
    None
}

fn list_name(definition: &str) -> String {
    format!("{definition}List")
}

fn generate() -> Generated {
    let mut gen: SchemaGenerator = SchemaSettings::openapi3()
        .with(|s| s.meta_schema = None)
        .into_generator();
    let mut kinds = Vec::new();

    macro_rules! kind {
        ($group:literal, $version:literal, $kind:literal, $ty:ty, list = $list:literal) => {{
            gen.subschema_for::<$ty>();
            let definition = <$ty as JsonSchema>::schema_name().into_owned();
            let list_definition = $list.then(|| list_name(&definition));
            kinds.push(KindDefinition {
                group: $group,
                version: $version,
                kind: $kind,
                definition,
                list_definition,
            });
        }};
    }
    use k8s_openapi::api::{
        admissionregistration, apps, authentication, authorization, autoscaling, batch,
        certificates, coordination, core, discovery, events, flowcontrol, networking, node, policy,
        rbac, scheduling, storage,
    };
    use k8s_openapi::apimachinery::pkg::apis::meta;
    use k8s_openapi::kube_aggregator::pkg::apis::apiregistration;
    // The served kinds, in catalog order.
    kind!("", "v1", "Binding", core::v1::Binding, list = false);
    kind!(
        "",
        "v1",
        "ComponentStatus",
        core::v1::ComponentStatus,
        list = true
    );
    kind!("", "v1", "ConfigMap", core::v1::ConfigMap, list = true);
    kind!("", "v1", "Endpoints", core::v1::Endpoints, list = true);
    kind!("", "v1", "Event", core::v1::Event, list = true);
    kind!("", "v1", "LimitRange", core::v1::LimitRange, list = true);
    kind!("", "v1", "Namespace", core::v1::Namespace, list = true);
    kind!("", "v1", "Node", core::v1::Node, list = true);
    kind!(
        "",
        "v1",
        "PersistentVolumeClaim",
        core::v1::PersistentVolumeClaim,
        list = true
    );
    kind!(
        "",
        "v1",
        "PersistentVolume",
        core::v1::PersistentVolume,
        list = true
    );
    kind!("", "v1", "Pod", core::v1::Pod, list = true);
    kind!("", "v1", "PodTemplate", core::v1::PodTemplate, list = true);
    kind!(
        "",
        "v1",
        "ReplicationController",
        core::v1::ReplicationController,
        list = true
    );
    kind!(
        "",
        "v1",
        "ResourceQuota",
        core::v1::ResourceQuota,
        list = true
    );
    kind!("", "v1", "Secret", core::v1::Secret, list = true);
    kind!(
        "",
        "v1",
        "ServiceAccount",
        core::v1::ServiceAccount,
        list = true
    );
    kind!("", "v1", "Service", core::v1::Service, list = true);
    kind!(
        "apiregistration.k8s.io",
        "v1",
        "APIService",
        apiregistration::v1::APIService,
        list = true
    );
    kind!(
        "apps",
        "v1",
        "ControllerRevision",
        apps::v1::ControllerRevision,
        list = true
    );
    kind!("apps", "v1", "DaemonSet", apps::v1::DaemonSet, list = true);
    kind!(
        "apps",
        "v1",
        "Deployment",
        apps::v1::Deployment,
        list = true
    );
    kind!(
        "apps",
        "v1",
        "ReplicaSet",
        apps::v1::ReplicaSet,
        list = true
    );
    kind!(
        "apps",
        "v1",
        "StatefulSet",
        apps::v1::StatefulSet,
        list = true
    );
    kind!(
        "events.k8s.io",
        "v1",
        "Event",
        events::v1::Event,
        list = true
    );
    kind!(
        "authentication.k8s.io",
        "v1",
        "SelfSubjectReview",
        authentication::v1::SelfSubjectReview,
        list = false
    );
    kind!(
        "authentication.k8s.io",
        "v1",
        "TokenReview",
        authentication::v1::TokenReview,
        list = false
    );
    kind!(
        "authorization.k8s.io",
        "v1",
        "LocalSubjectAccessReview",
        authorization::v1::LocalSubjectAccessReview,
        list = false
    );
    kind!(
        "authorization.k8s.io",
        "v1",
        "SelfSubjectAccessReview",
        authorization::v1::SelfSubjectAccessReview,
        list = false
    );
    kind!(
        "authorization.k8s.io",
        "v1",
        "SelfSubjectRulesReview",
        authorization::v1::SelfSubjectRulesReview,
        list = false
    );
    kind!(
        "authorization.k8s.io",
        "v1",
        "SubjectAccessReview",
        authorization::v1::SubjectAccessReview,
        list = false
    );
    kind!(
        "autoscaling",
        "v2",
        "HorizontalPodAutoscaler",
        autoscaling::v2::HorizontalPodAutoscaler,
        list = true
    );
    kind!(
        "autoscaling",
        "v1",
        "HorizontalPodAutoscaler",
        autoscaling::v1::HorizontalPodAutoscaler,
        list = true
    );
    kind!("batch", "v1", "CronJob", batch::v1::CronJob, list = true);
    kind!("batch", "v1", "Job", batch::v1::Job, list = true);
    kind!(
        "certificates.k8s.io",
        "v1",
        "CertificateSigningRequest",
        certificates::v1::CertificateSigningRequest,
        list = true
    );
    kind!(
        "networking.k8s.io",
        "v1",
        "IngressClass",
        networking::v1::IngressClass,
        list = true
    );
    kind!(
        "networking.k8s.io",
        "v1",
        "Ingress",
        networking::v1::Ingress,
        list = true
    );
    kind!(
        "networking.k8s.io",
        "v1",
        "IPAddress",
        networking::v1::IPAddress,
        list = true
    );
    kind!(
        "networking.k8s.io",
        "v1",
        "NetworkPolicy",
        networking::v1::NetworkPolicy,
        list = true
    );
    kind!(
        "networking.k8s.io",
        "v1",
        "ServiceCIDR",
        networking::v1::ServiceCIDR,
        list = true
    );
    kind!(
        "policy",
        "v1",
        "PodDisruptionBudget",
        policy::v1::PodDisruptionBudget,
        list = true
    );
    kind!(
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRoleBinding",
        rbac::v1::ClusterRoleBinding,
        list = true
    );
    kind!(
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRole",
        rbac::v1::ClusterRole,
        list = true
    );
    kind!(
        "rbac.authorization.k8s.io",
        "v1",
        "RoleBinding",
        rbac::v1::RoleBinding,
        list = true
    );
    kind!(
        "rbac.authorization.k8s.io",
        "v1",
        "Role",
        rbac::v1::Role,
        list = true
    );
    kind!(
        "storage.k8s.io",
        "v1",
        "CSIDriver",
        storage::v1::CSIDriver,
        list = true
    );
    kind!(
        "storage.k8s.io",
        "v1",
        "CSINode",
        storage::v1::CSINode,
        list = true
    );
    kind!(
        "storage.k8s.io",
        "v1",
        "CSIStorageCapacity",
        storage::v1::CSIStorageCapacity,
        list = true
    );
    kind!(
        "storage.k8s.io",
        "v1",
        "StorageClass",
        storage::v1::StorageClass,
        list = true
    );
    kind!(
        "storage.k8s.io",
        "v1",
        "VolumeAttachment",
        storage::v1::VolumeAttachment,
        list = true
    );
    kind!(
        "admissionregistration.k8s.io",
        "v1",
        "MutatingWebhookConfiguration",
        admissionregistration::v1::MutatingWebhookConfiguration,
        list = true
    );
    kind!(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingAdmissionPolicy",
        admissionregistration::v1::ValidatingAdmissionPolicy,
        list = true
    );
    kind!(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingAdmissionPolicyBinding",
        admissionregistration::v1::ValidatingAdmissionPolicyBinding,
        list = true
    );
    kind!(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingWebhookConfiguration",
        admissionregistration::v1::ValidatingWebhookConfiguration,
        list = true
    );
    kind!(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
        list = true
    );
    kind!(
        "scheduling.k8s.io",
        "v1",
        "PriorityClass",
        scheduling::v1::PriorityClass,
        list = true
    );
    kind!(
        "coordination.k8s.io",
        "v1",
        "Lease",
        coordination::v1::Lease,
        list = true
    );
    kind!(
        "node.k8s.io",
        "v1",
        "RuntimeClass",
        node::v1::RuntimeClass,
        list = true
    );
    kind!(
        "discovery.k8s.io",
        "v1",
        "EndpointSlice",
        discovery::v1::EndpointSlice,
        list = true
    );
    kind!(
        "flowcontrol.apiserver.k8s.io",
        "v1",
        "FlowSchema",
        flowcontrol::v1::FlowSchema,
        list = true
    );
    kind!(
        "flowcontrol.apiserver.k8s.io",
        "v1",
        "PriorityLevelConfiguration",
        flowcontrol::v1::PriorityLevelConfiguration,
        list = true
    );
    // Kinds exchanged with subresources.
    kind!(
        "authentication.k8s.io",
        "v1",
        "TokenRequest",
        authentication::v1::TokenRequest,
        list = false
    );
    kind!(
        "autoscaling",
        "v1",
        "Scale",
        autoscaling::v1::Scale,
        list = false
    );
    kind!(
        "policy",
        "v1",
        "Eviction",
        policy::v1::Eviction,
        list = false
    );
    kind!(
        "meta.k8s.io",
        "v1",
        "Status",
        meta::v1::Status,
        list = false
    );
    kind!(
        "meta.k8s.io",
        "v1",
        "DeleteOptions",
        meta::v1::DeleteOptions,
        list = false
    );
    gen.subschema_for::<meta::v1::WatchEvent<core::v1::Pod>>();
    gen.subschema_for::<meta::v1::Patch>();

    let mut schemas = gen.take_definitions(true);

    for s in merge_keys::FIELD_STRATEGIES {
        if let Some(Value::Object(prop)) = schemas
            .get_mut(s.definition)
            .and_then(|d| d.pointer_mut(&format!("/properties/{}", s.field)))
        {
            prop.insert("x-kubernetes-patch-strategy".into(), s.strategy.into());
            if let Some(key) = s.merge_key {
                prop.insert("x-kubernetes-patch-merge-key".into(), key.into());
            }
        }
    }

    for k in &kinds {
        let gvk = json!([{"group": k.group, "kind": k.kind, "version": k.version}]);
        if let Some(Value::Object(def)) = schemas.get_mut(&k.definition) {
            // Status and DeleteOptions are shared by every group; kube lists the core one.
            let gvk = if k.group == "meta.k8s.io" {
                json!([{"group": "", "kind": k.kind, "version": "v1"}])
            } else {
                gvk
            };
            def.insert("x-kubernetes-group-version-kind".into(), gvk);
            // k8s-openapi's types hold `metadata` by value, so their schemas require it; kube's
            // `ObjectMeta` is optional on every kind (`+optional`), and kubectl's client-side
            // validation would refuse a TokenReview or Binding without one.
            if let Some(Value::Array(required)) = def.get_mut("required") {
                required.retain(|f| f != "metadata");
                if required.is_empty() {
                    def.remove("required");
                }
            }
        }
        if let Some(list) = &k.list_definition {
            schemas.insert(list.clone(), list_schema(k));
        }
    }

    Generated { schemas, kinds }
}

fn list_schema(k: &KindDefinition) -> Value {
    let list_kind = format!("{}List", k.kind);
    json!({
        "description": format!("{list_kind} is a list of {}.", k.kind),
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": {
                "description": "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources",
                "type": "string"
            },
            "items": {
                "description": format!("List of {}.", k.kind),
                "type": "array",
                "items": {"$ref": format!("{REF_PREFIX}{}", k.definition)}
            },
            "kind": {
                "description": "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
                "type": "string"
            },
            "metadata": {
                "description": "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
                "allOf": [{"$ref": format!("{REF_PREFIX}io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta")}]
            }
        },
        "x-kubernetes-group-version-kind": [{"group": k.group, "kind": list_kind, "version": k.version}]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deployment_definition_has_its_group_version_kind() {
        let def = &definitions()["io.k8s.api.apps.v1.Deployment"];
        assert_eq!(
            def["x-kubernetes-group-version-kind"],
            json!([{"group":"apps","kind":"Deployment","version":"v1"}])
        );
        assert!(definitions().contains_key("io.k8s.api.apps.v1.DeploymentList"));
    }

    #[test]
    fn every_catalog_kind_has_a_root_definition() {
        for r in crate::catalog::all() {
            assert!(
                root_definition(&r.api_version(), r.kind).is_some(),
                "{} {}",
                r.api_version(),
                r.kind
            );
        }
        assert_eq!(
            root_definition("autoscaling/v1", "Scale"),
            Some("io.k8s.api.autoscaling.v1.Scale")
        );
    }

    #[test]
    fn metadata_is_optional_as_in_kube() {
        let review = &definitions()["io.k8s.api.authentication.v1.TokenReview"];
        assert_eq!(review["required"], json!(["spec"]));
        let binding = &definitions()["io.k8s.api.core.v1.Binding"];
        assert_eq!(binding["required"], json!(["target"]));
        assert!(definitions()["io.k8s.api.core.v1.ConfigMap"]
            .get("required")
            .is_none());
    }

    #[test]
    fn every_reference_resolves() {
        fn walk(v: &Value) {
            match v {
                Value::Object(m) => {
                    if let Some(Value::String(r)) = m.get("$ref") {
                        assert!(resolve_ref(r).is_some(), "unresolved {r}");
                    }
                    m.values().for_each(walk);
                }
                Value::Array(a) => a.iter().for_each(walk),
                _ => {}
            }
        }
        definitions().values().for_each(walk);
    }

    #[test]
    fn patch_strategies_are_annotated() {
        let prop = &definitions()["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"];
        assert_eq!(prop["x-kubernetes-patch-strategy"], "merge");
        assert_eq!(prop["x-kubernetes-patch-merge-key"], "name");
    }
}
