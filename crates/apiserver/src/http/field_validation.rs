//! Strict decoding (`fieldValidation`): unknown and duplicate fields of a body refused, warned
//! of or ignored, and unknown fields dropped from the object as kube's decoder drops them.

use serde_json::Value;

use rkcm_apimachinery::catalog::ResourceInfo;
use rkcm_apimachinery::validation;

use crate::error::{ApiError, ApiResult};
use crate::http::params::Params;

/// `fieldValidation`: unknown and duplicate fields are an error (`Strict`), warnings (`Warn`,
/// the default) or ignored (`Ignore`).
pub(crate) fn field_validation(params: &Params) -> ApiResult<&str> {
    let mode = params.non_empty("fieldValidation").unwrap_or("Warn");
    if !matches!(mode, "Strict" | "Warn" | "Ignore") {
        return Err(ApiError::bad_request(format!(
            "fieldValidation parameter unsupported: {mode:?}; supported values: \"Ignore\", \"Warn\", \"Strict\""
        )));
    }
    Ok(mode)
}

/// What strict decoding found in a body.
#[derive(Default)]
pub(crate) struct FieldCheck {
    /// `Warning` headers to send (`Warn` mode).
    pub(crate) warnings: Vec<String>,
    /// Paths of unknown fields, dropped from the object as kube's decoder drops them.
    pub(crate) unknown: Vec<String>,
}

/// Checks `body` (an object of `info`) for unknown and duplicate fields according to `mode`.
pub(crate) fn check_fields(info: &ResourceInfo, body: &[u8], mode: &str) -> ApiResult<FieldCheck> {
    let problems = match crate::crd::served::lookup(info) {
        // Custom resources: the fields pruning would drop (kube's unknown fields for them).
        Some(custom) => {
            // Without a built-in schema for the kind, the walk reports duplicate keys only.
            let mut problems = validation::check_fields(&info.api_version(), info.kind, body)
                .map_err(|e| ApiError::bad_request(format!("error decoding request body: {e}")))?;
            problems.extend(custom_resource_problems(&custom, body)?);
            problems
        }
        None => validation::check_fields(&info.api_version(), info.kind, body)
            .map_err(|e| ApiError::bad_request(format!("error decoding request body: {e}")))?,
    };
    if problems.is_empty() {
        return Ok(FieldCheck::default());
    }
    if mode == "Strict" {
        return Err(ApiError::bad_request(validation::strict_decoding_message(
            &problems,
        )));
    }
    let unknown = problems
        .iter()
        .filter_map(|p| match p {
            validation::FieldProblem::Unknown(path) => Some(path.clone()),
            validation::FieldProblem::Duplicate(_) => None,
        })
        .collect();
    let warnings = if mode == "Warn" {
        problems.iter().map(ToString::to_string).collect()
    } else {
        Vec::new()
    };
    Ok(FieldCheck { warnings, unknown })
}

/// The unknown fields of a custom resource body: what its schema's pruning removes, and the
/// unknown metadata fields of embedded resources (duplicate keys are found by the caller).
fn custom_resource_problems(
    custom: &crate::crd::served::ServedVersion,
    body: &[u8],
) -> ApiResult<Vec<validation::FieldProblem>> {
    let Some(schema) = custom.schema.as_ref() else {
        return Ok(Vec::new());
    };
    let mut obj: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding request body: {e}")))?;
    let mut unknown = schema.prune(&mut obj);
    if let Ok(dropped) = schema.coerce(&mut obj, true) {
        unknown.extend(dropped);
    }
    Ok(unknown
        .into_iter()
        .map(validation::FieldProblem::Unknown)
        .collect())
}

/// Removes the field at `path` (`spec.template.spec.containers[0].imagee`) from `obj`.
pub(crate) fn remove_path(obj: &mut Value, path: &str) {
    let mut segments: Vec<(String, Vec<usize>)> = Vec::new();
    for seg in path.split('.') {
        let (name, rest) = seg.split_once('[').map_or((seg, ""), |(n, r)| (n, r));
        let indexes = rest
            .split('[')
            .filter_map(|i| i.trim_end_matches(']').parse().ok())
            .collect();
        segments.push((name.to_string(), indexes));
    }
    let Some(((last, last_idx), parents)) = segments.split_last() else {
        return;
    };
    if !last_idx.is_empty() {
        return;
    }
    let mut cur = obj;
    for (name, indexes) in parents {
        let Some(next) = cur.get_mut(name.as_str()) else {
            return;
        };
        cur = next;
        for i in indexes {
            let Some(next) = cur.get_mut(*i) else { return };
            cur = next;
        }
    }
    if let Some(m) = cur.as_object_mut() {
        m.remove(last);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unknown_fields_are_removed_by_path() {
        let mut obj = json!({"spec": {"foo": 1, "template": {"spec": {"containers": [{"name": "c", "imagee": "x"}]}}}});
        remove_path(&mut obj, "spec.foo");
        remove_path(&mut obj, "spec.template.spec.containers[0].imagee");
        remove_path(&mut obj, "spec.missing.deeper");
        assert_eq!(
            obj,
            json!({"spec": {"template": {"spec": {"containers": [{"name": "c"}]}}}})
        );
    }
}
