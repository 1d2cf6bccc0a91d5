//! Resource requests of a pod and allocatable resources of a node, in milli-units per resource name.
//!
//! Mirrors `k8s.io/component-helpers/resource.PodRequests`: the regular containers and the
//! restartable (sidecar) init containers run together, while each ordinary init container runs
//! alone next to the sidecars started before it; the pod asks for the larger of the two, plus overhead.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, Node, Pod};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use rkcm_apimachinery::quantity::Quantity as ParsedQuantity;

/// The resource name of the pod-count limit in a node's allocatable list.
pub const PODS: &str = "pods";

/// Amounts per resource name (`cpu`, `memory`, `nvidia.com/gpu`, …) in milli-units.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resources(pub BTreeMap<String, i128>);

impl Resources {
    /// The amount of `name`, zero when absent.
    pub fn get(&self, name: &str) -> i128 {
        self.0.get(name).copied().unwrap_or(0)
    }

    /// Adds every amount of `other`.
    pub fn add(&mut self, other: &Resources) {
        for (name, amount) in &other.0 {
            *self.0.entry(name.clone()).or_insert(0) += amount;
        }
    }

    /// Takes away every amount of `other`, dropping the names that reach zero.
    pub fn sub(&mut self, other: &Resources) {
        for (name, amount) in &other.0 {
            let entry = self.0.entry(name.clone()).or_insert(0);
            *entry -= amount;
            if *entry == 0 {
                self.0.remove(name);
            }
        }
    }

    /// Raises every amount to at least the one in `other`.
    pub fn max_with(&mut self, other: &Resources) {
        for (name, amount) in &other.0 {
            let entry = self.0.entry(name.clone()).or_insert(0);
            *entry = (*entry).max(*amount);
        }
    }

    fn from_quantities(quantities: Option<&BTreeMap<String, Quantity>>) -> Self {
        let mut out = Resources::default();
        for (name, quantity) in quantities.into_iter().flatten() {
            // A malformed quantity cannot have passed API validation; count it as zero.
            let milli = ParsedQuantity::parse(quantity.0.trim()).map_or(0, |q| q.milli_value());
            out.0.insert(name.clone(), i128::from(milli));
        }
        out
    }
}

/// What a container asks for: its requests, with limits standing in for missing requests
/// (the API server's defaulting does the same).
fn container_requests(container: &Container) -> Resources {
    let Some(resources) = &container.resources else {
        return Resources::default();
    };
    let mut out = Resources::from_quantities(resources.limits.as_ref());
    for (name, amount) in Resources::from_quantities(resources.requests.as_ref()).0 {
        out.0.insert(name, amount);
    }
    out
}

/// The resources a pod needs on a node (the scheduler's view; pods count excluded).
pub fn pod_requests(pod: &Pod) -> Resources {
    let Some(spec) = &pod.spec else {
        return Resources::default();
    };
    let mut requests = Resources::default();
    for container in &spec.containers {
        requests.add(&container_requests(container));
    }
    let mut sidecars = Resources::default();
    let mut init_peak = Resources::default();
    for init in spec.init_containers.iter().flatten() {
        let needs = container_requests(init);
        let running_alongside = if init.restart_policy.as_deref() == Some("Always") {
            requests.add(&needs);
            sidecars.add(&needs);
            sidecars.clone()
        } else {
            let mut total = needs;
            total.add(&sidecars);
            total
        };
        init_peak.max_with(&running_alongside);
    }
    requests.max_with(&init_peak);
    requests.add(&Resources::from_quantities(spec.overhead.as_ref()));
    requests
}

/// What a node offers to pods: `status.allocatable`, or `status.capacity` when allocatable is unset.
pub fn node_allocatable(node: &Node) -> Resources {
    let status = node.status.as_ref();
    let allocatable = status.and_then(|s| s.allocatable.as_ref());
    let quantities = allocatable.or_else(|| status.and_then(|s| s.capacity.as_ref()));
    Resources::from_quantities(quantities)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{PodSpec, ResourceRequirements};

    fn container(name: &str, requests: &[(&str, &str)], limits: &[(&str, &str)]) -> Container {
        let map = |pairs: &[(&str, &str)]| {
            (!pairs.is_empty()).then(|| {
                pairs
                    .iter()
                    .map(|(k, v)| (k.to_string(), Quantity(v.to_string())))
                    .collect()
            })
        };
        Container {
            name: name.into(),
            resources: Some(ResourceRequirements {
                requests: map(requests),
                limits: map(limits),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn containers_are_summed_and_init_containers_taken_at_their_peak() {
        let mut init = container("init", &[("cpu", "2")], &[]);
        init.restart_policy = None;
        let pod = Pod {
            spec: Some(PodSpec {
                containers: vec![
                    container("a", &[("cpu", "500m"), ("memory", "1Gi")], &[]),
                    container("b", &[("cpu", "250m")], &[]),
                ],
                init_containers: Some(vec![init]),
                ..Default::default()
            }),
            ..Default::default()
        };
        let requests = pod_requests(&pod);
        assert_eq!(requests.get("cpu"), 2000);
        assert_eq!(requests.get("memory"), 1024_i128.pow(3) * 1000);
    }

    #[test]
    fn sidecars_add_to_containers_and_limits_stand_in_for_missing_requests() {
        let mut sidecar = container("sidecar", &[("cpu", "100m")], &[]);
        sidecar.restart_policy = Some("Always".into());
        let later_init = container("later", &[("cpu", "1")], &[]);
        let pod = Pod {
            spec: Some(PodSpec {
                containers: vec![container("a", &[], &[("cpu", "300m")])],
                init_containers: Some(vec![sidecar, later_init]),
                ..Default::default()
            }),
            ..Default::default()
        };
        // containers 300m + sidecar 100m = 400m; init peak = 1 + 100m = 1100m.
        assert_eq!(pod_requests(&pod).get("cpu"), 1100);
    }
}
