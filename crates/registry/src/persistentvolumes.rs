//! PersistentVolumes: the defaults of `SetDefaults_PersistentVolume`, the essentials of
//! `ValidatePersistentVolume` / `ValidatePersistentVolumeUpdate` (one volume source, a
//! positive `storage` capacity, access modes, reclaim policy, node affinity, immutable
//! source and volume mode), and the status bookkeeping of
//! `pkg/registry/core/persistentvolume/strategy.go` (`Pending` on create, the time of the last
//! phase transition).
//!
//! Left out: the per-source field checks of the deprecated in-tree sources (only `hostPath`,
//! `nfs`, `local` and `csi` are checked inside), and `volumeAttributesClassName`, which is
//! dropped as kube does while the `VolumeAttributesClass` gate is off (1.33 default).

use rkcm_apimachinery::catalog::ResourceInfo;
use serde_json::{json, Map, Value};

use super::generic::GenericStrategy;
use super::hooked::{HookedStrategy, Hooks};
use super::meta::{is_dns1123_subdomain, validate_immutable};
use super::object::{default_field, get, get_str, object_mut, semantically_equal, set};
use super::podspec::push_invalid_names;
use super::resources::{
    default_resource_list, entries, validate_basic_resource, validate_positive_quantity,
};
use super::FieldError;

/// `supportedAccessModes` (with `ReadWriteOncePod`), sorted.
const ACCESS_MODES: &[&str] = &[
    "ReadOnlyMany",
    "ReadWriteMany",
    "ReadWriteOnce",
    "ReadWriteOncePod",
];
/// `supportedVolumeModes`, sorted.
pub(crate) const VOLUME_MODES: &[&str] = &["Block", "Filesystem"];
const RECLAIM_POLICIES: &[&str] = &["Delete", "Recycle", "Retain"];
const HOST_PATH_TYPES: &[&str] = &[
    "",
    "BlockDevice",
    "CharDevice",
    "Directory",
    "DirectoryOrCreate",
    "File",
    "FileOrCreate",
    "Socket",
];

/// The volume sources of a `PersistentVolumeSource`, in the order kube checks them.
const SOURCES: &[&str] = &[
    "hostPath",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "glusterfs",
    "flocker",
    "nfs",
    "rbd",
    "quobyte",
    "cephfs",
    "iscsi",
    "cinder",
    "fc",
    "flexVolume",
    "azureFile",
    "vsphereVolume",
    "photonPersistentDisk",
    "portworxVolume",
    "azureDisk",
    "scaleIO",
    "local",
    "storageos",
    "csi",
];

/// `SetDefaults_PersistentVolume`, `SetDefaults_HostPathVolumeSource` and
/// `SetDefaults_ResourceList` of the capacity.
fn default_pv(obj: &mut Value) {
    let Some(spec) = object_mut(obj, &["spec"]) else {
        return;
    };
    default_field(spec, "persistentVolumeReclaimPolicy", json!("Retain"));
    if spec.get("volumeMode").is_none_or(Value::is_null) {
        spec.insert("volumeMode".to_string(), json!("Filesystem"));
    }
    if let Some(host_path) = spec.get_mut("hostPath").and_then(Value::as_object_mut) {
        if host_path.get("type").is_none_or(Value::is_null) {
            host_path.insert("type".to_string(), json!(""));
        }
    }
    default_resource_list(spec.get_mut("capacity"));
    if let Some(status) = object_mut(obj, &["status"]) {
        default_field(status, "phase", json!("Pending"));
    }
}

fn now() -> Value {
    Value::String(rkcm_storage::object::now_rfc3339(jiff::Timestamp::now()))
}

/// `PrepareForCreate`: a fresh status, `Pending` since now.
fn prepare_create(obj: &mut Value) {
    set(
        obj,
        &["status"],
        Some(json!({"phase": "Pending", "lastPhaseTransitionTime": now()})),
    );
    drop_volume_attributes_class(obj, None);
}

