//! Quota usage of pods: `pkg/quota/v1/evaluator/core/pods.go` (usage, constraints, scopes) and
//! the request/limit sums of `k8s.io/component-helpers/resource` (`PodRequests`, `PodLimits`:
//! containers summed, init containers by kube's max rule with sidecars, pod overhead).
//!
//! Left out, as their feature gates are off by default in 1.33: pod-level resources
//! (`PodLevelResources`) and charging resized pods from their status (`pods/resize` is not
//! served here).

use std::collections::BTreeMap;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{
    Container, Pod, PodAffinityTerm, ScopedResourceSelectorRequirement,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as WireQuantity;

use super::resources::{self, add, contains, contains_prefix, intersection, ResourceList};
use super::{scopes, Error};
use crate::quantity::{Format, Quantity};

/// `count/pods`.
pub const POD_OBJECT_COUNT_NAME: &str = "count/pods";

/// `podResources`: what the pod evaluator charges, besides prefixed and extended resources.
pub const POD_RESOURCES: &[&str] = &[
    POD_OBJECT_COUNT_NAME,
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
];

/// `podResourcePrefixes`: hugepages, charged by prefix.
const POD_RESOURCE_PREFIXES: &[&str] = &["hugepages-", "requests.hugepages-"];

/// `validationSet`: when a quota limits one of these, every container must state it (a
/// backward-compatibility rule kube keeps for cpu and memory only).
const VALIDATION_SET: &[&str] = &[
    "cpu",
    "memory",
    "requests.cpu",
    "requests.memory",
    "limits.cpu",
    "limits.memory",
];

/// `IsNativeResource`: no domain, or a `kubernetes.io/` one.
fn is_native_resource(name: &str) -> bool {
    !name.contains('/') || name.contains("kubernetes.io/")
}

/// `IsExtendedResourceName`: a domain-prefixed name outside `kubernetes.io`.
fn is_extended_resource_name(name: &str) -> bool {
    !is_native_resource(name) && !name.starts_with("requests.")
}

/// `isExtendedResourceNameForQuota`: `requests.<extended resource>`.
fn is_extended_resource_name_for_quota(name: &str) -> bool {
    !is_native_resource(name) && name.starts_with("requests.")
}

/// `MatchingResources` of the pod evaluator.
pub fn matching_resources<S: AsRef<str>>(input: &[S]) -> Vec<String> {
    let mut result = intersection(input, POD_RESOURCES);
    for name in input.iter().map(AsRef::as_ref) {
        if contains_prefix(POD_RESOURCE_PREFIXES, name) || is_extended_resource_name_for_quota(name)
        {
            result.push(name.to_string());
        }
    }
    result
}

fn parse(list: Option<&BTreeMap<String, WireQuantity>>, what: &str) -> Result<ResourceList, Error> {
    match list {
        Some(list) => resources::parse_list(list).map_err(|source| Error::Quantity {
            field: what.to_string(),
            source,
        }),
        None => Ok(ResourceList::new()),
    }
}

fn requests_of(c: &Container) -> Result<ResourceList, Error> {
    parse(
        c.resources.as_ref().and_then(|r| r.requests.as_ref()),
        "resources.requests",
    )
}

fn limits_of(c: &Container) -> Result<ResourceList, Error> {
    parse(
        c.resources.as_ref().and_then(|r| r.limits.as_ref()),
        "resources.limits",
    )
}

/// `maxResourceList`: raises each entry of `list` to `other`'s where that is larger.
fn max_into(list: &mut ResourceList, other: &ResourceList) {
    for (k, v) in other {
        match list.get(k) {
            Some(existing) if existing >= v => {}
            _ => {
                list.insert(k.clone(), v.clone());
            }
        }
    }
}

/// The sum over containers with init containers by kube's rule: regular containers and
/// sidecars (`restartPolicy: Always` init containers) add up; each regular init container runs
/// alone with the sidecars started before it, and the pod needs the largest of these.
fn pod_total(
    pod: &Pod,
    of: fn(&Container) -> Result<ResourceList, Error>,
) -> Result<ResourceList, Error> {
    let Some(spec) = pod.spec.as_ref() else {
        return Ok(ResourceList::new());
    };
    let mut total = ResourceList::new();
    for c in &spec.containers {
        total = add(&total, &of(c)?);
    }
    let mut sidecars = ResourceList::new();
    let mut init_max = ResourceList::new();
    for c in spec.init_containers.iter().flatten() {
        let own = of(c)?;
        let running = if c.restart_policy.as_deref() == Some("Always") {
            total = add(&total, &own);
            sidecars = add(&sidecars, &own);
            sidecars.clone()
        } else {
            add(&own, &sidecars)
        };
        max_into(&mut init_max, &running);
    }
    max_into(&mut total, &init_max);
    Ok(total)
}

/// `PodRequests`: the pod's requests, pod overhead added.
pub fn pod_requests(pod: &Pod) -> Result<ResourceList, Error> {
    let requests = pod_total(pod, requests_of)?;
    let overhead = parse(
        pod.spec.as_ref().and_then(|s| s.overhead.as_ref()),
        "spec.overhead",
    )?;
    Ok(add(&requests, &overhead))
}

/// `PodLimits`: the pod's limits, with pod overhead added to the resources that have a limit.
pub fn pod_limits(pod: &Pod) -> Result<ResourceList, Error> {
    let mut limits = pod_total(pod, limits_of)?;
    let overhead = parse(
        pod.spec.as_ref().and_then(|s| s.overhead.as_ref()),
        "spec.overhead",
    )?;
    for (k, v) in &overhead {
        if let Some(limit) = limits.get_mut(k) {
            *limit = limit.checked_add(v).unwrap_or_else(|| limit.clone());
        }
    }
    Ok(limits)
}

/// `podComputeUsageHelper`: what requests and limits charge.
fn compute_usage(requests: &ResourceList, limits: &ResourceList) -> ResourceList {
    let mut result = ResourceList::new();
    result.insert("pods".into(), Quantity::new(1, Format::DecimalSI));
    for (resource, quota_names) in [
        ("cpu", ["cpu", "requests.cpu"]),
        ("memory", ["memory", "requests.memory"]),
        (
            "ephemeral-storage",
            ["ephemeral-storage", "requests.ephemeral-storage"],
        ),
    ] {
        if let Some(q) = requests.get(resource) {
            for name in quota_names {
                result.insert(name.into(), q.clone());
            }
        }
        if let Some(q) = limits.get(resource) {
            result.insert(format!("limits.{resource}"), q.clone());
        }
    }
    for (resource, q) in requests {
        if resource.starts_with("hugepages-") {
            result.insert(resource.clone(), q.clone());
            result.insert(format!("requests.{resource}"), q.clone());
        }
        if is_extended_resource_name(resource) {
            result.insert(format!("requests.{resource}"), q.clone());
        }
    }
    result
}

/// `QuotaV1Pod`: whether the pod is charged compute resources: not in a terminal phase, and
/// not past the end of its deletion grace period (a pod stuck terminating on a lost node would
/// otherwise block its replacement).
pub fn quota_v1_pod(pod: &Pod, now: Timestamp) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    if matches!(phase, Some("Failed" | "Succeeded")) {
        return false;
    }
    if let (Some(deleted), Some(grace)) = (
        pod.metadata.deletion_timestamp.as_ref(),
        pod.metadata.deletion_grace_period_seconds,
    ) {
        let end = deleted
            .0
            .checked_add(SignedDuration::from_secs(grace))
            .unwrap_or(deleted.0);
        if now > end {
            return false;
        }
    }
    true
}

