//! `rkcm up`: the API server, the controller manager and simulated nodes in one process.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::Args;
use rkcm_apiserver::{ApiServer, Config as ApiConfig};
use rkcm_controllers::registry::{self, ControllerOptions};
use rkcm_nodesim::NodeSim;
use rkcm_runtime::{Shutdown, SystemClock};
use tokio::task::JoinSet;

use crate::manager::{self, ManagerConfig};
use crate::serving::Health;

/// `rkcm up` flags.
#[derive(Debug, Clone, Args)]
pub struct UpArgs {
    /// Number of simulated nodes to register; 0 runs no scheduler or kubelet stand-in either.
    #[arg(long, default_value_t = 3)]
    pub nodes: usize,

    /// Where the cluster keeps its data, certificates, token and kubeconfig
    /// (default: $XDG_STATE_HOME/rkcm or ~/.local/state/rkcm).
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,

    /// Where the API server keeps objects: etcd, or the data dir's embedded store.
    #[command(flatten)]
    pub etcd: crate::etcd_args::EtcdArgs,

    /// Port the API server listens on (0 picks a free one).
    #[arg(long, default_value_t = 6443)]
    pub port: u16,

    /// Address the API server listens on.
    #[arg(long, default_value = "127.0.0.1")]
    pub bind_address: IpAddr,

    /// How long a simulated node takes to make a bound pod Running and Ready.
    #[arg(long, default_value = "1s", value_parser = rkcm_apimachinery::duration::parse_non_negative, value_name = "DURATION")]
    pub pod_ready_delay: Duration,

    /// Upper bound on how long a simulated node waits before removing a pod in graceful deletion
    /// (the pod's grace period when shorter).
    #[arg(long, default_value = "2s", value_parser = rkcm_apimachinery::duration::parse_non_negative, value_name = "DURATION")]
    pub pod_termination_max: Duration,

    /// Controllers to run: `*` for all, `foo` to enable, `-foo` to disable.
    #[arg(long, value_delimiter = ',', default_value = "*")]
    pub controllers: Vec<String>,

    /// Feature gates of the controllers, as kube-controller-manager's `--feature-gates`
    /// (`Name=true,Other=false`).
    #[arg(long, value_name = "mapStringBool", action = clap::ArgAction::Append)]
    pub feature_gates: Vec<String>,

    /// A CIDR notation IPv4 range from which to assign service cluster IPs; its first address
    /// is the `kubernetes` Service's.
    #[arg(long, default_value = rkcm_apiserver::allocators::DEFAULT_SERVICE_CLUSTER_IP_RANGE, value_name = "CIDR")]
    pub service_cluster_ip_range: rkcm_apiserver::allocators::Ipv4Cidr,

    /// A port range to reserve for services with NodePort visibility (inclusive at both ends).
    #[arg(long, default_value = rkcm_apiserver::allocators::DEFAULT_SERVICE_NODE_PORT_RANGE, value_name = "RANGE")]
    pub service_node_port_range: rkcm_apiserver::allocators::PortRange,

    /// If set, the file that will be used to secure the secure port of the API server via token
    /// authentication (CSV: `token,user,uid,"group1,group2"`).
    #[arg(long, value_name = "FILE")]
    pub token_auth_file: Option<PathBuf>,

    /// Enable to allow secrets of type 'bootstrap.kubernetes.io/token' in the 'kube-system'
    /// namespace to be used for TLS bootstrapping authentication.
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub enable_bootstrap_token_auth: bool,

    /// Identifier of the service account token issuer (the `iss` claim of issued tokens).
    #[arg(long, default_value = rkcm_apiserver::auth::serviceaccount::DEFAULT_ISSUER, value_name = "URL")]
    pub service_account_issuer: String,

    /// Identifiers of the API; tokens for other audiences are refused (default: the issuer).
    #[arg(long, value_delimiter = ',', value_name = "AUDIENCES")]
    pub api_audiences: Vec<String>,

    /// The maximum validity duration of a token created by the service account token issuer
    /// (0: no limit); longer requests are given this duration.
    #[arg(long, default_value = "0s", value_parser = rkcm_apimachinery::duration::parse_non_negative, value_name = "DURATION")]
    pub service_account_max_token_expiration: Duration,

