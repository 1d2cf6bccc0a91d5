//! The simulated nodes against the in-process API server: registration, scheduling, the kubelet
//! stand-in's conventions, graceful deletion and node capacity.

use std::future::Future;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use rkcm_apiserver::testing::{self, TestServer};
use rkcm_nodesim::{Config, NodeSim, FAIL_ANNOTATION, NEVER_READY_ANNOTATION};
use rkcm_runtime::testing::pod_spec;
use rkcm_runtime::Shutdown;

const DEADLINE: Duration = Duration::from_secs(20);

/// A server plus a running simulator; everything stops when dropped.
struct Cluster {
    _server: TestServer,
    client: Client,
    shutdown: Shutdown,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

async fn cluster(config: Config) -> Cluster {
    let server = testing::start().await;
    let client = server.client();
    let shutdown = Shutdown::new();
    let sim = NodeSim::new(client.clone(), config);
    tokio::spawn(sim.run(shutdown.clone()));
    Cluster {
        _server: server,
        client,
        shutdown,
    }
}

fn fast_config(nodes: usize) -> Config {
    Config {
        nodes,
        pod_ready_delay: Duration::from_millis(100),
        termination_grace_cap: Some(Duration::from_secs(1)),
        ..Config::default()
    }
}

/// Polls `check` until it returns `Some`, failing with `what` after [`DEADLINE`].
async fn eventually<T, F, Fut>(what: &str, mut check: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        if let Some(value) = check().await {
            return Ok(value);
        }
        if tokio::time::Instant::now() > deadline {
            bail!("timed out waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn pod(name: &str, image: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            ..Default::default()
        },
        spec: Some(pod_spec("app", image)),
        ..Default::default()
    }
}

fn condition(pod: &Pod, type_: &str) -> Option<(String, Option<String>, Option<String>)> {
    pod.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)
        .map(|c| (c.status.clone(), c.reason.clone(), c.message.clone()))
}

fn phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("")
}

fn is_ready(pod: &Pod) -> bool {
    condition(pod, "Ready").is_some_and(|(status, _, _)| status == "True")
}

async fn get_pod(api: &Api<Pod>, name: &str) -> Option<Pod> {
    api.get_opt(name).await.ok().flatten()
}

#[tokio::test]
async fn nodes_register_ready_with_leases() -> Result<()> {
    let c = cluster(fast_config(3)).await;
    let nodes: Api<Node> = Api::all(c.client.clone());
    let ready = eventually("three Ready nodes", || async {
        let list = nodes.list(&Default::default()).await.ok()?;
        let ready: Vec<Node> = list
            .items
            .into_iter()
            .filter(|n| {
                n.status
                    .as_ref()
                    .and_then(|s| s.conditions.as_ref())
                    .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
            })
            .collect();
        (ready.len() == 3).then_some(ready)
    })
    .await?;
    let mut names: Vec<String> = ready
        .iter()
        .filter_map(|n| n.metadata.name.clone())
        .collect();
    names.sort();
    assert_eq!(names, ["rkcm-node-1", "rkcm-node-2", "rkcm-node-3"]);
    let node = &ready[0];
    let labels = node.metadata.labels.clone().unwrap_or_default();
    assert_eq!(
        labels.get("kubernetes.io/os").map(String::as_str),
        Some("linux")
    );
    let status = node.status.clone().context("node status")?;
    assert!(status
        .allocatable
        .context("allocatable")?
        .contains_key("pods"));

    let leases: Api<Lease> = Api::namespaced(c.client.clone(), "kube-node-lease");
    eventually("a lease per node", || async {
        let list = leases.list(&Default::default()).await.ok()?;
        let renewed = list
            .items
            .iter()
            .filter(|l| {
                l.spec
                    .as_ref()
                    .and_then(|s| s.renew_time.as_ref())
                    .is_some()
            })
            .count();
        (renewed == 3).then_some(())
    })
    .await
}

