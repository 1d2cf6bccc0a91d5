//! The strategy of each kind: the catalog's kinds by their strategy files, custom resources by
//! the CRD that defines them, any other resource by the generic strategy; and the selectable
//! fields the watch cache keeps, by storage prefix.

use std::sync::OnceLock;

use parking_lot::Mutex;
use rkcm_apimachinery::catalog::{self, ResourceInfo};
use serde_json::Value;

use crate::generic::GenericStrategy;
use crate::Strategy;
use crate::*;

/// Builds the strategy of a catalog entry: the kind's strategy, checked to decode as its
/// k8s-openapi type.
fn build(info: &'static ResourceInfo) -> Box<dyn Strategy> {
    use k8s_openapi::api::{
        admissionregistration, apps, autoscaling, batch, certificates, coordination, core,
        discovery, events as events_api, policy, rbac, scheduling,
    };
    use typecheck::{decode_check, TypeChecked};
    let (strategy, check): (Box<dyn Strategy>, typecheck::DecodeCheck) =
        match (info.group, info.kind) {
            ("", "Pod") => (
                Box::new(pods::PodStrategy::new(info)),
                decode_check::<core::v1::Pod>,
            ),
            ("", "ReplicationController") => (
                Box::new(replicationcontrollers::strategy(info)),
                decode_check::<core::v1::ReplicationController>,
            ),
            ("apps", "Deployment") => (
                Box::new(deployments::strategy(info)),
                decode_check::<apps::v1::Deployment>,
            ),
            ("apps", "ReplicaSet") => (
                Box::new(replicasets::strategy(info)),
                decode_check::<apps::v1::ReplicaSet>,
            ),
            ("apps", "StatefulSet") => (
                Box::new(statefulsets::strategy(info)),
                decode_check::<apps::v1::StatefulSet>,
            ),
            ("batch", "CronJob") => (
                Box::new(cronjobs::strategy(info)),
                decode_check::<batch::v1::CronJob>,
            ),
            ("batch", "Job") => (
                Box::new(jobs::JobStrategy::new(info)),
                decode_check::<batch::v1::Job>,
            ),
            ("apps", "DaemonSet") => (
                Box::new(daemonsets::DaemonSetStrategy::new(info)),
                decode_check::<apps::v1::DaemonSet>,
            ),
            ("", "Namespace") => (
                Box::new(namespaces::NamespaceStrategy::new(info)),
                decode_check::<core::v1::Namespace>,
            ),
            ("", "Node") => (
                Box::new(nodes::NodeStrategy::new(info)),
                decode_check::<core::v1::Node>,
            ),
            ("", "Event") => (
                Box::new(events::EventStrategy::new(info)),
                decode_check::<core::v1::Event>,
            ),
            ("events.k8s.io", "Event") => (
                Box::new(events::EventStrategy::new(info)),
                decode_check::<events_api::v1::Event>,
            ),
            ("", "Service") => (
                Box::new(services::strategy(info)),
                decode_check::<core::v1::Service>,
            ),
            ("", "ConfigMap") => (
                Box::new(configmaps::strategy(info)),
                decode_check::<core::v1::ConfigMap>,
            ),
            ("apps", "ControllerRevision") => (
                Box::new(controllerrevisions::strategy(info)),
                decode_check::<apps::v1::ControllerRevision>,
            ),
            ("coordination.k8s.io", "Lease") => (
                Box::new(leases::strategy(info)),
                decode_check::<coordination::v1::Lease>,
            ),
            ("networking.k8s.io", "ServiceCIDR") => (
                Box::new(servicecidrs::strategy(info)),
                decode_check::<k8s_openapi::api::networking::v1::ServiceCIDR>,
            ),
            ("networking.k8s.io", "IPAddress") => (
                Box::new(ipaddresses::strategy(info)),
                decode_check::<k8s_openapi::api::networking::v1::IPAddress>,
            ),
            ("", "Secret") => (
                Box::new(secrets::strategy(info)),
                decode_check::<core::v1::Secret>,
            ),
            ("", "LimitRange") => (
                Box::new(limitranges::strategy(info)),
                decode_check::<core::v1::LimitRange>,
            ),
            ("", "ResourceQuota") => (
                Box::new(resourcequotas::strategy(info)),
                decode_check::<core::v1::ResourceQuota>,
            ),
            ("", "PersistentVolume") => (
                Box::new(persistentvolumes::strategy(info)),
                decode_check::<core::v1::PersistentVolume>,
            ),
            ("", "PersistentVolumeClaim") => (
                Box::new(persistentvolumeclaims::strategy(info)),
                decode_check::<core::v1::PersistentVolumeClaim>,
            ),
            ("", "PodTemplate") => (
                Box::new(podtemplates::strategy(info)),
                decode_check::<core::v1::PodTemplate>,
            ),
            ("", "ServiceAccount") => (
                Box::new(serviceaccounts::strategy(info)),
                decode_check::<core::v1::ServiceAccount>,
            ),
            ("", "Endpoints") => (
                Box::new(endpoints::strategy(info)),
                decode_check::<core::v1::Endpoints>,
            ),
            ("discovery.k8s.io", "EndpointSlice") => (
                Box::new(endpointslices::strategy(info)),
                decode_check::<discovery::v1::EndpointSlice>,
            ),
            ("policy", "PodDisruptionBudget") => (
                Box::new(poddisruptionbudgets::strategy(info)),
                decode_check::<policy::v1::PodDisruptionBudget>,
            ),
            ("autoscaling", "HorizontalPodAutoscaler") => (
                Box::new(horizontalpodautoscalers::strategy(info)),
                decode_check::<autoscaling::v2::HorizontalPodAutoscaler>,
            ),
            ("rbac.authorization.k8s.io", "Role") => (
                Box::new(self::rbac::roles(info)),
                decode_check::<rbac::v1::Role>,
            ),
            ("rbac.authorization.k8s.io", "ClusterRole") => (
                Box::new(self::rbac::cluster_roles(info)),
                decode_check::<rbac::v1::ClusterRole>,
            ),
            ("rbac.authorization.k8s.io", "RoleBinding") => (
                Box::new(self::rbac::role_bindings(info)),
                decode_check::<rbac::v1::RoleBinding>,
            ),
            ("rbac.authorization.k8s.io", "ClusterRoleBinding") => (
                Box::new(self::rbac::cluster_role_bindings(info)),
                decode_check::<rbac::v1::ClusterRoleBinding>,
            ),
            ("apiregistration.k8s.io", "APIService") => (
                Box::new(apiservices::strategy(info)),
                decode_check::<
                    k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService,
                >,
            ),
            ("scheduling.k8s.io", "PriorityClass") => (
                Box::new(priorityclasses::strategy(info)),
                decode_check::<scheduling::v1::PriorityClass>,
            ),
            ("apiextensions.k8s.io", "CustomResourceDefinition") => (
                Box::new(customresourcedefinitions::CustomResourceDefinitionStrategy::new(info)),
                decode_check::<
                    k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
                >,
            ),
            ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration") => (
                Box::new(webhookconfigurations::validating(info)),
                decode_check::<admissionregistration::v1::ValidatingWebhookConfiguration>,
            ),
            ("admissionregistration.k8s.io", "MutatingWebhookConfiguration") => (
                Box::new(webhookconfigurations::mutating(info)),
                decode_check::<admissionregistration::v1::MutatingWebhookConfiguration>,
            ),
            ("certificates.k8s.io", "CertificateSigningRequest") => (
                Box::new(certificatesigningrequests::strategy(info)),
                decode_check::<certificates::v1::CertificateSigningRequest>,
            ),
            _ => match table::lookup(info) {
                Some((strategy, check)) => (Box::new(strategy), check),
                None => return Box::new(GenericStrategy::new(info)),
            },
        };
    Box::new(TypeChecked::new(strategy, check))
}

