//! Storage tables: StorageClass, CSIDriver, CSINode, CSIStorageCapacity and VolumeAttachment
//! (`printStorageClass`, `printCSIDriver`, `printCSINode`, `printCSIStorageCapacity`,
//! `printVolumeAttachment`).

use jiff::Timestamp;
use serde_json::Value;

use super::{
    age, array_at, bool_at, col, join_strings, name, str_at, Column, Description, AGE, NAME,
};

const STORAGE_CLASS: &str = "io.k8s.api.storage.v1.StorageClass";

/// StorageClass columns.
pub(super) const STORAGE_CLASS_COLUMNS: &[Column] = &[
    NAME,
    col(
        "Provisioner",
        "string",
        Description::Field(STORAGE_CLASS, "provisioner"),
    ),
    col(
        "ReclaimPolicy",
        "string",
        Description::Field(STORAGE_CLASS, "reclaimPolicy"),
    ),
    col(
        "VolumeBindingMode",
        "string",
        Description::Field(STORAGE_CLASS, "volumeBindingMode"),
    ),
    col(
        "AllowVolumeExpansion",
        "string",
        Description::Field(STORAGE_CLASS, "allowVolumeExpansion"),
    ),
    AGE,
];

/// `storageutil.IsDefaultAnnotation`: the GA or beta is-default-class annotation is "true".
fn is_default_class(sc: &Value) -> bool {
    let annotation = |key: &str| {
        sc.pointer("/metadata/annotations")
            .and_then(|a| a.get(key))
            .and_then(Value::as_str)
            == Some("true")
    };
    annotation("storageclass.kubernetes.io/is-default-class")
        || annotation("storageclass.beta.kubernetes.io/is-default-class")
}

/// The string at `pointer`, or `default` when absent.
fn str_or<'a>(v: &'a Value, pointer: &str, default: &'a str) -> &'a str {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or(default)
}

/// The cells of one StorageClass's row: the default class is marked `(default)`.
pub(super) fn storage_class_cells(sc: &Value, now: Timestamp) -> Vec<Value> {
    let mut class_name = str_at(sc, "/metadata/name").to_string();
    if is_default_class(sc) {
        class_name.push_str(" (default)");
    }
    vec![
        class_name.into(),
        str_at(sc, "/provisioner").into(),
        str_or(sc, "/reclaimPolicy", "Delete").into(),
        str_or(sc, "/volumeBindingMode", "Immediate").into(),
        bool_at(sc, "/allowVolumeExpansion", false).into(),
        age(sc, now),
    ]
}

const CSI_DRIVER_SPEC: &str = "io.k8s.api.storage.v1.CSIDriverSpec";

/// CSIDriver columns.
pub(super) const CSI_DRIVER_COLUMNS: &[Column] = &[
    NAME,
    col(
        "AttachRequired",
        "boolean",
        Description::Field(CSI_DRIVER_SPEC, "attachRequired"),
    ),
    col(
        "PodInfoOnMount",
        "boolean",
        Description::Field(CSI_DRIVER_SPEC, "podInfoOnMount"),
    ),
    col(
        "StorageCapacity",
        "boolean",
        Description::Field(CSI_DRIVER_SPEC, "storageCapacity"),
    ),
    col(
        "TokenRequests",
        "string",
        Description::Field(CSI_DRIVER_SPEC, "tokenRequests"),
    ),
    col(
        "RequiresRepublish",
        "boolean",
        Description::Field(CSI_DRIVER_SPEC, "requiresRepublish"),
    ),
    col(
        "Modes",
        "string",
        Description::Field(CSI_DRIVER_SPEC, "volumeLifecycleModes"),
    ),
    AGE,
];

/// The cells of one CSIDriver's row, with kube's defaults for unset fields.
pub(super) fn csi_driver_cells(driver: &Value, now: Timestamp) -> Vec<Value> {
    let token_requests = match driver.pointer("/spec/tokenRequests") {
        Some(Value::Array(requests)) => requests
            .iter()
            .map(|t| str_at(t, "/audience"))
            .collect::<Vec<_>>()
            .join(","),
        _ => "<unset>".to_string(),
    };
    let modes = join_strings(driver, "/spec/volumeLifecycleModes", ",");
    vec![
        name(driver),
        bool_at(driver, "/spec/attachRequired", true).into(),
        bool_at(driver, "/spec/podInfoOnMount", false).into(),
        bool_at(driver, "/spec/storageCapacity", false).into(),
        token_requests.into(),
        bool_at(driver, "/spec/requiresRepublish", false).into(),
        if modes.is_empty() {
            "<none>".to_string()
        } else {
            modes
        }
        .into(),
        age(driver, now),
    ]
}

/// CSINode columns.
pub(super) const CSI_NODE_COLUMNS: &[Column] = &[
    NAME,
    col(
        "Drivers",
        "integer",
        Description::Text("Drivers indicates the number of CSI drivers registered on the node"),
    ),
    AGE,
];

/// The cells of one CSINode's row: the number of drivers.
pub(super) fn csi_node_cells(node: &Value, now: Timestamp) -> Vec<Value> {
    vec![
        name(node),
        (array_at(node, "/spec/drivers").len() as i64).into(),
        age(node, now),
    ]
}

const CSI_STORAGE_CAPACITY: &str = "io.k8s.api.storage.v1.CSIStorageCapacity";

/// CSIStorageCapacity columns (no Age, as in kube).
pub(super) const CSI_STORAGE_CAPACITY_COLUMNS: &[Column] = &[
    NAME,
    col(
        "StorageClassName",
        "string",
        Description::Field(CSI_STORAGE_CAPACITY, "storageClassName"),
    ),
    col(
        "Capacity",
        "string",
        Description::Field(CSI_STORAGE_CAPACITY, "capacity"),
    ),
];

/// The cells of one CSIStorageCapacity's row.
pub(super) fn csi_storage_capacity_cells(capacity: &Value, _now: Timestamp) -> Vec<Value> {
    let amount = match capacity.get("capacity") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => "<unset>".to_string(),
    };
    vec![
        name(capacity),
        str_at(capacity, "/storageClassName").into(),
        amount.into(),
    ]
}

/// VolumeAttachment columns. kube marks Attacher, too, with the `name` format.
pub(super) const VOLUME_ATTACHMENT_COLUMNS: &[Column] = &[
    NAME,
    Column {
        format: "name",
        ..col(
            "Attacher",
            "string",
            Description::Field("io.k8s.api.storage.v1.VolumeAttachmentSpec", "attacher"),
        )
    },
    col(
        "PV",
        "string",
        Description::Field(
            "io.k8s.api.storage.v1.VolumeAttachmentSource",
            "persistentVolumeName",
        ),
    ),
    col(
        "Node",
        "string",
        Description::Field("io.k8s.api.storage.v1.VolumeAttachmentSpec", "nodeName"),
    ),
    col(
        "Attached",
        "boolean",
        Description::Field("io.k8s.api.storage.v1.VolumeAttachmentStatus", "attached"),
    ),
    AGE,
];

/// The cells of one VolumeAttachment's row.
pub(super) fn volume_attachment_cells(va: &Value, now: Timestamp) -> Vec<Value> {
    vec![
        name(va),
        str_at(va, "/spec/attacher").into(),
        str_at(va, "/spec/source/persistentVolumeName").into(),
        str_at(va, "/spec/nodeName").into(),
        bool_at(va, "/status/attached", false).into(),
        age(va, now),
    ]
}
