//! What a request asks to do, as authorizers see it: kube's `authorizer.Attributes`, derived from
//! the method and path as `RequestInfoFactory.NewRequestInfo` does
//! (`staging/src/k8s.io/apiserver/pkg/endpoints/request/requestinfo.go`).

use crate::auth::user::UserInfo;

/// Path prefixes of resource requests (`APIPrefixes`); only `api` is groupless.
const API_PREFIXES: [&str; 2] = ["api", "apis"];
/// Subresources of a namespace itself (`namespaceSubresources`).
const NAMESPACE_SUBRESOURCES: [&str; 2] = ["status", "finalize"];

/// One request as an authorizer sees it (`authorizer.AttributesRecord`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Attributes {
    /// Who asks.
    pub user: UserInfo,
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`,
    /// `impersonate`, ... for resources; the lower-cased HTTP method for other paths.
    pub verb: String,
    /// Whether this is a request on a resource (else on a plain path).
    pub resource_request: bool,
    /// Namespace of a resource request (empty for cluster-scoped and all-namespace requests).
    pub namespace: String,
    /// API group (empty for the core group).
    pub api_group: String,
    /// API version.
    pub api_version: String,
    /// Resource (`pods`).
    pub resource: String,
    /// Subresource (`status`, `log`, ...), empty when none.
    pub subresource: String,
    /// Name of the object, empty when none.
    pub name: String,
    /// Path of a non-resource request.
    pub path: String,
    /// The raw `fieldSelector` of a list or watch (the Node authorizer reads
    /// `spec.nodeName=<node>` in it), empty when none.
    pub field_selector: String,
}

impl Attributes {
    /// A resource request.
    pub fn resource(
        user: UserInfo,
        verb: &str,
        api_group: &str,
        resource: &str,
        namespace: &str,
        name: &str,
    ) -> Self {
        Self {
            user,
            verb: verb.to_string(),
            resource_request: true,
            namespace: namespace.to_string(),
            api_group: api_group.to_string(),
            resource: resource.to_string(),
            name: name.to_string(),
            ..Self::default()
        }
    }

    /// A request on a plain path (`/healthz`, `/apis`).
    pub fn non_resource(user: UserInfo, verb: &str, path: &str) -> Self {
        Self {
            user,
            verb: verb.to_string(),
            path: path.to_string(),
            ..Self::default()
        }
    }

    /// The attributes of a request with `method` on `path` with query `query`, for `user`.
    pub fn from_request(
        user: UserInfo,
        method: &http::Method,
        path: &str,
        query: Option<&str>,
    ) -> Self {
        let mut attrs = Self {
            user,
            verb: method.as_str().to_ascii_lowercase(),
            path: path.to_string(),
            ..Self::default()
        };
        let parts: Vec<&str> = path
            .trim_matches('/')
            .split('/')
            .filter(|p| !p.is_empty())
            .collect();
        if parts.len() < 3 || !API_PREFIXES.contains(&parts[0]) {
            return attrs;
        }
        let mut rest = &parts[1..];
        if parts[0] != "api" {
            if rest.len() < 3 {
                return attrs;
            }
            attrs.api_group = rest[0].to_string();
            rest = &rest[1..];
        }
        let mut info = Self {
            resource_request: true,
            api_version: rest[0].to_string(),
            ..attrs.clone()
        };
        rest = &rest[1..];
        if matches!(rest.first(), Some(&"watch") | Some(&"proxy")) {
            if rest.len() < 2 {
                // kube refuses such a request ("unable to determine kind and namespace from
                // url"); it is authorized as the path it is.
                return attrs;
            }
            info.verb = rest[0].to_string();
            rest = &rest[1..];
        } else {
            info.verb = match *method {
                http::Method::POST => "create",
                http::Method::GET | http::Method::HEAD => "get",
                http::Method::PUT => "update",
                http::Method::PATCH => "patch",
                http::Method::DELETE => "delete",
                _ => "",
            }
            .to_string();
        }
        if rest.first() == Some(&"namespaces") {
            if let Some(ns) = rest.get(1) {
                info.namespace = ns.to_string();
                if rest.len() > 2 && !NAMESPACE_SUBRESOURCES.contains(&rest[2]) {
                    rest = &rest[2..];
                }
            }
        }
        if rest.len() >= 3 && info.verb != "proxy" {
            info.subresource = rest[2].to_string();
        }
        if rest.len() >= 2 {
            info.name = rest[1].to_string();
        }
        if let Some(resource) = rest.first() {
            info.resource = resource.to_string();
        }
        if info.name.is_empty() && info.verb == "get" {
            let query = query_pairs(query);
            if let Some((_, selector)) = query.iter().find(|(k, _)| k == "fieldSelector") {
                info.field_selector = selector.clone();
            }
            let watch = query
                .iter()
                .find(|(k, _)| k == "watch")
                .is_some_and(|(_, v)| !(v == "0" || v.eq_ignore_ascii_case("false")));
            info.verb = if watch { "watch" } else { "list" }.to_string();
            if let Some(name) = exact_name(&query) {
                info.name = name;
            }
        }
        if info.name.is_empty() && info.verb == "delete" {
            info.verb = "deletecollection".to_string();
        }
        info
    }
}

fn query_pairs(query: Option<&str>) -> Vec<(String, String)> {
    query
        .and_then(|q| serde_urlencoded::from_str::<Vec<(String, String)>>(q).ok())
        .unwrap_or_default()
}

/// The name a list or watch is narrowed to by `fieldSelector=metadata.name=<name>`
/// (`RequiresExactMatch`), when it is a valid path segment.
fn exact_name(query: &[(String, String)]) -> Option<String> {
    let selector = &query.iter().find(|(k, _)| k == "fieldSelector")?.1;
    let mut found = None;
    for term in selector.split(',') {
        let Some((field, value)) = term.split_once("==").or_else(|| term.split_once('=')) else {
            continue;
        };
        if field.trim() == "metadata.name" {
            found = Some(value.trim().to_string());
        }
    }
    found.filter(|n| !n.is_empty() && n != "." && n != ".." && !n.contains('/') && !n.contains('%'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::Method;

    fn info(method: Method, path: &str, query: Option<&str>) -> Attributes {
        Attributes::from_request(UserInfo::default(), &method, path, query)
    }

    /// `TestGetAPIRequestInfo` of requestinfo_test.go.
    #[test]
    #[allow(clippy::type_complexity)]
    fn resource_requests_are_parsed_as_kube_does() {
        // (method, path, query) → (verb, prefix-less version, namespace, resource, name, subresource, group)
        let cases: &[(
            Method,
            &str,
            Option<&str>,
            &str,
            &str,
            &str,
            &str,
            &str,
            &str,
            &str,
        )] = &[
            (
                Method::GET,
                "/api/v1/namespaces",
                None,
                "list",
                "v1",
                "",
                "namespaces",
                "",
                "",
                "",
            ),
            (
                Method::GET,
                "/api/v1/namespaces/other",
                None,
                "get",
                "v1",
                "other",
                "namespaces",
                "other",
                "",
                "",
            ),
            (
                Method::GET,
                "/api/v1/namespaces/other/pods",
                None,
                "list",
                "v1",
                "other",
                "pods",
                "",
                "",
                "",
            ),
            (
                Method::GET,
                "/api/v1/namespaces/other/pods/foo",
                None,
                "get",
                "v1",
                "other",
                "pods",
                "foo",
                "",
                "",
            ),
            (
                Method::HEAD,
                "/api/v1/namespaces/other/pods/foo",
                None,
                "get",
                "v1",
                "other",
                "pods",
                "foo",
                "",
                "",
            ),
            (
                Method::GET,
                "/api/v1/pods",
                None,
                "list",
                "v1",
                "",
                "pods",
                "",
                "",
                "",
            ),
            (
                Method::GET,
                "/api/v1/namespaces/other/pods/foo",
                None,
                "get",
                "v1",
                "other",
                "pods",
                "foo",
                "",
                "",
            ),
            (
                Method::GET,
                "/api/v1/namespaces/other/pods",
                None,
                "list",
                "v1",
                "other",
                "pods",
                "",
                "",
                "",
            ),
            // special verbs
            (
                Method::GET,
                "/api/v1/proxy/namespaces/other/pods/foo",
                None,
                "proxy",
                "v1",
                "other",
                "pods",
                "foo",
                "",
                "",
            ),
            (
                Method::GET,
                "/api/v1/proxy/namespaces/other/pods/foo/subpath/not/a/subresource",
                None,
                "proxy",
                "v1",
                "other",
                "pods",
                "foo",
                "",
                "",
            ),
            (
                Method::GET,
                "/api/v1/watch/pods",
                None,
                "watch",
                "v1",
                "",
                "pods",
                "",
                "",
                "",
            ),
            (
                Method::GET,
                "/api/v1/pods",
                Some("watch=true"),
                "watch",
                "v1",
                "",
                "pods",
                "",
                "",
                "",
            ),
            (
                Method::GET,
                "/api/v1/pods",
                Some("watch=false"),
                "list",
                "v1",
                "",
                "pods",
                "",
                "",
                "",
            ),
            (
                Method::GET,
                "/api/v1/watch/namespaces/other/pods",
                None,
                "watch",
                "v1",
                "other",
                "pods",
                "",
                "",
                "",
            ),
            (
                Method::GET,
                "/api/v1/namespaces/other/pods",
                Some("watch=1"),
                "watch",
                "v1",
                "other",
                "pods",
                "",
                "",
                "",
            ),
            (
                Method::GET,
                "/api/v1/namespaces/other/pods",
                Some("watch=1&fieldSelector=metadata.name%3Dfoo"),
                "watch",
                "v1",
                "other",
                "pods",
                "foo",
                "",
                "",
            ),
            // subresource identification
            (
                Method::GET,
                "/api/v1/namespaces/other/pods/foo/status",
                None,
                "get",
                "v1",
                "other",
                "pods",
                "foo",
                "status",
                "",
            ),
            (
                Method::GET,
                "/api/v1/namespaces/other/pods/foo/proxy/subpath",
                None,
                "get",
                "v1",
                "other",
                "pods",
                "foo",
                "proxy",
                "",
            ),
            (
                Method::PUT,
                "/api/v1/namespaces/other/finalize",
                None,
                "update",
                "v1",
                "other",
                "namespaces",
                "other",
                "finalize",
                "",
            ),
            (
                Method::PUT,
                "/api/v1/namespaces/other/status",
                None,
                "update",
                "v1",
                "other",
                "namespaces",
                "other",
                "status",
                "",
            ),
            // verb identification
            (
                Method::PATCH,
                "/api/v1/namespaces/other/pods/foo",
                None,
                "patch",
                "v1",
                "other",
                "pods",
                "foo",
                "",
                "",
            ),
            (
                Method::DELETE,
                "/api/v1/namespaces/other/pods/foo",
                None,
                "delete",
                "v1",
                "other",
                "pods",
                "foo",
                "",
                "",
            ),
            (
                Method::POST,
                "/api/v1/namespaces/other/pods",
                None,
                "create",
                "v1",
                "other",
                "pods",
                "",
                "",
                "",
            ),
            // deletecollection verb identification
            (
                Method::DELETE,
                "/api/v1/nodes",
                None,
                "deletecollection",
                "v1",
                "",
                "nodes",
                "",
                "",
                "",
            ),
            (
                Method::DELETE,
                "/api/v1/namespaces",
                None,
                "deletecollection",
                "v1",
                "",
                "namespaces",
                "",
                "",
                "",
            ),
            (
                Method::DELETE,
                "/api/v1/namespaces/other/pods",
                None,
                "deletecollection",
                "v1",
                "other",
                "pods",
                "",
                "",
                "",
            ),
            (
                Method::DELETE,
                "/apis/extensions/v1/namespaces/other/pods",
                None,
                "deletecollection",
                "v1",
                "other",
                "pods",
                "",
                "",
                "extensions",
            ),
            // api group identification
            (
                Method::POST,
                "/apis/extensions/v1/namespaces/other/pods",
                None,
                "create",
                "v1",
                "other",
                "pods",
                "",
                "",
                "extensions",
            ),
            // api version identification
            (
                Method::POST,
                "/apis/extensions/v1beta3/namespaces/other/pods",
                None,
                "create",
                "v1beta3",
                "other",
                "pods",
                "",
                "",
                "extensions",
            ),
        ];
        for (method, path, query, verb, version, ns, resource, name, sub, group) in cases {
            let a = info(method.clone(), path, *query);
            assert!(a.resource_request, "{path}");
            assert_eq!(
                (
                    a.verb.as_str(),
                    a.api_version.as_str(),
                    a.namespace.as_str(),
                    a.resource.as_str(),
                    a.name.as_str(),
                    a.subresource.as_str(),
                    a.api_group.as_str()
                ),
                (*verb, *version, *ns, *resource, *name, *sub, *group),
                "{method} {path}?{query:?}"
            );
        }
    }

    /// `TestGetNonAPIRequestInfo` of requestinfo_test.go.
    #[test]
    fn other_paths_are_non_resource_requests() {
        for (path, resource) in [
            ("/api", false),
            ("/api/v1", false),
            ("/apis", false),
            ("/apis/apps", false),
            ("/apis/apps/v1", false),
            ("/healthz", false),
            ("/anything/else/here", false),
            ("/api/v1/pods", true),
            ("/apis/apps/v1/deployments", true),
        ] {
            let a = info(Method::GET, path, None);
            assert_eq!(a.resource_request, resource, "{path}");
            if !resource {
                assert_eq!((a.verb.as_str(), a.path.as_str()), ("get", path));
            }
        }
        assert_eq!(info(Method::POST, "/apis", None).verb, "post");
    }

    #[test]
    fn a_bad_field_selector_names_nothing() {
        let a = info(
            Method::GET,
            "/api/v1/pods",
            Some("fieldSelector=metadata.name%3Da%2Fb"),
        );
        assert_eq!((a.verb.as_str(), a.name.as_str()), ("list", ""));
        let a = info(
            Method::GET,
            "/api/v1/pods",
            Some("fieldSelector=metadata.name%21%3Da"),
        );
        assert_eq!(a.name, "");
    }

    #[test]
    fn lists_and_watches_carry_their_field_selector_for_the_node_authorizer() {
        let a = info(
            Method::GET,
            "/api/v1/pods",
            Some("watch=true&fieldSelector=spec.nodeName%3Dn1"),
        );
        assert_eq!(
            (a.verb.as_str(), a.field_selector.as_str()),
            ("watch", "spec.nodeName=n1")
        );
        assert_eq!(info(Method::GET, "/api/v1/pods", None).field_selector, "");
        // A get names its object; a selector in its query is not a list's.
        let a = info(
            Method::GET,
            "/api/v1/namespaces/a/pods/p",
            Some("fieldSelector=spec.nodeName%3Dn1"),
        );
        assert_eq!((a.verb.as_str(), a.field_selector.as_str()), ("get", ""));
    }
}
