//! ControllerRevisions: `data` is required and immutable, `revision` is not negative
//! (`ValidateControllerRevision`, `ValidateControllerRevisionUpdate`).

use rkcm_apimachinery::catalog::ResourceInfo;
use serde_json::Value;

use super::generic::GenericStrategy;
use super::meta::{validate_immutable, validate_nonnegative};
use super::object::get;
use super::simple::{no_defaults, SimpleStrategy};
use super::FieldError;

fn validate(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if get(obj, &["data"]).is_none_or(Value::is_null) {
        errs.push(FieldError::required("data", "data is mandatory"));
    }
    errs.extend(validate_nonnegative(get(obj, &["revision"]), "revision"));
    errs
}

fn validate_update(new: &Value, old: &Value) -> Vec<FieldError> {
    validate_immutable(get(new, &["data"]), get(old, &["data"]), "data")
}

/// The strategy of controller revisions.
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
    use crate::Strategy;
    use rkcm_apimachinery::catalog;
    use serde_json::json;

    #[test]
    fn data_is_mandatory_and_immutable() {
        let s = strategy(catalog::by_kind("apps/v1", "ControllerRevision").expect("served"));
        let bare = json!({"metadata": {"name": "r", "namespace": "default"}, "revision": -1});
        let fields: Vec<String> = s
            .validate_create(&bare)
            .iter()
            .map(|e| e.field.clone())
            .collect();
        assert_eq!(fields, ["data", "revision"]);
        let old = json!({"metadata": {"name": "r", "namespace": "default"}, "revision": 1, "data": {"a": 1}});
        let mut new = old.clone();
        new["data"] = json!({"a": 2});
        assert_eq!(
            s.validate_update(&new, &old)[0].message,
            "Invalid value: {\"a\":2}: field is immutable"
        );
    }
}
