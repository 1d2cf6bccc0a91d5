//! Escalation prevention on RBAC writes: a user may create or update a Role or ClusterRole only
//! with rules they hold (or with `escalate` on it), and bind a role only if they hold its rules
//! (or have `bind` on it); `system:masters` may do anything
//! (`pkg/registry/rbac/{role,clusterrole,rolebinding,clusterrolebinding}/policybased/storage.go`,
//! `pkg/registry/rbac/escalation_check.go`, `ConfirmNoEscalation` of
//! `pkg/registry/rbac/validation/rule.go`).

use std::collections::BTreeSet;

use k8s_openapi::api::rbac::v1::{PolicyRule, RoleRef};
use serde_json::Value;

use super::authorization::covers::covers;
use super::authorization::forbidden::new_forbidden;
use super::authorization::rbac::{role_reference_rules, rules_for};
use super::authorization::rules::rule;
use super::authorization::{Attributes, Authorizer};
use super::user::{UserInfo, SYSTEM_MASTERS};
use rkcm_apimachinery::catalog::ResourceInfo;
use rkcm_server::error::{ApiError, ApiResult};
use rkcm_server::http::handlers::WriteCheck;

const GROUP: &str = "rbac.authorization.k8s.io";

/// `%q` of a Go string slice: `["a" "b"]`.
fn quoted(list: &[String]) -> String {
    let items: Vec<String> = list.iter().map(|s| format!("{s:?}")).collect();
    format!("[{}]", items.join(" "))
}

/// `CompactString`: `{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}`.
pub fn compact_string(r: &PolicyRule) -> String {
    let mut parts = Vec::new();
    for (label, list) in [
        ("APIGroups", r.api_groups.as_deref()),
        ("Resources", r.resources.as_deref()),
        ("NonResourceURLs", r.non_resource_urls.as_deref()),
        ("ResourceNames", r.resource_names.as_deref()),
        ("Verbs", Some(r.verbs.as_slice())),
    ] {
        if let Some(l) = list.filter(|l| !l.is_empty()) {
            parts.push(format!("{label}:{}", quoted(l)));
        }
    }
    format!("{{{}}}", parts.join(", "))
}

/// Group, resource and at most one name of a rule that can be merged (`simpleResource`).
type SimpleResource = (String, String, Option<String>);

/// `CompactRules`: rules on one group and one resource (and at most one name) that differ only
/// in verbs are merged.
pub fn compact_rules(rules: &[PolicyRule]) -> Vec<PolicyRule> {
    let mut out: Vec<PolicyRule> = Vec::new();
    let mut simple: Vec<(SimpleResource, PolicyRule)> = Vec::new();
    for r in rules {
        let names = r.resource_names.as_deref().unwrap_or(&[]);
        let groups = r.api_groups.as_deref().unwrap_or(&[]);
        let resources = r.resources.as_deref().unwrap_or(&[]);
        let is_simple = names.len() <= 1
            && r.non_resource_urls.as_deref().unwrap_or(&[]).is_empty()
            && groups.len() == 1
            && resources.len() == 1;
        if !is_simple {
            out.push(r.clone());
            continue;
        }
        let key = (
            groups[0].clone(),
            resources[0].clone(),
            names.first().cloned(),
        );
        match simple.iter_mut().find(|(k, _)| *k == key) {
            Some((_, existing)) => existing.verbs.extend(r.verbs.iter().cloned()),
            None => simple.push((key, r.clone())),
        }
    }
    out.extend(simple.into_iter().map(|(_, r)| r));
    out
}

/// `ConfirmNoEscalation`: `Err` with kube's message listing the rules `user` lacks in
/// `namespace` (empty: cluster-wide) among `rules`.
pub fn confirm_no_escalation(
    authorizer: &Authorizer,
    user: &UserInfo,
    namespace: &str,
    rules: &[PolicyRule],
) -> Result<(), String> {
    let (owner, errors) = rules_for(authorizer.source(), user, namespace);
    let (ok, missing) = covers(&owner, rules);
    if ok {
        return Ok(());
    }
    let lines: BTreeSet<String> = compact_rules(&missing).iter().map(compact_string).collect();
    let mut msg = format!(
        "user {:?} (groups={}) is attempting to grant RBAC permissions not currently held:\n{}",
        user.name,
        quoted(&user.groups),
        lines.into_iter().collect::<Vec<_>>().join("\n")
    );
    if !errors.is_empty() {
        msg.push_str(&format!("; resolution errors: [{}]", errors.join(" ")));
    }
    Err(msg)
}

/// `EscalationAllowed`: members of `system:masters`.
fn escalation_allowed(user: &UserInfo) -> bool {
    user.groups.iter().any(|g| g == SYSTEM_MASTERS)
}

fn rules_of(obj: &Value) -> Vec<PolicyRule> {
    obj.get("rules")
        .and_then(|r| serde_json::from_value(r.clone()).ok())
        .unwrap_or_default()
}

