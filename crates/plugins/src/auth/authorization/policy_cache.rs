//! Decoded Roles, ClusterRoles, RoleBindings and ClusterRoleBindings kept current from the
//! server's own watch cache: what kube's RBAC authorizer reads from informer listers
//! (`plugin/pkg/auth/authorizer/rbac/rbac.go`, `RoleGetter` and friends), so that a request
//! decodes nothing.
//!
//! The cache subscribes to the four resources when it is built — it is synced before the server
//! serves — and applies what they published when a request reads it, as the Node authorizer's
//! graph does ([`super::node::GraphPopulator`]): there is no task to run or stop. Each object
//! is decoded once per change and shared as `Arc<T>`. Because the watch cache publishes a write
//! before the write is acknowledged, a request sees every RBAC change acknowledged before it
//! began: `kubectl create rolebinding` followed at once by `kubectl auth can-i` sees the
//! binding. (kube's informers are eventually consistent; seeing more recent policy than kube
//! would is the safe side of that.) A subscription that fell too far behind starts over from
//! the cache's current objects.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use parking_lot::{Mutex, RwLock};
use serde::de::DeserializeOwned;

use rkcm_apimachinery::catalog;

use super::binding_index::BindingIndex;
use super::policy::PolicySource;
use crate::auth::UserInfo;
use rkcm_storage::store::Store;
use rkcm_storage::watch_cache::{CachedObject, Feed, FeedChange};

/// The four RBAC kinds the cache holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    ClusterRole,
    Role,
    ClusterRoleBinding,
    RoleBinding,
}

impl Kind {
    const ALL: [Kind; 4] = [
        Kind::ClusterRole,
        Kind::Role,
        Kind::ClusterRoleBinding,
        Kind::RoleBinding,
    ];

    fn name(self) -> &'static str {
        match self {
            Kind::ClusterRole => "ClusterRole",
            Kind::Role => "Role",
            Kind::ClusterRoleBinding => "ClusterRoleBinding",
            Kind::RoleBinding => "RoleBinding",
        }
    }
}

/// One object of one kind, decoded, or the removal of one.
enum Change {
    ClusterRole(Arc<ClusterRole>),
    Role(Arc<Role>),
    ClusterRoleBinding(Arc<ClusterRoleBinding>),
    RoleBinding(Arc<RoleBinding>),
    Removed {
        kind: Kind,
        namespace: String,
        name: String,
    },
}

impl Change {
    /// `obj` of `kind` as the cache holds it. Stored objects passed validation; one that does
    /// not decode grants nothing, as if it were not there.
    fn of(kind: Kind, obj: &CachedObject) -> Self {
        fn decode<T: DeserializeOwned>(obj: &CachedObject) -> Option<Arc<T>> {
            serde_json::from_slice(obj.json()).ok().map(Arc::new)
        }
        let decoded = match kind {
            Kind::ClusterRole => decode(obj).map(Change::ClusterRole),
            Kind::Role => decode(obj).map(Change::Role),
            Kind::ClusterRoleBinding => decode(obj).map(Change::ClusterRoleBinding),
            Kind::RoleBinding => decode(obj).map(Change::RoleBinding),
        };
        decoded.unwrap_or_else(|| {
            tracing::warn!(
                kind = kind.name(),
                namespace = obj.namespace(),
                name = obj.name(),
                "stored RBAC object does not decode; it grants nothing"
            );
            Change::removed(kind, obj)
        })
    }

    fn removed(kind: Kind, obj: &CachedObject) -> Self {
        Change::Removed {
            kind,
            namespace: obj.namespace().to_string(),
            name: obj.name().to_string(),
        }
    }
}

/// The decoded objects.
struct Policy {
    cluster_roles: HashMap<String, Arc<ClusterRole>>,
    /// Roles by namespace, then name.
    roles: HashMap<String, HashMap<String, Arc<Role>>>,
    cluster_role_bindings: BindingIndex<ClusterRoleBinding>,
    /// RoleBindings by namespace; a namespace without any has no entry.
    role_bindings: HashMap<String, BindingIndex<RoleBinding>>,
}

impl Policy {
    fn new() -> Self {
        Self {
            cluster_roles: HashMap::new(),
            roles: HashMap::new(),
            cluster_role_bindings: BindingIndex::new(""),
            role_bindings: HashMap::new(),
        }
    }

