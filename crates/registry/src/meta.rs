//! ObjectMeta validation, as `k8s.io/apimachinery/pkg/api/validation/objectmeta.go`
//! (`ValidateObjectMetaAccessor`, `ValidateObjectMetaAccessorUpdate`) has it.
//!
//! The name and string checks it uses (`NameIsDNSSubdomain`, `IsQualifiedName`, …) live in
//! [`rkcm_labels::validation`] and are re-exported here for the registry's kinds.

use serde_json::Value;

use super::object::{get, get_str};
use super::FieldError;

/// A name validator: the messages for an invalid `name` (`prefix`: validating a
/// `generateName`, whose trailing dash is allowed). Same contract as `ValidateNameFunc`.
pub type NameValidator = fn(name: &str, prefix: bool) -> Vec<String>;

pub use rkcm_labels::validation::{
    is_dns1123_label, is_dns1123_subdomain, is_qualified_name, is_valid_label_value,
    name_is_dns1035_label, name_is_dns_label, name_is_dns_subdomain,
};

/// Largest total size of the annotations of one object (`TotalAnnotationSizeLimitB`).
pub const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;

/// `ValidatePathSegmentName`: names that cannot appear in a URL path.
pub fn validate_path_segment_name(name: &str, _prefix: bool) -> Vec<String> {
    let mut errs = Vec::new();
    if name == "." || name == ".." {
        errs.push(format!("may not be '{name}'"));
    }
    for illegal in ["/", "%"] {
        if name.contains(illegal) {
            errs.push(format!("may not contain '{illegal}'"));
        }
    }
    errs
}

/// `ValidateLabels` of a `map[string]string` at `path` (`metadata.labels`,
/// `spec.selector.matchLabels`, ...).
pub fn validate_labels(labels: Option<&Value>, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(labels) = labels else {
        return errs;
    };
    let Some(map) = labels.as_object() else {
        if !labels.is_null() {
            errs.push(FieldError::invalid(
                path,
                labels,
                "must be a map of strings",
            ));
        }
        return errs;
    };
    for (k, v) in map {
        for m in is_qualified_name(k) {
            errs.push(FieldError::invalid(path, &Value::String(k.clone()), &m));
        }
        match v.as_str() {
            Some(s) => {
                for m in is_valid_label_value(s) {
                    errs.push(FieldError::invalid(path, v, &m));
                }
            }
            None => errs.push(FieldError::invalid(path, v, "must be a string")),
        }
    }
    errs
}

/// `ValidateAnnotations`: qualified (lower-cased) keys and a total size limit.
pub fn validate_annotations(annotations: Option<&Value>, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(map) = annotations.and_then(Value::as_object) else {
        return errs;
    };
    let mut total = 0usize;
    for (k, v) in map {
        for m in is_qualified_name(&k.to_lowercase()) {
            errs.push(FieldError::invalid(path, &Value::String(k.clone()), &m));
        }
        total += k.len() + v.as_str().map_or(0, str::len);
    }
    if total > TOTAL_ANNOTATION_SIZE_LIMIT {
        errs.push(FieldError::too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT));
    }
    errs
}

/// `ValidateOwnerReferences`: required fields, and at most one controller.
pub fn validate_owner_references(refs: Option<&Value>, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(list) = refs.and_then(Value::as_array) else {
        return errs;
    };
    let mut first_controller: Option<String> = None;
    for r in list {
        let api_version = get_str(r, &["apiVersion"]).unwrap_or("");
        let kind = get_str(r, &["kind"]).unwrap_or("");
        let name = get_str(r, &["name"]).unwrap_or("");
        let uid = get_str(r, &["uid"]).unwrap_or("");
        let version = api_version.rsplit_once('/').map_or(api_version, |(_, v)| v);
        if version.is_empty() {
            errs.push(FieldError::invalid(
                format!("{path}.apiVersion"),
                &Value::String(api_version.to_string()),
                "version must not be empty",
            ));
        }
        for (field, value) in [("kind", kind), ("name", name), ("uid", uid)] {
            if value.is_empty() {
                errs.push(FieldError::invalid(
                    format!("{path}.{field}"),
                    &Value::String(String::new()),
                    "must not be empty",
                ));
            }
        }
        // BannedOwners: core events may not own anything.
        let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
        if group.is_empty() && version == "v1" && kind == "Event" {
            errs.push(FieldError::invalid(
                path,
                r,
                "/v1, Kind=Event is disallowed from being an owner",
            ));
        }
        if get(r, &["controller"]).and_then(Value::as_bool) == Some(true) {
            let current = format!("{kind}/{name}");
            match &first_controller {
                Some(first) => errs.push(FieldError::invalid(
                    path,
                    refs.unwrap_or(&Value::Null),
                    &format!(
                        "Only one reference can have Controller set to true. Found \"true\" in references for {first} and {current}"
                    ),
                )),
                None => first_controller = Some(current),
            }
        }
    }
    errs
}

