//! The root CA publisher: a `kube-root-ca.crt` ConfigMap with the cluster's CA bundle in every
//! namespace, put back when it is edited or deleted.
//!
//! Mirrors `pkg/controller/certificates/rootcacertpublisher/publisher.go`: namespaces that are
//! added or become active, and the ConfigMap's own updates and deletions, queue the namespace;
//! its sync creates the ConfigMap or restores its `ca.crt` and description annotation.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, ObjectMeta, PostParams};
use rkcm_runtime::informer::{
    wait_for_cache_sync, HasSynced, InformerFactory, Notification, SharedInformer,
};
use rkcm_runtime::workqueue::RateLimitingQueue;
use rkcm_runtime::{api_error, worker, ObjectKey, Shutdown};

/// Name of the ConfigMap published in every namespace.
pub const ROOT_CA_CONFIG_MAP_NAME: &str = "kube-root-ca.crt";
/// The annotation that says what the ConfigMap is for.
pub const DESCRIPTION_ANNOTATION: &str = "kubernetes.io/description";
/// kube's description of the ConfigMap.
pub const DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";

/// Writing the ConfigMap of a namespace failed.
#[derive(Debug, thiserror::Error)]
#[error("failed to publish {ROOT_CA_CONFIG_MAP_NAME} in namespace {namespace}")]
pub struct Error {
    /// The namespace.
    pub namespace: String,
    /// The API error.
    #[source]
    pub source: kube::Error,
}

/// What a namespace's sync does.
#[derive(Debug, PartialEq)]
pub enum Action {
    /// Create the ConfigMap.
    Create(ConfigMap),
    /// Replace the ConfigMap with this one (data and annotation restored).
    Update(ConfigMap),
    /// Nothing to do.
    None,
}

/// What to do about a namespace whose ConfigMap is `existing`, to publish `root_ca`.
pub fn reconcile(namespace: &str, existing: Option<&ConfigMap>, root_ca: &str) -> Action {
    let data = BTreeMap::from([("ca.crt".to_string(), root_ca.to_string())]);
    let Some(cm) = existing else {
        return Action::Create(ConfigMap {
            metadata: ObjectMeta {
                name: Some(ROOT_CA_CONFIG_MAP_NAME.to_string()),
                namespace: Some(namespace.to_string()),
                annotations: Some(BTreeMap::from([(
                    DESCRIPTION_ANNOTATION.to_string(),
                    DESCRIPTION.to_string(),
                )])),
                ..Default::default()
            },
            data: Some(data),
            ..Default::default()
        });
    };
    let described = cm
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(DESCRIPTION_ANNOTATION))
        .is_some_and(|d| !d.is_empty());
    if cm.data.as_ref() == Some(&data) && described {
        return Action::None;
    }
    let mut cm = cm.clone();
    cm.data = Some(data);
    cm.metadata
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(DESCRIPTION_ANNOTATION.to_string(), DESCRIPTION.to_string());
    Action::Update(cm)
}

/// Publishes the root CA in every namespace.
pub struct Publisher {
    client: kube::Client,
    root_ca: String,
    queue: RateLimitingQueue<String>,
    namespaces: SharedInformer<Namespace>,
    config_maps: SharedInformer<ConfigMap>,
}

impl Publisher {
    /// Registers the publisher's handlers; `root_ca` is the PEM bundle to publish.
    pub fn new(factory: &InformerFactory, client: kube::Client, root_ca: String) -> Arc<Self> {
        let queue = RateLimitingQueue::new("root_ca_cert_publisher");
        let namespaces = factory.informer::<Namespace>();
        let config_maps = factory.informer::<ConfigMap>();
        let q = queue.clone();
        namespaces.add_event_handler(move |note: Notification<Namespace>| {
            let (ns, added) = match &note {
                Notification::Add(ns) => (ns, true),
                Notification::Update { new, .. } => (new, false),
                Notification::Delete(_) => return,
            };
            let active = ns.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Active");
            if let Some(name) = &ns.metadata.name {
                if added || active {
                    q.add(name.clone());
                }
            }
        });
        let q = queue.clone();
        config_maps.add_event_handler(move |note: Notification<ConfigMap>| {
            let cm = match &note {
                Notification::Add(_) => return,
                Notification::Update { new, .. } => new,
                Notification::Delete(deleted) => deleted.object(),
            };
            if cm.metadata.name.as_deref() == Some(ROOT_CA_CONFIG_MAP_NAME) {
                if let Some(ns) = &cm.metadata.namespace {
                    q.add(ns.clone());
                }
            }
        });
        Arc::new(Self {
            client,
            root_ca,
            queue,
            namespaces,
            config_maps,
        })
    }