    fn clear(&mut self, kind: Kind) {
        match kind {
            Kind::ClusterRole => self.cluster_roles.clear(),
            Kind::Role => self.roles.clear(),
            Kind::ClusterRoleBinding => self.cluster_role_bindings = BindingIndex::new(""),
            Kind::RoleBinding => self.role_bindings.clear(),
        }
    }

    fn apply(&mut self, change: Change) {
        match change {
            Change::ClusterRole(r) => {
                let name = r.metadata.name.clone().unwrap_or_default();
                self.cluster_roles.insert(name, r);
            }
            Change::Role(r) => {
                let namespace = r.metadata.namespace.clone().unwrap_or_default();
                let name = r.metadata.name.clone().unwrap_or_default();
                self.roles.entry(namespace).or_default().insert(name, r);
            }
            Change::ClusterRoleBinding(b) => self.cluster_role_bindings.insert(b),
            Change::RoleBinding(b) => {
                let namespace = b.metadata.namespace.clone().unwrap_or_default();
                self.role_bindings
                    .entry(namespace)
                    .or_insert_with_key(|ns| BindingIndex::new(ns))
                    .insert(b);
            }
            Change::Removed {
                kind,
                namespace,
                name,
            } => self.remove(kind, &namespace, &name),
        }
    }

    fn remove(&mut self, kind: Kind, namespace: &str, name: &str) {
        match kind {
            Kind::ClusterRole => {
                self.cluster_roles.remove(name);
            }
            Kind::Role => {
                if let Some(roles) = self.roles.get_mut(namespace) {
                    roles.remove(name);
                    if roles.is_empty() {
                        self.roles.remove(namespace);
                    }
                }
            }
            Kind::ClusterRoleBinding => self.cluster_role_bindings.remove(name),
            Kind::RoleBinding => {
                if let Some(bindings) = self.role_bindings.get_mut(namespace) {
                    bindings.remove(name);
                    if bindings.is_empty() {
                        self.role_bindings.remove(namespace);
                    }
                }
            }
        }
    }
}

/// The watch of one kind.
struct Followed {
    kind: Kind,
    feed: Feed,
}

/// RBAC's [`PolicySource`] in the API server: the decoded objects of the store, kept current
/// from its watch cache, with the bindings indexed by subject.
///
/// Shared by every request. Reads take a read lock for as long as a lookup takes; the request
/// that first notices new writes applies them under the feeds' lock, then the policy's write
/// lock, never both the other way round.
pub struct PolicyCache {
    store: Store,
    /// Every write of the watch cache up to this revision has been applied.
    applied: AtomicI64,
    feeds: Mutex<Vec<Followed>>,
    policy: RwLock<Policy>,
}

impl PolicyCache {
    /// A cache of the RBAC objects in `store` now, kept current from its watch cache.
    pub fn new(store: Store) -> Arc<Self> {
        let feeds = Kind::ALL
            .iter()
            .filter_map(|&kind| {
                let info = catalog::by_kind("rbac.authorization.k8s.io/v1", kind.name())?;
                Some(Followed {
                    kind,
                    feed: Feed::new(rkcm_server::rest::prefix(info, None)),
                })
            })
            .collect();
        let cache = Arc::new(Self {
            store,
            applied: AtomicI64::new(i64::MIN),
            feeds: Mutex::new(feeds),
            policy: RwLock::new(Policy::new()),
        });
        cache.refresh();
        cache
    }

    /// Applies every write the watch cache published so far, unless that was done already.
    fn refresh(&self) {
        // Every event of a revision was published before the cache's revision reached it, so
        // after draining, everything up to `target` is in.
        let target = self.store.cache().revision();
        if self.applied.load(Ordering::Acquire) >= target {
            return;
        }
        let mut feeds = self.feeds.lock();
        if self.applied.load(Ordering::Acquire) >= target {
            return;
        }
        for feed in feeds.iter_mut() {
            self.drain(feed);
        }
        self.applied.fetch_max(target, Ordering::AcqRel);
    }

