//! Secrets: `stringData` folded into `data` as kube's conversion does, the `Opaque` default,
//! the checks of `ValidateSecret` / `ValidateSecretUpdate` (keys, 1 MiB, per-type required
//! keys, immutable `type`, the `immutable` flag) and the `type` field selector.
//!
//! Mirrors `pkg/registry/core/secret/strategy.go`, `SetDefaults_Secret`,
//! `Convert_v1_Secret_To_core_Secret` and `pkg/apis/core/validation/validation.go`.

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use rkcm_apimachinery::catalog::ResourceInfo;
use serde_json::{json, Map, Value};

use rkcm_labels::validation::is_config_map_key;

use super::configmaps::MAX_CONFIG_MAP_SIZE;
use super::generic::GenericStrategy;
use super::hooked::{nothing, nothing_on_update, HookedStrategy, Hooks};
use super::meta::validate_immutable;
use super::object::{get, get_str, object_mut};
use super::FieldError;

/// `MaxSecretSize`.
const MAX_SECRET_SIZE: usize = MAX_CONFIG_MAP_SIZE;
const SERVICE_ACCOUNT_NAME_KEY: &str = "kubernetes.io/service-account.name";

/// `Convert_v1_Secret_To_core_Secret` folds `stringData` into `data` (a `stringData` key wins)
/// and the stored object never has `stringData`; then `SetDefaults_Secret`.
fn default_secret(obj: &mut Value) {
    let Some(secret) = obj.as_object_mut() else {
        return;
    };
    if let Some(string_data) = secret.remove("stringData") {
        if let Some(entries) = string_data.as_object().filter(|m| !m.is_empty()) {
            let data = secret
                .entry("data")
                .or_insert_with(|| Value::Object(Map::new()));
            if !data.is_object() {
                *data = Value::Object(Map::new());
            }
            if let Some(data) = data.as_object_mut() {
                for (k, v) in entries {
                    // Non-string values are left for the type check to refuse.
                    let encoded = match v.as_str() {
                        Some(s) => Value::String(BASE64.encode(s)),
                        None => v.clone(),
                    };
                    data.insert(k.clone(), encoded);
                }
            }
        }
    }
    if let Some(secret) = object_mut(obj, &[]) {
        super::object::default_field(secret, "type", json!("Opaque"));
    }
}

/// The decoded bytes of `data[key]`, if the key is present (undecodable values are left to the
/// type check and count as empty here).
fn data_bytes(obj: &Value, key: &str) -> Option<Vec<u8>> {
    let v = get(obj, &["data", key])?;
    Some(
        v.as_str()
            .and_then(|s| BASE64.decode(s).ok())
            .unwrap_or_default(),
    )
}

/// The error Go's `json.Unmarshal` gives for `bytes` into a `map[string]interface{}`, if any.
///
/// Go words its syntax errors by the parser state it was in; this gives its wording for the
/// common cases (empty or truncated input, a bad first character, a value that is not an
/// object) and the generic `invalid character` form otherwise.
fn go_json_map_error(bytes: &[u8]) -> Option<String> {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(_) | Value::Null) => None,
        Ok(other) => {
            let kind = match other {
                Value::Array(_) => "array",
                Value::String(_) => "string",
                Value::Number(_) => "number",
                _ => "bool",
            };
            Some(format!(
                "json: cannot unmarshal {kind} into Go value of type map[string]interface {{}}"
            ))
        }
        Err(e) if e.is_eof() => Some("unexpected end of JSON input".to_string()),
        Err(e) => {
            let offset = bytes
                .split(|b| *b == b'\n')
                .take(e.line().saturating_sub(1))
                .map(|l| l.len() + 1)
                .sum::<usize>()
                + e.column().saturating_sub(1);
            let c = bytes.get(offset).copied().unwrap_or(b' ') as char;
            let first = bytes.iter().position(|b| !b.is_ascii_whitespace());
            if first == Some(offset) {
                Some(format!(
                    "invalid character '{c}' looking for beginning of value"
                ))
            } else {
                Some(format!("invalid character '{c}' after top-level value"))
            }
        }
    }
}

