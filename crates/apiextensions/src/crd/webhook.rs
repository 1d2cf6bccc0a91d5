//! The conversion webhook's client config: an https URL without user, query or fragment, or a service with a
//! valid port and path; apiserver's `util/webhook/validation.go` (`ValidateWebhookURL`, `ValidateWebhookService`).

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::ServiceReference;
use rkcm_labels::validation as names;
use serde_json::Value;

use crate::field::{ErrorList, FieldError, Path};

const FORM: &str = "; desired format: https://host[/path]";

/// The parts of a URL that Go's `url.Parse` would find, for the checks kube makes.
struct UrlParts<'a> {
    scheme: String,
    user: Option<&'a str>,
    host: &'a str,
    query: &'a str,
    fragment: &'a str,
}

fn split_url(url: &str) -> UrlParts<'_> {
    let (rest, fragment) = url.split_once('#').unwrap_or((url, ""));
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let scheme_end = rest.find(':').filter(|&i| {
        let s = &rest[..i];
        s.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    });
    let (scheme, rest) = match scheme_end {
        Some(i) => (rest[..i].to_lowercase(), &rest[i + 1..]),
        None => (String::new(), rest),
    };
    let (user, host) = match rest.strip_prefix("//") {
        Some(authority_and_path) => {
            let authority = &authority_and_path[..authority_and_path
                .find('/')
                .unwrap_or(authority_and_path.len())];
            match authority.rsplit_once('@') {
                Some((user, host)) => (Some(user), host),
                None => (None, authority),
            }
        }
        None => (None, ""),
    };
    UrlParts {
        scheme,
        user,
        host,
        query,
        fragment,
    }
}

/// kube's `ValidateWebhookURL` with https required.
pub(super) fn validate_url(path: &Path, url: &str) -> ErrorList {
    let u = split_url(url);
    let mut errs = Vec::new();
    if u.scheme != "https" {
        errs.push(FieldError::invalid(
            path,
            u.scheme.as_str(),
            format!("'https' is the only allowed URL scheme{FORM}"),
        ));
    }
    if u.host.is_empty() {
        errs.push(FieldError::invalid(
            path,
            u.host,
            format!("host must be specified{FORM}"),
        ));
    }
    if let Some(user) = u.user {
        errs.push(FieldError::invalid(
            path,
            user,
            "user information is not permitted in the URL",
        ));
    }
    if !u.fragment.is_empty() {
        errs.push(FieldError::invalid(
            path,
            u.fragment,
            "fragments are not permitted in the URL",
        ));
    }
    if !u.query.is_empty() {
        errs.push(FieldError::invalid(
            path,
            u.query,
            "query parameters are not permitted in the URL",
        ));
    }
    errs
}

/// kube's `ValidateWebhookService` (the port was defaulted to 443).
pub(super) fn validate_service(path: &Path, service: &ServiceReference) -> ErrorList {
    let mut errs = Vec::new();
    if service.name.is_empty() {
        errs.push(FieldError::required(
            &path.child("name"),
            "service name is required",
        ));
    }
    if service.namespace.is_empty() {
        errs.push(FieldError::required(
            &path.child("namespace"),
            "service namespace is required",
        ));
    }
    let port = service.port.unwrap_or(443);
    let problems = names::is_valid_port_num(i64::from(port));
    if !problems.is_empty() {
        errs.push(FieldError::invalid(
            &path.child("port"),
            Value::from(port),
            format!("port is not valid: {}", problems.join(", ")),
        ));
    }
    let Some(url_path) = service.path.as_deref() else {
        return errs;
    };
    if url_path == "/" || url_path.is_empty() {
        return errs;
    }
    let pp = path.child("path");
    if url_path == "//" {
        errs.push(FieldError::invalid(
            &pp,
            url_path,
            "segment[0] may not be empty",
        ));
        return errs;
    }
    if !url_path.starts_with('/') {
        errs.push(FieldError::invalid(&pp, url_path, "must start with a '/'"));
    }
    // Go slices off the first byte whatever it is.
    let mut to_check = url_path.get(1..).unwrap_or("");
    to_check = to_check.strip_suffix('/').unwrap_or(to_check);
    for (i, step) in to_check.split('/').enumerate() {
        if step.is_empty() {
            errs.push(FieldError::invalid(
                &pp,
                url_path,
                format!("segment[{i}] may not be empty"),
            ));
            continue;
        }
        for failure in names::is_dns1123_subdomain(step) {
            errs.push(FieldError::invalid(
                &pp,
                url_path,
                format!("segment[{i}]: {failure}"),
            ));
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url_errors(url: &str) -> Vec<String> {
        validate_url(&Path::new("url"), url)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn urls_must_be_https_with_a_host_and_nothing_else() {
        assert!(url_errors("https://example.com/webhook").is_empty());
        assert_eq!(
            url_errors(""),
            vec![
                r#"url: Invalid value: "": 'https' is the only allowed URL scheme; desired format: https://host[/path]"#,
                r#"url: Invalid value: "": host must be specified; desired format: https://host[/path]"#,
            ]
        );
        assert_eq!(
            url_errors("http://user@example.com/x?q=1#f"),
            vec![
                r#"url: Invalid value: "http": 'https' is the only allowed URL scheme; desired format: https://host[/path]"#,
                r#"url: Invalid value: "user": user information is not permitted in the URL"#,
                r#"url: Invalid value: "f": fragments are not permitted in the URL"#,
                r#"url: Invalid value: "q=1": query parameters are not permitted in the URL"#,
            ]
        );
    }

    #[test]
    fn services_need_name_namespace_valid_port_and_path() {
        let service = |port: Option<i32>, path: Option<&str>| ServiceReference {
            name: "n".into(),
            namespace: "ns".into(),
            path: path.map(str::to_string),
            port,
        };
        let errors = |s: ServiceReference| -> Vec<String> {
            validate_service(&Path::new("service"), &s)
                .iter()
                .map(ToString::to_string)
                .collect()
        };
        assert!(errors(service(None, Some("/convert"))).is_empty());
        for port in [0, 65536] {
            assert_eq!(
                errors(service(Some(port), None)),
                vec![format!("service.port: Invalid value: {port}: port is not valid: must be between 1 and 65535, inclusive")]
            );
        }
        assert_eq!(
            errors(service(None, Some("//"))),
            vec![r#"service.path: Invalid value: "//": segment[0] may not be empty"#]
        );
        let errs = errors(service(None, Some("convert//Bad")));
        assert_eq!(
            errs[0],
            r#"service.path: Invalid value: "convert//Bad": must start with a '/'"#
        );
        assert_eq!(
            errs[1],
            r#"service.path: Invalid value: "convert//Bad": segment[1] may not be empty"#
        );
        assert!(errs[2].starts_with(r#"service.path: Invalid value: "convert//Bad": segment[2]: a lowercase RFC 1123 subdomain"#), "{errs:?}");
    }
}
