//! Authorization: whether the authenticated user may do what a request asks, as kube-apiserver's
//! authorizer chain decides it (`pkg/kubeapiserver/authorizer/config.go`).
//!
//! Members of `system:masters` may do everything (`authorizerfactory.NewPrivilegedGroups`);
//! everyone else goes through the modes of `--authorization-mode` in order ([`Mode::Node`]:
//! what kubelets may reach, [`node`]; [`Mode::Rbac`]: the RBAC objects of the server's own
//! store, decoded and kept current in a [`PolicyCache`]; [`Mode::AlwaysAllow`]). The first mode with an opinion decides; without one the
//! request is forbidden, with kube's message ([`forbidden`]).

pub mod binding_index;
pub mod node;
pub mod policy;
pub mod policy_cache;
pub mod rbac;

use std::sync::Arc;

use k8s_openapi::api::rbac::v1::PolicyRule;

use super::user::{UserInfo, SYSTEM_MASTERS};

pub use policy::{PolicySource, StaticPolicy};
pub use policy_cache::PolicyCache;
pub use rbac::aggregate as aggregate_errors;
pub use rkcm_server::auth::authorization::*;

/// One value of `--authorization-mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Everything is allowed (kube-apiserver's default mode).
    AlwaysAllow,
    /// Role-based access control from the stored Roles, ClusterRoles and their bindings.
    Rbac,
    /// What kubelets (`system:node:<name>`) may read and write ([`node`]).
    Node,
}

impl std::str::FromStr for Mode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "AlwaysAllow" => Ok(Mode::AlwaysAllow),
            "RBAC" => Ok(Mode::Rbac),
            "Node" => Ok(Mode::Node),
            other => Err(format!(
                "authorization-mode {other:?} is not supported (supported: AlwaysAllow, Node, RBAC)"
            )),
        }
    }
}

/// The rules a user holds in a namespace, as SelfSubjectRulesReview reports them
/// (`authorizer.RuleResolver.RulesFor`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct UserRules {
    /// Rules with resources.
    pub resource_rules: Vec<PolicyRule>,
    /// Rules with non-resource URLs.
    pub non_resource_rules: Vec<PolicyRule>,
    /// Errors met while gathering them (missing roles).
    pub errors: Vec<String>,
}

/// The authorizer chain. Shared by every request; immutable once built.
pub struct Authorizer {
    modes: Vec<Mode>,
    source: Arc<dyn PolicySource>,
    node: Option<node::NodeAuthorizer>,
}

impl Authorize for Authorizer {
    fn authorize(&self, attrs: &Attributes) -> Decision {
        Authorizer::authorize(self, attrs)
    }
}

impl Authorizer {
    /// A chain of `modes`, RBAC reading from `source`.
    pub fn new(modes: Vec<Mode>, source: Arc<dyn PolicySource>) -> Self {
        Self {
            modes,
            source,
            node: None,
        }
    }

    /// The chain with `node` deciding for [`Mode::Node`] (without one, that mode has no
    /// opinion).
    pub fn with_node_authorizer(mut self, node: node::NodeAuthorizer) -> Self {
        self.node = Some(node);
        self
    }

    /// Whether the Node authorizer is among the modes.
    pub fn node_enabled(&self) -> bool {
        self.modes.contains(&Mode::Node)
    }

    /// Whether RBAC is among the modes.
    pub fn rbac_enabled(&self) -> bool {
        self.modes.contains(&Mode::Rbac)
    }

    /// Where RBAC reads its objects.
    pub fn source(&self) -> &dyn PolicySource {
        &*self.source
    }

    /// The decision on `attrs` (kube's `union.New` of the privileged-group authorizer and the
    /// modes): the first Allow or Deny; else no opinion with the modes' reasons joined by
    /// newlines.
    pub fn authorize(&self, attrs: &Attributes) -> Decision {
        if attrs.user.groups.iter().any(|g| g == SYSTEM_MASTERS) {
            return Decision::Allow(String::new());
        }
        let mut reasons = Vec::new();
        for mode in &self.modes {
            let decision = match mode {
                Mode::AlwaysAllow => Decision::Allow(String::new()),
                Mode::Rbac => rbac::authorize(&*self.source, attrs),
                Mode::Node => match &self.node {
                    Some(n) => n.authorize(attrs),
                    None => Decision::NoOpinion(String::new()),
                },
            };
            match decision {
                Decision::NoOpinion(r) => {
                    if !r.is_empty() {
                        reasons.push(r);
                    }
                }
                decided => return decided,
            }
        }
        Decision::NoOpinion(reasons.join("\n"))
    }

