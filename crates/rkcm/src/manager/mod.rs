//! The controller manager process: clients, shared informers, the enabled controllers, leader
//! election, and the health and metrics endpoint. Mirrors `cmd/kube-controller-manager/app`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use rkcm_controllers::featuregate::FeatureGates;
use rkcm_controllers::registry::{self, ControllerContext, ControllerOptions, Started};
use rkcm_runtime::events::{EventBroadcaster, EventBroadcasterConfig};
use rkcm_runtime::informer::{trim_managed_fields, InformerFactory};
use rkcm_runtime::leader_election::{LeaderElectionConfig, LeaderElector};
use rkcm_runtime::{rest_client, Shutdown, SystemClock};
use tokio::task::JoinSet;

use crate::serving::{self, Health};
use client_builder::ControllerClientBuilder;
use event_sink::ControllerEventSink;

pub mod attachdetach_flags;
pub mod client_builder;
pub mod configz;
mod csr_flags;
pub mod delegation;
pub mod delegation_flags;
pub mod event_sink;
mod flags;
pub mod help_order;
pub mod hpa_flags;
pub mod ignored_flags;
pub mod legacy_tokens;
pub mod node_flags;
#[cfg(test)]
mod options_tests;
pub mod word_sep;

pub use flags::ManagerArgs;

/// Everything the manager needs to run, resolved from flags (or built by `rkcm up`).
pub struct ManagerConfig {
    /// Where the API server is and how to authenticate.
    pub kube_config: kube::Config,
    /// Canonical names of the enabled controllers, in start order; those rkcm does not implement
    /// are logged once and skipped.
    pub controllers: Vec<&'static str>,
    /// Per-controller tuning.
    pub options: ControllerOptions,
    /// `--kube-api-qps`, per controller.
    pub qps: f32,
    /// `--kube-api-burst`, per controller.
    pub burst: u32,
    /// `--min-resync-period`; each informer resyncs after a random period in [min, 2×min).
    pub min_resync_period: Duration,
    /// `--use-service-account-credentials`: each controller runs as its own ServiceAccount in
    /// `kube-system` instead of with the manager's credentials.
    pub use_service_account_credentials: bool,
    /// Lease-based leader election, when on.
    pub leader_election: Option<LeaderElectionConfig>,
    /// HTTPS health and metrics endpoint, when on.
    pub serving: Option<ServingConfig>,
}

/// The health and metrics endpoint.
pub struct ServingConfig {
    /// Address to listen on.
    pub addr: SocketAddr,
    /// TLS material.
    pub tls: Arc<rustls::ServerConfig>,
    /// Who may call it.
    pub delegation: delegation::Delegation,
    /// `--profiling`.
    pub profiling: bool,
    /// The `/configz` document.
    pub configz: serde_json::Value,
}

