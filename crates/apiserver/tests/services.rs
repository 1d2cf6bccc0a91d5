//! Services through the API: cluster IPs and node ports allocated and released as
//! kube-apiserver does, the `kubernetes` Service, and the allocations rebuilt on restart.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Endpoints, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use rkcm_apiserver::{testing, Config};
use serde_json::{json, Value};

fn service(name: &str, spec: Value) -> Service {
    let mut spec = spec;
    let obj = spec.as_object_mut().expect("object");
    obj.entry("selector").or_insert(json!({"app": name}));
    obj.entry("ports")
        .or_insert(json!([{"name": "http", "port": 80}]));
    serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec})).expect("service")
}

fn invalid(e: kube::Error) -> String {
    match e {
        kube::Error::Api(s) => {
            assert_eq!(s.code, 422, "{s:?}");
            assert_eq!(s.reason, "Invalid", "{s:?}");
            s.message
        }
        other => panic!("expected an API error, got {other:?}"),
    }
}

fn cluster_ip(svc: &Service) -> String {
    svc.spec
        .as_ref()
        .and_then(|s| s.cluster_ip.clone())
        .expect("a cluster IP")
}

fn node_port(svc: &Service) -> i32 {
    svc.spec
        .as_ref()
        .and_then(|s| s.ports.as_ref())
        .and_then(|p| p[0].node_port)
        .expect("a node port")
}

#[tokio::test]
async fn the_kubernetes_service_points_at_this_server() {
    let server = testing::start().await;
    let port: i32 = server
        .url()
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("a port in the URL");
    let client = server.client();
    let svc = Api::<Service>::namespaced(client.clone(), "default")
        .get("kubernetes")
        .await
        .expect("the kubernetes service exists");
    let spec = svc.spec.expect("spec");
    assert_eq!(spec.cluster_ip.as_deref(), Some("10.96.0.1"));
    assert_eq!(spec.cluster_ips, Some(vec!["10.96.0.1".to_string()]));
    assert_eq!(spec.type_.as_deref(), Some("ClusterIP"));
    let p = &spec.ports.expect("ports")[0];
    assert_eq!((p.name.as_deref(), p.port), (Some("https"), 443));
    assert_eq!(
        p.target_port,
        Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(port))
    );
    let labels = svc.metadata.labels.expect("labels");
    assert_eq!(labels["component"], "apiserver");
    assert_eq!(labels["provider"], "kubernetes");

    let ep = Api::<Endpoints>::namespaced(client.clone(), "default")
        .get("kubernetes")
        .await
        .expect("endpoints");
    let subset = &ep.subsets.expect("subsets")[0];
    assert_eq!(
        subset.addresses.as_ref().expect("addresses")[0].ip,
        "127.0.0.1"
    );
    assert_eq!(subset.ports.as_ref().expect("ports")[0].port, port);
    let slice = Api::<EndpointSlice>::namespaced(client, "default")
        .get("kubernetes")
        .await
        .expect("endpoint slice");
    assert_eq!(slice.address_type, "IPv4");
    assert_eq!(
        slice.metadata.labels.expect("labels")["kubernetes.io/service-name"],
        "kubernetes"
    );
    assert_eq!(slice.endpoints[0].addresses, ["127.0.0.1"]);
    assert_eq!(slice.ports.expect("ports")[0].port, Some(port));
}

