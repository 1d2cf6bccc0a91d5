//! The FlowSchemas and PriorityLevelConfigurations the API Priority and Fairness filter
//! enforces, decoded from the store and kept current from its watch cache: a request that finds
//! nothing new pays one atomic load and a clone of an `Arc`; each object is decoded once per
//! change, and the configuration is rebuilt only when one changed.
//!
//! As kube's config controller, the mandatory `exempt` and `catch-all` objects are used from
//! their built-in definitions while the store holds none of that name
//! (`apf_controller.go`: `digestConfigObjects`).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::Value;

use rkcm_apimachinery::catalog;
use rkcm_server::flowcontrol::{
    Config, ConfigSource, Distinguisher, Level, LevelKind, NonResourceRule, PolicyRules, Queuing,
    ResourceRule, Schema, Subject,
};
use rkcm_storage::watch_cache::{CachedObject, Feed, FeedChange};

use crate::store::Store;

const GROUP_VERSION: &str = "flowcontrol.apiserver.k8s.io/v1";

/// One kind's stored objects, by name.
struct Kind {
    feed: Feed,
    objects: BTreeMap<String, Value>,
}

impl Kind {
    fn new(kind: &str) -> Self {
        let prefix = catalog::by_kind(GROUP_VERSION, kind)
            .map(|info| rkcm_server::rest::prefix(info, None))
            .unwrap_or_default();
        Self {
            feed: Feed::new(prefix),
            objects: BTreeMap::new(),
        }
    }

    /// Applies what the watch cache has; whether anything changed.
    fn drain(&mut self, store: &Store) -> bool {
        let objects = &mut self.objects;
        self.feed.drain(store.cache(), |change| match change {
            FeedChange::Reset(current) => {
                *objects = current
                    .iter()
                    .filter_map(|o| Some((o.name().to_string(), decode(o)?)))
                    .collect();
            }
            FeedChange::Upsert(o) => {
                if let Some(v) = decode(o) {
                    objects.insert(o.name().to_string(), v);
                }
            }
            FeedChange::Delete(o) => {
                objects.remove(o.name());
            }
        })
    }
}

fn decode(obj: &CachedObject) -> Option<Value> {
    match serde_json::from_slice::<Value>(obj.json()) {
        Ok(v) => Some(v),
        Err(e) => {
            tracing::warn!(name = obj.name(), error = %e, "stored flowcontrol object does not decode");
            None
        }
    }
}

struct Feeds {
    schemas: Kind,
    levels: Kind,
}

/// The stored configuration, followed (a [`ConfigSource`]).
pub struct StoredConfig {
    store: Store,
    applied: AtomicI64,
    feeds: Mutex<Feeds>,
    config: Mutex<Arc<Config>>,
}

impl StoredConfig {
    /// The configuration stored in `store`, kept current.
    pub fn new(store: Store) -> Self {
        let source = Self {
            store,
            applied: AtomicI64::new(i64::MIN),
            feeds: Mutex::new(Feeds {
                schemas: Kind::new("FlowSchema"),
                levels: Kind::new("PriorityLevelConfiguration"),
            }),
            config: Mutex::new(Arc::new(Config::default())),
        };
        source.refresh();
        source
    }

    fn refresh(&self) {
        let target = self.store.cache().revision();
        if self.applied.load(Ordering::Acquire) >= target {
            return;
        }
        let mut feeds = self.feeds.lock();
        if self.applied.load(Ordering::Acquire) >= target {
            return;
        }
        let Feeds { schemas, levels } = &mut *feeds;
        let changed = schemas.drain(&self.store) | levels.drain(&self.store);
        if changed {
            *self.config.lock() = Arc::new(build(&schemas.objects, &levels.objects));
        }
        self.applied.fetch_max(target, Ordering::AcqRel);
    }
}

impl ConfigSource for StoredConfig {
    fn config(&self) -> Arc<Config> {
        self.refresh();
        Arc::clone(&self.config.lock())
    }
}