type Table = Vec<(&'static ResourceInfo, Box<dyn Strategy>)>;

fn catalog_table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| {
        catalog::all()
            .iter()
            .map(|info| (info, build(info)))
            .collect()
    })
}

/// The strategy of the catalog resource stored under `prefix` (`/<group or core>/<plural>/`).
pub fn by_storage_prefix(prefix: &str) -> Option<&'static dyn Strategy> {
    let mut parts = prefix.trim_matches('/').split('/');
    let (group, plural) = (parts.next()?, parts.next()?);
    let group = if group == "core" { "" } else { group };
    catalog_table()
        .iter()
        .find(|(i, _)| i.group == group && i.plural == plural)
        .map(|(_, s)| s.as_ref())
}

/// The strategy of `info`. Every catalog entry has one; an entry that is not in the catalog
/// gets the generic strategy (built once per distinct entry).
/// A strategy's selectable fields, as the watch cache keeps them.
struct StrategyFields(&'static dyn Strategy);

impl rkcm_storage::watch_cache::SelectableFields for StrategyFields {
    fn selectable_fields(&self) -> &'static [&'static str] {
        self.0.selectable_fields()
    }

    fn field_value(&self, obj: &Value, field: &str) -> Option<String> {
        self.0.field_value(obj, field)
    }
}

