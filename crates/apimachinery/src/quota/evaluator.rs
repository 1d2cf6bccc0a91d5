//! One evaluator per quota-able resource (`quota.Evaluator`): pods, services and claims have
//! their own; every other namespaced resource is counted by `generic.NewObjectCountEvaluator`,
//! with the legacy names (`configmaps`, `secrets`, …) of `pkg/quota/v1/evaluator/core/registry.go`
//! as aliases. Also `generic.Matches`, `generic.CalculateUsageStats` and `quota.CalculateUsage`.

use std::sync::Arc;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{
    PersistentVolumeClaim, Pod, ResourceQuota, ScopeSelector, ScopedResourceSelectorRequirement,
    Service,
};

use super::resources::{add, difference, intersection, mask, resource_names, ResourceList};
use super::{persistent_volume_claims, pods, scopes, services, Error};
use crate::quantity::{Format, Quantity};

/// An object whose usage an evaluator measures. Kinds without an evaluator of their own only
/// count, so their content does not matter.
#[derive(Clone, Debug)]
pub enum Item {
    /// A pod.
    Pod(Arc<Pod>),
    /// A Service.
    Service(Arc<Service>),
    /// A PersistentVolumeClaim.
    PersistentVolumeClaim(Arc<PersistentVolumeClaim>),
    /// Any other object: counted, never scoped.
    Object,
}

/// An API group and resource (`schema.GroupResource`); the core group is `""`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupResource {
    /// The API group.
    pub group: String,
    /// The plural resource name.
    pub resource: String,
}

impl GroupResource {
    /// `group`/`resource`.
    pub fn new(group: &str, resource: &str) -> Self {
        Self {
            group: group.to_string(),
            resource: resource.to_string(),
        }
    }

    /// `ObjectCountQuotaResourceNameFor`: `count/<resource>` in the core group,
    /// `count/<resource>.<group>` elsewhere.
    pub fn object_count_name(&self) -> String {
        if self.group.is_empty() {
            format!("count/{}", self.resource)
        } else {
            format!("count/{}.{}", self.resource, self.group)
        }
    }

    /// Reads `count/<resource>[.<group>]` back; `None` for any other resource name.
    pub fn from_object_count_name(name: &str) -> Option<Self> {
        let rest = name.strip_prefix("count/")?;
        Some(match rest.split_once('.') {
            Some((resource, group)) => Self::new(group, resource),
            None => Self::new("", rest),
        })
    }
}

/// The admission operation an evaluator is asked about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    /// A create.
    Create,
    /// An update.
    Update,
}

/// The legacy quota names of object counts (`legacyObjectCountAliases`).
const LEGACY_ALIASES: &[(&str, &str)] = &[
    ("configmaps", "configmaps"),
    ("resourcequotas", "resourcequotas"),
    ("replicationcontrollers", "replicationcontrollers"),
    ("secrets", "secrets"),
];

/// Measures one resource's usage for quota.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Evaluator {
    /// `podEvaluator`.
    Pods,
    /// `serviceEvaluator`.
    Services,
    /// `pvcEvaluator`.
    PersistentVolumeClaims,
    /// `objectCountEvaluator`: one per object, under these names.
    ObjectCount {
        /// The counted resource.
        group_resource: GroupResource,
        /// `count/<resource>.<group>` and the legacy alias, if any.
        names: Vec<String>,
    },
}

impl Evaluator {
    /// The evaluator of `group`/`resource` (`registry.Get`, else a new object counter).
    pub fn for_resource(group: &str, resource: &str) -> Self {
        match (group, resource) {
            ("", "pods") => Evaluator::Pods,
            ("", "services") => Evaluator::Services,
            ("", "persistentvolumeclaims") => Evaluator::PersistentVolumeClaims,
            _ => {
                let group_resource = GroupResource::new(group, resource);
                let mut names = vec![group_resource.object_count_name()];
                if group.is_empty() {
                    if let Some((_, alias)) = LEGACY_ALIASES.iter().find(|(r, _)| *r == resource) {
                        names.push((*alias).to_string());
                    }
                }
                Evaluator::ObjectCount {
                    group_resource,
                    names,
                }
            }
        }
    }

