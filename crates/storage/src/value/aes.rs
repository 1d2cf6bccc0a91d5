//! The `aescbc` and `aesgcm` providers (`value/encrypt/aes/aes.go`).
//!
//! aescbc stores a random 16-byte IV, then the value padded as PKCS#7 and encrypted with AES in
//! CBC mode. aesgcm stores a random 12-byte nonce, then the AES-GCM cipher text and its 16-byte
//! tag, with the storage key as authenticated data. Keys are 16, 24 or 32 bytes (AES-128, -192,
//! -256).

use aes::{Aes128, Aes192, Aes256};
use aes_gcm::aead::consts::U12;
use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::AesGcm;
use cbc::cipher::block_padding::NoPadding;
use cbc::cipher::{BlockDecryptMut, BlockEncryptMut, KeyIvInit};

use super::{random, Error, Result, Transformer};

/// AES's block size, which is also the size of aescbc's IV.
const BLOCK_SIZE: usize = 16;
/// AES-GCM's nonce size (all stored aesgcm values depend on it).
const NONCE_SIZE: usize = 12;

/// Why a key cannot be used for AES.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("crypto/aes: invalid key size {0}")]
pub struct KeySizeError(pub usize);

/// AES-CBC with PKCS#7 padding and a random IV per value (`NewCBCTransformer`).
pub struct Cbc {
    key: Vec<u8>,
}

impl Cbc {
    /// The transformer of a 16, 24 or 32-byte `key`.
    pub fn new(key: &[u8]) -> Result<Self, KeySizeError> {
        match key.len() {
            16 | 24 | 32 => Ok(Self { key: key.to_vec() }),
            n => Err(KeySizeError(n)),
        }
    }

    /// `data` padded and encrypted after `iv`.
    fn seal(&self, data: &[u8], iv: &[u8; BLOCK_SIZE]) -> Vec<u8> {
        let padding = BLOCK_SIZE - data.len() % BLOCK_SIZE;
        let mut out = Vec::with_capacity(BLOCK_SIZE + data.len() + padding);
        out.extend_from_slice(iv);
        out.extend_from_slice(data);
        out.resize(BLOCK_SIZE + data.len() + padding, padding as u8);
        let body = &mut out[BLOCK_SIZE..];
        let len = body.len();
        // The key length was checked in `new`; the buffer is whole blocks.
        let sealed = match self.key.len() {
            16 => cbc_encrypt::<Aes128>(&self.key, iv, body, len),
            24 => cbc_encrypt::<Aes192>(&self.key, iv, body, len),
            _ => cbc_encrypt::<Aes256>(&self.key, iv, body, len),
        };
        debug_assert!(sealed, "whole blocks encrypt");
        out
    }
}

fn cbc_encrypt<C>(key: &[u8], iv: &[u8], buf: &mut [u8], len: usize) -> bool
where
    C: aes::cipher::BlockEncrypt + aes::cipher::BlockCipher + aes::cipher::KeyInit,
{
    cbc::Encryptor::<C>::new_from_slices(key, iv)
        .ok()
        .and_then(|e| e.encrypt_padded_mut::<NoPadding>(buf, len).ok())
        .is_some()
}

fn cbc_decrypt<C>(key: &[u8], iv: &[u8], buf: &mut [u8]) -> bool
where
    C: aes::cipher::BlockDecrypt + aes::cipher::BlockCipher + aes::cipher::KeyInit,
{
    cbc::Decryptor::<C>::new_from_slices(key, iv)
        .ok()
        .and_then(|d| d.decrypt_padded_mut::<NoPadding>(buf).ok())
        .is_some()
}

impl Transformer for Cbc {
    fn transform_from_storage(&self, data: &[u8], _context: &[u8]) -> Result<(Vec<u8>, bool)> {
        if data.len() < BLOCK_SIZE {
            return Err(Error::TooShort);
        }
        let (iv, body) = data.split_at(BLOCK_SIZE);
        if body.len() % BLOCK_SIZE != 0 {
            return Err(Error::InvalidBlockSize);
        }
        let mut out = body.to_vec();
        let decrypted = match self.key.len() {
            16 => cbc_decrypt::<Aes128>(&self.key, iv, &mut out),
            24 => cbc_decrypt::<Aes192>(&self.key, iv, &mut out),
            _ => cbc_decrypt::<Aes256>(&self.key, iv, &mut out),
        };
        if !decrypted {
            return Err(Error::InvalidBlockSize);
        }
        // PKCS#7, checked as kube checks it (its two messages).
        let padding = out.last().copied().unwrap_or(0) as usize;
        if padding == 0 || padding > out.len() {
            return Err(Error::InvalidPkcs7Data);
        }
        let size = out.len() - padding;
        if out[size..].iter().any(|&b| b as usize != padding) {
            return Err(Error::InvalidPkcs7Padding);
        }
        out.truncate(size);
        Ok((out, false))
    }

