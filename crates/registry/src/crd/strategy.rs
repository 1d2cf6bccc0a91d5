//! The strategy of custom resources (`pkg/registry/customresource/strategy.go`): the generic
//! metadata handling plus the served version's schema — pruning, defaults, validation with
//! ratcheting on update — the status and scale subresources and selectable fields.
//!
//! The schema is looked up in [`super::served`] on every call, so a CRD update takes effect for
//! the next request without rebuilding the strategy.

use std::sync::Mutex;

use rkcm_apiextensions::{ErrorList, ErrorType};
use rkcm_apimachinery::catalog::ResourceInfo;
use serde_json::Value;

use super::jsonpath;
use super::served;
use crate::generic::GenericStrategy;
use crate::{FieldError, FieldErrorKind, GracefulDelete, Strategy};

/// Field errors of `rkcm-apiextensions` as the registry's, keeping kube's reasons and messages.
pub fn field_errors(errs: ErrorList) -> Vec<FieldError> {
    errs.into_iter()
        .map(|e| {
            let kind = match e.error_type {
                ErrorType::Required => FieldErrorKind::Required,
                ErrorType::NotSupported => FieldErrorKind::NotSupported,
                ErrorType::Duplicate => FieldErrorKind::Duplicate,
                ErrorType::Forbidden => FieldErrorKind::Forbidden,
                ErrorType::TooLong => FieldErrorKind::TooLong,
                ErrorType::NotFound => FieldErrorKind::NotFound,
                ErrorType::TooMany => FieldErrorKind::TooMany,
                ErrorType::TypeInvalid => FieldErrorKind::TypeInvalid,
                ErrorType::Internal => FieldErrorKind::Internal,
                ErrorType::Invalid => FieldErrorKind::Invalid,
            };
            FieldError {
                message: e.body(),
                field: e.field,
                kind,
            }
        })
        .collect()
}

/// The strategy of one custom resource version.
pub struct CustomResourceStrategy {
    base: GenericStrategy,
    info: &'static ResourceInfo,
}

/// The strategy of the custom resource `info`, built once per catalog entry.
pub fn of(info: &'static ResourceInfo) -> &'static dyn Strategy {
    static BUILT: Mutex<Vec<&'static CustomResourceStrategy>> = Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(s) = built.iter().find(|s| std::ptr::eq(s.info, info)) {
        return *s;
    }
    // One per distinct catalog entry, which is itself interned: bounded by the CRD shapes seen.
    let s: &'static CustomResourceStrategy = Box::leak(Box::new(CustomResourceStrategy {
        base: GenericStrategy::new(info),
        info,
    }));
    built.push(s);
    s
}

impl CustomResourceStrategy {
    fn schema_errors(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        let Some(served) = served::lookup(self.info) else {
            return Vec::new();
        };
        let Some(schema) = served.schema.as_ref() else {
            return Vec::new();
        };
        let mut errs = Vec::new();
        let mut coerced = obj.clone();
        if let Err(e) = schema.coerce(&mut coerced, false) {
            errs.push(*e);
        }
        errs.extend(match old {
            Some(old) => schema.validate_update(obj, old),
            None => schema.validate(obj),
        });
        field_errors(errs)
    }
}

impl Strategy for CustomResourceStrategy {
    fn resource(&self) -> &'static ResourceInfo {
        self.info
    }

    /// kube's decoder for custom resources prunes unknown fields and applies the schema's
    /// defaults to every object it reads.
    fn default(&self, obj: &mut Value) {
        if let Some(served) = served::lookup(self.info) {
            if let Some(schema) = served.schema.as_ref() {
                schema.prune(obj);
                schema.apply_defaults(obj);
            }
        }
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        // kube's customResourceStrategy: with the status subresource a create drops the status
        // (a custom resource is unstructured: no empty struct is written in its place, as the
        // base strategy of typed kinds does); without it the status is the client's to set.
        let status = obj.get("status").cloned();
        self.base.prepare_for_create(obj);
        rkcm_storage::object::set_meta(obj, "generation", Value::from(1));
        if let Some(m) = obj.as_object_mut() {
            m.remove("status");
            if let (false, Some(status)) = (self.base.has_status(), status) {
                m.insert("status".into(), status);
            }
        }
    }

    /// kube's custom-resource strategy bumps the generation when anything but `metadata` (and
    /// `status`, with the status subresource) changes.
    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        self.base.prepare_for_update(new, old);
        let skipped: &[&str] = if self.base.has_status() {
            &["metadata", "status"]
        } else {
            &["metadata"]
        };
        let content = |v: &Value| -> Value {
            let mut v = v.clone();
            if let Some(m) = v.as_object_mut() {
                for k in skipped {
                    m.remove(*k);
                }
            }
            v
        };
        let old_generation = old
            .pointer("/metadata/generation")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let generation = if content(new) == content(old) {
            old_generation
        } else {
            old_generation + 1
        };
        rkcm_storage::object::set_meta(new, "generation", Value::from(generation));
    }

    fn prepare_for_status_update(&self, new: &mut Value, old: &Value) {
        self.default(new);
        self.base.prepare_for_status_update(new, old);
    }

    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = self.base.validate_create(obj);
        errs.extend(self.schema_errors(obj, None));
        errs
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = self.base.validate_update(new, old);
        errs.extend(self.schema_errors(new, Some(old)));
        errs
    }

    fn field_value(&self, obj: &Value, field: &str) -> Option<String> {
        if let Some(v) = self.base.field_value(obj, field) {
            return Some(v);
        }
        let served = served::lookup(self.info)?;
        if !served.selectable_fields.iter().any(|f| f == field) {
            return None;
        }
        Some(match jsonpath::get(obj, &format!(".{field}")) {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Null) | None => String::new(),
            Some(other) => other.to_string(),
        })
    }

    fn graceful_delete(&self, _obj: &Value, _requested_grace: Option<i64>) -> GracefulDelete {
        GracefulDelete::Immediate
    }

    fn scale_replicas(&self, obj: &Value) -> Option<(i32, i32, String)> {
        let served = served::lookup(self.info)?;
        let scale = served.scale.as_ref()?;
        let int = |path: &str| {
            jsonpath::get(obj, path)
                .and_then(Value::as_i64)
                .and_then(|n| i32::try_from(n).ok())
                .unwrap_or(0)
        };
        let selector = scale
            .label_selector
            .as_deref()
            .and_then(|p| jsonpath::get(obj, p))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        Some((
            int(&scale.spec_replicas),
            int(&scale.status_replicas),
            selector,
        ))
    }

    fn set_scale_replicas(&self, obj: &mut Value, replicas: i32) -> Result<(), FieldError> {
        let Some(scale) = served::lookup(self.info).and_then(|s| s.scale.clone()) else {
            return self.base.set_scale_replicas(obj, replicas);
        };
        if replicas < 0 {
            return Err(FieldError::invalid(
                "spec.replicas",
                &Value::from(replicas),
                "must be greater than or equal to 0",
            ));
        }
        if !jsonpath::set(obj, &scale.spec_replicas, Value::from(replicas)) {
            return Err(FieldError::invalid_omitting_value(
                "spec.replicas",
                "the scale subresource's specReplicasPath cannot be written",
            ));
        }
        Ok(())
    }
}
