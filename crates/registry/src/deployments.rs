//! Deployments: defaults (`SetDefaults_Deployment`), validation (`ValidateDeploymentSpec`,
//! rolling-update parameters) and the [`Workload`] entry that makes them a workload whose
//! annotations count for the generation and whose status writes keep the labels.
//!
//! Mirrors `pkg/registry/apps/deployment/strategy.go`, `pkg/apis/apps/v1/defaults.go` and
//! `pkg/apis/apps/validation/validation.go`.

use rkcm_apimachinery::catalog::ResourceInfo;
use serde_json::{json, Value};

use super::meta::validate_nonnegative;
use super::object::{default_field, get, get_i64, object_mut};
use super::workload::{self, percent, validate_int_or_percent, Workload, WorkloadStrategy};
use super::FieldError;

const STATUS_COUNTERS: &[&str] = &[
    "observedGeneration",
    "replicas",
    "updatedReplicas",
    "readyReplicas",
    "availableReplicas",
    "unavailableReplicas",
    "terminatingReplicas",
    "collisionCount",
];
const STATUS_BOUNDED: &[&str] = &["updatedReplicas", "readyReplicas", "availableReplicas"];

/// `SetDefaults_Deployment`.
fn default_deployment(obj: &mut Value) {
    workload::default_replicas(obj);
    if let Some(strategy) = object_mut(obj, &["spec", "strategy"]) {
        if strategy
            .get("type")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            strategy.insert("type".to_string(), json!("RollingUpdate"));
        }
    }
    if get(obj, &["spec", "strategy", "type"]).and_then(Value::as_str) == Some("RollingUpdate") {
        if let Some(ru) = object_mut(obj, &["spec", "strategy", "rollingUpdate"]) {
            default_field(ru, "maxUnavailable", json!("25%"));
            default_field(ru, "maxSurge", json!("25%"));
        }
    }
    if let Some(spec) = object_mut(obj, &["spec"]) {
        default_field(spec, "revisionHistoryLimit", json!(10));
        default_field(spec, "progressDeadlineSeconds", json!(600));
    }
    workload::default_template(obj);
}

/// `ValidateDeploymentStrategy` and `ValidateRollingUpdateDeployment`.
fn validate_strategy(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let strategy = get(obj, &["spec", "strategy"]).unwrap_or(&Value::Null);
    let rolling = get(strategy, &["rollingUpdate"]).filter(|v| !v.is_null());
    match get(strategy, &["type"]).and_then(Value::as_str) {
        Some("Recreate") => {
            if rolling.is_some() {
                errs.push(FieldError::forbidden(
                    "spec.strategy.rollingUpdate",
                    "may not be specified when strategy `type` is 'Recreate'",
                ));
            }
        }
        Some("RollingUpdate") => match rolling {
            None => errs.push(FieldError::required(
                "spec.strategy.rollingUpdate",
                "this should be defaulted and never be nil",
            )),
            Some(ru) => {
                let max_unavailable = get(ru, &["maxUnavailable"]);
                let max_surge = get(ru, &["maxSurge"]);
                errs.extend(validate_int_or_percent(
                    max_unavailable,
                    "spec.strategy.rollingUpdate.maxUnavailable",
                ));
                errs.extend(validate_int_or_percent(
                    max_surge,
                    "spec.strategy.rollingUpdate.maxSurge",
                ));
                let value = |v: Option<&Value>| {
                    v.and_then(|v| percent(v).or_else(|| v.as_i64()))
                        .unwrap_or(0)
                };
                if value(max_unavailable) == 0 && value(max_surge) == 0 {
                    errs.push(FieldError::invalid(
                        "spec.strategy.rollingUpdate.maxUnavailable",
                        max_unavailable.unwrap_or(&Value::Null),
                        "may not be 0 when `maxSurge` is 0",
                    ));
                }
                if let Some(p) = max_unavailable.and_then(percent) {
                    if p > 100 {
                        errs.push(FieldError::invalid(
                            "spec.strategy.rollingUpdate.maxUnavailable",
                            max_unavailable.unwrap_or(&Value::Null),
                            "must not be greater than 100%",
                        ));
                    }
                }
            }
        },
        // kube reports the whole strategy at `spec.strategy`.
        _ => errs.push(FieldError::not_supported(
            "spec.strategy",
            strategy,
            &["Recreate", "RollingUpdate"],
        )),
    }
    errs
}

