//! Eviction of a pod (`pods/{name}/eviction`): the pod's PodDisruptionBudget is checked and
//! decremented with a guaranteed update of its status, the pod gets the `DisruptionTarget`
//! condition and is deleted (`pkg/registry/core/pod/storage/eviction.go`, `EvictionREST.Create`).
//! The decisions are [`crate::registry::eviction`]'s.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use serde::de::DeserializeOwned;
use serde_json::Value;

use rkcm_apimachinery::catalog::{self, ResourceInfo};

use crate::error::{ApiError, ApiResult};
use crate::registry::eviction::{
    add_disruption_target, budgets_for_pod, can_ignore_pdb, check_and_decrement, is_pod_ready,
    should_enforce_resource_version, too_many_requests, unhealthy_pod_may_go, MORE_THAN_ONE_BUDGET,
};
use crate::store::Store;
use rkcm_server::rest::Resources;
use rkcm_server::rest::WriteOptions;
use rkcm_server::rest::{delete, DeleteOptions};
use rkcm_server::rest::{key, prefix};
use rkcm_server::rest::{update, UpdateSource, UpdateTarget};

/// Attempts of each retry loop (`EvictionsRetry.Steps`).
const RETRY_STEPS: usize = 20;
/// Pause between attempts (`EvictionsRetry.Duration`; kube adds 10% jitter).
const RETRY_PAUSE: Duration = Duration::from_millis(500);

/// An `Eviction` as the server reads it.
#[derive(Clone, Debug, Default)]
pub struct Eviction {
    /// `metadata.name`: must be the pod's.
    pub name: String,
    /// `deleteOptions`, with the dry-run of the request merged in (`propagateDryRun`).
    pub delete_options: DeleteOptions,
    /// The `resourceVersion` precondition the client gave, if any.
    pub precondition_resource_version: Option<String>,
}

impl Eviction {
    /// Reads an `Eviction` body, merging `dryRun` of the query (`query_dry_run`) as
    /// `propagateDryRun` does: the body's wins when the query has none; both given and different
    /// is an error.
    pub fn from_body(body: &Value, query_dry_run: bool) -> ApiResult<Self> {
        let name = body
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let mut delete_options = DeleteOptions::default();
        let mut body_dry_run = Vec::new();
        if let Some(o) = body.get("deleteOptions").filter(|v| !v.is_null()) {
            delete_options.merge_body(o)?;
            body_dry_run = o
                .get("dryRun")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default();
        }
        if query_dry_run && !body_dry_run.is_empty() && body_dry_run != ["All"] {
            return Err(ApiError::new(
                500,
                "InternalError",
                format!(
                    "Internal error occurred: Non-matching dry-run options in request and content: [All] and [{}]",
                    body_dry_run.join(" ")
                ),
            ));
        }
        delete_options.dry_run |= query_dry_run;
        let precondition_resource_version = delete_options.precondition_resource_version.clone();
        Ok(Self {
            name,
            delete_options,
            precondition_resource_version,
        })
    }
}

fn info(api_version: &str, kind: &str) -> ApiResult<&'static ResourceInfo> {
    catalog::by_kind(api_version, kind)
        .ok_or_else(|| ApiError::internal("eviction", format!("{kind} is not served")))
}

fn decode<T: DeserializeOwned>(what: &str, value: &Value) -> ApiResult<T> {
    serde_json::from_value(value.clone())
        .map_err(|e| ApiError::internal(&format!("decoding a stored {what}"), e))
}

fn encode<T: serde::Serialize>(what: &str, obj: &T) -> ApiResult<Value> {
    serde_json::to_value(obj).map_err(|e| ApiError::internal(&format!("encoding {what}"), e))
}

fn is_conflict(e: &ApiError) -> bool {
    e.reason == "Conflict"
}