    /// Whether the publisher's caches have synced.
    pub fn has_synced(&self) -> bool {
        self.namespaces.has_synced() && self.config_maps.has_synced()
    }

    /// Runs `workers` sync loops until `shutdown`.
    pub async fn run(self: Arc<Self>, workers: usize, shutdown: Shutdown) {
        tracing::info!(controller = "root-ca-cert-publisher", "starting controller");
        let synced: [&dyn HasSynced; 2] = [&self.namespaces, &self.config_maps];
        if wait_for_cache_sync("crt configmap", &synced, &shutdown).await {
            let this = Arc::clone(&self);
            worker::run(
                self.queue.clone(),
                workers,
                shutdown,
                worker::ErrorPolicy::handle_error(),
                move |ns| {
                    let this = Arc::clone(&this);
                    async move { this.sync(&ns).await }
                },
            )
            .await;
        }
        tracing::info!(
            controller = "root-ca-cert-publisher",
            "shutting down controller"
        );
    }

    /// Creates or restores the ConfigMap of namespace `namespace`.
    pub async fn sync(&self, namespace: &str) -> Result<(), Error> {
        let existing = self
            .config_maps
            .store()
            .get(&ObjectKey::new(namespace, ROOT_CA_CONFIG_MAP_NAME));
        let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), namespace);
        let result = match reconcile(namespace, existing.as_deref(), &self.root_ca) {
            Action::None => return Ok(()),
            Action::Create(cm) => match api.create(&PostParams::default(), &cm).await {
                // A namespace that is gone or terminating needs no ConfigMap.
                Err(e)
                    if api_error::is_not_found(&e) || api_error::is_namespace_terminating(&e) =>
                {
                    return Ok(())
                }
                other => other,
            },
            Action::Update(cm) => {
                api.replace(ROOT_CA_CONFIG_MAP_NAME, &PostParams::default(), &cm)
                    .await
            }
        };
        result.map(drop).map_err(|source| Error {
            namespace: namespace.to_string(),
            source,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CA: &str = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

    #[test]
    fn a_missing_config_map_is_created_with_the_bundle_and_description() {
        let Action::Create(cm) = reconcile("ns", None, CA) else {
            panic!("expected a create");
        };
        assert_eq!(cm.metadata.name.as_deref(), Some(ROOT_CA_CONFIG_MAP_NAME));
        assert_eq!(cm.data.unwrap()["ca.crt"], CA);
        assert_eq!(
            cm.metadata.annotations.unwrap()[DESCRIPTION_ANNOTATION],
            DESCRIPTION
        );
    }

    #[test]
    fn an_edited_config_map_is_restored_and_keeps_its_other_fields() {
        let Action::Create(published) = reconcile("ns", None, CA) else {
            panic!("expected a create");
        };
        assert_eq!(reconcile("ns", Some(&published), CA), Action::None);

        let mut edited = published.clone();
        edited.data = Some(BTreeMap::from([("ca.crt".into(), "tampered".into())]));
        edited.metadata.labels = Some(BTreeMap::from([("keep".into(), "me".into())]));
        let Action::Update(restored) = reconcile("ns", Some(&edited), CA) else {
            panic!("expected an update");
        };
        assert_eq!(restored.data.as_ref().unwrap()["ca.crt"], CA);
        assert_eq!(restored.metadata.labels, edited.metadata.labels);

        let mut undescribed = published;
        undescribed.metadata.annotations = None;
        assert!(matches!(
            reconcile("ns", Some(&undescribed), CA),
            Action::Update(_)
        ));
    }
}
