//! CRUD, list, watch and error shapes driven with kube's client.

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod};
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use serde_json::json;

fn pod(name: &str) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}
    }))
    .expect("pod")
}

fn deployment(name: &str, replicas: i32) -> Deployment {
    serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
        }
    }))
    .expect("deployment")
}

fn api_err(e: kube::Error) -> kube::core::Status {
    match e {
        kube::Error::Api(s) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

#[tokio::test]
async fn system_namespaces_exist_and_objects_round_trip() {
    let server = rkcm_apiserver::testing::start().await;
    let client = server.client();
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let names: Vec<String> = namespaces
        .list(&ListParams::default())
        .await
        .expect("list namespaces")
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect();
    for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        assert!(
            names.contains(&ns.to_string()),
            "{ns} missing from {names:?}"
        );
    }

    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let created = pods
        .create(&PostParams::default(), &pod("p1"))
        .await
        .expect("create pod");
    let uid = created.metadata.uid.clone().expect("uid");
    assert!(created.metadata.creation_timestamp.is_some());
    let rv: i64 = created
        .metadata
        .resource_version
        .clone()
        .expect("rv")
        .parse()
        .expect("numeric rv");
    assert!(rv > 0);

    let got = pods.get("p1").await.expect("get");
    assert_eq!(got.metadata.uid.as_deref(), Some(uid.as_str()));

    let dup = api_err(
        pods.create(&PostParams::default(), &pod("p1"))
            .await
            .expect_err("duplicate"),
    );
    assert_eq!(dup.code, 409);
    assert_eq!(dup.reason, "AlreadyExists");
    assert_eq!(dup.message, "pods \"p1\" already exists");

    let missing = api_err(pods.get("nope").await.expect_err("missing"));
    assert_eq!(missing.code, 404);
    assert_eq!(missing.message, "pods \"nope\" not found");

    // Stale resourceVersion → 409 Conflict.
    let mut stale = got.clone();
    let mut fresh = got.clone();
    fresh
        .metadata
        .labels
        .get_or_insert_default()
        .insert("v".into(), "2".into());
    pods.replace("p1", &PostParams::default(), &fresh)
        .await
        .expect("replace");
    stale
        .metadata
        .labels
        .get_or_insert_default()
        .insert("v".into(), "3".into());
    let conflict = api_err(
        pods.replace("p1", &PostParams::default(), &stale)
            .await
            .expect_err("stale"),
    );
    assert_eq!(conflict.code, 409);
    assert_eq!(conflict.reason, "Conflict");

    // Label selectors on list.
    let mut other = pod("p2");
    other.metadata.labels = Some([("app".to_string(), "db".to_string())].into());
    pods.create(&PostParams::default(), &other)
        .await
        .expect("create p2");
    let web = pods
        .list(&ListParams::default().labels("app=web"))
        .await
        .expect("list");
    assert_eq!(web.items.len(), 1);
    let notweb = pods
        .list(&ListParams::default().labels("app!=web"))
        .await
        .expect("list");
    assert_eq!(notweb.items[0].metadata.name.as_deref(), Some("p2"));
    let by_name = pods
        .list(&ListParams::default().fields("metadata.name=p2"))
        .await
        .expect("list");
    assert_eq!(by_name.items.len(), 1);

    // Pagination.
    let page = pods
        .list(&ListParams::default().limit(1))
        .await
        .expect("page 1");
    assert_eq!(page.items.len(), 1);
    let token = page.metadata.continue_.clone().expect("continue token");
    let page2 = pods
        .list(&ListParams::default().limit(1).continue_token(&token))
        .await
        .expect("page 2");
    assert_eq!(page2.items.len(), 1);
    assert_ne!(page.items[0].metadata.name, page2.items[0].metadata.name);
    assert!(page2.metadata.continue_.as_deref().unwrap_or("").is_empty());
    // resourceVersion=0 is served whole from the watch cache: the limit is ignored.
    let whole: kube::core::ObjectList<Pod> = client
        .request(
            http::Request::get("/api/v1/namespaces/default/pods?limit=1&resourceVersion=0")
                .body(Vec::new())
                .expect("request"),
        )
        .await
        .expect("list at resourceVersion 0");
    assert_eq!(whole.items.len(), 2);
    assert!(whole.metadata.continue_.as_deref().unwrap_or("").is_empty());

    // Delete: an unbound pod goes at once.
    pods.delete("p2", &DeleteParams::default())
        .await
        .expect("delete");
    let gone = api_err(pods.get("p2").await.expect_err("deleted"));
    assert_eq!(gone.code, 404);
}

#[tokio::test]
async fn missing_namespace_is_404_and_generate_name_works() {
    let server = rkcm_apiserver::testing::start().await;
    let cms: Api<ConfigMap> = Api::namespaced(server.client(), "nowhere");
    let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "c"}})).expect("cm");
    let e = api_err(
        cms.create(&PostParams::default(), &cm)
            .await
            .expect_err("no namespace"),
    );
    assert_eq!(e.code, 404);
    assert_eq!(e.message, "namespaces \"nowhere\" not found");

    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    let mut p = pod("");
    p.metadata.name = None;
    p.metadata.generate_name = Some("web-".into());
    let created = pods
        .create(&PostParams::default(), &p)
        .await
        .expect("create");
    let name = created.metadata.name.expect("generated name");
    assert!(name.starts_with("web-") && name.len() == 9, "{name}");
}

