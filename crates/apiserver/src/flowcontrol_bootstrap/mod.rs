//! kube-apiserver's API Priority and Fairness bootstrap configuration, reconciled into the store
//! at every start (`pkg/registry/flowcontrol/rest/storage_flowcontrol.go`,
//! `pkg/registry/flowcontrol/ensurer`): the mandatory `exempt` and `catch-all` levels and
//! schemas, and the suggested ones (`system`, `node-high`, `leader-election`, `workload-high`,
//! `workload-low`, `global-default`, ...), honouring `apf.kubernetes.io/autoupdate-spec`.
//!
//! The filter enforces them ([`crate::flowcontrol_config`], [`rkcm_server::flowcontrol`]); no
//! controller writes the FlowSchemas' `Dangling` condition.

pub mod ensure;
pub mod objects;

use serde_json::Value;

use rkcm_apimachinery::catalog::{self, ResourceInfo};

use crate::error::{ApiError, ApiResult};
use crate::object;
use crate::rest::KubeResources;
use crate::rest::{self, DeleteOptions, UpdateSource, UpdateTarget, WriteOptions};
use crate::store::Store;

pub use ensure::Strategy;
pub use objects::{bootstrap, Bootstrap, AUTOUPDATE_ANNOTATION};

/// What one reconciliation wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Written {
    /// Objects created.
    pub created: usize,
    /// Objects updated in place.
    pub updated: usize,
    /// Managed objects no longer in the configuration, deleted.
    pub deleted: usize,
}

fn info(kind: &str) -> ApiResult<&'static ResourceInfo> {
    catalog::by_kind("flowcontrol.apiserver.k8s.io/v1", kind).ok_or_else(|| {
        ApiError::internal(
            "reconciling the flowcontrol bootstrap configuration",
            format!("{kind} is not served"),
        )
    })
}

/// `EnsureConfiguration`: creates `boot` when missing, else writes what the strategy asks for.
async fn ensure_one(
    store: &Store,
    resources: &KubeResources,
    info: &'static ResourceInfo,
    strategy: Strategy,
    boot: &Value,
    written: &mut Written,
) -> ApiResult<()> {
    let name = object::name(boot);
    let Some(current) = store.get(&rest::key(info, None, name)) else {
        match rest::create(
            store,
            resources,
            info,
            None,
            boot.clone(),
            WriteOptions::default(),
        )
        .await
        {
            Ok(_) => written.created += 1,
            Err(e) if e.reason == "AlreadyExists" => {}
            Err(e) => return Err(e),
        }
        return Ok(());
    };
    let Some(revised) = ensure::revise_if_needed(strategy, &current.value(), boot) else {
        return Ok(());
    };
    // The stored resourceVersion stays: a concurrent writer wins and is looked at next start.
    match rest::update(
        store,
        resources,
        info,
        None,
        name,
        revised,
        UpdateTarget::Main,
        UpdateSource::Put,
        WriteOptions::default(),
    )
    .await
    {
        Ok(_) => {
            tracing::info!(
                kind = info.kind,
                name,
                ?strategy,
                "updated the APF bootstrap object"
            );
            written.updated += 1;
            Ok(())
        }
        Err(e) if e.reason == "Conflict" => Ok(()),
        Err(e) => Err(e),
    }
}

/// `RemoveUnwantedObjects` for one kind.
async fn remove_unwanted(
    store: &Store,
    resources: &KubeResources,
    info: &'static ResourceInfo,
    wanted: &[&str],
    written: &mut Written,
) -> ApiResult<()> {
    let (stored, _, _) = store
        .cache()
        .list(&rest::prefix(info, None), None, 0, &|_| true);
    for obj in stored {
        if !ensure::is_unwanted(&obj.value(), wanted) {
            continue;
        }
        let name = obj.name();
        match rest::delete(
            store,
            resources,
            info,
            None,
            name,
            &DeleteOptions::default(),
        )
        .await
        {
            Ok(_) => {
                tracing::info!(kind = info.kind, name, "deleted the unwanted APF object");
                written.deleted += 1;
            }
            Err(e) if e.reason == "NotFound" => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Reconciles kube's bootstrap configuration in kube's order: the suggested objects, the
/// mandatory ones, then the removal of managed objects no longer in it.
pub async fn ensure(store: &Store, resources: &KubeResources) -> ApiResult<Written> {
    let levels = info("PriorityLevelConfiguration")?;
    let schemas = info("FlowSchema")?;
    let b = bootstrap();
    let mut written = Written::default();
    for (strategy, level_objs, schema_objs) in [
        (
            Strategy::Suggested,
            &b.suggested_levels,
            &b.suggested_schemas,
        ),
        (
            Strategy::Mandatory,
            &b.mandatory_levels,
            &b.mandatory_schemas,
        ),
    ] {
        for boot in level_objs {
            ensure_one(store, resources, levels, strategy, boot, &mut written).await?;
        }
        for boot in schema_objs {
            ensure_one(store, resources, schemas, strategy, boot, &mut written).await?;
        }
    }
    let level_names: Vec<&str> = b
        .mandatory_levels
        .iter()
        .chain(&b.suggested_levels)
        .map(object::name)
        .collect();
    let schema_names: Vec<&str> = b
        .mandatory_schemas
        .iter()
        .chain(&b.suggested_schemas)
        .map(object::name)
        .collect();
    remove_unwanted(store, resources, schemas, &schema_names, &mut written).await?;
    remove_unwanted(store, resources, levels, &level_names, &mut written).await?;
    Ok(written)
}
