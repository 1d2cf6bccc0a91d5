//! The defaults every workload kind applies: `spec.replicas` and the embedded pod template.

use serde_json::{json, Value};

use crate::object::{get, set};
use crate::podspec::default_pod_template;

/// Applies the pod template defaults to `spec.template` (`SetDefaults_PodSpec` runs on
/// every embedded pod template, and Go's encoder writes its empty value structs).
pub(crate) fn default_template(obj: &mut Value) {
    if let Some(template) = obj
        .pointer_mut("/spec/template")
        .and_then(Value::as_object_mut)
    {
        default_pod_template(template);
    }
}

/// Defaults `spec.replicas` to 1.
pub(crate) fn default_replicas(obj: &mut Value) {
    if get(obj, &["spec", "replicas"]).is_none_or(Value::is_null) {
        set(obj, &["spec", "replicas"], Some(json!(1)));
    }
}
