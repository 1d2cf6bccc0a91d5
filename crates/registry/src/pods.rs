//! Pods: the pod-only defaults (`SetDefaults_Pod` and what admission adds), the QoS class,
//! the update and status rules, field selectors and graceful deletion. Pod specs themselves
//! (shared with templates) are in `podspec`.
//!
//! Mirrors `pkg/registry/core/pod/strategy.go`, `SetDefaults_Pod` of
//! `pkg/apis/core/v1/defaults.go`, `ValidatePodUpdate` / `ValidatePodStatusUpdate` of
//! `pkg/apis/core/validation/validation.go` and `pkg/apis/core/helper/qos`.

use std::collections::{BTreeMap, BTreeSet};

use rkcm_apimachinery::catalog::ResourceInfo;
use rkcm_apimachinery::quantity::Quantity;
use serde_json::{json, Value};

use super::generic::GenericStrategy;
use super::meta::{self, name_is_dns_subdomain};
use super::object::{
    copy, default_field, get, get_i64, get_str, object_mut, semantically_equal, set,
};
use super::podspec::{
    default_pod_spec, encode_pod_value_structs, push_invalid_names, validate_pod_spec,
    CONTAINER_LISTS,
};
use super::{FieldError, GracefulDelete, Strategy};

/// `SetDefaults_Pod`: requests default to limits, `enableServiceLinks` to true. (A pod's
/// `priority` and `preemptionPolicy` are the `Priority` admission plugin's.)
fn default_pod(pod: &mut Value) {
    let Some(spec) = object_mut(pod, &["spec"]) else {
        return;
    };
    default_pod_spec(spec);
    default_field(spec, "enableServiceLinks", json!(true));
    for list in CONTAINER_LISTS {
        let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) else {
            continue;
        };
        for c in containers.iter_mut() {
            let Some(limits) = c
                .pointer("/resources/limits")
                .and_then(Value::as_object)
                .cloned()
            else {
                continue;
            };
            let Some(requests) = object_mut(c, &["resources", "requests"]) else {
                continue;
            };
            for (k, v) in limits {
                requests.entry(k).or_insert(v);
            }
        }
    }
    if let Some(pod) = pod.as_object_mut() {
        encode_pod_value_structs(pod);
    }
}

/// The QoS class of a pod (`qos.GetPodQOS`): `Guaranteed` when every container has equal
/// cpu and memory requests and limits, `BestEffort` when none has any, else `Burstable`.
pub(crate) fn qos_class(pod: &Value) -> &'static str {
    let mut requests: BTreeMap<String, Quantity> = BTreeMap::new();
    let mut limits: BTreeMap<String, Quantity> = BTreeMap::new();
    let mut guaranteed = true;
    for list in CONTAINER_LISTS {
        let containers = get(pod, &["spec", list]).and_then(Value::as_array);
        for c in containers.into_iter().flatten() {
            for (kind, sums) in [("requests", &mut requests), ("limits", &mut limits)] {
                let mut found = BTreeSet::new();
                let list = get(c, &["resources", kind]).and_then(Value::as_object);
                for (name, q) in list.into_iter().flatten() {
                    if name != "cpu" && name != "memory" {
                        continue;
                    }
                    let Ok(n) = Quantity::from_json(q) else {
                        continue;
                    };
                    if n.sign() > 0 {
                        let sum = sums.entry(name.clone()).or_default();
                        // Past 38 digits the sum no longer changes; no pod asks for that much.
                        if let Some(total) = sum.checked_add(&n) {
                            *sum = total;
                        }
                        found.insert(name.as_str());
                    }
                }
                if kind == "limits" && !(found.contains("cpu") && found.contains("memory")) {
                    guaranteed = false;
                }
            }
        }
    }
    if requests.is_empty() && limits.is_empty() {
        return "BestEffort";
    }
    if guaranteed
        && requests.iter().all(|(k, v)| limits.get(k) == Some(v))
        && requests.len() == limits.len()
    {
        return "Guaranteed";
    }
    "Burstable"
}

/// The annotation that ranks pods for deletion when a ReplicaSet scales down (`core.PodDeletionCost`).
const POD_DELETION_COST: &str = "controller.kubernetes.io/pod-deletion-cost";

/// `helper.GetDeletionCostFromPodAnnotations`: the deletion cost as a 32-bit integer, refusing
/// a leading `+` or leading zeros (`validFirstDigit`); `Ok(0)` when the annotation is absent.
fn deletion_cost(obj: &Value) -> Result<i32, ()> {
    let Some(value) = get(obj, &["metadata", "annotations", POD_DELETION_COST]) else {
        return Ok(0);
    };
    let text = value.as_str().ok_or(())?;
    let valid_first_digit = match text.as_bytes() {
        [] => false,
        [b'0', ..] => text == "0",
        [first, ..] => *first == b'-' || first.is_ascii_digit(),
    };
    if !valid_first_digit {
        return Err(());
    }
    text.parse::<i32>().map_err(|_| ())
}

