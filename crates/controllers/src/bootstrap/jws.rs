//! Detached JWS signatures of the `cluster-info` kubeconfig, as `pkg/controller/bootstrap/jws.go`.
//!
//! A compact JWS (RFC 7515) with the protected header `{"alg":"HS256","kid":"<token-id>"}`, keyed
//! by the token secret, with the payload left out (`<header>..<signature>`): kubeadm's discovery
//! recomputes it over the kubeconfig it fetched to check it came from the token's holder.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;

/// The detached signature of `content` for bootstrap token `token_id`.`token_secret`
/// (`ComputeDetachedSignature`).
pub fn compute_detached_signature(content: &str, token_id: &str, token_secret: &str) -> String {
    // go-jose writes the protected header with its keys sorted.
    let header = serde_json::json!({"alg": "HS256", "kid": token_id}).to_string();
    let header = URL_SAFE_NO_PAD.encode(header);
    let payload = URL_SAFE_NO_PAD.encode(content);
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, token_secret.as_bytes());
    let tag = ring::hmac::sign(&key, format!("{header}.{payload}").as_bytes());
    format!("{header}..{}", URL_SAFE_NO_PAD.encode(tag.as_ref()))
}

/// Whether `signature` is the detached signature of `content` by the token (`DetachedTokenIsValid`).
pub fn detached_token_is_valid(
    signature: &str,
    content: &str,
    token_id: &str,
    token_secret: &str,
) -> bool {
    compute_detached_signature(content, token_id, token_secret) == signature
}

#[cfg(test)]
mod tests {
    use super::*;

    // jws_test.go's TestComputeDetachedSignature.
    #[test]
    fn the_signature_is_kubes_to_the_byte() {
        let content = "Hello from the other side. I must have called a thousand times.";
        let secret = "my voice is my passcode";
        let id = "joshua";
        assert_eq!(
            compute_detached_signature(content, id, secret),
            "eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9..VShe2taLd-YTrmWuRkcL_8QTNDHYxQIEBsAYYiIj1_8"
        );
    }

    // jws_test.go's TestDetachedTokenIsValid.
    #[test]
    fn a_signature_verifies_only_with_its_token_and_content() {
        let content = "Hello from the other side. I must have called a thousand times.";
        let sig = compute_detached_signature(content, "joshua", "my voice is my passcode");
        assert!(detached_token_is_valid(
            &sig,
            content,
            "joshua",
            "my voice is my passcode"
        ));
        assert!(!detached_token_is_valid(&sig, content, "joshua", "other"));
        assert!(!detached_token_is_valid(
            &sig,
            content,
            "other",
            "my voice is my passcode"
        ));
        assert!(!detached_token_is_valid(
            &sig,
            "other content",
            "joshua",
            "my voice is my passcode"
        ));
    }
}