/// `ValidateFinalizers` of `metadata.finalizers`.
pub fn validate_finalizers(finalizers: Option<&Value>, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(list) = finalizers.and_then(Value::as_array) else {
        return errs;
    };
    let names: Vec<&str> = list.iter().filter_map(Value::as_str).collect();
    for n in &names {
        for m in is_qualified_name(n) {
            errs.push(FieldError::invalid(path, &Value::String(n.to_string()), &m));
        }
    }
    if names.contains(&"orphan") && names.contains(&"foregroundDeletion") {
        errs.push(FieldError::invalid(
            path,
            finalizers.unwrap_or(&Value::Null),
            "finalizer orphan and foregroundDeletion cannot be both set",
        ));
    }
    errs
}

/// `ValidateObjectMetaAccessor` for a new object at `path` (`metadata`, or
/// `spec.template.metadata` with `namespaced` false and a lenient name validator).
pub fn validate_object_meta(
    obj: &Value,
    namespaced: bool,
    name_fn: NameValidator,
) -> Vec<FieldError> {
    let meta = get(obj, &["metadata"]).unwrap_or(&Value::Null);
    let mut errs = Vec::new();
    let generate_name = get_str(meta, &["generateName"]).unwrap_or("");
    if !generate_name.is_empty() {
        for m in name_fn(generate_name, true) {
            errs.push(FieldError::invalid(
                "metadata.generateName",
                &Value::String(generate_name.to_string()),
                &m,
            ));
        }
    }
    let name = get_str(meta, &["name"]).unwrap_or("");
    if name.is_empty() {
        errs.push(FieldError::required(
            "metadata.name",
            "name or generateName is required",
        ));
    } else {
        for m in name_fn(name, false) {
            errs.push(FieldError::invalid(
                "metadata.name",
                &Value::String(name.to_string()),
                &m,
            ));
        }
        for m in validate_path_segment_name(name, false) {
            errs.push(FieldError::invalid(
                "metadata.name",
                &Value::String(name.to_string()),
                &m,
            ));
        }
    }
    let namespace = get_str(meta, &["namespace"]).unwrap_or("");
    if namespaced {
        if namespace.is_empty() {
            errs.push(FieldError::required("metadata.namespace", ""));
        } else {
            for m in name_is_dns_label(namespace, false) {
                errs.push(FieldError::invalid(
                    "metadata.namespace",
                    &Value::String(namespace.to_string()),
                    &m,
                ));
            }
        }
    } else if !namespace.is_empty() {
        errs.push(FieldError::forbidden(
            "metadata.namespace",
            "not allowed on this type",
        ));
    }
    if let Some(g) = get(meta, &["generation"]).and_then(Value::as_i64) {
        if g < 0 {
            errs.push(FieldError::invalid(
                "metadata.generation",
                &Value::from(g),
                "must be greater than or equal to 0",
            ));
        }
    }
    errs.extend(validate_common_meta(meta));
    errs.extend(validate_finalizers(
        get(meta, &["finalizers"]),
        "metadata.finalizers",
    ));
    errs
}

fn validate_common_meta(meta: &Value) -> Vec<FieldError> {
    let mut errs = validate_labels(get(meta, &["labels"]), "metadata.labels");
    errs.extend(validate_annotations(
        get(meta, &["annotations"]),
        "metadata.annotations",
    ));
    errs.extend(validate_owner_references(
        get(meta, &["ownerReferences"]),
        "metadata.ownerReferences",
    ));
    errs
}

/// `ValidateObjectMetaAccessorUpdate`: immutable identity and timestamps, no new finalizers
/// while deleting, generation never decremented, and the label/annotation/owner checks.
///
/// The `resourceVersion` precondition is the server's (it answers 409, or fills it for
/// unconditional updates), so it is not checked here.
pub fn validate_object_meta_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let new_meta = get(new, &["metadata"]).unwrap_or(&Value::Null);
    let old_meta = get(old, &["metadata"]).unwrap_or(&Value::Null);
    let mut errs = Vec::new();

    if get(old_meta, &["deletionTimestamp"]).is_some_and(|v| !v.is_null()) {
        let old_f: Vec<&str> = get(old_meta, &["finalizers"])
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut extra: Vec<&str> = get(new_meta, &["finalizers"])
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        extra.retain(|f| !old_f.contains(f));
        extra.sort_unstable();
        extra.dedup();
        if !extra.is_empty() {
            let list: Vec<String> = extra.iter().map(|f| format!("{f:?}")).collect();
            errs.push(FieldError::forbidden(
                "metadata.finalizers",
                &format!(
                    "no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
                    list.join(", ")
                ),
            ));
        }
    }

    let new_gen = get(new_meta, &["generation"])
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let old_gen = get(old_meta, &["generation"])
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if new_gen < old_gen {
        errs.push(FieldError::invalid(
            "metadata.generation",
            &Value::from(new_gen),
            "must not be decremented",
        ));
    }

    for field in [
        "name",
        "namespace",
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
    ] {
        let n = get(new_meta, &[field]);
        let o = get(old_meta, &[field]);
        if !super::object::semantically_equal(n, o) {
            errs.push(FieldError::invalid(
                format!("metadata.{field}"),
                n.unwrap_or(&Value::Null),
                "field is immutable",
            ));
        }
    }
    // Unlike create, kube does not re-validate finalizer names on update.
    errs.extend(validate_common_meta(new_meta));
    errs
}

