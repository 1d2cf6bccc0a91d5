//! Syntax checks for names, label keys and values, ports and other strings, as apimachinery's
//! `pkg/util/validation/validation.go` has them.
//!
//! Each check returns the list of problems (empty when the input is valid), with apimachinery's
//! messages, so that the API server can put them into a `Status` cause unchanged. This is the one
//! home of these checks: the selector parser and the API server's validation both call them.

/// Longest label value (`LabelValueMaxLength`).
pub const LABEL_VALUE_MAX_LENGTH: usize = 63;
/// Longest name part of a qualified name (a label key without its prefix).
pub const QUALIFIED_NAME_MAX_LENGTH: usize = 63;
/// Longest RFC 1123 label (`DNS1123LabelMaxLength`).
pub const DNS1123_LABEL_MAX_LENGTH: usize = 63;
/// Longest RFC 1123 subdomain (`DNS1123SubdomainMaxLength`).
pub const DNS1123_SUBDOMAIN_MAX_LENGTH: usize = 253;
/// Longest RFC 1035 label (`DNS1035LabelMaxLength`).
pub const DNS1035_LABEL_MAX_LENGTH: usize = 63;
/// Longest IANA service (port) name.
const PORT_NAME_MAX_LENGTH: usize = 15;

const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_ERR: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_ERR: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_ERR: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_ERR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_ERR: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const WILDCARD_DNS1123_SUBDOMAIN_FMT: &str =
    "\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const WILDCARD_DNS1123_SUBDOMAIN_ERR: &str = "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character";
const C_IDENTIFIER_FMT: &str = "[A-Za-z_][A-Za-z0-9_]*";
const C_IDENTIFIER_ERR: &str = "a valid C identifier must start with alphabetic character or '_', followed by a string of alphanumeric characters or '_'";
const PERCENT_FMT: &str = "[0-9]+%";
const PERCENT_ERR: &str =
    "a valid percent string must be a numeric string followed by an ending '%'";
const HTTP_HEADER_NAME_FMT: &str = "[-A-Za-z0-9]+";
const HTTP_HEADER_NAME_ERR: &str =
    "a valid HTTP header must consist of alphanumeric characters or '-'";
const ENV_VAR_NAME_FMT: &str = "[-._a-zA-Z][-._a-zA-Z0-9]*";
const ENV_VAR_NAME_ERR: &str = "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and must not start with a digit";
const CONFIG_MAP_KEY_FMT: &str = "[-._a-zA-Z0-9]+";
const CONFIG_MAP_KEY_ERR: &str =
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.'";

/// `MaxLenError`: the message for a string longer than `length`.
pub fn max_len_error(length: usize) -> String {
    format!("must be no more than {length} characters")
}

/// `EmptyError`: the message for an empty string that must not be.
pub fn empty_error() -> &'static str {
    "must be non-empty"
}

/// `InclusiveRangeError`: the message for a number outside `lo..=hi`.
pub fn inclusive_range_error(lo: i64, hi: i64) -> String {
    format!("must be between {lo} and {hi}, inclusive")
}

/// `RegexError`: the message, a few examples and the regex the value failed.
///
/// Byte for byte as kube writes it, double space before `or` included:
/// `… (e.g. 'my-name',  or '123-abc', regex used for validation is '…')`.
pub fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{fmt}')");
    }
    let mut out = format!("{msg} (e.g. ");
    for (i, example) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push_str(&format!("'{example}', "));
    }
    out.push_str(&format!("regex used for validation is '{fmt}')"));
    out
}

/// Whether `s` is non-empty, every byte passes `inner`, and the first and last pass `ends`.
fn matches_ends(s: &str, ends: impl Fn(u8) -> bool, inner: impl Fn(u8) -> bool) -> bool {
    match (s.as_bytes().first(), s.as_bytes().last()) {
        (Some(&first), Some(&last)) => ends(first) && ends(last) && s.bytes().all(inner),
        _ => false,
    }
}

