//! PodTemplates: the template is defaulted and validated as a pod template
//! (`ValidatePodTemplate`), and `metadata.generation` follows changes of `template`.
//!
//! Mirrors `pkg/registry/core/podtemplate/strategy.go`.

use rkcm_apimachinery::catalog::ResourceInfo;
use serde_json::{Map, Value};

use super::generation::bump_if_changed;
use super::generic::GenericStrategy;
use super::hooked::{nothing_on_update, HookedStrategy, Hooks};
use super::object::{get, object_mut, set};
use super::podspec::{default_pod_spec, validate_pod_template};
use super::FieldError;

/// `SetDefaults_PodSpec` and friends on `template.spec`, when there is a template.
fn default_template(obj: &mut Value) {
    if get(obj, &["template"]).is_some_and(Value::is_object) {
        if let Some(spec) = object_mut(obj, &["template", "spec"]) {
            default_pod_spec(spec);
        }
    }
}

fn prepare_create(obj: &mut Value) {
    set(obj, &["metadata", "generation"], Some(Value::from(1)));
}

fn prepare_update(new: &mut Value, old: &Value) {
    // Any change of the template increments the generation.
    bump_if_changed(new, old, &["template"]);
}

/// `ValidatePodTemplateSpec` of `template`: the template is a value in kube, never absent, so
/// an absent one is validated as empty.
fn validate(obj: &Value) -> Vec<FieldError> {
    let empty = Value::Object(Map::new());
    let template = get(obj, &["template"])
        .filter(|t| !t.is_null())
        .unwrap_or(&empty);
    validate_pod_template(Some(template), "template")
}

fn validate_update(new: &Value, _old: &Value) -> Vec<FieldError> {
    validate(new)
}

static HOOKS: Hooks = Hooks {
    default: default_template,
    prepare_create,
    prepare_update,
    prepare_status_update: nothing_on_update,
    validate,
    validate_update,
    fields: &[],
};

/// The strategy of pod templates.
pub(crate) fn strategy(info: &'static ResourceInfo) -> HookedStrategy {
    HookedStrategy::new(GenericStrategy::new(info), HOOKS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Strategy;
    use rkcm_apimachinery::catalog;
    use serde_json::json;

    fn s() -> HookedStrategy {
        strategy(catalog::by_kind("v1", "PodTemplate").expect("served"))
    }

    fn template() -> Value {
        json!({"metadata": {"name": "t", "namespace": "default"},
            "template": {"metadata": {"labels": {"a": "b"}},
                "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}}})
    }

    #[test]
    fn the_template_gets_pod_spec_defaults() {
        let mut obj = template();
        s().default(&mut obj);
        let spec = &obj["template"]["spec"];
        assert_eq!(spec["restartPolicy"], "Always");
        assert_eq!(spec["dnsPolicy"], "ClusterFirst");
        assert_eq!(spec["terminationGracePeriodSeconds"], 30);
        assert_eq!(
            spec["containers"][0]["terminationMessagePath"],
            "/dev/termination-log"
        );
        assert_eq!(spec["containers"][0]["imagePullPolicy"], "IfNotPresent");
        assert!(s().validate_create(&obj).is_empty());
    }

    #[test]
    fn templates_are_validated_with_kube_paths() {
        let mut obj = template();
        obj["template"]["metadata"]["labels"] = json!({"bad key": "x"});
        s().default(&mut obj);
        assert_eq!(s().validate_create(&obj)[0].field, "template.labels");
        let mut none = json!({"metadata": {"name": "t", "namespace": "default"}});
        s().default(&mut none);
        let errs: Vec<String> = s()
            .validate_create(&none)
            .iter()
            .map(FieldError::message_with_field)
            .collect();
        assert!(
            errs.iter()
                .any(|e| e.starts_with("template.spec.containers: Required value")),
            "{errs:?}"
        );
    }

    #[test]
    fn generation_starts_at_one_and_follows_the_template() {
        let mut obj = template();
        s().default(&mut obj);
        s().prepare_for_create(&mut obj);
        assert_eq!(obj["metadata"]["generation"], 1);
        let mut labelled = obj.clone();
        labelled["metadata"]["labels"] = json!({"x": "y"});
        s().prepare_for_update(&mut labelled, &obj);
        assert_eq!(labelled["metadata"]["generation"], 1);
        let mut changed = obj.clone();
        changed["template"]["spec"]["containers"][0]["image"] = json!("nginx:1.26");
        s().prepare_for_update(&mut changed, &obj);
        assert_eq!(changed["metadata"]["generation"], 2);
    }
}
