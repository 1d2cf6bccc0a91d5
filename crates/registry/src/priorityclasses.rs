//! PriorityClasses: the `preemptionPolicy` default, the value ceiling of user classes, the
//! reserved `system-` prefix, immutable `value` and `preemptionPolicy`, and kube's two
//! built-in classes.
//!
//! Mirrors `pkg/apis/scheduling/validation`, `pkg/apis/scheduling/v1/defaults.go`,
//! `pkg/apis/scheduling/v1/helpers.go` (`SystemPriorityClasses`, `IsKnownSystemPriorityClass`)
//! and `pkg/registry/scheduling/priorityclass/strategy.go`.
//!
//! At most one class may have `globalDefault: true`. kube checks that in the `Priority`
//! admission plugin, which lists the other classes; a strategy sees only the object at hand,
//! so the check is [`check_single_global_default`], for the admission chain to call with the
//! stored classes.

use rkcm_apimachinery::catalog::ResourceInfo;
use serde_json::{json, Value};

use super::generic::GenericStrategy;
use super::hooked::{HookedStrategy, Hooks};
use super::meta::validate_immutable;
use super::object::{default_field, get, get_str, object_mut};
use super::FieldError;

/// `scheduling.HighestUserDefinablePriority`.
pub const HIGHEST_USER_DEFINABLE_PRIORITY: i64 = 1_000_000_000;
/// `scheduling.SystemCriticalPriority`.
pub const SYSTEM_CRITICAL_PRIORITY: i64 = 2 * HIGHEST_USER_DEFINABLE_PRIORITY;
/// `scheduling.SystemPriorityClassPrefix`.
const SYSTEM_PREFIX: &str = "system-";
const PREEMPTION_POLICIES: &[&str] = &["PreemptLowerPriority", "Never"];

/// One of kube's built-in classes.
struct SystemClass {
    name: &'static str,
    value: i64,
    description: &'static str,
}

const SYSTEM_CLASSES: &[SystemClass] = &[
    SystemClass {
        name: "system-node-critical",
        value: SYSTEM_CRITICAL_PRIORITY + 1000,
        description: "Used for system critical pods that must not be moved from their current node.",
    },
    SystemClass {
        name: "system-cluster-critical",
        value: SYSTEM_CRITICAL_PRIORITY,
        description: "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
    },
];

/// `SystemPriorityClasses()`: the classes kube-apiserver creates at start when they are
/// missing (`system-node-critical`, then `system-cluster-critical`), as scheduling.k8s.io/v1
/// objects ready to be created (defaults applied).
pub fn system_priority_classes() -> Vec<Value> {
    SYSTEM_CLASSES
        .iter()
        .map(|c| {
            let mut obj = json!({
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": c.name},
                "value": c.value,
                "description": c.description,
            });
            default_priority_class(&mut obj);
            obj
        })
        .collect()
}

/// `IsKnownSystemPriorityClass`: `Err` carries kube's reason.
fn is_known_system_class(
    name: &str,
    value: Option<i64>,
    global_default: bool,
) -> Result<(), String> {
    let Some(c) = SYSTEM_CLASSES.iter().find(|c| c.name == name) else {
        return Err(format!("{name} is not a known system priority class"));
    };
    if value != Some(c.value) {
        return Err(format!(
            "value of {} PriorityClass must be {}",
            c.name, c.value
        ));
    }
    if global_default {
        return Err(format!(
            "globalDefault of {} PriorityClass must be false",
            c.name
        ));
    }
    Ok(())
}

/// `SetDefaults_PriorityClass`.
fn default_priority_class(obj: &mut Value) {
    if let Some(pc) = object_mut(obj, &[]) {
        default_field(pc, "preemptionPolicy", json!("PreemptLowerPriority"));
    }
}

fn global_default(obj: &Value) -> bool {
    get(obj, &["globalDefault"]).and_then(Value::as_bool) == Some(true)
}

