//! The scope selectors of a ResourceQuota (`spec.scopes` as `Exists` requirements, then
//! `spec.scopeSelector.matchExpressions`) and how one requirement matches a value, as
//! `helper.ScopedResourceSelectorRequirementsAsSelector` turns it into a label selector.

use k8s_openapi::api::core::v1::{ResourceQuota, ScopedResourceSelectorRequirement};

use super::Error;

/// `ResourceQuotaScopeTerminating`: pods with `activeDeadlineSeconds >= 0`.
pub const TERMINATING: &str = "Terminating";
/// `ResourceQuotaScopeNotTerminating`.
pub const NOT_TERMINATING: &str = "NotTerminating";
/// `ResourceQuotaScopeBestEffort`: pods of QoS class BestEffort.
pub const BEST_EFFORT: &str = "BestEffort";
/// `ResourceQuotaScopeNotBestEffort`.
pub const NOT_BEST_EFFORT: &str = "NotBestEffort";
/// `ResourceQuotaScopePriorityClass`: pods by `priorityClassName`.
pub const PRIORITY_CLASS: &str = "PriorityClass";
/// `ResourceQuotaScopeCrossNamespacePodAffinity`: pods with cross-namespace affinity terms.
pub const CROSS_NAMESPACE_POD_AFFINITY: &str = "CrossNamespacePodAffinity";

/// A requirement `scope Exists`, which is what a `spec.scopes` entry means.
pub fn exists(scope: &str) -> ScopedResourceSelectorRequirement {
    ScopedResourceSelectorRequirement {
        scope_name: scope.to_string(),
        operator: "Exists".to_string(),
        values: None,
    }
}

/// `getScopeSelectorsFromQuota`: the quota's scopes as `Exists` requirements followed by its
/// scope selector's expressions.
pub fn selectors_of(quota: &ResourceQuota) -> Vec<ScopedResourceSelectorRequirement> {
    let spec = quota.spec.as_ref();
    let mut out: Vec<_> = spec
        .and_then(|s| s.scopes.as_ref())
        .into_iter()
        .flatten()
        .map(|s| exists(s))
        .collect();
    if let Some(selector) = spec.and_then(|s| s.scope_selector.as_ref()) {
        out.extend(selector.match_expressions.iter().flatten().cloned());
    }
    out
}

/// Whether `requirement` matches an object whose value for the scope is `value` (`None` when
/// the object has none, as a label set without the key), as the label selector kube builds from
/// it (`In`, `NotIn`, `Exists`, `DoesNotExist`).
pub fn requirement_matches(
    requirement: &ScopedResourceSelectorRequirement,
    value: Option<&str>,
) -> Result<bool, Error> {
    let values = requirement.values.as_deref().unwrap_or_default();
    match requirement.operator.as_str() {
        "In" => Ok(value.is_some_and(|v| values.iter().any(|x| x == v))),
        "NotIn" => Ok(value.is_none_or(|v| values.iter().all(|x| x != v))),
        "Exists" => Ok(value.is_some()),
        "DoesNotExist" => Ok(value.is_none()),
        other => Err(Error::Selector(format!(
            "{other:?} is not a valid scope selector operator"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{ResourceQuotaSpec, ScopeSelector};

    fn req(scope: &str, op: &str, values: &[&str]) -> ScopedResourceSelectorRequirement {
        ScopedResourceSelectorRequirement {
            scope_name: scope.into(),
            operator: op.into(),
            values: Some(values.iter().map(|v| v.to_string()).collect()),
        }
    }

    #[test]
    fn scopes_come_first_as_exists_then_the_selector() {
        let quota = ResourceQuota {
            spec: Some(ResourceQuotaSpec {
                scopes: Some(vec![BEST_EFFORT.into()]),
                scope_selector: Some(ScopeSelector {
                    match_expressions: Some(vec![req(PRIORITY_CLASS, "In", &["high"])]),
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        let selectors = selectors_of(&quota);
        assert_eq!(selectors.len(), 2);
        assert_eq!(selectors[0].scope_name, BEST_EFFORT);
        assert_eq!(selectors[0].operator, "Exists");
        assert_eq!(selectors[1].operator, "In");
        assert!(selectors_of(&ResourceQuota::default()).is_empty());
    }

    #[test]
    fn operators_match_as_label_selectors() {
        let in_high = req(PRIORITY_CLASS, "In", &["high", "cluster-services"]);
        assert!(requirement_matches(&in_high, Some("high")).unwrap());
        assert!(!requirement_matches(&in_high, Some("low")).unwrap());
        assert!(!requirement_matches(&in_high, None).unwrap());
        let not_in = req(PRIORITY_CLASS, "NotIn", &["high"]);
        assert!(requirement_matches(&not_in, Some("low")).unwrap());
        assert!(requirement_matches(&not_in, None).unwrap());
        assert!(!requirement_matches(&not_in, Some("high")).unwrap());
        assert!(requirement_matches(&req(PRIORITY_CLASS, "Exists", &[]), Some("x")).unwrap());
        assert!(!requirement_matches(&req(PRIORITY_CLASS, "Exists", &[]), None).unwrap());
        assert!(requirement_matches(&req(PRIORITY_CLASS, "DoesNotExist", &[]), None).unwrap());
        assert!(requirement_matches(&req(PRIORITY_CLASS, "Bogus", &[]), None).is_err());
    }
}
