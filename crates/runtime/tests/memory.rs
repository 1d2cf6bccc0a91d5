//! Memory an informer holds per cached pod, counted by the global allocator.
//!
//! How the bound was chosen: the pods are those `rkcm up` stores for a bare pod in the `default`
//! namespace (admission's service-account volume, tolerations and defaults: 2.4 KB of JSON with
//! its managedFields, 1.3 KB without). A decoded `k8s_openapi` Pod of that shape takes about
//! 10 KB, most of it the inline size of `Container` and `Volume` (every optional part is held in
//! place, not behind a pointer). The store therefore holds pods as their JSON and decodes them
//! on read. Measured with this test: 1.7 KB per listed pod and 2.0 KB per watched pod (the JSON,
//! the shared key and the three built-in indices); 10.3 KB and 9.9 KB while pods were cached
//! decoded (each key stored once, spare list capacity trimmed), 12.0 KB and 11.4 KB before that.
//! 3 KB leaves about 50 % for allocator and library changes, and fails when the cache keeps a
//! decoded copy of each pod next to its bytes, or holds pods decoded again; the managedFields
//! trim is checked directly. The decoded objects the store keeps of its recent inserts (a
//! bounded number, for seconds) are dropped before measuring, as they are once they age out. Counting allocated bytes rather than RSS makes the figure exact and
//! free of arena noise.
//!
//! The test also prints what reading the cache costs: the time `list` takes per pod, which is
//! one decode: about 120 µs per pod in a debug build.

mod support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use rkcm_runtime::informer::{trim_managed_fields, InformerFactory};
use rkcm_runtime::Shutdown;
use support::eventually;
use support::fake_pods::FakePods;

/// Bytes allocated and not yet freed, process-wide.
static LIVE: AtomicIsize = AtomicIsize::new(0);

struct Counting;

// SAFETY: every call is forwarded to `System` unchanged; the counter only observes sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_add(
                new_size as isize - layout.size() as isize,
                Ordering::Relaxed,
            );
        }
        p
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

const LISTED: usize = 5_000;
const WATCHED: usize = 1_000;
const BOUND_PER_POD: isize = 3 * 1024;

/// A pod as `rkcm up` stores it for `{"metadata": {"name": …, "labels": …}, "spec":
/// {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}}` in `default`.
fn stored_pod(i: usize) -> Pod {
    let name = format!("p-{i:06}");
    let text = format!(
        r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{name}","namespace":"default",
        "labels":{{"app":"memory","shard":"s{shard}"}},"uid":"3242f53a-653b-4549-8739-{i:012}",
        "creationTimestamp":"2026-11-28T19:18:34Z","generation":1,
        "managedFields":[{{"operation":"Update","apiVersion":"v1","time":"2026-11-28T19:18:34Z",
        "fieldsType":"FieldsV1","fieldsV1":{{"f:metadata":{{"f:labels":{{".":{{}},"f:app":{{}},
        "f:shard":{{}}}}}},"f:spec":{{"f:containers":{{"k:{{\"name\":\"c\"}}":{{".":{{}},
        "f:image":{{}},"f:imagePullPolicy":{{}},"f:name":{{}},"f:resources":{{}},
        "f:terminationMessagePath":{{}},"f:terminationMessagePolicy":{{}}}}}},
        "f:dnsPolicy":{{}},"f:enableServiceLinks":{{}},"f:restartPolicy":{{}},
        "f:schedulerName":{{}},"f:securityContext":{{}},"f:terminationGracePeriodSeconds":{{}}}}}}}}]}},
        "spec":{{"containers":[{{"name":"c","image":"registry.k8s.io/pause:3.10",
        "imagePullPolicy":"IfNotPresent","terminationMessagePath":"/dev/termination-log",
        "terminationMessagePolicy":"File","resources":{{}},"volumeMounts":[{{
        "name":"kube-api-access-bbfc6","readOnly":true,
        "mountPath":"/var/run/secrets/kubernetes.io/serviceaccount"}}]}}],
        "dnsPolicy":"ClusterFirst","restartPolicy":"Always","securityContext":{{}},
        "terminationGracePeriodSeconds":30,"schedulerName":"default-scheduler",
        "enableServiceLinks":true,"serviceAccountName":"default",
        "volumes":[{{"name":"kube-api-access-bbfc6","projected":{{"defaultMode":420,"sources":[
        {{"serviceAccountToken":{{"path":"token","expirationSeconds":3607}}}},
        {{"configMap":{{"name":"kube-root-ca.crt","items":[{{"key":"ca.crt","path":"ca.crt"}}]}}}},
        {{"downwardAPI":{{"items":[{{"path":"namespace","fieldRef":{{"apiVersion":"v1",
        "fieldPath":"metadata.namespace"}}}}]}}}}]}}}}],
        "preemptionPolicy":"PreemptLowerPriority","priority":0,
        "tolerations":[{{"key":"node.kubernetes.io/not-ready","operator":"Exists",
        "effect":"NoExecute","tolerationSeconds":300}},{{"key":"node.kubernetes.io/unreachable",
        "operator":"Exists","effect":"NoExecute","tolerationSeconds":300}}]}},
        "status":{{"phase":"Pending","qosClass":"BestEffort"}}}}"#,
        shard = i % 16,
    );
    serde_json::from_str(&text).expect("a stored pod")
}