/// `ValidatePriorityClass` (after the metadata).
fn validate(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let name = get_str(obj, &["metadata", "name"]).unwrap_or("");
    let value = get(obj, &["value"]).and_then(Value::as_i64);
    if name.starts_with(SYSTEM_PREFIX) {
        if let Err(reason) = is_known_system_class(name, value.or(Some(0)), global_default(obj)) {
            errs.push(FieldError::forbidden(
                "metadata.name",
                &format!(
                    "priority class names with '{SYSTEM_PREFIX}' prefix are reserved for system use only. error: {reason}"
                ),
            ));
        }
    } else if value.unwrap_or(0) > HIGHEST_USER_DEFINABLE_PRIORITY {
        errs.push(FieldError::forbidden(
            "value",
            &format!(
                "maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}"
            ),
        ));
    }
    // ValidatePreemptionPolicy
    if let Some(policy) = get(obj, &["preemptionPolicy"]).filter(|v| !v.is_null()) {
        match policy.as_str() {
            Some(p) if PREEMPTION_POLICIES.contains(&p) => {}
            Some("") => errs.push(FieldError::required("preemptionPolicy", "")),
            _ => errs.push(FieldError::not_supported(
                "preemptionPolicy",
                policy,
                PREEMPTION_POLICIES,
            )),
        }
    }
    errs
}

/// `ValidatePriorityClassUpdate` (after the metadata): `value` and `preemptionPolicy` never
/// change. kube does not re-validate the rest of the class on update.
fn validate_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let value = |o: &Value| get(o, &["value"]).and_then(Value::as_i64).unwrap_or(0);
    if value(new) != value(old) {
        errs.push(FieldError::forbidden(
            "value",
            "may not be changed in an update.",
        ));
    }
    errs.extend(validate_immutable(
        get(new, &["preemptionPolicy"]),
        get(old, &["preemptionPolicy"]),
        "preemptionPolicy",
    ));
    errs
}

/// `validatePriorityClass` of the `Priority` admission plugin: a class marked `globalDefault`
/// is refused while another default exists among `existing` (the stored classes; the default
/// is the one of lowest value, as `getDefaultPriorityClass` picks it). On update a class may
/// stay the default. `Err` carries the reason of kube's 403 Forbidden.
pub fn check_single_global_default(
    class: &Value,
    existing: &[Value],
    is_create: bool,
) -> Result<(), String> {
    if !global_default(class) {
        return Ok(());
    }
    let value = |c: &Value| get(c, &["value"]).and_then(Value::as_i64).unwrap_or(0);
    let Some(default) = existing
        .iter()
        .filter(|c| global_default(c))
        .min_by_key(|c| value(c))
    else {
        return Ok(());
    };
    let default_name = get_str(default, &["metadata", "name"]).unwrap_or("");
    let name = get_str(class, &["metadata", "name"]).unwrap_or("");
    if is_create || default_name != name {
        return Err(format!(
            "PriorityClass {default_name} is already marked as default. Only one default can exist"
        ));
    }
    Ok(())
}