/// `PodUsageFunc`: `count/pods` always (object counts track what is stored); the compute
/// resources only while [`quota_v1_pod`].
pub fn usage(pod: &Pod, now: Timestamp) -> Result<ResourceList, Error> {
    let mut result = ResourceList::new();
    result.insert(
        POD_OBJECT_COUNT_NAME.into(),
        Quantity::new(1, Format::DecimalSI),
    );
    if !quota_v1_pod(pod, now) {
        return Ok(result);
    }
    let usage = compute_usage(&pod_requests(pod)?, &pod_limits(pod)?);
    Ok(add(&result, &usage))
}

/// `Constraints`: when a quota limits cpu or memory (`validationSet`), every container and init
/// container must state it; the error names them as kube does (`must specify cpu for: a,b;
/// memory for: a`).
pub fn constraints<S: AsRef<str>>(required: &[S], pod: &Pod) -> Result<(), String> {
    let required: Vec<String> = intersection(required, VALIDATION_SET);
    if required.is_empty() {
        return Ok(());
    }
    // resource → container names missing it, both sorted.
    let mut missing: BTreeMap<String, std::collections::BTreeSet<String>> = BTreeMap::new();
    let spec = pod.spec.as_ref();
    let containers = spec
        .map(|s| s.containers.iter())
        .into_iter()
        .flatten()
        .chain(
            spec.and_then(|s| s.init_containers.as_ref())
                .into_iter()
                .flatten(),
        );
    for c in containers {
        // A malformed quantity counts as not stated; validation refuses such pods anyway.
        let requests = requests_of(c).unwrap_or_default();
        let limits = limits_of(c).unwrap_or_default();
        let stated = compute_usage(&requests, &limits);
        for r in &required {
            if !stated.contains_key(r) {
                missing.entry(r.clone()).or_default().insert(c.name.clone());
            }
        }
    }
    if missing.is_empty() {
        return Ok(());
    }
    let parts: Vec<String> = missing
        .iter()
        .map(|(r, names)| {
            format!(
                "{r} for: {}",
                names.iter().cloned().collect::<Vec<_>>().join(",")
            )
        })
        .collect();
    Err(format!("must specify {}", parts.join("; ")))
}