#[tokio::test]
async fn a_pod_is_scheduled_and_becomes_running_and_ready() -> Result<()> {
    let c = cluster(fast_config(2)).await;
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), "default");
    pods.create(&PostParams::default(), &pod("web", "nginx:1.27"))
        .await?;
    let running = eventually("web Running and Ready", || async {
        let p = get_pod(&pods, "web").await?;
        (phase(&p) == "Running" && is_ready(&p)).then_some(p)
    })
    .await?;
    let spec = running.spec.clone().context("spec")?;
    assert!(spec.node_name.unwrap_or_default().starts_with("rkcm-node-"));
    let status = running.status.clone().context("status")?;
    assert!(status.pod_ip.unwrap_or_default().starts_with("10.244."));
    assert!(status.host_ip.unwrap_or_default().starts_with("10.0."));
    assert!(status.start_time.is_some());
    let container = &status.container_statuses.context("container statuses")?[0];
    assert!(container.ready);
    assert!(container
        .container_id
        .clone()
        .unwrap_or_default()
        .starts_with("rkcm://"));
    assert!(container
        .state
        .as_ref()
        .and_then(|s| s.running.as_ref())
        .is_some());
    for type_ in ["PodScheduled", "Initialized", "ContainersReady", "Ready"] {
        assert_eq!(
            condition(&running, type_).map(|c| c.0).as_deref(),
            Some("True"),
            "{type_}"
        );
    }

    // Once settled, the simulator leaves the pod alone: after a later pod became ready, the first
    // one has not been written again.
    let settled = get_pod(&pods, "web").await.context("web")?;
    pods.create(&PostParams::default(), &pod("later", "nginx"))
        .await?;
    eventually("later Ready", || async {
        get_pod(&pods, "later").await.filter(is_ready)
    })
    .await?;
    let again = get_pod(&pods, "web").await.context("web")?;
    assert_eq!(
        again.metadata.resource_version,
        settled.metadata.resource_version
    );
    Ok(())
}

#[tokio::test]
async fn a_pod_whose_node_selector_matches_no_node_stays_pending_and_unschedulable() -> Result<()> {
    let c = cluster(fast_config(3)).await;
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), "default");
    let mut p = pod("picky", "nginx");
    p.spec.as_mut().context("spec")?.node_selector =
        Some([("disk".to_string(), "ssd".to_string())].into());
    // Wait for the nodes so that the message counts all three.
    let nodes: Api<Node> = Api::all(c.client.clone());
    eventually("three nodes", || async {
        (nodes.list(&Default::default()).await.ok()?.items.len() == 3).then_some(())
    })
    .await?;
    pods.create(&PostParams::default(), &p).await?;
    let (status, reason, message) = eventually(
        "PodScheduled=False with all three nodes counted",
        || async {
            let p = get_pod(&pods, "picky").await?;
            condition(&p, "PodScheduled")
                .filter(|c| c.2.as_deref().is_some_and(|m| m.starts_with("0/3")))
        },
    )
    .await?;
    assert_eq!(status, "False");
    assert_eq!(reason.as_deref(), Some("Unschedulable"));
    assert_eq!(
        message.as_deref(),
        Some("0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.")
    );
    let p = get_pod(&pods, "picky").await.context("pod")?;
    assert_eq!(phase(&p), "Pending");
    assert!(p.spec.and_then(|s| s.node_name).is_none());

    // Labelling a node makes the pod fit: it is retried and bound there.
    let patch = serde_json::json!({ "metadata": { "labels": { "disk": "ssd" } } });
    nodes
        .patch(
            "rkcm-node-2",
            &Default::default(),
            &kube::api::Patch::Merge(&patch),
        )
        .await?;
    let bound = eventually("picky bound after the label", || async {
        get_pod(&pods, "picky").await?.spec?.node_name
    })
    .await?;
    assert_eq!(bound, "rkcm-node-2");
    Ok(())
}

