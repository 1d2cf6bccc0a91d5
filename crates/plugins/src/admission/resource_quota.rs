//! `ResourceQuota`: a create (or an update that changes usage) of a counted object is checked
//! against every quota of its namespace that matches it, and charged to them: `status.used` is
//! raised with a compare-and-swap on the quota's resourceVersion (retried on conflict), or the
//! request is refused with kube's Forbidden messages.
//!
//! Mirrors `staging/src/k8s.io/apiserver/pkg/admission/plugin/resourcequota/{admission,controller}.go`
//! (`CheckRequest`, `checkQuotas`). kube batches the requests of a namespace on a work queue;
//! here the requests of a namespace take a lock in turn, which serializes them the same way.
//! No `limitedResources` configuration is read (kube's default is none). Dry runs are checked
//! and charge nothing.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::ResourceQuota;
use parking_lot::Mutex;
use rkcm_apimachinery::catalog::ResourceInfo;
use rkcm_apimachinery::quota::evaluator::{status_hard, status_used};
use rkcm_apimachinery::quota::resources::{
    add, equals, is_negative, less_than_or_equal, mask, pretty_print, pretty_print_names,
    remove_zeros, resource_names, subtract_with_non_negative_result, to_wire,
};
use rkcm_apimachinery::quota::{self, Evaluator, Item, ResourceList};
use serde_json::Value;

use super::plugins::RESOURCE_QUOTA;
use rkcm_server::admission::attributes::{forbidden, Attributes, Operation};
use rkcm_server::admission::plugin::Plugin;
use rkcm_server::error::{ApiError, ApiResult};
use rkcm_server::rest;
use rkcm_storage as storage;
use rkcm_storage::store::Store;
use rkcm_storage::watch_cache::CachedObject;

/// How often the charge is retried when a quota changed meanwhile (kube's `checkQuotas`
/// recursion depth).
const UPDATE_RETRIES: usize = 3;

/// A request as the quota check sees it.
#[derive(Clone, Debug)]
pub struct Request {
    /// Create or update.
    pub operation: quota::Operation,
    /// `""` or `status`.
    pub subresource: &'static str,
    /// The object the write would store.
    pub object: Item,
    /// The stored object of an update, and whether it had a resourceVersion (it was stored, so
    /// only the difference is charged).
    pub old: Option<(Item, bool)>,
}

/// Why a request is refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// 403 with this reason (the text after `is forbidden: `).
    Forbidden(String),
    /// The check itself failed.
    Internal(String),
}

fn internal(e: impl std::fmt::Display) -> Refusal {
    Refusal::Internal(e.to_string())
}

/// `hasUsageStats`: every hard limit among `interesting` has a usage in status.
fn has_usage_stats(hard: &ResourceList, used: &ResourceList, interesting: &[String]) -> bool {
    let interesting: BTreeSet<&str> = interesting.iter().map(String::as_str).collect();
    hard.keys()
        .filter(|k| interesting.contains(k.as_str()))
        .all(|k| used.contains_key(k))
}