fn live() -> isize {
    LIVE.load(Ordering::Relaxed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_informer_holds_less_than_the_bound_per_cached_pod() {
    let server = FakePods::start().await;
    for i in 0..LISTED {
        server.add_pod(stored_pod(i));
    }
    // kube-controller-manager's factory: managedFields dropped before caching.
    let factory =
        InformerFactory::with_transform(server.client(), Duration::ZERO, trim_managed_fields);
    let informer = factory.informer::<Pod>();
    let store = informer.store();
    let shutdown = Shutdown::new();

    // The first list, in pages of 500.
    let before = live();
    factory.start(shutdown.clone());
    assert!(factory.wait_for_cache_sync(&shutdown).await);
    assert_eq!(store.len(), LISTED);
    eventually("watch open", || server.open_watches() == 1).await;
    let listed = (live() - before) / LISTED as isize;

    // Pods arriving on the watch. What the fake server keeps of each is measured on a second
    // server without watchers, holding the same pods, and taken off.
    // Both get clones, so that what each drops is alike too.
    let decoded: Vec<Pod> = (LISTED..LISTED + WATCHED).map(stored_pod).collect();
    let (pods, copies) = (decoded.clone(), decoded.clone());
    drop(decoded);
    let probe = FakePods::start().await;
    let start = live();
    for pod in copies {
        probe.add_pod(pod);
    }
    let server_share = live() - start;
    let before = live();
    for pod in pods {
        server.add_pod(pod);
    }
    eventually("watched pods cached", || store.len() == LISTED + WATCHED).await;
    // Watched pods keep their decoded object beside the bytes while they are among the store's
    // recent inserts (at most 1,024, for seconds): what that adds is printed, and the bound holds
    // for the compact form the store keeps once they have aged out.
    let with_recent = (live() - before - server_share) / WATCHED as isize;
    store.forget_recent();
    // The watch's line buffer and in-flight frames settle within a few polls.
    let mut watched = isize::MAX;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while tokio::time::Instant::now() < deadline {
        watched = watched.min((live() - before - server_share) / WATCHED as isize);
        if watched < BOUND_PER_POD {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    println!(
        "bytes held per cached pod: {listed} listed, {watched} watched \
         ({with_recent} while recent)"
    );
    let started = std::time::Instant::now();
    let pods = store.list();
    let per_pod = started.elapsed() / pods.len() as u32;
    println!("reading every cached pod: {per_pod:?} per pod");
    assert_eq!(pods.len(), LISTED + WATCHED);
    assert!(
        pods.iter().all(|p| p.metadata.managed_fields.is_none()),
        "the transform ran"
    );
    drop(pods);
    assert!(
        listed < BOUND_PER_POD,
        "{listed} bytes per listed pod, bound {BOUND_PER_POD}"
    );
    assert!(
        watched < BOUND_PER_POD,
        "{watched} bytes per watched pod, bound {BOUND_PER_POD}"
    );
    shutdown.cancel();
}
