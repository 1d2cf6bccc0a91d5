//! The bindings of one scope (the cluster, or one namespace) by name, indexed by the users and
//! groups their subjects can name, so a request visits only the bindings that may apply to it.
//!
//! The index only ever narrows the visit: every binding a subject of which names the user (as
//! [`applies_to_user`] decides) is found, in name order — the order a full list of the store
//! gives, and so the order in which the visit met them before the index existed. Which subject
//! matched, and so the reasons given, are still decided by the visit itself.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use k8s_openapi::api::rbac::v1::{ClusterRoleBinding, RoleBinding, Subject};

#[cfg(doc)]
use super::rbac::applies_to_user;
use super::rbac::{service_account_namespace, service_account_username};
use crate::auth::UserInfo;

/// What the index needs of a binding.
pub trait Binding {
    /// `metadata.name`.
    fn name(&self) -> &str;
    /// `subjects`.
    fn subjects(&self) -> &[Subject];
}

impl Binding for ClusterRoleBinding {
    fn name(&self) -> &str {
        self.metadata.name.as_deref().unwrap_or_default()
    }

    fn subjects(&self) -> &[Subject] {
        self.subjects.as_deref().unwrap_or_default()
    }
}

impl Binding for RoleBinding {
    fn name(&self) -> &str {
        self.metadata.name.as_deref().unwrap_or_default()
    }

    fn subjects(&self) -> &[Subject] {
        self.subjects.as_deref().unwrap_or_default()
    }
}

/// Who a subject can name: a user by name, or the members of a group.
#[derive(Clone, Debug, PartialEq, Eq)]
enum SubjectKey {
    User(String),
    Group(String),
}

/// The keys under which a binding in `namespace` (empty for cluster bindings) with `subject` is
/// found; `None` for a subject that names nobody. Mirrors [`applies_to_user`]: a ServiceAccount
/// is the user `system:serviceaccount:<ns>:<name>`, its namespace defaulting to the binding's.
fn subject_key(subject: &Subject, namespace: &str) -> Option<SubjectKey> {
    match subject.kind.as_str() {
        "User" => Some(SubjectKey::User(subject.name.clone())),
        "Group" => Some(SubjectKey::Group(subject.name.clone())),
        "ServiceAccount" => {
            let ns = service_account_namespace(subject, namespace);
            (!ns.is_empty()).then(|| SubjectKey::User(service_account_username(ns, &subject.name)))
        }
        _ => None,
    }
}

/// The bindings of one scope, by name, with the names of those each user and group may be
/// bound by. Not synchronised: the cache holding it is.
#[derive(Debug)]
pub struct BindingIndex<B> {
    /// The namespace of the bindings (empty for cluster bindings).
    namespace: String,
    by_name: BTreeMap<String, Arc<B>>,
    by_user: HashMap<String, BTreeSet<String>>,
    by_group: HashMap<String, BTreeSet<String>>,
}

impl<B: Binding> BindingIndex<B> {
    /// No bindings, in `namespace` (empty for cluster bindings).
    pub fn new(namespace: &str) -> Self {
        Self {
            namespace: namespace.to_string(),
            by_name: BTreeMap::new(),
            by_user: HashMap::new(),
            by_group: HashMap::new(),
        }
    }

    /// Whether there are no bindings.
    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// Adds `binding`, replacing the one of the same name.
    pub fn insert(&mut self, binding: Arc<B>) {
        let name = binding.name().to_string();
        self.remove(&name);
        for key in binding
            .subjects()
            .iter()
            .filter_map(|s| subject_key(s, &self.namespace))
        {
            let names = match key {
                SubjectKey::User(u) => self.by_user.entry(u).or_default(),
                SubjectKey::Group(g) => self.by_group.entry(g).or_default(),
            };
            names.insert(name.clone());
        }
        self.by_name.insert(name, binding);
    }

    /// Removes the binding `name`, if there is one.
    pub fn remove(&mut self, name: &str) {
        let Some(old) = self.by_name.remove(name) else {
            return;
        };
        for key in old
            .subjects()
            .iter()
            .filter_map(|s| subject_key(s, &self.namespace))
        {
            let (map, k) = match key {
                SubjectKey::User(u) => (&mut self.by_user, u),
                SubjectKey::Group(g) => (&mut self.by_group, g),
            };
            if let Some(names) = map.get_mut(&k) {
                names.remove(name);
                if names.is_empty() {
                    map.remove(&k);
                }
            }
        }
    }