/// Evicts pod `name` in `namespace` (`EvictionREST.Create`).
pub async fn evict(
    store: &Store,
    resources: &dyn Resources,
    namespace: &str,
    name: &str,
    eviction: &Eviction,
) -> ApiResult<()> {
    let pods = info("v1", "Pod")?;
    if eviction.name != name {
        return Err(ApiError::bad_request(
            "name in URL does not match name in Eviction object",
        ));
    }
    let original = &eviction.delete_options;
    let rv_unset = eviction.precondition_resource_version.is_none();
    // A client's resourceVersion precondition is never retried on conflict.
    let mut attempt = 0;
    let pod = loop {
        attempt += 1;
        let current = store
            .get(&key(pods, Some(namespace), name))
            .ok_or_else(|| ApiError::not_found(pods, name))?;
        let p: Pod = decode("pod", &current.value())?;
        if !can_ignore_pdb(&p) {
            break p;
        }
        // Terminal, pending or terminating: the disruption happened or cannot hurt.
        let mut opts = original.clone();
        if should_enforce_resource_version(&p) && rv_unset {
            opts.precondition_resource_version = Some(current.revision.to_string());
        }
        match add_condition_and_delete(store, resources, pods, namespace, name, &opts).await {
            Err(e) if is_conflict(&e) && rv_unset && attempt < RETRY_STEPS => {
                tokio::time::sleep(RETRY_PAUSE).await;
            }
            r => return r,
        }
    };

    let pdbs = info("policy/v1", "PodDisruptionBudget")?;
    let budgets = list_budgets(store, pdbs, namespace)?;
    let matching = budgets_for_pod(&budgets, &pod);
    let mut pin_resource_version = false;
    let mut budget_name = String::new();
    match matching.as_slice() {
        [] => {}
        [_, _, ..] => {
            return Err(ApiError::new(500, "", MORE_THAN_ONE_BUDGET));
        }
        [pdb] => {
            budget_name = pdb.metadata.name.clone().unwrap_or_default();
            if !is_pod_ready(&pod) && unhealthy_pod_may_go(pdb) {
                pin_resource_version = true;
            } else {
                decrement(
                    store,
                    resources,
                    pdbs,
                    namespace,
                    &budget_name,
                    name,
                    original.dry_run,
                )
                .await?;
            }
        }
    }

    let mut opts = original.clone();
    if pin_resource_version {
        opts.precondition_resource_version = pod.metadata.resource_version.clone();
    }
    match add_condition_and_delete(store, resources, pods, namespace, name, &opts).await {
        // The pod changed (became ready?) since it was judged: let the client try again.
        Err(e) if is_conflict(&e) && pin_resource_version && rv_unset => {
            Err(too_many_requests(&budget_name))
        }
        r => r,
    }
}

fn list_budgets(
    store: &Store,
    pdbs: &'static ResourceInfo,
    namespace: &str,
) -> ApiResult<Vec<PodDisruptionBudget>> {
    let (items, _, _) = store
        .cache()
        .list(&prefix(pdbs, Some(namespace)), None, 0, &|_| true);
    items
        .iter()
        .map(|o| decode("PodDisruptionBudget", &o.value()))
        .collect()
}

/// Checks and decrements budget `budget` for pod `pod`, writing its status; on a conflict with
/// another writer, reads the budget again and decides again (`retry.RetryOnConflict`).
async fn decrement(
    store: &Store,
    resources: &dyn Resources,
    pdbs: &'static ResourceInfo,
    namespace: &str,
    budget: &str,
    pod: &str,
    dry_run: bool,
) -> ApiResult<()> {
    for attempt in 1..=RETRY_STEPS {
        let current = store
            .get(&key(pdbs, Some(namespace), budget))
            .ok_or_else(|| ApiError::not_found(pdbs, budget))?;
        let mut pdb: PodDisruptionBudget = decode("PodDisruptionBudget", &current.value())?;
        check_and_decrement(&mut pdb, pod, jiff::Timestamp::now(), dry_run)?;
        if dry_run {
            return Ok(());
        }
        let mut new = encode("PodDisruptionBudget", &pdb)?;
        crate::object::set_resource_version(&mut new, current.revision);
        match update(
            store,
            resources,
            pdbs,
            Some(namespace),
            budget,
            new,
            UpdateTarget::Status,
            UpdateSource::Put,
            WriteOptions::default(),
        )
        .await
        {
            Ok(_) => return Ok(()),
            Err(e) if is_conflict(&e) => {
                if attempt < RETRY_STEPS {
                    tokio::time::sleep(RETRY_PAUSE).await;
                }
            }
            Err(e) => return Err(e),
        }
    }
    let mut e = ApiError::new(
        504,
        "Timeout",
        format!("couldn't update PodDisruptionBudget {budget:?} due to conflicts"),
    );
    e.details.retry_after = Some(10);
    Err(e)
}

