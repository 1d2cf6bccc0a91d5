//! `apiVersionPriorities`: the discovery order of kube-apiserver 1.33's group-versions, which
//! its APIServices carry as `groupPriorityMinimum` and `versionPriority`
//! (`cmd/kube-apiserver/app/aggregator.go` merged over
//! `pkg/controlplane/apiserver/aggregator.go`'s `DefaultGenericAPIServicePriorities`).

/// Priority of one group-version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Priority {
    /// `groupPriorityMinimum`.
    pub group: i32,
    /// `versionPriority`.
    pub version: i32,
}

const fn p(group: i32, version: i32) -> Priority {
    Priority { group, version }
}

/// kube's table, for the GA and beta group-versions 1.33 knows.
const PRIORITIES: &[(&str, &str, Priority)] = &[
    ("", "v1", p(18000, 1)),
    ("events.k8s.io", "v1", p(17750, 15)),
    ("events.k8s.io", "v1beta1", p(17750, 5)),
    ("authentication.k8s.io", "v1", p(17700, 15)),
    ("authentication.k8s.io", "v1beta1", p(17700, 9)),
    ("authentication.k8s.io", "v1alpha1", p(17700, 1)),
    ("authorization.k8s.io", "v1", p(17600, 15)),
    ("certificates.k8s.io", "v1", p(17300, 15)),
    ("certificates.k8s.io", "v1alpha1", p(17300, 1)),
    ("rbac.authorization.k8s.io", "v1", p(17000, 15)),
    ("apiextensions.k8s.io", "v1", p(16700, 15)),
    ("admissionregistration.k8s.io", "v1", p(16700, 15)),
    ("admissionregistration.k8s.io", "v1beta1", p(16700, 12)),
    ("admissionregistration.k8s.io", "v1alpha1", p(16700, 9)),
    ("coordination.k8s.io", "v1", p(16500, 15)),
    ("discovery.k8s.io", "v1", p(16200, 15)),
    ("flowcontrol.apiserver.k8s.io", "v1", p(16100, 21)),
    ("internal.apiserver.k8s.io", "v1alpha1", p(16000, 9)),
    ("storagemigration.k8s.io", "v1alpha1", p(15800, 9)),
    ("apps", "v1", p(17800, 15)),
    ("autoscaling", "v1", p(17500, 15)),
    ("autoscaling", "v2", p(17500, 30)),
    ("autoscaling", "v2beta1", p(17500, 9)),
    ("autoscaling", "v2beta2", p(17500, 1)),
    ("batch", "v1", p(17400, 15)),
    ("batch", "v1beta1", p(17400, 9)),
    ("networking.k8s.io", "v1", p(17200, 15)),
    ("networking.k8s.io", "v1beta1", p(17200, 9)),
    ("policy", "v1", p(17100, 15)),
    ("policy", "v1beta1", p(17100, 9)),
    ("storage.k8s.io", "v1", p(16800, 15)),
    ("storage.k8s.io", "v1beta1", p(16800, 9)),
    ("storage.k8s.io", "v1alpha1", p(16800, 1)),
    ("scheduling.k8s.io", "v1", p(16600, 15)),
    ("node.k8s.io", "v1", p(16300, 15)),
    ("node.k8s.io", "v1beta1", p(16300, 9)),
    ("node.k8s.io", "v1alpha1", p(16300, 1)),
    ("resource.k8s.io", "v1beta2", p(16200, 15)),
    ("resource.k8s.io", "v1beta1", p(16200, 9)),
    ("resource.k8s.io", "v1alpha3", p(16200, 1)),
];

/// The priority of `group`/`version`; `None` for group-versions kube registers no APIService
/// for (`makeAPIService` skips them: the aggregator's own group, aggregated APIs).
pub fn priority(group: &str, version: &str) -> Option<Priority> {
    PRIORITIES
        .iter()
        .find(|(g, v, _)| *g == group && *v == version)
        .map(|(_, _, p)| *p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priorities_are_kubes() {
        assert_eq!(priority("", "v1"), Some(p(18000, 1)));
        assert_eq!(priority("apps", "v1"), Some(p(17800, 15)));
        assert_eq!(priority("autoscaling", "v2"), Some(p(17500, 30)));
        assert_eq!(priority("autoscaling", "v1"), Some(p(17500, 15)));
        assert_eq!(
            priority("flowcontrol.apiserver.k8s.io", "v1"),
            Some(p(16100, 21))
        );
        assert_eq!(priority("apiregistration.k8s.io", "v1"), None);
        assert_eq!(priority("metrics.k8s.io", "v1beta1"), None);
    }

    #[test]
    fn every_group_version_is_listed_once() {
        for (i, (g, v, _)) in PRIORITIES.iter().enumerate() {
            assert!(
                !PRIORITIES[..i].iter().any(|(og, ov, _)| og == g && ov == v),
                "{g}/{v} twice"
            );
        }
    }
}
