//! Which rule of the policy applies to a request, and so its level, the stages left out and
//! whether managed fields are: kube's `PolicyRuleEvaluator`
//! (`staging/src/k8s.io/apiserver/pkg/audit/policy/checker.go`).

use super::policy::{Level, Policy, PolicyRule, Stage};
use crate::auth::authorization::Attributes;

/// What the policy says about one request (`audit.RequestAuditConfig`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestAuditConfig {
    /// How much is recorded; [`Level::None`] when no rule matches.
    pub level: Level,
    /// Stages no event is generated for: the rule's and the policy's.
    pub omit_stages: Vec<Stage>,
    /// Whether `metadata.managedFields` is left out of recorded bodies.
    pub omit_managed_fields: bool,
}

impl RequestAuditConfig {
    /// Whether an event is generated at `stage`.
    pub fn records(&self, stage: Stage) -> bool {
        self.level != Level::None && !self.omit_stages.contains(&stage)
    }
}

/// Evaluates a [`Policy`] on requests (`policyRuleEvaluator`). Immutable; shared by every
/// request.
#[derive(Clone, Debug)]
pub struct PolicyRuleEvaluator {
    policy: Policy,
}

impl PolicyRuleEvaluator {
    /// The evaluator of `policy`; each rule's stages are joined with the policy's once here
    /// (`NewPolicyRuleEvaluator`).
    pub fn new(mut policy: Policy) -> Self {
        let global = policy.omit_stages.clone();
        for rule in &mut policy.rules {
            rule.omit_stages = union_stages(&global, &rule.omit_stages);
        }
        Self { policy }
    }

    /// The first matching rule's config, or [`Level::None`] with the policy's stages
    /// (`EvaluatePolicyRule`).
    pub fn evaluate(&self, attrs: &Attributes) -> RequestAuditConfig {
        match self.policy.rules.iter().find(|r| rule_matches(r, attrs)) {
            Some(rule) => RequestAuditConfig {
                level: rule.level,
                omit_stages: rule.omit_stages.clone(),
                omit_managed_fields: rule
                    .omit_managed_fields
                    .unwrap_or(self.policy.omit_managed_fields),
            },
            None => RequestAuditConfig {
                level: Level::None,
                omit_stages: self.policy.omit_stages.clone(),
                omit_managed_fields: false,
            },
        }
    }
}

/// `unionStages`: each stage once, in first-seen order.
fn union_stages(a: &[Stage], b: &[Stage]) -> Vec<Stage> {
    let mut out: Vec<Stage> = Vec::with_capacity(a.len() + b.len());
    for s in a.iter().chain(b) {
        if !out.contains(s) {
            out.push(*s);
        }
    }
    out
}

/// `ruleMatches`. The anonymous user of a refused request still has a name here, unlike kube's
/// nil user; rules naming users or groups match it only if they name it.
fn rule_matches(r: &PolicyRule, attrs: &Attributes) -> bool {
    if !r.users.is_empty() && !has(&r.users, &attrs.user.name) {
        return false;
    }
    if !r.user_groups.is_empty() && !attrs.user.groups.iter().any(|g| has(&r.user_groups, g)) {
        return false;
    }
    if !r.verbs.is_empty() && !has(&r.verbs, &attrs.verb) {
        return false;
    }
    if !r.namespaces.is_empty() || !r.resources.is_empty() {
        return rule_matches_resource(r, attrs);
    }
    if !r.non_resource_urls.is_empty() {
        return !attrs.resource_request
            && r.non_resource_urls
                .iter()
                .any(|spec| path_matches(&attrs.path, spec));
    }
    true
}

/// `pathMatches`: `*`, the exact path, or a prefix ending in `*`.
fn path_matches(path: &str, spec: &str) -> bool {
    if spec == "*" || spec == path {
        return true;
    }
    spec.ends_with('*') && path.starts_with(spec.trim_end_matches('*'))
}

