//! Server-side table printing (`Accept: application/json;as=Table;g=meta.k8s.io;v=v1`).
//!
//! Mirrors `pkg/printers/internalversion/printers.go`: each kind has column definitions and a
//! function from an object to the cells of its row. Like the API server's table convertor,
//! rows always carry every column, including the `priority: 1` ones that kubectl shows only
//! with `-o wide`. Kinds without a printer get the default table (Name, Created At).

mod admission;
mod apiregistration;
mod apps;
mod autoscaling;
mod basic;
mod batch;
mod certificates;
mod core;
mod discovery;
pub mod duration;
mod event;
mod flowcontrol;
mod networking;
mod node;
mod pod;
mod policy;
mod rbac;
mod runtime_class;
mod scheduling;
mod service;
mod storage;

use jiff::Timestamp;
use serde_json::{json, Map, Value};

use crate::catalog::ResourceInfo;

/// One column of a table (`meta.k8s.io/v1` `TableColumnDefinition`).
#[derive(Clone, Copy, Debug)]
pub struct Column {
    /// Header text (kubectl upper-cases it).
    pub name: &'static str,
    /// OpenAPI type of the cells: `string`, `integer`, `date`, ...
    pub type_: &'static str,
    /// OpenAPI format hint; `name` marks the object's name column.
    pub format: &'static str,
    /// Description of the column.
    pub description: Description,
    /// 0 for default columns, 1 for `-o wide` columns.
    pub priority: u8,
}