#[tokio::test]
async fn cluster_ips_and_node_ports_are_allocated_checked_and_released() {
    let server = testing::start().await;
    let services: Api<Service> = Api::namespaced(server.client(), "default");
    let pp = PostParams::default();

    let web = services
        .create(&pp, &service("web", json!({})))
        .await
        .expect("create");
    let ip = cluster_ip(&web);
    let spec = web.spec.as_ref().expect("spec");
    assert!(ip.starts_with("10."), "{ip}");
    assert_eq!(spec.cluster_ips, Some(vec![ip.clone()]));
    assert_eq!(spec.ip_families, Some(vec!["IPv4".to_string()]));
    assert_eq!(spec.ip_family_policy.as_deref(), Some("SingleStack"));

    // The first address belongs to the kubernetes Service.
    let taken = service("taken", json!({"clusterIP": "10.96.0.1"}));
    assert_eq!(
        invalid(services.create(&pp, &taken).await.expect_err("allocated")),
        "Service \"taken\" is invalid: spec.clusterIPs: Invalid value: [\"10.96.0.1\"]: failed to allocate IP 10.96.0.1: provided IP is already allocated"
    );
    let outside = service("outside", json!({"clusterIP": "192.168.0.1"}));
    assert_eq!(
        invalid(services.create(&pp, &outside).await.expect_err("outside")),
        "Service \"outside\" is invalid: spec.clusterIPs: Invalid value: [\"192.168.0.1\"]: failed to allocate IP 192.168.0.1: the provided network does not match the current range"
    );
    for name in ["taken", "outside"] {
        assert!(
            services.get_opt(name).await.expect("get").is_none(),
            "{name} was stored"
        );
    }

    // The cluster IP does not change, and a patch that leaves it out keeps it.
    let patched = services
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"a": "b"}}})),
        )
        .await
        .expect("patch");
    assert_eq!(cluster_ip(&patched), ip);
    let err = services
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"spec": {"clusterIP": "10.96.0.99", "clusterIPs": ["10.96.0.99"]}}),
            ),
        )
        .await
        .expect_err("immutable");
    assert_eq!(
        invalid(err),
        "Service \"web\" is invalid: spec.clusterIPs[0]: Invalid value: [\"10.96.0.99\"]: may not change once set"
    );

    // Node ports: allocated, checked, kept on update, released on delete.
    let np = services
        .create(&pp, &service("np", json!({"type": "NodePort", "ports": [{"name": "http", "port": 80, "nodePort": 30080}]})))
        .await
        .expect("create NodePort");
    assert_eq!(node_port(&np), 30080);
    let dup = service(
        "dup",
        json!({"type": "NodePort", "ports": [{"name": "http", "port": 80, "nodePort": 30080}]}),
    );
    assert_eq!(
        invalid(services.create(&pp, &dup).await.expect_err("allocated")),
        "Service \"dup\" is invalid: spec.ports[0].nodePort: Invalid value: 30080: provided port is already allocated"
    );
    let mut replaced = np.clone();
    replaced
        .spec
        .as_mut()
        .expect("spec")
        .ports
        .as_mut()
        .expect("ports")[0]
        .node_port = None;
    let replaced = services
        .replace("np", &pp, &replaced)
        .await
        .expect("replace");
    assert_eq!(
        node_port(&replaced),
        30080,
        "an update that omits the node port keeps it"
    );
    services
        .delete("np", &DeleteParams::default())
        .await
        .expect("delete");
    let again = services
        .create(&pp, &dup)
        .await
        .expect("the port was released");
    assert_eq!(node_port(&again), 30080);
    // Becoming a ClusterIP service drops the node port and releases it.
    let back = services
        .patch(
            "dup",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"type": "ClusterIP"}})),
        )
        .await
        .expect("type change");
    let back_port = back
        .spec
        .as_ref()
        .and_then(|s| s.ports.as_ref())
        .map(|p| p[0].node_port);
    assert_eq!(back_port, Some(None));
    let third = service(
        "third",
        json!({"type": "NodePort", "ports": [{"name": "http", "port": 80, "nodePort": 30080}]}),
    );
    services
        .create(&pp, &third)
        .await
        .expect("the type change released the port");

    // A dry run reports an address and keeps nothing.
    let dry = services
        .create(
            &PostParams {
                dry_run: true,
                ..Default::default()
            },
            &service("dry", json!({"clusterIP": ip.clone()})),
        )
        .await
        .expect_err("the address is taken even in a dry run");
    assert!(invalid(dry).contains("provided IP is already allocated"));
}

