//! kube's `TestAddFlags` (`cmd/kube-controller-manager/app/options/options_test.go`): its command
//! line, every flag kube-controller-manager has, parses, and each value lands where kube puts it.

use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

use clap::Parser;

use super::word_sep::normalize_flag_names;
use super::ManagerArgs;

/// kube's `args` of `TestAddFlags` (`--leader-elect-resource-lock=configmap` left out: 1.33 knows
/// only `leases`).
const ARGS: &[&str] = &[
    "--allocate-node-cidrs=true",
    "--attach-detach-reconcile-sync-period=30s",
    "--cidr-allocator-type=CloudAllocator",
    "--cloud-config=/cloud-config",
    "--cloud-provider=gce",
    "--cluster-cidr=1.2.3.4/24",
    "--cluster-name=k8s",
    "--cluster-signing-cert-file=/cluster-signing-cert",
    "--cluster-signing-key-file=/cluster-signing-key",
    "--cluster-signing-kubelet-serving-cert-file=/cluster-signing-kubelet-serving/cert-file",
    "--cluster-signing-kubelet-serving-key-file=/cluster-signing-kubelet-serving/key-file",
    "--cluster-signing-kubelet-client-cert-file=/cluster-signing-kubelet-client/cert-file",
    "--cluster-signing-kubelet-client-key-file=/cluster-signing-kubelet-client/key-file",
    "--cluster-signing-kube-apiserver-client-cert-file=/cluster-signing-kube-apiserver-client/cert-file",
    "--cluster-signing-kube-apiserver-client-key-file=/cluster-signing-kube-apiserver-client/key-file",
    "--cluster-signing-legacy-unknown-cert-file=/cluster-signing-legacy-unknown/cert-file",
    "--cluster-signing-legacy-unknown-key-file=/cluster-signing-legacy-unknown/key-file",
    "--concurrent-deployment-syncs=10",
    "--concurrent-horizontal-pod-autoscaler-syncs=10",
    "--concurrent-statefulset-syncs=15",
    "--concurrent-endpoint-syncs=10",
    "--concurrent-ephemeralvolume-syncs=10",
    "--concurrent-service-endpoint-syncs=10",
    "--concurrent-gc-syncs=30",
    "--concurrent-namespace-syncs=20",
    "--concurrent-job-syncs=10",
    "--concurrent-cron-job-syncs=10",
    "--concurrent-replicaset-syncs=10",
    "--concurrent-resource-quota-syncs=10",
    "--concurrent-service-syncs=2",
    "--concurrent-serviceaccount-token-syncs=10",
    "--concurrent_rc_syncs=10",
    "--concurrent-validating-admission-policy-status-syncs=9",
    "--configure-cloud-routes=false",
    "--contention-profiling=true",
    "--controller-start-interval=2m",
    "--controllers=foo,bar",
    "--disable-attach-detach-reconcile-sync=true",
    "--enable-dynamic-provisioning=false",
    "--enable-garbage-collector=false",
    "--enable-hostpath-provisioner=true",
    "--cluster-signing-duration=10h",
    "--flex-volume-plugin-dir=/flex-volume-plugin",
    "--horizontal-pod-autoscaler-sync-period=45s",
    "--horizontal-pod-autoscaler-downscale-stabilization=3m",
    "--horizontal-pod-autoscaler-cpu-initialization-period=90s",
    "--horizontal-pod-autoscaler-initial-readiness-delay=50s",
    "--http2-max-streams-per-connection=47",
    "--kube-api-burst=100",
    "--kube-api-content-type=application/json",
    "--kube-api-qps=50.0",
    "--kubeconfig=/kubeconfig",
    "--large-cluster-size-threshold=100",
    "--leader-elect=false",
    "--leader-elect-lease-duration=30s",
    "--leader-elect-renew-deadline=15s",
    "--leader-elect-retry-period=5s",
    "--legacy-service-account-token-clean-up-period=8760h",
    "--master=192.168.4.20",
    "--max-endpoints-per-slice=200",
    "--min-resync-period=8h",
    "--mirroring-concurrent-service-endpoint-syncs=2",
    "--mirroring-max-endpoints-per-subset=1000",
    "--namespace-sync-period=10m",
    "--node-cidr-mask-size=48",
    "--node-cidr-mask-size-ipv4=48",
    "--node-cidr-mask-size-ipv6=108",
    "--node-eviction-rate=0.2",
    "--node-monitor-grace-period=30s",
    "--node-monitor-period=10s",
    "--node-startup-grace-period=30s",
    "--profiling=false",
    "--pv-recycler-increment-timeout-nfs=45",
    "--pv-recycler-minimum-timeout-hostpath=45",
    "--pv-recycler-minimum-timeout-nfs=200",
    "--pv-recycler-timeout-increment-hostpath=45",
    "--pvclaimbinder-sync-period=30s",
    "--resource-quota-sync-period=10m",
    "--route-reconciliation-period=30s",
    "--secondary-node-eviction-rate=0.05",
    "--service-account-private-key-file=/service-account-private-key",
    "--terminated-pod-gc-threshold=12000",
    "--unhealthy-zone-threshold=0.6",
    "--use-service-account-credentials=true",
    "--cert-dir=/a/b/c",
    "--bind-address=192.168.4.21",
    "--secure-port=10001",
    "--concurrent-ttl-after-finished-syncs=8",
];

