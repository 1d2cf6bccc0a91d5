//! The API lifecycle of the served kinds that kube marks deprecated, as the
//! `APILifecycleDeprecated`, `APILifecycleRemoved` and `APILifecycleReplacement` methods of
//! `k8s.io/api` (`zz_generated.prerelease-lifecycle.go`, and `core/v1/lifecycle.go` for the
//! core kinds).
//!
//! Only GA versions are served here, and of their kinds kube 1.33 deprecates two, both in
//! `core/v1/lifecycle.go`: ComponentStatus (1.19) and Endpoints (1.33, KEP-4974). No served
//! kind has a removal release.

/// A group, version and kind (`schema.GroupVersionKind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gvk {
    /// API group, empty for the core group.
    pub group: &'static str,
    /// Version within the group.
    pub version: &'static str,
    /// Kind.
    pub kind: &'static str,
}

impl Gvk {
    /// `GroupVersion.String()`: `discovery.k8s.io/v1`, or `v1` for the core group.
    pub fn group_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

/// The lifecycle of a deprecated kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lifecycle {
    /// The kind, in the version the lifecycle is of.
    pub gvk: Gvk,
    /// `APILifecycleDeprecated`: the release (major, minor) that deprecates it.
    pub deprecated: (u32, u32),
    /// `APILifecycleRemoved`: the release that no longer serves it, if one is set.
    pub removed: Option<(u32, u32)>,
    /// `APILifecycleReplacement`: the kind to use instead, if there is one.
    pub replacement: Option<Gvk>,
}

/// The deprecated kinds among those served.
pub const DEPRECATED: &[Lifecycle] = &[
    Lifecycle {
        gvk: Gvk {
            group: "",
            version: "v1",
            kind: "ComponentStatus",
        },
        deprecated: (1, 19),
        removed: None,
        replacement: None,
    },
    Lifecycle {
        gvk: Gvk {
            group: "",
            version: "v1",
            kind: "Endpoints",
        },
        deprecated: (1, 33),
        removed: None,
        replacement: Some(Gvk {
            group: "discovery.k8s.io",
            version: "v1",
            kind: "EndpointSlice",
        }),
    },
];

/// The lifecycle of `group`/`version` `kind` if kube deprecates it.
pub fn deprecated(group: &str, version: &str, kind: &str) -> Option<&'static Lifecycle> {
    DEPRECATED
        .iter()
        .find(|l| l.gvk.group == group && l.gvk.version == version && l.gvk.kind == kind)
}