/// Where a column's description comes from.
#[derive(Clone, Copy, Debug)]
pub enum Description {
    /// Literal text.
    Text(&'static str),
    /// The description of a field in a generated OpenAPI definition, as kube uses `SwaggerDoc()`.
    Field(&'static str, &'static str),
}

const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

const NAME: Column = Column {
    name: "Name",
    type_: "string",
    format: "name",
    description: Description::Field(OBJECT_META, "name"),
    priority: 0,
};

const AGE: Column = Column {
    name: "Age",
    type_: "string",
    format: "",
    description: Description::Field(OBJECT_META, "creationTimestamp"),
    priority: 0,
};

const fn col(name: &'static str, type_: &'static str, description: Description) -> Column {
    Column {
        name,
        type_,
        format: "",
        description,
        priority: 0,
    }
}

const fn wide(name: &'static str, type_: &'static str, description: Description) -> Column {
    Column {
        name,
        type_,
        format: "",
        description,
        priority: 1,
    }
}

impl Column {
    /// The `TableColumnDefinition` JSON.
    pub fn to_json(&self) -> Value {
        let description = match self.description {
            Description::Text(t) => t.to_string(),
            Description::Field(def, field) => crate::openapi::definitions::definitions()
                .get(def)
                .and_then(|d| d.pointer(&format!("/properties/{field}/description")))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
        };
        json!({
            "name": self.name,
            "type": self.type_,
            "format": self.format,
            "description": description,
            "priority": self.priority,
        })
    }
}

/// A kind's printer: its columns and the function producing one row's cells.
struct Printer {
    columns: &'static [Column],
    cells: fn(&Value, Timestamp) -> Vec<Value>,
    /// Row conditions (`Completed` for finished pods), if the kind has any.
    conditions: Option<fn(&Value) -> Option<Value>>,
}

fn printer_for(info: &ResourceInfo) -> Printer {
    let p = |columns, cells| Printer {
        columns,
        cells,
        conditions: None,
    };
    match (info.group, info.kind) {
        ("", "Pod") => Printer {
            columns: pod::COLUMNS,
            cells: pod::cells,
            conditions: Some(pod::conditions),
        },
        ("apps", "Deployment") => p(apps::DEPLOYMENT_COLUMNS, apps::deployment_cells),
        ("apps", "ReplicaSet") => p(apps::REPLICA_SET_COLUMNS, apps::replica_set_cells),
        ("", "ReplicationController") => p(
            apps::REPLICATION_CONTROLLER_COLUMNS,
            apps::replication_controller_cells,
        ),
        ("apps", "ControllerRevision") => p(
            apps::CONTROLLER_REVISION_COLUMNS,
            apps::controller_revision_cells,
        ),
        ("", "Node") => p(node::COLUMNS, node::cells),
        ("", "Event") | ("events.k8s.io", "Event") => p(event::COLUMNS, event::cells),
        ("", "Namespace") => p(basic::NAMESPACE_COLUMNS, basic::namespace_cells),
        ("", "ConfigMap") => p(basic::CONFIG_MAP_COLUMNS, basic::config_map_cells),
        ("coordination.k8s.io", "Lease") => p(basic::LEASE_COLUMNS, basic::lease_cells),
        ("", "Service") => p(service::COLUMNS, service::cells),
        ("", "Secret") => p(core::SECRET_COLUMNS, core::secret_cells),
        ("", "ServiceAccount") => p(core::SERVICE_ACCOUNT_COLUMNS, core::service_account_cells),
        ("", "Endpoints") => p(core::ENDPOINTS_COLUMNS, core::endpoints_cells),
        ("", "ResourceQuota") => p(core::RESOURCE_QUOTA_COLUMNS, core::resource_quota_cells),
        ("", "PersistentVolume") => p(
            core::PERSISTENT_VOLUME_COLUMNS,
            core::persistent_volume_cells,
        ),
        ("", "PersistentVolumeClaim") => p(
            core::PERSISTENT_VOLUME_CLAIM_COLUMNS,
            core::persistent_volume_claim_cells,
        ),
        ("", "PodTemplate") => p(core::POD_TEMPLATE_COLUMNS, core::pod_template_cells),
        ("", "ComponentStatus") => p(core::COMPONENT_STATUS_COLUMNS, core::component_status_cells),
        ("apps", "StatefulSet") => p(apps::STATEFUL_SET_COLUMNS, apps::stateful_set_cells),
        ("apps", "DaemonSet") => p(apps::DAEMON_SET_COLUMNS, apps::daemon_set_cells),
        ("batch", "Job") => p(batch::JOB_COLUMNS, batch::job_cells),
        ("batch", "CronJob") => p(batch::CRON_JOB_COLUMNS, batch::cron_job_cells),
        ("autoscaling", "HorizontalPodAutoscaler") => p(autoscaling::COLUMNS, autoscaling::cells),
        ("policy", "PodDisruptionBudget") => p(policy::COLUMNS, policy::cells),
        ("discovery.k8s.io", "EndpointSlice") => p(discovery::COLUMNS, discovery::cells),
        ("networking.k8s.io", "Ingress") => {
            p(networking::INGRESS_COLUMNS, networking::ingress_cells)
        }
        ("networking.k8s.io", "IngressClass") => p(
            networking::INGRESS_CLASS_COLUMNS,
            networking::ingress_class_cells,
        ),
        ("networking.k8s.io", "NetworkPolicy") => p(
            networking::NETWORK_POLICY_COLUMNS,
            networking::network_policy_cells,
        ),
        ("networking.k8s.io", "ServiceCIDR") => p(
            networking::SERVICE_CIDR_COLUMNS,
            networking::service_cidr_cells,
        ),
        ("networking.k8s.io", "IPAddress") => {
            p(networking::IP_ADDRESS_COLUMNS, networking::ip_address_cells)
        }
        ("rbac.authorization.k8s.io", "RoleBinding") => {
            p(rbac::ROLE_BINDING_COLUMNS, rbac::binding_cells)
        }
        ("rbac.authorization.k8s.io", "ClusterRoleBinding") => {
            p(rbac::CLUSTER_ROLE_BINDING_COLUMNS, rbac::binding_cells)
        }
        ("storage.k8s.io", "StorageClass") => {
            p(storage::STORAGE_CLASS_COLUMNS, storage::storage_class_cells)
        }
        ("storage.k8s.io", "CSIDriver") => {
            p(storage::CSI_DRIVER_COLUMNS, storage::csi_driver_cells)
        }
        ("storage.k8s.io", "CSINode") => p(storage::CSI_NODE_COLUMNS, storage::csi_node_cells),
        ("storage.k8s.io", "CSIStorageCapacity") => p(
            storage::CSI_STORAGE_CAPACITY_COLUMNS,
            storage::csi_storage_capacity_cells,
        ),
        ("storage.k8s.io", "VolumeAttachment") => p(
            storage::VOLUME_ATTACHMENT_COLUMNS,
            storage::volume_attachment_cells,
        ),
        ("scheduling.k8s.io", "PriorityClass") => p(scheduling::COLUMNS, scheduling::cells),
        ("node.k8s.io", "RuntimeClass") => p(runtime_class::COLUMNS, runtime_class::cells),
        ("certificates.k8s.io", "CertificateSigningRequest") => {
            p(certificates::COLUMNS, certificates::cells)
        }
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration")
        | ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration") => {
            p(admission::WEBHOOK_COLUMNS, admission::webhook_cells)
        }
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy") => {
            p(admission::POLICY_COLUMNS, admission::policy_cells)
        }
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding") => {
            p(admission::BINDING_COLUMNS, admission::binding_cells)
        }
        ("flowcontrol.apiserver.k8s.io", "FlowSchema") => p(
            flowcontrol::FLOW_SCHEMA_COLUMNS,
            flowcontrol::flow_schema_cells,
        ),
        ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration") => p(
            flowcontrol::PRIORITY_LEVEL_COLUMNS,
            flowcontrol::priority_level_cells,
        ),
        ("apiregistration.k8s.io", "APIService") => {
            p(apiregistration::COLUMNS, apiregistration::cells)
        }
        // Role, ClusterRole, LimitRange and every kind without a handler in kube's printers
        // get the default table.
        _ => p(basic::DEFAULT_COLUMNS, basic::default_cells),
    }
}