#[tokio::test]
async fn never_ready_pods_run_but_stay_unready() -> Result<()> {
    let c = cluster(fast_config(1)).await;
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), "default");
    let mut annotated = pod("stuck", "nginx");
    annotated.metadata.annotations =
        Some([(NEVER_READY_ANNOTATION.to_string(), "true".to_string())].into());
    pods.create(&PostParams::default(), &annotated).await?;
    pods.create(
        &PostParams::default(),
        &pod("stuck-image", "example.com/never-ready:1"),
    )
    .await?;
    pods.create(&PostParams::default(), &pod("fine", "nginx"))
        .await?;
    // Once the ordinary pod is ready, the others had as long to become ready.
    eventually("fine Ready", || async {
        get_pod(&pods, "fine").await.filter(is_ready)
    })
    .await?;
    for name in ["stuck", "stuck-image"] {
        let p = eventually("never-ready pod Running", || async {
            get_pod(&pods, name).await.filter(|p| phase(p) == "Running")
        })
        .await?;
        let (status, reason, _) = condition(&p, "Ready").context("Ready condition")?;
        assert_eq!(
            (status.as_str(), reason.as_deref()),
            ("False", Some("ContainersNotReady")),
            "{name}"
        );
    }
    Ok(())
}

#[tokio::test]
async fn failing_pods_without_restarts_end_failed() -> Result<()> {
    let c = cluster(fast_config(1)).await;
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), "default");
    let mut failing = pod("broken", "nginx");
    failing.metadata.annotations = Some([(FAIL_ANNOTATION.to_string(), "true".to_string())].into());
    failing.spec.as_mut().context("spec")?.restart_policy = Some("Never".into());
    pods.create(&PostParams::default(), &failing).await?;
    let p = eventually("broken Failed", || async {
        get_pod(&pods, "broken")
            .await
            .filter(|p| phase(p) == "Failed")
    })
    .await?;
    let container = &p
        .status
        .context("status")?
        .container_statuses
        .context("statuses")?[0];
    let terminated = container
        .state
        .as_ref()
        .and_then(|s| s.terminated.as_ref())
        .context("terminated")?;
    assert_eq!(terminated.exit_code, 1);
    Ok(())
}

#[tokio::test]
async fn graceful_deletion_removes_the_pod_after_its_grace_period() -> Result<()> {
    let c = cluster(fast_config(1)).await;
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), "default");
    pods.create(&PostParams::default(), &pod("doomed", "nginx"))
        .await?;
    eventually("doomed Ready", || async {
        get_pod(&pods, "doomed").await.filter(is_ready)
    })
    .await?;
    // The DELETE answers with the pod still there, terminating: its grace period (capped at 1s
    // here) has not passed. (Reading it back afterwards would race with that second.)
    let deleted = pods
        .delete("doomed", &DeleteParams::default().grace_period(30))
        .await?;
    let terminating = deleted
        .left()
        .context("a graceful delete answers with the pod, not a Status")?;
    assert!(terminating.metadata.deletion_timestamp.is_some());
    eventually("doomed removed", || async {
        match pods.get_opt("doomed").await {
            Ok(None) => Some(()),
            _ => None,
        }
    })
    .await?;
    let events: Api<k8s_openapi::api::core::v1::Event> =
        Api::namespaced(c.client.clone(), "default");
    eventually("a Killing event", || async {
        let list = events.list(&Default::default()).await.ok()?;
        list.items
            .iter()
            .any(|e| {
                e.involved_object.name.as_deref() == Some("doomed")
                    && e.reason.as_deref() == Some("Killing")
            })
            .then_some(())
    })
    .await
}

#[tokio::test]
async fn node_pod_capacity_is_respected() -> Result<()> {
    let config = Config {
        pods: "2".into(),
        ..fast_config(1)
    };
    let c = cluster(config).await;
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), "default");
    for name in ["a", "b", "c"] {
        pods.create(&PostParams::default(), &pod(name, "nginx"))
            .await?;
    }
    let message = eventually("one pod unschedulable", || async {
        let list = pods.list(&Default::default()).await.ok()?;
        let running = list.items.iter().filter(|p| phase(p) == "Running").count();
        let pending: Vec<String> = list
            .items
            .iter()
            .filter_map(|p| {
                condition(p, "PodScheduled")
                    .filter(|c| c.0 == "False")
                    .and_then(|c| c.2)
            })
            .collect();
        (running == 2 && pending.len() == 1).then(|| pending[0].clone())
    })
    .await?;
    assert_eq!(message, "0/1 nodes are available: 1 Too many pods.");

    // Deleting a running pod frees a slot for the pending one.
    let list = pods.list(&Default::default()).await?;
    let running = list
        .items
        .iter()
        .find(|p| phase(p) == "Running")
        .and_then(|p| p.metadata.name.clone())
        .context("a running pod")?;
    pods.delete(&running, &DeleteParams::default().grace_period(0))
        .await?;
    eventually("two pods running again", || async {
        let list = pods.list(&Default::default()).await.ok()?;
        (list.items.len() == 2 && list.items.iter().all(|p| phase(p) == "Running")).then_some(())
    })
    .await
}

