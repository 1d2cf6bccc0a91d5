//! What a Service create, update or delete allocates and releases, on the stored JSON.
//!
//! Mirrors `pkg/registry/core/service/storage/alloc.go` (`allocateCreate`, `allocateUpdate`,
//! `releaseAllocatedResources`, `initIPFamilyFields` for a single-stack IPv4 cluster) and the
//! field bookkeeping of `storage.go` (`patchAllocatedValues`) and `strategy.go`
//! (`NormalizeClusterIPs`, `dropTypeDependentFields`). Allocation happens on a [`State`]
//! and is recorded in a [`Txn`] so that the caller can undo it when the write fails.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};

use serde_json::{json, Map, Value};

use super::cluster_ips::ClusterIps;
use super::port::PortAllocator;
use crate::FieldError;

/// The allocation state of one server.
#[derive(Clone, Debug)]
pub struct State {
    /// Cluster IPs.
    pub ips: ClusterIps,
    /// Node ports (health check node ports included).
    pub ports: PortAllocator,
    /// Node ports allocated by writes not yet stored nor undone: kept when the ports are
    /// restored from the store's snapshot.
    pub pending_ports: Vec<i64>,
    /// Revision of the node port snapshot the ports were last restored from.
    pub ports_revision: i64,
}

/// One allocated value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Item {
    /// A cluster IP.
    Ip(Ipv4Addr),
    /// A node port.
    Port(i64),
}

impl State {
    /// Frees `item`.
    pub fn release(&mut self, item: Item) {
        match item {
            Item::Ip(ip) => self.ips.release(ip),
            Item::Port(p) => self.ports.release(p),
        }
    }
}

/// What one write allocated, and what it frees once the write is stored.
#[derive(Debug, Default)]
pub struct Txn {
    /// Allocated by this write: freed again if the write fails.
    pub allocated: Vec<Item>,
    /// Held by the old object and no longer needed: freed once the write is stored.
    pub release_on_commit: Vec<Item>,
}

/// Why a service cannot be allocated for.
#[derive(Debug, PartialEq, Eq)]
pub enum Failure {
    /// 422 Invalid with these causes.
    Invalid(Vec<FieldError>),
    /// 500 InternalError with this message (kube's `errors.NewInternalError`).
    Internal(String),
}

fn spec(svc: &Value) -> Option<&Map<String, Value>> {
    svc.get("spec").and_then(Value::as_object)
}

fn spec_mut(svc: &mut Value) -> Option<&mut Map<String, Value>> {
    svc.get_mut("spec").and_then(Value::as_object_mut)
}

fn spec_str<'a>(svc: &'a Value, field: &str) -> &'a str {
    spec(svc)
        .and_then(|s| s.get(field))
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn service_type(svc: &Value) -> &str {
    match spec_str(svc, "type") {
        "" => "ClusterIP",
        t => t,
    }
}

fn strings(svc: &Value, field: &str) -> Vec<String> {
    spec(svc)
        .and_then(|s| s.get(field))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|v| v.as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default()
}

fn set(svc: &mut Value, field: &str, value: Value) {
    if let Some(spec) = spec_mut(svc) {
        if value.is_null() {
            spec.remove(field);
        } else {
            spec.insert(field.to_string(), value);
        }
    }
}

fn int(v: Option<&Value>) -> i64 {
    v.and_then(Value::as_i64).unwrap_or(0)
}