    /// Admission plugins and their settings.
    #[command(flatten)]
    pub admission: crate::admission_args::AdmissionArgs,

    /// Audit logging: the policy file and the log backend's flags.
    #[command(flatten)]
    pub audit: crate::audit_args::AuditArgs,

    /// The file containing configuration for encryption providers to be used for storing
    /// secrets in etcd (an `apiserver.config.k8s.io/v1` `EncryptionConfiguration`: identity,
    /// aescbc, aesgcm and secretbox). Without it values are stored as they are.
    #[arg(long, value_name = "FILE")]
    pub encryption_provider_config: Option<PathBuf>,

    /// The maximum number of non-mutating requests in flight at a given time (0: no limit).
    /// With API Priority and Fairness, this plus the mutating limit are the seats its priority
    /// levels share; without, requests beyond it get 429 (`system:masters` never does).
    #[arg(long, default_value_t = rkcm_apiserver::http::inflight::DEFAULT_MAX_REQUESTS_INFLIGHT)]
    pub max_requests_inflight: usize,

    /// The maximum number of mutating requests in flight at a given time (0: no limit); see
    /// `--max-requests-inflight`.
    #[arg(long, default_value_t = rkcm_apiserver::http::inflight::DEFAULT_MAX_MUTATING_REQUESTS_INFLIGHT)]
    pub max_mutating_requests_inflight: usize,

    /// Enforce API Priority and Fairness: requests are classified by the FlowSchemas and queued
    /// at their priority level, which share the seats of the two in-flight limits. With false,
    /// each in-flight limit caps its kind of request.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub enable_priority_and_fairness: bool,

    /// Queries per second the in-process controllers may send to the API server; a negative
    /// value (the default) sets no client-side limit, 0 means client-go's default of 5.
    #[arg(long, default_value_t = -1.0, allow_negative_numbers = true)]
    pub kube_api_qps: f32,

    /// Burst of the in-process controllers' client-side limit, when `--kube-api-qps` sets one
    /// (0 means client-go's default of 10).
    #[arg(long, default_value_t = 30)]
    pub kube_api_burst: u32,

    /// kube-controller-manager's node lifecycle and IPAM flags (`up` allocates node CIDRs from
    /// 10.244.0.0/16 unless told otherwise, as kind and kubeadm set it up).
    #[command(flatten)]
    pub node_flags: crate::manager::node_flags::NodeArgs,

    /// Ordered list of plug-ins to do authorization on the secure port (AlwaysAllow, Node,
    /// RBAC); members of `system:masters` may do everything regardless. `Node,RBAC` as kubeadm
    /// runs kube-apiserver.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "Node,RBAC",
        value_name = "MODES"
    )]
    pub authorization_mode: Vec<rkcm_apiserver::auth::authorization::Mode>,

    /// How often the simulated nodes' resource usage (`metrics.k8s.io`, `kubectl top`) is
    /// refreshed, as metrics-server's `--metric-resolution`.
    #[arg(long, default_value = "15s", value_parser = rkcm_apimachinery::duration::parse_non_negative, value_name = "DURATION")]
    pub metric_resolution: Duration,

    #[command(flatten)]
    pub hpa: crate::manager::hpa_flags::HpaFlags,

    #[command(flatten)]
    pub attachdetach: crate::manager::attachdetach_flags::AttachDetachFlags,

    /// If true, use individual service account credentials for each controller (the default in
    /// `up`; false runs every controller as `system:kube-controller-manager`).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub use_service_account_credentials: bool,
}

/// `--cluster-cidr` of `rkcm up` (kind's and kubeadm's pod network).
pub const DEFAULT_CLUSTER_CIDR: &str = "10.244.0.0/16";

/// The simulated kubelets' lease renewal: kubelet's 10s, or a fifth of a shorter
/// `--node-monitor-grace-period`, so that a live node never looks dead.
pub fn lease_renew_interval(grace: Duration) -> Duration {
    (grace / 5).clamp(Duration::from_millis(100), Duration::from_secs(10))
}

