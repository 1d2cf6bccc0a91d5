//! Reads at a resourceVersion, as kube's cacher answers them: exact lists and continue tokens
//! from the event window, 410 Expired once the window has moved on, 504 for a revision never
//! reached.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, PostParams, VersionMatch};
use serde_json::json;

fn config_map(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"k": "v"}}))
        .expect("config map")
}

fn status(e: kube::Error) -> kube::core::Status {
    match e {
        kube::Error::Api(s) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

async fn server_with_window(
    events: usize,
) -> (rkcm_apiserver::testing::TestServer, Api<ConfigMap>) {
    let config = rkcm_apiserver::config::Config {
        watch_cache_capacity: events,
        ..rkcm_apiserver::testing::config()
    };
    let server = rkcm_apiserver::testing::start_with(config).await;
    let api = Api::namespaced(server.client(), "default");
    (server, api)
}

async fn create(api: &Api<ConfigMap>, name: &str) -> String {
    api.create(&PostParams::default(), &config_map(name))
        .await
        .expect("create config map")
        .metadata
        .resource_version
        .expect("resourceVersion")
}

fn names(list: &kube::core::ObjectList<ConfigMap>) -> Vec<String> {
    list.items
        .iter()
        .filter_map(|c| c.metadata.name.clone())
        .collect()
}

#[tokio::test]
async fn an_exact_list_in_the_window_shows_that_revision_and_an_older_one_expires() {
    let (_server, api) = server_with_window(4).await;
    let first = create(&api, "a").await;
    create(&api, "b").await;
    let exact = |rv: &str| ListParams {
        resource_version: Some(rv.to_string()),
        version_match: Some(VersionMatch::Exact),
        ..ListParams::default()
    };
    let at_first = api.list(&exact(&first)).await.expect("exact list");
    assert_eq!(names(&at_first), ["a"]);
    assert_eq!(
        at_first.metadata.resource_version.as_deref(),
        Some(first.as_str())
    );
    for name in ["c", "d", "e", "f"] {
        create(&api, name).await;
    }
    let e = status(
        api.list(&exact(&first))
            .await
            .expect_err("out of the window"),
    );
    assert_eq!((e.code, e.reason.as_str()), (410, "Expired"));
    assert_eq!(
        e.message,
        "The resourceVersion for the provided list is too old."
    );
}

#[tokio::test]
async fn pages_share_the_first_pages_revision_until_it_leaves_the_window() {
    let (_server, api) = server_with_window(4).await;
    for name in ["a", "b", "c"] {
        create(&api, name).await;
    }
    let first = api
        .list(&ListParams::default().limit(1))
        .await
        .expect("page 1");
    let token = first.metadata.continue_.clone().expect("continue token");
    // A write between pages is not seen by the pages of the first one's revision.
    create(&api, "b2").await;
    let second = api
        .list(&ListParams::default().limit(5).continue_token(&token))
        .await
        .expect("page 2");
    assert_eq!(names(&second), ["b", "c"]);
    assert_eq!(
        second.metadata.resource_version,
        first.metadata.resource_version
    );

    for name in ["d", "e", "f", "g"] {
        create(&api, name).await;
    }
    let e = status(
        api.list(&ListParams::default().limit(5).continue_token(&token))
            .await
            .expect_err("the token's revision left the window"),
    );
    assert_eq!((e.code, e.reason.as_str()), (410, "Expired"));
    assert!(
        e.message.starts_with(
            "The provided continue parameter is too old to display a consistent list result."
        ),
        "{}",
        e.message
    );
    let fresh = e.metadata.and_then(|m| m.continue_).expect("a fresh token");
    let rest = api
        .list(&ListParams::default().limit(50).continue_token(&fresh))
        .await
        .expect("going on at the latest revision");
    assert_eq!(names(&rest), ["b", "b2", "c", "d", "e", "f", "g"]);
}

#[tokio::test]
async fn a_list_at_a_revision_never_reached_times_out_with_kubes_status() {
    let (server, api) = server_with_window(100).await;
    // kube's client retries a 504 by itself; this test wants to see it.
    let mut config = server.kube_config();
    config.default_retry = false;
    let client = kube::Client::try_from(config).expect("client");
    let no_retry: Api<ConfigMap> = Api::namespaced(client, "default");
    let rv: i64 = create(&api, "a").await.parse().expect("numeric");
    let future = (rv + 1000).to_string();
    let started = std::time::Instant::now();
    let e = status(
        no_retry
            .list(&ListParams::default().at(&future))
            .await
            .expect_err("too large"),
    );
    assert!(
        started.elapsed() >= std::time::Duration::from_secs(3),
        "waited 3 s first"
    );
    assert_eq!((e.code, e.reason.as_str()), (504, "Timeout"));
    assert_eq!(
        e.message,
        format!("Timeout: Too large resource version: {future}, current: {rv}")
    );
    let details = e.details.expect("details");
    assert_eq!(details.retry_after_seconds, 1);
    assert_eq!(details.causes[0].reason, "ResourceVersionTooLarge");
    assert_eq!(details.causes[0].message, "Too large resource version");
}

#[tokio::test]
async fn a_streaming_list_from_a_revision_never_reached_ends_with_kubes_status() {
    use futures::StreamExt;
    use kube::api::{WatchEvent, WatchParams};

    let (_server, api) = server_with_window(100).await;
    let rv: i64 = create(&api, "a").await.parse().expect("numeric");
    let future = (rv + 1000).to_string();
    let params = WatchParams {
        send_initial_events: true,
        bookmarks: true,
        ..WatchParams::default()
    };
    let stream = api
        .watch(&params, &future)
        .await
        .expect("the watch is accepted");
    let mut stream = Box::pin(stream);
    let first = tokio::time::timeout(std::time::Duration::from_secs(10), stream.next())
        .await
        .expect("an event within 10 s")
        .expect("an event")
        .expect("a decodable event");
    match first {
        WatchEvent::Error(s) => {
            assert_eq!((s.code, s.reason.as_str()), (504, "Timeout"));
            assert_eq!(
                s.message,
                format!("Timeout: Too large resource version: {future}, current: {rv}")
            );
        }
        other => panic!("expected an ERROR event, got {other:?}"),
    }
}