/// `CheckRequest`: the quotas as they would be after the request (same order, `status.used`
/// raised where it is charged), or why it is refused.
pub fn check_request(
    quotas: &[ResourceQuota],
    request: &Request,
    evaluator: &Evaluator,
    now: jiff::Timestamp,
) -> Result<Vec<ResourceQuota>, Refusal> {
    let old_item = request.old.as_ref().map(|(item, _)| item);
    if !evaluator.handles(
        request.operation,
        request.subresource,
        &request.object,
        old_item,
    ) {
        return Ok(quotas.to_vec());
    }
    let name_of = |q: &ResourceQuota| q.metadata.name.clone().unwrap_or_default();
    let mut interesting = Vec::new();
    for (i, q) in quotas.iter().enumerate() {
        if !evaluator.matches(q, &request.object).map_err(internal)? {
            continue;
        }
        let hard = status_hard(q).map_err(internal)?;
        let used = status_used(q).map_err(internal)?;
        let restricted = evaluator.matching_resources(&resource_names(&hard));
        if let Err(e) = evaluator.constraints(&restricted, &request.object) {
            return Err(Refusal::Forbidden(format!(
                "failed quota: {}: {e}",
                name_of(q)
            )));
        }
        if !has_usage_stats(&hard, &used, &restricted) {
            return Err(Refusal::Forbidden(format!(
                "status unknown for quota: {}, resources: {}",
                name_of(q),
                pretty_print_names(&restricted)
            )));
        }
        interesting.push(i);
    }
    if interesting.is_empty() {
        return Ok(quotas.to_vec());
    }
    let input_usage = evaluator.usage(&request.object, now).map_err(internal)?;
    let negative = is_negative(&input_usage);
    if !negative.is_empty() {
        return Err(Refusal::Forbidden(format!(
            "quota usage is negative for resource(s): {}",
            pretty_print_names(&negative)
        )));
    }
    let mut deltas: HashMap<usize, ResourceList> = interesting
        .iter()
        .map(|i| (*i, input_usage.clone()))
        .collect();
    if request.operation == quota::Operation::Update {
        let Some((old, stored)) = request.old.as_ref() else {
            return Err(Refusal::Forbidden(
                "unable to get previous usage since prior version of object was not found".into(),
            ));
        };
        if *stored {
            let prev = evaluator.usage(old, now).map_err(internal)?;
            let delta = subtract_with_non_negative_result(&input_usage, &prev);
            for i in &interesting {
                if evaluator.matches(&quotas[*i], old).map_err(internal)? {
                    deltas.insert(*i, delta.clone());
                }
            }
        }
    }
    deltas.retain(|_, d| {
        *d = remove_zeros(d);
        !d.is_empty()
    });
    if deltas.is_empty() {
        return Ok(quotas.to_vec());
    }
    let mut out = quotas.to_vec();
    for i in interesting {
        let Some(delta) = deltas.get(&i) else {
            continue;
        };
        let q = &quotas[i];
        let hard = status_hard(q).map_err(internal)?;
        let used = status_used(q).map_err(internal)?;
        let requested = mask(delta, &resource_names(&hard));
        let new_usage = add(&used, &requested);
        if request.subresource != "status" {
            let masked = mask(&new_usage, &resource_names(&requested));
            let (allowed, exceeded) = less_than_or_equal(&masked, &hard);
            if !allowed {
                return Err(Refusal::Forbidden(format!(
                    "exceeded quota: {}, requested: {}, used: {}, limited: {}",
                    name_of(q),
                    pretty_print(&mask(&requested, &exceeded)),
                    pretty_print(&mask(&used, &exceeded)),
                    pretty_print(&mask(&hard, &exceeded)),
                )));
            }
        }
        let status = out[i].status.get_or_insert_with(Default::default);
        status.used = Some(to_wire(&new_usage));
    }
    Ok(out)
}

/// The item an evaluator measures from an object on the wire.
fn item_of(evaluator: &Evaluator, value: &Value) -> Result<Item, serde_json::Error> {
    Ok(match evaluator {
        Evaluator::Pods => Item::Pod(Arc::new(serde_json::from_value(value.clone())?)),
        Evaluator::Services => Item::Service(Arc::new(serde_json::from_value(value.clone())?)),
        Evaluator::PersistentVolumeClaims => {
            Item::PersistentVolumeClaim(Arc::new(serde_json::from_value(value.clone())?))
        }
        Evaluator::ObjectCount { .. } => Item::Object,
    })
}

fn quotas_info() -> &'static ResourceInfo {
    rkcm_apimachinery::catalog::by_kind("v1", "ResourceQuota")
        .expect("resource quotas are in the catalog")
}

