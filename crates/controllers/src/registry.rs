//! The controller registry: named controllers, `--controllers` resolution, and their init functions.
//!
//! Mirrors `cmd/kube-controller-manager/app/controllermanager.go` (`NewControllerDescriptors`,
//! `IsControllerEnabled`) and `cmd/kube-controller-manager/names`.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use rkcm_runtime::events::EventBroadcaster;
use rkcm_runtime::informer::InformerFactory;
use rkcm_runtime::{Clock, Shutdown, SystemClock};

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::ReplicationController;

use crate::featuregate::FeatureGates;
use crate::resourcequota;
use crate::statefulset;
use crate::volume;
use crate::{
    bootstrap, certificates, clusterroleaggregation, cronjob, daemon, deployment, disruption,
    endpoint, endpointslice, endpointslicemirroring, garbagecollector, job, namespace,
    podautoscaler, podgc, replicaset, rootcacertpublisher, serviceaccount, ttlafterfinished,
};
use crate::{node_options::NodeOptions, nodeipam, nodelifecycle, tainteviction, ttl};

/// A controller kube-controller-manager knows, by canonical name and the aliases `--controllers`
/// accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ControllerName {
    /// Canonical name (`replicaset-controller`).
    pub name: &'static str,
    /// Older names still accepted (`replicaset`).
    pub aliases: &'static [&'static str],
    /// Whether `*` leaves it off.
    pub disabled_by_default: bool,
    /// Whether rkcm runs it; a name that is known but not implemented is accepted and skipped.
    pub implemented: bool,
    /// A cloud-provider controller: kube-controller-manager skips it (KEP-2395), and so does rkcm.
    pub cloud_provider: bool,
    /// The descriptor's `requiredFeatureGates`: with any of them off, the controller is skipped
    /// whatever `--controllers` says, with kube's "Controller is disabled by a feature gate".
    pub required_feature_gates: &'static [&'static str],
    /// Gates its init function checks itself: with any of them off an enabled controller is not
    /// started ("Warning: skipping controller").
    pub init_feature_gates: &'static [&'static str],
}

/// Canonical name of the StatefulSet controller.
pub const STATEFULSET: &str = "statefulset-controller";
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
/// Canonical name of the DaemonSet controller.
pub const DAEMONSET: &str = "daemonset-controller";
/// Canonical name of the Job controller.
pub const JOB: &str = "job-controller";
/// Canonical name of the CronJob controller.
pub const CRONJOB: &str = "cronjob-controller";
/// Canonical name of the TTL-after-finished controller.
pub const TTL_AFTER_FINISHED: &str = "ttl-after-finished-controller";
/// Canonical name of the service-account controller.
pub const SERVICEACCOUNT: &str = "serviceaccount-controller";
/// Canonical name of the service-account token controller.
pub const SERVICEACCOUNT_TOKEN: &str = "serviceaccount-token-controller";
/// Canonical name of the cluster-role aggregation controller.
pub const CLUSTERROLE_AGGREGATION: &str = "clusterrole-aggregation-controller";
/// Canonical name of the disruption controller.
pub const DISRUPTION: &str = "disruption-controller";
/// Canonical name of the root CA publisher.
pub const ROOT_CA_PUBLISHER: &str = "root-ca-certificate-publisher-controller";
/// Canonical name of the Endpoints controller.
pub const ENDPOINTS: &str = "endpoints-controller";
/// Canonical name of the EndpointSlice controller.
pub const ENDPOINTSLICE: &str = "endpointslice-controller";
/// Canonical name of the CertificateSigningRequest signing controller.
pub const CSR_SIGNING: &str = "certificatesigningrequest-signing-controller";
/// Canonical name of the CertificateSigningRequest cleaner.
pub const CSR_CLEANER: &str = "certificatesigningrequest-cleaner-controller";
/// Canonical name of the CertificateSigningRequest approver.
pub const CSR_APPROVING: &str = "certificatesigningrequest-approving-controller";
/// Canonical name of the resource quota controller.
pub const RESOURCEQUOTA: &str = "resourcequota-controller";
/// Canonical name of the horizontal pod autoscaler controller.
pub const HORIZONTAL_POD_AUTOSCALER: &str = "horizontal-pod-autoscaler-controller";
/// Canonical name of the legacy service-account token cleaner.
pub const LEGACY_SA_TOKEN_CLEANER: &str = "legacy-serviceaccount-token-cleaner-controller";
/// Canonical name of the bootstrap signer.
pub const BOOTSTRAP_SIGNER: &str = "bootstrap-signer-controller";
/// Canonical name of the bootstrap token cleaner.
pub const TOKEN_CLEANER: &str = "token-cleaner-controller";
/// Canonical name of the EndpointSlice mirroring controller.
pub const ENDPOINTSLICE_MIRRORING: &str = "endpointslice-mirroring-controller";
/// Canonical name of the node lifecycle controller.
pub const NODE_LIFECYCLE: &str = "node-lifecycle-controller";
/// Canonical name of the taint-eviction controller.
pub const TAINT_EVICTION: &str = "taint-eviction-controller";
/// Canonical name of the ValidatingAdmissionPolicy status controller.
pub const VALIDATING_ADMISSION_POLICY_STATUS: &str =
    crate::validatingadmissionpolicystatus::CONTROLLER_NAME;
/// Canonical name of the TTL controller.
pub const TTL: &str = "ttl-controller";
/// Canonical name of the node IPAM controller.
pub const NODE_IPAM: &str = "node-ipam-controller";
/// Canonical name of the PersistentVolume binder.
pub const PERSISTENTVOLUME_BINDER: &str = "persistentvolume-binder-controller";
/// Canonical name of the claim protection controller.
pub const PVC_PROTECTION: &str = "persistentvolumeclaim-protection-controller";
/// Canonical name of the volume protection controller.
pub const PV_PROTECTION: &str = "persistentvolume-protection-controller";
/// Canonical name of the ephemeral-volume controller.
pub const EPHEMERAL_VOLUME: &str = "ephemeral-volume-controller";
/// Canonical name of the attach/detach controller.
pub const ATTACH_DETACH: &str = "persistentvolume-attach-detach-controller";
/// Canonical name of the volume expander.
pub const PERSISTENTVOLUME_EXPANDER: &str = "persistentvolume-expander-controller";
/// Canonical name of the ServiceCIDR controller.
pub const SERVICE_CIDR: &str = "service-cidr-controller";

const fn kube(name: &'static str, aliases: &'static [&'static str]) -> ControllerName {
    ControllerName {
        name,
        aliases,
        disabled_by_default: false,
        implemented: false,
        cloud_provider: false,
        required_feature_gates: &[],
        init_feature_gates: &[],
    }
}

const fn gated(c: ControllerName, gates: &'static [&'static str]) -> ControllerName {
    ControllerName {
        required_feature_gates: gates,
        ..c
    }
}

