//! `Priority`: a new pod's `priority` and `preemptionPolicy` come from its PriorityClass (or the
//! global default class), and at most one class is the global default.
//!
//! Mirrors `plugin/pkg/admission/priority/admission.go` (kube 1.33: the built-in
//! `system-node-critical` and `system-cluster-critical` classes are stored objects like any
//! other and may be used in every namespace; limiting them is left to ResourceQuota's
//! configuration, as on kube).

use async_trait::async_trait;
use serde_json::{json, Value};

use super::plugins::PRIORITY;
use rkcm_registry::priorityclasses::check_single_global_default;
use rkcm_server::admission::attributes::{forbidden, Attributes, Operation};
use rkcm_server::admission::plugin::Plugin;
use rkcm_server::error::ApiResult;
use rkcm_server::rest;
use rkcm_storage::store::Store;

/// Priority of pods without a class when no class is the global default
/// (`DefaultPriorityWhenNoDefaultClassExists`).
pub const DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS_EXISTS: i64 = 0;
/// `preemptionPolicy` of pods without a class when no class is the global default.
pub const PREEMPT_LOWER_PRIORITY: &str = "PreemptLowerPriority";

/// The plugin.
pub struct Priority {
    store: Store,
}

impl Priority {
    /// The plugin, reading PriorityClasses from `store`.
    pub fn new(store: Store) -> Self {
        Self { store }
    }

    fn classes(&self) -> Vec<Value> {
        let (stored, _, _) =
            self.store
                .cache()
                .list(&rest::prefix(priority_classes(), None), None, 0, &|_| true);
        stored.iter().map(|c| c.value()).collect()
    }

    fn class(&self, name: &str) -> Option<Value> {
        self.store
            .get(&rest::key(priority_classes(), None, name))
            .map(|c| c.value())
    }
}

fn priority_classes() -> &'static rkcm_apimachinery::catalog::ResourceInfo {
    rkcm_apimachinery::catalog::by_kind("scheduling.k8s.io/v1", "PriorityClass")
        .expect("priority classes are in the catalog")
}

/// What a class gives its pods: name (empty for the built-in default), value and preemption
/// policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    /// The class name the pod gets (`""` when no class is the default).
    pub class_name: String,
    /// `spec.priority`.
    pub priority: i64,
    /// `spec.preemptionPolicy`, when the class has one.
    pub preemption_policy: Option<String>,
}

fn resolved(class: &Value) -> Resolved {
    Resolved {
        class_name: rkcm_storage::object::name(class).to_string(),
        priority: class.get("value").and_then(Value::as_i64).unwrap_or(0),
        preemption_policy: class
            .get("preemptionPolicy")
            .and_then(Value::as_str)
            .map(str::to_string),
    }
}

/// `getDefaultPriority`: the global default class of lowest value, else priority 0 with
/// `PreemptLowerPriority`.
pub fn default_priority(classes: &[Value]) -> Resolved {
    let value = |c: &Value| c.get("value").and_then(Value::as_i64).unwrap_or(0);
    classes
        .iter()
        .filter(|c| c.get("globalDefault").and_then(Value::as_bool) == Some(true))
        .min_by_key(|c| value(c))
        .map(resolved)
        .unwrap_or_else(|| Resolved {
            class_name: String::new(),
            priority: DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS_EXISTS,
            preemption_policy: Some(PREEMPT_LOWER_PRIORITY.to_string()),
        })
}

/// Sets `resolved` on a new pod, or says why the pod is refused: a `priority` or
/// `preemptionPolicy` of its own that differs from the class's.
pub fn apply_to_new_pod(pod: &mut Value, resolved: &Resolved) -> Result<(), String> {
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return Ok(());
    };
    if let Some(given) = spec.get("priority").and_then(Value::as_i64) {
        if given != resolved.priority {
            return Err(format!(
                "the integer value of priority ({given}) must not be provided in pod spec; priority admission controller computed {} from the given PriorityClass name",
                resolved.priority
            ));
        }
    }
    if let Some(policy) = &resolved.preemption_policy {
        if let Some(given) = spec.get("preemptionPolicy").and_then(Value::as_str) {
            if given != policy {
                return Err(format!(
                    "the string value of PreemptionPolicy ({given}) must not be provided in pod spec; priority admission controller computed {policy} from the given PriorityClass name"
                ));
            }
        }
        spec.insert("preemptionPolicy".into(), json!(policy));
    }
    spec.insert("priority".into(), json!(resolved.priority));
    if spec
        .get("priorityClassName")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        if resolved.class_name.is_empty() {
            spec.remove("priorityClassName");
        } else {
            spec.insert("priorityClassName".into(), json!(resolved.class_name));
        }
    }
    Ok(())
}