#[tokio::test]
async fn a_deleted_node_is_no_longer_simulated() -> Result<()> {
    let c = cluster(fast_config(2)).await;
    let nodes: Api<Node> = Api::all(c.client.clone());
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), "default");
    let mut before = pod("before", "nginx");
    before.spec.as_mut().context("spec")?.node_name = Some("rkcm-node-1".into());
    pods.create(&PostParams::default(), &before).await?;
    eventually("before Ready", || async {
        get_pod(&pods, "before").await.filter(is_ready)
    })
    .await?;
    nodes
        .delete("rkcm-node-1", &DeleteParams::default())
        .await?;
    eventually("node gone", || async {
        matches!(nodes.get_opt("rkcm-node-1").await, Ok(None)).then_some(())
    })
    .await?;
    // Give the simulator's node watch time to see the deletion: a pod on the other node, created
    // afterwards, becoming ready shows the kubelet has handled later events.
    let mut probe = pod("probe", "nginx");
    probe.spec.as_mut().context("spec")?.node_name = Some("rkcm-node-2".into());
    pods.create(&PostParams::default(), &probe).await?;
    eventually("probe Ready", || async {
        get_pod(&pods, "probe").await.filter(is_ready)
    })
    .await?;

    // A pod bound to the deleted node by name gets no status from the simulator.
    let mut orphan = pod("orphan", "nginx");
    orphan.spec.as_mut().context("spec")?.node_name = Some("rkcm-node-1".into());
    pods.create(&PostParams::default(), &orphan).await?;
    let mut control = pod("control", "nginx");
    control.spec.as_mut().context("spec")?.node_name = Some("rkcm-node-2".into());
    pods.create(&PostParams::default(), &control).await?;
    eventually("control Ready", || async {
        get_pod(&pods, "control").await.filter(is_ready)
    })
    .await?;
    let p = get_pod(&pods, "orphan").await.context("orphan")?;
    assert!(
        p.status.and_then(|s| s.start_time).is_none(),
        "no kubelet serves a deleted node"
    );
    // The pod that ran there is left alone (PodGC's job).
    let before = get_pod(&pods, "before").await.context("before")?;
    assert!(before.metadata.deletion_timestamp.is_none());
    Ok(())
}

