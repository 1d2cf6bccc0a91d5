//! ClusterIP and NodePort ranges, as kube-apiserver allocates them for Services.
//!
//! kube-apiserver 1.33 records each cluster IP as an IPAddress object, allocated from the ready
//! ServiceCIDRs (`ipallocator/cidrallocator.go`), and keeps node ports in a bitmap in etcd,
//! repaired by loops (`ipallocator/controller/repairip.go`, `portallocator/controller/repair.go`).
//! rkcm decides here, in memory ([`ClusterIps`] over the ready ServiceCIDRs' ranges, a bitmap of
//! node ports), rebuilds that state from the stored Services and IPAddresses when the server
//! starts ([`ServiceAllocators::repair_with`]), before it answers a request, and writes the
//! IPAddress objects in `rest::ip_addresses`, whose repair pass ([`ip_repair`]) keeps them and the
//! Services consistent.
//!
//! Only IPv4 single-stack ranges are supported: a service asking for IPv6 or dual-stack gets
//! kube's "not configured on this cluster" errors.

mod bitmap;
pub mod cluster_ips;
pub mod ip;
pub mod ip_repair;
pub mod port;
mod repair;
pub mod service;

use parking_lot::Mutex;

use rkcm_storage::object;
use serde_json::Value;

pub use cluster_ips::ClusterIps;
pub use ip::{IpRange, Ipv4Cidr};
pub use port::{PortAllocator, PortRange};
pub use service::Failure;

use service::{Item, State, Txn};

/// Default `--service-cluster-ip-range` of rkcm (kubeadm's).
pub const DEFAULT_SERVICE_CLUSTER_IP_RANGE: &str = "10.96.0.0/12";

/// Default `--service-node-port-range` (kube-apiserver's).
pub const DEFAULT_SERVICE_NODE_PORT_RANGE: &str = "30000-32767";

/// The allocators of one server, shared by every request on Services.
///
/// Each operation locks the state briefly and never across an `.await`; what a write allocated
/// is held by an [`Allocation`] until the write is stored.
pub struct ServiceAllocators {
    state: Mutex<State>,
}

impl ServiceAllocators {
    /// Empty allocators over the two ranges.
    pub fn new(cluster_ip_range: Ipv4Cidr, node_port_range: PortRange) -> Self {
        Self {
            state: Mutex::new(State {
                ips: ClusterIps::new(cluster_ip_range),
                ports: PortAllocator::new(node_port_range),
                pending_ports: Vec::new(),
                ports_revision: 0,
            }),
        }
    }

    /// The cluster IP range (`--service-cluster-ip-range`).
    pub fn cluster_ip_range(&self) -> Ipv4Cidr {
        self.state.lock().ips.primary()
    }

    /// Allocates cluster IPs from `ranges` from now on: the ready ServiceCIDRs'
    /// ([`cluster_ips::ready_ranges`]).
    pub fn set_cluster_ip_ranges(&self, ranges: &[Ipv4Cidr]) {
        self.state.lock().ips.set_ranges(ranges);
    }

    /// Marks `ip` held: an IPAddress object names it.
    pub fn hold_ip(&self, ip: std::net::Ipv4Addr) {
        self.state.lock().ips.hold(ip);
    }

    /// Frees `ip`: its IPAddress object is gone.
    pub fn release_ip(&self, ip: std::net::Ipv4Addr) {
        self.state.lock().ips.release(ip);
    }

    /// Marks node port `port` held: another API server on the same store allocated it.
    pub fn hold_port(&self, port: i64) {
        // Already held, or outside the range: nothing to do either way.
        let _ = self.state.lock().ports.allocate(port);
    }

    /// Holds exactly the node ports of the store's snapshot at `revision` (what every API server
    /// on the store allocated, the API server's node-port refresh) and those of writes in flight here,
    /// as kube's allocator restores its bitmap from the snapshot when it changed.
    pub fn restore_ports(&self, revision: i64, ports: &[i64]) {
        let mut state = self.state.lock();
        if revision == state.ports_revision {
            return;
        }
        let mut restored = PortAllocator::new(state.ports.range());
        for &port in ports.iter().chain(&state.pending_ports) {
            // A port both stored and in flight is held once.
            let _ = restored.allocate(port);
        }
        state.ports = restored;
        state.ports_revision = revision;
    }

