//! kube-apiserver 1.33's mandatory and suggested API Priority and Fairness objects
//! (`staging/src/k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap/default.go`), written with
//! every field v1's defaulting would set, so that a stored object can be compared with them as
//! they are.

use serde_json::{json, Value};

/// `flowcontrolv1.AutoUpdateAnnotationKey`.
pub const AUTOUPDATE_ANNOTATION: &str = "apf.kubernetes.io/autoupdate-spec";

/// `PriorityLevelConfigurationNameExempt`: the one level whose `exempt` fields operators may
/// tune.
pub const EXEMPT: &str = "exempt";

/// The objects the server keeps, by kind and strategy.
#[derive(Clone, Debug)]
pub struct Bootstrap {
    /// `MandatoryPriorityLevelConfigurations`.
    pub mandatory_levels: Vec<Value>,
    /// `MandatoryFlowSchemas`.
    pub mandatory_schemas: Vec<Value>,
    /// `SuggestedPriorityLevelConfigurations`.
    pub suggested_levels: Vec<Value>,
    /// `SuggestedFlowSchemas`.
    pub suggested_schemas: Vec<Value>,
}

fn metadata(kind: &str, name: &str) -> Value {
    json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name, "annotations": {AUTOUPDATE_ANNOTATION: "true"}},
    })
}

/// `newPriorityLevelConfiguration` of a `Limited` level that queues.
fn queuing_level(
    name: &str,
    shares: i64,
    lendable: i64,
    queues: i64,
    hand_size: i64,
    queue_length_limit: i64,
) -> Value {
    let mut obj = metadata("PriorityLevelConfiguration", name);
    obj["spec"] = json!({
        "type": "Limited",
        "limited": {
            "nominalConcurrencyShares": shares,
            "lendablePercent": lendable,
            "limitResponse": {
                "type": "Queue",
                "queuing": {
                    "queues": queues,
                    "handSize": hand_size,
                    "queueLengthLimit": queue_length_limit,
                },
            },
        },
    });
    obj
}

/// A subject of kind `Group`.
fn group(name: &str) -> Value {
    json!({"kind": "Group", "group": {"name": name}})
}

/// A subject of kind `User`.
fn user(name: &str) -> Value {
    json!({"kind": "User", "user": {"name": name}})
}

/// A service account of `kube-system` (`kubeSystemServiceAccount`).
fn kube_system_service_account(name: &str) -> Value {
    json!({"kind": "ServiceAccount", "serviceAccount": {"name": name, "namespace": "kube-system"}})
}

fn resource_rule(
    verbs: &[&str],
    groups: &[&str],
    resources: &[&str],
    namespaces: &[&str],
    cluster_scope: bool,
) -> Value {
    let mut rule = json!({
        "verbs": verbs,
        "apiGroups": groups,
        "resources": resources,
        "namespaces": namespaces,
    });
    if cluster_scope {
        rule["clusterScope"] = json!(true);
    }
    rule
}

/// Every verb, group and resource in every namespace and at cluster scope, and every
/// non-resource URL (`ruleRscAll`, `ruleNonRscAll`).
fn everything(subjects: Vec<Value>) -> Value {
    json!({
        "subjects": subjects,
        "resourceRules": [resource_rule(&["*"], &["*"], &["*"], &["*"], true)],
        "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
    })
}

/// `newFlowSchema`; an empty `distinguisher` leaves `distinguisherMethod` out.
fn flow_schema(
    name: &str,
    level: &str,
    precedence: i64,
    distinguisher: &str,
    rules: Value,
) -> Value {
    let mut obj = metadata("FlowSchema", name);
    let mut spec = json!({
        "priorityLevelConfiguration": {"name": level},
        "matchingPrecedence": precedence,
        "rules": [rules],
    });
    if !distinguisher.is_empty() {
        spec["distinguisherMethod"] = json!({"type": distinguisher});
    }
    obj["spec"] = spec;
    obj
}

const ALL_UNAUTHENTICATED: &str = "system:unauthenticated";
const ALL_AUTHENTICATED: &str = "system:authenticated";
const KUBE_CONTROLLER_MANAGER: &str = "system:kube-controller-manager";
const KUBE_SCHEDULER: &str = "system:kube-scheduler";
const BY_USER: &str = "ByUser";
const BY_NAMESPACE: &str = "ByNamespace";