/// The selectable fields of the catalog's kinds by storage prefix, for the watch cache.
pub fn selectable_fields() -> rkcm_storage::watch_cache::FieldsLookup {
    std::sync::Arc::new(|prefix| {
        by_storage_prefix(prefix).map(|s| {
            std::sync::Arc::new(StrategyFields(s))
                as std::sync::Arc<dyn rkcm_storage::watch_cache::SelectableFields>
        })
    })
}

pub fn strategy(info: &ResourceInfo) -> &'static dyn Strategy {
    let table = catalog_table();
    // Callers pass catalog entries, so comparing addresses almost always suffices.
    if let Some((_, s)) = table
        .iter()
        .find(|(i, _)| std::ptr::eq(*i, info))
        .or_else(|| table.iter().find(|(i, _)| *i == info))
    {
        return s.as_ref();
    }
    if let Some(custom) = rkcm_apimachinery::custom_resources::interned_entry(info) {
        return crate::crd::strategy::of(custom);
    }
    static EXTRA: Mutex<Vec<&'static GenericStrategy>> = Mutex::new(Vec::new());
    let mut extra = EXTRA.lock();
    if let Some(s) = extra.iter().find(|s| s.resource() == info) {
        return *s;
    }
    // Only entries outside the catalog get here (tests, or a catalog built elsewhere); each is
    // leaked once and then reused.
    let info: &'static ResourceInfo = Box::leak(Box::new(*info));
    let s: &'static GenericStrategy = Box::leak(Box::new(GenericStrategy::new(info)));
    extra.push(s);
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::priorityclasses::system_priority_classes;
    use serde_json::json;

    #[test]
    fn every_catalog_entry_has_a_strategy_for_itself() {
        for info in catalog::all() {
            assert_eq!(strategy(info).resource(), info);
        }
    }

    /// Runs `obj` through create, a no-op update and a status update the way the server
    /// does, and decodes the stored result as `K`.
    fn round_trip<K: serde::de::DeserializeOwned>(
        info: &'static ResourceInfo,
        mut obj: Value,
    ) -> K {
        let s = strategy(info);
        s.default(&mut obj);
        s.prepare_for_create(&mut obj);
        obj["metadata"]["uid"] = json!("u1");
        obj["metadata"]["creationTimestamp"] = json!("2024-01-01T00:00:00Z");
        s.complete_create(&mut obj);
        let errs = s.validate_create(&obj);
        assert!(errs.is_empty(), "{}: {errs:?}", info.kind);
        let mut again = obj.clone();
        s.default(&mut again);
        s.prepare_for_update(&mut again, &obj);
        assert_eq!(again, obj, "{}: a no-op update changes nothing", info.kind);
        assert!(s.validate_update(&again, &obj).is_empty(), "{}", info.kind);
        let mut status = obj.clone();
        s.prepare_for_status_update(&mut status, &obj);
        assert!(s.validate_update(&status, &obj).is_empty(), "{}", info.kind);
        serde_json::from_value(obj).expect("stored objects decode")
    }

    #[test]
    fn objects_sent_by_typed_clients_pass_create_update_and_status_update() {
        use k8s_openapi::api::{apps::v1 as apps, core::v1 as core};
        let template = json!({
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "web", "image": "nginx:1.25",
                "ports": [{"containerPort": 80}],
                "resources": {"requests": {"cpu": "100m"}},
                "readinessProbe": {"httpGet": {"port": 80}}}]}
        });
        let kind =
            |api_version: &str, kind: &str| catalog::by_kind(api_version, kind).expect("served");
        let d: apps::Deployment = round_trip(
            kind("apps/v1", "Deployment"),
            json!({
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "web", "namespace": "default", "creationTimestamp": null},
                "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}}, "template": template.clone(), "strategy": {}},
                "status": {}
            }),
        );
        assert_eq!(d.metadata.generation, Some(1));
        let rs: apps::ReplicaSet = round_trip(
            kind("apps/v1", "ReplicaSet"),
            json!({
                "apiVersion": "apps/v1", "kind": "ReplicaSet",
                "metadata": {"name": "web-5d8f7", "namespace": "default",
                    "labels": {"app": "web", "pod-template-hash": "5d8f7"},
                    "annotations": {"deployment.kubernetes.io/revision": "1"},
                    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "d1",
                        "controller": true, "blockOwnerDeletion": true}]},
                "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web", "pod-template-hash": "5d8f7"}},
                    "template": {"metadata": {"labels": {"app": "web", "pod-template-hash": "5d8f7"}}, "spec": template["spec"].clone()}}
            }),
        );
        assert_eq!(rs.spec.as_ref().and_then(|s| s.replicas), Some(3));
        let pod: core::Pod = round_trip(
            kind("v1", "Pod"),
            json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "web-5d8f7-abcde", "generateName": "web-5d8f7-", "namespace": "default",
                    "labels": {"app": "web"},
                    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d8f7", "uid": "r1",
                        "controller": true, "blockOwnerDeletion": true}]},
                "spec": template["spec"].clone()
            }),
        );
        assert_eq!(
            pod.status.and_then(|s| s.qos_class).as_deref(),
            Some("Burstable")
        );
        let _: core::ReplicationController = round_trip(
            kind("v1", "ReplicationController"),
            json!({
                "metadata": {"name": "rc", "namespace": "default"}, "spec": {"template": template.clone()}
            }),
        );
        let ns: core::Namespace = round_trip(
            kind("v1", "Namespace"),
            json!({"metadata": {"name": "team-a"}}),
        );
        assert_eq!(
            ns.spec.and_then(|s| s.finalizers),
            Some(vec!["kubernetes".to_string()])
        );
        let _: core::Node = round_trip(
            kind("v1", "Node"),
            json!({"metadata": {"name": "node-1"},
            "status": {"capacity": {"cpu": 4, "memory": "8Gi", "pods": 110}}}),
        );
        let _: core::Event = round_trip(
            kind("v1", "Event"),
            json!({
                "metadata": {"name": "web.1", "namespace": "default"},
                "involvedObject": {"kind": "Deployment", "namespace": "default", "name": "web"},
                "reason": "ScalingReplicaSet", "message": "Scaled up", "type": "Normal", "count": 1,
                "source": {"component": "deployment-controller"}
            }),
        );
        let _: core::Service = round_trip(
            kind("v1", "Service"),
            json!({
                "metadata": {"name": "web", "namespace": "default"},
                "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}
            }),
        );
        let _: core::ConfigMap = round_trip(
            kind("v1", "ConfigMap"),
            json!({
                "metadata": {"name": "cfg", "namespace": "default"}, "data": {"a": "b"}
            }),
        );
        let _: apps::ControllerRevision = round_trip(
            kind("apps/v1", "ControllerRevision"),
            json!({
                "metadata": {"name": "rev-1", "namespace": "default"}, "revision": 1, "data": {"spec": {}}
            }),
        );
        let secret: core::Secret = round_trip(
            kind("v1", "Secret"),
            json!({
                "metadata": {"name": "creds", "namespace": "default"},
                "stringData": {"username": "admin"}, "type": "kubernetes.io/basic-auth"
            }),
        );
        assert_eq!(
            secret.data.and_then(|d| d.get("username").cloned()),
            Some(k8s_openapi::ByteString(b"admin".to_vec()))
        );
        let _: core::LimitRange = round_trip(
            kind("v1", "LimitRange"),
            json!({
                "metadata": {"name": "limits", "namespace": "default"},
                "spec": {"limits": [{"type": "Container", "max": {"cpu": "1"}, "min": {"cpu": "100m"}}]}
            }),
        );
        let _: core::ResourceQuota = round_trip(
            kind("v1", "ResourceQuota"),
            json!({
                "metadata": {"name": "quota", "namespace": "default"},
                "spec": {"hard": {"pods": 10, "requests.cpu": "4"}}
            }),
        );
        let pv: core::PersistentVolume = round_trip(
            kind("v1", "PersistentVolume"),
            json!({
                "metadata": {"name": "pv-1"},
                "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                    "hostPath": {"path": "/data"}}
            }),
        );
        assert_eq!(pv.status.and_then(|s| s.phase).as_deref(), Some("Pending"));
        let pvc: core::PersistentVolumeClaim = round_trip(
            kind("v1", "PersistentVolumeClaim"),
            json!({
                "metadata": {"name": "data", "namespace": "default"},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
            }),
        );
        assert_eq!(
            pvc.spec.and_then(|s| s.volume_mode).as_deref(),
            Some("Filesystem")
        );
        let _: core::PodTemplate = round_trip(
            kind("v1", "PodTemplate"),
            json!({
                "metadata": {"name": "tmpl", "namespace": "default"}, "template": template.clone()
            }),
        );
        let _: core::Endpoints = round_trip(
            kind("v1", "Endpoints"),
            json!({
                "metadata": {"name": "web", "namespace": "default"},
                "subsets": [{"addresses": [{"ip": "10.0.0.5"}], "ports": [{"port": 80}]}]
            }),
        );
        let _: k8s_openapi::api::coordination::v1::Lease = round_trip(
            kind("coordination.k8s.io/v1", "Lease"),
            json!({
                "metadata": {"name": "kube-controller-manager", "namespace": "kube-system"},
                "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}
            }),
        );
    }

    #[test]
    fn batch_and_stateful_workloads_pass_create_update_and_status_update() {
        use k8s_openapi::api::{apps::v1 as apps, batch::v1 as batch};
        let kind =
            |api_version: &str, kind: &str| catalog::by_kind(api_version, kind).expect("served");
        let pod = json!({"metadata": {"labels": {"app": "db"}},
            "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}});
        let sts: apps::StatefulSet = round_trip(
            kind("apps/v1", "StatefulSet"),
            json!({"metadata": {"name": "db", "namespace": "default"},
                "spec": {"serviceName": "db", "selector": {"matchLabels": {"app": "db"}}, "template": pod.clone(),
                    "volumeClaimTemplates": [{"metadata": {"name": "data"},
                        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}}),
        );
        assert_eq!(sts.status.and_then(|s| s.available_replicas), Some(0));
        let ds: apps::DaemonSet = round_trip(
            kind("apps/v1", "DaemonSet"),
            json!({"metadata": {"name": "agent", "namespace": "default"},
                "spec": {"selector": {"matchLabels": {"app": "db"}}, "template": pod.clone()}}),
        );
        assert_eq!(
            ds.metadata
                .annotations
                .and_then(|a| a.get("deprecated.daemonset.template.generation").cloned())
                .as_deref(),
            Some("1")
        );
        let mut job_pod = pod.clone();
        job_pod["spec"]["restartPolicy"] = json!("Never");
        let job: batch::Job = round_trip(
            kind("batch/v1", "Job"),
            json!({"metadata": {"name": "pi", "namespace": "default"}, "spec": {"template": job_pod.clone()}}),
        );
        assert_eq!(
            job.spec
                .and_then(|s| s.selector)
                .and_then(|s| s.match_labels),
            Some(std::collections::BTreeMap::from([(
                "batch.kubernetes.io/controller-uid".to_string(),
                "u1".to_string()
            )]))
        );
        let cron: batch::CronJob = round_trip(
            kind("batch/v1", "CronJob"),
            json!({"metadata": {"name": "tick", "namespace": "default"},
                "spec": {"schedule": "@hourly", "jobTemplate": {"spec": {"template": job_pod}}}}),
        );
        assert_eq!(
            cron.spec.and_then(|s| s.concurrency_policy).as_deref(),
            Some("Allow")
        );
    }

    #[test]
    fn policy_autoscaling_rbac_scheduling_and_certificates_objects_round_trip() {
        use k8s_openapi::api::{autoscaling, certificates, policy, rbac, scheduling};
        let kind =
            |api_version: &str, kind: &str| catalog::by_kind(api_version, kind).expect("served");
        let pdb: policy::v1::PodDisruptionBudget = round_trip(
            kind("policy/v1", "PodDisruptionBudget"),
            json!({"metadata": {"name": "web", "namespace": "default"},
                "spec": {"maxUnavailable": "25%", "selector": {"matchLabels": {"app": "web"}}}}),
        );
        assert_eq!(pdb.status.map(|s| s.expected_pods), Some(0));
        let hpa: autoscaling::v2::HorizontalPodAutoscaler = round_trip(
            kind("autoscaling/v2", "HorizontalPodAutoscaler"),
            json!({"metadata": {"name": "web", "namespace": "default"},
                "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                    "maxReplicas": 5, "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}}}),
        );
        assert_eq!(hpa.spec.as_ref().and_then(|s| s.min_replicas), Some(1));
        let _: rbac::v1::ClusterRole = round_trip(
            kind("rbac.authorization.k8s.io/v1", "ClusterRole"),
            json!({"metadata": {"name": "system:controller:job"},
                "rules": [{"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["get", "list"]}]}),
        );
        let _: rbac::v1::RoleBinding = round_trip(
            kind("rbac.authorization.k8s.io/v1", "RoleBinding"),
            json!({"metadata": {"name": "b", "namespace": "default"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
                "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": "default"}]}),
        );
        let pc: scheduling::v1::PriorityClass = round_trip(
            kind("scheduling.k8s.io/v1", "PriorityClass"),
            json!({"metadata": {"name": "high"}, "value": 1000}),
        );
        assert_eq!(
            pc.preemption_policy.as_deref(),
            Some("PreemptLowerPriority")
        );
        for sys in system_priority_classes() {
            let _: scheduling::v1::PriorityClass =
                round_trip(kind("scheduling.k8s.io/v1", "PriorityClass"), sys);
        }
        let key = rcgen::KeyPair::generate().expect("key");
        let request = rcgen::CertificateParams::new(vec!["node".to_string()])
            .expect("params")
            .serialize_request(&key)
            .expect("csr")
            .pem()
            .expect("pem");
        use base64::Engine as _;
        let _: certificates::v1::CertificateSigningRequest = round_trip(
            kind("certificates.k8s.io/v1", "CertificateSigningRequest"),
            json!({"metadata": {"name": "node-csr"},
                "spec": {"request": base64::engine::general_purpose::STANDARD.encode(request),
                    "signerName": "kubernetes.io/kube-apiserver-client", "usages": ["client auth"]}}),
        );
    }

    #[test]
    fn invalid_values_render_as_kube_does() {
        let e = FieldError::invalid(
            "spec.replicas",
            &json!(-1),
            "must be greater than or equal to 0",
        );
        assert_eq!(
            e.message_with_field(),
            "spec.replicas: Invalid value: -1: must be greater than or equal to 0"
        );
        assert_eq!(e.kind.reason(), "FieldValueInvalid");
        let e = FieldError::required("metadata.name", "name or generateName is required");
        assert_eq!(
            e.message,
            "Required value: name or generateName is required"
        );
        let e = FieldError::not_supported(
            "spec.restartPolicy",
            &json!("Sometimes"),
            &["Always", "Never"],
        );
        assert_eq!(
            e.message,
            "Unsupported value: \"Sometimes\": supported values: \"Always\", \"Never\""
        );
    }

    #[test]
    fn invalid_message_names_the_qualified_kind_and_brackets_several_errors() {
        let info = catalog::by_kind("apps/v1", "Deployment").expect("served");
        let one = [FieldError::required("spec.selector", "")];
        assert_eq!(
            invalid_message(info, "web", &one),
            "Deployment.apps \"web\" is invalid: spec.selector: Required value"
        );
        let two = [
            FieldError::required("spec.selector", ""),
            FieldError::invalid(
                "spec.replicas",
                &json!(-1),
                "must be greater than or equal to 0",
            ),
        ];
        assert!(invalid_message(info, "web", &two).ends_with(
            "is invalid: [spec.selector: Required value, spec.replicas: Invalid value: -1: must be greater than or equal to 0]"
        ));
    }
}