/// Builds the manager's configuration from kube-controller-manager flags.
pub async fn config_from_flags(args: &ManagerArgs) -> anyhow::Result<ManagerConfig> {
    let controllers = registry::resolve(&args.controllers)?;
    let feature_gates = feature_gates_from_flags(&args.feature_gates)?;
    let mut kube_config = match &args.kubeconfig {
        Some(path) => {
            let kubeconfig = kube::config::Kubeconfig::read_from(path)
                .with_context(|| format!("reading --kubeconfig {}", path.display()))?;
            kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
                .await
                .with_context(|| format!("loading --kubeconfig {}", path.display()))?
        }
        None => kube::Config::incluster().context(
            "no --kubeconfig given and not running in a cluster (KUBERNETES_SERVICE_HOST unset)",
        )?,
    };
    if let Some(master) = &args.master {
        kube_config.cluster_url = master
            .parse()
            .with_context(|| format!("--master {master:?}"))?;
    }
    let leader_election = args.leader_elect.then(|| LeaderElectionConfig {
        lease_name: args.leader_elect_resource_name.clone(),
        lease_namespace: args.leader_elect_resource_namespace.clone(),
        identity: identity(),
        lease_duration: args.leader_elect_lease_duration,
        renew_deadline: args.leader_elect_renew_deadline,
        retry_period: args.leader_elect_retry_period,
        release_on_cancel: true,
        clock: Arc::new(SystemClock),
    });
    let serving = if args.secure_port == 0 {
        None
    } else {
        let delegation = delegation::from_flags(&args.delegation).await?;
        Some(ServingConfig {
            addr: SocketAddr::new(args.bind_address, args.secure_port),
            tls: serving::tls_config(
                args.tls_cert_file.as_deref(),
                args.tls_private_key_file.as_deref(),
                &delegation.client_ca_pem,
            )?,
            delegation,
            profiling: args.delegation.profiling,
            configz: configz::document(args),
        })
    };
    let root_ca = match &args.root_ca_file {
        Some(path) => Some(
            std::fs::read_to_string(path)
                .with_context(|| format!("reading --root-ca-file {}", path.display()))?,
        ),
        None => None,
    };
    let service_account_token_generator = match &args.service_account_private_key_file {
        Some(path) => Some(legacy_tokens::generator_from_file(path)?),
        None => None,
    };
    let mut config = ManagerConfig {
        kube_config,
        controllers,
        options: ControllerOptions {
            root_ca,
            service_account_token_generator,
            csr_signing: args.csr_signing.config(),
            feature_gates,
            legacy_service_account_token_clean_up_period: args
                .legacy_service_account_token_clean_up_period,
            concurrent_serviceaccount_token_syncs: args.concurrent_serviceaccount_token_syncs,
            concurrent_replicaset_syncs: args.concurrent_replicaset_syncs,
            concurrent_rc_syncs: args.concurrent_rc_syncs,
            concurrent_statefulset_syncs: args.concurrent_statefulset_syncs,
            concurrent_deployment_syncs: args.concurrent_deployment_syncs,
            concurrent_job_syncs: args.concurrent_job_syncs,
            concurrent_cron_job_syncs: args.concurrent_cron_job_syncs,
            concurrent_daemonset_syncs: args.concurrent_daemonset_syncs,
            concurrent_ttl_after_finished_syncs: args.concurrent_ttl_after_finished_syncs,
            concurrent_validating_admission_policy_status_syncs: args
                .concurrent_validating_admission_policy_status_syncs,
            concurrent_gc_syncs: args.concurrent_gc_syncs,
            concurrent_namespace_syncs: args.concurrent_namespace_syncs,
            terminated_pod_gc_threshold: args.terminated_pod_gc_threshold,
            namespace_sync_period: args.namespace_sync_period,
            concurrent_resourcequota_syncs: args.concurrent_resourcequota_syncs,
            resource_quota_sync_period: args.resource_quota_sync_period,
            enable_garbage_collector: args.enable_garbage_collector,
            concurrent_endpoint_syncs: args.concurrent_endpoint_syncs,
            endpoint_updates_batch_period: args.endpoint_updates_batch_period,
            concurrent_service_endpoint_syncs: args.concurrent_service_endpoint_syncs,
            max_endpoints_per_slice: args.max_endpoints_per_slice,
            endpointslice_updates_batch_period: args.endpointslice_updates_batch_period,
            mirroring_concurrent_service_endpoint_syncs: args
                .mirroring_concurrent_service_endpoint_syncs,
            mirroring_max_endpoints_per_subset: args.mirroring_max_endpoints_per_subset,
            mirroring_endpointslice_updates_batch_period: args
                .mirroring_endpointslice_updates_batch_period,
            nodes: args.nodes.options(
                false,
                "",
                args.service_cluster_ip_range.as_deref().unwrap_or(""),
            )?,
            pvclaimbinder_sync_period: args.pvclaimbinder_sync_period,
            enable_dynamic_provisioning: args.enable_dynamic_provisioning,
            concurrent_ephemeralvolume_syncs: args.concurrent_ephemeralvolume_syncs,
            clock: Arc::new(SystemClock),
            ..ControllerOptions::default()
        },
        qps: args.kube_api_qps,
        burst: args.kube_api_burst,
        min_resync_period: args.min_resync_period,
        use_service_account_credentials: args.use_service_account_credentials,
        leader_election,
        serving,
    };
    args.hpa.apply(&mut config.options);
    args.attachdetach.apply(&mut config.options);
    Ok(config)
}

