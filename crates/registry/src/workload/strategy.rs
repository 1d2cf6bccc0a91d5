//! The strategy of every workload kind, driven by the kind's [`Workload`] entry.
//!
//! Mirrors what the `strategy.go` files of `pkg/registry/apps/{deployment,replicaset}` and
//! `pkg/registry/core/replicationcontroller` have in common: generation tracking, status kept
//! out of spec writes and spec out of status writes, defaults on every decoded body, and
//! `/scale`.

use rkcm_apimachinery::catalog::ResourceInfo;
use serde_json::{json, Value};

use super::scale::{scale_of, set_replicas, SelectorForm};
use super::validation::validate_replica_status;
use crate::generation::bump_if_changed;
use crate::generic::GenericStrategy;
use crate::meta::{self, validate_immutable, NameValidator};
use crate::object::{copy, get, get_i64, semantically_equal, set};
use crate::simple::{
    no_checks, no_defaults, no_update_checks, DefaultFn, ValidateFn, ValidateUpdateFn,
};
use crate::{FieldError, GracefulDelete, Strategy};

/// `drop<Kind>DisabledFields(new, old)`.
pub(crate) type DropDisabledFn = fn(&mut Value, Option<&Value>);

/// A kind none of whose fields are behind a disabled feature gate.
fn no_disabled_fields(_new: &mut Value, _old: Option<&Value>) {}

/// What one workload kind does its own way; each kind's file holds one as a `const`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Workload {
    /// `SetDefaults_<Kind>`, applied to every decoded body (status updates included).
    pub default: DefaultFn,
    /// `Validate<Kind>Spec`, on create and on every update.
    pub validate_spec: ValidateFn,
    /// Update checks of the kind beyond its spec and replica counts (`collisionCount`, ...).
    pub validate_update: ValidateUpdateFn,
    /// Whether `spec.selector` may not change (apps/v1 kinds).
    pub immutable_selector: bool,
    /// How `spec.selector` is written, for `/scale`.
    pub selector: SelectorForm,
    /// Status counters that may not be negative.
    pub status_counters: &'static [&'static str],
    /// Status counters that may not exceed `status.replicas`.
    pub status_bounded: &'static [&'static str],
    /// The status counters a new object shows as `0` (those without omitempty in the kind's Go
    /// status type, e.g. `replicas`); a new status is `{}` when there are none.
    pub initial_status: &'static [&'static str],
    /// The detail kube gives when `status.availableReplicas` exceeds `status.readyReplicas`.
    pub available_over_ready: &'static str,
    /// How `metadata.name` and `generateName` are validated.
    pub name: NameValidator,
    /// `drop<Kind>DisabledFields`: clears fields of disabled features from a new object, given
    /// the old one on update (a field already in use is kept).
    pub drop_disabled: DropDisabledFn,
    /// Whether changing annotations is a new generation too (deployments copy their
    /// annotations to their replica sets).
    pub generation_follows_annotations: bool,
    /// Whether a status update keeps the old labels (the deployment status strategy).
    pub status_keeps_labels: bool,
    /// Whether the kind's status has `terminatingReplicas`, which the feature gate
    /// `DeploymentReplicaSetTerminatingReplicas` (alpha, off in 1.33) drops from status updates.
    pub gated_terminating_replicas: bool,
    /// Whether `status.replicas` is a field selector.
    pub status_replicas_selectable: bool,
    /// Whether dependents are orphaned when a DELETE names no propagation policy (core/v1
    /// kinds keep this for backwards compatibility).
    pub orphans_dependents: bool,
}

impl Workload {
    /// A workload that does nothing of its own; kinds name what differs and take the rest from
    /// here (`Workload { validate_spec, ..Workload::BASE }`).
    pub(crate) const BASE: Workload = Workload {
        default: no_defaults,
        validate_spec: no_checks,
        validate_update: no_update_checks,
        immutable_selector: false,
        selector: SelectorForm::LabelSelector,
        status_counters: &["replicas", "observedGeneration"],
        status_bounded: &[],
        initial_status: &[],
        available_over_ready: "cannot be greater than readyReplicas",
        name: meta::name_is_dns_subdomain,
        drop_disabled: no_disabled_fields,
        generation_follows_annotations: false,
        status_keeps_labels: false,
        gated_terminating_replicas: false,
        status_replicas_selectable: false,
        orphans_dependents: false,
    };
}

/// The strategy of a workload kind: the generic strategy with generation tracking, plus what
/// its [`Workload`] entry says.
pub(crate) struct WorkloadStrategy {
    base: GenericStrategy,
    kind: &'static Workload,
}

impl WorkloadStrategy {
    /// The strategy of `info`, a kind described by `kind`.
    pub(crate) fn new(info: &'static ResourceInfo, kind: &'static Workload) -> Self {
        let base = GenericStrategy::new(info)
            .with_name_validator(kind.name)
            .tracking_generation();
        let base = if kind.orphans_dependents {
            base.orphaning_dependents()
        } else {
            base
        };
        WorkloadStrategy { base, kind }
    }
}

/// `dropDisabledStatusFields`: a status update may only keep `status.terminatingReplicas`
/// when the old status already had it.
fn drop_terminating_replicas(new: &mut Value, old: &Value) {
    if get(old, &["status", "terminatingReplicas"]).is_none_or(Value::is_null) {
        set(new, &["status", "terminatingReplicas"], None);
    }
}