    /// Whether a ready ServiceCIDR contains `ip`.
    pub fn ip_in_range(&self, ip: std::net::Ipv4Addr) -> bool {
        self.state.lock().ips.in_range(ip)
    }

    /// The node port range.
    pub fn node_port_range(&self) -> PortRange {
        self.state.lock().ports.range()
    }

    /// The address of the `kubernetes` Service: the first of the range
    /// (`ServiceIPRange` → `GetIndexedIP(cidr, 1)`).
    pub fn kubernetes_service_ip(&self) -> std::net::Ipv4Addr {
        let cidr = self.cluster_ip_range();
        cidr.nth(1).unwrap_or(cidr.network())
    }

    fn run(
        &self,
        dry_run: bool,
        op: impl FnOnce(&mut State, &mut Txn) -> Result<(), Failure>,
    ) -> Result<Allocation<'_>, Failure> {
        let mut txn = Txn::default();
        if dry_run {
            // A dry run works on a copy: it reports what a real write would allocate and keeps
            // nothing. (kube's dry run only range-checks a requested IP and answers the network
            // address for a missing one; the copy gives the answer a real write would get.)
            let mut copy = self.state.lock().clone();
            op(&mut copy, &mut txn)?;
            return Ok(Allocation { owner: None, txn });
        }
        let mut state = self.state.lock();
        if let Err(e) = op(&mut state, &mut txn) {
            for item in txn.allocated.drain(..) {
                state.release(item);
            }
            return Err(e);
        }
        for item in &txn.allocated {
            if let Item::Port(port) = item {
                state.pending_ports.push(*port);
            }
        }
        Ok(Allocation {
            owner: Some(self),
            txn,
        })
    }

    /// Allocates what a new service needs (cluster IP, node ports, health check node port)
    /// and fills its fields. The allocation is undone when the returned guard is dropped
    /// without [`Allocation::commit`].
    pub fn allocate_create(
        &self,
        svc: &mut Value,
        dry_run: bool,
    ) -> Result<Allocation<'_>, Failure> {
        self.run(dry_run, |state, txn| {
            service::allocate_create(state, txn, svc)
        })
    }

    /// Allocates what an update of `old` into `new` needs; what `old` held and `new` no longer
    /// needs is freed on [`Allocation::commit`].
    pub fn allocate_update(
        &self,
        new: &mut Value,
        old: &Value,
        dry_run: bool,
    ) -> Result<Allocation<'_>, Failure> {
        self.run(dry_run, |state, txn| {
            service::allocate_update(state, txn, new, old)
        })
    }

    /// Frees everything a deleted service held.
    pub fn release(&self, svc: &Value) {
        let mut state = self.state.lock();
        for item in service::held(svc) {
            state.release(item);
        }
    }

    /// Whether `ip` is allocated.
    pub fn has_ip(&self, ip: std::net::Ipv4Addr) -> bool {
        self.state.lock().ips.has(ip)
    }

    /// Whether node port `port` is allocated.
    pub fn has_port(&self, port: i64) -> bool {
        self.state.lock().ports.has(port)
    }

    /// Rebuilds the allocation state from the stored `services` (the repair controllers'
    /// `runOnce`): everything they hold is allocated, conflicts and values outside the ranges
    /// are logged as kube logs them.
    pub fn repair<'a>(&self, services: impl IntoIterator<Item = &'a Value>) {
        self.repair_with(services, [], []);
    }

    /// [`ServiceAllocators::repair`] that also holds the addresses the stored IPAddress objects
    /// name and allocates from the ranges of the stored ServiceCIDRs that are ready.
    pub fn repair_with<'a>(
        &self,
        services: impl IntoIterator<Item = &'a Value>,
        ip_addresses: impl IntoIterator<Item = &'a Value>,
        service_cidrs: impl IntoIterator<Item = &'a Value>,
    ) {
        let ranges = cluster_ips::ready_ranges(service_cidrs);
        let mut state = self.state.lock();
        if !ranges.is_empty() {
            state.ips.set_ranges(&ranges);
        }
        let held = ip_addresses
            .into_iter()
            .filter_map(|ip| object::name(ip).parse().ok());
        repair::rebuild(&mut state, services, held);
    }
}

/// What one write allocated: freed again on drop, kept by [`Allocation::commit`].
#[must_use = "dropping an allocation releases it"]
pub struct Allocation<'a> {
    /// `None` for a dry run, which holds nothing.
    owner: Option<&'a ServiceAllocators>,
    txn: Txn,
}