/// The plugin.
pub struct ResourceQuotaAdmission {
    store: Store,
    /// One lock per namespace: the checks and charges of a namespace run one at a time.
    namespaces: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl ResourceQuotaAdmission {
    /// The plugin, reading and charging the quotas of `store`.
    pub fn new(store: Store) -> Self {
        Self {
            store,
            namespaces: Mutex::new(HashMap::new()),
        }
    }

    fn lock_of(&self, namespace: &str) -> Arc<tokio::sync::Mutex<()>> {
        Arc::clone(
            self.namespaces
                .lock()
                .entry(namespace.to_string())
                .or_default(),
        )
    }

    /// The cached ResourceQuotas of `namespace`, `limit` at most (0: all).
    fn stored_quotas(&self, namespace: &str, limit: usize) -> Vec<Arc<CachedObject>> {
        let prefix = rest::prefix(quotas_info(), Some(namespace));
        self.store.cache().list(&prefix, None, limit, &|_| true).0
    }

    /// The quotas of `namespace` (those named in `only`, when given) with their stored form.
    fn quotas(
        &self,
        namespace: &str,
        only: Option<&BTreeSet<String>>,
    ) -> ApiResult<Vec<(ResourceQuota, Value, i64)>> {
        let mut out = Vec::new();
        for cached in self.stored_quotas(namespace, 0) {
            let q: ResourceQuota = serde_json::from_value(cached.value())
                .map_err(|e| ApiError::internal("decoding a resource quota", e))?;
            if only
                .is_some_and(|only| !only.contains(q.metadata.name.as_deref().unwrap_or_default()))
            {
                continue;
            }
            out.push((q, cached.value(), cached.revision));
        }
        Ok(out)
    }

    async fn evaluate(
        &self,
        attrs: &Attributes,
        request: Request,
        evaluator: Evaluator,
    ) -> ApiResult<()> {
        let lock = self.lock_of(&attrs.namespace);
        let _held = lock.lock().await;
        let mut only: Option<BTreeSet<String>> = None;
        for attempt in 0..=UPDATE_RETRIES {
            let stored = self.quotas(&attrs.namespace, only.as_ref())?;
            if stored.is_empty() {
                return Ok(());
            }
            let quotas: Vec<ResourceQuota> = stored.iter().map(|(q, _, _)| q.clone()).collect();
            let updated = match check_request(&quotas, &request, &evaluator, jiff::Timestamp::now())
            {
                Ok(updated) => updated,
                Err(Refusal::Forbidden(why)) => return Err(forbidden(attrs, &why)),
                Err(Refusal::Internal(why)) => {
                    return Err(ApiError::internal("evaluating resource quota", why))
                }
            };
            if attrs.dry_run {
                return Ok(());
            }
            let mut failed = BTreeSet::new();
            let mut last_conflict = None;
            for ((before, value, revision), after) in stored.iter().zip(&updated) {
                let used_before = status_used(before).unwrap_or_default();
                let used_after = status_used(after).unwrap_or_default();
                if equals(&used_before, &used_after) {
                    continue;
                }
                let name = before.metadata.name.clone().unwrap_or_default();
                let mut value = value.clone();
                if let Some(obj) = value.as_object_mut() {
                    let status = obj
                        .entry("status")
                        .or_insert_with(|| Value::Object(Default::default()));
                    if let Some(status) = status.as_object_mut() {
                        status.insert(
                            "used".into(),
                            serde_json::to_value(to_wire(&used_after))
                                .map_err(|e| ApiError::internal("encoding quota usage", e))?,
                        );
                    }
                }
                let key = rest::key(quotas_info(), Some(&attrs.namespace), &name);
                match self.store.update(&key, value, *revision).await {
                    Ok(_) => {}
                    Err(storage::Error::Conflict { .. }) | Err(storage::Error::NotFound(_)) => {
                        last_conflict = Some(name.clone());
                        failed.insert(name);
                    }
                    Err(e) => return Err(ApiError::internal("charging resource quota", e)),
                }
            }
            if failed.is_empty() {
                return Ok(());
            }
            tracing::debug!(namespace = %attrs.namespace, attempt, "resource quota changed while charging it; retrying");
            if attempt == UPDATE_RETRIES {
                let name = last_conflict.unwrap_or_default();
                return Err(ApiError::conflict(quotas_info(), &name));
            }
            only = Some(failed);
        }
        Ok(())
    }
}

#[async_trait]
impl Plugin for ResourceQuotaAdmission {
    fn name(&self) -> &'static str {
        RESOURCE_QUOTA
    }

    fn handles(&self, operation: Operation) -> bool {
        matches!(operation, Operation::Create | Operation::Update)
    }

