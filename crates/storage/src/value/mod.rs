//! Transformations of stored values: encryption at rest, as kube-apiserver's
//! `staging/src/k8s.io/apiserver/pkg/storage/value`.
//!
//! A [`Transformer`] turns a value into its stored form and back. [`PrefixTransformers`] pick
//! the transformer that reads a value by the prefix it was written with
//! (`k8s:enc:aescbc:v1:<key name>:`) and write with the first one; [`ResourceTransformers`]
//! choose them by group and resource, and [`TransformingBackend`] applies them under a storage
//! [`Backend`](crate::Backend). The stored bytes are kube's, so a value one of them writes, the
//! other reads with the same key.

pub mod aes;
mod backend;
pub mod identity;
pub mod metrics;
mod prefix;
mod resource;
pub mod secretbox;

pub use backend::TransformingBackend;
pub use metrics::TransformationMetrics;
pub use prefix::{PrefixTransformer, PrefixTransformers};
pub use resource::{GroupResource, ResourceTransformers};

/// Why a value could not be transformed. The messages are kube's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The stored value is shorter than its nonce or IV (and tag).
    #[error("the stored data was shorter than the required size")]
    TooShort,
    /// An aescbc value whose cipher text is not whole blocks.
    #[error("the stored data is not a multiple of the block size")]
    InvalidBlockSize,
    /// An aescbc value that decrypts to no or an impossible padding length.
    #[error("invalid PKCS7 data (empty or not padded)")]
    InvalidPkcs7Data,
    /// An aescbc value whose padding bytes differ.
    #[error("invalid padding on input")]
    InvalidPkcs7Padding,
    /// An aesgcm value that fails its authentication (another key, another storage key, or
    /// altered bytes).
    #[error("cipher: message authentication failed")]
    Authentication,
    /// A secretbox value that fails its authentication (kube's message).
    #[error("output array was not large enough for encryption")]
    SecretboxOpen,
    /// The identity transformer read a value that carries an encryption prefix.
    #[error("identity transformer tried to read encrypted data")]
    EncryptedData,
    /// No transformer's prefix matches the value; the message names the set of transformers
    /// (`no matching prefix found`, `no matching key was found for the provided AES
    /// transformer`).
    #[error("{0}")]
    NoMatch(&'static str),
    /// The operating system gave no random bytes for an IV or nonce.
    #[error("unable to read sufficient random bytes")]
    Random,
    /// Several transformers matched the prefix and each failed (as Go's error aggregate).
    #[error("[{}]", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "))]
    Aggregate(Vec<Error>),
}

/// Result of a transformation.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Transforms a value to and from its stored form (`value.Transformer`).
///
/// `context` is the authenticated data (the value's storage key): an AEAD transformer refuses
/// to read a value under another key than the one it was written under.
pub trait Transformer: Send + Sync {
    /// The value stored as `data`, and whether it is stale (written by a transformer that no
    /// longer writes, so that it should be written again).
    fn transform_from_storage(&self, data: &[u8], context: &[u8]) -> Result<(Vec<u8>, bool)>;
    /// The stored form of `data`.
    fn transform_to_storage(&self, data: &[u8], context: &[u8]) -> Result<Vec<u8>>;
}

/// Fills `buf` from the operating system's random source.
fn random(buf: &mut [u8]) -> Result<()> {
    getrandom::fill(buf).map_err(|_| Error::Random)
}
