//! Rebuilding the allocation state from the stored Services.
//!
//! Mirrors the `runOnce` of `ipallocator/controller/repair.go` and
//! `portallocator/controller/repair.go`: a fresh state gets every value a stored service
//! holds; a value held twice or outside the range is reported (kube records an Event and logs;
//! the services are left as they are).

use serde_json::Value;

use super::ip::IpError;
use super::port::PortError;
use super::service::{cluster_ips, health_check_node_port, node_ports, State};
use crate::object;

/// Allocates in a cleared `state` everything `services` hold.
pub(super) fn rebuild<'a>(state: &mut State, services: impl IntoIterator<Item = &'a Value>) {
    state.ips = super::IpRange::new(state.ips.cidr());
    state.ports = super::PortAllocator::new(state.ports.range());
    for svc in services {
        let ns = object::namespace(svc);
        let name = object::name(svc);
        for ip in cluster_ips(svc) {
            match state.ips.allocate(ip) {
                Ok(()) => {}
                Err(IpError::Allocated) => tracing::warn!(
                    namespace = ns, name, %ip,
                    "the cluster IP was assigned to multiple services; please recreate the service"
                ),
                Err(e) => tracing::warn!(
                    namespace = ns, name, %ip, error = %e,
                    "the cluster IP is not within the service CIDR; please recreate the service"
                ),
            }
        }
        for port in node_ports(svc)
            .into_iter()
            .chain(health_check_node_port(svc))
        {
            match state.ports.allocate(port) {
                Ok(()) => {}
                // Ports shared by two entries of one service (TCP and UDP on one port) are
                // allocated once.
                Err(PortError::Allocated)
                    if node_ports(svc).iter().filter(|&&p| p == port).count() > 1 => {}
                Err(PortError::Allocated) => {
                    tracing::warn!(
                    namespace = ns, name, port,
                    "the node port was assigned to multiple services; please recreate the service"
                )
                }
                Err(e) => tracing::warn!(
                    namespace = ns, name, port, error = %e,
                    "the node port is not within the port range; please recreate the service"
                ),
            }
        }
    }
}