/// kube 1.33's bootstrap configuration, in `default.go`'s order.
pub fn bootstrap() -> Bootstrap {
    let mut exempt = metadata("PriorityLevelConfiguration", EXEMPT);
    exempt["spec"] = json!({
        "type": "Exempt",
        "exempt": {"nominalConcurrencyShares": 0, "lendablePercent": 0},
    });
    let mut catch_all = metadata("PriorityLevelConfiguration", "catch-all");
    catch_all["spec"] = json!({
        "type": "Limited",
        "limited": {
            "nominalConcurrencyShares": 5,
            "lendablePercent": 0,
            "limitResponse": {"type": "Reject"},
        },
    });
    let leader_election_rules = |subjects: Vec<Value>, core_namespace: &str| {
        json!({
            "subjects": subjects,
            "resourceRules": [
                resource_rule(&["get", "create", "update"], &[""], &["endpoints", "configmaps"], &[core_namespace], false),
                resource_rule(&["get", "create", "update"], &["coordination.k8s.io"], &["leases"], &["*"], false),
            ],
        })
    };
    Bootstrap {
        mandatory_levels: vec![catch_all, exempt],
        mandatory_schemas: vec![
            flow_schema(
                "exempt",
                EXEMPT,
                1,
                "",
                everything(vec![group("system:masters")]),
            ),
            flow_schema(
                "catch-all",
                "catch-all",
                10000,
                BY_USER,
                everything(vec![group(ALL_UNAUTHENTICATED), group(ALL_AUTHENTICATED)]),
            ),
        ],
        suggested_levels: vec![
            queuing_level("system", 30, 33, 64, 6, 50),
            queuing_level("node-high", 40, 25, 64, 6, 50),
            queuing_level("leader-election", 10, 0, 16, 4, 50),
            queuing_level("workload-high", 40, 50, 128, 6, 50),
            queuing_level("workload-low", 100, 90, 128, 6, 50),
            queuing_level("global-default", 20, 50, 128, 6, 50),
        ],
        suggested_schemas: vec![
            flow_schema(
                "system-nodes",
                "system",
                500,
                BY_USER,
                everything(vec![group("system:nodes")]),
            ),
            flow_schema(
                "system-node-high",
                "node-high",
                400,
                BY_USER,
                json!({
                    "subjects": [group("system:nodes")],
                    "resourceRules": [
                        resource_rule(&["*"], &[""], &["nodes", "nodes/status"], &["*"], true),
                        resource_rule(&["*"], &["coordination.k8s.io"], &["leases"], &["*"], false),
                    ],
                }),
            ),
            flow_schema(
                "probes",
                EXEMPT,
                2,
                "",
                json!({
                    "subjects": [group(ALL_UNAUTHENTICATED), group(ALL_AUTHENTICATED)],
                    "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz", "/readyz", "/livez"]}],
                }),
            ),
            flow_schema(
                "system-leader-election",
                "leader-election",
                100,
                BY_USER,
                leader_election_rules(
                    vec![
                        user(KUBE_CONTROLLER_MANAGER),
                        user(KUBE_SCHEDULER),
                        kube_system_service_account("*"),
                    ],
                    "kube-system",
                ),
            ),
            flow_schema(
                "workload-leader-election",
                "leader-election",
                200,
                BY_USER,
                leader_election_rules(vec![kube_system_service_account("*")], "*"),
            ),
            flow_schema(
                "endpoint-controller",
                "workload-high",
                150,
                BY_USER,
                json!({
                    "subjects": [
                        user(KUBE_CONTROLLER_MANAGER),
                        kube_system_service_account("endpoint-controller"),
                        kube_system_service_account("endpointslicemirroring-controller"),
                    ],
                    "resourceRules": [
                        resource_rule(&["get", "create", "update"], &[""], &["endpoints"], &["*"], false),
                    ],
                }),
            ),
            flow_schema(
                "kube-controller-manager",
                "workload-high",
                800,
                BY_NAMESPACE,
                everything(vec![user(KUBE_CONTROLLER_MANAGER)]),
            ),
            flow_schema(
                "kube-scheduler",
                "workload-high",
                800,
                BY_NAMESPACE,
                everything(vec![user(KUBE_SCHEDULER)]),
            ),
            flow_schema(
                "kube-system-service-accounts",
                "workload-high",
                900,
                BY_NAMESPACE,
                everything(vec![kube_system_service_account("*")]),
            ),
            flow_schema(
                "service-accounts",
                "workload-low",
                9000,
                BY_USER,
                everything(vec![group("system:serviceaccounts")]),
            ),
            flow_schema(
                "global-default",
                "global-default",
                9900,
                BY_USER,
                everything(vec![group(ALL_UNAUTHENTICATED), group(ALL_AUTHENTICATED)]),
            ),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::flowcontrol::v1::{FlowSchema, PriorityLevelConfiguration};

    fn names(objs: &[Value]) -> Vec<&str> {
        objs.iter().map(crate::object::name).collect()
    }

    #[test]
    fn the_bootstrap_objects_are_kubes_and_decode() {
        let b = bootstrap();
        assert_eq!(names(&b.mandatory_levels), ["catch-all", "exempt"]);
        assert_eq!(names(&b.mandatory_schemas), ["exempt", "catch-all"]);
        assert_eq!(
            names(&b.suggested_levels),
            [
                "system",
                "node-high",
                "leader-election",
                "workload-high",
                "workload-low",
                "global-default"
            ]
        );
        assert_eq!(b.suggested_schemas.len(), 11);
        let levels: Vec<&str> = names(&b.mandatory_levels)
            .into_iter()
            .chain(names(&b.suggested_levels))
            .collect();
        for fs in b.mandatory_schemas.iter().chain(&b.suggested_schemas) {
            let typed: FlowSchema = serde_json::from_value(fs.clone()).expect("FlowSchema");
            let spec = typed.spec.expect("spec");
            assert!(
                levels.contains(&spec.priority_level_configuration.name.as_str()),
                "{} references a missing level",
                crate::object::name(fs)
            );
            assert_eq!(fs["metadata"]["annotations"][AUTOUPDATE_ANNOTATION], "true");
        }
        for pl in b.mandatory_levels.iter().chain(&b.suggested_levels) {
            serde_json::from_value::<PriorityLevelConfiguration>(pl.clone()).expect("level");
        }
    }

    #[test]
    fn precedences_and_distinguishers_match_kubes_table() {
        // `kubectl get flowschemas` on a kube 1.33 cluster.
        let b = bootstrap();
        let mut rows: Vec<(String, String, i64, String)> = b
            .mandatory_schemas
            .iter()
            .chain(&b.suggested_schemas)
            .map(|fs| {
                (
                    crate::object::name(fs).to_string(),
                    fs["spec"]["priorityLevelConfiguration"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                    fs["spec"]["matchingPrecedence"]
                        .as_i64()
                        .unwrap_or_default(),
                    fs["spec"]["distinguisherMethod"]["type"]
                        .as_str()
                        .unwrap_or("<none>")
                        .to_string(),
                )
            })
            .collect();
        rows.sort_by(|a, b| (a.2, &a.0).cmp(&(b.2, &b.0)));
        let want = [
            ("exempt", "exempt", 1, "<none>"),
            ("probes", "exempt", 2, "<none>"),
            ("system-leader-election", "leader-election", 100, "ByUser"),
            ("endpoint-controller", "workload-high", 150, "ByUser"),
            ("workload-leader-election", "leader-election", 200, "ByUser"),
            ("system-node-high", "node-high", 400, "ByUser"),
            ("system-nodes", "system", 500, "ByUser"),
            (
                "kube-controller-manager",
                "workload-high",
                800,
                "ByNamespace",
            ),
            ("kube-scheduler", "workload-high", 800, "ByNamespace"),
            (
                "kube-system-service-accounts",
                "workload-high",
                900,
                "ByNamespace",
            ),
            ("service-accounts", "workload-low", 9000, "ByUser"),
            ("global-default", "global-default", 9900, "ByUser"),
            ("catch-all", "catch-all", 10000, "ByUser"),
        ];
        let got: Vec<(&str, &str, i64, &str)> = rows
            .iter()
            .map(|(a, b, c, d)| (a.as_str(), b.as_str(), *c, d.as_str()))
            .collect();
        assert_eq!(got, want);
    }
}
