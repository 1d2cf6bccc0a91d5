//! MutatingWebhookConfigurations and ValidatingWebhookConfigurations: the v1 defaults of each
//! webhook, kube's validation of webhooks, rules, client configs and match conditions, and the
//! generation bookkeeping of their registries.
//!
//! Mirrors `pkg/apis/admissionregistration/v1/defaults.go`,
//! `pkg/apis/admissionregistration/validation/validation.go`
//! (`ValidateValidatingWebhookConfiguration`, `ValidateMutatingWebhookConfiguration` and their
//! `…Update` variants), apiserver's `pkg/util/webhook/validation.go` (`ValidateWebhookURL`,
//! `ValidateWebhookService`) and `pkg/registry/admissionregistration/*webhookconfiguration/strategy.go`.
//!
//! v1 defaults neither `sideEffects` nor `admissionReviewVersions` (v1beta1 did): both are
//! required. On update kube keeps accepting what an old object already had (side effects other
//! than `None`/`NoneOnDryRun`, no recognised review version, duplicate webhook names, label
//! selector values that are not label values) and skips the match conditions when none changed.
//!
//! Match conditions are compiled with rkcm's CEL front end (`rkcm-cel`) in the environment kube
//! gives them (`object`, `oldObject`, `namespaceObject`, `request`, `authorizer`); its errors
//! are cel-go's for what the front end knows, see `docs/limits.md` for what it does not.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use rkcm_apimachinery::catalog::ResourceInfo;
use rkcm_cel::ast::ExprKind;
use rkcm_cel::{Env, Type};
use rkcm_labels::validation as names;
use serde_json::{json, Map, Value};

use super::generation::bump_if_changed;
use super::generic::GenericStrategy;
use super::hooked::{HookedStrategy, Hooks};
use super::object::{get, semantically_equal, set};
use super::selector::{validate_label_selector, validate_label_selector_with};
use super::{FieldError, FieldErrorKind};

const FAILURE_POLICIES: &[&str] = &["Fail", "Ignore"];
const MATCH_POLICIES: &[&str] = &["Equivalent", "Exact"];
/// `supportedSideEffectClasses`, sorted as `sets.String.List` sorts them.
const SIDE_EFFECT_CLASSES: &[&str] = &["None", "NoneOnDryRun", "Some", "Unknown"];
/// `noSideEffectClasses`: all that new webhooks may declare.
const NO_SIDE_EFFECT_CLASSES: &[&str] = &["None", "NoneOnDryRun"];
const OPERATIONS: &[&str] = &["*", "CONNECT", "CREATE", "DELETE", "UPDATE"];
const REINVOCATION_POLICIES: &[&str] = &["IfNeeded", "Never"];
const SCOPES: &[&str] = &["*", "Cluster", "Namespaced"];
/// `AcceptedAdmissionReviewVersions`.
const ACCEPTED_REVIEW_VERSIONS: &[&str] = &["v1", "v1beta1"];
/// Most match conditions one webhook may have.
const MAX_MATCH_CONDITIONS: usize = 64;

/// Which of the two kinds a configuration is: mutating webhooks have a `reinvocationPolicy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flavor {
    Validating,
    Mutating,
}

/// Sets `map[key]` when it is absent or `null`: the defaulted fields are pointers in Go, so an
/// empty string is kept (and refused by validation).
fn default_if_nil(map: &mut Map<String, Value>, key: &str, value: Value) {
    if map.get(key).is_none_or(Value::is_null) {
        map.insert(key.to_string(), value);
    }
}

/// `SetDefaults_ValidatingWebhook` / `SetDefaults_MutatingWebhook`, with `SetDefaults_Rule`
/// and `SetDefaults_ServiceReference` of each webhook.
fn default_webhooks(obj: &mut Value, flavor: Flavor) {
    let Some(hooks) = obj.get_mut("webhooks").and_then(Value::as_array_mut) else {
        return;
    };
    for hook in hooks.iter_mut().filter_map(Value::as_object_mut) {
        default_if_nil(hook, "failurePolicy", json!("Fail"));
        default_if_nil(hook, "matchPolicy", json!("Equivalent"));
        default_if_nil(hook, "namespaceSelector", json!({}));
        default_if_nil(hook, "objectSelector", json!({}));
        default_if_nil(hook, "timeoutSeconds", json!(10));
        if flavor == Flavor::Mutating {
            default_if_nil(hook, "reinvocationPolicy", json!("Never"));
        }
        if let Some(rules) = hook.get_mut("rules").and_then(Value::as_array_mut) {
            for rule in rules.iter_mut().filter_map(Value::as_object_mut) {
                default_if_nil(rule, "scope", json!("*"));
            }
        }
        if let Some(service) = hook
            .get_mut("clientConfig")
            .and_then(|c| c.get_mut("service"))
            .and_then(Value::as_object_mut)
        {
            default_if_nil(service, "port", json!(443));
        }
    }
}

fn default_validating(obj: &mut Value) {
    default_webhooks(obj, Flavor::Validating);
}

fn default_mutating(obj: &mut Value) {
    default_webhooks(obj, Flavor::Mutating);
}

/// `PrepareForCreate`: the generation starts at 1.
fn start_generation(obj: &mut Value) {
    set(obj, &["metadata", "generation"], Some(Value::from(1)));
}

/// `PrepareForUpdate`: any change of the webhooks bumps the generation.
fn bump_generation(new: &mut Value, old: &Value) {
    bump_if_changed(new, old, &["webhooks"]);
}

/// kube's `validationOptions`, as far as they apply to webhook configurations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Options {
    ignore_match_conditions: bool,
    require_no_side_effects: bool,
    require_recognized_review_version: bool,
    require_unique_webhook_names: bool,
    allow_invalid_label_value_in_selector: bool,
}

impl Options {
    /// The options of `Validate…WebhookConfiguration` (create).
    const CREATE: Options = Options {
        ignore_match_conditions: false,
        require_no_side_effects: true,
        require_recognized_review_version: true,
        require_unique_webhook_names: true,
        allow_invalid_label_value_in_selector: false,
    };

    /// The options of `Validate…WebhookConfigurationUpdate`: what the old object already
    /// got away with stays allowed.
    fn update(new: &Value, old: &Value) -> Options {
        let list = |o: &Value| -> Vec<Value> {
            get(o, &["webhooks"])
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        };
        let (new_hooks, old_hooks) = (list(new), list(old));
        let ignore_match_conditions = new_hooks.len() == old_hooks.len()
            && new_hooks.iter().zip(&old_hooks).all(|(n, o)| {
                semantically_equal(n.get("matchConditions"), o.get("matchConditions"))
            });
        let require_no_side_effects = old_hooks.iter().all(|h| {
            h.get("sideEffects")
                .and_then(Value::as_str)
                .is_some_and(|s| NO_SIDE_EFFECT_CLASSES.contains(&s))
        });
        let require_recognized_review_version = old_hooks.iter().all(|h| {
            let versions = strings(h.get("admissionReviewVersions"));
            versions.is_empty()
                || versions
                    .iter()
                    .any(|v| ACCEPTED_REVIEW_VERSIONS.contains(v))
        });
        let mut seen = BTreeSet::new();
        let require_unique_webhook_names = old_hooks.iter().all(|h| seen.insert(text(h, "name")));
        let allow_invalid_label_value_in_selector = old_hooks.iter().any(|h| {
            ["namespaceSelector", "objectSelector"].iter().any(|key| {
                h.get(*key).is_some_and(|sel| {
                    !sel.is_null() && !validate_label_selector(Some(sel), "").is_empty()
                })
            })
        });
        Options {
            ignore_match_conditions,
            require_no_side_effects,
            require_recognized_review_version,
            require_unique_webhook_names,
            allow_invalid_label_value_in_selector,
        }
    }
}

/// The value of `key` unless absent or `null` (a nil pointer in Go).
fn present<'a>(map: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    map.get(key).filter(|v| !v.is_null())
}