    async fn validate(&self, attrs: &Attributes) -> ApiResult<()> {
        // Subresources other than status never change usage; cluster-scoped objects (namespaces
        // among them) are not under any quota; events are ignored (`DefaultIgnoredResources`).
        if !matches!(attrs.subresource, "" | "status")
            || attrs.namespace.is_empty()
            || attrs.resource.plural == "events"
        {
            return Ok(());
        }
        let Some(object) = attrs.object() else {
            return Ok(());
        };
        let operation = match attrs.operation {
            Operation::Create => quota::Operation::Create,
            Operation::Update => quota::Operation::Update,
            _ => return Ok(()),
        };
        let evaluator = Evaluator::for_resource(attrs.resource.group, attrs.resource.plural);
        // kube's evaluator asks `Handles` of the attributes and finds the namespace's quotas
        // before it reads the object: a pod's status update, or any write to a namespace
        // without quotas, decodes nothing.
        if !evaluator.may_handle(operation, attrs.subresource)
            || self.stored_quotas(&attrs.namespace, 1).is_empty()
        {
            return Ok(());
        }
        let decode = |v: &Value| {
            item_of(&evaluator, v)
                .map_err(|e| ApiError::internal("decoding the object for quota", e))
        };
        let old = match attrs.old_object() {
            Some(old) => Some((
                decode(old)?,
                matches!(rkcm_storage::object::resource_version(old), Ok(Some(_))),
            )),
            None => None,
        };
        let request = Request {
            operation,
            subresource: attrs.subresource,
            object: decode(object)?,
            old,
        };
        if !evaluator.handles(
            operation,
            attrs.subresource,
            &request.object,
            request.old.as_ref().map(|(i, _)| i),
        ) {
            return Ok(());
        }
        self.evaluate(attrs, request, evaluator).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{
        PersistentVolumeClaim, Pod, ResourceQuotaSpec, ResourceQuotaStatus, Service,
    };
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity as WireQuantity;
    use serde_json::json;
    use std::collections::BTreeMap;

    type Pairs<'a> = &'a [(&'a str, &'a str)];

    fn wire(pairs: Pairs<'_>) -> BTreeMap<String, WireQuantity> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), WireQuantity(v.to_string())))
            .collect()
    }

    fn quota(
        name: &str,
        hard: Pairs<'_>,
        used: Option<Pairs<'_>>,
        scopes: &[&str],
    ) -> ResourceQuota {
        ResourceQuota {
            metadata: kube_meta(name),
            spec: Some(ResourceQuotaSpec {
                hard: Some(wire(hard)),
                scopes: (!scopes.is_empty())
                    .then(|| scopes.iter().map(|s| s.to_string()).collect()),
                ..Default::default()
            }),
            status: Some(ResourceQuotaStatus {
                hard: Some(wire(hard)),
                used: used.map(wire),
            }),
        }
    }

    fn kube_meta(name: &str) -> k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
        k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some(name.into()),
            namespace: Some("test".into()),
            resource_version: Some("124".into()),
            ..Default::default()
        }
    }

    /// `validPod`: one container with these requests and limits.
    fn pod(requests: Value, limits: Value) -> Item {
        let p: Pod = serde_json::from_value(json!({
            "metadata": {"name": "allowed-pod", "namespace": "test"},
            "spec": {"containers": [{"name": "ctr", "image": "image",
                "resources": {"requests": requests, "limits": limits}}]}
        }))
        .unwrap();
        Item::Pod(Arc::new(p))
    }

    fn create(object: Item) -> Request {
        Request {
            operation: quota::Operation::Create,
            subresource: "",
            object,
            old: None,
        }
    }

    fn used_of(q: &ResourceQuota) -> BTreeMap<String, String> {
        status_used(q)
            .unwrap()
            .into_iter()
            .map(|(k, v)| (k, v.to_string()))
            .collect()
    }

    fn now() -> jiff::Timestamp {
        jiff::Timestamp::from_second(1_700_000_000).unwrap()
    }

    fn forbidden_reason(r: Result<Vec<ResourceQuota>, Refusal>) -> String {
        match r {
            Err(Refusal::Forbidden(why)) => why,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    // TestAdmitBelowQuotaLimit
    #[test]
    fn a_pod_below_the_limits_is_charged() {
        let q = quota(
            "quota",
            &[("cpu", "3"), ("memory", "100Gi"), ("pods", "5")],
            Some(&[("cpu", "1"), ("memory", "50Gi"), ("pods", "3")]),
            &[],
        );
        let p = pod(json!({"cpu": "100m", "memory": "2Gi"}), json!({}));
        let out = check_request(&[q], &create(p), &Evaluator::Pods, now()).unwrap();
        let used = used_of(&out[0]);
        assert_eq!(used["cpu"], "1100m");
        assert_eq!(used["memory"], "52Gi");
        assert_eq!(used["pods"], "4");
    }

    // TestAdmitExceedQuotaLimit
    #[test]
    fn a_pod_over_a_limit_is_refused_with_kubes_message() {
        let q = quota(
            "quota",
            &[("cpu", "3"), ("memory", "100Gi"), ("pods", "5")],
            Some(&[("cpu", "1"), ("memory", "50Gi"), ("pods", "3")]),
            &[],
        );
        let p = pod(json!({"cpu": "3", "memory": "2Gi"}), json!({}));
        assert_eq!(
            forbidden_reason(check_request(&[q], &create(p), &Evaluator::Pods, now())),
            "exceeded quota: quota, requested: cpu=3, used: cpu=1, limited: cpu=3"
        );
        let full = quota("q", &[("pods", "2")], Some(&[("pods", "2")]), &[]);
        assert_eq!(
            forbidden_reason(check_request(
                &[full],
                &create(pod(json!({}), json!({}))),
                &Evaluator::Pods,
                now()
            )),
            "exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2"
        );
    }

    // TestAdmitEnforceQuotaConstraints
    #[test]
    fn a_pod_that_does_not_state_a_limited_resource_is_refused() {
        let q = quota(
            "quota",
            &[
                ("cpu", "3"),
                ("memory", "100Gi"),
                ("limits.cpu", "4"),
                ("pods", "5"),
            ],
            Some(&[
                ("cpu", "1"),
                ("memory", "50Gi"),
                ("limits.cpu", "2"),
                ("pods", "3"),
            ]),
            &[],
        );
        let p = pod(json!({"cpu": "100m", "memory": "2Gi"}), json!({}));
        assert_eq!(
            forbidden_reason(check_request(&[q], &create(p), &Evaluator::Pods, now())),
            "failed quota: quota: must specify limits.cpu for: ctr"
        );
    }

    // TestAdmitHandlesMissingUsage (status unknown)
    #[test]
    fn a_quota_without_usage_refuses_until_the_controller_computed_it() {
        let q = quota("quota", &[("pods", "5"), ("cpu", "3")], None, &[]);
        let p = pod(json!({"cpu": "1"}), json!({}));
        assert_eq!(
            forbidden_reason(check_request(&[q], &create(p), &Evaluator::Pods, now())),
            "status unknown for quota: quota, resources: cpu,pods"
        );
    }

    // TestAdmitBelowBestEffortQuotaLimit, TestAdmitBestEffortQuotaLimitIgnoresBurstable
    #[test]
    fn scoped_quotas_charge_only_the_pods_in_their_scope() {
        let best_effort = quota(
            "quota-besteffort",
            &[("pods", "5")],
            Some(&[("pods", "3")]),
            &["BestEffort"],
        );
        let not_best_effort = quota(
            "quota-not-besteffort",
            &[("pods", "5")],
            Some(&[("pods", "3")]),
            &["NotBestEffort"],
        );
        let quotas = [best_effort, not_best_effort];
        let out = check_request(
            &quotas,
            &create(pod(json!({}), json!({}))),
            &Evaluator::Pods,
            now(),
        )
        .unwrap();
        assert_eq!(used_of(&out[0])["pods"], "4");
        assert_eq!(used_of(&out[1])["pods"], "3");
        let burstable = pod(json!({"cpu": "100m"}), json!({}));
        let out = check_request(&quotas, &create(burstable), &Evaluator::Pods, now()).unwrap();
        assert_eq!(used_of(&out[0])["pods"], "3");
        assert_eq!(used_of(&out[1])["pods"], "4");
    }

    // TestAdmitRejectsNegativeUsage
    #[test]
    fn negative_usage_is_refused() {
        let q = quota(
            "quota",
            &[("cpu", "3"), ("pods", "5")],
            Some(&[("cpu", "1"), ("pods", "3")]),
            &[],
        );
        let p = pod(json!({"cpu": "-1"}), json!({}));
        assert_eq!(
            forbidden_reason(check_request(&[q], &create(p), &Evaluator::Pods, now())),
            "quota usage is negative for resource(s): cpu,requests.cpu"
        );
    }

    // TestAdmitBelowObjectCountQuotaLimit and the exceeded case
    #[test]
    fn object_counts_are_charged_and_enforced() {
        let cm = Evaluator::for_resource("", "configmaps");
        let q = quota(
            "q",
            &[("count/configmaps", "3")],
            Some(&[("count/configmaps", "2")]),
            &[],
        );
        let out =
            check_request(std::slice::from_ref(&q), &create(Item::Object), &cm, now()).unwrap();
        assert_eq!(used_of(&out[0])["count/configmaps"], "3");
        assert_eq!(
            forbidden_reason(check_request(&out, &create(Item::Object), &cm, now())),
            "exceeded quota: q, requested: count/configmaps=1, used: count/configmaps=3, limited: count/configmaps=3"
        );
        // A quota that does not limit the kind is left alone.
        let secrets = Evaluator::for_resource("", "secrets");
        let out = check_request(&[q], &create(Item::Object), &secrets, now()).unwrap();
        assert_eq!(used_of(&out[0])["count/configmaps"], "2");
    }

    fn service(type_: &str, ports: usize) -> Item {
        let ports: Vec<Value> = (0..ports).map(|i| json!({"port": 80 + i})).collect();
        Item::Service(Arc::new(
            serde_json::from_value::<Service>(json!({
                "metadata": {"name": "svc", "namespace": "test", "resourceVersion": "1"},
                "spec": {"type": type_, "ports": ports}
            }))
            .unwrap(),
        ))
    }

    // TestAdmitBelowQuotaLimitWithUpdate for services: only the difference is charged.
    #[test]
    fn a_service_turning_node_port_is_charged_its_node_ports() {
        let q = quota(
            "q",
            &[("services", "10"), ("services.nodeports", "2")],
            Some(&[("services", "1"), ("services.nodeports", "0")]),
            &[],
        );
        let update = Request {
            operation: quota::Operation::Update,
            subresource: "",
            object: service("NodePort", 2),
            old: Some((service("ClusterIP", 2), true)),
        };
        let out = check_request(
            std::slice::from_ref(&q),
            &update,
            &Evaluator::Services,
            now(),
        )
        .unwrap();
        let used = used_of(&out[0]);
        assert_eq!(used["services"], "1");
        assert_eq!(used["services.nodeports"], "2");
        let too_many = Request {
            object: service("NodePort", 3),
            ..update
        };
        assert_eq!(
            forbidden_reason(check_request(&[q], &too_many, &Evaluator::Services, now())),
            "exceeded quota: q, requested: services.nodeports=3, used: services.nodeports=0, limited: services.nodeports=2"
        );
    }

    fn claim(storage: &str) -> Item {
        Item::PersistentVolumeClaim(Arc::new(
            serde_json::from_value::<PersistentVolumeClaim>(json!({
                "metadata": {"name": "c", "namespace": "test", "resourceVersion": "1"},
                "spec": {"accessModes": ["ReadWriteOnce"],
                         "resources": {"requests": {"storage": storage}}}
            }))
            .unwrap(),
        ))
    }

    // TestAdmitPersistentVolumeClaimExpand
    #[test]
    fn expanding_a_claim_charges_the_added_storage() {
        let q = quota(
            "q",
            &[
                ("requests.storage", "15Gi"),
                ("persistentvolumeclaims", "5"),
            ],
            Some(&[
                ("requests.storage", "10Gi"),
                ("persistentvolumeclaims", "1"),
            ]),
            &[],
        );
        let expand = |to: &str| Request {
            operation: quota::Operation::Update,
            subresource: "",
            object: claim(to),
            old: Some((claim("10Gi"), true)),
        };
        let out = check_request(
            std::slice::from_ref(&q),
            &expand("15Gi"),
            &Evaluator::PersistentVolumeClaims,
            now(),
        )
        .unwrap();
        assert_eq!(used_of(&out[0])["requests.storage"], "15Gi");
        assert_eq!(used_of(&out[0])["persistentvolumeclaims"], "1");
        assert_eq!(
            forbidden_reason(check_request(&[q], &expand("20Gi"), &Evaluator::PersistentVolumeClaims, now())),
            "exceeded quota: q, requested: requests.storage=10Gi, used: requests.storage=10Gi, limited: requests.storage=15Gi"
        );
    }

    #[test]
    fn updates_of_pods_and_other_subresources_charge_nothing() {
        let q = quota("q", &[("pods", "1")], Some(&[("pods", "1")]), &[]);
        let p = pod(json!({}), json!({}));
        let update = Request {
            operation: quota::Operation::Update,
            subresource: "",
            object: p.clone(),
            old: Some((p, true)),
        };
        let out = check_request(&[q], &update, &Evaluator::Pods, now()).unwrap();
        assert_eq!(used_of(&out[0])["pods"], "1");
    }
}
