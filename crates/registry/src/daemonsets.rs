//! DaemonSets: defaults (`SetDefaults_DaemonSet`), validation (`ValidateDaemonSetSpec`, rolling
//! update parameters), the immutable selector, the template generation and the status split.
//!
//! The template generation is a field of kube's internal type only: apps/v1 carries it in the
//! annotation `deprecated.daemonset.template.generation` (`Convert_apps_DaemonSet_To_v1_DaemonSet`),
//! which the server sets on every write; a client's value is never taken. kube fails to decode
//! an annotation that is not an integer; here that is a 422 on the annotation.
//!
//! Mirrors `pkg/registry/apps/daemonset/strategy.go`, `pkg/apis/apps/v1/defaults.go` and
//! `pkg/apis/apps/validation/validation.go`. DaemonSets have no `/scale`, so they are not a
//! [`super::workload`] kind; the generic strategy does the bookkeeping.

use rkcm_apimachinery::catalog::ResourceInfo;
use serde_json::{json, Value};

use super::generic::GenericStrategy;
use super::meta::{validate_immutable, validate_nonnegative};
use super::object::{copy, default_field, get, get_i64, object_mut, semantically_equal, set};
use super::selector::{validate_label_selector, LabelSelector};
use super::workload;
use super::{FieldError, GracefulDelete, Strategy};

/// The status counters a new daemon set shows as 0 (no omitempty in `DaemonSetStatus`).
const INITIAL_STATUS: &[&str] = &[
    "currentNumberScheduled",
    "numberMisscheduled",
    "desiredNumberScheduled",
    "numberReady",
];

/// The counters `validateDaemonSetStatus` keeps non-negative.
const STATUS_COUNTERS: &[&str] = &[
    "currentNumberScheduled",
    "numberMisscheduled",
    "desiredNumberScheduled",
    "numberReady",
    "observedGeneration",
    "updatedNumberScheduled",
    "numberAvailable",
    "numberUnavailable",
    "collisionCount",
];

/// The annotation apps/v1 keeps the internal `spec.templateGeneration` in.
const TEMPLATE_GENERATION: &str = "deprecated.daemonset.template.generation";

/// The template generation of `obj`: 0 without the annotation (Go's zero value), `Err` with
/// the `strconv.ParseInt` message when it is not an integer.
fn template_generation(obj: &Value) -> Result<i64, String> {
    match get(obj, &["metadata", "annotations", TEMPLATE_GENERATION]) {
        None | Some(Value::Null) => Ok(0),
        Some(v) => {
            let text = v.as_str().unwrap_or("");
            text.parse()
                .map_err(|_| format!("strconv.ParseInt: parsing {text:?}: invalid syntax"))
        }
    }
}

fn set_template_generation(obj: &mut Value, generation: i64) {
    set(
        obj,
        &["metadata", "annotations", TEMPLATE_GENERATION],
        Some(json!(generation.to_string())),
    );
}

/// `SetDefaults_DaemonSet` and the pod template's defaults.
fn default_daemon_set(obj: &mut Value) {
    let Some(spec) = object_mut(obj, &["spec"]) else {
        return;
    };
    let strategy = spec.entry("updateStrategy").or_insert_with(|| json!({}));
    if strategy.is_null() {
        *strategy = json!({});
    }
    if let Some(strategy) = strategy.as_object_mut() {
        default_field(strategy, "type", json!("RollingUpdate"));
        if strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate") {
            default_field(strategy, "rollingUpdate", json!({}));
            if let Some(ru) = strategy
                .get_mut("rollingUpdate")
                .and_then(Value::as_object_mut)
            {
                default_field(ru, "maxUnavailable", json!(1));
                default_field(ru, "maxSurge", json!(0));
            }
        }
    }
    default_field(spec, "revisionHistoryLimit", json!(10));
    workload::default_template(obj);
}

/// `ValidateRollingUpdateDaemonSet`.
fn validate_rolling_update(ru: &Value) -> Vec<FieldError> {
    const PATH: &str = "spec.updateStrategy.rollingUpdate";
    let unavailable = ru.get("maxUnavailable");
    let surge = ru.get("maxSurge");
    let unavailable_path = format!("{PATH}.maxUnavailable");
    let surge_path = format!("{PATH}.maxSurge");
    let mut errs = workload::validate_int_or_percent(unavailable, &unavailable_path);
    errs.extend(workload::validate_int_or_percent(surge, &surge_path));
    errs.extend(workload::validate_not_over_100_percent(
        unavailable,
        &unavailable_path,
    ));
    errs.extend(workload::validate_not_over_100_percent(surge, &surge_path));
    let has_unavailable = workload::int_or_percent_value(unavailable) != 0;
    let has_surge = workload::int_or_percent_value(surge) != 0;
    if has_unavailable && has_surge {
        errs.push(FieldError::invalid(
            surge_path,
            surge.unwrap_or(&Value::Null),
            "may not be set when maxUnavailable is non-zero",
        ));
    } else if !has_unavailable && !has_surge {
        errs.push(FieldError::required(
            unavailable_path,
            "cannot be 0 when maxSurge is 0",
        ));
    }
    errs
}

