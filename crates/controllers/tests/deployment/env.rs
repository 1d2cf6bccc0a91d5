//! Test environment for the Deployment controller: the in-process API server, the Deployment and
//! ReplicaSet controllers, and a kubelet stand-in that marks pods Ready (except for
//! [`NEVER_READY_IMAGE`]) and finishes their deletion.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{
    Deployment, DeploymentSpec, DeploymentStrategy, ReplicaSet, RollingUpdateDeployment,
};
use k8s_openapi::api::core::v1::{Event, Pod, PodCondition, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, PostParams};
use rkcm_controllers::deployment::{Config, DeploymentController};
use rkcm_controllers::replicaset::{Config as ReplicaSetConfig, ReplicaSetController};
use rkcm_runtime::testing::pod_template;
use tokio::task::JoinSet;

use crate::support::Cluster;
use tokio_util::sync::CancellationToken;

/// Pods of this image never become Ready.
pub const NEVER_READY_IMAGE: &str = "app:never-ready";
const NS: &str = "default";
const TIMEOUT: Duration = Duration::from_secs(60);
const POLL: Duration = Duration::from_millis(20);

/// Polls `f` until it returns `Some`, panicking after a minute with `what`.
pub async fn eventually<T, F, Fut>(what: &str, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}; the controller is likely stuck"
        );
        tokio::time::sleep(POLL).await;
    }
}

/// A RollingUpdate Deployment `name` of `replicas` pods of `image`, selecting `app=<name>`.
pub fn deployment(name: &str, replicas: i32, image: &str) -> Deployment {
    let labels = BTreeMap::from([("app".to_string(), name.to_string())]);
    Deployment {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(NS.into()),
            ..Default::default()
        },
        spec: Some(DeploymentSpec {
            replicas: Some(replicas),
            selector: LabelSelector {
                match_labels: Some(labels.clone()),
                ..Default::default()
            },
            strategy: Some(DeploymentStrategy {
                type_: Some("RollingUpdate".into()),
                rolling_update: Some(RollingUpdateDeployment {
                    max_surge: Some(IntOrString::String("25%".into())),
                    max_unavailable: Some(IntOrString::String("25%".into())),
                }),
            }),
            template: pod_template(labels, "app", image),
            ..Default::default()
        }),
        status: None,
    }
}

/// One observation of a Deployment's pods (terminating pods excluded).
#[derive(Debug, Clone)]
pub struct Sample {
    /// Pods.
    pub total: usize,
    /// Ready pods.
    pub ready: usize,
    /// Distinct images.
    pub images: BTreeSet<String>,
}

/// Samples pods continuously until stopped.
pub struct Sampler {
    stop: CancellationToken,
    task: tokio::task::JoinHandle<Vec<Sample>>,
}

impl Sampler {
    /// Stops sampling and returns the samples.
    pub async fn stop(self) -> Vec<Sample> {
        self.stop.cancel();
        self.task.await.expect("sampler panicked")
    }
}

fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

fn image(pod: &Pod) -> String {
    pod.spec
        .as_ref()
        .and_then(|s| s.containers.first())
        .and_then(|c| c.image.clone())
        .unwrap_or_default()
}

/// The API server, the Deployment controller and the simulation.
pub struct Env {
    cluster: Cluster,
    client: kube::Client,
    shutdown: CancellationToken,
    tasks: JoinSet<()>,
    controller_task: tokio::task::JoinHandle<()>,
}

impl Env {
    /// Starts everything.
    pub async fn start() -> Self {
        Self::start_counting(Arc::new(AtomicU64::new(0))).await
    }