/// The column definitions a table of `info`'s objects has.
pub fn columns(info: &ResourceInfo) -> Vec<Value> {
    printer_for(info)
        .columns
        .iter()
        .map(Column::to_json)
        .collect()
}

/// Builds a table of `objects` of the resource `info`, with ages measured at `now`.
///
/// Returns `(columnDefinitions, rows)` for a `meta.k8s.io/v1` `Table`. With `include_object`
/// each row's `object` is the object's `PartialObjectMetadata` (kube's default,
/// `includeObject=PartialObjectMetadata`, which kubectl needs for the NAMESPACE column and
/// `--show-labels`); without it rows have no `object`, and a caller serving
/// `includeObject=Object` inserts the full object itself.
pub fn table(
    info: &ResourceInfo,
    objects: &[&Value],
    now: Timestamp,
    include_object: bool,
) -> (Vec<Value>, Vec<Value>) {
    let printer = printer_for(info);
    let columns = printer.columns.iter().map(Column::to_json).collect();
    let rows = objects
        .iter()
        .map(|obj| {
            let mut row = Map::new();
            row.insert("cells".into(), Value::Array((printer.cells)(obj, now)));
            if let Some(conditions) = printer.conditions.and_then(|c| c(obj)) {
                row.insert("conditions".into(), conditions);
            }
            if include_object {
                row.insert("object".into(), partial_object_metadata(obj));
            }
            Value::Object(row)
        })
        .collect();
    (columns, rows)
}

/// Puts `objects` in the order kube's list printer for `info`'s kind prints them.
///
/// Only FlowSchemas have one (`printFlowSchemaList` sorts by matching precedence, then name);
/// every other kind keeps the order it was listed in. Callers sort before [`table`], so that
/// rows and the objects they carry stay in step.
pub fn sort_for_table(info: &ResourceInfo, objects: &mut [&Value]) {
    if (info.group, info.kind) == ("flowcontrol.apiserver.k8s.io", "FlowSchema") {
        objects.sort_by(|a, b| {
            int_at(a, "/spec/matchingPrecedence", 0)
                .cmp(&int_at(b, "/spec/matchingPrecedence", 0))
                .then_with(|| str_at(a, "/metadata/name").cmp(str_at(b, "/metadata/name")))
        });
    }
}