#[tokio::test]
async fn a_restarted_simulator_keeps_running_pods_and_their_addresses() -> Result<()> {
    let server = testing::start().await;
    let client = server.client();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let nodes: Api<Node> = Api::all(client.clone());

    let first = Shutdown::new();
    let run = tokio::spawn(NodeSim::new(client.clone(), fast_config(2)).run(first.clone()));
    pods.create(&PostParams::default(), &pod("old", "nginx"))
        .await?;
    let old = eventually("old Ready", || async {
        get_pod(&pods, "old").await.filter(is_ready)
    })
    .await?;
    first.cancel();
    tokio::time::timeout(DEADLINE, run)
        .await
        .context("the simulator stops on shutdown")???;

    // Restart with one node fewer: rkcm-node-2 is left over.
    let second = Shutdown::new();
    let _stop = second.clone().drop_guard();
    tokio::spawn(NodeSim::new(client.clone(), fast_config(1)).run(second.clone()));
    eventually("rkcm-node-2 marked unreachable", || async {
        let node = nodes.get_opt("rkcm-node-2").await.ok()??;
        let ready = node
            .status?
            .conditions?
            .into_iter()
            .find(|c| c.type_ == "Ready")?;
        (ready.status == "Unknown").then_some(())
    })
    .await?;
    // The scheduler reads real taints only: taint the node as the node lifecycle controller
    // does for an Unknown Ready condition (it does not run in this test).
    nodes
        .patch(
            "rkcm-node-2",
            &PatchParams::default(),
            &Patch::Merge(&serde_json::json!({"spec": {"taints": [
                {"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule"}
            ]}})),
        )
        .await?;
    for name in ["new", "new2"] {
        pods.create(&PostParams::default(), &pod(name, "nginx"))
            .await?;
    }
    let mut fresh = Vec::new();
    for name in ["new", "new2"] {
        fresh.push(
            eventually("new pods Ready", || async {
                get_pod(&pods, name).await.filter(is_ready)
            })
            .await?,
        );
    }

    let status = |p: &Pod| p.status.clone().unwrap_or_default();
    for new in &fresh {
        assert_eq!(
            new.spec.as_ref().and_then(|s| s.node_name.as_deref()),
            Some("rkcm-node-1"),
            "nothing is scheduled to the unreachable node"
        );
    }
    assert_eq!(
        old.spec.as_ref().and_then(|s| s.node_name.as_deref()),
        Some("rkcm-node-1")
    );
    let ips: std::collections::BTreeSet<_> = fresh
        .iter()
        .chain([&old])
        .map(|p| status(p).pod_ip)
        .collect();
    assert_eq!(ips.len(), 3, "no address is handed out twice: {ips:?}");
    let old_now = get_pod(&pods, "old").await.context("old")?;
    assert_eq!(status(&old_now).start_time, status(&old).start_time);
    assert_eq!(status(&old_now).pod_ip, status(&old).pod_ip);
    assert!(is_ready(&old_now));
    Ok(())
}

#[tokio::test]
async fn failing_pods_with_restarts_crash_loop() -> Result<()> {
    let c = cluster(fast_config(1)).await;
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), "default");
    pods.create(
        &PostParams::default(),
        &pod("crashy", "example.com/app-that-fails:2"),
    )
    .await?;
    let p = eventually("crashy in CrashLoopBackOff", || async {
        let p = get_pod(&pods, "crashy").await?;
        let waiting = p
            .status
            .as_ref()?
            .container_statuses
            .as_ref()?
            .first()?
            .state
            .as_ref()?
            .waiting
            .clone()?;
        (waiting.reason.as_deref() == Some("CrashLoopBackOff")).then_some(p)
    })
    .await?;
    assert_eq!(phase(&p), "Running");
    assert!(!is_ready(&p));
    let last = p
        .status
        .context("status")?
        .container_statuses
        .context("statuses")?[0]
        .last_state
        .clone()
        .and_then(|s| s.terminated)
        .context("last state terminated")?;
    assert_eq!(last.exit_code, 1);
    Ok(())
}

#[tokio::test]
async fn scheduling_is_recorded_as_events() -> Result<()> {
    let c = cluster(fast_config(1)).await;
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), "default");
    let events: Api<k8s_openapi::api::core::v1::Event> =
        Api::namespaced(c.client.clone(), "default");
    pods.create(&PostParams::default(), &pod("noted", "nginx"))
        .await?;
    let reasons = eventually("Scheduled and Started events", || async {
        let list = events.list(&Default::default()).await.ok()?;
        let reasons: Vec<String> = list
            .items
            .iter()
            .filter(|e| e.involved_object.name.as_deref() == Some("noted"))
            .filter_map(|e| e.reason.clone())
            .collect();
        (reasons.iter().any(|r| r == "Scheduled") && reasons.iter().any(|r| r == "Started"))
            .then_some(reasons)
    })
    .await?;
    assert!(!reasons.is_empty());
    Ok(())
}