fn ports(svc: &Value) -> &[Value] {
    spec(svc)
        .and_then(|s| s.get("ports"))
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

fn set_node_port(svc: &mut Value, i: usize, node_port: i64) {
    let port = svc
        .pointer_mut(&format!("/spec/ports/{i}"))
        .and_then(Value::as_object_mut);
    if let Some(p) = port {
        if node_port == 0 {
            p.remove("nodePort");
        } else {
            p.insert("nodePort".to_string(), json!(node_port));
        }
    }
}

/// `needsClusterIP`: every type but ExternalName.
fn needs_cluster_ip(svc: &Value) -> bool {
    service_type(svc) != "ExternalName"
}

/// `needsNodePort`: NodePort and LoadBalancer.
fn needs_node_port(svc: &Value) -> bool {
    matches!(service_type(svc), "NodePort" | "LoadBalancer")
}

/// `apiservice.NeedsHealthCheck`: a LoadBalancer with `externalTrafficPolicy: Local`.
pub fn needs_health_check(svc: &Value) -> bool {
    service_type(svc) == "LoadBalancer" && spec_str(svc, "externalTrafficPolicy") == "Local"
}

/// `shouldAllocateNodePorts`: NodePort always, LoadBalancer unless
/// `allocateLoadBalancerNodePorts: false`.
fn should_allocate_node_ports(svc: &Value) -> bool {
    match service_type(svc) {
        "NodePort" => true,
        "LoadBalancer" => spec(svc)
            .and_then(|s| s.get("allocateLoadBalancerNodePorts"))
            .and_then(Value::as_bool)
            .unwrap_or(true),
        _ => false,
    }
}

fn is_headless(svc: &Value) -> bool {
    spec_str(svc, "clusterIP") == "None"
}

fn has_selector(svc: &Value) -> bool {
    spec(svc)
        .and_then(|s| s.get("selector"))
        .and_then(Value::as_object)
        .is_some_and(|m| !m.is_empty())
}

/// `collectServiceNodePorts`: the node ports set on the ports.
pub fn node_ports(svc: &Value) -> Vec<i64> {
    ports(svc)
        .iter()
        .map(|p| int(p.get("nodePort")))
        .filter(|&n| n != 0)
        .collect()
}

/// The health check node port, when the service needs one and has it.
pub fn health_check_node_port(svc: &Value) -> Option<i64> {
    let hc = int(spec(svc).and_then(|s| s.get("healthCheckNodePort")));
    (needs_health_check(svc) && hc > 0).then_some(hc)
}

/// The IPv4 cluster IPs the service holds (none for ExternalName and headless services).
pub fn cluster_ips(svc: &Value) -> Vec<Ipv4Addr> {
    if !needs_cluster_ip(svc)
        || strings(svc, "clusterIPs").first().map(String::as_str) == Some("None")
    {
        return Vec::new();
    }
    strings(svc, "clusterIPs")
        .iter()
        .filter_map(|ip| ip.parse().ok())
        .collect()
}

/// `NormalizeClusterIPs`: reconciles `clusterIP` and `clusterIPs` for clients that only know
/// the singular field.
pub fn normalize_cluster_ips(new: &mut Value, old: Option<&Value>) {
    let ip = spec_str(new, "clusterIP").to_string();
    let ips = strings(new, "clusterIPs");
    let Some(old) = old else {
        if !ip.is_empty() && ips.is_empty() {
            set(new, "clusterIPs", json!([ip]));
        }
        return;
    };
    let old_ip = spec_str(old, "clusterIP");
    let old_ips = strings(old, "clusterIPs");
    if !old_ips.is_empty() && ips.is_empty() && old_ip == ip {
        set(new, "clusterIPs", json!(old_ips));
    }
    if old_ip != ip {
        let same = strings(new, "clusterIPs") == old_ips;
        if !old_ip.is_empty() && ip.is_empty() && same {
            set(new, "clusterIPs", Value::Null);
        }
        if !ip.is_empty() && same {
            set(new, "clusterIPs", json!([ip]));
        }
    }
}

/// `patchAllocatedValues`: an update that omits allocated values keeps them.
pub fn patch_allocated_values(new: &mut Value, old: &Value) {
    if needs_cluster_ip(old) && needs_cluster_ip(new) {
        if spec_str(new, "clusterIP").is_empty() {
            set(new, "clusterIP", json!(spec_str(old, "clusterIP")));
        }
        let old_ips = strings(old, "clusterIPs");
        if strings(new, "clusterIPs").is_empty() && !old_ips.is_empty() {
            set(new, "clusterIPs", json!(old_ips));
        }
    }
    if needs_node_port(old) && needs_node_port(new) {
        // Ports the new object already uses cannot be patched into another port.
        let new_used = node_ports(new);
        let used: Vec<i64> = node_ports(old)
            .into_iter()
            .filter(|p| new_used.contains(p))
            .collect();
        let by_name: HashMap<String, i64> = ports(old)
            .iter()
            .map(|p| {
                let name = p.get("name").and_then(Value::as_str).unwrap_or("");
                (name.to_string(), int(p.get("nodePort")))
            })
            .collect();
        for i in 0..ports(new).len() {
            let p = &ports(new)[i];
            if int(p.get("nodePort")) != 0 {
                continue;
            }
            let name = p.get("name").and_then(Value::as_str).unwrap_or("");
            if let Some(&old_np) = by_name.get(name) {
                if !used.contains(&old_np) {
                    set_node_port(new, i, old_np);
                }
            }
        }
    }
    let hc = |s: &Value| int(spec(s).and_then(|s| s.get("healthCheckNodePort")));
    if needs_health_check(old) && needs_health_check(new) && hc(new) == 0 && hc(old) != 0 {
        set(new, "healthCheckNodePort", json!(hc(old)));
    }
}

/// `dropTypeDependentFields`: a type change drops the values the old type had allocated, unless
/// the client changed them too (then validation speaks).
pub fn drop_type_dependent_fields(new: &mut Value, old: &Value) {
    if needs_cluster_ip(old) && !needs_cluster_ip(new) {
        if strings(new, "clusterIPs") == strings(old, "clusterIPs") {
            set(new, "clusterIP", Value::Null);
            set(new, "clusterIPs", Value::Null);
        }
        if strings(new, "ipFamilies") == strings(old, "ipFamilies") {
            set(new, "ipFamilies", Value::Null);
        }
        if spec_str(new, "ipFamilyPolicy") == spec_str(old, "ipFamilyPolicy") {
            set(new, "ipFamilyPolicy", Value::Null);
        }
    }
    let ports_of = |s: &Value| {
        ports(s)
            .iter()
            .map(|p| int(p.get("nodePort")))
            .collect::<Vec<_>>()
    };
    if needs_node_port(old) && !needs_node_port(new) && ports_of(new) == ports_of(old) {
        for i in 0..ports(new).len() {
            set_node_port(new, i, 0);
        }
    }
    let hc = |s: &Value| int(spec(s).and_then(|s| s.get("healthCheckNodePort")));
    if needs_health_check(old) && !needs_health_check(new) && hc(new) == hc(old) {
        set(new, "healthCheckNodePort", Value::Null);
    }
    if service_type(old) == "LoadBalancer" && service_type(new) != "LoadBalancer" {
        let alloc = |s: &Value| {
            spec(s)
                .and_then(|s| s.get("allocateLoadBalancerNodePorts"))
                .cloned()
        };
        if alloc(new).is_some() && alloc(new) == alloc(old) {
            set(new, "allocateLoadBalancerNodePorts", Value::Null);
        }
    }
}

/// `initIPFamilyFields` for a cluster that serves IPv4 only: defaults `ipFamilyPolicy` and
/// `ipFamilies`, and refuses what the cluster cannot give.
fn init_ip_family_fields(svc: &mut Value, old: Option<&Value>) -> Result<(), Failure> {
    if !needs_cluster_ip(svc) {
        return Ok(());
    }
    let headless_selectorless = is_headless(svc) && !has_selector(svc);
    let mut policy = spec_str(svc, "ipFamilyPolicy").to_string();
    if policy.is_empty() {
        policy = match old
            .map(|o| spec_str(o, "ipFamilyPolicy"))
            .filter(|p| !p.is_empty())
        {
            Some(p) => p.to_string(),
            None if headless_selectorless => "RequireDualStack".to_string(),
            None => "SingleStack".to_string(),
        };
        set(svc, "ipFamilyPolicy", json!(policy));
    }
    let ip = spec_str(svc, "clusterIP").to_string();
    let ips = strings(svc, "clusterIPs");
    let mut families = strings(svc, "ipFamilies");
    let mut errs = cluster_ip_related_errors(&ip, &ips);
    if !errs.is_empty() {
        return Err(Failure::Invalid(errs));
    }
    let policy_value = json!(policy);
    if policy == "SingleStack" {
        if ips.len() == 2 {
            errs.push(FieldError::invalid(
                "spec.ipFamilyPolicy",
                &policy_value,
                "must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs are specified",
            ));
        }
        if families.len() == 2 {
            errs.push(FieldError::invalid(
                "spec.ipFamilyPolicy",
                &policy_value,
                "must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified",
            ));
        }
    }
    for (i, ip) in ips.iter().enumerate() {
        if ip == "None" {
            break;
        }
        let v6 = ip.parse::<IpAddr>().is_ok_and(|a| a.is_ipv6());
        if i >= families.len() {
            if v6 {
                errs.push(FieldError::invalid(
                    format!("spec.clusterIPs[{i}]"),
                    &json!(ips),
                    "IPv6 is not configured on this cluster",
                ));
            } else {
                families.push("IPv4".to_string());
            }
        }
    }
    if !errs.is_empty() {
        return Err(Failure::Invalid(errs));
    }
    if headless_selectorless {
        if families.is_empty() {
            families.push("IPv4".to_string());
        }
        if families.len() < 2 && policy != "SingleStack" {
            let alt = if families[0] == "IPv4" {
                "IPv6"
            } else {
                "IPv4"
            };
            families.push(alt.to_string());
        }
        set(svc, "ipFamilies", json!(families));
        return Ok(());
    }
    if policy == "RequireDualStack" {
        errs.push(FieldError::invalid(
            "spec.ipFamilyPolicy",
            &policy_value,
            "this cluster is not configured for dual-stack services",
        ));
    }
    for (i, family) in families.iter().enumerate() {
        if family != "IPv4" {
            errs.push(FieldError::invalid(
                format!("spec.ipFamilies[{i}]"),
                &json!(family),
                "not configured on this cluster",
            ));
        }
    }
    if !errs.is_empty() {
        return Err(Failure::Invalid(errs));
    }
    if families.is_empty() {
        families.push("IPv4".to_string());
    }
    set(svc, "ipFamilies", json!(families));
    Ok(())
}

/// The part of `ValidateServiceClusterIPsRelatedFields` allocation depends on.
fn cluster_ip_related_errors(ip: &str, ips: &[String]) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if !ip.is_empty() {
        if ips.is_empty() {
            errs.push(FieldError::required("spec.clusterIPs", ""));
        } else if ips[0] != ip {
            errs.push(FieldError::invalid(
                "spec.clusterIPs",
                &json!(ips),
                "first value must match `clusterIP`",
            ));
        }
    } else if !ips.is_empty() {
        errs.push(FieldError::invalid(
            "spec.clusterIPs",
            &json!(ips),
            "must be empty when `clusterIP` is not specified",
        ));
    }
    for (i, v) in ips.iter().enumerate() {
        if v == "None" && i == 0 {
            continue;
        }
        if v.parse::<IpAddr>().is_err() {
            errs.push(FieldError::invalid(
                format!("spec.clusterIPs[{i}]"),
                &json!(v),
                "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
            ));
        }
    }
    errs
}

