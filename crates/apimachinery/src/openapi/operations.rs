//! The REST operations of the served resources, described once and rendered as OpenAPI v2 or v3.
//!
//! Paths, operation ids, `x-kubernetes-action` and `x-kubernetes-group-version-kind` follow
//! what kube-openapi generates for the built-in resources (`readCoreV1NamespacedPod`,
//! `patchAppsV1NamespacedDeploymentScale`, ...). kubectl reads the PATCH operations to learn
//! whether the server supports `fieldValidation` for a kind.

use crate::catalog::{self, ResourceInfo};

use super::definitions;

/// An HTTP method of an operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Method {
    Get,
    Put,
    Post,
    Delete,
    Patch,
}

impl Method {
    pub(crate) fn key(self) -> &'static str {
        match self {
            Method::Get => "get",
            Method::Put => "put",
            Method::Post => "post",
            Method::Delete => "delete",
            Method::Patch => "patch",
        }
    }
}

/// A query or path parameter.
#[derive(Debug)]
pub(crate) struct Param {
    pub name: &'static str,
    pub type_: &'static str,
    pub description: &'static str,
}

macro_rules! param {
    ($ident:ident, $name:literal, $type:literal, $desc:literal) => {
        pub(crate) static $ident: Param = Param {
            name: $name,
            type_: $type,
            description: $desc,
        };
    };
}

param!(PRETTY, "pretty", "string", "If 'true', then the output is pretty printed. Defaults to 'false' unless the user-agent indicates a browser or command-line HTTP tool (curl and wget).");
param!(DRY_RUN, "dryRun", "string", "When present, indicates that modifications should not be persisted. An invalid or unrecognized dryRun directive will result in an error response and no further processing of the request. Valid values are: - All: all dry run stages will be processed");
param!(FIELD_MANAGER, "fieldManager", "string", "fieldManager is a name associated with the actor or entity that is making these changes. The value must be less than or 128 characters long, and only contain printable characters, as defined by https://golang.org/pkg/unicode/#IsPrint.");
param!(FIELD_VALIDATION, "fieldValidation", "string", "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore: This will ignore any unknown fields that are silently dropped from the object, and will ignore all but the last duplicate field that the decoder encounters. This is the default behavior prior to v1.23. - Warn: This will send a warning via the standard warning response header for each unknown field that is dropped from the object, and for each duplicate field that is encountered. The request will still succeed if there are no other errors, and will only persist the last of any duplicate fields. This is the default in v1.23+ - Strict: This will fail the request with a BadRequest error if any unknown fields would be dropped from the object, or if any duplicate fields are present. The error returned from the server will contain all unknown and duplicate fields encountered.");
param!(FORCE, "force", "boolean", "Force is going to \"force\" Apply requests. It means user will re-acquire conflicting fields owned by other people. Force flag must be unset for non-apply patch requests.");
param!(ALLOW_WATCH_BOOKMARKS, "allowWatchBookmarks", "boolean", "allowWatchBookmarks requests watch events with type \"BOOKMARK\". Servers that do not implement bookmarks may ignore this flag and bookmarks are sent at the server's discretion. Clients should not assume bookmarks are returned at any specific interval, nor may they assume the server will send any BOOKMARK event during a session. If this is not a watch, this field is ignored.");
param!(CONTINUE, "continue", "string", "The continue option should be set when retrieving more results from the server. Since this value is server defined, clients may only use the continue value from a previous query result with identical query parameters (except for the value of continue) and the server may reject a continue value it does not recognize.");
param!(
    FIELD_SELECTOR,
    "fieldSelector",
    "string",
    "A selector to restrict the list of returned objects by their fields. Defaults to everything."
);
param!(
    LABEL_SELECTOR,
    "labelSelector",
    "string",
    "A selector to restrict the list of returned objects by their labels. Defaults to everything."
);
param!(LIMIT, "limit", "integer", "limit is a maximum number of responses to return for a list call. If more items exist, the server will set the `continue` field on the list metadata to a value that can be used with the same initial query to retrieve the next set of results.");
param!(RESOURCE_VERSION, "resourceVersion", "string", "resourceVersion sets a constraint on what resource versions a request may be served from. See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for details.\n\nDefaults to unset");
param!(RESOURCE_VERSION_MATCH, "resourceVersionMatch", "string", "resourceVersionMatch determines how resourceVersion is applied to list calls. It is highly recommended that resourceVersionMatch be set for list calls where resourceVersion is set See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for details.\n\nDefaults to unset");
param!(SEND_INITIAL_EVENTS, "sendInitialEvents", "boolean", "`sendInitialEvents=true` may be set together with `watch=true`. In that case, the watch stream will begin with synthetic events to produce the current state of objects in the collection. Once all such events have been sent, a synthetic \"Bookmark\" event will be sent.");
param!(TIMEOUT_SECONDS, "timeoutSeconds", "integer", "Timeout for the list/watch call. This limits the duration of the call, regardless of any activity or inactivity.");
param!(WATCH, "watch", "boolean", "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications. Specify resourceVersion.");
param!(GRACE_PERIOD_SECONDS, "gracePeriodSeconds", "integer", "The duration in seconds before the object should be deleted. Value must be non-negative integer. The value zero indicates delete immediately. If this value is nil, the default grace period for the specified type will be used. Defaults to a per object value if not specified. zero means delete immediately.");
param!(ORPHAN_DEPENDENTS, "orphanDependents", "boolean", "Deprecated: please use the PropagationPolicy, this field will be deprecated in 1.7. Should the dependent objects be orphaned. If true/false, the \"orphan\" finalizer will be added to/removed from the object's finalizers list. Either this field or PropagationPolicy may be set, but not both.");
param!(PROPAGATION_POLICY, "propagationPolicy", "string", "Whether and how garbage collection will be performed. Either this field or OrphanDependents may be set, but not both. The default policy is decided by the existing finalizer set in the metadata.finalizers and the resource-specific default policy. Acceptable values are: 'Orphan' - orphan the dependents; 'Background' - allow the garbage collector to delete the dependents in the background; 'Foreground' - a cascading policy that deletes all dependents in the foreground.");
param!(
    NAMESPACE,
    "namespace",
    "string",
    "object name and auth scope, such as for teams and projects"
);

