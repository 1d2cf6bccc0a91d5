//! The behaviour of one resource that the generic registry's operations call
//! (`rest.RESTCreateStrategy`, `RESTUpdateStrategy`, `RESTDeleteStrategy` and the scale
//! subresource): defaulting, preparation, validation, field selectors and graceful deletion.
//!
//! The generic registry drives a strategy in kube's order (`pkg/registry/rest/create.go`,
//! `update.go`):
//!
//! - create: [`Strategy::default`] → [`Strategy::prepare_for_create`] → (server fills `uid`,
//!   `creationTimestamp`, the name from `generateName`) → [`Strategy::complete_create`] →
//!   [`Strategy::validate_create`];
//! - update: [`Strategy::default`] → [`Strategy::prepare_for_update`] →
//!   [`Strategy::validate_update`];
//! - status update: [`Strategy::prepare_for_status_update`] → [`Strategy::validate_update`].

use rkcm_apimachinery::catalog::ResourceInfo;
use rkcm_apimachinery::field::FieldError;
use serde_json::Value;

/// How a DELETE proceeds, as `rest.RESTGracefulDeleteStrategy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GracefulDelete {
    /// Remove the object now (once its finalizers are gone).
    Immediate,
    /// Set `deletionTimestamp` = now + grace and `deletionGracePeriodSeconds`; something else
    /// (the kubelet, or the node simulator) removes the object with a later grace-0 delete.
    Graceful {
        /// Seconds granted to the object to terminate (> 0).
        grace_period_seconds: i64,
    },
}

/// The behaviour of one resource: defaulting, validation, the spec/status split, field
/// selectors, graceful deletion and the scale subresource.
///
/// Implementations are stateless and shared by every request.
pub trait Strategy: Send + Sync + 'static {
    /// The catalog entry of the resource.
    fn resource(&self) -> &'static ResourceInfo;

    /// Applies the API defaults of the kind (`SetDefaults_*`): fills fields that are absent,
    /// `null` or `""` (Go's zero values), never overwrites a value the client chose, and adds
    /// nothing else (no `null`s, no empty maps kube would not show).
    fn default(&self, obj: &mut Value);

    /// Clears what a client may not set on create (status, deletion fields) and sets the
    /// initial generation and status.
    fn prepare_for_create(&self, obj: &mut Value);

    /// Prepares a full update: keeps the old status for kinds with a status subresource and
    /// carries over the system metadata; bumps `metadata.generation` when the spec changed.
    fn prepare_for_update(&self, new: &mut Value, old: &Value);

    /// Prepares an update through `/status`: applies the defaults, keeps the old spec (and what
    /// else kube keeps), takes the new status; the generation is never bumped.
    fn prepare_for_status_update(&self, new: &mut Value, old: &Value);

    /// Completes a new object once the server has given it its `uid` and final name, before
    /// [`Strategy::validate_create`]: kube's `PrepareForCreate` already sees both (the generic
    /// registry fills them first), and Jobs build their selector from them. Most kinds do
    /// nothing here.
    fn complete_create(&self, _obj: &mut Value) {}

    /// Validates a new object, including its metadata. Empty means valid.
    fn validate_create(&self, obj: &Value) -> Vec<FieldError>;

    /// Validates an update of `old` into `new`, including immutable fields. Empty means valid.
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError>;

    /// The value of `field` for field selectors (`metadata.name`, `spec.nodeName`, ...);
    /// `None` when the field is not supported as a selector for this kind. A supported field
    /// that the object does not set yields `Some("")`.
    fn field_value(&self, obj: &Value, field: &str) -> Option<String>;

    /// The kind's own field-selector fields whose values the watch cache keeps with each object
    /// (kube's cacher indexes pods by `spec.nodeName` the same way), so that selecting on them
    /// decodes nothing. A supported field left out still selects, by decoding the object.
    fn selectable_fields(&self) -> &'static [&'static str] {
        &[]
    }

    /// How to delete `obj` given the `gracePeriodSeconds` of the request.
    fn graceful_delete(&self, obj: &Value, requested_grace: Option<i64>) -> GracefulDelete;

    /// Whether dependents are orphaned when a DELETE names no propagation policy
    /// (`DefaultGarbageCollectionPolicy` = `OrphanDependents`).
    fn default_propagation_orphans(&self) -> bool {
        false
    }

    /// `(spec.replicas, status.replicas, selector)` for kinds served at `/scale`; the selector
    /// is rendered as a label-selector string. `None` for kinds without `/scale`.
    fn scale_replicas(&self, obj: &Value) -> Option<(i32, i32, String)>;

    /// Sets `spec.replicas` through `/scale`, refusing negative values.
    fn set_scale_replicas(&self, obj: &mut Value, replicas: i32) -> Result<(), FieldError>;
}