fn parse(args: &[&str]) -> ManagerArgs {
    let argv = ["rkcm", "controller-manager"]
        .iter()
        .chain(args)
        .map(OsString::from);
    match crate::cli::Cli::try_parse_from(normalize_flag_names(argv))
        .expect("kube's flags parse")
        .command
    {
        crate::cli::Command::ControllerManager(m) => *m,
        other => panic!("unexpected command {other:?}"),
    }
}

#[test]
fn kubes_add_flags_command_line_lands_where_kube_puts_it() {
    let m = parse(ARGS);
    // Generic.
    assert_eq!(m.min_resync_period, Duration::from_secs(8 * 3600));
    assert_eq!(m.kubeconfig.as_deref(), Some(Path::new("/kubeconfig")));
    assert_eq!((m.kube_api_qps, m.kube_api_burst), (50.0, 100));
    assert!(!m.leader_elect);
    assert_eq!(
        (
            m.leader_elect_lease_duration,
            m.leader_elect_renew_deadline,
            m.leader_elect_retry_period
        ),
        (
            Duration::from_secs(30),
            Duration::from_secs(15),
            Duration::from_secs(5)
        )
    );
    assert_eq!(m.leader_elect_resource_name, "kube-controller-manager");
    assert_eq!(m.leader_elect_resource_namespace, "kube-system");
    assert_eq!(m.controllers, ["foo", "bar"]);
    assert!(!m.delegation.profiling);
    assert_eq!(m.master.as_deref(), Some("192.168.4.20"));
    // Cloud-shared and node controllers.
    assert_eq!(m.nodes.node_monitor_period, Duration::from_secs(10));
    assert_eq!(m.nodes.cluster_cidr.as_deref(), Some("1.2.3.4/24"));
    assert_eq!(m.nodes.allocate_node_cidrs, Some(true));
    assert_eq!(m.nodes.node_eviction_rate, 0.2);
    assert_eq!(m.nodes.secondary_node_eviction_rate, 0.05);
    assert_eq!(m.nodes.node_monitor_grace_period, Duration::from_secs(30));
    assert_eq!(m.nodes.node_startup_grace_period, Duration::from_secs(30));
    assert_eq!(m.nodes.large_cluster_size_threshold, 100);
    assert_eq!(m.nodes.unhealthy_zone_threshold, 0.6);
    assert_eq!(
        (
            m.nodes.node_cidr_mask_size,
            m.nodes.node_cidr_mask_size_ipv4,
            m.nodes.node_cidr_mask_size_ipv6
        ),
        (48, 48, 108)
    );
    // Workload controllers.
    assert_eq!(m.concurrent_deployment_syncs, 10);
    assert_eq!(m.concurrent_statefulset_syncs, 15);
    assert_eq!(m.concurrent_daemonset_syncs, 2);
    assert_eq!(m.concurrent_endpoint_syncs, 10);
    assert_eq!(m.concurrent_service_endpoint_syncs, 10);
    assert_eq!(m.max_endpoints_per_slice, 200);
    assert_eq!(m.mirroring_concurrent_service_endpoint_syncs, 2);
    assert_eq!(m.mirroring_max_endpoints_per_subset, 1000);
    assert_eq!(m.concurrent_ephemeralvolume_syncs, 10);
    assert_eq!(m.concurrent_gc_syncs, 30);
    assert!(!m.enable_garbage_collector);
    assert_eq!(m.hpa.concurrent_horizontal_pod_autoscaler_syncs, 10);
    assert_eq!(
        m.hpa.horizontal_pod_autoscaler_sync_period,
        Duration::from_secs(45)
    );
    assert_eq!(
        m.hpa.horizontal_pod_autoscaler_downscale_stabilization,
        Duration::from_secs(180)
    );
    assert_eq!(
        m.hpa.horizontal_pod_autoscaler_cpu_initialization_period,
        Duration::from_secs(90)
    );
    assert_eq!(
        m.hpa.horizontal_pod_autoscaler_initial_readiness_delay,
        Duration::from_secs(50)
    );
    assert_eq!(m.hpa.horizontal_pod_autoscaler_tolerance, 0.1);
    assert_eq!(
        (m.concurrent_job_syncs, m.concurrent_cron_job_syncs),
        (10, 10)
    );
    assert_eq!(m.namespace_sync_period, Duration::from_secs(600));
    assert_eq!(m.concurrent_namespace_syncs, 20);
    assert_eq!(m.pvclaimbinder_sync_period, Duration::from_secs(30));
    assert!(!m.enable_dynamic_provisioning);
    assert_eq!(m.terminated_pod_gc_threshold, 12000);
    assert_eq!(m.concurrent_replicaset_syncs, 10);
    assert_eq!(
        m.concurrent_rc_syncs, 10,
        "--concurrent_rc_syncs, normalized"
    );
    assert_eq!(m.resource_quota_sync_period, Duration::from_secs(600));
    assert_eq!(m.concurrent_resourcequota_syncs, 10);
    assert_eq!(
        m.service_account_private_key_file.as_deref(),
        Some(Path::new("/service-account-private-key"))
    );
    assert_eq!(m.concurrent_serviceaccount_token_syncs, 10);
    assert_eq!(
        m.legacy_service_account_token_clean_up_period,
        Duration::from_secs(365 * 24 * 3600)
    );
    assert_eq!(m.concurrent_ttl_after_finished_syncs, 8);
    assert_eq!(m.concurrent_validating_admission_policy_status_syncs, 9);
    assert_eq!(
        m.csr_signing.cluster_signing_duration,
        Duration::from_secs(36000)
    );
    assert_eq!(
        m.csr_signing.cluster_signing_cert_file.as_deref(),
        Some(Path::new("/cluster-signing-cert"))
    );
    // Secure serving and delegation (kube's defaults).
    assert_eq!(m.bind_address.to_string(), "192.168.4.21");
    assert_eq!(m.secure_port, 10001);
    assert_eq!(
        m.delegation.authentication_token_webhook_cache_ttl,
        Duration::from_secs(10)
    );
    assert_eq!(
        m.delegation.authorization_always_allow_paths,
        ["/healthz", "/readyz", "/livez"]
    );
    // The attach/detach controller's flags.
    assert_eq!(
        m.attachdetach.attach_detach_reconcile_sync_period,
        Duration::from_secs(30)
    );
    assert!(m.attachdetach.disable_attach_detach_reconcile_sync);
    // Flags for what rkcm does not have: accepted, each reported with its value.
    let ignored: Vec<(&str, &str)> = m
        .ignored
        .given
        .iter()
        .map(|(f, v)| (f.name, v.as_str()))
        .collect();
    for expected in [
        ("cidr-allocator-type", "CloudAllocator"),
        ("cloud-config", "/cloud-config"),
        ("cloud-provider", "gce"),
        ("cluster-name", "k8s"),
        ("concurrent-service-syncs", "2"),
        ("configure-cloud-routes", "false"),
        ("contention-profiling", "true"),
        ("controller-start-interval", "2m"),
        ("enable-hostpath-provisioner", "true"),
        ("flex-volume-plugin-dir", "/flex-volume-plugin"),
        ("http2-max-streams-per-connection", "47"),
        ("kube-api-content-type", "application/json"),
        ("pv-recycler-increment-timeout-nfs", "45"),
        ("pv-recycler-minimum-timeout-hostpath", "45"),
        ("pv-recycler-minimum-timeout-nfs", "200"),
        ("pv-recycler-timeout-increment-hostpath", "45"),
        ("route-reconciliation-period", "30s"),
        ("cert-dir", "/a/b/c"),
    ] {
        assert!(ignored.contains(&expected), "{expected:?} in {ignored:?}");
    }
}

/// The defaults of kube's `NewKubeControllerManagerOptions` for the flags rkcm ignores are kube's:
/// nothing is reported when nothing is given.
#[test]
fn no_flags_nothing_ignored() {
    assert!(parse(&[]).ignored.given.is_empty());
}
