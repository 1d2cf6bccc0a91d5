//! What every controller integration test starts from: an in-process API server, an admin client,
//! shared informers and an event broadcaster, stopped together when the [`Cluster`] is dropped.
//!
//! A test file includes it with `mod support;`, starts a [`Cluster`], builds its controllers on
//! `cluster.factory` and `cluster.events` (or through the registry with
//! [`Cluster::start_registered`]), spawns their run loops with [`Cluster::spawn`], then calls
//! [`Cluster::start_informers`], as the manager does.

// Each test binary uses its own subset.
#![allow(dead_code)]

use std::future::Future;
use std::time::Duration;

use anyhow::{bail, Result};
use kube::Client;
use rkcm_apiserver::testing::{self, TestServer};
use rkcm_controllers::registry::{self, ControllerContext, ControllerOptions, Started};
use rkcm_runtime::events::EventBroadcaster;
use rkcm_runtime::informer::InformerFactory;
use rkcm_runtime::Shutdown;
use tokio_util::sync::DropGuard;

/// The namespace tests work in.
pub const NS: &str = "default";
/// How long [`eventually`] waits.
pub const DEADLINE: Duration = Duration::from_secs(30);

/// A running API server, its admin client, shared informers (not started yet) and an event
/// broadcaster. Dropping it stops the controllers, the informers and the server.
pub struct Cluster {
    /// The server; stopped on drop.
    pub server: TestServer,
    /// A client authenticated as admin, without client-side rate limiting.
    pub client: Client,
    /// Shared informers: controllers register theirs, then [`Cluster::start_informers`].
    pub factory: InformerFactory,
    /// Events of every controller go through this broadcaster.
    pub events: EventBroadcaster,
    /// Cancelled when the cluster is dropped or stopped.
    pub shutdown: Shutdown,
    _cancel_on_drop: DropGuard,
}

impl Cluster {
    /// Starts an in-memory API server on `127.0.0.1:0`.
    pub async fn start() -> Self {
        Self::on(testing::start().await)
    }

    /// A cluster on an already started `server`.
    pub fn on(server: TestServer) -> Self {
        let client = server.client();
        let shutdown = Shutdown::new();
        Self {
            factory: InformerFactory::new(client.clone(), Duration::ZERO),
            events: EventBroadcaster::new(client.clone()),
            _cancel_on_drop: shutdown.clone().drop_guard(),
            shutdown,
            client,
            server,
        }
    }

    /// Spawns a controller's run loop (it stops when the cluster's shutdown is cancelled).
    pub fn spawn(&self, run: impl Future<Output = ()> + Send + 'static) {
        tokio::spawn(run);
    }

    /// Starts the shared informers; call it once every controller has registered its own.
    pub fn start_informers(&self) {
        self.factory.start(self.shutdown.clone());
    }

    /// Starts the named controllers through the registry with `options`, every one on the admin
    /// client, then the informers: as the manager does.
    pub async fn start_registered(&self, names: &[&str], options: ControllerOptions) -> Result<()> {
        let clients = {
            let client = self.client.clone();
            move |_: &str| Ok(client.clone())
        };
        let ctx = ControllerContext {
            factory: &self.factory,
            clients: &clients,
            events: &self.events,
            options: &options,
        };
        for name in names {
            match registry::start(name, &ctx, self.shutdown.clone()).await? {
                Started::Running(run) => self.spawn(run),
                Started::Skipped(why) => bail!("{name} skipped: {why}"),
            }
        }
        self.start_informers();
        Ok(())
    }
}

impl Cluster {
    /// Stops the controllers and informers, then the server, and waits for the server.
    pub async fn stop(self) {
        self.shutdown.cancel();
        self.server.stop().await;
    }
}

/// Polls `check` until it returns `Ok(Some(v))`, or fails after [`DEADLINE`] naming `what`.
pub async fn eventually<T, F, Fut>(what: &str, check: F) -> Result<T>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Result<Option<T>>>,
{
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        if let Some(v) = check().await? {
            return Ok(v);
        }
        if tokio::time::Instant::now() > deadline {
            bail!("timed out waiting for {what} (is the controller running?)");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