/// Parses the occurrences of `--feature-gates`, refusing them as pflag reports kube's error.
pub fn feature_gates_from_flags(values: &[String]) -> anyhow::Result<FeatureGates> {
    // kube 1.33 reads `--feature-gates` per component (`kube:Foo=true`); `kube` is the default.
    let values: Vec<String> = values
        .iter()
        .map(|v| {
            v.split(',')
                .map(|item| item.trim().strip_prefix("kube:").unwrap_or(item.trim()))
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect();
    FeatureGates::parse(values.iter().map(String::as_str)).map_err(|err| {
        anyhow::anyhow!(
            "invalid argument {:?} for \"--feature-gates\" flag: {err}",
            values.join(",")
        )
    })
}

/// The controllers kube would skip for their feature gates under `gates`, each with its required
/// gates: every known one, enabled by `--controllers` or not, as kube checks the gates first.
fn gated_off(gates: &FeatureGates) -> Vec<(&'static str, &'static [&'static str])> {
    registry::KNOWN
        .iter()
        .filter_map(|c| registry::disabled_by_feature_gate(c.name, gates).map(|g| (c.name, g)))
        .collect()
}

/// `rkcm controller-manager`: runs until `shutdown`.
pub async fn run_from_flags(args: ManagerArgs, shutdown: Shutdown) -> anyhow::Result<()> {
    args.ignored.log();
    let config = config_from_flags(&args).await?;
    run(config, Arc::new(Health::default()), shutdown).await?;
    Ok(())
}

/// What the manager observed while it ran, for whoever stopped it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// Events the controllers recorded that never reached the API server because the event
    /// broadcaster's queue was full (summed over leadership terms).
    pub events_dropped: u64,
}

/// Holder identity for leader election: `<hostname>_<uuid>`, as kube-controller-manager.
pub(crate) fn identity() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| {
            std::fs::read_to_string("/etc/hostname")
                .ok()
                .map(|h| h.trim().to_string())
        })
        .unwrap_or_else(|| "rkcm".to_string());
    format!("{host}_{}", random_suffix())
}

fn random_suffix() -> String {
    use rand::Rng;
    let mut rng = rand::rng();
    (0..16)
        .map(|_| format!("{:x}", rng.random_range(0..16u8)))
        .collect()
}

