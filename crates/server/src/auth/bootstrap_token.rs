//! Bootstrap token authentication (`--enable-bootstrap-token-auth`), as kube's
//! `plugin/pkg/auth/authenticator/token/bootstrap/bootstrap.go`: a bearer token
//! `<token-id>.<token-secret>` whose Secret `kube-system/bootstrap-token-<token-id>` holds that
//! secret, allows authentication and has not expired is the user `system:bootstrap:<token-id>` in
//! `system:bootstrappers` and the Secret's `auth-extra-groups`. Any other token is not one of
//! these (kube answers "not authenticated" without an error, so the next authenticator tries).

use std::collections::BTreeMap;

use serde_json::Value;

use super::serviceaccount::ObjectLookup;
use super::user::UserInfo;

/// `BootstrapDefaultGroup`.
pub const DEFAULT_GROUP: &str = "system:bootstrappers";

fn is_lower_alnum(s: &str, len: usize) -> bool {
    s.len() == len
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

/// `BootstrapGroupPattern`: `system:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]`.
fn is_bootstrap_group(g: &str) -> bool {
    let Some(rest) = g.strip_prefix("system:bootstrappers:") else {
        return false;
    };
    !rest.is_empty()
        && rest.len() <= 256
        && rest
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b':' || b == b'-')
        && rest
            .bytes()
            .last()
            .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

/// The user of bootstrap token `token` at `now` (Unix seconds), or `None`.
pub fn authenticate(lookup: &dyn ObjectLookup, token: &str, now: i64) -> Option<UserInfo> {
    let (id, secret) = token.split_once('.')?;
    if !is_lower_alnum(id, 6) || !is_lower_alnum(secret, 16) {
        return None;
    }
    let obj = lookup.get("secrets", "kube-system", &format!("bootstrap-token-{id}"))?;
    if rkcm_storage::object::is_deleting(&obj) {
        return None;
    }
    if obj.get("type").and_then(Value::as_str) != Some("bootstrap.kubernetes.io/token") {
        return None;
    }
    let data = |k: &str| -> String {
        use base64::Engine;
        obj.pointer(&format!("/data/{k}"))
            .and_then(Value::as_str)
            .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
            .and_then(|b| String::from_utf8(b).ok())
            .unwrap_or_default()
    };
    let stored = data("token-secret");
    if !super::user::constant_time_eq(stored.as_bytes(), secret.as_bytes()) {
        return None;
    }
    if data("token-id") != id {
        return None;
    }
    let expiration = data("expiration");
    if !expiration.is_empty() {
        match expiration.parse::<jiff::Timestamp>() {
            Ok(at) if at.as_second() > now => {}
            _ => return None,
        }
    }
    if data("usage-bootstrap-authentication") != "true" {
        return None;
    }
    let mut groups = vec![DEFAULT_GROUP.to_string()];
    let extra = data("auth-extra-groups");
    for g in extra.split(',').map(str::trim).filter(|g| !g.is_empty()) {
        if !is_bootstrap_group(g) {
            return None;
        }
        if !groups.iter().any(|x| x == g) {
            groups.push(g.to_string());
        }
    }
    Some(UserInfo {
        name: format!("system:bootstrap:{id}"),
        uid: String::new(),
        groups,
        extra: BTreeMap::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;
    use serde_json::json;

    struct One(Value);
    impl ObjectLookup for One {
        fn get(&self, plural: &str, ns: &str, name: &str) -> Option<Value> {
            (plural == "secrets" && ns == "kube-system" && name == "bootstrap-token-foobar")
                .then(|| self.0.clone())
        }
    }

    fn secret(pairs: &[(&str, &str)]) -> One {
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let data: serde_json::Map<String, Value> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), json!(b64(v))))
            .collect();
        One(
            json!({"metadata": {"name": "bootstrap-token-foobar", "namespace": "kube-system"},
                   "type": "bootstrap.kubernetes.io/token", "data": data}),
        )
    }

    const NOW: i64 = 1_700_000_000; // 2023-11-14T22:13:20Z
    const TOKEN: &str = "foobar.circumnavigation";

    fn good() -> Vec<(&'static str, &'static str)> {
        vec![
            ("token-id", "foobar"),
            ("token-secret", "circumnavigation"),
            ("usage-bootstrap-authentication", "true"),
        ]
    }

    // Cases of bootstrap_test.go's TestTokenAuthenticator.
    #[test]
    fn a_valid_token_is_its_bootstrap_user() {
        let user = authenticate(&secret(&good()), TOKEN, NOW).expect("authenticated");
        assert_eq!(user.name, "system:bootstrap:foobar");
        assert_eq!(user.groups, ["system:bootstrappers"]);
        let mut with_groups = good();
        with_groups.push((
            "auth-extra-groups",
            "system:bootstrappers:foo,system:bootstrappers:bar",
        ));
        let user = authenticate(&secret(&with_groups), TOKEN, NOW).expect("authenticated");
        assert_eq!(
            user.groups,
            [
                "system:bootstrappers",
                "system:bootstrappers:foo",
                "system:bootstrappers:bar"
            ]
        );
    }

    #[test]
    fn bad_tokens_and_secrets_are_not_authenticated() {
        assert!(authenticate(&secret(&good()), "foobar.wrongsecretxxxxx", NOW).is_none());
        assert!(authenticate(&secret(&good()), "foobar.circumnavigatio", NOW).is_none());
        assert!(authenticate(&secret(&good()), "not a token", NOW).is_none());
        let mut no_usage = good();
        no_usage.retain(|(k, _)| *k != "usage-bootstrap-authentication");
        assert!(authenticate(&secret(&no_usage), TOKEN, NOW).is_none());
        let mut expired = good();
        expired.push(("expiration", "2023-11-14T22:13:19Z"));
        assert!(authenticate(&secret(&expired), TOKEN, NOW).is_none());
        let mut later = good();
        later.push(("expiration", "2023-11-15T00:00:00Z"));
        assert!(authenticate(&secret(&later), TOKEN, NOW).is_some());
        let mut bad_group = good();
        bad_group.push(("auth-extra-groups", "foo"));
        assert!(authenticate(&secret(&bad_group), TOKEN, NOW).is_none());
        let mut wrong_id = good();
        wrong_id[0] = ("token-id", "barfoo");
        assert!(authenticate(&secret(&wrong_id), TOKEN, NOW).is_none());
    }
}
