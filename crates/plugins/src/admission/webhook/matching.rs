//! Which webhooks a request is sent to: the exemptions (`rules.IsExemptAdmissionConfigurationResource`),
//! the rules (`predicates/rules`), the namespace selector (`predicates/namespace`) and the
//! object selector (`predicates/object`), combined as `generic.Dispatcher.ShouldCallHook`.

use std::collections::BTreeMap;

use rkcm_apimachinery::catalog::{self, ResourceInfo};
use rkcm_labels::Selector;
use rkcm_server::admission::attributes::{Attributes, Kind, Operation};
use rkcm_server::error::{ApiError, ApiResult};
use rkcm_storage::object;

use super::hook::{Hook, Rule};

/// Requests for webhook and policy configurations are never sent to webhooks, so that no
/// webhook can keep itself from being removed.
pub fn is_exempt(attrs: &Attributes) -> bool {
    attrs.kind.group == "admissionregistration.k8s.io"
        && matches!(
            attrs.kind.kind,
            "ValidatingWebhookConfiguration"
                | "MutatingWebhookConfiguration"
                | "ValidatingAdmissionPolicy"
                | "ValidatingAdmissionPolicyBinding"
                | "MutatingAdmissionPolicy"
                | "MutatingAdmissionPolicyBinding"
        )
}

/// Whether the request addresses a namespace object (`""/v1, namespaces`).
fn is_namespace_resource(attrs: &Attributes) -> bool {
    attrs.resource.group.is_empty()
        && attrs.resource.version == "v1"
        && attrs.resource.plural == "namespaces"
}

/// The namespace of the request as kube's attributes have it: a namespace object's own name.
pub fn request_namespace(attrs: &Attributes) -> &str {
    if attrs.namespace.is_empty() && attrs.resource.plural == "namespaces" {
        &attrs.name
    } else {
        &attrs.namespace
    }
}

fn exact_or_wildcard(items: &[String], requested: &str) -> bool {
    items.iter().any(|i| i == "*" || i == requested)
}

/// Whether `rule` matches the request (`rules.Matcher.Matches`).
pub fn rule_matches(rule: &Rule, attrs: &Attributes) -> bool {
    rule_matches_resource(rule, attrs, attrs.resource)
}

/// Whether `rule` matches the request were it for `resource` (kube's `attrWithResourceOverride`).
fn rule_matches_resource(rule: &Rule, attrs: &Attributes, resource: &ResourceInfo) -> bool {
    let scope = match rule.scope.as_str() {
        "" | "*" => true,
        "Namespaced" => !is_namespace_resource(attrs) && !request_namespace(attrs).is_empty(),
        "Cluster" => is_namespace_resource(attrs) || request_namespace(attrs).is_empty(),
        _ => false,
    };
    let operation = rule
        .operations
        .iter()
        .any(|op| op == "*" || op == attrs.operation.as_str());
    let named = rule.resources.iter().any(|r| {
        let (res, sub) = r.split_once('/').unwrap_or((r, ""));
        (res == "*" || res == resource.plural) && (sub == "*" || sub == attrs.subresource)
    });
    scope
        && operation
        && exact_or_wildcard(&rule.api_groups, resource.group)
        && exact_or_wildcard(&rule.api_versions, resource.version)
        && named
}

/// The labels of the request's namespace, where the namespace selector needs them
/// (`namespace.Matcher.GetNamespaceLabels`): a namespace being created or updated is judged by
/// its new labels, any other request by the stored namespace's. `Ok(None)`: the namespace does
/// not exist.
fn namespace_labels(
    attrs: &Attributes,
    stored: &dyn Fn(&str) -> Option<BTreeMap<String, String>>,
) -> Option<BTreeMap<String, String>> {
    if attrs.resource.plural == "namespaces"
        && attrs.resource.group.is_empty()
        && attrs.subresource.is_empty()
        && matches!(attrs.operation, Operation::Create | Operation::Update)
    {
        return Some(attrs.object().map(object::labels).unwrap_or_default());
    }
    stored(request_namespace(attrs))
}

