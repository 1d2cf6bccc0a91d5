//! The APIServices served by another server, as the proxy and discovery read them
//! (`proxyHandlingInfo`): one table, replaced whole by the availability controller after each
//! pass, read without decoding anything on the request path.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::RwLock;
use serde_json::Value;

use rkcm_server::webhook::{dial, ServiceRef};

use super::available;

/// One APIService with a `spec.service`.
#[derive(Debug)]
pub struct Remote {
    /// `metadata.name` (`<version>.<group>`).
    pub name: String,
    /// `spec.group`.
    pub group: String,
    /// `spec.version`.
    pub version: String,
    /// `spec.groupPriorityMinimum`.
    pub group_priority: i64,
    /// `spec.versionPriority`.
    pub version_priority: i64,
    /// `spec.service`, port defaulted to 443.
    pub service: ServiceRef,
    /// Whether the `Available` condition is `True`; requests get 503 otherwise.
    pub available: bool,
    /// TLS for proxied requests: `spec.caBundle` as roots, or no verification with
    /// `spec.insecureSkipTLSVerify`; the error is answered with 500 (`transportBuildingError`).
    pub tls: Result<Arc<rustls::ClientConfig>, String>,
    /// The `APIResourceList` the service served at `/apis/<group>/<version>` in the last pass,
    /// for aggregated discovery.
    pub resources: Option<Value>,
}

impl Remote {
    /// The remote APIService `obj` is, with `resources` from its service; `None` for a local
    /// one (no `spec.service`).
    pub fn from_apiservice(obj: &Value, resources: Option<Value>) -> Option<Self> {
        let service = service_ref(obj)?;
        let str_at = |p: &str| obj.pointer(p).and_then(Value::as_str).unwrap_or_default();
        let int_at = |p: &str| obj.pointer(p).and_then(Value::as_i64).unwrap_or_default();
        let ca_bundle = {
            use base64::Engine as _;
            base64::engine::general_purpose::STANDARD
                .decode(str_at("/spec/caBundle"))
                .unwrap_or_default()
        };
        let insecure = obj
            .pointer("/spec/insecureSkipTLSVerify")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        Some(Self {
            name: str_at("/metadata/name").to_string(),
            group: str_at("/spec/group").to_string(),
            version: str_at("/spec/version").to_string(),
            group_priority: int_at("/spec/groupPriorityMinimum"),
            version_priority: int_at("/spec/versionPriority"),
            service,
            available: available::is_available(obj),
            tls: dial::tls_config(&ca_bundle, insecure),
            resources,
        })
    }
}

/// `spec.service` of an APIService, port 443 when unset; `None` for a local APIService.
pub fn service_ref(obj: &Value) -> Option<ServiceRef> {
    let s = obj.pointer("/spec/service").filter(|s| s.is_object())?;
    let str_of = |key: &str| {
        s.get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    Some(ServiceRef {
        namespace: str_of("namespace"),
        name: str_of("name"),
        path: String::new(),
        port: s
            .get("port")
            .and_then(Value::as_u64)
            .and_then(|p| u16::try_from(p).ok())
            .unwrap_or(443),
    })
}

/// Remote APIServices by group, then version.
type Table = HashMap<String, HashMap<String, Arc<Remote>>>;

/// The remote APIServices of the server. Shared by the request handlers (readers) and the
/// availability controller (the only writer, which replaces the table whole); the lock is
/// held only to clone or swap an `Arc`.
#[derive(Debug, Default)]
pub struct Aggregator {
    table: RwLock<Arc<Table>>,
}

impl Aggregator {
    /// An empty table: every group-version is served locally.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// The remote APIService of `group`/`version`, if there is one.
    pub fn remote(&self, group: &str, version: &str) -> Option<Arc<Remote>> {
        self.table.read().get(group)?.get(version).cloned()
    }

    /// Whether some remote APIService serves a version of `group`.
    pub fn serves_group(&self, group: &str) -> bool {
        self.table.read().contains_key(group)
    }

    /// Every remote APIService, in kube's discovery order (`SortedByGroupAndVersion`): groups
    /// by `groupPriorityMinimum`, highest first, then by name; within a group, versions by
    /// `versionPriority`, highest first, then by name.
    pub fn all(&self) -> Vec<Arc<Remote>> {
        let table = Arc::clone(&self.table.read());
        let mut all: Vec<Arc<Remote>> = table.values().flat_map(|v| v.values().cloned()).collect();
        sort(&mut all);
        all
    }

    /// Replaces the table with `remotes`.
    pub fn set(&self, remotes: Vec<Remote>) {
        let mut table = Table::new();
        for r in remotes {
            table
                .entry(r.group.clone())
                .or_default()
                .insert(r.version.clone(), Arc::new(r));
        }
        *self.table.write() = Arc::new(table);
    }
}

/// kube's discovery order; the group's priority is the highest of its versions'.
fn sort(all: &mut [Arc<Remote>]) {
    let mut group_priority: HashMap<String, i64> = HashMap::new();
    for r in all.iter() {
        let p = group_priority
            .entry(r.group.clone())
            .or_insert(r.group_priority);
        *p = (*p).max(r.group_priority);
    }
    all.sort_by(|a, b| {
        let pa = group_priority.get(&a.group).copied().unwrap_or_default();
        let pb = group_priority.get(&b.group).copied().unwrap_or_default();
        pb.cmp(&pa)
            .then_with(|| a.group.cmp(&b.group))
            .then_with(|| b.version_priority.cmp(&a.version_priority))
            .then_with(|| a.version.cmp(&b.version))
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn apiservice(group: &str, version: &str, gp: i64, vp: i64) -> Value {
        json!({
            "metadata": {"name": format!("{version}.{group}")},
            "spec": {"group": group, "version": version, "groupPriorityMinimum": gp,
                     "versionPriority": vp, "insecureSkipTLSVerify": true,
                     "service": {"namespace": "ns", "name": "api"}},
        })
    }

    #[test]
    fn local_apiservices_are_not_remote() {
        let mut local = apiservice("apps", "v1", 1, 1);
        local["spec"]["service"] = Value::Null;
        assert!(Remote::from_apiservice(&local, None).is_none());
        let remote =
            Remote::from_apiservice(&apiservice("a.io", "v1", 1, 1), None).expect("remote");
        assert_eq!(remote.service.port, 443);
        assert_eq!(remote.service.host(), "api.ns.svc");
        assert!(!remote.available);
    }

    #[test]
    fn remotes_are_listed_by_priority_then_name() {
        let agg = Aggregator::default();
        let remotes = [
            apiservice("b.io", "v1", 100, 10),
            apiservice("b.io", "v2", 100, 20),
            apiservice("a.io", "v1", 100, 10),
            apiservice("z.io", "v1", 2000, 10),
        ];
        agg.set(
            remotes
                .iter()
                .filter_map(|r| Remote::from_apiservice(r, None))
                .collect(),
        );
        let order: Vec<String> = agg.all().iter().map(|r| r.name.clone()).collect();
        assert_eq!(order, ["v1.z.io", "v1.a.io", "v2.b.io", "v1.b.io"]);
        assert!(agg.remote("b.io", "v2").is_some());
        assert!(agg.remote("b.io", "v3").is_none());
        assert!(agg.serves_group("a.io"));
    }
}
