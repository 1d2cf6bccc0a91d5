//! Simulated nodes for rkcm, in the spirit of [kwok](https://kwok.sigs.k8s.io): Nodes that look
//! like kubelets' to every client, a scheduler, and a kubelet stand-in that runs no processes but
//! plays out simple container commands (`sleep`, `echo`, `exit` …) so that Jobs complete.
//!
//! Everything goes through the Kubernetes API with a `kube::Client` (never an API server's insides),
//! so the simulation works against any cluster.
//!
//! ```no_run
//! # async fn demo(client: kube::Client) -> Result<(), rkcm_nodesim::Error> {
//! use rkcm_nodesim::{Config, NodeSim};
//! let shutdown = rkcm_runtime::Shutdown::new();
//! NodeSim::new(client, Config { nodes: 3, ..Config::default() }).run(shutdown).await
//! # }
//! ```
//!
//! # Nodes
//!
//! [`Config::nodes`] Nodes named `rkcm-node-1` … `rkcm-node-N`, labelled `kubernetes.io/hostname`,
//! `kubernetes.io/os=linux`, `kubernetes.io/arch=amd64` and `node.kubernetes.io/instance-type=rkcm`,
//! annotated `rkcm.io/simulated-node: "true"`, with capacity and allocatable cpu/memory/pods from the
//! config, conditions Ready=True and MemoryPressure/DiskPressure/PIDPressure=False, addresses
//! InternalIP `10.0.0.<n>` and Hostname, kubelet version `v1.33.0-rkcm` and runtime `rkcm://0.1`.
//! As a kubelet, a node registers without `spec.podCIDR`: the node IPAM controller assigns one
//! (`--allocate-node-cidrs`), and pod IPs come from it; a node without one hands out
//! `10.244.<n>.2` … `.254`. A Lease per node in `kube-node-lease` is renewed every 10 seconds and
//! the conditions' `lastHeartbeatTime` every 50 seconds. On restart, existing Nodes get their labels
//! and status refreshed and keep their spec (cordons, taints, pod CIDR).
//!
//! # Dead nodes
//!
//! The annotation [`HEARTBEAT_ANNOTATION`] `rkcm.io/heartbeat: "stopped"` on a Node stops its
//! simulated kubelet: no more lease renewals or status posts, and its pods keep their last status
//! (nothing starts, stops or is removed there), as when a machine drops off the network. The node
//! lifecycle controller then marks it `Unknown` after `--node-monitor-grace-period`, taints it
//! `node.kubernetes.io/unreachable`, and the taint-eviction controller evicts its pods.
//! Removing the annotation brings the kubelet back at once: lease renewed, status posted Ready
//! (transition time now), pods synced again (terminating ones are then removed).
//!
//! ```sh
//! kubectl annotate node rkcm-node-1 rkcm.io/heartbeat=stopped
//! kubectl annotate node rkcm-node-1 rkcm.io/heartbeat-
//! ```
//!
//! Deleting a Node (`kubectl delete node`) stops its simulation: no more lease renewals, and its pods
//! are left as they are, for PodGC. A restarted simulator registers it again. Simulated nodes left
//! over from a run with more nodes (annotated, named `rkcm-node-<n>` with n above
//! [`Config::nodes`]) get their conditions set to Unknown at start, so nothing new lands there;
//! delete them to let PodGC clean up their pods.
//!
//! # Scheduler
//!
//! Pods with no `spec.nodeName` and `schedulerName` `default-scheduler` (or empty) are bound through
//! `pods/{name}/binding` to a node they fit, preferring the node with the fewest pods, ties broken by
//! name. As kube-scheduler with the default `percentageOfNodesToScore`, a cluster of 100 nodes or
//! more is filtered only until enough nodes fit (100 at 203 nodes, 42 % at 1,000), from where the
//! previous pod's search stopped, and the pod goes to the best of those. Filters, in kube-scheduler's order: `spec.unschedulable` (unless tolerated), the node name,
//! `NoSchedule`/`NoExecute` taints against tolerations, `nodeSelector` and required node affinity
//! (`matchExpressions` with In, NotIn, Exists, DoesNotExist, Gt, Lt; `matchFields` on `metadata.name`),
//! resource requests (cpu, memory, extended resources, pod count) against allocatable minus the
//! requests of the node's unfinished pods, and required inter-pod affinity and anti-affinity
//! (`requiredDuringSchedulingIgnoredDuringExecution`, any `topologyKey`). A pod that fits nowhere
//! stays Pending with condition `PodScheduled=False`, reason `Unschedulable` and kube-scheduler's message, for example
//! `0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.`
//! Pods created with `spec.nodeName` set skip the scheduler. Only real taints count: the node
//! lifecycle controller taints nodes whose Ready condition is not True (`node.kubernetes.io/not-ready`,
//! `…/unreachable`). Bindings and failures are recorded as `Scheduled` and `FailedScheduling` events.
//!
//! Claims are honoured as kube-scheduler's VolumeBinding plugin does ([`scheduler::volumes`]):
//! pods wait for unbound Immediate claims, `WaitForFirstConsumer` claims get a volume or a
//! selected node first, and bound volumes' node affinity picks the node.
//!
//! # Provisioner
//!
//! [`provisioner`] is an external provisioner named `rkcm.io/simulated` behind the default
//! StorageClass `standard` (created at start when [`Config::provisioner`] is on): it creates a
//! volume for each claim the binder hands it and deletes its Released `Delete` volumes.
//!
//! # CSI driver and attachment
//!
//! The volumes are CSI volumes of the driver [`csi::DRIVER_NAME`] `simulated.csi.rkcm.io`, whose
//! CSIDriver (attach required) is created at start and which every node registers in its CSINode;
//! Nodes carry `volumes.kubernetes.io/controller-managed-attach-detach: "true"`. [`attacher`]
//! plays kubernetes-csi/external-attacher for the driver's VolumeAttachments, and the kubelet
//! reports `status.volumesInUse` and starts a pod only once its volumes are listed in
//! `status.volumesAttached` ([`kubelet::volume_manager`]), which the attach/detach controller
//! writes.
//!
//! # Kubelet conventions
//!
//! A pod bound to a simulated node is Pending (containers `ContainerCreating`, `podIP`, `hostIP`,
//! `startTime` set) for [`Config::pod_ready_delay`] (default 500ms), then Running with every container
//! running and ready (`containerID` `rkcm://…`) and conditions PodReadyToStartContainers, Initialized,
//! ContainersReady, Ready and PodScheduled True (Ready also waits for `spec.readinessGates` conditions;
//! `hostNetwork` pods get the node's IP; init containers run first, see [Container commands](#container-commands)). The kubelet records
//! `Started`, `BackOff` and `Killing` events. Tests steer pods with annotations, or per container
//! with words in the image name (its last path segment, without tag):
//!
//! | annotation | image name contains | effect |
//! |---|---|---|
//! | `rkcm.io/never-ready: "true"` | `never-ready` | Running, but Ready=False forever (remove the annotation and the pod becomes ready) |
//! | `rkcm.io/fail: "true"` | `fail` | exits with code 1: phase Failed for `restartPolicy: Never`; otherwise CrashLoopBackOff with `restartCount` growing on the kubelet's back-off (10s doubling to 5m). Adding it to a running pod makes it crash |
//! | `rkcm.io/ready-delay: "5s"` | — | this pod's ContainerCreating time instead of the node default (Go duration; `"0"` for none) |
//! | `rkcm.io/complete-after: "2s"` | — | exits with code 0 that long after starting: Succeeded for `restartPolicy: Never`/`OnFailure` (ignored for `Always`) |
//!
//! `rkcm.io/fail` takes precedence over a container's command; `rkcm.io/complete-after` applies
//! only to containers whose command does not follow the convention below.
//!
//! # Secrets and ConfigMaps
//!
//! As a kubelet, the stand-in starts a pod only when what its volumes and environment refer to
//! exists ([`kubelet::pod_objects`]). Before the pod's containers first start it reads the
//! Secrets and ConfigMaps the pod uses with GETs as the node itself (`system:node:<name>`,
//! which kube's Node authorizer allows for objects of pods bound to the node, missing ones
//! included), and:
//!
//! - a `secret`, `configMap` or `projected` volume whose object (or an `items` key) is missing
//!   and not `optional` keeps the pod Pending without a sandbox: containers waiting in
//!   `ContainerCreating`, `PodReadyToStartContainers` False, no pod IP, and `FailedMount`
//!   Warning events such as `MountVolume.SetUp failed for volume "certs" : secret "webhook-cert"
//!   not found` (`configmap "c" not found`, `references non-existent secret key: k`,
//!   `configmap references non-existent config key: k`; a projected volume lists its sources'
//!   errors in brackets);
//! - an `env` `secretKeyRef`/`configMapKeyRef` whose object or key is missing, or an `envFrom`
//!   source whose object is missing (its keys do not matter), not `optional`, leaves that
//!   container waiting in `CreateContainerConfigError` with `makeEnvironmentVariables`' message
//!   (`secret "s" not found`, `couldn't find key k in Secret default/s`,
//!   `couldn't find key k in ConfigMap default/c`) and a `Failed` Warning event
//!   `Error: <message>`; init containers are checked when their turn comes.
//!
//! A held pod is looked at again 500ms later, then after 1s, 2s, 4s and every 5s (each look
//! records its events again, which the event correlator counts), so it goes on within seconds
//! of the object's creation. The simulator reads rather than watches these objects: a node's
//! identity may only read objects one by one, and once the pod runs it no longer cares.
//! Pods of `rkcm up` mount `kube-root-ca.crt` through their `kube-api-access-*` volume, so a
//! pod created in a namespace before the root CA publisher has filled it in waits for it, as
//! on kube.
//!
//! # Container commands
//!
//! So that ordinary Job manifests work unchanged, a container whose argv (`command` followed by
//! `args`; without `command`, `args` alone, as for images without an entrypoint such as busybox)
//! is one of
//!
//! - `sleep N…` — seconds, fractions allowed (`0.5`, `.5`), with coreutils' `s`, `m`, `h` or `d`
//!   suffix; several operands add up;
//! - `true`, `false`;
//! - `echo [-n] …`;
//! - `exit [N]`;
//! - `sh -c "<script>"`, `/bin/sh -c`, `bash -c` or `/bin/bash -c` (further arguments are ignored,
//!   as `$0`, `$1` … would be), where the script is a list of the commands above separated by `;`,
//!   newlines or `&&`, with single- and double-quoted words (no escapes or `$` inside);
//!
//! (`sleep`, `true`, `false` and `echo` may also be spelt `/bin/…` or `/usr/bin/…`) *runs*: it
//! stays Running for the sum of the sleeps executed, then exits with the status a shell would give
//! — `exit N` gives N (modulo 256), `false` 1, everything else 0; `&&` skips the rest of its chain
//! after a non-zero status, `;` goes on, `exit` (with no code: the last status) stops the script.
//! Any other container — no command, a pipe, a variable, a redirection, `||`, `sleep infinity`, an
//! unknown program — runs until stopped, as before. A container that follows the convention starts
//! on the next whole second, because the API stores times in whole seconds: its `finishedAt` is
//! then exactly its run time after its `startedAt`.
//!
//! When a container exits, its state becomes `terminated` with `exitCode`, `reason` (`Completed` for
//! 0, `Error` otherwise), `startedAt` and `finishedAt`, and `restartPolicy` decides, as the kubelet:
//! `Never` leaves it terminated (the pod ends Succeeded when every container exited 0, Failed
//! otherwise); `OnFailure` restarts it after a non-zero exit (Succeeded once all exited 0);
//! `Always` restarts it after any exit. Between exit and restart the container waits in
//! `CrashLoopBackOff` (message `back-off 10s restarting failed container=…`), with `lastState.terminated`
//! showing the exit and `restartCount` bumped at the restart. The back-off is the kubelet's: 10s,
//! doubling per restart up to 5 minutes, back to 10s when two exits are more than 10 minutes apart
//! (`backOffPeriod`, `MaxContainerBackOff`). Changes that fell due while the simulator was not
//! looking happen at their own times, so a late sync reports the same history.
//!
//! Init containers run first, one after another: one whose command follows the convention runs to
//! completion, and a failure fails the pod under `restartPolicy: Never` and is restarted with
//! back-off otherwise (`Init:CrashLoopBackOff`); any other init container completes at once, as
//! before (the annotations above do not apply to init containers). Restartable init containers
//! (`restartPolicy: Always`) are sidecars: they start, keep running and count for readiness, and
//! the next init container starts without waiting for them; they stop (exit 0) when the pod
//! finishes. Until all init containers have completed, the pod is Pending, its containers wait in
//! `PodInitializing`, and `Initialized` is False (`ContainersNotInitialized`, naming them).
//! A pod whose containers terminated is not Ready (`ContainersReady`/`Ready` False with reason
//! `PodCompleted` once Succeeded, `PodFailed` once Failed, `ContainersNotReady` otherwise), and a
//! finished pod's sandbox is gone: `PodReadyToStartContainers` becomes False.
//!
//! # Logs
//!
//! What `echo` prints is what `kubectl logs` returns. The kubelet stand-in records each run's
//! output in the pod annotation [`CONTAINER_LOGS_ANNOTATION`] (`rkcm.io/container-logs`), which it
//! owns and writes in the same `pods/{name}/status` patch as the container states, and the rkcm
//! API server's `pods/log` serves it (going through the API keeps the layers apart: the server
//! never reaches into the simulator, and the annotation works with any API server that stores it).
//! The value is a JSON object from container name to its latest two runs, oldest first,
//! `{"restartCount": N, "log": "<RFC 3339 time> <line>\n…"}`; each `log` keeps at most 4 KiB
//! (the oldest lines are dropped). A run's entry appears, empty, when the container starts, and
//! gets its whole output when it exits, each line stamped with the time its `echo` ran. The server
//! serves the run with the container's current `restartCount` (`--previous`: the one before),
//! honours `tailLines`, `limitBytes`, `timestamps`, `sinceSeconds` and `sinceTime`, and answers
//! `follow` with what is recorded. Containers without recorded output keep the refusal saying
//! that simulated nodes run no containers. See [`kubelet::logs`].
//!
//! # Resource metrics
//!
//! With [`NodeSim::with_metrics`], the simulator snapshots every [`Config::metric_resolution`]
//! (15 s) what metrics-server would report, into a [`metrics::UsageSnapshots`] that the API server
//! serves as `metrics.k8s.io/v1beta1` (`kubectl top`, the horizontal pod autoscaler). A Running
//! pod's usage is its annotations `rkcm.io/cpu-usage` and `rkcm.io/memory-usage` (quantities, 0
//! without them), all on its first container; a node's is the sum of its pods'. See [`metrics`].
//!
//! # Deletion
//!
//! A pod with a `deletionTimestamp` keeps running for its `deletionGracePeriodSeconds`, then is removed
//! with a DELETE carrying `gracePeriodSeconds: 0` and a UID precondition; a finished pod is removed at
//! once. [`Config::termination_grace_cap`] bounds the wait (for fast tests); by default it is `None`
//! and grace periods are honoured as a kubelet does.
//!
//! # Cost when idle
//!
//! The simulator watches pods and nodes through shared informers and keeps no periodic full lists:
//! idle work is one lease update per node every 10 seconds and one node status patch per node every
//! 50 seconds. Timed pod changes are delayed queue items.

pub mod attacher;
pub mod config;
pub mod csi;
pub mod error;
pub mod identity;
pub mod kubelet;
pub mod lease;
pub mod metrics;
pub mod node;
pub mod node_set;
pub mod provisioner;
pub mod scheduler;
pub mod sim;

pub use config::Config;
pub use error::{Error, Result};
pub use identity::Clients;
pub use kubelet::behaviour::{
    COMPLETE_AFTER_ANNOTATION, FAIL_ANNOTATION, NEVER_READY_ANNOTATION, READY_DELAY_ANNOTATION,
};
pub use kubelet::logs::CONTAINER_LOGS_ANNOTATION;
pub use metrics::{UsageSnapshots, CPU_USAGE_ANNOTATION, MEMORY_USAGE_ANNOTATION};
pub use node_set::{NodeSet, SimNode, HEARTBEAT_ANNOTATION};
pub use sim::NodeSim;

/// Name of the pod index by `spec.nodeName` that the scheduler and kubelet add to the pod informer
/// (kube's `controller.PodNodeNameKeyIndex`).
pub const NODE_NAME_INDEX: &str = "spec.nodeName";