/// The namespace selector (`namespace.Matcher.MatchNamespaceSelector`): cluster-scoped objects
/// other than namespaces always match; a missing namespace is answered 404 as kube does.
pub fn namespace_matches(
    hook: &Hook,
    attrs: &Attributes,
    stored: &dyn Fn(&str) -> Option<BTreeMap<String, String>>,
) -> ApiResult<bool> {
    namespace_selector_matches(
        &hook.namespace_selector,
        hook.namespace_selector_empty,
        attrs,
        stored,
    )
}

/// [`namespace_matches`] for any `namespaceSelector` (`empty`: it selects everything).
pub fn namespace_selector_matches(
    selector: &Result<Selector, String>,
    empty: bool,
    attrs: &Attributes,
    stored: &dyn Fn(&str) -> Option<BTreeMap<String, String>>,
) -> ApiResult<bool> {
    let namespace = request_namespace(attrs);
    if namespace.is_empty() && attrs.resource.plural != "namespaces" {
        return Ok(true);
    }
    let selector = match selector {
        Ok(s) => s,
        Err(e) => return Err(ApiError::internal("invalid namespaceSelector", e)),
    };
    if empty {
        return Ok(true);
    }
    match namespace_labels(attrs, stored) {
        Some(labels) => Ok(selector.matches(&labels)),
        None => Err(ApiError::not_found(namespaces(), namespace)),
    }
}

/// The object selector (`object.Matcher.MatchObjectSelector`): the object or the old object
/// must match.
pub fn object_matches(hook: &Hook, attrs: &Attributes) -> ApiResult<bool> {
    object_selector_matches(&hook.object_selector, hook.object_selector_empty, attrs)
}

/// [`object_matches`] for any `objectSelector` (`empty`: it selects everything).
pub fn object_selector_matches(
    selector: &Result<Selector, String>,
    empty: bool,
    attrs: &Attributes,
) -> ApiResult<bool> {
    let selector = match selector {
        Ok(s) => s,
        Err(e) => return Err(ApiError::internal("invalid objectSelector", e)),
    };
    if empty {
        return Ok(true);
    }
    let matches =
        |o: Option<&serde_json::Value>| o.is_some_and(|o| selector.matches(&object::labels(o)));
    Ok(matches(attrs.object()) || matches(attrs.old_object()))
}

/// The resource and kind a webhook is called with (`generic.WebhookInvocation`): the request's,
/// or, with `matchPolicy: Equivalent`, another served version of its resource that a rule names.
#[derive(Clone, Copy, Debug)]
pub struct Invocation {
    /// The resource (`request.resource`).
    pub resource: &'static ResourceInfo,
    /// The kind of the object sent (`request.kind`).
    pub kind: Kind,
}

