//! The defaults every workload kind applies: `spec.replicas` and the embedded pod template.

use serde_json::{json, Value};

use crate::registry::object::{get, object_mut, set};
use crate::registry::podspec::default_pod_spec;

/// Applies the pod spec defaults to `spec.template.spec` (`SetDefaults_PodSpec` runs on
/// every embedded pod template).
pub(crate) fn default_template(obj: &mut Value) {
    if get(obj, &["spec", "template"]).is_some_and(Value::is_object) {
        if let Some(spec) = object_mut(obj, &["spec", "template", "spec"]) {
            default_pod_spec(spec);
        }
    }
}

/// Defaults `spec.replicas` to 1.
pub(crate) fn default_replicas(obj: &mut Value) {
    if get(obj, &["spec", "replicas"]).is_none_or(Value::is_null) {
        set(obj, &["spec", "replicas"], Some(json!(1)));
    }
}