/// `ruleMatchesResource`.
fn rule_matches_resource(r: &PolicyRule, attrs: &Attributes) -> bool {
    if !attrs.resource_request {
        return false;
    }
    // Cluster-scoped resources have the empty namespace.
    if !r.namespaces.is_empty() && !has(&r.namespaces, &attrs.namespace) {
        return false;
    }
    if r.resources.is_empty() {
        return true;
    }
    let resource = attrs.resource.as_str();
    let subresource = attrs.subresource.as_str();
    r.resources
        .iter()
        .filter(|gr| gr.group == attrs.api_group)
        .any(|gr| {
            if gr.resources.is_empty() {
                return true;
            }
            if !gr.resource_names.is_empty() && !has(&gr.resource_names, &attrs.name) {
                return false;
            }
            gr.resources.iter().any(|res| {
                if res == "*" {
                    return true;
                }
                // "(resource)/(subresource)", or the resource alone without one.
                let combined = match res.split_once('/') {
                    Some((r, s)) => !subresource.is_empty() && r == resource && s == subresource,
                    None => subresource.is_empty() && res == resource,
                };
                combined
                    || (!subresource.is_empty() && res.strip_prefix("*/") == Some(subresource))
                    || res.strip_suffix("/*") == Some(resource)
            })
        })
}

fn has(list: &[String], value: &str) -> bool {
    list.iter().any(|s| s == value)
}

#[cfg(test)]
mod tests {
    //! The cases of kube's `checker_test.go`.

    use super::*;
    use crate::audit::policy::GroupResources;
    use crate::auth::UserInfo;
    use Level::{Metadata, None as LNone, Request, RequestResponse};
    use Stage::{Panic, RequestReceived, ResponseComplete, ResponseStarted};

    fn tim() -> UserInfo {
        UserInfo::new("tim@k8s.io", &["humans", "developers"])
    }

    fn attrs(name: &str) -> Attributes {
        let resource = |user: UserInfo, group: &str, res: &str, ns: &str, obj: &str| {
            Attributes::resource(user, "get", group, res, ns, obj)
        };
        match name {
            "namespaced" => resource(tim(), "", "pods", "default", "busybox"),
            "cluster" => resource(
                tim(),
                "rbac.authorization.k8s.io",
                "clusterroles",
                "",
                "edit",
            ),
            "nonResource" => Attributes::non_resource(tim(), "get", "/logs/kubelet.log"),
            "subresource" => Attributes {
                subresource: "log".into(),
                ..resource(tim(), "", "pods", "default", "busybox")
            },
            // kube's nil user: no name and no groups.
            "Unauthorized" => resource(UserInfo::default(), "", "pods", "default", "busybox"),
            other => panic!("no request {other}"),
        }
    }

    fn resources(group: &str, res: &[&str], names: &[&str]) -> Vec<GroupResources> {
        vec![GroupResources {
            group: group.into(),
            resources: res.iter().map(|s| s.to_string()).collect(),
            resource_names: names.iter().map(|s| s.to_string()).collect(),
        }]
    }

    fn strings(s: &[&str]) -> Vec<String> {
        s.iter().map(|s| s.to_string()).collect()
    }

    fn rule(name: &str) -> PolicyRule {
        let get = |level| PolicyRule {
            verbs: strings(&["get"]),
            ..PolicyRule::new(level)
        };
        match name {
            "default" => PolicyRule::new(Metadata),
            "create" => PolicyRule {
                verbs: strings(&["create"]),
                ..PolicyRule::new(Request)
            },
            "tims" => PolicyRule {
                users: strings(&["tim@k8s.io"]),
                ..PolicyRule::new(Metadata)
            },
            "humans" => PolicyRule {
                user_groups: strings(&["humans"]),
                ..PolicyRule::new(Metadata)
            },
            "serviceAccounts" => PolicyRule {
                user_groups: strings(&["system:serviceaccounts"]),
                ..PolicyRule::new(Request)
            },
            "getPods" => PolicyRule {
                resources: resources("", &["pods"], &[]),
                ..get(RequestResponse)
            },
            "getPodLogs" => PolicyRule {
                resources: resources("", &["pods/log"], &[]),
                ..get(Request)
            },
            "getPodWildcardMatching" => PolicyRule {
                resources: resources("", &["*"], &[]),
                ..get(Request)
            },
            "getPodResourceWildcardMatching" => PolicyRule {
                resources: resources("", &["*/log"], &[]),
                ..get(Request)
            },
            "getPodSubResourceWildcardMatching" => PolicyRule {
                resources: resources("", &["pods/*"], &[]),
                ..get(Request)
            },
            "getClusterRoles" => PolicyRule {
                resources: resources("rbac.authorization.k8s.io", &["clusterroles"], &[]),
                namespaces: strings(&[""]),
                ..get(RequestResponse)
            },
            "getLogs" => PolicyRule {
                non_resource_urls: strings(&["/logs*"]),
                ..get(RequestResponse)
            },
            "getMetrics" => PolicyRule {
                non_resource_urls: strings(&["/metrics"]),
                ..get(Request)
            },
            "clusterRoleEdit" => PolicyRule {
                resources: resources("rbac.authorization.k8s.io", &["clusterroles"], &["edit"]),
                ..PolicyRule::new(Request)
            },
            "omit RequestReceived" => PolicyRule {
                omit_stages: vec![RequestReceived],
                ..PolicyRule::new(Request)
            },
            "only audit panic" => PolicyRule {
                omit_stages: vec![RequestReceived, ResponseStarted, ResponseComplete],
                ..PolicyRule::new(Request)
            },
            other => panic!("no rule {other}"),
        }
    }

