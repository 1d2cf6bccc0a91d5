//! What every write shares: its options, retries on conflicts with other writers, and the API
//! errors of storage errors.

use rkcm_apimachinery::catalog::ResourceInfo;

use rkcm_storage as storage;

use crate::admission::Admission;
use crate::error::ApiError;

/// Options of a write request.
#[derive(Clone, Debug, Default)]
pub struct WriteOptions {
    /// `dryRun=All`: validate, do not persist.
    pub dry_run: bool,
    /// A write the server makes of an object it built itself, never a client's: the kind's
    /// validation is not run. Only the `kubernetes` Endpoints use it, so that `rkcm up` on a
    /// loopback address can advertise that address, which kube's endpoint validation refuses
    /// (`may not be in the loopback range`) and kube-apiserver therefore never advertises.
    pub server_owned: bool,
    /// The admission of a client's request; writes the server makes itself have none and are
    /// not admitted.
    pub admission: Option<Admission>,
    /// The manager the fields a create, update or patch changes are recorded for in
    /// `metadata.managedFields` (`fieldManager`, else the user agent's first segment); `None`
    /// for writes the server makes itself and for applies, whose field manager already ran.
    pub field_manager: Option<String>,
}

/// Maps a storage error on `name` of `info` to its API error.
pub fn storage_error(info: &ResourceInfo, name: &str, err: storage::Error) -> ApiError {
    match err {
        storage::Error::AlreadyExists(_) => ApiError::already_exists(info, name),
        storage::Error::NotFound(_) => ApiError::not_found(info, name),
        storage::Error::Conflict { .. } => ApiError::conflict(info, name),
        storage::Error::Backend(e) => ApiError::internal("storage write failed", e),
        err @ storage::Error::Unavailable(_) => ApiError::service_unavailable(err.to_string()),
        err @ storage::Error::Timeout(_) => ApiError::timeout(err.to_string()),
    }
}