#[tokio::test]
async fn required_pod_anti_affinity_spreads_replicas_over_hosts() -> Result<()> {
    use k8s_openapi::api::core::v1::{Affinity, PodAffinityTerm, PodAntiAffinity};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

    let c = cluster(fast_config(2)).await;
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), "default");
    let replica = |name: &str| {
        let mut p = pod(name, "nginx");
        p.metadata.labels = Some([("app".to_string(), "web".to_string())].into());
        p.spec.as_mut().expect("spec").affinity = Some(Affinity {
            pod_anti_affinity: Some(PodAntiAffinity {
                required_during_scheduling_ignored_during_execution: Some(vec![PodAffinityTerm {
                    label_selector: Some(LabelSelector {
                        match_labels: Some([("app".to_string(), "web".to_string())].into()),
                        ..Default::default()
                    }),
                    topology_key: "kubernetes.io/hostname".into(),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            ..Default::default()
        });
        p
    };
    for name in ["web-1", "web-2", "web-3"] {
        pods.create(&PostParams::default(), &replica(name)).await?;
    }
    let (hosts, message) = eventually("two replicas running apart, one unschedulable", || async {
        let list = pods.list(&Default::default()).await.ok()?;
        let hosts: std::collections::BTreeSet<String> = list
            .items
            .iter()
            .filter(|p| phase(p) == "Running")
            .filter_map(|p| p.spec.as_ref()?.node_name.clone())
            .collect();
        let message = list
            .items
            .iter()
            .find_map(|p| condition(p, "PodScheduled").filter(|c| c.0 == "False")?.2)?;
        (hosts.len() == 2 && message.starts_with("0/2")).then_some((hosts, message))
    })
    .await?;
    assert_eq!(hosts.len(), 2);
    assert_eq!(
        message,
        "0/2 nodes are available: 2 node(s) didn't satisfy existing pods anti-affinity rules."
    );
    Ok(())
}

#[tokio::test]
async fn gated_pods_report_scheduling_gated() -> Result<()> {
    use k8s_openapi::api::core::v1::PodSchedulingGate;

    let c = cluster(fast_config(1)).await;
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), "default");
    let mut gated = pod("gated", "nginx");
    gated.spec.as_mut().context("spec")?.scheduling_gates = Some(vec![PodSchedulingGate {
        name: "example.com/wait".into(),
    }]);
    pods.create(&PostParams::default(), &gated).await?;
    let (status, reason, _) = eventually("PodScheduled=False SchedulingGated", || async {
        condition(&get_pod(&pods, "gated").await?, "PodScheduled")
    })
    .await?;
    assert_eq!(
        (status.as_str(), reason.as_deref()),
        ("False", Some("SchedulingGated"))
    );

    // TODO: remove the gate and see the pod scheduled, once the API server accepts removing
    // scheduling gates in pod updates (kube allows it since 1.27).
    let p = get_pod(&pods, "gated").await.context("gated")?;
    assert!(p.spec.and_then(|s| s.node_name).is_none());
    Ok(())
}

fn renew_time(lease: &Lease) -> Option<jiff::Timestamp> {
    lease.spec.as_ref()?.renew_time.as_ref().map(|t| t.0)
}

#[tokio::test]
async fn a_stopped_heartbeat_freezes_the_node_until_the_annotation_goes() -> Result<()> {
    let c = cluster(Config {
        lease_renew_interval: Duration::from_millis(200),
        ..fast_config(1)
    })
    .await;
    let nodes: Api<Node> = Api::all(c.client.clone());
    let leases: Api<Lease> = Api::namespaced(c.client.clone(), "kube-node-lease");
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), "default");
    eventually("the node's lease", || async {
        leases
            .get_opt("rkcm-node-1")
            .await
            .ok()?
            .as_ref()
            .and_then(renew_time)
    })
    .await?;
    // A pod CIDR from the node IPAM controller is where pod IPs come from.
    nodes
        .patch(
            "rkcm-node-1",
            &PatchParams::default(),
            &Patch::Merge(&serde_json::json!({"spec": {"podCIDR": "10.244.9.0/24", "podCIDRs": ["10.244.9.0/24"]}})),
        )
        .await?;
    pods.create(&PostParams::default(), &pod("before", "nginx"))
        .await?;
    let before = eventually("before Ready", || async {
        get_pod(&pods, "before").await.filter(is_ready)
    })
    .await?;
    let ip = before
        .status
        .as_ref()
        .and_then(|s| s.pod_ip.clone())
        .unwrap_or_default();
    assert!(ip.starts_with("10.244.9."), "{ip}");

    let annotate = |value: serde_json::Value| serde_json::json!({"metadata": {"annotations": {rkcm_nodesim::HEARTBEAT_ANNOTATION: value}}});
    nodes
        .patch(
            "rkcm-node-1",
            &PatchParams::default(),
            &Patch::Merge(&annotate("stopped".into())),
        )
        .await?;
    // Renewals stop: the renew time stays put over several renew intervals.
    let frozen = eventually("lease renewals stop", || async {
        let a = leases.get_opt("rkcm-node-1").await.ok()??;
        tokio::time::sleep(Duration::from_millis(800)).await;
        let b = leases.get_opt("rkcm-node-1").await.ok()??;
        (renew_time(&a) == renew_time(&b)).then(|| renew_time(&b))
    })
    .await?;
    // Pods bound to it stay as they are: not started.
    pods.create(
        &PostParams::default(),
        &Pod {
            spec: Some(k8s_openapi::api::core::v1::PodSpec {
                node_name: Some("rkcm-node-1".into()),
                ..pod_spec("c", "nginx")
            }),
            ..pod("during", "nginx")
        },
    )
    .await?;
    tokio::time::sleep(Duration::from_millis(600)).await;
    let during = get_pod(&pods, "during").await.context("pod during")?;
    assert!(!is_ready(&during), "a stopped kubelet starts nothing");

    nodes
        .patch(
            "rkcm-node-1",
            &PatchParams::default(),
            &Patch::Merge(&annotate(serde_json::Value::Null)),
        )
        .await?;
    eventually("lease renewed again", || async {
        let now = leases
            .get_opt("rkcm-node-1")
            .await
            .ok()?
            .as_ref()
            .and_then(renew_time);
        (now > frozen).then_some(())
    })
    .await?;
    eventually("the waiting pod starts", || async {
        get_pod(&pods, "during").await.filter(is_ready)
    })
    .await?;
    Ok(())
}

