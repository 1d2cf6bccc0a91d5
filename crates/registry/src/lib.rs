//! Kubernetes' own API, as kube's `pkg/registry`: one strategy per kind (defaulting,
//! validation, status/spec split, field selectors, scale), the allocators of Services' cluster
//! IPs and node ports, the versions served through a conversion, and custom resources
//! (`apiextensions-apiserver`: CRD schemas served, their strategy, the establishing controller).
//!
//! Mirrors the `strategy.go` files of kube-apiserver (`pkg/registry/<group>/<resource>/`), the
//! defaulting functions (`pkg/apis/<group>/v1/defaults.go`) and validation
//! (`pkg/apis/<group>/validation`). Objects are handled as the JSON that is stored.
//!
//! The server drives a strategy in the order the generic registry (`k8s.io/apiserver`
//! `pkg/registry/rest/create.go`, `update.go`) does:
//!
//! - create: [`Strategy::default`] → [`Strategy::prepare_for_create`] → (server fills `uid`,
//!   `creationTimestamp`, the name from `generateName`) → [`Strategy::complete_create`] →
//!   [`Strategy::validate_create`];
//! - update: [`Strategy::default`] → [`Strategy::prepare_for_update`] →
//!   [`Strategy::validate_update`];
//! - status update: [`Strategy::prepare_for_status_update`] (which applies the defaults
//!   itself, as kube defaults every decoded body) → [`Strategy::validate_update`].
//!
//! `prepare_for_update` and `prepare_for_status_update` also do the bookkeeping of
//! `BeforeUpdate`: `metadata.generation`, `uid`, `creationTimestamp`, `deletionTimestamp` and
//! `deletionGracePeriodSeconds` are carried over from the old object. As for kube's core
//! kinds, a status update may still change labels, annotations and finalizers, except where
//! the kind's status strategy says otherwise (deployments keep their labels, pods their owner
//! references).
//!
//! Validation ends, once the kind's own checks pass, with decoding the object as its
//! k8s-openapi type (`typecheck`), so that nothing is stored that typed clients cannot read.
//!
//! Namespaces have two more entry points the trait does not cover: [`namespaces::prepare_for_finalize`]
//! / [`namespaces::validate_finalize`] for `/finalize`, and [`namespaces::mark_terminating`] for
//! DELETE. CertificateSigningRequests have [`certificatesigningrequests::prepare_for_approval`] /
//! [`certificatesigningrequests::validate_approval`] for `/approval`.

pub mod allocators;
mod apiservices;
pub mod by_kind;
pub mod certificatesigningrequests;
mod conditions;
mod configmaps;
mod controllerrevisions;
pub mod conversion;
pub mod crd;
mod cronjobs;
mod customresourcedefinitions;
mod daemonsets;
mod deployments;
mod endpoints;
mod endpointslices;
mod events;
pub mod eviction;
mod generation;
pub mod generic;
mod hooked;
mod horizontalpodautoscalers;
pub mod hpa_conversion;
mod ipaddresses;
mod jobs;
mod leases;
mod limitranges;
pub mod meta;
pub mod namespaces;
mod nodes;
pub(crate) mod object;
mod persistentvolumeclaims;
mod persistentvolumes;
mod poddisruptionbudgets;
mod pods;
mod podspec;
mod podtemplates;
pub mod priorityclasses;
mod rbac;
mod replicasets;
mod replicationcontrollers;
pub mod resource_metrics;
mod resourcequotas;
mod resources;
mod secrets;
pub mod selector;
mod serviceaccounts;
mod servicecidrs;
mod services;
mod simple;
mod statefulsets;
mod table;
mod typecheck;
mod workload;

use rkcm_apimachinery::catalog::ResourceInfo;
use serde_json::Value;

pub use rkcm_apimachinery::field::{invalid_message, FieldError, FieldErrorKind};

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
