//! StatefulSets: defaults (`SetDefaults_StatefulSet`, claim templates defaulted as claims),
//! validation (`ValidateStatefulSetSpec`), the spec fields an update may change, and the
//! [`Workload`] entry that makes them a workload with `/scale`.
//!
//! Mirrors `pkg/registry/apps/statefulset/strategy.go`, `pkg/apis/apps/v1/defaults.go` and
//! `pkg/apis/apps/validation/validation.go`, with 1.33's default feature gates:
//! `MaxUnavailableStatefulSet` is alpha and off, so `spec.updateStrategy.rollingUpdate.maxUnavailable`
//! is neither defaulted nor kept on create (an update keeps it only when the old object had it,
//! as `dropStatefulSetDisabledFields`).

use rkcm_apimachinery::catalog::ResourceInfo;
use serde_json::{json, Value};

use super::meta::{self, validate_nonnegative};
use super::object::{default_field, get, object_mut, semantically_equal, set, string_map};
use super::selector::{validate_label_selector, LabelSelector};
use super::workload::{self, Workload, WorkloadStrategy};
use super::FieldError;

const STATUS_COUNTERS: &[&str] = &[
    "replicas",
    "readyReplicas",
    "currentReplicas",
    "updatedReplicas",
    "availableReplicas",
    "observedGeneration",
    "collisionCount",
];
const STATUS_BOUNDED: &[&str] = &[
    "readyReplicas",
    "currentReplicas",
    "updatedReplicas",
    "availableReplicas",
];

/// The spec fields `ValidateStatefulSetUpdate` lets an update change.
const MUTABLE_SPEC_FIELDS: &[&str] = &[
    "replicas",
    "template",
    "updateStrategy",
    "minReadySeconds",
    "ordinals",
    "persistentVolumeClaimRetentionPolicy",
];

/// `SetDefaults_StatefulSet`, the pod template's defaults and, for each claim template,
/// `SetDefaults_PersistentVolumeClaim` (phase `Pending`) and `…ClaimSpec` (`Filesystem`).
fn default_stateful_set(obj: &mut Value) {
    let Some(spec) = object_mut(obj, &["spec"]) else {
        return;
    };
    default_field(spec, "podManagementPolicy", json!("OrderedReady"));
    if let Some(strategy) = spec
        .entry("updateStrategy")
        .or_insert_with(|| json!({}))
        .as_object_mut()
    {
        if strategy
            .get("type")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            strategy.insert("type".to_string(), json!("RollingUpdate"));
            default_field(strategy, "rollingUpdate", json!({}));
        }
        let rolling = strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate");
        if let Some(ru) = strategy
            .get_mut("rollingUpdate")
            .and_then(Value::as_object_mut)
            .filter(|_| rolling)
        {
            default_field(ru, "partition", json!(0));
        }
    }
    let policy = spec
        .entry("persistentVolumeClaimRetentionPolicy")
        .or_insert_with(|| json!({}));
    if policy.is_null() {
        *policy = json!({});
    }
    if let Some(policy) = policy.as_object_mut() {
        default_field(policy, "whenDeleted", json!("Retain"));
        default_field(policy, "whenScaled", json!("Retain"));
    }
    default_field(spec, "replicas", json!(1));
    default_field(spec, "revisionHistoryLimit", json!(10));
    if let Some(claims) = spec
        .get_mut("volumeClaimTemplates")
        .and_then(Value::as_array_mut)
    {
        for claim in claims.iter_mut().filter(|c| c.is_object()) {
            if let Some(claim_spec) = object_mut(claim, &["spec"]) {
                default_field(claim_spec, "volumeMode", json!("Filesystem"));
            }
            if let Some(status) = object_mut(claim, &["status"]) {
                default_field(status, "phase", json!("Pending"));
            }
        }
    }
    workload::default_template(obj);
}

/// `dropStatefulSetDisabledFields`: `maxUnavailable` needs `MaxUnavailableStatefulSet`.
fn drop_disabled_fields(new: &mut Value, old: Option<&Value>) {
    let path = ["spec", "updateStrategy", "rollingUpdate", "maxUnavailable"];
    let in_use = old.is_some_and(|o| get(o, &path).is_some_and(|v| !v.is_null()));
    if !in_use {
        set(new, &path, None);
    }
}