/// `DropDisabledSpecFields` while `VolumeAttributesClass` is off: the field is dropped unless
/// the old object already uses it.
pub(crate) fn drop_volume_attributes_class(new: &mut Value, old: Option<&Value>) {
    let used = |v: Option<&Value>| {
        v.and_then(|o| get_str(o, &["spec", "volumeAttributesClassName"]))
            .is_some()
    };
    if !used(old) {
        set(new, &["spec", "volumeAttributesClassName"], None);
    }
}

fn prepare_update(new: &mut Value, old: &Value) {
    drop_volume_attributes_class(new, Some(old));
}

/// The status strategy's `PrepareForUpdate`: a phase change records its time unless the client
/// set a new one; an unchanged phase keeps the old time.
fn prepare_status_update(new: &mut Value, old: &Value) {
    let phase = |o: &Value| get_str(o, &["status", "phase"]).unwrap_or("").to_string();
    let old_time = get(old, &["status", "lastPhaseTransitionTime"]).filter(|v| !v.is_null());
    let new_time = get(new, &["status", "lastPhaseTransitionTime"]).filter(|v| !v.is_null());
    if phase(old) == phase(new) {
        if new_time.is_none() {
            let keep = old_time.cloned();
            set(new, &["status", "lastPhaseTransitionTime"], keep);
        }
    } else if new_time.is_none() || new_time == old_time {
        set(new, &["status", "lastPhaseTransitionTime"], Some(now()));
    }
}

/// The access-mode checks shared by volumes and claims.
pub(crate) fn validate_access_modes(modes: Option<&Value>, path: &str, errs: &mut Vec<FieldError>) {
    let (mut once_pod, mut others) = (false, false);
    for mode in modes.and_then(Value::as_array).into_iter().flatten() {
        let m = mode.as_str().unwrap_or("");
        if !ACCESS_MODES.contains(&m) {
            errs.push(FieldError::not_supported(path, mode, ACCESS_MODES));
        }
        if m == "ReadWriteOncePod" {
            once_pod = true;
        } else if ACCESS_MODES.contains(&m) {
            others = true;
        }
    }
    if once_pod && others {
        errs.push(FieldError::forbidden(
            path,
            "may not use ReadWriteOncePod with other access modes",
        ));
    }
}

/// `validatePathNoBacksteps`.
fn validate_no_backsteps(p: &str, path: &str, errs: &mut Vec<FieldError>) {
    if p.replace('\\', "/").split('/').any(|part| part == "..") {
        errs.push(FieldError::invalid(
            path,
            &json!(p),
            "must not contain '..'",
        ));
    }
}

/// The checks of the sources this server looks into.
fn validate_source(name: &str, source: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let text = |key: &str| get_str(source, &[key]).unwrap_or("");
    match name {
        "hostPath" => {
            if text("path").is_empty() {
                errs.push(FieldError::required(format!("{path}.path"), ""));
                return;
            }
            validate_no_backsteps(text("path"), &format!("{path}.path"), errs);
            if let Some(t) = get(source, &["type"]).filter(|t| !t.is_null()) {
                if !HOST_PATH_TYPES.contains(&t.as_str().unwrap_or("?")) {
                    errs.push(FieldError::not_supported(
                        format!("{path}.type"),
                        t,
                        HOST_PATH_TYPES,
                    ));
                }
            }
        }
        "nfs" => {
            if text("server").is_empty() {
                errs.push(FieldError::required(format!("{path}.server"), ""));
            }
            if text("path").is_empty() {
                errs.push(FieldError::required(format!("{path}.path"), ""));
            }
            if !text("path").starts_with('/') {
                errs.push(FieldError::invalid(
                    format!("{path}.path"),
                    &json!(text("path")),
                    "must be an absolute path",
                ));
            }
        }
        "local" => {
            if text("path").is_empty() {
                errs.push(FieldError::required(format!("{path}.path"), ""));
                return;
            }
            validate_no_backsteps(text("path"), &format!("{path}.path"), errs);
        }
        "csi" => {
            let driver = text("driver");
            let driver_path = format!("{path}.driver");
            if driver.is_empty() {
                errs.push(FieldError::required(driver_path.as_str(), ""));
            } else {
                if driver.len() > 63 {
                    errs.push(FieldError {
                        field: driver_path.clone(),
                        kind: super::FieldErrorKind::TooLong,
                        message: "Too long: may not be longer than 63".to_string(),
                    });
                }
                push_invalid_names(
                    errs,
                    &driver_path,
                    driver,
                    is_dns1123_subdomain(&driver.to_lowercase()),
                );
            }
            if text("volumeHandle").is_empty() {
                errs.push(FieldError::required(format!("{path}.volumeHandle"), ""));
            }
        }
        _ => {}
    }
}

