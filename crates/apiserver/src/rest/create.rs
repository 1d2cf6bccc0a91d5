//! Create (POST): defaults, generated names, system metadata and storage of a new object.

use std::sync::Arc;

use serde_json::{json, Value};

use rkcm_apimachinery::catalog::ResourceInfo;

use super::namespaces::{is_namespace, prepare_namespace_for_create};
use super::request_checks::{check_namespace, check_type};
use super::services::{allocation_error, is_service};
use super::write::{storage_error, WriteOptions};
use crate::admission::Operation;
use crate::allocators::{service as service_fields, ServiceAllocators};
use crate::error::{ApiError, ApiResult};
use crate::object;
use crate::registry;
use crate::storage;
use crate::store::Store;
use crate::watch_cache::CachedObject;
use rkcm_server::rest::key;
use rkcm_server::rest::names::{random_suffix, GENERATE_NAME_ATTEMPTS};

/// Creates `obj` in `namespace` (POST on a collection); returns the stored object.
///
/// Services get their cluster IP and node ports from `allocators`; a create that fails after
/// allocating releases them.
pub async fn create(
    store: &Store,
    allocators: &ServiceAllocators,
    info: &'static ResourceInfo,
    namespace: Option<&str>,
    mut obj: Value,
    opts: WriteOptions,
) -> ApiResult<Arc<CachedObject>> {
    let strategy = registry::by_kind::strategy(info);
    check_type(info, &mut obj)?;
    check_namespace(info, &mut obj, namespace)?;
    if object::metadata_mut(&mut obj).is_none() {
        return Err(ApiError::bad_request(
            "the request body must be a JSON object",
        ));
    }
    let requested_name = object::name(&obj).to_string();
    for field in [
        "resourceVersion",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "selfLink",
    ] {
        object::remove_meta(&mut obj, field);
    }
    strategy.default(&mut obj);
    if let Some(admission) = &opts.admission {
        // The mutating phase sees the decoded, defaulted object, before the kind prepares it
        // (`createHandler` calls `Admit` before `Store.Create`).
        let mut attrs = admission.attributes(
            Operation::Create,
            info,
            "",
            namespace,
            &requested_name,
            Some(obj),
            None,
            opts.dry_run,
        );
        admission.admit(&mut attrs).await?;
        obj = attrs.into_object().unwrap_or(Value::Null);
        check_type(info, &mut obj)?;
        if object::metadata_mut(&mut obj).is_none() {
            return Err(ApiError::internal(
                "admission",
                "a plugin left an object without metadata",
            ));
        }
    }
    strategy.prepare_for_create(&mut obj);
    if is_namespace(info) {
        prepare_namespace_for_create(&mut obj, &requested_name);
    }
    super::track_update(info, None, &mut obj, &opts, "");
    let service = is_service(info);
    if service {
        service_fields::normalize_cluster_ips(&mut obj, None);
    }
    let now = object::now_rfc3339(jiff::Timestamp::now());
    object::set_meta(&mut obj, "uid", json!(uuid::Uuid::new_v4().to_string()));
    object::set_meta(&mut obj, "creationTimestamp", json!(now));
    if obj
        .pointer("/metadata/generation")
        .is_none_or(Value::is_null)
    {
        object::set_meta(&mut obj, "generation", json!(1));
    }
    let generate = requested_name
        .is_empty()
        .then(|| object::meta_str(&obj, "generateName").map(str::to_string))
        .flatten()
        .filter(|g| !g.is_empty());
    let attempts = if generate.is_some() {
        GENERATE_NAME_ATTEMPTS
    } else {
        1
    };
    let mut last_err = None;
    let mut obj = Some(obj);
    for attempt in 0..attempts {
        // Only generated names are retried; the last attempt takes the object itself.
        let mut candidate = if attempt + 1 == attempts {
            obj.take().unwrap_or(Value::Null)
        } else {
            obj.clone().unwrap_or(Value::Null)
        };
        if let Some(base) = &generate {
            // Name length limit: the base is truncated as SimpleNameGenerator does (63 - 5).
            let base: String = base.chars().take(58).collect();
            object::set_meta(
                &mut candidate,
                "name",
                json!(format!("{base}{}", random_suffix())),
            );
        }
        let name = object::name(&candidate).to_string();
        // What the kind derives from its final name and uid (a Job's selector and labels).
        strategy.complete_create(&mut candidate);
        let errors = if opts.server_owned {
            Vec::new()
        } else {
            strategy.validate_create(&candidate)
        };
        if !errors.is_empty() {
            return Err(ApiError::invalid(info, &name, &errors));
        }
        let key = key(info, namespace, &name);
        // The Service before allocation, to allocate again when another API server took an
        // address meanwhile.
        let unallocated = service.then(|| candidate.clone());
        let allocation = if service {
            super::ip_addresses::refresh_ranges(store, allocators);
            super::node_ports::refresh(store, allocators);
            Some(
                allocators
                    .allocate_create(&mut candidate, opts.dry_run)
                    .map_err(|e| allocation_error(info, &name, e))?,
            )
        } else {
            None
        };
        if let Some(admission) = &opts.admission {
            // The validating phase sees the object as it would be stored, its name generated
            // (`createValidation` in `Store.Create`).
            let attrs = admission.attributes(
                Operation::Create,
                info,
                "",
                namespace,
                &name,
                Some(candidate),
                None,
                opts.dry_run,
            );
            admission.validate(&attrs).await?;
            candidate = attrs.into_object().unwrap_or(Value::Null);
        }
        if opts.dry_run {
            if store.get(&key).is_some() {
                return Err(ApiError::already_exists(info, &name));
            }
            return Ok(Arc::new(CachedObject::new(
                candidate,
                store.cache().revision(),
            )));
        }
        let (allocation, taken) = match (allocation, &unallocated) {
            (Some(allocation), Some(before)) => {
                let allocation = super::services::record_allocations(
                    store,
                    allocators,
                    info,
                    before,
                    None,
                    &mut candidate,
                    allocation,
                )
                .await?;
                (Some(allocation), Some(candidate.clone()))
            }
            (allocation, _) => (allocation, None),
        };
        let created = store.create(&key, candidate).await;
        if let (Err(_), Some(svc)) = (&created, &taken) {
            super::services::record_released(store, allocators, svc, None).await;
        }
        match created {
            Ok(stored) => {
                if let Some(a) = allocation {
                    a.commit();
                }
                if super::ip_addresses::is_ip_address(info) {
                    super::ip_addresses::observe(allocators, &stored.value(), true);
                }
                return Ok(stored);
            }
            Err(storage::Error::AlreadyExists(_)) if generate.is_some() => {
                last_err = Some(ApiError::already_exists(info, &name));
            }
            Err(e) => return Err(storage_error(info, &name, e)),
        }
    }
    Err(last_err.unwrap_or_else(|| ApiError::internal("name generation", "no attempt made")))
}