/// The deletion-cost part of `ValidatePodSpecificAnnotations`. On update an invalid value is
/// let through when the old pod already had one (`AllowInvalidPodDeletionCost`).
fn validate_deletion_cost(new: &Value, old: Option<&Value>) -> Vec<FieldError> {
    if deletion_cost(new).is_ok() || old.is_some_and(|o| deletion_cost(o).is_err()) {
        return Vec::new();
    }
    let value = get(new, &["metadata", "annotations", POD_DELETION_COST]);
    vec![FieldError::invalid(
        format!("metadata.annotations[{POD_DELETION_COST}]"),
        value.unwrap_or(&Value::Null),
        "must be a 32bit integer",
    )]
}

const UPDATABLE_POD_SPEC_FIELDS: &str = "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

/// The part of `ValidatePodUpdate` about the spec: only images, `activeDeadlineSeconds`,
/// added tolerations and a negative grace period raised to 1 may change.
fn validate_pod_spec_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let new_spec = get(new, &["spec"]).cloned().unwrap_or(Value::Null);
    let old_spec = get(old, &["spec"]).cloned().unwrap_or(Value::Null);

    match (
        get(&new_spec, &["activeDeadlineSeconds"]).filter(|v| !v.is_null()),
        get_i64(&old_spec, &["activeDeadlineSeconds"]),
    ) {
        (Some(v), old_ads) => {
            let n = v.as_i64().unwrap_or(-1);
            if !(0..=i64::from(i32::MAX)).contains(&n) {
                errs.push(FieldError::invalid(
                    "spec.activeDeadlineSeconds",
                    v,
                    "must be between 0 and 2147483647, inclusive",
                ));
                return errs;
            }
            if old_ads.is_some_and(|o| o < n) {
                errs.push(FieldError::invalid(
                    "spec.activeDeadlineSeconds",
                    v,
                    "must be less than or equal to previous value",
                ));
                return errs;
            }
        }
        (None, Some(_)) => errs.push(FieldError::invalid(
            "spec.activeDeadlineSeconds",
            &Value::Null,
            "must not update from a positive integer to nil value",
        )),
        (None, None) => {}
    }

    // Munge the new spec with the old values of what may change, then compare.
    let mut munged = new_spec.clone();
    for list in CONTAINER_LISTS {
        let old_list = get(&old_spec, &[list]).and_then(Value::as_array);
        let new_list = munged.get_mut(list).and_then(Value::as_array_mut);
        if let (Some(old_list), Some(new_list)) = (old_list, new_list) {
            if old_list.len() == new_list.len() {
                for (n, o) in new_list.iter_mut().zip(old_list) {
                    copy(n, o, &["image"]);
                }
            }
        }
    }
    copy(&mut munged, &old_spec, &["activeDeadlineSeconds"]);
    let old_tolerations: Vec<Value> = get(&old_spec, &["tolerations"])
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let new_tolerations: Vec<Value> = get(&munged, &["tolerations"])
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if old_tolerations.iter().all(|t| new_tolerations.contains(t)) {
        copy(&mut munged, &old_spec, &["tolerations"]);
    }
    if get_i64(&old_spec, &["terminationGracePeriodSeconds"]).is_some_and(|g| g < 0)
        && get_i64(&munged, &["terminationGracePeriodSeconds"]) == Some(1)
    {
        copy(&mut munged, &old_spec, &["terminationGracePeriodSeconds"]);
    }
    if !semantically_equal(Some(&munged), Some(&old_spec)) {
        let mut changed = Vec::new();
        diff_paths("spec", Some(&old_spec), Some(&munged), &mut changed);
        errs.push(FieldError::forbidden(
            "spec",
            &format!(
                "pod updates may not change fields other than {UPDATABLE_POD_SPEC_FIELDS}\n{}",
                changed.join("\n")
            ),
        ));
    }
    errs
}

