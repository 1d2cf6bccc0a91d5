//! The generic registry: create, update, delete and subresource semantics over the [`Store`].
//!
//! Mirrors `staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go` together with
//! `registry/rest/{create,update,delete}.go`, with the per-kind behaviour taken from
//! [`crate::registry::Strategy`]. Bytes and HTTP live in [`crate::http`]; this module works on
//! JSON values.

use std::sync::Arc;

use rand::Rng;
use serde_json::{json, Value};

use rkcm_apimachinery::catalog::ResourceInfo;

use crate::error::{ApiError, ApiResult, Cause};
use crate::object;
use crate::registry::{self, GracefulDelete, Strategy};
use crate::storage;
use crate::store::Store;
use crate::watch_cache::CachedObject;

/// Namespaces that exist from the start and may not be deleted.
pub const SYSTEM_NAMESPACES: &[&str] =
    &["default", "kube-system", "kube-public", "kube-node-lease"];
/// The finalizer the namespace controller removes once a namespace is empty.
pub const NAMESPACE_FINALIZER: &str = "kubernetes";
/// Finalizer asking the garbage collector to orphan dependents.
pub const ORPHAN_FINALIZER: &str = "orphan";
/// Finalizer asking the garbage collector to delete dependents first.
pub const FOREGROUND_FINALIZER: &str = "foregroundDeletion";

/// Attempts at a free name for `generateName` before giving up (kube's `RetryGenerateName`).
const GENERATE_NAME_ATTEMPTS: usize = 8;
/// Attempts of a read-modify-write (patch, scale, finalize) on conflicts with other writers.
pub const UPDATE_ATTEMPTS: usize = 16;

/// Storage key of an object.
pub fn key(info: &ResourceInfo, namespace: Option<&str>, name: &str) -> String {
    let group = if info.group.is_empty() {
        "core"
    } else {
        info.group
    };
    match namespace {
        Some(ns) if info.namespaced() => format!("/{group}/{}/{ns}/{name}", info.plural),
        _ => format!("/{group}/{}/{name}", info.plural),
    }
}

/// Storage key prefix of a collection (all namespaces when `namespace` is `None`).
pub fn prefix(info: &ResourceInfo, namespace: Option<&str>) -> String {
    let group = if info.group.is_empty() {
        "core"
    } else {
        info.group
    };
    match namespace {
        Some(ns) if info.namespaced() => format!("/{group}/{}/{ns}/", info.plural),
        _ => format!("/{group}/{}/", info.plural),
    }
}

fn namespace_info() -> &'static ResourceInfo {
    rkcm_apimachinery::catalog::by_kind("v1", "Namespace").expect("namespaces are in the catalog")
}

/// Maps a storage error on `name` of `info` to its API error.
pub fn storage_error(info: &ResourceInfo, name: &str, err: storage::Error) -> ApiError {
    match err {
        storage::Error::AlreadyExists(_) => ApiError::already_exists(info, name),
        storage::Error::NotFound(_) => ApiError::not_found(info, name),
        storage::Error::Conflict { .. } => ApiError::conflict(info, name),
        storage::Error::Backend(e) => ApiError::internal("storage write failed", e),
    }
}

/// Random suffix as `names.SimpleNameGenerator`: 5 characters of `bcdfghjklmnpqrstvwxz2456789`.
pub fn random_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut rng = rand::rng();
    (0..5)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect()
}

/// Options of a write request.
#[derive(Clone, Copy, Debug, Default)]
pub struct WriteOptions {
    /// `dryRun=All`: validate, do not persist.
    pub dry_run: bool,
}

/// Which part of an object an update writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpdateTarget {
    /// The object (status kept).
    Main,
    /// `/status` (spec kept).
    Status,
    /// Namespaces' `/finalize` (only `spec.finalizers`).
    Finalize,
}

