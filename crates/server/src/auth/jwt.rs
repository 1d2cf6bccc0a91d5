//! Compact JSON Web Signatures (RFC 7515) with ES256 or RS256: building and taking apart `h.p.s`.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde_json::{json, Value};

use super::signing_key::SigningKey;

/// A token split into its parts; the signature is not checked yet.
#[derive(Clone, Debug, PartialEq)]
pub struct Parsed {
    /// The protected header.
    pub header: Value,
    /// The claims.
    pub claims: Value,
    /// `base64url(header) "." base64url(claims)`, what the signature covers.
    pub signing_input: String,
    /// The raw signature.
    pub signature: Vec<u8>,
}

impl Parsed {
    /// Whether the header names `key`'s algorithm and `key` signed the token.
    pub fn verify(&self, key: &SigningKey) -> bool {
        self.header.get("alg").and_then(Value::as_str) == Some(key.algorithm())
            && key.verify(self.signing_input.as_bytes(), &self.signature)
    }
}

/// Signs `claims` with `key`: header `{"alg":<ES256 or RS256>,"kid":<key id>}`.
pub fn sign(claims: &Value, key: &SigningKey) -> String {
    let header = json!({ "alg": key.algorithm(), "kid": key.key_id() });
    let input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let signature = key.sign(input.as_bytes());
    format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature))
}

/// Splits `token` into header, claims and signature; `None` unless it is a compact JWS whose
/// header and claims are JSON objects.
pub fn parse(token: &str) -> Option<Parsed> {
    let mut parts = token.split('.');
    let (h, p, s) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let object = |part: &str| -> Option<Value> {
        let bytes = URL_SAFE_NO_PAD.decode(part).ok()?;
        serde_json::from_slice::<Value>(&bytes)
            .ok()
            .filter(Value::is_object)
    };
    Some(Parsed {
        header: object(h)?,
        claims: object(p)?,
        signing_input: format!("{h}.{p}"),
        signature: URL_SAFE_NO_PAD.decode(s).ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signed_token_parses_back_and_verifies_with_its_key_only() {
        let key = SigningKey::generate();
        let token = sign(&json!({"sub": "me"}), &key);
        let parsed = parse(&token).expect("parses");
        assert_eq!(parsed.claims, json!({"sub": "me"}));
        assert_eq!(parsed.header["kid"], key.key_id());
        assert!(parsed.verify(&key));
        assert!(!parsed.verify(&SigningKey::generate()));
    }

    #[test]
    fn an_rsa_key_signs_rs256_tokens() {
        let key = SigningKey::from_pem("sa.key", include_str!("testdata/rsa-pkcs1.key"))
            .expect("an RSA key");
        let parsed = parse(&sign(&json!({"sub": "me"}), &key)).expect("parses");
        assert_eq!(parsed.header["alg"], "RS256");
        assert!(parsed.verify(&key));
        let mut es256 = parsed.clone();
        es256.header["alg"] = json!("ES256");
        assert!(
            !es256.verify(&key),
            "the header's algorithm must be the key's"
        );
    }

    #[test]
    fn tampered_or_malformed_tokens_do_not_pass() {
        let key = SigningKey::generate();
        let token = sign(&json!({"sub": "me"}), &key);
        let (h, rest) = token.split_once('.').expect("dots");
        let (_, s) = rest.split_once('.').expect("dots");
        let forged = format!("{h}.{}.{s}", URL_SAFE_NO_PAD.encode(r#"{"sub":"admin"}"#));
        assert!(!parse(&forged).expect("parses").verify(&key));
        for bad in ["", "a.b", "a.b.c.d", "!!.??.**", "abc"] {
            assert_eq!(parse(bad), None, "{bad}");
        }
        let none_alg = format!(
            "{}.{}.",
            URL_SAFE_NO_PAD.encode(r#"{"alg":"none"}"#),
            URL_SAFE_NO_PAD.encode(r#"{"sub":"x"}"#)
        );
        assert!(!parse(&none_alg).expect("parses").verify(&key));
    }
}
