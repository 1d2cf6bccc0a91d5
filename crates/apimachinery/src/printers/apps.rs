//! Workload tables: Deployment, ReplicaSet, ReplicationController, StatefulSet, DaemonSet and
//! ControllerRevision (`printDeployment`, `printReplicaSet`, `printReplicationController`,
//! `printStatefulSet`, `printDaemonSet`, `printControllerRevision`).

use jiff::Timestamp;
use serde_json::Value;

use super::{
    age, array_at, col, containers_and_images, format_label_selector, format_labels, int_at,
    label_selector_string, name, str_at, wide, Column, Description, AGE, NAME,
};

const CONTAINERS: Column = wide(
    "Containers",
    "string",
    Description::Text("Names of each container in the template."),
);
const IMAGES: Column = wide(
    "Images",
    "string",
    Description::Text("Images referenced by each container in the template."),
);

/// Deployment columns.
pub(super) const DEPLOYMENT_COLUMNS: &[Column] = &[
    NAME,
    col(
        "Ready",
        "string",
        Description::Text("Number of the pod with ready state"),
    ),
    col(
        "Up-to-date",
        "string",
        Description::Field("io.k8s.api.apps.v1.DeploymentStatus", "updatedReplicas"),
    ),
    col(
        "Available",
        "string",
        Description::Field("io.k8s.api.apps.v1.DeploymentStatus", "availableReplicas"),
    ),
    AGE,
    CONTAINERS,
    IMAGES,
    wide(
        "Selector",
        "string",
        Description::Field("io.k8s.api.apps.v1.DeploymentSpec", "selector"),
    ),
];

/// The cells of one Deployment's row.
pub(super) fn deployment_cells(d: &Value, now: Timestamp) -> Vec<Value> {
    // spec.replicas defaults to 1.
    let desired = int_at(d, "/spec/replicas", 1);
    let ready = int_at(d, "/status/readyReplicas", 0);
    let (containers, images) = containers_and_images(d.pointer("/spec/template/spec"));
    vec![
        name(d),
        Value::String(format!("{ready}/{desired}")),
        int_at(d, "/status/updatedReplicas", 0).into(),
        int_at(d, "/status/availableReplicas", 0).into(),
        age(d, now),
        containers.into(),
        images.into(),
        label_selector_string(d.pointer("/spec/selector")).into(),
    ]
}

const fn replica_columns(spec: &'static str, status: &'static str) -> [Column; 8] {
    [
        NAME,
        col("Desired", "integer", Description::Field(spec, "replicas")),
        col("Current", "integer", Description::Field(status, "replicas")),
        col(
            "Ready",
            "integer",
            Description::Field(status, "readyReplicas"),
        ),
        AGE,
        CONTAINERS,
        IMAGES,
        wide("Selector", "string", Description::Field(spec, "selector")),
    ]
}

/// ReplicaSet columns.
pub(super) const REPLICA_SET_COLUMNS: &[Column] = &replica_columns(
    "io.k8s.api.apps.v1.ReplicaSetSpec",
    "io.k8s.api.apps.v1.ReplicaSetStatus",
);

/// ReplicationController columns.
pub(super) const REPLICATION_CONTROLLER_COLUMNS: &[Column] = &replica_columns(
    "io.k8s.api.core.v1.ReplicationControllerSpec",
    "io.k8s.api.core.v1.ReplicationControllerStatus",
);

fn replica_cells(obj: &Value, now: Timestamp, selector: String) -> Vec<Value> {
    let (containers, images) = containers_and_images(obj.pointer("/spec/template/spec"));
    vec![
        name(obj),
        int_at(obj, "/spec/replicas", 1).into(),
        int_at(obj, "/status/replicas", 0).into(),
        int_at(obj, "/status/readyReplicas", 0).into(),
        age(obj, now),
        containers.into(),
        images.into(),
        selector.into(),
    ]
}

/// The cells of one ReplicaSet's row.
pub(super) fn replica_set_cells(rs: &Value, now: Timestamp) -> Vec<Value> {
    replica_cells(rs, now, format_label_selector(rs.pointer("/spec/selector")))
}

/// The cells of one ReplicationController's row.
pub(super) fn replication_controller_cells(rc: &Value, now: Timestamp) -> Vec<Value> {
    replica_cells(rc, now, format_labels(rc.pointer("/spec/selector")))
}

/// StatefulSet columns.
pub(super) const STATEFUL_SET_COLUMNS: &[Column] = &[
    NAME,
    col(
        "Ready",
        "string",
        Description::Text("Number of the pod with ready state"),
    ),
    AGE,
    CONTAINERS,
    IMAGES,
];