/// `ValidateDaemonSetUpdateStrategy`.
fn validate_update_strategy(spec: &Value) -> Vec<FieldError> {
    let strategy = spec.get("updateStrategy").unwrap_or(&Value::Null);
    match get(strategy, &["type"]).and_then(Value::as_str) {
        Some("OnDelete") => Vec::new(),
        Some("RollingUpdate") => match strategy.get("rollingUpdate").filter(|v| !v.is_null()) {
            None => vec![FieldError::required(
                "spec.updateStrategy.rollingUpdate",
                "",
            )],
            Some(ru) => validate_rolling_update(ru),
        },
        _ => vec![FieldError::not_supported(
            "spec.updateStrategy",
            strategy,
            &["RollingUpdate", "OnDelete"],
        )],
    }
}

/// `ValidateDaemonSetSpec`.
fn validate_spec(obj: &Value) -> Vec<FieldError> {
    let spec = get(obj, &["spec"]).unwrap_or(&Value::Null);
    let selector = spec.get("selector").filter(|v| !v.is_null());
    let mut errs = validate_label_selector(selector, "spec.selector");
    let labels = get(spec, &["template", "metadata", "labels"]);
    // A missing selector selects nothing, so it matches no template either.
    if let Ok(sel) = LabelSelector::from_json(selector) {
        if !sel.matches(&super::object::string_map(labels)) {
            errs.push(FieldError::invalid(
                "spec.template.metadata.labels",
                labels.unwrap_or(&Value::Null),
                "`selector` does not match template `labels`",
            ));
        }
    }
    if let Some(sel) = selector {
        let terms: usize = ["matchLabels", "matchExpressions"]
            .iter()
            .map(|k| match sel.get(*k) {
                Some(Value::Object(m)) => m.len(),
                Some(Value::Array(a)) => a.len(),
                _ => 0,
            })
            .sum();
        if terms == 0 {
            errs.push(FieldError::invalid(
                "spec.selector",
                sel,
                "empty selector is invalid for daemonset",
            ));
        }
    }
    // The Go template is a value, never nil: an absent one is validated as an empty one.
    let empty = json!({});
    let template = spec
        .get("template")
        .filter(|v| !v.is_null())
        .unwrap_or(&empty);
    errs.extend(super::podspec::validate_pod_template(
        Some(template),
        "spec.template",
    ));
    let restart = get(template, &["spec", "restartPolicy"]);
    if restart.and_then(Value::as_str) != Some("Always") {
        errs.push(FieldError::not_supported(
            "spec.template.spec.restartPolicy",
            restart.unwrap_or(&json!("")),
            &["Always"],
        ));
    }
    if get(template, &["spec", "activeDeadlineSeconds"]).is_some_and(|v| !v.is_null()) {
        errs.push(FieldError::forbidden(
            "spec.template.spec.activeDeadlineSeconds",
            "activeDeadlineSeconds in DaemonSet is not Supported",
        ));
    }
    errs.extend(validate_nonnegative(
        spec.get("minReadySeconds"),
        "spec.minReadySeconds",
    ));
    match template_generation(obj) {
        Ok(g) => errs.extend(validate_nonnegative(
            Some(&json!(g)),
            "spec.templateGeneration",
        )),
        Err(e) => errs.push(FieldError::invalid(
            format!("metadata.annotations[{TEMPLATE_GENERATION}]"),
            get(obj, &["metadata", "annotations", TEMPLATE_GENERATION]).unwrap_or(&Value::Null),
            &e,
        )),
    }
    errs.extend(validate_update_strategy(spec));
    errs.extend(validate_nonnegative(
        spec.get("revisionHistoryLimit"),
        "spec.revisionHistoryLimit",
    ));
    errs
}

