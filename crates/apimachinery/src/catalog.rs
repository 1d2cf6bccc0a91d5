//! The catalog of served resources: group, version, kind, names, scope and subresources.
//!
//! One table serves discovery, OpenAPI, printers and routing, so that they can never disagree
//! about which resources exist or how they are named.

use std::collections::HashMap;
use std::sync::LazyLock;

/// Whether objects of a resource live in a namespace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Objects live in a namespace (`/namespaces/{ns}/{plural}`).
    Namespaced,
    /// Objects are cluster-wide (`/{plural}`).
    Cluster,
}

/// A subresource of a served resource, as discovery advertises it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Subresource {
    /// Path segment after the object name: `status`, `scale`, `binding`, `finalize`, `eviction`,
    /// `log`, `exec`, `attach`, `portforward`.
    pub name: &'static str,
    /// Group of the subresource's kind (`autoscaling` for `scale`), empty for core.
    pub group: &'static str,
    /// Version of the subresource's kind.
    pub version: &'static str,
    /// Kind exchanged with the subresource (`Scale`, `Binding`, the parent kind for `status`).
    pub kind: &'static str,
    /// Verbs the subresource supports.
    pub verbs: &'static [&'static str],
    /// Whether the subresource streams bytes from the node (`log`, `exec`, `attach`,
    /// `portforward`) rather than exchanging objects of `kind`.
    pub streams: bool,
}

/// One served resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResourceInfo {
    /// API group, empty for the core group.
    pub group: &'static str,
    /// API version within the group.
    pub version: &'static str,
    /// Kind of the objects.
    pub kind: &'static str,
    /// Lower-case plural used in URLs (`deployments`).
    pub plural: &'static str,
    /// Lower-case singular (`deployment`).
    pub singular: &'static str,
    /// Short names kubectl accepts (`deploy`).
    pub short_names: &'static [&'static str],
    /// Categories (`all`).
    pub categories: &'static [&'static str],
    /// Namespaced or cluster-scoped.
    pub scope: Scope,
    /// Verbs on the resource itself.
    pub verbs: &'static [&'static str],
    /// Subresources.
    pub subresources: &'static [Subresource],
}

impl ResourceInfo {
    /// `apps/v1` or `v1` for the core group.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// `deployments.apps` or `pods` for the core group, as used in error messages.
    pub fn qualified_plural(&self) -> String {
        if self.group.is_empty() {
            self.plural.to_string()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// Whether objects live in a namespace.
    pub fn namespaced(&self) -> bool {
        self.scope == Scope::Namespaced
    }

    /// The subresource named `name`, if served.
    pub fn subresource(&self, name: &str) -> Option<&'static Subresource> {
        self.subresources.iter().find(|s| s.name == name)
    }
}

/// Verbs of an ordinary read-write resource.
pub const RW_VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

const STATUS_VERBS: &[&str] = &["get", "patch", "update"];

/// Verbs of a subresource a kubelet serves through a connection (`exec`, `attach`,
/// `portforward`): GET and POST, usually upgraded to a stream.
const CONNECT_VERBS: &[&str] = &["create", "get"];

const fn status(group: &'static str, version: &'static str, kind: &'static str) -> Subresource {
    Subresource {
        name: "status",
        group,
        version,
        kind,
        verbs: STATUS_VERBS,
        streams: false,
    }
}

const SCALE: Subresource = Subresource {
    name: "scale",
    group: "autoscaling",
    version: "v1",
    kind: "Scale",
    verbs: STATUS_VERBS,
    streams: false,
};

/// A namespaced resource with the ordinary read-write verbs and no subresource, names and
/// categories; refined with the `with_*` builders below.
const fn namespaced(
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    singular: &'static str,
) -> ResourceInfo {
    ResourceInfo {
        group,
        version,
        kind,
        plural,
        singular,
        short_names: &[],
        categories: &[],
        scope: Scope::Namespaced,
        verbs: RW_VERBS,
        subresources: &[],
    }
}

/// A cluster-scoped resource, otherwise as [`namespaced`].
const fn cluster(
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    singular: &'static str,
) -> ResourceInfo {
    let mut r = namespaced(group, version, kind, plural, singular);
    r.scope = Scope::Cluster;
    r
}

impl ResourceInfo {
    const fn with_short_names(mut self, short_names: &'static [&'static str]) -> Self {
        self.short_names = short_names;
        self
    }

