//! Private keys in the PEM forms Kubernetes' tools write (client-go's `util/keyutil`): PKCS#1
//! `RSA PRIVATE KEY` (kubeadm's default CA and service-account keys), SEC1 `EC PRIVATE KEY`
//! (kubeadm with an ECDSA algorithm) and PKCS#8 `PRIVATE KEY`, all brought to PKCS#8 DER, the one
//! form the crypto library reads.

/// DER of the AlgorithmIdentifier of RSA keys: SEQUENCE { rsaEncryption, NULL }.
pub const RSA_ALGORITHM: [u8; 15] = [
    0x30, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01, 0x05, 0x00,
];

/// DER of the AlgorithmIdentifier of P-256 keys: SEQUENCE { id-ecPublicKey, prime256v1 }.
pub const P256_ALGORITHM: [u8; 21] = [
    0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a, 0x86, 0x48,
    0xce, 0x3d, 0x03, 0x01, 0x07,
];

/// Why a PEM text holds no usable private key.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum KeyError {
    /// The text is not PEM.
    #[error("data does not contain a valid RSA or ECDSA private key: {0}")]
    Pem(String),
    /// A PEM block of another type.
    #[error("data does not contain a valid RSA or ECDSA private key: unsupported PEM block {0:?}")]
    Unsupported(String),
}

/// The first private key of `pem` as PKCS#8 DER: a PKCS#1 RSA key or a SEC1 P-256 key is
/// wrapped (RFC 5208 `PrivateKeyInfo`), a PKCS#8 key is returned as it is.
pub fn pkcs8_der(pem: &str) -> Result<Vec<u8>, KeyError> {
    let blocks = ::pem::parse_many(pem).map_err(|e| KeyError::Pem(e.to_string()))?;
    let mut tags = Vec::new();
    for block in &blocks {
        match block.tag() {
            "PRIVATE KEY" => return Ok(block.contents().to_vec()),
            "RSA PRIVATE KEY" => return Ok(private_key_info(&RSA_ALGORITHM, block.contents())),
            "EC PRIVATE KEY" => return Ok(private_key_info(&P256_ALGORITHM, block.contents())),
            // Go's EC keys may come after their curve parameters; certificates may come first.
            other => tags.push(other.to_string()),
        }
    }
    Err(match tags.into_iter().next() {
        Some(tag) => KeyError::Unsupported(tag),
        None => KeyError::Pem("no PEM block".into()),
    })
}

/// `PrivateKeyInfo { version 0, algorithm, OCTET STRING key }`.
fn private_key_info(algorithm: &[u8], key: &[u8]) -> Vec<u8> {
    let mut content = vec![0x02, 0x01, 0x00];
    content.extend_from_slice(algorithm);
    content.extend(der(0x04, key));
    der(0x30, &content)
}

/// A DER element: `tag`, the definite length of `content`, then `content`.
pub fn der(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = content.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes: Vec<u8> = len
            .to_be_bytes()
            .into_iter()
            .skip_while(|b| *b == 0)
            .collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend_from_slice(&bytes);
    }
    out.extend_from_slice(content);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_use_the_short_and_long_forms() {
        assert_eq!(der(0x04, &[1, 2]), vec![0x04, 2, 1, 2]);
        let long = der(0x04, &[0; 300]);
        assert_eq!(&long[..4], &[0x04, 0x82, 0x01, 0x2c]);
        assert_eq!(long.len(), 304);
    }

    #[test]
    fn pkcs8_passes_through_and_other_forms_are_wrapped() {
        let body = "MAMCAQA=";
        let pkcs8 = format!("-----BEGIN PRIVATE KEY-----\n{body}\n-----END PRIVATE KEY-----\n");
        assert_eq!(pkcs8_der(&pkcs8), Ok(vec![0x30, 0x03, 0x02, 0x01, 0x00]));
        let rsa =
            format!("-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----\n");
        let wrapped = pkcs8_der(&rsa).expect("wrapped");
        assert_eq!(&wrapped[2..5], &[0x02, 0x01, 0x00]);
        assert_eq!(&wrapped[5..20], &RSA_ALGORITHM);
        assert_eq!(&wrapped[20..], &[0x04, 5, 0x30, 0x03, 0x02, 0x01, 0x00]);
    }

    #[test]
    fn text_without_a_private_key_is_refused() {
        let cert = "-----BEGIN CERTIFICATE-----\nMAMCAQA=\n-----END CERTIFICATE-----\n";
        assert_eq!(
            pkcs8_der(cert),
            Err(KeyError::Unsupported("CERTIFICATE".into()))
        );
        assert!(pkcs8_der("not a key").is_err());
    }
}