/// `validateRollingUpdateStatefulSet`.
fn validate_rolling_update(ru: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = validate_nonnegative(ru.get("partition"), &format!("{path}.partition"));
    let max_path = format!("{path}.maxUnavailable");
    if let Some(max) = ru.get("maxUnavailable").filter(|v| !v.is_null()) {
        errs.extend(workload::validate_int_or_percent(Some(max), &max_path));
        if workload::int_or_percent_value(Some(max)) == 0 {
            errs.push(FieldError::invalid(&max_path, max, "cannot be 0"));
        }
        errs.extend(workload::validate_not_over_100_percent(
            Some(max),
            &max_path,
        ));
    }
    errs
}

/// `ValidatePersistentVolumeClaimRetentionPolicyType`.
fn validate_retention(policy: &Value, field: &str) -> Vec<FieldError> {
    let value = policy.get(field).unwrap_or(&Value::Null);
    match value.as_str() {
        Some("Retain" | "Delete") => Vec::new(),
        _ => vec![FieldError::not_supported(
            format!("spec.persistentVolumeClaimRetentionPolicy.{field}"),
            &if value.is_null() {
                json!("")
            } else {
                value.clone()
            },
            &["Retain", "Delete"],
        )],
    }
}

/// `ValidateStatefulSetSpec`.
fn validate_spec(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = get(obj, &["spec"]).unwrap_or(&Value::Null);
    let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("").to_string();

    let policy = text(spec.get("podManagementPolicy"));
    match policy.as_str() {
        "" => errs.push(FieldError::required("spec.podManagementPolicy", "")),
        "OrderedReady" | "Parallel" => {}
        _ => errs.push(FieldError::invalid(
            "spec.podManagementPolicy",
            &json!(policy),
            "must be 'OrderedReady' or 'Parallel'",
        )),
    }

    let strategy = spec.get("updateStrategy").unwrap_or(&Value::Null);
    let rolling = strategy.get("rollingUpdate").filter(|v| !v.is_null());
    match text(strategy.get("type")).as_str() {
        "" => errs.push(FieldError::required("spec.updateStrategy", "")),
        "OnDelete" => {
            if let Some(ru) = rolling {
                errs.push(FieldError::invalid(
                    "spec.updateStrategy.rollingUpdate",
                    ru,
                    "only allowed for updateStrategy 'RollingUpdate'",
                ));
            }
        }
        "RollingUpdate" => {
            if let Some(ru) = rolling {
                errs.extend(validate_rolling_update(
                    ru,
                    "spec.updateStrategy.rollingUpdate",
                ));
            }
        }
        _ => errs.push(FieldError::invalid(
            "spec.updateStrategy",
            strategy,
            "must be 'RollingUpdate' or 'OnDelete'",
        )),
    }

    if let Some(policy) = spec
        .get("persistentVolumeClaimRetentionPolicy")
        .filter(|v| !v.is_null())
    {
        errs.extend(validate_retention(policy, "whenDeleted"));
        errs.extend(validate_retention(policy, "whenScaled"));
    }

    errs.extend(workload::validate_counts(obj));
    if let Some(ordinals) = spec.get("ordinals").filter(|v| !v.is_null()) {
        errs.extend(validate_nonnegative(
            ordinals.get("start"),
            "spec.ordinals.start",
        ));
    }

    let selector = spec.get("selector").filter(|v| !v.is_null());
    match selector {
        None => errs.push(FieldError::required("spec.selector", "")),
        Some(sel) => {
            errs.extend(validate_label_selector(Some(sel), "spec.selector"));
            if selector_terms(sel) == 0 {
                errs.push(FieldError::invalid(
                    "spec.selector",
                    sel,
                    "empty selector is invalid for statefulset",
                ));
            }
        }
    }
    let template = spec.get("template").filter(|v| !v.is_null());
    match LabelSelector::from_json(selector) {
        Err(_) => errs.push(FieldError::invalid(
            "spec.selector",
            selector.unwrap_or(&Value::Null),
            "",
        )),
        Ok(sel) => errs.extend(validate_template(template, &sel)),
    }

    let restart = get(spec, &["template", "spec", "restartPolicy"]);
    if restart.and_then(Value::as_str) != Some("Always") {
        errs.push(FieldError::not_supported(
            "spec.template.spec.restartPolicy",
            restart.unwrap_or(&json!("")),
            &["Always"],
        ));
    }
    if get(spec, &["template", "spec", "activeDeadlineSeconds"]).is_some_and(|v| !v.is_null()) {
        errs.push(FieldError::forbidden(
            "spec.template.spec.activeDeadlineSeconds",
            "activeDeadlineSeconds in StatefulSet is not Supported",
        ));
    }
    errs
}