    const fn with_categories(mut self, categories: &'static [&'static str]) -> Self {
        self.categories = categories;
        self
    }

    const fn with_verbs(mut self, verbs: &'static [&'static str]) -> Self {
        self.verbs = verbs;
        self
    }

    const fn with_subresources(mut self, subresources: &'static [Subresource]) -> Self {
        self.subresources = subresources;
        self
    }
}

/// The `all` category (`kubectl get all`).
const ALL: &[&str] = &["all"];
/// The `api-extensions` category kube gives the resources that extend the API.
const API_EXTENSIONS: &[&str] = &["api-extensions"];

/// Every resource kube-apiserver 1.33 serves by default, grouped in kube's discovery order
/// (the core group, then the groups by kube's group priority). Within a group the preferred
/// version comes first.
static RESOURCES: &[ResourceInfo] = &[
    // core/v1, in kube's legacy discovery order.
    namespaced("", "v1", "Binding", "bindings", "binding").with_verbs(&["create"]),
    cluster(
        "",
        "v1",
        "ComponentStatus",
        "componentstatuses",
        "componentstatus",
    )
    .with_short_names(&["cs"])
    .with_verbs(&["get", "list"]),
    namespaced("", "v1", "ConfigMap", "configmaps", "configmap").with_short_names(&["cm"]),
    namespaced("", "v1", "Endpoints", "endpoints", "endpoints").with_short_names(&["ep"]),
    namespaced("", "v1", "Event", "events", "event").with_short_names(&["ev"]),
    namespaced("", "v1", "LimitRange", "limitranges", "limitrange").with_short_names(&["limits"]),
    cluster("", "v1", "Namespace", "namespaces", "namespace")
        .with_short_names(&["ns"])
        .with_verbs(&[
            "create", "delete", "get", "list", "patch", "update", "watch",
        ])
        .with_subresources(&[
            status("", "v1", "Namespace"),
            Subresource {
                name: "finalize",
                group: "",
                version: "v1",
                kind: "Namespace",
                verbs: &["update"],
                streams: false,
            },
        ]),
    cluster("", "v1", "Node", "nodes", "node")
        .with_short_names(&["no"])
        .with_subresources(&[status("", "v1", "Node")]),
    namespaced(
        "",
        "v1",
        "PersistentVolumeClaim",
        "persistentvolumeclaims",
        "persistentvolumeclaim",
    )
    .with_short_names(&["pvc"])
    .with_subresources(&[status("", "v1", "PersistentVolumeClaim")]),
    cluster(
        "",
        "v1",
        "PersistentVolume",
        "persistentvolumes",
        "persistentvolume",
    )
    .with_short_names(&["pv"])
    .with_subresources(&[status("", "v1", "PersistentVolume")]),
    namespaced("", "v1", "Pod", "pods", "pod")
        .with_short_names(&["po"])
        .with_categories(ALL)
        .with_subresources(&[
            status("", "v1", "Pod"),
            Subresource {
                name: "binding",
                group: "",
                version: "v1",
                kind: "Binding",
                verbs: &["create"],
                streams: false,
            },
            Subresource {
                name: "eviction",
                group: "policy",
                version: "v1",
                kind: "Eviction",
                verbs: &["create"],
                streams: false,
            },
            Subresource {
                name: "log",
                group: "",
                version: "v1",
                kind: "Pod",
                verbs: &["get"],
                streams: true,
            },
            Subresource {
                name: "exec",
                group: "",
                version: "v1",
                kind: "PodExecOptions",
                verbs: CONNECT_VERBS,
                streams: true,
            },
            Subresource {
                name: "attach",
                group: "",
                version: "v1",
                kind: "PodAttachOptions",
                verbs: CONNECT_VERBS,
                streams: true,
            },
            Subresource {
                name: "portforward",
                group: "",
                version: "v1",
                kind: "PodPortForwardOptions",
                verbs: CONNECT_VERBS,
                streams: true,
            },
        ]),
    namespaced("", "v1", "PodTemplate", "podtemplates", "podtemplate"),
    namespaced(
        "",
        "v1",
        "ReplicationController",
        "replicationcontrollers",
        "replicationcontroller",
    )
    .with_short_names(&["rc"])
    .with_categories(ALL)
    .with_subresources(&[status("", "v1", "ReplicationController"), SCALE]),
    namespaced("", "v1", "ResourceQuota", "resourcequotas", "resourcequota")
        .with_short_names(&["quota"])
        .with_subresources(&[status("", "v1", "ResourceQuota")]),
    namespaced("", "v1", "Secret", "secrets", "secret"),
    namespaced(
        "",
        "v1",
        "ServiceAccount",
        "serviceaccounts",
        "serviceaccount",
    )
    .with_short_names(&["sa"])
    .with_subresources(&[Subresource {
        name: "token",
        group: "authentication.k8s.io",
        version: "v1",
        kind: "TokenRequest",
        verbs: &["create"],
        streams: false,
    }]),
    namespaced("", "v1", "Service", "services", "service")
        .with_short_names(&["svc"])
        .with_categories(ALL)
        .with_subresources(&[
            status("", "v1", "Service"),
            Subresource {
                name: "proxy",
                group: "",
                version: "v1",
                kind: "ServiceProxyOptions",
                verbs: &["create", "delete", "get", "patch", "update"],
                streams: true,
            },
        ]),
    // apiregistration.k8s.io
    cluster(
        "apiregistration.k8s.io",
        "v1",
        "APIService",
        "apiservices",
        "apiservice",
    )
    .with_categories(API_EXTENSIONS)
    .with_subresources(&[status("apiregistration.k8s.io", "v1", "APIService")]),
    // apps
    namespaced(
        "apps",
        "v1",
        "ControllerRevision",
        "controllerrevisions",
        "controllerrevision",
    ),
    namespaced("apps", "v1", "DaemonSet", "daemonsets", "daemonset")
        .with_short_names(&["ds"])
        .with_categories(ALL)
        .with_subresources(&[status("apps", "v1", "DaemonSet")]),
    namespaced("apps", "v1", "Deployment", "deployments", "deployment")
        .with_short_names(&["deploy"])
        .with_categories(ALL)
        .with_subresources(&[status("apps", "v1", "Deployment"), SCALE]),
    namespaced("apps", "v1", "ReplicaSet", "replicasets", "replicaset")
        .with_short_names(&["rs"])
        .with_categories(ALL)
        .with_subresources(&[status("apps", "v1", "ReplicaSet"), SCALE]),
    namespaced("apps", "v1", "StatefulSet", "statefulsets", "statefulset")
        .with_short_names(&["sts"])
        .with_categories(ALL)
        .with_subresources(&[status("apps", "v1", "StatefulSet"), SCALE]),
    // events.k8s.io
    namespaced("events.k8s.io", "v1", "Event", "events", "event").with_short_names(&["ev"]),
    // authentication.k8s.io: create-only reviews, never stored.
    cluster(
        "authentication.k8s.io",
        "v1",
        "SelfSubjectReview",
        "selfsubjectreviews",
        "selfsubjectreview",
    )
    .with_verbs(&["create"]),
    cluster(
        "authentication.k8s.io",
        "v1",
        "TokenReview",
        "tokenreviews",
        "tokenreview",
    )
    .with_verbs(&["create"]),
    // authorization.k8s.io: create-only reviews, never stored.
    namespaced(
        "authorization.k8s.io",
        "v1",
        "LocalSubjectAccessReview",
        "localsubjectaccessreviews",
        "localsubjectaccessreview",
    )
    .with_verbs(&["create"]),
    cluster(
        "authorization.k8s.io",
        "v1",
        "SelfSubjectAccessReview",
        "selfsubjectaccessreviews",
        "selfsubjectaccessreview",
    )
    .with_verbs(&["create"]),
    cluster(
        "authorization.k8s.io",
        "v1",
        "SelfSubjectRulesReview",
        "selfsubjectrulesreviews",
        "selfsubjectrulesreview",
    )
    .with_verbs(&["create"]),
    cluster(
        "authorization.k8s.io",
        "v1",
        "SubjectAccessReview",
        "subjectaccessreviews",
        "subjectaccessreview",
    )
    .with_verbs(&["create"]),
    // autoscaling: v2 is the preferred (and stored) version.
    namespaced(
        "autoscaling",
        "v2",
        "HorizontalPodAutoscaler",
        "horizontalpodautoscalers",
        "horizontalpodautoscaler",
    )
    .with_short_names(&["hpa"])
    .with_categories(ALL)
    .with_subresources(&[status("autoscaling", "v2", "HorizontalPodAutoscaler")]),
    // The same objects in autoscaling/v1 (stored as v2, converted as kube converts them); after
    // v2 so that v2 stays the group's preferred version.
    namespaced(
        "autoscaling",
        "v1",
        "HorizontalPodAutoscaler",
        "horizontalpodautoscalers",
        "horizontalpodautoscaler",
    )
    .with_short_names(&["hpa"])
    .with_categories(ALL)
    .with_subresources(&[status("autoscaling", "v1", "HorizontalPodAutoscaler")]),
    // batch
    namespaced("batch", "v1", "CronJob", "cronjobs", "cronjob")
        .with_short_names(&["cj"])
        .with_categories(ALL)
        .with_subresources(&[status("batch", "v1", "CronJob")]),
    namespaced("batch", "v1", "Job", "jobs", "job")
        .with_categories(ALL)
        .with_subresources(&[status("batch", "v1", "Job")]),
    // certificates.k8s.io
    cluster(
        "certificates.k8s.io",
        "v1",
        "CertificateSigningRequest",
        "certificatesigningrequests",
        "certificatesigningrequest",
    )
    .with_short_names(&["csr"])
    .with_subresources(&[
        Subresource {
            name: "approval",
            group: "certificates.k8s.io",
            version: "v1",
            kind: "CertificateSigningRequest",
            verbs: STATUS_VERBS,
            streams: false,
        },
        status("certificates.k8s.io", "v1", "CertificateSigningRequest"),
    ]),
    // networking.k8s.io
    cluster(
        "networking.k8s.io",
        "v1",
        "IngressClass",
        "ingressclasses",
        "ingressclass",
    ),
    namespaced("networking.k8s.io", "v1", "Ingress", "ingresses", "ingress")
        .with_short_names(&["ing"])
        .with_subresources(&[status("networking.k8s.io", "v1", "Ingress")]),
    cluster(
        "networking.k8s.io",
        "v1",
        "IPAddress",
        "ipaddresses",
        "ipaddress",
    )
    .with_short_names(&["ip"]),
    namespaced(
        "networking.k8s.io",
        "v1",
        "NetworkPolicy",
        "networkpolicies",
        "networkpolicy",
    )
    .with_short_names(&["netpol"]),
    cluster(
        "networking.k8s.io",
        "v1",
        "ServiceCIDR",
        "servicecidrs",
        "servicecidr",
    )
    .with_subresources(&[status("networking.k8s.io", "v1", "ServiceCIDR")]),
    // policy
    namespaced(
        "policy",
        "v1",
        "PodDisruptionBudget",
        "poddisruptionbudgets",
        "poddisruptionbudget",
    )
    .with_short_names(&["pdb"])
    .with_subresources(&[status("policy", "v1", "PodDisruptionBudget")]),
    // rbac.authorization.k8s.io
    cluster(
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRoleBinding",
        "clusterrolebindings",
        "clusterrolebinding",
    ),
    cluster(
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRole",
        "clusterroles",
        "clusterrole",
    ),
    namespaced(
        "rbac.authorization.k8s.io",
        "v1",
        "RoleBinding",
        "rolebindings",
        "rolebinding",
    ),
    namespaced("rbac.authorization.k8s.io", "v1", "Role", "roles", "role"),
    // storage.k8s.io
    cluster(
        "storage.k8s.io",
        "v1",
        "CSIDriver",
        "csidrivers",
        "csidriver",
    ),
    cluster("storage.k8s.io", "v1", "CSINode", "csinodes", "csinode"),
    namespaced(
        "storage.k8s.io",
        "v1",
        "CSIStorageCapacity",
        "csistoragecapacities",
        "csistoragecapacity",
    ),
    cluster(
        "storage.k8s.io",
        "v1",
        "StorageClass",
        "storageclasses",
        "storageclass",
    )
    .with_short_names(&["sc"]),
    cluster(
        "storage.k8s.io",
        "v1",
        "VolumeAttachment",
        "volumeattachments",
        "volumeattachment",
    )
    .with_subresources(&[status("storage.k8s.io", "v1", "VolumeAttachment")]),
    // admissionregistration.k8s.io
    cluster(
        "admissionregistration.k8s.io",
        "v1",
        "MutatingWebhookConfiguration",
        "mutatingwebhookconfigurations",
        "mutatingwebhookconfiguration",
    )
    .with_categories(API_EXTENSIONS),
    cluster(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingAdmissionPolicy",
        "validatingadmissionpolicies",
        "validatingadmissionpolicy",
    )
    .with_categories(API_EXTENSIONS)
    .with_subresources(&[status(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingAdmissionPolicy",
    )]),
    cluster(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingAdmissionPolicyBinding",
        "validatingadmissionpolicybindings",
        "validatingadmissionpolicybinding",
    )
    .with_categories(API_EXTENSIONS),
    cluster(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingWebhookConfiguration",
        "validatingwebhookconfigurations",
        "validatingwebhookconfiguration",
    )
    .with_categories(API_EXTENSIONS),
    // apiextensions.k8s.io; the custom resources themselves are in [`crate::custom_resources`].
    cluster(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        "customresourcedefinition",
    )
    .with_short_names(&["crd"])
    .with_categories(API_EXTENSIONS)
    .with_subresources(&[status(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
    )]),
    // scheduling.k8s.io
    cluster(
        "scheduling.k8s.io",
        "v1",
        "PriorityClass",
        "priorityclasses",
        "priorityclass",
    )
    .with_short_names(&["pc"]),
    // coordination.k8s.io
    namespaced("coordination.k8s.io", "v1", "Lease", "leases", "lease"),
    // node.k8s.io
    cluster(
        "node.k8s.io",
        "v1",
        "RuntimeClass",
        "runtimeclasses",
        "runtimeclass",
    ),
    // discovery.k8s.io
    namespaced(
        "discovery.k8s.io",
        "v1",
        "EndpointSlice",
        "endpointslices",
        "endpointslice",
    ),
    // flowcontrol.apiserver.k8s.io
    cluster(
        "flowcontrol.apiserver.k8s.io",
        "v1",
        "FlowSchema",
        "flowschemas",
        "flowschema",
    )
    .with_subresources(&[status("flowcontrol.apiserver.k8s.io", "v1", "FlowSchema")]),
    cluster(
        "flowcontrol.apiserver.k8s.io",
        "v1",
        "PriorityLevelConfiguration",
        "prioritylevelconfigurations",
        "prioritylevelconfiguration",
    )
    .with_subresources(&[status(
        "flowcontrol.apiserver.k8s.io",
        "v1",
        "PriorityLevelConfiguration",
    )]),
];

