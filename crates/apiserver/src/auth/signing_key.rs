//! The key service-account tokens are signed with: ECDSA P-256 (ES256), kept as `sa.key` in the
//! data dir and created at first start.
//!
//! Signing and verifying use `ring`, which the TLS stack already brings: a JWT library would add
//! nothing but a second crypto backend for one algorithm. The key id is kube's
//! (`keyIDFromPublicKey` in `pkg/serviceaccount/jwt.go`): the unpadded base64url SHA-256 of the
//! public key's PKIX (SubjectPublicKeyInfo) DER.

use std::path::Path;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, KeyPair as _};
use serde_json::{json, Value};

/// File of the signing key in the data dir (kubeadm's name).
pub const KEY_FILE: &str = "sa.key";

/// PKIX prefix of a P-256 public key: SEQUENCE { SEQUENCE { id-ecPublicKey, prime256v1 },
/// BIT STRING } before the 65-byte uncompressed point.
const P256_SPKI_PREFIX: [u8; 26] = [
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a,
    0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];

/// Errors loading or creating the signing key.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The key file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// The file holds no usable ECDSA P-256 private key.
    #[error("{path}: the service account signing key must be a PKCS#8 ECDSA P-256 private key: {reason}")]
    Invalid {
        /// The file.
        path: String,
        /// What is wrong.
        reason: String,
    },
}

/// An ES256 signing key with its kube key id.
pub struct SigningKey {
    pair: EcdsaKeyPair,
    key_id: String,
    rng: SystemRandom,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey")
            .field("key_id", &self.key_id)
            .finish_non_exhaustive()
    }
}

impl SigningKey {
    /// A fresh key.
    pub fn generate() -> Self {
        let pem = rcgen::KeyPair::generate()
            .expect("generating a P-256 key only fails without a random source")
            .serialize_pem();
        Self::from_pem("<generated>", &pem).expect("a freshly generated P-256 key is usable")
    }

    /// The key in PKCS#8 PEM `pem` (`path` names it in errors).
    pub fn from_pem(path: &str, pem: &str) -> Result<Self, Error> {
        let invalid = |reason: String| Error::Invalid {
            path: path.to_string(),
            reason,
        };
        let der = rcgen::KeyPair::from_pem(pem)
            .map_err(|e| invalid(e.to_string()))?
            .serialize_der();
        let rng = SystemRandom::new();
        let pair =
            EcdsaKeyPair::from_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, &der, &rng)
                .map_err(|e| invalid(e.to_string()))?;
        let key_id = key_id(pair.public_key().as_ref());
        Ok(Self { pair, key_id, rng })
    }

    /// The key in `dir/sa.key`, created there on first use; a fresh one when `dir` is `None`.
    pub fn load_or_generate(dir: Option<&Path>) -> Result<Self, Error> {
        let Some(dir) = dir else {
            return Ok(Self::generate());
        };
        let path = dir.join(KEY_FILE);
        let shown = path.display().to_string();
        match std::fs::read_to_string(&path) {
            Ok(pem) => Self::from_pem(&shown, &pem),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let pem = rcgen::KeyPair::generate()
                    .map_err(|e| Error::Invalid {
                        path: shown.clone(),
                        reason: e.to_string(),
                    })?
                    .serialize_pem();
                crate::tls::write_private(&path, &pem).map_err(|e| Error::Io {
                    path: shown.clone(),
                    source: std::io::Error::other(e.to_string()),
                })?;
                Self::from_pem(&shown, &pem)
            }
            Err(source) => Err(Error::Io {
                path: shown,
                source,
            }),
        }
    }

    /// The key id (`kid`) of tokens signed with this key.
    pub fn key_id(&self) -> &str {
        &self.key_id
    }

    /// The uncompressed public point (`0x04 || x || y`).
    pub fn public_key(&self) -> &[u8] {
        self.pair.public_key().as_ref()
    }

    /// The ES256 signature (`r || s`) of `message`.
    pub fn sign(&self, message: &[u8]) -> Vec<u8> {
        self.pair
            .sign(&self.rng, message)
            .expect("ECDSA signing only fails without a random source")
            .as_ref()
            .to_vec()
    }

    /// Whether `signature` is this key's ES256 signature of `message`.
    pub fn verify(&self, message: &[u8], signature: &[u8]) -> bool {
        signature::UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, self.public_key())
            .verify(message, signature)
            .is_ok()
    }

    /// The public key as a JSON Web Key, as `/openid/v1/jwks` lists it.
    pub fn jwk(&self) -> Value {
        let point = self.public_key();
        json!({
            "use": "sig",
            "kty": "EC",
            "kid": self.key_id,
            "crv": "P-256",
            "alg": "ES256",
            "x": URL_SAFE_NO_PAD.encode(&point[1..33]),
            "y": URL_SAFE_NO_PAD.encode(&point[33..65]),
        })
    }
}

/// kube's key id of the P-256 public point `point`.
fn key_id(point: &[u8]) -> String {
    let mut spki = P256_SPKI_PREFIX.to_vec();
    spki.extend_from_slice(point);
    URL_SAFE_NO_PAD.encode(ring::digest::digest(&ring::digest::SHA256, &spki))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_created_once_and_reused_from_the_data_dir() {
        let dir = tempfile::tempdir().expect("tempdir");
        let a = SigningKey::load_or_generate(Some(dir.path())).expect("create");
        let b = SigningKey::load_or_generate(Some(dir.path())).expect("load");
        assert_eq!(a.key_id(), b.key_id());
        assert_eq!(a.key_id().len(), 43);
        let sig = a.sign(b"payload");
        assert!(b.verify(b"payload", &sig));
        assert!(!b.verify(b"other", &sig));
        assert!(!SigningKey::generate().verify(b"payload", &sig));
    }

    #[test]
    fn the_key_id_hashes_the_pkix_der_that_rcgen_writes() {
        let pair = rcgen::KeyPair::generate().expect("key");
        let key = SigningKey::from_pem("k", &pair.serialize_pem()).expect("usable");
        use rustls::pki_types::pem::PemObject;
        let spki = rustls::pki_types::SubjectPublicKeyInfoDer::from_pem_slice(
            pair.public_key_pem().as_bytes(),
        )
        .expect("PKIX PEM");
        let expected =
            URL_SAFE_NO_PAD.encode(ring::digest::digest(&ring::digest::SHA256, spki.as_ref()));
        assert_eq!(key.key_id(), expected);
        let jwk = key.jwk();
        assert_eq!(
            (jwk["kty"].as_str(), jwk["alg"].as_str()),
            (Some("EC"), Some("ES256"))
        );
    }

    #[test]
    fn a_file_without_a_p256_key_is_refused() {
        let err = SigningKey::from_pem("sa.key", "not a key").expect_err("invalid");
        assert!(err
            .to_string()
            .starts_with("sa.key: the service account signing key must be"));
    }
}