/// The simulated nodes of `rkcm up` (and of the in-process test environment): `nodes` kubelets
/// making pods ready after `pod_ready_delay`, capping grace periods at `termination_cap`, with
/// leases renewed at [`lease_renew_interval`] of the node lifecycle controller's `grace` and
/// lasting four renewals.
pub(crate) fn node_sim_config(
    nodes: usize,
    pod_ready_delay: Duration,
    termination_cap: Duration,
    grace: Duration,
) -> rkcm_nodesim::Config {
    let renew = lease_renew_interval(grace);
    rkcm_nodesim::Config {
        nodes,
        pod_ready_delay,
        termination_grace_cap: Some(termination_cap),
        lease_renew_interval: renew,
        lease_duration: (renew * 4).max(Duration::from_secs(1)),
        ..rkcm_nodesim::Config::default()
    }
}

/// The default data directory: `$XDG_STATE_HOME/rkcm`, else `~/.local/state/rkcm`.
pub fn default_data_dir() -> PathBuf {
    if let Some(state) = std::env::var_os("XDG_STATE_HOME").filter(|s| !s.is_empty()) {
        return PathBuf::from(state).join("rkcm");
    }
    match std::env::var_os("HOME").filter(|s| !s.is_empty()) {
        Some(home) => PathBuf::from(home).join(".local/state/rkcm"),
        None => PathBuf::from(".rkcm"),
    }
}

