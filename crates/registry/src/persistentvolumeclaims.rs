//! PersistentVolumeClaims: the defaults of `SetDefaults_PersistentVolumeClaim(Spec)`, the
//! checks of `ValidatePersistentVolumeClaim` / `ValidatePersistentVolumeClaimUpdate` (access
//! modes, a positive storage request, selector, data sources, an immutable spec except the
//! requests of bound claims), the data-source normalisation and the spec/status split of
//! `pkg/registry/core/persistentvolumeclaim/strategy.go`.
//!
//! Feature gates as kube 1.33 defaults them: `RecoverVolumeExpansionFailure` is on (a bound
//! claim may shrink its request down to just above `status.capacity`), `VolumeAttributesClass`
//! is off (`volumeAttributesClassName` is dropped unless the old claim has it, and changing it
//! is forbidden).

use rkcm_apimachinery::catalog::ResourceInfo;
use serde_json::{json, Map, Value};

use super::generic::GenericStrategy;
use super::hooked::{HookedStrategy, Hooks};
use super::meta::{is_dns1123_label, is_dns1123_subdomain, validate_immutable};
use super::object::{get, get_str, object_mut, semantically_equal, set};
use super::persistentvolumes::{drop_volume_attributes_class, validate_access_modes, VOLUME_MODES};
use super::podspec::push_invalid_names;
use super::resources::{
    default_resource_list, entries, validate_basic_resource, validate_positive_quantity,
    validate_quantity_value,
};
use super::selector::validate_label_selector;
use super::FieldError;
use rkcm_apimachinery::quantity::Quantity;

const BETA_STORAGE_CLASS_ANNOTATION: &str = "volume.beta.kubernetes.io/storage-class";

/// `SetDefaults_PersistentVolumeClaim`, `SetDefaults_PersistentVolumeClaimSpec` and
/// `SetDefaults_ResourceList` of the requests, limits and status lists.
fn default_pvc(obj: &mut Value) {
    if let Some(spec) = object_mut(obj, &["spec"]) {
        if spec.get("volumeMode").is_none_or(Value::is_null) {
            spec.insert("volumeMode".to_string(), json!("Filesystem"));
        }
        if let Some(resources) = spec.get_mut("resources") {
            default_resource_list(resources.get_mut("requests"));
            default_resource_list(resources.get_mut("limits"));
        }
    }
    if let Some(status) = object_mut(obj, &["status"]) {
        super::object::default_field(status, "phase", json!("Pending"));
        default_resource_list(status.get_mut("capacity"));
        default_resource_list(status.get_mut("allocatedResources"));
    }
}

/// `NormalizeDataSources`: an old-style `dataSource` is mirrored into `dataSourceRef`, and a
/// `dataSourceRef` without namespace into `dataSource`.
fn normalize_data_sources(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let present =
        |spec: &Map<String, Value>, key: &str| spec.get(key).is_some_and(|v| !v.is_null());
    let copy_ref = |from: &Value| {
        let mut out = Map::new();
        for key in ["apiGroup", "kind", "name"] {
            if let Some(v) = from.get(key).filter(|v| !v.is_null()) {
                out.insert(key.to_string(), v.clone());
            }
        }
        Value::Object(out)
    };
    if present(spec, "dataSource") && !present(spec, "dataSourceRef") {
        let r = copy_ref(&spec["dataSource"]);
        spec.insert("dataSourceRef".to_string(), r);
    } else if present(spec, "dataSourceRef") && !present(spec, "dataSource") {
        let ns = spec["dataSourceRef"]
            .get("namespace")
            .and_then(Value::as_str);
        if ns.is_none_or(str::is_empty) {
            let r = copy_ref(&spec["dataSourceRef"]);
            spec.insert("dataSource".to_string(), r);
        }
    }
}

/// `PrepareForCreate`: a fresh status (shown as `Pending`, as kube's defaulting shows it on
/// every read), disabled fields dropped, data sources normalised.
fn prepare_create(obj: &mut Value) {
    set(obj, &["status"], Some(json!({"phase": "Pending"})));
    drop_volume_attributes_class(obj, None);
    normalize_data_sources(obj);
}

fn prepare_update(new: &mut Value, old: &Value) {
    drop_volume_attributes_class(new, Some(old));
    normalize_data_sources(new);
}

fn prepare_status_update(_new: &mut Value, _old: &Value) {}