/// The check of a Role or ClusterRole `obj` written by `user` (`name` is the path's: empty on
/// create): allowed with `escalate` on it, else only with the rules it grants, and an
/// aggregation rule only with full authority.
pub fn check_role(
    authorizer: &Authorizer,
    user: &UserInfo,
    resource: &str,
    namespace: &str,
    name: &str,
    obj: &Value,
) -> ApiResult<()> {
    if escalation_allowed(user) {
        return Ok(());
    }
    let escalate = Attributes {
        api_version: "*".into(),
        ..Attributes::resource(user.clone(), "escalate", GROUP, resource, namespace, name)
    };
    if authorizer.authorize(&escalate).is_allowed() {
        return Ok(());
    }
    let object_name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or(name);
    confirm_no_escalation(authorizer, user, namespace, &rules_of(obj))
        .map_err(|why| new_forbidden(GROUP, resource, object_name, &why))?;
    if obj.get("aggregationRule").is_some_and(|a| !a.is_null()) {
        let full = [
            rule(&["*"], &["*"], &["*"], &[], &[]),
            rule(&["*"], &[], &[], &[], &["*"]),
        ];
        confirm_no_escalation(authorizer, user, namespace, &full).map_err(|_| {
            new_forbidden(
                GROUP,
                resource,
                object_name,
                "must have cluster-admin privileges to use the aggregationRule",
            )
        })?;
    }
    Ok(())
}

/// The check of a RoleBinding or ClusterRoleBinding `obj` written by `user` in `namespace`
/// (empty for ClusterRoleBindings): allowed with `bind` on the role it refers to, else only
/// when `user` holds the role's rules.
pub fn check_binding(
    authorizer: &Authorizer,
    user: &UserInfo,
    resource: &str,
    namespace: &str,
    obj: &Value,
) -> ApiResult<()> {
    if escalation_allowed(user) {
        return Ok(());
    }
    let Some(role_ref) = obj
        .get("roleRef")
        .and_then(|r| serde_json::from_value::<RoleRef>(r.clone()).ok())
    else {
        // Validation refuses a binding without a role reference.
        return Ok(());
    };
    let role_resource = match role_ref.kind.as_str() {
        "ClusterRole" => Some("clusterroles"),
        "Role" => Some("roles"),
        _ => None,
    };
    if let Some(role_resource) = role_resource {
        let bind = Attributes::resource(
            user.clone(),
            "bind",
            &role_ref.api_group,
            role_resource,
            namespace,
            &role_ref.name,
        );
        if authorizer.authorize(&bind).is_allowed() {
            return Ok(());
        }
    }
    let rules = role_reference_rules(authorizer.source(), &role_ref, namespace).map_err(|e| {
        ApiError::new(
            500,
            "InternalError",
            format!("Internal error occurred: {e}"),
        )
    })?;
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    confirm_no_escalation(authorizer, user, namespace, &rules)
        .map_err(|why| new_forbidden(GROUP, resource, name, &why))
}

/// The escalation check of a write of `obj` to `resource` of `rbac.authorization.k8s.io`, if
/// it is one of the four RBAC kinds.
pub fn check_write(
    authorizer: &Authorizer,
    user: Option<&UserInfo>,
    resource: &str,
    namespace: &str,
    name: &str,
    obj: &Value,
) -> ApiResult<()> {
    let Some(user) = user else {
        return Ok(());
    };
    match resource {
        "roles" | "clusterroles" => check_role(authorizer, user, resource, namespace, name, obj),
        "rolebindings" | "clusterrolebindings" => {
            check_binding(authorizer, user, resource, namespace, obj)
        }
        _ => Ok(()),
    }
}

