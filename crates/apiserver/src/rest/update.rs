//! Update (PUT, and the result of a PATCH) of an object, of its `/status`, of a namespace's
//! `/finalize` or of a CertificateSigningRequest's `/approval`.

use std::sync::Arc;

use serde_json::{json, Value};

use rkcm_apimachinery::catalog::ResourceInfo;

use super::create::create;
use super::namespaces::is_namespace;
use super::request_checks::{check_namespace, check_type, check_uid_precondition};
use super::services::{allocation_error, is_service};
use super::system_metadata::{keep_system_metadata, same_content};
use super::write::{storage_error, WriteOptions, UPDATE_ATTEMPTS};
use crate::admission::Operation;
use crate::allocators::{service as service_fields, ServiceAllocators};
use crate::error::{ApiError, ApiResult};
use crate::object;
use crate::registry;
use crate::store::Store;
use crate::watch_cache::CachedObject;
use rkcm_server::rest::key;

/// Which part of an object an update writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpdateTarget {
    /// The object (status kept).
    Main,
    /// `/status` (spec kept).
    Status,
    /// Namespaces' `/finalize` (only `spec.finalizers`).
    Finalize,
    /// CertificateSigningRequests' `/approval` (only `status.conditions`).
    Approval,
}

impl UpdateTarget {
    /// The subresource admission sees: empty, `status`, `finalize` or `approval`.
    pub fn subresource(self) -> &'static str {
        match self {
            UpdateTarget::Main => "",
            UpdateTarget::Status => "status",
            UpdateTarget::Finalize => "finalize",
            UpdateTarget::Approval => "approval",
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

/// Whether a PUT of a missing object creates it (`AllowCreateOnUpdate`: events and services).
fn allow_create_on_update(info: &ResourceInfo) -> bool {
    matches!(
        (info.group, info.kind),
        ("", "Event") | ("events.k8s.io", "Event") | ("", "Service")
    )
}

/// Whether `info` is CertificateSigningRequests, the one kind with an `/approval`.
fn is_certificate_signing_request(info: &ResourceInfo) -> bool {
    (info.group, info.kind) == ("certificates.k8s.io", "CertificateSigningRequest")
}

/// Whether an update leaves an object that must go away now (`ShouldDeleteDuringUpdate`): being
/// deleted, no finalizers left and no grace period pending.
fn should_delete_during_update(info: &ResourceInfo, obj: &Value) -> bool {
    if !object::is_deleting(obj) || !object::finalizers(obj).is_empty() {
        return false;
    }
    if info.kind == "Namespace" && info.group.is_empty() {
        return obj
            .pointer("/spec/finalizers")
            .and_then(Value::as_array)
            .is_none_or(|f| f.is_empty());
    }
    object::deletion_grace(obj).is_none_or(|g| g == 0)
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
    allocators: &ServiceAllocators,
    info: &'static ResourceInfo,
    namespace: Option<&str>,
    name: &str,
    new: Value,
    target: UpdateTarget,
    source: UpdateSource,
    opts: WriteOptions,
) -> ApiResult<Updated> {
    let unconditional = matches!(object::resource_version(&new), Ok(None));
    if !unconditional {
        return update_once(
            store, allocators, info, namespace, name, new, target, source, &opts,
        )
        .await;
    }
    let mut last = None;
    for _ in 0..UPDATE_ATTEMPTS {
        match update_once(
            store,
            allocators,
            info,
            namespace,
            name,
            new.clone(),
            target,
            source,
            &opts,
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
    allocators: &ServiceAllocators,
    info: &'static ResourceInfo,
    namespace: Option<&str>,
    name: &str,
    mut new: Value,
    target: UpdateTarget,
    source: UpdateSource,
    opts: &WriteOptions,
) -> ApiResult<Updated> {
    let strategy = registry::by_kind::strategy(info);
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
        if target == UpdateTarget::Main && allow_create_on_update(info) {
            object::remove_meta(&mut new, "resourceVersion");
            let object = create(store, allocators, info, namespace, new, opts.clone()).await?;
            return Ok(Updated {
                object,
                created: true,
            });
        }
        return Err(ApiError::not_found(info, name));
    };
    let old = &current.value();
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
            Some(old.clone()),
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
            if is_namespace(info) {
                // Only `/finalize` changes spec.finalizers; only the server changes the phase.
                for ptr in ["spec", "status"] {
                    match (old.get(ptr), new.as_object_mut()) {
                        (Some(v), Some(m)) => {
                            m.insert(ptr.into(), v.clone());
                        }
                        (None, Some(m)) => {
                            m.remove(ptr);
                        }
                        _ => {}
                    }
                }
            }
        }
        UpdateTarget::Status => strategy.prepare_for_status_update(&mut new, old),
        UpdateTarget::Approval => {
            if !is_certificate_signing_request(info) {
                return Err(ApiError::method_not_allowed("PUT"));
            }
            strategy.default(&mut new);
            registry::certificatesigningrequests::prepare_for_approval(&mut new, old);
        }
        UpdateTarget::Finalize => {
            let finalizers = new.pointer("/spec/finalizers").cloned();
            let mut merged = old.clone();
            match (merged.as_object_mut(), finalizers) {
                (Some(m), Some(f)) => {
                    let spec = m.entry("spec").or_insert_with(|| json!({}));
                    if let Some(spec) = spec.as_object_mut() {
                        spec.insert("finalizers".into(), f);
                    }
                }
                (Some(m), None) => {
                    if let Some(spec) = m.get_mut("spec").and_then(Value::as_object_mut) {
                        spec.remove("finalizers");
                    }
                }
                (None, _) => {}
            }
            new = merged;
        }
    }
    super::track_update(info, Some(old), &mut new, opts, target.subresource());
    keep_system_metadata(&mut new, old);
    let service = is_service(info) && target == UpdateTarget::Main;
    if service {
        service_fields::normalize_cluster_ips(&mut new, Some(old));
        service_fields::patch_allocated_values(&mut new, old);
        service_fields::drop_type_dependent_fields(&mut new, old);
    }
    let errors = if opts.server_owned {
        Vec::new()
    } else if target == UpdateTarget::Approval {
        registry::certificatesigningrequests::validate_approval(&new, old)
    } else {
        strategy.validate_update(&new, old)
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
            Some(old.clone()),
            opts.dry_run,
        );
        admission.validate(&attrs).await?;
        new = attrs.into_object().unwrap_or(Value::Null);
    }
    let updated = |object| Updated {
        object,
        created: false,
    };
    if same_content(&new, old) {
        return Ok(updated(current));
    }
    // The Service before allocation, to allocate again when another API server took an
    // address meanwhile.
    let unallocated = service.then(|| new.clone());
    let allocation = if service {
        super::ip_addresses::refresh_ranges(store, allocators);
        super::node_ports::refresh(store, allocators);
        Some(
            allocators
                .allocate_update(&mut new, old, opts.dry_run)
                .map_err(|e| allocation_error(info, name, e))?,
        )
    } else {
        None
    };
    if opts.dry_run {
        return Ok(updated(Arc::new(CachedObject::new(new, current.revision))));
    }
    if should_delete_during_update(info, &new) {
        let last = store
            .delete(&key, Some(current.revision))
            .await
            .map_err(|e| storage_error(info, name, e))?;
        if let Some(a) = allocation {
            // The service is gone: nothing this update allocated is kept, and everything the
            // stored object held goes back.
            drop(a);
            allocators.release(&last);
            super::services::record_released(store, allocators, &last, None).await;
        }
        if super::ip_addresses::is_ip_address(info) {
            super::ip_addresses::observe(allocators, &last, false);
        }
        let rev = object::resource_version(&last)
            .ok()
            .flatten()
            .unwrap_or(current.revision);
        return Ok(updated(Arc::new(CachedObject::new(last, rev))));
    }
    let (allocation, taken) = match (allocation, &unallocated) {
        (Some(allocation), Some(before)) => {
            let allocation = super::services::record_allocations(
                store,
                allocators,
                info,
                before,
                Some(old),
                &mut new,
                allocation,
            )
            .await?;
            (Some(allocation), Some(new.clone()))
        }
        (allocation, _) => (allocation, None),
    };
    let written = store.update(&key, new, current.revision).await;
    if let (Err(_), Some(svc)) = (&written, &taken) {
        super::services::record_released(store, allocators, svc, Some(old)).await;
    }
    let stored = written.map_err(|e| storage_error(info, name, e))?;
    if let Some(a) = allocation {
        a.commit();
        super::services::record_released(store, allocators, old, Some(&stored.value())).await;
    }
    Ok(updated(stored))
}