    /// The resource it measures.
    pub fn group_resource(&self) -> GroupResource {
        match self {
            Evaluator::Pods => GroupResource::new("", "pods"),
            Evaluator::Services => GroupResource::new("", "services"),
            Evaluator::PersistentVolumeClaims => GroupResource::new("", "persistentvolumeclaims"),
            Evaluator::ObjectCount { group_resource, .. } => group_resource.clone(),
        }
    }

    /// `Handles`: whether this operation can change usage. Pods count on create (`pods/resize`
    /// is not served); services and claims on create and update; a claim's status only when
    /// its allocated storage changes; other objects on create. Other subresources never count.
    pub fn handles(
        &self,
        operation: Operation,
        subresource: &str,
        new: &Item,
        old: Option<&Item>,
    ) -> bool {
        if !self.may_handle(operation, subresource) {
            return false;
        }
        match (self, subresource) {
            (Evaluator::PersistentVolumeClaims, "status") => match (new, old) {
                (Item::PersistentVolumeClaim(new), Some(Item::PersistentVolumeClaim(old))) => {
                    persistent_volume_claims::requires_quota_replenish(new, old)
                }
                _ => false,
            },
            _ => true,
        }
    }

    /// Whether [`Self::handles`] can be true for `operation` on `subresource`, known without the
    /// objects: false for a pod's status update, say, so that admission decodes nothing for it.
    pub fn may_handle(&self, operation: Operation, subresource: &str) -> bool {
        match (self, subresource) {
            (Evaluator::Pods, "") | (Evaluator::ObjectCount { .. }, "") => {
                operation == Operation::Create
            }
            (Evaluator::Services, "") | (Evaluator::PersistentVolumeClaims, "") => true,
            (Evaluator::PersistentVolumeClaims, "status") => operation == Operation::Update,
            _ => false,
        }
    }

    /// `MatchingResources`: which of `input` this evaluator measures.
    pub fn matching_resources<S: AsRef<str>>(&self, input: &[S]) -> Vec<String> {
        match self {
            Evaluator::Pods => pods::matching_resources(input),
            Evaluator::Services => services::matching_resources(input),
            Evaluator::PersistentVolumeClaims => {
                persistent_volume_claims::matching_resources(input)
            }
            Evaluator::ObjectCount { names, .. } => intersection(input, names),
        }
    }

    /// Whether `item` falls in the scope of `selector`; only pods have scopes
    /// (`MatchesNoScopeFunc` for the others).
    pub fn matches_scope(
        &self,
        selector: &ScopedResourceSelectorRequirement,
        item: &Item,
    ) -> Result<bool, Error> {
        match (self, item) {
            (Evaluator::Pods, Item::Pod(pod)) => pods::matches_scope(selector, pod),
            (Evaluator::Pods, _) => Err(Error::WrongKind("expect *api.Pod or *v1.Pod")),
            _ => Ok(false),
        }
    }

    /// `MatchingScopes`: the selectors `item` falls in.
    pub fn matching_scopes(
        &self,
        item: &Item,
        selectors: &[ScopedResourceSelectorRequirement],
    ) -> Result<Vec<ScopedResourceSelectorRequirement>, Error> {
        let mut out = Vec::new();
        for s in selectors {
            if self.matches_scope(s, item)? {
                out.push(s.clone());
            }
        }
        Ok(out)
    }

    /// `generic.Matches`: the quota limits something this evaluator measures (in its
    /// `status.hard`), and `item` falls in every one of its scopes.
    pub fn matches(&self, quota: &ResourceQuota, item: &Item) -> Result<bool, Error> {
        let hard = status_hard(quota)?;
        let resource_match = !self.matching_resources(&resource_names(&hard)).is_empty();
        let mut scope_match = true;
        for selector in scopes::selectors_of(quota) {
            scope_match = self.matches_scope(&selector, item)? && scope_match;
        }
        Ok(resource_match && scope_match)
    }

    /// `Constraints`: only pods have any (see [`pods::constraints`]). The error is the text kube
    /// puts after `failed quota: <name>: `.
    pub fn constraints<S: AsRef<str>>(&self, required: &[S], item: &Item) -> Result<(), String> {
        match (self, item) {
            (Evaluator::Pods, Item::Pod(pod)) => pods::constraints(required, pod),
            _ => Ok(()),
        }
    }

