//! The key service-account tokens are signed with, kept as `sa.key` in the data dir and created
//! there at first start as ECDSA P-256 (ES256). A key given by the operator may also be RSA
//! (RS256), as kubeadm makes it (`-----BEGIN RSA PRIVATE KEY-----`), or ECDSA P-256 in SEC1
//! (`-----BEGIN EC PRIVATE KEY-----`) or PKCS#8 form: kube-apiserver and
//! kube-controller-manager take all three.
//!
//! Signing and verifying use `ring`, which the TLS stack already brings: a JWT library would add
//! nothing but a second crypto backend for two algorithms. The key id is kube's
//! (`keyIDFromPublicKey` in `pkg/serviceaccount/jwt.go`): the unpadded base64url SHA-256 of the
//! public key's PKIX (SubjectPublicKeyInfo) DER.

use std::path::Path;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, KeyPair as _, RsaKeyPair};
use rkcm_apimachinery::keyutil::{self, P256_ALGORITHM, RSA_ALGORITHM};
use serde_json::{json, Value};

/// File of the signing key in the data dir (kubeadm's name).
pub const KEY_FILE: &str = "sa.key";

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
    /// The file holds no usable private key.
    #[error("{path}: the service account signing key must be an RSA or ECDSA P-256 private key (PKCS#1, SEC1 or PKCS#8 PEM): {reason}")]
    Invalid {
        /// The file.
        path: String,
        /// What is wrong.
        reason: String,
    },
}

/// The key pair and its JWS algorithm.
enum Pair {
    /// ECDSA P-256 with SHA-256 (`ES256`).
    Es256(EcdsaKeyPair),
    /// RSASSA-PKCS1-v1_5 with SHA-256 (`RS256`).
    Rs256(RsaKeyPair),
}

/// A signing key (ES256 or RS256) with its kube key id.
pub struct SigningKey {
    pair: Pair,
    key_id: String,
    rng: SystemRandom,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey")
            .field("alg", &self.algorithm())
            .field("key_id", &self.key_id)
            .finish_non_exhaustive()
    }
}

impl SigningKey {
    /// A fresh ES256 key.
    pub fn generate() -> Self {
        let pem = rcgen::KeyPair::generate()
            .expect("generating a P-256 key only fails without a random source")
            .serialize_pem();
        Self::from_pem("<generated>", &pem).expect("a freshly generated P-256 key is usable")
    }

    /// The key in the PEM text `pem` (`path` names it in errors): RSA in PKCS#1 or PKCS#8,
    /// ECDSA P-256 in SEC1 or PKCS#8.
    pub fn from_pem(path: &str, pem: &str) -> Result<Self, Error> {
        let invalid = |reason: String| Error::Invalid {
            path: path.to_string(),
            reason,
        };
        let pkcs8 = keyutil::pkcs8_der(pem).map_err(|e| invalid(e.to_string()))?;
        let rng = SystemRandom::new();
        let pair = match EcdsaKeyPair::from_pkcs8(
            &signature::ECDSA_P256_SHA256_FIXED_SIGNING,
            &pkcs8,
            &rng,
        ) {
            Ok(pair) => Pair::Es256(pair),
            Err(ec) => RsaKeyPair::from_pkcs8(&pkcs8)
                .map(Pair::Rs256)
                .map_err(|rsa| {
                    invalid(format!("neither a P-256 key ({ec}) nor an RSA key ({rsa})"))
                })?,
        };
        let key_id = key_id(&public_key_info(&pair));
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

    /// The JWS algorithm (`alg`) of tokens signed with this key: `ES256` or `RS256`.
    pub fn algorithm(&self) -> &'static str {
        match self.pair {
            Pair::Es256(_) => "ES256",
            Pair::Rs256(_) => "RS256",
        }
    }

    /// The signature of `message`: `r || s` for ES256, PKCS#1 v1.5 for RS256.
    pub fn sign(&self, message: &[u8]) -> Vec<u8> {
        match &self.pair {
            Pair::Es256(pair) => pair
                .sign(&self.rng, message)
                .expect("ECDSA signing only fails without a random source")
                .as_ref()
                .to_vec(),
            Pair::Rs256(pair) => {
                let mut signature = vec![0; pair.public().modulus_len()];
                pair.sign(
                    &signature::RSA_PKCS1_SHA256,
                    &self.rng,
                    message,
                    &mut signature,
                )
                .expect("the buffer has the modulus' length");
                signature
            }
        }
    }