const fn gated_in_init(c: ControllerName, gates: &'static [&'static str]) -> ControllerName {
    ControllerName {
        init_feature_gates: gates,
        ..c
    }
}

const fn cloud(c: ControllerName) -> ControllerName {
    ControllerName {
        cloud_provider: true,
        ..c
    }
}

const fn off_by_default(c: ControllerName) -> ControllerName {
    ControllerName {
        disabled_by_default: true,
        ..c
    }
}

const fn implemented(c: ControllerName) -> ControllerName {
    ControllerName {
        implemented: true,
        ..c
    }
}

/// Every controller of kube-controller-manager 1.33, in the order its `NewControllerDescriptors`
/// registers them, which is also rkcm's start order. Names from
/// `cmd/kube-controller-manager/names/controller_names.go` and `k8s.io/cloud-provider/names`;
/// aliases and defaults from each controller's descriptor.
pub const KNOWN: &[ControllerName] = &[
    implemented(kube(SERVICEACCOUNT_TOKEN, &["serviceaccount-token"])),
    implemented(kube(ENDPOINTS, &["endpoint"])),
    implemented(kube(ENDPOINTSLICE, &["endpointslice"])),
    implemented(kube(ENDPOINTSLICE_MIRRORING, &["endpointslicemirroring"])),
    implemented(kube(REPLICATIONCONTROLLER, &["replicationcontroller"])),
    implemented(kube(PODGC, &["podgc"])),
    implemented(kube(RESOURCEQUOTA, &["resourcequota"])),
    implemented(kube(NAMESPACE, &["namespace"])),
    implemented(kube(SERVICEACCOUNT, &["serviceaccount"])),
    implemented(kube(GARBAGECOLLECTOR, &["garbagecollector"])),
    implemented(kube(DAEMONSET, &["daemonset"])),
    implemented(kube(JOB, &["job"])),
    implemented(kube(DEPLOYMENT, &["deployment"])),
    implemented(kube(REPLICASET, &["replicaset"])),
    implemented(kube(
        HORIZONTAL_POD_AUTOSCALER,
        &["horizontalpodautoscaling"],
    )),
    implemented(kube(DISRUPTION, &["disruption"])),
    implemented(kube(STATEFULSET, &["statefulset"])),
    implemented(kube(CRONJOB, &["cronjob"])),
    implemented(kube(CSR_SIGNING, &["csrsigning"])),
    implemented(kube(CSR_APPROVING, &["csrapproving"])),
    implemented(kube(CSR_CLEANER, &["csrcleaner"])),
    implemented(kube(TTL, &["ttl"])),
    implemented(off_by_default(kube(BOOTSTRAP_SIGNER, &["bootstrapsigner"]))),
    implemented(off_by_default(kube(TOKEN_CLEANER, &["tokencleaner"]))),
    implemented(kube(NODE_IPAM, &["nodeipam"])),
    implemented(kube(NODE_LIFECYCLE, &["nodelifecycle"])),
    // Cloud-provider controllers: known so that the flag accepts them, never run by
    // kube-controller-manager since KEP-2395.
    cloud(kube("service-lb-controller", &["service"])),
    cloud(kube("node-route-controller", &["route"])),
    cloud(kube(
        "cloud-node-lifecycle-controller",
        &["cloud-node-lifecycle"],
    )),
    implemented(kube(PERSISTENTVOLUME_BINDER, &["persistentvolume-binder"])),
    implemented(kube(ATTACH_DETACH, &["attachdetach"])),
    implemented(kube(
        PERSISTENTVOLUME_EXPANDER,
        &["persistentvolume-expander"],
    )),
    implemented(kube(CLUSTERROLE_AGGREGATION, &["clusterrole-aggregation"])),
    implemented(kube(PVC_PROTECTION, &["pvc-protection"])),
    implemented(kube(PV_PROTECTION, &["pv-protection"])),
    gated(
        kube("volumeattributesclass-protection-controller", &[]),
        &["VolumeAttributesClass"],
    ),
    implemented(kube(TTL_AFTER_FINISHED, &["ttl-after-finished"])),
    implemented(kube(ROOT_CA_PUBLISHER, &["root-ca-cert-publisher"])),
    gated(
        kube(
            "kube-apiserver-serving-clustertrustbundle-publisher-controller",
            &[],
        ),
        &["ClusterTrustBundle"],
    ),
    implemented(kube(EPHEMERAL_VOLUME, &["ephemeral-volume"])),
    gated(
        kube(
            "storageversion-garbage-collector-controller",
            &["storage-version-gc"],
        ),
        &["APIServerIdentity", "StorageVersionAPI"],
    ),
    gated(
        kube("resourceclaim-controller", &["resource-claim-controller"]),
        &["DynamicResourceAllocation"],
    ),
    gated(
        kube("device-taint-eviction-controller", &[]),
        &["DynamicResourceAllocation", "DRADeviceTaints"],
    ),
    implemented(kube(
        LEGACY_SA_TOKEN_CLEANER,
        &["legacy-service-account-token-cleaner"],
    )),
    // Its required gate `ValidatingAdmissionPolicy` is GA and locked on since 1.30.
    implemented(kube(VALIDATING_ADMISSION_POLICY_STATUS, &[])),
    implemented(gated(
        kube(TAINT_EVICTION, &[]),
        &["SeparateTaintEvictionController"],
    )),
    implemented(gated(
        kube(SERVICE_CIDR, &[]),
        &["MultiCIDRServiceAllocator"],
    )),
    // No required gates: its init function declines to start without them.
    gated_in_init(
        kube("storage-version-migrator-controller", &[]),
        &["StorageVersionMigrator", "InformerResourceVersion"],
    ),
    gated(
        off_by_default(kube("selinux-warning-controller", &[])),
        &["SELinuxChangePolicy"],
    ),
];

/// `--controllers` named controllers kube-controller-manager does not know.
///
/// The message is kube's (`GenericControllerManagerConfigurationOptions.Validate`, one error per
/// name, aggregated as `utilerrors.NewAggregate` prints them).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{}", aggregate(.names))]
pub struct UnknownControllers {
    /// The names as given, without a leading `-`, in flag order.
    pub names: Vec<String>,
}

fn aggregate(names: &[String]) -> String {
    let errors: Vec<String> = names
        .iter()
        .map(|n| format!("{n:?} is not in the list of known controllers"))
        .collect();
    match errors.as_slice() {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// Whether `name` is a cloud-provider controller, which kube-controller-manager skips.
pub fn is_cloud_provider(name: &str) -> bool {
    lookup(name).is_some_and(|c| c.cloud_provider)
}

/// The controller `name` (canonical or alias) designates.
pub fn lookup(name: &str) -> Option<&'static ControllerName> {
    KNOWN
        .iter()
        .find(|c| c.name == name || c.aliases.contains(&name))
}

/// The required gates of controller `name` when one of them is off in `gates`: kube skips it
/// before looking at `--controllers` (`StartController`).
pub fn disabled_by_feature_gate(
    name: &str,
    gates: &FeatureGates,
) -> Option<&'static [&'static str]> {
    let c = lookup(name)?;
    c.required_feature_gates
        .iter()
        .any(|g| !gates.enabled(g))
        .then_some(c.required_feature_gates)
}

