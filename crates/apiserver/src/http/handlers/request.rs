//! What a handler knows of the resource request it serves.

use http::HeaderMap;

use rkcm_apimachinery::catalog::ResourceInfo;

use std::sync::Arc;

use crate::admission::Admission;
use crate::auth::UserInfo;
use crate::error::ApiResult;
use crate::http::decode::{self, write_options};
use crate::http::negotiate::Output;
use crate::http::params::Params;
use crate::http::SharedState;
use crate::rest::{KubeResources, WriteOptions};
use crate::store::Store;

/// One request on a resource: the resource, the namespace of the path, the headers, the query
/// and the representation the answer is to have. The body is passed on its own, as it is read
/// once.
pub struct ResourceRequest<'a> {
    /// What every handler shares.
    pub state: &'a SharedState,
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
        &self.state.store
    }

    /// The API served, with the hooks of its storages.
    pub fn resources(&self) -> &KubeResources {
        &self.state.resources
    }

    /// Refuses a write of `obj` (object `name`, empty on create) that would grant more RBAC
    /// permissions than the user holds ([`crate::auth::escalation`]).
    pub fn check_escalation(&self, name: &str, obj: &serde_json::Value) -> ApiResult<()> {
        if self.info.group != "rbac.authorization.k8s.io" {
            return Ok(());
        }
        crate::auth::escalation::check_write(
            &self.state.authorizer,
            self.user,
            self.info.plural,
            self.namespace.unwrap_or(""),
            name,
            obj,
        )
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
    pub fn delete_options(&self, body: &bytes::Bytes) -> ApiResult<crate::rest::DeleteOptions> {
        let mut opts = decode::delete_options(self.headers, self.params, body)?;
        opts.admission = Some(self.admission());
        Ok(opts)
    }

    /// The admission of this request: the server's chain and the requesting user.
    pub fn admission(&self) -> Admission {
        let user = self.user.cloned().unwrap_or_else(UserInfo::anonymous);
        Admission::new(Arc::clone(&self.state.admission), Arc::new(user))
    }
}