/// The other served versions of `resource`: the same group and resource in another version
/// (`EquivalentResourceMapper.EquivalentResourcesFor`), built-in ones in discovery order, then
/// custom resources.
pub fn equivalents(resource: &'static ResourceInfo) -> Vec<&'static ResourceInfo> {
    catalog::all()
        .iter()
        .chain(rkcm_apimachinery::custom_resources::all())
        .filter(|r| {
            r.group == resource.group
                && r.plural == resource.plural
                && r.version != resource.version
        })
        .collect()
}

/// The kind exchanged with `subresource` of `resource` (`EquivalentResourceMapper.KindFor`).
fn kind_for(resource: &'static ResourceInfo, subresource: &str) -> Option<Kind> {
    if subresource.is_empty() {
        return Some(Kind {
            group: resource.group,
            version: resource.version,
            kind: resource.kind,
        });
    }
    let sub = resource.subresource(subresource)?;
    Some(Kind {
        group: sub.group,
        version: sub.version,
        kind: sub.kind,
    })
}

/// The resource `hook`'s rules name for the request: its own, or with `matchPolicy:
/// Equivalent` the first equivalent one (rules in order, each against every equivalent).
pub fn invocation(hook: &Hook, attrs: &Attributes) -> ApiResult<Option<Invocation>> {
    if hook.rules.iter().any(|r| rule_matches(r, attrs)) {
        return Ok(Some(Invocation {
            resource: attrs.resource,
            kind: attrs.kind,
        }));
    }
    if !hook.match_equivalent {
        return Ok(None);
    }
    let equivalents = equivalents(attrs.resource);
    for rule in &hook.rules {
        for equivalent in &equivalents {
            if !rule_matches_resource(rule, attrs, equivalent) {
                continue;
            }
            let Some(kind) = kind_for(equivalent, attrs.subresource) else {
                return Err(ApiError::new(
                    500,
                    "InternalError",
                    format!(
                        "Internal error occurred: unable to convert to {}/{}, Resource={}: unknown kind",
                        equivalent.group, equivalent.version, equivalent.plural
                    ),
                ));
            };
            return Ok(Some(Invocation {
                resource: equivalent,
                kind,
            }));
        }
    }
    Ok(None)
}

/// Whether `hook` is called for the request, and as what (`generic.Dispatcher.ShouldCallHook`):
/// the selectors' errors only count when a rule matches.
pub fn should_call(
    hook: &Hook,
    attrs: &Attributes,
    stored: &dyn Fn(&str) -> Option<BTreeMap<String, String>>,
) -> ApiResult<Option<Invocation>> {
    let ns = namespace_matches(hook, attrs, stored);
    if matches!(ns, Ok(false)) {
        return Ok(None);
    }
    let obj = object_matches(hook, attrs);
    if matches!(obj, Ok(false)) {
        return Ok(None);
    }
    let Some(invocation) = invocation(hook, attrs)? else {
        return Ok(None);
    };
    ns?;
    obj?;
    Ok(Some(invocation))
}

fn namespaces() -> &'static rkcm_apimachinery::catalog::ResourceInfo {
    rkcm_apimachinery::catalog::by_kind("v1", "Namespace").expect("namespaces are in the catalog")
}

#[cfg(test)]
mod tests {
    use super::*;
    use rkcm_apimachinery::catalog::{self, ResourceInfo};
    use rkcm_server::auth::UserInfo;
    use serde_json::{json, Value};
    use std::sync::Arc;

