//! The `identity` provider: values stored as they are (`value/encrypt/identity/identity.go`).

use super::{Error, Result, Transformer};

/// The prefix every encrypted value starts with.
const ENCRYPTED_PREFIX: &[u8] = b"k8s:enc:";

/// Whether `data` carries an encryption prefix (`k8s:enc:`).
pub fn is_encrypted(data: &[u8]) -> bool {
    data.starts_with(ENCRYPTED_PREFIX)
}

/// Stores values unchanged, and refuses to read a value that carries an encryption prefix
/// (`NewEncryptCheckTransformer`), so that with identity listed first, encrypted values fall
/// through to the provider that can read them.
#[derive(Clone, Copy, Debug, Default)]
pub struct Identity;

impl Transformer for Identity {
    fn transform_from_storage(&self, data: &[u8], _context: &[u8]) -> Result<(Vec<u8>, bool)> {
        if is_encrypted(data) {
            return Err(Error::EncryptedData);
        }
        Ok((data.to_vec(), false))
    }

    fn transform_to_storage(&self, data: &[u8], _context: &[u8]) -> Result<Vec<u8>> {
        Ok(data.to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_reads_plain_values_and_refuses_encrypted_ones() {
        assert_eq!(
            Identity.transform_from_storage(b"{}", b"").unwrap(),
            (b"{}".to_vec(), false)
        );
        assert_eq!(
            Identity.transform_from_storage(b"k8s:enc:aescbc:v1:k:xyz", b""),
            Err(Error::EncryptedData)
        );
        assert_eq!(Identity.transform_to_storage(b"{}", b"").unwrap(), b"{}");
    }
}
