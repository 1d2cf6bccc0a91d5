//! Namespaces: the `kubernetes` finalizer and `Active` phase on create, the
//! `kubernetes.io/metadata.name` label, finalizers kept out of ordinary updates, the
//! `/status` and `/finalize` rules, and the `Terminating` phase on delete.
//!
//! Mirrors `pkg/registry/core/namespace/strategy.go` and the namespace parts of
//! `pkg/apis/core/v1/defaults.go` and `pkg/apis/core/validation/validation.go`.

use rkcm_apimachinery::catalog::ResourceInfo;
use serde_json::{json, Value};

use super::generic::GenericStrategy;
use super::meta::{self, is_qualified_name};
use super::object::{copy, get, get_str, object_mut, set};
use super::{FieldError, GracefulDelete, Strategy};

/// The finalizer the namespace controller removes once the namespace is empty.
pub const FINALIZER_KUBERNETES: &str = "kubernetes";
/// The label every namespace carries with its own name (`v1.LabelMetadataName`).
pub const LABEL_METADATA_NAME: &str = "kubernetes.io/metadata.name";

/// `SetDefaults_Namespace` / `Canonicalize`: the `kubernetes.io/metadata.name` label.
fn set_name_label(obj: &mut Value) {
    let Some(name) = get_str(obj, &["metadata", "name"])
        .filter(|n| !n.is_empty())
        .map(str::to_string)
    else {
        return;
    };
    if let Some(labels) = object_mut(obj, &["metadata", "labels"]) {
        labels.insert(LABEL_METADATA_NAME.to_string(), json!(name));
    }
}

/// `validateFinalizerName` of core validation: a qualified name, and a standard one when it
/// has no prefix.
fn validate_spec_finalizers(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for f in get(obj, &["spec", "finalizers"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let name = f.as_str().unwrap_or("");
        for m in is_qualified_name(name) {
            errs.push(FieldError::invalid("spec.finalizers", f, &m));
        }
        if !name.contains('/') && name != FINALIZER_KUBERNETES {
            errs.push(FieldError::invalid(
                "spec.finalizers",
                f,
                "name is neither a standard finalizer name nor is it fully qualified",
            ));
        }
    }
    errs
}

/// Prepares an update through `/finalize` (`namespaceFinalizeStrategy`): only
/// `spec.finalizers` may change; the status is the old one.
pub fn prepare_for_finalize(new: &mut Value, old: &Value) {
    super::generation::carry_over_meta(new, old);
    copy(new, old, &["status"]);
}

/// Validates an update through `/finalize` (`ValidateNamespaceFinalizeUpdate`).
pub fn validate_finalize(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = meta::validate_object_meta_update(new, old);
    errs.extend(validate_spec_finalizers(new));
    errs
}

/// What a DELETE of a namespace does first (`namespace REST Delete`): set the phase to
/// `Terminating`. The server also sets `deletionTimestamp`, and removes the namespace only
/// once both `spec.finalizers` and `metadata.finalizers` are empty.
pub fn mark_terminating(obj: &mut Value) {
    set(obj, &["status", "phase"], Some(json!("Terminating")));
}

/// Whether `spec.finalizers` is empty, so that a terminating namespace may be removed.
pub fn spec_finalizers_empty(obj: &Value) -> bool {
    get(obj, &["spec", "finalizers"])
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty)
}

/// The strategy of namespaces.
pub(crate) struct NamespaceStrategy {
    base: GenericStrategy,
}

impl NamespaceStrategy {
    /// The strategy of `info` (core/v1 namespaces).
    pub(crate) fn new(info: &'static ResourceInfo) -> Self {
        NamespaceStrategy {
            base: GenericStrategy::new(info).with_name_validator(meta::name_is_dns_label),
        }
    }
}

