//! Bootstrap token Secrets: their names, fields and expiry (`k8s.io/cluster-bootstrap` and
//! `pkg/controller/bootstrap/util.go`).

use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Secret;

/// `bootstrap.kubernetes.io/token`.
pub const SECRET_TYPE: &str = "bootstrap.kubernetes.io/token";
/// Bootstrap token Secrets are named `bootstrap-token-<token-id>`.
pub const SECRET_PREFIX: &str = "bootstrap-token-";
/// `token-id`.
pub const TOKEN_ID_KEY: &str = "token-id";
/// `token-secret`.
pub const TOKEN_SECRET_KEY: &str = "token-secret";
/// `expiration`: RFC 3339.
pub const EXPIRATION_KEY: &str = "expiration";
/// `usage-bootstrap-signing`: `"true"` lets the token sign `cluster-info`.
pub const USAGE_SIGNING_KEY: &str = "usage-bootstrap-signing";
/// `usage-bootstrap-authentication`: `"true"` lets the token authenticate.
pub const USAGE_AUTHENTICATION_KEY: &str = "usage-bootstrap-authentication";
/// `auth-extra-groups`: comma-separated groups beyond `system:bootstrappers`.
pub const EXTRA_GROUPS_KEY: &str = "auth-extra-groups";
/// Namespace of bootstrap token Secrets.
pub const TOKEN_NAMESPACE: &str = "kube-system";

/// Whether `id` is a token ID: six characters of `[a-z0-9]`.
pub fn is_token_id(id: &str) -> bool {
    id.len() == 6
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

/// The token ID a Secret's name carries (`ParseName`).
pub fn parse_name(name: &str) -> Option<&str> {
    name.strip_prefix(SECRET_PREFIX)
        .filter(|id| is_token_id(id))
}

/// `GetData`: a data value as a string ("" when absent); `stringData` is folded into `data` by
/// the API server.
pub fn data<'a>(secret: &'a Secret, key: &str) -> &'a str {
    secret
        .data
        .as_ref()
        .and_then(|d| d.get(key))
        .and_then(|v| std::str::from_utf8(&v.0).ok())
        .unwrap_or("")
}

/// `GetExpiration`: the time left before the token expires, or `None` once expired. A token
/// without `expiration` never expires (`Some(None)`); one whose expiration cannot be parsed is
/// treated as expired.
pub fn expiration(secret: &Secret, now: Timestamp) -> Option<Option<Duration>> {
    let raw = data(secret, EXPIRATION_KEY);
    if raw.is_empty() {
        return Some(None);
    }
    let Ok(at) = raw.parse::<Timestamp>() else {
        tracing::debug!(
            "Unparseable expiration time ({raw}) in {}/{} Secret. Treating as expired.",
            secret.metadata.namespace.as_deref().unwrap_or(""),
            secret.metadata.name.as_deref().unwrap_or("")
        );
        return None;
    };
    let left = at.as_nanosecond() - now.as_nanosecond();
    if left <= 0 {
        return None;
    }
    Some(Some(Duration::from_nanos(
        u64::try_from(left).unwrap_or(u64::MAX),
    )))
}

/// `HasExpired`.
pub fn has_expired(secret: &Secret, now: Timestamp) -> bool {
    expiration(secret, now).is_none()
}

/// The token ID and secret of a Secret that may sign `cluster-info` now
/// (`validateSecretForSigning`): a well-formed name matching its `token-id`, a `token-secret`,
/// not expired, `usage-bootstrap-signing: "true"`.
pub fn valid_for_signing(secret: &Secret, now: Timestamp) -> Option<(String, String)> {
    let name = secret.metadata.name.as_deref().unwrap_or("");
    let Some(name_id) = parse_name(name) else {
        tracing::debug!("invalid secret name: {name}. Must be of form {SECRET_PREFIX}<secret-id>.");
        return None;
    };
    let id = data(secret, TOKEN_ID_KEY);
    if id.is_empty() {
        tracing::debug!("No {TOKEN_ID_KEY} key in {name} Secret");
        return None;
    }
    if id != name_id {
        tracing::debug!("Token ID ({id}) doesn't match secret name: {name_id}");
        return None;
    }
    let token_secret = data(secret, TOKEN_SECRET_KEY);
    if token_secret.is_empty() {
        return None;
    }
    if has_expired(secret, now) {
        return None;
    }
    if data(secret, USAGE_SIGNING_KEY) != "true" {
        return None;
    }
    Some((id.to_string(), token_secret.to_string()))
}

