//! The headers of a proxied request and of its response: the user rkcm authenticated, named
//! in `X-Remote-User`, `X-Remote-Uid`, `X-Remote-Group` and `X-Remote-Extra-<key>` as client-go's
//! `SetAuthProxyHeaders` names it for the requestheader authenticator of the aggregated server;
//! the client's credentials and hop-by-hop headers removed.

use http::header::{self, HeaderMap, HeaderName, HeaderValue};

use crate::auth::UserInfo;

/// `X-Remote-User`.
pub const REMOTE_USER: &str = "x-remote-user";
/// `X-Remote-Group`, once per group.
pub const REMOTE_GROUP: &str = "x-remote-group";
/// Prefix of `X-Remote-Extra-<key>`, once per value.
pub const REMOTE_EXTRA_PREFIX: &str = "x-remote-extra-";
/// `X-Remote-Uid`, when the user has one (kube 1.33's `RemoteRequestHeaderUID`, beta and on by
/// default).
pub const REMOTE_UID: &str = "x-remote-uid";

/// Headers meaningful for one connection only (Go's `httputil.ReverseProxy` list).
const HOP_BY_HOP: &[&str] = &[
    "connection",
    "proxy-connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// Removes the hop-by-hop headers, those the `Connection` header names included.
pub fn strip_hop_by_hop(headers: &mut HeaderMap) {
    let named: Vec<String> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|n| n.trim().to_ascii_lowercase())
        .filter(|n| !n.is_empty())
        .collect();
    for name in HOP_BY_HOP
        .iter()
        .copied()
        .chain(named.iter().map(String::as_str))
    {
        headers.remove(name);
    }
}

/// The headers of a request sent on for `user`: what the client sent less its credentials,
/// impersonation and any `X-Remote-*` of its own, plus the user's.
pub fn set_remote_user(headers: &mut HeaderMap, user: &UserInfo) {
    headers.remove(header::AUTHORIZATION);
    let drop: Vec<HeaderName> = headers
        .keys()
        .filter(|k| {
            let k = k.as_str();
            k == REMOTE_USER
                || k == REMOTE_GROUP
                || k == REMOTE_UID
                || k.starts_with(REMOTE_EXTRA_PREFIX)
                || k.starts_with("impersonate-")
        })
        .cloned()
        .collect();
    for k in drop {
        headers.remove(k);
    }
    if let Ok(v) = HeaderValue::from_str(&user.name) {
        headers.insert(REMOTE_USER, v);
    }
    if !user.uid.is_empty() {
        if let Ok(v) = HeaderValue::from_str(&user.uid) {
            headers.insert(REMOTE_UID, v);
        }
    }
    for group in &user.groups {
        if let Ok(v) = HeaderValue::from_str(group) {
            headers.append(REMOTE_GROUP, v);
        }
    }
    for (key, values) in &user.extra {
        let Ok(name) = HeaderName::from_bytes(
            format!("{REMOTE_EXTRA_PREFIX}{}", header_key_escape(key)).as_bytes(),
        ) else {
            continue;
        };
        for value in values {
            if let Ok(v) = HeaderValue::from_str(value) {
                headers.append(name.clone(), v);
            }
        }
    }
}

/// `headerKeyEscape`: bytes that may not appear in a header name, and `%`, percent-encoded, so
/// that the receiver's `url.PathUnescape` gives the key back.
pub fn header_key_escape(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    for b in key.bytes() {
        if is_token_byte(b) && b != b'%' {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// RFC 7230 `tchar`.
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extra_keys_are_escaped_as_client_go_escapes_them() {
        assert_eq!(
            header_key_escape("authentication.kubernetes.io/credential-id"),
            "authentication.kubernetes.io%2Fcredential-id"
        );
        assert_eq!(header_key_escape("100%"), "100%25");
        assert_eq!(header_key_escape("a b"), "a%20b");
    }

    #[test]
    fn the_user_replaces_the_clients_credentials_and_remote_headers() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Bearer secret"),
        );
        headers.insert(REMOTE_USER, HeaderValue::from_static("system:admin"));
        headers.insert(REMOTE_UID, HeaderValue::from_static("0"));
        headers.append(REMOTE_GROUP, HeaderValue::from_static("system:masters"));
        headers.insert("x-remote-extra-scopes", HeaderValue::from_static("all"));
        headers.insert("impersonate-user", HeaderValue::from_static("root"));
        headers.insert(header::ACCEPT, HeaderValue::from_static("application/json"));
        let mut user = UserInfo::new("alice", &["dev", "system:authenticated"]);
        user.uid = "a-1".into();
        user.extra.insert(
            "authentication.kubernetes.io/credential-id".into(),
            vec!["JTI=1".into()],
        );
        user.extra
            .insert("scopes".into(), vec!["a".into(), "b".into()]);
        set_remote_user(&mut headers, &user);
        let all = |name: &str| -> Vec<&str> {
            headers
                .get_all(name)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .collect()
        };
        assert!(headers.get(header::AUTHORIZATION).is_none());
        assert!(headers.get("impersonate-user").is_none());
        assert_eq!(all(REMOTE_USER), ["alice"]);
        assert_eq!(all(REMOTE_UID), ["a-1"]);
        assert_eq!(all(REMOTE_GROUP), ["dev", "system:authenticated"]);
        assert_eq!(all("x-remote-extra-scopes"), ["a", "b"]);
        assert_eq!(
            all("x-remote-extra-authentication.kubernetes.io%2fcredential-id"),
            ["JTI=1"]
        );
        assert_eq!(all("accept"), ["application/json"]);
    }

    #[test]
    fn a_user_without_uid_sends_none() {
        let mut headers = HeaderMap::new();
        headers.insert(REMOTE_UID, HeaderValue::from_static("forged"));
        set_remote_user(&mut headers, &UserInfo::new("bob", &[]));
        assert!(headers.get(REMOTE_UID).is_none());
        assert!(headers.get(REMOTE_GROUP).is_none());
    }

    #[test]
    fn hop_by_hop_headers_do_not_travel() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::CONNECTION,
            HeaderValue::from_static("keep-alive, x-hop"),
        );
        headers.insert("x-hop", HeaderValue::from_static("1"));
        headers.insert(header::TE, HeaderValue::from_static("trailers"));
        headers.insert(
            header::TRANSFER_ENCODING,
            HeaderValue::from_static("chunked"),
        );
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        strip_hop_by_hop(&mut headers);
        assert_eq!(headers.len(), 1);
        assert!(headers.contains_key(header::CONTENT_TYPE));
    }
}
