//! Syntax checks for label keys, label values and DNS names, as apimachinery `util/validation` has them.
//!
//! Each check returns the list of problems (empty when the input is valid), with apimachinery's messages,
//! so that the API server can put them into a `Status` cause unchanged.

/// Longest label value, and longest name part of a qualified name.
pub const LABEL_VALUE_MAX_LENGTH: usize = 63;
/// Longest name part of a qualified name (a label key without its prefix).
pub const QUALIFIED_NAME_MAX_LENGTH: usize = 63;
/// Longest RFC 1123 label.
pub const DNS1123_LABEL_MAX_LENGTH: usize = 63;
/// Longest RFC 1123 subdomain.
pub const DNS1123_SUBDOMAIN_MAX_LENGTH: usize = 253;

const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";

fn max_len_error(length: usize) -> String {
    format!("must be no more than {length} characters")
}

/// apimachinery's `RegexError`: the message, the regex and a few examples.
fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{fmt}')");
    }
    let examples = examples
        .iter()
        .map(|e| format!("'{e}'"))
        .collect::<Vec<_>>()
        .join(",  or ");
    format!("{msg} (e.g. {examples}, regex used for validation is '{fmt}')")
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`: alphanumeric at both ends, `-_.` allowed inside.
fn is_qualified_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && b.iter()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`.
fn is_dns1123_label_syntax(s: &str) -> bool {
    let lower_alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(first), Some(last)) => {
            lower_alnum(first)
                && lower_alnum(last)
                && b.iter().all(|c| lower_alnum(c) || *c == b'-')
        }
        _ => false,
    }
}

/// Checks a qualified name (a label or annotation key): an optional DNS subdomain prefix and `/`,
/// then a name of at most 63 characters (apimachinery `IsQualifiedName`).
pub fn is_qualified_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                for msg in is_dns1123_subdomain(prefix) {
                    errs.push(format!("prefix part {msg}"));
                }
            }
            *name
        }
        _ => {
            errs.push(regex_error(
                "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
                QUALIFIED_NAME_FMT,
                &["MyName", "my.name", "123-abc"],
            ) + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')");
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > QUALIFIED_NAME_MAX_LENGTH {
        errs.push(format!(
            "name part {}",
            max_len_error(QUALIFIED_NAME_MAX_LENGTH)
        ));
    }
    if !is_qualified_name_part(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
                QUALIFIED_NAME_FMT,
                &["MyName", "my.name", "123-abc"],
            )
        ));
    }
    errs
}

/// Checks a label value: empty, or at most 63 characters of `[-A-Za-z0-9_.]` with alphanumeric ends
/// (apimachinery `IsValidLabelValue`).
pub fn is_valid_label_value(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > LABEL_VALUE_MAX_LENGTH {
        errs.push(max_len_error(LABEL_VALUE_MAX_LENGTH));
    }
    if !value.is_empty() && !is_qualified_name_part(value) {
        errs.push(regex_error(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// Checks an RFC 1123 label, as used for namespace names (apimachinery `IsDNS1123Label`).
pub fn is_dns1123_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_LABEL_MAX_LENGTH));
    }
    if !is_dns1123_label_syntax(value) {
        errs.push(regex_error(
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
            DNS1123_LABEL_FMT,
            &["my-name", "123-abc"],
        ));
    }
    errs
}

/// Checks an RFC 1123 subdomain, as used for most object names (apimachinery `IsDNS1123Subdomain`).
pub fn is_dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    if !value.split('.').all(is_dns1123_label_syntax) {
        errs.push(regex_error(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qualified_names_accept_an_optional_dns_prefix() {
        for good in [
            "simple",
            "now-with-dashes",
            "1-starts-with-num",
            "1234",
            "simple/simple",
            "now-with-dashes/simple",
            "now-with-dashes/now-with-dashes",
            "now.with.dots/now-with-dashes",
            "now-with.dashes-and.dots/now_with_underscores",
            "example.com/Upper-Case",
            &"a".repeat(63),
            &format!("{}/b", "a".repeat(253)),
        ] {
            assert!(
                is_qualified_name(good).is_empty(),
                "{good}: {:?}",
                is_qualified_name(good)
            );
        }
        for bad in [
            "",
            "nospecialchars%^=@",
            "cantendwithadash-",
            "-cantstartwithadash-",
            "only/one/slash",
            "Example.com/abc",
            "Upper/lower",
            "example_com/abc",
            "example.com/",
            "/simple",
            &"a".repeat(64),
            &format!("{}/b", "a".repeat(254)),
        ] {
            assert!(
                !is_qualified_name(bad).is_empty(),
                "{bad} should be invalid"
            );
        }
    }

    #[test]
    fn label_values_may_be_empty_but_not_longer_than_63() {
        for good in [
            "",
            "simple",
            "now-with-dashes",
            "1-starts-with-num",
            "end-with-num-1",
            "1234",
            "a_b.c",
            &"a".repeat(63),
        ] {
            assert!(is_valid_label_value(good).is_empty(), "{good}");
        }
        for bad in [
            "nospecialchars%^=@",
            "Tama-nui-te-rā.is.Māori.sun",
            "\\backslashes",
            "-starts-with-dash",
            "ends-with-dash-",
            ".starts.with.dot",
            "ends.with.dot.",
            &"a".repeat(64),
        ] {
            assert!(
                !is_valid_label_value(bad).is_empty(),
                "{bad} should be invalid"
            );
        }
    }

    #[test]
    fn dns_labels_and_subdomains_are_lower_case() {
        assert!(is_dns1123_label("kube-system").is_empty());
        assert!(!is_dns1123_label("Kube").is_empty());
        assert!(!is_dns1123_label("a.b").is_empty());
        assert!(!is_dns1123_label("").is_empty());
        assert!(is_dns1123_subdomain("a.b-c.d").is_empty());
        assert!(!is_dns1123_subdomain("a..b").is_empty());
        assert!(!is_dns1123_subdomain("a.").is_empty());
    }
}