    /// The bindings a subject of which may name `user`, in name order.
    pub fn candidates(&self, user: &UserInfo) -> Vec<Arc<B>> {
        let sets: Vec<&BTreeSet<String>> = std::iter::once(self.by_user.get(&user.name))
            .chain(user.groups.iter().map(|g| self.by_group.get(g)))
            .flatten()
            .collect();
        let pick = |name: &String| self.by_name.get(name).cloned();
        match sets.as_slice() {
            [] => Vec::new(),
            [one] => one.iter().filter_map(pick).collect(),
            many => many
                .iter()
                .flat_map(|s| s.iter())
                .collect::<BTreeSet<_>>()
                .into_iter()
                .filter_map(pick)
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::rbac::applies_to_user;
    use super::super::rbac::tests::{cluster_role_binding, role_binding};
    use super::*;

    fn names<B: Binding>(bindings: &[Arc<B>]) -> Vec<&str> {
        bindings.iter().map(|b| b.name()).collect()
    }

    #[test]
    fn candidates_are_exactly_the_bindings_that_apply_in_name_order() {
        let mut index = BindingIndex::new("ns1");
        let mut bindings = vec![
            role_binding("ns1", "Role", "d", &["User:jane", "Group:devs"]),
            role_binding("ns1", "Role", "a", &["Group:devs"]),
            role_binding("ns1", "Role", "c", &["ServiceAccount:ns1:bot"]),
            role_binding("ns1", "Role", "b", &["User:bob"]),
            role_binding("ns1", "Role", "e", &["User:system:serviceaccount:ns1:bot"]),
        ];
        let mut defaulted = role_binding("ns1", "Role", "f", &[]);
        defaulted.subjects = Some(vec![Subject {
            kind: "ServiceAccount".into(),
            name: "bot".into(),
            ..Subject::default()
        }]);
        bindings.push(defaulted);
        let mut odd = role_binding("ns1", "Role", "g", &["User:jane"]);
        odd.subjects = Some(vec![Subject {
            kind: "Robot".into(),
            name: "jane".into(),
            ..Subject::default()
        }]);
        bindings.push(odd);
        for b in &bindings {
            index.insert(Arc::new(b.clone()));
        }
        let users = [
            UserInfo::new("jane", &["devs", "system:authenticated"]),
            UserInfo::new("jane", &[]),
            UserInfo::new("bob", &["devs"]),
            UserInfo::new("system:serviceaccount:ns1:bot", &["system:serviceaccounts"]),
            UserInfo::new("nobody", &[]),
        ];
        for user in &users {
            let mut want: Vec<&RoleBinding> = bindings
                .iter()
                .filter(|b| b.subjects().iter().any(|s| applies_to_user(user, s, "ns1")))
                .collect();
            want.sort_by_key(|b| b.name());
            let want: Vec<&str> = want.iter().map(|b| b.name()).collect();
            assert_eq!(names(&index.candidates(user)), want, "{user:?}");
        }
        assert_eq!(
            names(&index.candidates(&users[0])),
            ["a", "d"],
            "a binding naming the user twice is visited once"
        );
    }

    #[test]
    fn replaced_and_removed_bindings_leave_the_index() {
        let mut index = BindingIndex::new("");
        index.insert(Arc::new(cluster_role_binding("view", &["User:jane"])));
        index.insert(Arc::new(cluster_role_binding("view", &["User:bob"])));
        let jane = UserInfo::new("jane", &[]);
        let bob = UserInfo::new("bob", &[]);
        assert!(index.candidates(&jane).is_empty());
        assert_eq!(names(&index.candidates(&bob)), ["view"]);
        index.remove("view");
        assert!(index.candidates(&bob).is_empty());
        assert!(index.is_empty());
        assert!(index.by_user.is_empty(), "no empty sets are kept");
        // A ServiceAccount without a namespace names nobody cluster-wide.
        let mut sa = cluster_role_binding("x", &[]);
        sa.subjects = Some(vec![Subject {
            kind: "ServiceAccount".into(),
            name: "bot".into(),
            ..Subject::default()
        }]);
        index.insert(Arc::new(sa));
        assert!(index.by_user.is_empty());
    }
}
