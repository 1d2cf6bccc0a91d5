//! Cluster IPs through IPAddress objects: every allocated address has its IPAddress, a second
//! ServiceCIDR adds range, and addresses an IPAddress names are never handed out again.

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::networking::v1::{IPAddress, ServiceCIDR};
use kube::api::{Api, DeleteParams, PostParams};
use rkcm_apiserver::testing;
use serde_json::{json, Value};

fn service(name: &str, spec: Value) -> Service {
    let mut spec = spec;
    let obj = spec.as_object_mut().expect("object");
    obj.entry("selector").or_insert(json!({"app": name}));
    obj.entry("ports").or_insert(json!([{"port": 80}]));
    serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec})).expect("service")
}

fn message(e: kube::Error) -> String {
    match e {
        kube::Error::Api(s) => {
            assert_eq!(s.code, 422, "{s:?}");
            s.message
        }
        other => panic!("expected an API error, got {other:?}"),
    }
}

fn parent(ip: &IPAddress) -> (String, String, String) {
    let r = &ip.spec.as_ref().expect("spec").parent_ref;
    (
        r.resource.clone(),
        r.namespace.clone().unwrap_or_default(),
        r.name.clone(),
    )
}

#[tokio::test]
async fn every_cluster_ip_has_its_ip_address_and_goes_with_its_service() {
    let server = testing::start().await;
    let client = server.client();
    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    let ips: Api<IPAddress> = Api::all(client.clone());

    // The kubernetes Service's address was recorded at start.
    let kubernetes = ips.get("10.96.0.1").await.expect("kubernetes' IPAddress");
    assert_eq!(
        parent(&kubernetes),
        ("services".into(), "default".into(), "kubernetes".into())
    );

    let web = services
        .create(&PostParams::default(), &service("web", json!({})))
        .await
        .expect("created");
    let ip = web.spec.and_then(|s| s.cluster_ip).expect("an address");
    let recorded = ips.get(&ip).await.expect("its IPAddress");
    assert_eq!(
        parent(&recorded),
        ("services".into(), "default".into(), "web".into())
    );
    let labels = recorded.metadata.labels.expect("labels");
    assert_eq!(
        labels["ipaddress.kubernetes.io/managed-by"],
        "ipallocator.k8s.io"
    );
    assert_eq!(labels["ipaddress.kubernetes.io/ip-family"], "IPv4");

    // An address an IPAddress names is taken, whoever created it.
    let held: IPAddress = serde_json::from_value(json!({
        "metadata": {"name": "10.96.0.50"},
        "spec": {"parentRef": {"group": "", "resource": "services", "namespace": "default", "name": "other"}},
    }))
    .expect("ipaddress");
    ips.create(&PostParams::default(), &held)
        .await
        .expect("created");
    let err = services
        .create(
            &PostParams::default(),
            &service("taken", json!({"clusterIP": "10.96.0.50"})),
        )
        .await
        .expect_err("taken");
    assert_eq!(
        message(err),
        "Service \"taken\" is invalid: spec.clusterIPs: Invalid value: [\"10.96.0.50\"]: failed to allocate IP 10.96.0.50: provided IP is already allocated"
    );
    // Once it is gone, the address is free again.
    ips.delete("10.96.0.50", &DeleteParams::default())
        .await
        .expect("deleted");
    services
        .create(
            &PostParams::default(),
            &service("taken", json!({"clusterIP": "10.96.0.50"})),
        )
        .await
        .expect("free again");
    assert_eq!(
        parent(&ips.get("10.96.0.50").await.expect("recorded")).2,
        "taken"
    );

    // A create that fails after allocating leaves no IPAddress behind.
    let again = services
        .create(
            &PostParams::default(),
            &service("taken", json!({"clusterIP": "10.96.0.70"})),
        )
        .await
        .expect_err("the name is taken");
    assert!(matches!(again, kube::Error::Api(s) if s.code == 409));
    assert!(ips.get_opt("10.96.0.70").await.expect("get").is_none());

    // An update that gives the address back removes its IPAddress.
    let external = json!({"spec": {"type": "ExternalName", "externalName": "example.com",
                                   "clusterIP": null, "clusterIPs": null}});
    services
        .patch(
            "taken",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&external),
        )
        .await
        .expect("now ExternalName");
    assert!(ips.get_opt("10.96.0.50").await.expect("get").is_none());

    // Deleting the Service releases its address and removes its IPAddress.
    services
        .delete("web", &DeleteParams::default())
        .await
        .expect("deleted");
    assert!(ips.get_opt(&ip).await.expect("get").is_none());
    server.stop().await;
}

