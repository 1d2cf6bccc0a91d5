//! Client certificates: the TLS layer has verified the chain against the cluster CA; the user is
//! the subject's common name and the groups its organizations (kube's
//! `CommonNameUserConversion`, `k8s.io/apiserver/pkg/authentication/request/x509`).

use x509_parser::prelude::{FromDer, X509Certificate};

use super::user::UserInfo;

/// The user of the verified leaf certificate `der`; `None` when it has no common name (kube
/// then lets the other authenticators try) or cannot be parsed.
pub fn user_from_certificate(der: &[u8]) -> Option<UserInfo> {
    let (_, cert) = X509Certificate::from_der(der).ok()?;
    let subject = cert.subject();
    let name = subject
        .iter_common_name()
        .next()
        .and_then(|cn| cn.as_str().ok())
        .filter(|cn| !cn.is_empty())?
        .to_string();
    let groups = subject
        .iter_organization()
        .filter_map(|o| o.as_str().ok())
        .map(str::to_string)
        .collect();
    Some(UserInfo {
        name,
        groups,
        ..UserInfo::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{CertificateParams, DnType, KeyPair};

    fn certificate(cn: Option<&str>, orgs: &[&str]) -> Vec<u8> {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
        params.distinguished_name = rcgen::DistinguishedName::new();
        if let Some(cn) = cn {
            params.distinguished_name.push(DnType::CommonName, cn);
        }
        for o in orgs {
            params.distinguished_name.push(DnType::OrganizationName, *o);
        }
        let key = KeyPair::generate().expect("key");
        params.self_signed(&key).expect("cert").der().to_vec()
    }

    #[test]
    fn the_common_name_is_the_user_and_organizations_the_groups() {
        let user = user_from_certificate(&certificate(Some("alice"), &["dev"])).expect("user");
        assert_eq!(
            (user.name.as_str(), user.groups.as_slice()),
            ("alice", &["dev".to_string()][..])
        );
        assert_eq!(user.uid, "");
    }

    #[test]
    fn a_certificate_without_common_name_authenticates_nobody() {
        assert_eq!(user_from_certificate(&certificate(None, &["dev"])), None);
        assert_eq!(user_from_certificate(b"garbage"), None);
    }
}