    /// Whether `signature` is this key's signature of `message`.
    pub fn verify(&self, message: &[u8], signature: &[u8]) -> bool {
        match &self.pair {
            Pair::Es256(pair) => signature::UnparsedPublicKey::new(
                &signature::ECDSA_P256_SHA256_FIXED,
                pair.public_key().as_ref(),
            )
            .verify(message, signature)
            .is_ok(),
            Pair::Rs256(pair) => signature::UnparsedPublicKey::new(
                &signature::RSA_PKCS1_2048_8192_SHA256,
                pair.public().as_ref(),
            )
            .verify(message, signature)
            .is_ok(),
        }
    }

    /// The public key as a JSON Web Key, as `/openid/v1/jwks` lists it.
    pub fn jwk(&self) -> Value {
        match &self.pair {
            Pair::Es256(pair) => {
                let point = pair.public_key().as_ref();
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
            Pair::Rs256(pair) => {
                let public = signature::RsaPublicKeyComponents::<Vec<u8>>::from(pair.public());
                json!({
                    "use": "sig",
                    "kty": "RSA",
                    "kid": self.key_id,
                    "alg": "RS256",
                    "n": URL_SAFE_NO_PAD.encode(&public.n),
                    "e": URL_SAFE_NO_PAD.encode(&public.e),
                })
            }
        }
    }
}

/// The PKIX SubjectPublicKeyInfo DER of `pair`'s public key (Go's `MarshalPKIXPublicKey`).
fn public_key_info(pair: &Pair) -> Vec<u8> {
    let (algorithm, key): (&[u8], &[u8]) = match pair {
        Pair::Es256(p) => (&P256_ALGORITHM, p.public_key().as_ref()),
        Pair::Rs256(p) => (&RSA_ALGORITHM, p.public().as_ref()),
    };
    let mut bits = vec![0];
    bits.extend_from_slice(key);
    let mut content = algorithm.to_vec();
    content.extend(keyutil::der(0x03, &bits));
    keyutil::der(0x30, &content)
}

/// kube's key id of the public key whose PKIX DER is `spki`.
fn key_id(spki: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(ring::digest::digest(&ring::digest::SHA256, spki))
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

    // kubeadm's default `sa.key` (`openssl genrsa -traditional`), the same key as PKCS#8, and an
    // ECDSA key as kubeadm writes it with `encryptionAlgorithm: ECDSA-P256`. The expected key ids
    // are `openssl pkey -pubout -outform DER | sha256 | base64url`.
    const RSA_PKCS1: &str = include_str!("testdata/rsa-pkcs1.key");
    const RSA_PKCS8: &str = include_str!("testdata/rsa-pkcs8.key");
    const EC_SEC1: &str = include_str!("testdata/ec-sec1.key");

    #[test]
    fn kubeadms_rsa_key_signs_rs256_with_kubes_key_id() {
        let key = SigningKey::from_pem("sa.key", RSA_PKCS1).expect("an RSA key");
        assert_eq!(key.algorithm(), "RS256");
        assert_eq!(key.key_id(), "8AwjZ2dQCdY25PAaa4SigE3B_NuekITzxoPWF5dvwss");
        let sig = key.sign(b"payload");
        assert_eq!(sig.len(), 256);
        assert!(key.verify(b"payload", &sig));
        assert!(!key.verify(b"other", &sig));
        let same = SigningKey::from_pem("sa.key", RSA_PKCS8).expect("PKCS#8 RSA");
        assert_eq!(same.key_id(), key.key_id());
        assert!(same.verify(b"payload", &sig));
        let jwk = key.jwk();
        assert_eq!(
            (jwk["kty"].as_str(), jwk["alg"].as_str()),
            (Some("RSA"), Some("RS256"))
        );
        let n = URL_SAFE_NO_PAD
            .decode(jwk["n"].as_str().expect("n"))
            .expect("base64url");
        assert_eq!(n.len(), 256);
        assert_eq!(jwk["e"], "AQAB");
    }

    #[test]
    fn a_sec1_ec_key_signs_es256_with_kubes_key_id() {
        let key = SigningKey::from_pem("sa.key", EC_SEC1).expect("a SEC1 key");
        assert_eq!(key.algorithm(), "ES256");
        assert_eq!(key.key_id(), "AVThG7HdHUUyiMXF4JVjQfZKuJ8Mpcf2wz9it9jkwE0");
        assert!(key.verify(b"m", &key.sign(b"m")));
    }

    #[test]
    fn a_file_without_a_p256_key_is_refused() {
        let err = SigningKey::from_pem("sa.key", "not a key").expect_err("invalid");
        assert!(err
            .to_string()
            .starts_with("sa.key: the service account signing key must be"));
    }
}