    /// `Usage` of one object at `now`.
    pub fn usage(&self, item: &Item, now: Timestamp) -> Result<ResourceList, Error> {
        match (self, item) {
            (Evaluator::Pods, Item::Pod(pod)) => pods::usage(pod, now),
            (Evaluator::Services, Item::Service(svc)) => Ok(services::usage(svc)),
            (Evaluator::PersistentVolumeClaims, Item::PersistentVolumeClaim(pvc)) => {
                persistent_volume_claims::usage(pvc)
            }
            (Evaluator::ObjectCount { names, .. }, _) => Ok(names
                .iter()
                .map(|n| (n.clone(), Quantity::new(1, Format::DecimalSI)))
                .collect()),
            (Evaluator::Pods, _) => Err(Error::WrongKind("expect *api.Pod or *v1.Pod")),
            (Evaluator::Services, _) => Err(Error::WrongKind("expect *api.Service or *v1.Service")),
            (Evaluator::PersistentVolumeClaims, _) => Err(Error::WrongKind(
                "expect *api.PersistentVolumeClaim or *v1.PersistentVolumeClaim",
            )),
        }
    }

    /// `generic.CalculateUsageStats`: the summed usage of the `items` of one namespace that
    /// fall in every scope of the quota, each of `resources` defaulting to zero.
    pub fn usage_stats(
        &self,
        resources: &[String],
        quota_scopes: &[String],
        scope_selector: Option<&ScopeSelector>,
        items: &[Item],
        now: Timestamp,
    ) -> Result<ResourceList, Error> {
        let mut used: ResourceList = resources
            .iter()
            .map(|r| (r.clone(), Quantity::default()))
            .collect();
        let selectors: Vec<_> = quota_scopes
            .iter()
            .map(|s| scopes::exists(s))
            .chain(
                scope_selector
                    .and_then(|s| s.match_expressions.as_ref())
                    .into_iter()
                    .flatten()
                    .cloned(),
            )
            .collect();
        for item in items {
            let mut in_scope = true;
            for s in &selectors {
                in_scope = self.matches_scope(s, item)? && in_scope;
            }
            if in_scope {
                used = add(&used, &self.usage(item, now)?);
            }
        }
        Ok(used)
    }
}

/// The quota's `status.hard`, parsed.
pub fn status_hard(quota: &ResourceQuota) -> Result<ResourceList, Error> {
    parse_field(
        quota.status.as_ref().and_then(|s| s.hard.as_ref()),
        "status.hard",
    )
}

/// The quota's `status.used`, parsed.
pub fn status_used(quota: &ResourceQuota) -> Result<ResourceList, Error> {
    parse_field(
        quota.status.as_ref().and_then(|s| s.used.as_ref()),
        "status.used",
    )
}

/// The quota's `spec.hard`, parsed.
pub fn spec_hard(quota: &ResourceQuota) -> Result<ResourceList, Error> {
    parse_field(
        quota.spec.as_ref().and_then(|s| s.hard.as_ref()),
        "spec.hard",
    )
}

fn parse_field(
    list: Option<
        &std::collections::BTreeMap<
            String,
            k8s_openapi::apimachinery::pkg::api::resource::Quantity,
        >,
    >,
    field: &str,
) -> Result<ResourceList, Error> {
    list.map(super::resources::parse_list)
        .transpose()
        .map_err(|source| Error::Quantity {
            field: field.to_string(),
            source,
        })
        .map(Option::unwrap_or_default)
}

/// The evaluators whose resources `hard` names: pods, services and claims, plus an object
/// counter for each `count/…` name and legacy alias.
pub fn evaluators_for(hard: &ResourceList) -> Vec<Evaluator> {
    let mut out = vec![
        Evaluator::Pods,
        Evaluator::Services,
        Evaluator::PersistentVolumeClaims,
    ];
    let mut add_one = |e: Evaluator| {
        if !out.contains(&e) {
            out.push(e);
        }
    };
    for name in hard.keys() {
        if let Some(gr) = GroupResource::from_object_count_name(name) {
            add_one(Evaluator::for_resource(&gr.group, &gr.resource));
        } else if let Some((resource, _)) = LEGACY_ALIASES.iter().find(|(_, a)| a == name) {
            add_one(Evaluator::for_resource("", resource));
        }
    }
    out
}

