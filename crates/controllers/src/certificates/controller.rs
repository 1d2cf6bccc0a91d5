//! The loop the signing and approving controllers share: every CertificateSigningRequest that
//! changes is queued, and a sync hands a copy of it to the controller's handler unless it already
//! holds a certificate.
//!
//! Mirrors `pkg/controller/certificates/certificate_controller.go` (`CertificateController`):
//! queue rate limiter `MaxOf(ItemExponential(200ms, 1000s), Bucket(10 qps, 100))`, a failed sync
//! retried with backoff and logged as `Sync <name> failed with : <error>`.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use rkcm_runtime::informer::{
    wait_for_cache_sync, HasSynced, InformerFactory, Notification, SharedInformer,
};
use rkcm_runtime::workqueue::{
    BucketRateLimiter, ItemExponentialFailureRateLimiter, MaxOfRateLimiter, RateLimitingQueue,
};
use rkcm_runtime::{worker, ObjectKey, Shutdown};

use super::conditions::is_issued;

/// What a certificate controller does with one request that has no certificate yet.
pub trait Handler: Send + Sync + 'static {
    /// Why handling a request failed; the request is retried with backoff.
    type Error: std::error::Error + Send + Sync + 'static;

    /// Handles `csr`, a copy of the cached request.
    fn handle(
        &self,
        csr: CertificateSigningRequest,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// The level a failure is logged at, when not an error (kube's `IgnorableError` is logged at
    /// `V(4)`); the request is retried with backoff either way.
    fn log_level(_error: &Self::Error) -> Option<tracing::Level> {
        None
    }
}

/// Feeds changed CertificateSigningRequests to a [`Handler`].
pub struct CertificateController<H> {
    name: &'static str,
    queue: RateLimitingQueue<String>,
    csrs: SharedInformer<CertificateSigningRequest>,
    handler: H,
}

impl<H: Handler> CertificateController<H> {
    /// Registers the controller `name` (also its queue's name) on the factory's request
    /// informer.
    pub fn new(name: &'static str, factory: &InformerFactory, handler: H) -> Arc<Self> {
        let limiter = MaxOfRateLimiter::new(vec![
            Box::new(ItemExponentialFailureRateLimiter::new(
                Duration::from_millis(200),
                Duration::from_secs(1000),
            )),
            Box::new(BucketRateLimiter::new(10.0, 100)),
        ]);
        let queue = RateLimitingQueue::with_rate_limiter(name, Box::new(limiter));
        let csrs = factory.informer::<CertificateSigningRequest>();
        let q = queue.clone();
        csrs.add_event_handler(move |note: Notification<CertificateSigningRequest>| {
            let name = match &note {
                Notification::Add(csr) | Notification::Update { new: csr, .. } => {
                    csr.metadata.name.clone()
                }
                Notification::Delete(deleted) => deleted.object().metadata.name.clone(),
            };
            if let Some(name) = name {
                q.add(name);
            }
        });
        Arc::new(Self {
            name,
            queue,
            csrs,
            handler,
        })
    }

    /// The handler (for tests).
    pub fn handler(&self) -> &H {
        &self.handler
    }

    /// Runs `workers` sync loops until `shutdown`.
    pub async fn run(self: Arc<Self>, workers: usize, shutdown: Shutdown) {
        tracing::info!(controller = self.name, "Starting certificate controller");
        let synced: [&dyn HasSynced; 1] = [&self.csrs];
        if wait_for_cache_sync(self.name, &synced, &shutdown).await {
            let this = Arc::clone(&self);
            worker::run(
                self.queue.clone(),
                workers.max(1),
                shutdown,
                worker::ErrorPolicy::handle_error().with_level_of(H::log_level),
                move |name| {
                    let this = Arc::clone(&this);
                    async move { this.sync(&name).await }
                },
            )
            .await;
        }
        tracing::info!(
            controller = self.name,
            "Shutting down certificate controller"
        );
    }

    /// Hands the cached request `name` to the handler unless it is gone or already issued.
    pub async fn sync(&self, name: &str) -> Result<(), H::Error> {
        let Some(csr) = self.csrs.store().get(&ObjectKey::cluster(name)) else {
            tracing::trace!(csr = name, "csr has been deleted");
            return Ok(());
        };
        if is_issued(&csr) {
            // No need to do anything because it already has a cert.
            return Ok(());
        }
        self.handler.handle((*csr).clone()).await
    }
}