/// Checks `apiVersion` and `kind` of a request body against the resource.
pub fn check_type(info: &ResourceInfo, obj: &mut Value) -> ApiResult<()> {
    let Some(map) = obj.as_object_mut() else {
        return Err(ApiError::bad_request(
            "the request body must be a JSON object",
        ));
    };
    let api_version = info.api_version();
    match map.get("apiVersion").and_then(Value::as_str) {
        None | Some("") => {
            map.insert("apiVersion".into(), Value::String(api_version));
        }
        Some(v) if v == api_version => {}
        Some(v) => {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({v}) does not match the expected API version ({api_version})"
            )))
        }
    }
    match map.get("kind").and_then(Value::as_str) {
        None | Some("") => {
            map.insert("kind".into(), Value::String(info.kind.to_string()));
        }
        Some(k) if k == info.kind => {}
        Some(k) => {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({k}) does not match the expected kind ({})",
                info.kind
            )))
        }
    }
    Ok(())
}

/// NamespaceLifecycle admission for creates: the namespace must exist and not be terminating.
fn admit_create(store: &Store, info: &ResourceInfo, namespace: &str, name: &str) -> ApiResult<()> {
    let ns_info = namespace_info();
    let Some(ns) = store.get(&key(ns_info, None, namespace)) else {
        return Err(ApiError::not_found(ns_info, namespace));
    };
    let terminating = object::is_deleting(&ns.value)
        || ns.value.pointer("/status/phase").and_then(Value::as_str) == Some("Terminating");
    if terminating {
        let why = format!(
            "unable to create new content in namespace {namespace} because it is being terminated"
        );
        let mut err = if name.is_empty() {
            let mut e = ApiError::new(
                403,
                "Forbidden",
                format!("{} is forbidden: {why}", info.qualified_plural()),
            );
            e.details.group = Some(info.group.to_string());
            e.details.kind = Some(info.plural.to_string());
            e
        } else {
            ApiError::forbidden(info, name, &why)
        };
        err.details.causes.push(Cause {
            reason: "NamespaceTerminating".into(),
            message: format!("namespace {namespace} is being terminated"),
            field: "metadata.namespace".into(),
        });
        return Err(err);
    }
    Ok(())
}

/// Reconciles the namespace of a body with the one of the request path.
fn check_namespace(info: &ResourceInfo, obj: &mut Value, namespace: Option<&str>) -> ApiResult<()> {
    if !info.namespaced() {
        object::remove_meta(obj, "namespace");
        return Ok(());
    }
    let Some(ns) = namespace else {
        return Err(ApiError::bad_request(
            "a namespace must be specified for namespaced resources",
        ));
    };
    match object::meta_str(obj, "namespace") {
        None | Some("") => object::set_meta(obj, "namespace", json!(ns)),
        Some(body_ns) if body_ns == ns => {}
        Some(_) => return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        )),
    }
    Ok(())
}

/// Creates `obj` in `namespace` (POST on a collection); returns the stored object.
pub async fn create(
    store: &Store,
    info: &'static ResourceInfo,
    namespace: Option<&str>,
    mut obj: Value,
    opts: WriteOptions,
) -> ApiResult<Arc<CachedObject>> {
    let strategy = registry::strategy(info);
    check_type(info, &mut obj)?;
    check_namespace(info, &mut obj, namespace)?;
    if object::metadata_mut(&mut obj).is_none() {
        return Err(ApiError::bad_request(
            "the request body must be a JSON object",
        ));
    }
    let requested_name = object::name(&obj).to_string();
    if let Some(ns) = namespace.filter(|_| info.namespaced()) {
        admit_create(store, info, ns, &requested_name)?;
    }
    for field in [
        "resourceVersion",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "selfLink",
    ] {
        object::remove_meta(&mut obj, field);
    }
    strategy.default(&mut obj);
    strategy.prepare_for_create(&mut obj);
    if is_namespace(info) {
        prepare_namespace_for_create(&mut obj, &requested_name);
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
        let errors = strategy.validate_create(&candidate);
        if !errors.is_empty() {
            return Err(ApiError::invalid(info, &name, &errors));
        }
        let key = key(info, namespace, &name);
        if opts.dry_run {
            if store.get(&key).is_some() {
                return Err(ApiError::already_exists(info, &name));
            }
            return Ok(Arc::new(CachedObject::new(
                candidate,
                store.cache().revision(),
            )));
        }
        match store.create(&key, candidate).await {
            Ok(stored) => return Ok(stored),
            Err(storage::Error::AlreadyExists(_)) if generate.is_some() => {
                last_err = Some(ApiError::already_exists(info, &name));
            }
            Err(e) => return Err(storage_error(info, &name, e)),
        }
    }
    Err(last_err.unwrap_or_else(|| ApiError::internal("name generation", "no attempt made")))
}

