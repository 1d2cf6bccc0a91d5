//! Acting as another user with the `Impersonate-*` headers, each part of the new identity
//! authorized with the `impersonate` verb first
//! (`staging/src/k8s.io/apiserver/pkg/endpoints/filters/impersonation.go`).

use std::collections::BTreeMap;

use http::HeaderMap;

use super::authorization::{forbidden, Attributes, Decision};
use super::user::{UserInfo, ALL_AUTHENTICATED, ALL_UNAUTHENTICATED, ANONYMOUS};
use crate::error::ApiError;

/// `Impersonate-User`.
pub const USER_HEADER: &str = "impersonate-user";
/// `Impersonate-Group` (repeatable).
pub const GROUP_HEADER: &str = "impersonate-group";
/// `Impersonate-Uid`.
pub const UID_HEADER: &str = "impersonate-uid";
/// Prefix of `Impersonate-Extra-<key>` (repeatable).
pub const EXTRA_HEADER_PREFIX: &str = "impersonate-extra-";

const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";

/// One thing to impersonate, as `buildImpersonationRequests` lists them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// A service account (`Impersonate-User: system:serviceaccount:<ns>:<name>`).
    ServiceAccount {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
    },
    /// A user.
    User(String),
    /// A group.
    Group(String),
    /// One value of an extra attribute.
    Extra {
        /// The key (unescaped, lower case).
        key: String,
        /// The value.
        value: String,
    },
    /// A uid.
    Uid(String),
}

impl Request {
    /// What the requester must be allowed to `impersonate`.
    fn attributes(&self, requestor: &UserInfo) -> Attributes {
        let (group, resource, sub, ns, name) = match self {
            Request::ServiceAccount { namespace, name } => {
                ("", "serviceaccounts", "", namespace.as_str(), name.as_str())
            }
            Request::User(n) => ("", "users", "", "", n.as_str()),
            Request::Group(n) => ("", "groups", "", "", n.as_str()),
            Request::Extra { key, value } => (
                "authentication.k8s.io",
                "userextras",
                key.as_str(),
                "",
                value.as_str(),
            ),
            Request::Uid(n) => ("authentication.k8s.io", "uids", "", "", n.as_str()),
        };
        Attributes {
            subresource: sub.to_string(),
            api_version: "v1".to_string(),
            ..Attributes::resource(requestor.clone(), "impersonate", group, resource, ns, name)
        }
    }
}

/// `serviceaccount.SplitUsername`.
fn split_service_account(user: &str) -> Option<(String, String)> {
    let rest = user.strip_prefix(SERVICE_ACCOUNT_PREFIX)?;
    let (ns, name) = rest.split_once(':')?;
    (!ns.is_empty() && !name.is_empty() && !name.contains(':'))
        .then(|| (ns.to_string(), name.to_string()))
}