    fn info(api_version: &str, kind: &str) -> &'static ResourceInfo {
        catalog::by_kind(api_version, kind).expect(kind)
    }

    fn attrs(
        op: Operation,
        resource: &'static ResourceInfo,
        sub: &'static str,
        namespace: Option<&str>,
        name: &str,
        obj: Option<Value>,
        old: Option<Value>,
    ) -> Attributes {
        Attributes::new(
            op,
            resource,
            sub,
            namespace,
            name,
            obj,
            old.map(Arc::new),
            Arc::new(UserInfo::default()),
            false,
        )
    }

    fn pod_create(sub: &'static str) -> Attributes {
        attrs(
            Operation::Create,
            info("v1", "Pod"),
            sub,
            Some("ns"),
            "p",
            Some(json!({"metadata": {"name": "p"}})),
            None,
        )
    }

    fn rule(
        ops: &[&str],
        groups: &[&str],
        versions: &[&str],
        resources: &[&str],
        scope: &str,
    ) -> Rule {
        let s = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
        Rule {
            operations: s(ops),
            api_groups: s(groups),
            api_versions: s(versions),
            resources: s(resources),
            scope: scope.to_string(),
        }
    }

    fn hook(v: Value) -> Hook {
        Hook::decode("config", &v)
    }

    // rules_test.go TestGroup, TestVersion, TestOperation, TestResource, TestScope.
    #[test]
    fn groups_versions_and_operations_match_exactly_or_by_wildcard() {
        let a = pod_create("");
        assert!(rule_matches(
            &rule(&["CREATE"], &[""], &["v1"], &["pods"], "*"),
            &a
        ));
        assert!(rule_matches(&rule(&["*"], &["*"], &["*"], &["*"], "*"), &a));
        assert!(!rule_matches(
            &rule(&["UPDATE"], &[""], &["v1"], &["pods"], "*"),
            &a
        ));
        assert!(rule_matches(
            &rule(&["UPDATE", "CREATE"], &[""], &["v1"], &["pods"], "*"),
            &a
        ));
        assert!(!rule_matches(
            &rule(&["*"], &["apps"], &["v1"], &["pods"], "*"),
            &a
        ));
        assert!(!rule_matches(
            &rule(&["*"], &[""], &["v2"], &["pods"], "*"),
            &a
        ));
        assert!(!rule_matches(
            &rule(&[], &[""], &["v1"], &["pods"], "*"),
            &a
        ));
        let deploy = attrs(
            Operation::Update,
            info("apps/v1", "Deployment"),
            "",
            Some("ns"),
            "d",
            None,
            None,
        );
        assert!(rule_matches(
            &rule(&["UPDATE"], &["apps"], &["v1"], &["deployments"], "*"),
            &deploy
        ));
        assert!(!rule_matches(
            &rule(&["UPDATE"], &["", "extensions"], &["*"], &["*"], "*"),
            &deploy
        ));
    }

    #[test]
    fn resources_with_subresources() {
        let main = pod_create("");
        let status = pod_create("status");
        let exec = pod_create("exec");
        let r = |res: &[&str]| rule(&["*"], &["*"], &["*"], res, "*");
        assert!(rule_matches(&r(&["pods"]), &main));
        assert!(!rule_matches(&r(&["pods"]), &status));
        assert!(rule_matches(&r(&["*"]), &main));
        assert!(!rule_matches(&r(&["*"]), &status));
        assert!(rule_matches(&r(&["*/*"]), &main));
        assert!(rule_matches(&r(&["*/*"]), &status));
        assert!(rule_matches(&r(&["pods/*"]), &status));
        assert!(rule_matches(&r(&["pods/*"]), &exec));
        // As kube's matcher: `/*` also matches the resource itself.
        assert!(rule_matches(&r(&["pods/*"]), &main));
        assert!(rule_matches(&r(&["*/status"]), &status));
        assert!(!rule_matches(&r(&["*/status"]), &exec));
        assert!(rule_matches(&r(&["pods/status"]), &status));
        assert!(!rule_matches(&r(&["services/status"]), &status));
        assert!(!rule_matches(&r(&[]), &main));
    }

    #[test]
    fn scopes_treat_namespace_objects_as_cluster_scoped() {
        let namespaced = pod_create("");
        let node = attrs(
            Operation::Create,
            info("v1", "Node"),
            "",
            None,
            "n",
            None,
            None,
        );
        let namespace = attrs(
            Operation::Create,
            info("v1", "Namespace"),
            "",
            None,
            "ns",
            Some(json!({"metadata": {"name": "ns"}})),
            None,
        );
        let r = |scope: &str| rule(&["*"], &["*"], &["*"], &["*"], scope);
        for a in [&namespaced, &node, &namespace] {
            assert!(rule_matches(&r("*"), a));
            assert!(!rule_matches(&r("Other"), a));
        }
        assert!(rule_matches(&r("Namespaced"), &namespaced));
        assert!(!rule_matches(&r("Cluster"), &namespaced));
        assert!(rule_matches(&r("Cluster"), &node));
        assert!(!rule_matches(&r("Namespaced"), &node));
        assert!(rule_matches(&r("Cluster"), &namespace));
        assert!(!rule_matches(&r("Namespaced"), &namespace));
    }

    #[test]
    fn webhook_and_policy_configurations_are_exempt() {
        for kind in [
            "ValidatingWebhookConfiguration",
            "MutatingWebhookConfiguration",
            "ValidatingAdmissionPolicy",
            "ValidatingAdmissionPolicyBinding",
        ] {
            let a = attrs(
                Operation::Create,
                info("admissionregistration.k8s.io/v1", kind),
                "",
                None,
                "x",
                None,
                None,
            );
            assert!(is_exempt(&a), "{kind}");
        }
        assert!(!is_exempt(&pod_create("")));
    }

    fn labels_of(ns: &str) -> Option<BTreeMap<String, String>> {
        match ns {
            "runlevel0" => Some(BTreeMap::from([("runlevel".into(), "0".into())])),
            "plain" => Some(BTreeMap::new()),
            _ => None,
        }
    }

    // namespace/matcher_test.go TestGetNamespaceLabels, TestNotExemptClusterScopedResource.
    #[test]
    fn namespace_selector_reads_the_namespace_and_the_namespace_object_itself() {
        let h = hook(json!({"name": "w", "namespaceSelector": {
            "matchExpressions": [{"key": "runlevel", "operator": "NotIn", "values": ["0", "1"]}]
        }}));
        let in_ns = |ns: &str| {
            attrs(
                Operation::Create,
                info("v1", "Pod"),
                "",
                Some(ns),
                "p",
                Some(json!({})),
                None,
            )
        };
        assert!(!namespace_matches(&h, &in_ns("runlevel0"), &labels_of).expect("found"));
        assert!(namespace_matches(&h, &in_ns("plain"), &labels_of).expect("found"));
        let missing = namespace_matches(&h, &in_ns("missing"), &labels_of).expect_err("404");
        assert_eq!(missing.code, 404);
        assert_eq!(missing.message, "namespaces \"missing\" not found");

        let ns_object = |op, labels: Value| {
            attrs(
                op,
                info("v1", "Namespace"),
                "",
                None,
                "runlevel0",
                Some(json!({"metadata": {"name": "runlevel0", "labels": labels}})),
                None,
            )
        };
        // A namespace being created or updated is judged by its new labels.
        assert!(
            namespace_matches(&h, &ns_object(Operation::Create, json!({})), &labels_of)
                .expect("ok")
        );
        assert!(
            namespace_matches(&h, &ns_object(Operation::Update, json!({})), &labels_of)
                .expect("ok")
        );
        assert!(!namespace_matches(
            &h,
            &ns_object(Operation::Create, json!({"runlevel": "1"})),
            &labels_of
        )
        .expect("ok"));
        // A delete by the stored one.
        let delete = attrs(
            Operation::Delete,
            info("v1", "Namespace"),
            "",
            None,
            "runlevel0",
            None,
            None,
        );
        assert!(!namespace_matches(&h, &delete, &labels_of).expect("ok"));

        // Cluster-scoped objects always match.
        let node = attrs(
            Operation::Create,
            info("v1", "Node"),
            "",
            None,
            "n",
            None,
            None,
        );
        assert!(namespace_matches(&h, &node, &labels_of).expect("ok"));
        // An empty selector matches without reading the namespace.
        let all = hook(json!({"name": "w", "namespaceSelector": {}}));
        assert!(namespace_matches(&all, &in_ns("missing"), &labels_of).expect("ok"));
    }

    // object/matcher_test.go TestObjectSelector.
    #[test]
    fn object_selector_matches_the_object_or_the_old_object() {
        let h = hook(json!({"name": "w", "objectSelector": {"matchLabels": {"runlevel": "0"}}}));
        let with = |obj: Option<Value>, old: Option<Value>| {
            attrs(
                Operation::Update,
                info("v1", "Pod"),
                "",
                Some("ns"),
                "p",
                obj,
                old,
            )
        };
        let l0 = || Some(json!({"metadata": {"labels": {"runlevel": "0"}}}));
        let l1 = || Some(json!({"metadata": {"labels": {"runlevel": "1"}}}));
        assert!(object_matches(&h, &with(l0(), None)).expect("ok"));
        assert!(object_matches(&h, &with(l1(), l0())).expect("ok"));
        assert!(object_matches(&h, &with(None, l0())).expect("ok"));
        assert!(!object_matches(&h, &with(l1(), l1())).expect("ok"));
        assert!(!object_matches(&h, &with(None, None)).expect("ok"));
        let all = hook(json!({"name": "w"}));
        assert!(object_matches(&all, &with(None, None)).expect("ok"));
    }

    #[test]
    fn should_call_needs_a_rule_and_both_selectors() {
        let h = hook(json!({
            "name": "w",
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}],
            "namespaceSelector": {"matchLabels": {"runlevel": "0"}},
        }));
        let pod = |ns: &str| {
            attrs(
                Operation::Create,
                info("v1", "Pod"),
                "",
                Some(ns),
                "p",
                Some(json!({})),
                None,
            )
        };
        assert!(should_call(&h, &pod("runlevel0"), &labels_of)
            .expect("ok")
            .is_some());
        assert!(should_call(&h, &pod("plain"), &labels_of)
            .expect("ok")
            .is_none());
        assert_eq!(
            should_call(&h, &pod("missing"), &labels_of)
                .expect_err("404")
                .code,
            404
        );
        let cm = attrs(
            Operation::Create,
            info("v1", "ConfigMap"),
            "",
            Some("missing"),
            "c",
            Some(json!({})),
            None,
        );
        assert!(should_call(&h, &cm, &labels_of)
            .expect("no rule matches, so no error")
            .is_none());
    }

    fn hpa_update(sub: &'static str) -> Attributes {
        attrs(
            Operation::Update,
            info("autoscaling/v2", "HorizontalPodAutoscaler"),
            sub,
            Some("ns"),
            "h",
            Some(json!({})),
            Some(json!({})),
        )
    }

    fn hpa_hook(policy: &str, versions: &[&str], resources: &[&str]) -> Hook {
        hook(json!({"name": "w", "matchPolicy": policy, "rules": [
            {"operations": ["*"], "apiGroups": ["autoscaling"], "apiVersions": versions, "resources": resources},
        ]}))
    }

    // webhook_test.go TestShouldCallHook: "match with equivalent resource", "no match with
    // exact policy", "match exact resource first".
    #[test]
    fn equivalent_versions_of_the_resource_match_unless_the_policy_is_exact() {
        let a = hpa_update("");
        let inv = invocation(
            &hpa_hook("Equivalent", &["v1"], &["horizontalpodautoscalers"]),
            &a,
        )
        .expect("ok")
        .expect("the v1 rule matches the v2 request");
        assert_eq!(inv.resource.version, "v1");
        assert_eq!(
            (inv.kind.group, inv.kind.version, inv.kind.kind),
            ("autoscaling", "v1", "HorizontalPodAutoscaler")
        );
        // matchPolicy absent is Equivalent.
        let defaulted = hook(json!({"name": "w", "rules": [{"operations": ["*"],
            "apiGroups": ["autoscaling"], "apiVersions": ["v1"], "resources": ["*"]}]}));
        assert!(invocation(&defaulted, &a).expect("ok").is_some());
        assert!(invocation(
            &hpa_hook("Exact", &["v1"], &["horizontalpodautoscalers"]),
            &a
        )
        .expect("ok")
        .is_none());
        let both = invocation(&hpa_hook("Equivalent", &["v1", "v2"], &["*"]), &a)
            .expect("ok")
            .expect("matches");
        assert_eq!(inv.resource.plural, both.resource.plural);
        assert_eq!(
            both.resource.version, "v2",
            "the request's own version first"
        );
        // The subresource must match too, and keeps its kind.
        let status = hpa_update("status");
        assert!(invocation(
            &hpa_hook("Equivalent", &["v1"], &["horizontalpodautoscalers"]),
            &status
        )
        .expect("ok")
        .is_none());
        let inv = invocation(
            &hpa_hook("Equivalent", &["v1"], &["horizontalpodautoscalers/status"]),
            &status,
        )
        .expect("ok")
        .expect("matches");
        assert_eq!(
            (inv.resource.version, inv.kind.kind),
            ("v1", "HorizontalPodAutoscaler")
        );
        // Another resource of the group is not equivalent.
        assert!(
            invocation(&hpa_hook("Equivalent", &["v1"], &["scales"]), &a)
                .expect("ok")
                .is_none()
        );
    }

    #[test]
    fn equivalents_are_the_other_versions_of_the_group_and_resource() {
        let v2 = info("autoscaling/v2", "HorizontalPodAutoscaler");
        let versions: Vec<_> = equivalents(v2).iter().map(|r| r.version).collect();
        assert_eq!(versions, ["v1"]);
        assert!(equivalents(info("v1", "Pod")).is_empty());
    }
}