fn is_lower_alnum(c: u8) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`.
fn matches_qualified_name_part(s: &str) -> bool {
    matches_ends(
        s,
        |c| c.is_ascii_alphanumeric(),
        |c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'),
    )
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`.
fn matches_dns1123_label(s: &str) -> bool {
    matches_ends(s, is_lower_alnum, |c| is_lower_alnum(c) || c == b'-')
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*`.
fn matches_dns1123_subdomain(s: &str) -> bool {
    s.split('.').all(matches_dns1123_label)
}

/// `IsQualifiedName`: a label or annotation key, a finalizer name: an optional DNS subdomain
/// prefix and `/`, then a name of at most 63 characters.
pub fn is_qualified_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push(format!("prefix part {}", empty_error()));
            } else {
                errs.extend(
                    is_dns1123_subdomain(prefix)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            *name
        }
        _ => {
            errs.push(format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, &["MyName", "my.name", "123-abc"])
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push(format!("name part {}", empty_error()));
    } else if name.len() > QUALIFIED_NAME_MAX_LENGTH {
        errs.push(format!(
            "name part {}",
            max_len_error(QUALIFIED_NAME_MAX_LENGTH)
        ));
    }
    if !matches_qualified_name_part(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                QUALIFIED_NAME_ERR,
                QUALIFIED_NAME_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// `IsValidLabelValue`: empty, or at most 63 characters of `[-A-Za-z0-9_.]` with alphanumeric ends.
pub fn is_valid_label_value(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > LABEL_VALUE_MAX_LENGTH {
        errs.push(max_len_error(LABEL_VALUE_MAX_LENGTH));
    }
    if !value.is_empty() && !matches_qualified_name_part(value) {
        errs.push(regex_error(
            LABEL_VALUE_ERR,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// `IsDNS1123Label`: an RFC 1123 label, as namespace names and port names of services are.
pub fn is_dns1123_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_LABEL_MAX_LENGTH));
    }
    if !matches_dns1123_label(value) {
        if matches_dns1123_subdomain(value) {
            // A valid subdomain but not a label: the length was checked, so it must be the dots.
            errs.push("must not contain dots".to_string());
        } else {
            errs.push(regex_error(
                DNS1123_LABEL_ERR,
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errs
}

/// `IsDNS1123Subdomain`: an RFC 1123 subdomain, as most object names are.
pub fn is_dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    if !matches_dns1123_subdomain(value) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_ERR,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// `IsDNS1035Label`: an RFC 1035 label (starts with a letter), as service names are.
pub fn is_dns1035_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1035_LABEL_MAX_LENGTH {
        errs.push(max_len_error(DNS1035_LABEL_MAX_LENGTH));
    }
    let starts_with_letter = value.as_bytes().first().is_some_and(u8::is_ascii_lowercase);
    if !(starts_with_letter && matches_dns1123_label(value)) {
        errs.push(regex_error(
            DNS1035_LABEL_ERR,
            DNS1035_LABEL_FMT,
            &["my-name", "abc-123"],
        ));
    }
    errs
}

/// `IsWildcardDNS1123Subdomain`: `*.` followed by an RFC 1123 subdomain (RFC 1034 section 4.3.3).
pub fn is_wildcard_dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    if !value
        .strip_prefix("*.")
        .is_some_and(matches_dns1123_subdomain)
    {
        errs.push(regex_error(
            WILDCARD_DNS1123_SUBDOMAIN_ERR,
            WILDCARD_DNS1123_SUBDOMAIN_FMT,
            &["*.example.com"],
        ));
    }
    errs
}

/// `IsCIdentifier`: an identifier in C (the format only, not the length).
pub fn is_c_identifier(value: &str) -> Vec<String> {
    let first_ok = value
        .as_bytes()
        .first()
        .is_some_and(|&c| c.is_ascii_alphabetic() || c == b'_');
    if first_ok
        && value
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'_')
    {
        return Vec::new();
    }
    vec![regex_error(
        C_IDENTIFIER_ERR,
        C_IDENTIFIER_FMT,
        &["my_name", "MY_NAME", "MyName"],
    )]
}

/// `IsValidPortNum`: a non-zero port number.
pub fn is_valid_port_num(port: i64) -> Vec<String> {
    is_in_range(port, 1, 65535)
}

/// `IsInRange`: `value` within `min..=max`.
pub fn is_in_range(value: i64, min: i64, max: i64) -> Vec<String> {
    if (min..=max).contains(&value) {
        Vec::new()
    } else {
        vec![inclusive_range_error(min, max)]
    }
}

/// `IsValidPortName`: an IANA service name: at most 15 characters of `[-a-z0-9]`, at least one
/// letter, no leading, trailing or doubled hyphen. Only lower case, though RFC 6335 is not.
pub fn is_valid_port_name(port: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if port.len() > PORT_NAME_MAX_LENGTH {
        errs.push(max_len_error(PORT_NAME_MAX_LENGTH));
    }
    if port.is_empty() || !port.bytes().all(|c| is_lower_alnum(c) || c == b'-') {
        errs.push(
            "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".to_string(),
        );
    }
    if !port.bytes().any(|c| c.is_ascii_lowercase()) {
        errs.push("must contain at least one letter (a-z)".to_string());
    }
    if port.contains("--") {
        errs.push("must not contain consecutive hyphens".to_string());
    }
    if port.starts_with('-') || port.ends_with('-') {
        errs.push("must not begin or end with a hyphen".to_string());
    }
    errs
}

/// `IsValidPercent`: digits followed by `%`.
pub fn is_valid_percent(percent: &str) -> Vec<String> {
    let valid = percent
        .strip_suffix('%')
        .is_some_and(|digits| !digits.is_empty() && digits.bytes().all(|c| c.is_ascii_digit()));
    if valid {
        Vec::new()
    } else {
        vec![regex_error(PERCENT_ERR, PERCENT_FMT, &["1%", "93%"])]
    }
}

/// `IsHTTPHeaderName`: Go's HTTP library's (stricter than RFC 7230) header field name.
pub fn is_http_header_name(value: &str) -> Vec<String> {
    if !value.is_empty()
        && value
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'-')
    {
        Vec::new()
    } else {
        vec![regex_error(
            HTTP_HEADER_NAME_ERR,
            HTTP_HEADER_NAME_FMT,
            &["X-Header-Name"],
        )]
    }
}

/// `IsEnvVarName`: an environment variable name that does not start with a digit and is not
/// `.`, `..` or `..`-prefixed.
pub fn is_env_var_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let env_char = |c: u8| c.is_ascii_alphabetic() || matches!(c, b'-' | b'.' | b'_');
    let valid = value.as_bytes().first().is_some_and(|&c| env_char(c))
        && value.bytes().all(|c| env_char(c) || c.is_ascii_digit());
    if !valid {
        errs.push(regex_error(
            ENV_VAR_NAME_ERR,
            ENV_VAR_NAME_FMT,
            &["my.env-name", "MY_ENV.NAME", "MyEnvName1"],
        ));
    }
    errs.extend(chdir_prefix_errors(value));
    errs
}

/// `IsConfigMapKey`: a key of a ConfigMap or Secret, usable as a file name.
pub fn is_config_map_key(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    if value.is_empty()
        || !value
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_'))
    {
        errs.push(regex_error(
            CONFIG_MAP_KEY_ERR,
            CONFIG_MAP_KEY_FMT,
            &["key.name", "KEY_NAME", "key-name"],
        ));
    }
    errs.extend(chdir_prefix_errors(value));
    errs
}

/// `maskTrailingDash`: a `generateName` may end in `-`. Bug-compatible with kube, which replaces
/// the last two characters, not only the dash (`name[:len(name)-2] + "a"`).
fn mask_trailing_dash(name: &str, prefix: bool) -> String {
    if prefix && name.len() > 1 && name.ends_with('-') {
        match name.get(..name.len() - 2) {
            Some(head) => format!("{head}a"),
            None => name.to_string(),
        }
    } else {
        name.to_string()
    }
}

/// `NameIsDNSSubdomain` (a `ValidateNameFunc`): the name validator of most kinds; with `prefix`,
/// `name` is a `generateName` and may end in `-`.
pub fn name_is_dns_subdomain(name: &str, prefix: bool) -> Vec<String> {
    is_dns1123_subdomain(&mask_trailing_dash(name, prefix))
}

/// `NameIsDNSLabel` (a `ValidateNameFunc`): the name validator of namespaces.
pub fn name_is_dns_label(name: &str, prefix: bool) -> Vec<String> {
    is_dns1123_label(&mask_trailing_dash(name, prefix))
}

/// `NameIsDNS1035Label` (a `ValidateNameFunc`): the name validator of services.
pub fn name_is_dns1035_label(name: &str, prefix: bool) -> Vec<String> {
    is_dns1035_label(&mask_trailing_dash(name, prefix))
}

/// `hasChDirPrefix`: names that would move out of the directory they are written to.
fn chdir_prefix_errors(value: &str) -> Option<String> {
    match value {
        "." => Some("must not be '.'".to_string()),
        ".." => Some("must not be '..'".to_string()),
        v if v.starts_with("..") => Some("must not start with '..'".to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_valid(check: fn(&str) -> Vec<String>, values: &[&str]) {
        for v in values {
            assert!(check(v).is_empty(), "{v:?} should be valid: {:?}", check(v));
        }
    }

    fn assert_invalid(check: fn(&str) -> Vec<String>, values: &[&str]) {
        for v in values {
            assert!(!check(v).is_empty(), "{v:?} should be invalid");
        }
    }

    #[test]
    fn dns1123_labels_are_lower_case_alphanumerics_and_inner_dashes() {
        let long_ok = "a".repeat(63);
        assert_valid(
            is_dns1123_label,
            &[
                "a",
                "ab",
                "abc",
                "a1",
                "a-1",
                "a--1--2--b",
                "0",
                "01",
                "012",
                "1a",
                "1-a",
                "1--a--b--2",
                "kube-system",
                &long_ok,
            ],
        );
        let too_long = "a".repeat(64);
        assert_invalid(
            is_dns1123_label,
            &[
                "", "A", "ABC", "aBc", "A1", "A-1", "1-A", "Kube", "-", "a-", "-a", "1-", "-1",
                "_", "a_", "_a", "a_b", "1_", "_1", "1_2", ".", "a.", ".a", "a.b", "1.", ".1",
                "1.2", " ", "a ", " a", "a b", "1 ", " 1", "1 2", &too_long,
            ],
        );
    }

    #[test]
    fn dns1123_label_messages_are_kubes() {
        assert_eq!(
            is_dns1123_label("A"),
            ["a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"]
        );
        assert_eq!(is_dns1123_label("a.b"), ["must not contain dots"]);
        assert_eq!(
            is_dns1123_label(&"a".repeat(64)),
            ["must be no more than 63 characters"]
        );
    }

    #[test]
    fn dns1123_subdomains_are_dot_separated_labels() {
        let long_ok = "a".repeat(253);
        assert_valid(
            is_dns1123_subdomain,
            &[
                "a",
                "ab",
                "abc",
                "a1",
                "a-1",
                "a--1--2--b",
                "0",
                "01",
                "012",
                "1a",
                "1-a",
                "1--a--b--2",
                "a.a",
                "ab.a",
                "abc.a",
                "a1.a",
                "a-1.a",
                "a--1--2--b.a",
                "a.1",
                "ab.1",
                "abc.1",
                "a1.1",
                "a-1.1",
                "a--1--2--b.1",
                "0.a",
                "01.a",
                "012.a",
                "1a.a",
                "1-a.a",
                "0.1",
                "01.1",
                "012.1",
                "1a.1",
                "1-a.1",
                "1--a--b--2.1",
                "a.b.c.d.e",
                "aa.bb.cc.dd.ee",
                "1.2.3.4.5",
                "11.22.33.44.55",
                "a.b-c.d",
                &long_ok,
            ],
        );
        let too_long = "a".repeat(254);
        assert_invalid(
            is_dns1123_subdomain,
            &[
                "",
                "A",
                "ABC",
                "aBc",
                "A1",
                "A-1",
                "1-A",
                "-",
                "a-",
                "-a",
                "1-",
                "-1",
                "_",
                "a_",
                "_a",
                "a_b",
                "1_",
                "_1",
                "1_2",
                ".",
                "a.",
                ".a",
                "a..b",
                "1.",
                ".1",
                "1..2",
                " ",
                "a ",
                " a",
                "a b",
                "1 ",
                " 1",
                "1 2",
                "A.a",
                "aB.a",
                "ab.A",
                "A1.a",
                "a1.A",
                "A.1",
                "aB.1",
                "A1.1",
                "1A.1",
                "0.A",
                "01.A",
                "012.A",
                "1A.a",
                "1a.A",
                "A.B.C.D.E",
                "AA.BB.CC.DD.EE",
                "a.B.c.d.e",
                "aa.bB.cc.dd.ee",
                "a@b",
                "a,b",
                "a;b",
                "a:b",
                "a%b",
                "a?b",
                "a$b",
                &too_long,
            ],
        );
        assert_eq!(
            is_dns1123_subdomain("Web"),
            ["a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"]
        );
    }

    #[test]
    fn dns1035_labels_start_with_a_letter() {
        let long_ok = "a".repeat(63);
        assert_valid(
            is_dns1035_label,
            &[
                "a",
                "ab",
                "abc",
                "a1",
                "a-1",
                "a--1--2--b",
                "abc-1",
                &long_ok,
            ],
        );
        let too_long = "a".repeat(64);
        assert_invalid(
            is_dns1035_label,
            &[
                "0",
                "01",
                "012",
                "1a",
                "1abc",
                "1-a",
                "1--a--b--2",
                "",
                "A",
                "ABC",
                "aBc",
                "A1",
                "A-1",
                "1-A",
                "-",
                "a-",
                "-a",
                "1-",
                "-1",
                "_",
                "a_",
                "_a",
                "a_b",
                "1_",
                "_1",
                "1_2",
                ".",
                "a.",
                ".a",
                "a.b",
                "1.",
                ".1",
                "1.2",
                " ",
                "a ",
                " a",
                "a b",
                "1 ",
                " 1",
                "1 2",
                &too_long,
            ],
        );
    }

    #[test]
    fn port_numbers_are_between_1_and_65535() {
        for good in [1, 2, 1000, 16384, 32768, 65535] {
            assert!(is_valid_port_num(good).is_empty(), "{good}");
        }
        for bad in [0, -1, 65536, 100_000] {
            assert_eq!(
                is_valid_port_num(bad),
                ["must be between 1 and 65535, inclusive"],
                "{bad}"
            );
        }
    }

    #[test]
    fn ranges_are_inclusive() {
        for (value, min, max) in [(1, 0, 10), (5, 5, 20), (25, 10, 25)] {
            assert!(is_in_range(value, min, max).is_empty());
        }
        for (value, min, max) in [(1, 2, 10), (5, -4, 2), (25, 100, 120)] {
            assert!(!is_in_range(value, min, max).is_empty());
        }
    }

    #[test]
    fn port_names_are_iana_service_names() {
        assert_valid(
            is_valid_port_name,
            &[
                "telnet",
                "re-mail-ck",
                "pop3",
                "a",
                "a-1",
                "1-a",
                "a-1-b-2-c",
                "1-a-2-b-3",
            ],
        );
        let sixteen = "a".repeat(16);
        assert_invalid(
            is_valid_port_name,
            &[
                "longerthan15characters",
                "",
                &sixteen,
                "12345",
                "1-2-3-4",
                "-begin",
                "end-",
                "two--hyphens",
                "whois++",
            ],
        );
        assert_eq!(
            is_valid_port_name("12345"),
            ["must contain at least one letter (a-z)"]
        );
    }

    #[test]
    fn qualified_names_accept_an_optional_dns_prefix() {
        let long_name = "a".repeat(63);
        let long_prefix = format!("{}/{}", "a".repeat(253), "b".repeat(63));
        let long_prefix_b = format!("{}/b", "a".repeat(253));
        assert_valid(
            is_qualified_name,
            &[
                "simple",
                "now-with-dashes",
                "1-starts-with-num",
                "1234",
                "simple/simple",
                "now-with-dashes/simple",
                "now-with-dashes/now-with-dashes",
                "now.with.dots/simple",
                "now-with.dashes-and.dots/simple",
                "now.with.dots/now-with-dashes",
                "now-with.dashes-and.dots/now_with_underscores",
                "1-num.2-num/3-num",
                "1234/5678",
                "1.2.3.4/5678",
                "Uppercase_Is_OK_123",
                "example.com/Uppercase_Is_OK_123",
                "example.com/Upper-Case",
                "requests.storage-foo",
                "app.kubernetes.io/name",
                "MyName",
                &long_name,
                &long_prefix,
                &long_prefix_b,
            ],
        );
        let too_long = "a".repeat(64);
        let too_long_prefix = format!("{}/abc", "a".repeat(254));
        let too_long_prefix_b = format!("{}/b", "a".repeat(254));
        assert_invalid(
            is_qualified_name,
            &[
                "",
                "-a",
                "nospecialchars%^=@",
                "cantendwithadash-",
                "-cantstartwithadash-",
                "only/one/slash",
                "a/b/c",
                "Example.com/abc",
                "Upper/lower",
                "example_com/abc",
                "example.com/",
                "/simple",
                &too_long,
                &too_long_prefix,
                &too_long_prefix_b,
            ],
        );
        assert_eq!(is_qualified_name("/a"), ["prefix part must be non-empty"]);
    }

    #[test]
    fn label_values_may_be_empty_but_not_longer_than_63() {
        let long_ok = "a".repeat(63);
        assert_valid(
            is_valid_label_value,
            &[
                "",
                "simple",
                "now-with-dashes",
                "1-starts-with-num",
                "end-with-num-1",
                "1234",
                "a_b.c",
                &long_ok,
            ],
        );
        let too_long = "a".repeat(64);
        assert_invalid(
            is_valid_label_value,
            &[
                "a b",
                "nospecialchars%^=@",
                "Tama-nui-te-rā.is.Māori.sun",
                "\\backslashes\\are\\bad",
                "-starts-with-dash",
                "ends-with-dash-",
                ".starts.with.dot",
                "ends.with.dot.",
                &too_long,
            ],
        );
    }

    #[test]
    fn http_header_names_are_alphanumerics_and_dashes() {
        assert_valid(
            is_http_header_name,
            &[
                "Accept-Encoding",
                "Host",
                "If-Modified-Since",
                "X-Forwarded-For",
                "a",
                "ab",
                "abc",
                "a1",
                "-a",
                "a-",
                "a-b",
                "a-1",
                "a--1--2--b",
                "--abc-123",
                "A",
                "AB",
                "AbC",
                "A1",
                "-A",
                "A-",
                "A-B",
                "A-1",
                "A--1--2--B",
                "--123-ABC",
            ],
        );
        assert_invalid(
            is_http_header_name,
            &[
                "Host:",
                "X-Forwarded-For:",
                "X-@Home",
                "",
                "_",
                "a_",
                "_a",
                "1_",
                "1_2",
                ".",
                "a.",
                ".a",
                "a.b",
                "1.",
                ".1",
                "1.2",
                " ",
                "a ",
                " a",
                "a b",
                "1 ",
                " 1",
                "1 2",
                "#a#",
                "^",
                ",",
                ";",
                "=",
                "<",
                "?",
                "@",
                "{",
            ],
        );
    }

    #[test]
    fn percents_are_digits_and_a_percent_sign() {
        assert_valid(
            is_valid_percent,
            &["0%", "00000%", "1%", "01%", "99%", "100%", "101%"],
        );
        assert_invalid(
            is_valid_percent,
            &[
                "",
                "0",
                "100",
                "0.0%",
                "99.9%",
                "hundred",
                " 1%",
                "1% ",
                "-0%",
                "-1%",
                "+1%",
                "20Percent",
            ],
        );
        assert_eq!(
            is_valid_percent("%"),
            ["a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"]
        );
    }

    #[test]
    fn config_map_keys_are_file_names() {
        assert_valid(
            is_config_map_key,
            &[
                "a",
                "good",
                "good-good",
                "still.good",
                "this.is.also.good",
                ".so.is.this",
                "THIS_IS_GOOD",
                "so_is_this_17",
            ],
        );
        assert_invalid(
            is_config_map_key,
            &[".", "..", "..bad", "b*d", "bad!&bad", ""],
        );
        assert_eq!(is_config_map_key(".."), ["must not be '..'"]);
        assert_eq!(is_config_map_key("..bad"), ["must not start with '..'"]);
    }

    #[test]
    fn wildcard_subdomains_have_exactly_one_leading_star() {
        assert_valid(
            is_wildcard_dns1123_subdomain,
            &["*.example.com", "*.bar.com", "*.foo.bar.com"],
        );
        assert_invalid(
            is_wildcard_dns1123_subdomain,
            &["*.*.bar.com", "*.foo.*.com", "*bar.com", "f*.bar.com", "*"],
        );
    }

    #[test]
    fn c_identifiers_do_not_start_with_a_digit() {
        assert_valid(
            is_c_identifier,
            &[
                "a", "ab", "abc", "a1", "_a", "a_", "a_b", "a_1", "A", "AB", "AbC", "A1", "_A",
                "A_", "A_B", "A_1", "_",
            ],
        );
        assert_invalid(
            is_c_identifier,
            &[
                "", "1", "123", "1a", "-", "a-", "-a", "a-b", "a b", "1 ", " 1", "1 2", "#a#",
            ],
        );
    }

    #[test]
    fn generate_name_prefixes_may_end_in_a_dash() {
        assert!(name_is_dns_subdomain("web-", true).is_empty());
        assert!(!name_is_dns_subdomain("web-", false).is_empty());
        assert!(name_is_dns_label("web-", true).is_empty());
        assert!(name_is_dns1035_label("web-", true).is_empty());
        // kube masks the last two characters, so one more than the limit still passes.
        assert!(name_is_dns_subdomain(&format!("{}-", "a".repeat(253)), true).is_empty());
        assert!(!name_is_dns_subdomain(&format!("{}-", "a".repeat(254)), true).is_empty());
        assert!(!name_is_dns_subdomain("-", true).is_empty());
    }

    #[test]
    fn env_var_names_do_not_start_with_a_digit_or_two_dots() {
        assert_valid(
            is_env_var_name,
            &[
                "A",
                "ABC",
                "AbC",
                "A1",
                "_A",
                "A_",
                "A_B",
                "A-B",
                "a.b",
                "-a",
                ".a",
                "a.",
                "my.env-name",
                "MY_ENV.NAME",
                "MyEnvName1",
            ],
        );
        assert_invalid(
            is_env_var_name,
            &["", "1", "1A", "A B", "A=B", ".", "..", "..a"],
        );
    }
}