    /// The rules `user` holds in `namespace` (`RulesFor` of the union): everything for
    /// `system:masters` and under AlwaysAllow, then the RBAC rules.
    pub fn rules_for(&self, user: &UserInfo, namespace: &str) -> UserRules {
        let mut out = UserRules::default();
        let everything = || {
            (
                rules::rule(&["*"], &["*"], &["*"], &[], &[]),
                rules::rule(&["*"], &[], &[], &[], &["*"]),
            )
        };
        if user.groups.iter().any(|g| g == SYSTEM_MASTERS)
            || self.modes.contains(&Mode::AlwaysAllow)
        {
            let (r, n) = everything();
            out.resource_rules.push(r);
            out.non_resource_rules.push(n);
        }
        if self.node_enabled() && crate::auth::node_identity::node_identity(user).is_some() {
            // kube's `NodeAuthorizer.RulesFor`: a node's rules are not enumerable.
            out.errors
                .push("node authorizer does not support user rule resolution".to_string());
        }
        if self.rbac_enabled() {
            let (rules, errors) = rbac::rules_for(&*self.source, user, namespace);
            for rule in rules {
                if rule.resources.as_ref().is_some_and(|r| !r.is_empty()) {
                    out.resource_rules.push(PolicyRule {
                        non_resource_urls: None,
                        ..rule.clone()
                    });
                }
                if rule
                    .non_resource_urls
                    .as_ref()
                    .is_some_and(|r| !r.is_empty())
                {
                    out.non_resource_rules.push(PolicyRule {
                        api_groups: None,
                        resources: None,
                        resource_names: None,
                        ..rule
                    });
                }
            }
            out.errors.extend(errors);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::rbac::tests::{cluster_role, cluster_role_binding};
    use super::rules::rule;
    use super::*;

    fn chain(modes: Vec<Mode>) -> Authorizer {
        let policy = StaticPolicy {
            cluster_roles: vec![cluster_role(
                "view",
                vec![
                    rule(&["get"], &[""], &["pods"], &[], &[]),
                    rule(&["get"], &[], &[], &[], &["/api"]),
                ],
            )],
            cluster_role_bindings: vec![cluster_role_binding("view", &["Group:viewers"])],
            ..StaticPolicy::default()
        };
        Authorizer::new(modes, Arc::new(policy))
    }

    #[test]
    fn system_masters_may_do_everything_and_others_what_rbac_grants() {
        let a = chain(vec![Mode::Rbac]);
        let admin = UserInfo::new("kubernetes-admin", &[SYSTEM_MASTERS]);
        assert!(a
            .authorize(&Attributes::resource(
                admin,
                "delete",
                "apps",
                "deployments",
                "x",
                "y"
            ))
            .is_allowed());
        let viewer = UserInfo::new("v", &["viewers"]);
        assert!(a
            .authorize(&Attributes::resource(
                viewer.clone(),
                "get",
                "",
                "pods",
                "x",
                "y"
            ))
            .is_allowed());
        assert_eq!(
            a.authorize(&Attributes::resource(
                viewer, "delete", "", "pods", "x", "y"
            )),
            Decision::NoOpinion(String::new())
        );
        let always = chain(vec![Mode::Rbac, Mode::AlwaysAllow]);
        assert!(always
            .authorize(&Attributes::resource(
                UserInfo::new("x", &[]),
                "delete",
                "",
                "pods",
                "x",
                "y"
            ))
            .is_allowed());
    }

    #[test]
    fn rules_are_split_into_resource_and_non_resource_rules() {
        let a = chain(vec![Mode::Rbac]);
        let rules = a.rules_for(&UserInfo::new("v", &["viewers"]), "default");
        assert_eq!(
            rules.resource_rules,
            [rule(&["get"], &[""], &["pods"], &[], &[])]
        );
        assert_eq!(
            rules.non_resource_rules,
            [rule(&["get"], &[], &[], &[], &["/api"])]
        );
        let admin = a.rules_for(&UserInfo::new("a", &[SYSTEM_MASTERS]), "default");
        assert_eq!(
            admin.resource_rules[0],
            rule(&["*"], &["*"], &["*"], &[], &[])
        );
        assert!(a
            .rules_for(&UserInfo::new("nobody", &[]), "default")
            .resource_rules
            .is_empty());
    }

    #[test]
    fn modes_parse_from_kubes_flag_values() {
        assert_eq!("RBAC".parse::<Mode>(), Ok(Mode::Rbac));
        assert_eq!("AlwaysAllow".parse::<Mode>(), Ok(Mode::AlwaysAllow));
        assert_eq!("Node".parse::<Mode>(), Ok(Mode::Node));
        assert!("ABAC".parse::<Mode>().is_err());
    }
}
