//! `clientConfig.service`: the Service's ready endpoint, as kube-apiserver routes with
//! `--enable-aggregator-routing` (`ResolveEndpoint` over EndpointSlices): the service port is
//! the one numbered `port`; the slices labelled `kubernetes.io/service-name` give an address
//! whose endpoint is not unready, on the slice port named as the service port.

use std::net::{IpAddr, SocketAddr};

use serde_json::Value;

use rkcm_apimachinery::catalog;
use rkcm_storage::store::Store;

use super::ServiceRef;

fn info(api_version: &str, kind: &str) -> Result<&'static catalog::ResourceInfo, String> {
    catalog::by_kind(api_version, kind).ok_or_else(|| format!("{kind} is not served"))
}

/// The address to dial for `svc`.
pub fn resolve(store: &Store, svc: &ServiceRef) -> Result<SocketAddr, String> {
    let services = info("v1", "Service")?;
    let key = crate::rest::key(services, Some(&svc.namespace), &svc.name);
    let Some(service) = store.get(&key) else {
        return Err(format!("service {:?} not found", svc.name));
    };
    let service = service.value();
    if service.pointer("/spec/type").and_then(Value::as_str) == Some("ExternalName") {
        return Err(format!(
            "service {}/{} is of type ExternalName",
            svc.namespace, svc.name
        ));
    }
    let port = service
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .and_then(|ports| {
            ports
                .iter()
                .find(|p| p.get("port").and_then(Value::as_u64) == Some(u64::from(svc.port)))
        })
        .ok_or_else(|| {
            format!(
                "no service port {} found for service {:?}",
                svc.port, svc.name
            )
        })?;
    let port_name = port.get("name").and_then(Value::as_str).unwrap_or_default();

    let slices = info("discovery.k8s.io/v1", "EndpointSlice")?;
    let prefix = crate::rest::prefix(slices, Some(&svc.namespace));
    let keep = |o: &rkcm_storage::watch_cache::CachedObject| {
        serde_json::from_slice::<Value>(o.json())
            .ok()
            .and_then(|v| {
                v.pointer("/metadata/labels/kubernetes.io~1service-name")
                    .and_then(Value::as_str)
                    .map(|n| n == svc.name)
            })
            .unwrap_or(false)
    };
    let (items, _, _) = store.cache().list(&prefix, None, 0, &keep);
    for slice in items {
        let slice = slice.value();
        let Some(target_port) = slice
            .get("ports")
            .and_then(Value::as_array)
            .and_then(|ports| {
                ports.iter().find(|p| {
                    p.get("name").and_then(Value::as_str).unwrap_or_default() == port_name
                })
            })
            .and_then(|p| p.get("port").and_then(Value::as_u64))
            .and_then(|p| u16::try_from(p).ok())
        else {
            continue;
        };
        let endpoints = slice.get("endpoints").and_then(Value::as_array);
        for endpoint in endpoints.into_iter().flatten() {
            if endpoint
                .pointer("/conditions/ready")
                .and_then(Value::as_bool)
                == Some(false)
            {
                continue;
            }
            let address = endpoint
                .get("addresses")
                .and_then(Value::as_array)
                .and_then(|a| a.first())
                .and_then(Value::as_str)
                .and_then(|a| a.parse::<IpAddr>().ok());
            if let Some(ip) = address {
                return Ok(SocketAddr::new(ip, target_port));
            }
        }
    }
    Err(format!("no endpoints available for service {:?}", svc.name))
}
