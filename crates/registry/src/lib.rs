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
mod webhookconfigurations;
mod workload;

pub use rkcm_apimachinery::field::{invalid_message, FieldError, FieldErrorKind};

pub use rkcm_server::rest::{GracefulDelete, Strategy};
