//! ServiceAccounts: `cleanSecretReferences` on create and update (a secret reference keeps
//! only its name); validation is the metadata's alone, as `ValidateServiceAccount`. Nothing
//! is defaulted.
//!
//! Mirrors `pkg/registry/core/serviceaccount/strategy.go`. kube only warns about the
//! deprecated `kubernetes.io/enforce-mountable-secrets` annotation; this server sends no
//! warnings for it.

use rkcm_apimachinery::catalog::ResourceInfo;
use serde_json::{Map, Value};

use super::generic::GenericStrategy;
use super::hooked::{nothing, nothing_on_update, HookedStrategy, Hooks};
use super::FieldError;

/// `cleanSecretReferences`.
fn clean_secret_references(obj: &mut Value) {
    let Some(secrets) = obj.get_mut("secrets").and_then(Value::as_array_mut) else {
        return;
    };
    for secret in secrets.iter_mut() {
        let mut only_name = Map::new();
        if let Some(name) = secret
            .get("name")
            .filter(|n| n.as_str().is_some_and(|s| !s.is_empty()))
        {
            only_name.insert("name".to_string(), name.clone());
        }
        *secret = Value::Object(only_name);
    }
}

fn prepare_update(new: &mut Value, _old: &Value) {
    clean_secret_references(new);
}

fn validate(_obj: &Value) -> Vec<FieldError> {
    Vec::new()
}

fn validate_update(_new: &Value, _old: &Value) -> Vec<FieldError> {
    Vec::new()
}

static HOOKS: Hooks = Hooks {
    default: nothing,
    prepare_create: clean_secret_references,
    prepare_update,
    prepare_status_update: nothing_on_update,
    validate,
    validate_update,
    fields: &[],
};

/// The strategy of service accounts.
pub(crate) fn strategy(info: &'static ResourceInfo) -> HookedStrategy {
    HookedStrategy::new(GenericStrategy::new(info), HOOKS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Strategy;
    use rkcm_apimachinery::catalog;
    use serde_json::json;

    fn s() -> HookedStrategy {
        strategy(catalog::by_kind("v1", "ServiceAccount").expect("served"))
    }

    #[test]
    fn secret_references_keep_only_their_names() {
        let mut sa = json!({"metadata": {"name": "builder", "namespace": "default"},
            "secrets": [{"name": "token", "namespace": "other", "uid": "u", "kind": "Secret"}, {"kind": "Secret"}],
            "imagePullSecrets": [{"name": "registry"}]});
        s().default(&mut sa);
        s().prepare_for_create(&mut sa);
        assert_eq!(sa["secrets"], json!([{"name": "token"}, {}]));
        assert_eq!(sa["imagePullSecrets"], json!([{"name": "registry"}]));
        assert!(s().validate_create(&sa).is_empty());
        let old = sa.clone();
        let mut updated = sa.clone();
        updated["secrets"] = json!([{"name": "token2", "resourceVersion": "5"}]);
        s().prepare_for_update(&mut updated, &old);
        assert_eq!(updated["secrets"], json!([{"name": "token2"}]));
    }

    #[test]
    fn only_the_metadata_is_validated() {
        let sa = json!({"metadata": {"name": "Bad_Name", "namespace": "default"}});
        let errs = s().validate_create(&sa);
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].field, "metadata.name");
    }
}