/// The string at `key` of a JSON object; `""` when unset or not a string.
fn text<'a>(obj: &'a Value, key: &str) -> &'a str {
    obj.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// The string at `key` of a map; `""` when unset or not a string.
fn map_text<'a>(map: &'a Map<String, Value>, key: &str) -> &'a str {
    map.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// The strings of a `[]string` field; items of another JSON type read as `""` (the decode
/// check reports them).
fn strings(v: Option<&Value>) -> Vec<&str> {
    v.and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .map(|i| i.as_str().unwrap_or_default())
                .collect()
        })
        .unwrap_or_default()
}

/// A string slice as Go's `%#v` prints it in kube's messages: `[]string{"a", "b"}`.
fn go_slice(type_name: &str, items: &[&str]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| format!("{s:?}")).collect();
    format!("[]{type_name}{{{}}}", quoted.join(", "))
}

/// `field.Invalid` whose bad value is already rendered.
fn invalid_rendered(field: &str, rendered: &str, detail: &str) -> FieldError {
    FieldError {
        field: field.to_string(),
        kind: FieldErrorKind::Invalid,
        message: format!("Invalid value: {rendered}: {detail}"),
    }
}

fn invalid_str(field: &str, value: &str, detail: &str) -> FieldError {
    FieldError::invalid(field, &Value::from(value), detail)
}

/// A `NotSupported` error unless the value of `key`, when set, is one of `supported`.
fn check_supported(
    map: &Map<String, Value>,
    key: &str,
    supported: &[&str],
    path: &str,
) -> Option<FieldError> {
    let value = present(map, key)?;
    if value.as_str().is_some_and(|s| supported.contains(&s)) {
        return None;
    }
    Some(FieldError::not_supported(
        format!("{path}.{key}"),
        value,
        supported,
    ))
}

/// `utilvalidation.IsFullyQualifiedName`: webhook names are domains of three segments or more.
fn is_fully_qualified_name(path: &str, name: &str) -> Option<FieldError> {
    if name.is_empty() {
        return Some(FieldError::required(path, ""));
    }
    let errs = names::is_dns1123_subdomain(name);
    if !errs.is_empty() {
        return Some(invalid_str(path, name, &errs.join(",")));
    }
    if name.split('.').count() < 3 {
        return Some(invalid_str(
            path,
            name,
            "should be a domain with at least three segments separated by dots",
        ));
    }
    None
}

/// `validateResources`: resources and `resource/subresource` pairs with kube's wildcard rules.
fn validate_resources(resources: &[&str], path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if resources.is_empty() {
        errs.push(FieldError::required(path, ""));
    }
    // x/*
    let mut with_wildcard_subresource: BTreeSet<&str> = BTreeSet::new();
    // */x
    let mut with_wildcard_resource: BTreeSet<&str> = BTreeSet::new();
    let mut has_double_wildcard = false;
    let mut has_single_wildcard = false;
    let mut has_resource_without_subresource = false;
    for (i, res_sub) in resources.iter().copied().enumerate() {
        let item = format!("{path}[{i}]");
        if res_sub.is_empty() {
            errs.push(FieldError::required(item, ""));
            continue;
        }
        if res_sub == "*/*" {
            has_double_wildcard = true;
        }
        if res_sub == "*" {
            has_single_wildcard = true;
        }
        let Some((res, sub)) = res_sub.split_once('/') else {
            // As kube: the last resource without a subresource decides.
            has_resource_without_subresource = res_sub != "*";
            continue;
        };
        if with_wildcard_subresource.contains(res) {
            errs.push(invalid_str(
                &item,
                res_sub,
                &format!("if '{res}/*' is present, must not specify {res_sub}"),
            ));
        }
        if with_wildcard_resource.contains(sub) {
            errs.push(invalid_str(
                &item,
                res_sub,
                &format!("if '*/{sub}' is present, must not specify {res_sub}"),
            ));
        }
        if sub == "*" {
            with_wildcard_subresource.insert(res);
        }
        if res == "*" {
            with_wildcard_resource.insert(sub);
        }
    }
    if resources.len() > 1 && has_double_wildcard {
        errs.push(invalid_rendered(
            path,
            &go_slice("string", resources),
            "if '*/*' is present, must not specify other resources",
        ));
    }
    if has_single_wildcard && has_resource_without_subresource {
        errs.push(invalid_rendered(
            path,
            &go_slice("string", resources),
            "if '*' is present, must not specify other resources without subresources",
        ));
    }
    errs
}

/// `validateRule` (subresources allowed).
fn validate_rule(rule: &Map<String, Value>, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let groups = strings(rule.get("apiGroups"));
    let groups_path = format!("{path}.apiGroups");
    if groups.is_empty() {
        errs.push(FieldError::required(groups_path.as_str(), ""));
    }
    if groups.len() > 1 && groups.contains(&"*") {
        errs.push(invalid_rendered(
            &groups_path,
            &go_slice("string", &groups),
            "if '*' is present, must not specify other API groups",
        ));
    }
    // An empty group is the legacy core group.
    let versions = strings(rule.get("apiVersions"));
    let versions_path = format!("{path}.apiVersions");
    if versions.is_empty() {
        errs.push(FieldError::required(versions_path.as_str(), ""));
    }
    if versions.len() > 1 && versions.contains(&"*") {
        errs.push(invalid_rendered(
            &versions_path,
            &go_slice("string", &versions),
            "if '*' is present, must not specify other API versions",
        ));
    }
    for (i, v) in versions.iter().enumerate() {
        if v.is_empty() {
            errs.push(FieldError::required(format!("{versions_path}[{i}]"), ""));
        }
    }
    errs.extend(validate_resources(
        &strings(rule.get("resources")),
        &format!("{path}.resources"),
    ));
    errs.extend(check_supported(rule, "scope", SCOPES, path));
    errs
}

/// `validateRuleWithOperations`.
fn validate_rule_with_operations(rule: &Map<String, Value>, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let operations = strings(rule.get("operations"));
    let ops_path = format!("{path}.operations");
    if operations.is_empty() {
        errs.push(FieldError::required(ops_path.as_str(), ""));
    }
    if operations.len() > 1 && operations.contains(&"*") {
        errs.push(invalid_rendered(
            &ops_path,
            &go_slice("admissionregistration.OperationType", &operations),
            "if '*' is present, must not specify other operations",
        ));
    }
    for (i, op) in operations.iter().enumerate() {
        if !OPERATIONS.contains(op) {
            errs.push(FieldError::not_supported(
                format!("{ops_path}[{i}]"),
                &Value::from(*op),
                OPERATIONS,
            ));
        }
    }
    errs.extend(validate_rule(rule, path));
    errs
}

/// `validateAdmissionReviewVersions`.
fn validate_admission_review_versions(
    versions: Option<&Value>,
    require_recognized: bool,
    path: &str,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let versions = strings(versions);
    if versions.is_empty() {
        errs.push(FieldError::required(
            path,
            &format!(
                "must specify one of {}",
                ACCEPTED_REVIEW_VERSIONS.join(", ")
            ),
        ));
        return errs;
    }
    let mut seen = BTreeSet::new();
    let mut has_accepted = false;
    for (i, v) in versions.iter().copied().enumerate() {
        let item = format!("{path}[{i}]");
        if !seen.insert(v) {
            errs.push(invalid_str(&item, v, "duplicate version"));
            continue;
        }
        for msg in names::is_dns1035_label(v) {
            errs.push(invalid_str(&item, v, &msg));
        }
        has_accepted |= ACCEPTED_REVIEW_VERSIONS.contains(&v);
    }
    if require_recognized && !has_accepted {
        errs.push(invalid_rendered(
            path,
            &go_slice("string", &versions),
            &format!(
                "must include at least one of {}",
                ACCEPTED_REVIEW_VERSIONS.join(", ")
            ),
        ));
    }
    errs
}

