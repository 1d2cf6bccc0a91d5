//! The controller registry: named controllers, `--controllers` resolution, and their init functions.
//!
//! Mirrors `cmd/kube-controller-manager/app/controllermanager.go` (`NewControllerDescriptors`,
//! `IsControllerEnabled`) and `cmd/kube-controller-manager/names`.

use std::collections::BTreeSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use rkcm_runtime::events::EventBroadcaster;
use rkcm_runtime::informer::InformerFactory;
use rkcm_runtime::{Clock, Shutdown, SystemClock};

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::ReplicationController;

use crate::{deployment, garbagecollector, namespace, podgc, replicaset};

/// A controller the manager knows, by canonical name and the aliases `--controllers` accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ControllerName {
    /// Canonical name (`replicaset-controller`).
    pub name: &'static str,
    /// Older names still accepted (`replicaset`).
    pub aliases: &'static [&'static str],
    /// Whether `*` leaves it off.
    pub disabled_by_default: bool,
}

/// Canonical name of the ReplicaSet controller.
pub const REPLICASET: &str = "replicaset-controller";
/// Canonical name of the ReplicationController controller.
pub const REPLICATIONCONTROLLER: &str = "replicationcontroller-controller";
/// Canonical name of the Deployment controller.
pub const DEPLOYMENT: &str = "deployment-controller";
/// Canonical name of the pod garbage collector.
pub const PODGC: &str = "pod-garbage-collector-controller";
/// Canonical name of the garbage collector.
pub const GARBAGECOLLECTOR: &str = "garbage-collector-controller";
/// Canonical name of the namespace controller.
pub const NAMESPACE: &str = "namespace-controller";

/// Every controller rkcm implements, in start order.
pub const KNOWN: &[ControllerName] = &[
    ControllerName {
        name: NAMESPACE,
        aliases: &["namespace"],
        disabled_by_default: false,
    },
    ControllerName {
        name: GARBAGECOLLECTOR,
        aliases: &["garbagecollector"],
        disabled_by_default: false,
    },
    ControllerName {
        name: REPLICATIONCONTROLLER,
        aliases: &["replicationcontroller"],
        disabled_by_default: false,
    },
    ControllerName {
        name: PODGC,
        aliases: &["podgc"],
        disabled_by_default: false,
    },
    ControllerName {
        name: REPLICASET,
        aliases: &["replicaset"],
        disabled_by_default: false,
    },
    ControllerName {
        name: DEPLOYMENT,
        aliases: &["deployment"],
        disabled_by_default: false,
    },
];

/// `--controllers` named a controller rkcm does not know.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{name:?} is not in the list of known controllers: {known}")]
pub struct UnknownController {
    /// The name as given (without a leading `-`).
    pub name: String,
    /// Comma-separated canonical names and aliases.
    pub known: String,
}

fn lookup(name: &str) -> Option<&'static ControllerName> {
    KNOWN
        .iter()
        .find(|c| c.name == name || c.aliases.contains(&name))
}

/// The canonical names `--controllers` enables, in start order.
///
/// As kube's `IsControllerEnabled`: an explicit `-foo` disables foo, an explicit `foo` enables it,
/// otherwise `*` enables every controller that is not disabled by default. Unknown names are an error.
pub fn resolve(flag: &[String]) -> Result<Vec<&'static str>, UnknownController> {
    let mut enabled = BTreeSet::new();
    let mut disabled = BTreeSet::new();
    let mut star = false;
    for raw in flag.iter().map(|s| s.trim()).filter(|s| !s.is_empty()) {
        if raw == "*" {
            star = true;
            continue;
        }
        let (negated, name) = match raw.strip_prefix('-') {
            Some(name) => (true, name),
            None => (false, raw),
        };
        let Some(known) = lookup(name) else {
            let mut names: Vec<&str> = KNOWN
                .iter()
                .flat_map(|c| std::iter::once(c.name).chain(c.aliases.iter().copied()))
                .collect();
            names.sort_unstable();
            return Err(UnknownController {
                name: name.to_string(),
                known: names.join(", "),
            });
        };
        if negated {
            disabled.insert(known.name);
        } else {
            enabled.insert(known.name);
        }
    }
    Ok(KNOWN
        .iter()
        .filter(|c| {
            if disabled.contains(c.name) {
                false
            } else if enabled.contains(c.name) {
                true
            } else {
                star && !c.disabled_by_default
            }
        })
        .map(|c| c.name)
        .collect())
}