/// What each row's `object` holds (the `includeObject` query parameter).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IncludeObject {
    /// No `object` (`includeObject=None`).
    None,
    /// The object's `PartialObjectMetadata` (kube's default).
    #[default]
    Metadata,
    /// The full object (`includeObject=Object`, kubectl's `--sort-by`).
    Object,
}

impl IncludeObject {
    /// Parses the `includeObject` query value; `None` for values kube rejects.
    pub fn from_query(value: &str) -> Option<IncludeObject> {
        match value {
            "None" => Some(IncludeObject::None),
            "" | "PartialObjectMetadata" => Some(IncludeObject::Metadata),
            "Object" => Some(IncludeObject::Object),
            _ => None,
        }
    }
}

/// A complete `meta.k8s.io/v1` `Table` of `objects`, as served for
/// `Accept: application/json;as=Table;v=v1;g=meta.k8s.io`.
pub fn table_object(
    info: &ResourceInfo,
    objects: &[&Value],
    now: Timestamp,
    include: IncludeObject,
    resource_version: Option<&str>,
) -> Value {
    let mut objects = objects.to_vec();
    sort_for_table(info, &mut objects);
    let (columns, mut rows) = table(info, &objects, now, include == IncludeObject::Metadata);
    if include == IncludeObject::Object {
        for (row, obj) in rows.iter_mut().zip(&objects) {
            if let Value::Object(row) = row {
                row.insert("object".into(), (*obj).clone());
            }
        }
    }
    let mut metadata = Map::new();
    if let Some(rv) = resource_version {
        metadata.insert("resourceVersion".into(), rv.into());
    }
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": columns,
        "rows": rows,
    })
}

/// The `meta.k8s.io/v1` `PartialObjectMetadata` of an object: its metadata only.
pub fn partial_object_metadata(obj: &Value) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata").cloned().unwrap_or_else(|| json!({})),
    })
}

// ---- helpers shared by the printers: typed reads of JSON objects ----

/// The string at `pointer`, or "" (Go's zero value).
fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// The integer at `pointer`, or `default`.
fn int_at(v: &Value, pointer: &str, default: i64) -> i64 {
    v.pointer(pointer)
        .and_then(Value::as_i64)
        .unwrap_or(default)
}

/// The array at `pointer`, or an empty slice.
fn array_at<'a>(v: &'a Value, pointer: &str) -> &'a [Value] {
    v.pointer(pointer)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// Parses an RFC 3339 timestamp at `pointer`.
fn time_at(v: &Value, pointer: &str) -> Option<Timestamp> {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .and_then(|s| s.parse::<Timestamp>().ok())
}

/// `translateTimestampSince`: the human duration since `t`, or `<unknown>`.
fn since(t: Option<Timestamp>, now: Timestamp) -> String {
    match t {
        Some(t) => duration::human_duration(now.as_nanosecond() - t.as_nanosecond()),
        None => "<unknown>".to_string(),
    }
}

/// The Age cell.
fn age(obj: &Value, now: Timestamp) -> Value {
    Value::String(since(time_at(obj, "/metadata/creationTimestamp"), now))
}

/// The Name cell.
fn name(obj: &Value) -> Value {
    Value::String(str_at(obj, "/metadata/name").to_string())
}

/// `labels.FormatLabels`: `k=v` pairs sorted by key, or `<none>`.
fn format_labels(map: Option<&Value>) -> String {
    let Some(Value::Object(m)) = map else {
        return "<none>".to_string();
    };
    if m.is_empty() {
        return "<none>".to_string();
    }
    let mut pairs: Vec<String> = m
        .iter()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
        .collect();
    pairs.sort();
    pairs.join(",")
}

/// `metav1.LabelSelectorAsSelector(sel).String()`: requirements sorted by key, `<invalid>` for
/// an operator kube rejects.
fn label_selector_string(sel: Option<&Value>) -> String {
    label_selector(sel).unwrap_or_else(|| "<invalid>".to_string())
}

