//! The ServiceCIDR controller (`service-cidr-controller`,
//! `pkg/controller/servicecidrs/servicecidrs_controller.go`): every ServiceCIDR gets the
//! `networking.k8s.io/service-cidr-finalizer` finalizer and a `Ready` condition; a deleted one
//! keeps the finalizer, reported Ready=False with reason `Terminating`, while IPAddresses that no
//! other ServiceCIDR covers were allocated from it, and loses it [`DELETION_GRACE_PERIOD`] after
//! its deletion once nothing does.
//!
//! Handlers only enqueue ServiceCIDR names; [`decision`] decides, [`ServiceCidrController::sync`]
//! writes.

pub mod decision;
pub mod prefix;

use std::sync::Arc;

use k8s_openapi::api::networking::v1::{IPAddress, ServiceCIDR};
use kube::api::{Api, Patch, PatchParams};
use kube::Client;
use rkcm_runtime::events::{EventRecorder, EventType};
use rkcm_runtime::informer::{
    wait_for_cache_sync, HasSynced, InformerFactory, Notification, SharedInformer,
};
use rkcm_runtime::workqueue::RateLimitingQueue;
use rkcm_runtime::{api_error, worker, Clock, ObjectKey, Shutdown};
use serde_json::json;

pub use decision::{
    Plan, Readiness, DELETION_GRACE_PERIOD, IP_ALLOCATOR, LABEL_IP_FAMILY, LABEL_MANAGED_BY,
    SERVICE_CIDR_FINALIZER,
};

/// Workers kube runs (`startServiceCIDRsController` hard-codes 5; there is no flag).
pub const WORKERS: usize = 5;
/// Retries before a ServiceCIDR is dropped from the queue (`maxRetries`).
pub const MAX_RETRIES: u32 = 15;
/// The event source and field manager (`names.ServiceCIDRController`).
pub const CONTROLLER_NAME: &str = "service-cidr-controller";