/// `len(matchLabels) + len(matchExpressions)`.
fn selector_terms(sel: &Value) -> usize {
    ["matchLabels", "matchExpressions"]
        .iter()
        .map(|k| match sel.get(*k) {
            Some(Value::Object(m)) => m.len(),
            Some(Value::Array(a)) => a.len(),
            _ => 0,
        })
        .sum()
}

/// `ValidatePodTemplateSpecForStatefulSet`: the selector matches the template's labels, whose
/// labels and annotations are valid. kube does not validate the pod spec of a StatefulSet's
/// template (its volume mounts may name claim templates), so neither does this.
fn validate_template(template: Option<&Value>, selector: &LabelSelector) -> Vec<FieldError> {
    let Some(template) = template else {
        // The Go template is a value, never nil: an absent one is an empty template.
        return validate_template(Some(&json!({})), selector);
    };
    let mut errs = Vec::new();
    let labels = get(template, &["metadata", "labels"]);
    if !selector.is_empty() && !selector.matches(&string_map(labels)) {
        errs.push(FieldError::invalid(
            "spec.template.metadata.labels",
            labels.unwrap_or(&Value::Null),
            "`selector` does not match template `labels`",
        ));
    }
    errs.extend(meta::validate_labels(labels, "spec.template.labels"));
    errs.extend(meta::validate_annotations(
        get(template, &["metadata", "annotations"]),
        "spec.template.annotations",
    ));
    errs
}

/// `ValidateStatefulSetUpdate` beyond the spec itself, and the collision count of
/// `ValidateStatefulSetStatusUpdate`.
fn validate_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let without_mutable = |obj: &Value| {
        let mut spec = get(obj, &["spec"]).cloned().unwrap_or(json!({}));
        if let Some(m) = spec.as_object_mut() {
            for f in MUTABLE_SPEC_FIELDS {
                m.remove(*f);
            }
        }
        spec
    };
    if !semantically_equal(Some(&without_mutable(new)), Some(&without_mutable(old))) {
        errs.push(FieldError::forbidden(
            "spec",
            "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
        ));
    }
    errs.extend(workload::validate_collision_count(new, old));
    errs
}

/// How stateful sets differ from other workloads (`pkg/registry/apps/statefulset/strategy.go`).
pub(crate) const STATEFUL_SET: Workload = Workload {
    default: default_stateful_set,
    validate_spec,
    validate_update,
    drop_disabled: drop_disabled_fields,
    // kube names stateful sets as DNS labels: each pod's hostname is `<name>-<ordinal>`.
    name: meta::name_is_dns_label,
    immutable_selector: false,
    status_counters: STATUS_COUNTERS,
    status_bounded: STATUS_BOUNDED,
    initial_status: &["replicas", "availableReplicas"],
    available_over_ready: "cannot be greater than status.readyReplicas",
    ..Workload::BASE
};