/// Runs the manager until `shutdown`: serving, then (with leader election, once leading) the controllers.
pub async fn run(
    config: ManagerConfig,
    health: Arc<Health>,
    shutdown: Shutdown,
) -> anyhow::Result<Report> {
    let gates = &config.options.feature_gates;
    let gated = gated_off(gates);
    for (controller, required) in &gated {
        tracing::info!(
            controller,
            required_feature_gates = ?required,
            "Controller is disabled by a feature gate"
        );
    }
    let not_implemented: Vec<&str> = config
        .controllers
        .iter()
        .copied()
        .filter(|c| !gated.iter().any(|(g, _)| g == c))
        .filter(|c| {
            let declined = registry::declined_by_init(c, gates);
            if declined {
                tracing::info!(controller = c, "Warning: skipping controller");
            }
            !declined
        })
        .filter(|c| !registry::is_implemented(c))
        .filter(|c| {
            let cloud = registry::is_cloud_provider(c);
            if cloud {
                tracing::info!(controller = c, "Skipping a cloud provider controller");
            }
            !cloud
        })
        .collect();
    if !not_implemented.is_empty() {
        tracing::info!(
            controllers = %not_implemented.join(","),
            "enabled controllers that rkcm does not implement yet will not run"
        );
    }
    let mut tasks = JoinSet::new();
    let mut config = config;
    let checks = Arc::new(serving::HealthChecks::default());
    if let Some(serving) = config.serving.take() {
        let listener = tokio::net::TcpListener::bind(serving.addr)
            .await
            .with_context(|| format!("binding the secure port {}", serving.addr))?;
        tracing::info!(addr = %serving.addr, "Serving securely on {}", serving.addr);
        let endpoint = serving::Endpoint {
            health: Arc::clone(&health),
            checks: Arc::clone(&checks),
            authn: serving.delegation.authn,
            authz: serving.delegation.authz,
            profiling: serving.profiling,
            configz: serving.configz,
        };
        tasks.spawn(serving::serve_tls(
            listener,
            Arc::clone(&serving.tls),
            serving::router(Arc::new(endpoint)),
            shutdown.clone(),
        ));
    }
    register_metrics_once();

    let result = match config.leader_election.clone() {
        None => start_controllers(&config, &health, &checks, shutdown.clone()).await,
        Some(le) => {
            health.set_standing_by();
            let client = rest_client::client(config.kube_config.clone(), config.qps, config.burst)
                .context("building the leader-election client")?;
            let elector =
                LeaderElector::new(client, le).context("leader election configuration")?;
            // kube's leader-election watchdog: unhealthy once the lease was not renewed within
            // its duration plus 20s.
            let watched = elector.clone();
            checks.add(
                "leaderElection",
                Arc::new(move || watched.check(Duration::from_secs(20))),
            );
            let config = Arc::new(config);
            let outcome = Arc::new(parking_lot::Mutex::new(Ok(Report::default())));
            let (slot, leader_health, leader_config, leader_checks) = (
                Arc::clone(&outcome),
                Arc::clone(&health),
                Arc::clone(&config),
                Arc::clone(&checks),
            );
            elector
                .run(
                    shutdown.clone(),
                    move |leading: Shutdown| async move {
                        leader_health.set_leading();
                        tracing::info!("became leader; starting controllers");
                        let result = start_controllers(
                            &leader_config,
                            &leader_health,
                            &leader_checks,
                            leading,
                        )
                        .await;
                        let mut slot = slot.lock();
                        *slot = match (std::mem::replace(&mut *slot, Ok(Report::default())), result)
                        {
                            (Ok(before), Ok(term)) => Ok(Report {
                                events_dropped: before.events_dropped + term.events_dropped,
                            }),
                            (Err(err), _) | (_, Err(err)) => Err(err),
                        };
                    },
                    || tracing::info!("stopped leading"),
                )
                .await;
            let result = std::mem::replace(&mut *outcome.lock(), Ok(Report::default()));
            match result {
                // kube-controller-manager exits when it loses the lease without being asked to stop.
                Ok(_) if !shutdown.is_cancelled() => Err(anyhow::anyhow!("leader election lost")),
                other => other,
            }
        }
    };
    shutdown.cancel();
    while tasks.join_next().await.is_some() {}
    result
}

