//! Delete: grace periods, finalizers and the garbage collector's propagation policies.

use std::sync::Arc;

use serde_json::{json, Value};

use rkcm_apimachinery::catalog::ResourceInfo;

use rkcm_storage as storage;
use rkcm_storage::object;
use rkcm_storage::store::Store;

use super::keys::{key, UPDATE_ATTEMPTS};
use super::resources::Resources;
use super::strategy::{GracefulDelete, Strategy};
use super::system_metadata::same_content;
use super::write::storage_error;
use crate::admission::Operation;
use crate::error::{ApiError, ApiResult};

/// Finalizer asking the garbage collector to orphan dependents.
pub const ORPHAN_FINALIZER: &str = "orphan";

/// Finalizer asking the garbage collector to delete dependents first.
pub const FOREGROUND_FINALIZER: &str = "foregroundDeletion";

/// `DeleteOptions` that matter here.
#[derive(Clone, Debug, Default)]
pub struct DeleteOptions {
    /// `gracePeriodSeconds`.
    pub grace_period_seconds: Option<i64>,
    /// `propagationPolicy` (`Orphan`, `Background`, `Foreground`).
    pub propagation_policy: Option<String>,
    /// Deprecated `orphanDependents`.
    pub orphan_dependents: Option<bool>,
    /// `preconditions.uid`.
    pub precondition_uid: Option<String>,
    /// `preconditions.resourceVersion`.
    pub precondition_resource_version: Option<String>,
    /// `dryRun=All`.
    pub dry_run: bool,
    /// The admission of a client's request (none for deletes the server makes itself).
    pub admission: Option<crate::admission::Admission>,
}

impl DeleteOptions {
    /// Reads the options from a `DeleteOptions` JSON body (fields absent there keep their value).
    pub fn merge_body(&mut self, body: &Value) -> ApiResult<()> {
        if !body.is_object() {
            return Err(ApiError::bad_request("DeleteOptions must be a JSON object"));
        }
        if let Some(g) = body.get("gracePeriodSeconds").filter(|v| !v.is_null()) {
            self.grace_period_seconds =
                Some(g.as_i64().ok_or_else(|| {
                    ApiError::bad_request("gracePeriodSeconds must be an integer")
                })?);
        }
        if let Some(p) = body.get("propagationPolicy").and_then(Value::as_str) {
            self.propagation_policy = Some(p.to_string());
        }
        if let Some(o) = body.get("orphanDependents").and_then(Value::as_bool) {
            self.orphan_dependents = Some(o);
        }
        if let Some(pre) = body.get("preconditions") {
            if let Some(u) = pre.get("uid").and_then(Value::as_str) {
                self.precondition_uid = Some(u.to_string());
            }
            if let Some(rv) = pre.get("resourceVersion").and_then(Value::as_str) {
                self.precondition_resource_version = Some(rv.to_string());
            }
        }
        if let Some(d) = body.get("dryRun").and_then(Value::as_array) {
            self.dry_run |= d.iter().any(|v| v.as_str() == Some("All"));
        }
        Ok(())
    }

    /// The GC finalizer this delete asks for, if any (`deletionFinalizersForGarbageCollection`).
    fn gc_finalizer(&self, strategy: &dyn Strategy) -> ApiResult<Option<&'static str>> {
        if self.orphan_dependents.is_some() && self.propagation_policy.is_some() {
            return Err(ApiError::new(
                422,
                "Invalid",
                "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Invalid value: \"\": orphanDependents and deletionPropagation cannot be both set",
            ));
        }
        Ok(match (self.propagation_policy.as_deref(), self.orphan_dependents) {
            (Some("Orphan"), _) | (None, Some(true)) => Some(ORPHAN_FINALIZER),
            (Some("Foreground"), _) => Some(FOREGROUND_FINALIZER),
            (Some("Background"), _) | (None, Some(false)) => None,
            (Some(other), _) => {
                return Err(ApiError::new(
                    422,
                    "Invalid",
                    format!(
                        "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Unsupported value: \"{other}\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""
                    ),
                ))
            }
            (None, None) => strategy.default_propagation_orphans().then_some(ORPHAN_FINALIZER),
        })
    }
}

/// What a DELETE did.
#[derive(Debug)]
pub enum Deleted {
    /// The object is gone; its last state.
    Gone(Value),
    /// The object stays (finalizers, grace period, namespace content); its current state.
    Pending(Value),
}

