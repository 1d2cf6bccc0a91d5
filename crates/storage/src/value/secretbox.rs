//! The `secretbox` provider (`value/encrypt/secretbox/secretbox.go`): XSalsa20 and Poly1305 as
//! NaCl's secretbox, a random 24-byte nonce per value, then the 16-byte tag and the cipher text.

use crypto_secretbox::aead::{Aead, KeyInit};
use crypto_secretbox::XSalsa20Poly1305;

use super::{random, Error, Result, Transformer};

/// Size of secretbox's nonce.
const NONCE_SIZE: usize = 24;
/// Size of its Poly1305 tag (`secretbox.Overhead`).
const OVERHEAD: usize = 16;

/// NaCl secretbox with a 32-byte key (`NewSecretboxTransformer`).
pub struct Secretbox {
    cipher: XSalsa20Poly1305,
}

impl Secretbox {
    /// The transformer of a 32-byte key.
    pub fn new(key: &[u8; 32]) -> Self {
        Self {
            cipher: XSalsa20Poly1305::new(key.into()),
        }
    }

    fn seal(&self, data: &[u8], nonce: &[u8; NONCE_SIZE]) -> Result<Vec<u8>> {
        let sealed = self
            .cipher
            .encrypt(nonce.into(), data)
            .map_err(|_| Error::SecretboxOpen)?;
        let mut out = Vec::with_capacity(NONCE_SIZE + sealed.len());
        out.extend_from_slice(nonce);
        out.extend_from_slice(&sealed);
        Ok(out)
    }
}

impl Transformer for Secretbox {
    fn transform_from_storage(&self, data: &[u8], _context: &[u8]) -> Result<(Vec<u8>, bool)> {
        if data.len() < NONCE_SIZE + OVERHEAD {
            return Err(Error::TooShort);
        }
        let (nonce, sealed) = data.split_at(NONCE_SIZE);
        self.cipher
            .decrypt(nonce.into(), sealed)
            .map(|v| (v, false))
            .map_err(|_| Error::SecretboxOpen)
    }

    fn transform_to_storage(&self, data: &[u8], _context: &[u8]) -> Result<Vec<u8>> {
        let mut nonce = [0u8; NONCE_SIZE];
        random(&mut nonce)?;
        self.seal(data, &nonce)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secretbox_round_trips_and_refuses_another_key() {
        let sb = Secretbox::new(&[9; 32]);
        let stored = sb.transform_to_storage(b"secret", b"").unwrap();
        assert_eq!(stored.len(), NONCE_SIZE + OVERHEAD + 6);
        assert_eq!(
            sb.transform_from_storage(&stored, b"").unwrap(),
            (b"secret".to_vec(), false)
        );
        let other = Secretbox::new(&[8; 32]);
        assert_eq!(
            other.transform_from_storage(&stored, b""),
            Err(Error::SecretboxOpen)
        );
        assert_eq!(
            sb.transform_from_storage(&[0; 39], b""),
            Err(Error::TooShort)
        );
    }

    #[test]
    fn secretbox_puts_the_tag_before_the_cipher_text_as_nacl() {
        // NaCl's box layout: the first 16 bytes after the nonce are the tag, and the cipher
        // text is the plain text XORed with the XSalsa20 stream after its first 32 bytes, so
        // two plain texts differing in one byte differ in that byte only.
        let sb = Secretbox::new(&[1; 32]);
        let a = sb.seal(b"aaaa", &[2; 24]).unwrap();
        let b = sb.seal(b"aaab", &[2; 24]).unwrap();
        assert_eq!(a[24 + 16..24 + 19], b[24 + 16..24 + 19]);
        assert_eq!(a[24 + 19] ^ b[24 + 19], b'a' ^ b'b');
        assert_ne!(a[24..24 + 16], b[24..24 + 16], "tags differ");
    }
}