impl Strategy for NamespaceStrategy {
    fn resource(&self) -> &'static ResourceInfo {
        self.base.resource()
    }

    fn default(&self, obj: &mut Value) {
        set_name_label(obj);
        if get_str(obj, &["status", "phase"]).is_none_or(str::is_empty) {
            set(obj, &["status", "phase"], Some(json!("Active")));
        }
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        self.base.prepare_for_create(obj);
        set(obj, &["status"], Some(json!({"phase": "Active"})));
        // On create the kubernetes finalizer is required; it is not a default because the
        // namespace controller removes it over the life of the namespace.
        let Some(spec) = object_mut(obj, &["spec"]) else {
            return;
        };
        let finalizers = spec
            .entry("finalizers".to_string())
            .or_insert_with(|| json!([]));
        if !finalizers.is_array() {
            *finalizers = json!([]);
        }
        if let Some(list) = finalizers.as_array_mut() {
            if !list.iter().any(|f| f == FINALIZER_KUBERNETES) {
                list.push(json!(FINALIZER_KUBERNETES));
            }
        }
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        self.base.prepare_for_update(new, old);
        copy(new, old, &["spec", "finalizers"]);
        set_name_label(new);
    }

    fn prepare_for_status_update(&self, new: &mut Value, old: &Value) {
        // kube defaults every decoded body, status updates included.
        self.default(new);
        self.base.prepare_for_status_update(new, old);
    }

    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = self.base.validate_create(obj);
        errs.extend(validate_spec_finalizers(obj));
        errs
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = self.base.validate_update(new, old);
        // ValidateNamespaceStatusUpdate: the phase follows the deletion timestamp.
        let deleting = get(new, &["metadata", "deletionTimestamp"]).is_some_and(|v| !v.is_null());
        let phase = get(new, &["status", "phase"]).cloned().unwrap_or(json!(""));
        if !deleting && phase != "Active" {
            errs.push(FieldError::invalid(
                "status.Phase",
                &phase,
                "A namespace may only be in active status if it does not have a deletion timestamp.",
            ));
        }
        if deleting && phase != "Terminating" {
            errs.push(FieldError::invalid(
                "status.Phase",
                &phase,
                "A namespace may only be in terminating status if it has a deletion timestamp.",
            ));
        }
        errs
    }

    fn field_value(&self, obj: &Value, field: &str) -> Option<String> {
        match field {
            "status.phase" => Some(get_str(obj, &["status", "phase"]).unwrap_or("").to_string()),
            // A bug kube keeps for backward compatibility (NamespaceToSelectableFields).
            "name" => self.base.field_value(obj, "metadata.name"),
            _ => self.base.field_value(obj, field),
        }
    }

    fn graceful_delete(&self, obj: &Value, requested_grace: Option<i64>) -> GracefulDelete {
        self.base.graceful_delete(obj, requested_grace)
    }

    fn scale_replicas(&self, obj: &Value) -> Option<(i32, i32, String)> {
        self.base.scale_replicas(obj)
    }

    fn set_scale_replicas(&self, obj: &mut Value, replicas: i32) -> Result<(), FieldError> {
        self.base.set_scale_replicas(obj, replicas)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rkcm_apimachinery::catalog;

    fn strategy() -> NamespaceStrategy {
        NamespaceStrategy::new(catalog::by_kind("v1", "Namespace").expect("served"))
    }

    fn created(name: &str) -> Value {
        let mut ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
        strategy().default(&mut ns);
        strategy().prepare_for_create(&mut ns);
        ns
    }

    #[test]
    fn create_adds_the_kubernetes_finalizer_the_active_phase_and_the_name_label() {
        let ns = created("team-a");
        assert_eq!(ns["spec"]["finalizers"], json!(["kubernetes"]));
        assert_eq!(ns["status"], json!({"phase": "Active"}));
        assert_eq!(ns["metadata"]["labels"][LABEL_METADATA_NAME], "team-a");
        assert!(strategy().validate_create(&ns).is_empty());
    }

    #[test]
    fn names_must_be_dns_labels() {
        let errs = strategy().validate_create(&created("a.b"));
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].field, "metadata.name");
    }

    #[test]
    fn ordinary_updates_cannot_change_finalizers_or_status_but_finalize_can() {
        let s = strategy();
        let old = created("team-a");
        let mut new = old.clone();
        new["spec"]["finalizers"] = json!([]);
        new["status"]["phase"] = json!("Terminating");
        s.prepare_for_update(&mut new, &old);
        assert_eq!(new["spec"]["finalizers"], json!(["kubernetes"]));
        assert_eq!(new["status"]["phase"], "Active");
        let mut fin = old.clone();
        fin["spec"]["finalizers"] = json!([]);
        prepare_for_finalize(&mut fin, &old);
        assert!(validate_finalize(&fin, &old).is_empty());
        assert!(spec_finalizers_empty(&fin));
    }

    #[test]
    fn the_phase_must_follow_the_deletion_timestamp() {
        let s = strategy();
        let old = created("team-a");
        let mut new = old.clone();
        new["status"]["phase"] = json!("Terminating");
        s.prepare_for_status_update(&mut new, &old);
        assert_eq!(s.validate_update(&new, &old)[0].field, "status.Phase");
        let mut deleting = old.clone();
        deleting["metadata"]["deletionTimestamp"] = json!("2024-01-01T00:00:00Z");
        mark_terminating(&mut deleting);
        assert_eq!(
            s.field_value(&deleting, "status.phase").as_deref(),
            Some("Terminating")
        );
        assert_eq!(s.field_value(&deleting, "name").as_deref(), Some("team-a"));
    }
}
