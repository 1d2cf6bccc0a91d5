//! CustomResourceDefinitions and the custom resources they define, as apiextensions-apiserver
//! serves them (`staging/src/k8s.io/apiextensions-apiserver`).
//!
//! - The CRD objects themselves are an ordinary kind with a strategy
//!   ([`crate`]'s `customresourcedefinitions`), using `rkcm-apiextensions` for
//!   defaulting and validation.
//! - [`controller`] keeps their status as kube's naming, establishing and finalizer controllers
//!   do, and publishes the served versions of established CRDs: their catalog entries in
//!   [`rkcm_apimachinery::custom_resources`] (so routing, handlers and discovery find them) and
//!   their prepared schemas in [`served`].
//! - [`strategy`] is the strategy of every custom resource: prune, defaults, schema validation,
//!   status and scale subresources, selectable fields.
//! - [`conversion_webhook`] calls the conversion webhook of a CRD whose strategy is `Webhook`
//!   when its objects are read or written in a version other than the storage version.
//! - [`printers`] renders their Tables from `additionalPrinterColumns`; [`openapi`] their
//!   OpenAPI v3 documents.

pub mod cleanup;
pub mod controller;
pub mod conversion_webhook;
pub mod jsonpath;
pub mod openapi;
pub mod printers;
pub mod served;
pub mod strategy;