/// `allocClusterIPs`: a free address, or the requested one.
fn alloc_cluster_ips(state: &mut State, txn: &mut Txn, svc: &mut Value) -> Result<(), Failure> {
    if !needs_cluster_ip(svc) {
        return Ok(());
    }
    let ips = strings(svc, "clusterIPs");
    let ip = match ips.first().map(String::as_str) {
        Some("None") => return Ok(()),
        None | Some("") => state
            .ips
            .allocate_next()
            .map_err(|e| Failure::Internal(format!("failed to allocate a serviceIP: {e}")))?,
        Some(requested) => {
            let ip: Ipv4Addr = requested.parse().map_err(|_| {
                Failure::Internal(format!("failed to parse service IP {requested:?}"))
            })?;
            state.ips.allocate(ip).map_err(|e| {
                Failure::Invalid(vec![FieldError::invalid(
                    "spec.clusterIPs",
                    &json!(ips),
                    &format!("failed to allocate IP {requested}: {e}"),
                )])
            })?;
            ip
        }
    };
    txn.allocated.push(Item::Ip(ip));
    set(svc, "clusterIP", json!(ip.to_string()));
    set(svc, "clusterIPs", json!([ip.to_string()]));
    Ok(())
}

fn node_port_error(i: usize, port: i64, e: impl ToString) -> Failure {
    Failure::Invalid(vec![FieldError::invalid(
        format!("spec.ports[{i}].nodePort"),
        &json!(port),
        &e.to_string(),
    )])
}

