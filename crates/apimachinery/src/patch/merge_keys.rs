//! Patch strategies and merge keys of the served types, from the Go struct tags
//! (`patchStrategy:"merge" patchMergeKey:"name"`) in `k8s.io/api` and `k8s.io/apimachinery`.
//!
//! The table is keyed by OpenAPI definition name and JSON field name. The OpenAPI generator
//! copies it into the schemas as `x-kubernetes-patch-strategy` / `x-kubernetes-patch-merge-key`,
//! and the strategic merge patch reads it back from there while walking the schema from the
//! root kind, so a field's metadata is found wherever its type is embedded (the pod spec inside a
//! Deployment's `spec.template.spec` uses the same `PodSpec` entries as a Pod's `spec`).

/// One struct field with a patch strategy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldStrategy {
    /// OpenAPI definition name of the struct, e.g. `io.k8s.api.core.v1.PodSpec`.
    pub definition: &'static str,
    /// JSON name of the field.
    pub field: &'static str,
    /// The Go `patchStrategy` tag: `merge`, `retainKeys`, `merge,retainKeys` or `replace`.
    pub strategy: &'static str,
    /// The Go `patchMergeKey` tag; `None` for lists of primitives and for `retainKeys` alone.
    pub merge_key: Option<&'static str>,
}

const fn f(
    definition: &'static str,
    field: &'static str,
    strategy: &'static str,
    merge_key: Option<&'static str>,
) -> FieldStrategy {
    FieldStrategy {
        definition,
        field,
        strategy,
        merge_key,
    }
}

macro_rules! core {
    ($name:literal) => {
        concat!("io.k8s.api.core.v1.", $name)
    };
}
macro_rules! apps {
    ($name:literal) => {
        concat!("io.k8s.api.apps.v1.", $name)
    };
}
macro_rules! meta {
    ($name:literal) => {
        concat!("io.k8s.apimachinery.pkg.apis.meta.v1.", $name)
    };
}

