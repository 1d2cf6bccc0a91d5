//! Core tables: Secret, ServiceAccount, Endpoints, ResourceQuota, PersistentVolume,
//! PersistentVolumeClaim, PodTemplate and ComponentStatus (`printSecret`,
//! `printServiceAccount`, `printEndpoints`, `printResourceQuota`, `printPersistentVolume`,
//! `printPersistentVolumeClaim`, `printPodTemplate`, `printComponentStatus`).
//!
//! LimitRange has no printer in kube: its registry serves the default table.

use std::collections::BTreeSet;

use jiff::Timestamp;
use serde_json::Value;

use super::{
    age, array_at, col, containers_and_images, deleting, format_labels, name, quantity_at, str_at,
    wide, Column, Description, AGE, NAME,
};

/// Secret columns.
pub(super) const SECRET_COLUMNS: &[Column] = &[
    NAME,
    col(
        "Type",
        "string",
        Description::Field("io.k8s.api.core.v1.Secret", "type"),
    ),
    col(
        "Data",
        "string",
        Description::Field("io.k8s.api.core.v1.Secret", "data"),
    ),
    AGE,
];

/// The cells of one Secret's row: its type and number of keys.
pub(super) fn secret_cells(secret: &Value, now: Timestamp) -> Vec<Value> {
    // kube merges the write-only stringData into data when it decodes a Secret.
    let keys: BTreeSet<&str> = ["data", "stringData"]
        .iter()
        .filter_map(|field| secret.get(*field).and_then(Value::as_object))
        .flat_map(|m| m.keys().map(String::as_str))
        .collect();
    vec![
        name(secret),
        str_at(secret, "/type").into(),
        (keys.len() as i64).into(),
        age(secret, now),
    ]
}

/// ServiceAccount columns.
pub(super) const SERVICE_ACCOUNT_COLUMNS: &[Column] = &[
    NAME,
    col(
        "Secrets",
        "string",
        Description::Field("io.k8s.api.core.v1.ServiceAccount", "secrets"),
    ),
    AGE,
];

/// The cells of one ServiceAccount's row: the number of secrets it lists.
pub(super) fn service_account_cells(sa: &Value, now: Timestamp) -> Vec<Value> {
    vec![
        name(sa),
        (array_at(sa, "/secrets").len() as i64).into(),
        age(sa, now),
    ]
}

/// Endpoints columns.
pub(super) const ENDPOINTS_COLUMNS: &[Column] = &[
    NAME,
    col(
        "Endpoints",
        "string",
        Description::Field("io.k8s.api.core.v1.Endpoints", "subsets"),
    ),
    AGE,
];

/// `net.JoinHostPort`: brackets around IPv6 addresses.
fn join_host_port(host: &str, port: i64) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// `formatEndpoints`: up to three `ip:port` pairs, then ` + N more...`; `<none>` without subsets.
fn format_endpoints(ep: &Value) -> String {
    const MAX: usize = 3;
    let subsets = array_at(ep, "/subsets");
    if subsets.is_empty() {
        return "<none>".to_string();
    }
    let mut list: Vec<String> = Vec::new();
    let mut count = 0;
    for ss in subsets {
        let addresses = array_at(ss, "/addresses");
        let ips = addresses.iter().map(|a| str_at(a, "/ip"));
        let ports = array_at(ss, "/ports");
        if ports.is_empty() {
            // A headless service may have no ports.
            count += addresses.len();
            list.extend(ips.take(MAX - list.len()).map(str::to_string));
            continue;
        }
        for port in ports {
            count += addresses.len();
            let number = port.get("port").and_then(Value::as_i64).unwrap_or(0);
            let room = MAX - list.len();
            list.extend(ips.clone().take(room).map(|ip| join_host_port(ip, number)));
        }
    }
    let joined = list.join(",");
    if count > MAX {
        format!("{joined} + {} more...", count - MAX)
    } else {
        joined
    }
}

/// The cells of one Endpoints object's row.
pub(super) fn endpoints_cells(ep: &Value, now: Timestamp) -> Vec<Value> {
    vec![name(ep), format_endpoints(ep).into(), age(ep, now)]
}

/// ResourceQuota columns.
pub(super) const RESOURCE_QUOTA_COLUMNS: &[Column] = &[
    NAME,
    col(
        "Request",
        "string",
        Description::Text(
            "Request represents a minimum amount of cpu/memory that a container may consume.",
        ),
    ),
    col(
        "Limit",
        "string",
        Description::Text("Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node."),
    ),
    AGE,
];

