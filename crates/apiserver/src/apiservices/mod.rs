//! The APIServices kube-apiserver registers for the group-versions it serves itself (`v1.`,
//! `v1.apps`, `v2.autoscaling`, ...): created or brought up to date at every start, as
//! kube-aggregator's autoregister controller does with the `onstart` ones, and reported
//! `Available` with reason `Local`, as its availability controller does.
//!
//! APIServices naming a `spec.service` are kube-aggregator's: see [`crate::aggregator`].

pub mod autoregister;
pub mod priorities;

use serde_json::Value;

use rkcm_apimachinery::catalog::{self, ResourceInfo};

use crate::error::{ApiError, ApiResult};
use crate::object;
use crate::rest::KubeResources;
use crate::rest::{self, DeleteOptions, UpdateSource, UpdateTarget, WriteOptions};
use crate::store::Store;

pub use autoregister::{Action, MANAGED_LABEL};

/// The APIServices of every group-version the catalog serves (the core group first), for those
/// kube has priorities for.
pub fn served() -> Vec<Value> {
    let mut out: Vec<Value> = autoregister::desired("", "v1").into_iter().collect();
    for (group, versions) in catalog::groups() {
        for version in versions {
            out.extend(autoregister::desired(group, version));
        }
    }
    out
}

fn info() -> ApiResult<&'static ResourceInfo> {
    catalog::by_kind("apiregistration.k8s.io/v1", "APIService").ok_or_else(|| {
        ApiError::internal(
            "registering the local APIServices",
            "APIService is not served",
        )
    })
}

/// Creates, updates or deletes the managed APIServices so that they list what is served, then
/// marks every one of them `Available`.
pub async fn ensure(
    store: &Store,
    resources: &KubeResources,
    now: jiff::Timestamp,
) -> ApiResult<()> {
    let info = info()?;
    let desired = served();
    let (stored, _, _) = store
        .cache()
        .list(&rest::prefix(info, None), None, 0, &|_| true);
    let mut names: Vec<String> = desired
        .iter()
        .map(|d| object::name(d).to_string())
        .collect();
    names.extend(stored.iter().map(|s| s.name().to_string()));
    names.sort();
    names.dedup();
    for name in &names {
        let current = store.get(&rest::key(info, None, name));
        let want = desired.iter().find(|d| object::name(d) == name);
        let current = current.map(|c| c.value());
        match autoregister::check(current.as_ref(), want) {
            Action::Keep => {}
            Action::Create(obj) => {
                match rest::create(store, resources, info, None, obj, WriteOptions::default()).await
                {
                    Ok(_) => {}
                    Err(e) if e.reason == "AlreadyExists" => {}
                    Err(e) => return Err(e),
                }
            }
            Action::Update(obj) => {
                rest::update(
                    store,
                    resources,
                    info,
                    None,
                    name,
                    obj,
                    UpdateTarget::Main,
                    UpdateSource::Put,
                    WriteOptions::default(),
                )
                .await?;
            }
            Action::Delete => {
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
                        tracing::info!(name, "deleted the APIService of an API no longer served")
                    }
                    Err(e) if e.reason == "NotFound" => {}
                    Err(e) => return Err(e),
                }
            }
        }
    }
    let now = object::now_rfc3339(now);
    for want in &desired {
        let key = rest::key(info, None, object::name(want));
        let Some(current) = store.get(&key) else {
            continue;
        };
        if !autoregister::is_local(&current.value()) {
            continue;
        }
        let Some(status) = autoregister::local_status(&current.value(), &now) else {
            continue;
        };
        let mut available = current.value();
        available["status"] = status;
        store
            .update(&key, available, current.revision)
            .await
            .map_err(|e| rest::storage_error(info, object::name(want), e))?;
    }
    Ok(())
}