#[tokio::test]
async fn allocations_are_rebuilt_from_the_store_on_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = || Config {
        data_dir: Some(dir.path().to_path_buf()),
        ..testing::config()
    };
    let server = testing::start_with(config()).await;
    let services: Api<Service> = Api::namespaced(server.client(), "default");
    let pp = PostParams::default();
    let kept = services
        .create(&pp, &service("kept", json!({"type": "NodePort"})))
        .await
        .expect("create");
    let (ip, port) = (cluster_ip(&kept), node_port(&kept));
    server.stop().await;

    // The store's file is released once the old writer thread has gone; retry until it is.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
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
    let services: Api<Service> = Api::namespaced(server.client(), "default");
    let same_ip = service("same-ip", json!({"clusterIP": ip.clone()}));
    assert!(
        invalid(services.create(&pp, &same_ip).await.expect_err("held"))
            .ends_with("provided IP is already allocated")
    );
    let same_port = service(
        "same-port",
        json!({"type": "NodePort", "ports": [{"name": "http", "port": 80, "nodePort": port}]}),
    );
    assert!(
        invalid(services.create(&pp, &same_port).await.expect_err("held"))
            .ends_with("provided port is already allocated")
    );
    assert_eq!(
        Api::<Service>::namespaced(server.client(), "default")
            .get("kubernetes")
            .await
            .map(|s| cluster_ip(&s))
            .expect("still there"),
        "10.96.0.1"
    );
}

#[tokio::test]
async fn a_service_held_by_a_finalizer_releases_its_values_when_it_goes() {
    let server = testing::start().await;
    let services: Api<Service> = Api::namespaced(server.client(), "default");
    let pp = PostParams::default();
    let mut held = service(
        "held",
        json!({"type": "NodePort", "ports": [{"name": "http", "port": 80, "nodePort": 30100}]}),
    );
    held.metadata.finalizers = Some(vec!["example.com/hold".to_string()]);
    services.create(&pp, &held).await.expect("create");
    services
        .delete("held", &DeleteParams::default())
        .await
        .expect("delete");
    let again = service(
        "again",
        json!({"type": "NodePort", "ports": [{"name": "http", "port": 80, "nodePort": 30100}]}),
    );
    assert!(
        invalid(services.create(&pp, &again).await.expect_err("still held"))
            .ends_with("provided port is already allocated")
    );
    services
        .patch(
            "held",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .expect("remove the finalizer");
    assert!(services.get_opt("held").await.expect("get").is_none());
    services
        .create(&pp, &again)
        .await
        .expect("released once the service is gone");
}

/// (The 503 a Service's proxy answers is checked end to end with kubectl: kube's client
/// retries 503s, so it is not observable here.)
#[tokio::test]
async fn the_proxy_of_a_missing_service_is_not_found() {
    let server = testing::start().await;
    let req = http::Request::get("/api/v1/namespaces/default/services/https:nope:/proxy/healthz")
        .body(Vec::new())
        .expect("a request");
    match server.client().request_text(req).await {
        Err(kube::Error::Api(s)) => {
            assert_eq!(
                (s.code, s.message.as_str()),
                (404, "services \"nope\" not found")
            )
        }
        other => panic!("expected a Status, got {other:?}"),
    }
    server.stop().await;
}

/// A create that loses at the store (the name is taken) gives back the cluster IP and node port
/// it had taken, as kube's Service REST rolls its allocations back when the store refuses.
#[tokio::test]
async fn a_create_the_store_refuses_gives_back_what_it_took() {
    let server = testing::start().await;
    let services: Api<Service> = Api::namespaced(server.client(), "default");
    let pp = PostParams::default();
    services
        .create(&pp, &service("taken", json!({"type": "NodePort"})))
        .await
        .expect("create");
    let wants = |name: &str| {
        service(
            name,
            json!({"type": "NodePort", "clusterIP": "10.96.0.77",
                   "ports": [{"name": "http", "port": 80, "nodePort": 30277}]}),
        )
    };
    match services.create(&pp, &wants("taken")).await {
        Err(kube::Error::Api(s)) => assert_eq!(s.code, 409, "{s:?}"),
        other => panic!("the name is taken: {other:?}"),
    }
    let second = services
        .create(&pp, &wants("second"))
        .await
        .expect("the address and port of the refused create are free again");
    assert_eq!(cluster_ip(&second), "10.96.0.77");
    assert_eq!(node_port(&second), 30277);
}
