//! Shared informer against a scripted API server: list, watch, resume, bookmarks, 410 relist.

mod support;

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use parking_lot::Mutex;
use rkcm_runtime::informer::{
    wait_for_cache_sync, Deleted, InformerFactory, Notification, SharedInformer,
};
use rkcm_runtime::{ObjectKey, Shutdown};
use support::eventually;
use support::fake_pods::FakePods;

type Seen = Arc<Mutex<Vec<String>>>;

fn describe(n: &Notification<Pod>) -> String {
    let name = |p: &Pod| p.metadata.name.clone().unwrap_or_default();
    match n {
        Notification::Add(p) => format!("add {}", name(p)),
        Notification::Update { new, .. } => format!("update {}", name(new)),
        Notification::Delete(Deleted::Known(p)) => format!("delete {}", name(p)),
        Notification::Delete(Deleted::FinalStateUnknown { key, .. }) => format!("tombstone {key}"),
    }
}

fn record(informer: &SharedInformer<Pod>) -> Seen {
    let seen: Seen = Arc::default();
    let sink = Arc::clone(&seen);
    informer.add_event_handler(move |n| sink.lock().push(describe(&n)));
    seen
}

/// Waits until `seen` holds `expected.len()` more entries than `from`, and checks them.
async fn expect_next(seen: &Seen, from: &mut usize, expected: &[&str]) {
    let want = *from + expected.len();
    eventually(&format!("notifications {expected:?}"), || {
        seen.lock().len() >= want
    })
    .await;
    let got: Vec<String> = seen.lock()[*from..want].to_vec();
    assert_eq!(got, expected);
    *from = want;
}

