//! Update (PUT, and the result of a PATCH) of an object, of its `/status`, or of another
//! subresource its storage prepares (a namespace's `/finalize`, a CertificateSigningRequest's
//! `/approval`).

use std::sync::Arc;

use serde_json::{json, Value};

use rkcm_apimachinery::catalog::ResourceInfo;

use rkcm_storage::object;
use rkcm_storage::store::Store;
use rkcm_storage::watch_cache::CachedObject;

use super::create::create;
use super::keys::{key, UPDATE_ATTEMPTS};
use super::request_checks::{check_namespace, check_type, check_uid_precondition};
use super::resources::Resources;
use super::system_metadata::{keep_system_metadata, same_content};
use super::write::{storage_error, WriteOptions};
use crate::admission::Operation;
use crate::error::{ApiError, ApiResult};

/// Which part of an object an update writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpdateTarget {
    /// The object (status kept).
    Main,
    /// `/status` (spec kept).
    Status,
    /// Another subresource the resource's storage prepares and validates (a namespace's
    /// `finalize`, a CertificateSigningRequest's `approval`).
    Subresource(&'static str),
}

impl UpdateTarget {
    /// The subresource admission sees: empty, `status`, or the other subresource's name.
    pub fn subresource(self) -> &'static str {
        match self {
            UpdateTarget::Main => "",
            UpdateTarget::Status => "status",
            UpdateTarget::Subresource(name) => name,
        }
    }
}

/// Where the new object of an update comes from, which decides how a `metadata.uid` other than
/// the stored object's is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpdateSource {
    /// A PUT body: its uid is a precondition, refused with 409 Conflict
    /// (`defaultUpdatedObjectInfo.Preconditions` checked by `GuaranteedUpdate`).
    Put,
    /// The result of a PATCH: its uid is an immutable field, refused with 422 Invalid
    /// (`ValidateObjectMetaUpdate`).
    Patch,
}

/// What an update wrote.
#[derive(Clone, Debug)]
pub struct Updated {
    /// The stored object (unchanged when the update changed nothing).
    pub object: Arc<CachedObject>,
    /// Whether the update created the object (a PUT of a missing object where kube allows
    /// `AllowCreateOnUpdate`); kube answers 201 Created then.
    pub created: bool,
}

/// Whether an update leaves an object that must go away now (`ShouldDeleteDuringUpdate`): being
/// deleted, no finalizers left and no grace period pending.
/// A namespace waits for its `spec.finalizers` only ([`super::resources::WriteHooks::holds`]).
fn should_delete_during_update(
    resources: &dyn Resources,
    info: &ResourceInfo,
    obj: &Value,
) -> bool {
    if !object::is_deleting(obj) || !object::finalizers(obj).is_empty() {
        return false;
    }
    if resources.hooks(info).is_some_and(|hooks| hooks.holds(obj)) {
        return false;
    }
    object::deletion_grace(obj).is_none_or(|g| g == 0)
}

/// A stored object with its value, which a handler parsed to make the new object from (the
/// object a patch was applied to). The update takes the value instead of parsing the stored
/// object once more when the object is still the stored one.
#[derive(Debug)]
pub struct Parsed {
    /// The stored object, as read.
    pub object: Arc<CachedObject>,
    /// Its value (`object.value()`).
    pub value: Value,
}

impl Parsed {
    /// Reads `object`'s value.
    pub fn new(object: Arc<CachedObject>) -> Parsed {
        let value = object.value();
        Parsed { object, value }
    }

    /// The value of `current`, the stored object now: this one's when it is the same write,
    /// else parsed.
    fn value_of(parsed: Option<Parsed>, current: &CachedObject) -> Value {
        match parsed {
            Some(p) if same_write(&p.object, current) => p.value,
            _ => current.value(),
        }
    }
}

/// Whether two reads of one key are the same write: a revision is never written twice.
fn same_write(a: &CachedObject, b: &CachedObject) -> bool {
    std::ptr::eq(a, b) || a.revision == b.revision
}

/// Updates object `name` with `new` (PUT or the result of a PATCH, see `source`); `target`
/// selects the main resource, `/status` or `/finalize`. A `metadata.resourceVersion` in `new` is
/// a precondition (409 when stale).
///
/// Without a resourceVersion the update is unconditional and is retried when another writer
/// gets in between (`GuaranteedUpdate`).
#[allow(clippy::too_many_arguments)]
pub async fn update(
    store: &Store,
    resources: &dyn Resources,
    info: &'static ResourceInfo,
    namespace: Option<&str>,
    name: &str,
    new: Value,
    target: UpdateTarget,
    source: UpdateSource,
    opts: WriteOptions,
) -> ApiResult<Updated> {
    update_from(
        store, resources, info, namespace, name, new, target, source, opts, None,
    )
    .await
}