    /// Starts everything; `writes` counts the Deployment controller's API writes.
    pub async fn start_counting(writes: Arc<AtomicU64>) -> Self {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_test_writer()
            .try_init();
        let cluster = Cluster::start().await;
        let (server, factory, broadcaster) = (&cluster.server, &cluster.factory, &cluster.events);
        let (client, shutdown) = (cluster.client.clone(), cluster.shutdown.clone());
        let recorder = broadcaster.recorder(rkcm_controllers::deployment::EVENT_SOURCE);
        let counting =
            tower::util::MapRequestLayer::new(move |req: http::Request<kube::client::Body>| {
                if req.method() != http::Method::GET {
                    writes.fetch_add(1, Ordering::Relaxed);
                }
                req
            });
        let d_client = kube::client::ClientBuilder::try_from(server.kube_config())
            .expect("client for the deployment controller")
            .with_layer(&counting)
            .build();
        let controller = DeploymentController::new(factory, d_client, recorder, Config::default());
        factory.start(shutdown.clone());
        let mut tasks = JoinSet::new();
        let controller_task = tokio::spawn(controller.run(2, shutdown.clone()));
        let rs_controller = ReplicaSetController::<ReplicaSet>::new(
            factory,
            client.clone(),
            broadcaster.recorder("replicaset-controller"),
            ReplicaSetConfig::default(),
        );
        factory.start(shutdown.clone());
        tasks.spawn(rs_controller.run(2, shutdown.clone()));
        let sim = Simulation {
            client: client.clone(),
        };
        let stop = shutdown.clone();
        tasks.spawn(async move {
            while !stop.is_cancelled() {
                if let Err(e) = sim.pass().await {
                    tracing::debug!(error = %e, "simulation pass failed; retrying");
                }
                tokio::select! {
                    () = stop.cancelled() => break,
                    () = tokio::time::sleep(POLL) => {}
                }
            }
        });
        Self {
            cluster,
            client,
            shutdown,
            tasks,
            controller_task,
        }
    }

    /// The Deployments API of the test namespace.
    pub fn deployments(&self) -> Api<Deployment> {
        Api::namespaced(self.client.clone(), NS)
    }

    /// The ReplicaSets API of the test namespace.
    pub fn replica_set_api(&self) -> Api<ReplicaSet> {
        Api::namespaced(self.client.clone(), NS)
    }

    /// (reason, message) of the events about the Deployment `name`, once the recorder has written
    /// at least one.
    pub async fn events_for(&self, name: &str) -> kube::Result<Vec<(String, String)>> {
        let api: Api<Event> = Api::namespaced(self.client.clone(), NS);
        let mut found = Vec::new();
        for _ in 0..250 {
            let events = api.list(&ListParams::default()).await?.items;
            found = events
                .into_iter()
                .filter(|e| {
                    e.involved_object.kind.as_deref() == Some("Deployment")
                        && e.involved_object.name.as_deref() == Some(name)
                })
                .map(|e| (e.reason.unwrap_or_default(), e.message.unwrap_or_default()))
                .collect();
            if !found.is_empty() {
                break;
            }
            tokio::time::sleep(POLL).await;
        }
        Ok(found)
    }

    /// ReplicaSets matching `selector`.
    pub async fn replica_sets(&self, selector: &str) -> kube::Result<Vec<ReplicaSet>> {
        let api: Api<ReplicaSet> = Api::namespaced(self.client.clone(), NS);
        Ok(api
            .list(&ListParams::default().labels(selector))
            .await?
            .items)
    }

    /// Waits until the rollout of `name` is complete as `kubectl rollout status` judges it.
    pub async fn wait_complete(&self, name: &str, replicas: i32) {
        let api = self.deployments();
        eventually(&format!("rollout of {name} to complete"), || async {
            let d = api.get(name).await.ok()?;
            let status = d.status?;
            let done = status.observed_generation? >= d.metadata.generation?
                && status.updated_replicas == Some(replicas)
                && status.replicas == Some(replicas)
                && status.available_replicas == Some(replicas);
            done.then_some(())
        })
        .await
    }