/// `validateDataSource` / `validateDataSourceRef`.
fn validate_data_source(source: &Value, path: &str, is_ref: bool, errs: &mut Vec<FieldError>) {
    let text = |key: &str| get_str(source, &[key]).unwrap_or("");
    if text("name").is_empty() {
        errs.push(FieldError::required(format!("{path}.name"), ""));
    }
    if text("kind").is_empty() {
        errs.push(FieldError::required(format!("{path}.kind"), ""));
    }
    let group = text("apiGroup");
    if !group.is_empty() {
        push_invalid_names(
            errs,
            &format!("{path}.apiGroup"),
            group,
            is_dns1123_subdomain(group),
        );
    } else if text("kind") != "PersistentVolumeClaim" {
        errs.push(FieldError::invalid(
            path,
            &json!(text("kind")),
            "must be 'PersistentVolumeClaim' when referencing the default apiGroup",
        ));
    }
    if is_ref {
        let ns = text("namespace");
        if !ns.is_empty() {
            push_invalid_names(errs, &format!("{path}.namespace"), ns, is_dns1123_label(ns));
        }
    }
}

/// `field.Invalid(fldPath, fldPath.Child("dataSource"), …)`: kube's bad value is a path,
/// printed unquoted.
fn invalid_data_source(detail: &str) -> FieldError {
    FieldError {
        field: "spec".to_string(),
        kind: super::FieldErrorKind::Invalid,
        message: format!("Invalid value: spec.dataSource: {detail}"),
    }
}

/// `ValidatePersistentVolumeClaimSpec`.
fn validate(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let empty = Value::Object(Map::new());
    let spec = get(obj, &["spec"])
        .filter(|s| s.is_object())
        .unwrap_or(&empty);
    let modes = get(spec, &["accessModes"]);
    if modes.and_then(Value::as_array).is_none_or(Vec::is_empty) {
        errs.push(FieldError::required(
            "spec.accessModes",
            "at least 1 access mode is required",
        ));
    }
    if let Some(selector) = get(spec, &["selector"]).filter(|v| !v.is_null()) {
        errs.extend(validate_label_selector(Some(selector), "spec.selector"));
    }
    validate_access_modes(modes, "spec.accessModes", &mut errs);

    // kube names this path without `requests`.
    let storage_path = "spec.resources[storage]";
    match get(spec, &["resources", "requests", "storage"]) {
        None => errs.push(FieldError::required(storage_path, "")),
        Some(q) => {
            let positive = validate_positive_quantity(q, storage_path);
            if positive.is_empty() {
                errs.extend(validate_quantity_value("storage", q, storage_path));
            } else {
                errs.extend(positive);
            }
        }
    }
    if let Some(class) = get_str(spec, &["storageClassName"]).filter(|c| !c.is_empty()) {
        push_invalid_names(
            &mut errs,
            "spec.storageClassName",
            class,
            is_dns1123_subdomain(class),
        );
    }
    if let Some(mode) = get(spec, &["volumeMode"]).filter(|v| !v.is_null()) {
        if !VOLUME_MODES.contains(&mode.as_str().unwrap_or("?")) {
            errs.push(FieldError::not_supported(
                "spec.volumeMode",
                mode,
                VOLUME_MODES,
            ));
        }
    }
    let source = get(spec, &["dataSource"]).filter(|v| !v.is_null());
    let source_ref = get(spec, &["dataSourceRef"]).filter(|v| !v.is_null());
    if let Some(s) = source {
        validate_data_source(s, "spec.dataSource", false, &mut errs);
    }
    if let Some(r) = source_ref {
        validate_data_source(r, "spec.dataSourceRef", true, &mut errs);
    }
    let ref_namespace = source_ref
        .and_then(|r| get_str(r, &["namespace"]))
        .filter(|ns| !ns.is_empty());
    match (source, source_ref) {
        (Some(_), Some(_)) if ref_namespace.is_some() => errs.push(invalid_data_source(
            "may not be specified when dataSourceRef.namespace is specified",
        )),
        (Some(s), Some(r)) => {
            let same = ["apiGroup", "kind", "name"]
                .iter()
                .all(|k| get_str(s, &[k]).unwrap_or("") == get_str(r, &[k]).unwrap_or(""));
            if !same {
                errs.push(invalid_data_source("must match dataSourceRef"));
            }
        }
        _ => {}
    }
    errs
}

