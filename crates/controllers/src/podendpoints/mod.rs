//! What the Endpoints, EndpointSlice and EndpointSlice-mirroring controllers share: which pods
//! back a Service, whether and how each becomes an endpoint, and which Services a pod change
//! concerns (k8s.io/endpointslice `util`, k8s.io/kubernetes `pkg/api/v1/pod` `FindPort`).
//!
//! Everything here is a pure function over API objects, except [`TriggerTimeTracker`], which
//! remembers what the last sync of each Service saw.

#[cfg(test)]
pub(crate) mod fixtures;
pub mod membership;
pub mod pods;
pub mod ports;
pub mod service;
pub mod trigger_time;

pub use membership::{services_for_pod, services_to_update_on_pod_change};
pub use pods::{should_pod_be_in_endpoints, should_set_hostname};
pub use ports::find_port;
pub use service::{is_service_ip_set, selects_pods};
pub use trigger_time::TriggerTimeTracker;

/// Annotation with the time of the change that triggered the last update of an Endpoints object
/// or EndpointSlice (`v1.EndpointsLastChangeTriggerTime`).
pub const LAST_CHANGE_TRIGGER_TIME: &str = "endpoints.kubernetes.io/last-change-trigger-time";
/// Label set on the Endpoints and EndpointSlices of a headless Service (`v1.IsHeadlessService`).
pub const HEADLESS_LABEL: &str = "service.kubernetes.io/headless";
/// Annotation of the leader-election record, whose Endpoints no controller touches
/// (`resourcelock.LeaderElectionRecordAnnotationKey`).
pub const LEADER_ELECTION_ANNOTATION: &str = "control-plane.alpha.kubernetes.io/leader";
