//! Service-account tokens: the claims kube puts in them (`pkg/serviceaccount/claims.go`,
//! `legacy.go`) and their validation as kube's JWT authenticator does (`jwt.go`): issuer, ES256 or
//! RS256 signature, audiences, expiry with one minute of leeway, and the service account and bound
//! object still existing with the same UID.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{json, Map, Value};

use super::jwt;
use super::signing_key::SigningKey;
use super::user::UserInfo;

/// Issuer of bound tokens (kube's `--service-account-issuer` as kubeadm sets it).
pub const DEFAULT_ISSUER: &str = "https://kubernetes.default.svc.cluster.local";
/// Issuer of the tokens the token controller writes into Secrets (`serviceaccount.LegacyIssuer`).
pub const LEGACY_ISSUER: &str = "kubernetes/serviceaccount";
/// Allowed clock skew when checking `exp`, `nbf`, `iat` and deletions (`jwt.DefaultLeeway`).
pub const LEEWAY_SECONDS: i64 = 60;
/// Expiration requested by kubelets of old, which kube extends to a year
/// (`WarnOnlyBoundTokenExpirationSeconds`).
pub const WARN_ONLY_BOUND_TOKEN_EXPIRATION_SECONDS: i64 = 60 * 60 + 7;
/// The extended expiration (`ExpirationExtensionSeconds`).
pub const EXPIRATION_EXTENSION_SECONDS: i64 = 24 * 365 * 60 * 60;

/// `authentication.kubernetes.io/pod-name` extra key.
pub const POD_NAME_KEY: &str = "authentication.kubernetes.io/pod-name";
/// `authentication.kubernetes.io/pod-uid` extra key.
pub const POD_UID_KEY: &str = "authentication.kubernetes.io/pod-uid";
/// `authentication.kubernetes.io/node-name` extra key.
pub const NODE_NAME_KEY: &str = "authentication.kubernetes.io/node-name";
/// `authentication.kubernetes.io/node-uid` extra key.
pub const NODE_UID_KEY: &str = "authentication.kubernetes.io/node-uid";
/// `authentication.kubernetes.io/credential-id` extra key.
pub const CREDENTIAL_ID_KEY: &str = "authentication.kubernetes.io/credential-id";

/// Group of every service account (`serviceaccount.AllServiceAccountsGroup`).
pub const ALL_SERVICE_ACCOUNTS_GROUP: &str = "system:serviceaccounts";

/// `system:serviceaccount:<ns>:<name>` (`serviceaccount.MakeUsername`).
pub fn username(namespace: &str, name: &str) -> String {
    format!("system:serviceaccount:{namespace}:{name}")
}

/// `system:serviceaccounts` and `system:serviceaccounts:<ns>` (`MakeGroupNames`).
pub fn groups(namespace: &str) -> Vec<String> {
    vec![
        ALL_SERVICE_ACCOUNTS_GROUP.to_string(),
        format!("{ALL_SERVICE_ACCOUNTS_GROUP}:{namespace}"),
    ]
}

/// A name and UID in the `kubernetes.io` claim.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ObjectRef {
    /// Name.
    pub name: String,
    /// UID.
    pub uid: String,
}

impl ObjectRef {
    fn to_json(&self) -> Value {
        json!({ "name": self.name, "uid": self.uid })
    }

    fn from_json(v: Option<&Value>) -> Option<Self> {
        let v = v?.as_object()?;
        let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        Some(Self {
            name: s("name"),
            uid: s("uid"),
        })
    }
}

/// What a bound token says (`Claims` in claims.go).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TokenClaims {
    /// Namespace of the service account.
    pub namespace: String,
    /// The service account.
    pub service_account: ObjectRef,
    /// The pod the token is bound to.
    pub pod: Option<ObjectRef>,
    /// The secret the token is bound to.
    pub secret: Option<ObjectRef>,
    /// The node the token is bound to, or the node of the bound pod.
    pub node: Option<ObjectRef>,
    /// `aud`.
    pub audiences: Vec<String>,
    /// `iat` and `nbf`, Unix seconds.
    pub issued_at: i64,
    /// `exp`, Unix seconds.
    pub expires_at: i64,
    /// `kubernetes.io.warnafter` of extended tokens, Unix seconds.
    pub warn_after: Option<i64>,
    /// `jti`.
    pub id: String,
}

