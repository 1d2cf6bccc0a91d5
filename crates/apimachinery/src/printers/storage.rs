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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn now() -> Timestamp {
        "2026-01-01T00:00:00Z".parse().unwrap()
    }

    #[test]
    fn storage_class_rows_match_kube() {
        // TestPrintStorageClass.
        let sc1 = json!({"metadata":{"name":"sc1","creationTimestamp":"2026-01-01T00:00:01.9Z"},
            "provisioner":"kubernetes.io/glusterfs"});
        assert_eq!(
            Value::Array(storage_class_cells(&sc1, now())),
            json!([
                "sc1",
                "kubernetes.io/glusterfs",
                "Delete",
                "Immediate",
                false,
                "0s"
            ])
        );
        let sc6 = json!({"metadata":{"name":"sc6","creationTimestamp":"2025-12-31T23:55:00Z"},
            "provisioner":"kubernetes.io/nfs","reclaimPolicy":"Retain",
            "allowVolumeExpansion":true,"volumeBindingMode":"WaitForFirstConsumer"});
        assert_eq!(
            Value::Array(storage_class_cells(&sc6, now())),
            json!([
                "sc6",
                "kubernetes.io/nfs",
                "Retain",
                "WaitForFirstConsumer",
                true,
                "5m"
            ])
        );
    }

    #[test]
    fn default_storage_class_is_marked() {
        for key in [
            "storageclass.kubernetes.io/is-default-class",
            "storageclass.beta.kubernetes.io/is-default-class",
        ] {
            let sc = json!({"metadata":{"name":"standard","annotations":{key:"true"}},
                "provisioner":"p"});
            assert_eq!(storage_class_cells(&sc, now())[0], "standard (default)");
        }
        let not = json!({"metadata":{"name":"standard",
            "annotations":{"storageclass.kubernetes.io/is-default-class":"false"}}});
        assert_eq!(storage_class_cells(&not, now())[0], "standard");
    }

    #[test]
    fn csi_driver_rows_use_kube_defaults() {
        // TestPrintCSIDriver.
        let d = json!({"metadata":{"name":"driver1","creationTimestamp":"2016-01-03T00:00:00Z"},
            "spec":{"attachRequired":true,"podInfoOnMount":true,"storageCapacity":true,
                "requiresRepublish":false,"volumeLifecycleModes":["Persistent"]}});
        assert_eq!(
            Value::Array(csi_driver_cells(&d, now())),
            json!([
                "driver1",
                true,
                true,
                true,
                "<unset>",
                false,
                "Persistent",
                "10y"
            ])
        );
        let bare = json!({"metadata":{"name":"driver2"},"spec":{
            "tokenRequests":[{"audience":"a"},{"audience":"b","expirationSeconds":600}],
            "volumeLifecycleModes":["Persistent","Ephemeral"]}});
        assert_eq!(
            Value::Array(csi_driver_cells(&bare, now())),
            json!([
                "driver2",
                true,
                false,
                false,
                "a,b",
                false,
                "Persistent,Ephemeral",
                "<unknown>"
            ])
        );
        let no_modes = json!({"metadata":{"name":"driver3"},"spec":{"tokenRequests":[]}});
        let c = csi_driver_cells(&no_modes, now());
        assert_eq!((&c[4], &c[6]), (&json!(""), &json!("<none>")));
    }

    #[test]
    fn csi_node_rows_count_drivers() {
        // TestPrintCSINode.
        let n = json!({"metadata":{"name":"csinode1","creationTimestamp":"2016-01-03T00:00:00Z"},
            "spec":{"drivers":[{"name":"my-driver","nodeID":"n1"},{"name":"other","nodeID":"n1"}]}});
        assert_eq!(
            Value::Array(csi_node_cells(&n, now())),
            json!(["csinode1", 2, "10y"])
        );
        let none = json!({"metadata":{"name":"csinode2"},"spec":{}});
        assert_eq!(csi_node_cells(&none, now())[1], 0);
    }

    #[test]
    fn csi_storage_capacity_rows_match_kube() {
        // TestPrintCSIStorageCapacity.
        let c = json!({"metadata":{"name":"cap1","namespace":"default"},
            "storageClassName":"test-sc","capacity":"1Gi"});
        assert_eq!(
            Value::Array(csi_storage_capacity_cells(&c, now())),
            json!(["cap1", "test-sc", "1Gi"])
        );
        let unset = json!({"metadata":{"name":"cap2"},"storageClassName":"test-sc"});
        assert_eq!(csi_storage_capacity_cells(&unset, now())[2], "<unset>");
    }

    #[test]
    fn volume_attachment_rows_match_kube() {
        // TestPrintVolumeAttachment.
        let va = json!({"metadata":{"name":"attachment1","creationTimestamp":"2016-01-03T00:00:00Z"},
            "spec":{"attacher":"my-attacher","source":{"persistentVolumeName":"persistentVolume"},
                "nodeName":"my-node"},
            "status":{"attached":true}});
        assert_eq!(
            Value::Array(volume_attachment_cells(&va, now())),
            json!([
                "attachment1",
                "my-attacher",
                "persistentVolume",
                "my-node",
                true,
                "10y"
            ])
        );
        let inline = json!({"metadata":{"name":"attachment2"},
            "spec":{"attacher":"my-attacher","source":{"inlineVolumeSpec":{}},"nodeName":"my-node"}});
        let c = volume_attachment_cells(&inline, now());
        assert_eq!((&c[2], &c[4]), (&json!(""), &json!(false)));
        assert_eq!(VOLUME_ATTACHMENT_COLUMNS[1].format, "name");
    }
}