    /// Waits until the ReplicaSets matching `selector` have the given sizes, by image.
    pub async fn wait_sizes(&self, selector: &str, sizes: &[(&str, i32)]) {
        eventually(&format!("replica set sizes {sizes:?}"), || async {
            let rss = self.replica_sets(selector).await.ok()?;
            let got: BTreeMap<String, i32> = rss
                .iter()
                .map(|rs| {
                    let spec = rs.spec.as_ref();
                    let image = spec
                        .and_then(|s| s.template.as_ref())
                        .and_then(|t| t.spec.as_ref())
                        .and_then(|s| s.containers.first())
                        .and_then(|c| c.image.clone())
                        .unwrap_or_default();
                    (image, spec.and_then(|s| s.replicas).unwrap_or(0))
                })
                .collect();
            sizes
                .iter()
                .all(|(image, size)| got.get(*image) == Some(size))
                .then_some(())
        })
        .await
    }

    /// Starts sampling the pods matching `selector`.
    pub fn sample_pods(&self, selector: &str) -> Sampler {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), NS);
        let stop = CancellationToken::new();
        let token = stop.clone();
        let lp = ListParams::default().labels(selector);
        let task = tokio::spawn(async move {
            let mut samples = Vec::new();
            while !token.is_cancelled() {
                if let Ok(pods) = api.list(&lp).await {
                    let live: Vec<&Pod> = pods
                        .items
                        .iter()
                        .filter(|p| p.metadata.deletion_timestamp.is_none())
                        .collect();
                    samples.push(Sample {
                        total: live.len(),
                        ready: live.iter().filter(|p| is_ready(p)).count(),
                        images: live.iter().map(|p| image(p)).collect(),
                    });
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            samples
        });
        Sampler { stop, task }
    }

    /// Stops the controller, the simulation and the server.
    pub async fn stop(mut self) {
        self.shutdown.cancel();
        tokio::time::timeout(Duration::from_secs(10), async {
            while self.tasks.join_next().await.is_some() {}
        })
        .await
        .expect("the ReplicaSet controller or the kubelet stand-in did not stop");
        tokio::time::timeout(Duration::from_secs(10), self.controller_task)
            .await
            .expect("controller did not stop; a worker is likely deadlocked")
            .expect("controller panicked");
        self.cluster.stop().await;
    }
}

/// What a kubelet would do, done by polling the API.
struct Simulation {
    client: kube::Client,
}

impl Simulation {
    async fn pass(&self) -> kube::Result<()> {
        let pod_api: Api<Pod> = Api::namespaced(self.client.clone(), NS);
        let pods = pod_api.list(&ListParams::default()).await?.items;

        // Kubelet: finish deletions at once, make new pods Running and (unless told not to) Ready.
        for pod in &pods {
            let name = pod.metadata.name.clone().unwrap_or_default();
            if pod.metadata.deletion_timestamp.is_some() {
                let _ = pod_api
                    .delete(&name, &DeleteParams::default().grace_period(0))
                    .await;
            } else if !is_ready(pod) && image(pod) != NEVER_READY_IMAGE {
                let mut ready = pod.clone();
                ready.status = Some(PodStatus {
                    phase: Some("Running".into()),
                    conditions: Some(vec![PodCondition {
                        type_: "Ready".into(),
                        status: "True".into(),
                        last_transition_time: Some(
                            k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                                jiff::Timestamp::now(),
                            ),
                        ),
                        ..Default::default()
                    }]),
                    ..Default::default()
                });
                let _ = pod_api
                    .replace_status(&name, &PostParams::default(), &ready)
                    .await;
            } else if pod.status.as_ref().and_then(|s| s.phase.as_deref()) != Some("Running") {
                let mut running = pod.clone();
                running.status.get_or_insert_with(Default::default).phase = Some("Running".into());
                let _ = pod_api
                    .replace_status(&name, &PostParams::default(), &running)
                    .await;
            }
        }

        Ok(())
    }
}