impl TokenClaims {
    /// The JWT claims, in kube's layout.
    pub fn to_json(&self, issuer: &str) -> Value {
        let mut k8s = Map::new();
        k8s.insert("namespace".into(), json!(self.namespace));
        if let Some(node) = &self.node {
            k8s.insert("node".into(), node.to_json());
        }
        if let Some(pod) = &self.pod {
            k8s.insert("pod".into(), pod.to_json());
        }
        if let Some(secret) = &self.secret {
            k8s.insert("secret".into(), secret.to_json());
        }
        k8s.insert("serviceaccount".into(), self.service_account.to_json());
        if let Some(w) = self.warn_after {
            k8s.insert("warnafter".into(), json!(w));
        }
        json!({
            "aud": self.audiences,
            "exp": self.expires_at,
            "iat": self.issued_at,
            "iss": issuer,
            "jti": self.id,
            "kubernetes.io": k8s,
            "nbf": self.issued_at,
            "sub": username(&self.namespace, &self.service_account.name),
        })
    }
}

/// The objects a token may depend on, read at validation time.
pub trait ObjectLookup: Send + Sync {
    /// The core/v1 object of resource `plural` (`serviceaccounts`, `pods`, `secrets`, `nodes`)
    /// named `name` in `namespace` (empty for nodes), if it exists.
    fn get(&self, plural: &str, namespace: &str, name: &str) -> Option<Value>;

    /// Sets label `key` to `value` on the Secret `namespace/name` if it still has UID `uid`, as
    /// kube's merge patch with a UID precondition does; failures are logged, never returned
    /// (`patchSecretWithLastUsedDate`). The default does nothing.
    fn label_secret(&self, namespace: &str, name: &str, uid: &str, key: &str, value: &str) {
        let _ = (namespace, name, uid, key, value);
    }
}

/// `serviceaccount.LastUsedLabelKey`: the date a legacy token last authenticated.
pub const LAST_USED_LABEL_KEY: &str = "kubernetes.io/legacy-token-last-used";
/// `serviceaccount.InvalidSinceLabelKey`: the date the legacy token cleaner invalidated a token.
pub const INVALID_SINCE_LABEL_KEY: &str = "kubernetes.io/legacy-token-invalid-since";

/// The UTC date (`2006-01-02`) of Unix time `now`, and of the day after.
fn today_and_tomorrow(now: i64) -> (String, String) {
    let date = |t: i64| {
        jiff::Timestamp::from_second(t)
            .map(|ts| ts.to_zoned(jiff::tz::TimeZone::UTC).date().to_string())
            .unwrap_or_default()
    };
    (date(now), date(now + 24 * 3600))
}

/// The result of presenting a token to the service-account authenticator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Not a token of this issuer: the next authenticator may try.
    NotMine,
    /// A valid token of `user`, for `audiences`.
    Authenticated {
        /// The service account.
        user: UserInfo,
        /// The audiences the token is good for among those requested.
        audiences: Vec<String>,
    },
    /// A token of this issuer that is not (or no longer) valid, and why, in kube's words.
    Invalid(String),
}

/// Validates service-account tokens (bound and legacy) signed with the cluster's key.
pub struct ServiceAccountTokens {
    key: Arc<SigningKey>,
    issuer: String,
    audiences: Vec<String>,
    lookup: Arc<dyn ObjectLookup>,
}

impl ServiceAccountTokens {
    /// Tokens of `issuer` signed with `key`; `audiences` are the API server's own.
    pub fn new(
        key: Arc<SigningKey>,
        issuer: impl Into<String>,
        audiences: Vec<String>,
        lookup: Arc<dyn ObjectLookup>,
    ) -> Self {
        Self {
            key,
            issuer: issuer.into(),
            audiences,
            lookup,
        }
    }

    /// The issuer of bound tokens.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The API server's audiences, default of TokenRequests and TokenReviews.
    pub fn audiences(&self) -> &[String] {
        &self.audiences
    }

    /// The signing key.
    pub fn key(&self) -> &SigningKey {
        &self.key
    }