/// `ValidateImmutableField` for a subtree: `field is immutable` when `new` differs from `old`.
pub fn validate_immutable(new: Option<&Value>, old: Option<&Value>, path: &str) -> Vec<FieldError> {
    if super::object::semantically_equal(new, old) {
        Vec::new()
    } else {
        vec![FieldError::invalid(
            path,
            new.unwrap_or(&Value::Null),
            "field is immutable",
        )]
    }
}

/// `ValidateNonnegativeField` for an optional integer at `path`.
pub fn validate_nonnegative(value: Option<&Value>, path: &str) -> Vec<FieldError> {
    match value.and_then(Value::as_i64) {
        Some(n) if n < 0 => vec![FieldError::invalid(
            path,
            &Value::from(n),
            "must be greater than or equal to 0",
        )],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn dns_names_are_checked_as_kube_does() {
        assert!(name_is_dns_subdomain("web-1.example", false).is_empty());
        assert!(!name_is_dns_subdomain("Web", false).is_empty());
        assert!(name_is_dns_subdomain("web-", true).is_empty());
        assert!(!name_is_dns_subdomain("web-", false).is_empty());
        assert!(!name_is_dns_label("a.b", false).is_empty());
        assert_eq!(name_is_dns_label(&"a".repeat(64), false).len(), 1);
        assert!(!name_is_dns1035_label("1abc", false).is_empty());
        assert!(name_is_dns1035_label("abc-1", false).is_empty());
        assert_eq!(
            is_dns1123_label("A")[0],
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
        );
    }

    #[test]
    fn label_keys_and_values_follow_qualified_name_rules() {
        assert!(is_qualified_name("app.kubernetes.io/name").is_empty());
        assert!(is_qualified_name("MyName").is_empty());
        assert_eq!(
            is_qualified_name("/a"),
            vec!["prefix part must be non-empty"]
        );
        assert!(!is_qualified_name("a/b/c").is_empty());
        assert!(!is_qualified_name("-a").is_empty());
        assert!(is_valid_label_value("").is_empty());
        assert!(!is_valid_label_value("a b").is_empty());
        let errs = validate_labels(
            Some(&json!({"good": "x", "bad key": "y"})),
            "metadata.labels",
        );
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].field, "metadata.labels");
    }

    #[test]
    fn object_meta_needs_a_name_and_a_namespace_when_namespaced() {
        let errs = validate_object_meta(&json!({"metadata": {}}), true, name_is_dns_subdomain);
        let fields: Vec<&str> = errs.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["metadata.name", "metadata.namespace"]);
        let errs = validate_object_meta(
            &json!({"metadata": {"name": "a", "namespace": "ns"}}),
            false,
            name_is_dns_subdomain,
        );
        assert_eq!(errs[0].message, "Forbidden: not allowed on this type");
    }

    #[test]
    fn owner_references_need_their_fields_and_one_controller_at_most() {
        let refs = json!([
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "a", "uid": "1", "controller": true},
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "b", "uid": "2", "controller": true},
            {"apiVersion": "", "kind": "", "name": "", "uid": ""}
        ]);
        let errs = validate_owner_references(Some(&refs), "metadata.ownerReferences");
        let fields: Vec<&str> = errs.iter().map(|e| e.field.as_str()).collect();
        assert!(fields.contains(&"metadata.ownerReferences.apiVersion"));
        assert!(fields.contains(&"metadata.ownerReferences.uid"));
        assert!(errs.iter().any(|e| e
            .message
            .contains("Only one reference can have Controller set to true")));
    }

    #[test]
    fn metadata_identity_is_immutable_and_finalizers_cannot_grow_while_deleting() {
        let old = json!({"metadata": {"name": "a", "uid": "1", "deletionTimestamp": "2024-01-01T00:00:00Z", "finalizers": ["x/a"]}});
        let new = json!({"metadata": {"name": "b", "uid": "1", "deletionTimestamp": "2024-01-01T00:00:00Z", "finalizers": ["x/a", "x/b"]}});
        let errs = validate_object_meta_update(&new, &old);
        let fields: Vec<&str> = errs.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["metadata.finalizers", "metadata.name"]);
        assert_eq!(
            errs[1].message_with_field(),
            "metadata.name: Invalid value: \"b\": field is immutable"
        );
    }
}