/// [`update`] of a `new` object made from `live`, the stored object as the caller read and
/// parsed it (a patch's original): the update does not parse it again while it is still the
/// stored one.
#[allow(clippy::too_many_arguments)]
pub async fn update_from(
    store: &Store,
    resources: &dyn Resources,
    info: &'static ResourceInfo,
    namespace: Option<&str>,
    name: &str,
    new: Value,
    target: UpdateTarget,
    source: UpdateSource,
    opts: WriteOptions,
    mut live: Option<Parsed>,
) -> ApiResult<Updated> {
    let unconditional = matches!(object::resource_version(&new), Ok(None));
    if !unconditional {
        return update_once(
            store, resources, info, namespace, name, new, target, source, &opts, live,
        )
        .await;
    }
    let mut last = None;
    for _ in 0..UPDATE_ATTEMPTS {
        match update_once(
            store,
            resources,
            info,
            namespace,
            name,
            new.clone(),
            target,
            source,
            &opts,
            live.take(),
        )
        .await
        {
            Err(e) if e.reason == "Conflict" => last = Some(e),
            r => return r,
        }
    }
    Err(last.unwrap_or_else(|| ApiError::conflict(info, name)))
}

#[allow(clippy::too_many_arguments)]
async fn update_once(
    store: &Store,
    resources: &dyn Resources,
    info: &'static ResourceInfo,
    namespace: Option<&str>,
    name: &str,
    mut new: Value,
    target: UpdateTarget,
    source: UpdateSource,
    opts: &WriteOptions,
    live: Option<Parsed>,
) -> ApiResult<Updated> {
    let strategy = resources.strategy(info);
    let hooks = resources.hooks(info);
    check_type(info, &mut new)?;
    if object::metadata_mut(&mut new).is_none() {
        return Err(ApiError::bad_request(
            "the request body must be a JSON object",
        ));
    }
    match object::meta_str(&new, "name") {
        None | Some("") => object::set_meta(&mut new, "name", json!(name)),
        Some(n) if n == name => {}
        Some(n) => {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({n}) does not match the name on the URL ({name})"
            )))
        }
    }
    check_namespace(info, &mut new, namespace)?;
    let key = key(info, namespace, name);
    let Some(current) = store.get(&key) else {
        if target == UpdateTarget::Main && resources.allow_create_on_update(info) {
            object::remove_meta(&mut new, "resourceVersion");
            let object = create(store, resources, info, namespace, new, opts.clone()).await?;
            return Ok(Updated {
                object,
                created: true,
            });
        }
        return Err(ApiError::not_found(info, name));
    };
    // Shared with admission, which sees it in both phases.
    let stored = Arc::new(Parsed::value_of(live, &current));
    let old: &Value = &stored;
    if source == UpdateSource::Put {
        check_uid_precondition(info, name, &new, old)?;
    }
    match object::resource_version(&new) {
        Ok(Some(rv)) if rv != current.revision => return Err(ApiError::conflict(info, name)),
        Ok(_) => {}
        Err(bad) => {
            return Err(ApiError::bad_request(format!(
                "invalid resourceVersion {bad:?}"
            )));
        }
    }
    if target == UpdateTarget::Main {
        strategy.default(&mut new);
    }
    if let Some(admission) = &opts.admission {
        // The mutating phase sees the decoded, defaulted object and the stored one, before the
        // kind prepares the update (the admitting transformer of `updateHandler`).
        let mut attrs = admission.attributes(
            Operation::Update,
            info,
            target.subresource(),
            namespace,
            name,
            Some(new),
            Some(Arc::clone(&stored)),
            opts.dry_run,
        );
        admission.admit(&mut attrs).await?;
        new = attrs.into_object().unwrap_or(Value::Null);
        if object::metadata_mut(&mut new).is_none() {
            return Err(ApiError::internal(
                "admission",
                "a plugin left an object without metadata",
            ));
        }
    }
    match target {
        UpdateTarget::Main => {
            strategy.prepare_for_update(&mut new, old);
            if let Some(hooks) = hooks {
                hooks.prepare_for_update(&mut new, old);
            }
        }
        UpdateTarget::Status => strategy.prepare_for_status_update(&mut new, old),
        UpdateTarget::Subresource(subresource) => {
            let prepared =
                hooks.is_some_and(|h| h.prepare_for_subresource_update(subresource, &mut new, old));
            if !prepared {
                return Err(ApiError::method_not_allowed("PUT"));
            }
        }
    }
    super::managed_fields::track_update(
        resources,
        info,
        Some(old),
        &mut new,
        opts,
        target.subresource(),
    );
    keep_system_metadata(&mut new, old);
    let main = target == UpdateTarget::Main;
    if let Some(hooks) = hooks.filter(|_| main) {
        hooks.normalize(&mut new, Some(old));
    }
    let errors = match (opts.server_owned, target, hooks) {
        (true, _, _) => Vec::new(),
        (false, UpdateTarget::Subresource(subresource), Some(hooks)) => hooks
            .validate_subresource_update(subresource, &new, old)
            .unwrap_or_else(|| strategy.validate_update(&new, old)),
        (false, _, _) => strategy.validate_update(&new, old),
    };
    if !errors.is_empty() {
        return Err(ApiError::invalid(info, name, &errors));
    }
    if let Some(admission) = &opts.admission {
        // `updateValidation` in `Store.Update`: after the kind's validation, before storage.
        let attrs = admission.attributes(
            Operation::Update,
            info,
            target.subresource(),
            namespace,
            name,
            Some(new),
            Some(Arc::clone(&stored)),
            opts.dry_run,
        );
        admission.validate(&attrs).await?;
        new = attrs.into_object().unwrap_or(Value::Null);
    }
    let updated = |object| Updated {
        object,
        created: false,
    };
    // A stale value (encrypted with a key being rotated away from) is written again even when
    // nothing changed, as `GuaranteedUpdate` does: that is how `kubectl replace` re-encrypts.
    if same_content(&new, old) && !store.is_stale(&key) {
        return Ok(updated(current));
    }
    let mut pending = match hooks.filter(|_| main) {
        Some(hooks) => hooks.begin_write(store, info, &mut new, Some(old), opts.dry_run)?,
        None => None,
    };
    if opts.dry_run {
        return Ok(updated(Arc::new(CachedObject::new(new, current.revision))));
    }
    if should_delete_during_update(resources, info, &new) {
        let last = store
            .delete(&key, Some(current.revision))
            .await
            .map_err(|e| storage_error(info, name, e))?;
        // The object is gone: nothing this update took is kept, and everything the stored
        // object held goes back.
        drop(pending);
        if let Some(hooks) = hooks {
            hooks.after_delete(store, &last).await;
        }
        let rev = object::resource_version(&last)
            .ok()
            .flatten()
            .unwrap_or(current.revision);
        return Ok(updated(Arc::new(CachedObject::new(last, rev))));
    }
    let taken = match &mut pending {
        Some(pending) => {
            pending.record(store, &mut new).await?;
            Some(new.clone())
        }
        None => None,
    };
    let written = store.update(&key, new, current.revision).await;
    if let Some(pending) = pending {
        match (&written, &taken) {
            (Ok(stored), _) => pending.commit(store, &stored.value()).await,
            (Err(_), Some(written)) => pending.abort(store, written).await,
            (Err(_), None) => {}
        }
    }
    let stored = written.map_err(|e| storage_error(info, name, e))?;
    Ok(updated(stored))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parsed_object_stands_for_the_stored_one_while_it_is_the_same_write() {
        let stored = Arc::new(CachedObject::new(json!({"metadata": {"name": "a"}}), 5));
        // A value no parse of the stored object gives, to tell which one was taken.
        let parsed = |object: &Arc<CachedObject>| Parsed {
            object: Arc::clone(object),
            value: json!({"parsed": true}),
        };
        assert_eq!(
            Parsed::value_of(Some(parsed(&stored)), &stored),
            json!({"parsed": true})
        );
        let reread = CachedObject::new(json!({"metadata": {"name": "a"}}), 5);
        assert_eq!(
            Parsed::value_of(Some(parsed(&stored)), &reread),
            json!({"parsed": true})
        );
        let newer = CachedObject::new(json!({"metadata": {"name": "b"}}), 6);
        let value = Parsed::value_of(Some(parsed(&stored)), &newer);
        assert_eq!(object::name(&value), "b");
        assert_eq!(Parsed::value_of(None, &newer), value);
        assert_eq!(Parsed::new(Arc::new(newer)).value, value);
    }
}