/// What Go's `url.Parse` finds in a URL, as far as `ValidateWebhookURL` looks.
#[derive(Debug, Default, PartialEq, Eq)]
struct UrlParts<'a> {
    scheme: String,
    user: Option<&'a str>,
    host: &'a str,
    query: &'a str,
    fragment: &'a str,
}

/// Go's `unescape` check: every `%` starts an escape of two hex digits.
fn check_escapes(s: &str) -> Result<(), String> {
    let bytes = s.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        if *b != b'%' {
            continue;
        }
        let escape_ok = bytes.len() > i + 2
            && bytes[i + 1].is_ascii_hexdigit()
            && bytes[i + 2].is_ascii_hexdigit();
        if !escape_ok {
            let bad: String = s[i..].chars().take(3).collect();
            return Err(format!("invalid URL escape {bad:?}"));
        }
    }
    Ok(())
}

/// Go's `validOptionalPort`: empty, or `:` and digits.
fn valid_optional_port(port: &str) -> bool {
    port.is_empty()
        || port
            .strip_prefix(':')
            .is_some_and(|digits| digits.bytes().all(|b| b.is_ascii_digit()))
}

/// Go's `parseHost`, reduced to the errors it reports about brackets and ports.
fn check_host(host: &str) -> Result<(), String> {
    if let Some(inner) = host.strip_prefix('[') {
        let Some(end) = inner.rfind(']') else {
            return Err("missing ']' in host".to_string());
        };
        let port = &inner[end + 1..];
        if !valid_optional_port(port) {
            return Err(format!("invalid port {port:?} after host"));
        }
        return Ok(());
    }
    if let Some(i) = host.rfind(':') {
        let port = &host[i..];
        if !valid_optional_port(port) {
            return Err(format!("invalid port {port:?} after host"));
        }
    }
    check_escapes(host)?;
    // `unescape` in host mode: ASCII that would need escaping is refused.
    let allowed = |c: char| c.is_ascii_alphanumeric() || "-_.~!$&'()*+,;=:[]<>\"%".contains(c);
    match host.chars().find(|c| c.is_ascii() && !allowed(*c)) {
        Some(c) => Err(format!(
            "invalid character {:?} in host name",
            c.to_string()
        )),
        None => Ok(()),
    }
}

/// Go's `getScheme`: the scheme and the rest, `Err` for a URL starting with `:`.
fn split_scheme(raw: &str) -> Result<(&str, &str), String> {
    for (i, c) in raw.char_indices() {
        match c {
            'a'..='z' | 'A'..='Z' => {}
            '0'..='9' | '+' | '-' | '.' if i > 0 => {}
            ':' if i == 0 => return Err("missing protocol scheme".to_string()),
            ':' => return Ok((&raw[..i], &raw[i + 1..])),
            _ => return Ok(("", raw)),
        }
    }
    Ok(("", raw))
}

/// Go's `url.Parse`, as far as `ValidateWebhookURL` needs it; `Err` carries Go's message
/// (`parse "…": missing protocol scheme`).
fn parse_url(raw: &str) -> Result<UrlParts<'_>, String> {
    let (without_fragment, fragment) = raw.split_once('#').unwrap_or((raw, ""));
    let wrap = |url: &str, e: String| format!("parse {url:?}: {e}");
    if without_fragment.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return Err(wrap(
            without_fragment,
            "net/url: invalid control character in URL".to_string(),
        ));
    }
    let (scheme, rest) = split_scheme(without_fragment).map_err(|e| wrap(without_fragment, e))?;
    let scheme = scheme.to_lowercase();
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let mut parts = UrlParts {
        scheme,
        query,
        fragment,
        ..UrlParts::default()
    };
    if !rest.starts_with('/') {
        if !parts.scheme.is_empty() {
            // An opaque URL (`https:host`): no host.
            check_escapes(fragment).map_err(|e| wrap(raw, e))?;
            return Ok(parts);
        }
        let first_segment = rest.split('/').next().unwrap_or_default();
        if first_segment.contains(':') {
            return Err(wrap(
                without_fragment,
                "first path segment in URL cannot contain colon".to_string(),
            ));
        }
    }
    let mut path = rest;
    if let Some(after) = rest.strip_prefix("//") {
        if !parts.scheme.is_empty() || !rest.starts_with("///") {
            let (authority, tail) = match after.find('/') {
                Some(i) => (&after[..i], &after[i..]),
                None => (after, ""),
            };
            path = tail;
            let (user, host) = match authority.rfind('@') {
                Some(i) => (Some(&authority[..i]), &authority[i + 1..]),
                None => (None, authority),
            };
            if let Some(user) = user {
                let valid = user
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-._:~!$&'()*+,;=%@".contains(c));
                if !valid {
                    return Err(wrap(
                        without_fragment,
                        "net/url: invalid userinfo".to_string(),
                    ));
                }
                check_escapes(user).map_err(|e| wrap(without_fragment, e))?;
            }
            check_host(host).map_err(|e| wrap(without_fragment, e))?;
            parts.user = user;
            parts.host = host;
        }
    }
    check_escapes(path).map_err(|e| wrap(without_fragment, e))?;
    check_escapes(fragment).map_err(|e| wrap(raw, e))?;
    Ok(parts)
}

/// `webhook.ValidateWebhookURL` with https required.
fn validate_webhook_url(path: &str, url: &str) -> Vec<FieldError> {
    const FORM: &str = "; desired format: https://host[/path]";
    let u = match parse_url(url) {
        Ok(u) => u,
        Err(e) => {
            return vec![FieldError::required(
                path,
                &format!("url must be a valid URL: {e}{FORM}"),
            )]
        }
    };
    let mut errs = Vec::new();
    if u.scheme != "https" {
        errs.push(invalid_str(
            path,
            &u.scheme,
            &format!("'https' is the only allowed URL scheme{FORM}"),
        ));
    }
    if u.host.is_empty() {
        errs.push(invalid_str(
            path,
            u.host,
            &format!("host must be specified{FORM}"),
        ));
    }
    if let Some(user) = u.user {
        errs.push(invalid_str(
            path,
            user,
            "user information is not permitted in the URL",
        ));
    }
    if !u.fragment.is_empty() {
        errs.push(invalid_str(
            path,
            u.fragment,
            "fragments are not permitted in the URL",
        ));
    }
    if !u.query.is_empty() {
        errs.push(invalid_str(
            path,
            u.query,
            "query parameters are not permitted in the URL",
        ));
    }
    errs
}

/// `webhook.ValidateWebhookService` as kube calls it for webhooks: with the service's name
/// and namespace passed in each other's place, so that a missing name is reported at
/// `service.namespace` and a missing namespace at `service.name`.
fn validate_webhook_service(path: &str, service: &Map<String, Value>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if map_text(service, "namespace").is_empty() {
        errs.push(FieldError::required(
            format!("{path}.name"),
            "service name is required",
        ));
    }
    if map_text(service, "name").is_empty() {
        errs.push(FieldError::required(
            format!("{path}.namespace"),
            "service namespace is required",
        ));
    }
    // The port was defaulted to 443; an unset port is the internal type's zero.
    let port = match service.get("port") {
        None | Some(Value::Null) => Some(0),
        Some(v) => v.as_i64(),
    };
    if let Some(port) = port {
        let problems = names::is_valid_port_num(port);
        if !problems.is_empty() {
            errs.push(FieldError::invalid(
                format!("{path}.port"),
                &Value::from(port),
                &format!("port is not valid: {}", problems.join(", ")),
            ));
        }
    }
    let Some(url_path) = present(service, "path").and_then(Value::as_str) else {
        return errs;
    };
    if url_path == "/" || url_path.is_empty() {
        return errs;
    }
    let field = format!("{path}.path");
    if url_path == "//" {
        errs.push(invalid_str(&field, url_path, "segment[0] may not be empty"));
        return errs;
    }
    if !url_path.starts_with('/') {
        errs.push(invalid_str(&field, url_path, "must start with a '/'"));
    }
    // Go slices off the first byte, whatever it is.
    let to_check = url_path
        .char_indices()
        .nth(1)
        .map_or("", |(i, _)| &url_path[i..]);
    let to_check = to_check.strip_suffix('/').unwrap_or(to_check);
    for (i, step) in to_check.split('/').enumerate() {
        if step.is_empty() {
            errs.push(invalid_str(
                &field,
                url_path,
                &format!("segment[{i}] may not be empty"),
            ));
            continue;
        }
        for failure in names::is_dns1123_subdomain(step) {
            errs.push(invalid_str(
                &field,
                url_path,
                &format!("segment[{i}]: {failure}"),
            ));
        }
    }
    errs
}