/// The object `name`, or 404.
pub fn get(
    store: &Store,
    info: &ResourceInfo,
    namespace: Option<&str>,
    name: &str,
) -> ApiResult<std::sync::Arc<crate::watch_cache::CachedObject>> {
    store
        .get(&key(info, namespace, name))
        .ok_or_else(|| ApiError::not_found(info, name))
}

/// Whether a PUT of a missing object creates it (`AllowCreateOnUpdate`: events and services).
fn allow_create_on_update(info: &ResourceInfo) -> bool {
    matches!(
        (info.group, info.kind),
        ("", "Event") | ("events.k8s.io", "Event") | ("", "Service")
    )
}

fn is_namespace(info: &ResourceInfo) -> bool {
    info.kind == "Namespace" && info.group.is_empty()
}

/// Namespace `PrepareForCreate`: phase Active, the `kubernetes` finalizer, and the
/// `kubernetes.io/metadata.name` label.
fn prepare_namespace_for_create(obj: &mut Value, name: &str) {
    let Some(m) = obj.as_object_mut() else { return };
    m.insert("status".into(), json!({"phase": "Active"}));
    let spec = m.entry("spec").or_insert_with(|| json!({}));
    if !spec.is_object() {
        *spec = json!({});
    }
    let finalizers = spec
        .as_object_mut()
        .map(|s| s.entry("finalizers").or_insert_with(|| json!([])));
    if let Some(f) = finalizers {
        if !f.is_array() {
            *f = json!([]);
        }
        if let Some(a) = f.as_array_mut() {
            if !a.iter().any(|x| x.as_str() == Some(NAMESPACE_FINALIZER)) {
                a.push(json!(NAMESPACE_FINALIZER));
            }
        }
    }
    if !name.is_empty() {
        if let Some(meta) = object::metadata_mut(obj) {
            let labels = meta.entry("labels").or_insert_with(|| json!({}));
            if let Some(l) = labels.as_object_mut() {
                l.insert("kubernetes.io/metadata.name".into(), json!(name));
            }
        }
    }
}

/// Copies the metadata only the server may set from `old` into `new` (`rest.BeforeUpdate`). A
/// `metadata.uid` that `new` carries is kept, so that validation refuses one that differs.
fn keep_system_metadata(new: &mut Value, old: &Value) {
    if object::meta_str(new, "uid").is_none_or(str::is_empty) {
        match old.pointer("/metadata/uid") {
            Some(v) => object::set_meta(new, "uid", v.clone()),
            None => object::remove_meta(new, "uid"),
        }
    }
    for field in [
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "namespace",
    ] {
        match old.pointer(&format!("/metadata/{field}")) {
            Some(v) => object::set_meta(new, field, v.clone()),
            None => object::remove_meta(new, field),
        }
    }
}