/// Settings of every controller, from kube-controller-manager's flags.
#[derive(Clone)]
pub struct ControllerOptions {
    /// `--concurrent-replicaset-syncs`.
    pub concurrent_replicaset_syncs: usize,
    /// `--concurrent-rc-syncs`.
    pub concurrent_rc_syncs: usize,
    /// `--concurrent-deployment-syncs`.
    pub concurrent_deployment_syncs: usize,
    /// `--concurrent-gc-syncs`.
    pub concurrent_gc_syncs: usize,
    /// `--concurrent-namespace-syncs`.
    pub concurrent_namespace_syncs: usize,
    /// `--terminated-pod-gc-threshold`.
    pub terminated_pod_gc_threshold: i64,
    /// `--namespace-sync-period`.
    pub namespace_sync_period: Duration,
    /// `--enable-garbage-collector`.
    pub enable_garbage_collector: bool,
    /// Wall clock for every controller.
    pub clock: Arc<dyn Clock>,
}

impl Default for ControllerOptions {
    fn default() -> Self {
        Self {
            concurrent_replicaset_syncs: 5,
            concurrent_rc_syncs: 5,
            concurrent_deployment_syncs: 5,
            concurrent_gc_syncs: 20,
            concurrent_namespace_syncs: 10,
            terminated_pod_gc_threshold: 12500,
            namespace_sync_period: Duration::from_secs(300),
            enable_garbage_collector: true,
            clock: Arc::new(SystemClock),
        }
    }
}

/// Builds the API client of one controller (its own rate limiter), by controller name.
pub type ClientBuilder = dyn Fn(&str) -> Result<kube::Client, kube::Error> + Send + Sync;

/// What init functions get: the shared informers, per-controller clients, the event broadcaster.
pub struct ControllerContext<'a> {
    /// The shared informer factory, started after every controller registered its informers.
    pub factory: &'a InformerFactory,
    /// A client per controller, as kube gives each controller its own clientset.
    pub clients: &'a ClientBuilder,
    /// Events go through this broadcaster.
    pub events: &'a EventBroadcaster,
    /// Controller settings.
    pub options: &'a ControllerOptions,
}

/// A started controller's run loop.
pub type RunFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

/// What an init function did.
pub enum Started {
    /// The controller registered its informers; run this until shutdown.
    Running(RunFuture),
    /// The controller is not started, for this reason (e.g. the API lacks its resource).
    Skipped(String),
}

/// Errors starting a controller.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The controller's client could not be built.
    #[error("building the client of {controller}")]
    Client {
        /// The controller.
        controller: &'static str,
        /// The cause.
        #[source]
        source: kube::Error,
    },
    /// Discovery failed.
    #[error("discovering the resources {controller} needs")]
    Discovery {
        /// The controller.
        controller: &'static str,
        /// The cause.
        #[source]
        source: kube::Error,
    },
    /// Not a known controller.
    #[error("{0:?} is not a known controller")]
    Unknown(String),
}

/// Whether the server serves `plural` in `group_version` (`v1` or `apps/v1`).
async fn served(
    client: &kube::Client,
    group_version: &str,
    plural: &str,
) -> Result<bool, kube::Error> {
    let list = if group_version == "v1" {
        client.list_core_api_resources("v1").await
    } else {
        client.list_api_group_resources(group_version).await
    };
    match list {
        Ok(list) => Ok(list.resources.iter().any(|r| r.name == plural)),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(false),
        Err(err) => Err(err),
    }
}

/// The resources each controller needs, checked through discovery before it starts.
fn required_resources(name: &str) -> &'static [(&'static str, &'static str)] {
    match name {
        REPLICASET => &[("apps/v1", "replicasets"), ("v1", "pods")],
        REPLICATIONCONTROLLER => &[("v1", "replicationcontrollers"), ("v1", "pods")],
        DEPLOYMENT => &[
            ("apps/v1", "deployments"),
            ("apps/v1", "replicasets"),
            ("v1", "pods"),
        ],
        PODGC => &[("v1", "pods"), ("v1", "nodes")],
        NAMESPACE => &[("v1", "namespaces")],
        _ => &[],
    }
}

