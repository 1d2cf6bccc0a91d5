//! The identity a request carries once authenticated (`k8s.io/apiserver/pkg/authentication/user`).

use std::collections::BTreeMap;

use serde_json::{json, Value};

/// Group of every authenticated user (`user.AllAuthenticated`).
pub const ALL_AUTHENTICATED: &str = "system:authenticated";
/// Group of the anonymous user (`user.AllUnauthenticated`).
pub const ALL_UNAUTHENTICATED: &str = "system:unauthenticated";
/// Name of the anonymous user (`user.Anonymous`).
pub const ANONYMOUS: &str = "system:anonymous";
/// Group whose members may do everything (`user.SystemPrivilegedGroup`).
pub const SYSTEM_MASTERS: &str = "system:masters";
/// Name given to the holder of the admin token: what kubeadm and kind name their admin user.
pub const ADMIN_USER: &str = "kubernetes-admin";

/// A user as authenticators produce it and authorizers read it (`user.DefaultInfo`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserInfo {
    /// User name (`system:serviceaccount:default:bot`, a certificate's CN, ...).
    pub name: String,
    /// Unique id, empty when the authenticator has none (client certificates).
    pub uid: String,
    /// Groups, `system:authenticated` included once authenticated.
    pub groups: Vec<String>,
    /// Extra attributes (`authentication.kubernetes.io/credential-id`, ...).
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// A user with a name and groups only.
    pub fn new(name: impl Into<String>, groups: &[&str]) -> Self {
        Self {
            name: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..Self::default()
        }
    }

    /// The anonymous user (`system:anonymous` in `system:unauthenticated`).
    pub fn anonymous() -> Self {
        Self::new(ANONYMOUS, &[ALL_UNAUTHENTICATED])
    }

    /// Whether this is the anonymous user.
    pub fn is_anonymous(&self) -> bool {
        self.name == ANONYMOUS
    }

    /// Adds `system:authenticated` unless present, as kube's `AuthenticatedGroupAdder` does for
    /// every user an authenticator recognised.
    pub fn with_authenticated_group(mut self) -> Self {
        if !self.groups.iter().any(|g| g == ALL_AUTHENTICATED) {
            self.groups.push(ALL_AUTHENTICATED.to_string());
        }
        self
    }

    /// The `authentication.k8s.io/v1` `UserInfo` object (`username`, `uid`, `groups`, `extra`),
    /// empty fields left out.
    pub fn to_json(&self) -> Value {
        let mut out = json!({ "username": self.name });
        if !self.uid.is_empty() {
            out["uid"] = json!(self.uid);
        }
        if !self.groups.is_empty() {
            out["groups"] = json!(self.groups);
        }
        if !self.extra.is_empty() {
            out["extra"] = json!(self.extra);
        }
        out
    }
}

/// Whether two secrets are equal, in time that does not depend on where they differ (bearer
/// tokens compared with what the server holds).
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_authenticated_group_is_added_once() {
        let u = UserInfo::new("alice", &["dev", ALL_AUTHENTICATED]).with_authenticated_group();
        assert_eq!(u.groups, ["dev", ALL_AUTHENTICATED]);
        let u = UserInfo::new("bob", &[]).with_authenticated_group();
        assert_eq!(u.groups, [ALL_AUTHENTICATED]);
    }

    #[test]
    fn user_info_serializes_as_the_authentication_api_does() {
        let mut u = UserInfo::new("bob", &["g"]);
        u.extra.insert("k".into(), vec!["v".into()]);
        assert_eq!(
            u.to_json(),
            json!({"username": "bob", "groups": ["g"], "extra": {"k": ["v"]}})
        );
        assert_eq!(
            UserInfo::anonymous().to_json(),
            json!({"username": "system:anonymous", "groups": ["system:unauthenticated"]})
        );
    }
}
