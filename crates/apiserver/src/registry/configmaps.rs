//! ConfigMaps: key validity, the 1 MiB size limit and the `immutable` flag
//! (`ValidateConfigMap`, `ValidateConfigMapUpdate` of core validation).

use std::collections::BTreeSet;

use rkcm_apimachinery::catalog::ResourceInfo;
use rkcm_labels::validation::is_config_map_key;
use serde_json::{json, Value};

use super::generic::GenericStrategy;
use super::object::{get, semantically_equal};
use super::simple::{no_defaults, SimpleStrategy};
use super::FieldError;

/// Largest total size of `data` and `binaryData` (`MaxSecretSize`, shared by configmaps).
const MAX_CONFIG_MAP_SIZE: usize = 1024 * 1024;

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
            // TODO: binaryData counts its base64 text, kube the decoded bytes.
            total += v.as_str().map_or(0, str::len);
        }
    }
    if total > MAX_CONFIG_MAP_SIZE {
        // An empty path: the error is about the whole object.
        errs.push(FieldError::too_long("", MAX_CONFIG_MAP_SIZE));
    }
    errs
}

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
    errs
}

/// The strategy of configmaps.
pub(crate) fn strategy(info: &'static ResourceInfo) -> SimpleStrategy {
    SimpleStrategy::new(
        GenericStrategy::new(info),
        no_defaults,
        validate,
        validate_update,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Strategy;
    use rkcm_apimachinery::catalog;

    fn s() -> SimpleStrategy {
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