/// Every served resource, core group first, in discovery order.
pub fn all() -> &'static [ResourceInfo] {
    RESOURCES
}

/// The resource served at `/{group}/{version}/{plural}`: a built-in one, or a custom resource
/// of [`crate::custom_resources`].
pub fn by_plural(group: &str, version: &str, plural: &str) -> Option<&'static ResourceInfo> {
    // Every request's path is resolved here: an index rather than a scan of the catalog.
    static BY_PLURAL: LazyLock<HashMap<(&str, &str, &str), &ResourceInfo>> = LazyLock::new(|| {
        let mut index = HashMap::new();
        for r in RESOURCES {
            index.entry((r.group, r.version, r.plural)).or_insert(r);
        }
        index
    });
    BY_PLURAL
        .get(&(group, version, plural))
        .copied()
        .or_else(|| crate::custom_resources::by_plural(group, version, plural))
}

/// The resource whose objects have `apiVersion` and `kind`.
pub fn by_kind(api_version: &str, kind: &str) -> Option<&'static ResourceInfo> {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    RESOURCES
        .iter()
        .find(|r| r.group == group && r.version == version && r.kind == kind)
        .or_else(|| crate::custom_resources::by_kind(group, version, kind))
}

/// The served groups with their versions, in discovery order (core group excluded).
pub fn groups() -> Vec<(&'static str, Vec<&'static str>)> {
    group_versions(RESOURCES.iter().filter(|r| !r.group.is_empty()))
}

