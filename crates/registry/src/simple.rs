//! The generic strategy extended by a kind's own defaulting and validation functions, for
//! kinds whose behaviour is otherwise generic (services, leases, revisions).

use rkcm_apimachinery::catalog::ResourceInfo;
use serde_json::Value;

use super::generic::GenericStrategy;
use super::{FieldError, GracefulDelete, Strategy};

/// Defaulting of a kind.
pub(crate) type DefaultFn = fn(&mut Value);
/// Validation of a new object's kind-specific fields (metadata is validated by the base).
pub(crate) type ValidateFn = fn(&Value) -> Vec<FieldError>;
/// Validation of an update's kind-specific fields (metadata is validated by the base).
pub(crate) type ValidateUpdateFn = fn(&Value, &Value) -> Vec<FieldError>;

/// A [`GenericStrategy`] plus kind-specific functions.
pub(crate) struct SimpleStrategy {
    base: GenericStrategy,
    default: DefaultFn,
    validate: ValidateFn,
    validate_update: ValidateUpdateFn,
    validate_create_only: ValidateFn,
}

impl SimpleStrategy {
    /// `base` plus the given functions.
    pub(crate) fn new(
        base: GenericStrategy,
        default: DefaultFn,
        validate: ValidateFn,
        validate_update: ValidateUpdateFn,
    ) -> Self {
        SimpleStrategy {
            base,
            default,
            validate,
            validate_update,
            validate_create_only: no_checks,
        }
    }

    /// Adds checks that run on create only (a `Validate` whose `ValidateUpdate` does not
    /// repeat them, e.g. the CronJob name length).
    pub(crate) fn with_create_only_checks(mut self, checks: ValidateFn) -> Self {
        self.validate_create_only = checks;
        self
    }
}

impl Strategy for SimpleStrategy {
    fn resource(&self) -> &'static ResourceInfo {
        self.base.resource()
    }

    fn default(&self, obj: &mut Value) {
        (self.default)(obj);
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        self.base.prepare_for_create(obj);
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        self.base.prepare_for_update(new, old);
    }

    fn prepare_for_status_update(&self, new: &mut Value, old: &Value) {
        // kube defaults every decoded body, status updates included.
        self.default(new);
        self.base.prepare_for_status_update(new, old);
    }

    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        // As the kinds' Validate* functions: metadata first, then the kind's fields.
        let mut errs = self.base.validate_create(obj);
        errs.extend((self.validate)(obj));
        errs.extend((self.validate_create_only)(obj));
        errs
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = self.base.validate_update(new, old);
        errs.extend((self.validate)(new));
        errs.extend((self.validate_update)(new, old));
        errs
    }

    fn field_value(&self, obj: &Value, field: &str) -> Option<String> {
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

/// A defaulting function that does nothing.
pub(crate) fn no_defaults(_obj: &mut Value) {}

/// A validation that adds nothing to the metadata checks.
pub(crate) fn no_checks(_obj: &Value) -> Vec<FieldError> {
    Vec::new()
}

/// An update validation that adds nothing to the metadata checks.
pub(crate) fn no_update_checks(_new: &Value, _old: &Value) -> Vec<FieldError> {
    Vec::new()
}
