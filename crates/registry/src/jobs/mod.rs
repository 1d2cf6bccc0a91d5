//! Jobs: defaults (`SetDefaults_Job`), the generated selector and pod labels, validation, the
//! spec fields an update may change, and status validation.
//!
//! Mirrors `pkg/registry/batch/job/strategy.go`, `pkg/apis/batch/v1/defaults.go` and
//! `pkg/apis/batch/validation/validation.go` of kube 1.33 with its default feature gates
//! (`JobManagedBy`, `JobSuccessPolicy`, `JobBackoffLimitPerIndex`, `JobPodReplacementPolicy`,
//! `ElasticIndexedJob` on). batch/v1 Jobs orphan their pods when a DELETE names no
//! propagation policy, for compatibility.

mod status;
mod validation;

pub(crate) use validation::validate_job_template_spec;

use rkcm_apimachinery::catalog::ResourceInfo;
use serde_json::{json, Map, Value};

use super::generic::GenericStrategy;
use super::meta::{self, validate_immutable};
use super::object::{default_field, get, object_mut, semantically_equal};
use super::podspec::default_pod_spec;
use super::{FieldError, GracefulDelete, Strategy};
use validation::{
    validate_generated_selector, validate_job_spec, CONTROLLER_UID_LABEL, JOB_NAME_LABEL,
    LEGACY_CONTROLLER_UID_LABEL, LEGACY_JOB_NAME_LABEL,
};

/// The pod template defaults of a job spec (`SetDefaults_PodSpec` on `template.spec`); a
/// CronJob's job template gets these and nothing of `SetDefaults_Job`.
pub(crate) fn default_job_template(spec: &mut Value) {
    if get(spec, &["template"]).is_some_and(Value::is_object) {
        if let Some(pod) = object_mut(spec, &["template", "spec"]) {
            default_pod_spec(pod);
        }
    }
}

/// Sets `map[key]` when it is absent or `null` (a Go pointer that is nil).
fn default_pointer(map: &mut Map<String, Value>, key: &str, value: Value) {
    if map.get(key).is_none_or(Value::is_null) {
        map.insert(key.to_string(), value);
    }
}

/// `SetDefaults_Job`.
fn default_job(obj: &mut Value) {
    // An empty template label map copied over would be omitted again, so only non-empty ones.
    let template_labels = get(obj, &["spec", "template", "metadata", "labels"])
        .filter(|l| l.as_object().is_some_and(|m| !m.is_empty()))
        .cloned();
    let Some(spec) = object_mut(obj, &["spec"]) else {
        return;
    };
    let unset = |spec: &Map<String, Value>, k: &str| spec.get(k).is_none_or(Value::is_null);
    if unset(spec, "completions") && unset(spec, "parallelism") {
        spec.insert("completions".to_string(), json!(1));
        spec.insert("parallelism".to_string(), json!(1));
    }
    default_field(spec, "parallelism", json!(1));
    let backoff = if unset(spec, "backoffLimitPerIndex") {
        6
    } else {
        i64::from(i32::MAX)
    };
    default_field(spec, "backoffLimit", json!(backoff));
    // Pointers in Go: only nil is defaulted, an empty string is left for validation.
    default_pointer(spec, "completionMode", json!("NonIndexed"));
    default_field(spec, "suspend", json!(false));
    default_field(spec, "manualSelector", json!(false));
    let has_failure_policy = !unset(spec, "podFailurePolicy");
    if let Some(rules) = spec
        .get_mut("podFailurePolicy")
        .and_then(|p| p.get_mut("rules"))
        .and_then(Value::as_array_mut)
    {
        for pattern in rules
            .iter_mut()
            .filter_map(|r| r.get_mut("onPodConditions").and_then(Value::as_array_mut))
            .flatten()
            .filter_map(Value::as_object_mut)
        {
            default_field(pattern, "status", json!("True"));
        }
    }
    let replacement = if has_failure_policy {
        "Failed"
    } else {
        "TerminatingOrFailed"
    };
    default_pointer(spec, "podReplacementPolicy", json!(replacement));
    if let Some(spec) = obj.get_mut("spec") {
        default_job_template(spec);
    }
    // A job without labels takes its template's.
    let has_labels = get(obj, &["metadata", "labels"])
        .and_then(Value::as_object)
        .is_some_and(|l| !l.is_empty());
    if let Some(labels) = template_labels.filter(|_| !has_labels) {
        if let Some(m) = object_mut(obj, &["metadata"]) {
            m.insert("labels".to_string(), labels);
        }
    }
}