    /// Applies what `followed`'s kind published: decoded outside the policy's lock, applied
    /// under it.
    fn drain(&self, followed: &mut Followed) {
        let kind = followed.kind;
        let mut reset = false;
        let mut changes: Vec<Change> = Vec::new();
        followed
            .feed
            .drain(self.store.cache(), |change| match change {
                FeedChange::Reset(objects) => {
                    reset = true;
                    changes = objects.iter().map(|o| Change::of(kind, o)).collect();
                }
                FeedChange::Upsert(o) => changes.push(Change::of(kind, o)),
                FeedChange::Delete(o) => changes.push(Change::removed(kind, o)),
            });
        if !reset && changes.is_empty() {
            return;
        }
        let mut policy = self.policy.write();
        if reset {
            tracing::debug!(kind = kind.name(), "RBAC policy cache relisted");
            policy.clear(kind);
        }
        for change in changes {
            policy.apply(change);
        }
    }
}

impl PolicySource for PolicyCache {
    fn cluster_role_bindings(&self, user: &UserInfo) -> Vec<Arc<ClusterRoleBinding>> {
        self.refresh();
        self.policy.read().cluster_role_bindings.candidates(user)
    }

    fn role_bindings(&self, namespace: &str, user: &UserInfo) -> Vec<Arc<RoleBinding>> {
        self.refresh();
        self.policy
            .read()
            .role_bindings
            .get(namespace)
            .map(|b| b.candidates(user))
            .unwrap_or_default()
    }

    fn cluster_role(&self, name: &str) -> Option<Arc<ClusterRole>> {
        self.refresh();
        self.policy.read().cluster_roles.get(name).cloned()
    }

    fn role(&self, namespace: &str, name: &str) -> Option<Arc<Role>> {
        self.refresh();
        self.policy
            .read()
            .roles
            .get(namespace)
            .and_then(|r| r.get(name))
            .cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::super::rbac::tests::{cluster_role, cluster_role_binding, role, role_binding};
    use super::super::rbac::{authorize, rules_for};
    use super::super::rules::rule;
    use super::super::{Attributes, Authorizer, Decision, Mode, StaticPolicy};
    use super::*;
    use k8s_openapi::api::rbac::v1::{PolicyRule, Subject};
    use rkcm_storage::memory::MemoryBackend;
    use serde::Serialize;

    fn key(kind: &str, namespace: Option<&str>, name: &str) -> String {
        let info = catalog::by_kind("rbac.authorization.k8s.io/v1", kind).expect("RBAC kind");
        rkcm_server::rest::key(info, namespace, name)
    }

    fn json(obj: &impl Serialize) -> serde_json::Value {
        serde_json::to_value(obj).expect("RBAC objects serialize")
    }

    async fn empty_store() -> Store {
        Store::new(Arc::new(MemoryBackend::new()), 100)
            .await
            .expect("memory store")
    }

    /// A store holding `policy`, and `policy` with its bindings in name order (the order a
    /// store lists them in).
    async fn stored(mut policy: StaticPolicy) -> (Store, StaticPolicy) {
        let store = empty_store().await;
        let name = |m: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta| {
            m.name.clone().unwrap_or_default()
        };
        for r in &policy.cluster_roles {
            let k = key("ClusterRole", None, &name(&r.metadata));
            store.create(&k, json(r)).await.expect("create");
        }
        for r in &policy.roles {
            let k = key("Role", r.metadata.namespace.as_deref(), &name(&r.metadata));
            store.create(&k, json(r)).await.expect("create");
        }
        for b in &policy.cluster_role_bindings {
            let k = key("ClusterRoleBinding", None, &name(&b.metadata));
            store.create(&k, json(b)).await.expect("create");
        }
        for b in &policy.role_bindings {
            let k = key(
                "RoleBinding",
                b.metadata.namespace.as_deref(),
                &name(&b.metadata),
            );
            store.create(&k, json(b)).await.expect("create");
        }
        policy
            .cluster_role_bindings
            .sort_by_key(|b| name(&b.metadata));
        policy.role_bindings.sort_by_key(|b| name(&b.metadata));
        (store, policy)
    }

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo::new(name, groups)
    }

    /// Asserts that the cache, the store read directly and the full scan of `policy` decide
    /// alike on `requests`, and give every user the same rules in every namespace.
    fn assert_same(
        policy: &StaticPolicy,
        store: &Store,
        cache: &PolicyCache,
        requests: &[Attributes],
    ) {
        for a in requests {
            let want = authorize(policy, a);
            assert_eq!(authorize(cache, a), want, "{a:?}");
            assert_eq!(authorize(store, a), want, "{a:?}");
        }
        let full = Authorizer::new(vec![Mode::Rbac], Arc::new(policy.clone()));
        let cached = Authorizer::new(vec![Mode::Rbac], PolicyCache::new(store.clone()));
        let mut users: Vec<&UserInfo> = requests.iter().map(|a| &a.user).collect();
        users.dedup();
        for u in users {
            for ns in ["", "ns1", "ns2", "default", "kube-system"] {
                assert_eq!(
                    rules_for(cache, u, ns),
                    rules_for(policy, u, ns),
                    "{u:?} {ns}"
                );
                assert_eq!(cached.rules_for(u, ns), full.rules_for(u, ns), "{u:?} {ns}");
            }
        }
    }