/// `metav1.FormatLabelSelector`: like [`label_selector_string`], but `<none>` for a selector
/// that selects everything (or nothing) and `<error>` for an invalid one.
fn format_label_selector(sel: Option<&Value>) -> String {
    match label_selector(sel) {
        Some(s) if s.is_empty() => "<none>".to_string(),
        Some(s) => s,
        None => "<error>".to_string(),
    }
}

/// The selector's requirements as kube's `labels.Selector.String()`, `None` when invalid.
fn label_selector(sel: Option<&Value>) -> Option<String> {
    let Some(sel) = sel.filter(|s| s.is_object()) else {
        return Some(String::new());
    };
    let mut reqs: Vec<(String, String)> = Vec::new();
    if let Some(Value::Object(labels)) = sel.get("matchLabels") {
        for (k, v) in labels {
            reqs.push((k.clone(), format!("{k}={}", v.as_str().unwrap_or_default())));
        }
    }
    for expr in array_at(sel, "/matchExpressions") {
        let key = str_at(expr, "/key");
        let mut values: Vec<&str> = array_at(expr, "/values")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        values.sort_unstable();
        values.dedup();
        let text = match str_at(expr, "/operator") {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_string(),
            "DoesNotExist" => format!("!{key}"),
            _ => return None,
        };
        reqs.push((key.to_string(), text));
    }
    reqs.sort_by(|a, b| a.0.cmp(&b.0));
    Some(
        reqs.into_iter()
            .map(|(_, t)| t)
            .collect::<Vec<_>>()
            .join(","),
    )
}

/// A `resource.Quantity`'s `String()`: the serialized quantity as stored, `"0"` when absent
/// (Go's zero value).
fn quantity_at(v: &Value, pointer: &str) -> String {
    match v.pointer(pointer) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => "0".to_string(),
    }
}

/// `strings.Join` of the strings at `pointer`.
fn join_strings(v: &Value, pointer: &str, sep: &str) -> String {
    array_at(v, pointer)
        .iter()
        .filter_map(Value::as_str)
        .collect::<Vec<_>>()
        .join(sep)
}

/// The boolean at `pointer`, or `default`.
fn bool_at(v: &Value, pointer: &str, default: bool) -> bool {
    v.pointer(pointer)
        .and_then(Value::as_bool)
        .unwrap_or(default)
}

/// Whether the object has a `metadata.deletionTimestamp`.
fn deleting(obj: &Value) -> bool {
    obj.pointer("/metadata/deletionTimestamp")
        .is_some_and(|d| !d.is_null())
}

/// `listWithMoreString`: the first `max` items, then ` + N more...`; `<unset>` when empty.
fn list_with_more(items: &[String], max: usize) -> String {
    let shown = items[..items.len().min(max)].join(",");
    if items.len() > max {
        format!("{shown} + {} more...", items.len() - max)
    } else if shown.is_empty() {
        "<unset>".to_string()
    } else {
        shown
    }
}