/// The strategy of `info` (apps/v1 stateful sets).
pub(crate) fn strategy(info: &'static ResourceInfo) -> WorkloadStrategy {
    WorkloadStrategy::new(info, &STATEFUL_SET)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Strategy;
    use rkcm_apimachinery::catalog;

    fn strategy() -> WorkloadStrategy {
        super::strategy(catalog::by_kind("apps/v1", "StatefulSet").expect("served"))
    }

    fn stateful_set() -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "db", "namespace": "default", "uid": "u1"},
            "spec": {
                "serviceName": "db",
                "selector": {"matchLabels": {"app": "db"}},
                "template": {
                    "metadata": {"labels": {"app": "db"}},
                    "spec": {"containers": [{"name": "pg", "image": "postgres:16",
                        "volumeMounts": [{"name": "data", "mountPath": "/var/lib/pg"}]}]}
                },
                "volumeClaimTemplates": [{"metadata": {"name": "data"},
                    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]
            }
        })
    }

    fn created() -> Value {
        let mut s = stateful_set();
        strategy().default(&mut s);
        strategy().prepare_for_create(&mut s);
        s
    }

    /// A change to a valid object and the one error kube reports for it.
    type Case = (fn(&mut Value), &'static str);

    fn messages(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(FieldError::message_with_field).collect()
    }

    #[test]
    fn defaults_are_applied_as_apps_v1_does() {
        // TestSetDefaultStatefulSet.
        let s = created();
        assert_eq!(s["spec"]["replicas"], 1);
        assert_eq!(s["spec"]["podManagementPolicy"], "OrderedReady");
        assert_eq!(
            s["spec"]["updateStrategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}})
        );
        assert_eq!(s["spec"]["revisionHistoryLimit"], 10);
        assert_eq!(
            s["spec"]["persistentVolumeClaimRetentionPolicy"],
            json!({"whenDeleted": "Retain", "whenScaled": "Retain"})
        );
        let claim = &s["spec"]["volumeClaimTemplates"][0];
        assert_eq!(claim["spec"]["volumeMode"], "Filesystem");
        assert_eq!(claim["status"], json!({"phase": "Pending"}));
        assert_eq!(s["spec"]["template"]["spec"]["restartPolicy"], "Always");
        assert_eq!(s["status"], json!({"replicas": 0, "availableReplicas": 0}));
        assert_eq!(s["metadata"]["generation"], 1);
        assert!(
            strategy().validate_create(&s).is_empty(),
            "{:?}",
            strategy().validate_create(&s)
        );
    }

    #[test]
    fn explicit_values_are_kept_and_on_delete_gets_no_partition() {
        let mut s = stateful_set();
        s["spec"]["updateStrategy"] = json!({"type": "OnDelete"});
        s["spec"]["podManagementPolicy"] = json!("Parallel");
        s["spec"]["persistentVolumeClaimRetentionPolicy"] = json!({"whenDeleted": "Delete"});
        s["spec"]["replicas"] = json!(0);
        strategy().default(&mut s);
        assert_eq!(s["spec"]["updateStrategy"], json!({"type": "OnDelete"}));
        assert_eq!(s["spec"]["podManagementPolicy"], "Parallel");
        assert_eq!(
            s["spec"]["persistentVolumeClaimRetentionPolicy"],
            json!({"whenDeleted": "Delete", "whenScaled": "Retain"})
        );
        assert_eq!(s["spec"]["replicas"], 0);
        let mut partitioned = stateful_set();
        partitioned["spec"]["updateStrategy"] = json!({"type": "RollingUpdate"});
        strategy().default(&mut partitioned);
        assert_eq!(
            partitioned["spec"]["updateStrategy"],
            json!({"type": "RollingUpdate"}),
            "a given type with no rollingUpdate gets none"
        );
    }

    #[test]
    fn max_unavailable_is_dropped_while_its_gate_is_off() {
        let mut s = stateful_set();
        s["spec"]["updateStrategy"] =
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 2}});
        strategy().default(&mut s);
        strategy().prepare_for_create(&mut s);
        assert_eq!(
            s["spec"]["updateStrategy"]["rollingUpdate"],
            json!({"partition": 0})
        );
        let mut old = s.clone();
        old["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"] = json!(1);
        let mut new = old.clone();
        new["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"] = json!(3);
        strategy().prepare_for_update(&mut new, &old);
        assert_eq!(
            new["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"], 3,
            "kept once in use"
        );
    }

    #[test]
    fn spec_errors_carry_kube_messages() {
        // Cases of TestValidateStatefulSet.
        let cases: Vec<Case> = vec![
            (
                |s| s["spec"]["podManagementPolicy"] = json!("Foo"),
                "spec.podManagementPolicy: Invalid value: \"Foo\": must be 'OrderedReady' or 'Parallel'",
            ),
            (
                |s| s["spec"]["updateStrategy"] = json!({"type": "OnDelete", "rollingUpdate": {"partition": 1}}),
                "spec.updateStrategy.rollingUpdate: Invalid value: {\"partition\":1}: only allowed for updateStrategy 'RollingUpdate'",
            ),
            (
                |s| s["spec"]["updateStrategy"]["rollingUpdate"]["partition"] = json!(-1),
                "spec.updateStrategy.rollingUpdate.partition: Invalid value: -1: must be greater than or equal to 0",
            ),
            (
                |s| s["spec"]["updateStrategy"] = json!({"type": "Sideways"}),
                "spec.updateStrategy: Invalid value: {\"type\":\"Sideways\"}: must be 'RollingUpdate' or 'OnDelete'",
            ),
            (
                |s| s["spec"]["persistentVolumeClaimRetentionPolicy"]["whenScaled"] = json!("Keep"),
                "spec.persistentVolumeClaimRetentionPolicy.whenScaled: Unsupported value: \"Keep\": supported values: \"Retain\", \"Delete\"",
            ),
            (
                |s| s["spec"]["replicas"] = json!(-1),
                "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
            ),
            (
                |s| s["spec"]["minReadySeconds"] = json!(-1),
                "spec.minReadySeconds: Invalid value: -1: must be greater than or equal to 0",
            ),
            (
                |s| s["spec"]["ordinals"] = json!({"start": -2}),
                "spec.ordinals.start: Invalid value: -2: must be greater than or equal to 0",
            ),
            (
                |s| s["spec"]["selector"] = json!({}),
                "spec.selector: Invalid value: {}: empty selector is invalid for statefulset",
            ),
            (
                |s| s["spec"]["selector"] = json!({"matchLabels": {"app": "web"}}),
                "spec.template.metadata.labels: Invalid value: {\"app\":\"db\"}: `selector` does not match template `labels`",
            ),
            (
                |s| s["spec"]["template"]["spec"]["restartPolicy"] = json!("OnFailure"),
                "spec.template.spec.restartPolicy: Unsupported value: \"OnFailure\": supported values: \"Always\"",
            ),
            (
                |s| s["spec"]["template"]["spec"]["activeDeadlineSeconds"] = json!(5),
                "spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in StatefulSet is not Supported",
            ),
        ];
        for (mutate, want) in cases {
            let mut s = created();
            mutate(&mut s);
            assert_eq!(messages(&strategy().validate_create(&s)), [want]);
        }
        let mut s = created();
        s["spec"].as_object_mut().expect("spec").remove("selector");
        assert!(messages(&strategy().validate_create(&s))
            .contains(&"spec.selector: Required value".to_string()));
        let mut s = created();
        s["metadata"]["name"] = json!("db.primary");
        assert_eq!(
            strategy().validate_create(&s)[0].field,
            "metadata.name",
            "names are DNS labels"
        );
    }

    #[test]
    fn updates_may_change_only_kube_s_mutable_spec_fields() {
        // Cases of TestValidateStatefulSetUpdate.
        let s = strategy();
        let old = created();
        let mut new = old.clone();
        new["spec"]["replicas"] = json!(3);
        new["spec"]["minReadySeconds"] = json!(5);
        new["spec"]["ordinals"] = json!({"start": 2});
        new["spec"]["updateStrategy"] = json!({"type": "OnDelete"});
        new["spec"]["persistentVolumeClaimRetentionPolicy"] =
            json!({"whenDeleted": "Delete", "whenScaled": "Delete"});
        new["spec"]["template"]["spec"]["containers"][0]["image"] = json!("postgres:17");
        s.prepare_for_update(&mut new, &old);
        assert_eq!(new["metadata"]["generation"], 2);
        assert!(
            s.validate_update(&new, &old).is_empty(),
            "{:?}",
            s.validate_update(&new, &old)
        );
        for field in [
            "serviceName",
            "podManagementPolicy",
            "selector",
            "volumeClaimTemplates",
        ] {
            let mut new = old.clone();
            new["spec"][field] = match field {
                "selector" => json!({"matchLabels": {"app": "db", "x": "y"}}),
                "volumeClaimTemplates" => json!([]),
                "podManagementPolicy" => json!("Parallel"),
                _ => json!("other"),
            };
            if field == "selector" {
                new["spec"]["template"]["metadata"]["labels"]["x"] = json!("y");
            }
            s.prepare_for_update(&mut new, &old);
            assert_eq!(
                messages(&s.validate_update(&new, &old)),
                ["spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"],
                "{field}"
            );
        }
    }

    #[test]
    fn status_updates_keep_the_spec_and_are_validated() {
        // Cases of TestValidateStatefulSetStatusUpdate.
        let s = strategy();
        let mut old = created();
        old["status"] =
            json!({"replicas": 3, "readyReplicas": 3, "availableReplicas": 3, "collisionCount": 2});
        let mut new = old.clone();
        new["spec"]["replicas"] = json!(9);
        new["status"] = json!({"replicas": 3, "readyReplicas": 2, "currentReplicas": 4, "availableReplicas": 3, "collisionCount": 1, "observedGeneration": -1});
        s.prepare_for_status_update(&mut new, &old);
        assert_eq!(new["spec"]["replicas"], 1);
        assert_eq!(
            messages(&s.validate_update(&new, &old)),
            [
                "status.observedGeneration: Invalid value: -1: must be greater than or equal to 0",
                "status.currentReplicas: Invalid value: 4: cannot be greater than status.replicas",
                "status.availableReplicas: Invalid value: 3: cannot be greater than status.readyReplicas",
                "status.collisionCount: Invalid value: 1: cannot be decremented",
            ]
        );
    }

    #[test]
    fn scale_reads_and_writes_replicas() {
        let s = strategy();
        let mut obj = created();
        assert_eq!(s.scale_replicas(&obj), Some((1, 0, "app=db".to_string())));
        s.set_scale_replicas(&mut obj, 5).expect("valid");
        assert_eq!(obj["spec"]["replicas"], 5);
    }
}
