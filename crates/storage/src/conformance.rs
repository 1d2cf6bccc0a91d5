//! The storage contract as one list of tests that every [`Backend`] must pass.
//!
//! Each test is an async function over a [`Harness`], which opens backends on one data set;
//! [`storage_conformance_tests!`](crate::storage_conformance_tests) turns the whole list into
//! `#[tokio::test]`s for one harness, so a new backend gets every test by naming its harness once
//! (`tests/storage_conformance.rs`). Mirrors kube's `storage/testing` suite, which its etcd3 store
//! and its cacher both run.
//!
//! Panics on a failed check (tests only).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use parking_lot::Mutex;

use super::{Backend, Error, StorageEvent, WriteOp};

/// Opens backends on one data set.
#[async_trait::async_trait]
pub trait Harness: Send + Sync {
    /// A backend on this harness's data (empty the first time).
    async fn open(&self) -> Arc<dyn Backend>;
    /// Whether the data outlives the backend: dropping it and opening again finds everything.
    fn durable(&self) -> bool;
    /// Whether two backends open at once share the data (two API servers on one etcd).
    fn shared(&self) -> bool;
}

/// What a sink received.
#[derive(Clone, Default)]
pub struct Recorder {
    events: Arc<Mutex<Vec<StorageEvent>>>,
}

impl Recorder {
    /// Loads `backend` and installs a recording sink, as the store does; returns the loaded
    /// revision.
    pub async fn attach(backend: &dyn Backend) -> (Self, i64) {
        let (_, revision) = backend.load().await.expect("load");
        let rec = Self::default();
        let sink = rec.clone();
        backend.set_sink(Arc::new(move |ev| sink.push(ev)));
        (rec, revision)
    }

    /// Records `ev` (the sink [`attach`](Self::attach) installs).
    pub fn push(&self, ev: StorageEvent) {
        self.events.lock().push(ev);
    }

    /// The revisions received, in order.
    pub fn revisions(&self) -> Vec<i64> {
        self.events.lock().iter().map(|e| e.revision).collect()
    }

    /// The events received.
    pub fn events(&self) -> Vec<StorageEvent> {
        self.events.lock().clone()
    }

