//! The objects the controller measures, by resource: shared informers for pods, services,
//! claims and the kinds quotas most often count (the monitors of `resource_quota_monitor.go`);
//! a live metadata listing through discovery for any other `count/<resource>.<group>`.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{
    ConfigMap, PersistentVolumeClaim, Pod, ReplicationController, ResourceQuota, Secret, Service,
};
use kube::api::{Api, DynamicObject, ListParams};
use kube::discovery::{Discovery, Scope};
use kube::Resource;
use rkcm_apimachinery::quota::{Evaluator, GroupResource, Item};
use rkcm_runtime::informer::{HasSynced, InformerFactory, SharedInformer};
use serde::de::DeserializeOwned;

/// Counts the cached objects of one kind in a namespace.
pub(crate) trait Counter: Send + Sync {
    /// The cached objects of `namespace`, or why they are not known yet.
    fn items(&self, namespace: &str) -> Result<Vec<Item>, String>;
}

struct Cached<K: Resource<DynamicType = ()>> {
    informer: SharedInformer<K>,
    wrap: fn(Arc<K>) -> Item,
    group_resource: GroupResource,
}

impl<K> Counter for Cached<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    fn items(&self, namespace: &str) -> Result<Vec<Item>, String> {
        // `protectedLister`: no answer until the cache has synced.
        if !self.informer.has_synced() {
            let gr = &self.group_resource;
            return Err(format!("{}.{} not yet synced", gr.resource, gr.group));
        }
        Ok(self
            .informer
            .store()
            .list_by_namespace(namespace)
            .into_iter()
            .map(self.wrap)
            .collect())
    }
}

/// The informer-backed counters, by resource.
pub(crate) struct Counted {
    counters: BTreeMap<GroupResource, Box<dyn Counter>>,
}

fn cached<K>(
    factory: &InformerFactory,
    group: &str,
    resource: &str,
    wrap: fn(Arc<K>) -> Item,
) -> (GroupResource, Box<dyn Counter>)
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    let group_resource = GroupResource::new(group, resource);
    (
        group_resource.clone(),
        Box::new(Cached {
            informer: factory.informer::<K>(),
            wrap,
            group_resource,
        }),
    )
}

fn object<K>(_: Arc<K>) -> Item {
    Item::Object
}

impl Counted {
    /// Requests the informers of the counted kinds from `factory`.
    pub(crate) fn new(factory: &InformerFactory) -> Self {
        let counters = [
            cached::<Pod>(factory, "", "pods", Item::Pod),
            cached::<Service>(factory, "", "services", Item::Service),
            cached::<PersistentVolumeClaim>(
                factory,
                "",
                "persistentvolumeclaims",
                Item::PersistentVolumeClaim,
            ),
            cached::<ConfigMap>(factory, "", "configmaps", object),
            cached::<Secret>(factory, "", "secrets", object),
            cached::<ReplicationController>(factory, "", "replicationcontrollers", object),
            cached::<ResourceQuota>(factory, "", "resourcequotas", object),
            cached::<Deployment>(factory, "apps", "deployments", object),
            cached::<ReplicaSet>(factory, "apps", "replicasets", object),
            cached::<StatefulSet>(factory, "apps", "statefulsets", object),
            cached::<DaemonSet>(factory, "apps", "daemonsets", object),
            cached::<Job>(factory, "batch", "jobs", object),
            cached::<CronJob>(factory, "batch", "cronjobs", object),
        ]
        .into_iter()
        .collect();
        Self { counters }
    }

    /// The cached objects of `evaluator`'s resource in `namespace`; `None` when no informer
    /// holds that resource.
    pub(crate) fn items(
        &self,
        evaluator: &Evaluator,
        namespace: &str,
    ) -> Option<Result<Vec<Item>, String>> {
        self.counters
            .get(&evaluator.group_resource())
            .map(|c| c.items(namespace))
    }
}

/// Counts the objects of a resource no informer holds by listing their metadata in `namespace`,
/// the resource found through discovery (its preferred version).
pub(crate) async fn count_live(
    client: &kube::Client,
    group_resource: &GroupResource,
    namespace: &str,
) -> Result<usize, String> {
    let discovery = Discovery::new(client.clone())
        .filter(&[group_resource.group.as_str()])
        .run()
        .await
        .map_err(|e| format!("discovering {}: {e}", group_resource.object_count_name()))?;
    let found = discovery.groups().find_map(|g| {
        g.recommended_resources().into_iter().find(|(r, caps)| {
            r.plural == group_resource.resource && caps.scope == Scope::Namespaced
        })
    });
    let Some((resource, _)) = found else {
        // Not served: nothing of it can exist.
        return Ok(0);
    };
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &resource);
    let list = api
        .list_metadata(&ListParams::default())
        .await
        .map_err(|e| format!("failed to list {}: {e}", group_resource.object_count_name()))?;
    Ok(list.items.len())
}

/// The informers the controller waits for before its first sync.
pub(crate) fn essential(factory: &InformerFactory) -> Vec<Box<dyn HasSynced>> {
    vec![
        Box::new(factory.informer::<ResourceQuota>()),
        Box::new(factory.informer::<Pod>()),
        Box::new(factory.informer::<Service>()),
        Box::new(factory.informer::<PersistentVolumeClaim>()),
    ]
}
