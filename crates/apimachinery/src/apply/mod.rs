//! Server-side apply: the field manager of writes, `metadata.managedFields` and the
//! structured-merge schema of the served kinds, built-in and custom.
//!
//! The merge engine is `rkcm-structured-merge`; this module is kube's
//! `k8s.io/apimachinery/pkg/util/managedfields` around it.

pub mod custom_resource;
pub mod field_manager;
pub mod managed_fields;
pub mod schema;

pub use custom_resource::custom_resource_type;
pub use field_manager::{ApplyError, FieldManager, LAST_APPLIED_ANNOTATION};
pub use managed_fields::{ManagerId, Operation};
/// The structured-merge type of an object (see [`FieldManager::with_type`]).
pub use rkcm_structured_merge::TypeRef;