/// The groups of `resources` with their versions, each in order of first appearance.
pub fn group_versions<'a>(
    resources: impl IntoIterator<Item = &'a ResourceInfo>,
) -> Vec<(&'static str, Vec<&'static str>)> {
    let mut out: Vec<(&'static str, Vec<&'static str>)> = Vec::new();
    for r in resources {
        match out.iter_mut().find(|(g, _)| *g == r.group) {
            Some((_, versions)) if !versions.contains(&r.version) => versions.push(r.version),
            Some(_) => {}
            None => out.push((r.group, vec![r.version])),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deployments_are_found_by_plural_and_by_kind() {
        let by_plural = by_plural("apps", "v1", "deployments").expect("served");
        let by_kind = by_kind("apps/v1", "Deployment").expect("served");
        assert_eq!(by_plural, by_kind);
        assert_eq!(by_kind.qualified_plural(), "deployments.apps");
        assert!(by_kind.subresource("scale").is_some());
    }

    #[test]
    fn core_resources_have_no_group_in_their_names() {
        let pods = by_kind("v1", "Pod").expect("served");
        assert_eq!(pods.api_version(), "v1");
        assert_eq!(pods.qualified_plural(), "pods");
        assert!(pods.namespaced());
        assert!(!by_kind("v1", "Node").expect("served").namespaced());
    }

    #[test]
    fn groups_are_listed_once_each_in_kubes_priority_order() {
        let groups = groups();
        let names: Vec<_> = groups.iter().map(|(g, _)| *g).collect();
        assert_eq!(
            names,
            [
                "apiregistration.k8s.io",
                "apps",
                "events.k8s.io",
                "authentication.k8s.io",
                "authorization.k8s.io",
                "autoscaling",
                "batch",
                "certificates.k8s.io",
                "networking.k8s.io",
                "policy",
                "rbac.authorization.k8s.io",
                "storage.k8s.io",
                "admissionregistration.k8s.io",
                "apiextensions.k8s.io",
                "scheduling.k8s.io",
                "coordination.k8s.io",
                "node.k8s.io",
                "discovery.k8s.io",
                "flowcontrol.apiserver.k8s.io",
            ]
        );
    }

    #[test]
    fn every_resource_is_listed_once() {
        for (i, r) in all().iter().enumerate() {
            assert!(
                !all()[..i]
                    .iter()
                    .any(|o| o.group == r.group && o.version == r.version && o.plural == r.plural),
                "{} listed twice",
                r.qualified_plural()
            );
        }
    }

    #[test]
    fn short_names_and_categories_are_kubes() {
        let sa = by_plural("", "v1", "serviceaccounts").expect("served");
        assert_eq!(sa.short_names, ["sa"]);
        assert_eq!(
            sa.subresource("token").map(|s| s.kind),
            Some("TokenRequest")
        );
        let sts = by_kind("apps/v1", "StatefulSet").expect("served");
        assert_eq!(
            (sts.short_names, sts.categories),
            (&["sts"][..], &["all"][..])
        );
        assert!(sts.subresource("scale").is_some());
        let jobs = by_kind("batch/v1", "Job").expect("served");
        assert_eq!(jobs.categories, ["all"]);
        let hpa = by_kind("autoscaling/v2", "HorizontalPodAutoscaler").expect("served");
        assert_eq!(hpa.short_names, ["hpa"]);
        let hpa_v1 = by_kind("autoscaling/v1", "HorizontalPodAutoscaler").expect("served");
        assert_eq!(hpa_v1.plural, hpa.plural);
        assert_eq!(
            groups().into_iter().find(|(g, _)| *g == "autoscaling"),
            Some(("autoscaling", vec!["v2", "v1"])),
            "v2 is preferred"
        );
        let cs = by_plural("", "v1", "componentstatuses").expect("served");
        assert_eq!((cs.verbs, cs.scope), (&["get", "list"][..], Scope::Cluster));
        let vwc = by_plural(
            "admissionregistration.k8s.io",
            "v1",
            "validatingwebhookconfigurations",
        )
        .expect("served");
        assert_eq!(vwc.categories, ["api-extensions"]);
    }
}
