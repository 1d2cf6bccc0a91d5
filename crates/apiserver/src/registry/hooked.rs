//! The generic strategy plus a kind's own hooks at each step kube's generic registry drives,
//! and the extra field selectors of the kind (`GetAttrs`); for kinds whose strategy prepares
//! or selects more than [`super::simple::SimpleStrategy`] allows.

use rkcm_apimachinery::catalog::ResourceInfo;
use serde_json::Value;

use super::generic::GenericStrategy;
use super::object::get;
use super::{FieldError, GracefulDelete, Strategy};

/// What a kind adds to the generic strategy. Each hook runs after the generic step.
pub(crate) struct Hooks {
    /// `SetDefaults_*` (and what kube's conversion does on decode).
    pub default: fn(&mut Value),
    /// The kind's part of `PrepareForCreate`.
    pub prepare_create: fn(&mut Value),
    /// The kind's part of `PrepareForUpdate` (`new`, `old`).
    pub prepare_update: fn(&mut Value, &Value),
    /// The kind's part of the status strategy's `PrepareForUpdate` (`new`, `old`).
    pub prepare_status_update: fn(&mut Value, &Value),
    /// `Validate*` without the object metadata.
    pub validate: fn(&Value) -> Vec<FieldError>,
    /// `Validate*Update` without the metadata update checks; it revalidates `new` itself
    /// where kube does, so that the kind keeps kube's order of errors.
    pub validate_update: fn(&Value, &Value) -> Vec<FieldError>,
    /// Field selectors beyond `metadata.name` / `metadata.namespace`: name and JSON path.
    pub fields: &'static [(&'static str, &'static [&'static str])],
}

/// A hook that does nothing.
pub(crate) fn nothing(_obj: &mut Value) {}

/// An update hook that does nothing.
pub(crate) fn nothing_on_update(_new: &mut Value, _old: &Value) {}

/// A [`GenericStrategy`] with a kind's [`Hooks`].
pub(crate) struct HookedStrategy {
    base: GenericStrategy,
    hooks: &'static Hooks,
}

impl HookedStrategy {
    /// `base` with `hooks`.
    pub(crate) fn new(base: GenericStrategy, hooks: &'static Hooks) -> Self {
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
        errs
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = self.base.validate_update(new, old);
        errs.extend((self.hooks.validate_update)(new, old));
        errs
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