#[tokio::test]
async fn watch_delivers_changes_and_resumes() {
    let server = rkcm_apiserver::testing::start().await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    let p1 = pods
        .create(&PostParams::default(), &pod("w1"))
        .await
        .expect("create");
    let rv1 = p1.metadata.resource_version.clone().expect("rv");

    let mut stream = pods
        .watch(&WatchParams::default(), &rv1)
        .await
        .expect("watch")
        .boxed();
    pods.create(&PostParams::default(), &pod("w2"))
        .await
        .expect("create w2");
    pods.delete("w1", &DeleteParams::default())
        .await
        .expect("delete w1");
    let mut seen = Vec::new();
    while seen.len() < 2 {
        let ev = tokio::time::timeout(Duration::from_secs(10), stream.try_next())
            .await
            .expect("watch event within 10s")
            .expect("watch ok")
            .expect("stream open");
        match ev {
            WatchEvent::Added(p) => {
                seen.push(format!("ADDED {}", p.metadata.name.unwrap_or_default()))
            }
            WatchEvent::Deleted(p) => {
                seen.push(format!("DELETED {}", p.metadata.name.unwrap_or_default()))
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(seen, ["ADDED w2", "DELETED w1"]);

    // Resume from the first revision replays both events.
    let mut resumed = pods
        .watch(&WatchParams::default(), &rv1)
        .await
        .expect("watch")
        .boxed();
    let first = tokio::time::timeout(Duration::from_secs(10), resumed.try_next())
        .await
        .expect("event")
        .expect("ok")
        .expect("open");
    assert!(matches!(first, WatchEvent::Added(ref p) if p.metadata.name.as_deref() == Some("w2")));
}

#[tokio::test]
async fn watch_from_an_expired_revision_gets_410() {
    let config = rkcm_apiserver::Config {
        watch_cache_capacity: 2,
        ..rkcm_apiserver::testing::config()
    };
    let server = rkcm_apiserver::testing::start_with(config).await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    let first = pods
        .create(&PostParams::default(), &pod("e0"))
        .await
        .expect("create");
    for i in 1..5 {
        pods.create(&PostParams::default(), &pod(&format!("e{i}")))
            .await
            .expect("create");
    }
    let rv = first.metadata.resource_version.expect("rv");
    let mut stream = pods
        .watch(&WatchParams::default(), &rv)
        .await
        .expect("watch")
        .boxed();
    let ev = tokio::time::timeout(Duration::from_secs(10), stream.try_next())
        .await
        .expect("event")
        .expect("ok")
        .expect("open");
    match ev {
        WatchEvent::Error(e) => {
            assert_eq!(e.code, 410);
            assert_eq!(e.reason, "Expired");
            assert!(
                e.message.starts_with("too old resource version"),
                "{}",
                e.message
            );
        }
        other => panic!("expected 410, got {other:?}"),
    }
}

#[tokio::test]
async fn status_and_scale_subresources() {
    let server = rkcm_apiserver::testing::start().await;
    let deploys: Api<Deployment> = Api::namespaced(server.client(), "default");
    let d = deploys
        .create(&PostParams::default(), &deployment("web", 2))
        .await
        .expect("create");
    assert_eq!(d.metadata.generation, Some(1));

    let scale = deploys.get_scale("web").await.expect("get scale");
    assert_eq!(scale.spec.and_then(|s| s.replicas), Some(2));
    deploys
        .patch_scale(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 5}})),
        )
        .await
        .expect("patch scale");
    let d = deploys.get("web").await.expect("get");
    assert_eq!(d.spec.as_ref().and_then(|s| s.replicas), Some(5));
    assert_eq!(d.metadata.generation, Some(2));

    // Status writes leave the spec and the generation alone.
    let status =
        json!({"status": {"replicas": 3, "observedGeneration": 2}, "spec": {"replicas": 9}});
    let after = deploys
        .patch_status("web", &PatchParams::default(), &Patch::Merge(status))
        .await
        .expect("patch status");
    assert_eq!(after.status.and_then(|s| s.replicas), Some(3));
    assert_eq!(after.spec.and_then(|s| s.replicas), Some(5));
    assert_eq!(after.metadata.generation, Some(2));
}

#[tokio::test]
async fn unauthenticated_requests_get_401() {
    let server = rkcm_apiserver::testing::start().await;
    let mut cfg = server.kube_config();
    cfg.auth_info = Default::default();
    let anon = kube::Client::try_from(cfg).expect("client");
    let pods: Api<Pod> = Api::namespaced(anon, "default");
    let e = api_err(
        pods.list(&ListParams::default())
            .await
            .expect_err("anonymous"),
    );
    assert_eq!(e.code, 401);
}