/// `ValidatePersistentVolumeClaimUpdate`.
fn validate_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = validate(new);
    let mut new_spec = get(new, &["spec"]).cloned().unwrap_or(Value::Null);
    let mut old_spec = get(old, &["spec"]).cloned().unwrap_or(Value::Null);
    // The volume name may be set once, by the binder.
    if get_str(old, &["spec", "volumeName"]).is_none_or(str::is_empty) {
        let name = get(&new_spec, &["volumeName"]).cloned();
        set(&mut old_spec, &["volumeName"], name);
    }
    // The beta storage-class annotation may be replaced by the field once, with the same
    // value; otherwise the annotation is immutable and an unset class may be set once.
    let annotation = |o: &Value| {
        get_str(
            o,
            &["metadata", "annotations", BETA_STORAGE_CLASS_ANNOTATION],
        )
        .map(str::to_string)
    };
    let (old_ann, new_ann) = (annotation(old), annotation(new));
    let old_class = get_str(old, &["spec", "storageClassName"]);
    let new_class = get_str(new, &["spec", "storageClassName"]);
    if old_ann.is_some()
        && old_class.is_none()
        && new_class.is_some()
        && new_class == old_ann.as_deref()
        && new_ann.as_ref().is_none_or(|a| Some(a) == old_ann.as_ref())
    {
        set(&mut new_spec, &["storageClassName"], None);
    } else {
        // `ValidateImmutableAnnotation` (a missing annotation reads as "").
        let (new_text, old_text) = (
            new_ann.unwrap_or_default(),
            old_ann.clone().unwrap_or_default(),
        );
        if new_text != old_text {
            errs.push(FieldError::invalid(
                format!("metadata.annotations.{BETA_STORAGE_CLASS_ANNOTATION}"),
                &json!(new_text),
                "field is immutable",
            ));
        }
        // `validateStorageClassUpgradeFromNil` (RetroactiveDefaultStorageClass is GA).
        if old_ann.is_none() && old_class.is_none() && new_class.is_some_and(|c| !c.is_empty()) {
            set(&mut new_spec, &["storageClassName"], None);
        }
    }
    let bound = get_str(new, &["status", "phase"]) == Some("Bound");
    if bound {
        if get(&new_spec, &["resources", "requests"]).is_some() {
            let old_storage = get(old, &["spec", "resources", "requests", "storage"]).cloned();
            set(
                &mut new_spec,
                &["resources", "requests", "storage"],
                old_storage,
            );
        }
        if get(&new_spec, &["volumeAttributesClassName"]).is_some() {
            let old_vac = get(&old_spec, &["volumeAttributesClassName"]).cloned();
            set(&mut new_spec, &["volumeAttributesClassName"], old_vac);
        }
    }
    if !semantically_equal(Some(&new_spec), Some(&old_spec)) {
        // kube appends a `cmp.Diff` of the two specs to this message; it is not reproduced.
        errs.push(FieldError::forbidden(
            "spec",
            "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims",
        ));
    }
    let size = |o: &Value, path: &[&str]| {
        get(o, path)
            .and_then(|v| Quantity::from_json(v).ok())
            .unwrap_or_default()
    };
    let old_size = size(old, &["spec", "resources", "requests", "storage"]);
    let new_size = size(new, &["spec", "resources", "requests", "storage"]);
    let status_size = size(old, &["status", "capacity", "storage"]);
    // RecoverVolumeExpansionFailure: a request may shrink, but not to or below the capacity.
    if new_size < old_size && new_size <= status_size {
        errs.push(FieldError::forbidden(
            "spec.resources.requests.storage",
            "field can not be less than status.capacity",
        ));
    }
    errs.extend(validate_immutable(
        get(new, &["spec", "volumeMode"]),
        get(old, &["spec", "volumeMode"]),
        "volumeMode",
    ));
    // From `ValidatePersistentVolumeClaimStatusUpdate` (a full update keeps the old status).
    for (name, q) in entries(get(new, &["status", "capacity"])) {
        errs.extend(validate_basic_resource(
            q,
            &format!("status.capacity[{name}]"),
        ));
    }
    if !semantically_equal(
        get(new, &["spec", "volumeAttributesClassName"]),
        get(old, &["spec", "volumeAttributesClassName"]),
    ) {
        errs.push(FieldError::forbidden(
            "spec.volumeAttributesClassName",
            "update is forbidden when the VolumeAttributesClass feature gate is disabled",
        ));
    }
    errs
}

static HOOKS: Hooks = Hooks {
    default: default_pvc,
    prepare_create,
    prepare_update,
    prepare_status_update,
    validate,
    validate_update,
    // kube's `GetAttrs` adds `name`, but v1 registers no field label conversion for claims,
    // so only the metadata fields are accepted.
    fields: &[],
};