/// `layoutContainerCells`: container names and images, comma-separated.
fn containers_and_images(pod_spec: Option<&Value>) -> (String, String) {
    let containers = pod_spec
        .and_then(|s| s.get("containers"))
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let names: Vec<&str> = containers.iter().map(|c| str_at(c, "/name")).collect();
    let images: Vec<&str> = containers.iter().map(|c| str_at(c, "/image")).collect();
    (names.join(","), images.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog;

    /// Whether kube itself serves an empty description for a column: RuntimeClass takes its
    /// Handler description from `ObjectMeta`, which has no `handler` field.
    fn kube_leaves_undescribed(kind: &str, column: &Value) -> bool {
        kind == "RuntimeClass" && column["name"] == "Handler"
    }

    #[test]
    fn every_served_resource_has_columns_with_a_name_column() {
        for info in catalog::all() {
            let cols = columns(info);
            assert!(
                cols.iter().any(|c| c["format"] == "name"),
                "{} has a name column",
                info.kind
            );
            for c in &cols {
                assert!(
                    kube_leaves_undescribed(info.kind, c)
                        || !c["description"].as_str().unwrap_or_default().is_empty(),
                    "{} column {} has a description",
                    info.kind,
                    c["name"]
                );
            }
        }
    }

    /// A resource of `group`/`kind` for dispatching to its printer.
    fn resource(group: &'static str, kind: &'static str) -> ResourceInfo {
        ResourceInfo {
            group,
            version: "v1",
            kind,
            plural: "",
            singular: "",
            short_names: &[],
            categories: &[],
            scope: catalog::Scope::Namespaced,
            verbs: &[],
            subresources: &[],
        }
    }

    /// Every kind with its own printer, by group.
    const PRINTED: &[(&str, &str)] = &[
        ("", "Pod"),
        ("", "Node"),
        ("", "Event"),
        ("", "Namespace"),
        ("", "ConfigMap"),
        ("", "Service"),
        ("", "ReplicationController"),
        ("", "Secret"),
        ("", "ServiceAccount"),
        ("", "Endpoints"),
        ("", "ResourceQuota"),
        ("", "PersistentVolume"),
        ("", "PersistentVolumeClaim"),
        ("", "PodTemplate"),
        ("", "ComponentStatus"),
        ("apps", "Deployment"),
        ("apps", "ReplicaSet"),
        ("apps", "StatefulSet"),
        ("apps", "DaemonSet"),
        ("apps", "ControllerRevision"),
        ("batch", "Job"),
        ("batch", "CronJob"),
        ("autoscaling", "HorizontalPodAutoscaler"),
        ("policy", "PodDisruptionBudget"),
        ("coordination.k8s.io", "Lease"),
        ("discovery.k8s.io", "EndpointSlice"),
        ("events.k8s.io", "Event"),
        ("networking.k8s.io", "Ingress"),
        ("networking.k8s.io", "IngressClass"),
        ("networking.k8s.io", "NetworkPolicy"),
        ("networking.k8s.io", "ServiceCIDR"),
        ("networking.k8s.io", "IPAddress"),
        ("rbac.authorization.k8s.io", "RoleBinding"),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
        ("storage.k8s.io", "StorageClass"),
        ("storage.k8s.io", "CSIDriver"),
        ("storage.k8s.io", "CSINode"),
        ("storage.k8s.io", "CSIStorageCapacity"),
        ("storage.k8s.io", "VolumeAttachment"),
        ("scheduling.k8s.io", "PriorityClass"),
        ("node.k8s.io", "RuntimeClass"),
        ("certificates.k8s.io", "CertificateSigningRequest"),
        (
            "admissionregistration.k8s.io",
            "MutatingWebhookConfiguration",
        ),
        (
            "admissionregistration.k8s.io",
            "ValidatingWebhookConfiguration",
        ),
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
        (
            "admissionregistration.k8s.io",
            "ValidatingAdmissionPolicyBinding",
        ),
        ("flowcontrol.apiserver.k8s.io", "FlowSchema"),
        ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"),
        ("apiregistration.k8s.io", "APIService"),
    ];

    /// k8s-openapi's schemas of every printed kind, independent of which kinds the server
    /// serves yet.
    fn printed_kind_schemas() -> Map<String, Value> {
        use k8s_openapi::api::{
            admissionregistration::v1 as admission, apps::v1 as apps,
            autoscaling::v2 as autoscaling, batch::v1 as batch, certificates::v1 as certificates,
            coordination::v1 as coordination, core::v1 as core, discovery::v1 as discovery,
            events::v1 as events, flowcontrol::v1 as flowcontrol, networking::v1 as networking,
            node::v1 as node, policy::v1 as policy, rbac::v1 as rbac, scheduling::v1 as scheduling,
            storage::v1 as storage,
        };
        use k8s_openapi::schemars::generate::{SchemaGenerator, SchemaSettings};
        let mut gen: SchemaGenerator = SchemaSettings::openapi3().into_generator();
        macro_rules! schemas {
            ($($ty:ty),* $(,)?) => { $( gen.subschema_for::<$ty>(); )* };
        }
        schemas!(
            core::Pod,
            core::Node,
            core::Event,
            core::Namespace,
            core::ConfigMap,
            core::Service,
            core::ReplicationController,
            core::Secret,
            core::ServiceAccount,
            core::Endpoints,
            core::ResourceQuota,
            core::PersistentVolume,
            core::PersistentVolumeClaim,
            core::PodTemplate,
            core::ComponentStatus,
            apps::Deployment,
            apps::ReplicaSet,
            apps::StatefulSet,
            apps::DaemonSet,
            apps::ControllerRevision,
            batch::Job,
            batch::CronJob,
            autoscaling::HorizontalPodAutoscaler,
            policy::PodDisruptionBudget,
            coordination::Lease,
            discovery::EndpointSlice,
            events::Event,
            networking::Ingress,
            networking::IngressClass,
            networking::NetworkPolicy,
            networking::ServiceCIDR,
            networking::IPAddress,
            rbac::RoleBinding,
            rbac::ClusterRoleBinding,
            storage::StorageClass,
            storage::CSIDriver,
            storage::CSINode,
            storage::CSIStorageCapacity,
            storage::VolumeAttachment,
            scheduling::PriorityClass,
            node::RuntimeClass,
            certificates::CertificateSigningRequest,
            admission::MutatingWebhookConfiguration,
            admission::ValidatingWebhookConfiguration,
            admission::ValidatingAdmissionPolicy,
            admission::ValidatingAdmissionPolicyBinding,
            flowcontrol::FlowSchema,
            flowcontrol::PriorityLevelConfiguration,
        );
        gen.take_definitions(true)
    }

    #[test]
    fn every_field_description_names_a_documented_field() {
        let schemas = printed_kind_schemas();
        for (group, kind) in PRINTED {
            let printer = printer_for(&resource(group, kind));
            assert!(
                printer.columns.iter().any(|c| c.format == "name"),
                "{kind} has a name column"
            );
            for c in printer.columns {
                let described = match c.description {
                    Description::Text(t) => !t.is_empty(),
                    Description::Field(def, field) => schemas
                        .get(def)
                        .and_then(|d| d.pointer(&format!("/properties/{field}/description")))
                        .and_then(Value::as_str)
                        .is_some_and(|d| !d.is_empty()),
                };
                let column = json!({"name": c.name});
                assert!(
                    described || kube_leaves_undescribed(kind, &column),
                    "{group}/{kind} column {} names no documented field",
                    c.name
                );
            }
        }
    }

    #[test]
    fn every_printed_row_has_a_cell_per_column() {
        let now: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let empty = json!({"metadata":{"name":"x"}});
        for (group, kind) in PRINTED {
            let printer = printer_for(&resource(group, kind));
            let cells = (printer.cells)(&empty, now);
            // kube's IPAddress rows carry the age past the last of its two columns.
            let extra = usize::from(*kind == "IPAddress");
            assert_eq!(cells.len(), printer.columns.len() + extra, "{group}/{kind}");
        }
    }

    #[test]
    fn kinds_kube_leaves_to_the_default_table() {
        for (group, kind) in [
            ("rbac.authorization.k8s.io", "Role"),
            ("rbac.authorization.k8s.io", "ClusterRole"),
            ("", "LimitRange"),
        ] {
            let printer = printer_for(&resource(group, kind));
            let names: Vec<&str> = printer.columns.iter().map(|c| c.name).collect();
            assert_eq!(names, ["Name", "Created At"], "{group}/{kind}");
        }
    }

    #[test]
    fn name_column_description_comes_from_object_meta() {
        let info = catalog::by_kind("v1", "ConfigMap").unwrap();
        let cols = columns(info);
        assert!(cols[0]["description"]
            .as_str()
            .unwrap()
            .starts_with("Name must be unique"));
    }

    #[test]
    fn rows_carry_partial_object_metadata_when_asked() {
        let info = catalog::by_kind("v1", "ConfigMap").unwrap();
        let cm =
            json!({"metadata":{"name":"c","namespace":"ns","labels":{"a":"b"}},"data":{"x":"y"}});
        let now: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let (_, rows) = table(info, &[&cm], now, true);
        assert_eq!(rows[0]["object"]["kind"], "PartialObjectMetadata");
        assert_eq!(rows[0]["object"]["metadata"]["namespace"], "ns");
        let (_, rows) = table(info, &[&cm], now, false);
        assert!(rows[0].get("object").is_none());
    }

    #[test]
    fn table_object_has_kube_shape_for_each_include_mode() {
        let info = catalog::by_kind("v1", "ConfigMap").unwrap();
        let cm = json!({"metadata":{"name":"c"},"data":{"x":"y"}});
        let now: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let t = table_object(info, &[&cm], now, IncludeObject::Object, Some("42"));
        assert_eq!(t["kind"], "Table");
        assert_eq!(t["apiVersion"], "meta.k8s.io/v1");
        assert_eq!(t["metadata"]["resourceVersion"], "42");
        assert_eq!(t["rows"][0]["object"], cm);
        let t = table_object(info, &[&cm], now, IncludeObject::None, None);
        assert!(t["rows"][0].get("object").is_none());
        assert_eq!(IncludeObject::from_query(""), Some(IncludeObject::Metadata));
        assert_eq!(
            IncludeObject::from_query("Object"),
            Some(IncludeObject::Object)
        );
        assert_eq!(IncludeObject::from_query("bogus"), None);
    }

    #[test]
    fn every_row_has_one_cell_per_column() {
        let now: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let empty = json!({"metadata":{"name":"x"}});
        for info in catalog::all() {
            let (cols, rows) = table(info, &[&empty], now, false);
            let extra = usize::from(info.kind == "IPAddress");
            assert_eq!(
                rows[0]["cells"].as_array().unwrap().len(),
                cols.len() + extra,
                "{}",
                info.kind
            );
        }
    }

    #[test]
    fn label_selectors_print_like_kube() {
        let sel = json!({"matchLabels":{"app":"web","tier":"fe"},
            "matchExpressions":[{"key":"env","operator":"In","values":["prod","dev"]},
                                {"key":"legacy","operator":"DoesNotExist"}]});
        assert_eq!(
            label_selector_string(Some(&sel)),
            "app=web,env in (dev,prod),!legacy,tier=fe"
        );
        assert_eq!(format_labels(None), "<none>");
        assert_eq!(format_labels(Some(&json!({"b":"2","a":"1"}))), "a=1,b=2");
    }

    #[test]
    fn flow_schemas_are_listed_by_matching_precedence_then_name() {
        let fs = |name: &str, precedence: i64| {
            json!({"metadata":{"name":name},"spec":{"matchingPrecedence":precedence,
                "priorityLevelConfiguration":{"name":"pl"}}})
        };
        let (global, exempt, probes, catch_all) = (
            fs("global-default", 9900),
            fs("exempt", 1),
            fs("probes", 2),
            fs("catch-all", 10000),
        );
        let b_leader = fs("b-leader", 200);
        let a_leader = fs("a-leader", 200);
        let info = resource("flowcontrol.apiserver.k8s.io", "FlowSchema");
        let now: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let listed = [&catch_all, &global, &b_leader, &exempt, &a_leader, &probes];
        let t = table_object(&info, &listed, now, IncludeObject::Object, None);
        let names: Vec<&str> = t["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["cells"][0].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "exempt",
                "probes",
                "a-leader",
                "b-leader",
                "global-default",
                "catch-all"
            ]
        );
        for row in t["rows"].as_array().unwrap() {
            assert_eq!(row["object"]["metadata"]["name"], row["cells"][0]);
        }
        // Other kinds keep their listed order.
        let mut pods = listed.to_vec();
        sort_for_table(&resource("", "Pod"), &mut pods);
        assert_eq!(pods[0]["metadata"]["name"], "catch-all");
    }
}