/// Deletes object `name` (DELETE), honouring grace periods, finalizers and propagation.
///
/// What the resource's storage took besides the object (a Service's cluster IP and node ports)
/// goes back through its [`super::resources::WriteHooks`] once the object is gone.
pub async fn delete(
    store: &Store,
    resources: &dyn Resources,
    info: &'static ResourceInfo,
    namespace: Option<&str>,
    name: &str,
    opts: &DeleteOptions,
) -> ApiResult<Deleted> {
    let strategy = resources.strategy(info);
    let hooks = resources.hooks(info);
    if let Some(admission) = &opts.admission {
        // `deleteHandler` admits the request before reading the object: no object, no old one.
        let mut attrs = admission.attributes(
            Operation::Delete,
            info,
            "",
            namespace,
            name,
            None,
            None,
            opts.dry_run,
        );
        admission.admit(&mut attrs).await?;
    }
    if let Some(g) = opts.grace_period_seconds {
        if g < 0 {
            return Err(ApiError::new(
                422,
                "Invalid",
                format!("DeleteOptions.meta.k8s.io \"\" is invalid: gracePeriodSeconds: Invalid value: {g}: must be greater than or equal to 0"),
            ));
        }
    }
    let gc_finalizer = opts.gc_finalizer(strategy)?;
    let key = key(info, namespace, name);
    for _ in 0..UPDATE_ATTEMPTS {
        let current = store
            .get(&key)
            .ok_or_else(|| ApiError::not_found(info, name))?;
        let old = &current.value();
        if let Some(uid) = &opts.precondition_uid {
            if uid != object::uid(old) {
                return Err(ApiError::conflict_with(
                    info,
                    name,
                    &format!(
                        "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                        object::uid(old)
                    ),
                ));
            }
        }
        if let Some(rv) = &opts.precondition_resource_version {
            if *rv != current.revision.to_string() {
                return Err(ApiError::conflict_with(
                    info,
                    name,
                    &format!(
                        "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
                        current.revision
                    ),
                ));
            }
        }
        if let Some(admission) = &opts.admission {
            // `deleteValidation` in `Store.Delete`: the object being deleted is the old one.
            let attrs = admission.attributes(
                Operation::Delete,
                info,
                "",
                namespace,
                name,
                None,
                Some(Arc::new(old.clone())),
                opts.dry_run,
            );
            admission.validate(&attrs).await?;
        }
        let mut next = old.clone();
        let mut finalizers = object::finalizers(old);
        if let Some(f) = gc_finalizer {
            // Orphan and foreground exclude each other (`shouldUpdateFinalizers`).
            finalizers.retain(|x| x != ORPHAN_FINALIZER && x != FOREGROUND_FINALIZER);
            finalizers.push(f.to_string());
        } else if opts.propagation_policy.as_deref() == Some("Background")
            || opts.orphan_dependents == Some(false)
        {
            finalizers.retain(|x| x != ORPHAN_FINALIZER && x != FOREGROUND_FINALIZER);
        }
        if let Some(hooks) = hooks {
            hooks.prepare_for_delete(&mut next, &mut finalizers);
        }
        let now = jiff::Timestamp::now();
        let held = hooks.is_some_and(|hooks| hooks.holds(&next));
        let grace = strategy.graceful_delete(old, opts.grace_period_seconds);
        let already_deleting = object::is_deleting(old);
        match grace {
            GracefulDelete::Graceful {
                grace_period_seconds,
            } if grace_period_seconds > 0 => {
                // Keep an earlier deadline: a graceful delete may shorten, never extend, the grace.
                let keep_old = already_deleting
                    && object::deletion_grace(old).is_some_and(|g| g <= grace_period_seconds);
                if !keep_old {
                    let deadline = now
                        .checked_add(jiff::SignedDuration::from_secs(grace_period_seconds))
                        .unwrap_or(now);
                    object::set_meta(
                        &mut next,
                        "deletionTimestamp",
                        json!(object::now_rfc3339(deadline)),
                    );
                    object::set_meta(
                        &mut next,
                        "deletionGracePeriodSeconds",
                        json!(grace_period_seconds),
                    );
                }
            }
            _ => {
                if !finalizers.is_empty() || held {
                    if !already_deleting {
                        object::set_meta(
                            &mut next,
                            "deletionTimestamp",
                            json!(object::now_rfc3339(now)),
                        );
                    }
                    object::set_meta(&mut next, "deletionGracePeriodSeconds", json!(0));
                } else {
                    // Nothing holds the object: remove it.
                    if opts.dry_run {
                        return Ok(Deleted::Gone(old.clone()));
                    }
                    return match store.delete(&key, Some(current.revision)).await {
                        Ok(last) => {
                            if let Some(hooks) = hooks {
                                hooks.after_delete(store, &last).await;
                            }
                            Ok(Deleted::Gone(last))
                        }
                        Err(storage::Error::Conflict { .. }) => continue,
                        Err(e) => Err(storage_error(info, name, e)),
                    };
                }
            }
        }
        object::set_finalizers(&mut next, &finalizers);
        if same_content(&next, old) {
            return Ok(Deleted::Pending(old.clone()));
        }
        if opts.dry_run {
            return Ok(Deleted::Pending(next));
        }
        match store.update(&key, next, current.revision).await {
            Ok(stored) => return Ok(Deleted::Pending(stored.value())),
            Err(storage::Error::Conflict { .. }) => continue,
            Err(e) => return Err(storage_error(info, name, e)),
        }
    }
    Err(ApiError::conflict(info, name))
}