/// Starts everything and runs until `shutdown`.
pub async fn run(args: UpArgs, shutdown: Shutdown) -> anyhow::Result<()> {
    let started = Instant::now();
    let controllers = registry::resolve(&args.controllers)?;
    let feature_gates = manager::feature_gates_from_flags(&args.feature_gates)?;
    let data_dir = args.data_dir.clone().unwrap_or_else(default_data_dir);
    std::fs::create_dir_all(&data_dir)
        .with_context(|| format!("creating the data directory {}", data_dir.display()))?;
    let data_dir = data_dir.canonicalize().unwrap_or(data_dir);
    eprintln!(
        "rkcm: starting the API server (data in {})",
        data_dir.display()
    );

    let listener = tokio::net::TcpListener::bind((args.bind_address, args.port))
        .await
        .with_context(|| format!("binding {}:{}", args.bind_address, args.port))?;
    let addr = listener.local_addr().context("reading the bound address")?;
    // The simulated nodes' resource usage, served as metrics.k8s.io in place of metrics-server.
    let usage = rkcm_nodesim::UsageSnapshots::new();
    let etcd = args.etcd.config();
    if let Some(etcd) = &etcd {
        eprintln!(
            "rkcm: objects are kept in etcd at {} under {}",
            etcd.servers.join(","),
            etcd.prefix
        );
    }
    let server = ApiServer::new(ApiConfig {
        data_dir: Some(data_dir.clone()),
        etcd,
        bind: addr,
        service_cluster_ip_range: args.service_cluster_ip_range,
        service_node_port_range: args.service_node_port_range,
        token_auth_file: args.token_auth_file.clone(),
        enable_bootstrap_token_auth: args.enable_bootstrap_token_auth,
        service_account_issuer: args.service_account_issuer.clone(),
        api_audiences: args.api_audiences.clone(),
        service_account_max_token_expiration: Some(args.service_account_max_token_expiration)
            .filter(|d| !d.is_zero()),
        max_requests_inflight: args.max_requests_inflight,
        max_mutating_requests_inflight: args.max_mutating_requests_inflight,
        enable_priority_and_fairness: args.enable_priority_and_fairness,
        admission: args.admission.config(),
        authorization_modes: args.authorization_mode.clone(),
        audit: args.audit.options(),
        encryption_provider_config: args.encryption_provider_config.clone(),
        ..ApiConfig::default()
    })
    .await
    .map(|server| {
        if args.nodes > 0 {
            server.with_metrics_source(Arc::new(usage.clone()))
        } else {
            server
        }
    })
    .map_err(|err| {
        let in_use = format!("{:#}", anyhow::Error::from(err));
        if in_use.contains("already open") {
            anyhow::anyhow!(
                "{} is in use by another rkcm; stop it or pass another --data-dir",
                data_dir.display()
            )
        } else {
            anyhow::anyhow!(in_use).context("starting the API server")
        }
    })?;
    tracing::info!(
        plugins = server.admission_plugins().join(","),
        "admission plugins"
    );
    if !server.admission_plugins_not_implemented().is_empty() {
        tracing::info!(
            plugins = server.admission_plugins_not_implemented().join(","),
            "enabled admission plugins that rkcm does not implement are skipped"
        );
    }
    let host = if addr.ip().is_unspecified() {
        "127.0.0.1".to_string()
    } else if addr.is_ipv6() {
        format!("[{}]", addr.ip())
    } else {
        addr.ip().to_string()
    };
    let url = format!("https://{host}:{}", addr.port());
    let kubeconfig_path = data_dir.join("kubeconfig");
    write_private(&kubeconfig_path, server.kubeconfig(&url).as_bytes())
        .with_context(|| format!("writing {}", kubeconfig_path.display()))?;

    // The cluster CA, to give the simulated kubelets and scheduler their own certificates.
    let cluster_ca = server.ca_pem().zip(server.ca_key_pem());

    // `kubectl get componentstatuses` asks the components running in this process.
    let components = server.components();
    // The API server stops last, after its clients (controllers, nodes) have let go of it.
    let server_stop = Shutdown::new();
    let serve_shutdown = server_stop.clone();
    // The components of this process reach the server in process: the same requests with the
    // same credentials, without TLS and a socket between them.
    let router = server.router(serve_shutdown.clone());
    let _in_process = rkcm_runtime::transport::register_local(
        &url.parse().context("the server's URL")?,
        Arc::new(rkcm_apiserver::local::connector(
            router.clone(),
            server.ca_pem().as_deref(),
        )),
    );
    let server_task = tokio::spawn(async move {
        if let Err(err) = server.serve_router(router, listener, serve_shutdown).await {
            tracing::error!(error = %err, "API server stopped");
        }
    });
    eprintln!(
        "rkcm: API server listening on {url} ({} ms)",
        started.elapsed().as_millis()
    );

    let kube_config = kube_config_from(&kubeconfig_path).await?;
    let client =
        rkcm_runtime::transport::client(kube_config.clone()).context("building a client")?;
    wait_until_answering(&client, &shutdown).await?;

    let node_options = args.node_flags.options(
        true,
        DEFAULT_CLUSTER_CIDR,
        &args.service_cluster_ip_range.to_string(),
    )?;
    let node_monitor_grace = node_options.node_monitor_grace_period;
    // What will run: implemented, and not skipped for a feature gate turned off.
    let controller_count = controllers
        .iter()
        .filter(|c| {
            registry::is_implemented(c)
                && registry::disabled_by_feature_gate(c, &feature_gates).is_none()
                && !registry::declined_by_init(c, &feature_gates)
        })
        .count();
    // On etcd, several `up` may share one cluster: each runs its controller manager and its
    // simulated nodes under leader election, so exactly one of each is active (kube's leases
    // `kube-controller-manager` and `kube-scheduler` in `kube-system`, kube's timings).
    let elect = args.etcd.config().is_some();
    let make_manager_config = {
        let kube_config = manager_identity(&kube_config, &data_dir)?;
        let key_file = data_dir.join(rkcm_apiserver::auth::signing_key::KEY_FILE);
        let data_dir = data_dir.clone();
        let (hpa, attachdetach) = (args.hpa.clone(), args.attachdetach.clone());
        let (qps, burst) = (args.kube_api_qps, args.kube_api_burst);
        let use_service_account_credentials = args.use_service_account_credentials;
        move || -> anyhow::Result<ManagerConfig> {
            let mut config = ManagerConfig {
                kube_config: kube_config.clone(),
                controllers: controllers.clone(),
                options: ControllerOptions {
                    nodes: node_options.clone(),
                    clock: Arc::new(SystemClock),
                    // As kube-controller-manager's --service-account-private-key-file: the key
                    // the API server verifies service-account tokens with.
                    service_account_token_generator: Some(
                        manager::legacy_tokens::generator_from_file(&key_file)?,
                    ),
                    // As kube-controller-manager's --cluster-signing-cert-file/-key-file: the
                    // cluster CA the API server trusts for client certificates.
                    csr_signing: rkcm_controllers::certificates::signer::config::SigningConfig {
                        cluster_signing:
                            rkcm_controllers::certificates::signer::config::SignerFiles::new(
                                data_dir.join("ca.crt"),
                                data_dir.join("ca.key"),
                            ),
                        ..Default::default()
                    },
                    feature_gates: feature_gates.clone(),
                    ..ControllerOptions::default()
                },
                qps,
                burst,
                min_resync_period: std::time::Duration::from_secs(12 * 3600),
                use_service_account_credentials,
                leader_election: elect.then(|| leader_election(KUBE_CONTROLLER_MANAGER_LEASE)),
                serving: None,
            };
            hpa.apply(&mut config.options);
            attachdetach.apply(&mut config.options);
            Ok(config)
        }
    };
    let manager_config = make_manager_config()?;
    let health = Arc::new(Health::default());
    let mut tasks = JoinSet::new();
    let manager_shutdown = shutdown.clone();
    let manager_health = Arc::clone(&health);
    let manager_running = Arc::new(std::sync::atomic::AtomicBool::new(true));
    components.register(
        "controller-manager",
        component_probe(Arc::clone(&manager_running), {
            let health = Arc::clone(&health);
            move || {
                health
                    .ready()
                    .map(|()| "ok".to_string())
                    .map_err(String::from)
            }
        }),
    );
    let manager_stopped = Arc::clone(&manager_running);
    tasks.spawn(async move {
        let mut config = Some(manager_config);
        loop {
            let Some(term) = config
                .take()
                .map(Ok)
                .or_else(|| Some(make_manager_config()))
            else {
                break;
            };
            // The manager cancels the token it is given when it stops: a child token keeps
            // `up` running when only a leadership term ended.
            let result = match term {
                Ok(term) => {
                    manager::run(
                        term,
                        Arc::clone(&manager_health),
                        manager_shutdown.child_token(),
                    )
                    .await
                }
                Err(err) => Err(err),
            };
            if manager_shutdown.is_cancelled() {
                break;
            }
            match result {
                // A lost lease: stand by for it again, as a restarted kube-controller-manager.
                Err(err) if elect => tracing::warn!(
                    error = format!("{err:#}"),
                    "controller manager stopped leading; standing by for the lease again"
                ),
                Err(err) => {
                    tracing::error!(error = format!("{err:#}"), "controller manager stopped");
                    break;
                }
                Ok(_) => break,
            }
        }
        manager_stopped.store(false, std::sync::atomic::Ordering::SeqCst);
    });

    // `--nodes 0` runs no node simulation at all: no scheduler and no kubelet stand-in, so pods
    // stay Pending untouched (useful to measure controllers alone).
    if args.nodes > 0 {
        let sim_config = rkcm_nodesim::Config {
            metric_resolution: args.metric_resolution,
            ..node_sim_config(
                args.nodes,
                args.pod_ready_delay,
                args.pod_termination_max,
                node_monitor_grace,
            )
        };
        // Each kubelet as system:node:<node>, the scheduler as system:kube-scheduler.
        let ca = cluster_ca
            .as_ref()
            .map(|(cert, key)| (cert.as_str(), key.as_str()));
        let clients = node_sim_clients(ca, &url, client.clone(), &sim_config).await?;
        let sim_shutdown = shutdown.clone();
        // The simulated nodes' scheduler runs as long as they do.
        let sim_running = Arc::new(std::sync::atomic::AtomicBool::new(true));
        components.register(
            "scheduler",
            component_probe(Arc::clone(&sim_running), || Ok("ok".to_string())),
        );
        let run_sim = move |shutdown: Shutdown| {
            let sim = NodeSim::with_clients(clients.clone(), sim_config.clone())
                .with_metrics(usage.clone());
            async move {
                if let Err(err) = sim.run(shutdown).await {
                    tracing::error!(error = %err, "simulated nodes stopped");
                }
            }
        };
        let elector_client = client.clone();
        tasks.spawn(async move {
            if elect {
                // One `up` at a time runs the nodes and their scheduler, as kube-scheduler's
                // leader election; the others take over when its lease expires.
                while !sim_shutdown.is_cancelled() {
                    let elector = match rkcm_runtime::leader_election::LeaderElector::new(
                        elector_client.clone(),
                        leader_election(KUBE_SCHEDULER_LEASE),
                    ) {
                        Ok(elector) => elector,
                        Err(err) => {
                            tracing::error!(error = %err, "simulated nodes' leader election");
                            break;
                        }
                    };
                    let run_sim = run_sim.clone();
                    elector
                        .run(sim_shutdown.clone(), run_sim, || {
                            tracing::info!("simulated nodes stopped leading")
                        })
                        .await;
                }
            } else {
                run_sim(sim_shutdown).await;
            }
            sim_running.store(false, std::sync::atomic::Ordering::SeqCst);
        });
    }

    // Ready once the controllers' caches have synced (they start within milliseconds).
    let deadline = Instant::now() + std::time::Duration::from_secs(10);
    while health.ready().is_err() && Instant::now() < deadline && !shutdown.is_cancelled() {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    eprintln!(
        "rkcm: ready in {} ms: {} simulated node(s), {} controller(s){}",
        started.elapsed().as_millis(),
        args.nodes,
        controller_count,
        if health.ready().is_ok() {
            ""
        } else {
            " (caches still syncing)"
        },
    );
    println!("export KUBECONFIG={}", kubeconfig_path.display());

    shutdown.cancelled().await;
    eprintln!("rkcm: shutting down");
    let clients_done = tokio::time::timeout(std::time::Duration::from_secs(30), async {
        while tasks.join_next().await.is_some() {}
    })
    .await;
    if clients_done.is_err() {
        tracing::warn!("controllers and nodes did not stop within 30s");
    }
    server_stop.cancel();
    let _ = server_task.await;
    Ok(())
}

/// The lease of the controller manager `up` runs on etcd (kube-controller-manager's).
const KUBE_CONTROLLER_MANAGER_LEASE: &str = "kube-controller-manager";
/// The lease of the simulated nodes and their scheduler on etcd (kube-scheduler's).
const KUBE_SCHEDULER_LEASE: &str = "kube-scheduler";

/// Leader election on lease `name` in `kube-system` with kube's defaults (15s lease, 10s renew
/// deadline, 2s retry), as kube-controller-manager and kube-scheduler run it.
fn leader_election(name: &str) -> rkcm_runtime::leader_election::LeaderElectionConfig {
    rkcm_runtime::leader_election::LeaderElectionConfig {
        lease_name: name.to_string(),
        lease_namespace: "kube-system".to_string(),
        identity: manager::identity(),
        lease_duration: Duration::from_secs(15),
        renew_deadline: Duration::from_secs(10),
        retry_period: Duration::from_secs(2),
        release_on_cancel: true,
        clock: Arc::new(SystemClock),
    }
}

/// The simulated nodes' clients: each kubelet as `system:node:<node>` and the scheduler as
/// `system:kube-scheduler`, with certificates of the cluster CA (`(cert, key)` PEM) when the
/// server has one, else all of them sharing `client`.
pub(crate) async fn node_sim_clients(
    cluster_ca: Option<(&str, &str)>,
    url: &str,
    client: kube::Client,
    config: &rkcm_nodesim::Config,
) -> anyhow::Result<rkcm_nodesim::Clients> {
    let Some((ca_pem, ca_key_pem)) = cluster_ca else {
        return Ok(rkcm_nodesim::Clients::shared(client));
    };
    let ca = crate::identities::ClusterCa {
        server_url: url,
        ca_pem,
        ca_key_pem,
    };
    let nodes = (1..=config.nodes).map(|i| config.node_name(i));
    crate::identities::node_sim_clients(&ca, client, nodes).await
}

/// The controller manager's own identity, `system:kube-controller-manager`, as kubeadm gives it:
/// a client certificate signed by the cluster CA (made in memory at every start).
fn manager_identity(admin: &kube::Config, data_dir: &Path) -> anyhow::Result<kube::Config> {
    use crate::client_identity::{issue, with_certificate, KUBE_CONTROLLER_MANAGER};
    let read = |name: &str| {
        let path = data_dir.join(name);
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))
    };
    let cert = issue(
        &read("ca.crt")?,
        &read("ca.key")?,
        KUBE_CONTROLLER_MANAGER,
        &[],
    )?;
    Ok(with_certificate(admin, KUBE_CONTROLLER_MANAGER, &cert)?)
}

