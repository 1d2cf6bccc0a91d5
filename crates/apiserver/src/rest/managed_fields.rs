//! Field ownership of creates, updates and patches: the writer's changed fields recorded in
//! `metadata.managedFields` (the Update side of kube's field manager, which `createHandler`,
//! `updateHandler` and `patchResource` run on every write that is not an apply).

use serde_json::Value;

use rkcm_apimachinery::apply::FieldManager;
use rkcm_apimachinery::catalog::ResourceInfo;

use super::write::WriteOptions;

/// Records the fields `new` changes from `live` (`None` on create) as owned by the write's
/// field manager, on `subresource` (empty for the object). Writes without a field manager (the
/// server's own, applies) keep the `managedFields` they carry.
pub(crate) fn track_update(
    info: &ResourceInfo,
    live: Option<&Value>,
    new: &mut Value,
    opts: &WriteOptions,
    subresource: &str,
) {
    let Some(manager) = opts.field_manager.as_deref() else {
        return;
    };
    field_manager(info, subresource).update(live, new, manager, jiff::Timestamp::now());
}

/// The field manager of writes of `info` to `subresource` (empty for the object): typed by the
/// built-in schema, or for a custom resource by its served version's schema (its `status` owned
/// with the object when the version declares no status subresource).
pub(crate) fn field_manager(info: &ResourceInfo, subresource: &str) -> FieldManager {
    let fm = FieldManager::new(&info.api_version(), info.kind, subresource);
    match crate::crd::served::lookup(info) {
        Some(served) if info.subresource("status").is_none() => fm
            .with_type(served.apply_type.clone())
            .without_status_subresource(),
        Some(served) => fm.with_type(served.apply_type.clone()),
        None => fm,
    }
}