/// `url.PathUnescape` of an extra key (`%2F` in a header name stands for `/`).
fn unescape(key: &str) -> String {
    let bytes = key.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
            if let Ok(b) = u8::from_str_radix(hex, 16) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `buildImpersonationRequests`: the user first, then groups, extras and the uid. Asking for
/// anything without a user is an error (kube answers 500 with it).
pub fn requests(headers: &HeaderMap) -> Result<Vec<Request>, String> {
    let text = |v: &http::HeaderValue| v.to_str().unwrap_or("").to_string();
    let mut out = Vec::new();
    let user = headers.get(USER_HEADER).map(text).filter(|u| !u.is_empty());
    if let Some(user) = &user {
        out.push(match split_service_account(user) {
            Some((namespace, name)) => Request::ServiceAccount { namespace, name },
            None => Request::User(user.clone()),
        });
    }
    out.extend(
        headers
            .get_all(GROUP_HEADER)
            .iter()
            .map(|g| Request::Group(text(g))),
    );
    let mut extra_names: Vec<&str> = headers
        .keys()
        .map(|k| k.as_str())
        .filter(|k| k.starts_with(EXTRA_HEADER_PREFIX))
        .collect();
    extra_names.dedup();
    for name in extra_names {
        let key = unescape(&name[EXTRA_HEADER_PREFIX.len()..]);
        out.extend(headers.get_all(name).iter().map(|v| Request::Extra {
            key: key.clone(),
            value: text(v),
        }));
    }
    if let Some(uid) = headers.get(UID_HEADER).map(text).filter(|u| !u.is_empty()) {
        out.push(Request::Uid(uid));
    }
    if user.is_none() && !out.is_empty() {
        return Err(format!("requested {out:?} without impersonating a user"));
    }
    Ok(out)
}

/// The user `requestor` acts as, after `authorize` allowed each part of it; `None` when the
/// request impersonates nobody. Refusals are kube's 403 for the first part not allowed.
pub fn impersonate(
    requestor: &UserInfo,
    headers: &HeaderMap,
    authorize: impl Fn(&Attributes) -> Decision,
) -> Result<Option<UserInfo>, ApiError> {
    let wanted = requests(headers).map_err(|e| {
        ApiError::new(
            500,
            "InternalError",
            format!("Internal error occurred: {e}"),
        )
    })?;
    if wanted.is_empty() {
        return Ok(None);
    }
    let groups_specified = headers.contains_key(GROUP_HEADER);
    let mut name = String::new();
    let mut groups: Vec<String> = Vec::new();
    let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut uid = String::new();
    for request in &wanted {
        let attrs = request.attributes(requestor);
        match request {
            Request::ServiceAccount {
                namespace,
                name: sa,
            } => {
                name = format!("{SERVICE_ACCOUNT_PREFIX}{namespace}:{sa}");
                if !groups_specified {
                    groups = vec![
                        "system:serviceaccounts".to_string(),
                        format!("system:serviceaccounts:{namespace}"),
                    ];
                }
            }
            Request::User(u) => name = u.clone(),
            Request::Group(g) => groups.push(g.clone()),
            Request::Extra { key, value } => {
                extra.entry(key.clone()).or_default().push(value.clone())
            }
            Request::Uid(u) => uid = u.clone(),
        }
        let decision = authorize(&attrs);
        if !decision.is_allowed() {
            return Err(forbidden(&attrs, decision.reason()));
        }
    }
    if name != ANONYMOUS {
        if !groups
            .iter()
            .any(|g| g == ALL_AUTHENTICATED || g == ALL_UNAUTHENTICATED)
        {
            groups.push(ALL_AUTHENTICATED.to_string());
        }
    } else if !groups.iter().any(|g| g == ALL_UNAUTHENTICATED) {
        groups.push(ALL_UNAUTHENTICATED.to_string());
    }
    Ok(Some(UserInfo {
        name,
        uid,
        groups,
        extra,
    }))
}

/// Removes the impersonation headers once they have been acted on.
pub fn strip_headers(headers: &mut HeaderMap) {
    let names: Vec<http::HeaderName> = headers
        .keys()
        .filter(|k| {
            let k = k.as_str();
            k == USER_HEADER
                || k == GROUP_HEADER
                || k == UID_HEADER
                || k.starts_with(EXTRA_HEADER_PREFIX)
        })
        .cloned()
        .collect();
    for n in names {
        headers.remove(n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                http::HeaderName::from_bytes(k.as_bytes()).expect("name"),
                v.parse().expect("value"),
            );
        }
        h
    }

    /// An authorizer that allows `impersonate` of the listed `resource/name` pairs only.
    fn allowing(allowed: &'static [&'static str]) -> impl Fn(&Attributes) -> Decision {
        move |a: &Attributes| {
            let key = format!("{}/{}", a.resource, a.name);
            if a.verb == "impersonate" && allowed.contains(&key.as_str()) {
                Decision::Allow(String::new())
            } else {
                Decision::NoOpinion(String::new())
            }
        }
    }

    fn bob() -> UserInfo {
        UserInfo::new("bob", &["system:authenticated"])
    }

    /// Cases of `TestImpersonationFilter` (impersonation_test.go).
    #[test]
    fn impersonation_follows_kubes_cases() {
        // no impersonation
        assert_eq!(impersonate(&bob(), &headers(&[]), allowing(&[])), Ok(None));
        // impersonating a user, allowed: system:authenticated is added
        let u = impersonate(
            &bob(),
            &headers(&[("Impersonate-User", "jane")]),
            allowing(&["users/jane"]),
        )
        .expect("allowed")
        .expect("impersonated");
        assert_eq!(
            (u.name.as_str(), u.groups.as_slice()),
            ("jane", &["system:authenticated".to_string()][..])
        );
        // refused, with kube's message
        let e = impersonate(
            &bob(),
            &headers(&[("Impersonate-User", "jane")]),
            allowing(&[]),
        )
        .expect_err("refused");
        assert_eq!(e.code, 403);
        assert_eq!(
            e.message,
            "users \"jane\" is forbidden: User \"bob\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope"
        );
        // groups need their own permission
        let h = headers(&[
            ("Impersonate-User", "jane"),
            ("Impersonate-Group", "devs"),
            ("Impersonate-Group", "ops"),
        ]);
        let e = impersonate(&bob(), &h, allowing(&["users/jane", "groups/devs"]))
            .expect_err("ops refused");
        assert!(
            e.message.starts_with("groups \"ops\" is forbidden"),
            "{}",
            e.message
        );
        let u = impersonate(
            &bob(),
            &h,
            allowing(&["users/jane", "groups/devs", "groups/ops"]),
        )
        .expect("ok")
        .expect("user");
        assert_eq!(u.groups, ["devs", "ops", "system:authenticated"]);
        // system:unauthenticated given: system:authenticated not added
        let h = headers(&[
            ("Impersonate-User", "jane"),
            ("Impersonate-Group", "system:unauthenticated"),
        ]);
        let u = impersonate(
            &bob(),
            &h,
            allowing(&["users/jane", "groups/system:unauthenticated"]),
        )
        .expect("ok")
        .expect("user");
        assert_eq!(u.groups, ["system:unauthenticated"]);
        // a service account gets its groups and is authorized as serviceaccounts in its namespace
        let h = headers(&[("Impersonate-User", "system:serviceaccount:ns:bot")]);
        let e = impersonate(&bob(), &h, allowing(&[])).expect_err("refused");
        assert_eq!(
            e.message,
            "serviceaccounts \"bot\" is forbidden: User \"bob\" cannot impersonate resource \"serviceaccounts\" in API group \"\" in the namespace \"ns\""
        );
        let u = impersonate(&bob(), &h, allowing(&["serviceaccounts/bot"]))
            .expect("ok")
            .expect("user");
        assert_eq!(u.name, "system:serviceaccount:ns:bot");
        assert_eq!(
            u.groups,
            [
                "system:serviceaccounts",
                "system:serviceaccounts:ns",
                "system:authenticated"
            ]
        );
        // extras and uid
        let h = headers(&[
            ("Impersonate-User", "jane"),
            ("Impersonate-Extra-Scopes", "a"),
            ("Impersonate-Extra-Scopes", "b"),
            ("Impersonate-Uid", "1234"),
        ]);
        let e = impersonate(&bob(), &h, allowing(&["users/jane", "userextras/a"]))
            .expect_err("b refused");
        assert!(e.message.contains("cannot impersonate resource \"userextras/scopes\" in API group \"authentication.k8s.io\""), "{}", e.message);
        let u = impersonate(
            &bob(),
            &h,
            allowing(&["users/jane", "userextras/a", "userextras/b", "uids/1234"]),
        )
        .expect("ok")
        .expect("user");
        assert_eq!(
            u.extra.get("scopes"),
            Some(&vec!["a".to_string(), "b".to_string()])
        );
        assert_eq!(u.uid, "1234");
        // groups without a user
        let e = impersonate(
            &bob(),
            &headers(&[("Impersonate-Group", "devs")]),
            allowing(&["groups/devs"]),
        )
        .expect_err("no user");
        assert_eq!(e.code, 500);
        assert!(e.message.contains("without impersonating a user"));
    }

    #[test]
    fn escaped_extra_keys_are_unescaped() {
        assert_eq!(unescape("example.com%2fscopes"), "example.com/scopes");
        assert_eq!(unescape("plain"), "plain");
        assert_eq!(unescape("bad%zz"), "bad%zz");
    }
}
