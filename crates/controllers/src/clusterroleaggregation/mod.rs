//! The cluster-role aggregation controller: a ClusterRole with an `aggregationRule` holds the
//! rules of every ClusterRole its selectors pick.
//!
//! Mirrors `pkg/controller/clusterroleaggregation/clusterroleaggregation_controller.go`: any
//! change to any ClusterRole queues every ClusterRole that aggregates; a sync gathers the rules of
//! the roles each selector matches (sorted by name, the role itself left out, a rule already
//! gathered not repeated) and writes them when they differ. kube applies them with server-side
//! apply (forced, as `clusterrole-aggregation-controller`) and falls back to an update when the
//! server answers 415; against a server without apply the rules are written here with a merge
//! patch, which like the forced apply has no resourceVersion precondition.

use std::sync::Arc;

use k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule};
use kube::api::{Api, Patch, PatchParams};
use rkcm_labels::Selector;
use rkcm_runtime::informer::{wait_for_cache_sync, InformerFactory, Notification, SharedInformer};
use rkcm_runtime::workqueue::RateLimitingQueue;
use rkcm_runtime::{api_error, worker, ObjectKey, Shutdown};

/// Name of the controller (`--controllers`).
pub const CONTROLLER_NAME: &str = "clusterrole-aggregation-controller";
/// Workers kube starts (`startClusterRoleAggregationController`: `Run(ctx, 5)`).
pub const WORKERS: usize = 5;
/// Field manager of the apply (`clusterrole-aggregation-controller`).
const FIELD_MANAGER: &str = "clusterrole-aggregation-controller";

/// Why a ClusterRole could not be aggregated; it is retried with backoff.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A selector of the aggregation rule is not a valid label selector.
    #[error("invalid clusterRoleSelector of ClusterRole {role}")]
    Selector {
        /// The aggregating role.
        role: String,
        /// Why.
        #[source]
        source: rkcm_labels::Error,
    },
    /// Writing the rules failed.
    #[error("failed to update the rules of ClusterRole {role}")]
    Write {
        /// The aggregating role.
        role: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
}

/// Whether two rules are the same as Go's `equality.Semantic.DeepEqual` sees them: an absent list
/// equals an empty one.
fn same_rule(a: &PolicyRule, b: &PolicyRule) -> bool {
    fn list(v: &Option<Vec<String>>) -> &[String] {
        v.as_deref().unwrap_or_default()
    }
    a.verbs == b.verbs
        && list(&a.api_groups) == list(&b.api_groups)
        && list(&a.resources) == list(&b.resources)
        && list(&a.resource_names) == list(&b.resource_names)
        && list(&a.non_resource_urls) == list(&b.non_resource_urls)
}

fn same_rules(a: &[PolicyRule], b: &[PolicyRule]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same_rule(x, y))
}

/// The rules `role` aggregates from `roles` (`syncClusterRole`): for each selector in order, the
/// matching roles sorted by name, without `role` itself, each rule once. `None` when `role` does
/// not aggregate.
pub fn aggregated_rules(
    role: &ClusterRole,
    roles: &[Arc<ClusterRole>],
) -> Result<Option<Vec<PolicyRule>>, Error> {
    let Some(rule) = &role.aggregation_rule else {
        return Ok(None);
    };
    let name = role.metadata.name.as_deref().unwrap_or_default();
    let mut gathered: Vec<PolicyRule> = Vec::new();
    for selector in rule.cluster_role_selectors.as_deref().unwrap_or_default() {
        let selector =
            Selector::from_label_selector(selector).map_err(|source| Error::Selector {
                role: name.to_string(),
                source,
            })?;
        let mut matching: Vec<&ClusterRole> = roles
            .iter()
            .map(|r| &**r)
            .filter(|r| selector.matches_opt(r.metadata.labels.as_ref()))
            .collect();
        matching.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        for other in matching {
            if other.metadata.name.as_deref() == Some(name) {
                continue;
            }
            for r in other.rules.as_deref().unwrap_or_default() {
                if !gathered.iter().any(|g| same_rule(g, r)) {
                    gathered.push(r.clone());
                }
            }
        }
    }
    Ok(Some(gathered))
}

/// Keeps aggregated ClusterRoles' rules.
pub struct ClusterRoleAggregationController {
    client: kube::Client,
    queue: RateLimitingQueue<String>,
    roles: SharedInformer<ClusterRole>,
}

impl ClusterRoleAggregationController {
    /// Registers the controller's handler on the factory's ClusterRole informer.
    pub fn new(factory: &InformerFactory, client: kube::Client) -> Arc<Self> {
        let queue = RateLimitingQueue::new("ClusterRoleAggregator");
        let roles = factory.informer::<ClusterRole>();
        let (q, store) = (queue.clone(), roles.store());
        // Any change may change what any aggregating role selects: queue them all (`enqueue`).
        roles.add_event_handler(move |_note: Notification<ClusterRole>| {
            for role in store.list() {
                if role.aggregation_rule.is_some() {
                    if let Some(name) = &role.metadata.name {
                        q.add(name.clone());
                    }
                }
            }
        });
        Arc::new(Self {
            client,
            queue,
            roles,
        })
    }