/// `ValidateSecret` without the metadata.
fn validate(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut total = 0usize;
    for (k, v) in get(obj, &["data"])
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        for m in is_config_map_key(k) {
            errs.push(FieldError::invalid(format!("data[{k}]"), &json!(k), &m));
        }
        total += v
            .as_str()
            .and_then(|s| BASE64.decode(s).ok())
            .map_or(0, |b| b.len());
    }
    if total > MAX_SECRET_SIZE {
        errs.push(FieldError::too_long("data", MAX_SECRET_SIZE));
    }
    let required = |key: &str| FieldError::required(format!("data[{key}]"), "");
    let has = |key: &str| get(obj, &["data", key]).is_some();
    match get_str(obj, &["type"]).unwrap_or("") {
        "kubernetes.io/service-account-token" => {
            let name = get_str(obj, &["metadata", "annotations", SERVICE_ACCOUNT_NAME_KEY]);
            if name.is_none_or(str::is_empty) {
                errs.push(FieldError::required(
                    format!("metadata.annotations[{SERVICE_ACCOUNT_NAME_KEY}]"),
                    "",
                ));
            }
        }
        t @ ("kubernetes.io/dockercfg" | "kubernetes.io/dockerconfigjson") => {
            let key = if t == "kubernetes.io/dockercfg" {
                ".dockercfg"
            } else {
                ".dockerconfigjson"
            };
            match data_bytes(obj, key) {
                None => errs.push(required(key)),
                Some(bytes) => {
                    if let Some(e) = go_json_map_error(&bytes) {
                        errs.push(FieldError::invalid(
                            format!("data[{key}]"),
                            &json!("<secret contents redacted>"),
                            &e,
                        ));
                    }
                }
            }
        }
        // Either may be empty, but one must be present.
        "kubernetes.io/basic-auth" if !has("username") && !has("password") => {
            errs.push(required("username"));
            errs.push(required("password"));
        }
        "kubernetes.io/ssh-auth"
            if data_bytes(obj, "ssh-privatekey").is_none_or(|b| b.is_empty()) =>
        {
            errs.push(required("ssh-privatekey"));
        }
        "kubernetes.io/tls" => {
            // kube does not check that the key matches the certificate either.
            if !has("tls.crt") {
                errs.push(required("tls.crt"));
            }
            if !has("tls.key") {
                errs.push(required("tls.key"));
            }
        }
        // Opaque, bootstrap.kubernetes.io/token and custom types: core validation checks
        // nothing more (bootstrap tokens are checked by their consumers, not the registry).
        _ => {}
    }
    errs
}

/// `ValidateSecretUpdate` without the metadata.
fn validate_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = validate_immutable(get(new, &["type"]), get(old, &["type"]), "type");
    if get(old, &["immutable"]).and_then(Value::as_bool) == Some(true) {
        if get(new, &["immutable"]).and_then(Value::as_bool) != Some(true) {
            errs.push(FieldError::forbidden(
                "immutable",
                "field is immutable when `immutable` is set",
            ));
        }
        // `stringData` was folded into `data` before validation, so this covers both.
        if get(new, &["data"]) != get(old, &["data"]) {
            errs.push(FieldError::forbidden(
                "data",
                "field is immutable when `immutable` is set",
            ));
        }
    }
    errs.extend(validate(new));
    errs
}

static HOOKS: Hooks = Hooks {
    default: default_secret,
    prepare_create: nothing,
    prepare_update: nothing_on_update,
    prepare_status_update: nothing_on_update,
    validate,
    validate_update,
    // `SelectableFields` of `pkg/registry/core/secret/strategy.go`.
    fields: &[("type", &["type"])],
};

