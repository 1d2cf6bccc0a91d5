//! The chain kube-apiserver's flags enable (`--enable-admission-plugins`,
//! `--disable-admission-plugins`), built from this crate's plugins in kube's order.

use std::sync::Arc;

use super::always_admit::AlwaysAdmit;
use super::always_deny::AlwaysDeny;
use super::default_storage_class::DefaultStorageClass;
use super::default_toleration_seconds::DefaultTolerationSeconds;
use super::limitranger::LimitRanger;
use super::namespace_lifecycle::NamespaceLifecycle;
use super::node_restriction::NodeRestriction;
use super::plugins::*;
use super::priority::Priority;
use super::resource_quota::ResourceQuotaAdmission;
use super::serviceaccount::ServiceAccount;
use super::storage_object_in_use_protection::StorageObjectInUseProtection;
use super::vap::ValidatingAdmissionPolicy;
use super::webhook::{MutatingWebhook, ValidatingWebhook};
use rkcm_server::admission::chain::Chain;
use rkcm_server::admission::plugin::{Plugin, PluginContext};

/// The chain `ctx.config` enables; plugins kube has and rkcm does not implement are left out
/// and listed by [`Chain::not_implemented`].
pub fn new_chain(ctx: &PluginContext) -> Result<Chain, Error> {
    let mut plugins = Vec::new();
    let mut not_implemented = Vec::new();
    for name in enabled_plugin_names(&ctx.config)? {
        match new_plugin(name, ctx) {
            Some(p) => plugins.push(p),
            None => not_implemented.push(name),
        }
    }
    Ok(Chain::new(plugins, not_implemented))
}

/// Builds plugin `name`; `None` for a plugin rkcm does not implement.
pub fn new_plugin(name: &str, ctx: &PluginContext) -> Option<Arc<dyn Plugin>> {
    let plugin: Arc<dyn Plugin> = match name {
        ALWAYS_ADMIT => Arc::new(AlwaysAdmit),
        NAMESPACE_LIFECYCLE => Arc::new(NamespaceLifecycle::new(ctx.store.clone())),
        LIMIT_RANGER => Arc::new(LimitRanger::new(ctx.store.clone())),
        SERVICE_ACCOUNT => Arc::new(ServiceAccount::new(ctx.store.clone())),
        PRIORITY => Arc::new(Priority::new(ctx.store.clone())),
        DEFAULT_TOLERATION_SECONDS => Arc::new(DefaultTolerationSeconds::new(
            ctx.config.default_not_ready_toleration_seconds,
            ctx.config.default_unreachable_toleration_seconds,
        )),
        DEFAULT_STORAGE_CLASS => Arc::new(DefaultStorageClass::new(ctx.store.clone())),
        STORAGE_OBJECT_IN_USE_PROTECTION => Arc::new(StorageObjectInUseProtection),
        RESOURCE_QUOTA => Arc::new(ResourceQuotaAdmission::new(ctx.store.clone())),
        ALWAYS_DENY => Arc::new(AlwaysDeny),
        NODE_RESTRICTION => Arc::new(NodeRestriction::new(ctx.store.clone())),
        MUTATING_ADMISSION_WEBHOOK => Arc::new(
            MutatingWebhook::new(ctx.store.clone(), ctx.metrics.clone())
                .with_authorizer(ctx.authorizer.clone()),
        ),
        VALIDATING_ADMISSION_POLICY => Arc::new(
            ValidatingAdmissionPolicy::new(ctx.store.clone())
                .with_authorizer(ctx.authorizer.clone()),
        ),
        VALIDATING_ADMISSION_WEBHOOK => Arc::new(
            ValidatingWebhook::new(ctx.store.clone(), ctx.metrics.clone())
                .with_authorizer(ctx.authorizer.clone()),
        ),
        _ => return None,
    };
    Some(plugin)
}