/// The cells of one StatefulSet's row: ready over desired replicas.
pub(super) fn stateful_set_cells(ss: &Value, now: Timestamp) -> Vec<Value> {
    // spec.replicas defaults to 1.
    let desired = int_at(ss, "/spec/replicas", 1);
    let ready = int_at(ss, "/status/readyReplicas", 0);
    let (containers, images) = containers_and_images(ss.pointer("/spec/template/spec"));
    vec![
        name(ss),
        format!("{ready}/{desired}").into(),
        age(ss, now),
        containers.into(),
        images.into(),
    ]
}

const DAEMON_SET_STATUS: &str = "io.k8s.api.apps.v1.DaemonSetStatus";

/// DaemonSet columns.
pub(super) const DAEMON_SET_COLUMNS: &[Column] = &[
    NAME,
    col(
        "Desired",
        "integer",
        Description::Field(DAEMON_SET_STATUS, "desiredNumberScheduled"),
    ),
    col(
        "Current",
        "integer",
        Description::Field(DAEMON_SET_STATUS, "currentNumberScheduled"),
    ),
    col(
        "Ready",
        "integer",
        Description::Field(DAEMON_SET_STATUS, "numberReady"),
    ),
    col(
        "Up-to-date",
        "integer",
        Description::Field(DAEMON_SET_STATUS, "updatedNumberScheduled"),
    ),
    col(
        "Available",
        "integer",
        Description::Field(DAEMON_SET_STATUS, "numberAvailable"),
    ),
    col(
        "Node Selector",
        "string",
        Description::Field("io.k8s.api.core.v1.PodSpec", "nodeSelector"),
    ),
    AGE,
    CONTAINERS,
    IMAGES,
    wide(
        "Selector",
        "string",
        Description::Field("io.k8s.api.apps.v1.DaemonSetSpec", "selector"),
    ),
];

/// The cells of one DaemonSet's row.
pub(super) fn daemon_set_cells(ds: &Value, now: Timestamp) -> Vec<Value> {
    let status = |field: &str| int_at(ds, &format!("/status/{field}"), 0);
    let (containers, images) = containers_and_images(ds.pointer("/spec/template/spec"));
    vec![
        name(ds),
        status("desiredNumberScheduled").into(),
        status("currentNumberScheduled").into(),
        status("numberReady").into(),
        status("updatedNumberScheduled").into(),
        status("numberAvailable").into(),
        format_labels(ds.pointer("/spec/template/spec/nodeSelector")).into(),
        age(ds, now),
        containers.into(),
        images.into(),
        format_label_selector(ds.pointer("/spec/selector")).into(),
    ]
}

/// ControllerRevision columns.
pub(super) const CONTROLLER_REVISION_COLUMNS: &[Column] = &[
    NAME,
    col(
        "Controller",
        "string",
        Description::Text("Controller of the object"),
    ),
    col(
        "Revision",
        "string",
        Description::Field("io.k8s.api.apps.v1.ControllerRevision", "revision"),
    ),
    AGE,
];