    #[track_caller]
    fn test(
        req: &str,
        want: Level,
        policy_stages: &[Stage],
        want_stages: &[Stage],
        rules: &[&str],
    ) {
        let policy = Policy {
            rules: rules.iter().map(|r| rule(r)).collect(),
            omit_stages: policy_stages.to_vec(),
            omit_managed_fields: false,
        };
        let got = PolicyRuleEvaluator::new(policy).evaluate(&attrs(req));
        assert_eq!(got.level, want, "request {req}, rules {rules:?}");
        let mut got_stages = got.omit_stages.clone();
        let mut want_stages = want_stages.to_vec();
        got_stages.sort_by_key(|s| s.as_str());
        want_stages.sort_by_key(|s| s.as_str());
        assert_eq!(got_stages, want_stages, "request {req}, rules {rules:?}");
    }

    fn audit_levels(stages: &[Stage]) {
        let s = stages;
        test("namespaced", Metadata, s, s, &["default"]);
        test("namespaced", LNone, s, s, &["create"]);
        test("namespaced", Metadata, s, s, &["tims"]);
        test("namespaced", Metadata, s, s, &["humans"]);
        test("namespaced", LNone, s, s, &["serviceAccounts"]);
        test("namespaced", RequestResponse, s, s, &["getPods"]);
        test("namespaced", LNone, s, s, &["getClusterRoles"]);
        test("namespaced", LNone, s, s, &["getLogs"]);
        test("namespaced", LNone, s, s, &["getMetrics"]);
        test(
            "namespaced",
            Metadata,
            s,
            s,
            &["getMetrics", "serviceAccounts", "default"],
        );
        test(
            "namespaced",
            RequestResponse,
            s,
            s,
            &["getMetrics", "getPods", "default"],
        );
        test(
            "namespaced",
            RequestResponse,
            s,
            s,
            &["getPodLogs", "getPods"],
        );

        test("cluster", Metadata, s, s, &["default"]);
        test("cluster", LNone, s, s, &["create"]);
        test("cluster", Metadata, s, s, &["tims"]);
        test("cluster", Metadata, s, s, &["humans"]);
        test("cluster", LNone, s, s, &["serviceAccounts"]);
        test("cluster", LNone, s, s, &["getPods"]);
        test("cluster", RequestResponse, s, s, &["getClusterRoles"]);
        test(
            "cluster",
            Request,
            s,
            s,
            &["clusterRoleEdit", "getClusterRoles"],
        );
        test("cluster", LNone, s, s, &["getLogs"]);
        test("cluster", LNone, s, s, &["getMetrics"]);
        test(
            "cluster",
            Metadata,
            s,
            s,
            &["getMetrics", "serviceAccounts", "default"],
        );
        test(
            "cluster",
            RequestResponse,
            s,
            s,
            &["getMetrics", "getClusterRoles", "default"],
        );
        test("cluster", LNone, s, s, &["getPodLogs", "getPods"]);

        test("nonResource", Metadata, s, s, &["default"]);
        test("nonResource", LNone, s, s, &["create"]);
        test("nonResource", Metadata, s, s, &["tims"]);
        test("nonResource", Metadata, s, s, &["humans"]);
        test("nonResource", LNone, s, s, &["serviceAccounts"]);
        test("nonResource", LNone, s, s, &["getPods"]);
        test("nonResource", LNone, s, s, &["getClusterRoles"]);
        test("nonResource", RequestResponse, s, s, &["getLogs"]);
        test("nonResource", LNone, s, s, &["getMetrics"]);
        test(
            "nonResource",
            Metadata,
            s,
            s,
            &["getMetrics", "serviceAccounts", "default"],
        );
        test(
            "nonResource",
            RequestResponse,
            s,
            s,
            &["getLogs", "getClusterRoles", "default"],
        );
        test("nonResource", LNone, s, s, &["getPodLogs", "getPods"]);

        test("subresource", Request, s, s, &["getPodLogs", "getPods"]);
        test("subresource", Request, s, s, &["getPodWildcardMatching"]);
        test(
            "subresource",
            Request,
            s,
            s,
            &["getPodResourceWildcardMatching"],
        );
        test(
            "subresource",
            Request,
            s,
            s,
            &["getPodSubResourceWildcardMatching"],
        );

        test("Unauthorized", LNone, s, s, &["tims"]);
        test("Unauthorized", Metadata, s, s, &["tims", "default"]);
        test("Unauthorized", LNone, s, s, &["humans"]);
        test("Unauthorized", Metadata, s, s, &["humans", "default"]);
    }