/// Runs the init function of controller `name` (a canonical name from [`resolve`]).
pub async fn start(
    name: &str,
    ctx: &ControllerContext<'_>,
    shutdown: Shutdown,
) -> Result<Started, StartError> {
    let Some(known) = KNOWN.iter().find(|c| c.name == name) else {
        return Err(StartError::Unknown(name.to_string()));
    };
    let controller = known.name;
    let client =
        (ctx.clients)(controller).map_err(|source| StartError::Client { controller, source })?;
    for (gv, plural) in required_resources(controller) {
        if !served(&client, gv, plural)
            .await
            .map_err(|source| StartError::Discovery { controller, source })?
        {
            return Ok(Started::Skipped(format!(
                "the API server does not serve {plural} in {gv}"
            )));
        }
    }
    let o = ctx.options;
    let run: RunFuture = match controller {
        REPLICASET => {
            let c = replicaset::ReplicaSetController::new(
                ctx.factory,
                client,
                ctx.events
                    .recorder(<ReplicaSet as replicaset::ReplicaSetKind>::EVENT_SOURCE),
                replicaset::Config {
                    workers: o.concurrent_replicaset_syncs,
                    clock: Arc::clone(&o.clock),
                    ..replicaset::Config::default()
                },
            );
            let workers = o.concurrent_replicaset_syncs;
            Box::pin(async move { c.run(workers, shutdown).await })
        }
        REPLICATIONCONTROLLER => {
            let c = replicaset::ReplicaSetController::new_for_rc(
                ctx.factory,
                client,
                ctx.events
                    .recorder(<ReplicationController as replicaset::ReplicaSetKind>::EVENT_SOURCE),
                replicaset::Config {
                    workers: o.concurrent_rc_syncs,
                    clock: Arc::clone(&o.clock),
                    ..replicaset::Config::default()
                },
            );
            let workers = o.concurrent_rc_syncs;
            Box::pin(async move { c.run(workers, shutdown).await })
        }
        DEPLOYMENT => {
            let c = deployment::DeploymentController::new(
                ctx.factory,
                client,
                ctx.events.recorder(deployment::EVENT_SOURCE),
                deployment::Config {
                    workers: o.concurrent_deployment_syncs,
                    clock: Arc::clone(&o.clock),
                },
            );
            let workers = o.concurrent_deployment_syncs;
            Box::pin(async move { c.run(workers, shutdown).await })
        }
        PODGC => {
            let c = podgc::PodGcController::new(
                ctx.factory,
                client,
                podgc::Config {
                    terminated_pod_gc_threshold: o.terminated_pod_gc_threshold,
                    clock: Arc::clone(&o.clock),
                    ..podgc::Config::default()
                },
            );
            Box::pin(async move { c.run(shutdown).await })
        }
        GARBAGECOLLECTOR => {
            if !o.enable_garbage_collector {
                return Ok(Started::Skipped("--enable-garbage-collector=false".into()));
            }
            let c = garbagecollector::GarbageCollector::new(
                ctx.factory,
                client,
                garbagecollector::Config {
                    workers: o.concurrent_gc_syncs,
                },
            );
            Box::pin(async move { c.run(shutdown).await })
        }
        NAMESPACE => {
            let c = namespace::NamespaceController::new(
                ctx.factory,
                client,
                namespace::Config {
                    resync_period: o.namespace_sync_period,
                    deletion_grace_period: namespace::DELETION_GRACE_PERIOD,
                    clock: Arc::clone(&o.clock),
                },
            );
            let workers = o.concurrent_namespace_syncs;
            Box::pin(async move { c.run(workers, shutdown).await })
        }
        other => return Err(StartError::Unknown(other.to_string())),
    };
    Ok(Started::Running(run))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(s: &[&str]) -> Vec<String> {
        s.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn star_enables_every_controller_in_start_order() {
        let all = resolve(&flags(&["*"])).unwrap();
        assert_eq!(all, KNOWN.iter().map(|c| c.name).collect::<Vec<_>>());
    }

    #[test]
    fn a_minus_name_disables_one_and_aliases_are_accepted() {
        let enabled = resolve(&flags(&["*", "-podgc", "-garbage-collector-controller"])).unwrap();
        assert!(!enabled.contains(&PODGC));
        assert!(!enabled.contains(&GARBAGECOLLECTOR));
        assert!(enabled.contains(&REPLICASET));
    }

    #[test]
    fn without_star_only_named_controllers_run() {
        let enabled = resolve(&flags(&["replicaset", "deployment-controller"])).unwrap();
        assert_eq!(enabled, [REPLICASET, DEPLOYMENT]);
    }

    #[test]
    fn disabling_wins_over_enabling() {
        let enabled = resolve(&flags(&["replicaset", "-replicaset"])).unwrap();
        assert!(enabled.is_empty());
    }

    #[test]
    fn unknown_names_are_an_error_listing_the_known_ones() {
        let err = resolve(&flags(&["*", "-cronjob"])).unwrap_err();
        assert_eq!(err.name, "cronjob");
        assert!(err.known.contains("replicaset"), "{err}");
        assert!(err
            .to_string()
            .contains("is not in the list of known controllers"));
    }
}