/// The configuration of the stored objects, with the mandatory ones the store lacks.
pub fn build(schemas: &BTreeMap<String, Value>, levels: &BTreeMap<String, Value>) -> Config {
    let boot = crate::flowcontrol_bootstrap::bootstrap();
    let mut schemas: Vec<&Value> = schemas.values().collect();
    let mut levels: Vec<&Value> = levels.values().collect();
    for m in &boot.mandatory_schemas {
        if !schemas.iter().any(|s| name(s) == name(m)) {
            schemas.push(m);
        }
    }
    for m in &boot.mandatory_levels {
        if !levels.iter().any(|l| name(l) == name(m)) {
            levels.push(m);
        }
    }
    Config {
        schemas: schemas.into_iter().map(|s| Arc::new(schema(s))).collect(),
        levels: levels.into_iter().map(level).collect(),
    }
}

fn name(v: &Value) -> &str {
    v.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn string(v: &Value, pointer: &str) -> String {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

fn strings(v: &Value, key: &str) -> Vec<String> {
    v.get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

fn array<'a>(v: &'a Value, key: &str) -> impl Iterator<Item = &'a Value> {
    v.get(key).and_then(Value::as_array).into_iter().flatten()
}

/// A stored FlowSchema's spec; defaults as `SetDefaults_FlowSchemaSpec` (precedence 1000).
fn schema(v: &Value) -> Schema {
    let spec = v.get("spec").unwrap_or(&Value::Null);
    Schema {
        name: name(v).to_string(),
        uid: string(v, "/metadata/uid"),
        matching_precedence: spec
            .get("matchingPrecedence")
            .and_then(Value::as_i64)
            .map_or(1000, |p| p as i32),
        priority_level: string(spec, "/priorityLevelConfiguration/name"),
        distinguisher: match spec
            .pointer("/distinguisherMethod/type")
            .and_then(Value::as_str)
        {
            Some("ByUser") => Some(Distinguisher::ByUser),
            Some("ByNamespace") => Some(Distinguisher::ByNamespace),
            _ => None,
        },
        rules: array(spec, "rules")
            .map(|r| PolicyRules {
                subjects: array(r, "subjects").filter_map(subject).collect(),
                resource_rules: array(r, "resourceRules")
                    .map(|rr| ResourceRule {
                        verbs: strings(rr, "verbs"),
                        api_groups: strings(rr, "apiGroups"),
                        resources: strings(rr, "resources"),
                        cluster_scope: rr
                            .get("clusterScope")
                            .and_then(Value::as_bool)
                            .unwrap_or(false),
                        namespaces: strings(rr, "namespaces"),
                    })
                    .collect(),
                non_resource_rules: array(r, "nonResourceRules")
                    .map(|nr| NonResourceRule {
                        verbs: strings(nr, "verbs"),
                        non_resource_urls: strings(nr, "nonResourceURLs"),
                    })
                    .collect(),
            })
            .collect(),
    }
}

fn subject(v: &Value) -> Option<Subject> {
    match v.get("kind").and_then(Value::as_str)? {
        "User" => Some(Subject::User(string(v, "/user/name"))),
        "Group" => Some(Subject::Group(string(v, "/group/name"))),
        "ServiceAccount" => Some(Subject::ServiceAccount {
            namespace: string(v, "/serviceAccount/namespace"),
            name: string(v, "/serviceAccount/name"),
        }),
        _ => None,
    }
}

/// A stored PriorityLevelConfiguration's spec; defaults as `SetDefaults_*` of v1 (30 shares for
/// a limited level, 0 for an exempt one; 64 queues, hand size 8, 50 requests a queue).
fn level(v: &Value) -> Level {
    let spec = v.get("spec").unwrap_or(&Value::Null);
    let shares = |p: &str, default: u32| {
        spec.pointer(p)
            .and_then(Value::as_u64)
            .map_or(default, |n| n.min(u64::from(u32::MAX)) as u32)
    };
    let count = |q: &Value, key: &str, default: usize| {
        q.get(key)
            .and_then(Value::as_u64)
            .map_or(default, |n| n as usize)
    };
    let (kind, nominal_concurrency_shares) = match spec.get("type").and_then(Value::as_str) {
        Some("Exempt") => (
            LevelKind::Exempt,
            shares("/exempt/nominalConcurrencyShares", 0),
        ),
        _ => {
            let response = spec
                .pointer("/limited/limitResponse")
                .unwrap_or(&Value::Null);
            let queuing = match response.get("type").and_then(Value::as_str) {
                Some("Reject") => None,
                _ => {
                    let q = response.get("queuing").unwrap_or(&Value::Null);
                    Some(Queuing {
                        queues: count(q, "queues", 64),
                        hand_size: count(q, "handSize", 8),
                        queue_length_limit: count(q, "queueLengthLimit", 50),
                    })
                }
            };
            (
                LevelKind::Limited { queuing },
                shares("/limited/nominalConcurrencyShares", 30),
            )
        }
    };
    Level {
        name: name(v).to_string(),
        uid: string(v, "/metadata/uid"),
        nominal_concurrency_shares,
        kind,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rkcm_server::auth::authorization::Attributes;
    use rkcm_server::auth::UserInfo;
    use rkcm_server::flowcontrol::FlowControl;

    fn bootstrap_config() -> Config {
        let boot = crate::flowcontrol_bootstrap::bootstrap();
        let by_name = |objs: Vec<Value>| -> BTreeMap<String, Value> {
            objs.into_iter()
                .map(|o| (name(&o).to_string(), o))
                .collect()
        };
        build(
            &by_name([boot.mandatory_schemas, boot.suggested_schemas].concat()),
            &by_name([boot.mandatory_levels, boot.suggested_levels].concat()),
        )
    }

    fn classify(
        fc: &FlowControl,
        user: UserInfo,
        method: http::Method,
        path: &str,
    ) -> (String, String) {
        let attrs = Attributes::from_request(user, &method, path, None);
        let (fs, pl) = fc.classify(&attrs).expect("catch-all matches everything");
        (fs.to_string(), pl.to_string())
    }

    #[test]
    fn system_components_classify_as_on_kube() {
        let fc = FlowControl::new(600, Box::new(Arc::new(bootstrap_config())));
        let get = http::Method::GET;
        let cases = [
            (
                UserInfo::new("admin", &["system:masters", "system:authenticated"]),
                "/api/v1/pods",
                "exempt",
                "exempt",
            ),
            (
                UserInfo::new("system:kube-controller-manager", &["system:authenticated"]),
                "/apis/apps/v1/deployments",
                "kube-controller-manager",
                "workload-high",
            ),
            (
                UserInfo::new("system:kube-scheduler", &["system:authenticated"]),
                "/api/v1/pods",
                "kube-scheduler",
                "workload-high",
            ),
            (
                UserInfo::new("system:node:n1", &["system:nodes", "system:authenticated"]),
                "/api/v1/pods",
                "system-nodes",
                "system",
            ),
            (
                UserInfo::new(
                    "system:serviceaccount:kube-system:deployment-controller",
                    &[
                        "system:serviceaccounts",
                        "system:serviceaccounts:kube-system",
                        "system:authenticated",
                    ],
                ),
                "/apis/apps/v1/deployments",
                "kube-system-service-accounts",
                "workload-high",
            ),
            (
                UserInfo::new(
                    "system:serviceaccount:web:app",
                    &[
                        "system:serviceaccounts",
                        "system:serviceaccounts:web",
                        "system:authenticated",
                    ],
                ),
                "/api/v1/namespaces/web/pods",
                "service-accounts",
                "workload-low",
            ),
            (
                UserInfo::new("jane", &["system:authenticated"]),
                "/api/v1/namespaces/web/pods",
                "global-default",
                "global-default",
            ),
            (
                UserInfo::new("system:anonymous", &["system:unauthenticated"]),
                "/healthz",
                "probes",
                "exempt",
            ),
        ];
        for (user, path, fs, pl) in cases {
            let name = user.name.clone();
            assert_eq!(
                classify(&fc, user, get.clone(), path),
                (fs.to_string(), pl.to_string()),
                "{name} {path}"
            );
        }
    }

    #[test]
    fn the_mandatory_objects_stand_in_for_missing_ones() {
        let config = build(&BTreeMap::new(), &BTreeMap::new());
        let fc = FlowControl::new(600, Box::new(Arc::new(config)));
        let jane = UserInfo::new("jane", &["system:authenticated"]);
        assert_eq!(
            classify(&fc, jane, http::Method::GET, "/api/v1/pods"),
            ("catch-all".to_string(), "catch-all".to_string())
        );
    }
}