/// `ValidateDaemonSetSpecUpdate`: `templateGeneration` moves with the template, never back.
fn validate_template_generation(new: &Value, old: &Value) -> Vec<FieldError> {
    let generation = |obj: &Value| template_generation(obj).unwrap_or(0);
    let (n, o) = (generation(new), generation(old));
    let path = "spec.templateGeneration";
    let mut errs = Vec::new();
    if n < o {
        errs.push(FieldError::invalid(
            path,
            &json!(n),
            "must not be decremented",
        ));
    }
    let template_updated = !semantically_equal(
        get(new, &["spec", "template"]),
        get(old, &["spec", "template"]),
    );
    if n == o && template_updated {
        errs.push(FieldError::invalid(
            path,
            &json!(n),
            "must be incremented upon template update",
        ));
    } else if n > o && !template_updated {
        errs.push(FieldError::invalid(
            path,
            &json!(n),
            "must not be incremented without template update",
        ));
    }
    errs
}

/// `validateDaemonSetStatus` and the collision count of `ValidateDaemonSetStatusUpdate`.
fn validate_status(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs: Vec<FieldError> = STATUS_COUNTERS
        .iter()
        .flat_map(|c| validate_nonnegative(get(new, &["status", c]), &format!("status.{c}")))
        .collect();
    errs.extend(workload::validate_collision_count(new, old));
    errs
}

/// The daemon set strategy: generic bookkeeping plus `templateGeneration`.
pub(crate) struct DaemonSetStrategy {
    base: GenericStrategy,
}

impl DaemonSetStrategy {
    /// The strategy of `info` (apps/v1 daemon sets).
    pub(crate) fn new(info: &'static ResourceInfo) -> Self {
        DaemonSetStrategy {
            base: GenericStrategy::new(info).tracking_generation(),
        }
    }
}

