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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn now() -> Timestamp {
        "2026-01-01T00:00:00Z".parse().unwrap()
    }

    /// Creation timestamps as kube's tests set them.
    const IN_A_MOMENT: &str = "2026-01-01T00:00:01.9Z";
    const FIVE_MINUTES_AGO: &str = "2025-12-31T23:55:00Z";

    fn row(cells: Vec<Value>) -> Value {
        Value::Array(cells)
    }

    #[test]
    fn secret_rows_count_data_keys() {
        // TestPrintSecret.
        let s = json!({"metadata":{"name":"secret1","creationTimestamp":IN_A_MOMENT},
            "type":"kubernetes.io/service-account-token","data":{"token":"c2VjcmV0"}});
        assert_eq!(
            row(secret_cells(&s, now())),
            json!(["secret1", "kubernetes.io/service-account-token", 1, "0s"])
        );
        let empty = json!({"metadata":{"name":"secret1","creationTimestamp":IN_A_MOMENT},
            "type":"kubernetes.io/service-account-token"});
        assert_eq!(secret_cells(&empty, now())[2], 0);
        // stringData is merged into data as kube decodes it.
        let both =
            json!({"metadata":{"name":"s"},"data":{"a":"","b":""},"stringData":{"b":"","c":""}});
        assert_eq!(secret_cells(&both, now())[2], 3);
    }

    #[test]
    fn service_account_rows_count_secrets() {
        // TestPrintServiceAccount.
        let sa = json!({"metadata":{"name":"sa1","creationTimestamp":IN_A_MOMENT},"secrets":[]});
        assert_eq!(
            row(service_account_cells(&sa, now())),
            json!(["sa1", 0, "0s"])
        );
        let sa = json!({"metadata":{"name":"sa1","creationTimestamp":IN_A_MOMENT},
            "secrets":[{"name":"Secret1"},{"name":"Secret2"}]});
        assert_eq!(service_account_cells(&sa, now())[1], 2);
    }

    #[test]
    fn endpoints_rows_list_three_addresses_then_more() {
        // TestPrintEndpoint.
        let none = json!({"metadata":{"name":"endpoint1","creationTimestamp":IN_A_MOMENT}});
        assert_eq!(
            row(endpoints_cells(&none, now())),
            json!(["endpoint1", "<none>", "0s"])
        );
        let no_ports = json!({"metadata":{"name":"endpoint3","creationTimestamp":FIVE_MINUTES_AGO},
            "subsets":[{"addresses":[{"ip":"1.2.3.4"},{"ip":"5.6.7.8"}]}]});
        assert_eq!(
            row(endpoints_cells(&no_ports, now())),
            json!(["endpoint3", "1.2.3.4,5.6.7.8", "5m"])
        );
        let one_port = json!({"metadata":{"name":"endpoint2"},
            "subsets":[{"addresses":[{"ip":"1.2.3.4"},{"ip":"5.6.7.8"}],
                "ports":[{"port":8001,"protocol":"tcp"}]}]});
        assert_eq!(
            endpoints_cells(&one_port, now())[1],
            "1.2.3.4:8001,5.6.7.8:8001"
        );
        let more = json!({"metadata":{"name":"endpoint2"},
            "subsets":[{"addresses":[{"ip":"1.2.3.4"},{"ip":"5.6.7.8"},{"ip":"9.8.7.6"},{"ip":"6.6.6.6"}],
                "ports":[{"port":8001,"protocol":"tcp"}]}]});
        assert_eq!(
            endpoints_cells(&more, now())[1],
            "1.2.3.4:8001,5.6.7.8:8001,9.8.7.6:8001 + 1 more..."
        );
        let ipv6 = json!({"metadata":{"name":"e"},
            "subsets":[{"addresses":[{"ip":"fd00::1"}],"ports":[{"port":80}]}]});
        assert_eq!(endpoints_cells(&ipv6, now())[1], "[fd00::1]:80");
    }

    #[test]
    fn resource_quota_rows_split_requests_and_limits() {
        // TestPrintResourceQuota.
        let q = json!({"metadata":{"name":"test-resourcequota","creationTimestamp":FIVE_MINUTES_AGO},
            "spec":{},
            "status":{
                "used":{"cpu":"1","memory":"1Gi","pods":"1","services":"1","replicationcontrollers":"1",
                    "resourcequotas":"1","limits.cpu":"2","limits.memory":"2Gi"},
                "hard":{"cpu":"100","memory":"4Gi","pods":"10","services":"10","replicationcontrollers":"10",
                    "resourcequotas":"1","limits.cpu":"200","limits.memory":"8Gi"}}});
        assert_eq!(
            row(resource_quota_cells(&q, now())),
            json!([
                "test-resourcequota",
                "cpu: 1/100, memory: 1Gi/4Gi, pods: 1/10, replicationcontrollers: 1/10, resourcequotas: 1/1, services: 1/10",
                "limits.cpu: 2/200, limits.memory: 2Gi/8Gi",
                "5m"
            ])
        );
        let unused = json!({"metadata":{"name":"q"},"status":{"hard":{"requests.storage":"1Ti"}}});
        assert_eq!(
            row(resource_quota_cells(&unused, now())),
            json!(["q", "requests.storage: 0/1Ti", "", "<unknown>"])
        );
    }

    fn pv(name: &str, modes: &[&str], storage: &str, phase: &str) -> Value {
        json!({"metadata":{"name":name},
            "spec":{"claimRef":{"name":"test","namespace":"default"},"accessModes":modes,
                "capacity":{"storage":storage}},
            "status":{"phase":phase}})
    }

    #[test]
    fn persistent_volume_rows_match_kube() {
        // TestPrintPersistentVolume.
        let bound = pv("test1", &["ReadOnlyMany"], "4Gi", "Bound");
        assert_eq!(
            row(persistent_volume_cells(&bound, now())),
            json!([
                "test1",
                "4Gi",
                "ROX",
                "",
                "Bound",
                "default/test",
                "",
                "<unset>",
                "",
                "<unknown>",
                "<unset>"
            ])
        );
        let failed = pv("test2", &["ReadOnlyMany"], "4Gi", "Failed");
        assert_eq!(persistent_volume_cells(&failed, now())[4], "Failed");
        let pending = pv("test3", &["ReadWriteMany"], "10Gi", "Pending");
        assert_eq!(
            &persistent_volume_cells(&pending, now())[1..3],
            &[json!("10Gi"), json!("RWX")]
        );
        let mut classy = pv("test4", &["ReadWriteOnce"], "10Gi", "Pending");
        classy["spec"]["storageClassName"] = json!("my-scn");
        let c = persistent_volume_cells(&classy, now());
        assert_eq!(
            (&c[2], &c[6], &c[7]),
            (&json!("RWO"), &json!("my-scn"), &json!("<unset>"))
        );
        classy["spec"]["volumeAttributesClassName"] = json!("my-vacn");
        assert_eq!(persistent_volume_cells(&classy, now())[7], "my-vacn");
    }

    #[test]
    fn persistent_volume_details_kube_derives() {
        let pv = json!({"metadata":{"name":"pv","deletionTimestamp":"2026-01-01T00:00:00Z",
                "annotations":{"volume.beta.kubernetes.io/storage-class":"beta"}},
            "spec":{"storageClassName":"ga","volumeMode":"Block","persistentVolumeReclaimPolicy":"Retain",
                "accessModes":["ReadWriteOncePod","ReadWriteMany","ReadWriteOnce","ReadWriteOnce"]},
            "status":{"phase":"Released","reason":"gone"}});
        let c = persistent_volume_cells(&pv, now());
        assert_eq!(c[1], "0");
        assert_eq!(c[2], "RWO,RWX,RWOP");
        assert_eq!(c[3], "Retain");
        assert_eq!(c[4], "Terminating");
        assert_eq!(c[5], "");
        assert_eq!(c[6], "beta");
        assert_eq!(c[8], "gone");
        assert_eq!(c[10], "Block");
    }

    #[test]
    fn persistent_volume_claim_rows_match_kube() {
        // TestPrintPersistentVolumeClaim.
        let bound = json!({"metadata":{"name":"test1"},
            "spec":{"volumeName":"my-volume","volumeMode":"Filesystem"},
            "status":{"phase":"Bound","accessModes":["ReadOnlyMany"],"capacity":{"storage":"4Gi"}}});
        assert_eq!(
            row(persistent_volume_claim_cells(&bound, now())),
            json!([
                "test1",
                "Bound",
                "my-volume",
                "4Gi",
                "ROX",
                "",
                "<unset>",
                "<unknown>",
                "Filesystem"
            ])
        );
        let lost = json!({"metadata":{"name":"test2"},"spec":{"volumeMode":"Filesystem"},
            "status":{"phase":"Lost","accessModes":["ReadOnlyMany"],"capacity":{"storage":"4Gi"}}});
        assert_eq!(
            row(persistent_volume_claim_cells(&lost, now())),
            json!([
                "test2",
                "Lost",
                "",
                "",
                "",
                "",
                "<unset>",
                "<unknown>",
                "Filesystem"
            ])
        );
        let classy = json!({"metadata":{"name":"test5"},
            "spec":{"volumeName":"my-volume","storageClassName":"my-scn","volumeAttributesClassName":"my-vacn"},
            "status":{"phase":"Pending","accessModes":["ReadWriteOnce"],"capacity":{"storage":"10Gi"}}});
        assert_eq!(
            row(persistent_volume_claim_cells(&classy, now())),
            json!([
                "test5",
                "Pending",
                "my-volume",
                "10Gi",
                "RWO",
                "my-scn",
                "my-vacn",
                "<unknown>",
                "<unset>"
            ])
        );
    }

    #[test]
    fn pod_template_rows_show_containers_and_pod_labels() {
        // TestPrintPodTemplate.
        let pt = json!({"metadata":{"name":"pod-template-1"},
            "template":{"metadata":{"labels":{"a":"b"}},
                "spec":{"containers":[{"name":"fake-container","image":"fake-image"}]}}});
        assert_eq!(
            row(pod_template_cells(&pt, now())),
            json!(["pod-template-1", "fake-container", "fake-image", "a=b"])
        );
        let bare = json!({"metadata":{"name":"pod-template-2"},"template":{"spec":{}}});
        assert_eq!(
            row(pod_template_cells(&bare, now())),
            json!(["pod-template-2", "", "", "<none>"])
        );
    }

    #[test]
    fn component_status_rows_match_kube() {
        // TestPrintComponentStatus.
        let unknown = json!({"metadata":{"name":"cs1"},"conditions":[]});
        assert_eq!(
            row(component_status_cells(&unknown, now())),
            json!(["cs1", "Unknown", "", ""])
        );
        let healthy = json!({"metadata":{"name":"cs2"},"conditions":[
            {"type":"Healthy","status":"True","message":"test message","error":"test error"}]});
        assert_eq!(
            row(component_status_cells(&healthy, now())),
            json!(["cs2", "Healthy", "test message", "test error"])
        );
        let unhealthy = json!({"metadata":{"name":"cs3"},"conditions":[
            {"type":"Healthy","status":"False","message":"test message","error":"test error"}]});
        assert_eq!(component_status_cells(&unhealthy, now())[1], "Unhealthy");
    }
}