    /// `defaultAttributes` of rbac_test.go: a resource request with `groups` split on commas.
    fn request(
        name: &str,
        groups: &str,
        verb: &str,
        resource: &str,
        subresource: &str,
        ns: &str,
    ) -> Attributes {
        let groups: Vec<&str> = groups.split(',').collect();
        Attributes {
            subresource: subresource.into(),
            ..Attributes::resource(user(name, &groups), verb, "", resource, ns, "")
        }
    }

    fn path(name: &str, groups: &[&str], verb: &str, p: &str) -> Attributes {
        Attributes::non_resource(user(name, groups), verb, p)
    }

    /// The cases of `TestAuthorizer` in plugin/pkg/auth/authorizer/rbac/rbac_test.go, with
    /// names for kube's nameless bindings.
    fn kube_cases() -> Vec<(StaticPolicy, Vec<Attributes>)> {
        let rb = |role: &str, subjects: &[&str]| {
            let mut b = role_binding("ns1", "ClusterRole", role, subjects);
            b.metadata.name = Some(format!("{role}-binding"));
            b
        };
        let admin_resource_requests = vec![
            request("admin", "", "get", "Pods", "", "ns1"),
            request("admin", "", "watch", "Pods", "", "ns1"),
            request("admin", "group1", "watch", "Foobar", "", "ns1"),
            request("joe", "admins", "watch", "Foobar", "", "ns1"),
            request("joe", "group1,admins", "watch", "Foobar", "", "ns1"),
            request("admin", "", "GET", "Pods", "", "ns2"),
            request("admin", "", "GET", "Nodes", "", ""),
            request("admin", "admins", "GET", "Pods", "", "ns2"),
            request("admin", "admins", "GET", "Nodes", "", ""),
        ];
        let subresource_requests = vec![
            request("admin", "", "get", "pods", "", "ns1"),
            request("admin", "", "get", "pods", "status", "ns1"),
        ];
        let mut non_resource_requests = Vec::new();
        for verb in ["get", "watch"] {
            for p in ["/apis", "/api/v1", "/apis/v1", "/apis/v1/foobar"] {
                for who in ["foo", "admin", "prefixed"] {
                    non_resource_requests.push(path(who, &[], verb, p));
                }
                for group in ["bar", "admin", "prefixed"] {
                    non_resource_requests.push(path("", &[group], verb, p));
                }
            }
        }
        vec![
            (
                StaticPolicy {
                    cluster_roles: vec![cluster_role(
                        "admin",
                        vec![rule(&["*"], &["*"], &["*"], &[], &["*"])],
                    )],
                    role_bindings: vec![rb("admin", &["User:admin", "Group:admins"])],
                    ..StaticPolicy::default()
                },
                admin_resource_requests,
            ),
            (
                StaticPolicy {
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
                        cluster_role_binding("non-resource-url", &["User:admin", "Group:admin"]),
                        cluster_role_binding(
                            "non-resource-url-prefix",
                            &["User:prefixed", "Group:prefixed"],
                        ),
                    ],
                    ..StaticPolicy::default()
                },
                non_resource_requests,
            ),
            (
                StaticPolicy {
                    cluster_roles: vec![cluster_role(
                        "admin",
                        vec![rule(&["*"], &["*"], &["pods"], &[], &["*"])],
                    )],
                    role_bindings: vec![rb("admin", &["User:admin", "Group:admins"])],
                    ..StaticPolicy::default()
                },
                subresource_requests.clone(),
            ),
            (
                StaticPolicy {
                    cluster_roles: vec![cluster_role(
                        "admin",
                        vec![rule(&["*"], &["*"], &["pods/status"], &[], &["*"])],
                    )],
                    role_bindings: vec![rb("admin", &["User:admin", "Group:admins"])],
                    ..StaticPolicy::default()
                },
                subresource_requests,
            ),
        ]
    }

    #[tokio::test]
    async fn the_cache_decides_as_the_full_scan_on_kubes_authorizer_cases() {
        for (i, (policy, requests)) in kube_cases().into_iter().enumerate() {
            let (store, policy) = stored(policy).await;
            let cache = PolicyCache::new(store.clone());
            assert_same(&policy, &store, &cache, &requests);
            let allowed = requests
                .iter()
                .filter(|a| authorize(&*cache, a).is_allowed())
                .count();
            assert!(allowed > 0, "case {i} allows something");
        }
    }

    #[tokio::test]
    async fn the_cache_decides_as_the_full_scan_with_errors_service_accounts_and_many_bindings() {
        let sa_defaulted = Subject {
            kind: "ServiceAccount".into(),
            name: "bot".into(),
            ..Subject::default()
        };
        let mut policy = StaticPolicy {
            cluster_roles: vec![
                cluster_role(
                    "view",
                    vec![rule(&["get", "list"], &[""], &["pods"], &[], &[])],
                ),
                cluster_role("edit", vec![rule(&["*"], &[""], &["pods"], &[], &[])]),
                cluster_role(
                    "healthz",
                    vec![rule(&["get"], &[], &[], &[], &["/healthz"])],
                ),
            ],
            roles: vec![role(
                "ns1",
                "secrets",
                vec![rule(&["get"], &[""], &["secrets"], &[], &[])],
            )],
            cluster_role_bindings: vec![
                // Two bindings naming jane whose roles are missing: errors in name order.
                cluster_role_binding("gone-b", &["User:jane"]),
                cluster_role_binding("gone-a", &["Group:devs"]),
                cluster_role_binding(
                    "view",
                    &["Group:devs", "User:jane", "ServiceAccount:ns1:bot"],
                ),
                cluster_role_binding("healthz", &["Group:system:authenticated"]),
            ],
            role_bindings: vec![
                role_binding("ns1", "ClusterRole", "edit", &["User:jane"]),
                role_binding("ns1", "Role", "secrets", &["Group:devs"]),
                role_binding("ns1", "Role", "missing", &["User:jane"]),
                role_binding(
                    "ns2",
                    "ClusterRole",
                    "edit",
                    &["User:system:serviceaccount:ns1:bot"],
                ),
            ],
        };
        let mut defaulted = role_binding("ns2", "ClusterRole", "view", &[]);
        defaulted.subjects = Some(vec![sa_defaulted]);
        policy.role_bindings.push(defaulted);
        let users = [
            user("jane", &["system:authenticated"]),
            user("joe", &["devs", "system:authenticated"]),
            user("jane", &["devs"]),
            user("system:serviceaccount:ns1:bot", &["system:serviceaccounts"]),
            user("system:serviceaccount:ns2:bot", &["system:authenticated"]),
            user("nobody", &[]),
        ];
        let mut requests = Vec::new();
        for u in &users {
            for ns in ["", "ns1", "ns2"] {
                for verb in ["get", "list", "delete"] {
                    for resource in ["pods", "secrets"] {
                        requests.push(Attributes::resource(u.clone(), verb, "", resource, ns, "x"));
                    }
                }
            }
            requests.push(Attributes::non_resource(u.clone(), "get", "/healthz"));
        }
        let (store, policy) = stored(policy).await;
        let cache = PolicyCache::new(store.clone());
        assert_same(&policy, &store, &cache, &requests);
        let jane = Attributes::resource(users[2].clone(), "delete", "", "pods", "ns2", "x");
        assert_eq!(
            authorize(&*cache, &jane),
            Decision::NoOpinion(
                "RBAC: [clusterrole.rbac.authorization.k8s.io \"gone-a\" not found, clusterrole.rbac.authorization.k8s.io \"gone-b\" not found]".into()
            ),
            "errors come in the order of a full list"
        );
    }

    #[tokio::test]
    async fn the_cache_decides_as_the_full_scan_on_the_bootstrap_policy() {
        let boot = crate::auth::bootstrap_policy::policy();
        fn all<T: serde::de::DeserializeOwned>(values: &[serde_json::Value]) -> Vec<T> {
            values
                .iter()
                .map(|v| serde_json::from_value(v.clone()).expect("bootstrap object decodes"))
                .collect()
        }
        let policy = StaticPolicy {
            cluster_roles: all(&boot.cluster_roles),
            cluster_role_bindings: all(&boot.cluster_role_bindings),
            roles: all(&boot.roles),
            role_bindings: all(&boot.role_bindings),
        };
        let users = [
            user("system:kube-controller-manager", &["system:authenticated"]),
            user("system:kube-scheduler", &["system:authenticated"]),
            user("system:kube-proxy", &["system:authenticated"]),
            user("system:node:n1", &["system:nodes", "system:authenticated"]),
            user(
                "system:serviceaccount:kube-system:deployment-controller",
                &[
                    "system:serviceaccounts",
                    "system:serviceaccounts:kube-system",
                    "system:authenticated",
                ],
            ),
            user(
                "system:serviceaccount:default:default",
                &[
                    "system:serviceaccounts",
                    "system:serviceaccounts:default",
                    "system:authenticated",
                ],
            ),
            user("system:anonymous", &["system:unauthenticated"]),
            user("jane", &["system:authenticated"]),
            user(
                "system:bootstrap:abcdef",
                &["system:bootstrappers", "system:authenticated"],
            ),
        ];
        let resources = [
            ("", "pods", ""),
            ("", "pods", "status"),
            ("", "nodes", ""),
            ("", "secrets", ""),
            ("", "configmaps", ""),
            ("", "events", ""),
            ("", "serviceaccounts", "token"),
            ("apps", "deployments", ""),
            ("apps", "replicasets", "status"),
            ("coordination.k8s.io", "leases", ""),
            ("authentication.k8s.io", "tokenreviews", ""),
            ("authorization.k8s.io", "selfsubjectaccessreviews", ""),
            ("certificates.k8s.io", "certificatesigningrequests", ""),
        ];
        let mut requests = Vec::new();
        for u in &users {
            for (group, resource, sub) in resources {
                for verb in ["get", "list", "watch", "create", "update", "delete"] {
                    for ns in ["", "default", "kube-system"] {
                        requests.push(Attributes {
                            subresource: sub.into(),
                            ..Attributes::resource(u.clone(), verb, group, resource, ns, "")
                        });
                    }
                }
            }
            for p in ["/healthz", "/api", "/apis/apps/v1", "/version", "/metrics"] {
                requests.push(Attributes::non_resource(u.clone(), "get", p));
            }
        }
        let (store, policy) = stored(policy).await;
        let cache = PolicyCache::new(store.clone());
        assert_same(&policy, &store, &cache, &requests);
        assert!(requests.iter().any(|a| authorize(&*cache, a).is_allowed()));
    }

    /// The cost of one RBAC decision on the bootstrap policy for the requests a density run
    /// makes most (controllers' service accounts, the scheduler),
    /// read from the store directly (each call lists and decodes) and from the cache. Prints
    /// the figures; asserts nothing about time. Run with
    /// `cargo test -p rkcm-plugins --release --lib rbac_decision_cost -- --ignored --nocapture`.
    #[tokio::test]
    #[ignore = "benchmark: run explicitly"]
    async fn rbac_decision_cost_from_the_store_and_from_the_cache() {
        let boot = crate::auth::bootstrap_policy::policy();
        let store = empty_store().await;
        for (kind, objects) in [
            ("ClusterRole", &boot.cluster_roles),
            ("ClusterRoleBinding", &boot.cluster_role_bindings),
            ("Role", &boot.roles),
            ("RoleBinding", &boot.role_bindings),
        ] {
            for o in objects {
                let ns = o.pointer("/metadata/namespace").and_then(|v| v.as_str());
                let name = o
                    .pointer("/metadata/name")
                    .and_then(|v| v.as_str())
                    .unwrap_or("");
                store
                    .create(&key(kind, ns, name), o.clone())
                    .await
                    .expect("create");
            }
        }
        let sa = |name: &str| {
            user(
                &format!("system:serviceaccount:kube-system:{name}"),
                &[
                    "system:serviceaccounts",
                    "system:serviceaccounts:kube-system",
                    "system:authenticated",
                ],
            )
        };
        let requests = [
            Attributes::resource(
                sa("replicaset-controller"),
                "create",
                "",
                "pods",
                "default",
                "",
            ),
            Attributes::resource(
                sa("deployment-controller"),
                "update",
                "apps",
                "replicasets",
                "default",
                "r",
            ),
            Attributes {
                subresource: "binding".into(),
                ..Attributes::resource(
                    user("system:kube-scheduler", &["system:authenticated"]),
                    "create",
                    "",
                    "pods",
                    "default",
                    "p",
                )
            },
            Attributes::resource(
                sa("endpointslice-controller"),
                "create",
                "discovery.k8s.io",
                "endpointslices",
                "default",
                "",
            ),
        ];
        let cache = PolicyCache::new(store.clone());
        let time = |source: &dyn PolicySource, calls: usize| {
            let started = std::time::Instant::now();
            let mut allowed = 0;
            for i in 0..calls {
                allowed +=
                    usize::from(authorize(source, &requests[i % requests.len()]).is_allowed());
            }
            assert_eq!(
                allowed, calls,
                "every request is allowed by the bootstrap policy"
            );
            started.elapsed().as_nanos() as f64 / calls as f64
        };
        let from_store = time(&store, 2_000);
        let from_cache = time(&*cache, 100_000);
        println!(
            "RBAC decision on the bootstrap policy ({} ClusterRoleBindings): store {:.1} µs, cache {:.2} µs per call ({:.0}x)",
            boot.cluster_role_bindings.len(),
            from_store / 1000.0,
            from_cache / 1000.0,
            from_store / from_cache
        );
    }

    fn can(cache: &PolicyCache, who: &UserInfo, verb: &str, ns: &str) -> Decision {
        authorize(
            cache,
            &Attributes::resource(who.clone(), verb, "", "pods", ns, "p"),
        )
    }

    #[tokio::test]
    async fn writes_are_seen_by_the_next_request() {
        let store = empty_store().await;
        let view = |rules: Vec<PolicyRule>| json(&cluster_role("view", rules));
        let created = store
            .create(
                &key("ClusterRole", None, "view"),
                view(vec![rule(&["get"], &[""], &["pods"], &[], &[])]),
            )
            .await
            .expect("create");
        let cache = PolicyCache::new(store.clone());
        let jane = user("jane", &["system:authenticated"]);
        assert!(!can(&cache, &jane, "get", "ns1").is_allowed());

        // A binding created is seen at once.
        store
            .create(
                &key("ClusterRoleBinding", None, "view"),
                json(&cluster_role_binding("view", &["User:jane"])),
            )
            .await
            .expect("create binding");
        assert_eq!(
            can(&cache, &jane, "get", "ns1"),
            Decision::Allow(
                "RBAC: allowed by ClusterRoleBinding \"view\" of ClusterRole \"view\" to User \"jane\""
                    .into()
            )
        );
        assert!(!can(&cache, &jane, "delete", "ns1").is_allowed());

        // A role changed is seen at once.
        store
            .update(
                &key("ClusterRole", None, "view"),
                view(vec![rule(&["get", "delete"], &[""], &["pods"], &[], &[])]),
                created.revision,
            )
            .await
            .expect("update role");
        assert!(can(&cache, &jane, "delete", "ns1").is_allowed());

        // A role deleted leaves its binding's error.
        store
            .delete(&key("ClusterRole", None, "view"), None)
            .await
            .expect("delete role");
        assert_eq!(
            can(&cache, &jane, "get", "ns1"),
            Decision::NoOpinion(
                "RBAC: clusterrole.rbac.authorization.k8s.io \"view\" not found".into()
            )
        );

        // A binding deleted grants nothing more; one in a namespace grants there only.
        store
            .delete(&key("ClusterRoleBinding", None, "view"), None)
            .await
            .expect("delete binding");
        assert_eq!(
            can(&cache, &jane, "get", "ns1"),
            Decision::NoOpinion(String::new())
        );
        store
            .create(
                &key("Role", Some("ns1"), "pods"),
                json(&role(
                    "ns1",
                    "pods",
                    vec![rule(&["get"], &[""], &["pods"], &[], &[])],
                )),
            )
            .await
            .expect("create role");
        store
            .create(
                &key("RoleBinding", Some("ns1"), "pods"),
                json(&role_binding(
                    "ns1",
                    "Role",
                    "pods",
                    &["Group:system:authenticated"],
                )),
            )
            .await
            .expect("create role binding");
        assert!(can(&cache, &jane, "get", "ns1").is_allowed());
        assert!(!can(&cache, &jane, "get", "ns2").is_allowed());
        store
            .delete(&key("RoleBinding", Some("ns1"), "pods"), None)
            .await
            .expect("delete role binding");
        assert!(!can(&cache, &jane, "get", "ns1").is_allowed());
        assert!(
            cache.policy.read().role_bindings.is_empty(),
            "empty namespaces are dropped"
        );
    }
}