/// `ValidateNodeSelectorRequirement` for the required node affinity of a volume.
fn validate_node_selector_requirement(req: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let values = get(req, &["values"])
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    let operator = get(req, &["operator"]).cloned().unwrap_or(json!(""));
    match operator.as_str().unwrap_or("") {
        "In" | "NotIn" if values == 0 => errs.push(FieldError::required(
            format!("{path}.values"),
            "must be specified when `operator` is 'In' or 'NotIn'",
        )),
        "Exists" | "DoesNotExist" if values > 0 => errs.push(FieldError::forbidden(
            format!("{path}.values"),
            "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
        )),
        "Gt" | "Lt" if values != 1 => errs.push(FieldError::required(
            format!("{path}.values"),
            "must be specified single value when `operator` is 'Lt' or 'Gt'",
        )),
        "In" | "NotIn" | "Exists" | "DoesNotExist" | "Gt" | "Lt" => {}
        _ => errs.push(FieldError::not_supported(
            format!("{path}.operator"),
            &operator,
            &["DoesNotExist", "Exists", "Gt", "In", "Lt", "NotIn"],
        )),
    }
    let key = get_str(req, &["key"]).unwrap_or("");
    push_invalid_names(
        errs,
        &format!("{path}.key"),
        key,
        super::meta::is_qualified_name(key),
    );
}

/// `validateVolumeNodeAffinity`.
fn validate_node_affinity(affinity: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let Some(required) = get(affinity, &["required"]).filter(|v| !v.is_null()) else {
        errs.push(FieldError::required(
            format!("{path}.required"),
            "must specify required node constraints",
        ));
        return;
    };
    let terms_path = format!("{path}.required.nodeSelectorTerms");
    let terms = get(required, &["nodeSelectorTerms"])
        .and_then(Value::as_array)
        .filter(|t| !t.is_empty());
    let Some(terms) = terms else {
        errs.push(FieldError::required(
            terms_path.as_str(),
            "must have at least one node selector term",
        ));
        return;
    };
    for (i, term) in terms.iter().enumerate() {
        let exprs = get(term, &["matchExpressions"]).and_then(Value::as_array);
        for (j, req) in exprs.into_iter().flatten().enumerate() {
            validate_node_selector_requirement(
                req,
                &format!("{terms_path}[{i}].matchExpressions[{j}]"),
                errs,
            );
        }
    }
}