    fn transform_to_storage(&self, data: &[u8], _context: &[u8]) -> Result<Vec<u8>> {
        let mut iv = [0u8; BLOCK_SIZE];
        random(&mut iv)?;
        Ok(self.seal(data, &iv))
    }
}

/// AES-256-GCM, -192 or -128 by the key's length.
enum GcmCipher {
    Aes128(Box<AesGcm<Aes128, U12>>),
    Aes192(Box<AesGcm<Aes192, U12>>),
    Aes256(Box<AesGcm<Aes256, U12>>),
}

/// AES-GCM with a random 12-byte nonce per value and the storage key as authenticated data
/// (`NewGCMTransformer`).
pub struct Gcm {
    cipher: GcmCipher,
}

impl Gcm {
    /// The transformer of a 16, 24 or 32-byte `key`.
    pub fn new(key: &[u8]) -> Result<Self, KeySizeError> {
        let size = KeySizeError(key.len());
        let cipher = match key.len() {
            16 => GcmCipher::Aes128(Box::new(
                AesGcm::new_from_slice(key).map_err(|_| size.clone())?,
            )),
            24 => GcmCipher::Aes192(Box::new(
                AesGcm::new_from_slice(key).map_err(|_| size.clone())?,
            )),
            32 => GcmCipher::Aes256(Box::new(
                AesGcm::new_from_slice(key).map_err(|_| size.clone())?,
            )),
            _ => return Err(size),
        };
        Ok(Self { cipher })
    }

    /// `nonce`, then `data` sealed with it.
    fn seal(&self, data: &[u8], context: &[u8], nonce: &[u8; NONCE_SIZE]) -> Result<Vec<u8>> {
        let payload = Payload {
            msg: data,
            aad: context,
        };
        let nonce = nonce.into();
        let sealed = match &self.cipher {
            GcmCipher::Aes128(c) => c.encrypt(nonce, payload),
            GcmCipher::Aes192(c) => c.encrypt(nonce, payload),
            GcmCipher::Aes256(c) => c.encrypt(nonce, payload),
        }
        .map_err(|_| Error::Authentication)?;
        let mut out = Vec::with_capacity(NONCE_SIZE + sealed.len());
        out.extend_from_slice(nonce);
        out.extend_from_slice(&sealed);
        Ok(out)
    }
}

impl Transformer for Gcm {
    fn transform_from_storage(&self, data: &[u8], context: &[u8]) -> Result<(Vec<u8>, bool)> {
        if data.len() < NONCE_SIZE {
            return Err(Error::TooShort);
        }
        let (nonce, sealed) = data.split_at(NONCE_SIZE);
        let payload = Payload {
            msg: sealed,
            aad: context,
        };
        let nonce = nonce.into();
        let opened = match &self.cipher {
            GcmCipher::Aes128(c) => c.decrypt(nonce, payload),
            GcmCipher::Aes192(c) => c.decrypt(nonce, payload),
            GcmCipher::Aes256(c) => c.decrypt(nonce, payload),
        };
        opened
            .map(|v| (v, false))
            .map_err(|_| Error::Authentication)
    }

    fn transform_to_storage(&self, data: &[u8], context: &[u8]) -> Result<Vec<u8>> {
        let mut nonce = [0u8; NONCE_SIZE];
        random(&mut nonce)?;
        self.seal(data, context, &nonce)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
            .collect()
    }