/// The cells of one ResourceQuota's row: `resource: used/hard` for each hard limit, requests
/// and `limits.*` apart, sorted by resource name.
pub(super) fn resource_quota_cells(quota: &Value, now: Timestamp) -> Vec<Value> {
    let mut requests = Vec::new();
    let mut limits = Vec::new();
    if let Some(Value::Object(hard)) = quota.pointer("/status/hard") {
        let mut resources: Vec<&String> = hard.keys().collect();
        resources.sort();
        for resource in resources {
            let escaped = resource.replace('~', "~0").replace('/', "~1");
            let used = quantity_at(quota, &format!("/status/used/{escaped}"));
            let limit = quantity_at(quota, &format!("/status/hard/{escaped}"));
            let entry = format!("{resource}: {used}/{limit}");
            match resource.split_once('.') {
                Some(("limits", _)) => limits.push(entry),
                _ => requests.push(entry),
            }
        }
    }
    vec![
        name(quota),
        requests.join(", ").into(),
        limits.join(", ").into(),
        age(quota, now),
    ]
}

const PV_SPEC: &str = "io.k8s.api.core.v1.PersistentVolumeSpec";
const PV_STATUS: &str = "io.k8s.api.core.v1.PersistentVolumeStatus";
const PVC_SPEC: &str = "io.k8s.api.core.v1.PersistentVolumeClaimSpec";
const PVC_STATUS: &str = "io.k8s.api.core.v1.PersistentVolumeClaimStatus";

/// PersistentVolume columns.
pub(super) const PERSISTENT_VOLUME_COLUMNS: &[Column] = &[
    NAME,
    col(
        "Capacity",
        "string",
        Description::Field(PV_SPEC, "capacity"),
    ),
    col(
        "Access Modes",
        "string",
        Description::Field(PV_SPEC, "accessModes"),
    ),
    col(
        "Reclaim Policy",
        "string",
        Description::Field(PV_SPEC, "persistentVolumeReclaimPolicy"),
    ),
    col("Status", "string", Description::Field(PV_STATUS, "phase")),
    col("Claim", "string", Description::Field(PV_SPEC, "claimRef")),
    col(
        "StorageClass",
        "string",
        Description::Text("StorageClass of the pv"),
    ),
    col(
        "VolumeAttributesClass",
        "string",
        Description::Text("VolumeAttributesClass of the pv"),
    ),
    col("Reason", "string", Description::Field(PV_STATUS, "reason")),
    AGE,
    wide(
        "VolumeMode",
        "string",
        Description::Field(PV_SPEC, "volumeMode"),
    ),
];

/// `helper.GetAccessModesAsString`: RWO, ROX, RWX, RWOP in that order, each once.
fn access_modes(v: &Value, pointer: &str) -> String {
    let modes: Vec<&str> = array_at(v, pointer)
        .iter()
        .filter_map(Value::as_str)
        .collect();
    [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ]
    .iter()
    .filter(|(mode, _)| modes.contains(mode))
    .map(|(_, short)| *short)
    .collect::<Vec<_>>()
    .join(",")
}

/// The beta storage-class annotation, which kube still prefers over `spec.storageClassName`.
const BETA_STORAGE_CLASS_ANNOTATION: &str = "volume.beta.kubernetes.io/storage-class";

/// `helper.GetPersistentVolumeClass` / `GetPersistentVolumeClaimClass`.
fn storage_class(obj: &Value) -> String {
    obj.pointer("/metadata/annotations")
        .and_then(|a| a.get(BETA_STORAGE_CLASS_ANNOTATION))
        .and_then(Value::as_str)
        .unwrap_or_else(|| str_at(obj, "/spec/storageClassName"))
        .to_string()
}

/// The string at `pointer`, or `<unset>` when the field is absent.
fn unset_if_absent(v: &Value, pointer: &str) -> String {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or("<unset>")
        .to_string()
}

/// The phase, or `Terminating` once the object is being deleted.
fn phase(obj: &Value) -> String {
    if deleting(obj) {
        "Terminating".to_string()
    } else {
        str_at(obj, "/status/phase").to_string()
    }
}