    /// Waits until an event for `key` at `revision` or later arrived (another backend's write).
    pub async fn wait_for(&self, key: &str, revision: i64) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            if self
                .events
                .lock()
                .iter()
                .any(|e| e.key == key && e.revision >= revision)
            {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "no event for {key} at {revision} within 20s: the backend's watch is likely stuck"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

fn create(key: &str, value: &str) -> WriteOp {
    WriteOp::Create {
        key: key.into(),
        value: Bytes::from(value.to_string()),
    }
}

/// Creates, updates and deletes get increasing revisions; compare-and-swap is enforced.
pub async fn writes_get_increasing_revisions_and_cas_is_checked(h: &dyn Harness) {
    let b = h.open().await;
    let _rec = Recorder::attach(&*b).await;
    let (r1, prev) = b.write(create("/a", "1"), None).await.expect("create");
    assert_eq!(prev, None);
    assert!(matches!(
        b.write(create("/a", "1"), None).await,
        Err(Error::AlreadyExists(_))
    ));
    let (r2, prev) = b
        .write(
            WriteOp::Update {
                key: "/a".into(),
                value: Bytes::from_static(b"2"),
                expected_revision: r1,
            },
            None,
        )
        .await
        .expect("update");
    assert!(r2 > r1);
    let prev = prev.expect("update returns the previous value");
    assert_eq!((prev.mod_revision, &prev.value[..]), (r1, &b"1"[..]));
    match b
        .write(
            WriteOp::Update {
                key: "/a".into(),
                value: Bytes::from_static(b"3"),
                expected_revision: r1,
            },
            None,
        )
        .await
    {
        Err(Error::Conflict {
            expected, actual, ..
        }) => assert_eq!((expected, actual), (r1, r2)),
        other => panic!("stale update: {other:?}"),
    }
    assert!(matches!(
        b.write(
            WriteOp::Delete {
                key: "/a".into(),
                expected_revision: Some(r1),
            },
            None
        )
        .await,
        Err(Error::Conflict { .. })
    ));
    let kv = b.get("/a").await.expect("get").expect("present");
    assert_eq!((kv.mod_revision, &kv.value[..]), (r2, &b"2"[..]));
    let (r3, prev) = b
        .write(
            WriteOp::Delete {
                key: "/a".into(),
                expected_revision: Some(r2),
            },
            None,
        )
        .await
        .expect("delete");
    assert!(r3 > r2);
    assert_eq!(prev.map(|kv| kv.mod_revision), Some(r2));
    assert_eq!(b.get("/a").await.expect("get"), None);
    assert!(b.current_revision() >= r3);
}

/// Updates and deletes of missing keys are NotFound; a delete without a revision takes any.
pub async fn missing_keys_are_not_found(h: &dyn Harness) {
    let b = h.open().await;
    let _rec = Recorder::attach(&*b).await;
    assert!(matches!(
        b.write(
            WriteOp::Update {
                key: "/missing".into(),
                value: Bytes::from_static(b"x"),
                expected_revision: 1,
            },
            None
        )
        .await,
        Err(Error::NotFound(_))
    ));
    for expected_revision in [None, Some(1)] {
        assert!(matches!(
            b.write(
                WriteOp::Delete {
                    key: "/missing".into(),
                    expected_revision,
                },
                None
            )
            .await,
            Err(Error::NotFound(_))
        ));
    }
    assert_eq!(b.get("/missing").await.expect("get"), None);
    let (r1, _) = b.write(create("/k", "v"), None).await.expect("create");
    let (_, prev) = b
        .write(
            WriteOp::Delete {
                key: "/k".into(),
                expected_revision: None,
            },
            None,
        )
        .await
        .expect("delete");
    let prev = prev.expect("previous value");
    assert_eq!((prev.mod_revision, &prev.value[..]), (r1, &b"v"[..]));
}

/// The sink gets every committed write once, in revision order, before its write resolves.
pub async fn the_sink_sees_every_write_in_order_before_it_resolves(h: &dyn Harness) {
    let b = h.open().await;
    let (rec, loaded) = Recorder::attach(&*b).await;
    let mut revisions = Vec::new();
    for i in 0..20 {
        let key = format!("/s/{i}");
        // Half the writes come with their value already decoded, as the store passes it.
        let json = serde_json::json!({ "i": i });
        let decoded = (i % 2 == 0).then(|| json.clone());
        let bytes = json.to_string();
        let (rev, _) = b
            .write(create(&key, &bytes), decoded)
            .await
            .expect("create");
        let seen = rec.events();
        let ev = seen
            .iter()
            .find(|e| e.revision == rev)
            .expect("the sink saw the write before it resolved");
        assert_eq!(
            (ev.key.as_str(), ev.value.as_deref()),
            (&*key, Some(bytes.as_bytes()))
        );
        if let Some(d) = &ev.decoded {
            assert_eq!(d, &json, "a decoded value equals the stored bytes");
        }
        assert_eq!(
            ev.decoded.is_some(),
            i % 2 == 0,
            "the writer's decoded value reaches the sink, and only it"
        );
        revisions.push(rev);
    }
    let (rev, _) = b
        .write(
            WriteOp::Delete {
                key: "/s/0".into(),
                expected_revision: None,
            },
            None,
        )
        .await
        .expect("delete");
    let deleted = rec.events().into_iter().find(|e| e.revision == rev);
    assert_eq!(
        deleted.map(|e| (e.key, e.value)),
        Some(("/s/0".into(), None))
    );
    revisions.push(rev);
    assert_eq!(rec.revisions(), revisions, "each write once, in order");
    assert!(revisions[0] > loaded);
    assert!(revisions.windows(2).all(|w| w[0] < w[1]));
}

/// Concurrent creates of one key: exactly one wins, the others find it taken.
pub async fn concurrent_creates_of_one_key_let_exactly_one_win(h: &dyn Harness) {
    let b = h.open().await;
    let _rec = Recorder::attach(&*b).await;
    let results =
        futures::future::join_all((0..8).map(|i| b.write(create("/race", &i.to_string()), None)))
            .await;
    let won = results.iter().filter(|r| r.is_ok()).count();
    let taken = results
        .iter()
        .filter(|r| matches!(r, Err(Error::AlreadyExists(_))))
        .count();
    assert_eq!((won, taken), (1, 7), "{results:?}");
}

/// Many writers at once, some of whose writes fail their preconditions: each write gets its own
/// result, a failed one takes no revision and fails no other, and the sink sees exactly the
/// successful writes, in strictly increasing revisions (what a backend committing concurrent
/// writes together must keep).
pub async fn concurrent_writes_each_get_their_own_result(h: &dyn Harness) {
    let b = h.open().await;
    let (rec, loaded) = Recorder::attach(&*b).await;
    let mut existing = Vec::new();
    for i in 0..16 {
        let (rev, _) = b
            .write(create(&format!("/c/old/{i:02}"), "v0"), None)
            .await
            .expect("create");
        existing.push(rev);
    }
    let first_concurrent = rec.revisions().len();
    // By index modulo 6: 0 creates a new key (ok); 1 creates an existing key (AlreadyExists);
    // 2 updates an existing key at its revision (ok, the first eight), or at a stale one
    // (Conflict), as 3 does; 4 deletes a missing key (NotFound); 5 deletes an existing key at its
    // revision (ok, the first eight), or a missing key (NotFound). Ops 1 to 3 touch even keys,
    // 5 odd ones.
    let old = |n: usize| format!("/c/old/{:02}", n % 16);
    let writes = (0..96usize).map(|i| {
        let op = match i % 6 {
            0 => create(&format!("/c/new/{i:02}"), &format!("n{i}")),
            1 => create(&old(2 * i), "again"),
            2 if i < 48 => WriteOp::Update {
                key: old(i),
                value: Bytes::from(format!("u{i}")),
                expected_revision: existing[i % 16],
            },
            2 | 3 => WriteOp::Update {
                key: old(2 * i),
                value: Bytes::from_static(b"stale"),
                expected_revision: loaded,
            },
            5 if i < 48 => WriteOp::Delete {
                key: old(i),
                expected_revision: Some(existing[i % 16]),
            },
            _ => WriteOp::Delete {
                key: format!("/c/missing/{i:02}"),
                expected_revision: (i % 2 == 0).then_some(1),
            },
        };
        let b = Arc::clone(&b);
        async move { (i, b.write(op, None).await) }
    });
    let results = futures::future::join_all(writes).await;
    let mut succeeded = Vec::new();
    for (i, result) in &results {
        match (i % 6, result) {
            (0, Ok((rev, None))) => succeeded.push(*rev),
            (1, Err(Error::AlreadyExists(_))) => {}
            (2 | 5, Ok((rev, Some(prev)))) if *i < 48 => {
                assert_eq!(prev.mod_revision, existing[i % 16], "write {i}");
                succeeded.push(*rev);
            }
            (2 | 3, Err(Error::Conflict { .. })) if i % 6 == 3 || *i >= 48 => {}
            (4 | 5, Err(Error::NotFound(_))) if i % 6 == 4 || *i >= 48 => {}
            (kind, other) => panic!("write {i} (kind {kind}) answered {other:?}"),
        }
    }
    succeeded.sort_unstable();
    let before = succeeded.len();
    succeeded.dedup();
    assert_eq!(
        succeeded.len(),
        before,
        "each successful write has its own revision"
    );
    let events = rec.events()[first_concurrent..].to_vec();
    let seen: Vec<i64> = events.iter().map(|e| e.revision).collect();
    assert!(
        seen.windows(2).all(|w| w[0] < w[1]),
        "the sink sees strictly increasing revisions: {seen:?}"
    );
    assert_eq!(
        seen, succeeded,
        "the sink sees exactly the successful writes"
    );
    assert!(seen
        .first()
        .is_some_and(|r| *r > *existing.last().expect("rev")));
    for (i, result) in &results {
        if let Ok((rev, _)) = result {
            let ev = events.iter().find(|e| e.revision == *rev).expect("event");
            let expected = match i % 6 {
                0 => Some(format!("n{i}")),
                2 => Some(format!("u{i}")),
                _ => None,
            };
            assert_eq!(
                ev.value.as_deref(),
                expected.as_deref().map(str::as_bytes),
                "write {i}"
            );
        }
    }
}

/// `load` returns every value (more than one page of a paginated backend) at one revision.
pub async fn load_returns_every_value_at_one_revision(h: &dyn Harness) {
    let b = h.open().await;
    let _rec = Recorder::attach(&*b).await;
    let mut last = 0;
    for chunk in (0..1100).collect::<Vec<_>>().chunks(100) {
        let writes = chunk
            .iter()
            .map(|i| b.write(create(&format!("/l/{i:05}"), &format!("v{i}")), None));
        for r in futures::future::join_all(writes).await {
            last = last.max(r.expect("create").0);
        }
    }
    let (items, revision) = b.load().await.expect("load");
    assert!(revision >= last, "loaded at {revision}, last write {last}");
    let mut keys: Vec<&str> = items.iter().map(|kv| kv.key.as_str()).collect();
    keys.sort_unstable();
    keys.dedup();
    assert_eq!(keys.len(), 1100);
    let kv = items
        .iter()
        .find(|kv| kv.key == "/l/00042")
        .expect("loaded");
    assert_eq!(&kv.value[..], b"v42");
    assert!(items.iter().all(|kv| kv.mod_revision <= revision));
}

/// A durable backend keeps values and continues its revisions after a reopen.
pub async fn data_and_revision_survive_reopen(h: &dyn Harness) {
    if !h.durable() {
        return;
    }
    let rev = {
        let b = h.open().await;
        let _rec = Recorder::attach(&*b).await;
        let writes =
            (0..50).map(|i| b.write(create(&format!("/k/{i:03}"), &format!("v{i}")), None));
        for r in futures::future::join_all(writes).await {
            r.expect("create");
        }
        let (rev, _) = b
            .write(
                WriteOp::Delete {
                    key: "/k/000".into(),
                    expected_revision: None,
                },
                None,
            )
            .await
            .expect("delete");
        rev
    };
    let b = h.open().await;
    let (items, loaded) = b.load().await.expect("load");
    assert!(loaded >= rev, "loaded at {loaded} after a write at {rev}");
    assert_eq!(
        items.iter().filter(|kv| kv.key.starts_with("/k/")).count(),
        49
    );
    let kv = b.get("/k/007").await.expect("get").expect("present");
    assert_eq!(&kv.value[..], b"v7");
    let _rec = Recorder::attach(&*b).await;
    let (next, _) = b.write(create("/k/new", "x"), None).await.expect("create");
    assert!(next > rev, "revisions continue: {next} after {rev}");
}

/// Two backends on shared data: each sink sees the other's writes, and compare-and-swap holds
/// across them.
pub async fn writes_through_one_backend_reach_the_others_sink(h: &dyn Harness) {
    if !h.shared() {
        return;
    }
    let (a, b) = (h.open().await, h.open().await);
    let (rec_a, _) = Recorder::attach(&*a).await;
    let (rec_b, _) = Recorder::attach(&*b).await;
    let (r1, _) = a.write(create("/x", "from-a"), None).await.expect("create");
    rec_b.wait_for("/x", r1).await;
    assert!(matches!(
        b.write(create("/x", "from-b"), None).await,
        Err(Error::AlreadyExists(_))
    ));
    let (r2, _) = b
        .write(
            WriteOp::Update {
                key: "/x".into(),
                value: Bytes::from_static(b"by-b"),
                expected_revision: r1,
            },
            None,
        )
        .await
        .expect("update through b");
    rec_a.wait_for("/x", r2).await;
    let ev = rec_a
        .events()
        .into_iter()
        .find(|e| e.revision == r2)
        .expect("a saw b's update");
    assert_eq!(ev.value.as_deref(), Some(&b"by-b"[..]));
    assert!(matches!(
        a.write(
            WriteOp::Update {
                key: "/x".into(),
                value: Bytes::from_static(b"stale"),
                expected_revision: r1,
            },
            None
        )
        .await,
        Err(Error::Conflict { .. })
    ));
}

/// Defines one `#[tokio::test]` per conformance test for a harness.
///
/// `$harness` is an expression of type `Option<impl Harness>`, evaluated in each test; `None`
/// skips the test (a backend whose server is not installed, outside CI).
#[macro_export]
macro_rules! storage_conformance_tests {
    ($harness:expr) => {
        $crate::storage_conformance_tests!(@each $harness;
            writes_get_increasing_revisions_and_cas_is_checked,
            missing_keys_are_not_found,
            the_sink_sees_every_write_in_order_before_it_resolves,
            concurrent_creates_of_one_key_let_exactly_one_win,
            concurrent_writes_each_get_their_own_result,
            load_returns_every_value_at_one_revision,
            data_and_revision_survive_reopen,
            writes_through_one_backend_reach_the_others_sink,
        );
    };
    (@each $harness:expr; $($name:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let Some(harness) = $harness else { return };
                tokio::time::timeout(
                    std::time::Duration::from_secs(120),
                    $crate::conformance::$name(&harness),
                )
                .await
                .expect("the backend likely hangs");
            }
        )*
    };
}