fn allocate_port(
    state: &mut State,
    txn: &mut Txn,
    port: i64,
) -> Result<(), super::port::PortError> {
    state.ports.allocate(port)?;
    txn.allocated.push(Item::Port(port));
    Ok(())
}

fn allocate_next_port(state: &mut State, txn: &mut Txn) -> Result<i64, Failure> {
    let port = state
        .ports
        .allocate_next()
        .map_err(|e| Failure::Internal(format!("failed to allocate a nodePort: {e}")))?;
    txn.allocated.push(Item::Port(port));
    Ok(port)
}

/// `initNodePorts`: ports sharing a port number share a node port; requested node ports are
/// reserved, missing ones allocated.
fn init_node_ports(state: &mut State, txn: &mut Txn, svc: &mut Value) -> Result<(), Failure> {
    let allocate_missing = should_allocate_node_ports(svc);
    let mut by_port: HashMap<i64, i64> = HashMap::new();
    for i in 0..ports(svc).len() {
        let port = int(ports(svc)[i].get("port"));
        let node_port = int(ports(svc)[i].get("nodePort"));
        if node_port == 0 && !allocate_missing {
            continue;
        }
        match by_port.get(&port).copied() {
            None => {
                let requested = ports(svc)
                    .iter()
                    .find(|p| int(p.get("port")) == port && int(p.get("nodePort")) != 0)
                    .map(|p| int(p.get("nodePort")));
                let np = match requested {
                    Some(np) => {
                        allocate_port(state, txn, np).map_err(|e| node_port_error(i, np, e))?;
                        np
                    }
                    None => allocate_next_port(state, txn)?,
                };
                set_node_port(svc, i, np);
                by_port.insert(port, np);
            }
            Some(shared) if node_port == 0 => set_node_port(svc, i, shared),
            Some(shared) if node_port != shared => {
                allocate_port(state, txn, node_port)
                    .map_err(|e| node_port_error(i, node_port, e))?;
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// `allocHealthCheckNodePort`.
fn alloc_health_check_node_port(
    state: &mut State,
    txn: &mut Txn,
    svc: &mut Value,
) -> Result<(), Failure> {
    let requested = int(spec(svc).and_then(|s| s.get("healthCheckNodePort")));
    if requested != 0 {
        allocate_port(state, txn, requested).map_err(|e| {
            Failure::Internal(format!(
                "failed to allocate requested HealthCheck NodePort {requested}: {e}"
            ))
        })?;
    } else {
        let port = state.ports.allocate_next().map_err(|e| {
            Failure::Internal(format!("failed to allocate a HealthCheck NodePort 0: {e}"))
        })?;
        txn.allocated.push(Item::Port(port));
        set(svc, "healthCheckNodePort", json!(port));
    }
    Ok(())
}

/// `allocateCreate`: everything a new service needs.
pub fn allocate_create(state: &mut State, txn: &mut Txn, svc: &mut Value) -> Result<(), Failure> {
    init_ip_family_fields(svc, None)?;
    alloc_cluster_ips(state, txn, svc)?;
    if needs_node_port(svc) {
        init_node_ports(state, txn, svc)?;
    }
    if needs_health_check(svc) {
        alloc_health_check_node_port(state, txn, svc)?;
    }
    Ok(())
}

/// `allocateUpdate`: what a type or port change allocates, and what it frees on success.
pub fn allocate_update(
    state: &mut State,
    txn: &mut Txn,
    new: &mut Value,
    old: &Value,
) -> Result<(), Failure> {
    init_ip_family_fields(new, Some(old))?;
    // updateClusterIPs, single-stack: ExternalName to a type with a cluster IP allocates, the
    // reverse frees.
    if !needs_cluster_ip(old) && needs_cluster_ip(new) {
        alloc_cluster_ips(state, txn, new)?;
    } else if needs_cluster_ip(old) && !needs_cluster_ip(new) {
        txn.release_on_commit
            .extend(cluster_ips(old).into_iter().map(Item::Ip));
    }
    // txnUpdateNodePorts
    if needs_node_port(old) && matches!(service_type(new), "ClusterIP" | "ExternalName") {
        txn.release_on_commit
            .extend(node_ports(old).into_iter().map(Item::Port));
    }
    if needs_node_port(new) {
        update_node_ports(state, txn, new, old)?;
    }
    // updateHealthCheckNodePort
    match (needs_health_check(old), needs_health_check(new)) {
        (false, true) => alloc_health_check_node_port(state, txn, new)?,
        (true, false) => {
            let hc = int(spec(old).and_then(|s| s.get("healthCheckNodePort")));
            if hc > 0 {
                txn.release_on_commit.push(Item::Port(hc));
            }
        }
        _ => {}
    }
    Ok(())
}

/// `updateNodePorts`.
fn update_node_ports(
    state: &mut State,
    txn: &mut Txn,
    new: &mut Value,
    old: &Value,
) -> Result<(), Failure> {
    let old_ports = node_ports(old);
    let allocate_missing = should_allocate_node_ports(new);
    let mut reserved: Vec<i64> = Vec::new();
    let mut seen: Vec<(String, i64)> = Vec::new();
    for i in 0..ports(new).len() {
        let p = &ports(new)[i];
        let protocol = p
            .get("protocol")
            .and_then(Value::as_str)
            .unwrap_or("TCP")
            .to_string();
        let mut node_port = int(p.get("nodePort"));
        if node_port == 0 && !allocate_missing {
            continue;
        }
        if node_port != 0 {
            if !old_ports.contains(&node_port) && !reserved.contains(&node_port) {
                allocate_port(state, txn, node_port)
                    .map_err(|e| node_port_error(i, node_port, e))?;
                reserved.push(node_port);
            }
        } else {
            node_port = allocate_next_port(state, txn)?;
            set_node_port(new, i, node_port);
        }
        if seen.contains(&(protocol.clone(), node_port)) {
            return Err(Failure::Internal(format!(
                "duplicate nodePort: {{{protocol} {node_port}}}"
            )));
        }
        seen.push((protocol, node_port));
    }
    let new_ports = node_ports(new);
    txn.release_on_commit.extend(
        old_ports
            .into_iter()
            .filter(|p| !new_ports.contains(p))
            .map(Item::Port),
    );
    Ok(())
}

/// Everything `svc` holds (`releaseAllocatedResources`).
pub fn held(svc: &Value) -> Vec<Item> {
    let mut items: Vec<Item> = cluster_ips(svc).into_iter().map(Item::Ip).collect();
    items.extend(node_ports(svc).into_iter().map(Item::Port));
    items.extend(health_check_node_port(svc).map(Item::Port));
    items
}
