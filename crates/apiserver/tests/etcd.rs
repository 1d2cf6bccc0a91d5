//! API servers on etcd: two servers on one etcd share objects and watches; etcd going away fails
//! writes with 503/504 in time and both servers converge when it is back; a quorum survives
//! losing a member; a watch whose revision was compacted away relists.

use std::sync::Arc;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, PostParams, WatchEvent, WatchParams};
use rkcm_apiserver::storage::conformance::Recorder;
use rkcm_apiserver::storage::etcd::testing::EtcdProcess;
use rkcm_apiserver::storage::etcd::{EtcdBackend, EtcdConfig};
use rkcm_apiserver::storage::{Backend, WriteOp};
use rkcm_apiserver::testing;
use serde_json::json;

/// The etcd request timeout of the test that stops etcd (the others keep the default, so that
/// a slow machine does not turn a write into a 504).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(3);

fn etcd_config(etcd: &EtcdProcess) -> EtcdConfig {
    EtcdConfig::new(etcd.endpoints())
}

fn server_config(etcd: &EtcdProcess) -> rkcm_apiserver::Config {
    rkcm_apiserver::Config {
        etcd: Some(etcd_config(etcd)),
        ..testing::config()
    }
}

fn configmap(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"k": name}})).expect("cm")
}

/// Polls `get` on `api` until `name` exists with data `k == want`.
async fn eventually_has(api: &Api<ConfigMap>, name: &str, want: &str) -> ConfigMap {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(cm) = api.get(name).await {
            if cm
                .data
                .as_ref()
                .and_then(|d| d.get("k"))
                .map(String::as_str)
                == Some(want)
            {
                return cm;
            }
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{name} with k={want} not visible within 30s: the server's etcd watch is likely stuck"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Retries a create until it succeeds (etcd coming back).
async fn create_eventually(api: &Api<ConfigMap>, name: &str) -> ConfigMap {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        match api.create(&PostParams::default(), &configmap(name)).await {
            Ok(cm) => return cm,
            Err(kube::Error::Api(e)) if e.code == 409 => {
                return api.get(name).await.expect("created by an earlier attempt")
            }
            Err(e) => assert!(
                tokio::time::Instant::now() < deadline,
                "create {name} still failing after 60s: {e}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_api_servers_on_one_etcd_share_objects_and_watches() {
    let Some(etcd) = EtcdProcess::start_or_skip() else {
        return;
    };
    let a = testing::start_with(server_config(&etcd)).await;
    let b = testing::start_with(server_config(&etcd)).await;
    let cms_a: Api<ConfigMap> = Api::namespaced(a.client(), "default");
    let cms_b: Api<ConfigMap> = Api::namespaced(b.client(), "default");

    let listed = cms_b.list(&ListParams::default()).await.expect("list on b");
    let rv = listed.metadata.resource_version.expect("list rv");
    let mut watch = cms_b
        .watch(&WatchParams::default(), &rv)
        .await
        .expect("watch on b")
        .boxed();

    let created = cms_a
        .create(&PostParams::default(), &configmap("shared"))
        .await
        .expect("create on a");
    let ev = tokio::time::timeout(Duration::from_secs(20), watch.try_next())
        .await
        .expect("b's watch sees a's create within 20s")
        .expect("watch ok")
        .expect("watch open");
    match ev {
        WatchEvent::Added(cm) => {
            assert_eq!(cm.metadata.name.as_deref(), Some("shared"));
            assert_eq!(
                cm.metadata.resource_version,
                created.metadata.resource_version
            );
        }
        other => panic!("unexpected {other:?}"),
    }
    let seen = eventually_has(&cms_b, "shared", "shared").await;
    assert_eq!(seen.metadata.uid, created.metadata.uid);

    // An update through b with a's resourceVersion works; a stale one through a conflicts.
    let mut changed = seen.clone();
    changed.data = Some([("k".to_string(), "by-b".to_string())].into());
    cms_b
        .replace("shared", &PostParams::default(), &changed)
        .await
        .expect("update on b");
    eventually_has(&cms_a, "shared", "by-b").await;
    match cms_a
        .replace("shared", &PostParams::default(), &created)
        .await
    {
        Err(kube::Error::Api(e)) => assert_eq!((e.code, e.reason.as_str()), (409, "Conflict")),
        other => panic!("stale update through a: {other:?}"),
    }
    assert!(matches!(
        cms_b.create(&PostParams::default(), &configmap("shared")).await,
        Err(kube::Error::Api(e)) if e.code == 409 && e.reason == "AlreadyExists"
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_away_fails_writes_with_503_or_504_in_time_and_servers_converge_when_back() {
    let Some(mut etcd) = EtcdProcess::start_or_skip() else {
        return;
    };
    let config = rkcm_apiserver::Config {
        etcd: Some(EtcdConfig {
            request_timeout: REQUEST_TIMEOUT,
            ..etcd_config(&etcd)
        }),
        ..testing::config()
    };
    let a = testing::start_with(config.clone()).await;
    let b = testing::start_with(config).await;
    // kube's client retries 503 and 504 by itself; these requests must show the first answer.
    let no_retry = |s: &testing::TestServer| {
        let mut config = s.kube_config();
        config.default_retry = false;
        kube::Client::try_from(config).expect("client")
    };
    let cms_a: Api<ConfigMap> = Api::namespaced(no_retry(&a), "default");
    let cms_b: Api<ConfigMap> = Api::namespaced(no_retry(&b), "default");
    cms_a
        .create(&PostParams::default(), &configmap("before"))
        .await
        .expect("create before");
    eventually_has(&cms_b, "before", "before").await;

    etcd.stop();
    let started = tokio::time::Instant::now();
    let err = cms_a
        .create(&PostParams::default(), &configmap("during"))
        .await
        .expect_err("a write without etcd fails");
    let took = started.elapsed();
    match err {
        kube::Error::Api(e) => {
            assert!(matches!(e.code, 503 | 504), "{e:?}");
            assert!(
                e.message.contains("etcd"),
                "the message names etcd: {}",
                e.message
            );
        }
        other => panic!("expected a Status, got {other:?}"),
    }
    assert!(
        took < REQUEST_TIMEOUT * 3,
        "the failure took {took:?}, over the request timeout"
    );
    // Reads are served from the watch cache meanwhile, as kube's cacher does.
    cms_b
        .get("before")
        .await
        .expect("cached read while etcd is away");
    assert!(!ready(&a).await, "/readyz fails while etcd is away");

    etcd.restart();
    create_eventually(&cms_a, "after-a").await;
    create_eventually(&cms_b, "after-b").await;
    eventually_has(&cms_b, "after-a", "after-a").await;
    eventually_has(&cms_a, "after-b", "after-b").await;
    assert!(ready(&a).await, "/readyz passes when etcd is back");
}

/// Whether the server's `/readyz` answers 200.
async fn ready(server: &testing::TestServer) -> bool {
    let mut config = server.kube_config();
    config.default_retry = false;
    let client = kube::Client::try_from(config).expect("client");
    let req = http::Request::get("/readyz")
        .body(Vec::new())
        .expect("request");
    client.request_text(req).await.is_ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_three_member_etcd_keeps_serving_after_losing_one() {
    let Some(mut etcd) = EtcdProcess::cluster_or_skip(3) else {
        return;
    };
    let a = testing::start_with(server_config(&etcd)).await;
    let b = testing::start_with(server_config(&etcd)).await;
    let cms_a: Api<ConfigMap> = Api::namespaced(a.client(), "default");
    let cms_b: Api<ConfigMap> = Api::namespaced(b.client(), "default");
    create_eventually(&cms_a, "one").await;
    eventually_has(&cms_b, "one", "one").await;

    etcd.kill(0);
    // Requests that were in flight on the lost member may fail once; the client switches over.
    create_eventually(&cms_a, "two").await;
    create_eventually(&cms_b, "three").await;
    eventually_has(&cms_b, "two", "two").await;
    eventually_has(&cms_a, "three", "three").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_from_a_compacted_revision_relists() {
    let Some(etcd) = EtcdProcess::start_or_skip() else {
        return;
    };
    let writer = EtcdBackend::connect(etcd_config(&etcd))
        .await
        .expect("connect");
    let create = |key: &str| WriteOp::Create {
        key: key.into(),
        value: bytes::Bytes::from_static(b"v"),
    };
    writer.write(create("/c/gone"), None).await.expect("create");
    writer.write(create("/c/kept"), None).await.expect("create");

    // The reader lists now, then falls behind: its watch starts only after the history it
    // needs was compacted away.
    let reader = Arc::new(
        EtcdBackend::connect(etcd_config(&etcd))
            .await
            .expect("connect"),
    );
    let (items, _) = reader.load().await.expect("load");
    assert_eq!(items.len(), 2);
    writer
        .write(
            WriteOp::Delete {
                key: "/c/gone".into(),
                expected_revision: None,
            },
            None,
        )
        .await
        .expect("delete");
    let (added, _) = writer.write(create("/c/new"), None).await.expect("create");
    etcd.compact(added).await.expect("compact");

    let rec = Recorder::default();
    let events = rec.clone();
    // Attach without loading again: the watch must resume from the stale revision.
    reader.set_sink(Arc::new(move |ev| events.push(ev)));
    rec.wait_for("/c/new", added).await;
    rec.wait_for("/c/gone", added).await;
    let events = rec.events();
    let gone = events
        .iter()
        .find(|e| e.key == "/c/gone")
        .expect("relist reports the delete");
    assert_eq!(gone.value, None);
    assert!(
        !events.iter().any(|e| e.key == "/c/kept"),
        "an unchanged key is not reported again"
    );
    assert!(events.windows(2).all(|w| w[0].revision <= w[1].revision));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_compactor_trims_history_as_kube_apiserver() {
    let Some(etcd) = EtcdProcess::start_or_skip() else {
        return;
    };
    let config = EtcdConfig {
        compaction_interval: Duration::from_millis(200),
        ..etcd_config(&etcd)
    };
    let backend = EtcdBackend::connect(config).await.expect("connect");
    let _rec = Recorder::attach(&backend).await;
    let (first, _) = backend
        .write(
            WriteOp::Create {
                key: "/h/a".into(),
                value: bytes::Bytes::from_static(b"v"),
            },
            None,
        )
        .await
        .expect("create");
    // The first round only records the revision; a later one compacts to it.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        if let Err(e) = etcd.get("/registry/h/a", first).await {
            assert!(e.contains("compacted"), "{e}");
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "revision {first} was not compacted within 20s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let key = etcd
        .get("compact_rev_key", 0)
        .await
        .expect("get compact_rev_key");
    assert!(key.is_some_and(|(_, version)| version >= 2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_over_tls_with_a_client_certificate() {
    let Some(etcd) = EtcdProcess::tls_or_skip() else {
        return;
    };
    let tls = etcd.client_tls().expect("TLS files").clone();
    let config = EtcdConfig {
        ca_file: Some(tls.ca_file),
        cert_file: Some(tls.cert_file),
        key_file: Some(tls.key_file),
        ..etcd_config(&etcd)
    };
    assert!(config.servers[0].starts_with("https://"));
    let backend = EtcdBackend::connect(config).await.expect("connect");
    // etcd may still be starting behind its open port.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let rec = loop {
        match backend.load().await {
            Ok(_) => break Recorder::attach(&backend).await.0,
            Err(e) => assert!(
                tokio::time::Instant::now() < deadline,
                "etcd over TLS did not answer within 20s: {e}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let (rev, _) = backend
        .write(
            WriteOp::Create {
                key: "/tls/a".into(),
                value: bytes::Bytes::from_static(b"v"),
            },
            None,
        )
        .await
        .expect("create over TLS");
    rec.wait_for("/tls/a", rev).await;

    // Without the client certificate etcd refuses the connection.
    let anonymous = EtcdBackend::connect(EtcdConfig {
        ca_file: etcd.client_tls().map(|t| t.ca_file.clone()),
        ..etcd_config(&etcd)
    })
    .await
    .expect("connect");
    assert!(anonymous.get("/tls/a").await.is_err());
}

/// Creates `per_server` Services of `spec` through each of `a` and `b` at the same time.
async fn create_through_both(
    a: &testing::TestServer,
    b: &testing::TestServer,
    per_server: usize,
    spec: serde_json::Value,
) -> Vec<k8s_openapi::api::core::v1::Service> {
    use k8s_openapi::api::core::v1::Service;
    let create_all = |client: kube::Client, tag: &'static str| {
        let spec = spec.clone();
        async move {
            let api: Api<Service> = Api::namespaced(client, "default");
            let mut created = Vec::new();
            for i in 0..per_server {
                let svc: Service = serde_json::from_value(
                    json!({"metadata": {"name": format!("{tag}-{i}")}, "spec": spec}),
                )
                .expect("service");
                created.push(
                    api.create(&PostParams::default(), &svc)
                        .await
                        .unwrap_or_else(|e| panic!("create {tag}-{i}: {e}")),
                );
            }
            created
        }
    };
    let (from_a, from_b) = tokio::join!(create_all(a.client(), "a"), create_all(b.client(), "b"));
    from_a.into_iter().chain(from_b).collect()
}

/// Two API servers on one etcd allocate cluster IPs from one small range at the same time: every
/// Service gets its own address (each server's allocator is in memory, but the IPAddress
/// objects in etcd decide, as kube's IPAddress allocator), and asking for a taken address gets
/// kube's 422.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_api_servers_never_hand_out_one_cluster_ip_twice() {
    use k8s_openapi::api::core::v1::Service;
    let Some(etcd) = EtcdProcess::start_or_skip() else {
        return;
    };
    // A /27: 30 usable addresses, the first the `kubernetes` Service's.
    let range: rkcm_apiserver::allocators::Ipv4Cidr = "10.96.0.0/27".parse().expect("cidr");
    let config = || rkcm_apiserver::Config {
        service_cluster_ip_range: range,
        ..server_config(&etcd)
    };
    let a = testing::start_with(config()).await;
    let b = testing::start_with(config()).await;
    let service = |name: String| -> Service {
        serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {"ports": [{"port": 80}]},
        }))
        .expect("service")
    };
    let created = create_through_both(&a, &b, 14, json!({"ports": [{"port": 80}]})).await;
    let mut all: Vec<String> = created
        .into_iter()
        .map(|svc| svc.spec.and_then(|s| s.cluster_ip).expect("a cluster IP"))
        .collect();
    all.sort();
    let before = all.len();
    all.dedup();
    assert_eq!(
        all.len(),
        before,
        "a cluster IP was handed out twice: {all:?}"
    );

    // An address the other server handed out is refused with kube's message.
    let taken = all[0].clone();
    let mut wanted = service("wants-taken".into());
    wanted.spec.as_mut().expect("spec").cluster_ip = Some(taken.clone());
    let api_b: Api<Service> = Api::namespaced(b.client(), "default");
    let api_a: Api<Service> = Api::namespaced(a.client(), "default");
    for api in [&api_a, &api_b] {
        match api.create(&PostParams::default(), &wanted).await {
            Err(kube::Error::Api(e)) => {
                assert_eq!(e.code, 422, "{e:?}");
                assert!(
                    e.message.contains(&format!(
                        "failed to allocate IP {taken}: provided IP is already allocated"
                    )),
                    "{}",
                    e.message
                );
            }
            other => panic!("a taken cluster IP was given again: {other:?}"),
        }
    }
}

/// Two API servers on one etcd allocate node ports from one small range at the same time: every
/// port goes to one Service only (the store's node port snapshot, changed by guaranteed updates,
/// decides, as kube's), and asking for a port the other server handed out gets kube's 422 at
/// the port's field path.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_api_servers_never_hand_out_one_node_port_twice() {
    use k8s_openapi::api::core::v1::Service;
    let Some(etcd) = EtcdProcess::start_or_skip() else {
        return;
    };
    let range: rkcm_apiserver::allocators::PortRange = "30000-30031".parse().expect("range");
    let config = || rkcm_apiserver::Config {
        service_node_port_range: range,
        ..server_config(&etcd)
    };
    let a = testing::start_with(config()).await;
    let b = testing::start_with(config()).await;
    let service = |name: String, node_port: Option<i32>| -> Service {
        serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {"type": "NodePort", "ports": [{"port": 80, "nodePort": node_port}]},
        }))
        .expect("service")
    };
    let per_server = 14;
    let created = create_through_both(
        &a,
        &b,
        per_server,
        json!({"type": "NodePort", "ports": [{"port": 80}]}),
    )
    .await;
    let mut all: Vec<i32> = created
        .into_iter()
        .flat_map(|svc| {
            svc.spec
                .into_iter()
                .flat_map(|s| s.ports.into_iter().flatten())
        })
        .filter_map(|p| p.node_port)
        .collect();
    assert_eq!(all.len(), 2 * per_server);
    all.sort();
    all.dedup();
    assert_eq!(
        all.len(),
        2 * per_server,
        "a node port was handed out twice: {all:?}"
    );

    // A port handed out through a is refused through b, with kube's message and field path.
    let api_b: Api<Service> = Api::namespaced(b.client(), "default");
    match api_b
        .create(
            &PostParams::default(),
            &service("wants-taken".into(), Some(all[0])),
        )
        .await
    {
        Err(kube::Error::Api(e)) => {
            assert_eq!(e.code, 422, "{e:?}");
            assert!(
                e.message.contains(&format!(
                    "spec.ports[0].nodePort: Invalid value: {}: provided port is already allocated",
                    all[0]
                )),
                "{}",
                e.message
            );
        }
        other => panic!("a taken node port was given again: {other:?}"),
    }
    // A deleted Service's ports are free again, for either server.
    let api_a: Api<Service> = Api::namespaced(a.client(), "default");
    let owner = api_a
        .list(&ListParams::default())
        .await
        .expect("list")
        .items
        .into_iter()
        .find(|s| {
            s.spec
                .iter()
                .flat_map(|spec| spec.ports.iter().flatten())
                .any(|p| p.node_port == Some(all[0]))
        })
        .and_then(|s| s.metadata.name)
        .expect("the port's Service");
    api_a
        .delete(&owner, &Default::default())
        .await
        .expect("delete");
    api_b
        .create(
            &PostParams::default(),
            &service("reuses".into(), Some(all[0])),
        )
        .await
        .expect("a released node port is free again");
}