/// `generateSelector`: the template gets the job-name and controller-uid labels (prefixed and
/// legacy) unless it already has them, and the selector selects the prefixed uid label. A
/// conflicting label or selector the user set is left for validation to refuse.
fn generate_selector(obj: &mut Value) {
    let name = get(obj, &["metadata", "name"])
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let uid = get(obj, &["metadata", "uid"])
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if let Some(labels) = object_mut(obj, &["spec", "template", "metadata", "labels"]) {
        for key in [LEGACY_JOB_NAME_LABEL, JOB_NAME_LABEL] {
            labels.entry(key).or_insert_with(|| json!(name));
        }
        for key in [LEGACY_CONTROLLER_UID_LABEL, CONTROLLER_UID_LABEL] {
            labels.entry(key).or_insert_with(|| json!(uid));
        }
    }
    if let Some(match_labels) = object_mut(obj, &["spec", "selector", "matchLabels"]) {
        match_labels
            .entry(CONTROLLER_UID_LABEL)
            .or_insert_with(|| json!(uid));
    }
}

/// `ValidateJob`: metadata (named as replication controllers are), the generated selector,
/// the spec, and, for Indexed jobs, a name that leaves room for the last pod's hostname.
fn validate_job(base: &GenericStrategy, job: &Value, prefixed_labels: bool) -> Vec<FieldError> {
    let mut errs = base.validate_create(job);
    errs.extend(job_checks(job, prefixed_labels));
    errs
}

/// [`validate_job`] without the metadata.
fn job_checks(job: &Value, prefixed_labels: bool) -> Vec<FieldError> {
    let mut errs = validate_generated_selector(job, prefixed_labels);
    let spec = get(job, &["spec"]).unwrap_or(&Value::Null);
    errs.extend(validate_job_spec(spec, "spec"));
    let completions = spec.get("completions").and_then(Value::as_i64);
    if let Some(c) = completions.filter(|c| *c > 0 && validation::is_indexed(spec)) {
        let name = get(job, &["metadata", "name"])
            .and_then(Value::as_str)
            .unwrap_or("");
        let hostname = format!("{name}-{}", c - 1);
        if !meta::is_dns1123_label(&hostname).is_empty() {
            errs.push(FieldError::invalid(
                "metadata.name",
                &json!(name),
                &format!("will not able to create pod with invalid DNS label: {hostname}"),
            ));
        }
    }
    errs
}

/// The template an update is compared against: while a job is suspended and has never
/// started, its scheduling directives (node affinity, node selector, tolerations, scheduling
/// gates, template labels and annotations) may change (`validatePodTemplateUpdate`).
fn comparable_old_template(new: &Value, old: &Value) -> Option<Value> {
    let mut template = get(old, &["spec", "template"]).cloned();
    let suspended = get(old, &["spec", "suspend"]).and_then(Value::as_bool) == Some(true);
    let started = get(old, &["status", "startTime"]).is_some_and(|v| !v.is_null());
    if !suspended || started {
        return template;
    }
    let new_template = get(new, &["spec", "template"])
        .cloned()
        .unwrap_or(json!({}));
    let t = template.get_or_insert_with(|| json!({}));
    let new_affinity = get(&new_template, &["spec", "affinity"]).filter(|v| !v.is_null());
    if let Some(pod) = object_mut(t, &["spec"]) {
        let old_affinity = pod.get("affinity").filter(|v| !v.is_null()).cloned();
        match (new_affinity, old_affinity) {
            (None, Some(mut a)) => {
                if let Some(m) = a.as_object_mut() {
                    m.remove("nodeAffinity");
                }
                if semantically_equal(Some(&a), None) {
                    pod.remove("affinity");
                } else {
                    pod.insert("affinity".to_string(), a);
                }
            }
            (Some(n), None) => {
                let mut a = Map::new();
                if let Some(node) = n.get("nodeAffinity") {
                    a.insert("nodeAffinity".to_string(), node.clone());
                }
                pod.insert("affinity".to_string(), Value::Object(a));
            }
            (Some(n), Some(mut a)) => {
                if let Some(m) = a.as_object_mut() {
                    match n.get("nodeAffinity") {
                        Some(node) => m.insert("nodeAffinity".to_string(), node.clone()),
                        None => m.remove("nodeAffinity"),
                    };
                }
                pod.insert("affinity".to_string(), a);
            }
            (None, None) => {}
        }
        for field in ["nodeSelector", "tolerations", "schedulingGates"] {
            match get(&new_template, &["spec", field]) {
                Some(v) => pod.insert(field.to_string(), v.clone()),
                None => pod.remove(field),
            };
        }
    }
    if let Some(m) = object_mut(t, &["metadata"]) {
        for field in ["labels", "annotations"] {
            match get(&new_template, &["metadata", field]) {
                Some(v) => m.insert(field.to_string(), v.clone()),
                None => m.remove(field),
            };
        }
    }
    template
}