/// On update the pod keeps the priority and preemption policy it was given at creation when
/// the new object leaves them out.
pub fn keep_on_update(pod: &mut Value, old: &Value) {
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    for field in ["priority", "preemptionPolicy"] {
        if spec.get(field).is_none_or(Value::is_null) {
            if let Some(v) = old
                .pointer(&format!("/spec/{field}"))
                .filter(|v| !v.is_null())
            {
                spec.insert(field.into(), v.clone());
            }
        }
    }
}

#[async_trait]
impl Plugin for Priority {
    fn name(&self) -> &'static str {
        PRIORITY
    }

    fn handles(&self, operation: Operation) -> bool {
        matches!(
            operation,
            Operation::Create | Operation::Update | Operation::Delete
        )
    }

    async fn admit(&self, attrs: &mut Attributes) -> ApiResult<()> {
        if !attrs.is_core_resource("pods") {
            return Ok(());
        }
        match attrs.operation {
            Operation::Update => {
                let old = attrs.old_object().cloned().unwrap_or(Value::Null);
                if let Some(pod) = attrs.object_mut() {
                    keep_on_update(pod, &old);
                }
                Ok(())
            }
            Operation::Create => {
                let Some(pod) = attrs.object() else {
                    return Ok(());
                };
                let class_name = pod
                    .pointer("/spec/priorityClassName")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                let resolved = if class_name.is_empty() {
                    default_priority(&self.classes())
                } else {
                    match self.class(&class_name) {
                        Some(class) => resolved(&class),
                        None => {
                            return Err(forbidden(
                                attrs,
                                &format!("no PriorityClass with name {class_name} was found"),
                            ))
                        }
                    }
                };
                let mut pod = attrs.object().cloned().unwrap_or(Value::Null);
                apply_to_new_pod(&mut pod, &resolved).map_err(|why| forbidden(attrs, &why))?;
                if let Some(obj) = attrs.object_mut() {
                    *obj = pod;
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    async fn validate(&self, attrs: &Attributes) -> ApiResult<()> {
        let is_class = attrs.resource.group == "scheduling.k8s.io"
            && attrs.resource.plural == "priorityclasses"
            && attrs.subresource.is_empty();
        if !is_class || !matches!(attrs.operation, Operation::Create | Operation::Update) {
            return Ok(());
        }
        let Some(class) = attrs.object() else {
            return Ok(());
        };
        check_single_global_default(class, &self.classes(), attrs.operation == Operation::Create)
            .map_err(|why| forbidden(attrs, &why))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::testing::{attributes, store_with};
    use std::sync::Arc;

    fn class(name: &str, value: i64, global_default: bool, policy: Option<&str>) -> Value {
        let mut c = json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": name}, "value": value, "globalDefault": global_default});
        if let Some(p) = policy {
            c["preemptionPolicy"] = json!(p);
        }
        c
    }

    fn pod(spec: Value) -> Value {
        let mut spec = spec;
        spec["containers"] = json!([{"name": "c", "image": "i"}]);
        json!({"metadata": {"name": "p", "namespace": "ns"}, "spec": spec})
    }

    async fn admit(classes: &[Value], pod: Value) -> ApiResult<Value> {
        let plugin = Priority::new(store_with(classes).await);
        let mut attrs = attributes(Operation::Create, "Pod", "ns", Some(pod), None);
        plugin.admit(&mut attrs).await?;
        Ok(attrs.into_object().expect("pod"))
    }

    #[tokio::test]
    async fn pods_without_a_class_get_zero_or_the_global_default() {
        let out = admit(&[], pod(json!({}))).await.expect("admitted");
        assert_eq!(out["spec"]["priority"], 0);
        assert_eq!(out["spec"]["preemptionPolicy"], "PreemptLowerPriority");
        assert!(out["spec"].get("priorityClassName").is_none());
        let classes = [
            class("high", 1000, true, Some("Never")),
            class("low", 100, true, Some("Never")),
            class("other", 5, false, None),
        ];
        let out = admit(&classes, pod(json!({}))).await.expect("admitted");
        assert_eq!(
            out["spec"]["priority"], 100,
            "the default of lowest value wins"
        );
        assert_eq!(out["spec"]["priorityClassName"], "low");
        assert_eq!(out["spec"]["preemptionPolicy"], "Never");
    }

    #[tokio::test]
    async fn a_named_class_gives_its_value_and_policy() {
        let classes = [class(
            "system-cluster-critical",
            2_000_000_000,
            false,
            Some("PreemptLowerPriority"),
        )];
        let out = admit(
            &classes,
            pod(json!({"priorityClassName": "system-cluster-critical"})),
        )
        .await
        .expect("admitted");
        assert_eq!(out["spec"]["priority"], 2_000_000_000);
        let err = admit(&classes, pod(json!({"priorityClassName": "nope"})))
            .await
            .expect_err("unknown class");
        assert_eq!(err.code, 403);
        assert_eq!(
            err.message,
            "pods \"p\" is forbidden: no PriorityClass with name nope was found"
        );
    }

    #[tokio::test]
    async fn a_priority_or_policy_given_in_the_pod_must_match_the_class() {
        let classes = [class("tier", 10, false, Some("Never"))];
        admit(
            &classes,
            pod(json!({"priorityClassName": "tier", "priority": 10, "preemptionPolicy": "Never"})),
        )
        .await
        .expect("same values");
        let err = admit(
            &classes,
            pod(json!({"priorityClassName": "tier", "priority": 11})),
        )
        .await
        .expect_err("other priority");
        assert_eq!(
            err.message,
            "pods \"p\" is forbidden: the integer value of priority (11) must not be provided in pod spec; priority admission controller computed 10 from the given PriorityClass name"
        );
        let err = admit(
            &classes,
            pod(json!({"priorityClassName": "tier", "preemptionPolicy": "PreemptLowerPriority"})),
        )
        .await
        .expect_err("other policy");
        assert_eq!(
            err.message,
            "pods \"p\" is forbidden: the string value of PreemptionPolicy (PreemptLowerPriority) must not be provided in pod spec; priority admission controller computed Never from the given PriorityClass name"
        );
    }

    #[tokio::test]
    async fn updates_keep_the_priority_given_at_creation() {
        let plugin = Priority::new(store_with(&[]).await);
        let old = pod(json!({"priority": 7, "preemptionPolicy": "Never"}));
        let mut attrs = attributes(
            Operation::Update,
            "Pod",
            "ns",
            Some(pod(json!({}))),
            Some(old),
        );
        plugin.admit(&mut attrs).await.expect("admitted");
        let out = attrs.into_object().expect("pod");
        assert_eq!(out["spec"]["priority"], 7);
        assert_eq!(out["spec"]["preemptionPolicy"], "Never");
    }

    #[tokio::test]
    async fn only_one_class_may_be_the_global_default() {
        let plugin = Priority::new(store_with(&[class("first", 1, true, None)]).await);
        let info = priority_classes();
        let attrs = |op, obj: Value| {
            Attributes::new(
                op,
                info,
                "",
                None,
                rkcm_storage::object::name(&obj),
                Some(obj.clone()),
                None,
                Arc::new(crate::auth::UserInfo::default()),
                false,
            )
        };
        let err = plugin
            .validate(&attrs(Operation::Create, class("second", 2, true, None)))
            .await
            .expect_err("second default");
        assert_eq!(err.code, 403);
        assert_eq!(
            err.message,
            "priorityclasses.scheduling.k8s.io \"second\" is forbidden: PriorityClass first is already marked as default. Only one default can exist"
        );
        plugin
            .validate(&attrs(Operation::Create, class("plain", 2, false, None)))
            .await
            .expect("not a default");
        plugin
            .validate(&attrs(Operation::Update, class("first", 1, true, None)))
            .await
            .expect("the default may stay the default");
    }
}