/// The cells of one PersistentVolume's row.
pub(super) fn persistent_volume_cells(pv: &Value, now: Timestamp) -> Vec<Value> {
    let claim = match pv.pointer("/spec/claimRef").filter(|c| c.is_object()) {
        Some(c) => format!("{}/{}", str_at(c, "/namespace"), str_at(c, "/name")),
        None => String::new(),
    };
    vec![
        name(pv),
        quantity_at(pv, "/spec/capacity/storage").into(),
        access_modes(pv, "/spec/accessModes").into(),
        str_at(pv, "/spec/persistentVolumeReclaimPolicy").into(),
        phase(pv).into(),
        claim.into(),
        storage_class(pv).into(),
        unset_if_absent(pv, "/spec/volumeAttributesClassName").into(),
        str_at(pv, "/status/reason").into(),
        age(pv, now),
        unset_if_absent(pv, "/spec/volumeMode").into(),
    ]
}

/// PersistentVolumeClaim columns.
pub(super) const PERSISTENT_VOLUME_CLAIM_COLUMNS: &[Column] = &[
    NAME,
    col("Status", "string", Description::Field(PVC_STATUS, "phase")),
    col(
        "Volume",
        "string",
        Description::Field(PVC_SPEC, "volumeName"),
    ),
    col(
        "Capacity",
        "string",
        Description::Field(PVC_STATUS, "capacity"),
    ),
    col(
        "Access Modes",
        "string",
        Description::Field(PVC_STATUS, "accessModes"),
    ),
    col(
        "StorageClass",
        "string",
        Description::Text("StorageClass of the pvc"),
    ),
    col(
        "VolumeAttributesClass",
        "string",
        Description::Text("VolumeAttributesClass of the pvc"),
    ),
    AGE,
    wide(
        "VolumeMode",
        "string",
        Description::Field(PVC_SPEC, "volumeMode"),
    ),
];

/// The cells of one PersistentVolumeClaim's row: capacity and access modes only once bound.
pub(super) fn persistent_volume_claim_cells(pvc: &Value, now: Timestamp) -> Vec<Value> {
    let volume = str_at(pvc, "/spec/volumeName");
    let (capacity, modes) = if volume.is_empty() {
        (String::new(), String::new())
    } else {
        (
            quantity_at(pvc, "/status/capacity/storage"),
            access_modes(pvc, "/status/accessModes"),
        )
    };
    vec![
        name(pvc),
        phase(pvc).into(),
        volume.into(),
        capacity.into(),
        modes.into(),
        storage_class(pvc).into(),
        unset_if_absent(pvc, "/spec/volumeAttributesClassName").into(),
        age(pvc, now),
        unset_if_absent(pvc, "/spec/volumeMode").into(),
    ]
}

/// PodTemplate columns (no Age, as in kube).
pub(super) const POD_TEMPLATE_COLUMNS: &[Column] = &[
    NAME,
    col(
        "Containers",
        "string",
        Description::Text("Names of each container in the template."),
    ),
    col(
        "Images",
        "string",
        Description::Text("Images referenced by each container in the template."),
    ),
    col(
        "Pod Labels",
        "string",
        Description::Text("The labels for the pod template."),
    ),
];

/// The cells of one PodTemplate's row.
pub(super) fn pod_template_cells(pt: &Value, _now: Timestamp) -> Vec<Value> {
    let (containers, images) = containers_and_images(pt.pointer("/template/spec"));
    vec![
        name(pt),
        containers.into(),
        images.into(),
        format_labels(pt.pointer("/template/metadata/labels")).into(),
    ]
}

/// ComponentStatus columns (no Age, as in kube).
pub(super) const COMPONENT_STATUS_COLUMNS: &[Column] = &[
    NAME,
    col(
        "Status",
        "string",
        Description::Text("Status of the component conditions"),
    ),
    col(
        "Message",
        "string",
        Description::Text("Message of the component conditions"),
    ),
    col(
        "Error",
        "string",
        Description::Text("Error of the component conditions"),
    ),
];

/// The cells of one ComponentStatus's row, from its first `Healthy` condition.
pub(super) fn component_status_cells(cs: &Value, _now: Timestamp) -> Vec<Value> {
    let healthy = array_at(cs, "/conditions")
        .iter()
        .find(|c| str_at(c, "/type") == "Healthy");
    let (status, message, error) = match healthy {
        Some(c) => (
            if str_at(c, "/status") == "True" {
                "Healthy"
            } else {
                "Unhealthy"
            },
            str_at(c, "/message"),
            str_at(c, "/error"),
        ),
        None => ("Unknown", "", ""),
    };
    vec![name(cs), status.into(), message.into(), error.into()]
}
