//! The signing policy of kube's local signer: validity window, key usages and the certificate
//! duration a request may ask for.
//!
//! Mirrors `PermissiveSigningPolicy` (`pkg/controller/certificates/authority/policies.go`) and
//! `signer.duration` (`signer.go`).

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};

/// How far back a certificate's NotBefore goes (`Backdate` in `signer.sign`).
pub const BACKDATE: Duration = Duration::from_secs(5 * 60);
/// Certificates living less than this are not backdated at their end (`Short`).
pub const SHORT: Duration = Duration::from_secs(8 * 3600);
/// The shortest duration a request gets, whatever it asks (twice the backdate).
pub const MIN_DURATION: Duration = Duration::from_secs(10 * 60);

/// The duration a request gets: `expirationSeconds` when set, at least [`MIN_DURATION`] and at
/// most `cert_ttl` (`--cluster-signing-duration`).
pub fn duration(cert_ttl: Duration, expiration_seconds: Option<i32>) -> Duration {
    let Some(seconds) = expiration_seconds else {
        return cert_ttl;
    };
    let requested = Duration::from_secs(u64::try_from(seconds).unwrap_or(0));
    if requested > cert_ttl {
        cert_ttl
    } else if requested < MIN_DURATION {
        MIN_DURATION
    } else {
        requested
    }
}

/// The parameters of `PermissiveSigningPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SigningPolicy {
    /// Lifetime of the certificate.
    pub ttl: Duration,
    /// How far back NotBefore goes.
    pub backdate: Duration,
    /// Below this lifetime NotAfter is not backdated.
    pub short: Duration,
}

/// The validity window of a certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Validity {
    /// NotBefore.
    pub not_before: Timestamp,
    /// NotAfter.
    pub not_after: Timestamp,
}

/// Why a certificate cannot be signed under the policy.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// The CA expires before the certificate would start.
    #[error("the signer has expired: NotAfter={}", go_time(.0))]
    SignerExpired(Timestamp),
    /// The CA has already expired.
    #[error("refusing to sign a certificate that expired in the past: NotAfter={}", go_time(.0))]
    ExpiredInThePast(Timestamp),
    /// A usage kube does not know.
    #[error("unrecognized usage values: [{}]", .0.iter().map(|u| format!("{u:?}")).collect::<Vec<_>>().join(" "))]
    UnrecognizedUsages(Vec<String>),
}

/// A time as Go's `time.Time.String` prints a UTC time.
fn go_time(t: &Timestamp) -> String {
    t.strftime("%Y-%m-%d %H:%M:%S +0000 UTC").to_string()
}

fn signed(d: Duration) -> SignedDuration {
    SignedDuration::try_from(d).unwrap_or(SignedDuration::MAX)
}

fn add(t: Timestamp, d: SignedDuration) -> Timestamp {
    t.checked_add(d).unwrap_or(if d.is_negative() {
        Timestamp::MIN
    } else {
        Timestamp::MAX
    })
}

impl SigningPolicy {
    /// The validity window at `now` under a CA that expires at `signer_not_after`
    /// (`PermissiveSigningPolicy.apply`): NotBefore is `now - backdate`; NotAfter is
    /// `now + ttl - backdate`, or `now + ttl` for short-lived certificates; never past the CA's.
    pub fn validity(
        &self,
        now: Timestamp,
        signer_not_after: Timestamp,
    ) -> Result<Validity, PolicyError> {
        let not_before = add(now, -signed(self.backdate));
        let mut not_after = if self.ttl < self.short {
            // Do not backdate the end of a short-lived certificate.
            add(now, signed(self.ttl))
        } else {
            add(now, signed(self.ttl) - signed(self.backdate))
        };
        if not_after >= signer_not_after {
            not_after = signer_not_after;
        }
        if not_before >= signer_not_after {
            return Err(PolicyError::SignerExpired(signer_not_after));
        }
        if now >= signer_not_after {
            return Err(PolicyError::ExpiredInThePast(signer_not_after));
        }
        Ok(Validity {
            not_before,
            not_after,
        })
    }
}

/// A key usage of the certificate's KeyUsage extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum KeyUsage {
    /// digitalSignature (`signing`, `digital signature`).
    DigitalSignature,
    /// contentCommitment.
    ContentCommitment,
    /// keyEncipherment.
    KeyEncipherment,
    /// keyAgreement.
    KeyAgreement,
    /// dataEncipherment.
    DataEncipherment,
    /// keyCertSign.
    CertSign,
    /// cRLSign.
    CrlSign,
    /// encipherOnly.
    EncipherOnly,
    /// decipherOnly.
    DecipherOnly,
}