/// Lists an evaluator's objects in a namespace; the error says why they are not known.
pub type Lister<'a> = dyn FnMut(&Evaluator, &str) -> Result<Vec<Item>, String> + 'a;

/// `quota.CalculateUsage`: the usage of every resource of `hard` the evaluators measure, in
/// `namespace`. `list` gives an evaluator's objects in the namespace; a failing listing is
/// reported and its resources left out of the result, so that the caller keeps their previous
/// usage.
pub fn calculate_usage(
    namespace: &str,
    quota_scopes: &[String],
    scope_selector: Option<&ScopeSelector>,
    hard: &ResourceList,
    evaluators: &[Evaluator],
    list: &mut Lister<'_>,
    now: Timestamp,
) -> (ResourceList, Vec<String>) {
    let hard_names = resource_names(hard);
    let potential: Vec<String> = evaluators
        .iter()
        .flat_map(|e| e.matching_resources(&hard_names))
        .collect();
    let mut matched = intersection(&hard_names, &potential);
    let mut errors = Vec::new();
    let mut usage = ResourceList::new();
    for evaluator in evaluators {
        let wanted = evaluator.matching_resources(&matched);
        if wanted.is_empty() {
            continue;
        }
        let stats = list(evaluator, namespace).and_then(|items| {
            evaluator
                .usage_stats(&wanted, quota_scopes, scope_selector, &items, now)
                .map_err(|e| e.to_string())
        });
        match stats {
            Ok(used) => usage = add(&usage, &used),
            Err(e) => {
                errors.push(e);
                matched = difference(&matched, &wanted);
            }
        }
    }
    (mask(&usage, &matched), errors)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quota::resources::{equals, list};
    use k8s_openapi::api::core::v1::{
        Container, PodSpec, ResourceQuotaSpec, ResourceQuotaStatus, ResourceRequirements,
    };
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity as WireQuantity;

    fn quota(hard: &[(&str, &str)], scopes: &[&str]) -> ResourceQuota {
        let wire: std::collections::BTreeMap<_, _> = hard
            .iter()
            .map(|(k, v)| (k.to_string(), WireQuantity(v.to_string())))
            .collect();
        ResourceQuota {
            spec: Some(ResourceQuotaSpec {
                hard: Some(wire.clone()),
                scopes: Some(scopes.iter().map(|s| s.to_string()).collect()),
                ..Default::default()
            }),
            status: Some(ResourceQuotaStatus {
                hard: Some(wire),
                used: None,
            }),
            ..Default::default()
        }
    }

    fn pod(cpu: Option<&str>) -> Item {
        Item::Pod(Arc::new(Pod {
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: "c".into(),
                    resources: cpu.map(|c| ResourceRequirements {
                        requests: Some([("cpu".into(), WireQuantity(c.into()))].into()),
                        ..Default::default()
                    }),
                    ..Default::default()
                }],
                ..Default::default()
            }),
            ..Default::default()
        }))
    }

    fn now() -> Timestamp {
        Timestamp::from_second(1_700_000_000).unwrap()
    }

    #[test]
    fn object_count_names_round_trip() {
        let gr = GroupResource::new("apps", "deployments");
        assert_eq!(gr.object_count_name(), "count/deployments.apps");
        assert_eq!(
            GroupResource::from_object_count_name("count/deployments.apps"),
            Some(gr)
        );
        assert_eq!(
            GroupResource::from_object_count_name("count/configmaps"),
            Some(GroupResource::new("", "configmaps"))
        );
        assert_eq!(GroupResource::from_object_count_name("pods"), None);
    }

    #[test]
    fn legacy_names_count_configmaps_and_secrets() {
        let e = Evaluator::for_resource("", "configmaps");
        assert_eq!(
            e.matching_resources(&["configmaps", "count/configmaps", "pods"]),
            ["configmaps", "count/configmaps"]
        );
        let usage = e.usage(&Item::Object, now()).unwrap();
        assert!(equals(
            &usage,
            &list(&[("configmaps", "1"), ("count/configmaps", "1")])
        ));
        let e = Evaluator::for_resource("apps", "deployments");
        assert_eq!(e.matching_resources(&["count/deployments.apps"]).len(), 1);
    }

    // generic.Matches: a resource in common, and every scope.
    #[test]
    fn quotas_match_on_resources_and_every_scope() {
        let pods = Evaluator::Pods;
        let q = quota(&[("pods", "2")], &[]);
        assert!(pods.matches(&q, &pod(None)).unwrap());
        assert!(!Evaluator::Services.matches(&q, &Item::Object).unwrap());
        let best_effort = quota(&[("pods", "2")], &["BestEffort"]);
        assert!(pods.matches(&best_effort, &pod(None)).unwrap());
        assert!(!pods.matches(&best_effort, &pod(Some("1"))).unwrap());
        // A scoped quota never matches objects without scopes.
        let scoped_count = quota(&[("count/configmaps", "2")], &["BestEffort"]);
        assert!(!Evaluator::for_resource("", "configmaps")
            .matches(&scoped_count, &Item::Object)
            .unwrap());
    }

    #[test]
    fn handles_creates_and_the_updates_that_change_usage() {
        let p = pod(None);
        assert!(Evaluator::Pods.handles(Operation::Create, "", &p, None));
        assert!(!Evaluator::Pods.handles(Operation::Update, "", &p, Some(&p)));
        assert!(!Evaluator::Pods.handles(Operation::Create, "binding", &p, None));
        assert!(Evaluator::Services.handles(Operation::Update, "", &Item::Object, None));
        let cm = Evaluator::for_resource("", "configmaps");
        assert!(cm.handles(Operation::Create, "", &Item::Object, None));
        assert!(!cm.handles(Operation::Update, "", &Item::Object, None));
    }

    #[test]
    fn may_handle_is_false_only_where_handles_is_false_for_every_object() {
        let p = pod(None);
        for evaluator in [Evaluator::Pods, Evaluator::for_resource("", "configmaps")] {
            for op in [Operation::Create, Operation::Update] {
                for sub in ["", "status", "binding"] {
                    if !evaluator.may_handle(op, sub) {
                        assert!(!evaluator.handles(op, sub, &p, Some(&p)), "{op:?} {sub}");
                        assert!(
                            !evaluator.handles(op, sub, &Item::Object, None),
                            "{op:?} {sub}"
                        );
                    }
                }
            }
        }
        assert!(!Evaluator::Pods.may_handle(Operation::Update, "status"));
        assert!(Evaluator::PersistentVolumeClaims.may_handle(Operation::Update, "status"));
    }

    // quota.CalculateUsage over listers, as the controller's sync uses it.
    #[test]
    fn calculate_usage_sums_matching_objects_and_skips_failed_listings() {
        let hard = list(&[
            ("pods", "10"),
            ("requests.cpu", "4"),
            ("count/configmaps", "5"),
            ("services", "3"),
        ]);
        let evaluators = evaluators_for(&hard);
        let mut lister = |e: &Evaluator, ns: &str| -> Result<Vec<Item>, String> {
            assert_eq!(ns, "ns");
            match e {
                Evaluator::Pods => Ok(vec![pod(Some("1")), pod(Some("500m")), pod(None)]),
                Evaluator::ObjectCount { .. } => Ok(vec![Item::Object, Item::Object]),
                Evaluator::Services => Err("services not yet synced".into()),
                Evaluator::PersistentVolumeClaims => Ok(vec![]),
            }
        };
        let (used, errors) =
            calculate_usage("ns", &[], None, &hard, &evaluators, &mut lister, now());
        assert!(equals(
            &used,
            &list(&[
                ("pods", "3"),
                ("requests.cpu", "1500m"),
                ("count/configmaps", "2")
            ])
        ));
        assert_eq!(errors, ["services not yet synced"]);

        let scoped = ["NotBestEffort".to_string()];
        let hard = list(&[("pods", "10")]);
        let (used, _) = calculate_usage(
            "ns",
            &scoped,
            None,
            &hard,
            &evaluators_for(&hard),
            &mut lister,
            now(),
        );
        assert!(equals(&used, &list(&[("pods", "2")])));
    }
}
