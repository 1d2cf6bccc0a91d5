//! The RBAC authorizer: the rules bound to a user by ClusterRoleBindings and by the RoleBindings
//! of the request's namespace (`plugin/pkg/auth/authorizer/rbac/rbac.go` and
//! `DefaultRuleResolver` of `pkg/registry/rbac/validation/rule.go`).

use std::sync::Arc;

use k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule, Role, RoleRef, Subject};

use super::policy::PolicySource;
use crate::auth::UserInfo;
use rkcm_server::auth::authorization::attributes::Attributes;
use rkcm_server::auth::authorization::rules::rule_allows;
use rkcm_server::auth::authorization::Decision;

/// Prefix of service-account user names (`serviceaccount.ServiceAccountUsernamePrefix`).
pub const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";

/// The binding a rule came from, as kube describes it in reasons.
#[derive(Clone, Debug, PartialEq)]
pub struct RuleSource {
    /// `ClusterRoleBinding "name"` or `RoleBinding "name/namespace"`.
    binding: String,
    /// The role the binding refers to.
    role_ref: RoleRef,
    /// The subject that matched the user.
    subject: Subject,
}

impl std::fmt::Display for RuleSource {
    /// `ClusterRoleBinding "x" of ClusterRole "y" to User "z"` (`clusterRoleBindingDescriber`,
    /// `roleBindingDescriber`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} of {} {:?} to {}",
            self.binding,
            self.role_ref.kind,
            self.role_ref.name,
            describe_subject(&self.subject, &self.binding_namespace())
        )
    }
}

impl RuleSource {
    fn binding_namespace(&self) -> String {
        self.binding
            .strip_prefix("RoleBinding \"")
            .and_then(|r| r.trim_end_matches('"').rsplit_once('/'))
            .map(|(_, ns)| ns.to_string())
            .unwrap_or_default()
    }
}

/// `describeSubject`: `User "jane"`, `ServiceAccount "bot/ns"`.
fn describe_subject(s: &Subject, binding_namespace: &str) -> String {
    match s.kind.as_str() {
        "ServiceAccount" => {
            let ns = service_account_namespace(s, binding_namespace);
            format!("{} \"{}/{}\"", s.kind, s.name, ns)
        }
        _ => format!("{} {:?}", s.kind, s.name),
    }
}

/// The namespace of a ServiceAccount `subject` of a binding in `binding_namespace` (empty for
/// cluster bindings): its own, or the binding's when it names none.
pub fn service_account_namespace<'a>(subject: &'a Subject, binding_namespace: &'a str) -> &'a str {
    subject
        .namespace
        .as_deref()
        .filter(|n| !n.is_empty())
        .unwrap_or(binding_namespace)
}

/// `serviceaccount.MakeUsername`.
pub fn service_account_username(namespace: &str, name: &str) -> String {
    format!("{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}")
}

/// `appliesToUser`: whether `subject` of a binding in `namespace` (empty for cluster bindings)
/// names `user`. A ServiceAccount subject without a namespace is in the binding's.
pub fn applies_to_user(user: &UserInfo, subject: &Subject, namespace: &str) -> bool {
    match subject.kind.as_str() {
        "User" => user.name == subject.name,
        "Group" => user.groups.contains(&subject.name),
        "ServiceAccount" => {
            let ns = service_account_namespace(subject, namespace);
            !ns.is_empty() && user.name == service_account_username(ns, &subject.name)
        }
        _ => false,
    }
}

/// The rules of a role, shared with the [`PolicySource`] that holds the role.
#[derive(Clone, Debug)]
pub enum RoleRules {
    /// A Role's rules.
    Role(Arc<Role>),
    /// A ClusterRole's rules.
    ClusterRole(Arc<ClusterRole>),
}

impl std::ops::Deref for RoleRules {
    type Target = [PolicyRule];

    fn deref(&self) -> &[PolicyRule] {
        match self {
            RoleRules::Role(r) => r.rules.as_deref().unwrap_or_default(),
            RoleRules::ClusterRole(r) => r.rules.as_deref().unwrap_or_default(),
        }
    }
}

/// `GetRoleReferenceRules`: the rules of the role `role_ref` names, or kube's error text.
pub fn role_reference_rules(
    source: &dyn PolicySource,
    role_ref: &RoleRef,
    binding_namespace: &str,
) -> Result<RoleRules, String> {
    match role_ref.kind.as_str() {
        "Role" => source
            .role(binding_namespace, &role_ref.name)
            .map(RoleRules::Role)
            .ok_or_else(|| {
                format!(
                    "role.rbac.authorization.k8s.io {:?} not found",
                    role_ref.name
                )
            }),
        "ClusterRole" => source
            .cluster_role(&role_ref.name)
            .map(RoleRules::ClusterRole)
            .ok_or_else(|| {
                format!(
                    "clusterrole.rbac.authorization.k8s.io {:?} not found",
                    role_ref.name
                )
            }),
        other => Err(format!("unsupported role reference kind: {other:?}")),
    }
}