/// The variables of a webhook's match conditions: no `params` (webhooks have none) and no
/// `variables`; the authorizer is available.
fn match_condition_env() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(|| {
        let mut env = Env::new();
        env.declare("object", Type::Dyn);
        env.declare("oldObject", Type::Dyn);
        env.declare("namespaceObject", Type::Dyn);
        env.declare("request", rkcm_cel::admission::request_type());
        env.declare("authorizer", Type::Opaque(rkcm_cel::overloads::AUTHORIZER));
        env.declare(
            "authorizer.requestResource",
            Type::Opaque(rkcm_cel::overloads::RESOURCE_CHECK),
        );
        env
    })
}

/// Compiles a (trimmed) match condition as `CompileCELExpression` does; `Err` carries kube's
/// detail: `compilation failed: ERROR: <input>:…` or `must evaluate to bool`.
fn compile_match_condition(expression: &str) -> Result<(), String> {
    let parsed = rkcm_cel::parse(expression).map_err(|issue| {
        format!(
            "compilation failed: {}",
            rkcm_cel::display(expression, &[issue])
        )
    })?;
    let (t, issues) = rkcm_cel::check(match_condition_env(), &parsed);
    if !issues.is_empty() {
        return Err(format!(
            "compilation failed: {}",
            rkcm_cel::display(expression, &issues)
        ));
    }
    // cel-go requires the output type to be `bool`. The front end types what it does not
    // know as `dyn`, so only a bare variable or field (`dyn` for cel-go too) is refused.
    let evaluates_to_bool = match t {
        Type::Bool => true,
        Type::Dyn | Type::Error => !matches!(
            parsed.kind,
            ExprKind::Ident(_)
                | ExprKind::Select {
                    test_only: false,
                    ..
                }
        ),
        _ => false,
    };
    if evaluates_to_bool {
        Ok(())
    } else {
        Err("must evaluate to bool".to_string())
    }
}

/// `validateMatchConditions` of one webhook.
fn validate_match_conditions(conditions: Option<&Value>, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(conditions) = conditions.and_then(Value::as_array) else {
        return errs;
    };
    if conditions.len() > MAX_MATCH_CONDITIONS {
        errs.push(FieldError::too_many(
            path,
            conditions.len(),
            MAX_MATCH_CONDITIONS,
        ));
    }
    let mut seen = BTreeSet::new();
    for (i, condition) in conditions.iter().enumerate() {
        let item = format!("{path}[{i}]");
        let expression = text(condition, "expression").trim();
        let expression_path = format!("{item}.expression");
        if expression.is_empty() {
            errs.push(FieldError::required(expression_path, ""));
        } else if let Err(detail) = compile_match_condition(expression) {
            errs.push(invalid_str(&expression_path, expression, &detail));
        }
        let name = text(condition, "name");
        let name_path = format!("{item}.name");
        if name.is_empty() {
            errs.push(FieldError::required(name_path.as_str(), ""));
        } else {
            for msg in names::is_qualified_name(name) {
                errs.push(invalid_str(&name_path, name, &msg));
            }
            if !seen.insert(name) {
                errs.push(FieldError::duplicate(name_path, &Value::from(name)));
            }
        }
    }
    errs
}

/// `validateValidatingWebhook` / `validateMutatingWebhook`.
fn validate_webhook(
    hook: &Map<String, Value>,
    flavor: Flavor,
    opts: &Options,
    path: &str,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let name = map_text(hook, "name");
    errs.extend(is_fully_qualified_name(&format!("{path}.name"), name));
    if let Some(rules) = hook.get("rules").and_then(Value::as_array) {
        for (i, rule) in rules.iter().enumerate() {
            if let Some(rule) = rule.as_object() {
                errs.extend(validate_rule_with_operations(
                    rule,
                    &format!("{path}.rules[{i}]"),
                ));
            }
        }
    }
    errs.extend(check_supported(
        hook,
        "failurePolicy",
        FAILURE_POLICIES,
        path,
    ));
    errs.extend(check_supported(hook, "matchPolicy", MATCH_POLICIES, path));
    let allowed_side_effects = if opts.require_no_side_effects {
        NO_SIDE_EFFECT_CLASSES
    } else {
        SIDE_EFFECT_CLASSES
    };
    if present(hook, "sideEffects").is_none() {
        errs.push(FieldError::required(
            format!("{path}.sideEffects"),
            &format!("must specify one of {}", allowed_side_effects.join(", ")),
        ));
    }
    errs.extend(check_supported(
        hook,
        "sideEffects",
        allowed_side_effects,
        path,
    ));
    if let Some(timeout) = present(hook, "timeoutSeconds") {
        if timeout.as_i64().is_some_and(|t| !(1..=30).contains(&t)) {
            errs.push(FieldError::invalid(
                format!("{path}.timeoutSeconds"),
                timeout,
                "the timeout value must be between 1 and 30 seconds",
            ));
        }
    }
    for key in ["namespaceSelector", "objectSelector"] {
        if let Some(selector) = present(hook, key) {
            errs.extend(validate_label_selector_with(
                Some(selector),
                &format!("{path}.{key}"),
                opts.allow_invalid_label_value_in_selector,
            ));
        }
    }
    if flavor == Flavor::Mutating {
        errs.extend(check_supported(
            hook,
            "reinvocationPolicy",
            REINVOCATION_POLICIES,
            path,
        ));
    }
    let client_config = hook.get("clientConfig").and_then(Value::as_object);
    let url = client_config.and_then(|c| present(c, "url"));
    let service = client_config.and_then(|c| present(c, "service"));
    match (url, service) {
        (Some(url), None) => errs.extend(validate_webhook_url(
            &format!("{path}.clientConfig.url"),
            url.as_str().unwrap_or_default(),
        )),
        (None, Some(service)) => {
            if let Some(service) = service.as_object() {
                errs.extend(validate_webhook_service(
                    &format!("{path}.clientConfig.service"),
                    service,
                ));
            }
        }
        _ => errs.push(FieldError::required(
            format!("{path}.clientConfig"),
            "exactly one of url or service is required",
        )),
    }
    if !opts.ignore_match_conditions {
        errs.extend(validate_match_conditions(
            hook.get("matchConditions"),
            &format!("{path}.matchConditions"),
        ));
    }
    errs
}

/// `validateValidatingWebhookConfiguration` / `validateMutatingWebhookConfiguration` after
/// the metadata (which the generic strategy validates).
fn validate_configuration(obj: &Value, flavor: Flavor, opts: &Options) -> Vec<FieldError> {
    let Some(hooks) = get(obj, &["webhooks"]).and_then(Value::as_array) else {
        return Vec::new();
    };
    let run = || {
        let mut errs = Vec::new();
        let mut names = BTreeSet::new();
        for (i, hook) in hooks.iter().enumerate() {
            let Some(hook) = hook.as_object() else {
                continue;
            };
            let path = format!("webhooks[{i}]");
            errs.extend(validate_webhook(hook, flavor, opts, &path));
            errs.extend(validate_admission_review_versions(
                hook.get("admissionReviewVersions"),
                opts.require_recognized_review_version,
                &format!("{path}.admissionReviewVersions"),
            ));
            let name = map_text(hook, "name");
            if opts.require_unique_webhook_names && !name.is_empty() && !names.insert(name) {
                errs.push(FieldError::duplicate(
                    format!("{path}.name"),
                    &Value::from(name),
                ));
            }
        }
        errs
    };
    let compiles_expressions = !opts.ignore_match_conditions
        && hooks.iter().any(|h| {
            h.get("matchConditions")
                .and_then(Value::as_array)
                .is_some_and(|c| !c.is_empty())
        });
    if compiles_expressions {
        // Parsing and checking recurse once per level of nesting.
        rkcm_cel::run_deep(run)
    } else {
        run()
    }
}

