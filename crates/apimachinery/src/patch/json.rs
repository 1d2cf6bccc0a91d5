//! RFC 6902 JSON patch, as kube applies `application/json-patch+json` bodies.

use serde_json::Value;

use super::PatchError;

/// Applies a JSON patch document to a copy of `original`.
///
/// A body that is not a list of operations is [`PatchError::Malformed`] (kube: 400); an operation
/// that cannot be applied (missing path, failed `test`) is [`PatchError::Failed`] (kube: 422).
pub fn apply(original: &Value, patch: &[u8]) -> Result<Value, PatchError> {
    let ops: json_patch::Patch = serde_json::from_slice(patch)
        .map_err(|e| PatchError::Malformed(format!("invalid JSON patch: {e}")))?;
    let mut doc = original.clone();
    json_patch::patch(&mut doc, &ops).map_err(|e| PatchError::Failed(e.to_string()))?;
    Ok(doc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn replace_and_add_operations_apply_in_order() {
        let original = json!({"spec":{"replicas":1},"metadata":{"name":"a"}});
        let out = apply(
            &original,
            br#"[{"op":"replace","path":"/spec/replicas","value":3},{"op":"add","path":"/metadata/labels","value":{"x":"y"}}]"#,
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"spec":{"replicas":3},"metadata":{"name":"a","labels":{"x":"y"}}})
        );
    }

    #[test]
    fn failed_test_operation_is_a_failure_not_malformed() {
        let err = apply(&json!({"a":1}), br#"[{"op":"test","path":"/a","value":2}]"#).unwrap_err();
        assert!(matches!(err, PatchError::Failed(_)));
    }

    #[test]
    fn removing_a_missing_path_fails() {
        let err = apply(&json!({"a":1}), br#"[{"op":"remove","path":"/b"}]"#).unwrap_err();
        assert!(matches!(err, PatchError::Failed(_)));
    }

    #[test]
    fn a_body_that_is_not_a_list_of_operations_is_malformed() {
        let err = apply(&json!({}), br#"{"op":"add"}"#).unwrap_err();
        assert!(matches!(err, PatchError::Malformed(_)));
        let err = apply(&json!({}), br#"[{"op":"frobnicate","path":"/a"}]"#).unwrap_err();
        assert!(matches!(err, PatchError::Malformed(_)));
    }
}