    /// Runs `workers` sync loops until `shutdown`.
    pub async fn run(self: Arc<Self>, workers: usize, shutdown: Shutdown) {
        tracing::info!(controller = CONTROLLER_NAME, "starting controller");
        if wait_for_cache_sync("ClusterRoleAggregator", &[&self.roles], &shutdown).await {
            let this = Arc::clone(&self);
            worker::run(
                self.queue.clone(),
                workers.max(1),
                shutdown,
                worker::ErrorPolicy::handle_error(),
                move |name| {
                    let this = Arc::clone(&this);
                    async move { this.sync(&name).await }
                },
            )
            .await;
        }
        self.queue.shutdown();
        tracing::info!(controller = CONTROLLER_NAME, "shutting down controller");
    }

    /// Writes the aggregated rules of ClusterRole `name` if they changed.
    pub async fn sync(&self, name: &str) -> Result<(), Error> {
        let store = self.roles.store();
        let Some(role) = store.get(&ObjectKey::cluster(name)) else {
            return Ok(());
        };
        let Some(rules) = aggregated_rules(&role, &store.list())? else {
            return Ok(());
        };
        if same_rules(&rules, role.rules.as_deref().unwrap_or_default()) {
            return Ok(());
        }
        let api: Api<ClusterRole> = Api::all(self.client.clone());
        let write = |source| Error::Write {
            role: name.to_string(),
            source,
        };
        let apply = serde_json::json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": name},
            "rules": rules,
        });
        let params = PatchParams::apply(FIELD_MANAGER).force();
        match api.patch(name, &params, &Patch::Apply(&apply)).await {
            Ok(_) => Ok(()),
            // No server-side apply: write the rules alone, as the forced apply would. kube falls
            // back to an update of the cached role (`updateRules`), which conflicts whenever the
            // cache lags a write of the same sync burst (admin, edit and view aggregate each
            // other); a merge patch of `rules` replaces the list without that precondition.
            Err(e) if api_error::has_code(&e, 415) => api
                .patch(
                    name,
                    &PatchParams::default(),
                    &Patch::Merge(serde_json::json!({ "rules": rules })),
                )
                .await
                .map(|_| ())
                .map_err(write),
            Err(e) => Err(write(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::rbac::v1::AggregationRule;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
    use std::collections::BTreeMap;

    fn rule(verb: &str, resource: &str) -> PolicyRule {
        PolicyRule {
            verbs: vec![verb.to_string()],
            api_groups: Some(vec![String::new()]),
            resources: Some(vec![resource.to_string()]),
            ..Default::default()
        }
    }

    fn role(name: &str, labels: &[(&str, &str)], rules: Vec<PolicyRule>) -> Arc<ClusterRole> {
        Arc::new(ClusterRole {
            metadata: ObjectMeta {
                name: Some(name.into()),
                labels: Some(
                    labels
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect::<BTreeMap<_, _>>(),
                ),
                ..Default::default()
            },
            rules: Some(rules),
            aggregation_rule: None,
        })
    }

    fn aggregating(name: &str, selectors: &[(&str, &str)], rules: Vec<PolicyRule>) -> ClusterRole {
        let mut r = (*role(name, &[], rules)).clone();
        r.aggregation_rule = Some(AggregationRule {
            cluster_role_selectors: Some(
                selectors
                    .iter()
                    .map(|(k, v)| LabelSelector {
                        match_labels: Some([(k.to_string(), v.to_string())].into()),
                        ..Default::default()
                    })
                    .collect(),
            ),
        });
        r
    }

    #[test]
    fn a_role_without_aggregation_rule_is_left_alone() {
        let plain = role("plain", &[], vec![rule("get", "pods")]);
        assert!(aggregated_rules(&plain, &[Arc::clone(&plain)])
            .expect("valid")
            .is_none());
    }

    #[test]
    fn rules_are_gathered_per_selector_by_role_name_each_once() {
        // TestSyncClusterRole: "update" and "no change" cases.
        let hammer = role("hammer", &[("foo", "bar")], vec![rule("hammer", "nails")]);
        let chisel = role("chisel", &[("foo", "bar")], vec![rule("chisel", "marble")]);
        let dup = role("dup", &[("foo", "bar")], vec![rule("hammer", "nails")]);
        let other = role("other", &[("other", "x")], vec![rule("saw", "wood")]);
        let agg = aggregating("aggregate", &[("foo", "bar"), ("other", "x")], Vec::new());
        let all = vec![hammer, chisel, dup, other, Arc::new(agg.clone())];
        let rules = aggregated_rules(&agg, &all)
            .expect("valid")
            .expect("aggregates");
        assert_eq!(
            rules,
            [
                rule("chisel", "marble"),
                rule("hammer", "nails"),
                rule("saw", "wood")
            ]
        );
    }

    #[test]
    fn the_aggregating_role_does_not_gather_its_own_rules() {
        let mut agg = aggregating("aggregate", &[("foo", "bar")], vec![rule("get", "old")]);
        agg.metadata.labels = Some([("foo".to_string(), "bar".to_string())].into());
        let all = vec![Arc::new(agg.clone())];
        let rules = aggregated_rules(&agg, &all)
            .expect("valid")
            .expect("aggregates");
        assert!(rules.is_empty(), "{rules:?}");
    }

    #[test]
    fn absent_and_empty_lists_are_the_same_rule() {
        let mut a = rule("get", "pods");
        a.resource_names = None;
        let mut b = rule("get", "pods");
        b.resource_names = Some(Vec::new());
        assert!(same_rule(&a, &b));
        assert!(!same_rule(&a, &rule("list", "pods")));
        assert!(same_rules(&[a.clone()], &[b]));
        assert!(!same_rules(&[a.clone()], &[a.clone(), a]));
    }
}