fn validate_validating(obj: &Value) -> Vec<FieldError> {
    validate_configuration(obj, Flavor::Validating, &Options::CREATE)
}

fn validate_validating_update(new: &Value, old: &Value) -> Vec<FieldError> {
    validate_configuration(new, Flavor::Validating, &Options::update(new, old))
}

fn validate_mutating(obj: &Value) -> Vec<FieldError> {
    validate_configuration(obj, Flavor::Mutating, &Options::CREATE)
}

fn validate_mutating_update(new: &Value, old: &Value) -> Vec<FieldError> {
    validate_configuration(new, Flavor::Mutating, &Options::update(new, old))
}

/// The strategy of ValidatingWebhookConfigurations.
pub(crate) fn validating(info: &'static ResourceInfo) -> HookedStrategy {
    HookedStrategy::new(
        GenericStrategy::new(info),
        Hooks {
            default: default_validating,
            prepare_create: start_generation,
            prepare_update: bump_generation,
            validate: validate_validating,
            validate_update: validate_validating_update,
            ..Hooks::NONE
        },
    )
}

/// The strategy of MutatingWebhookConfigurations.
pub(crate) fn mutating(info: &'static ResourceInfo) -> HookedStrategy {
    HookedStrategy::new(
        GenericStrategy::new(info),
        Hooks {
            default: default_mutating,
            prepare_create: start_generation,
            prepare_update: bump_generation,
            validate: validate_mutating,
            validate_update: validate_mutating_update,
            ..Hooks::NONE
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Strategy;
    use rkcm_apimachinery::catalog;

    fn validating_strategy() -> HookedStrategy {
        validating(
            catalog::by_kind(
                "admissionregistration.k8s.io/v1",
                "ValidatingWebhookConfiguration",
            )
            .expect("served"),
        )
    }

    fn mutating_strategy() -> HookedStrategy {
        mutating(
            catalog::by_kind(
                "admissionregistration.k8s.io/v1",
                "MutatingWebhookConfiguration",
            )
            .expect("served"),
        )
    }

    /// kube's `ToAggregate().Error()`: one message alone, several in brackets.
    fn aggregate(errs: &[FieldError]) -> String {
        let mut messages: Vec<String> = Vec::new();
        for e in errs {
            let m = e.message_with_field();
            if !messages.contains(&m) {
                messages.push(m);
            }
        }
        match messages.len() {
            1 => messages.remove(0),
            _ if messages.is_empty() => String::new(),
            _ => format!("[{}]", messages.join(", ")),
        }
    }

    /// A webhook that passes validation (kube's test fixtures: a URL client config, no side
    /// effects and the review versions the tests default).
    fn hook(name: &str) -> Value {
        json!({
            "name": name,
            "clientConfig": {"url": "https://example.com"},
            "sideEffects": "None",
            "admissionReviewVersions": ["v1beta1"],
        })
    }

    /// `hook` with `key` set to `value` (`null` removes it).
    fn with(mut h: Value, key: &str, value: Value) -> Value {
        if let Some(m) = h.as_object_mut() {
            if value.is_null() {
                m.remove(key);
            } else {
                m.insert(key.to_string(), value);
            }
        }
        h
    }

    fn config(hooks: Vec<Value>) -> Value {
        json!({"metadata": {"name": "config"}, "webhooks": hooks})
    }

    fn rule(operations: Value, resources: Value) -> Value {
        json!([{"operations": operations, "apiGroups": ["a"], "apiVersions": ["a"], "resources": resources}])
    }

    fn service(path: Option<&str>, port: i64) -> Value {
        json!({"service": {"namespace": "ns", "name": "n", "path": path, "port": port}})
    }

    fn create_errors(s: &HookedStrategy, hooks: Vec<Value>) -> String {
        aggregate(&s.validate_create(&config(hooks)))
    }

    fn update_errors(s: &HookedStrategy, new: Vec<Value>, old: Vec<Value>) -> String {
        aggregate(&s.validate_update(&config(new), &config(old)))
    }

    const DNS1035: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
    const QUALIFIED_NAME: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
    const FORM: &str = "; desired format: https://host[/path]";

    #[test]
    fn a_minimal_configuration_reads_back_every_v1_default() {
        for (s, mutating) in [(validating_strategy(), false), (mutating_strategy(), true)] {
            let mut obj = config(vec![json!({
                "name": "hook.example.com",
                "clientConfig": {"service": {"namespace": "ns", "name": "svc"}},
                "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}],
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
            })]);
            s.default(&mut obj);
            s.prepare_for_create(&mut obj);
            assert!(s.validate_create(&obj).is_empty(), "{obj}");
            let mut expected = json!({
                "name": "hook.example.com",
                "clientConfig": {"service": {"namespace": "ns", "name": "svc", "port": 443}},
                "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"], "scope": "*"}],
                "failurePolicy": "Fail",
                "matchPolicy": "Equivalent",
                "namespaceSelector": {},
                "objectSelector": {},
                "timeoutSeconds": 10,
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
            });
            if mutating {
                expected["reinvocationPolicy"] = json!("Never");
            }
            assert_eq!(obj["webhooks"][0], expected);
            assert_eq!(obj["metadata"]["generation"], 1);
        }
    }

    #[test]
    fn side_effects_and_review_versions_have_no_v1_default_and_set_values_are_kept() {
        let s = validating_strategy();
        let mut obj = config(vec![json!({
            "name": "hook.example.com",
            "clientConfig": {"service": {"namespace": "ns", "name": "svc", "port": 8443}},
            "rules": [{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "scope": "Namespaced"}],
            "failurePolicy": "Ignore", "matchPolicy": "Exact", "timeoutSeconds": 0,
            "namespaceSelector": {"matchLabels": {"a": "b"}},
        })]);
        s.default(&mut obj);
        let hook = &obj["webhooks"][0];
        assert_eq!(hook.get("sideEffects"), None);
        assert_eq!(hook.get("admissionReviewVersions"), None);
        assert_eq!(hook["clientConfig"]["service"]["port"], 8443);
        assert_eq!(hook["rules"][0]["scope"], "Namespaced");
        assert_eq!(
            (
                &hook["failurePolicy"],
                &hook["matchPolicy"],
                &hook["timeoutSeconds"]
            ),
            (&json!("Ignore"), &json!("Exact"), &json!(0))
        );
        assert_eq!(
            hook["namespaceSelector"],
            json!({"matchLabels": {"a": "b"}})
        );
        assert_eq!(
            aggregate(&s.validate_create(&obj)),
            "[webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun, \
             webhooks[0].timeoutSeconds: Invalid value: 0: the timeout value must be between 1 and 30 seconds, \
             webhooks[0].admissionReviewVersions: Required value: must specify one of v1, v1beta1]"
        );
    }

    #[test]
    fn the_generation_follows_changes_of_the_webhooks() {
        let s = mutating_strategy();
        let mut old = config(vec![hook("a.example.com")]);
        s.default(&mut old);
        s.prepare_for_create(&mut old);
        let mut relabelled = old.clone();
        relabelled["metadata"]["labels"] = json!({"team": "x"});
        s.prepare_for_update(&mut relabelled, &old);
        assert_eq!(relabelled["metadata"]["generation"], 1);
        let mut changed = old.clone();
        changed["webhooks"][0]["timeoutSeconds"] = json!(5);
        s.prepare_for_update(&mut changed, &old);
        assert_eq!(changed["metadata"]["generation"], 2);
    }

    /// `TestValidateValidatingWebhookConfiguration` (each case changes one field of a valid
    /// webhook, so each reports kube's message alone).
    #[test]
    fn validating_configurations_follow_kubes_cases() {
        let s = validating_strategy();
        let ok = |hooks: Vec<Value>| create_errors(&s, hooks);
        let base = || hook("webhook.k8s.io");
        let cases: Vec<(Vec<Value>, String)> = vec![
            (
                vec![with(base(), "admissionReviewVersions", Value::Null)],
                "webhooks[0].admissionReviewVersions: Required value: must specify one of v1, v1beta1".into(),
            ),
            (
                vec![with(base(), "admissionReviewVersions", json!(["0v"]))],
                format!("[webhooks[0].admissionReviewVersions[0]: Invalid value: \"0v\": {DNS1035}, webhooks[0].admissionReviewVersions: Invalid value: []string{{\"0v\"}}: must include at least one of v1, v1beta1]"),
            ),
            (vec![with(base(), "admissionReviewVersions", json!(["v1beta1", "invalid-version"]))], String::new()),
            (
                vec![with(base(), "admissionReviewVersions", json!(["invalidVersion"]))],
                format!("[webhooks[0].admissionReviewVersions[0]: Invalid value: \"invalidVersion\": {DNS1035}, webhooks[0].admissionReviewVersions: Invalid value: []string{{\"invalidVersion\"}}: must include at least one of v1, v1beta1]"),
            ),
            (
                vec![with(base(), "admissionReviewVersions", json!(["v1beta1", "v1beta1"]))],
                "webhooks[0].admissionReviewVersions[1]: Invalid value: \"v1beta1\": duplicate version".into(),
            ),
            (
                vec![base(), hook("k8s.io"), hook("")],
                "[webhooks[1].name: Invalid value: \"k8s.io\": should be a domain with at least three segments separated by dots, webhooks[2].name: Required value]".into(),
            ),
            (
                vec![base(), base()],
                "webhooks[1].name: Duplicate value: \"webhook.k8s.io\"".into(),
            ),
            (
                vec![with(base(), "rules", json!([
                    {"operations": [], "apiGroups": ["a"], "apiVersions": ["a"], "resources": ["a"]},
                    {"apiGroups": ["a"], "apiVersions": ["a"], "resources": ["a"]}
                ]))],
                "[webhooks[0].rules[0].operations: Required value, webhooks[0].rules[1].operations: Required value]".into(),
            ),
            (
                vec![with(base(), "rules", rule(json!(["CREATE", ""]), json!(["a"])))],
                "webhooks[0].rules[0].operations[1]: Unsupported value: \"\": supported values: \"*\", \"CONNECT\", \"CREATE\", \"DELETE\", \"UPDATE\"".into(),
            ),
            (
                vec![with(base(), "rules", rule(json!(["PATCH"]), json!(["a"])))],
                "webhooks[0].rules[0].operations[0]: Unsupported value: \"PATCH\": supported values: \"*\", \"CONNECT\", \"CREATE\", \"DELETE\", \"UPDATE\"".into(),
            ),
            (
                vec![with(base(), "rules", rule(json!(["CREATE", "*"]), json!(["a"])))],
                "webhooks[0].rules[0].operations: Invalid value: []admissionregistration.OperationType{\"CREATE\", \"*\"}: if '*' is present, must not specify other operations".into(),
            ),
            (vec![with(base(), "rules", rule(json!(["CREATE"]), json!(["*", "a/b", "a/*", "*/b"])))], String::new()),
            (
                vec![with(base(), "rules", rule(json!(["CREATE"]), json!(["*", "a"])))],
                "webhooks[0].rules[0].resources: Invalid value: []string{\"*\", \"a\"}: if '*' is present, must not specify other resources without subresources".into(),
            ),
            (
                vec![with(base(), "rules", rule(json!(["CREATE"]), json!(["a/*", "a/x"])))],
                "webhooks[0].rules[0].resources[1]: Invalid value: \"a/x\": if 'a/*' is present, must not specify a/x".into(),
            ),
            (vec![with(base(), "rules", rule(json!(["CREATE"]), json!(["a/*", "a"])))], String::new()),
            (
                vec![with(base(), "rules", rule(json!(["CREATE"]), json!(["*/a", "x/a"])))],
                "webhooks[0].rules[0].resources[1]: Invalid value: \"x/a\": if '*/a' is present, must not specify x/a".into(),
            ),
            (
                vec![with(base(), "rules", rule(json!(["CREATE"]), json!(["*/*", "a"])))],
                "webhooks[0].rules[0].resources: Invalid value: []string{\"*/*\", \"a\"}: if '*/*' is present, must not specify other resources".into(),
            ),
            (
                vec![with(base(), "rules", json!([{"operations": ["CREATE"], "apiGroups": ["*", "apps"], "apiVersions": ["v1", ""], "resources": ["a"], "scope": "Everywhere"}]))],
                "[webhooks[0].rules[0].apiGroups: Invalid value: []string{\"*\", \"apps\"}: if '*' is present, must not specify other API groups, webhooks[0].rules[0].apiVersions[1]: Required value, webhooks[0].rules[0].scope: Unsupported value: \"Everywhere\": supported values: \"*\", \"Cluster\", \"Namespaced\"]".into(),
            ),
            (
                vec![with(base(), "failurePolicy", json!("other"))],
                "webhooks[0].failurePolicy: Unsupported value: \"other\": supported values: \"Fail\", \"Ignore\"".into(),
            ),
            (
                vec![with(base(), "matchPolicy", json!("other"))],
                "webhooks[0].matchPolicy: Unsupported value: \"other\": supported values: \"Equivalent\", \"Exact\"".into(),
            ),
            (
                vec![with(base(), "sideEffects", Value::Null)],
                "webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun".into(),
            ),
            (
                vec![with(base(), "sideEffects", json!("other"))],
                "webhooks[0].sideEffects: Unsupported value: \"other\": supported values: \"None\", \"NoneOnDryRun\"".into(),
            ),
            (
                vec![with(base(), "sideEffects", json!("Some"))],
                "webhooks[0].sideEffects: Unsupported value: \"Some\": supported values: \"None\", \"NoneOnDryRun\"".into(),
            ),
            (vec![with(base(), "sideEffects", json!("NoneOnDryRun"))], String::new()),
            (
                vec![with(base(), "clientConfig", json!({}))],
                "webhooks[0].clientConfig: Required value: exactly one of url or service is required".into(),
            ),
            (
                vec![with(base(), "clientConfig", json!({"url": "example.com/k8s/webhook", "service": {"namespace": "ns", "name": "n", "port": 443}}))],
                "webhooks[0].clientConfig: Required value: exactly one of url or service is required".into(),
            ),
            (
                vec![with(base(), "clientConfig", json!({"url": ""}))],
                format!("[webhooks[0].clientConfig.url: Invalid value: \"\": 'https' is the only allowed URL scheme{FORM}, webhooks[0].clientConfig.url: Invalid value: \"\": host must be specified{FORM}]"),
            ),
            (
                vec![with(base(), "clientConfig", json!({"url": "http://example.com"}))],
                format!("webhooks[0].clientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme{FORM}"),
            ),
            (
                vec![with(base(), "clientConfig", json!({"url": "https:///fancy/webhook"}))],
                format!("webhooks[0].clientConfig.url: Invalid value: \"\": host must be specified{FORM}"),
            ),
            (
                vec![with(base(), "clientConfig", json!({"url": "https://example.com/#bookmark"}))],
                "webhooks[0].clientConfig.url: Invalid value: \"bookmark\": fragments are not permitted in the URL".into(),
            ),
            (
                vec![with(base(), "clientConfig", json!({"url": "https://example.com?arg=value"}))],
                "webhooks[0].clientConfig.url: Invalid value: \"arg=value\": query parameters are not permitted in the URL".into(),
            ),
            (
                vec![with(base(), "clientConfig", json!({"url": "https://harry.potter@example.com/"}))],
                "webhooks[0].clientConfig.url: Invalid value: \"harry.potter\": user information is not permitted in the URL".into(),
            ),
            (
                vec![with(base(), "clientConfig", json!({"url": "arg#backwards=thisis?html.index/port:host//:https"}))],
                format!("[webhooks[0].clientConfig.url: Invalid value: \"\": 'https' is the only allowed URL scheme{FORM}, webhooks[0].clientConfig.url: Invalid value: \"\": host must be specified{FORM}, webhooks[0].clientConfig.url: Invalid value: \"backwards=thisis?html.index/port:host//:https\": fragments are not permitted in the URL]"),
            ),
            (
                vec![with(base(), "clientConfig", json!({"url": ":example.com"}))],
                format!("webhooks[0].clientConfig.url: Required value: url must be a valid URL: parse \":example.com\": missing protocol scheme{FORM}"),
            ),
            (
                vec![with(base(), "clientConfig", service(Some("foo/"), 443))],
                "webhooks[0].clientConfig.service.path: Invalid value: \"foo/\": must start with a '/'".into(),
            ),
            (vec![with(base(), "clientConfig", service(Some("/"), 443))], String::new()),
            (vec![with(base(), "clientConfig", service(Some("/foo"), 443))], String::new()),
            (
                vec![with(base(), "clientConfig", service(Some("//"), 443))],
                "webhooks[0].clientConfig.service.path: Invalid value: \"//\": segment[0] may not be empty".into(),
            ),
            (
                vec![with(base(), "clientConfig", service(Some("/foo//bar/"), 443))],
                "webhooks[0].clientConfig.service.path: Invalid value: \"/foo//bar/\": segment[1] may not be empty".into(),
            ),
            (
                vec![with(base(), "clientConfig", service(Some("/foo/bar//"), 443))],
                "webhooks[0].clientConfig.service.path: Invalid value: \"/foo/bar//\": segment[2] may not be empty".into(),
            ),
            (
                vec![with(base(), "clientConfig", service(Some("/apis/foo.bar/v1alpha1/--bad"), 443))],
                "webhooks[0].clientConfig.service.path: Invalid value: \"/apis/foo.bar/v1alpha1/--bad\": segment[3]: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')".into(),
            ),
            (
                vec![with(base(), "clientConfig", service(None, 0))],
                "webhooks[0].clientConfig.service.port: Invalid value: 0: port is not valid: must be between 1 and 65535, inclusive".into(),
            ),
            (
                vec![with(base(), "clientConfig", service(None, 65536))],
                "webhooks[0].clientConfig.service.port: Invalid value: 65536: port is not valid: must be between 1 and 65535, inclusive".into(),
            ),
            (
                // kube passes the service's name and namespace in each other's place.
                vec![with(base(), "clientConfig", json!({"service": {"namespace": "ns", "port": 443}}))],
                "webhooks[0].clientConfig.service.namespace: Required value: service namespace is required".into(),
            ),
            (
                vec![with(base(), "timeoutSeconds", json!(31))],
                "webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds".into(),
            ),
            (
                vec![with(base(), "timeoutSeconds", json!(0))],
                "webhooks[0].timeoutSeconds: Invalid value: 0: the timeout value must be between 1 and 30 seconds".into(),
            ),
            (
                vec![with(base(), "timeoutSeconds", json!(-1))],
                "webhooks[0].timeoutSeconds: Invalid value: -1: the timeout value must be between 1 and 30 seconds".into(),
            ),
            (
                vec![
                    with(base(), "timeoutSeconds", json!(1)),
                    with(hook("webhook2.k8s.io"), "timeoutSeconds", json!(15)),
                    with(hook("webhook3.k8s.io"), "timeoutSeconds", json!(30)),
                ],
                String::new(),
            ),
            (
                vec![with(base(), "namespaceSelector", json!({"matchExpressions": [{"key": "a", "operator": "In", "values": ["-bad-"]}]}))],
                "webhooks[0].namespaceSelector.matchExpressions[0].values[0]: Invalid value: \"-bad-\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')".into(),
            ),
            (
                vec![with(base(), "objectSelector", json!({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}))],
                "webhooks[0].objectSelector.matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'".into(),
            ),
        ];
        for (hooks, expected) in cases {
            let description = format!("{hooks:?}");
            assert_eq!(ok(hooks), expected, "{description}");
        }
    }

    /// The match-condition cases of `TestValidateValidatingWebhookConfiguration`.
    #[test]
    fn match_conditions_follow_kubes_cases() {
        let s = validating_strategy();
        let conditions = |name: &str, c: Value| with(hook(name), "matchConditions", c);
        let cases: Vec<(Vec<Value>, String)> = vec![
            (
                vec![conditions("webhook.k8s.io", json!([{"expression": "true"}]))],
                "webhooks[0].matchConditions[0].name: Required value".into(),
            ),
            (
                vec![
                    conditions("webhook.k8s.io", json!([{"expression": "true"}, {"expression": "true"}])),
                    conditions("webhook2.k8s.io", json!([{"name": "", "expression": "true"}])),
                ],
                "[webhooks[0].matchConditions[0].name: Required value, webhooks[0].matchConditions[1].name: Required value, webhooks[1].matchConditions[0].name: Required value]".into(),
            ),
            (
                vec![conditions("webhook.k8s.io", json!([{"name": "-hello", "expression": "true"}]))],
                format!("webhooks[0].matchConditions[0].name: Invalid value: \"-hello\": {QUALIFIED_NAME}"),
            ),
            (
                vec![
                    conditions("webhook.k8s.io", json!([{"name": ".io", "expression": "true"}, {"name": "thing.test.com", "expression": "true"}])),
                    conditions("webhook2.k8s.io", json!([{"name": "some name", "expression": "true"}])),
                ],
                format!("[webhooks[0].matchConditions[0].name: Invalid value: \".io\": {QUALIFIED_NAME}, webhooks[1].matchConditions[0].name: Invalid value: \"some name\": {QUALIFIED_NAME}]"),
            ),
            (
                vec![conditions("webhook.k8s.io", json!([{"name": "webhook.k8s.io"}]))],
                "webhooks[0].matchConditions[0].expression: Required value".into(),
            ),
            (
                vec![conditions("webhook.k8s.io", json!([{"name": "webhook.k8s.io", "expression": "  "}]))],
                "webhooks[0].matchConditions[0].expression: Required value".into(),
            ),
            (
                vec![conditions("webhook.k8s.io", json!([{"name": "webhook.k8s.io", "expression": "true"}, {"name": "webhook.k8s.io", "expression": "true"}]))],
                "webhooks[0].matchConditions[1].name: Duplicate value: \"webhook.k8s.io\"".into(),
            ),
            (
                vec![
                    conditions("webhook.k8s.io", json!([{"name": "webhook.k8s.io", "expression": "true"}])),
                    conditions("webhook2.k8s.io", json!([{"name": "webhook.k8s.io", "expression": "true"}])),
                ],
                String::new(),
            ),
            (
                vec![conditions("webhook.k8s.io", json!([{"name": "webhook.k8s.io", "expression": "6"}]))],
                "webhooks[0].matchConditions[0].expression: Invalid value: \"6\": must evaluate to bool".into(),
            ),
            (
                vec![conditions("webhook.k8s.io", json!([{"name": "exclude-leases", "expression": "!(request.resource.group == 'coordination.k8s.io' && request.resource.resource == 'leases')"}, {"name": "allowed", "expression": "authorizer.group('').resource('pods').check('get').allowed()"}, {"name": "labelled", "expression": "has(object.metadata.labels) && 'app' in object.metadata.labels"}]))],
                String::new(),
            ),
        ];
        for (hooks, expected) in cases {
            let description = format!("{hooks:?}");
            assert_eq!(create_errors(&s, hooks), expected, "{description}");
        }

        let sixty_five: Vec<Value> = (0..65)
            .map(|i| json!({"name": format!("test{i}"), "expression": "true"}))
            .collect();
        assert_eq!(
            create_errors(
                &s,
                vec![conditions("webhook.k8s.io", Value::from(sixty_five))]
            ),
            "webhooks[0].matchConditions: Too many: 65: must have at most 64 items"
        );

        let errs = s.validate_create(&config(vec![conditions(
            "webhook.k8s.io",
            json!([{"name": "webhook.k8s.io", "expression": "object.x in [1, 2, "}]),
        )]));
        assert_eq!(errs.len(), 1, "{errs:?}");
        // kube: `… Syntax error: missing ']' at '<EOF>'`; the front end words some syntax
        // errors differently from cel-go's ANTLR recovery, but places them alike.
        assert!(
            errs[0].message_with_field().starts_with(
                "webhooks[0].matchConditions[0].expression: Invalid value: \"object.x in [1, 2,\": compilation failed: ERROR: <input>:1:19: Syntax error: "
            ),
            "{errs:?}"
        );
        let errs = s.validate_create(&config(vec![conditions(
            "webhook.k8s.io",
            json!([{"name": "typo", "expression": "request.resourc.group == 'apps'"}]),
        )]));
        assert!(
            aggregate(&errs)
                .contains("compilation failed: ERROR: <input>:1:8: undefined field 'resourc'"),
            "{errs:?}"
        );
    }

    /// `TestValidateValidatingWebhookConfigurationUpdate`.
    #[test]
    fn validating_updates_tolerate_what_the_old_object_had() {
        let s = validating_strategy();
        let unknown = |h: Value| with(h, "sideEffects", json!("Unknown"));
        let versions = |v: Value| {
            with(
                unknown(hook("webhook.k8s.io")),
                "admissionReviewVersions",
                v,
            )
        };
        assert_eq!(
            update_errors(
                &s,
                vec![versions(json!(["v1beta1"]))],
                vec![unknown(hook("webhook.k8s.io"))]
            ),
            ""
        );
        assert_eq!(
            update_errors(
                &s,
                vec![versions(json!(["invalid-v1", "invalid-v2"]))],
                vec![versions(json!(["invalid-v0"]))]
            ),
            ""
        );
        let refused = "webhooks[0].admissionReviewVersions: Invalid value: []string{\"invalid-v1\"}: must include at least one of v1, v1beta1";
        assert_eq!(
            update_errors(
                &s,
                vec![versions(json!(["invalid-v1"]))],
                vec![versions(json!(["v1beta1", "invalid-v1"]))]
            ),
            refused
        );
        assert_eq!(
            update_errors(
                &s,
                vec![versions(json!(["invalid-v1"]))],
                vec![versions(Value::Null)]
            ),
            refused
        );
        let twice = || {
            vec![
                unknown(hook("webhook.k8s.io")),
                unknown(hook("webhook.k8s.io")),
            ]
        };
        assert_eq!(
            update_errors(&s, twice(), vec![unknown(hook("webhook.k8s.io"))]),
            "webhooks[1].name: Duplicate value: \"webhook.k8s.io\""
        );
        assert_eq!(update_errors(&s, twice(), twice()), "");

        // Unchanged match conditions are not compiled again; changed ones are.
        let condition = |e: &str| {
            with(
                hook("webhook.k8s.io"),
                "matchConditions",
                json!([{"name": "checkStorage", "expression": e}]),
            )
        };
        assert_eq!(
            update_errors(
                &s,
                vec![condition("nope == true")],
                vec![condition("nope == true")]
            ),
            ""
        );
        assert!(
            update_errors(&s, vec![condition("nope == true")], vec![condition("true")])
                .contains("undeclared reference to 'nope' (in container '')")
        );

        // Label values kube refuses now stay allowed where the old object had one.
        let selector = |v: &str| {
            with(
                hook("webhook.k8s.io"),
                "objectSelector",
                json!({"matchExpressions": [{"key": "a", "operator": "In", "values": [v]}]}),
            )
        };
        assert_eq!(
            update_errors(&s, vec![selector("-bad-")], vec![selector("-bad-")]),
            ""
        );
        assert!(update_errors(&s, vec![selector("-bad-")], vec![selector("good")])
            .starts_with("webhooks[0].objectSelector.matchExpressions[0].values[0]: Invalid value: \"-bad-\""));
    }

    /// `TestValidateMutatingWebhookConfiguration` and `…Update`: the same rules, plus the
    /// reinvocation policy.
    #[test]
    fn mutating_configurations_follow_kubes_cases() {
        let s = mutating_strategy();
        assert_eq!(
            create_errors(&s, vec![hook("webhook.k8s.io"), hook("k8s.io"), hook("")]),
            "[webhooks[1].name: Invalid value: \"k8s.io\": should be a domain with at least three segments separated by dots, webhooks[2].name: Required value]"
        );
        assert_eq!(
            create_errors(&s, vec![with(hook("webhook.k8s.io"), "reinvocationPolicy", json!("other"))]),
            "webhooks[0].reinvocationPolicy: Unsupported value: \"other\": supported values: \"IfNeeded\", \"Never\""
        );
        assert_eq!(
            create_errors(
                &s,
                vec![with(
                    hook("webhook.k8s.io"),
                    "reinvocationPolicy",
                    json!("IfNeeded")
                )]
            ),
            ""
        );
        assert_eq!(
            create_errors(
                &s,
                vec![with(hook("webhook.k8s.io"), "sideEffects", Value::Null)]
            ),
            "webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun"
        );
        let side_effects = |v: &str| with(hook("webhook.k8s.io"), "sideEffects", json!(v));
        assert_eq!(
            update_errors(&s, vec![side_effects("Unknown")], vec![side_effects("None")]),
            "webhooks[0].sideEffects: Unsupported value: \"Unknown\": supported values: \"None\", \"NoneOnDryRun\""
        );
        assert_eq!(
            update_errors(
                &s,
                vec![side_effects("Unknown")],
                vec![side_effects("Unknown")]
            ),
            ""
        );
        assert_eq!(
            update_errors(&s, vec![side_effects("Other")], vec![side_effects("Some")]),
            "webhooks[0].sideEffects: Unsupported value: \"Other\": supported values: \"None\", \"NoneOnDryRun\", \"Some\", \"Unknown\""
        );
        assert_eq!(
            update_errors(&s, vec![with(hook("webhook.k8s.io"), "sideEffects", Value::Null)], vec![side_effects("Some")]),
            "webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun, Some, Unknown"
        );
    }

    #[test]
    fn urls_are_parsed_as_go_parses_them() {
        let errors = |url: &str| aggregate(&validate_webhook_url("url", url));
        assert_eq!(errors("https://example.com:8443/webhook"), "");
        assert_eq!(errors("https://[::1]:8443/webhook"), "");
        assert_eq!(
            errors("https://example.com:port/"),
            format!("url: Required value: url must be a valid URL: parse \"https://example.com:port/\": invalid port \":port\" after host{FORM}")
        );
        assert_eq!(
            errors("1example.com:80/x"),
            format!("url: Required value: url must be a valid URL: parse \"1example.com:80/x\": first path segment in URL cannot contain colon{FORM}")
        );
        assert_eq!(
            errors("https://example.com/%zz"),
            format!("url: Required value: url must be a valid URL: parse \"https://example.com/%zz\": invalid URL escape \"%zz\"{FORM}")
        );
        assert_eq!(
            errors("https://exa mple.com/"),
            format!("url: Required value: url must be a valid URL: parse \"https://exa mple.com/\": invalid character \" \" in host name{FORM}")
        );
        assert_eq!(
            errors("https://user:secret@example.com"),
            "url: Invalid value: \"user:secret\": user information is not permitted in the URL"
        );
    }
}
