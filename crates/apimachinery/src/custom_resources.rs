//! The custom resources served next to the static catalog, as the CustomResourceDefinitions that
//! define them come and go.
//!
//! Entries are `&'static ResourceInfo` like the catalog's, so that every path serving a built-in
//! kind (routing, handlers, strategies, discovery) serves a custom one unchanged. Each distinct
//! entry is leaked once and interned: a CRD deleted and created again reuses its entry, so memory
//! grows with the number of distinct CRD shapes a process has seen, not with their churn.
//!
//! The served set is per process. Each API server in the process registers its own entries under
//! an owner id ([`new_owner`], [`set`]), so servers started side by side (tests) do not remove
//! each other's; two servers serving the same group, version and plural would share it.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock, RwLock};

use crate::catalog::{ResourceInfo, Scope, Subresource, RW_VERBS};

/// What a CRD's served version makes of a resource.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CustomResource {
    /// The CRD's `spec.group`.
    pub group: String,
    /// The served version's name.
    pub version: String,
    /// `status.acceptedNames.kind`.
    pub kind: String,
    /// `status.acceptedNames.plural`.
    pub plural: String,
    /// `status.acceptedNames.singular`.
    pub singular: String,
    /// `status.acceptedNames.shortNames`.
    pub short_names: Vec<String>,
    /// `status.acceptedNames.categories`.
    pub categories: Vec<String>,
    /// `spec.scope` is `Namespaced`.
    pub namespaced: bool,
    /// The version declares the `status` subresource.
    pub status: bool,
    /// The version declares the `scale` subresource.
    pub scale: bool,
}

const STATUS_VERBS: &[&str] = &["get", "patch", "update"];

fn strings() -> &'static Mutex<HashSet<&'static str>> {
    static STRINGS: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    STRINGS.get_or_init(|| Mutex::new(HashSet::new()))
}

fn interned() -> &'static Mutex<Vec<&'static ResourceInfo>> {
    static INTERNED: Mutex<Vec<&'static ResourceInfo>> = Mutex::new(Vec::new());
    &INTERNED
}

/// `(owner, entry)` pairs served now.
static SERVED: RwLock<Vec<(u64, &'static ResourceInfo)>> = RwLock::new(Vec::new());

fn intern_str(s: &str) -> &'static str {
    let mut strings = strings().lock().unwrap_or_else(|e| e.into_inner());
    if let Some(found) = strings.get(s) {
        return found;
    }
    let leaked: &'static str = Box::leak(s.to_string().into_boxed_str());
    strings.insert(leaked);
    leaked
}

fn intern_strs(v: &[String]) -> &'static [&'static str] {
    let v: Vec<&'static str> = v.iter().map(|s| intern_str(s)).collect();
    Box::leak(v.into_boxed_slice())
}

/// The catalog entry of `resource`, leaked the first time this shape is seen.
pub fn intern(resource: &CustomResource) -> &'static ResourceInfo {
    let group = intern_str(&resource.group);
    let version = intern_str(&resource.version);
    let kind = intern_str(&resource.kind);
    let mut subresources = Vec::new();
    if resource.status {
        subresources.push(Subresource {
            name: "status",
            group,
            version,
            kind,
            verbs: STATUS_VERBS,
            streams: false,
        });
    }
    if resource.scale {
        subresources.push(Subresource {
            name: "scale",
            group: "autoscaling",
            version: "v1",
            kind: "Scale",
            verbs: STATUS_VERBS,
            streams: false,
        });
    }
    let mut all = interned().lock().unwrap_or_else(|e| e.into_inner());
    let same = |r: &&&'static ResourceInfo| {
        r.group == group
            && r.version == version
            && r.kind == kind
            && r.plural == resource.plural
            && r.singular == resource.singular
            && r.short_names.iter().eq(resource.short_names.iter())
            && r.categories.iter().eq(resource.categories.iter())
            && r.namespaced() == resource.namespaced
            && r.subresources == subresources.as_slice()
    };
    if let Some(found) = all.iter().find(same) {
        return found;
    }
    let info: &'static ResourceInfo = Box::leak(Box::new(ResourceInfo {
        group,
        version,
        kind,
        plural: intern_str(&resource.plural),
        singular: intern_str(&resource.singular),
        short_names: intern_strs(&resource.short_names),
        categories: intern_strs(&resource.categories),
        scope: if resource.namespaced {
            Scope::Namespaced
        } else {
            Scope::Cluster
        },
        verbs: RW_VERBS,
        subresources: Box::leak(subresources.into_boxed_slice()),
    }));
    all.push(info);
    info
}