/// Whether two versions of an object differ other than in resourceVersion.
fn same_content(a: &Value, b: &Value) -> bool {
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else {
        return a == b;
    };
    if a.len() != b.len() {
        return false;
    }
    a.iter().all(|(k, va)| {
        let Some(vb) = b.get(k) else { return false };
        if k != "metadata" {
            return va == vb;
        }
        match (va.as_object(), vb.as_object()) {
            (Some(ma), Some(mb)) => {
                let count = |m: &serde_json::Map<String, Value>| {
                    m.keys().filter(|k| *k != "resourceVersion").count()
                };
                count(ma) == count(mb)
                    && ma
                        .iter()
                        .filter(|(k, _)| *k != "resourceVersion")
                        .all(|(k, v)| mb.get(k) == Some(v))
            }
            _ => va == vb,
        }
    })
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

/// What an update wrote.
#[derive(Clone, Debug)]
pub struct Updated {
    /// The stored object (unchanged when the update changed nothing).
    pub object: Arc<CachedObject>,
    /// Whether the update created the object (a PUT of a missing object where kube allows
    /// `AllowCreateOnUpdate`); kube answers 201 Created then.
    pub created: bool,
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

/// The precondition a PUT body's `metadata.uid` sets (`defaultUpdatedObjectInfo.Preconditions`):
/// 409 Conflict when it names another object than `current`.
fn check_uid_precondition(
    info: &ResourceInfo,
    name: &str,
    body: &Value,
    current: &Value,
) -> ApiResult<()> {
    match object::meta_str(body, "uid").filter(|u| !u.is_empty()) {
        Some(uid) if uid != object::uid(current) => Err(ApiError::conflict_with(
            info,
            name,
            &format!(
                "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                object::uid(current)
            ),
        )),
        _ => Ok(()),
    }
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
        return update_once(store, info, namespace, name, new, target, source, opts).await;
    }
    let mut last = None;
    for _ in 0..UPDATE_ATTEMPTS {
        match update_once(
            store,
            info,
            namespace,
            name,
            new.clone(),
            target,
            source,
            opts,
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
    info: &'static ResourceInfo,
    namespace: Option<&str>,
    name: &str,
    mut new: Value,
    target: UpdateTarget,
    source: UpdateSource,
    opts: WriteOptions,
) -> ApiResult<Updated> {
    let strategy = registry::strategy(info);
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
            let object = create(store, info, namespace, new, opts).await?;
            return Ok(Updated {
                object,
                created: true,
            });
        }
        return Err(ApiError::not_found(info, name));
    };
    let old = &current.value;
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
    match target {
        UpdateTarget::Main => {
            strategy.default(&mut new);
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
    keep_system_metadata(&mut new, old);
    let errors = strategy.validate_update(&new, old);
    if !errors.is_empty() {
        return Err(ApiError::invalid(info, name, &errors));
    }
    let updated = |object| Updated {
        object,
        created: false,
    };
    if same_content(&new, old) {
        return Ok(updated(current));
    }
    if opts.dry_run {
        return Ok(updated(Arc::new(CachedObject::new(new, current.revision))));
    }
    if should_delete_during_update(info, &new) {
        let last = store
            .delete(&key, Some(current.revision))
            .await
            .map_err(|e| storage_error(info, name, e))?;
        let rev = object::resource_version(&last)
            .ok()
            .flatten()
            .unwrap_or(current.revision);
        return Ok(updated(Arc::new(CachedObject::new(last, rev))));
    }
    store
        .update(&key, new, current.revision)
        .await
        .map(updated)
        .map_err(|e| storage_error(info, name, e))
}

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
pub async fn delete(
    store: &Store,
    info: &'static ResourceInfo,
    namespace: Option<&str>,
    name: &str,
    opts: &DeleteOptions,
) -> ApiResult<Deleted> {
    let strategy = registry::strategy(info);
    let is_namespace = is_namespace(info);
    if is_namespace && SYSTEM_NAMESPACES.contains(&name) {
        return Err(ApiError::forbidden(
            info,
            name,
            "this namespace may not be deleted",
        ));
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
        let old = &current.value;
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
        let now = jiff::Timestamp::now();
        let namespace_pending = is_namespace
            && next
                .pointer("/spec/finalizers")
                .and_then(Value::as_array)
                .is_some_and(|f| !f.is_empty());
        let grace = if is_namespace {
            GracefulDelete::Immediate
        } else {
            strategy.graceful_delete(old, opts.grace_period_seconds)
        };
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
                if !finalizers.is_empty() || namespace_pending {
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
                        Ok(last) => Ok(Deleted::Gone(last)),
                        Err(storage::Error::Conflict { .. }) => continue,
                        Err(e) => Err(storage_error(info, name, e)),
                    };
                }
            }
        }
        if is_namespace {
            if let Some(m) = next.as_object_mut() {
                let status = m.entry("status").or_insert_with(|| json!({}));
                if let Some(s) = status.as_object_mut() {
                    s.insert("phase".into(), json!("Terminating"));
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
            Ok(stored) => return Ok(Deleted::Pending(stored.value.clone())),
            Err(storage::Error::Conflict { .. }) => continue,
            Err(e) => return Err(storage_error(info, name, e)),
        }
    }
    Err(ApiError::conflict(info, name))
}

/// The `autoscaling/v1` Scale of an object.
pub fn scale_of(info: &ResourceInfo, obj: &Value) -> ApiResult<Value> {
    let strategy = registry::strategy(info);
    let (spec, status, selector) = strategy
        .scale_replicas(obj)
        .ok_or_else(ApiError::no_route)?;
    let meta = obj.get("metadata").cloned().unwrap_or_else(|| json!({}));
    let mut scale_meta = serde_json::Map::new();
    for field in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(v) = meta.get(field) {
            scale_meta.insert(field.into(), v.clone());
        }
    }
    let mut status_obj = json!({"replicas": status});
    if !selector.is_empty() {
        status_obj["selector"] = json!(selector);
    }
    Ok(json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": Value::Object(scale_meta),
        "spec": {"replicas": spec},
        "status": status_obj,
    }))
}