/// RBAC's escalation check as the generic handlers' [`WriteCheck`]: writes of roles and
/// bindings by a client are checked, every other write passes.
impl WriteCheck for Authorizer {
    fn check_write(
        &self,
        user: Option<&UserInfo>,
        info: &ResourceInfo,
        namespace: &str,
        name: &str,
        obj: &Value,
    ) -> ApiResult<()> {
        if info.group != GROUP {
            return Ok(());
        }
        check_write(self, user, info.plural, namespace, name, obj)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::auth::authorization::rbac::tests::{
        cluster_role, cluster_role_binding, role_binding,
    };
    use crate::auth::authorization::{Mode, StaticPolicy};
    use serde_json::json;

    fn authorizer() -> Authorizer {
        let policy = StaticPolicy {
            cluster_roles: vec![
                cluster_role(
                    "pods",
                    vec![rule(&["get", "list"], &[""], &["pods"], &[], &[])],
                ),
                cluster_role(
                    "secrets-admin",
                    vec![rule(&["*"], &[""], &["secrets"], &[], &[])],
                ),
                cluster_role(
                    "binder",
                    vec![rule(
                        &["bind"],
                        &["rbac.authorization.k8s.io"],
                        &["clusterroles"],
                        &["secrets-admin"],
                        &[],
                    )],
                ),
                cluster_role(
                    "escalator",
                    vec![rule(
                        &["escalate"],
                        &["rbac.authorization.k8s.io"],
                        &["roles"],
                        &[],
                        &[],
                    )],
                ),
            ],
            cluster_role_bindings: vec![cluster_role_binding(
                "pods",
                &["User:jane", "User:bind", "User:esc"],
            )],
            role_bindings: vec![
                role_binding("ns", "ClusterRole", "binder", &["User:bind"]),
                role_binding("ns", "ClusterRole", "escalator", &["User:esc"]),
            ],
            ..StaticPolicy::default()
        };
        Authorizer::new(vec![Mode::Rbac], Arc::new(policy))
    }

    fn user(name: &str) -> UserInfo {
        UserInfo::new(name, &["system:authenticated"])
    }

    /// Cases of `TestCompactRules` and `TestCompactString` (rule_test.go, helpers_test.go).
    #[test]
    fn missing_rules_are_compacted_and_described_as_kube_does() {
        let rules = [
            rule(&["get"], &[""], &["secrets"], &[], &[]),
            rule(&["list"], &[""], &["secrets"], &[], &[]),
            rule(&["get"], &[""], &["pods", "services"], &[], &[]),
            rule(&["get"], &[], &[], &[], &["/metrics"]),
        ];
        let compacted = compact_rules(&rules);
        assert_eq!(compacted.len(), 3);
        assert!(compacted.contains(&rule(&["get", "list"], &[""], &["secrets"], &[], &[])));
        assert_eq!(
            compact_string(&rule(&["get", "list"], &[""], &["secrets"], &[], &[])),
            "{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\" \"list\"]}"
        );
        assert_eq!(
            compact_string(&rule(&["get"], &[], &[], &[], &["/metrics"])),
            "{NonResourceURLs:[\"/metrics\"], Verbs:[\"get\"]}"
        );
        assert_eq!(compact_string(&rule(&["get"], &["apps"], &["deployments"], &["web"], &[])), "{APIGroups:[\"apps\"], Resources:[\"deployments\"], ResourceNames:[\"web\"], Verbs:[\"get\"]}");
    }

    #[test]
    fn a_role_granting_more_than_its_author_holds_is_refused() {
        let a = authorizer();
        let held = json!({"metadata": {"name": "r"}, "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]});
        assert!(check_role(&a, &user("jane"), "roles", "ns", "", &held).is_ok());
        let more = json!({"metadata": {"name": "r"}, "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["*"]}]});
        let e = check_role(&a, &user("jane"), "roles", "ns", "", &more).expect_err("escalation");
        assert_eq!(e.code, 403);
        assert_eq!(
            e.message,
            "roles.rbac.authorization.k8s.io \"r\" is forbidden: user \"jane\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"*\"]}"
        );
        // escalate on roles in ns lets it through; system:masters always.
        assert!(check_role(&a, &user("esc"), "roles", "ns", "", &more).is_ok());
        assert!(check_role(&a, &user("esc"), "roles", "other", "", &more).is_err());
        assert!(check_role(
            &a,
            &UserInfo::new("root", &["system:masters"]),
            "roles",
            "ns",
            "",
            &more
        )
        .is_ok());
        // an aggregation rule needs full authority
        let aggregated = json!({"metadata": {"name": "agg"}, "rules": [], "aggregationRule": {"clusterRoleSelectors": [{}]}});
        let e = check_role(&a, &user("jane"), "clusterroles", "", "", &aggregated)
            .expect_err("aggregation");
        assert!(e
            .message
            .ends_with("must have cluster-admin privileges to use the aggregationRule"));
    }

    #[test]
    fn binding_a_role_needs_its_rules_or_bind() {
        let a = authorizer();
        let b = |role: &str| json!({"metadata": {"name": "b"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role}, "subjects": []});
        assert!(check_binding(&a, &user("jane"), "rolebindings", "ns", &b("pods")).is_ok());
        let e = check_binding(&a, &user("jane"), "rolebindings", "ns", &b("secrets-admin"))
            .expect_err("escalation");
        assert!(
            e.message.starts_with(
                "rolebindings.rbac.authorization.k8s.io \"b\" is forbidden: user \"jane\""
            ),
            "{}",
            e.message
        );
        assert!(
            check_binding(&a, &user("bind"), "rolebindings", "ns", &b("secrets-admin")).is_ok()
        );
        assert!(check_binding(
            &a,
            &user("bind"),
            "rolebindings",
            "other",
            &b("secrets-admin")
        )
        .is_err());
        let e = check_binding(&a, &user("jane"), "rolebindings", "ns", &b("missing"))
            .expect_err("missing role");
        assert_eq!((e.code, e.message.as_str()), (500, "Internal error occurred: clusterrole.rbac.authorization.k8s.io \"missing\" not found"));
    }
}
