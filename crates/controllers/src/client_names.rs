//! The name each controller's client goes by: with `--use-service-account-credentials` it is the
//! ServiceAccount `kube-system/<name>` the controller runs as, bound by kube's bootstrap policy
//! to the ClusterRole `system:controller:<name>`. From the `ClientOrDie("…")` calls of
//! `cmd/kube-controller-manager/app/*.go` (kube 1.33).

use crate::registry::*;

/// The ServiceAccount namespace of the controllers' identities (`metav1.NamespaceSystem`).
pub const NAMESPACE: &str = "kube-system";

/// The client name of the controller with canonical name `controller`; `None` for a controller
/// that kube runs on the manager's own (root) client, and for names kube does not know.
///
/// Only the service-account token controller uses the root client: it mints the tokens the
/// others would need (`startSATokenControllerInit` takes `rootClientBuilder`).
pub fn client_name(controller: &str) -> Option<&'static str> {
    Some(match controller {
        SERVICEACCOUNT_TOKEN => return None,
        ENDPOINTS => "endpoint-controller",
        ENDPOINTSLICE => "endpointslice-controller",
        ENDPOINTSLICE_MIRRORING => "endpointslicemirroring-controller",
        REPLICATIONCONTROLLER => "replication-controller",
        PODGC => "pod-garbage-collector",
        RESOURCEQUOTA => "resourcequota-controller",
        NAMESPACE_CONTROLLER => "namespace-controller",
        SERVICEACCOUNT => "service-account-controller",
        GARBAGECOLLECTOR => "generic-garbage-collector",
        DAEMONSET => "daemon-set-controller",
        JOB => "job-controller",
        DEPLOYMENT => "deployment-controller",
        REPLICASET => "replicaset-controller",
        HORIZONTAL_POD_AUTOSCALER => "horizontal-pod-autoscaler",
        DISRUPTION => "disruption-controller",
        STATEFULSET => "statefulset-controller",
        CRONJOB => "cronjob-controller",
        // The three CSR controllers share one identity.
        CSR_SIGNING | CSR_APPROVING | CSR_CLEANER => "certificate-controller",
        TTL => "ttl-controller",
        BOOTSTRAP_SIGNER => "bootstrap-signer",
        TOKEN_CLEANER => "token-cleaner",
        // "taint-manager uses existing cluster role from node-controller".
        NODE_IPAM | NODE_LIFECYCLE | TAINT_EVICTION => "node-controller",
        PERSISTENTVOLUME_BINDER => "persistent-volume-binder",
        PERSISTENTVOLUME_EXPANDER => "expand-controller",
        CLUSTERROLE_AGGREGATION => "clusterrole-aggregation-controller",
        PVC_PROTECTION => "pvc-protection-controller",
        PV_PROTECTION => "pv-protection-controller",
        TTL_AFTER_FINISHED => "ttl-after-finished-controller",
        ROOT_CA_PUBLISHER => "root-ca-cert-publisher",
        EPHEMERAL_VOLUME => "ephemeral-volume-controller",
        LEGACY_SA_TOKEN_CLEANER => "legacy-service-account-token-cleaner",
        "persistentvolume-attach-detach-controller" => "attachdetach-controller",
        "service-lb-controller" => "service-controller",
        "node-route-controller" => "route-controller",
        "volumeattributesclass-protection-controller" => {
            "volumeattributesclass-protection-controller"
        }
        "resourceclaim-controller" => "resource-claim-controller",
        "device-taint-eviction-controller" => "device-taint-eviction-controller",
        "validatingadmissionpolicy-status-controller" => {
            "validatingadmissionpolicy-status-controller"
        }
        "service-cidr-controller" => "service-cidrs-controller",
        "selinux-warning-controller" => "selinux-warning-controller",
        "storageversion-garbage-collector-controller" => "storage-version-garbage-collector",
        "storage-version-migrator-controller" => "storage-version-migrator-controller",
        "kube-apiserver-serving-clustertrustbundle-publisher-controller" => {
            "kube-apiserver-serving-clustertrustbundle-publisher"
        }
        "cloud-node-lifecycle-controller" => "cloud-node-lifecycle-controller",
        _ => return None,
    })
}