/// The strategy of PriorityClasses.
pub(crate) fn strategy(info: &'static ResourceInfo) -> HookedStrategy {
    HookedStrategy::new(
        GenericStrategy::new(info),
        Hooks {
            default: default_priority_class,
            validate,
            validate_update,
            ..Hooks::NONE
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Strategy;
    use rkcm_apimachinery::catalog;

    fn s() -> HookedStrategy {
        strategy(catalog::by_kind("scheduling.k8s.io/v1", "PriorityClass").expect("served"))
    }

    fn messages(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(FieldError::message_with_field).collect()
    }

    fn class(name: &str, value: i64) -> Value {
        json!({"metadata": {"name": name}, "value": value})
    }

    #[test]
    fn preemption_policy_defaults_to_preempt_lower_priority() {
        let mut pc = class("tier1", 100);
        s().default(&mut pc);
        assert_eq!(pc["preemptionPolicy"], "PreemptLowerPriority");
        let mut never = class("tier1", 100);
        never["preemptionPolicy"] = json!("Never");
        s().default(&mut never);
        assert_eq!(never["preemptionPolicy"], "Never");
    }

    /// `TestValidatePriorityClass`.
    #[test]
    fn validation_follows_kubes_cases() {
        let mut good = class("tier1", 100);
        good["description"] = json!("Used for some critical pods.");
        assert!(s().validate_create(&good).is_empty());
        for sys in system_priority_classes() {
            assert!(s().validate_create(&sys).is_empty(), "{sys}");
        }
        let errs = s().validate_create(&class("", 100));
        assert_eq!(errs[0].field, "metadata.name");
        let errs = s().validate_create(&class("tier&1", 100));
        assert_eq!(errs[0].field, "metadata.name");
        let errs = s().validate_create(&class("system-something", 2_000_000_000));
        assert_eq!(
            messages(&errs),
            ["metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: system-something is not a known system priority class"]
        );
        let errs = s().validate_create(&class("system-node-critical", 2_000_000_000));
        assert_eq!(
            messages(&errs),
            ["metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: value of system-node-critical PriorityClass must be 2000001000"]
        );
        let mut defaulted = class("system-cluster-critical", 2_000_000_000);
        defaulted["globalDefault"] = json!(true);
        assert!(messages(&s().validate_create(&defaulted))[0].ends_with(
            "error: globalDefault of system-cluster-critical PriorityClass must be false"
        ));
        let errs = s().validate_create(&class("tier1", HIGHEST_USER_DEFINABLE_PRIORITY + 1));
        assert_eq!(
            messages(&errs),
            ["value: Forbidden: maximum allowed value of a user defined priority is 1000000000"]
        );
        let mut bad_policy = class("tier1", 1);
        bad_policy["preemptionPolicy"] = json!("Sometimes");
        assert_eq!(
            messages(&s().validate_create(&bad_policy)),
            ["preemptionPolicy: Unsupported value: \"Sometimes\": supported values: \"PreemptLowerPriority\", \"Never\""]
        );
        bad_policy["preemptionPolicy"] = json!("");
        assert_eq!(
            messages(&s().validate_create(&bad_policy)),
            ["preemptionPolicy: Required value"]
        );
    }

    /// `TestValidatePriorityClassUpdate`.
    #[test]
    fn value_and_preemption_policy_are_immutable() {
        let mut old = class("tier1", 100);
        old["metadata"]["resourceVersion"] = json!("1");
        s().default(&mut old);
        let mut described = old.clone();
        described["description"] = json!("new");
        described["globalDefault"] = json!(true);
        assert!(s().validate_update(&described, &old).is_empty());
        let mut revalued = old.clone();
        revalued["value"] = json!(101);
        assert_eq!(
            messages(&s().validate_update(&revalued, &old)),
            ["value: Forbidden: may not be changed in an update."]
        );
        let mut repolicied = old.clone();
        repolicied["preemptionPolicy"] = json!("Never");
        assert_eq!(
            messages(&s().validate_update(&repolicied, &old)),
            ["preemptionPolicy: Invalid value: \"Never\": field is immutable"]
        );
    }

    #[test]
    fn the_system_classes_are_kubes() {
        let classes = system_priority_classes();
        let summary: Vec<(&str, i64)> = classes
            .iter()
            .map(|c| {
                (
                    c["metadata"]["name"].as_str().unwrap_or(""),
                    c["value"].as_i64().unwrap_or(0),
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                ("system-node-critical", 2_000_001_000),
                ("system-cluster-critical", 2_000_000_000)
            ]
        );
        assert_eq!(
            classes[1]["description"],
            "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary."
        );
        assert_eq!(classes[0]["preemptionPolicy"], "PreemptLowerPriority");
        let _: k8s_openapi::api::scheduling::v1::PriorityClass =
            serde_json::from_value(classes[0].clone()).expect("decodes");
    }

    #[test]
    fn only_one_class_may_be_the_global_default() {
        let mut a = class("a", 1);
        a["globalDefault"] = json!(true);
        let mut b = class("b", 2);
        b["globalDefault"] = json!(true);
        assert_eq!(
            check_single_global_default(&a, &[class("c", 3)], true),
            Ok(())
        );
        assert_eq!(check_single_global_default(&a, &[a.clone()], false), Ok(()));
        let refused = Err(
            "PriorityClass a is already marked as default. Only one default can exist".to_string(),
        );
        assert_eq!(check_single_global_default(&b, &[a.clone()], true), refused);
        assert_eq!(
            check_single_global_default(&b, &[a.clone(), b.clone()], false),
            refused
        );
        assert_eq!(
            check_single_global_default(&class("d", 1), &[a], true),
            Ok(())
        );
    }
}