    /// Signs `claims` as a bound token of this issuer.
    pub fn issue(&self, claims: &TokenClaims) -> String {
        jwt::sign(&claims.to_json(&self.issuer), &self.key)
    }

    /// Validates `token` at `now` (Unix seconds) for `requested` audiences (the API server's when
    /// `None`), as `jwtTokenAuthenticator.AuthenticateToken`.
    pub fn authenticate(&self, token: &str, requested: Option<&[String]>, now: i64) -> Outcome {
        let Some(parsed) = jwt::parse(token) else {
            return Outcome::NotMine;
        };
        let issuer = parsed.claims.get("iss").and_then(Value::as_str);
        let legacy = match issuer {
            Some(i) if i == self.issuer => false,
            Some(LEGACY_ISSUER) => true,
            _ => return Outcome::NotMine,
        };
        if !parsed.verify(&self.key) {
            return Outcome::Invalid("go-jose/go-jose: error in cryptographic primitive".into());
        }
        let mut token_audiences = audiences_claim(parsed.claims.get("aud"));
        if token_audiences.is_empty() {
            // Legacy tokens carry no audience: only the API server's are allowed.
            token_audiences = self.audiences.clone();
        }
        let requested = requested.unwrap_or(&self.audiences);
        let audiences: Vec<String> = token_audiences
            .iter()
            .filter(|a| requested.contains(a))
            .cloned()
            .collect();
        if audiences.is_empty() && !self.audiences.is_empty() {
            return Outcome::Invalid(format!(
                "token audiences {} is invalid for the target audiences {}",
                go_quoted(&token_audiences),
                go_quoted(requested)
            ));
        }
        let user = if legacy {
            self.validate_legacy(token, &parsed.claims, now)
        } else {
            self.validate_bound(&parsed.claims, now)
        };
        match user {
            Ok(user) => Outcome::Authenticated { user, audiences },
            Err(why) => Outcome::Invalid(why),
        }
    }

