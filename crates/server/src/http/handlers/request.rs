//! What a handler knows of the resource request it serves.

use std::sync::Arc;
use std::time::Duration;

use http::HeaderMap;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use rkcm_apimachinery::catalog::ResourceInfo;
use rkcm_storage::store::Store;

use crate::admission::{Admission, Chain};
use crate::auth::UserInfo;
use crate::error::ApiResult;
use crate::http::decode::{self, write_options};
use crate::http::negotiate::Output;
use crate::http::params::Params;
use crate::metrics::RequestMetrics;
use crate::rest::{DeleteOptions, Resources, WriteOptions};

/// A check of a client's write beyond authorization, made before the object is admitted and
/// stored: RBAC's escalation check (kube's `policybased` storages of roles and bindings refuse
/// a role or binding granting more than its writer holds).
pub trait WriteCheck: Send + Sync {
    /// Refuses the write of `obj` (named `name`, empty on create, in `namespace`, empty for
    /// cluster-scoped objects) of `info` by `user` (absent only for requests built in-process).
    fn check_write(
        &self,
        user: Option<&UserInfo>,
        info: &ResourceInfo,
        namespace: &str,
        name: &str,
        obj: &Value,
    ) -> ApiResult<()>;
}

/// What every resource handler shares (kube's `RequestScope`): the store, the API served, the
/// admission chain, the checks of writes, the metrics and the server's lifetime.
pub struct Scope {
    /// Objects.
    pub store: Store,
    /// The API served: each resource's strategy, storage hooks, field manager, table columns.
    pub resources: Arc<dyn Resources>,
    /// The admission plugins every client write goes through.
    pub admission: Arc<Chain>,
    /// Checks of client writes beyond authorization (RBAC escalation), if any.
    pub write_check: Option<Arc<dyn WriteCheck>>,
    /// The server's request metrics (watch events are counted here).
    pub metrics: RequestMetrics,
    /// Interval between watch bookmarks.
    pub bookmark_interval: Duration,
    /// Cancelled when the server stops; open watches end.
    pub shutdown: CancellationToken,
}

/// One request on a resource: the resource, the namespace of the path, the headers, the query
/// and the representation the answer is to have. The body is passed on its own, as it is read
/// once.
pub struct ResourceRequest<'a> {
    /// What every handler shares.
    pub scope: &'a Scope,
    /// The resource.
    pub info: &'static ResourceInfo,
    /// The namespace of the path (`None` for cluster-scoped resources and all-namespace lists).
    pub namespace: Option<&'a str>,
    /// The request headers.
    pub headers: &'a HeaderMap,
    /// The query parameters.
    pub params: &'a Params,
    /// The representation of the answer.
    pub out: Output,
    /// Who asks, after impersonation (absent only for requests built in-process).
    pub user: Option<&'a UserInfo>,
}

impl ResourceRequest<'_> {
    /// The store of objects.
    pub fn store(&self) -> &Store {
        &self.scope.store
    }

    /// The API served, with the hooks of its storages.
    pub fn resources(&self) -> &dyn Resources {
        self.scope.resources.as_ref()
    }

    /// Refuses a write of `obj` (object `name`, empty on create) that the scope's
    /// [`WriteCheck`] refuses (a role or binding that would grant more than the user holds).
    pub fn check_write(&self, name: &str, obj: &Value) -> ApiResult<()> {
        match &self.scope.write_check {
            Some(check) => check.check_write(
                self.user,
                self.info,
                self.namespace.unwrap_or(""),
                name,
                obj,
            ),
            None => Ok(()),
        }
    }

    /// The options of a write (`dryRun`), with the admission the write goes through.
    pub fn write_options(&self) -> ApiResult<WriteOptions> {
        let user_agent = self
            .headers
            .get(http::header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        Ok(WriteOptions {
            admission: Some(self.admission()),
            field_manager: Some(crate::http::field_manager::manager_or_user_agent(
                self.params,
                user_agent,
            )),
            ..write_options(self.params)?
        })
    }

    /// The `DeleteOptions` of the query and `body`, with the admission the delete goes through.
    pub fn delete_options(&self, body: &bytes::Bytes) -> ApiResult<DeleteOptions> {
        let mut opts = decode::delete_options(self.headers, self.params, body)?;
        opts.admission = Some(self.admission());
        Ok(opts)
    }

    /// The admission of this request: the server's chain and the requesting user.
    pub fn admission(&self) -> Admission {
        let user = self.user.cloned().unwrap_or_else(UserInfo::anonymous);
        Admission::new(Arc::clone(&self.scope.admission), Arc::new(user))
    }
}