/// An extended key usage, ordered as Go's `x509.ExtKeyUsage` constants (the order kube sorts
/// them in).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ExtKeyUsage {
    /// anyExtendedKeyUsage.
    Any,
    /// serverAuth.
    ServerAuth,
    /// clientAuth.
    ClientAuth,
    /// codeSigning.
    CodeSigning,
    /// emailProtection (`email protection`, `s/mime`).
    EmailProtection,
    /// ipsecEndSystem.
    IpsecEndSystem,
    /// ipsecTunnel.
    IpsecTunnel,
    /// ipsecUser.
    IpsecUser,
    /// timeStamping.
    TimeStamping,
    /// OCSPSigning.
    OcspSigning,
    /// Microsoft Server Gated Crypto.
    MicrosoftSgc,
    /// Netscape Server Gated Crypto.
    NetscapeSgc,
}

impl ExtKeyUsage {
    /// The OID's arcs.
    pub fn oid(self) -> &'static [u64] {
        match self {
            ExtKeyUsage::Any => &[2, 5, 29, 37, 0],
            ExtKeyUsage::ServerAuth => &[1, 3, 6, 1, 5, 5, 7, 3, 1],
            ExtKeyUsage::ClientAuth => &[1, 3, 6, 1, 5, 5, 7, 3, 2],
            ExtKeyUsage::CodeSigning => &[1, 3, 6, 1, 5, 5, 7, 3, 3],
            ExtKeyUsage::EmailProtection => &[1, 3, 6, 1, 5, 5, 7, 3, 4],
            ExtKeyUsage::IpsecEndSystem => &[1, 3, 6, 1, 5, 5, 7, 3, 5],
            ExtKeyUsage::IpsecTunnel => &[1, 3, 6, 1, 5, 5, 7, 3, 6],
            ExtKeyUsage::IpsecUser => &[1, 3, 6, 1, 5, 5, 7, 3, 7],
            ExtKeyUsage::TimeStamping => &[1, 3, 6, 1, 5, 5, 7, 3, 8],
            ExtKeyUsage::OcspSigning => &[1, 3, 6, 1, 5, 5, 7, 3, 9],
            ExtKeyUsage::MicrosoftSgc => &[1, 3, 6, 1, 4, 1, 311, 10, 3, 3],
            ExtKeyUsage::NetscapeSgc => &[2, 16, 840, 1, 113730, 4, 1],
        }
    }
}