    /// `validator.Validate` of claims.go.
    fn validate_bound(&self, claims: &Value, now: i64) -> Result<UserInfo, String> {
        let time = |k: &str| claims.get(k).and_then(Value::as_i64);
        if time("nbf").is_some_and(|nbf| now + LEEWAY_SECONDS < nbf) {
            return Err("service account token is not valid yet".into());
        }
        if time("exp").is_some_and(|exp| now - LEEWAY_SECONDS > exp) {
            return Err("service account token has expired".into());
        }
        if time("iat").is_some_and(|iat| now + LEEWAY_SECONDS < iat) {
            return Err(
                "service account token claims could not be validated due to unexpected validation error"
                    .into(),
            );
        }
        let k8s = claims.get("kubernetes.io");
        let namespace = k8s
            .and_then(|k| k.get("namespace"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let sa =
            ObjectRef::from_json(k8s.and_then(|k| k.get("serviceaccount"))).unwrap_or_default();
        let pod = ObjectRef::from_json(k8s.and_then(|k| k.get("pod")));
        let secret = ObjectRef::from_json(k8s.and_then(|k| k.get("secret")));
        let node = ObjectRef::from_json(k8s.and_then(|k| k.get("node")));
        let deleted_before = now - LEEWAY_SECONDS;

        let account = self
            .lookup
            .get("serviceaccounts", namespace, &sa.name)
            .ok_or_else(|| format!("serviceaccount \"{}\" not found", sa.name))?;
        if deleted_long_ago(&account, deleted_before) {
            return Err(format!(
                "service account {namespace}/{} has been deleted",
                sa.name
            ));
        }
        let account_uid = rkcm_storage::object::uid(&account);
        if account_uid != sa.uid {
            return Err(format!(
                "service account UID ({account_uid}) does not match claim ({})",
                sa.uid
            ));
        }
        if let Some(secret) = &secret {
            let obj = self
                .lookup
                .get("secrets", namespace, &secret.name)
                .filter(|s| !deleted_long_ago(s, deleted_before))
                .ok_or("service account token has been invalidated")?;
            let uid = rkcm_storage::object::uid(&obj);
            if uid != secret.uid {
                return Err(format!(
                    "secret UID ({uid}) does not match service account secret ref claim ({})",
                    secret.uid
                ));
            }
        }
        if let Some(pod) = &pod {
            let obj = self
                .lookup
                .get("pods", namespace, &pod.name)
                .filter(|p| !deleted_long_ago(p, deleted_before))
                .ok_or("service account token has been invalidated")?;
            let uid = rkcm_storage::object::uid(&obj);
            if uid != pod.uid {
                return Err(format!(
                    "pod UID ({uid}) does not match service account pod ref claim ({})",
                    pod.uid
                ));
            }
        }
        // A node named only as the bound pod's node is not checked (kube checks it only for
        // tokens bound to the node itself).
        if let (Some(node), None) = (&node, &pod) {
            let obj = self
                .lookup
                .get("nodes", "", &node.name)
                .filter(|n| !deleted_long_ago(n, deleted_before))
                .ok_or("service account token has been invalidated")?;
            let uid = rkcm_storage::object::uid(&obj);
            if uid != node.uid {
                return Err(format!(
                    "node UID ({uid}) does not match service account node ref claim ({})",
                    node.uid
                ));
            }
        }
        let mut extra = BTreeMap::new();
        if let Some(pod) = pod.filter(|p| !p.name.is_empty() && !p.uid.is_empty()) {
            extra.insert(POD_NAME_KEY.to_string(), vec![pod.name]);
            extra.insert(POD_UID_KEY.to_string(), vec![pod.uid]);
        }
        if let Some(jti) = claims
            .get("jti")
            .and_then(Value::as_str)
            .filter(|j| !j.is_empty())
        {
            extra.insert(CREDENTIAL_ID_KEY.to_string(), vec![format!("JTI={jti}")]);
        }
        if let Some(node) = node.filter(|n| !n.name.is_empty()) {
            extra.insert(NODE_NAME_KEY.to_string(), vec![node.name]);
            if !node.uid.is_empty() {
                extra.insert(NODE_UID_KEY.to_string(), vec![node.uid]);
            }
        }
        Ok(UserInfo {
            name: username(namespace, &sa.name),
            uid: sa.uid,
            groups: groups(namespace),
            extra,
        })
    }

    /// `legacyValidator.Validate` of legacy.go: the Secret must still exist and hold this very
    /// token, and the service account must exist with the UID of the claim.
    fn validate_legacy(&self, token: &str, claims: &Value, now: i64) -> Result<UserInfo, String> {
        let claim = |k: &str| {
            claims
                .get(format!("kubernetes.io/serviceaccount/{k}"))
                .and_then(Value::as_str)
                .unwrap_or("")
        };
        let (namespace, secret_name, sa_name, sa_uid) = (
            claim("namespace"),
            claim("secret.name"),
            claim("service-account.name"),
            claim("service-account.uid"),
        );
        if namespace.is_empty() {
            return Err("namespace claim is missing".into());
        }
        if secret_name.is_empty() {
            return Err("secretName claim is missing".into());
        }
        if sa_name.is_empty() {
            return Err("serviceAccountName claim is missing".into());
        }
        if sa_uid.is_empty() {
            return Err("serviceAccountUID claim is missing".into());
        }
        let secret = self
            .lookup
            .get("secrets", namespace, secret_name)
            .ok_or("Token has been invalidated")?;
        if rkcm_storage::object::is_deleting(&secret) {
            return Err("Token has been invalidated".into());
        }
        let stored = secret
            .pointer("/data/token")
            .and_then(Value::as_str)
            .and_then(|b64| {
                use base64::Engine;
                base64::engine::general_purpose::STANDARD.decode(b64).ok()
            });
        if stored.as_deref() != Some(token.as_bytes()) {
            return Err("Token does not match server's copy".into());
        }
        let account = self
            .lookup
            .get("serviceaccounts", namespace, sa_name)
            .ok_or_else(|| format!("serviceaccount \"{sa_name}\" not found"))?;
        if rkcm_storage::object::is_deleting(&account) {
            return Err("Token has been invalidated".into());
        }
        let uid = rkcm_storage::object::uid(&account);
        if uid != sa_uid {
            return Err(format!(
                "service account UID ({uid}) does not match claim ({sa_uid})"
            ));
        }
        let labels = rkcm_storage::object::labels(&secret);
        if labels
            .get(INVALID_SINCE_LABEL_KEY)
            .is_some_and(|v| !v.is_empty())
        {
            self.record_last_used(&secret, &labels, now);
            return Err(format!(
                "the token in secret {namespace}/{secret_name} for service account {namespace}/{sa_name} has been marked invalid. Use tokens from the TokenRequest API or manually created secret-based tokens, or remove the '{INVALID_SINCE_LABEL_KEY}' label from the secret to temporarily allow use of this token"
            ));
        }
        self.record_last_used(&secret, &labels, now);
        Ok(UserInfo {
            name: username(namespace, sa_name),
            uid: sa_uid.to_string(),
            groups: groups(namespace),
            extra: BTreeMap::new(),
        })
    }
}

impl ServiceAccountTokens {
    /// Labels a legacy token's Secret with today's date unless it already carries today's or
    /// tomorrow's (`patchSecretWithLastUsedDate`: at most one write a day).
    fn record_last_used(&self, secret: &Value, labels: &BTreeMap<String, String>, now: i64) {
        let (today, tomorrow) = today_and_tomorrow(now);
        let last_used = labels.get(LAST_USED_LABEL_KEY).map(String::as_str);
        if last_used != Some(today.as_str()) && last_used != Some(tomorrow.as_str()) {
            self.lookup.label_secret(
                rkcm_storage::object::namespace(secret),
                rkcm_storage::object::name(secret),
                rkcm_storage::object::uid(secret),
                LAST_USED_LABEL_KEY,
                &today,
            );
        }
    }
}

/// The claims of a legacy token for the Secret `secret_name` of the service account `sa`.
pub fn legacy_claims(namespace: &str, sa: &ObjectRef, secret_name: &str) -> Value {
    json!({
        "iss": LEGACY_ISSUER,
        "kubernetes.io/serviceaccount/namespace": namespace,
        "kubernetes.io/serviceaccount/secret.name": secret_name,
        "kubernetes.io/serviceaccount/service-account.name": sa.name,
        "kubernetes.io/serviceaccount/service-account.uid": sa.uid,
        "sub": username(namespace, &sa.name),
    })
}

/// Whether `obj` was marked for deletion before `before` (Unix seconds).
fn deleted_long_ago(obj: &Value, before: i64) -> bool {
    rkcm_storage::object::meta_str(obj, "deletionTimestamp")
        .and_then(|t| t.parse::<jiff::Timestamp>().ok())
        .is_some_and(|t| t.as_second() < before)
}

/// `aud` as a list: a string or an array of strings.
fn audiences_claim(aud: Option<&Value>) -> Vec<String> {
    match aud {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    }
}

/// A string list as Go's `%q` prints it: `["a" "b"]`.
fn go_quoted(list: &[String]) -> String {
    let items: Vec<String> = list.iter().map(|s| format!("{s:?}")).collect();
    format!("[{}]", items.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use parking_lot::Mutex;
    use std::collections::HashMap;

    const NOW: i64 = 1_700_000_000;

    /// A label write: namespace, name, UID, key, value.
    type LabelWrite = (String, String, String, String, String);

    #[derive(Default)]
    struct Objects(
        Mutex<HashMap<(String, String, String), Value>>,
        Mutex<Vec<LabelWrite>>,
    );

    impl Objects {
        fn put(&self, plural: &str, ns: &str, name: &str, uid: &str) {
            self.put_value(
                plural,
                ns,
                name,
                json!({"metadata": {"name": name, "uid": uid}}),
            );
        }
        fn put_value(&self, plural: &str, ns: &str, name: &str, v: Value) {
            self.0
                .lock()
                .insert((plural.into(), ns.into(), name.into()), v);
        }
        fn remove(&self, plural: &str, ns: &str, name: &str) {
            self.0
                .lock()
                .remove(&(plural.into(), ns.into(), name.into()));
        }
    }

    impl ObjectLookup for Objects {
        fn get(&self, plural: &str, ns: &str, name: &str) -> Option<Value> {
            self.0
                .lock()
                .get(&(plural.into(), ns.into(), name.into()))
                .cloned()
        }

        fn label_secret(&self, ns: &str, name: &str, uid: &str, key: &str, value: &str) {
            self.1
                .lock()
                .push((ns.into(), name.into(), uid.into(), key.into(), value.into()));
        }
    }

    fn setup() -> (Arc<Objects>, ServiceAccountTokens) {
        let objects = Arc::new(Objects::default());
        objects.put("serviceaccounts", "ns", "bot", "sa-uid");
        objects.put("pods", "ns", "p", "pod-uid");
        objects.put("secrets", "ns", "s", "secret-uid");
        let tokens = ServiceAccountTokens::new(
            Arc::new(SigningKey::generate()),
            DEFAULT_ISSUER,
            vec![DEFAULT_ISSUER.to_string()],
            objects.clone(),
        );
        (objects, tokens)
    }

    fn claims() -> TokenClaims {
        TokenClaims {
            namespace: "ns".into(),
            service_account: ObjectRef {
                name: "bot".into(),
                uid: "sa-uid".into(),
            },
            audiences: vec![DEFAULT_ISSUER.into()],
            issued_at: NOW,
            expires_at: NOW + 3600,
            id: "jti-1".into(),
            ..TokenClaims::default()
        }
    }

    fn invalid(why: &str) -> Outcome {
        Outcome::Invalid(why.to_string())
    }

    #[test]
    fn a_bound_token_authenticates_its_service_account_with_kubes_user_info() {
        let (_, tokens) = setup();
        let mut c = claims();
        c.pod = Some(ObjectRef {
            name: "p".into(),
            uid: "pod-uid".into(),
        });
        let Outcome::Authenticated { user, audiences } =
            tokens.authenticate(&tokens.issue(&c), None, NOW + 10)
        else {
            panic!("not authenticated");
        };
        assert_eq!(user.name, "system:serviceaccount:ns:bot");
        assert_eq!(user.uid, "sa-uid");
        assert_eq!(
            user.groups,
            ["system:serviceaccounts", "system:serviceaccounts:ns"]
        );
        assert_eq!(user.extra[CREDENTIAL_ID_KEY], ["JTI=jti-1"]);
        assert_eq!(user.extra[POD_NAME_KEY], ["p"]);
        assert_eq!(user.extra[POD_UID_KEY], ["pod-uid"]);
        assert_eq!(audiences, [DEFAULT_ISSUER]);
    }

    #[test]
    fn the_claims_have_kubes_layout() {
        let mut c = claims();
        c.secret = Some(ObjectRef {
            name: "s".into(),
            uid: "u".into(),
        });
        let v = c.to_json(DEFAULT_ISSUER);
        assert_eq!(v["sub"], "system:serviceaccount:ns:bot");
        assert_eq!(v["iss"], DEFAULT_ISSUER);
        assert_eq!(v["nbf"], v["iat"]);
        assert_eq!(v["kubernetes.io"]["serviceaccount"]["uid"], "sa-uid");
        assert_eq!(v["kubernetes.io"]["secret"]["name"], "s");
        assert!(v["kubernetes.io"].get("pod").is_none());
    }

    // jwt_test.go / claims_test.go: expiry and not-before with one minute of leeway.
    #[test]
    fn expired_and_not_yet_valid_tokens_are_refused_after_the_leeway() {
        let (_, tokens) = setup();
        let t = tokens.issue(&claims());
        assert!(matches!(
            tokens.authenticate(&t, None, NOW + 3600 + 60),
            Outcome::Authenticated { .. }
        ));
        assert_eq!(
            tokens.authenticate(&t, None, NOW + 3600 + 61),
            invalid("service account token has expired")
        );
        assert!(matches!(
            tokens.authenticate(&t, None, NOW - 60),
            Outcome::Authenticated { .. }
        ));
        assert_eq!(
            tokens.authenticate(&t, None, NOW - 61),
            invalid("service account token is not valid yet")
        );
    }

    #[test]
    fn tokens_of_other_issuers_or_not_jwts_are_left_to_other_authenticators() {
        let (objects, tokens) = setup();
        let other = ServiceAccountTokens::new(
            Arc::new(SigningKey::generate()),
            "https://elsewhere",
            vec!["https://elsewhere".into()],
            objects,
        );
        assert_eq!(
            tokens.authenticate(&other.issue(&claims()), None, NOW),
            Outcome::NotMine
        );
        assert_eq!(tokens.authenticate("abc123", None, NOW), Outcome::NotMine);
    }

    #[test]
    fn a_token_signed_with_another_key_is_invalid() {
        let (objects, tokens) = setup();
        let forger = ServiceAccountTokens::new(
            Arc::new(SigningKey::generate()),
            DEFAULT_ISSUER,
            vec![DEFAULT_ISSUER.into()],
            objects,
        );
        assert_eq!(
            tokens.authenticate(&forger.issue(&claims()), None, NOW),
            invalid("go-jose/go-jose: error in cryptographic primitive")
        );
    }

    #[test]
    fn audiences_must_intersect_the_requested_ones() {
        let (_, tokens) = setup();
        let mut c = claims();
        c.audiences = vec!["vault".into(), "other".into()];
        let t = tokens.issue(&c);
        assert_eq!(
            tokens.authenticate(&t, None, NOW),
            invalid(&format!(
                "token audiences [\"vault\" \"other\"] is invalid for the target audiences [\"{DEFAULT_ISSUER}\"]"
            ))
        );
        let Outcome::Authenticated { audiences, .. } =
            tokens.authenticate(&t, Some(&["vault".to_string(), "x".to_string()]), NOW)
        else {
            panic!("vault is requested");
        };
        assert_eq!(audiences, ["vault"]);
    }

    // claims_test.go TestValidatePrivateClaims: deleted or recreated objects invalidate tokens.
    #[test]
    fn deleted_or_recreated_service_accounts_pods_and_secrets_invalidate_tokens() {
        let (objects, tokens) = setup();
        let mut pod_bound = claims();
        pod_bound.pod = Some(ObjectRef {
            name: "p".into(),
            uid: "pod-uid".into(),
        });
        let mut secret_bound = claims();
        secret_bound.secret = Some(ObjectRef {
            name: "s".into(),
            uid: "secret-uid".into(),
        });
        let (plain, pod_t, secret_t) = (
            tokens.issue(&claims()),
            tokens.issue(&pod_bound),
            tokens.issue(&secret_bound),
        );

        objects.put("pods", "ns", "p", "pod-uid-2");
        assert_eq!(
            tokens.authenticate(&pod_t, None, NOW),
            invalid("pod UID (pod-uid-2) does not match service account pod ref claim (pod-uid)")
        );
        objects.remove("pods", "ns", "p");
        assert_eq!(
            tokens.authenticate(&pod_t, None, NOW),
            invalid("service account token has been invalidated")
        );
        objects.put("secrets", "ns", "s", "secret-uid-2");
        assert_eq!(
            tokens.authenticate(&secret_t, None, NOW),
            invalid("secret UID (secret-uid-2) does not match service account secret ref claim (secret-uid)")
        );
        // Deleted, within the leeway: still valid; past it: invalidated.
        let deleting = |at: i64| {
            json!({"metadata": {"name": "s", "uid": "secret-uid",
                "deletionTimestamp": jiff::Timestamp::from_second(at).expect("ts").to_string()}})
        };
        objects.put_value("secrets", "ns", "s", deleting(NOW - 30));
        assert!(matches!(
            tokens.authenticate(&secret_t, None, NOW),
            Outcome::Authenticated { .. }
        ));
        objects.put_value("secrets", "ns", "s", deleting(NOW - 61));
        assert_eq!(
            tokens.authenticate(&secret_t, None, NOW),
            invalid("service account token has been invalidated")
        );

        objects.put("serviceaccounts", "ns", "bot", "sa-uid-2");
        assert_eq!(
            tokens.authenticate(&plain, None, NOW),
            invalid("service account UID (sa-uid-2) does not match claim (sa-uid)")
        );
        objects.remove("serviceaccounts", "ns", "bot");
        assert_eq!(
            tokens.authenticate(&plain, None, NOW),
            invalid("serviceaccount \"bot\" not found")
        );
    }

    #[test]
    fn legacy_tokens_hold_while_their_secret_holds_them() {
        let (objects, tokens) = setup();
        let sa = ObjectRef {
            name: "bot".into(),
            uid: "sa-uid".into(),
        };
        let token = jwt::sign(&legacy_claims("ns", &sa, "bot-token"), tokens.key());
        use base64::Engine;
        let data = base64::engine::general_purpose::STANDARD.encode(&token);
        objects.put_value(
            "secrets",
            "ns",
            "bot-token",
            json!({"metadata": {"name": "bot-token", "uid": "x"}, "data": {"token": data}}),
        );
        let Outcome::Authenticated { user, audiences } = tokens.authenticate(&token, None, NOW)
        else {
            panic!("legacy token accepted");
        };
        assert_eq!(user.name, "system:serviceaccount:ns:bot");
        assert_eq!(audiences, [DEFAULT_ISSUER]);
        objects.put_value(
            "secrets",
            "ns",
            "bot-token",
            json!({"metadata": {"name": "bot-token", "uid": "x"}, "data": {"token": "b3RoZXI="}}),
        );
        assert_eq!(
            tokens.authenticate(&token, None, NOW),
            invalid("Token does not match server's copy")
        );
        objects.remove("secrets", "ns", "bot-token");
        assert_eq!(
            tokens.authenticate(&token, None, NOW),
            invalid("Token has been invalidated")
        );
    }

    fn legacy_secret(token: &str, labels: Value) -> Value {
        use base64::Engine;
        let data = base64::engine::general_purpose::STANDARD.encode(token);
        json!({"metadata": {"name": "bot-token", "namespace": "ns", "uid": "secret-uid", "labels": labels},
               "data": {"token": data}})
    }

    // NOW is 2023-11-14T22:13:20Z.
    #[test]
    fn a_legacy_token_in_use_labels_its_secret_with_the_date_at_most_once_a_day() {
        let (objects, tokens) = setup();
        let sa = ObjectRef {
            name: "bot".into(),
            uid: "sa-uid".into(),
        };
        let token = jwt::sign(&legacy_claims("ns", &sa, "bot-token"), tokens.key());
        objects.put_value(
            "secrets",
            "ns",
            "bot-token",
            legacy_secret(&token, json!({})),
        );
        assert!(matches!(
            tokens.authenticate(&token, None, NOW),
            Outcome::Authenticated { .. }
        ));
        assert_eq!(
            objects.1.lock().clone(),
            [(
                "ns".to_string(),
                "bot-token".to_string(),
                "secret-uid".to_string(),
                LAST_USED_LABEL_KEY.to_string(),
                "2023-11-14".to_string()
            )]
        );
        // Today's or tomorrow's date (a clock behind the one that wrote it) is left alone.
        for date in ["2023-11-14", "2023-11-15"] {
            objects.1.lock().clear();
            objects.put_value(
                "secrets",
                "ns",
                "bot-token",
                legacy_secret(&token, json!({ LAST_USED_LABEL_KEY: date })),
            );
            assert!(matches!(
                tokens.authenticate(&token, None, NOW),
                Outcome::Authenticated { .. }
            ));
            assert!(objects.1.lock().is_empty(), "{date}");
        }
        objects.put_value(
            "secrets",
            "ns",
            "bot-token",
            legacy_secret(&token, json!({ LAST_USED_LABEL_KEY: "2023-11-13" })),
        );
        tokens.authenticate(&token, None, NOW);
        assert_eq!(objects.1.lock().len(), 1);
    }

    #[test]
    fn a_legacy_token_whose_secret_is_marked_invalid_is_refused_with_kubes_message() {
        let (objects, tokens) = setup();
        let sa = ObjectRef {
            name: "bot".into(),
            uid: "sa-uid".into(),
        };
        let token = jwt::sign(&legacy_claims("ns", &sa, "bot-token"), tokens.key());
        objects.put_value(
            "secrets",
            "ns",
            "bot-token",
            legacy_secret(&token, json!({ INVALID_SINCE_LABEL_KEY: "2023-01-01" })),
        );
        assert_eq!(
            tokens.authenticate(&token, None, NOW),
            invalid("the token in secret ns/bot-token for service account ns/bot has been marked invalid. Use tokens from the TokenRequest API or manually created secret-based tokens, or remove the 'kubernetes.io/legacy-token-invalid-since' label from the secret to temporarily allow use of this token")
        );
        // The use is still recorded, as kube does.
        assert_eq!(objects.1.lock().len(), 1);
    }
}