/// The strategy of persistent volume claims.
pub(crate) fn strategy(info: &'static ResourceInfo) -> HookedStrategy {
    HookedStrategy::new(GenericStrategy::new(info), HOOKS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Strategy;
    use rkcm_apimachinery::catalog;

    fn s() -> HookedStrategy {
        strategy(catalog::by_kind("v1", "PersistentVolumeClaim").expect("served"))
    }

    fn claim(spec: Value) -> Value {
        json!({"metadata": {"name": "c", "namespace": "default"}, "spec": spec})
    }

    fn valid() -> Value {
        claim(json!({"accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "10G"}}, "storageClassName": "fast"}))
    }

    fn messages(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(FieldError::message_with_field).collect()
    }

    fn created(obj: Value) -> Value {
        let mut obj = obj;
        s().default(&mut obj);
        s().prepare_for_create(&mut obj);
        obj
    }

    #[test]
    fn claims_default_to_filesystem_and_start_pending() {
        let mut obj = valid();
        obj["spec"]["resources"]["requests"]["storage"] = json!(5);
        obj["status"] = json!({"phase": "Bound"});
        let obj = created(obj);
        assert_eq!(obj["spec"]["volumeMode"], "Filesystem");
        assert_eq!(obj["spec"]["resources"]["requests"]["storage"], "5");
        assert_eq!(obj["status"], json!({"phase": "Pending"}));
        assert!(s().validate_create(&obj).is_empty());
    }

    #[test]
    fn claims_are_validated_as_kube_does() {
        // Cases of TestValidatePersistentVolumeClaim (validation_test.go).
        let with = |path: &[&str], v: Option<Value>| {
            let mut obj = valid();
            set(&mut obj, path, v);
            obj
        };
        let cases: Vec<(Value, Vec<&str>)> = vec![
            (valid(), vec![]),
            (
                with(&["spec", "accessModes"], None),
                vec!["spec.accessModes: Required value: at least 1 access mode is required"],
            ),
            (
                with(&["spec", "accessModes"], Some(json!(["fakemode"]))),
                vec!["spec.accessModes: Unsupported value: \"fakemode\": supported values: \"ReadOnlyMany\", \"ReadWriteMany\", \"ReadWriteOnce\", \"ReadWriteOncePod\""],
            ),
            (
                with(&["spec", "resources"], None),
                vec!["spec.resources[storage]: Required value"],
            ),
            (
                with(&["spec", "resources", "requests", "storage"], Some(json!("0"))),
                vec!["spec.resources[storage]: Invalid value: \"0\": must be greater than zero"],
            ),
            (
                with(&["spec", "selector"], Some(json!({"matchExpressions": [{"key": "k", "operator": "InvalidOp", "values": ["v"]}]}))),
                vec!["spec.selector.matchExpressions[0].operator: Invalid value: \"InvalidOp\": not a valid selector operator"],
            ),
            (
                with(&["spec", "storageClassName"], Some(json!("Bad_Class"))),
                vec!["spec.storageClassName: Invalid value: \"Bad_Class\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"],
            ),
            (
                with(&["spec", "dataSource"], Some(json!({"kind": "PersistentVolumeClaim", "name": "src"}))),
                vec![],
            ),
            (
                with(&["spec", "dataSource"], Some(json!({"kind": "Pod", "name": "src"}))),
                vec!["spec.dataSource: Invalid value: \"Pod\": must be 'PersistentVolumeClaim' when referencing the default apiGroup"],
            ),
            (
                with(&["spec", "dataSource"], Some(json!({"apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot"}))),
                vec!["spec.dataSource.name: Required value"],
            ),
        ];
        for (obj, want) in cases {
            let mut obj = obj;
            s().default(&mut obj);
            assert_eq!(messages(&s().validate_create(&obj)), want, "{obj}");
        }
        let mut both = valid();
        both["spec"]["dataSource"] = json!({"kind": "PersistentVolumeClaim", "name": "a"});
        both["spec"]["dataSourceRef"] = json!({"kind": "PersistentVolumeClaim", "name": "b"});
        assert_eq!(
            messages(&s().validate_create(&both)),
            ["spec: Invalid value: spec.dataSource: must match dataSourceRef"]
        );
        both["spec"]["dataSourceRef"]["namespace"] = json!("other");
        assert_eq!(
            messages(&s().validate_create(&both)),
            ["spec: Invalid value: spec.dataSource: may not be specified when dataSourceRef.namespace is specified"]
        );
    }

    #[test]
    fn data_sources_are_mirrored_on_create() {
        let mut old_style = valid();
        old_style["spec"]["dataSource"] = json!({"kind": "PersistentVolumeClaim", "name": "a"});
        let obj = created(old_style);
        assert_eq!(
            obj["spec"]["dataSourceRef"],
            json!({"kind": "PersistentVolumeClaim", "name": "a"})
        );
        let mut new_style = valid();
        new_style["spec"]["dataSourceRef"] =
            json!({"apiGroup": "example.com", "kind": "Populator", "name": "p"});
        let obj = created(new_style);
        assert_eq!(
            obj["spec"]["dataSource"],
            json!({"apiGroup": "example.com", "kind": "Populator", "name": "p"})
        );
        let mut cross = valid();
        cross["spec"]["dataSourceRef"] =
            json!({"apiGroup": "example.com", "kind": "Populator", "name": "p", "namespace": "ns"});
        assert_eq!(created(cross)["spec"].get("dataSource"), None);
        let mut vac = valid();
        vac["spec"]["volumeAttributesClassName"] = json!("gold");
        assert_eq!(created(vac)["spec"].get("volumeAttributesClassName"), None);
    }

    #[test]
    fn only_bound_claims_may_resize_and_never_to_or_below_their_capacity() {
        // Cases of TestValidatePersistentVolumeClaimUpdate (validation_test.go).
        let old = created(valid());
        let mut unbound_resize = old.clone();
        unbound_resize["spec"]["resources"]["requests"]["storage"] = json!("20G");
        assert_eq!(
            messages(&s().validate_update(&unbound_resize, &old)),
            ["spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"]
        );

        let mut bound = old.clone();
        bound["spec"]["volumeName"] = json!("pv-1");
        assert!(
            s().validate_update(&bound, &old).is_empty(),
            "the binder sets volumeName once"
        );
        bound["status"] = json!({"phase": "Bound", "capacity": {"storage": "10G"}});
        let mut grow = bound.clone();
        grow["spec"]["resources"]["requests"]["storage"] = json!("20G");
        assert!(s().validate_update(&grow, &bound).is_empty());
        let mut shrink = grow.clone();
        shrink["spec"]["resources"]["requests"]["storage"] = json!("10G");
        assert_eq!(
            messages(&s().validate_update(&shrink, &grow)),
            ["spec.resources.requests.storage: Forbidden: field can not be less than status.capacity"]
        );
        let mut partial = grow.clone();
        partial["spec"]["resources"]["requests"]["storage"] = json!("15G");
        assert!(s().validate_update(&partial, &grow).is_empty());

        let mut renamed = bound.clone();
        renamed["spec"]["volumeName"] = json!("pv-2");
        assert_eq!(
            messages(&s().validate_update(&renamed, &bound)),
            ["spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"]
        );
        let mut block = bound.clone();
        block["spec"]["volumeMode"] = json!("Block");
        assert_eq!(
            messages(&s().validate_update(&block, &bound)),
            [
                "spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims",
                "volumeMode: Invalid value: \"Block\": field is immutable"
            ]
        );
    }

    #[test]
    fn beta_storage_class_annotation_may_become_the_field_once() {
        let mut old = claim(json!({"accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}}}));
        old["metadata"]["annotations"] = json!({BETA_STORAGE_CLASS_ANNOTATION: "fast"});
        let old = created(old);
        let mut upgraded = old.clone();
        upgraded["spec"]["storageClassName"] = json!("fast");
        assert!(s().validate_update(&upgraded, &old).is_empty());
        let mut other = old.clone();
        other["spec"]["storageClassName"] = json!("slow");
        assert_eq!(
            messages(&s().validate_update(&other, &old)),
            ["spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"]
        );
        let mut unset = created(claim(json!({"accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}}})));
        let before = unset.clone();
        unset["spec"]["storageClassName"] = json!("standard");
        assert!(
            s().validate_update(&unset, &before).is_empty(),
            "an unset class may be set once"
        );
    }

    #[test]
    fn status_updates_keep_the_spec() {
        let old = created(valid());
        let mut status = old.clone();
        status["spec"]["accessModes"] = json!(["ReadWriteMany"]);
        status["status"] = json!({"phase": "Bound", "capacity": {"storage": 10}});
        s().prepare_for_status_update(&mut status, &old);
        assert_eq!(status["spec"], old["spec"]);
        assert_eq!(status["status"]["capacity"]["storage"], "10");
        let mut negative = status.clone();
        negative["status"]["capacity"]["storage"] = json!("-1");
        assert_eq!(
            messages(&s().validate_update(&negative, &status)),
            ["status.capacity[storage]: Invalid value: -1: must be a valid resource quantity"]
        );
        let mut spec_update = old.clone();
        spec_update["status"] = json!({"phase": "Lost"});
        s().prepare_for_update(&mut spec_update, &old);
        assert_eq!(spec_update["status"], old["status"]);
    }
}