/// Writes `spec.replicas` of object `name` from a Scale (PUT `/scale`, or the result of a PATCH
/// as `source` says); returns the new Scale. A PUT's `metadata.uid` is a precondition (409); the
/// uid of a patched Scale is not looked at, as kube's `scaleUpdatedObjectInfo` ignores it.
pub async fn update_scale(
    store: &Store,
    info: &'static ResourceInfo,
    namespace: Option<&str>,
    name: &str,
    scale: &Value,
    source: UpdateSource,
    opts: WriteOptions,
) -> ApiResult<Value> {
    let strategy = registry::strategy(info);
    if scale
        .get("kind")
        .and_then(Value::as_str)
        .is_some_and(|k| k != "Scale")
    {
        return Err(ApiError::bad_request(
            "the body of a scale request must be a Scale",
        ));
    }
    let replicas = scale
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if replicas < 0 || replicas > i64::from(i32::MAX) {
        let mut e = ApiError::invalid(
            info,
            name,
            &[registry::FieldError::invalid(
                "spec.replicas",
                &json!(replicas),
                "must be greater than or equal to 0",
            )],
        );
        e.message = e.message.replacen(
            &format!(
                "{}{}",
                info.kind,
                if info.group.is_empty() {
                    String::new()
                } else {
                    format!(".{}", info.group)
                }
            ),
            "Scale.autoscaling",
            1,
        );
        e.details.kind = Some("Scale".into());
        e.details.group = Some("autoscaling".into());
        return Err(e);
    }
    let key = key(info, namespace, name);
    for _ in 0..UPDATE_ATTEMPTS {
        let current = store
            .get(&key)
            .ok_or_else(|| ApiError::not_found(info, name))?;
        if source == UpdateSource::Put {
            check_uid_precondition(info, name, scale, &current.value)?;
        }
        match object::resource_version(scale) {
            Ok(Some(rv)) if rv != current.revision => return Err(ApiError::conflict(info, name)),
            Ok(_) => {}
            Err(bad) => {
                return Err(ApiError::bad_request(format!(
                    "invalid resourceVersion {bad:?}"
                )))
            }
        }
        let old = &current.value;
        let mut new = old.clone();
        strategy
            .set_scale_replicas(&mut new, replicas as i32)
            .map_err(|e| ApiError::invalid(info, name, &[e]))?;
        strategy.prepare_for_update(&mut new, old);
        keep_system_metadata(&mut new, old);
        let errors = strategy.validate_update(&new, old);
        if !errors.is_empty() {
            return Err(ApiError::invalid(info, name, &errors));
        }
        if same_content(&new, old) || opts.dry_run {
            let mut out = new;
            object::set_resource_version(&mut out, current.revision);
            return scale_of(info, &out);
        }
        match store.update(&key, new, current.revision).await {
            Ok(stored) => return scale_of(info, &stored.value),
            Err(storage::Error::Conflict { .. }) => continue,
            Err(e) => return Err(storage_error(info, name, e)),
        }
    }
    Err(ApiError::conflict(info, name))
}

