//! The policy of the eviction subresource (`pkg/registry/core/pod/storage/eviction.go`): which
//! pods may go without consulting a PodDisruptionBudget, which budgets cover a pod, and whether a
//! budget allows one more disruption. the API server's eviction applies it to the store.

mod budget;
mod pod_state;

pub use budget::{
    budgets_for_pod, check_and_decrement, too_many_requests, unhealthy_pod_may_go,
    DISRUPTION_BUDGET_CAUSE, MAX_DISRUPTED_POD_SIZE, MORE_THAN_ONE_BUDGET, VIOLATES_BUDGET,
};
pub use pod_state::{
    add_disruption_target, can_ignore_pdb, is_pod_ready, should_enforce_resource_version,
    DISRUPTION_TARGET, EVICTION_BY_EVICTION_API,
};