/// `GetPodQOS(pod) == BestEffort`: no container states a non-zero cpu or memory request or
/// limit.
pub fn is_best_effort(pod: &Pod) -> bool {
    let Some(spec) = pod.spec.as_ref() else {
        return true;
    };
    let states_compute = |c: &Container| {
        let r = c.resources.as_ref();
        [
            r.and_then(|r| r.requests.as_ref()),
            r.and_then(|r| r.limits.as_ref()),
        ]
        .into_iter()
        .flatten()
        .flat_map(|list| list.iter())
        .any(|(name, q)| {
            (name == "cpu" || name == "memory")
                && Quantity::parse(q.0.trim()).is_ok_and(|q| !q.is_zero())
        })
    };
    !spec
        .containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
        .any(states_compute)
}

/// `isTerminating`: `activeDeadlineSeconds` is set and not negative.
pub fn is_terminating(pod: &Pod) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.active_deadline_seconds)
        .is_some_and(|d| d >= 0)
}

fn cross_namespace_term(t: &PodAffinityTerm) -> bool {
    t.namespaces.as_ref().is_some_and(|n| !n.is_empty()) || t.namespace_selector.is_some()
}

/// `usesCrossNamespacePodAffinity`.
pub fn uses_cross_namespace_pod_affinity(pod: &Pod) -> bool {
    let Some(affinity) = pod.spec.as_ref().and_then(|s| s.affinity.as_ref()) else {
        return false;
    };
    let a = affinity.pod_affinity.as_ref().map(|a| {
        (
            &a.required_during_scheduling_ignored_during_execution,
            &a.preferred_during_scheduling_ignored_during_execution,
        )
    });
    let anti = affinity.pod_anti_affinity.as_ref().map(|a| {
        (
            &a.required_during_scheduling_ignored_during_execution,
            &a.preferred_during_scheduling_ignored_during_execution,
        )
    });
    [a, anti]
        .into_iter()
        .flatten()
        .any(|(required, preferred)| {
            required.iter().flatten().any(cross_namespace_term)
                || preferred
                    .iter()
                    .flatten()
                    .any(|w| cross_namespace_term(&w.pod_affinity_term))
        })
}

/// `podMatchesScopeFunc`: whether the pod falls in the selector's scope.
pub fn matches_scope(
    selector: &ScopedResourceSelectorRequirement,
    pod: &Pod,
) -> Result<bool, Error> {
    Ok(match selector.scope_name.as_str() {
        scopes::TERMINATING => is_terminating(pod),
        scopes::NOT_TERMINATING => !is_terminating(pod),
        scopes::BEST_EFFORT => is_best_effort(pod),
        scopes::NOT_BEST_EFFORT => !is_best_effort(pod),
        scopes::PRIORITY_CLASS => {
            let class = pod
                .spec
                .as_ref()
                .and_then(|s| s.priority_class_name.as_deref())
                .filter(|c| !c.is_empty());
            scopes::requirement_matches(selector, class)?
        }
        scopes::CROSS_NAMESPACE_POD_AFFINITY => uses_cross_namespace_pod_affinity(pod),
        _ => false,
    })
}