static LIST_PARAMS: &[&Param] = &[
    &ALLOW_WATCH_BOOKMARKS,
    &CONTINUE,
    &FIELD_SELECTOR,
    &LABEL_SELECTOR,
    &LIMIT,
    &RESOURCE_VERSION,
    &RESOURCE_VERSION_MATCH,
    &SEND_INITIAL_EVENTS,
    &TIMEOUT_SECONDS,
    &WATCH,
];
static WRITE_PARAMS: &[&Param] = &[&DRY_RUN, &FIELD_MANAGER, &FIELD_VALIDATION];
static PATCH_PARAMS: &[&Param] = &[&DRY_RUN, &FIELD_MANAGER, &FIELD_VALIDATION, &FORCE];
static DELETE_PARAMS: &[&Param] = &[
    &DRY_RUN,
    &GRACE_PERIOD_SECONDS,
    &ORPHAN_DEPENDENTS,
    &PROPAGATION_POLICY,
];

/// One operation on a path.
#[derive(Debug)]
pub(crate) struct Operation {
    pub method: Method,
    pub operation_id: String,
    pub description: String,
    /// `x-kubernetes-action`: get, list, post, put, patch, delete, deletecollection.
    pub action: &'static str,
    /// `x-kubernetes-group-version-kind` of the operation.
    pub gvk: (&'static str, &'static str, &'static str),
    pub query: Vec<&'static Param>,
    /// Definition name of the request body, if any.
    pub body: Option<String>,
    /// Definition name of the response.
    pub response: String,
    /// Whether the operation answers 201/202 as well as 200 (create).
    pub creates: bool,
}

/// A path with its path parameters and operations.
#[derive(Debug)]
pub(crate) struct PathItem {
    pub path: String,
    /// Path parameters: `name` (described with the kind) and/or `namespace`.
    pub name_of: Option<&'static str>,
    pub namespaced: bool,
    pub operations: Vec<Operation>,
}

/// A served group version: its document key (`api/v1`, `apis/apps/v1`) and names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct GroupVersion {
    pub key: String,
    pub group: &'static str,
    pub version: &'static str,
}

/// Every served group version, core first.
pub(crate) fn group_versions() -> Vec<GroupVersion> {
    let mut out = vec![GroupVersion {
        key: "api/v1".to_string(),
        group: "",
        version: "v1",
    }];
    for (group, versions) in catalog::groups() {
        for version in versions {
            out.push(GroupVersion {
                key: format!("apis/{group}/{version}"),
                group,
                version,
            });
        }
    }
    out
}

/// `CoreV1`, `AppsV1`, `CoordinationV1`: the group version in operation ids.
fn gv_camel(group: &str, version: &str) -> String {
    let group = if group.is_empty() {
        "core"
    } else {
        group.split('.').next().unwrap_or(group)
    };
    format!("{}{}", upper_first(group), upper_first(version))
}

/// `core_v1`, `apps_v1`: the tag of a group version's operations.
pub(crate) fn gv_tag(group: &str, version: &str) -> String {
    let group = if group.is_empty() {
        "core"
    } else {
        group.split('.').next().unwrap_or(group)
    };
    format!("{group}_{version}")
}

