//! The storage keys of objects and of collections (`/{group}/{plural}/{namespace}/{name}`), and
//! how often a read-modify-write is retried.

use rkcm_apimachinery::catalog::ResourceInfo;

/// Attempts of a read-modify-write (patch, scale, finalize) on conflicts with other writers.
pub const UPDATE_ATTEMPTS: usize = 16;

/// Storage key prefix of a collection (all namespaces when `namespace` is `None`).
pub fn prefix(info: &ResourceInfo, namespace: Option<&str>) -> String {
    let group = if info.group.is_empty() {
        "core"
    } else {
        info.group
    };
    match namespace {
        Some(ns) if info.namespaced() => format!("/{group}/{}/{ns}/", info.plural),
        _ => format!("/{group}/{}/", info.plural),
    }
}

/// Storage key of an object: the prefix of its collection in its namespace, then its name.
pub fn key(info: &ResourceInfo, namespace: Option<&str>, name: &str) -> String {
    let mut key = prefix(info, namespace);
    key.push_str(name);
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_prefixes() {
        let pods = rkcm_apimachinery::catalog::by_kind("v1", "Pod").expect("served");
        assert_eq!(key(pods, Some("ns"), "p"), "/core/pods/ns/p");
        assert_eq!(prefix(pods, None), "/core/pods/");
        let nodes = rkcm_apimachinery::catalog::by_kind("v1", "Node").expect("served");
        assert_eq!(key(nodes, Some("ignored"), "n"), "/core/nodes/n");
    }
}
