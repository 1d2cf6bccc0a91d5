//! The service-account issuer discovery documents (`pkg/serviceaccount/openidmetadata.go`):
//! `/.well-known/openid-configuration` and `/openid/v1/jwks`. As on kube, authenticated callers
//! read them (kube's bootstrap policy grants `system:service-account-issuer-discovery` to
//! `system:serviceaccounts`; here every authenticated user may do everything), anonymous ones
//! do not.

use serde_json::{json, Value};

use super::signing_key::SigningKey;

/// Path of the OpenID provider configuration.
pub const CONFIGURATION_PATH: &str = "/.well-known/openid-configuration";
/// Path of the key set.
pub const JWKS_PATH: &str = "/openid/v1/jwks";
/// `Cache-Control` of both documents (kube's `max-age` of one hour).
pub const CACHE_CONTROL: &str = "public, max-age=3600";

/// The OpenID provider configuration for `issuer`, whose keys are at `external_address` (kube's
/// default `jwks_uri` when `--service-account-jwks-uri` is not given).
pub fn configuration(issuer: &str, external_address: &str, key: &SigningKey) -> Value {
    json!({
        "issuer": issuer,
        "jwks_uri": format!("https://{external_address}{JWKS_PATH}"),
        "response_types_supported": ["id_token"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": [key.algorithm()],
    })
}

/// The JSON Web Key Set with the public half of `key`.
pub fn jwks(key: &SigningKey) -> Value {
    json!({ "keys": [key.jwk()] })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_configuration_points_at_the_key_set() {
        let key = SigningKey::generate();
        let c = configuration(
            "https://kubernetes.default.svc.cluster.local",
            "127.0.0.1:6443",
            &key,
        );
        assert_eq!(c["id_token_signing_alg_values_supported"][0], "ES256");
        assert_eq!(c["jwks_uri"], "https://127.0.0.1:6443/openid/v1/jwks");
        assert_eq!(c["issuer"], "https://kubernetes.default.svc.cluster.local");
        assert_eq!(jwks(&key)["keys"][0]["kid"], key.key_id());
    }
}
