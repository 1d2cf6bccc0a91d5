//! ConfigMaps: key validity, the 1 MiB size limit and the `immutable` flag
//! (`ValidateConfigMap`, `ValidateConfigMapUpdate` of core validation).

use std::collections::BTreeSet;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use rkcm_apimachinery::catalog::ResourceInfo;
use rkcm_labels::validation::is_config_map_key;
use serde_json::{json, Value};

use super::generic::GenericStrategy;
use super::hooked::{nothing, nothing_on_update, HookedStrategy, Hooks};
use super::object::{get, semantically_equal};
use super::FieldError;

/// Largest total size of `data` and `binaryData` (`MaxSecretSize`, shared by configmaps).
pub(crate) const MAX_CONFIG_MAP_SIZE: usize = 1024 * 1024;

fn validate(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let binary: BTreeSet<&String> = get(obj, &["binaryData"])
        .and_then(Value::as_object)
        .map(|m| m.keys().collect())
        .unwrap_or_default();
    let mut total = 0usize;
    for section in ["data", "binaryData"] {
        for (k, v) in get(obj, &[section])
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            for m in is_config_map_key(k) {
                errs.push(FieldError::invalid(
                    format!("{section}[{k}]"),
                    &json!(k),
                    &m,
                ));
            }
            if section == "data" && binary.contains(k) {
                errs.push(FieldError::invalid(
                    format!("data[{k}]"),
                    &json!(k),
                    "duplicate of key present in binaryData",
                ));
            }
            // `binaryData` counts its decoded bytes, as kube's `[]byte` values.
            total += match (section, v.as_str()) {
                ("binaryData", Some(s)) => BASE64.decode(s).map_or(0, |b| b.len()),
                (_, Some(s)) => s.len(),
                (_, None) => 0,
            };
        }
    }
    if total > MAX_CONFIG_MAP_SIZE {
        // An empty path: the error is about the whole object.
        errs.push(FieldError::too_long("", MAX_CONFIG_MAP_SIZE));
    }
    errs
}

/// `ValidateConfigMapUpdate` without the metadata: the `immutable` rules, then the new object.
fn validate_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if get(old, &["immutable"]).and_then(Value::as_bool) == Some(true) {
        if get(new, &["immutable"]).and_then(Value::as_bool) != Some(true) {
            errs.push(FieldError::forbidden(
                "immutable",
                "field is immutable when `immutable` is set",
            ));
        }
        for section in ["data", "binaryData"] {
            if !semantically_equal(get(new, &[section]), get(old, &[section])) {
                errs.push(FieldError::forbidden(
                    section,
                    "field is immutable when `immutable` is set",
                ));
            }
        }
    }
    errs.extend(validate(new));
    errs
}

static HOOKS: Hooks = Hooks {
    default: nothing,
    prepare_create: nothing,
    prepare_update: nothing_on_update,
    prepare_status_update: nothing_on_update,
    validate,
    validate_update,
    fields: &[],
};

/// The strategy of configmaps.
pub(crate) fn strategy(info: &'static ResourceInfo) -> HookedStrategy {
    HookedStrategy::new(GenericStrategy::new(info), HOOKS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Strategy;
    use rkcm_apimachinery::catalog;

    fn s() -> HookedStrategy {
        strategy(catalog::by_kind("v1", "ConfigMap").expect("served"))
    }

    #[test]
    fn keys_must_be_valid_and_unique_across_data_and_binary_data() {
        let cm = json!({"metadata": {"name": "c", "namespace": "default"},
            "data": {"good.key": "v", "bad key": "v", "dup": "x"}, "binaryData": {"dup": "eA=="}});
        let fields: Vec<String> = s()
            .validate_create(&cm)
            .iter()
            .map(|e| e.field.clone())
            .collect();
        assert_eq!(fields, ["data[bad key]", "data[dup]"]);
    }

    #[test]
    fn total_size_counts_decoded_binary_data_and_is_limited_to_one_mebibyte() {
        let half = "x".repeat(MAX_CONFIG_MAP_SIZE / 2);
        let binary_half = BASE64.encode(vec![0u8; MAX_CONFIG_MAP_SIZE / 2]);
        let cm = json!({"metadata": {"name": "c", "namespace": "default"},
            "data": {"a": half}, "binaryData": {"b": binary_half}});
        assert!(s().validate_create(&cm).is_empty());
        let mut over = cm.clone();
        over["data"]["c"] = json!("y");
        let errs = s().validate_create(&over);
        assert_eq!(errs.len(), 1);
        assert_eq!(
            errs[0].message_with_field(),
            ": Too long: may not be more than 1048576 bytes"
        );
    }

    #[test]
    fn immutable_flag_and_binary_data_of_immutable_configmaps_cannot_change() {
        let old = json!({"metadata": {"name": "c", "namespace": "default"},
            "binaryData": {"b": "eA=="}, "immutable": true});
        let mut new = old.clone();
        new["immutable"] = json!(false);
        new["binaryData"]["b"] = json!("eQ==");
        let msgs: Vec<String> = s()
            .validate_update(&new, &old)
            .iter()
            .map(FieldError::message_with_field)
            .collect();
        assert_eq!(
            msgs,
            [
                "immutable: Forbidden: field is immutable when `immutable` is set",
                "binaryData: Forbidden: field is immutable when `immutable` is set"
            ]
        );
    }

    #[test]
    fn immutable_rules_are_reported_before_the_checks_of_the_new_object() {
        let old = json!({"metadata": {"name": "c", "namespace": "default"}, "data": {"a": "1"}, "immutable": true});
        let mut new = old.clone();
        new["data"] = json!({"bad key": "1"});
        let fields: Vec<String> = s()
            .validate_update(&new, &old)
            .iter()
            .map(|e| e.field.clone())
            .collect();
        assert_eq!(fields, ["data", "data[bad key]"]);
    }

    #[test]
    fn immutable_configmaps_keep_their_data() {
        let old = json!({"metadata": {"name": "c", "namespace": "default"}, "data": {"a": "1"}, "immutable": true});
        let mut new = old.clone();
        new["data"]["a"] = json!("2");
        assert_eq!(s().validate_update(&new, &old)[0].field, "data");
        let mut labelled = old.clone();
        labelled["metadata"]["labels"] = json!({"x": "y"});
        assert!(s().validate_update(&labelled, &old).is_empty());
    }
}