fn waiting_reason(pod: &Pod) -> Option<(String, Option<String>)> {
    let status = pod.status.as_ref()?.container_statuses.as_ref()?.first()?;
    let waiting = status.state.as_ref()?.waiting.as_ref()?;
    Some((waiting.reason.clone()?, waiting.message.clone()))
}

async fn event_messages(c: &Cluster, pod: &str, reason: &str) -> Vec<String> {
    let events: Api<k8s_openapi::api::core::v1::Event> =
        Api::namespaced(c.client.clone(), "default");
    let Ok(list) = events.list(&Default::default()).await else {
        return Vec::new();
    };
    list.items
        .into_iter()
        .filter(|e| e.involved_object.name.as_deref() == Some(pod))
        .filter(|e| e.reason.as_deref() == Some(reason))
        .filter_map(|e| e.message)
        .collect()
}

/// How many GETs of `resource` the server has answered.
async fn gets(client: &Client, resource: &str) -> Result<u64> {
    let req = http::Request::get("/metrics").body(Vec::new())?;
    let text = client.request_text(req).await?;
    let wanted = format!("resource=\"{resource}\"");
    Ok(text
        .lines()
        .filter(|l| l.starts_with("apiserver_request_total{"))
        .filter(|l| l.contains(&wanted) && l.contains("verb=\"GET\""))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64)
}

/// Pod `env`, whose container reads key `mode` of ConfigMap `settings` into its environment.
fn env_pod() -> Result<Pod> {
    let mut env = pod("env", "nginx");
    env.spec.as_mut().context("spec")?.containers[0].env = Some(vec![serde_json::from_value(
        serde_json::json!({"name": "MODE", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "mode"}}}),
    )?]);
    Ok(env)
}

/// Creates ConfigMap `settings` in `default` with `data`.
async fn create_settings(c: &Cluster, data: serde_json::Value) -> Result<()> {
    let config_maps: Api<k8s_openapi::api::core::v1::ConfigMap> =
        Api::namespaced(c.client.clone(), "default");
    config_maps
        .create(
            &PostParams::default(),
            &serde_json::from_value(
                serde_json::json!({"metadata": {"name": "settings"}, "data": data}),
            )?,
        )
        .await?;
    Ok(())
}