/// `ValidateJobSpecUpdate` beyond the spec itself: what may not change.
fn validate_spec_update(new: &Value, old: &Value) -> Vec<FieldError> {
    fn spec<'a>(obj: &'a Value, f: &str) -> Option<&'a Value> {
        get(obj, &["spec", f]).filter(|v| !v.is_null())
    }
    let mut errs = Vec::new();
    // validateCompletions: only Indexed jobs scale completions, together with parallelism.
    let completions_changed =
        !semantically_equal(spec(new, "completions"), spec(old, "completions"));
    let indexed = get(new, &["spec"]).is_some_and(validation::is_indexed);
    if !indexed {
        errs.extend(validate_immutable(
            spec(new, "completions"),
            spec(old, "completions"),
            "spec.completions",
        ));
    } else if completions_changed {
        if let Some(c) = spec(new, "completions") {
            if Some(c) != spec(new, "parallelism") {
                errs.push(FieldError::invalid(
                    "spec.completions",
                    c,
                    "can only be modified in tandem with spec.parallelism",
                ));
            }
        }
    }
    errs.extend(validate_immutable(
        spec(new, "selector"),
        spec(old, "selector"),
        "spec.selector",
    ));
    let old_template = comparable_old_template(new, old);
    errs.extend(validate_immutable(
        spec(new, "template"),
        old_template.as_ref(),
        "spec.template",
    ));
    for field in [
        "completionMode",
        "podFailurePolicy",
        "backoffLimitPerIndex",
        "managedBy",
        "successPolicy",
    ] {
        errs.extend(validate_immutable(
            spec(new, field),
            spec(old, field),
            &format!("spec.{field}"),
        ));
    }
    errs
}

/// The job strategy: generic bookkeeping (generation, status split, orphaning deletes) plus
/// the generated selector and kube's validation.
pub(crate) struct JobStrategy {
    base: GenericStrategy,
}

impl JobStrategy {
    /// The strategy of `info` (batch/v1 jobs).
    pub(crate) fn new(info: &'static ResourceInfo) -> Self {
        JobStrategy {
            base: GenericStrategy::new(info)
                .tracking_generation()
                .orphaning_dependents(),
        }
    }
}

impl Strategy for JobStrategy {
    fn resource(&self) -> &'static ResourceInfo {
        self.base.resource()
    }

    fn default(&self, obj: &mut Value) {
        default_job(obj);
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        self.base.prepare_for_create(obj);
    }

    fn complete_create(&self, obj: &mut Value) {
        // generateSelectorIfNeeded: it needs the uid and the final name.
        if get(obj, &["spec", "manualSelector"]).and_then(Value::as_bool) != Some(true) {
            generate_selector(obj);
        }
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        self.base.prepare_for_update(new, old);
    }

    fn prepare_for_status_update(&self, new: &mut Value, old: &Value) {
        // kube defaults every decoded body, status updates included.
        self.default(new);
        self.base.prepare_for_status_update(new, old);
    }

    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        validate_job(&self.base, obj, true)
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        // Jobs created before kube added the prefixed labels keep validating without them.
        let old_labels = get(old, &["spec", "template", "metadata", "labels"]);
        let prefixed = [CONTROLLER_UID_LABEL, JOB_NAME_LABEL]
            .iter()
            .all(|k| old_labels.and_then(|l| l.get(*k)).is_some());
        let mut errs = self.base.validate_update(new, old);
        errs.extend(job_checks(new, prefixed));
        errs.extend(validate_spec_update(new, old));
        errs.extend(status::validate_status_update(new, old));
        errs
    }

    fn field_value(&self, obj: &Value, field: &str) -> Option<String> {
        match field {
            // JobToSelectableFields.
            "status.successful" => Some(
                get(obj, &["status", "succeeded"])
                    .and_then(Value::as_i64)
                    .unwrap_or(0)
                    .to_string(),
            ),
            _ => self.base.field_value(obj, field),
        }
    }

    fn graceful_delete(&self, obj: &Value, requested_grace: Option<i64>) -> GracefulDelete {
        self.base.graceful_delete(obj, requested_grace)
    }

    fn default_propagation_orphans(&self) -> bool {
        self.base.default_propagation_orphans()
    }

    fn scale_replicas(&self, obj: &Value) -> Option<(i32, i32, String)> {
        self.base.scale_replicas(obj)
    }

    fn set_scale_replicas(&self, obj: &mut Value, replicas: i32) -> Result<(), FieldError> {
        self.base.set_scale_replicas(obj, replicas)
    }
}

#[cfg(test)]
mod tests;