fn upper_first(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

fn definition_of(api_version: &str, kind: &str) -> String {
    definitions::root_definition(api_version, kind)
        .unwrap_or("io.k8s.apimachinery.pkg.apis.meta.v1.Status")
        .to_string()
}

const STATUS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Status";
const DELETE_OPTIONS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions";
const PATCH: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch";

/// The paths of one group version's resources.
pub(crate) fn paths(group: &str, version: &str) -> Vec<PathItem> {
    let mut out = Vec::new();
    for r in catalog::all()
        .iter()
        .filter(|r| r.group == group && r.version == version)
    {
        resource_paths(r, &mut out);
    }
    out
}

fn resource_paths(r: &'static ResourceInfo, out: &mut Vec<PathItem>) {
    let def = definition_of(&r.api_version(), r.kind);
    let list_def = definitions::kinds()
        .iter()
        .find(|k| k.definition == def)
        .and_then(|k| k.list_definition.clone())
        .unwrap_or_else(|| STATUS.to_string());
    resource_paths_with(r, def, list_def, out);
}

/// The paths of `r` whose objects and lists are the definitions `def` and `list_def` (custom
/// resources name their own).
pub(crate) fn resource_paths_with(
    r: &'static ResourceInfo,
    def: String,
    list_def: String,
    out: &mut Vec<PathItem>,
) {
    let prefix = if r.group.is_empty() {
        format!("/api/{}", r.version)
    } else {
        format!("/apis/{}/{}", r.group, r.version)
    };
    let gvc = gv_camel(r.group, r.version);
    let ns = if r.namespaced() { "Namespaced" } else { "" };
    let kind = r.kind;
    let gvk = (r.group, r.version, r.kind);
    let collection = if r.namespaced() {
        format!("{prefix}/namespaces/{{namespace}}/{}", r.plural)
    } else {
        format!("{prefix}/{}", r.plural)
    };
    let has = |verb: &str| r.verbs.contains(&verb);
    let op = |method,
              verb: &str,
              action,
              description: String,
              query: &[&'static Param],
              body: Option<&str>,
              response: &str,
              suffix: &str| Operation {
        method,
        operation_id: format!("{verb}{gvc}{ns}{kind}{suffix}"),
        description,
        action,
        gvk,
        query: query.to_vec(),
        body: body.map(str::to_string),
        response: response.to_string(),
        creates: false,
    };

    // Collection: list, create, deletecollection.
    let mut ops = Vec::new();
    if has("list") {
        ops.push(op(
            Method::Get,
            "list",
            "list",
            format!("list or watch objects of kind {kind}"),
            LIST_PARAMS,
            None,
            &list_def,
            "",
        ));
    }
    if has("create") {
        let mut create = op(
            Method::Post,
            "create",
            "post",
            format!("create a {kind}"),
            WRITE_PARAMS,
            Some(&def),
            &def,
            "",
        );
        create.creates = true;
        ops.push(create);
    }
    if has("deletecollection") {
        let mut query: Vec<&'static Param> = DELETE_PARAMS.to_vec();
        query.extend_from_slice(LIST_PARAMS);
        ops.push(op(
            Method::Delete,
            "deletecollection",
            "deletecollection",
            format!("delete collection of {kind}"),
            &query,
            Some(DELETE_OPTIONS),
            STATUS,
            "",
        ));
    }
    if !ops.is_empty() {
        out.push(PathItem {
            path: collection.clone(),
            name_of: None,
            namespaced: r.namespaced(),
            operations: ops,
        });
    }

    // Object: read, replace, patch, delete.
    let mut ops = Vec::new();
    if has("get") {
        ops.push(op(
            Method::Get,
            "read",
            "get",
            format!("read the specified {kind}"),
            &[],
            None,
            &def,
            "",
        ));
    }
    if has("update") {
        ops.push(op(
            Method::Put,
            "replace",
            "put",
            format!("replace the specified {kind}"),
            WRITE_PARAMS,
            Some(&def),
            &def,
            "",
        ));
    }
    if has("patch") {
        ops.push(op(
            Method::Patch,
            "patch",
            "patch",
            format!("partially update the specified {kind}"),
            PATCH_PARAMS,
            Some(PATCH),
            &def,
            "",
        ));
    }
    if has("delete") {
        ops.push(op(
            Method::Delete,
            "delete",
            "delete",
            format!("delete a {kind}"),
            DELETE_PARAMS,
            Some(DELETE_OPTIONS),
            STATUS,
            "",
        ));
    }
    if !ops.is_empty() {
        out.push(PathItem {
            path: format!("{collection}/{{name}}"),
            name_of: Some(kind),
            namespaced: r.namespaced(),
            operations: ops,
        });
    }

    // Subresources.
    // TODO: operations of the streaming subresources (`readCoreV1NamespacedPodLog`,
    // `connectCoreV1{Get,Post}NamespacedPodExec`, ...) answer plain strings, which `Operation`
    // cannot describe yet; they are left out of the documents.
    for sub in r.subresources.iter().filter(|s| !s.streams) {
        let suffix = upper_first(sub.name);
        let sub_api_version = if sub.group.is_empty() {
            sub.version.to_string()
        } else {
            format!("{}/{}", sub.group, sub.version)
        };
        let sub_def = definition_of(&sub_api_version, sub.kind);
        let sub_gvk = (sub.group, sub.version, sub.kind);
        let mut ops = Vec::new();
        for verb in sub.verbs {
            let (method, id_verb, action, description, query, body): (
                _,
                _,
                _,
                _,
                &[&'static Param],
                _,
            ) = match *verb {
                "get" => (
                    Method::Get,
                    "read",
                    "get",
                    format!("read {} of the specified {kind}", sub.name),
                    &[],
                    None,
                ),
                "update" => (
                    Method::Put,
                    "replace",
                    "put",
                    format!("replace {} of the specified {kind}", sub.name),
                    WRITE_PARAMS,
                    Some(sub_def.as_str()),
                ),
                "patch" => (
                    Method::Patch,
                    "patch",
                    "patch",
                    format!("partially update {} of the specified {kind}", sub.name),
                    PATCH_PARAMS,
                    Some(PATCH),
                ),
                "create" => (
                    Method::Post,
                    "create",
                    "post",
                    format!("create {} of a {kind}", sub.name),
                    WRITE_PARAMS,
                    Some(sub_def.as_str()),
                ),
                _ => continue,
            };
            let mut o = op(
                method,
                id_verb,
                action,
                description,
                query,
                body,
                &sub_def,
                &suffix,
            );
            o.gvk = sub_gvk;
            o.creates = method == Method::Post;
            ops.push(o);
        }
        if !ops.is_empty() {
            out.push(PathItem {
                path: format!("{collection}/{{name}}/{}", sub.name),
                name_of: Some(kind),
                namespaced: r.namespaced(),
                operations: ops,
            });
        }
    }

    // List across namespaces.
    if r.namespaced() && has("list") {
        let mut list = op(
            Method::Get,
            "list",
            "list",
            format!("list or watch objects of kind {kind}"),
            LIST_PARAMS,
            None,
            &list_def,
            "ForAllNamespaces",
        );
        list.operation_id = format!("list{gvc}{kind}ForAllNamespaces");
        out.push(PathItem {
            path: format!("{prefix}/{}", r.plural),
            name_of: None,
            namespaced: false,
            operations: vec![list],
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deployment_paths_and_operation_ids_follow_kube() {
        let paths = paths("apps", "v1");
        let item = paths
            .iter()
            .find(|p| p.path == "/apis/apps/v1/namespaces/{namespace}/deployments/{name}")
            .expect("object path");
        let patch = item
            .operations
            .iter()
            .find(|o| o.method == Method::Patch)
            .expect("patch");
        assert_eq!(patch.operation_id, "patchAppsV1NamespacedDeployment");
        assert_eq!(patch.gvk, ("apps", "v1", "Deployment"));
        assert!(patch.query.iter().any(|p| p.name == "fieldValidation"));
        let scale = paths
            .iter()
            .find(|p| p.path.ends_with("/deployments/{name}/scale"))
            .expect("scale path");
        assert_eq!(
            scale.operations[0].operation_id,
            "readAppsV1NamespacedDeploymentScale"
        );
        assert_eq!(scale.operations[0].gvk, ("autoscaling", "v1", "Scale"));
        assert!(paths.iter().any(|p| p.path == "/apis/apps/v1/deployments"
            && p.operations[0].operation_id == "listAppsV1DeploymentForAllNamespaces"));
    }

    #[test]
    fn cluster_scoped_resources_have_no_namespace_segment() {
        let paths = paths("", "v1");
        assert!(paths.iter().any(|p| p.path == "/api/v1/nodes/{name}"
            && p.operations
                .iter()
                .any(|o| o.operation_id == "readCoreV1Node")));
        assert!(!paths
            .iter()
            .any(|p| p.path.contains("namespaces/{namespace}/nodes")));
    }

    #[test]
    fn group_versions_include_core_and_groups() {
        let keys: Vec<String> = group_versions().into_iter().map(|g| g.key).collect();
        assert!(keys.contains(&"api/v1".to_string()));
        assert!(keys.contains(&"apis/apps/v1".to_string()));
        assert!(keys.contains(&"apis/coordination.k8s.io/v1".to_string()));
        assert_eq!(gv_tag("events.k8s.io", "v1"), "events_v1");
    }
}
