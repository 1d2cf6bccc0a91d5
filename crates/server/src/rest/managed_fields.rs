//! Field ownership of creates, updates and patches: the writer's changed fields recorded in
//! `metadata.managedFields` (the Update side of kube's field manager, which `createHandler`,
//! `updateHandler` and `patchResource` run on every write that is not an apply).

use serde_json::Value;

use rkcm_apimachinery::catalog::ResourceInfo;

use super::resources::Resources;
use super::write::WriteOptions;

/// Records the fields `new` changes from `live` (`None` on create) as owned by the write's
/// field manager, on `subresource` (empty for the object). Writes without a field manager (the
/// server's own, applies) keep the `managedFields` they carry.
pub fn track_update(
    resources: &dyn Resources,
    info: &ResourceInfo,
    live: Option<&Value>,
    new: &mut Value,
    opts: &WriteOptions,
    subresource: &str,
) {
    let Some(manager) = opts.field_manager.as_deref() else {
        return;
    };
    resources
        .field_manager(info, subresource)
        .update(live, new, manager, jiff::Timestamp::now());
}
