//! Create (POST): defaults, generated names, system metadata and storage of a new object.

use std::sync::Arc;

use serde_json::{json, Value};

use rkcm_apimachinery::catalog::ResourceInfo;

use rkcm_storage as storage;
use rkcm_storage::object;
use rkcm_storage::store::Store;
use rkcm_storage::watch_cache::CachedObject;

use super::keys::key;
use super::names::{random_suffix, GENERATE_NAME_ATTEMPTS};
use super::request_checks::{check_namespace, check_type};
use super::resources::Resources;
use super::write::{storage_error, WriteOptions};
use crate::admission::Operation;
use crate::error::{ApiError, ApiResult};

/// Creates `obj` in `namespace` (POST on a collection); returns the stored object.
///
/// What the resource's storage takes besides the object (a Service's cluster IP and node
/// ports) is taken by its [`super::resources::WriteHooks`]; a create that fails after taking gives it back.
pub async fn create(
    store: &Store,
    resources: &dyn Resources,
    info: &'static ResourceInfo,
    namespace: Option<&str>,
    mut obj: Value,
    opts: WriteOptions,
) -> ApiResult<Arc<CachedObject>> {
    let strategy = resources.strategy(info);
    let hooks = resources.hooks(info);
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
    if let Some(hooks) = hooks {
        hooks.prepare_for_create(&mut obj, &requested_name);
    }
    super::managed_fields::track_update(resources, info, None, &mut obj, &opts, "");
    if let Some(hooks) = hooks {
        hooks.normalize(&mut obj, None);
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
        let mut pending = match hooks {
            Some(hooks) => hooks.begin_write(store, info, &mut candidate, None, opts.dry_run)?,
            None => None,
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
        let taken = match &mut pending {
            Some(pending) => {
                pending.record(store, &mut candidate).await?;
                Some(candidate.clone())
            }
            None => None,
        };
        let created = store.create(&key, candidate).await;
        if let Some(pending) = pending {
            match (&created, &taken) {
                (Ok(stored), _) => pending.commit(store, &stored.value()).await,
                (Err(_), Some(written)) => pending.abort(store, written).await,
                (Err(_), None) => {}
            }
        }
        match created {
            Ok(stored) => {
                if let Some(hooks) = hooks {
                    hooks.after_create(&stored.value());
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