/// The parts of `ValidatePodStatusUpdate` this server implements: the QoS class is
/// immutable, the nominated node is a valid node name, and pod and host IPs are IPs.
fn validate_pod_status(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = meta::validate_immutable(
        get(new, &["status", "qosClass"]),
        get(old, &["status", "qosClass"]),
        "status.qosClass",
    );
    let nominated = get_str(new, &["status", "nominatedNodeName"]).unwrap_or("");
    if !nominated.is_empty() && Some(nominated) != get_str(old, &["status", "nominatedNodeName"]) {
        push_invalid_names(
            &mut errs,
            "status.nominatedNodeName",
            nominated,
            name_is_dns_subdomain(nominated, false),
        );
    }
    for list in ["podIPs", "hostIPs"] {
        for (i, ip) in get(new, &["status", list])
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let value = get(ip, &["ip"]).unwrap_or(&Value::Null);
            if value
                .as_str()
                .and_then(|s| s.parse::<std::net::IpAddr>().ok())
                .is_none()
            {
                errs.push(FieldError::invalid(
                    format!("status.{list}[{i}].ip"),
                    value,
                    "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
                ));
            }
        }
    }
    errs.extend(validate_container_state_transitions(new, old));
    // TODO: init container state transitions and pod conditions are not validated.
    errs
}

/// `ValidateContainerStateTransition`: unless the pod restarts always, a terminated container
/// stays terminated (with `OnFailure`, a failed one may restart).
fn validate_container_state_transitions(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let policy = get_str(old, &["spec", "restartPolicy"]).unwrap_or("Always");
    if policy == "Always" {
        return errs;
    }
    let statuses = |obj: &Value| -> Vec<Value> {
        get(obj, &["status", "containerStatuses"])
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let new_statuses = statuses(new);
    for (i, old_status) in statuses(old).iter().enumerate() {
        let Some(terminated) = get(old_status, &["state", "terminated"]).filter(|t| !t.is_null())
        else {
            continue;
        };
        if policy == "OnFailure" && get_i64(terminated, &["exitCode"]).unwrap_or(0) != 0 {
            continue;
        }
        let name = get_str(old_status, &["name"]);
        for new_status in &new_statuses {
            let still_terminated =
                get(new_status, &["state", "terminated"]).is_some_and(|t| !t.is_null());
            if get_str(new_status, &["name"]) == name && !still_terminated {
                errs.push(FieldError::forbidden(
                    format!("status.containerStatuses[{i}].state"),
                    "may not be transitioned to non-terminated state",
                ));
            }
        }
    }
    errs
}

/// The paths at which two JSON trees differ, for the message of a forbidden pod update.
fn diff_paths(path: &str, a: Option<&Value>, b: Option<&Value>, out: &mut Vec<String>) {
    if semantically_equal(a, b) {
        return;
    }
    match (a, b) {
        (Some(Value::Object(x)), Some(Value::Object(y))) => {
            let keys: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for k in keys {
                diff_paths(&format!("{path}.{k}"), x.get(k), y.get(k), out);
            }
        }
        (Some(Value::Array(x)), Some(Value::Array(y))) if x.len() == y.len() => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                diff_paths(&format!("{path}[{i}]"), Some(p), Some(q), out);
            }
        }
        _ => out.push(format!(
            "  {path}: {} -> {}",
            a.map_or_else(|| "<unset>".to_string(), Value::to_string),
            b.map_or_else(|| "<unset>".to_string(), Value::to_string)
        )),
    }
}

/// The strategy of pods.
pub(crate) struct PodStrategy {
    base: GenericStrategy,
}

impl PodStrategy {
    /// The strategy of `info` (core/v1 pods).
    pub(crate) fn new(info: &'static ResourceInfo) -> Self {
        PodStrategy {
            base: GenericStrategy::new(info).tracking_generation(),
        }
    }
}