/// Starts the enabled controllers, then the shared informers, and waits until `shutdown`.
async fn start_controllers(
    config: &ManagerConfig,
    health: &Arc<Health>,
    checks: &serving::HealthChecks,
    shutdown: Shutdown,
) -> anyhow::Result<Report> {
    let kube_config = config.kube_config.clone();
    let mut options = config.options.clone();
    if options.root_ca.is_none() {
        // kube publishes the CA of its root client config when --root-ca-file is not given.
        options.root_ca = kube_config.root_cert.as_deref().and_then(pem_bundle);
    }
    let (qps, burst) = (config.qps, config.burst);
    let builder = Arc::new(if config.use_service_account_credentials {
        ControllerClientBuilder::service_accounts(kube_config, qps, burst, Arc::new(SystemClock))
            .context("building the service-account client builder")?
    } else {
        ControllerClientBuilder::simple(kube_config, qps, burst)
    });
    let clients = {
        let builder = Arc::clone(&builder);
        move |controller: &str| builder.controller_client(controller)
    };
    // kube-controller-manager's informers drop managedFields before caching; they list and
    // watch with the manager's own client whatever identity the controllers have.
    let factory = InformerFactory::with_transform(
        builder.root().context("building the informer client")?,
        jittered(config.min_resync_period),
        trim_managed_fields,
    );
    let events = EventBroadcaster::with_sink(
        Arc::new(
            ControllerEventSink::new(Arc::clone(&builder)).context("building the event client")?,
        ),
        EventBroadcasterConfig::default(),
    );
    let mut running = JoinSet::new();
    {
        let ctx = ControllerContext {
            factory: &factory,
            clients: &clients,
            events: &events,
            options: &options,
        };
        for &name in config
            .controllers
            .iter()
            .filter(|c| registry::is_implemented(c))
            .filter(|c| registry::disabled_by_feature_gate(c, &options.feature_gates).is_none())
            .filter(|c| !registry::declined_by_init(c, &options.feature_gates))
        {
            match registry::start(name, &ctx, shutdown.clone())
                .await
                .with_context(|| format!("starting {name}"))?
            {
                Started::Running(run) => {
                    tracing::info!(controller = name, "started controller");
                    // kube's controllerhealthz: a ping check per started controller.
                    checks.add(name, serving::healthz::ping());
                    running.spawn(run);
                }
                Started::Skipped(why) => {
                    tracing::warn!(controller = name, %why, "skipping controller")
                }
            }
        }
    }
    factory.start(shutdown.clone());
    if factory.wait_for_cache_sync(&shutdown).await {
        health.set_synced(true);
        tracing::info!("all controllers' caches synced");
    }

    shutdown.cancelled().await;
    // Controllers stop taking work and finish in-flight syncs; bound the wait.
    let drained = tokio::time::timeout(Duration::from_secs(20), async {
        while running.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!("controllers did not stop within 20s; abandoning in-flight work");
    }
    // The controllers have stopped recording (or were abandoned above), so the count is final.
    let events_dropped = events.dropped();
    if events_dropped > 0 {
        tracing::warn!(
            dropped = events_dropped,
            "events dropped because the event queue was full"
        );
    }
    // Recorders held by controllers still running keep the sink open; don't wait for them forever.
    if tokio::time::timeout(Duration::from_secs(5), events.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("events still queued at shutdown were dropped");
    }
    Ok(Report { events_dropped })
}

/// Registers the REST client metrics in the process-wide registry, once.
fn register_metrics_once() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| rkcm_runtime::metrics::register_with(rest_client::register_metrics));
}

/// `ResyncPeriod` of kube-controller-manager: min × (1 + rand[0,1)).
fn jittered(min: Duration) -> Duration {
    if min.is_zero() {
        return min;
    }
    use rand::Rng;
    min.mul_f64(1.0 + rand::rng().random::<f64>())
}

