//! The signer of the service-account token controller: legacy tokens signed with the key of
//! `--service-account-private-key-file`, as kube-apiserver accepts them.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context as _;
use rkcm_apiserver::auth::serviceaccount::{legacy_claims, ObjectRef};
use rkcm_apiserver::auth::{jwt, SigningKey};
use rkcm_controllers::serviceaccount::tokens::LegacyTokenGenerator;

/// Signs legacy tokens with one key.
pub struct KeyGenerator {
    key: SigningKey,
}

impl LegacyTokenGenerator for KeyGenerator {
    fn generate(
        &self,
        namespace: &str,
        sa_name: &str,
        sa_uid: &str,
        secret_name: &str,
    ) -> Result<String, String> {
        let sa = ObjectRef {
            name: sa_name.to_string(),
            uid: sa_uid.to_string(),
        };
        Ok(jwt::sign(
            &legacy_claims(namespace, &sa, secret_name),
            &self.key,
        ))
    }
}

/// The generator of the key in the PEM file `path`.
pub fn generator_from_file(path: &Path) -> anyhow::Result<Arc<dyn LegacyTokenGenerator>> {
    let pem = std::fs::read_to_string(path).with_context(|| {
        format!(
            "reading --service-account-private-key-file {}",
            path.display()
        )
    })?;
    let key = SigningKey::from_pem(&path.display().to_string(), &pem)?;
    Ok(Arc::new(KeyGenerator { key }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_tokens_carry_the_legacy_claims_and_the_keys_id() {
        let dir = tempfile::tempdir().expect("tempdir");
        let key = SigningKey::load_or_generate(Some(dir.path())).expect("key");
        let generator = generator_from_file(&dir.path().join("sa.key")).expect("generator");
        let token = generator
            .generate("ns", "bot", "u1", "bot-token")
            .expect("signed");
        let parsed = jwt::parse(&token).expect("a JWT");
        assert!(parsed.verify(&key));
        assert_eq!(parsed.claims["iss"], "kubernetes/serviceaccount");
        assert_eq!(
            parsed.claims["kubernetes.io/serviceaccount/secret.name"],
            "bot-token"
        );
        let err = generator_from_file(&dir.path().join("missing"))
            .err()
            .expect("no file");
        assert!(format!("{err:#}").contains("--service-account-private-key-file"));
    }
}
