//! The catalog of served resources: group, version, kind, names, scope and subresources.
//!
//! One table serves discovery, OpenAPI, printers and routing, so that they can never disagree
//! about which resources exist or how they are named.

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

static RESOURCES: &[ResourceInfo] = &[
    ResourceInfo {
        group: "",
        version: "v1",
        kind: "Namespace",
        plural: "namespaces",
        singular: "namespace",
        short_names: &["ns"],
        categories: &[],
        scope: Scope::Cluster,
        verbs: &[
            "create", "delete", "get", "list", "patch", "update", "watch",
        ],
        subresources: &[
            status("", "v1", "Namespace"),
            Subresource {
                name: "finalize",
                group: "",
                version: "v1",
                kind: "Namespace",
                verbs: &["update"],
                streams: false,
            },
        ],
    },
    ResourceInfo {
        group: "",
        version: "v1",
        kind: "Pod",
        plural: "pods",
        singular: "pod",
        short_names: &["po"],
        categories: &["all"],
        scope: Scope::Namespaced,
        verbs: RW_VERBS,
        subresources: &[
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
        ],
    },
    ResourceInfo {
        group: "",
        version: "v1",
        kind: "Node",
        plural: "nodes",
        singular: "node",
        short_names: &["no"],
        categories: &[],
        scope: Scope::Cluster,
        verbs: RW_VERBS,
        subresources: &[status("", "v1", "Node")],
    },
    ResourceInfo {
        group: "",
        version: "v1",
        kind: "Event",
        plural: "events",
        singular: "event",
        short_names: &["ev"],
        categories: &[],
        scope: Scope::Namespaced,
        verbs: RW_VERBS,
        subresources: &[],
    },
    ResourceInfo {
        group: "",
        version: "v1",
        kind: "ReplicationController",
        plural: "replicationcontrollers",
        singular: "replicationcontroller",
        short_names: &["rc"],
        categories: &["all"],
        scope: Scope::Namespaced,
        verbs: RW_VERBS,
        subresources: &[status("", "v1", "ReplicationController"), SCALE],
    },
    ResourceInfo {
        group: "",
        version: "v1",
        kind: "Service",
        plural: "services",
        singular: "service",
        short_names: &["svc"],
        categories: &["all"],
        scope: Scope::Namespaced,
        verbs: RW_VERBS,
        subresources: &[status("", "v1", "Service")],
    },
    ResourceInfo {
        group: "",
        version: "v1",
        kind: "ConfigMap",
        plural: "configmaps",
        singular: "configmap",
        short_names: &["cm"],
        categories: &[],
        scope: Scope::Namespaced,
        verbs: RW_VERBS,
        subresources: &[],
    },
    ResourceInfo {
        group: "apps",
        version: "v1",
        kind: "Deployment",
        plural: "deployments",
        singular: "deployment",
        short_names: &["deploy"],
        categories: &["all"],
        scope: Scope::Namespaced,
        verbs: RW_VERBS,
        subresources: &[status("apps", "v1", "Deployment"), SCALE],
    },
    ResourceInfo {
        group: "apps",
        version: "v1",
        kind: "ReplicaSet",
        plural: "replicasets",
        singular: "replicaset",
        short_names: &["rs"],
        categories: &["all"],
        scope: Scope::Namespaced,
        verbs: RW_VERBS,
        subresources: &[status("apps", "v1", "ReplicaSet"), SCALE],
    },
    ResourceInfo {
        group: "apps",
        version: "v1",
        kind: "ControllerRevision",
        plural: "controllerrevisions",
        singular: "controllerrevision",
        short_names: &[],
        categories: &[],
        scope: Scope::Namespaced,
        verbs: RW_VERBS,
        subresources: &[],
    },
    ResourceInfo {
        group: "events.k8s.io",
        version: "v1",
        kind: "Event",
        plural: "events",
        singular: "event",
        short_names: &["ev"],
        categories: &[],
        scope: Scope::Namespaced,
        verbs: RW_VERBS,
        subresources: &[],
    },
    ResourceInfo {
        group: "coordination.k8s.io",
        version: "v1",
        kind: "Lease",
        plural: "leases",
        singular: "lease",
        short_names: &[],
        categories: &[],
        scope: Scope::Namespaced,
        verbs: RW_VERBS,
        subresources: &[],
    },
];

/// Every served resource, core group first, in discovery order.
pub fn all() -> &'static [ResourceInfo] {
    RESOURCES
}

/// The resource served at `/{group}/{version}/{plural}`.
pub fn by_plural(group: &str, version: &str, plural: &str) -> Option<&'static ResourceInfo> {
    RESOURCES
        .iter()
        .find(|r| r.group == group && r.version == version && r.plural == plural)
}

/// The resource whose objects have `apiVersion` and `kind`.
pub fn by_kind(api_version: &str, kind: &str) -> Option<&'static ResourceInfo> {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    RESOURCES
        .iter()
        .find(|r| r.group == group && r.version == version && r.kind == kind)
}

/// The served groups with their versions, in discovery order (core group excluded).
pub fn groups() -> Vec<(&'static str, Vec<&'static str>)> {
    let mut out: Vec<(&'static str, Vec<&'static str>)> = Vec::new();
    for r in RESOURCES.iter().filter(|r| !r.group.is_empty()) {
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
    fn groups_are_listed_once_each() {
        let groups = groups();
        let names: Vec<_> = groups.iter().map(|(g, _)| *g).collect();
        assert_eq!(names, ["apps", "events.k8s.io", "coordination.k8s.io"]);
    }
}
