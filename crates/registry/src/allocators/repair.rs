//! Rebuilding the allocation state from the stored Services.
//!
//! Mirrors the `runOnce` of `ipallocator/controller/repair.go` and
//! `portallocator/controller/repair.go`: a fresh state gets every value a stored service
//! holds; a value held twice or outside the range is reported (kube records an Event and logs;
//! the services are left as they are).

use std::collections::HashSet;
use std::net::Ipv4Addr;

use serde_json::Value;

use super::port::PortError;
use super::service::{cluster_ips, health_check_node_port, node_ports, State};
use rkcm_storage::object;

/// Allocates in a cleared `state` everything `services` hold and every address an IPAddress
/// object (`ip_addresses`, their names) names.
pub(super) fn rebuild<'a>(
    state: &mut State,
    services: impl IntoIterator<Item = &'a Value>,
    ip_addresses: impl IntoIterator<Item = Ipv4Addr>,
) {
    state.ips.clear();
    state.ports = super::PortAllocator::new(state.ports.range());
    for ip in ip_addresses {
        state.ips.hold(ip);
    }
    let mut by_services = HashSet::new();
    for svc in services {
        let ns = object::namespace(svc);
        let name = object::name(svc);
        for ip in cluster_ips(svc) {
            if !by_services.insert(ip) {
                tracing::warn!(
                    namespace = ns, name, %ip,
                    "the cluster IP was assigned to multiple services; please recreate the service"
                );
            } else if !state.ips.in_range(ip) {
                tracing::warn!(
                    namespace = ns, name, %ip,
                    "the cluster IP is not within any configured Service CIDR; please recreate the service"
                );
            }
            state.ips.hold(ip);
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