/// The cells of one ControllerRevision's row: the controller as `kind.group/name`.
pub(super) fn controller_revision_cells(cr: &Value, now: Timestamp) -> Vec<Value> {
    let controller = array_at(cr, "/metadata/ownerReferences")
        .iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
        .map(|r| {
            let group = str_at(r, "/apiVersion")
                .rsplit_once('/')
                .map(|(g, _)| g)
                .unwrap_or_default();
            let kind = str_at(r, "/kind");
            let group_kind = if group.is_empty() {
                kind.to_string()
            } else {
                format!("{kind}.{group}")
            };
            format!("{}/{}", group_kind.to_lowercase(), str_at(r, "/name"))
        })
        .unwrap_or_else(|| "<none>".to_string());
    vec![
        name(cr),
        controller.into(),
        int_at(cr, "/revision", 0).into(),
        age(cr, now),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn now() -> Timestamp {
        "2026-01-03T01:00:00Z".parse().unwrap()
    }

    #[test]
    fn deployment_row_shows_ready_over_desired() {
        let d = json!({"metadata":{"name":"web","creationTimestamp":"2026-01-01T00:00:00Z"},
            "spec":{"replicas":3,"selector":{"matchLabels":{"app":"web"}},
                "template":{"spec":{"containers":[{"name":"nginx","image":"nginx:1.25"},{"name":"side","image":"busybox"}]}}},
            "status":{"readyReplicas":2,"updatedReplicas":3,"availableReplicas":2}});
        let c = deployment_cells(&d, now());
        assert_eq!(
            Value::Array(c),
            json!([
                "web",
                "2/3",
                3,
                2,
                "2d1h",
                "nginx,side",
                "nginx:1.25,busybox",
                "app=web"
            ])
        );
    }

    #[test]
    fn deployment_without_status_defaults_to_zero_of_one() {
        let d = json!({"metadata":{"name":"web"},"spec":{}});
        let c = deployment_cells(&d, now());
        assert_eq!(c[1], "0/1");
        assert_eq!(c[4], "<unknown>");
    }

    #[test]
    fn replica_set_and_replication_controller_rows() {
        let rs = json!({"metadata":{"name":"web-abc"},"spec":{"replicas":2,
            "selector":{"matchLabels":{"app":"web","pod-template-hash":"abc"}},
            "template":{"spec":{"containers":[{"name":"c","image":"i"}]}}},
            "status":{"replicas":2,"readyReplicas":1}});
        let c = replica_set_cells(&rs, now());
        assert_eq!(&c[1..4], &[json!(2), json!(2), json!(1)]);
        assert_eq!(c[7], "app=web,pod-template-hash=abc");
        let rc = json!({"metadata":{"name":"rc"},"spec":{"replicas":1,"selector":{"app":"x"}}});
        let c = replication_controller_cells(&rc, now());
        assert_eq!(c[7], "app=x");
        assert_eq!(c[2], 0);
    }

    #[test]
    fn controller_revision_names_its_controller() {
        let cr = json!({"metadata":{"name":"ds-1","ownerReferences":[
            {"apiVersion":"apps/v1","kind":"DaemonSet","name":"ds","uid":"u","controller":true}]},
            "revision":3});
        let c = controller_revision_cells(&cr, now());
        assert_eq!(c[1], "daemonset.apps/ds");
        assert_eq!(c[2], 3);
        let orphan = json!({"metadata":{"name":"x"},"revision":1});
        assert_eq!(controller_revision_cells(&orphan, now())[1], "<none>");
    }

    #[test]
    fn replication_controller_without_selector_prints_none_as_kube() {
        // TestPrintReplicationController "no panic": no selector, template or name.
        let rc = json!({"metadata":{},"spec":{"replicas":0}});
        let c = replication_controller_cells(&rc, now());
        assert_eq!(
            Value::Array(c),
            json!(["", 0, 0, 0, "<unknown>", "", "", "<none>"])
        );
        let rs = json!({"metadata":{"name":"rs"},"spec":{"replicas":1}});
        assert_eq!(replica_set_cells(&rs, now())[7], "<none>");
    }

    fn two_containers() -> Value {
        json!({"spec":{"containers":[
            {"name":"fake-container1","image":"fake-image1"},
            {"name":"fake-container2","image":"fake-image2"}]}})
    }

    #[test]
    fn stateful_set_rows_match_kube() {
        // TestPrintStatefulSet.
        let ss = json!({"metadata":{"name":"test1","creationTimestamp":"2026-01-03T01:00:01Z"},
            "spec":{"replicas":5,"template":two_containers()},
            "status":{"replicas":5,"readyReplicas":2}});
        assert_eq!(
            Value::Array(stateful_set_cells(&ss, now())),
            json!([
                "test1",
                "2/5",
                "0s",
                "fake-container1,fake-container2",
                "fake-image1,fake-image2"
            ])
        );
    }

    #[test]
    fn daemon_set_rows_match_kube() {
        // TestPrintDaemonSet.
        let ds = json!({"metadata":{"name":"test1","creationTimestamp":"2026-01-03T01:00:01Z"},
            "spec":{"template":two_containers(),"selector":{"matchLabels":{"foo":"bar"}}},
            "status":{"currentNumberScheduled":2,"desiredNumberScheduled":3,"numberReady":1,
                "updatedNumberScheduled":2,"numberAvailable":0}});
        assert_eq!(
            Value::Array(daemon_set_cells(&ds, now())),
            json!([
                "test1",
                3,
                2,
                1,
                2,
                0,
                "<none>",
                "0s",
                "fake-container1,fake-container2",
                "fake-image1,fake-image2",
                "foo=bar"
            ])
        );
        let mut selected = ds.clone();
        selected["spec"]["template"]["spec"]["nodeSelector"] = json!({"zone":"a","disk":"ssd"});
        assert_eq!(daemon_set_cells(&selected, now())[6], "disk=ssd,zone=a");
    }
}
