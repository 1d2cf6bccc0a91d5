//! What the generic registry asks of the API it serves: each resource's strategy and field
//! manager, and the hooks of the resources whose storage does more than store objects.
//!
//! kube gives every resource its own `genericregistry.Store` with a strategy and optional hooks
//! (`BeginCreate`, `BeginUpdate`, `AfterCreate`, `AfterDelete`), and wraps it in a REST storage
//! where a kind needs more (Services allocate addresses and ports, Namespaces have `/finalize`
//! and wait for their content, CertificateSigningRequests have `/approval`). Here the
//! operations of [`super`] are generic over [`Resources`], which the server assembly implements
//! with Kubernetes' own API; [`WriteHooks`] are the hooks, each a no-op by default.

use async_trait::async_trait;
use serde_json::Value;

use rkcm_apimachinery::apply::FieldManager;
use rkcm_apimachinery::catalog::ResourceInfo;
use rkcm_apimachinery::field::FieldError;
use rkcm_apimachinery::printers;
use rkcm_apimachinery::validation::FieldProblem;
use rkcm_storage::store::Store;

use super::strategy::Strategy;
use crate::error::ApiResult;

/// The API the generic registry serves (kube's `APIGroupInfo` storage map).
pub trait Resources: Send + Sync {
    /// The strategy of `info`.
    fn strategy(&self, info: &ResourceInfo) -> &'static dyn Strategy;

    /// The hooks of `info`'s storage; `None` where the generic store does everything.
    fn hooks(&self, _info: &ResourceInfo) -> Option<&dyn WriteHooks> {
        None
    }

    /// Whether a PUT of a missing object creates it (`AllowCreateOnUpdate`).
    fn allow_create_on_update(&self, _info: &ResourceInfo) -> bool {
        false
    }

    /// The field manager of writes of `info` to `subresource` (empty for the object), typed by
    /// the schema the resource is served with.
    fn field_manager(&self, info: &ResourceInfo, subresource: &str) -> FieldManager {
        FieldManager::new(&info.api_version(), info.kind, subresource)
    }

    /// The columns and rows of a `meta.k8s.io/v1` Table of `objects` (kube's `TableConvertor`
    /// of the resource's storage), each row with the object's `PartialObjectMetadata` when
    /// `include_metadata`. By default kubectl's columns of the kind.
    fn table(
        &self,
        info: &ResourceInfo,
        objects: &[&Value],
        include_metadata: bool,
    ) -> (Vec<Value>, Vec<Value>) {
        printers::table(info, objects, jiff::Timestamp::now(), include_metadata)
    }

    /// The unknown fields of `obj`, an object of `info` as a request gave it, that the kind's
    /// built-in type cannot show: those of the schema it is served with (a custom resource's:
    /// what pruning drops). Duplicate keys and the built-in type's unknown fields are found by
    /// the caller.
    fn schema_field_problems(
        &self,
        _info: &ResourceInfo,
        _obj: &Value,
    ) -> ApiResult<Vec<FieldProblem>> {
        Ok(Vec::new())
    }

    /// The `Warning` every request to `info` gets, if it is deprecated (kube's deprecated kinds,
    /// and deprecated versions of custom resources).
    fn deprecation_warning(&self, info: &ResourceInfo) -> Option<String> {
        crate::deprecation::warning(info)
    }
}

/// What one resource's storage adds to the generic create, update and delete.
#[async_trait]
pub trait WriteHooks: Send + Sync {
    /// After the strategy's `prepare_for_create`; `requested_name` is the name the client
    /// asked for (empty with `generateName`).
    fn prepare_for_create(&self, _obj: &mut Value, _requested_name: &str) {}

    /// After the strategy's `prepare_for_update` of the object itself.
    fn prepare_for_update(&self, _new: &mut Value, _old: &Value) {}

    /// Prepares an update of `subresource` (not `status`, which the strategy prepares), e.g.
    /// a namespace's `finalize`; `false` when the resource has no such subresource (405).
    fn prepare_for_subresource_update(
        &self,
        _subresource: &str,
        _new: &mut Value,
        _old: &Value,
    ) -> bool {
        false
    }

    /// Validates an update of `subresource` where it has its own validation; `None` validates
    /// with the strategy's `validate_update`.
    fn validate_subresource_update(
        &self,
        _subresource: &str,
        _new: &Value,
        _old: &Value,
    ) -> Option<Vec<FieldError>> {
        None
    }

    /// Normalizes a write of the object itself before it is validated (`old` is `None` on
    /// create).
    fn normalize(&self, _new: &mut Value, _old: Option<&Value>) {}

    /// `BeginCreate` / `BeginUpdate`: takes what the write needs besides its object (addresses,
    /// ports) once it is valid, before the validating admission; `old` is `None` on create. The
    /// [`PendingWrite`] returned is finished once the write is stored or failed; dropping it
    /// gives back what it took in memory.
    fn begin_write<'a>(
        &'a self,
        _store: &Store,
        _info: &'static ResourceInfo,
        _new: &mut Value,
        _old: Option<&Value>,
        _dry_run: bool,
    ) -> ApiResult<Option<Box<dyn PendingWrite + 'a>>> {
        Ok(None)
    }

    /// `AfterCreate`: the object was stored by a create.
    fn after_create(&self, _stored: &Value) {}

    /// Changes the delete makes before it decides whether the object goes now (`finalizers` are
    /// the object's, with the garbage collector's already set).
    fn prepare_for_delete(&self, _next: &mut Value, _finalizers: &mut Vec<String>) {}

    /// Whether something besides `metadata.finalizers` keeps a deleted object (a namespace's
    /// `spec.finalizers`).
    fn holds(&self, _obj: &Value) -> bool {
        false
    }

    /// `AfterDelete`: the object was removed from storage; `last` is its last state.
    async fn after_delete(&self, _store: &Store, _last: &Value) {}
}

/// A write begun by [`WriteHooks::begin_write`].
#[async_trait]
pub trait PendingWrite: Send {
    /// Records what the write took in storage just before the object is stored; may change the
    /// object (another API server took what was picked meanwhile).
    async fn record(&mut self, store: &Store, obj: &mut Value) -> ApiResult<()>;

    /// The object was stored as `stored`: what the write took is kept.
    async fn commit(self: Box<Self>, store: &Store, stored: &Value);

    /// Storing `written` failed after [`PendingWrite::record`]: what it recorded goes back.
    async fn abort(self: Box<Self>, store: &Store, written: &Value);
}