/// `ValidateDeploymentSpec`.
fn validate_spec(obj: &Value) -> Vec<FieldError> {
    let mut errs = validate_nonnegative(get(obj, &["spec", "replicas"]), "spec.replicas");
    errs.extend(workload::validate_apps_selector_and_template(obj));
    errs.extend(validate_strategy(obj));
    errs.extend(validate_nonnegative(
        get(obj, &["spec", "minReadySeconds"]),
        "spec.minReadySeconds",
    ));
    errs.extend(validate_nonnegative(
        get(obj, &["spec", "revisionHistoryLimit"]),
        "spec.revisionHistoryLimit",
    ));
    if let Some(pds) = get(obj, &["spec", "progressDeadlineSeconds"]).filter(|v| !v.is_null()) {
        errs.extend(validate_nonnegative(
            Some(pds),
            "spec.progressDeadlineSeconds",
        ));
        let min_ready = get_i64(obj, &["spec", "minReadySeconds"]).unwrap_or(0);
        if pds.as_i64().unwrap_or(0) <= min_ready {
            errs.push(FieldError::invalid(
                "spec.progressDeadlineSeconds",
                pds,
                "must be greater than minReadySeconds",
            ));
        }
    }
    errs
}

/// How deployments differ from other workloads (`pkg/registry/apps/deployment/strategy.go`).
pub(crate) const DEPLOYMENT: Workload = Workload {
    default: default_deployment,
    validate_spec,
    validate_update: workload::validate_collision_count,
    immutable_selector: true,
    status_counters: STATUS_COUNTERS,
    status_bounded: STATUS_BOUNDED,
    // Annotations are copied from deployments to their replica sets, so changing them is a
    // new generation too.
    generation_follows_annotations: true,
    status_keeps_labels: true,
    gated_terminating_replicas: true,
    ..Workload::BASE
};