/// A write of the controller failed; the ServiceCIDR is retried with backoff.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Adding or removing the finalizer failed.
    #[error("updating the finalizers of ServiceCIDR {name:?}")]
    Finalizer {
        /// The ServiceCIDR.
        name: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// Writing the `Ready` condition failed.
    #[error("updating the status of ServiceCIDR {name:?}")]
    Status {
        /// The ServiceCIDR.
        name: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
}

/// The ServiceCIDR controller.
pub struct ServiceCidrController {
    client: Client,
    cidrs: SharedInformer<ServiceCIDR>,
    ips: SharedInformer<IPAddress>,
    queue: RateLimitingQueue<String>,
    recorder: EventRecorder,
    clock: Arc<dyn Clock>,
}

impl ServiceCidrController {
    /// The controller over the factory's ServiceCIDR and IPAddress informers.
    pub fn new(
        factory: &InformerFactory,
        client: Client,
        recorder: EventRecorder,
        clock: Arc<dyn Clock>,
    ) -> Arc<Self> {
        let this = Arc::new(Self {
            client,
            cidrs: factory.informer::<ServiceCIDR>(),
            ips: factory.informer::<IPAddress>(),
            queue: RateLimitingQueue::new("ipaddresses"),
            recorder,
            clock,
        });
        let weak = Arc::downgrade(&this);
        this.cidrs.add_event_handler(move |note| {
            let Some(this) = weak.upgrade() else { return };
            match note {
                // A new range may unblock the deletion of those it overlaps.
                Notification::Add(cidr) => {
                    this.enqueue(&cidr);
                    let all = this.cidrs.store().list();
                    for name in decision::overlapping_service_cidrs(&cidr, &all) {
                        this.queue.add(name);
                    }
                }
                Notification::Update { new, .. } => this.enqueue(&new),
                Notification::Delete(d) => this.enqueue(d.object()),
            }
        });
        let weak = Arc::downgrade(&this);
        this.ips.add_event_handler(move |note| {
            let Some(this) = weak.upgrade() else { return };
            // An address may block (added) or unblock (deleted) the ranges that contain it; kube
            // has no update handler, an IPAddress's name and spec being immutable.
            let ip = match &note {
                Notification::Add(ip) => ip,
                Notification::Delete(d) => d.object(),
                Notification::Update { .. } => return,
            };
            let all = this.cidrs.store().list();
            for name in decision::containing_service_cidrs(ip, &all) {
                this.queue.add(name);
            }
        });
        this
    }

    fn enqueue(&self, cidr: &ServiceCIDR) {
        if let Some(name) = &cidr.metadata.name {
            self.queue.add(name.clone());
        }
    }

    /// Waits for the caches and runs `workers` loops until `shutdown`.
    pub async fn run(self: Arc<Self>, workers: usize, shutdown: Shutdown) {
        tracing::info!(controller = CONTROLLER_NAME, "Starting controller");
        let synced: [&dyn HasSynced; 2] = [&self.cidrs, &self.ips];
        if wait_for_cache_sync(CONTROLLER_NAME, &synced, &shutdown).await {
            let this = Arc::clone(&self);
            worker::run(
                self.queue.clone(),
                workers,
                shutdown,
                worker::ErrorPolicy::max_retries(MAX_RETRIES),
                move |name: String| {
                    let this = Arc::clone(&this);
                    async move { this.sync(&name).await }
                },
            )
            .await;
        }
        tracing::info!(controller = CONTROLLER_NAME, "Shutting down");
    }

    /// Brings the ServiceCIDR `name` to its finalizer and condition ([`decision::plan`]).
    pub async fn sync(&self, name: &str) -> Result<(), Error> {
        let Some(cidr) = self.cidrs.store().get(&ObjectKey::cluster(name)) else {
            tracing::trace!(servicecidr = name, "ServiceCIDR no longer exist");
            return Ok(());
        };
        let all = self.cidrs.store().list();
        let ips = self.ips.store().list();
        let now = self.clock.now();
        let plan = decision::plan(&cidr, &all, &ips, now);
        let api: Api<ServiceCIDR> = Api::all(self.client.clone());
        if plan.add_finalizer {
            let mut finalizers = cidr.metadata.finalizers.clone().unwrap_or_default();
            finalizers.push(SERVICE_CIDR_FINALIZER.to_string());
            self.patch_finalizers(&api, &cidr, finalizers).await?;
            tracing::trace!(
                servicecidr = name,
                "Added protection finalizer to ServiceCIDR"
            );
        }
        if let Some(readiness) = plan.status {
            let condition = readiness.condition(decision::ready_condition(&cidr), now);
            let patch = json!({"status": {"conditions": [condition]}});
            let written = api
                .patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await;
            match written {
                Ok(_) => {}
                Err(e) if api_error::is_not_found(&e) => return Ok(()),
                Err(source) => {
                    if readiness == Readiness::Ready {
                        tracing::info!(servicecidr = name, error = %api_error::message(&source), "error updating default ServiceCIDR status");
                        self.recorder.event_for(
                            &*cidr,
                            EventType::Warning,
                            "KubernetesServiceCIDRError",
                            "The ServiceCIDR Status can not be set to Ready=True",
                        );
                    }
                    return Err(Error::Status {
                        name: name.into(),
                        source,
                    });
                }
            }
        }
        if plan.remove_finalizer {
            let finalizers = cidr
                .metadata
                .finalizers
                .iter()
                .flatten()
                .filter(|f| *f != SERVICE_CIDR_FINALIZER)
                .cloned()
                .collect();
            self.patch_finalizers(&api, &cidr, finalizers).await?;
            tracing::info!(
                servicecidr = name,
                "Removed protection finalizer from ServiceCIDR"
            );
        }
        if let Some(after) = plan.requeue_after {
            self.queue.add_after(name.to_string(), after);
        }
        Ok(())
    }

    /// Sets the finalizers, conditional on the version read so that a concurrent change is not
    /// lost (kube's strategic merge patch merges into the list; a merge patch replaces it).
    async fn patch_finalizers(
        &self,
        api: &Api<ServiceCIDR>,
        cidr: &ServiceCIDR,
        finalizers: Vec<String>,
    ) -> Result<(), Error> {
        let name = cidr.metadata.name.clone().unwrap_or_default();
        let patch = json!({"metadata": {
            "finalizers": finalizers,
            "resourceVersion": cidr.metadata.resource_version,
        }});
        match api
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if api_error::is_not_found(&e) => Ok(()),
            Err(source) => Err(Error::Finalizer { name, source }),
        }
    }
}
