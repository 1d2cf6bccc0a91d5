//! The configuration the filter enforces: flow schemas and priority levels, decoded once from
//! the stored objects by the crate that knows their kinds, and how a request matches a schema
//! (`staging/src/k8s.io/apiserver/pkg/util/flowcontrol/rule.go`).

use std::sync::Arc;

use crate::auth::authorization::Attributes;

use super::queueset::Queuing;

/// Where the configuration comes from; asked on every request, so answering must be cheap
/// (the same `Arc` while nothing changed).
pub trait ConfigSource: Send + Sync {
    /// The configuration now.
    fn config(&self) -> Arc<Config>;
}

/// A fixed configuration.
impl ConfigSource for Arc<Config> {
    fn config(&self) -> Arc<Config> {
        Arc::clone(self)
    }
}

/// Flow schemas and priority levels.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Config {
    /// Every schema, in any order.
    pub schemas: Vec<Arc<Schema>>,
    /// Every priority level.
    pub levels: Vec<Level>,
}

/// One FlowSchema's spec (`flowcontrol.apiserver.k8s.io/v1`).
#[doc(alias = "FlowSchema")]
#[derive(Clone, Debug, PartialEq)]
pub struct Schema {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.uid`: the `X-Kubernetes-PF-FlowSchema-UID` header.
    pub uid: String,
    /// `matchingPrecedence`: lower matches first.
    pub matching_precedence: i32,
    /// `priorityLevelConfiguration.name`.
    pub priority_level: String,
    /// `distinguisherMethod.type`.
    pub distinguisher: Option<Distinguisher>,
    /// `rules`: the schema matches a request when one of them does.
    pub rules: Vec<PolicyRules>,
}

/// How requests of a schema are split into flows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Distinguisher {
    /// One flow per user name.
    ByUser,
    /// One flow per namespace.
    ByNamespace,
}

/// `PolicyRulesWithSubjects`: who, and what they ask for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PolicyRules {
    /// Any of these makes the requester match.
    pub subjects: Vec<Subject>,
    /// Resource requests that match.
    pub resource_rules: Vec<ResourceRule>,
    /// Non-resource requests that match.
    pub non_resource_rules: Vec<NonResourceRule>,
}

/// A subject of a rule; `*` as a name matches any.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Subject {
    /// A user by name.
    User(String),
    /// A group by name.
    Group(String),
    /// A service account.
    ServiceAccount {
        /// Its namespace.
        namespace: String,
        /// Its name, or `*`.
        name: String,
    },
}

/// `ResourcePolicyRule`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResourceRule {
    /// Verbs, or `*`.
    pub verbs: Vec<String>,
    /// API groups, or `*`.
    pub api_groups: Vec<String>,
    /// Resources (`pods`, `pods/status`), or `*`.
    pub resources: Vec<String>,
    /// Whether requests outside any namespace match.
    pub cluster_scope: bool,
    /// Namespaces, or `*` for any namespace.
    pub namespaces: Vec<String>,
}

/// `NonResourcePolicyRule`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NonResourceRule {
    /// Verbs, or `*`.
    pub verbs: Vec<String>,
    /// Paths; `*` for all, `/prefix/*` for a subtree.
    pub non_resource_urls: Vec<String>,
}

/// One PriorityLevelConfiguration's spec.
#[doc(alias = "PriorityLevelConfiguration")]
#[derive(Clone, Debug, PartialEq)]
pub struct Level {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.uid`: the `X-Kubernetes-PF-PriorityLevel-UID` header.
    pub uid: String,
    /// `nominalConcurrencyShares` (of `exempt` or `limited`).
    pub nominal_concurrency_shares: u32,
    /// Exempt, or limited with its queuing (`None`: `limitResponse.type: Reject`).
    pub kind: LevelKind,
}

/// `spec.type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LevelKind {
    /// Never queued nor refused.
    Exempt,
    /// Limited to its share of the server's seats.
    Limited {
        /// `limitResponse.queuing`; `None` when excess requests are rejected.
        queuing: Option<Queuing>,
    },
}

/// Each level's seats: `ceil(server × shares / Σ shares)` (kube's `NominalCL`, before borrowing).
pub fn nominal_limits(server_concurrency: usize, levels: &[Level]) -> Vec<usize> {
    let sum: f64 = levels
        .iter()
        .map(|l| f64::from(l.nominal_concurrency_shares))
        .sum();
    levels
        .iter()
        .map(|l| {
            if sum <= 0.0 {
                return 0;
            }
            (server_concurrency as f64 * f64::from(l.nominal_concurrency_shares) / sum).ceil()
                as usize
        })
        .collect()
}

impl Schema {
    /// Whether `request` matches one of the rules (`matchesFlowSchema`).
    pub fn matches(&self, request: &Attributes) -> bool {
        self.rules.iter().any(|r| r.matches(request))
    }

    /// The flow of `request` within this schema (`computeFlowDistinguisher`).
    pub fn flow_distinguisher<'a>(&self, request: &'a Attributes) -> &'a str {
        match self.distinguisher {
            Some(Distinguisher::ByUser) => &request.user.name,
            Some(Distinguisher::ByNamespace) => &request.namespace,
            None => "",
        }
    }
}

impl PolicyRules {
    fn matches(&self, request: &Attributes) -> bool {
        if !self.subjects.iter().any(|s| s.matches(request)) {
            return false;
        }
        if request.resource_request {
            self.resource_rules.iter().any(|r| r.matches(request))
        } else {
            self.non_resource_rules.iter().any(|r| r.matches(request))
        }
    }
}

const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";

impl Subject {
    fn matches(&self, request: &Attributes) -> bool {
        let user = &request.user;
        match self {
            Subject::User(name) => name == "*" || *name == user.name,
            Subject::Group(name) => name == "*" || user.groups.iter().any(|g| g == name),
            Subject::ServiceAccount { namespace, name } => {
                let Some(rest) = user.name.strip_prefix(SERVICE_ACCOUNT_PREFIX) else {
                    return false;
                };
                let Some((ns, sa)) = rest.split_once(':') else {
                    return false;
                };
                ns == namespace && (name == "*" || name == sa)
            }
        }
    }
}

fn has(list: &[String], value: &str) -> bool {
    list.iter().any(|v| v == "*" || v == value)
}

impl ResourceRule {
    fn matches(&self, request: &Attributes) -> bool {
        if !has(&self.verbs, &request.verb) || !has(&self.api_groups, &request.api_group) {
            return false;
        }
        let resource_matches = if request.subresource.is_empty() {
            has(&self.resources, &request.resource)
        } else {
            self.resources.iter().any(|r| {
                r == "*"
                    || r.split_once('/').is_some_and(|(res, sub)| {
                        res == request.resource && sub == request.subresource
                    })
            })
        };
        if !resource_matches {
            return false;
        }
        if request.namespace.is_empty() {
            self.cluster_scope
        } else {
            has(&self.namespaces, &request.namespace)
        }
    }
}

impl NonResourceRule {
    fn matches(&self, request: &Attributes) -> bool {
        has(&self.verbs, &request.verb)
            && self.non_resource_urls.iter().any(|u| {
                u == "*"
                    || *u == request.path
                    || u.strip_suffix('*')
                        .is_some_and(|prefix| request.path.starts_with(prefix))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::user::ALL_AUTHENTICATED;
    use crate::auth::UserInfo;
    use http::Method;

    fn request(user: UserInfo, method: Method, path: &str) -> Attributes {
        Attributes::from_request(user, &method, path, None)
    }

    fn level(name: &str, shares: u32, exempt: bool) -> Level {
        Level {
            name: name.into(),
            uid: String::new(),
            nominal_concurrency_shares: shares,
            kind: if exempt {
                LevelKind::Exempt
            } else {
                LevelKind::Limited { queuing: None }
            },
        }
    }

    #[test]
    fn nominal_limits_are_kubes_shares_of_the_server() {
        // kube's defaults with --max-requests-inflight 400 + --max-mutating-requests-inflight 200.
        let levels = [
            level("exempt", 0, true),
            level("system", 30, false),
            level("node-high", 40, false),
            level("leader-election", 10, false),
            level("workload-high", 40, false),
            level("workload-low", 100, false),
            level("global-default", 20, false),
            level("catch-all", 5, false),
        ];
        assert_eq!(
            nominal_limits(600, &levels),
            [0, 74, 98, 25, 98, 245, 49, 13]
        );
        assert_eq!(nominal_limits(600, &[level("a", 0, false)]), [0]);
    }

    fn rules(subjects: Vec<Subject>) -> PolicyRules {
        PolicyRules {
            subjects,
            resource_rules: vec![ResourceRule {
                verbs: vec!["*".into()],
                api_groups: vec!["*".into()],
                resources: vec!["*".into()],
                cluster_scope: true,
                namespaces: vec!["*".into()],
            }],
            non_resource_rules: vec![NonResourceRule {
                verbs: vec!["*".into()],
                non_resource_urls: vec!["*".into()],
            }],
        }
    }

    #[test]
    fn subjects_match_users_groups_and_service_accounts() {
        let pods = "/api/v1/namespaces/ns/pods";
        let bot = UserInfo::new(
            "system:serviceaccount:kube-system:bot",
            &["system:serviceaccounts"],
        );
        let jane = UserInfo::new("jane", &["dev", ALL_AUTHENTICATED]);
        let r = |s: Subject, u: &UserInfo| {
            rules(vec![s]).matches(&request(u.clone(), Method::GET, pods))
        };
        assert!(r(Subject::User("jane".into()), &jane));
        assert!(!r(Subject::User("joe".into()), &jane));
        assert!(r(Subject::User("*".into()), &jane));
        assert!(r(Subject::Group("dev".into()), &jane));
        assert!(!r(Subject::Group("ops".into()), &jane));
        let sa = |ns: &str, name: &str| Subject::ServiceAccount {
            namespace: ns.into(),
            name: name.into(),
        };
        assert!(r(sa("kube-system", "*"), &bot));
        assert!(r(sa("kube-system", "bot"), &bot));
        assert!(!r(sa("kube-system", "other"), &bot));
        assert!(!r(sa("default", "*"), &bot));
        assert!(!r(sa("kube-system", "*"), &jane));
    }

    #[test]
    fn resource_rules_match_verbs_groups_resources_and_namespaces() {
        let jane = UserInfo::new("jane", &[ALL_AUTHENTICATED]);
        let rule = PolicyRules {
            subjects: vec![Subject::Group(ALL_AUTHENTICATED.into())],
            resource_rules: vec![ResourceRule {
                verbs: vec!["get".into(), "list".into()],
                api_groups: vec!["".into(), "apps".into()],
                resources: vec!["pods".into(), "deployments/scale".into()],
                cluster_scope: false,
                namespaces: vec!["web".into()],
            }],
            non_resource_rules: vec![NonResourceRule {
                verbs: vec!["get".into()],
                non_resource_urls: vec!["/healthz".into(), "/apis/*".into()],
            }],
        };
        let m = |method: Method, path: &str| rule.matches(&request(jane.clone(), method, path));
        assert!(m(Method::GET, "/api/v1/namespaces/web/pods"));
        assert!(m(Method::GET, "/api/v1/namespaces/web/pods/p"));
        assert!(!m(Method::POST, "/api/v1/namespaces/web/pods"), "verb");
        assert!(!m(Method::GET, "/api/v1/namespaces/db/pods"), "namespace");
        assert!(!m(Method::GET, "/api/v1/pods"), "cluster scope");
        assert!(
            !m(Method::GET, "/api/v1/namespaces/web/pods/p/status"),
            "subresource"
        );
        assert!(m(
            Method::GET,
            "/apis/apps/v1/namespaces/web/deployments/d/scale"
        ));
        assert!(!m(
            Method::GET,
            "/apis/apps/v1/namespaces/web/deployments/d"
        ));
        assert!(
            !m(Method::GET, "/apis/batch/v1/namespaces/web/jobs"),
            "group"
        );
        assert!(m(Method::GET, "/healthz"));
        assert!(m(Method::GET, "/apis/apps"));
        assert!(!m(Method::GET, "/livez"));
        assert!(!m(Method::POST, "/healthz"));
    }

    #[test]
    fn flows_are_distinguished_by_user_or_namespace() {
        let jane = UserInfo::new("jane", &[ALL_AUTHENTICATED]);
        let req = request(jane, Method::GET, "/api/v1/namespaces/web/pods");
        let mut schema = Schema {
            name: "s".into(),
            uid: String::new(),
            matching_precedence: 1,
            priority_level: "l".into(),
            distinguisher: Some(Distinguisher::ByUser),
            rules: vec![],
        };
        assert_eq!(schema.flow_distinguisher(&req), "jane");
        schema.distinguisher = Some(Distinguisher::ByNamespace);
        assert_eq!(schema.flow_distinguisher(&req), "web");
        schema.distinguisher = None;
        assert_eq!(schema.flow_distinguisher(&req), "");
    }
}