/// Every field with a patch strategy in the served types and the types they embed.
pub static FIELD_STRATEGIES: &[FieldStrategy] = &[
    // meta/v1
    f(meta!("ObjectMeta"), "finalizers", "merge", None),
    f(meta!("ObjectMeta"), "ownerReferences", "merge", Some("uid")),
    // core/v1 PodSpec
    f(
        core!("PodSpec"),
        "volumes",
        "merge,retainKeys",
        Some("name"),
    ),
    f(core!("PodSpec"), "initContainers", "merge", Some("name")),
    f(core!("PodSpec"), "containers", "merge", Some("name")),
    f(
        core!("PodSpec"),
        "ephemeralContainers",
        "merge",
        Some("name"),
    ),
    f(core!("PodSpec"), "imagePullSecrets", "merge", Some("name")),
    f(core!("PodSpec"), "hostAliases", "merge", Some("ip")),
    f(
        core!("PodSpec"),
        "topologySpreadConstraints",
        "merge",
        Some("topologyKey"),
    ),
    f(core!("PodSpec"), "schedulingGates", "merge", Some("name")),
    f(
        core!("PodSpec"),
        "resourceClaims",
        "merge,retainKeys",
        Some("name"),
    ),
    // core/v1 containers
    f(core!("Container"), "ports", "merge", Some("containerPort")),
    f(core!("Container"), "env", "merge", Some("name")),
    f(
        core!("Container"),
        "volumeMounts",
        "merge",
        Some("mountPath"),
    ),
    f(
        core!("Container"),
        "volumeDevices",
        "merge",
        Some("devicePath"),
    ),
    f(
        core!("EphemeralContainer"),
        "ports",
        "merge",
        Some("containerPort"),
    ),
    f(core!("EphemeralContainer"), "env", "merge", Some("name")),
    f(
        core!("EphemeralContainer"),
        "volumeMounts",
        "merge",
        Some("mountPath"),
    ),
    f(
        core!("EphemeralContainer"),
        "volumeDevices",
        "merge",
        Some("devicePath"),
    ),
    // core/v1 PodStatus
    f(core!("PodStatus"), "conditions", "merge", Some("type")),
    f(core!("PodStatus"), "podIPs", "merge", Some("ip")),
    f(core!("PodStatus"), "hostIPs", "merge", Some("ip")),
    f(
        core!("PodStatus"),
        "resourceClaimStatuses",
        "merge,retainKeys",
        Some("name"),
    ),
    f(
        core!("ContainerStatus"),
        "allocatedResourcesStatus",
        "merge",
        Some("name"),
    ),
    f(
        core!("ResourceStatus"),
        "resources",
        "merge",
        Some("resourceID"),
    ),
    // core/v1 Node
    f(core!("NodeSpec"), "podCIDRs", "merge", None),
    f(core!("NodeStatus"), "conditions", "merge", Some("type")),
    f(core!("NodeStatus"), "addresses", "merge", Some("type")),
    // core/v1 others
    f(
        core!("NamespaceStatus"),
        "conditions",
        "merge",
        Some("type"),
    ),
    f(
        core!("ReplicationControllerStatus"),
        "conditions",
        "merge",
        Some("type"),
    ),
    f(core!("ServiceSpec"), "ports", "merge", Some("port")),
    f(core!("ServiceAccount"), "secrets", "merge", Some("name")),
    f(
        core!("PersistentVolumeClaimStatus"),
        "conditions",
        "merge",
        Some("type"),
    ),
    f(core!("ServiceStatus"), "conditions", "merge", Some("type")),
    // apps/v1
    f(apps!("DeploymentSpec"), "strategy", "retainKeys", None),
    f(
        apps!("DeploymentStatus"),
        "conditions",
        "merge",
        Some("type"),
    ),
    f(
        apps!("ReplicaSetStatus"),
        "conditions",
        "merge",
        Some("type"),
    ),
    f(
        apps!("StatefulSetStatus"),
        "conditions",
        "merge",
        Some("type"),
    ),
    f(
        apps!("DaemonSetStatus"),
        "conditions",
        "merge",
        Some("type"),
    ),
    // batch/v1, policy/v1, autoscaling/v2, networking.k8s.io/v1, apiregistration.k8s.io/v1
    f(
        "io.k8s.api.batch.v1.JobStatus",
        "conditions",
        "merge",
        Some("type"),
    ),
    f(
        "io.k8s.api.policy.v1.PodDisruptionBudgetStatus",
        "conditions",
        "merge",
        Some("type"),
    ),
    f(
        "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerStatus",
        "conditions",
        "merge",
        Some("type"),
    ),
    f(
        "io.k8s.api.networking.v1.ServiceCIDRStatus",
        "conditions",
        "merge",
        Some("type"),
    ),
    f(
        "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIServiceStatus",
        "conditions",
        "merge",
        Some("type"),
    ),
];

/// The patch strategy of `field` in the struct named `definition`, if it has one.
pub fn lookup(definition: &str, field: &str) -> Option<&'static FieldStrategy> {
    FIELD_STRATEGIES
        .iter()
        .find(|s| s.definition == definition && s.field == field)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn containers_merge_by_name_and_ports_by_container_port() {
        let c = lookup("io.k8s.api.core.v1.PodSpec", "containers").unwrap();
        assert_eq!((c.strategy, c.merge_key), ("merge", Some("name")));
        let p = lookup("io.k8s.api.core.v1.Container", "ports").unwrap();
        assert_eq!(p.merge_key, Some("containerPort"));
        assert!(lookup("io.k8s.api.core.v1.PodSpec", "tolerations").is_none());
    }

    #[test]
    fn every_entry_names_a_generated_definition_and_property() {
        let defs = crate::openapi::definitions::definitions();
        for s in FIELD_STRATEGIES {
            let def = defs
                .get(s.definition)
                .unwrap_or_else(|| panic!("definition {} is generated", s.definition));
            assert!(
                def.pointer(&format!("/properties/{}", s.field)).is_some(),
                "{} has property {}",
                s.definition,
                s.field
            );
        }
    }
}