/// A `componentstatuses` probe: `check` while the component's task runs, an error once it
/// stopped.
fn component_probe(
    running: Arc<std::sync::atomic::AtomicBool>,
    check: impl Fn() -> Result<String, String> + Send + Sync + 'static,
) -> rkcm_apiserver::component_status::Probe {
    Arc::new(move || {
        if running.load(std::sync::atomic::Ordering::SeqCst) {
            check()
        } else {
            Err("stopped".to_string())
        }
    })
}

async fn kube_config_from(path: &Path) -> anyhow::Result<kube::Config> {
    let kubeconfig = kube::config::Kubeconfig::read_from(path)
        .with_context(|| format!("reading {}", path.display()))?;
    kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .with_context(|| format!("loading {}", path.display()))
}

/// Polls `/version` until the API server answers (it usually does at once).
async fn wait_until_answering(client: &kube::Client, shutdown: &Shutdown) -> anyhow::Result<()> {
    let deadline = Instant::now() + std::time::Duration::from_secs(30);
    loop {
        match client.apiserver_version().await {
            Ok(_) => return Ok(()),
            Err(err) if Instant::now() > deadline => {
                return Err(err).context("the API server did not answer within 30s")
            }
            Err(_) => {}
        }
        tokio::select! {
            _ = shutdown.cancelled() => anyhow::bail!("interrupted while starting"),
            _ = tokio::time::sleep(std::time::Duration::from_millis(20)) => {}
        }
    }
}

