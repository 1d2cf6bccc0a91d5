//! Simulated nodes for rkcm, in the spirit of [kwok](https://kwok.sigs.k8s.io): Nodes that look
//! like kubelets' to every client, a scheduler, and a kubelet stand-in that runs no containers.
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
//! InternalIP `10.0.0.<n>` and Hostname, pod CIDR `10.244.<n>.0/24`, kubelet version `v1.33.0-rkcm` and
//! runtime `rkcm://0.1`. A Lease per node in `kube-node-lease` is renewed every 10 seconds and the
//! conditions' `lastHeartbeatTime` every 50 seconds. On restart, existing Nodes get their labels and
//! status refreshed and keep their spec (cordons, taints).
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
//! name. Filters, in kube-scheduler's order: `spec.unschedulable` (unless tolerated), the node name,
//! `NoSchedule`/`NoExecute` taints against tolerations, `nodeSelector` and required node affinity
//! (`matchExpressions` with In, NotIn, Exists, DoesNotExist, Gt, Lt; `matchFields` on `metadata.name`),
//! resource requests (cpu, memory, extended resources, pod count) against allocatable minus the
//! requests of the node's unfinished pods, and required inter-pod affinity and anti-affinity
//! (`requiredDuringSchedulingIgnoredDuringExecution`, any `topologyKey`). A pod that fits nowhere
//! stays Pending with condition `PodScheduled=False`, reason `Unschedulable` and kube-scheduler's message, for example
//! `0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.`
//! Pods created with `spec.nodeName` set skip the scheduler. Nodes whose Ready condition is not True
//! count as tainted `node.kubernetes.io/not-ready` or `…/unreachable` (NoSchedule), standing in for
//! the node lifecycle controller. Bindings and failures are recorded as `Scheduled` and
//! `FailedScheduling` events.
//!
//! # Kubelet conventions
//!
//! A pod bound to a simulated node is Pending (containers `ContainerCreating`, `podIP`, `hostIP`,
//! `startTime` set) for [`Config::pod_ready_delay`] (default 500ms), then Running with every container
//! running and ready (`containerID` `rkcm://…`) and conditions PodReadyToStartContainers, Initialized,
//! ContainersReady, Ready and PodScheduled True (Ready also waits for `spec.readinessGates` conditions;
//! `hostNetwork` pods get the node's IP; init containers complete at once). The kubelet records
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

pub mod config;
pub mod error;
pub mod kubelet;
pub mod lease;
pub mod node;
pub mod node_set;
pub mod scheduler;
pub mod sim;

pub use config::Config;
pub use error::{Error, Result};
pub use kubelet::behaviour::{
    COMPLETE_AFTER_ANNOTATION, FAIL_ANNOTATION, NEVER_READY_ANNOTATION, READY_DELAY_ANNOTATION,
};
pub use kubelet::logs::CONTAINER_LOGS_ANNOTATION;
pub use node_set::{NodeSet, SimNode};
pub use sim::NodeSim;

/// Name of the pod index by `spec.nodeName` that the scheduler and kubelet add to the pod informer
/// (kube's `controller.PodNodeNameKeyIndex`).
pub const NODE_NAME_INDEX: &str = "spec.nodeName";