/// Whether `names` holds one of the compute resources whose stating the pod evaluator enforces.
pub fn limits_compute<S: AsRef<str>>(names: &[S]) -> bool {
    VALIDATION_SET.iter().any(|r| contains(names, r))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quota::resources::{equals, list};
    use k8s_openapi::api::core::v1::{PodSpec, PodStatus, ResourceRequirements};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

    fn wire(pairs: &[(&str, &str)]) -> Option<BTreeMap<String, WireQuantity>> {
        Some(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), WireQuantity(v.to_string())))
                .collect(),
        )
    }

    fn container(name: &str, requests: &[(&str, &str)], limits: &[(&str, &str)]) -> Container {
        Container {
            name: name.into(),
            resources: Some(ResourceRequirements {
                requests: wire(requests),
                limits: wire(limits),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn pod(containers: Vec<Container>, init: Vec<Container>) -> Pod {
        Pod {
            spec: Some(PodSpec {
                containers,
                init_containers: Some(init),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn now() -> Timestamp {
        Timestamp::from_second(1_700_000_000).unwrap()
    }

    // TestPodConstraintsFunc
    #[test]
    fn constraints_name_the_containers_missing_a_required_resource() {
        let cpu_only = |n: &str| container(n, &[("cpu", "1m")], &[("cpu", "2m")]);
        let cases = [
            (
                pod(vec![], vec![cpu_only("dummy")]),
                vec!["memory"],
                "must specify memory for: dummy",
            ),
            (
                pod(vec![], vec![cpu_only("foo"), cpu_only("bar")]),
                vec!["memory"],
                "must specify memory for: bar,foo",
            ),
            (
                pod(vec![cpu_only("dummy")], vec![]),
                vec!["memory"],
                "must specify memory for: dummy",
            ),
            (
                pod(vec![cpu_only("foo"), cpu_only("bar")], vec![]),
                vec!["memory"],
                "must specify memory for: bar,foo",
            ),
            (
                pod(
                    vec![container("foo", &[], &[]), container("bar", &[], &[])],
                    vec![],
                ),
                vec!["memory", "cpu"],
                "must specify cpu for: bar,foo; memory for: bar,foo",
            ),
        ];
        for (pod, required, want) in cases {
            assert_eq!(constraints(&required, &pod).unwrap_err(), want);
        }
        // Resources outside the validation set are never required.
        let p = pod(vec![container("a", &[], &[])], vec![]);
        assert!(constraints(&["pods", "requests.storage"], &p).is_ok());
        assert!(constraints(&["requests.cpu"], &pod(vec![cpu_only("a")], vec![])).is_ok());
        assert_eq!(
            constraints(
                &["limits.cpu"],
                &pod(vec![container("a", &[("cpu", "1")], &[])], vec![])
            )
            .unwrap_err(),
            "must specify limits.cpu for: a"
        );
    }

    // TestPodEvaluatorUsage
    #[test]
    fn usage_charges_requests_limits_and_counts() {
        let one_pod = [("pods", "1"), ("count/pods", "1")];
        let with = |extra: &[(&'static str, &'static str)]| {
            let mut v: Vec<(&str, &str)> = one_pod.to_vec();
            v.extend_from_slice(extra);
            list(&v)
        };
        let cases = [
            (
                "init container CPU",
                pod(
                    vec![],
                    vec![container("", &[("cpu", "1m")], &[("cpu", "2m")])],
                ),
                with(&[("requests.cpu", "1m"), ("limits.cpu", "2m"), ("cpu", "1m")]),
            ),
            (
                "init container MEM",
                pod(
                    vec![],
                    vec![container("", &[("memory", "1m")], &[("memory", "2m")])],
                ),
                with(&[
                    ("requests.memory", "1m"),
                    ("limits.memory", "2m"),
                    ("memory", "1m"),
                ]),
            ),
            (
                "init container local ephemeral storage",
                pod(
                    vec![],
                    vec![container(
                        "",
                        &[("ephemeral-storage", "32Mi")],
                        &[("ephemeral-storage", "64Mi")],
                    )],
                ),
                with(&[
                    ("ephemeral-storage", "32Mi"),
                    ("requests.ephemeral-storage", "32Mi"),
                    ("limits.ephemeral-storage", "64Mi"),
                ]),
            ),
            (
                "init container hugepages",
                pod(
                    vec![],
                    vec![container("", &[("hugepages-2Mi", "100Mi")], &[])],
                ),
                with(&[
                    ("hugepages-2Mi", "100Mi"),
                    ("requests.hugepages-2Mi", "100Mi"),
                ]),
            ),
            (
                "init container extended resources",
                pod(
                    vec![],
                    vec![container(
                        "",
                        &[("example.com/dongle", "3")],
                        &[("example.com/dongle", "3")],
                    )],
                ),
                with(&[("requests.example.com/dongle", "3")]),
            ),
            (
                "container CPU",
                pod(
                    vec![container("", &[("cpu", "1m")], &[("cpu", "2m")])],
                    vec![],
                ),
                with(&[("requests.cpu", "1m"), ("limits.cpu", "2m"), ("cpu", "1m")]),
            ),
            (
                "container extended resources",
                pod(
                    vec![container(
                        "",
                        &[("example.com/dongle", "3")],
                        &[("example.com/dongle", "3")],
                    )],
                    vec![],
                ),
                with(&[("requests.example.com/dongle", "3")]),
            ),
            (
                "init container maximums override sum of containers",
                pod(
                    vec![
                        container(
                            "",
                            &[("cpu", "1"), ("memory", "50M"), ("example.com/dongle", "1")],
                            &[
                                ("cpu", "2"),
                                ("memory", "100M"),
                                ("example.com/dongle", "1"),
                            ],
                        ),
                        container(
                            "",
                            &[("cpu", "1"), ("memory", "25M"), ("example.com/dongle", "1")],
                            &[("cpu", "5"), ("memory", "50M"), ("example.com/dongle", "1")],
                        ),
                    ],
                    vec![
                        container(
                            "",
                            &[
                                ("cpu", "4"),
                                ("memory", "100M"),
                                ("example.com/dongle", "4"),
                            ],
                            &[
                                ("cpu", "8"),
                                ("memory", "200M"),
                                ("example.com/dongle", "4"),
                            ],
                        ),
                        container(
                            "",
                            &[("cpu", "1"), ("memory", "50M"), ("example.com/dongle", "2")],
                            &[
                                ("cpu", "2"),
                                ("memory", "100M"),
                                ("example.com/dongle", "2"),
                            ],
                        ),
                    ],
                ),
                with(&[
                    ("requests.cpu", "4"),
                    ("requests.memory", "100M"),
                    ("requests.example.com/dongle", "4"),
                    ("limits.cpu", "8"),
                    ("limits.memory", "200M"),
                    ("cpu", "4"),
                    ("memory", "100M"),
                ]),
            ),
        ];
        for (name, pod, want) in cases {
            let got = usage(&pod, now()).unwrap();
            assert!(equals(&got, &want), "{name}: {got:?}");
        }
    }

    #[test]
    fn terminal_and_expired_terminating_pods_keep_only_their_object_count() {
        let mut done = pod(
            vec![container("", &[("example.com/dongle", "3")], &[])],
            vec![],
        );
        done.status = Some(PodStatus {
            phase: Some("Succeeded".into()),
            ..Default::default()
        });
        assert!(equals(
            &usage(&done, now()).unwrap(),
            &list(&[("count/pods", "1")])
        ));

        let deleting = |seconds_ago: i64| Pod {
            metadata: ObjectMeta {
                deletion_timestamp: Some(Time(now() - SignedDuration::from_secs(seconds_ago))),
                deletion_grace_period_seconds: Some(30),
                ..Default::default()
            },
            ..pod(
                vec![container("", &[("cpu", "1")], &[("cpu", "2")])],
                vec![],
            )
        };
        // Past the grace period (deleted 60 s ago with 30 s of grace): not charged.
        assert!(equals(
            &usage(&deleting(60), now()).unwrap(),
            &list(&[("count/pods", "1")])
        ));
        // Within the grace period: still charged.
        let got = usage(&deleting(0), now()).unwrap();
        assert_eq!(got["requests.cpu"].to_string(), "1");
        assert_eq!(got["pods"].to_string(), "1");
    }

    #[test]
    fn sidecars_add_up_and_pod_overhead_is_charged() {
        let mut sidecar = container("side", &[("cpu", "1")], &[("cpu", "1")]);
        sidecar.restart_policy = Some("Always".into());
        let mut p = pod(
            vec![container("main", &[("cpu", "2")], &[])],
            vec![sidecar, container("init", &[("cpu", "2500m")], &[])],
        );
        // Regular containers + sidecar = 3; the init container runs with the sidecar: 3.5.
        assert_eq!(pod_requests(&p).unwrap()["cpu"].to_string(), "3500m");
        p.spec.as_mut().unwrap().overhead = wire(&[("cpu", "250m"), ("memory", "120Mi")]);
        let requests = pod_requests(&p).unwrap();
        assert_eq!(requests["cpu"].to_string(), "3750m");
        assert_eq!(requests["memory"].to_string(), "120Mi");
        // Overhead only raises limits that exist.
        let limits = pod_limits(&p).unwrap();
        assert_eq!(limits["cpu"].to_string(), "1250m");
        assert!(!limits.contains_key("memory"));
    }

    // TestPodEvaluatorMatchingScopes (BestEffort, Terminating, PriorityClass, affinity)
    #[test]
    fn scopes_match_qos_deadline_priority_class_and_affinity() {
        let best_effort = pod(vec![container("", &[], &[])], vec![]);
        let burstable = pod(vec![container("", &[("cpu", "1")], &[])], vec![]);
        let exists = |s: &str| scopes::exists(s);
        assert!(matches_scope(&exists(scopes::BEST_EFFORT), &best_effort).unwrap());
        assert!(!matches_scope(&exists(scopes::BEST_EFFORT), &burstable).unwrap());
        assert!(matches_scope(&exists(scopes::NOT_BEST_EFFORT), &burstable).unwrap());
        // Zero quantities do not make a pod Burstable.
        let zero = pod(vec![container("", &[("cpu", "0")], &[])], vec![]);
        assert!(is_best_effort(&zero));

        let mut terminating = best_effort.clone();
        terminating.spec.as_mut().unwrap().active_deadline_seconds = Some(60);
        assert!(matches_scope(&exists(scopes::TERMINATING), &terminating).unwrap());
        assert!(matches_scope(&exists(scopes::NOT_TERMINATING), &best_effort).unwrap());

        let mut high = best_effort.clone();
        high.spec.as_mut().unwrap().priority_class_name = Some("high".into());
        let in_high = ScopedResourceSelectorRequirement {
            scope_name: scopes::PRIORITY_CLASS.into(),
            operator: "In".into(),
            values: Some(vec!["high".into()]),
        };
        assert!(matches_scope(&in_high, &high).unwrap());
        assert!(!matches_scope(&in_high, &best_effort).unwrap());
        assert!(matches_scope(&exists(scopes::PRIORITY_CLASS), &high).unwrap());
        assert!(!matches_scope(&exists(scopes::PRIORITY_CLASS), &best_effort).unwrap());
        assert!(
            !matches_scope(&exists(scopes::CROSS_NAMESPACE_POD_AFFINITY), &best_effort).unwrap()
        );
    }

    // TestPodEvaluatorMatchingResources
    #[test]
    fn matching_resources_keeps_pod_prefixed_and_extended_names() {
        let got = matching_resources(&[
            "pods",
            "requests.cpu",
            "services",
            "requests.hugepages-2Mi",
            "requests.example.com/dongle",
            "example.com/dongle",
            "count/pods",
        ]);
        assert_eq!(
            got,
            [
                "count/pods",
                "pods",
                "requests.cpu",
                "requests.hugepages-2Mi",
                "requests.example.com/dongle"
            ]
        );
    }
}