/// `ValidatePersistentVolumeSpec` (the parts this server implements).
fn validate(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let empty = Value::Object(Map::new());
    let spec = get(obj, &["spec"])
        .filter(|s| s.is_object())
        .unwrap_or(&empty);
    let modes = get(spec, &["accessModes"]);
    if modes.and_then(Value::as_array).is_none_or(Vec::is_empty) {
        errs.push(FieldError::required("spec.accessModes", ""));
    }
    validate_access_modes(modes, "spec.accessModes", &mut errs);

    let capacity = get(spec, &["capacity"]);
    let n = entries(capacity).count();
    if n == 0 {
        errs.push(FieldError::required("spec.capacity", ""));
    }
    if get(spec, &["capacity", "storage"]).is_none() || n > 1 {
        errs.push(FieldError::not_supported(
            "spec.capacity",
            capacity.unwrap_or(&Value::Null),
            &["storage"],
        ));
    }
    for (name, q) in entries(capacity) {
        let path = format!("spec.capacity[{name}]");
        errs.extend(validate_basic_resource(q, &path));
        errs.extend(validate_positive_quantity(q, &path));
    }

    if let Some(policy) =
        get(spec, &["persistentVolumeReclaimPolicy"]).filter(|p| p.as_str() != Some(""))
    {
        if !RECLAIM_POLICIES.contains(&policy.as_str().unwrap_or("?")) {
            errs.push(FieldError::not_supported(
                "spec.persistentVolumeReclaimPolicy",
                policy,
                RECLAIM_POLICIES,
            ));
        }
    }

    let affinity = get(spec, &["nodeAffinity"]).filter(|v| !v.is_null());
    if let Some(a) = affinity {
        validate_node_affinity(a, "spec.nodeAffinity", &mut errs);
    }

    let mut found = 0;
    for name in SOURCES {
        let Some(source) = get(spec, &[name]).filter(|v| !v.is_null()) else {
            continue;
        };
        let path = format!("spec.{name}");
        // kube never refuses a second source when it is flexVolume, and names cephfs
        // `cephFS` in this error.
        if found > 0 && *name != "flexVolume" {
            let shown = if *name == "cephfs" {
                "spec.cephFS".to_string()
            } else {
                path
            };
            errs.push(FieldError::forbidden(
                shown,
                "may not specify more than 1 volume type",
            ));
            continue;
        }
        found += 1;
        validate_source(name, source, &path, &mut errs);
        if *name == "local" && affinity.is_none() {
            errs.push(FieldError::required(
                "spec.nodeAffinity",
                "Local volume requires node affinity",
            ));
        }
    }
    if found == 0 {
        errs.push(FieldError::required("spec", "must specify a volume type"));
    }

    let host_path = get_str(spec, &["hostPath", "path"]);
    if host_path.is_some_and(|p| p.split('/').all(str::is_empty) && p.starts_with('/'))
        && get_str(spec, &["persistentVolumeReclaimPolicy"]) == Some("Recycle")
    {
        errs.push(FieldError::forbidden(
            "spec.persistentVolumeReclaimPolicy",
            "may not be 'recycle' for a hostPath mount of '/'",
        ));
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
    errs
}

/// `ValidatePersistentVolumeUpdate`: the source and volume mode are immutable, node affinity
/// is immutable once set.
fn validate_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = validate(new);
    // A CSI volume may gain a controllerExpandSecretRef.
    let mut new_cmp = new.clone();
    if get(old, &["spec", "csi"]).is_some()
        && get(old, &["spec", "csi", "controllerExpandSecretRef"]).is_none()
    {
        set(
            &mut new_cmp,
            &["spec", "csi", "controllerExpandSecretRef"],
            None,
        );
    }
    if SOURCES
        .iter()
        .any(|s| !semantically_equal(get(&new_cmp, &["spec", s]), get(old, &["spec", s])))
    {
        // kube appends a `cmp.Diff` of the two sources to this message; it is not reproduced.
        errs.push(FieldError::forbidden(
            "spec.persistentvolumesource",
            "spec.persistentvolumesource is immutable after creation",
        ));
    }
    errs.extend(validate_immutable(
        get(new, &["spec", "volumeMode"]),
        get(old, &["spec", "volumeMode"]),
        "volumeMode",
    ));
    let old_affinity = get(old, &["spec", "nodeAffinity"]).filter(|v| !v.is_null());
    let new_affinity = get(new, &["spec", "nodeAffinity"]);
    if old_affinity.is_some() && !semantically_equal(new_affinity, old_affinity) {
        // kube lets the beta topology labels change to their GA names; not supported here.
        errs.push(FieldError::invalid(
            "nodeAffinity",
            new_affinity.unwrap_or(&Value::Null),
            "field is immutable, except for updating from beta label to GA",
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
    default: default_pv,
    prepare_create,
    prepare_update,
    prepare_status_update,
    validate,
    validate_update,
    // kube's `GetAttrs` adds `name`, but v1 registers no field label conversion for
    // PersistentVolumes, so only the metadata fields are accepted.
    fields: &[],
};

/// The strategy of persistent volumes.
pub(crate) fn strategy(info: &'static ResourceInfo) -> HookedStrategy {
    HookedStrategy::new(GenericStrategy::new(info), HOOKS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Strategy;
    use rkcm_apimachinery::catalog;

    fn s() -> HookedStrategy {
        strategy(catalog::by_kind("v1", "PersistentVolume").expect("served"))
    }

    fn pv(spec: Value) -> Value {
        json!({"metadata": {"name": "pv1"}, "spec": spec})
    }

    fn valid_spec() -> Value {
        json!({"capacity": {"storage": "10G"}, "accessModes": ["ReadWriteOnce"],
            "hostPath": {"path": "/foo", "type": ""}, "persistentVolumeReclaimPolicy": "Retain"})
    }

    fn messages(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(FieldError::message_with_field).collect()
    }

    #[test]
    fn defaults_and_create_set_retain_filesystem_and_pending() {
        let mut obj = pv(
            json!({"capacity": {"storage": 1}, "accessModes": ["ReadWriteOnce"],
            "hostPath": {"path": "/data"}}),
        );
        obj["status"] = json!({"phase": "Bound"});
        s().default(&mut obj);
        assert_eq!(obj["spec"]["persistentVolumeReclaimPolicy"], "Retain");
        assert_eq!(obj["spec"]["volumeMode"], "Filesystem");
        assert_eq!(
            obj["spec"]["hostPath"],
            json!({"path": "/data", "type": ""})
        );
        assert_eq!(obj["spec"]["capacity"]["storage"], "1");
        s().prepare_for_create(&mut obj);
        assert_eq!(obj["status"]["phase"], "Pending");
        assert!(obj["status"]["lastPhaseTransitionTime"].is_string());
        assert!(messages(&s().validate_create(&obj)).is_empty());
    }

    #[test]
    fn volumes_are_validated_as_kube_does() {
        // Cases of TestValidatePersistentVolumes (validation_test.go).
        let with = |patch: Value| {
            let mut spec = valid_spec();
            for (k, v) in patch.as_object().expect("object") {
                if v.is_null() {
                    spec.as_object_mut().expect("object").remove(k);
                } else {
                    spec[k] = v.clone();
                }
            }
            pv(spec)
        };
        let cases: Vec<(Value, Vec<&str>)> = vec![
            (with(json!({})), vec![]),
            (
                with(json!({"accessModes": null})),
                vec!["spec.accessModes: Required value"],
            ),
            (
                with(json!({"accessModes": ["fakemode"]})),
                vec!["spec.accessModes: Unsupported value: \"fakemode\": supported values: \"ReadOnlyMany\", \"ReadWriteMany\", \"ReadWriteOnce\", \"ReadWriteOncePod\""],
            ),
            (
                with(json!({"accessModes": ["ReadWriteOncePod", "ReadWriteMany"]})),
                vec!["spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes"],
            ),
            (
                with(json!({"capacity": null})),
                vec!["spec.capacity: Required value", "spec.capacity: Unsupported value: null: supported values: \"storage\""],
            ),
            (
                with(json!({"capacity": {"storage": "0"}})),
                vec!["spec.capacity[storage]: Invalid value: \"0\": must be greater than zero"],
            ),
            (
                with(json!({"capacity": {"storage": "-1Gi"}})),
                vec![
                    "spec.capacity[storage]: Invalid value: -1073741824: must be a valid resource quantity",
                    "spec.capacity[storage]: Invalid value: \"-1Gi\": must be greater than zero",
                ],
            ),
            (
                with(json!({"persistentVolumeReclaimPolicy": "fakeReclaimPolicy"})),
                vec!["spec.persistentVolumeReclaimPolicy: Unsupported value: \"fakeReclaimPolicy\": supported values: \"Delete\", \"Recycle\", \"Retain\""],
            ),
            (
                with(json!({"hostPath": null})),
                vec!["spec: Required value: must specify a volume type"],
            ),
            (
                with(json!({"gcePersistentDisk": {"pdName": "foo"}})),
                vec!["spec.gcePersistentDisk: Forbidden: may not specify more than 1 volume type"],
            ),
            (
                with(json!({"cephfs": {"monitors": ["m"]}, "flexVolume": {"driver": "d"}})),
                vec!["spec.cephFS: Forbidden: may not specify more than 1 volume type"],
            ),
            (
                with(json!({"hostPath": {"path": "/a/../b"}})),
                vec!["spec.hostPath.path: Invalid value: \"/a/../b\": must not contain '..'"],
            ),
            (
                with(json!({"hostPath": {"path": "/"}, "persistentVolumeReclaimPolicy": "Recycle"})),
                vec!["spec.persistentVolumeReclaimPolicy: Forbidden: may not be 'recycle' for a hostPath mount of '/'"],
            ),
            (
                with(json!({"hostPath": null, "local": {"path": "/mnt/disk"}})),
                vec!["spec.nodeAffinity: Required value: Local volume requires node affinity"],
            ),
            (
                with(json!({"hostPath": null, "local": {"path": "/mnt/disk"},
                    "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                        {"key": "kubernetes.io/hostname", "operator": "In", "values": ["node-1"]}]}]}}})),
                vec![],
            ),
            (
                with(json!({"nodeAffinity": {}})),
                vec!["spec.nodeAffinity.required: Required value: must specify required node constraints"],
            ),
            (
                with(json!({"nodeAffinity": {"required": {"nodeSelectorTerms": []}}})),
                vec!["spec.nodeAffinity.required.nodeSelectorTerms: Required value: must have at least one node selector term"],
            ),
            (
                with(json!({"nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "a", "operator": "In"}, {"key": "b", "operator": "Exists", "values": ["x"]},
                    {"key": "c", "operator": "Bad"}]}]}}})),
                vec![
                    "spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
                    "spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[1].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    "spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[2].operator: Unsupported value: \"Bad\": supported values: \"DoesNotExist\", \"Exists\", \"Gt\", \"In\", \"Lt\", \"NotIn\"",
                ],
            ),
            (
                with(json!({"hostPath": null, "nfs": {"server": "s", "path": "rel"}})),
                vec!["spec.nfs.path: Invalid value: \"rel\": must be an absolute path"],
            ),
            (
                with(json!({"hostPath": null, "csi": {"driver": "", "volumeHandle": ""}})),
                vec!["spec.csi.driver: Required value", "spec.csi.volumeHandle: Required value"],
            ),
            (
                with(json!({"volumeMode": "Bogus"})),
                vec!["spec.volumeMode: Unsupported value: \"Bogus\": supported values: \"Block\", \"Filesystem\""],
            ),
        ];
        for (obj, want) in cases {
            assert_eq!(messages(&s().validate_create(&obj)), want, "{obj}");
        }
    }

    #[test]
    fn source_and_volume_mode_are_immutable_and_status_keeps_its_own_endpoint() {
        let mut old = pv(valid_spec());
        s().default(&mut old);
        s().prepare_for_create(&mut old);
        let mut moved = old.clone();
        moved["spec"]["hostPath"]["path"] = json!("/bar");
        moved["spec"]["volumeMode"] = json!("Block");
        assert_eq!(
            messages(&s().validate_update(&moved, &old)),
            [
                "spec.persistentvolumesource: Forbidden: spec.persistentvolumesource is immutable after creation",
                "volumeMode: Invalid value: \"Block\": field is immutable"
            ]
        );
        let mut claimed = old.clone();
        claimed["spec"]["claimRef"] = json!({"namespace": "default", "name": "c"});
        claimed["status"] = json!({"phase": "Bound"});
        s().prepare_for_update(&mut claimed, &old);
        assert_eq!(claimed["status"], old["status"]);
        assert!(s().validate_update(&claimed, &old).is_empty());

        let mut bound = old.clone();
        bound["spec"]["persistentVolumeReclaimPolicy"] = json!("Delete");
        bound["status"] = json!({"phase": "Bound"});
        s().prepare_for_status_update(&mut bound, &old);
        assert_eq!(bound["spec"], old["spec"]);
        assert_eq!(bound["status"]["phase"], "Bound");
        assert!(bound["status"]["lastPhaseTransitionTime"].is_string());
        let mut same_phase = bound.clone();
        same_phase["status"] = json!({"phase": "Bound", "message": "m"});
        s().prepare_for_status_update(&mut same_phase, &bound);
        assert_eq!(
            same_phase["status"]["lastPhaseTransitionTime"],
            bound["status"]["lastPhaseTransitionTime"]
        );
    }
}