/// The key usages and extended key usages of `usages` (`keyUsagesFromStrings`): each once,
/// extended usages sorted.
pub fn key_usages(usages: &[String]) -> Result<(Vec<KeyUsage>, Vec<ExtKeyUsage>), PolicyError> {
    let mut ku = Vec::new();
    let mut eku = Vec::new();
    let mut unrecognized = Vec::new();
    for u in usages {
        let key = match u.as_str() {
            "signing" | "digital signature" => Some(KeyUsage::DigitalSignature),
            "content commitment" => Some(KeyUsage::ContentCommitment),
            "key encipherment" => Some(KeyUsage::KeyEncipherment),
            "key agreement" => Some(KeyUsage::KeyAgreement),
            "data encipherment" => Some(KeyUsage::DataEncipherment),
            "cert sign" => Some(KeyUsage::CertSign),
            "crl sign" => Some(KeyUsage::CrlSign),
            "encipher only" => Some(KeyUsage::EncipherOnly),
            "decipher only" => Some(KeyUsage::DecipherOnly),
            _ => None,
        };
        let ext = match u.as_str() {
            "any" => Some(ExtKeyUsage::Any),
            "server auth" => Some(ExtKeyUsage::ServerAuth),
            "client auth" => Some(ExtKeyUsage::ClientAuth),
            "code signing" => Some(ExtKeyUsage::CodeSigning),
            "email protection" | "s/mime" => Some(ExtKeyUsage::EmailProtection),
            "ipsec end system" => Some(ExtKeyUsage::IpsecEndSystem),
            "ipsec tunnel" => Some(ExtKeyUsage::IpsecTunnel),
            "ipsec user" => Some(ExtKeyUsage::IpsecUser),
            "timestamping" => Some(ExtKeyUsage::TimeStamping),
            "ocsp signing" => Some(ExtKeyUsage::OcspSigning),
            "microsoft sgc" => Some(ExtKeyUsage::MicrosoftSgc),
            "netscape sgc" => Some(ExtKeyUsage::NetscapeSgc),
            _ => None,
        };
        match (key, ext) {
            (Some(k), _) => ku.push(k),
            (None, Some(e)) => eku.push(e),
            (None, None) => unrecognized.push(u.clone()),
        }
    }
    if !unrecognized.is_empty() {
        return Err(PolicyError::UnrecognizedUsages(unrecognized));
    }
    ku.sort_unstable();
    ku.dedup();
    eku.sort_unstable();
    eku.dedup();
    Ok((ku, eku))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: Duration = Duration::from_secs(3600);
    const MINUTE: Duration = Duration::from_secs(60);

    fn now() -> Timestamp {
        "2026-01-01T12:00:00Z".parse().unwrap()
    }

    fn at(offset_secs: i64) -> Timestamp {
        add(now(), SignedDuration::from_secs(offset_secs))
    }

    fn policy(ttl: Duration, backdate: Duration, short: Duration) -> SigningPolicy {
        SigningPolicy {
            ttl,
            backdate,
            short,
        }
    }

    /// The validity cases of `TestCertificateAuthority` (CA valid for 24 h around now).
    #[test]
    fn validity_follows_backdate_short_and_the_ca() {
        let ca_not_after = at(24 * 3600);
        let cases = [
            (
                "ca info",
                policy(HOUR, Duration::ZERO, Duration::ZERO),
                0,
                3600,
            ),
            (
                "backdate without short",
                policy(HOUR, 5 * MINUTE, Duration::ZERO),
                -300,
                3300,
            ),
            (
                "backdate without short and super small ttl",
                policy(MINUTE, 5 * MINUTE, Duration::ZERO),
                -300,
                -240,
            ),
            (
                "backdate with short",
                policy(HOUR, 5 * MINUTE, 8 * HOUR),
                -300,
                3600,
            ),
            (
                "backdate with short and super small ttl",
                policy(MINUTE, 5 * MINUTE, 8 * HOUR),
                -300,
                60,
            ),
            (
                "backdate with short but longer ttl",
                policy(24 * HOUR, 5 * MINUTE, 8 * HOUR),
                -300,
                24 * 3600 - 300,
            ),
            (
                "truncate expiration",
                policy(48 * HOUR, Duration::ZERO, Duration::ZERO),
                0,
                24 * 3600,
            ),
        ];
        for (name, p, before, after) in cases {
            assert_eq!(
                p.validity(now(), ca_not_after),
                Ok(Validity {
                    not_before: at(before),
                    not_after: at(after)
                }),
                "{name}"
            );
        }
    }

    #[test]
    fn an_expired_ca_signs_nothing() {
        let p = policy(HOUR, Duration::ZERO, Duration::ZERO);
        let err = p.validity(now(), now()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the signer has expired: NotAfter=2026-01-01 12:00:00 +0000 UTC"
        );
        let p = policy(HOUR, 5 * MINUTE, Duration::ZERO);
        assert_eq!(
            p.validity(now(), now()).unwrap_err().to_string(),
            "refusing to sign a certificate that expired in the past: NotAfter=2026-01-01 12:00:00 +0000 UTC"
        );
    }

    /// `Test_signer_duration`.
    #[test]
    fn requested_durations_are_bounded() {
        let d = |secs: Option<i32>| duration(HOUR, secs);
        assert_eq!(
            d(Some(30 * 60)),
            30 * MINUTE,
            "can request shorter duration than TTL"
        );
        assert_eq!(
            d(Some(3 * 3600)),
            HOUR,
            "cannot request longer duration than TTL"
        );
        assert_eq!(
            d(Some(-60)),
            10 * MINUTE,
            "cannot request negative duration"
        );
        assert_eq!(
            d(Some(599)),
            10 * MINUTE,
            "cannot request duration less than 10 mins"
        );
        assert_eq!(
            d(Some(600)),
            10 * MINUTE,
            "can request duration of exactly 10 mins"
        );
        assert_eq!(
            d(Some(3600)),
            HOUR,
            "can request duration equal to the default"
        );
        assert_eq!(
            d(None),
            HOUR,
            "can choose not to request a duration to get the default"
        );
    }

    #[test]
    fn usages_split_into_key_and_extended_usages() {
        let u = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            key_usages(&u(&["signing"])),
            Ok((vec![KeyUsage::DigitalSignature], vec![]))
        );
        assert_eq!(
            key_usages(&u(&[
                "client auth",
                "key encipherment",
                "server auth",
                "digital signature",
                "signing"
            ])),
            Ok((
                vec![KeyUsage::DigitalSignature, KeyUsage::KeyEncipherment],
                vec![ExtKeyUsage::ServerAuth, ExtKeyUsage::ClientAuth]
            ))
        );
        assert_eq!(
            key_usages(&u(&["s/mime", "email protection"])),
            Ok((vec![], vec![ExtKeyUsage::EmailProtection]))
        );
        assert_eq!(
            key_usages(&u(&["bogus", "client auth", "worse"]))
                .unwrap_err()
                .to_string(),
            "unrecognized usage values: [\"bogus\" \"worse\"]"
        );
    }
}