/// The strategy of secrets.
pub(crate) fn strategy(info: &'static ResourceInfo) -> HookedStrategy {
    HookedStrategy::new(GenericStrategy::new(info), HOOKS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Strategy;
    use rkcm_apimachinery::catalog;

    fn s() -> HookedStrategy {
        strategy(catalog::by_kind("v1", "Secret").expect("served"))
    }

    fn secret(ty: &str, data: Value) -> Value {
        json!({"metadata": {"name": "s", "namespace": "default"}, "type": ty, "data": data})
    }

    fn b64(s: &str) -> String {
        BASE64.encode(s)
    }

    fn messages(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(FieldError::message_with_field).collect()
    }

    #[test]
    fn string_data_is_merged_into_data_and_dropped_and_type_defaults_to_opaque() {
        let mut obj = json!({"metadata": {"name": "s", "namespace": "default"},
            "data": {"a": b64("old"), "b": b64("keep")}, "stringData": {"a": "new", "c": "x"}});
        s().default(&mut obj);
        assert_eq!(
            obj,
            json!({"metadata": {"name": "s", "namespace": "default"}, "type": "Opaque",
                "data": {"a": b64("new"), "b": b64("keep"), "c": b64("x")}})
        );
        let mut typed = json!({"metadata": {"name": "s"}, "type": "kubernetes.io/tls"});
        s().default(&mut typed);
        assert_eq!(typed["type"], "kubernetes.io/tls");
    }

    #[test]
    fn secret_types_require_their_keys() {
        // Cases of TestValidateSecret (validation_test.go).
        let cases: Vec<(Value, Vec<&str>)> = vec![
            (secret("Opaque", json!({"a": b64("b")})), vec![]),
            (
                secret("kubernetes.io/service-account-token", json!({})),
                vec!["metadata.annotations[kubernetes.io/service-account.name]: Required value"],
            ),
            (
                secret("kubernetes.io/dockercfg", json!({})),
                vec!["data[.dockercfg]: Required value"],
            ),
            (
                secret("kubernetes.io/dockercfg", json!({".dockercfg": b64("{\"auths\": {}}")})),
                vec![],
            ),
            (
                secret("kubernetes.io/dockerconfigjson", json!({".dockerconfigjson": b64("bogus")})),
                vec!["data[.dockerconfigjson]: Invalid value: \"<secret contents redacted>\": invalid character 'b' looking for beginning of value"],
            ),
            (
                secret("kubernetes.io/dockerconfigjson", json!({".dockerconfigjson": b64("")})),
                vec!["data[.dockerconfigjson]: Invalid value: \"<secret contents redacted>\": unexpected end of JSON input"],
            ),
            (
                secret("kubernetes.io/basic-auth", json!({})),
                vec!["data[username]: Required value", "data[password]: Required value"],
            ),
            (secret("kubernetes.io/basic-auth", json!({"password": ""})), vec![]),
            (
                secret("kubernetes.io/ssh-auth", json!({"ssh-privatekey": ""})),
                vec!["data[ssh-privatekey]: Required value"],
            ),
            (
                secret("kubernetes.io/tls", json!({"tls.crt": b64("c")})),
                vec!["data[tls.key]: Required value"],
            ),
            (secret("bootstrap.kubernetes.io/token", json!({"token-id": b64("abcdef")})), vec![]),
            (
                secret("Opaque", json!({"bad key": b64("x"), "..dots": b64("x")})),
                vec![
                    "data[bad key]: Invalid value: \"bad key\": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')",
                    "data[..dots]: Invalid value: \"..dots\": must not start with '..'",
                ],
            ),
        ];
        for (obj, want) in cases {
            assert_eq!(messages(&s().validate_create(&obj)), want, "{obj}");
        }
    }

    #[test]
    fn data_larger_than_one_mebibyte_is_refused() {
        let big = BASE64.encode(vec![b'x'; MAX_SECRET_SIZE]);
        let obj = secret("Opaque", json!({"a": big, "b": b64("y")}));
        assert_eq!(
            messages(&s().validate_create(&obj)),
            ["data: Too long: may not be more than 1048576 bytes"]
        );
        let exact = secret(
            "Opaque",
            json!({"a": BASE64.encode(vec![b'x'; MAX_SECRET_SIZE])}),
        );
        assert!(s().validate_create(&exact).is_empty());
    }

    #[test]
    fn type_is_immutable_and_immutable_secrets_keep_their_data() {
        let old = secret("Opaque", json!({"a": b64("1")}));
        let mut retyped = old.clone();
        retyped["type"] = json!("kubernetes.io/basic-auth");
        retyped["data"]["username"] = json!(b64("u"));
        assert_eq!(
            messages(&s().validate_update(&retyped, &old)),
            ["type: Invalid value: \"kubernetes.io/basic-auth\": field is immutable"]
        );

        let mut frozen = old.clone();
        frozen["immutable"] = json!(true);
        let mut changed = frozen.clone();
        changed["stringData"] = json!({"a": "2"});
        s().default(&mut changed);
        assert_eq!(
            messages(&s().validate_update(&changed, &frozen)),
            ["data: Forbidden: field is immutable when `immutable` is set"]
        );
        let mut thawed = frozen.clone();
        thawed["immutable"] = json!(false);
        assert_eq!(
            messages(&s().validate_update(&thawed, &frozen)),
            ["immutable: Forbidden: field is immutable when `immutable` is set"]
        );
        let mut labelled = frozen.clone();
        labelled["metadata"]["labels"] = json!({"x": "y"});
        assert!(s().validate_update(&labelled, &frozen).is_empty());
        // A mutable secret may become immutable.
        assert!(s().validate_update(&frozen, &old).is_empty());
    }

    #[test]
    fn secrets_are_selectable_by_type() {
        let obj = secret("kubernetes.io/tls", json!({}));
        assert_eq!(
            s().field_value(&obj, "type").as_deref(),
            Some("kubernetes.io/tls")
        );
        assert_eq!(s().field_value(&obj, "metadata.name").as_deref(), Some("s"));
        assert_eq!(s().field_value(&obj, "data"), None);
    }
}
