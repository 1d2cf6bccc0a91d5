//! What the write paths do for Services only: their cluster IPs and node ports.

use rkcm_apimachinery::catalog::ResourceInfo;

use crate::allocators::Failure;
use crate::error::ApiError;

/// Whether `info` is core/v1 Services.
pub fn is_service(info: &ResourceInfo) -> bool {
    info.group.is_empty() && info.kind == "Service"
}

/// The API error of a failed allocation for service `name`.
pub fn allocation_error(info: &ResourceInfo, name: &str, failure: Failure) -> ApiError {
    match failure {
        Failure::Invalid(errors) => ApiError::invalid(info, name, &errors),
        Failure::Internal(message) => {
            tracing::warn!(name, error = %message, "service allocation failed");
            ApiError::new(
                500,
                "InternalError",
                format!("Internal error occurred: {message}"),
            )
        }
    }
}
