//! `/configz`: the running configuration in the shape kube-controller-manager serves it, the
//! internal `KubeControllerManagerConfiguration` under `componentconfig` (Go field names,
//! durations as Go prints them), for the settings rkcm has.

use serde_json::{json, Value};

use super::ManagerArgs;

fn d(duration: std::time::Duration) -> String {
    rkcm_apimachinery::duration::format_std(duration)
}

/// The `/configz` document for `args`.
pub fn document(args: &ManagerArgs) -> Value {
    let ignored = |name: &str| {
        args.ignored
            .given
            .iter()
            .find(|(f, _)| f.name == name)
            .map(|(_, v)| v.clone())
    };
    let hpa = &args.hpa;
    let nodes = &args.nodes;
    json!({"componentconfig": {
        "Generic": {
            "Port": 0,
            "Address": args.bind_address.to_string(),
            "MinResyncPeriod": d(args.min_resync_period),
            "ClientConnection": {
                "Kubeconfig": args.kubeconfig.as_ref().map(|p| p.display().to_string()).unwrap_or_default(),
                "AcceptContentTypes": "",
                "ContentType": ignored("kube-api-content-type").unwrap_or_else(|| "application/vnd.kubernetes.protobuf".into()),
                "QPS": args.kube_api_qps,
                "Burst": args.kube_api_burst,
            },
            "ControllerStartInterval": "0s",
            "LeaderElection": {
                "LeaderElect": args.leader_elect,
                "LeaseDuration": d(args.leader_elect_lease_duration),
                "RenewDeadline": d(args.leader_elect_renew_deadline),
                "RetryPeriod": d(args.leader_elect_retry_period),
                "ResourceLock": args.leader_elect_resource_lock,
                "ResourceName": args.leader_elect_resource_name,
                "ResourceNamespace": args.leader_elect_resource_namespace,
            },
            "Controllers": args.controllers,
            "Debugging": {
                "EnableProfiling": args.delegation.profiling,
                "EnableContentionProfiling": false,
            },
            "LeaderMigrationEnabled": false,
        },
        "KubeCloudShared": {
            "ClusterName": ignored("cluster-name").unwrap_or_else(|| "kubernetes".into()),
            "ClusterCIDR": nodes.cluster_cidr.clone().unwrap_or_default(),
            "AllocateNodeCIDRs": nodes.allocate_node_cidrs.unwrap_or(false),
            "NodeMonitorPeriod": d(nodes.node_monitor_period),
        },
        "DaemonSetController": {"ConcurrentDaemonSetSyncs": args.concurrent_daemonset_syncs},
        "DeploymentController": {"ConcurrentDeploymentSyncs": args.concurrent_deployment_syncs},
        "StatefulSetController": {"ConcurrentStatefulSetSyncs": args.concurrent_statefulset_syncs},
        "EndpointController": {
            "ConcurrentEndpointSyncs": args.concurrent_endpoint_syncs,
            "EndpointUpdatesBatchPeriod": d(args.endpoint_updates_batch_period),
        },
        "EndpointSliceController": {
            "ConcurrentServiceEndpointSyncs": args.concurrent_service_endpoint_syncs,
            "MaxEndpointsPerSlice": args.max_endpoints_per_slice,
            "EndpointUpdatesBatchPeriod": d(args.endpointslice_updates_batch_period),
        },
        "EndpointSliceMirroringController": {
            "MirroringConcurrentServiceEndpointSyncs": args.mirroring_concurrent_service_endpoint_syncs,
            "MirroringMaxEndpointsPerSubset": args.mirroring_max_endpoints_per_subset,
            "MirroringEndpointUpdatesBatchPeriod": d(args.mirroring_endpointslice_updates_batch_period),
        },
        "EphemeralVolumeController": {"ConcurrentEphemeralVolumeSyncs": args.concurrent_ephemeralvolume_syncs},
        "GarbageCollectorController": {
            "EnableGarbageCollector": args.enable_garbage_collector,
            "ConcurrentGCSyncs": args.concurrent_gc_syncs,
        },
        "HPAController": {
            "ConcurrentHorizontalPodAutoscalerSyncs": hpa.concurrent_horizontal_pod_autoscaler_syncs,
            "HorizontalPodAutoscalerSyncPeriod": d(hpa.horizontal_pod_autoscaler_sync_period),
            "HorizontalPodAutoscalerDownscaleStabilizationWindow": d(hpa.horizontal_pod_autoscaler_downscale_stabilization),
            "HorizontalPodAutoscalerTolerance": hpa.horizontal_pod_autoscaler_tolerance,
            "HorizontalPodAutoscalerCPUInitializationPeriod": d(hpa.horizontal_pod_autoscaler_cpu_initialization_period),
            "HorizontalPodAutoscalerInitialReadinessDelay": d(hpa.horizontal_pod_autoscaler_initial_readiness_delay),
        },
        "JobController": {"ConcurrentJobSyncs": args.concurrent_job_syncs},
        "CronJobController": {"ConcurrentCronJobSyncs": args.concurrent_cron_job_syncs},
        "LegacySATokenCleaner": {"CleanUpPeriod": d(args.legacy_service_account_token_clean_up_period)},
        "NamespaceController": {
            "NamespaceSyncPeriod": d(args.namespace_sync_period),
            "ConcurrentNamespaceSyncs": args.concurrent_namespace_syncs,
        },
        "NodeIPAMController": {
            "ServiceCIDR": args.service_cluster_ip_range.clone().unwrap_or_default(),
            "NodeCIDRMaskSize": nodes.node_cidr_mask_size,
            "NodeCIDRMaskSizeIPv4": nodes.node_cidr_mask_size_ipv4,
            "NodeCIDRMaskSizeIPv6": nodes.node_cidr_mask_size_ipv6,
        },
        "NodeLifecycleController": {
            "NodeEvictionRate": nodes.node_eviction_rate,
            "SecondaryNodeEvictionRate": nodes.secondary_node_eviction_rate,
            "NodeStartupGracePeriod": d(nodes.node_startup_grace_period),
            "NodeMonitorGracePeriod": d(nodes.node_monitor_grace_period),
            "LargeClusterSizeThreshold": nodes.large_cluster_size_threshold,
            "UnhealthyZoneThreshold": nodes.unhealthy_zone_threshold,
        },
        "PersistentVolumeBinderController": {
            "PVClaimBinderSyncPeriod": d(args.pvclaimbinder_sync_period),
            "EnableDynamicProvisioning": args.enable_dynamic_provisioning,
        },
        "PodGCController": {"TerminatedPodGCThreshold": args.terminated_pod_gc_threshold},
        "ReplicaSetController": {"ConcurrentRSSyncs": args.concurrent_replicaset_syncs},
        "ReplicationController": {"ConcurrentRCSyncs": args.concurrent_rc_syncs},
        "ResourceQuotaController": {
            "ResourceQuotaSyncPeriod": d(args.resource_quota_sync_period),
            "ConcurrentResourceQuotaSyncs": args.concurrent_resourcequota_syncs,
        },
        "SAController": {
            "ServiceAccountKeyFile": args.service_account_private_key_file.as_ref().map(|p| p.display().to_string()).unwrap_or_default(),
            "ConcurrentSATokenSyncs": args.concurrent_serviceaccount_token_syncs,
            "RootCAFile": args.root_ca_file.as_ref().map(|p| p.display().to_string()).unwrap_or_default(),
        },
        "TTLAfterFinishedController": {"ConcurrentTTLSyncs": args.concurrent_ttl_after_finished_syncs},
    }})
}