impl Allocation<'_> {
    /// The write is stored: keep what it allocated and free what the old object held and the
    /// new one no longer needs.
    pub fn commit(mut self) {
        if let Some(owner) = self.owner {
            let mut state = owner.state.lock();
            settle(&mut state, &self.txn.allocated);
            for item in self.txn.release_on_commit.drain(..) {
                state.release(item);
            }
        }
        self.txn.allocated.clear();
    }
}

/// The write that allocated `items` is stored or undone: its ports are no longer in flight.
fn settle(state: &mut State, items: &[Item]) {
    for item in items {
        if let Item::Port(port) = item {
            if let Some(at) = state.pending_ports.iter().position(|p| p == port) {
                state.pending_ports.swap_remove(at);
            }
        }
    }
}

impl Drop for Allocation<'_> {
    fn drop(&mut self) {
        if let Some(owner) = self.owner {
            if !self.txn.allocated.is_empty() {
                let mut state = owner.state.lock();
                settle(&mut state, &self.txn.allocated);
                for item in self.txn.allocated.drain(..) {
                    state.release(item);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::net::Ipv4Addr;

    fn allocators() -> ServiceAllocators {
        ServiceAllocators::new(
            "10.96.0.0/12".parse().expect("valid"),
            "30000-32767".parse().expect("valid"),
        )
    }

    /// A service as the strategy leaves it after defaulting.
    fn svc(spec: Value) -> Value {
        let mut spec = spec;
        let obj = spec.as_object_mut().expect("object");
        obj.entry("type").or_insert(json!("ClusterIP"));
        obj.entry("selector").or_insert(json!({"app": "web"}));
        obj.entry("ports")
            .or_insert(json!([{"port": 80, "protocol": "TCP", "targetPort": 80}]));
        json!({"metadata": {"name": "web", "namespace": "default"}, "spec": spec})
    }

    fn ip(s: &Value) -> Ipv4Addr {
        s["spec"]["clusterIP"]
            .as_str()
            .and_then(|s| s.parse().ok())
            .expect("an IPv4 cluster IP")
    }

    fn invalid(f: Failure) -> Vec<String> {
        match f {
            Failure::Invalid(errs) => errs.iter().map(FieldError::message_with_field).collect(),
            Failure::Internal(m) => panic!("expected Invalid, got Internal {m}"),
        }
    }

    use crate::FieldError;

    #[test]
    fn a_cluster_ip_service_gets_a_free_address_and_single_stack_fields() {
        let a = allocators();
        let mut s = svc(json!({}));
        a.allocate_create(&mut s, false)
            .expect("allocates")
            .commit();
        let got = ip(&s);
        assert!(a.cluster_ip_range().contains(got));
        // Dynamic addresses come from above the reserved lower band (offset 256).
        assert!(
            u32::from(got) > u32::from(Ipv4Addr::new(10, 96, 1, 0)),
            "{got}"
        );
        assert_eq!(s["spec"]["clusterIPs"], json!([got.to_string()]));
        assert_eq!(s["spec"]["ipFamilies"], json!(["IPv4"]));
        assert_eq!(s["spec"]["ipFamilyPolicy"], "SingleStack");
        assert!(a.has_ip(got));
        a.release(&s);
        assert!(!a.has_ip(got));
    }

    #[test]
    fn a_requested_cluster_ip_must_be_in_range_and_free() {
        // TestCreateWithClusterIP / "ip in use" and "ip out of range" of storage_test.go, with
        // the IPAddress allocator's message for an address no ServiceCIDR contains.
        let a = allocators();
        let mut first = svc(json!({"clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"]}));
        a.allocate_create(&mut first, false).expect("free").commit();
        assert_eq!(ip(&first), Ipv4Addr::new(10, 96, 0, 10));
        let mut second = svc(json!({"clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"]}));
        let err = a.allocate_create(&mut second, false).err().expect("taken");
        assert_eq!(
            invalid(err),
            ["spec.clusterIPs: Invalid value: [\"10.96.0.10\"]: failed to allocate IP 10.96.0.10: provided IP is already allocated"]
        );
        let mut outside = svc(json!({"clusterIP": "192.168.0.1", "clusterIPs": ["192.168.0.1"]}));
        let err = a
            .allocate_create(&mut outside, false)
            .err()
            .expect("outside");
        assert_eq!(
            invalid(err),
            ["spec.clusterIPs: Invalid value: [\"192.168.0.1\"]: failed to allocate IP 192.168.0.1: the provided network does not match the current range"]
        );
    }

    #[test]
    fn headless_and_external_name_services_get_no_address() {
        let a = allocators();
        let mut headless = svc(json!({"clusterIP": "None", "clusterIPs": ["None"]}));
        a.allocate_create(&mut headless, false)
            .expect("ok")
            .commit();
        assert_eq!(headless["spec"]["clusterIP"], "None");
        assert_eq!(headless["spec"]["ipFamilyPolicy"], "SingleStack");
        assert_eq!(headless["spec"]["ipFamilies"], json!(["IPv4"]));
        // Headless without a selector defaults to dual-stack families, as kube does even on a
        // single-stack cluster.
        let mut selectorless =
            svc(json!({"clusterIP": "None", "clusterIPs": ["None"], "selector": {}}));
        a.allocate_create(&mut selectorless, false)
            .expect("ok")
            .commit();
        assert_eq!(selectorless["spec"]["ipFamilyPolicy"], "RequireDualStack");
        assert_eq!(selectorless["spec"]["ipFamilies"], json!(["IPv4", "IPv6"]));
        let mut external = svc(json!({"type": "ExternalName", "externalName": "example.com"}));
        a.allocate_create(&mut external, false)
            .expect("ok")
            .commit();
        assert!(external["spec"].get("clusterIP").is_none());
        assert!(external["spec"].get("ipFamilies").is_none());
        assert_eq!(a.state.lock().ips.used(), 0);
    }

    #[test]
    fn ipv6_and_dual_stack_are_refused_on_this_cluster() {
        let a = allocators();
        let mut v6 = svc(json!({"ipFamilies": ["IPv6"]}));
        assert_eq!(
            invalid(a.allocate_create(&mut v6, false).err().expect("refused")),
            ["spec.ipFamilies[0]: Invalid value: \"IPv6\": not configured on this cluster"]
        );
        let mut dual = svc(json!({"ipFamilyPolicy": "RequireDualStack"}));
        assert_eq!(
            invalid(a.allocate_create(&mut dual, false).err().expect("refused")),
            ["spec.ipFamilyPolicy: Invalid value: \"RequireDualStack\": this cluster is not configured for dual-stack services"]
        );
        let mut mismatch = svc(json!({"clusterIP": "10.96.0.5", "clusterIPs": ["10.96.0.6"]}));
        assert_eq!(
            invalid(a.allocate_create(&mut mismatch, false).err().expect("refused")),
            ["spec.clusterIPs: Invalid value: [\"10.96.0.6\"]: first value must match `clusterIP`"]
        );
        assert_eq!(a.state.lock().ips.used(), 0);
    }

    #[test]
    fn node_ports_are_allocated_shared_by_port_number_and_checked() {
        // TestCreateInitNodePorts: "two ports, same number, different protocols" share one.
        let a = allocators();
        let mut s = svc(json!({"type": "NodePort", "ports": [
            {"name": "dns", "port": 53, "protocol": "TCP"},
            {"name": "dns-udp", "port": 53, "protocol": "UDP"},
            {"name": "http", "port": 80, "protocol": "TCP", "nodePort": 30080}
        ]}));
        a.allocate_create(&mut s, false).expect("ok").commit();
        let np = |i: usize| s["spec"]["ports"][i]["nodePort"].as_i64().expect("set");
        assert_eq!(np(0), np(1));
        assert!(a.node_port_range().contains(np(0)));
        assert_eq!(np(2), 30080);
        assert!(a.has_port(30080) && a.has_port(np(0)));

        let mut taken = svc(json!({"type": "NodePort", "ports": [
            {"name": "a", "port": 81, "protocol": "TCP"},
            {"name": "b", "port": 82, "protocol": "TCP", "nodePort": 30080}]}));
        let before = a.state.lock().ports.free();
        assert_eq!(
            invalid(a.allocate_create(&mut taken, false).err().expect("taken")),
            ["spec.ports[1].nodePort: Invalid value: 30080: provided port is already allocated"]
        );
        // The cluster IP and the port allocated for the first entry went back.
        assert_eq!(a.state.lock().ports.free(), before);
        let mut outside = svc(json!({"type": "NodePort", "ports": [
            {"port": 80, "protocol": "TCP", "nodePort": 8080}]}));
        assert_eq!(
            invalid(a.allocate_create(&mut outside, false).err().expect("outside")),
            ["spec.ports[0].nodePort: Invalid value: 8080: provided port is not in the valid range. The range of valid ports is 30000-32767"]
        );
    }

    #[test]
    fn load_balancers_get_node_ports_unless_disabled_and_a_health_check_port_when_local() {
        let a = allocators();
        let mut lb = svc(
            json!({"type": "LoadBalancer", "externalTrafficPolicy": "Local",
            "allocateLoadBalancerNodePorts": false}),
        );
        a.allocate_create(&mut lb, false).expect("ok").commit();
        assert!(lb["spec"]["ports"][0].get("nodePort").is_none());
        let hc = lb["spec"]["healthCheckNodePort"]
            .as_i64()
            .expect("allocated");
        assert!(a.has_port(hc));
        a.release(&lb);
        assert!(!a.has_port(hc));
        let mut plain = svc(json!({"type": "LoadBalancer", "externalTrafficPolicy": "Cluster"}));
        a.allocate_create(&mut plain, false).expect("ok").commit();
        assert!(plain["spec"]["ports"][0]["nodePort"].is_i64());
        assert!(plain["spec"].get("healthCheckNodePort").is_none());
    }

    #[test]
    fn an_uncommitted_allocation_is_released_and_a_dry_run_keeps_nothing() {
        let a = allocators();
        let mut s = svc(json!({"type": "NodePort"}));
        let allocation = a.allocate_create(&mut s, false).expect("ok");
        assert!(a.has_ip(ip(&s)));
        drop(allocation);
        assert!(!a.has_ip(ip(&s)));
        assert_eq!(a.state.lock().ports.free(), 2768);

        let mut dry =
            svc(json!({"type": "NodePort", "clusterIP": "10.96.0.7", "clusterIPs": ["10.96.0.7"]}));
        a.allocate_create(&mut dry, true).expect("ok").commit();
        assert_eq!(ip(&dry), Ipv4Addr::new(10, 96, 0, 7));
        assert!(dry["spec"]["ports"][0]["nodePort"].is_i64());
        assert!(!a.has_ip(Ipv4Addr::new(10, 96, 0, 7)));
        assert_eq!(a.state.lock().ports.free(), 2768);
    }

    fn update(a: &ServiceAllocators, old: &Value, mut new: Value) -> Result<Value, Failure> {
        service::normalize_cluster_ips(&mut new, Some(old));
        service::patch_allocated_values(&mut new, old);
        service::drop_type_dependent_fields(&mut new, old);
        a.allocate_update(&mut new, old, false)?.commit();
        Ok(new)
    }

    #[test]
    fn an_update_that_omits_allocated_values_keeps_them() {
        // TestPatchAllocatedValues: clusterIP, clusterIPs and node ports by port name.
        let a = allocators();
        let mut old = svc(json!({"type": "NodePort"}));
        a.allocate_create(&mut old, false).expect("ok").commit();
        let new = update(&a, &old, svc(json!({"type": "NodePort"}))).expect("ok");
        assert_eq!(new["spec"]["clusterIP"], old["spec"]["clusterIP"]);
        assert_eq!(new["spec"]["clusterIPs"], old["spec"]["clusterIPs"]);
        assert_eq!(
            new["spec"]["ports"][0]["nodePort"],
            old["spec"]["ports"][0]["nodePort"]
        );
        assert!(a.has_port(old["spec"]["ports"][0]["nodePort"].as_i64().expect("set")));
    }

    #[test]
    fn type_changes_allocate_and_release_as_kube_does() {
        let a = allocators();
        // ExternalName → ClusterIP allocates an address.
        let old = svc(json!({"type": "ExternalName", "externalName": "example.com"}));
        let cluster = update(&a, &old, svc(json!({"type": "ClusterIP"}))).expect("ok");
        let addr = ip(&cluster);
        assert!(a.has_ip(addr));
        assert_eq!(cluster["spec"]["ipFamilyPolicy"], "SingleStack");
        // ClusterIP → NodePort allocates a node port.
        let node_port = update(&a, &cluster, {
            let mut s = cluster.clone();
            s["spec"]["type"] = json!("NodePort");
            s
        })
        .expect("ok");
        let np = node_port["spec"]["ports"][0]["nodePort"]
            .as_i64()
            .expect("allocated");
        assert!(a.has_port(np));
        // NodePort → ClusterIP drops and releases the node port.
        let back = update(&a, &node_port, {
            let mut s = node_port.clone();
            s["spec"]["type"] = json!("ClusterIP");
            s
        })
        .expect("ok");
        assert!(back["spec"]["ports"][0].get("nodePort").is_none());
        assert!(!a.has_port(np));
        // ClusterIP → ExternalName drops and releases the address.
        let external = update(&a, &back, {
            let mut s = back.clone();
            s["spec"]["type"] = json!("ExternalName");
            s["spec"]["externalName"] = json!("example.com");
            s
        })
        .expect("ok");
        assert!(external["spec"].get("clusterIP").is_none());
        assert!(external["spec"].get("ipFamilies").is_none());
        assert!(!a.has_ip(addr));
    }

    #[test]
    fn a_failed_update_keeps_what_the_old_object_held() {
        let a = allocators();
        let mut other = svc(
            json!({"type": "NodePort", "ports": [{"port": 80, "protocol": "TCP", "nodePort": 30001}]}),
        );
        a.allocate_create(&mut other, false).expect("ok").commit();
        let mut old = svc(
            json!({"type": "NodePort", "ports": [{"port": 80, "protocol": "TCP", "nodePort": 30002}]}),
        );
        a.allocate_create(&mut old, false).expect("ok").commit();
        let mut new = old.clone();
        new["spec"]["ports"][0]["nodePort"] = json!(30001);
        let err = a
            .allocate_update(&mut new, &old, false)
            .err()
            .expect("taken");
        assert_eq!(
            invalid(err),
            ["spec.ports[0].nodePort: Invalid value: 30001: provided port is already allocated"]
        );
        assert!(a.has_port(30002));
        // A stored update that moves to a free port frees the old one only on commit.
        new["spec"]["ports"][0]["nodePort"] = json!(30003);
        let allocation = a.allocate_update(&mut new, &old, false).expect("free");
        assert!(a.has_port(30002) && a.has_port(30003));
        allocation.commit();
        assert!(!a.has_port(30002) && a.has_port(30003));
    }

    #[test]
    fn repair_rebuilds_the_state_from_stored_services() {
        // repair_test.go: stored values are allocated, strays and duplicates reported.
        let a = allocators();
        let mut stale = svc(json!({}));
        a.allocate_create(&mut stale, false).expect("ok").commit();
        let stored = [
            svc(json!({"clusterIP": "10.96.0.1", "clusterIPs": ["10.96.0.1"]})),
            svc(
                json!({"type": "NodePort", "clusterIP": "10.96.0.2", "clusterIPs": ["10.96.0.2"],
                "ports": [{"port": 53, "protocol": "TCP", "nodePort": 30053},
                          {"port": 53, "protocol": "UDP", "nodePort": 30053}]}),
            ),
            svc(
                json!({"type": "LoadBalancer", "externalTrafficPolicy": "Local",
                "clusterIP": "10.96.0.2", "clusterIPs": ["10.96.0.2"], "healthCheckNodePort": 31000,
                "ports": [{"port": 80, "protocol": "TCP", "nodePort": 30080}]}),
            ),
            svc(json!({"clusterIP": "172.16.0.1", "clusterIPs": ["172.16.0.1"]})),
            svc(json!({"clusterIP": "None", "clusterIPs": ["None"]})),
        ];
        a.repair(stored.iter());
        assert!(!a.has_ip(ip(&stale)), "nothing stored holds it");
        assert!(a.has_ip(Ipv4Addr::new(10, 96, 0, 1)) && a.has_ip(Ipv4Addr::new(10, 96, 0, 2)));
        assert!(a.has_port(30053) && a.has_port(30080) && a.has_port(31000));
        // The address outside every range stays held too: no other Service may get it.
        assert_eq!(a.state.lock().ips.used(), 3);
        assert_eq!(a.state.lock().ports.free(), 2768 - 3);
    }

    #[test]
    fn the_kubernetes_service_takes_the_first_address() {
        assert_eq!(
            allocators().kubernetes_service_ip(),
            Ipv4Addr::new(10, 96, 0, 1)
        );
    }
}