#[tokio::test]
async fn a_starting_pod_reads_its_config_maps_once_for_its_syncs() -> Result<()> {
    let c = cluster(fast_config(1)).await;
    create_settings(&c, serde_json::json!({"mode": "fast"})).await?;
    let before = gets(&c.client, "configmaps").await?;
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), "default");
    pods.create(&PostParams::default(), &env_pod()?).await?;
    eventually("env running", || async {
        let p = get_pod(&pods, "env").await?;
        (phase(&p) == "Running" && is_ready(&p)).then_some(())
    })
    .await?;
    // Its syncs after binding, after its ContainerCreating write and at its start each needed
    // the ConfigMap; the first read serves the others (a second only if they were 2 s apart).
    let read = gets(&c.client, "configmaps").await? - before;
    assert!((1..=2).contains(&read), "{read} reads");
    Ok(())
}

#[tokio::test]
async fn pods_wait_for_the_secrets_and_config_maps_they_use() -> Result<()> {
    let c = cluster(fast_config(1)).await;
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), "default");
    let mut mounts = pod("mounts", "nginx");
    let spec = mounts.spec.as_mut().context("spec")?;
    spec.volumes = Some(vec![serde_json::from_value(serde_json::json!(
        {"name": "certs", "secret": {"secretName": "webhook-cert"}}
    ))?]);
    pods.create(&PostParams::default(), &mounts).await?;
    pods.create(&PostParams::default(), &env_pod()?).await?;

    let held = |name: &'static str, reason: &'static str| {
        let pods = pods.clone();
        async move {
            let p = get_pod(&pods, name).await?;
            (phase(&p) == "Pending" && waiting_reason(&p).is_some_and(|(r, _)| r == reason))
                .then_some(p)
        }
    };
    let p = eventually("mounts waiting in ContainerCreating", || {
        held("mounts", "ContainerCreating")
    })
    .await?;
    assert_eq!(
        condition(&p, "PodReadyToStartContainers").map(|c| c.0),
        Some("False".to_string())
    );
    let p = eventually("env waiting in CreateContainerConfigError", || {
        held("env", "CreateContainerConfigError")
    })
    .await?;
    assert_eq!(
        waiting_reason(&p).and_then(|(_, m)| m).as_deref(),
        Some(r#"configmap "settings" not found"#)
    );
    eventually("the FailedMount event", || async {
        event_messages(&c, "mounts", "FailedMount")
            .await
            .iter()
            .any(|m| m == r#"MountVolume.SetUp failed for volume "certs" : secret "webhook-cert" not found"#)
            .then_some(())
    })
    .await?;
    eventually("the Failed event", || async {
        event_messages(&c, "env", "Failed")
            .await
            .iter()
            .any(|m| m == r#"Error: configmap "settings" not found"#)
            .then_some(())
    })
    .await?;
    assert!(!is_ready(
        &get_pod(&pods, "mounts").await.context("mounts")?
    ));

    // The configmap without the key: the message says so; with it, the pod runs.
    create_settings(&c, serde_json::json!({"other": "x"})).await?;
    let config_maps: Api<k8s_openapi::api::core::v1::ConfigMap> =
        Api::namespaced(c.client.clone(), "default");
    eventually("the missing key reported", || async {
        let p = get_pod(&pods, "env").await?;
        (waiting_reason(&p).and_then(|(_, m)| m).as_deref()
            == Some("couldn't find key mode in ConfigMap default/settings"))
        .then_some(())
    })
    .await?;
    config_maps
        .patch(
            "settings",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"data": {"mode": "fast"}})),
        )
        .await?;
    let secrets: Api<k8s_openapi::api::core::v1::Secret> =
        Api::namespaced(c.client.clone(), "default");
    secrets
        .create(
            &PostParams::default(),
            &serde_json::from_value(serde_json::json!(
                {"metadata": {"name": "webhook-cert"}, "stringData": {"tls.crt": "x"}}
            ))?,
        )
        .await?;
    for name in ["mounts", "env"] {
        eventually(name, || async {
            let p = get_pod(&pods, name).await?;
            (phase(&p) == "Running" && is_ready(&p)).then_some(())
        })
        .await?;
    }
    Ok(())
}