    #[test]
    fn cbc_matches_the_nist_vector_and_pads_as_pkcs7() {
        // NIST SP 800-38A, F.2.1 CBC-AES128.Encrypt.
        let cbc = Cbc::new(&hex("2b7e151628aed2a6abf7158809cf4f3c")).unwrap();
        let iv: [u8; 16] = hex("000102030405060708090a0b0c0d0e0f").try_into().unwrap();
        let plain = hex(concat!(
            "6bc1bee22e409f96e93d7e117393172a",
            "ae2d8a571e03ac9c9eb76fac45af8e51",
            "30c81c46a35ce411e5fbc1191a0a52ef",
            "f69f2445df4f9b17ad2b417be66c3710"
        ));
        let stored = cbc.seal(&plain, &iv);
        // IV, the four blocks of the vector, then one block of padding (16 × 0x10).
        assert_eq!(stored.len(), 16 + 64 + 16);
        assert_eq!(&stored[..16], &iv);
        assert_eq!(
            stored[16..80],
            hex(concat!(
                "7649abac8119b246cee98e9b12e9197d",
                "5086cb9b507219ee95db113a917678b2",
                "73bed6b8e3c1743b7116e69e22229516",
                "3ff1caa1681fac09120eca307586e1a7"
            ))[..]
        );
        assert_eq!(cbc.transform_from_storage(&stored, b"").unwrap().0, plain);
    }

    #[test]
    fn cbc_round_trips_with_each_key_size_and_a_fresh_iv_each_time() {
        for size in [16, 24, 32] {
            let cbc = Cbc::new(&vec![7u8; size]).unwrap();
            let a = cbc.transform_to_storage(b"{\"data\":1}", b"k").unwrap();
            let b = cbc.transform_to_storage(b"{\"data\":1}", b"k").unwrap();
            assert_ne!(a, b, "the IV is random");
            assert_eq!(a.len(), 32);
            assert_eq!(
                cbc.transform_from_storage(&a, b"other").unwrap(),
                (b"{\"data\":1}".to_vec(), false)
            );
        }
        assert_eq!(Cbc::new(&[0; 20]).err(), Some(KeySizeError(20)));
    }

    #[test]
    fn cbc_refuses_short_unaligned_and_badly_padded_values() {
        let cbc = Cbc::new(&[1; 32]).unwrap();
        assert_eq!(
            cbc.transform_from_storage(&[0; 10], b""),
            Err(Error::TooShort)
        );
        assert_eq!(
            cbc.transform_from_storage(&[0; 20], b""),
            Err(Error::InvalidBlockSize)
        );
        let other = Cbc::new(&[2; 32]).unwrap();
        // A fixed IV: a wrong key yields random padding, which this one does not pass.
        let stored = other.seal(b"secret", &[5; 16]);
        let err = cbc.transform_from_storage(&stored, b"").unwrap_err();
        assert!(
            matches!(err, Error::InvalidPkcs7Data | Error::InvalidPkcs7Padding),
            "{err}"
        );
    }

    #[test]
    fn gcm_matches_the_nist_vector() {
        // The GCM specification's test case 2: zero key, zero nonce, one zero block.
        let gcm = Gcm::new(&[0; 16]).unwrap();
        let stored = gcm.seal(&[0; 16], b"", &[0; 12]).unwrap();
        assert_eq!(
            stored,
            [
                vec![0; 12],
                hex("0388dace60b6a392f328c2b971b2fe78"),
                hex("ab6e47d42cec13bdf53a67b21257bddf")
            ]
            .concat()
        );
        assert_eq!(gcm.transform_from_storage(&stored, b"").unwrap().0, [0; 16]);
    }

    #[test]
    fn gcm_binds_the_value_to_its_storage_key() {
        for size in [16, 24, 32] {
            let gcm = Gcm::new(&vec![3u8; size]).unwrap();
            let stored = gcm
                .transform_to_storage(b"secret", b"/registry/core/secrets/ns/a")
                .unwrap();
            assert_eq!(stored.len(), 12 + 6 + 16);
            assert_eq!(
                gcm.transform_from_storage(&stored, b"/registry/core/secrets/ns/a")
                    .unwrap(),
                (b"secret".to_vec(), false)
            );
            assert_eq!(
                gcm.transform_from_storage(&stored, b"/registry/core/secrets/ns/b"),
                Err(Error::Authentication)
            );
        }
        let gcm = Gcm::new(&[3; 32]).unwrap();
        assert_eq!(
            gcm.transform_from_storage(&[0; 5], b""),
            Err(Error::TooShort)
        );
    }
}