/// What [`visit_rules_for`] hands its visitor: a rule with the binding it came from, or the
/// error of a binding whose role is missing.
pub type Visited<'a> = Result<(&'a RuleSource, &'a PolicyRule), &'a str>;

/// `VisitRulesFor`: calls `visit` with every rule bound to `user` cluster-wide, then in
/// `namespace` (when not empty), or with the error of a binding whose role is missing; stops
/// when `visit` returns false.
pub fn visit_rules_for(
    source: &dyn PolicySource,
    user: &UserInfo,
    namespace: &str,
    visit: &mut dyn FnMut(Visited<'_>) -> bool,
) {
    for binding in source.cluster_role_bindings(user) {
        let subjects = binding.subjects.as_deref().unwrap_or(&[]);
        let Some(subject) = subjects.iter().find(|s| applies_to_user(user, s, "")) else {
            continue;
        };
        let name = binding.metadata.name.clone().unwrap_or_default();
        match role_reference_rules(source, &binding.role_ref, "") {
            Err(e) => {
                if !visit(Err(&e)) {
                    return;
                }
            }
            Ok(rules) => {
                let described = RuleSource {
                    binding: format!("ClusterRoleBinding {name:?}"),
                    role_ref: binding.role_ref.clone(),
                    subject: subject.clone(),
                };
                for rule in rules.iter() {
                    if !visit(Ok((&described, rule))) {
                        return;
                    }
                }
            }
        }
    }
    if namespace.is_empty() {
        return;
    }
    for binding in source.role_bindings(namespace, user) {
        let subjects = binding.subjects.as_deref().unwrap_or(&[]);
        let Some(subject) = subjects
            .iter()
            .find(|s| applies_to_user(user, s, namespace))
        else {
            continue;
        };
        let name = binding.metadata.name.clone().unwrap_or_default();
        match role_reference_rules(source, &binding.role_ref, namespace) {
            Err(e) => {
                if !visit(Err(&e)) {
                    return;
                }
            }
            Ok(rules) => {
                let described = RuleSource {
                    binding: format!("RoleBinding \"{name}/{namespace}\""),
                    role_ref: binding.role_ref.clone(),
                    subject: subject.clone(),
                };
                for rule in rules.iter() {
                    if !visit(Ok((&described, rule))) {
                        return;
                    }
                }
            }
        }
    }
}

/// `RulesFor`: every rule bound to `user` in `namespace`, and the errors met on the way.
pub fn rules_for(
    source: &dyn PolicySource,
    user: &UserInfo,
    namespace: &str,
) -> (Vec<PolicyRule>, Vec<String>) {
    let mut rules = Vec::new();
    let mut errors = Vec::new();
    visit_rules_for(source, user, namespace, &mut |r| {
        match r {
            Ok((_, rule)) => rules.push(rule.clone()),
            Err(e) => errors.push(e.to_string()),
        }
        true
    });
    (rules, errors)
}

/// kube's `utilerrors.NewAggregate(errs).Error()`: one message alone, several in brackets.
pub fn aggregate(errors: &[String]) -> String {
    match errors {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// `RBACAuthorizer.Authorize`: allowed with the granting binding as reason, or no opinion with
/// the lookup errors met (`RBAC: ...`) as reason.
pub fn authorize(source: &dyn PolicySource, attrs: &Attributes) -> Decision {
    let mut allowed = None;
    let mut errors = Vec::new();
    visit_rules_for(source, &attrs.user, &attrs.namespace, &mut |r| match r {
        Ok((from, rule)) => {
            if rule_allows(attrs, rule) {
                allowed = Some(format!("RBAC: allowed by {from}"));
                return false;
            }
            true
        }
        Err(e) => {
            errors.push(e.to_string());
            true
        }
    });
    match allowed {
        Some(reason) => Decision::Allow(reason),
        None if errors.is_empty() => Decision::NoOpinion(String::new()),
        None => Decision::NoOpinion(format!("RBAC: {}", aggregate(&errors))),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::auth::authorization::policy::StaticPolicy;
    use crate::auth::authorization::rules::rule;
    use k8s_openapi::api::rbac::v1::{ClusterRoleBinding, RoleBinding};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn meta(ns: &str, name: &str) -> ObjectMeta {
        ObjectMeta {
            name: Some(name.into()),
            namespace: (!ns.is_empty()).then(|| ns.to_string()),
            ..ObjectMeta::default()
        }
    }

    /// `newRole`/`newClusterRole` of rbac_test.go.
    pub(crate) fn cluster_role(name: &str, rules: Vec<PolicyRule>) -> ClusterRole {
        ClusterRole {
            metadata: meta("", name),
            rules: Some(rules),
            ..ClusterRole::default()
        }
    }

    pub(crate) fn role(ns: &str, name: &str, rules: Vec<PolicyRule>) -> Role {
        Role {
            metadata: meta(ns, name),
            rules: Some(rules),
        }
    }

    /// A subject from kube's test shorthand: `User:x`, `Group:x`, `ServiceAccount:ns:x`.
    pub(crate) fn subject(s: &str) -> Subject {
        let (kind, rest) = s.split_once(':').expect("kind:name");
        match kind {
            "ServiceAccount" => {
                let (ns, name) = rest.split_once(':').expect("ns:name");
                Subject {
                    kind: kind.into(),
                    namespace: Some(ns.into()),
                    name: name.into(),
                    api_group: None,
                }
            }
            _ => Subject {
                kind: kind.into(),
                name: rest.into(),
                api_group: Some("rbac.authorization.k8s.io".into()),
                namespace: None,
            },
        }
    }

    fn role_ref(kind: &str, name: &str) -> RoleRef {
        RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: kind.into(),
            name: name.into(),
        }
    }

    pub(crate) fn cluster_role_binding(role: &str, subjects: &[&str]) -> ClusterRoleBinding {
        ClusterRoleBinding {
            metadata: meta("", role),
            role_ref: role_ref("ClusterRole", role),
            subjects: Some(subjects.iter().map(|s| subject(s)).collect()),
        }
    }

    pub(crate) fn role_binding(ns: &str, kind: &str, role: &str, subjects: &[&str]) -> RoleBinding {
        RoleBinding {
            metadata: meta(ns, role),
            role_ref: role_ref(kind, role),
            subjects: Some(subjects.iter().map(|s| subject(s)).collect()),
        }
    }

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo::new(name, groups)
    }

    fn allowed(source: &StaticPolicy, a: &Attributes) -> bool {
        matches!(authorize(source, a), Decision::Allow(_))
    }

    /// `TestAuthorizer` of rbac_test.go.
    #[test]
    fn the_authorizer_decides_as_kubes() {
        // Case 1: admin role in ns1 bound to "admin".
        let p = StaticPolicy {
            cluster_roles: vec![cluster_role(
                "admin",
                vec![rule(&["*"], &["*"], &["*"], &[], &[])],
            )],
            role_bindings: vec![role_binding(
                "ns1",
                "ClusterRole",
                "admin",
                &["User:admin", "Group:admins"],
            )],
            ..StaticPolicy::default()
        };
        let get = |u: UserInfo, ns: &str| Attributes::resource(u, "get", "", "pods", ns, "");
        assert!(allowed(&p, &get(user("admin", &[]), "ns1")));
        assert!(allowed(&p, &get(user("foo", &["admins"]), "ns1")));
        assert!(!allowed(&p, &get(user("admin", &[]), "ns2")));
        assert!(!allowed(&p, &get(user("foo", &["bar"]), "ns1")));
        assert!(!allowed(&p, &get(user("admin", &[]), "")));

        // Case 2: non-resource URLs granted cluster-wide.
        let p = StaticPolicy {
            cluster_roles: vec![
                cluster_role(
                    "non-resource-url-getter",
                    vec![rule(&["get"], &[], &[], &[], &["/apis"])],
                ),
                cluster_role(
                    "non-resource-url",
                    vec![rule(&["*"], &[], &[], &[], &["/apis"])],
                ),
                cluster_role(
                    "non-resource-url-prefix",
                    vec![rule(&["get"], &[], &[], &[], &["/apis/*"])],
                ),
            ],
            cluster_role_bindings: vec![
                cluster_role_binding("non-resource-url-getter", &["User:foo", "Group:bar"]),
                cluster_role_binding("non-resource-url", &["User:baz"]),
                cluster_role_binding("non-resource-url-prefix", &["User:prefix"]),
            ],
            ..StaticPolicy::default()
        };
        let path = |u: UserInfo, verb: &str, p: &str| Attributes::non_resource(u, verb, p);
        assert!(allowed(&p, &path(user("foo", &[]), "get", "/apis")));
        assert!(allowed(&p, &path(user("foo", &["bar"]), "get", "/apis")));
        assert!(allowed(&p, &path(user("baz", &[]), "get", "/apis")));
        assert!(allowed(&p, &path(user("baz", &[]), "create", "/apis")));
        assert!(!allowed(&p, &path(user("foo", &[]), "create", "/apis")));
        assert!(!allowed(&p, &path(user("foo", &[]), "get", "/apis/v1")));
        assert!(allowed(&p, &path(user("prefix", &[]), "get", "/apis/v1")));
        assert!(!allowed(&p, &path(user("prefix", &[]), "get", "/apis")));

        // Case 3: subresources and resource names.
        let p = StaticPolicy {
            roles: vec![
                role(
                    "ns1",
                    "admin",
                    vec![rule(&["*"], &["*"], &["pods/status"], &[], &[])],
                ),
                role(
                    "ns1",
                    "getter",
                    vec![rule(&["get"], &["*"], &["pods"], &["mypod"], &[])],
                ),
            ],
            role_bindings: vec![
                role_binding("ns1", "Role", "admin", &["User:admin"]),
                role_binding("ns1", "Role", "getter", &["User:getter"]),
            ],
            ..StaticPolicy::default()
        };
        let sub = |u: UserInfo, sub: &str, name: &str| Attributes {
            subresource: sub.into(),
            ..Attributes::resource(u, "get", "", "pods", "ns1", name)
        };
        assert!(allowed(&p, &sub(user("admin", &[]), "status", "")));
        assert!(!allowed(&p, &sub(user("admin", &[]), "foo", "")));
        assert!(!allowed(&p, &sub(user("admin", &[]), "", "")));
        assert!(allowed(&p, &sub(user("getter", &[]), "", "mypod")));
        assert!(!allowed(&p, &sub(user("getter", &[]), "", "other")));
        assert!(!allowed(&p, &sub(user("getter", &[]), "", "")));

        // Service accounts, with the binding's namespace as default.
        let p = StaticPolicy {
            cluster_roles: vec![cluster_role(
                "view",
                vec![rule(&["get"], &[""], &["pods"], &[], &[])],
            )],
            role_bindings: vec![RoleBinding {
                subjects: Some(vec![Subject {
                    kind: "ServiceAccount".into(),
                    name: "bot".into(),
                    ..Subject::default()
                }]),
                ..role_binding("ns1", "ClusterRole", "view", &[])
            }],
            ..StaticPolicy::default()
        };
        assert!(allowed(
            &p,
            &get(user("system:serviceaccount:ns1:bot", &[]), "ns1")
        ));
        assert!(!allowed(
            &p,
            &get(user("system:serviceaccount:ns2:bot", &[]), "ns1")
        ));
    }

    #[test]
    fn missing_roles_are_the_reason_of_a_denial_and_allowed_requests_name_their_binding() {
        let p = StaticPolicy {
            cluster_roles: vec![cluster_role(
                "view",
                vec![rule(&["get"], &[""], &["pods"], &[], &[])],
            )],
            cluster_role_bindings: vec![cluster_role_binding("gone", &["User:jane"])],
            role_bindings: vec![role_binding("ns1", "ClusterRole", "view", &["User:jane"])],
            ..StaticPolicy::default()
        };
        let jane = user("jane", &[]);
        assert_eq!(
            authorize(&p, &Attributes::resource(jane.clone(), "get", "", "pods", "ns1", "")),
            Decision::Allow("RBAC: allowed by RoleBinding \"view/ns1\" of ClusterRole \"view\" to User \"jane\"".into())
        );
        assert_eq!(
            authorize(
                &p,
                &Attributes::resource(jane, "list", "", "pods", "ns1", "")
            ),
            Decision::NoOpinion(
                "RBAC: clusterrole.rbac.authorization.k8s.io \"gone\" not found".into()
            )
        );
    }

    /// `TestAppliesTo` of rule_test.go.
    #[test]
    fn subjects_apply_as_kubes_do() {
        let cases: &[(&[&str], UserInfo, &str, bool)] = &[
            (&["User:foobar"], user("foobar", &[]), "", true),
            (
                &["User:barfoo", "User:foobar"],
                user("foobar", &[]),
                "",
                true,
            ),
            (&["User:barfoo"], user("foobar", &[]), "", false),
            (&["Group:foobar"], user("baz", &["foobar"]), "", true),
            (&["Group:foobar"], user("baz", &["other"]), "", false),
            (
                &["ServiceAccount:kube-system:default"],
                user("system:serviceaccount:kube-system:default", &[]),
                "",
                true,
            ),
            (
                &["ServiceAccount:kube-system:default"],
                user("system:serviceaccount:kube-system:other", &[]),
                "",
                false,
            ),
            (
                &["User:system:serviceaccount:kube-system:default"],
                user("system:serviceaccount:kube-system:default", &[]),
                "",
                true,
            ),
        ];
        for (subjects, u, ns, want) in cases {
            let got = subjects.iter().any(|s| applies_to_user(u, &subject(s), ns));
            assert_eq!(got, *want, "{subjects:?} {u:?}");
        }
        let no_ns = Subject {
            kind: "ServiceAccount".into(),
            name: "default".into(),
            ..Subject::default()
        };
        assert!(applies_to_user(
            &user("system:serviceaccount:ns:default", &[]),
            &no_ns,
            "ns"
        ));
        assert!(!applies_to_user(
            &user("system:serviceaccount:ns:default", &[]),
            &no_ns,
            ""
        ));
    }
}