impl Strategy for PodStrategy {
    fn resource(&self) -> &'static ResourceInfo {
        self.base.resource()
    }

    fn default(&self, obj: &mut Value) {
        default_pod(obj);
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        self.base.prepare_for_create(obj);
        let qos = qos_class(obj);
        set(
            obj,
            &["status"],
            Some(json!({"phase": "Pending", "qosClass": qos})),
        );
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        // Status kept, generation bumped on a spec change (updatePodGeneration).
        self.base.prepare_for_update(new, old);
    }

    fn prepare_for_status_update(&self, new: &mut Value, old: &Value) {
        // kube defaults every decoded body, status updates included.
        self.default(new);
        self.base.prepare_for_status_update(new, old);
        // Old kubelets corrupt owner references through /status; they are never taken from it.
        copy(new, old, &["metadata", "ownerReferences"]);
        if get_str(new, &["status", "qosClass"]).is_none_or(str::is_empty) {
            copy(new, old, &["status", "qosClass"]);
        }
        preserve_observed_generation(new, old);
    }

    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        // ValidatePod: metadata first, then the spec.
        let mut errs = self.base.validate_create(obj);
        errs.extend(validate_deletion_cost(obj, None));
        errs.extend(validate_pod_spec(get(obj, &["spec"]), "spec"));
        // ValidatePodCreate: ephemeral containers come only through their subresource.
        if get(obj, &["spec", "ephemeralContainers"])
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty())
        {
            errs.push(FieldError::forbidden(
                "spec.ephemeralContainers",
                "cannot be set on create",
            ));
        }
        errs
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = self.base.validate_update(new, old);
        errs.extend(validate_deletion_cost(new, Some(old)));
        errs.extend(validate_pod_spec(get(new, &["spec"]), "spec"));
        errs.extend(validate_pod_spec_update(new, old));
        errs.extend(validate_pod_status(new, old));
        errs
    }

    fn selectable_fields(&self) -> &'static [&'static str] {
        // Kubelets watch their pods by spec.nodeName; controllers select on status.phase.
        &["spec.nodeName", "status.phase"]
    }

    fn field_value(&self, obj: &Value, field: &str) -> Option<String> {
        let s = |path: &[&str]| Some(get_str(obj, path).unwrap_or("").to_string());
        match field {
            "spec.nodeName" => s(&["spec", "nodeName"]),
            "spec.restartPolicy" => s(&["spec", "restartPolicy"]),
            "spec.schedulerName" => s(&["spec", "schedulerName"]),
            "spec.serviceAccountName" => s(&["spec", "serviceAccountName"]),
            "spec.hostNetwork" => Some(
                get(obj, &["spec", "hostNetwork"])
                    .and_then(Value::as_bool)
                    .unwrap_or(false)
                    .to_string(),
            ),
            "status.phase" => s(&["status", "phase"]),
            "status.podIP" => Some(
                get(obj, &["status", "podIPs"])
                    .and_then(Value::as_array)
                    .and_then(|a| a.first())
                    .and_then(|ip| get_str(ip, &["ip"]))
                    .or_else(|| get_str(obj, &["status", "podIP"]))
                    .unwrap_or("")
                    .to_string(),
            ),
            "status.nominatedNodeName" => s(&["status", "nominatedNodeName"]),
            _ => self.base.field_value(obj, field),
        }
    }

    fn graceful_delete(&self, obj: &Value, requested_grace: Option<i64>) -> GracefulDelete {
        // CheckGracefulDelete of the pod strategy.
        let mut period = requested_grace
            .or_else(|| get_i64(obj, &["spec", "terminationGracePeriodSeconds"]))
            .unwrap_or(0);
        if get_str(obj, &["spec", "nodeName"]).is_none_or(str::is_empty) {
            period = 0;
        }
        if matches!(
            get_str(obj, &["status", "phase"]),
            Some("Failed" | "Succeeded")
        ) {
            period = 0;
        }
        if period < 0 {
            period = 1;
        }
        if period == 0 {
            GracefulDelete::Immediate
        } else {
            GracefulDelete::Graceful {
                grace_period_seconds: period,
            }
        }
    }

    fn scale_replicas(&self, obj: &Value) -> Option<(i32, i32, String)> {
        self.base.scale_replicas(obj)
    }

    fn set_scale_replicas(&self, obj: &mut Value, replicas: i32) -> Result<(), FieldError> {
        self.base.set_scale_replicas(obj, replicas)
    }
}