/// DER certificates as one PEM bundle; `None` when there are none.
fn pem_bundle(certs: &[Vec<u8>]) -> Option<String> {
    let blocks: Vec<pem::Pem> = certs
        .iter()
        .map(|der| pem::Pem::new("CERTIFICATE", der.clone()))
        .collect();
    let config = pem::EncodeConfig::new().set_line_ending(pem::LineEnding::LF);
    (!blocks.is_empty()).then(|| pem::encode_many_config(&blocks, config))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::CertificateDer;

    fn flags(extra: &[&str]) -> ManagerArgs {
        use clap::Parser;
        let mut argv = vec!["rkcm", "controller-manager"];
        argv.extend_from_slice(extra);
        match crate::cli::Cli::try_parse_from(argv)
            .expect("flags parse")
            .command
        {
            crate::cli::Command::ControllerManager(m) => *m,
            other => panic!("unexpected command {other:?}"),
        }
    }

    #[tokio::test]
    async fn root_ca_file_is_what_the_publisher_publishes() {
        let dir = tempfile::tempdir().expect("temp dir");
        let kubeconfig = dir.path().join("kubeconfig");
        std::fs::write(
            &kubeconfig,
            r#"{"apiVersion": "v1", "kind": "Config", "current-context": "c",
                "clusters": [{"name": "k", "cluster": {"server": "https://127.0.0.1:6443"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}]}"#,
        )
        .expect("kubeconfig written");
        let ca = dir.path().join("ca.crt");
        std::fs::write(
            &ca,
            "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
        )
        .expect("ca written");
        let path = |p: &std::path::Path| p.to_str().expect("utf-8").to_string();
        let (kubeconfig, ca) = (path(&kubeconfig), path(&ca));
        let config = config_from_flags(&flags(&[
            "--kubeconfig",
            &kubeconfig,
            "--root-ca-file",
            &ca,
            "--leader-elect=false",
        ]))
        .await
        .expect("a configuration");
        assert_eq!(
            config.options.root_ca.as_deref(),
            Some("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
        );
        let err = config_from_flags(&flags(&[
            "--kubeconfig",
            &kubeconfig,
            "--root-ca-file",
            "/nonexistent/ca.crt",
        ]))
        .await
        .err()
        .expect("a missing file is refused");
        assert!(
            format!("{err:#}").contains("--root-ca-file /nonexistent/ca.crt"),
            "{err:#}"
        );
    }

    #[test]
    fn feature_gates_are_refused_as_kube_controller_manager_refuses_them() {
        let gates = feature_gates_from_flags(&flags(&[]).feature_gates).expect("defaults");
        assert_eq!(gates, FeatureGates::default());
        let args = flags(&[
            "--feature-gates=DynamicResourceAllocation=true",
            "--feature-gates",
            "DRADeviceTaints=true",
        ]);
        let gates = feature_gates_from_flags(&args.feature_gates).expect("valid");
        assert!(gates.enabled("DynamicResourceAllocation") && gates.enabled("DRADeviceTaints"));
        let prefixed = flags(&["--feature-gates=kube:DynamicResourceAllocation=true"]);
        let gates = feature_gates_from_flags(&prefixed.feature_gates).expect("kube: prefix");
        assert!(gates.enabled("DynamicResourceAllocation"));
        let err = feature_gates_from_flags(&flags(&["--feature-gates=Foo=true"]).feature_gates)
            .expect_err("unknown gate");
        assert_eq!(
            err.to_string(),
            "invalid argument \"Foo=true\" for \"--feature-gates\" flag: unrecognized feature gate: Foo"
        );
    }

    #[test]
    fn service_account_credentials_are_off_unless_asked_for_as_on_kube() {
        assert!(!flags(&[]).use_service_account_credentials);
        assert!(flags(&["--use-service-account-credentials"]).use_service_account_credentials);
        assert!(
            !flags(&["--use-service-account-credentials=false"]).use_service_account_credentials
        );
    }

    #[test]
    fn the_legacy_token_clean_up_period_defaults_to_a_year() {
        assert_eq!(
            flags(&[]).legacy_service_account_token_clean_up_period,
            Duration::from_secs(8760 * 3600)
        );
        assert_eq!(
            flags(&["--legacy-service-account-token-clean-up-period=720h"])
                .legacy_service_account_token_clean_up_period,
            Duration::from_secs(720 * 3600)
        );
    }

    #[test]
    fn gated_off_controllers_are_listed_whatever_controllers_says() {
        let off: Vec<_> = gated_off(&FeatureGates::default())
            .into_iter()
            .map(|(c, _)| c)
            .collect();
        assert!(off.contains(&"resourceclaim-controller"), "{off:?}");
        assert!(!off.contains(&"service-cidr-controller"), "{off:?}");
        let gates = FeatureGates::parse(["DynamicResourceAllocation=true"]).expect("valid");
        assert!(!gated_off(&gates)
            .iter()
            .any(|(c, _)| *c == "resourceclaim-controller"));
    }

    #[test]
    fn the_kubeconfig_ca_is_published_as_the_pem_it_came_from() {
        let key = rcgen::KeyPair::generate().expect("key");
        let cert = rcgen::CertificateParams::new(vec!["ca".to_string()])
            .expect("params")
            .self_signed(&key)
            .expect("cert");
        let bundle = pem_bundle(&[cert.der().to_vec(), cert.der().to_vec()]).expect("a bundle");
        assert!(bundle.starts_with(&cert.pem()));
        let parsed: Vec<CertificateDer> = CertificateDer::pem_slice_iter(bundle.as_bytes())
            .collect::<Result<_, _>>()
            .expect("valid PEM");
        assert_eq!(parsed.len(), 2);
        assert_eq!(parsed[0].as_ref(), cert.der().as_ref());
        assert!(pem_bundle(&[]).is_none());
    }
}
