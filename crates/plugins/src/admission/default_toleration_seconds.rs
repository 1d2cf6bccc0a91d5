//! `DefaultTolerationSeconds`: pods tolerate the not-ready and unreachable `NoExecute` node
//! taints for a while (300 s unless the flags say otherwise) unless they say how long
//! themselves.
//!
//! Mirrors `plugin/pkg/admission/defaulttolerationseconds/admission.go`.

use async_trait::async_trait;
use serde_json::{json, Value};

use super::plugins::DEFAULT_TOLERATION_SECONDS;
use rkcm_server::admission::attributes::{Attributes, Operation};
use rkcm_server::admission::plugin::Plugin;
use rkcm_server::error::ApiResult;

/// The taint of nodes whose Ready condition is False (`TaintNodeNotReady`).
pub const TAINT_NODE_NOT_READY: &str = "node.kubernetes.io/not-ready";
/// The taint of nodes whose Ready condition is Unknown (`TaintNodeUnreachable`).
pub const TAINT_NODE_UNREACHABLE: &str = "node.kubernetes.io/unreachable";

/// The plugin, with `--default-not-ready-toleration-seconds` and
/// `--default-unreachable-toleration-seconds`.
pub struct DefaultTolerationSeconds {
    not_ready_seconds: i64,
    unreachable_seconds: i64,
}

impl DefaultTolerationSeconds {
    /// The plugin adding tolerations of these durations.
    pub fn new(not_ready_seconds: i64, unreachable_seconds: i64) -> Self {
        Self {
            not_ready_seconds,
            unreachable_seconds,
        }
    }
}

/// Whether toleration `t` tolerates the `NoExecute` taint `key` (an empty key or effect
/// matches any).
fn tolerates(t: &Value, key: &str) -> bool {
    let k = t.get("key").and_then(Value::as_str).unwrap_or_default();
    let effect = t.get("effect").and_then(Value::as_str).unwrap_or_default();
    (k == key || k.is_empty()) && (effect == "NoExecute" || effect.is_empty())
}

/// Adds to `pod` the tolerations of the two taints it does not tolerate yet.
pub fn add_default_tolerations(pod: &mut Value, not_ready_seconds: i64, unreachable_seconds: i64) {
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let tolerations = spec.entry("tolerations").or_insert_with(|| json!([]));
    if !tolerations.is_array() {
        *tolerations = json!([]);
    }
    let Some(list) = tolerations.as_array_mut() else {
        return;
    };
    let missing: Vec<(&str, i64)> = [
        (TAINT_NODE_NOT_READY, not_ready_seconds),
        (TAINT_NODE_UNREACHABLE, unreachable_seconds),
    ]
    .into_iter()
    .filter(|(key, _)| !list.iter().any(|t| tolerates(t, key)))
    .collect();
    for (key, seconds) in missing {
        list.push(json!({
            "key": key,
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": seconds,
        }));
    }
}

#[async_trait]
impl Plugin for DefaultTolerationSeconds {
    fn name(&self) -> &'static str {
        DEFAULT_TOLERATION_SECONDS
    }

    fn handles(&self, operation: Operation) -> bool {
        matches!(operation, Operation::Create | Operation::Update)
    }

    async fn admit(&self, attrs: &mut Attributes) -> ApiResult<()> {
        if !attrs.is_core_resource("pods") {
            return Ok(());
        }
        if let Some(pod) = attrs.object_mut() {
            add_default_tolerations(pod, self.not_ready_seconds, self.unreachable_seconds);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::testing::attributes;

    fn pod(tolerations: Value) -> Value {
        json!({"metadata": {"name": "p"}, "spec": {"containers": [], "tolerations": tolerations}})
    }

    fn not_ready(seconds: i64) -> Value {
        json!({"key": TAINT_NODE_NOT_READY, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": seconds})
    }

    fn unreachable(seconds: i64) -> Value {
        json!({"key": TAINT_NODE_UNREACHABLE, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": seconds})
    }

    async fn admit(plugin: &DefaultTolerationSeconds, pod: Value) -> Value {
        let mut attrs = attributes(Operation::Create, "Pod", "ns", Some(pod), None);
        plugin.admit(&mut attrs).await.expect("admitted");
        attrs.into_object().expect("pod")["spec"]["tolerations"].clone()
    }

    #[tokio::test]
    async fn cases_of_kubes_admission_test() {
        let plugin = DefaultTolerationSeconds::new(300, 300);
        let other =
            json!({"key": "foo", "operator": "Equal", "value": "bar", "effect": "NoSchedule"});
        let cases = [
            (
                "no tolerations: both added",
                json!([]),
                json!([not_ready(300), unreachable(300)]),
            ),
            (
                "other tolerations kept",
                json!([other]),
                json!([other, not_ready(300), unreachable(300)]),
            ),
            (
                "not-ready given: only unreachable added",
                json!([not_ready(60)]),
                json!([not_ready(60), unreachable(300)]),
            ),
            (
                "unreachable given: only not-ready added",
                json!([unreachable(60)]),
                json!([unreachable(60), not_ready(300)]),
            ),
            (
                "both given: nothing added",
                json!([not_ready(60), unreachable(60)]),
                json!([not_ready(60), unreachable(60)]),
            ),
            (
                "a NoSchedule not-ready toleration does not count",
                json!([{"key": TAINT_NODE_NOT_READY, "operator": "Exists", "effect": "NoSchedule"}]),
                json!([{"key": TAINT_NODE_NOT_READY, "operator": "Exists", "effect": "NoSchedule"}, not_ready(300), unreachable(300)]),
            ),
            (
                "an empty effect tolerates NoExecute",
                json!([{"key": TAINT_NODE_UNREACHABLE, "operator": "Exists"}]),
                json!([{"key": TAINT_NODE_UNREACHABLE, "operator": "Exists"}, not_ready(300)]),
            ),
            (
                "tolerating everything",
                json!([{"operator": "Exists"}]),
                json!([{"operator": "Exists"}]),
            ),
        ];
        for (what, given, want) in cases {
            assert_eq!(admit(&plugin, pod(given)).await, want, "{what}");
        }
    }

    #[tokio::test]
    async fn the_flags_set_the_seconds() {
        let plugin = DefaultTolerationSeconds::new(60, 120);
        assert_eq!(
            admit(&plugin, pod(json!([]))).await,
            json!([not_ready(60), unreachable(120)])
        );
    }

    #[tokio::test]
    async fn only_pods_themselves_are_admitted() {
        let plugin = DefaultTolerationSeconds::new(300, 300);
        let mut cm = attributes(
            Operation::Create,
            "ConfigMap",
            "ns",
            Some(json!({"metadata": {"name": "c"}})),
            None,
        );
        plugin.admit(&mut cm).await.expect("ignored");
        assert!(cm.object().expect("cm").get("spec").is_none());
    }
}
