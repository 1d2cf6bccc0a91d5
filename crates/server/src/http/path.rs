//! Parsing of resource request paths (`/api/v1/namespaces/{ns}/pods/{name}/status`).
//!
//! Mirrors `RequestInfoFactory.NewRequestInfo` (`staging/src/k8s.io/apiserver/pkg/endpoints/request/requestinfo.go`),
//! restricted to the served catalog.

use rkcm_apimachinery::catalog::{self, ResourceInfo};

/// What a resource path addresses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourcePath {
    /// The resource.
    pub info: &'static ResourceInfo,
    /// Namespace from the path (`None` for cluster-scoped resources and all-namespace lists).
    pub namespace: Option<String>,
    /// Object name, if the path names one.
    pub name: Option<String>,
    /// Subresource (`status`, `scale`, `binding`, `finalize`, `eviction`).
    pub subresource: Option<String>,
    /// Whether the path used the legacy `/watch/` prefix.
    pub watch: bool,
}

/// Parses `path`; `None` when it addresses nothing served.
pub fn parse(path: &str) -> Option<ResourcePath> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, version, rest) = match segs.as_slice() {
        ["api", version, rest @ ..] => ("", *version, rest),
        ["apis", group, version, rest @ ..] => (*group, *version, rest),
        _ => return None,
    };
    let (watch, rest) = match rest {
        ["watch", rest @ ..] => (true, rest),
        _ => (false, rest),
    };
    // A proxy subresource takes the rest of the path as the path to proxy to
    // (`services/web/proxy/healthz`), trailing slash included.
    let rest = match rest {
        ["namespaces", _, _, _, "proxy", _, ..] => &rest[..5],
        [first, _, "proxy", _, ..] if *first != "namespaces" => &rest[..3],
        _ => rest,
    };
    if rest.iter().any(|s| s.is_empty()) {
        return None;
    }
    let lookup = |plural: &str| catalog::by_plural(group, version, plural);
    let (info, namespace, name, sub) = match rest {
        // /namespaces/{ns}/{plural}[/{name}[/{sub}]] for namespaced resources; /namespaces/{name}/{sub}
        // is a subresource of the namespace itself when {sub} is one.
        ["namespaces", ns, plural, tail @ ..]
            if lookup(plural).is_some_and(ResourceInfo::namespaced) =>
        {
            let info = lookup(plural)?;
            match tail {
                [] => (info, Some(*ns), None, None),
                [name] => (info, Some(*ns), Some(*name), None),
                [name, sub] => (info, Some(*ns), Some(*name), Some(*sub)),
                _ => return None,
            }
        }
        [plural] => (lookup(plural)?, None, None, None),
        [plural, name] => (lookup(plural)?, None, Some(*name), None),
        [plural, name, sub] => (lookup(plural)?, None, Some(*name), Some(*sub)),
        _ => return None,
    };
    if info.namespaced() && name.is_some() && namespace.is_none() {
        return None;
    }
    if let Some(sub) = sub {
        info.subresource(sub)?;
    }
    Some(ResourcePath {
        info,
        namespace: namespace.map(str::to_string),
        name: name.map(str::to_string),
        subresource: sub.map(str::to_string),
        watch,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaced_paths_parse() {
        let p = parse("/apis/apps/v1/namespaces/default/deployments/web/scale").expect("served");
        assert_eq!(p.info.kind, "Deployment");
        assert_eq!(p.namespace.as_deref(), Some("default"));
        assert_eq!(p.name.as_deref(), Some("web"));
        assert_eq!(p.subresource.as_deref(), Some("scale"));
        let p = parse("/api/v1/pods").expect("served");
        assert_eq!((p.namespace, p.name), (None, None));
        assert!(
            parse("/api/v1/watch/namespaces/x/pods")
                .expect("served")
                .watch
        );
    }

    #[test]
    fn namespace_subresources_are_not_mistaken_for_resources() {
        let p = parse("/api/v1/namespaces/x/finalize").expect("served");
        assert_eq!(p.info.kind, "Namespace");
        assert_eq!(p.name.as_deref(), Some("x"));
        assert_eq!(p.subresource.as_deref(), Some("finalize"));
        let p = parse("/api/v1/namespaces/x").expect("served");
        assert_eq!(p.info.kind, "Namespace");
        assert!(parse("/api/v1/namespaces/x/nothing").is_none());
        assert!(parse("/api/v1/pods/x").is_none());
    }

    #[test]
    fn a_proxy_path_keeps_its_own_tail() {
        let p = parse("/api/v1/namespaces/default/services/https:web:/proxy/healthz/x")
            .expect("served");
        assert_eq!(p.name.as_deref(), Some("https:web:"));
        assert_eq!(p.subresource.as_deref(), Some("proxy"));
        assert!(parse("/api/v1/namespaces/default/services/web/proxy/").is_some());
        let p = parse("/api/v1/namespaces/default/pods/proxy/status").expect("served");
        assert_eq!(p.subresource.as_deref(), Some("status"));
    }
}