/// A fresh owner id for [`set`].
pub fn new_owner() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Makes `entries` the custom resources `owner` serves, replacing what it served before.
pub fn set(owner: u64, entries: Vec<&'static ResourceInfo>) {
    let mut served = SERVED.write().unwrap_or_else(|e| e.into_inner());
    served.retain(|(o, _)| *o != owner);
    served.extend(entries.into_iter().map(|e| (owner, e)));
}

/// Every custom resource served now, in registration order.
pub fn all() -> Vec<&'static ResourceInfo> {
    let served = SERVED.read().unwrap_or_else(|e| e.into_inner());
    let mut out: Vec<&'static ResourceInfo> = Vec::new();
    for (_, r) in served.iter() {
        if !out.iter().any(|o| std::ptr::eq(*o, *r)) {
            out.push(r);
        }
    }
    out
}

/// Whether `info` is an entry of this overlay (served now or in the past).
pub fn is_custom(info: &ResourceInfo) -> bool {
    interned_entry(info).is_some()
}

/// The overlay's entry at the address of `info`, if `info` is one (served now or in the past).
pub fn interned_entry(info: &ResourceInfo) -> Option<&'static ResourceInfo> {
    interned()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .find(|r| std::ptr::eq(**r, info))
        .copied()
}

pub(crate) fn by_plural(group: &str, version: &str, plural: &str) -> Option<&'static ResourceInfo> {
    let served = SERVED.read().unwrap_or_else(|e| e.into_inner());
    served
        .iter()
        .map(|(_, r)| *r)
        .find(|r| r.group == group && r.version == version && r.plural == plural)
}

pub(crate) fn by_kind(group: &str, version: &str, kind: &str) -> Option<&'static ResourceInfo> {
    let served = SERVED.read().unwrap_or_else(|e| e.into_inner());
    served
        .iter()
        .map(|(_, r)| *r)
        .find(|r| r.group == group && r.version == version && r.kind == kind)
}

/// The served groups of custom resources with their versions, in registration order.
pub fn groups() -> Vec<(&'static str, Vec<&'static str>)> {
    crate::catalog::group_versions(all())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn widget(version: &str) -> CustomResource {
        CustomResource {
            group: "overlay.example.com".into(),
            version: version.into(),
            kind: "Widget".into(),
            plural: "widgets".into(),
            singular: "widget".into(),
            short_names: vec!["wd".into()],
            categories: vec!["all".into()],
            namespaced: true,
            status: true,
            scale: false,
        }
    }

    #[test]
    fn an_entry_is_interned_and_found_while_served() {
        let a = intern(&widget("v1"));
        assert!(std::ptr::eq(a, intern(&widget("v1"))));
        assert_eq!(a.subresource("status").map(|s| s.kind), Some("Widget"));
        let owner = new_owner();
        set(owner, vec![a]);
        assert!(std::ptr::eq(
            crate::catalog::by_plural("overlay.example.com", "v1", "widgets").expect("served"),
            a
        ));
        assert!(crate::catalog::by_kind("overlay.example.com/v1", "Widget").is_some());
        assert!(is_custom(a));
        set(owner, Vec::new());
        assert!(crate::catalog::by_plural("overlay.example.com", "v1", "widgets").is_none());
    }
}