impl Strategy for DaemonSetStrategy {
    fn resource(&self) -> &'static ResourceInfo {
        self.base.resource()
    }

    fn default(&self, obj: &mut Value) {
        default_daemon_set(obj);
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        self.base.prepare_for_create(obj);
        let zeroes = INITIAL_STATUS
            .iter()
            .map(|c| (c.to_string(), json!(0)))
            .collect();
        set(obj, &["status"], Some(Value::Object(zeroes)));
        if let Ok(g) = template_generation(obj) {
            set_template_generation(obj, g.max(1));
        }
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        // Status and generation from the old object; an update may not set the template
        // generation (an unparsable one is left for validation to refuse, as kube's decoding
        // would).
        self.base.prepare_for_update(new, old);
        copy(new, old, &["metadata", "generation"]);
        let old_generation = get_i64(old, &["metadata", "generation"]).unwrap_or(0);
        let old_template_generation = template_generation(old).unwrap_or(0);
        let keep = template_generation(new).is_ok();
        if keep {
            set_template_generation(new, old_template_generation);
        }
        if !semantically_equal(
            get(new, &["spec", "template"]),
            get(old, &["spec", "template"]),
        ) {
            if keep {
                set_template_generation(new, old_template_generation + 1);
            }
            set(
                new,
                &["metadata", "generation"],
                Some(json!(old_generation + 1)),
            );
        } else if !semantically_equal(get(new, &["spec"]), get(old, &["spec"])) {
            set(
                new,
                &["metadata", "generation"],
                Some(json!(old_generation + 1)),
            );
        }
    }

    fn prepare_for_status_update(&self, new: &mut Value, old: &Value) {
        // kube defaults every decoded body, status updates included; the template generation
        // is part of the old spec it keeps.
        self.default(new);
        self.base.prepare_for_status_update(new, old);
        if template_generation(new).is_ok() {
            set_template_generation(new, template_generation(old).unwrap_or(0));
        }
    }

    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = self.base.validate_create(obj);
        errs.extend(validate_spec(obj));
        errs
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        // ValidateDaemonSet (the name included), ValidateDaemonSetUpdate, the immutable
        // selector of apps/v1, and the status checks (a spec update keeps the old status).
        let mut errs = self.base.validate_update(new, old);
        errs.extend(validate_template_generation(new, old));
        errs.extend(validate_spec(new));
        errs.extend(validate_immutable(
            get(new, &["spec", "selector"]),
            get(old, &["spec", "selector"]),
            "spec.selector",
        ));
        errs.extend(validate_status(new, old));
        errs
    }

    fn field_value(&self, obj: &Value, field: &str) -> Option<String> {
        self.base.field_value(obj, field)
    }

    fn graceful_delete(&self, obj: &Value, requested_grace: Option<i64>) -> GracefulDelete {
        self.base.graceful_delete(obj, requested_grace)
    }

    fn scale_replicas(&self, obj: &Value) -> Option<(i32, i32, String)> {
        self.base.scale_replicas(obj)
    }

    fn set_scale_replicas(&self, obj: &mut Value, replicas: i32) -> Result<(), FieldError> {
        self.base.set_scale_replicas(obj, replicas)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rkcm_apimachinery::catalog;

    fn strategy() -> DaemonSetStrategy {
        DaemonSetStrategy::new(catalog::by_kind("apps/v1", "DaemonSet").expect("served"))
    }

    fn created() -> Value {
        let mut ds = json!({
            "apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "agent", "namespace": "kube-system", "uid": "u1"},
            "spec": {
                "selector": {"matchLabels": {"app": "agent"}},
                "template": {
                    "metadata": {"labels": {"app": "agent"}},
                    "spec": {"containers": [{"name": "agent", "image": "agent:1"}]}
                }
            }
        });
        strategy().default(&mut ds);
        strategy().prepare_for_create(&mut ds);
        ds
    }

    /// A change to a valid object and the one error kube reports for it.
    type Case = (fn(&mut Value), &'static str);

    fn messages(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(FieldError::message_with_field).collect()
    }

    #[test]
    fn defaults_are_applied_as_apps_v1_does() {
        // TestSetDefaultDaemonSetSpec.
        let ds = created();
        assert_eq!(
            ds["spec"]["updateStrategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}})
        );
        assert_eq!(ds["spec"]["revisionHistoryLimit"], 10);
        assert_eq!(
            ds["metadata"]["annotations"],
            json!({TEMPLATE_GENERATION: "1"})
        );
        assert_eq!(ds["spec"]["template"]["spec"]["restartPolicy"], "Always");
        assert_eq!(ds["metadata"]["generation"], 1);
        assert_eq!(
            ds["status"],
            json!({"currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 0, "numberReady": 0})
        );
        assert!(
            strategy().validate_create(&ds).is_empty(),
            "{:?}",
            strategy().validate_create(&ds)
        );
        let mut on_delete = json!({"spec": {"updateStrategy": {"type": "OnDelete"}}});
        default_daemon_set(&mut on_delete);
        assert_eq!(
            on_delete["spec"]["updateStrategy"],
            json!({"type": "OnDelete"})
        );
    }

    #[test]
    fn spec_errors_carry_kube_messages() {
        // Cases of TestValidateDaemonSet.
        let cases: Vec<Case> = vec![
            (
                |d| d["spec"]["selector"] = json!({"matchLabels": {"app": "other"}}),
                "spec.template.metadata.labels: Invalid value: {\"app\":\"agent\"}: `selector` does not match template `labels`",
            ),
            (
                |d| d["spec"]["template"]["spec"]["restartPolicy"] = json!("Never"),
                "spec.template.spec.restartPolicy: Unsupported value: \"Never\": supported values: \"Always\"",
            ),
            (
                |d| d["spec"]["template"]["spec"]["activeDeadlineSeconds"] = json!(10),
                "spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in DaemonSet is not Supported",
            ),
            (
                |d| d["spec"]["minReadySeconds"] = json!(-1),
                "spec.minReadySeconds: Invalid value: -1: must be greater than or equal to 0",
            ),
            (
                |d| d["spec"]["revisionHistoryLimit"] = json!(-1),
                "spec.revisionHistoryLimit: Invalid value: -1: must be greater than or equal to 0",
            ),
            (
                |d| d["spec"]["updateStrategy"] = json!({"type": "Sometimes"}),
                "spec.updateStrategy: Unsupported value: {\"type\":\"Sometimes\"}: supported values: \"RollingUpdate\", \"OnDelete\"",
            ),
            (
                |d| d["spec"]["updateStrategy"]["rollingUpdate"] = json!({"maxUnavailable": 0, "maxSurge": 0}),
                "spec.updateStrategy.rollingUpdate.maxUnavailable: Required value: cannot be 0 when maxSurge is 0",
            ),
            (
                |d| d["spec"]["updateStrategy"]["rollingUpdate"] = json!({"maxUnavailable": "10%", "maxSurge": 1}),
                "spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: 1: may not be set when maxUnavailable is non-zero",
            ),
            (
                |d| d["spec"]["updateStrategy"]["rollingUpdate"] = json!({"maxUnavailable": 0, "maxSurge": "101%"}),
                "spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: \"101%\": must not be greater than 100%",
            ),
            (
                |d| d["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"] = json!(-1),
                "spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: -1: must be greater than or equal to 0",
            ),
        ];
        for (mutate, want) in cases {
            let mut d = created();
            mutate(&mut d);
            assert_eq!(messages(&strategy().validate_create(&d)), [want]);
        }
        let mut d = created();
        d["spec"]["selector"] = json!({});
        assert!(messages(&strategy().validate_create(&d)).contains(
            &"spec.selector: Invalid value: {}: empty selector is invalid for daemonset"
                .to_string()
        ));
    }

    #[test]
    fn template_changes_bump_template_generation_and_generation() {
        let s = strategy();
        let old = created();
        let mut new = old.clone();
        new["spec"]["template"]["spec"]["containers"][0]["image"] = json!("agent:2");
        new["metadata"]["annotations"][TEMPLATE_GENERATION] = json!("7");
        new["status"] = json!({"numberReady": 3});
        s.prepare_for_update(&mut new, &old);
        assert_eq!(new["metadata"]["annotations"][TEMPLATE_GENERATION], "2");
        assert_eq!(new["metadata"]["generation"], 2);
        assert_eq!(new["status"], old["status"]);
        assert!(
            s.validate_update(&new, &old).is_empty(),
            "{:?}",
            s.validate_update(&new, &old)
        );
        let mut limited = old.clone();
        limited["spec"]["revisionHistoryLimit"] = json!(3);
        s.prepare_for_update(&mut limited, &old);
        assert_eq!(limited["metadata"]["annotations"][TEMPLATE_GENERATION], "1");
        assert_eq!(limited["metadata"]["generation"], 2);
    }

    #[test]
    fn template_generations_that_are_not_integers_are_refused() {
        let mut ds = created();
        ds["metadata"]["annotations"][TEMPLATE_GENERATION] = json!("x");
        assert_eq!(
            messages(&strategy().validate_create(&ds)),
            ["metadata.annotations[deprecated.daemonset.template.generation]: Invalid value: \"x\": strconv.ParseInt: parsing \"x\": invalid syntax"]
        );
        let old = created();
        let mut new = old.clone();
        new["metadata"]["annotations"][TEMPLATE_GENERATION] = json!("5");
        strategy().prepare_for_status_update(&mut new, &old);
        assert_eq!(new["metadata"]["annotations"][TEMPLATE_GENERATION], "1");
    }

    #[test]
    fn template_generation_rules_of_validate_daemon_set_spec_update() {
        let old = created();
        let mut changed = old.clone();
        changed["spec"]["template"]["metadata"]["labels"]["v"] = json!("2");
        assert_eq!(
            messages(&validate_template_generation(&changed, &old)),
            ["spec.templateGeneration: Invalid value: 1: must be incremented upon template update"]
        );
        let mut bumped = old.clone();
        bumped["metadata"]["annotations"][TEMPLATE_GENERATION] = json!("2");
        assert_eq!(
            messages(&validate_template_generation(&bumped, &old)),
            ["spec.templateGeneration: Invalid value: 2: must not be incremented without template update"]
        );
        let mut decremented = changed.clone();
        decremented["metadata"]["annotations"][TEMPLATE_GENERATION] = json!("0");
        assert_eq!(
            messages(&validate_template_generation(&decremented, &old))[0],
            "spec.templateGeneration: Invalid value: 0: must not be decremented"
        );
    }

    #[test]
    fn selector_is_immutable_and_status_updates_keep_the_spec() {
        let s = strategy();
        let old = created();
        let mut new = old.clone();
        new["spec"]["selector"] = json!({"matchLabels": {"app": "agent", "x": "y"}});
        new["spec"]["template"]["metadata"]["labels"]["x"] = json!("y");
        s.prepare_for_update(&mut new, &old);
        let m = messages(&s.validate_update(&new, &old));
        assert_eq!(m.len(), 1, "{m:?}");
        assert!(m[0].starts_with("spec.selector: Invalid value: "));
        assert!(m[0].ends_with("field is immutable"));

        let mut old = created();
        old["status"]["collisionCount"] = json!(2);
        let mut status = old.clone();
        status["spec"]["revisionHistoryLimit"] = json!(1);
        status["status"] = json!({"numberReady": -1, "collisionCount": 1});
        s.prepare_for_status_update(&mut status, &old);
        assert_eq!(status["spec"], old["spec"]);
        assert_eq!(status["metadata"]["generation"], 1);
        assert_eq!(
            messages(&s.validate_update(&status, &old)),
            [
                "status.numberReady: Invalid value: -1: must be greater than or equal to 0",
                "status.collisionCount: Invalid value: 1: cannot be decremented",
            ]
        );
    }
}
