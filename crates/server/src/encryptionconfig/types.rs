//! kube's `apiserver.config.k8s.io/v1` `EncryptionConfiguration`
//! (`staging/src/k8s.io/apiserver/pkg/apis/apiserver/v1/types_encryption.go`).

use serde::Deserialize;

/// The API version of the configuration.
pub const API_VERSION: &str = "apiserver.config.k8s.io/v1";
/// Its kind.
pub const KIND: &str = "EncryptionConfiguration";

/// What is encrypted at rest, and how.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EncryptionConfiguration {
    /// `apiserver.config.k8s.io/v1`.
    #[serde(default)]
    pub api_version: String,
    /// `EncryptionConfiguration`.
    #[serde(default)]
    pub kind: String,
    /// Resource lists with the providers of each, in order.
    #[serde(default)]
    pub resources: Vec<ResourceConfiguration>,
}

/// Resources and the providers that store them.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct ResourceConfiguration {
    /// `secrets`, `deployments.apps`, `*.apps`, `*.` or `*.*`.
    #[serde(default)]
    pub resources: Vec<String>,
    /// The first writes; all read.
    #[serde(default)]
    pub providers: Vec<ProviderConfiguration>,
}

/// One provider: exactly one field is set.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct ProviderConfiguration {
    /// AES-GCM with a random nonce.
    pub aesgcm: Option<AesConfiguration>,
    /// AES-CBC with PKCS#7 padding.
    pub aescbc: Option<AesConfiguration>,
    /// XSalsa20 and Poly1305.
    pub secretbox: Option<SecretboxConfiguration>,
    /// Stored as it is.
    pub identity: Option<IdentityConfiguration>,
    /// An external KMS plugin (refused: not supported).
    pub kms: Option<serde::de::IgnoredAny>,
}

impl ProviderConfiguration {
    /// How many provider fields are set.
    pub(super) fn count(&self) -> usize {
        [
            self.aesgcm.is_some(),
            self.aescbc.is_some(),
            self.secretbox.is_some(),
            self.identity.is_some(),
            self.kms.is_some(),
        ]
        .into_iter()
        .filter(|set| *set)
        .count()
    }
}

/// The keys of an AES provider.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct AesConfiguration {
    /// The first encrypts; all decrypt.
    #[serde(default)]
    pub keys: Vec<Key>,
}

/// The keys of the secretbox provider.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct SecretboxConfiguration {
    /// The first encrypts; all decrypt.
    #[serde(default)]
    pub keys: Vec<Key>,
}

/// The identity provider (no settings).
#[derive(Clone, Debug, Default, Deserialize)]
pub struct IdentityConfiguration {}

/// A named key.
#[derive(Clone, Default, Deserialize)]
pub struct Key {
    /// Written into each value's prefix (`k8s:enc:aescbc:v1:<name>:`).
    #[serde(default)]
    pub name: String,
    /// The key, base64 encoded.
    #[serde(default)]
    pub secret: String,
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Key")
            .field("name", &self.name)
            .field("secret", &"REDACTED")
            .finish()
    }
}