/// Whether the init function of controller `name` declines to start under `gates`.
pub fn declined_by_init(name: &str, gates: &FeatureGates) -> bool {
    lookup(name).is_some_and(|c| c.init_feature_gates.iter().any(|g| !gates.enabled(g)))
}

/// Whether rkcm runs the controller with canonical name `name`.
pub fn is_implemented(name: &str) -> bool {
    lookup(name).is_some_and(|c| c.implemented)
}

/// Every canonical name, sorted (`KnownControllers`).
pub fn known_controllers() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = KNOWN.iter().map(|c| c.name).collect();
    names.sort_unstable();
    names
}

/// The canonical names `*` leaves off, sorted (`ControllersDisabledByDefault`).
pub fn controllers_disabled_by_default() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = KNOWN
        .iter()
        .filter(|c| c.disabled_by_default)
        .map(|c| c.name)
        .collect();
    names.sort_unstable();
    names
}

/// The usage of `--controllers`, as kube-controller-manager's `--help` prints it
/// (`GenericControllerManagerConfigurationOptions.AddFlags`, given `KnownControllers()` and
/// `ControllersDisabledByDefault()`).
pub fn controllers_flag_usage() -> String {
    format!(
        "A list of controllers to enable. '*' enables all on-by-default controllers, 'foo' \
         enables the controller named 'foo', '-foo' disables the controller named 'foo'.\n\
         All controllers: {}\nDisabled-by-default controllers: {}",
        known_controllers().join(", "),
        controllers_disabled_by_default().join(", ")
    )
}