/// Adds the `DisruptionTarget` condition to the pod as it is now (checking `opts`'
/// preconditions against it) and deletes it (`addConditionAndDeletePod`). A dry run only
/// deletes, dry.
async fn add_condition_and_delete(
    store: &Store,
    resources: &dyn Resources,
    pods: &'static ResourceInfo,
    namespace: &str,
    name: &str,
    opts: &DeleteOptions,
) -> ApiResult<()> {
    let mut opts = opts.clone();
    if !opts.dry_run {
        let revision =
            add_disruption_target_condition(store, resources, pods, namespace, name, &opts).await?;
        if opts.precondition_resource_version.is_some() {
            // The condition is ours: the delete is to expect the pod as we left it.
            opts.precondition_resource_version = Some(revision.to_string());
        }
    }
    delete(store, resources, pods, Some(namespace), name, &opts).await?;
    Ok(())
}

/// The guaranteed status update that sets `DisruptionTarget` on pod `name`; returns the pod's
/// resourceVersion afterwards.
async fn add_disruption_target_condition(
    store: &Store,
    resources: &dyn Resources,
    pods: &'static ResourceInfo,
    namespace: &str,
    name: &str,
    opts: &DeleteOptions,
) -> ApiResult<i64> {
    let conflict = |why: String| {
        let mut e = ApiError::new(
            409,
            "Conflict",
            format!("Operation cannot be fulfilled on Pod {name:?}: {why}"),
        );
        e.details.name = Some(name.to_string());
        e.details.kind = Some("Pod".to_string());
        e
    };
    for _ in 0..rkcm_server::rest::UPDATE_ATTEMPTS {
        let current = store
            .get(&key(pods, Some(namespace), name))
            .ok_or_else(|| ApiError::not_found(pods, name))?;
        let mut pod: Pod = decode("pod", &current.value())?;
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        if let Some(want) = opts.precondition_uid.as_deref().filter(|u| !u.is_empty()) {
            if want != uid {
                return Err(conflict(format!("the UID in the precondition ({want}) does not match the UID in record ({uid}). The object might have been deleted and then recreated")));
            }
        }
        let rv = current.revision.to_string();
        if let Some(want) = opts
            .precondition_resource_version
            .as_deref()
            .filter(|r| !r.is_empty())
        {
            if want != rv {
                return Err(conflict(format!("the ResourceVersion in the precondition ({want}) does not match the ResourceVersion in record ({rv}). The object might have been modified")));
            }
        }
        if !add_disruption_target(&mut pod, jiff::Timestamp::now()) {
            return Ok(current.revision);
        }
        let mut new = encode("pod", &pod)?;
        crate::object::set_resource_version(&mut new, current.revision);
        match update(
            store,
            resources,
            pods,
            Some(namespace),
            name,
            new,
            UpdateTarget::Status,
            UpdateSource::Put,
            WriteOptions::default(),
        )
        .await
        {
            Ok(updated) => return Ok(updated.object.revision),
            Err(e) if is_conflict(&e) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(ApiError::conflict(pods, name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// eviction_test.go `TestEvictionDryRun` / `propagateDryRun`: the query's dry run applies
    /// unless the body asks for another one.
    #[test]
    fn dry_run_comes_from_the_query_or_the_body_and_must_agree() {
        let body = json!({"metadata": {"name": "p"}});
        assert!(
            Eviction::from_body(&body, true)
                .unwrap()
                .delete_options
                .dry_run
        );
        assert!(
            !Eviction::from_body(&body, false)
                .unwrap()
                .delete_options
                .dry_run
        );
        let in_body = json!({"metadata": {"name": "p"}, "deleteOptions": {"dryRun": ["All"]}});
        assert!(
            Eviction::from_body(&in_body, false)
                .unwrap()
                .delete_options
                .dry_run
        );
        assert!(
            Eviction::from_body(&in_body, true)
                .unwrap()
                .delete_options
                .dry_run
        );
        let other = json!({"metadata": {"name": "p"}, "deleteOptions": {"dryRun": ["Other"]}});
        let err = Eviction::from_body(&other, true).unwrap_err();
        assert_eq!(err.code, 500);
        assert_eq!(
            err.message,
            "Internal error occurred: Non-matching dry-run options in request and content: [All] and [Other]"
        );
    }

    #[test]
    fn preconditions_and_grace_come_from_the_delete_options() {
        let body = json!({"metadata": {"name": "p"}, "deleteOptions": {
            "gracePeriodSeconds": 5, "preconditions": {"uid": "u", "resourceVersion": "7"}}});
        let e = Eviction::from_body(&body, false).unwrap();
        assert_eq!(e.name, "p");
        assert_eq!(e.delete_options.grace_period_seconds, Some(5));
        assert_eq!(e.delete_options.precondition_uid.as_deref(), Some("u"));
        assert_eq!(e.precondition_resource_version.as_deref(), Some("7"));
    }
}