impl Strategy for WorkloadStrategy {
    fn resource(&self) -> &'static ResourceInfo {
        self.base.resource()
    }

    fn default(&self, obj: &mut Value) {
        (self.kind.default)(obj);
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        self.base.prepare_for_create(obj);
        (self.kind.drop_disabled)(obj, None);
        if !self.kind.initial_status.is_empty() {
            let zeroes = self
                .kind
                .initial_status
                .iter()
                .map(|c| (c.to_string(), json!(0)))
                .collect();
            set(obj, &["status"], Some(Value::Object(zeroes)));
        }
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        (self.kind.drop_disabled)(new, Some(old));
        // Status kept, generation bumped on a spec change.
        self.base.prepare_for_update(new, old);
        let spec_unchanged = semantically_equal(get(new, &["spec"]), get(old, &["spec"]));
        if self.kind.generation_follows_annotations && spec_unchanged {
            bump_if_changed(new, old, &["metadata", "annotations"]);
        }
    }

    fn prepare_for_status_update(&self, new: &mut Value, old: &Value) {
        // kube defaults every decoded body, status updates included.
        self.default(new);
        self.base.prepare_for_status_update(new, old);
        if self.kind.status_keeps_labels {
            copy(new, old, &["metadata", "labels"]);
        }
        if self.kind.gated_terminating_replicas {
            drop_terminating_replicas(new, old);
        }
    }

    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = self.base.validate_create(obj);
        errs.extend((self.kind.validate_spec)(obj));
        errs
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = self.base.validate_update(new, old);
        errs.extend((self.kind.validate_spec)(new));
        if self.kind.immutable_selector {
            errs.extend(validate_immutable(
                get(new, &["spec", "selector"]),
                get(old, &["spec", "selector"]),
                "spec.selector",
            ));
        }
        errs.extend(validate_replica_status(
            new,
            self.kind.status_counters,
            self.kind.status_bounded,
            self.kind.available_over_ready,
        ));
        errs.extend((self.kind.validate_update)(new, old));
        errs
    }

    fn field_value(&self, obj: &Value, field: &str) -> Option<String> {
        match field {
            "status.replicas" if self.kind.status_replicas_selectable => Some(
                get_i64(obj, &["status", "replicas"])
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
        Some(scale_of(obj, self.kind.selector))
    }

    fn set_scale_replicas(&self, obj: &mut Value, replicas: i32) -> Result<(), FieldError> {
        set_replicas(obj, replicas)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rkcm_apimachinery::catalog;

    const PLAIN: Workload = Workload::BASE;
    const FOLLOWS_ANNOTATIONS: Workload = Workload {
        generation_follows_annotations: true,
        status_keeps_labels: true,
        immutable_selector: true,
        ..PLAIN
    };

    fn strategy(kind: &'static Workload) -> WorkloadStrategy {
        WorkloadStrategy::new(
            catalog::by_kind("apps/v1", "ReplicaSet").expect("served"),
            kind,
        )
    }

    fn object() -> Value {
        json!({"metadata": {"name": "w", "namespace": "default", "generation": 1, "labels": {"a": "b"}},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"a": "b"}}}, "status": {"replicas": 1}})
    }

    #[test]
    fn annotations_bump_the_generation_only_where_the_kind_says_so() {
        let old = object();
        let mut annotated = old.clone();
        annotated["metadata"]["annotations"] = json!({"x": "y"});
        let mut plain = annotated.clone();
        strategy(&PLAIN).prepare_for_update(&mut plain, &old);
        assert_eq!(plain["metadata"]["generation"], 1);
        strategy(&FOLLOWS_ANNOTATIONS).prepare_for_update(&mut annotated, &old);
        assert_eq!(annotated["metadata"]["generation"], 2);
        let mut both = old.clone();
        both["metadata"]["annotations"] = json!({"x": "y"});
        both["spec"]["replicas"] = json!(2);
        strategy(&FOLLOWS_ANNOTATIONS).prepare_for_update(&mut both, &old);
        assert_eq!(both["metadata"]["generation"], 2, "one bump per update");
    }

    #[test]
    fn status_updates_keep_labels_and_selectors_stay_where_the_kind_says_so() {
        let old = object();
        let mut relabelled = old.clone();
        relabelled["metadata"]["labels"] = json!({"c": "d"});
        let mut plain = relabelled.clone();
        strategy(&PLAIN).prepare_for_status_update(&mut plain, &old);
        assert_eq!(plain["metadata"]["labels"], json!({"c": "d"}));
        strategy(&FOLLOWS_ANNOTATIONS).prepare_for_status_update(&mut relabelled, &old);
        assert_eq!(relabelled["metadata"]["labels"], json!({"a": "b"}));
        let mut reselected = old.clone();
        reselected["spec"]["selector"] = json!({"matchLabels": {"a": "c"}});
        assert!(strategy(&PLAIN)
            .validate_update(&reselected, &old)
            .is_empty());
        assert_eq!(
            strategy(&FOLLOWS_ANNOTATIONS).validate_update(&reselected, &old)[0].field,
            "spec.selector"
        );
    }

    #[test]
    fn status_replicas_is_a_field_selector_only_where_the_kind_says_so() {
        const SELECTABLE: Workload = Workload {
            status_replicas_selectable: true,
            ..PLAIN
        };
        assert_eq!(
            strategy(&PLAIN).field_value(&object(), "status.replicas"),
            None
        );
        assert_eq!(
            strategy(&SELECTABLE)
                .field_value(&object(), "status.replicas")
                .as_deref(),
            Some("1")
        );
    }
}