/// The canonical names `--controllers` enables, in start order, implemented or not (see
/// [`is_implemented`]).
///
/// As kube's `IsControllerEnabled` after `ApplyTo` replaced aliases: the first item that names a
/// controller decides (`foo` enables it, `-foo` disables it); otherwise `*` enables every
/// controller that is not disabled by default. Empty items are ignored (pflag reads
/// `--controllers=` as no items). Names kube does not know are an error.
pub fn resolve(flag: &[String]) -> Result<Vec<&'static str>, UnknownControllers> {
    let mut unknown = Vec::new();
    // (canonical name, enabled) for each named item, in flag order.
    let mut choices = Vec::new();
    let mut star = false;
    for raw in flag.iter().map(|s| s.trim()).filter(|s| !s.is_empty()) {
        if raw == "*" {
            star = true;
            continue;
        }
        let (enable, name) = match raw.strip_prefix('-') {
            Some(name) => (false, name),
            None => (true, raw),
        };
        match lookup(name) {
            Some(known) => choices.push((known.name, enable)),
            None => unknown.push(name.to_string()),
        }
    }
    if !unknown.is_empty() {
        return Err(UnknownControllers { names: unknown });
    }
    Ok(KNOWN
        .iter()
        .filter(|c| {
            choices
                .iter()
                .find(|(name, _)| *name == c.name)
                .map_or(star && !c.disabled_by_default, |&(_, enable)| enable)
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
    /// `--concurrent-statefulset-syncs`.
    pub concurrent_statefulset_syncs: usize,
    /// `--concurrent-deployment-syncs`.
    pub concurrent_deployment_syncs: usize,
    /// `--concurrent-gc-syncs`.
    pub concurrent_gc_syncs: usize,
    /// `--concurrent-namespace-syncs`.
    pub concurrent_namespace_syncs: usize,
    /// `--concurrent-job-syncs`.
    pub concurrent_job_syncs: usize,
    /// `--concurrent-cron-job-syncs`.
    pub concurrent_cron_job_syncs: usize,
    /// `--concurrent-daemonset-syncs`.
    pub concurrent_daemonset_syncs: usize,
    /// `--concurrent-ttl-after-finished-syncs`.
    pub concurrent_ttl_after_finished_syncs: usize,
    /// `--concurrent-validating-admission-policy-status-syncs`.
    pub concurrent_validating_admission_policy_status_syncs: usize,
    /// `--terminated-pod-gc-threshold`.
    pub terminated_pod_gc_threshold: i64,
    /// `--namespace-sync-period`.
    pub namespace_sync_period: Duration,
    /// `--enable-garbage-collector`.
    pub enable_garbage_collector: bool,
    /// The CA bundle (PEM) the root CA publisher puts in every namespace: `--root-ca-file`, else
    /// the CA of the manager's kubeconfig. Without one the publisher does not start.
    pub root_ca: Option<String>,
    /// `--concurrent-endpoint-syncs`.
    pub concurrent_endpoint_syncs: usize,
    /// `--endpoint-updates-batch-period`.
    pub endpoint_updates_batch_period: Duration,
    /// `--concurrent-service-endpoint-syncs`.
    pub concurrent_service_endpoint_syncs: usize,
    /// `--max-endpoints-per-slice`.
    pub max_endpoints_per_slice: usize,
    /// `--endpointslice-updates-batch-period`.
    pub endpointslice_updates_batch_period: Duration,
    /// `--mirroring-concurrent-service-endpoint-syncs`.
    pub mirroring_concurrent_service_endpoint_syncs: usize,
    /// `--mirroring-max-endpoints-per-subset`.
    pub mirroring_max_endpoints_per_subset: usize,
    /// `--mirroring-endpointslice-updates-batch-period`.
    pub mirroring_endpointslice_updates_batch_period: Duration,
    /// `--concurrent-serviceaccount-token-syncs`.
    pub concurrent_serviceaccount_token_syncs: usize,
    /// Signs the tokens of the service-account token controller, from
    /// `--service-account-private-key-file`; without it that controller does not start.
    pub service_account_token_generator:
        Option<Arc<dyn serviceaccount::tokens::LegacyTokenGenerator>>,
    /// Settings of the node controllers.
    pub nodes: NodeOptions,
    /// `--cluster-signing-*` files and `--cluster-signing-duration` of the signing controller.
    pub csr_signing: certificates::signer::config::SigningConfig,
    /// `--concurrent-resource-quota-syncs`.
    pub concurrent_resourcequota_syncs: usize,
    /// `--resource-quota-sync-period`.
    pub resource_quota_sync_period: Duration,
    /// `--horizontal-pod-autoscaler-sync-period`.
    pub horizontal_pod_autoscaler_sync_period: Duration,
    /// `--horizontal-pod-autoscaler-tolerance`.
    pub horizontal_pod_autoscaler_tolerance: f64,
    /// `--horizontal-pod-autoscaler-cpu-initialization-period`.
    pub horizontal_pod_autoscaler_cpu_initialization_period: Duration,
    /// `--horizontal-pod-autoscaler-initial-readiness-delay`.
    pub horizontal_pod_autoscaler_initial_readiness_delay: Duration,
    /// `--horizontal-pod-autoscaler-downscale-stabilization`.
    pub horizontal_pod_autoscaler_downscale_stabilization: Duration,
    /// `--concurrent-horizontal-pod-autoscaler-syncs`.
    pub concurrent_horizontal_pod_autoscaler_syncs: usize,
    /// `--pvclaimbinder-sync-period`.
    pub pvclaimbinder_sync_period: Duration,
    /// `--enable-dynamic-provisioning`.
    pub enable_dynamic_provisioning: bool,
    /// `--concurrent-ephemeralvolume-syncs`.
    pub concurrent_ephemeralvolume_syncs: usize,
    /// `--legacy-service-account-token-clean-up-period`.
    pub legacy_service_account_token_clean_up_period: Duration,
    /// `--attach-detach-reconcile-sync-period`.
    pub attach_detach_reconcile_sync_period: Duration,
    /// `--disable-attach-detach-reconcile-sync`.
    pub disable_attach_detach_reconcile_sync: bool,
    /// `--disable-force-detach-on-timeout`.
    pub disable_force_detach_on_timeout: bool,
    /// `--feature-gates`: kube 1.33's defaults with the flag applied.
    pub feature_gates: FeatureGates,
    /// Wall clock for every controller.
    pub clock: Arc<dyn Clock>,
}

impl Default for ControllerOptions {
    fn default() -> Self {
        Self {
            concurrent_replicaset_syncs: 5,
            concurrent_rc_syncs: 5,
            concurrent_statefulset_syncs: 5,
            concurrent_deployment_syncs: 5,
            concurrent_gc_syncs: 20,
            concurrent_namespace_syncs: 10,
            concurrent_job_syncs: 5,
            concurrent_cron_job_syncs: 5,
            concurrent_daemonset_syncs: daemon::DEFAULT_WORKERS,
            concurrent_ttl_after_finished_syncs: 5,
            concurrent_validating_admission_policy_status_syncs: 5,
            terminated_pod_gc_threshold: 12500,
            namespace_sync_period: Duration::from_secs(300),
            enable_garbage_collector: true,
            root_ca: None,
            concurrent_endpoint_syncs: 5,
            endpoint_updates_batch_period: Duration::ZERO,
            concurrent_service_endpoint_syncs: 5,
            max_endpoints_per_slice: 100,
            endpointslice_updates_batch_period: Duration::ZERO,
            mirroring_concurrent_service_endpoint_syncs: 5,
            mirroring_max_endpoints_per_subset: 1000,
            mirroring_endpointslice_updates_batch_period: Duration::ZERO,
            concurrent_serviceaccount_token_syncs: 5,
            service_account_token_generator: None,
            nodes: NodeOptions::default(),
            csr_signing: certificates::signer::config::SigningConfig::default(),
            concurrent_resourcequota_syncs: resourcequota::DEFAULT_WORKERS,
            resource_quota_sync_period: resourcequota::DEFAULT_SYNC_PERIOD,
            horizontal_pod_autoscaler_sync_period: Duration::from_secs(15),
            horizontal_pod_autoscaler_tolerance: 0.1,
            horizontal_pod_autoscaler_cpu_initialization_period: Duration::from_secs(300),
            horizontal_pod_autoscaler_initial_readiness_delay: Duration::from_secs(30),
            horizontal_pod_autoscaler_downscale_stabilization: Duration::from_secs(300),
            concurrent_horizontal_pod_autoscaler_syncs: 5,
            pvclaimbinder_sync_period: Duration::from_secs(15),
            enable_dynamic_provisioning: true,
            concurrent_ephemeralvolume_syncs: 5,
            legacy_service_account_token_clean_up_period:
                serviceaccount::legacy_token_cleaner::DEFAULT_CLEAN_UP_PERIOD,
            attach_detach_reconcile_sync_period:
                volume::attachdetach::DEFAULT_RECONCILER_SYNC_LOOP_PERIOD,
            disable_attach_detach_reconcile_sync: false,
            disable_force_detach_on_timeout: false,
            feature_gates: FeatureGates::default(),
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
    /// The controller's settings do not let it start (kube-controller-manager exits then).
    #[error("starting {controller}")]
    Invalid {
        /// The controller.
        controller: &'static str,
        /// Why.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
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
        SERVICEACCOUNT => &[("v1", "serviceaccounts"), ("v1", "namespaces")],
        JOB => &[("batch/v1", "jobs"), ("v1", "pods")],
        DAEMONSET => &[
            ("apps/v1", "daemonsets"),
            ("apps/v1", "controllerrevisions"),
            ("v1", "pods"),
            ("v1", "nodes"),
        ],
        TTL_AFTER_FINISHED => &[("batch/v1", "jobs")],
        VALIDATING_ADMISSION_POLICY_STATUS => &[(
            "admissionregistration.k8s.io/v1",
            "validatingadmissionpolicies",
        )],
        HORIZONTAL_POD_AUTOSCALER => &[
            ("autoscaling/v2", "horizontalpodautoscalers"),
            ("v1", "pods"),
        ],
        CRONJOB => &[("batch/v1", "cronjobs"), ("batch/v1", "jobs")],
        ROOT_CA_PUBLISHER => &[("v1", "configmaps"), ("v1", "namespaces")],
        DISRUPTION => &[("policy/v1", "poddisruptionbudgets")],
        CLUSTERROLE_AGGREGATION => &[("rbac.authorization.k8s.io/v1", "clusterroles")],
        ENDPOINTS => &[("v1", "endpoints"), ("v1", "services"), ("v1", "pods")],
        ENDPOINTSLICE => &[
            ("discovery.k8s.io/v1", "endpointslices"),
            ("v1", "services"),
            ("v1", "pods"),
            ("v1", "nodes"),
        ],
        ENDPOINTSLICE_MIRRORING => &[
            ("discovery.k8s.io/v1", "endpointslices"),
            ("v1", "endpoints"),
            ("v1", "services"),
        ],
        SERVICEACCOUNT_TOKEN => &[("v1", "serviceaccounts"), ("v1", "secrets")],
        // The approver's SubjectAccessReviews are not required: without them it logs the error
        // and retries, and approves nothing.
        CSR_SIGNING | CSR_CLEANER | CSR_APPROVING => {
            &[("certificates.k8s.io/v1", "certificatesigningrequests")]
        }
        RESOURCEQUOTA => &[("v1", "resourcequotas"), ("v1", "pods")],
        BOOTSTRAP_SIGNER => &[("v1", "secrets"), ("v1", "configmaps")],
        TOKEN_CLEANER => &[("v1", "secrets")],
        LEGACY_SA_TOKEN_CLEANER => &[
            ("v1", "serviceaccounts"),
            ("v1", "secrets"),
            ("v1", "pods"),
            ("v1", "configmaps"),
        ],
        STATEFULSET => &[
            ("apps/v1", "statefulsets"),
            ("apps/v1", "controllerrevisions"),
            ("v1", "pods"),
            ("v1", "persistentvolumeclaims"),
        ],
        NODE_LIFECYCLE => &[
            ("v1", "nodes"),
            ("v1", "pods"),
            ("coordination.k8s.io/v1", "leases"),
        ],
        TAINT_EVICTION => &[("v1", "nodes"), ("v1", "pods")],
        TTL | NODE_IPAM => &[("v1", "nodes")],
        PERSISTENTVOLUME_BINDER => &[
            ("v1", "persistentvolumes"),
            ("v1", "persistentvolumeclaims"),
            ("storage.k8s.io/v1", "storageclasses"),
            ("v1", "pods"),
        ],
        PVC_PROTECTION => &[("v1", "persistentvolumeclaims"), ("v1", "pods")],
        PV_PROTECTION => &[("v1", "persistentvolumes")],
        SERVICE_CIDR => &[
            ("networking.k8s.io/v1", "servicecidrs"),
            ("networking.k8s.io/v1", "ipaddresses"),
        ],
        EPHEMERAL_VOLUME => &[("v1", "pods"), ("v1", "persistentvolumeclaims")],
        PERSISTENTVOLUME_EXPANDER => &[
            ("v1", "persistentvolumeclaims"),
            ("v1", "persistentvolumes"),
        ],
        ATTACH_DETACH => &[
            ("v1", "pods"),
            ("v1", "nodes"),
            ("v1", "persistentvolumeclaims"),
            ("v1", "persistentvolumes"),
            ("storage.k8s.io/v1", "csidrivers"),
            ("storage.k8s.io/v1", "volumeattachments"),
        ],
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
    if let Some(gates) = disabled_by_feature_gate(name, &ctx.options.feature_gates) {
        return Ok(Started::Skipped(format!(
            "disabled by a feature gate (requiredFeatureGates {gates:?})"
        )));
    }
    if declined_by_init(name, &ctx.options.feature_gates) {
        return Ok(Started::Skipped("its feature gates are off".into()));
    }
    if !known.implemented {
        return Ok(Started::Skipped("not implemented in rkcm yet".into()));
    }
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
        STATEFULSET => {
            let c = statefulset::StatefulSetController::new(
                ctx.factory,
                client,
                ctx.events.recorder(statefulset::EVENT_SOURCE),
                statefulset::Config {
                    clock: Arc::clone(&o.clock),
                },
            );
            let workers = o.concurrent_statefulset_syncs;
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
        JOB => {
            let c = job::JobController::new(
                ctx.factory,
                client,
                ctx.events.recorder(JOB),
                job::Config {
                    workers: o.concurrent_job_syncs,
                    clock: Arc::clone(&o.clock),
                    ..job::Config::default()
                },
            );
            let workers = o.concurrent_job_syncs;
            Box::pin(async move { c.run(workers, shutdown).await })
        }
        CRONJOB => {
            let c = cronjob::CronJobController::new(
                ctx.factory,
                client,
                ctx.events.recorder(CRONJOB),
                cronjob::Config {
                    clock: Arc::clone(&o.clock),
                    ..cronjob::Config::default()
                },
            );
            let workers = o.concurrent_cron_job_syncs;
            Box::pin(async move { c.run(workers, shutdown).await })
        }
        DAEMONSET => {
            let c = daemon::DaemonSetsController::new(
                ctx.factory,
                client,
                ctx.events.recorder(daemon::EVENT_SOURCE),
                daemon::Config {
                    workers: o.concurrent_daemonset_syncs,
                    clock: Arc::clone(&o.clock),
                    ..daemon::Config::default()
                },
            );
            let workers = o.concurrent_daemonset_syncs;
            Box::pin(async move { c.run(workers, shutdown).await })
        }
        HORIZONTAL_POD_AUTOSCALER => {
            let c = podautoscaler::HorizontalController::new(
                ctx.factory,
                client,
                ctx.events.recorder(podautoscaler::EVENT_SOURCE),
                podautoscaler::Config {
                    sync_period: o.horizontal_pod_autoscaler_sync_period,
                    tolerance: o.horizontal_pod_autoscaler_tolerance,
                    cpu_initialization_period: o
                        .horizontal_pod_autoscaler_cpu_initialization_period,
                    initial_readiness_delay: o.horizontal_pod_autoscaler_initial_readiness_delay,
                    downscale_stabilization: o.horizontal_pod_autoscaler_downscale_stabilization,
                    clock: Arc::clone(&o.clock),
                },
            );
            let workers = o.concurrent_horizontal_pod_autoscaler_syncs;
            Box::pin(async move { c.run(workers, shutdown).await })
        }
        TTL_AFTER_FINISHED => {
            let c = ttlafterfinished::TtlAfterFinishedController::new(
                ctx.factory,
                client,
                Arc::clone(&o.clock),
            );
            let workers = o.concurrent_ttl_after_finished_syncs;
            Box::pin(async move { c.run(workers, shutdown).await })
        }
        DISRUPTION => {
            let c = disruption::DisruptionController::new(
                ctx.factory,
                client,
                ctx.events.recorder(disruption::EVENT_SOURCE),
                disruption::Config {
                    clock: Arc::clone(&o.clock),
                    ..disruption::Config::default()
                },
            );
            // kube runs one worker per queue and has no `--concurrent-*` flag for it.
            Box::pin(async move { c.run(shutdown).await })
        }
        VALIDATING_ADMISSION_POLICY_STATUS => {
            let c = crate::validatingadmissionpolicystatus::ValidatingAdmissionPolicyStatusController::new(
                ctx.factory,
                client,
            );
            let workers = o.concurrent_validating_admission_policy_status_syncs;
            Box::pin(async move { c.run(workers, shutdown).await })
        }
        CLUSTERROLE_AGGREGATION => {
            let c =
                clusterroleaggregation::ClusterRoleAggregationController::new(ctx.factory, client);
            Box::pin(async move { c.run(clusterroleaggregation::WORKERS, shutdown).await })
        }
        SERVICEACCOUNT => {
            let c = serviceaccount::ServiceAccountsController::new(ctx.factory, client);
            // kube runs one worker (`startServiceAccountController`).
            Box::pin(async move { c.run(1, shutdown).await })
        }
        SERVICEACCOUNT_TOKEN => {
            let Some(generator) = o.service_account_token_generator.clone() else {
                return Ok(Started::Skipped(format!(
                    "{SERVICEACCOUNT_TOKEN:?} is disabled because there is no private key"
                )));
            };
            let root_ca = o.root_ca.clone().unwrap_or_default().into_bytes();
            let c = serviceaccount::tokens::TokensController::new(
                ctx.factory,
                client,
                generator,
                root_ca,
            );
            let workers = o.concurrent_serviceaccount_token_syncs;
            Box::pin(async move { c.run(workers, shutdown).await })
        }
        BOOTSTRAP_SIGNER => {
            let c =
                bootstrap::signer::BootstrapSigner::new(ctx.factory, client, Arc::clone(&o.clock));
            Box::pin(async move { c.run(shutdown).await })
        }
        TOKEN_CLEANER => {
            let c =
                bootstrap::cleaner::TokenCleaner::new(ctx.factory, client, Arc::clone(&o.clock));
            Box::pin(async move { c.run(shutdown).await })
        }
        LEGACY_SA_TOKEN_CLEANER => {
            use serviceaccount::legacy_token_cleaner as cleaner;
            let c = match cleaner::LegacyTokenCleaner::new(
                ctx.factory,
                client,
                cleaner::Config {
                    clean_up_period: o.legacy_service_account_token_clean_up_period,
                    sync_interval: cleaner::DEFAULT_SYNC_INTERVAL,
                    clock: Arc::clone(&o.clock),
                },
            ) {
                Ok(c) => c,
                Err(err) => {
                    return Ok(Started::Skipped(format!(
                        "failed to start the legacy service account token cleaner: {err}"
                    )))
                }
            };
            Box::pin(async move { c.run(shutdown).await })
        }
        ROOT_CA_PUBLISHER => {
            let Some(root_ca) = o.root_ca.clone() else {
                return Ok(Started::Skipped("no root CA bundle to publish".into()));
            };
            let c = rootcacertpublisher::Publisher::new(ctx.factory, client, root_ca);
            // kube runs one worker (`startRootCACertPublisher`).
            Box::pin(async move { c.run(1, shutdown).await })
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
        ENDPOINTS => {
            let c = endpoint::EndpointController::new(
                ctx.factory,
                client,
                ctx.events.recorder(endpoint::EVENT_SOURCE),
                endpoint::Config {
                    batch_period: o.endpoint_updates_batch_period,
                },
            );
            let workers = o.concurrent_endpoint_syncs;
            Box::pin(async move { c.run(workers, shutdown).await })
        }
        ENDPOINTSLICE => {
            let c = endpointslice::EndpointSliceController::new(
                ctx.factory,
                client,
                ctx.events.recorder(endpointslice::EVENT_SOURCE),
                endpointslice::Config {
                    max_endpoints_per_slice: o.max_endpoints_per_slice,
                    batch_period: o.endpointslice_updates_batch_period,
                },
            );
            let workers = o.concurrent_service_endpoint_syncs;
            Box::pin(async move { c.run(workers, shutdown).await })
        }
        ENDPOINTSLICE_MIRRORING => {
            let c = endpointslicemirroring::EndpointSliceMirroringController::new(
                ctx.factory,
                client,
                ctx.events.recorder(endpointslicemirroring::EVENT_SOURCE),
                endpointslicemirroring::Config {
                    max_endpoints_per_subset: o.mirroring_max_endpoints_per_subset,
                    batch_period: o.mirroring_endpointslice_updates_batch_period,
                },
            );
            let workers = o.mirroring_concurrent_service_endpoint_syncs;
            Box::pin(async move { c.run(workers, shutdown).await })
        }
        NODE_LIFECYCLE => {
            let n = &o.nodes;
            let c = nodelifecycle::NodeLifecycleController::new(
                ctx.factory,
                client,
                ctx.events.recorder("node-controller"),
                nodelifecycle::Config {
                    node_monitor_period: n.node_monitor_period,
                    node_monitor_grace_period: n.node_monitor_grace_period,
                    node_startup_grace_period: n.node_startup_grace_period,
                    rates: nodelifecycle::zone::Rates {
                        eviction: n.node_eviction_rate,
                        secondary: n.secondary_node_eviction_rate,
                        large_cluster_threshold: n.large_cluster_size_threshold,
                    },
                    unhealthy_zone_threshold: n.unhealthy_zone_threshold,
                    clock: Arc::clone(&o.clock),
                },
            );
            Box::pin(async move { c.run(shutdown).await })
        }
        TAINT_EVICTION => {
            let c = tainteviction::TaintEvictionController::new(
                ctx.factory,
                client,
                ctx.events.recorder(tainteviction::CONTROLLER_NAME),
                Arc::clone(&o.clock),
            );
            Box::pin(async move { c.run(shutdown).await })
        }
        SERVICE_CIDR => {
            let c = crate::servicecidrs::ServiceCidrController::new(
                ctx.factory,
                client,
                ctx.events.recorder(crate::servicecidrs::CONTROLLER_NAME),
                Arc::clone(&o.clock),
            );
            Box::pin(async move { c.run(crate::servicecidrs::WORKERS, shutdown).await })
        }
        TTL => {
            let c = ttl::TtlController::new(ctx.factory, client);
            Box::pin(async move { c.run(ttl::WORKERS, shutdown).await })
        }
        NODE_IPAM => {
            if !o.nodes.allocate_node_cidrs {
                return Ok(Started::Skipped("--allocate-node-cidrs=false".into()));
            }
            let config = match nodeipam::Config::from_options(&o.nodes) {
                Ok(config) => config,
                Err(e) => return Ok(Started::Skipped(e.to_string())),
            };
            let c = nodeipam::NodeIpamController::new(
                ctx.factory,
                client,
                ctx.events.recorder("cidrAllocator"),
                config,
            );
            Box::pin(async move { c.run(shutdown).await })
        }
        CSR_SIGNING => {
            let c = certificates::signer::CsrSigningController::new(
                ctx.factory,
                client,
                &o.csr_signing,
                Arc::clone(&o.clock),
            )
            .map_err(|source| StartError::Invalid {
                controller,
                source: Box::new(source),
            })?;
            let Some(c) = c else {
                return Ok(Started::Skipped(
                    "Skipping CSR signer controller because no csr cert/key was specified".into(),
                ));
            };
            Box::pin(async move { c.run(certificates::signer::WORKERS, shutdown).await })
        }
        CSR_APPROVING => {
            let c = certificates::approver::CsrApprovingController::new(ctx.factory, client);
            Box::pin(async move { c.run(certificates::approver::WORKERS, shutdown).await })
        }
        CSR_CLEANER => {
            let c = certificates::cleaner::CsrCleanerController::new(
                ctx.factory,
                client,
                Arc::clone(&o.clock),
            );
            // kube runs one worker (`startCSRCleanerController`).
            Box::pin(async move { c.run(shutdown).await })
        }
        RESOURCEQUOTA => {
            let c = resourcequota::ResourceQuotaController::new(
                ctx.factory,
                client,
                resourcequota::Config {
                    resync_period: o.resource_quota_sync_period,
                    clock: Arc::clone(&o.clock),
                },
            );
            let workers = o.concurrent_resourcequota_syncs;
            Box::pin(async move { c.run(workers, shutdown).await })
        }
        PERSISTENTVOLUME_BINDER => {
            let c = volume::persistentvolume::PersistentVolumeController::new(
                ctx.factory,
                client,
                ctx.events.recorder(volume::persistentvolume::EVENT_SOURCE),
                volume::persistentvolume::Config {
                    sync_period: o.pvclaimbinder_sync_period,
                    enable_dynamic_provisioning: o.enable_dynamic_provisioning,
                },
            );
            Box::pin(async move { c.run(shutdown).await })
        }
        PVC_PROTECTION => {
            let c = volume::protection::PvcProtectionController::new(ctx.factory, client);
            // kube runs one worker (`startPersistentVolumeClaimProtectionController`).
            Box::pin(async move { c.run(1, shutdown).await })
        }
        PV_PROTECTION => {
            let c = volume::protection::PvProtectionController::new(ctx.factory, client);
            // kube runs one worker (`startPersistentVolumeProtectionController`).
            Box::pin(async move { c.run(1, shutdown).await })
        }
        EPHEMERAL_VOLUME => {
            let c = volume::ephemeral::EphemeralVolumeController::new(
                ctx.factory,
                client,
                ctx.events.recorder(volume::ephemeral::EVENT_SOURCE),
            );
            let workers = o.concurrent_ephemeralvolume_syncs;
            Box::pin(async move { c.run(workers, shutdown).await })
        }
        PERSISTENTVOLUME_EXPANDER => {
            let c = volume::expand::ExpandController::new(
                ctx.factory,
                ctx.events.recorder(volume::expand::EVENT_SOURCE),
            );
            drop(client);
            Box::pin(async move { c.run(volume::expand::WORKERS, shutdown).await })
        }
        ATTACH_DETACH => {
            use volume::attachdetach as ad;
            let config = ad::Config {
                reconciler_sync_loop_period: o.attach_detach_reconcile_sync_period,
                disable_reconcile_sync: o.disable_attach_detach_reconcile_sync,
                disable_force_detach_on_timeout: o.disable_force_detach_on_timeout,
                clock: Arc::clone(&o.clock),
            };
            config.validate().map_err(|source| StartError::Invalid {
                controller,
                source: Box::new(source),
            })?;
            let c = ad::AttachDetachController::new(
                ctx.factory,
                client,
                ctx.events.recorder(ad::EVENT_SOURCE),
                config,
            );
            Box::pin(async move { c.run(shutdown).await })
        }
        other => return Err(StartError::Unknown(other.to_string())),
    };
    Ok(Started::Running(run))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    fn flags(s: &[&str]) -> Vec<String> {
        s.iter().map(|s| s.to_string()).collect()
    }

    /// kube-controller-manager 1.33's `--controllers` usage: its 49 canonical names.
    #[test]
    fn controllers_usage_lists_every_known_name_sorted_as_kube_does() {
        assert_eq!(
            controllers_flag_usage(),
            "A list of controllers to enable. '*' enables all on-by-default controllers, 'foo' \
             enables the controller named 'foo', '-foo' disables the controller named 'foo'.\n\
             All controllers: bootstrap-signer-controller, \
             certificatesigningrequest-approving-controller, \
             certificatesigningrequest-cleaner-controller, \
             certificatesigningrequest-signing-controller, cloud-node-lifecycle-controller, \
             clusterrole-aggregation-controller, cronjob-controller, daemonset-controller, \
             deployment-controller, device-taint-eviction-controller, disruption-controller, \
             endpoints-controller, endpointslice-controller, endpointslice-mirroring-controller, \
             ephemeral-volume-controller, garbage-collector-controller, \
             horizontal-pod-autoscaler-controller, job-controller, \
             kube-apiserver-serving-clustertrustbundle-publisher-controller, \
             legacy-serviceaccount-token-cleaner-controller, namespace-controller, \
             node-ipam-controller, node-lifecycle-controller, node-route-controller, \
             persistentvolume-attach-detach-controller, persistentvolume-binder-controller, \
             persistentvolume-expander-controller, persistentvolume-protection-controller, \
             persistentvolumeclaim-protection-controller, pod-garbage-collector-controller, \
             replicaset-controller, replicationcontroller-controller, resourceclaim-controller, \
             resourcequota-controller, root-ca-certificate-publisher-controller, \
             selinux-warning-controller, service-cidr-controller, service-lb-controller, \
             serviceaccount-controller, serviceaccount-token-controller, statefulset-controller, \
             storage-version-migrator-controller, storageversion-garbage-collector-controller, \
             taint-eviction-controller, token-cleaner-controller, ttl-after-finished-controller, \
             ttl-controller, validatingadmissionpolicy-status-controller, \
             volumeattributesclass-protection-controller\n\
             Disabled-by-default controllers: bootstrap-signer-controller, \
             selinux-warning-controller, token-cleaner-controller"
        );
        assert_eq!(known_controllers().len(), KNOWN.len());
    }

    #[test]
    fn star_enables_every_controller_on_by_default_in_start_order() {
        let all = resolve(&flags(&["*"])).unwrap();
        let on_by_default: Vec<_> = KNOWN
            .iter()
            .filter(|c| !c.disabled_by_default)
            .map(|c| c.name)
            .collect();
        assert_eq!(all, on_by_default);
        for implemented in [
            NAMESPACE,
            GARBAGECOLLECTOR,
            REPLICATIONCONTROLLER,
            PODGC,
            REPLICASET,
            DEPLOYMENT,
            CRONJOB,
            STATEFULSET,
        ] {
            assert!(all.contains(&implemented), "{implemented}");
        }
        assert!(!all.contains(&"bootstrap-signer-controller"));
        assert!(!all.contains(&"token-cleaner-controller"));
        assert!(!all.contains(&"selinux-warning-controller"));
    }

    #[test]
    fn the_cloud_provider_controllers_are_known_and_marked() {
        let cloud: Vec<_> = KNOWN
            .iter()
            .filter(|c| c.cloud_provider)
            .map(|c| c.name)
            .collect();
        assert_eq!(
            cloud,
            [
                "service-lb-controller",
                "node-route-controller",
                "cloud-node-lifecycle-controller"
            ]
        );
        assert!(is_cloud_provider("route"));
        assert!(!is_cloud_provider(REPLICASET));
        assert!(cloud.iter().all(|c| !is_implemented(c)));
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
        assert_eq!(enabled, [DEPLOYMENT, REPLICASET]);
    }

    // IsControllerEnabled returns at the first item naming the controller.
    #[test]
    fn the_first_item_naming_a_controller_decides() {
        assert_eq!(
            resolve(&flags(&["replicaset", "-replicaset"])).unwrap(),
            [REPLICASET]
        );
        assert!(resolve(&flags(&["-replicaset", "replicaset"]))
            .unwrap()
            .is_empty());
        // Aliases are replaced by canonical names before the first match is looked for.
        assert_eq!(
            resolve(&flags(&["replicaset", "-replicaset-controller"])).unwrap(),
            [REPLICASET]
        );
        // `*` does not override an explicit choice, wherever it stands.
        assert!(!resolve(&flags(&["-podgc", "*"])).unwrap().contains(&PODGC));
        assert!(!resolve(&flags(&["*", "-podgc"])).unwrap().contains(&PODGC));
    }

    #[test]
    fn kubeadms_controllers_flag_is_accepted_and_enables_the_bootstrap_controllers() {
        let enabled = resolve(&flags(&["*", "bootstrapsigner", "tokencleaner"])).unwrap();
        assert!(enabled.contains(&"bootstrap-signer-controller"));
        assert!(enabled.contains(&"token-cleaner-controller"));
        assert!(enabled.contains(&REPLICASET));
        assert!(is_implemented(BOOTSTRAP_SIGNER) && is_implemented(TOKEN_CLEANER));
    }

    #[test]
    fn known_but_unimplemented_names_are_accepted() {
        let enabled = resolve(&flags(&[
            "storage-version-gc",
            "-job-controller",
            "selinux-warning-controller",
        ]))
        .unwrap();
        assert_eq!(
            enabled,
            [
                "storageversion-garbage-collector-controller",
                "selinux-warning-controller"
            ]
        );
        assert!(enabled.iter().all(|c| !is_implemented(c)));
        assert!(is_implemented(REPLICASET));
    }

    #[test]
    fn unknown_names_are_refused_with_kubes_message() {
        let err = resolve(&flags(&["*", "-cronjobs"])).unwrap_err();
        assert_eq!(err.names, ["cronjobs"]);
        assert_eq!(
            err.to_string(),
            "\"cronjobs\" is not in the list of known controllers"
        );
        let err = resolve(&flags(&["foo", "*", "-bar", "podgc"])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "[\"foo\" is not in the list of known controllers, \"bar\" is not in the list of known controllers]"
        );
    }

    #[test]
    fn feature_gated_controllers_are_kube_1_33s() {
        let gated: Vec<_> = KNOWN
            .iter()
            .filter(|c| !c.required_feature_gates.is_empty())
            .map(|c| (c.name, c.required_feature_gates))
            .collect();
        assert_eq!(
            gated,
            [
                (
                    "volumeattributesclass-protection-controller",
                    &["VolumeAttributesClass"][..]
                ),
                (
                    "kube-apiserver-serving-clustertrustbundle-publisher-controller",
                    &["ClusterTrustBundle"][..]
                ),
                (
                    "storageversion-garbage-collector-controller",
                    &["APIServerIdentity", "StorageVersionAPI"][..]
                ),
                (
                    "resourceclaim-controller",
                    &["DynamicResourceAllocation"][..]
                ),
                (
                    "device-taint-eviction-controller",
                    &["DynamicResourceAllocation", "DRADeviceTaints"][..]
                ),
                (
                    "taint-eviction-controller",
                    &["SeparateTaintEvictionController"][..]
                ),
                (
                    "service-cidr-controller",
                    &["MultiCIDRServiceAllocator"][..]
                ),
                ("selinux-warning-controller", &["SELinuxChangePolicy"][..]),
            ]
        );
        // Every gate named is one kube knows.
        for c in KNOWN {
            for g in c.required_feature_gates.iter().chain(c.init_feature_gates) {
                assert!(crate::featuregate::spec(g).is_some(), "{g}");
            }
        }
    }

    #[test]
    fn with_kubes_default_gates_the_alpha_and_off_beta_controllers_are_skipped() {
        let gates = FeatureGates::default();
        let off: Vec<_> = KNOWN
            .iter()
            .filter(|c| disabled_by_feature_gate(c.name, &gates).is_some())
            .map(|c| c.name)
            .collect();
        assert_eq!(
            off,
            [
                "volumeattributesclass-protection-controller",
                "kube-apiserver-serving-clustertrustbundle-publisher-controller",
                "storageversion-garbage-collector-controller",
                "resourceclaim-controller",
                "device-taint-eviction-controller",
            ]
        );
        assert!(disabled_by_feature_gate("service-cidr-controller", &gates).is_none());
        assert!(disabled_by_feature_gate("taint-eviction-controller", &gates).is_none());
        assert!(disabled_by_feature_gate(REPLICASET, &gates).is_none());
        assert!(declined_by_init(
            "storage-version-migrator-controller",
            &gates
        ));
        assert!(!declined_by_init(REPLICASET, &gates));
    }

    #[test]
    fn a_gate_turned_on_makes_its_controller_known_rather_than_skipped() {
        let gates = FeatureGates::parse(["DynamicResourceAllocation=true"]).expect("valid");
        assert!(disabled_by_feature_gate("resourceclaim-controller", &gates).is_none());
        // Both gates are needed.
        assert_eq!(
            disabled_by_feature_gate("device-taint-eviction-controller", &gates),
            Some(&["DynamicResourceAllocation", "DRADeviceTaints"][..])
        );
        let gates = FeatureGates::parse(["MultiCIDRServiceAllocator=false"]).expect("valid");
        assert!(disabled_by_feature_gate("service-cidr-controller", &gates).is_some());
        let gates =
            FeatureGates::parse(["StorageVersionMigrator=true,InformerResourceVersion=true"])
                .expect("valid");
        assert!(!declined_by_init(
            "storage-version-migrator-controller",
            &gates
        ));
    }

    #[test]
    fn the_registry_has_kube_controller_managers_names() {
        // 49 controllers in kube-controller-manager 1.33's registry, each with a unique name and
        // aliases that never collide with a name (NewControllerDescriptors panics otherwise).
        assert_eq!(KNOWN.len(), 49);
        let mut seen = BTreeSet::new();
        for c in KNOWN {
            assert!(c.name.ends_with("-controller"), "{}", c.name);
            assert!(seen.insert(c.name), "{} twice", c.name);
            for a in c.aliases {
                assert!(seen.insert(a), "{a} twice");
            }
        }
        let off: Vec<_> = KNOWN
            .iter()
            .filter(|c| c.disabled_by_default)
            .map(|c| c.name)
            .collect();
        assert_eq!(
            off,
            [
                "bootstrap-signer-controller",
                "token-cleaner-controller",
                "selinux-warning-controller"
            ]
        );
    }
}
