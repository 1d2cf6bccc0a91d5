//! Scheduling predicates shared by the scheduler stand-in and the controllers that decide
//! placement themselves (the DaemonSet controller). Mirrors `k8s.io/component-helpers/scheduling/corev1`.

pub mod node_affinity;
pub mod taints;