/// Binds pod `name` to a node (POST `pods/{name}/binding` or `bindings`): sets `spec.nodeName`
/// once and the `PodScheduled` condition.
pub async fn bind(
    store: &Store,
    namespace: &str,
    name: &str,
    binding: &Value,
    opts: WriteOptions,
) -> ApiResult<()> {
    let pods = rkcm_apimachinery::catalog::by_kind("v1", "Pod").expect("pods are in the catalog");
    let node = binding
        .pointer("/target/name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .ok_or_else(|| {
            ApiError::invalid(
                pods,
                name,
                &[registry::FieldError::required("target.name", "")],
            )
        })?
        .to_string();
    let key = key(pods, Some(namespace), name);
    for _ in 0..UPDATE_ATTEMPTS {
        let current = store
            .get(&key)
            .ok_or_else(|| ApiError::not_found(pods, name))?;
        let old = &current.value;
        if object::is_deleting(old) {
            return Err(ApiError::conflict_with(
                pods,
                name,
                &format!("pod {name} is being deleted, cannot be assigned to a host"),
            ));
        }
        if let Some(uid) = binding
            .pointer("/metadata/uid")
            .and_then(Value::as_str)
            .filter(|u| !u.is_empty())
        {
            if uid != object::uid(old) {
                return Err(ApiError::conflict_with(
                    pods,
                    name,
                    &format!(
                        "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                        object::uid(old)
                    ),
                ));
            }
        }
        let bound = old
            .pointer("/spec/nodeName")
            .and_then(Value::as_str)
            .unwrap_or("");
        if !bound.is_empty() {
            return Err(ApiError::conflict_with(
                pods,
                name,
                &format!("pod {name} is already assigned to node {bound:?}"),
            ));
        }
        let mut new = old.clone();
        if let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut) {
            spec.insert("nodeName".into(), json!(node));
        } else if let Some(m) = new.as_object_mut() {
            m.insert("spec".into(), json!({"nodeName": node}));
        }
        if let Some(annotations) = binding
            .pointer("/metadata/annotations")
            .and_then(Value::as_object)
        {
            let meta = object::metadata_mut(&mut new)
                .ok_or_else(|| ApiError::internal("bind", "pod is not an object"))?;
            let target = meta.entry("annotations").or_insert_with(|| json!({}));
            if let Some(t) = target.as_object_mut() {
                for (k, v) in annotations {
                    t.insert(k.clone(), v.clone());
                }
            }
        }
        set_pod_scheduled(&mut new);
        if opts.dry_run {
            return Ok(());
        }
        match store.update(&key, new, current.revision).await {
            Ok(_) => return Ok(()),
            Err(storage::Error::Conflict { .. }) => continue,
            Err(e) => return Err(storage_error(pods, name, e)),
        }
    }
    Err(ApiError::conflict(pods, name))
}

fn set_pod_scheduled(pod: &mut Value) {
    let Some(m) = pod.as_object_mut() else { return };
    let status = m.entry("status").or_insert_with(|| json!({}));
    let Some(status) = status.as_object_mut() else {
        return;
    };
    let conditions = status.entry("conditions").or_insert_with(|| json!([]));
    let Some(conditions) = conditions.as_array_mut() else {
        return;
    };
    let now = object::now_rfc3339(jiff::Timestamp::now());
    if let Some(c) = conditions
        .iter_mut()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("PodScheduled"))
    {
        if c.get("status").and_then(Value::as_str) != Some("True") {
            c["status"] = json!("True");
            c["lastTransitionTime"] = json!(now);
        }
        if let Some(o) = c.as_object_mut() {
            o.remove("reason");
            o.remove("message");
        }
    } else {
        conditions.push(json!({"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": now}));
    }
}

/// Creates the system namespaces that do not exist yet.
pub async fn ensure_system_namespaces(store: &Store) -> ApiResult<()> {
    let info = namespace_info();
    for ns in SYSTEM_NAMESPACES {
        if store.get(&key(info, None, ns)).is_some() {
            continue;
        }
        let obj = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
        match create(store, info, None, obj, WriteOptions::default()).await {
            Ok(_) => {}
            Err(e) if e.reason == "AlreadyExists" => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_prefixes() {
        let pods = rkcm_apimachinery::catalog::by_kind("v1", "Pod").expect("served");
        assert_eq!(key(pods, Some("ns"), "p"), "/core/pods/ns/p");
        assert_eq!(prefix(pods, None), "/core/pods/");
        let nodes = rkcm_apimachinery::catalog::by_kind("v1", "Node").expect("served");
        assert_eq!(key(nodes, Some("ignored"), "n"), "/core/nodes/n");
    }

    #[test]
    fn random_suffixes_use_the_kube_alphabet() {
        let s = random_suffix();
        assert_eq!(s.len(), 5);
        assert!(s.chars().all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c)));
    }
}
