//! The plugin interface (`admission.Interface`, `MutationInterface`, `ValidationInterface`).

use std::sync::Arc;

use async_trait::async_trait;

use super::attributes::{Attributes, Operation};
use super::config::AdmissionConfig;
use super::metrics::AdmissionMetrics;
use crate::auth::authorization::Authorize;
use crate::error::ApiResult;
use rkcm_storage::store::Store;

/// What plugins are built with: the store they read other objects from (kube's plugins read
/// informers' listers; the watch cache is that here) and the admission settings.
#[derive(Clone)]
pub struct PluginContext {
    /// The objects of the server.
    pub store: Store,
    /// The admission flags.
    pub config: AdmissionConfig,
    /// The metrics of admission webhooks.
    pub metrics: AdmissionMetrics,
    /// The server's authorizer, which the `authorizer` variable of admission CEL expressions
    /// asks; `None` leaves that variable out.
    pub authorizer: Option<Arc<dyn Authorize>>,
}

/// One admission plugin.
///
/// The chain calls [`Plugin::admit`] of every enabled plugin that handles the operation, in
/// kube's order, then [`Plugin::validate`] of each, in the same order. The first error stops
/// the request; it is answered as it is (a Status with kube's code and message).
#[async_trait]
pub trait Plugin: Send + Sync {
    /// kube's name of the plugin (`NamespaceLifecycle`).
    fn name(&self) -> &'static str;

    /// Whether the plugin looks at `operation` at all (`admission.Handler.Handles`).
    fn handles(&self, operation: Operation) -> bool;

    /// The mutating phase: may change the object (`MutationInterface.Admit`).
    async fn admit(&self, _attrs: &mut Attributes) -> ApiResult<()> {
        Ok(())
    }

    /// The validating phase: may refuse, never changes (`ValidationInterface.Validate`).
    async fn validate(&self, _attrs: &Attributes) -> ApiResult<()> {
        Ok(())
    }
}