/// `preserveOldObservedGeneration`: a status write that leaves `observedGeneration` unset
/// (in the status or in a condition) keeps the old value.
fn preserve_observed_generation(new: &mut Value, old: &Value) {
    if get_i64(new, &["status", "observedGeneration"]).unwrap_or(0) == 0 {
        if let Some(g) = get(old, &["status", "observedGeneration"]) {
            set(new, &["status", "observedGeneration"], Some(g.clone()));
        }
    }
    let mut old_gens: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for c in get(old, &["status", "conditions"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        old_gens
            .entry(get_str(c, &["type"]).unwrap_or("").to_string())
            .or_default()
            .push(get_i64(c, &["observedGeneration"]).unwrap_or(0));
    }
    let Some(conds) = new
        .pointer_mut("/status/conditions")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for c in conds.iter_mut() {
        let ty = get_str(c, &["type"]).unwrap_or("").to_string();
        let old_gen = old_gens
            .get_mut(&ty)
            .filter(|v| !v.is_empty())
            .map(|v| v.remove(0))
            .unwrap_or(0);
        if get_i64(c, &["observedGeneration"]).unwrap_or(0) == 0 && old_gen != 0 {
            set(c, &["observedGeneration"], Some(json!(old_gen)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rkcm_apimachinery::catalog;

    fn strategy() -> PodStrategy {
        PodStrategy::new(catalog::by_kind("v1", "Pod").expect("served"))
    }

    fn pod(containers: Value) -> Value {
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"containers": containers}
        })
    }

    fn created(containers: Value) -> Value {
        let s = strategy();
        let mut p = pod(containers);
        s.default(&mut p);
        s.prepare_for_create(&mut p);
        p
    }

    #[test]
    fn defaults_fill_the_pod_spec_and_containers_as_kube_does() {
        let p = created(json!([
            {"name": "a", "image": "nginx"},
            {"name": "b", "image": "nginx:1.25", "ports": [{"containerPort": 80}]},
            {"name": "c", "image": "registry:5000/app:latest"},
            {"name": "d", "image": "app@sha256:abc"}
        ]));
        let spec = &p["spec"];
        assert_eq!(spec["restartPolicy"], "Always");
        assert_eq!(spec["dnsPolicy"], "ClusterFirst");
        assert_eq!(spec["schedulerName"], "default-scheduler");
        assert_eq!(spec["terminationGracePeriodSeconds"], 30);
        assert_eq!(spec["securityContext"], json!({}));
        assert_eq!(spec["enableServiceLinks"], true);
        // Priority and the default tolerations are admission's, not defaults.
        assert!(spec.get("priority").is_none());
        assert!(spec.get("tolerations").is_none());
        let policies: Vec<&str> = spec["containers"]
            .as_array()
            .expect("containers")
            .iter()
            .map(|c| c["imagePullPolicy"].as_str().expect("set"))
            .collect();
        assert_eq!(
            policies,
            ["Always", "IfNotPresent", "Always", "IfNotPresent"]
        );
        assert_eq!(
            spec["containers"][0]["terminationMessagePath"],
            "/dev/termination-log"
        );
        assert_eq!(spec["containers"][0]["terminationMessagePolicy"], "File");
        assert_eq!(spec["containers"][1]["ports"][0]["protocol"], "TCP");
        assert_eq!(
            p["status"],
            json!({"phase": "Pending", "qosClass": "BestEffort"})
        );
        assert_eq!(p["metadata"]["generation"], 1);
        assert!(
            strategy().validate_create(&p).is_empty(),
            "{:?}",
            strategy().validate_create(&p)
        );
    }

    #[test]
    fn empty_strings_in_enum_fields_are_defaulted_not_rejected() {
        let mut p = pod(
            json!([{"name": "a", "image": "x", "imagePullPolicy": "", "terminationMessagePolicy": "",
            "livenessProbe": {"exec": {"command": ["true"]}, "periodSeconds": 0}}]),
        );
        p["spec"]["restartPolicy"] = json!("");
        p["spec"]["dnsPolicy"] = json!("");
        let s = strategy();
        s.default(&mut p);
        s.prepare_for_create(&mut p);
        assert_eq!(p["spec"]["restartPolicy"], "Always");
        assert_eq!(p["spec"]["containers"][0]["imagePullPolicy"], "Always");
        assert_eq!(
            p["spec"]["containers"][0]["livenessProbe"]["periodSeconds"],
            10
        );
        assert!(
            s.validate_create(&p).is_empty(),
            "{:?}",
            s.validate_create(&p)
        );
    }

    #[test]
    fn qos_class_is_computed_from_requests_and_limits() {
        let guaranteed = created(json!([{"name": "a", "image": "x",
            "resources": {"limits": {"cpu": "100m", "memory": "1Gi"}}}]));
        assert_eq!(guaranteed["status"]["qosClass"], "Guaranteed");
        assert_eq!(
            guaranteed["spec"]["containers"][0]["resources"]["requests"],
            json!({"cpu": "100m", "memory": "1Gi"})
        );
        let burstable = created(json!([{"name": "a", "image": "x",
            "resources": {"requests": {"cpu": "100m"}}}]));
        assert_eq!(burstable["status"]["qosClass"], "Burstable");
        let unequal = created(json!([{"name": "a", "image": "x",
            "resources": {"requests": {"cpu": "100m", "memory": "1Gi"}, "limits": {"cpu": "200m", "memory": "1Gi"}}}]));
        assert_eq!(unequal["status"]["qosClass"], "Burstable");
    }

    #[test]
    fn containers_are_required_and_names_must_be_unique_labels() {
        let s = strategy();
        let errs = s.validate_create(&created(json!([])));
        assert_eq!(
            errs[0].message_with_field(),
            "spec.containers: Required value"
        );
        let errs = s.validate_create(&created(json!([
            {"name": "a", "image": "x"}, {"name": "a", "image": "x"}, {"name": "B_", "image": ""}
        ])));
        let fields: Vec<&str> = errs.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "spec.containers[1].name",
                "spec.containers[2].name",
                "spec.containers[2].image"
            ]
        );
        assert_eq!(errs[0].message, "Duplicate value: \"a\"");
    }

    #[test]
    fn enum_fields_reject_unsupported_values() {
        let s = strategy();
        let mut p = created(json!([{"name": "a", "image": "x", "imagePullPolicy": "Sometimes"}]));
        p["spec"]["restartPolicy"] = json!("Maybe");
        let errs = s.validate_create(&p);
        let messages: Vec<String> = errs.iter().map(FieldError::message_with_field).collect();
        assert!(messages.contains(&"spec.containers[0].imagePullPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"IfNotPresent\", \"Never\"".to_string()));
        assert!(messages.contains(&"spec.restartPolicy: Unsupported value: \"Maybe\": supported values: \"Always\", \"OnFailure\", \"Never\"".to_string()));
    }

    #[test]
    fn env_names_and_volume_mounts_are_checked() {
        let mut p = created(json!([{"name": "a", "image": "x",
            "env": [{"name": "GOOD_1", "value": "v"}, {"name": "BAD=NAME"}, {"name": "X", "value": "v", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
            "volumeMounts": [{"name": "data", "mountPath": "/data"}, {"name": "missing", "mountPath": "/data"}]}]));
        p["spec"]["volumes"] = json!([{"name": "data", "emptyDir": {}}]);
        let m: Vec<String> = strategy()
            .validate_create(&p)
            .iter()
            .map(FieldError::message_with_field)
            .collect();
        assert_eq!(
            m,
            [
                "spec.containers[0].env[1].name: Invalid value: \"BAD=NAME\": a valid environment variable name must consist only of printable ASCII characters other than '='",
                "spec.containers[0].env[2].valueFrom: Invalid value: \"\": may not be specified when `value` is not empty",
                "spec.containers[0].volumeMounts[1].name: Not found: \"missing\"",
                "spec.containers[0].volumeMounts[1].mountPath: Invalid value: \"/data\": must be unique",
            ]
        );
    }

    #[test]
    fn requests_above_limits_are_invalid() {
        let p = created(json!([{"name": "a", "image": "x",
            "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}}]));
        let errs = strategy().validate_create(&p);
        assert_eq!(
            errs[0].message_with_field(),
            "spec.containers[0].resources.requests[cpu]: Invalid value: \"2\": must be less than or equal to cpu limit of 1"
        );
        // The limit is written as kube writes quantities, whatever notation it came in.
        let p = created(json!([{"name": "a", "image": "x",
            "resources": {"requests": {"memory": "2Gi"}, "limits": {"memory": "1024Mi"}}}]));
        assert_eq!(
            strategy().validate_create(&p)[0].message_with_field(),
            "spec.containers[0].resources.requests[memory]: Invalid value: \"2Gi\": must be less than or equal to memory limit of 1Gi"
        );
    }

    #[test]
    fn updates_may_change_images_but_not_other_spec_fields() {
        let s = strategy();
        let mut old = created(json!([{"name": "a", "image": "nginx:1"}]));
        old["metadata"]["uid"] = json!("u1");
        let mut new = old.clone();
        new["spec"]["containers"][0]["image"] = json!("nginx:2");
        s.prepare_for_update(&mut new, &old);
        assert!(s.validate_update(&new, &old).is_empty());
        assert_eq!(new["metadata"]["generation"], 2);

        let mut new = old.clone();
        new["spec"]["restartPolicy"] = json!("Never");
        s.prepare_for_update(&mut new, &old);
        let errs = s.validate_update(&new, &old);
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].field, "spec");
        assert!(errs[0].message.starts_with(
            "Forbidden: pod updates may not change fields other than `spec.containers[*].image`"
        ));
        assert!(errs[0].message.contains("spec.restartPolicy"));
    }

    #[test]
    fn tolerations_may_only_be_added_and_deadlines_only_shortened() {
        let s = strategy();
        let mut old = created(json!([{"name": "a", "image": "x"}]));
        old["spec"]["tolerations"] = json!([{"key": "a", "operator": "Exists"}]);
        old["spec"]["activeDeadlineSeconds"] = json!(100);
        let mut added = old.clone();
        added["spec"]["tolerations"] =
            json!([{"key": "a", "operator": "Exists"}, {"key": "b", "operator": "Exists"}]);
        added["spec"]["activeDeadlineSeconds"] = json!(50);
        assert!(s.validate_update(&added, &old).is_empty());
        let mut removed = old.clone();
        removed["spec"]["tolerations"] = json!([]);
        assert_eq!(s.validate_update(&removed, &old)[0].field, "spec");
        let mut longer = old.clone();
        longer["spec"]["activeDeadlineSeconds"] = json!(200);
        assert_eq!(
            s.validate_update(&longer, &old)[0].message,
            "Invalid value: 200: must be less than or equal to previous value"
        );
    }

    #[test]
    fn status_updates_keep_the_spec_and_owner_references() {
        let s = strategy();
        let mut old = created(json!([{"name": "a", "image": "x"}]));
        old["metadata"]["ownerReferences"] =
            json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "1"}]);
        let mut new = old.clone();
        new["spec"]["nodeName"] = json!("node-1");
        new["metadata"]["ownerReferences"] = json!([]);
        new["status"] = json!({"phase": "Running"});
        s.prepare_for_status_update(&mut new, &old);
        assert_eq!(new["spec"], old["spec"]);
        assert_eq!(
            new["metadata"]["ownerReferences"],
            old["metadata"]["ownerReferences"]
        );
        assert_eq!(
            new["status"],
            json!({"phase": "Running", "qosClass": "BestEffort"})
        );
        assert_eq!(new["metadata"]["generation"], 1);
        assert!(s.validate_update(&new, &old).is_empty());
        new["status"]["qosClass"] = json!("Guaranteed");
        new["status"]["podIPs"] = json!([{"ip": "10.0.0.300"}]);
        let fields: Vec<String> = s
            .validate_update(&new, &old)
            .iter()
            .map(|e| e.field.clone())
            .collect();
        assert_eq!(fields, ["status.qosClass", "status.podIPs[0].ip"]);
    }

    #[test]
    fn volumes_get_a_source_and_file_modes() {
        let s = strategy();
        let mut p = pod(json!([{"name": "a", "image": "x"}]));
        p["spec"]["volumes"] = json!([
            {"name": "scratch"},
            {"name": "cfg", "configMap": {"name": "c"}},
            {"name": "tok", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}}
        ]);
        s.default(&mut p);
        let v = &p["spec"]["volumes"];
        assert_eq!(v[0], json!({"name": "scratch", "emptyDir": {}}));
        assert_eq!(v[1]["configMap"]["defaultMode"], 420);
        assert_eq!(v[2]["projected"]["defaultMode"], 420);
        assert_eq!(
            v[2]["projected"]["sources"][0]["serviceAccountToken"]["expirationSeconds"],
            3600
        );
    }

    #[test]
    fn numeric_quantities_are_stored_as_strings_and_decode() {
        let info = catalog::by_kind("v1", "Pod").expect("served");
        let s = crate::by_kind::strategy(info);
        let mut p = pod(
            json!([{"name": "a", "image": "x", "resources": {"limits": {"cpu": 1, "memory": "64Mi"}}}]),
        );
        s.default(&mut p);
        s.prepare_for_create(&mut p);
        assert_eq!(
            p["spec"]["containers"][0]["resources"]["requests"]["cpu"],
            "1"
        );
        assert!(
            s.validate_create(&p).is_empty(),
            "{:?}",
            s.validate_create(&p)
        );
        p["spec"]["containers"][0]["ports"] = json!([{"containerPort": "http"}]);
        let errs = s.validate_create(&p);
        assert_eq!(errs[0].field, "spec.containers[0].ports[0].containerPort");
    }

    #[test]
    fn terminated_containers_of_pods_that_never_restart_stay_terminated() {
        let s = strategy();
        let mut old = created(json!([{"name": "a", "image": "x"}]));
        old["spec"]["restartPolicy"] = json!("Never");
        old["status"]["containerStatuses"] =
            json!([{"name": "a", "state": {"terminated": {"exitCode": 0}}}]);
        let mut new = old.clone();
        new["status"]["containerStatuses"] = json!([{"name": "a", "state": {"running": {}}}]);
        s.prepare_for_status_update(&mut new, &old);
        assert_eq!(
            s.validate_update(&new, &old)[0].message_with_field(),
            "status.containerStatuses[0].state: Forbidden: may not be transitioned to non-terminated state"
        );
        old["spec"]["restartPolicy"] = json!("Always");
        let mut new = old.clone();
        new["status"]["containerStatuses"] = json!([{"name": "a", "state": {"running": {}}}]);
        assert!(s.validate_update(&new, &old).is_empty());
    }

    #[test]
    fn host_network_pods_get_host_ports() {
        let s = strategy();
        let mut p = pod(json!([{"name": "a", "image": "x", "ports": [{"containerPort": 8080}]}]));
        p["spec"]["hostNetwork"] = json!(true);
        s.default(&mut p);
        assert_eq!(p["spec"]["containers"][0]["ports"][0]["hostPort"], 8080);
    }

    #[test]
    fn grace_periods_follow_check_graceful_delete() {
        let s = strategy();
        let mut p = created(json!([{"name": "a", "image": "x"}]));
        assert_eq!(
            s.graceful_delete(&p, None),
            GracefulDelete::Immediate,
            "unscheduled"
        );
        p["spec"]["nodeName"] = json!("node-1");
        assert_eq!(
            s.graceful_delete(&p, None),
            GracefulDelete::Graceful {
                grace_period_seconds: 30
            }
        );
        assert_eq!(
            s.graceful_delete(&p, Some(5)),
            GracefulDelete::Graceful {
                grace_period_seconds: 5
            }
        );
        assert_eq!(s.graceful_delete(&p, Some(0)), GracefulDelete::Immediate);
        assert_eq!(
            s.graceful_delete(&p, Some(-3)),
            GracefulDelete::Graceful {
                grace_period_seconds: 1
            }
        );
        p["status"]["phase"] = json!("Succeeded");
        assert_eq!(
            s.graceful_delete(&p, None),
            GracefulDelete::Immediate,
            "terminated"
        );
    }

    #[test]
    fn field_selectors_cover_the_pod_fields() {
        let s = strategy();
        let mut p = created(json!([{"name": "a", "image": "x"}]));
        p["spec"]["nodeName"] = json!("node-1");
        p["status"]["podIPs"] = json!([{"ip": "10.0.0.1"}]);
        assert_eq!(
            s.field_value(&p, "spec.nodeName").as_deref(),
            Some("node-1")
        );
        assert_eq!(
            s.field_value(&p, "status.phase").as_deref(),
            Some("Pending")
        );
        assert_eq!(
            s.field_value(&p, "status.podIP").as_deref(),
            Some("10.0.0.1")
        );
        assert_eq!(
            s.field_value(&p, "status.nominatedNodeName").as_deref(),
            Some("")
        );
        assert_eq!(
            s.field_value(&p, "spec.hostNetwork").as_deref(),
            Some("false")
        );
        assert_eq!(s.field_value(&p, "metadata.name").as_deref(), Some("web"));
        assert_eq!(s.field_value(&p, "spec.containers"), None);
    }

    #[test]
    fn deletion_costs_must_be_32bit_integers_without_sign_or_leading_zeros() {
        // TestGetDeletionCostFromPodAnnotations (pkg/apis/core/helper/helpers_test.go).
        let with_cost = |v: &str| json!({"metadata": {"annotations": {POD_DELETION_COST: v}}});
        assert_eq!(deletion_cost(&json!({"metadata": {}})), Ok(0));
        for (value, cost) in [
            ("10", 10),
            ("-10", -10),
            ("0", 0),
            ("2147483647", i32::MAX),
            ("-2147483648", i32::MIN),
        ] {
            assert_eq!(deletion_cost(&with_cost(value)), Ok(cost), "{value}");
        }
        for value in [
            "+100",
            "007",
            "00",
            "",
            "-",
            "10a",
            " 1",
            "1.5",
            "2147483648",
            "-2147483649",
            "1_000",
        ] {
            assert!(
                deletion_cost(&with_cost(value)).is_err(),
                "{value:?} accepted"
            );
        }
    }

    #[test]
    fn pods_with_a_bad_deletion_cost_are_refused_unless_it_was_already_there() {
        let s = strategy();
        let mut p = pod(json!([{"name": "c", "image": "nginx"}]));
        s.default(&mut p);
        s.prepare_for_create(&mut p);
        p["metadata"]["annotations"] = json!({POD_DELETION_COST: "+100"});
        let errs = s.validate_create(&p);
        assert_eq!(
            errs.iter().map(FieldError::message_with_field).collect::<Vec<_>>(),
            ["metadata.annotations[controller.kubernetes.io/pod-deletion-cost]: Invalid value: \"+100\": must be a 32bit integer"]
        );
        let mut valid = p.clone();
        valid["metadata"]["annotations"][POD_DELETION_COST] = json!("-5");
        assert!(s.validate_create(&valid).is_empty());
        let mut bad = valid.clone();
        bad["metadata"]["annotations"][POD_DELETION_COST] = json!("007");
        assert_eq!(
            s.validate_update(&bad, &valid).len(),
            1,
            "a valid cost may not become invalid"
        );
        let mut labelled = p.clone();
        labelled["metadata"]["labels"] = json!({"x": "y"});
        assert!(
            s.validate_update(&labelled, &p).is_empty(),
            "an old invalid cost is tolerated"
        );
    }
}