    #[test]
    fn the_first_matching_rule_decides_the_level() {
        audit_levels(&[]);
        let only_panic = [RequestReceived, ResponseStarted, ResponseComplete];
        for req in ["namespaced", "cluster", "nonResource"] {
            let rules = ["omit RequestReceived", "getPods", "default"];
            test(req, Request, &[], &[RequestReceived], &rules);
            let rules = ["only audit panic", "getPods", "default"];
            test(req, Request, &[], &only_panic, &rules);
        }
    }

    #[test]
    fn the_policys_omitted_stages_join_each_rules() {
        let policy = [RequestReceived, ResponseStarted];
        audit_levels(&policy);
        let only_panic = [RequestReceived, ResponseStarted, ResponseComplete];
        for req in ["namespaced", "cluster"] {
            let rules = ["omit RequestReceived", "getPods", "default"];
            test(req, Request, &policy, &policy, &rules);
            test(
                req,
                Request,
                &policy,
                &only_panic,
                &["only audit panic", "getPods", "default"],
            );
        }
        let rules = ["default", "omit RequestReceived", "getPods"];
        test("nonResource", Metadata, &policy, &policy, &rules);
        let rules = ["only audit panic", "getPods", "default"];
        test("nonResource", Request, &policy, &only_panic, &rules);
    }

    #[test]
    fn stages_are_united_once_each() {
        let cases: [(&[Stage], &[Stage], &[Stage]); 7] = [
            (&[], &[], &[]),
            (&[RequestReceived], &[], &[RequestReceived]),
            (&[RequestReceived], &[RequestReceived], &[RequestReceived]),
            (
                &[RequestReceived],
                &[ResponseStarted],
                &[RequestReceived, ResponseStarted],
            ),
            (
                &[RequestReceived, RequestReceived],
                &[RequestReceived, RequestReceived],
                &[RequestReceived],
            ),
            (
                &[RequestReceived, ResponseStarted],
                &[Panic, RequestReceived],
                &[RequestReceived, ResponseStarted, Panic],
            ),
            (&[], &[RequestReceived], &[RequestReceived]),
        ];
        for (a, b, want) in cases {
            assert_eq!(union_stages(a, b), want, "{a:?} ∪ {b:?}");
        }
    }

    #[test]
    fn a_rule_overrides_the_policys_omit_managed_fields() {
        let attrs = Attributes::non_resource(UserInfo::default(), "get", "");
        let matching = PolicyRule {
            verbs: strings(&["get"]),
            ..PolicyRule::new(RequestResponse)
        };
        for (global, by_rule, want) in [
            (false, None, false),
            (true, None, true),
            (true, Some(false), false),
            (false, Some(true), true),
        ] {
            let policy = Policy {
                rules: vec![PolicyRule {
                    omit_managed_fields: by_rule,
                    ..matching.clone()
                }],
                omit_stages: Vec::new(),
                omit_managed_fields: global,
            };
            let got = PolicyRuleEvaluator::new(policy).evaluate(&attrs);
            assert_eq!(
                got.omit_managed_fields, want,
                "policy {global}, rule {by_rule:?}"
            );
        }
    }

    #[test]
    fn resource_names_limit_a_rule_to_those_objects() {
        let mut cluster = attrs("cluster");
        test("cluster", Request, &[], &[], &["clusterRoleEdit"]);
        cluster.name = "view".into();
        let policy = Policy {
            rules: vec![rule("clusterRoleEdit")],
            ..Policy::default()
        };
        assert_eq!(
            PolicyRuleEvaluator::new(policy).evaluate(&cluster).level,
            LNone
        );
    }
}