/// Writes a file readable by its owner only (it holds the admin token).
fn write_private(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let tmp = path.with_extension("tmp");
    {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let mut file = options.open(&tmp)?;
        file.write_all(contents)?;
        file.sync_all()?;
    }
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leases_are_renewed_five_times_per_grace_period_at_most_every_ten_seconds() {
        assert_eq!(
            lease_renew_interval(Duration::from_secs(50)),
            Duration::from_secs(10)
        );
        assert_eq!(
            lease_renew_interval(Duration::from_secs(10)),
            Duration::from_secs(2)
        );
    }

    fn up(args: &[&str]) -> UpArgs {
        use clap::Parser;
        let mut argv = vec!["rkcm", "up"];
        argv.extend_from_slice(args);
        match crate::cli::Cli::try_parse_from(argv)
            .expect("parses")
            .command
        {
            crate::cli::Command::Up(up) => *up,
            other => panic!("unexpected command {other:?}"),
        }
    }

    #[test]
    fn priority_and_fairness_is_on_unless_told_not_to() {
        assert!(up(&[]).enable_priority_and_fairness);
        assert!(!up(&["--enable-priority-and-fairness=false"]).enable_priority_and_fairness);
    }

    #[test]
    fn up_runs_controllers_under_their_service_accounts_unless_told_not_to() {
        assert!(up(&[]).use_service_account_credentials);
        assert!(!up(&["--use-service-account-credentials=false"]).use_service_account_credentials);
    }

    #[test]
    fn the_manager_identity_is_a_ca_signed_certificate_of_system_kube_controller_manager() {
        let dir = tempfile::tempdir().expect("temp dir");
        let tls = rkcm_apiserver::tls::load_or_generate(Some(dir.path()), &[]).expect("a CA");
        let admin = kube::Config::new("https://127.0.0.1:6443".parse().expect("uri"));
        let config = manager_identity(&admin, dir.path()).expect("an identity");
        assert!(config.auth_info.token.is_none());
        let cert_b64 = config
            .auth_info
            .client_certificate_data
            .expect("a client certificate");
        use base64::Engine as _;
        let pem = base64::engine::general_purpose::STANDARD
            .decode(cert_b64)
            .expect("base64");
        let der = pem::parse(pem).expect("PEM").into_contents();
        let ca = pem::parse(&tls.ca_pem).expect("PEM").into_contents();
        let now = jiff::Timestamp::now().as_second();
        let user = rkcm_apiserver::auth::x509::verify(&der, &ca, now)
            .expect("signed by the cluster CA")
            .expect("a user");
        assert_eq!(user.name, "system:kube-controller-manager");
        let missing = tempfile::tempdir().expect("temp dir");
        assert!(manager_identity(&admin, missing.path()).is_err());
    }

    #[test]
    fn default_data_dir_is_under_the_users_state_directory() {
        let dir = default_data_dir();
        assert!(dir.ends_with("rkcm"), "{}", dir.display());
    }
}
