//! RFC 7386 JSON merge patch, as kube applies `application/merge-patch+json` bodies.

use serde_json::Value;

use super::PatchError;

/// Applies a JSON merge patch to a copy of `original`: objects merge key by key, `null` deletes
/// a key, and any other value (lists included) replaces the original value.
pub fn apply(original: &Value, patch: &[u8]) -> Result<Value, PatchError> {
    let patch: Value = serde_json::from_slice(patch)
        .map_err(|e| PatchError::Malformed(format!("invalid JSON merge patch: {e}")))?;
    if !patch.is_object() {
        // kube decodes the result into the object's type; a non-object patch would replace the
        // whole object with something that is not an object.
        return Err(PatchError::Malformed(
            "a JSON merge patch for an object must be a JSON object".to_string(),
        ));
    }
    let mut doc = original.clone();
    json_patch::merge(&mut doc, &patch);
    Ok(doc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_patch_merges_maps_deletes_nulls_and_replaces_lists() {
        let original =
            json!({"metadata":{"labels":{"a":"1","b":"2"}},"spec":{"list":[1,2,3],"replicas":1}});
        let out = apply(
            &original,
            br#"{"metadata":{"labels":{"a":null,"c":"3"}},"spec":{"list":[4]}}"#,
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"metadata":{"labels":{"b":"2","c":"3"}},"spec":{"list":[4],"replicas":1}})
        );
    }

    #[test]
    fn scale_patch_sets_replicas() {
        let out = apply(
            &json!({"spec":{"replicas":1}}),
            br#"{"spec":{"replicas":5}}"#,
        )
        .unwrap();
        assert_eq!(out["spec"]["replicas"], 5);
    }

    #[test]
    fn invalid_json_and_non_objects_are_malformed() {
        assert!(matches!(
            apply(&json!({}), b"{"),
            Err(PatchError::Malformed(_))
        ));
        assert!(matches!(
            apply(&json!({}), b"[1]"),
            Err(PatchError::Malformed(_))
        ));
    }
}