fn store_names(informer: &SharedInformer<Pod>) -> Vec<String> {
    let mut names: Vec<String> = informer
        .store()
        .list_keys()
        .into_iter()
        .map(|k| k.name)
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn informer_follows_watch_resumes_after_drop_and_relists_on_410() {
    let server = FakePods::start().await;
    for name in ["a", "b", "c"] {
        server.add(name);
    }
    let informer = SharedInformer::<Pod>::new(Api::all(server.client()), Duration::ZERO);
    let seen = record(&informer);
    let shutdown = Shutdown::new();
    assert!(informer.start(shutdown.clone()));
    assert!(!informer.start(shutdown.clone()), "start is idempotent");
    let synced = tokio::time::timeout(
        Duration::from_secs(10),
        wait_for_cache_sync("test", &[&informer], &shutdown),
    )
    .await
    .expect("informer never synced: list likely failed");
    assert!(synced);
    let mut at = 0;
    expect_next(&seen, &mut at, &["add a", "add b", "add c"]).await;
    {
        let lists = server.state.lock().lists.clone();
        assert_eq!(lists.len(), 1);
        // The first list may come from the watch cache (resourceVersion=0), in pages of 500.
        assert_eq!(
            lists[0].get("resourceVersion").map(String::as_str),
            Some("0")
        );
        assert_eq!(lists[0].get("limit").map(String::as_str), Some("500"));
    }

    // Watch events in order.
    eventually("watch open", || server.open_watches() == 1).await;
    server.modify("a");
    server.add("d");
    server.delete("b");
    expect_next(&seen, &mut at, &["update a", "add d", "delete b"]).await;
    {
        let watches = server.state.lock().watches.clone();
        let w = &watches[0];
        assert_eq!(w.get("resourceVersion").map(String::as_str), Some("3"));
        assert_eq!(
            w.get("allowWatchBookmarks").map(String::as_str),
            Some("true")
        );
        let timeout: u64 = w["timeoutSeconds"].parse().expect("numeric timeout");
        assert!((300..600).contains(&timeout), "timeout {timeout}");
    }

    // A bookmark moves the resource version; a dropped watch resumes from it without a relist.
    let bookmark_rv = server.bookmark();
    // The bookmark is applied before the stream ends, because the stream is read in order.
    server.drop_watches();
    eventually("rewatch", || server.watch_count() == 2).await;
    assert_eq!(
        server.state.lock().watches[1]
            .get("resourceVersion")
            .cloned(),
        Some(bookmark_rv.to_string())
    );
    assert_eq!(server.list_count(), 1, "a dropped watch does not relist");
    eventually("watch reopened", || server.open_watches() == 1).await;
    server.modify("c");
    expect_next(&seen, &mut at, &["update c"]).await;

    // 410 Gone: relist; c vanished meanwhile and becomes a tombstone. a and d come back with the
    // resource versions the cache has: for client-go (`OnUpdate`) that is a resync, which the
    // handlers of an informer without resync never get.
    server.delete_silently("c");
    server.state.lock().expire_next_watch = true;
    server.drop_watches();
    expect_next(&seen, &mut at, &["tombstone default/c"]).await;
    assert_eq!(server.list_count(), 2);
    {
        // The relist asks for data at least as fresh as the last resource version seen, in one
        // page since the server did not page the first answer.
        let lists = server.state.lock().lists.clone();
        let rv = lists[1].get("resourceVersion").cloned().unwrap_or_default();
        assert!(!rv.is_empty() && rv != "0", "relist at {rv:?}");
        assert_eq!(lists[1].get("limit"), None);
    }
    assert_eq!(store_names(&informer), ["a", "d"]);
    assert!(informer
        .store()
        .get(&ObjectKey::new("default", "c"))
        .is_none());

    // A handler added late first gets an Add for everything cached.
    let late = record(&informer);
    eventually("late handler snapshot", || late.lock().len() == 2).await;
    let mut snapshot = late.lock().clone();
    snapshot.sort();
    assert_eq!(snapshot, ["add a", "add d"]);
    eventually("watch reopened after relist", || server.open_watches() == 1).await;
    server.add("e");
    expect_next(&seen, &mut at, &["add e"]).await;
    eventually("late handler sees new events", || {
        late.lock().last().map(String::as_str) == Some("add e")
    })
    .await;

    shutdown.cancel();
}

#[tokio::test]
async fn a_relist_at_a_gone_resource_version_lists_the_latest_at_once() {
    let server = FakePods::start().await;
    server.add("a");
    let informer = SharedInformer::<Pod>::new(Api::all(server.client()), Duration::ZERO);
    let shutdown = Shutdown::new();
    informer.start(shutdown.clone());
    assert!(wait_for_cache_sync("test", &[&informer], &shutdown).await);
    eventually("watch open", || server.open_watches() == 1).await;
    server.add("b");
    eventually("b cached", || store_names(&informer) == ["a", "b"]).await;
    {
        let mut s = server.state.lock();
        s.oldest_listable_rv = u64::MAX;
        s.expire_next_watch = true;
    }
    server.drop_watches();
    eventually("relisted twice", || server.list_count() == 3).await;
    let lists = server.state.lock().lists.clone();
    assert_eq!(
        lists[1].get("resourceVersion").map(String::as_str),
        Some("2")
    );
    // 410 for the last resource version: the latest, consistent list (no resourceVersion).
    assert_eq!(lists[2].get("resourceVersion"), None);
    assert_eq!(lists[2].get("limit").map(String::as_str), Some("500"));
    shutdown.cancel();
}

#[tokio::test]
async fn a_watch_closed_at_once_without_events_sends_the_reflector_back_to_a_list() {
    let server = FakePods::start().await;
    server.add("a");
    let informer = SharedInformer::<Pod>::new(Api::all(server.client()), Duration::ZERO);
    let shutdown = Shutdown::new();
    informer.start(shutdown.clone());
    assert!(wait_for_cache_sync("test", &[&informer], &shutdown).await);
    eventually("watch open", || server.open_watches() == 1).await;
    server.state.lock().close_watches_at_once = true;
    server.drop_watches();
    eventually("relisted", || server.list_count() >= 2).await;
    // Each watch that closes at once leads to a list (after the backoff), never to a tight
    // loop of rewatches.
    let (lists, watches) = (server.list_count(), server.watch_count());
    assert!(watches <= lists + 1, "{watches} watches for {lists} lists");
    shutdown.cancel();
}

#[tokio::test]
async fn a_factory_transform_trims_what_is_cached_listed_or_watched() {
    let server = FakePods::start().await;
    let with_fields = |name: &str| {
        let mut p = support::fake_pods::pod(name);
        p.metadata.managed_fields = Some(vec![Default::default()]);
        p
    };
    server.add_pod(with_fields("listed"));
    let factory = rkcm_runtime::informer::InformerFactory::with_transform(
        server.client(),
        Duration::ZERO,
        rkcm_runtime::informer::trim_managed_fields,
    );
    let informer = factory.informer::<Pod>();
    let seen: Arc<Mutex<Vec<bool>>> = Arc::default();
    let sink = Arc::clone(&seen);
    informer.add_event_handler(move |n| {
        if let Notification::Add(p) = n {
            sink.lock().push(p.metadata.managed_fields.is_some());
        }
    });
    let shutdown = Shutdown::new();
    factory.start(shutdown.clone());
    assert!(factory.wait_for_cache_sync(&shutdown).await);
    assert!(
        informer.set_transform(|_: &mut Pod| {}).is_err(),
        "a started informer keeps its transform"
    );
    eventually("watch open", || server.open_watches() == 1).await;
    server.add_pod(with_fields("watched"));
    eventually("both seen", || seen.lock().len() == 2).await;
    assert_eq!(*seen.lock(), [false, false]);
    assert!(informer
        .store()
        .list()
        .iter()
        .all(|p| p.metadata.managed_fields.is_none()));
    shutdown.cancel();
}

#[tokio::test]
async fn first_list_is_paginated_by_500() {
    let server = FakePods::start().await;
    for i in 0..1201 {
        server.add(&format!("p{i:04}"));
    }
    let factory = InformerFactory::new(server.client(), Duration::ZERO);
    let informer = factory.informer::<Pod>();
    let shutdown = Shutdown::new();
    factory.start(shutdown.clone());
    let synced = tokio::time::timeout(
        Duration::from_secs(20),
        factory.wait_for_cache_sync(&shutdown),
    )
    .await
    .expect("factory never synced");
    assert!(synced);
    assert_eq!(informer.store().len(), 1201);
    let lists = server.state.lock().lists.clone();
    assert_eq!(lists.len(), 3);
    assert_eq!(lists[1].get("continue").map(String::as_str), Some("500"));
    assert_eq!(lists[2].get("continue").map(String::as_str), Some("1000"));
    shutdown.cancel();
    tokio::time::timeout(Duration::from_secs(5), factory.stopped())
        .await
        .expect("informer tasks end after shutdown");
}

#[tokio::test]
async fn resync_delivers_every_cached_object_as_an_update_to_itself() {
    let server = FakePods::start().await;
    server.add("a");
    let informer = SharedInformer::<Pod>::new(Api::all(server.client()), Duration::from_secs(1));
    let resynced = Arc::new(Mutex::new(0usize));
    let counter = Arc::clone(&resynced);
    informer.add_event_handler(move |n| {
        if let Notification::Update { old, new } = n {
            if Arc::ptr_eq(&old, &new) {
                *counter.lock() += 1;
            }
        }
    });
    let shutdown = Shutdown::new();
    informer.start(shutdown.clone());
    eventually("a resync", || *resynced.lock() >= 1).await;
    shutdown.cancel();
}

#[tokio::test]
async fn an_undecodable_event_makes_the_reflector_relist() {
    let server = FakePods::start().await;
    server.add("a");
    let informer = SharedInformer::<Pod>::new(Api::all(server.client()), Duration::ZERO);
    let seen = record(&informer);
    let shutdown = Shutdown::new();
    informer.start(shutdown.clone());
    let mut at = 0;
    expect_next(&seen, &mut at, &["add a"]).await;
    eventually("watch open", || server.open_watches() == 1).await;
    server.delete_silently("a");
    server.send_garbage();
    // After a backoff (0.8–1.6 s) the reflector relists and finds a gone.
    expect_next(&seen, &mut at, &["tombstone default/a"]).await;
    assert_eq!(server.list_count(), 2);
    assert!(informer.store().is_empty());
    shutdown.cancel();
}