/// The strategy of `info` (apps/v1 deployments).
pub(crate) fn strategy(info: &'static ResourceInfo) -> WorkloadStrategy {
    WorkloadStrategy::new(info, &DEPLOYMENT)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Strategy;
    use rkcm_apimachinery::catalog;

    fn strategy() -> WorkloadStrategy {
        super::strategy(catalog::by_kind("apps/v1", "Deployment").expect("served"))
    }

    fn deployment() -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default", "uid": "u1"},
            "spec": {
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "nginx", "image": "nginx:1.25"}]}
                }
            }
        })
    }

    fn created() -> Value {
        let mut d = deployment();
        strategy().default(&mut d);
        strategy().prepare_for_create(&mut d);
        d
    }

    fn messages(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(FieldError::message_with_field).collect()
    }

    #[test]
    fn defaults_are_applied_as_apps_v1_does() {
        let d = created();
        assert_eq!(d["spec"]["replicas"], 1);
        assert_eq!(
            d["spec"]["strategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}})
        );
        assert_eq!(d["spec"]["revisionHistoryLimit"], 10);
        assert_eq!(d["spec"]["progressDeadlineSeconds"], 600);
        assert_eq!(d["spec"]["template"]["spec"]["restartPolicy"], "Always");
        assert_eq!(
            d["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"],
            "IfNotPresent"
        );
        assert!(d["spec"]["template"]["spec"]
            .get("enableServiceLinks")
            .is_none());
        assert_eq!(d["metadata"]["generation"], 1);
        assert_eq!(d["status"], json!({}));
        assert!(
            strategy().validate_create(&d).is_empty(),
            "{:?}",
            strategy().validate_create(&d)
        );
    }

    #[test]
    fn recreate_deployments_get_no_rolling_update_defaults() {
        let mut d = deployment();
        d["spec"]["strategy"] = json!({"type": "Recreate"});
        strategy().default(&mut d);
        assert_eq!(d["spec"]["strategy"], json!({"type": "Recreate"}));
    }

    #[test]
    fn selector_is_required_and_must_match_the_template() {
        let mut d = created();
        d["spec"]["selector"] = json!({"matchLabels": {"app": "db"}});
        assert_eq!(
            messages(&strategy().validate_create(&d)),
            ["spec.template.metadata.labels: Invalid value: {\"app\":\"web\"}: `selector` does not match template `labels`"]
        );
        d["spec"]["selector"] = json!({});
        assert_eq!(
            messages(&strategy().validate_create(&d)),
            ["spec.selector: Invalid value: {}: empty selector is invalid for deployment"]
        );
        d["spec"].as_object_mut().expect("spec").remove("selector");
        assert!(messages(&strategy().validate_create(&d))
            .contains(&"spec.selector: Required value".to_string()));
    }

    #[test]
    fn replicas_and_rolling_update_parameters_are_checked() {
        let mut d = created();
        d["spec"]["replicas"] = json!(-1);
        d["spec"]["strategy"]["rollingUpdate"] = json!({"maxUnavailable": "120%", "maxSurge": 0});
        d["spec"]["minReadySeconds"] = json!(700);
        let m = messages(&strategy().validate_create(&d));
        assert!(m.contains(
            &"spec.replicas: Invalid value: -1: must be greater than or equal to 0".to_string()
        ));
        assert!(m.contains(&"spec.strategy.rollingUpdate.maxUnavailable: Invalid value: \"120%\": must not be greater than 100%".to_string()));
        assert!(m.contains(&"spec.progressDeadlineSeconds: Invalid value: 600: must be greater than minReadySeconds".to_string()));
        let mut d = created();
        d["spec"]["strategy"]["rollingUpdate"] = json!({"maxUnavailable": 0, "maxSurge": "0%"});
        assert_eq!(
            messages(&strategy().validate_create(&d)),
            ["spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 0: may not be 0 when `maxSurge` is 0"]
        );
    }

    #[test]
    fn unknown_strategies_and_bad_percentages_are_reported() {
        let mut d = created();
        d["spec"]["strategy"]["rollingUpdate"]["maxSurge"] = json!("20Percent");
        assert_eq!(
            messages(&strategy().validate_create(&d)),
            ["spec.strategy.rollingUpdate.maxSurge: Invalid value: \"20Percent\": a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"]
        );
        let mut d = created();
        d["spec"]["strategy"] = json!({"type": "BlueGreen"});
        assert_eq!(
            messages(&strategy().validate_create(&d)),
            ["spec.strategy: Unsupported value: {\"type\":\"BlueGreen\"}: supported values: \"Recreate\", \"RollingUpdate\""]
        );
    }

    #[test]
    fn template_must_restart_always() {
        let mut d = created();
        d["spec"]["template"]["spec"]["restartPolicy"] = json!("OnFailure");
        assert_eq!(
            messages(&strategy().validate_create(&d)),
            ["spec.template.spec.restartPolicy: Unsupported value: \"OnFailure\": supported values: \"Always\""]
        );
    }

    #[test]
    fn selector_is_immutable_on_update() {
        let old = created();
        let mut new = old.clone();
        new["spec"]["selector"] = json!({"matchLabels": {"app": "web", "tier": "x"}});
        new["spec"]["template"]["metadata"]["labels"]["tier"] = json!("x");
        strategy().prepare_for_update(&mut new, &old);
        let m = messages(&strategy().validate_update(&new, &old));
        assert_eq!(m.len(), 1);
        assert!(m[0].starts_with("spec.selector: Invalid value: "));
        assert!(m[0].ends_with(": field is immutable"));
    }

    #[test]
    fn generation_bumps_on_spec_or_annotation_changes_only() {
        let s = strategy();
        let mut old = created();
        old["status"] = json!({"replicas": 1, "observedGeneration": 1});
        let mut same = old.clone();
        same["status"] = json!({"replicas": 5});
        same["metadata"]["labels"] = json!({"x": "y"});
        s.prepare_for_update(&mut same, &old);
        assert_eq!(same["metadata"]["generation"], 1);
        assert_eq!(
            same["status"], old["status"],
            "status comes from the old object"
        );
        let mut scaled = old.clone();
        scaled["spec"]["replicas"] = json!(3);
        s.prepare_for_update(&mut scaled, &old);
        assert_eq!(scaled["metadata"]["generation"], 2);
        let mut annotated = old.clone();
        annotated["metadata"]["annotations"] = json!({"a": "b"});
        s.prepare_for_update(&mut annotated, &old);
        assert_eq!(annotated["metadata"]["generation"], 2);
    }

    #[test]
    fn status_updates_ignore_spec_and_labels() {
        let s = strategy();
        let old = created();
        let mut new = old.clone();
        new["spec"]["replicas"] = json!(9);
        new["metadata"]["labels"] = json!({"x": "y"});
        new["status"] = json!({"replicas": 1, "readyReplicas": 1, "availableReplicas": 1, "observedGeneration": 1});
        s.prepare_for_status_update(&mut new, &old);
        assert_eq!(new["spec"], old["spec"]);
        assert!(new["metadata"].get("labels").is_none());
        assert_eq!(new["metadata"]["generation"], 1);
        assert!(s.validate_update(&new, &old).is_empty());
        new["status"]["availableReplicas"] = json!(2);
        let m = messages(&s.validate_update(&new, &old));
        assert!(m.contains(
            &"status.availableReplicas: Invalid value: 2: cannot be greater than status.replicas"
                .to_string()
        ));
    }

    #[test]
    fn scale_reports_replicas_and_the_rendered_selector() {
        let s = strategy();
        let mut d = created();
        d["spec"]["selector"]["matchExpressions"] =
            json!([{"key": "env", "operator": "In", "values": ["b", "a"]}]);
        d["status"] = json!({"replicas": 2});
        assert_eq!(
            s.scale_replicas(&d),
            Some((1, 2, "app=web,env in (a,b)".to_string()))
        );
        s.set_scale_replicas(&mut d, 4).expect("valid");
        assert_eq!(d["spec"]["replicas"], 4);
        let err = s.set_scale_replicas(&mut d, -1).expect_err("negative");
        assert_eq!(
            err.message_with_field(),
            "spec.replicas: Invalid value: -1: must be greater than or equal to 0"
        );
    }
}