/// The client name whose identity writes the events a recorder with `component` (the event
/// source a controller records under) produces: kube's controllers send their events through
/// their own clientset (`StartRecordingToSink(&v1core.EventSinkImpl{Interface:
/// kubeClient.CoreV1().Events("")})`). `None` for a component no controller records under.
pub fn event_client_name(component: &str) -> Option<&'static str> {
    Some(match component {
        "replicaset-controller" => "replicaset-controller",
        "replication-controller" => "replication-controller",
        "statefulset-controller" => "statefulset-controller",
        "deployment-controller" => "deployment-controller",
        "job-controller" => "job-controller",
        "cronjob-controller" => "cronjob-controller",
        "daemonset-controller" => "daemon-set-controller",
        "horizontal-pod-autoscaler" => "horizontal-pod-autoscaler",
        // The disruption controller records as "controllermanager".
        "controllermanager" => "disruption-controller",
        "endpoint-controller" => "endpoint-controller",
        "endpoint-slice-controller" => "endpointslice-controller",
        "endpoint-slice-mirroring-controller" => "endpointslicemirroring-controller",
        "node-controller" | "taint-eviction-controller" | "cidrAllocator" => "node-controller",
        "persistentvolume-controller" => "persistent-volume-binder",
        "ephemeral_volume" => "ephemeral-volume-controller",
        "volume_expand" => "expand-controller",
        "service-cidr-controller" => "service-cidrs-controller",
        _ => return None,
    })
}

// `registry::NAMESPACE` is the namespace controller; this module's `NAMESPACE` is kube-system.
use crate::registry::NAMESPACE as NAMESPACE_CONTROLLER;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_controller_rkcm_runs_has_kubes_client_name() {
        let root: Vec<_> = KNOWN
            .iter()
            .filter(|c| client_name(c.name).is_none())
            .map(|c| c.name)
            .collect();
        assert_eq!(root, [SERVICEACCOUNT_TOKEN]);
        assert_eq!(client_name(REPLICASET), Some("replicaset-controller"));
        assert_eq!(
            client_name(GARBAGECOLLECTOR),
            Some("generic-garbage-collector")
        );
        assert_eq!(client_name(TAINT_EVICTION), Some("node-controller"));
        assert_eq!(client_name(CSR_CLEANER), Some("certificate-controller"));
        assert_eq!(client_name("no-such-controller"), None);
    }

    /// The names kube's bootstrap policy binds a role to, as `(namespace, service account)`.
    fn bound_service_accounts() -> Vec<(String, String)> {
        let policy = rkcm_apiserver::auth::bootstrap_policy::policy();
        policy
            .cluster_role_bindings
            .iter()
            .chain(&policy.role_bindings)
            .flat_map(|b| b["subjects"].as_array().cloned().unwrap_or_default())
            .filter(|s| s["kind"] == "ServiceAccount")
            .map(|s| {
                (
                    s["namespace"].as_str().unwrap_or_default().to_string(),
                    s["name"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect()
    }

    // Each implemented controller's identity has a role in kube's bootstrap policy: otherwise it
    // could do nothing under --use-service-account-credentials.
    #[test]
    fn the_bootstrap_policy_binds_a_role_to_every_implemented_controllers_identity() {
        let bound = bound_service_accounts();
        for c in KNOWN.iter().filter(|c| c.implemented) {
            let Some(name) = client_name(c.name) else {
                continue;
            };
            assert!(
                bound.contains(&(NAMESPACE.to_string(), name.to_string())),
                "{} runs as {name}, which has no binding",
                c.name
            );
        }
    }

    #[test]
    fn events_go_out_under_the_identity_of_the_controller_that_records_them() {
        let bound = bound_service_accounts();
        for component in [
            "replicaset-controller",
            "replication-controller",
            "statefulset-controller",
            "deployment-controller",
            "job-controller",
            "cronjob-controller",
            crate::daemon::EVENT_SOURCE,
            crate::podautoscaler::EVENT_SOURCE,
            crate::disruption::EVENT_SOURCE,
            crate::endpoint::EVENT_SOURCE,
            crate::endpointslice::EVENT_SOURCE,
            crate::endpointslicemirroring::EVENT_SOURCE,
            "node-controller",
            crate::tainteviction::CONTROLLER_NAME,
            "cidrAllocator",
            crate::volume::persistentvolume::EVENT_SOURCE,
            crate::volume::ephemeral::EVENT_SOURCE,
            crate::volume::expand::EVENT_SOURCE,
            crate::servicecidrs::CONTROLLER_NAME,
        ] {
            let name = event_client_name(component).unwrap_or_else(|| panic!("{component}"));
            assert!(
                bound.contains(&(NAMESPACE.to_string(), name.to_string())),
                "{component}"
            );
        }
        assert_eq!(event_client_name("kubelet"), None);
    }
}