#[tokio::test]
async fn a_second_service_cidr_adds_range_while_it_is_ready() {
    let server = testing::start().await;
    let client = server.client();
    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    let cidrs: Api<ServiceCIDR> = Api::all(client.clone());
    let ips: Api<IPAddress> = Api::all(client.clone());

    let outside = || service("outside", json!({"clusterIP": "10.200.0.10"}));
    let err = services
        .create(&PostParams::default(), &outside())
        .await
        .expect_err("no ServiceCIDR contains it");
    assert_eq!(
        message(err),
        "Service \"outside\" is invalid: spec.clusterIPs: Invalid value: [\"10.200.0.10\"]: failed to allocate IP 10.200.0.10: the provided network does not match the current range"
    );

    let extra: ServiceCIDR = serde_json::from_value(json!({
        "metadata": {"name": "extra"}, "spec": {"cidrs": ["10.200.0.0/24"]},
    }))
    .expect("servicecidr");
    cidrs
        .create(&PostParams::default(), &extra)
        .await
        .expect("created");
    services
        .create(&PostParams::default(), &outside())
        .await
        .expect("inside the new range");
    assert_eq!(
        parent(&ips.get("10.200.0.10").await.expect("recorded")).2,
        "outside"
    );

    // A ServiceCIDR that is not Ready takes no new allocation.
    let not_ready = json!({"status": {"conditions": [{
        "type": "Ready", "status": "False", "reason": "Terminating", "message": "",
        "lastTransitionTime": "2024-01-01T00:00:00Z",
    }]}});
    cidrs
        .patch_status(
            "extra",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&not_ready),
        )
        .await
        .expect("status written");
    let err = services
        .create(
            &PostParams::default(),
            &service("late", json!({"clusterIP": "10.200.0.11"})),
        )
        .await
        .expect_err("not ready");
    assert!(
        message(err).ends_with("the provided network does not match the current range"),
        "refused"
    );
    server.stop().await;
}

#[tokio::test]
async fn a_restart_repairs_missing_and_wrongly_referenced_ip_addresses() {
    use k8s_openapi::api::core::v1::Event;
    use rkcm_apiserver::Config;
    let dir = tempfile::tempdir().expect("tempdir");
    let config = || Config {
        data_dir: Some(dir.path().to_path_buf()),
        ..testing::config()
    };
    let server = testing::start_with(config()).await;
    let services: Api<Service> = Api::namespaced(server.client(), "default");
    let ips: Api<IPAddress> = Api::all(server.client());
    let web = services
        .create(&PostParams::default(), &service("web", json!({})))
        .await
        .expect("created");
    let ip = web.spec.and_then(|s| s.cluster_ip).expect("an address");
    // The Service loses its IPAddress; another one names it without being its address.
    ips.delete(&ip, &DeleteParams::default())
        .await
        .expect("deleted");
    let stray: IPAddress = serde_json::from_value(json!({
        "metadata": {"name": "10.96.0.60", "labels": {
            "ipaddress.kubernetes.io/managed-by": "ipallocator.k8s.io",
            "ipaddress.kubernetes.io/ip-family": "IPv4"}},
        "spec": {"parentRef": {"group": "", "resource": "services", "namespace": "default", "name": "web"}},
    }))
    .expect("ipaddress");
    ips.create(&PostParams::default(), &stray)
        .await
        .expect("created");
    server.stop().await;

    // The store's file is released once the old writer thread has gone; retry until it is.
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
    let server = loop {
        let attempt = tokio::spawn({
            let config = config();
            async move { testing::start_with(config).await }
        })
        .await;
        match attempt {
            Ok(server) => break server,
            Err(_) if tokio::time::Instant::now() < deadline => tokio::task::yield_now().await,
            Err(e) => panic!("server did not restart: {e}"),
        }
    };
    let ips: Api<IPAddress> = Api::all(server.client());
    assert_eq!(
        parent(&ips.get(&ip).await.expect("repaired")).2,
        "web",
        "the Service's IPAddress is back"
    );
    assert!(ips.get_opt("10.96.0.60").await.expect("get").is_none());
    let events: Api<Event> = Api::namespaced(server.client(), "default");
    let seen: Vec<(String, String)> = events
        .list(&Default::default())
        .await
        .expect("events")
        .items
        .into_iter()
        .filter(|e| {
            e.source.as_ref().and_then(|s| s.component.as_deref())
                == Some("ipallocator-repair-controller")
        })
        .map(|e| (e.reason.unwrap_or_default(), e.message.unwrap_or_default()))
        .collect();
    assert!(
        seen.contains(&(
            "ClusterIPNotAllocated".into(),
            format!("Cluster IP [IPv4]: {ip} is not allocated; repairing")
        )),
        "{seen:?}"
    );
    assert!(
        seen.contains(&(
            "IPAddressWrongReference".into(),
            "IPAddress: 10.96.0.60 for Service default/web has a wrong reference; cleaning up"
                .into()
        )),
        "{seen:?}"
    );
    // The repaired address is held again.
    let services: Api<Service> = Api::namespaced(server.client(), "default");
    let err = services
        .create(
            &PostParams::default(),
            &service("again", json!({"clusterIP": ip})),
        )
        .await
        .expect_err("held");
    assert!(message(err).ends_with("provided IP is already allocated"));
    server.stop().await;
}
