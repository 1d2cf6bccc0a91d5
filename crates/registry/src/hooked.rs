//! The generic strategy with a kind's own steps hooked in at each stage kube's registry drives:
//! defaulting, create, update and status update preparation, and validation.
//!
//! For kinds whose `strategy.go` does more than [`super::simple::SimpleStrategy`] allows (a
//! non-empty initial status, fields cleared or carried over on update, field selectors of their
//! own from `GetAttrs`) but nothing as broad as the workload kinds.

use rkcm_apimachinery::catalog::ResourceInfo;
use serde_json::Value;

use super::generic::GenericStrategy;
use super::object::get;
use super::simple::{
    no_checks, no_defaults, no_update_checks, DefaultFn, ValidateFn, ValidateUpdateFn,
};
use super::{FieldError, GracefulDelete, Strategy};

/// A step that changes an object being created.
pub(crate) type CreateFn = fn(&mut Value);
/// A step that changes `new` given the stored `old`.
pub(crate) type UpdateFn = fn(&mut Value, &Value);

/// A create step that does nothing.
pub(crate) fn nothing(_obj: &mut Value) {}

/// An update step that does nothing.
pub(crate) fn nothing_on_update(_new: &mut Value, _old: &Value) {}

/// What a kind adds to the generic strategy; kinds name what differs and take the rest from
/// [`Hooks::NONE`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct Hooks {
    /// `SetDefaults_<Kind>`, applied to every decoded body (status updates included).
    pub default: DefaultFn,
    /// `PrepareForCreate` beyond clearing status and deletion fields.
    pub prepare_create: CreateFn,
    /// `PrepareForUpdate` beyond keeping the status and the system metadata.
    pub prepare_update: UpdateFn,
    /// The status strategy's `PrepareForUpdate` beyond keeping the spec.
    pub prepare_status_update: UpdateFn,
    /// The kind's checks of a new object (metadata is checked by the base).
    pub validate: ValidateFn,
    /// The kind's checks of an update, after either preparation (metadata is checked by the
    /// base). The kind's create checks are not run on updates unless this runs them.
    pub validate_update: ValidateUpdateFn,
    /// Field selectors beyond `metadata.name` / `metadata.namespace`: name and JSON path.
    pub fields: &'static [(&'static str, &'static [&'static str])],
}

impl Hooks {
    /// Nothing of the kind's own.
    pub(crate) const NONE: Hooks = Hooks {
        default: no_defaults,
        prepare_create: nothing,
        prepare_update: nothing_on_update,
        prepare_status_update: nothing_on_update,
        validate: no_checks,
        validate_update: no_update_checks,
        fields: &[],
    };
}

/// Drops repeated errors: the base checks names as path segments for every kind, and kinds
/// whose name rule is that same check (RBAC) would otherwise report each problem twice.
fn dedup(errs: Vec<FieldError>) -> Vec<FieldError> {
    let mut out: Vec<FieldError> = Vec::with_capacity(errs.len());
    for e in errs {
        if !out.contains(&e) {
            out.push(e);
        }
    }
    out
}

/// A [`GenericStrategy`] plus a kind's [`Hooks`].
pub(crate) struct HookedStrategy {
    base: GenericStrategy,
    hooks: Hooks,
}

impl HookedStrategy {
    /// `base` with `hooks`.
    pub(crate) fn new(base: GenericStrategy, hooks: Hooks) -> Self {
        HookedStrategy { base, hooks }
    }
}

impl Strategy for HookedStrategy {
    fn resource(&self) -> &'static ResourceInfo {
        self.base.resource()
    }

    fn default(&self, obj: &mut Value) {
        (self.hooks.default)(obj);
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        self.base.prepare_for_create(obj);
        (self.hooks.prepare_create)(obj);
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        self.base.prepare_for_update(new, old);
        (self.hooks.prepare_update)(new, old);
    }

    fn prepare_for_status_update(&self, new: &mut Value, old: &Value) {
        // kube defaults every decoded body, status updates included.
        self.default(new);
        self.base.prepare_for_status_update(new, old);
        (self.hooks.prepare_status_update)(new, old);
    }

    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = self.base.validate_create(obj);
        errs.extend((self.hooks.validate)(obj));
        dedup(errs)
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = self.base.validate_update(new, old);
        errs.extend((self.hooks.validate_update)(new, old));
        dedup(errs)
    }

    fn field_value(&self, obj: &Value, field: &str) -> Option<String> {
        if let Some((_, path)) = self.hooks.fields.iter().find(|(name, _)| *name == field) {
            return Some(match get(obj, path) {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => String::new(),
                Some(other) => other.to_string(),
            });
        }
        self.base.field_value(obj, field)
    }

    fn graceful_delete(&self, obj: &Value, requested_grace: Option<i64>) -> GracefulDelete {
        self.base.graceful_delete(obj, requested_grace)
    }

    fn default_propagation_orphans(&self) -> bool {
        self.base.default_propagation_orphans()
    }

    fn scale_replicas(&self, obj: &Value) -> Option<(i32, i32, String)> {
        self.base.scale_replicas(obj)
    }

    fn set_scale_replicas(&self, obj: &mut Value, replicas: i32) -> Result<(), FieldError> {
        self.base.set_scale_replicas(obj, replicas)
    }
}