#[cfg(test)]
pub(crate) mod fixtures {
    use super::*;
    use k8s_openapi::ByteString;
    use std::collections::BTreeMap;

    /// `newTokenSecret` of kube's tests: a signing token in kube-system.
    pub fn token_secret(id: &str, secret: &str) -> Secret {
        let mut s = Secret::default();
        s.metadata.namespace = Some(TOKEN_NAMESPACE.into());
        s.metadata.name = Some(format!("{SECRET_PREFIX}{id}"));
        s.metadata.resource_version = Some("1".into());
        s.type_ = Some(SECRET_TYPE.into());
        s.data = Some(BTreeMap::from([
            (TOKEN_ID_KEY.to_string(), ByteString(id.as_bytes().to_vec())),
            (
                TOKEN_SECRET_KEY.to_string(),
                ByteString(secret.as_bytes().to_vec()),
            ),
            (USAGE_SIGNING_KEY.to_string(), ByteString(b"true".to_vec())),
        ]));
        s
    }

    /// Sets `expiration`.
    pub fn expiring(mut s: Secret, at: &str) -> Secret {
        s.data.get_or_insert_with(Default::default).insert(
            EXPIRATION_KEY.to_string(),
            ByteString(at.as_bytes().to_vec()),
        );
        s
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::*;
    use super::*;

    fn now() -> Timestamp {
        "2024-06-01T12:00:00Z".parse().expect("a time")
    }

    #[test]
    fn names_carry_six_character_token_ids() {
        assert_eq!(parse_name("bootstrap-token-abc123"), Some("abc123"));
        assert_eq!(parse_name("bootstrap-token-ABC123"), None);
        assert_eq!(parse_name("bootstrap-token-abc12"), None);
        assert_eq!(parse_name("token-abc123"), None);
    }

    // The cases of util_test.go's TestValidateSecretForSigning.
    #[test]
    fn only_well_formed_unexpired_signing_tokens_sign() {
        let good = token_secret("tokenid", "tokensecret");
        // "tokenid" has seven characters: kube's fixture uses a six-character one here.
        assert_eq!(valid_for_signing(&good, now()), None);
        let good = token_secret("abc123", "tokensecret");
        assert_eq!(
            valid_for_signing(&good, now()),
            Some(("abc123".into(), "tokensecret".into()))
        );
        let mut wrong_id = good.clone();
        wrong_id.metadata.name = Some("bootstrap-token-zzz999".into());
        assert_eq!(valid_for_signing(&wrong_id, now()), None);
        let mut no_secret = good.clone();
        no_secret.data.as_mut().unwrap().remove(TOKEN_SECRET_KEY);
        assert_eq!(valid_for_signing(&no_secret, now()), None);
        let mut no_usage = good.clone();
        no_usage.data.as_mut().unwrap().remove(USAGE_SIGNING_KEY);
        assert_eq!(valid_for_signing(&no_usage, now()), None);
        let expired = expiring(good.clone(), "2024-06-01T11:59:59Z");
        assert_eq!(valid_for_signing(&expired, now()), None);
        let unparsable = expiring(good.clone(), "tomorrow");
        assert_eq!(valid_for_signing(&unparsable, now()), None);
        let later = expiring(good, "2024-06-01T13:00:00+01:00");
        assert!(valid_for_signing(&later, now()).is_none(), "12:00Z is now");
    }

    #[test]
    fn expiration_is_the_time_left() {
        let s = token_secret("abc123", "s");
        assert_eq!(expiration(&s, now()), Some(None));
        let s = expiring(s, "2024-06-01T12:00:30Z");
        assert_eq!(expiration(&s, now()), Some(Some(Duration::from_secs(30))));
        assert!(has_expired(&s, "2024-06-01T12:00:30Z".parse().unwrap()));
    }
}
