//! `spec.podFailurePolicy`: the first rule matching a failed pod's exit codes or conditions
//! decides whether the Job fails, the failure is ignored, or it counts (kube's
//! `pod_failure_policy.go`).

use k8s_openapi::api::batch::v1::{
    PodFailurePolicy, PodFailurePolicyOnExitCodesRequirement,
    PodFailurePolicyOnPodConditionsPattern,
};
use k8s_openapi::api::core::v1::{ContainerStatus, Pod, PodCondition};

/// Reason of a Job failed by a `FailJob` rule.
pub const REASON_POD_FAILURE_POLICY: &str = "PodFailurePolicy";

/// What the policy says about one failed pod.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Verdict {
    /// Set by a `FailJob` rule: the Job fails with this message.
    pub fail_job_message: Option<String>,
    /// Whether the failure counts against `backoffLimit` (`Ignore` rules say no).
    pub count_failed: bool,
    /// The action of the matching rule, if one matched.
    pub action: Option<String>,
}

/// The verdict of the first rule of `policy` matching the failed `pod`; with no policy or no
/// match, the failure counts (`matchPodFailurePolicy`).
pub fn match_pod_failure_policy(policy: Option<&PodFailurePolicy>, pod: &Pod) -> Verdict {
    let counts = Verdict {
        count_failed: true,
        ..Verdict::default()
    };
    let Some(policy) = policy else {
        return counts;
    };
    let namespace = pod.metadata.namespace.as_deref().unwrap_or("");
    let name = pod.metadata.name.as_deref().unwrap_or("");
    let status = pod.status.clone().unwrap_or_default();
    for (index, rule) in policy.rules.iter().enumerate() {
        let matched = if let Some(on_exit_codes) = &rule.on_exit_codes {
            match_on_exit_codes(&status.container_statuses, on_exit_codes)
                .or_else(|| match_on_exit_codes(&status.init_container_statuses, on_exit_codes))
                .map(|c| {
                    let code = c
                        .state
                        .as_ref()
                        .and_then(|s| s.terminated.as_ref())
                        .map_or(0, |t| t.exit_code);
                    format!(
                        "Container {} for pod {namespace}/{name} failed with exit code {code} matching {} rule at index {index}",
                        c.name, rule.action
                    )
                })
        } else if let Some(patterns) = &rule.on_pod_conditions {
            match_on_pod_conditions(status.conditions.as_deref().unwrap_or(&[]), patterns).map(
                |c| {
                    format!(
                        "Pod {namespace}/{name} has condition {} matching {} rule at index {index}",
                        c.type_, rule.action
                    )
                },
            )
        } else {
            None
        };
        let Some(message) = matched else {
            continue;
        };
        let action = Some(rule.action.clone());
        match rule.action.as_str() {
            "Ignore" => {
                return Verdict {
                    fail_job_message: None,
                    count_failed: false,
                    action,
                }
            }
            "Count" => return Verdict { action, ..counts },
            "FailJob" => {
                return Verdict {
                    fail_job_message: Some(message),
                    count_failed: true,
                    action,
                }
            }
            // The index fails (`per_index.rs`); the failure counts.
            "FailIndex" => return Verdict { action, ..counts },
            _ => continue,
        }
    }
    counts
}

/// The first terminated container with a non-zero exit code the requirement matches.
fn match_on_exit_codes<'a>(
    statuses: &'a Option<Vec<ContainerStatus>>,
    requirement: &PodFailurePolicyOnExitCodesRequirement,
) -> Option<&'a ContainerStatus> {
    statuses.iter().flatten().find(|c| {
        let Some(terminated) = c.state.as_ref().and_then(|s| s.terminated.as_ref()) else {
            return false;
        };
        let name_matches = requirement
            .container_name
            .as_ref()
            .is_none_or(|n| *n == c.name);
        let code = terminated.exit_code;
        let listed = requirement.values.contains(&code);
        let operator_matches = match requirement.operator.as_str() {
            "In" => listed,
            "NotIn" => !listed,
            _ => false,
        };
        name_matches && code != 0 && operator_matches
    })
}

/// The first pod condition a pattern matches (a pattern's status defaults to `True`).
fn match_on_pod_conditions<'a>(
    conditions: &'a [PodCondition],
    patterns: &[PodFailurePolicyOnPodConditionsPattern],
) -> Option<&'a PodCondition> {
    conditions.iter().find(|c| {
        patterns.iter().any(|p| {
            let status = if p.status.is_empty() {
                "True"
            } else {
                p.status.as_str()
            };
            c.type_ == p.type_ && c.status == status
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::fixtures::{job, pod};
    use k8s_openapi::api::batch::v1::PodFailurePolicyRule;

    fn exit_rule(action: &str, operator: &str, values: Vec<i32>) -> PodFailurePolicyRule {
        PodFailurePolicyRule {
            action: action.into(),
            on_exit_codes: Some(PodFailurePolicyOnExitCodesRequirement {
                container_name: None,
                operator: operator.into(),
                values,
            }),
            on_pod_conditions: None,
        }
    }

    fn failed_with(code: i32) -> Pod {
        let mut p = pod(&job("j", Some(1), Some(1)), "p", "Failed");
        p.status
            .get_or_insert_with(Default::default)
            .container_statuses = Some(vec![ContainerStatus {
            name: "main".into(),
            ..rkcm_runtime::testing::terminated_container_status(code)
        }]);
        p
    }

    /// Ported from pod_failure_policy_test.go `TestMatchPodFailurePolicy`.
    #[test]
    fn the_first_matching_rule_decides() {
        let policy = PodFailurePolicy {
            rules: vec![
                exit_rule("Ignore", "In", vec![1, 2]),
                exit_rule("FailJob", "In", vec![42]),
                exit_rule("Count", "NotIn", vec![0, 5]),
            ],
        };
        let ignore = match_pod_failure_policy(Some(&policy), &failed_with(2));
        assert_eq!(
            (ignore.count_failed, ignore.action.as_deref()),
            (false, Some("Ignore"))
        );

        let fail = match_pod_failure_policy(Some(&policy), &failed_with(42));
        assert_eq!(
            fail.fail_job_message.as_deref(),
            Some("Container main for pod default/p failed with exit code 42 matching FailJob rule at index 1")
        );
        let fail_index = PodFailurePolicy {
            rules: vec![exit_rule("FailIndex", "In", vec![3])],
        };
        let index = match_pod_failure_policy(Some(&fail_index), &failed_with(3));
        assert_eq!(
            (index.count_failed, index.action.as_deref()),
            (true, Some("FailIndex"))
        );
        let count = match_pod_failure_policy(Some(&policy), &failed_with(7));
        assert_eq!(
            (count.count_failed, count.action.as_deref()),
            (true, Some("Count"))
        );
        let none = match_pod_failure_policy(Some(&policy), &failed_with(5));
        assert_eq!(
            none,
            Verdict {
                count_failed: true,
                ..Verdict::default()
            }
        );
        assert!(match_pod_failure_policy(None, &failed_with(42)).count_failed);
    }

    #[test]
    fn pod_conditions_match_type_and_status_defaulting_to_true() {
        let mut p = failed_with(0);
        p.status.get_or_insert_with(Default::default).conditions = Some(vec![PodCondition {
            type_: "DisruptionTarget".into(),
            status: "True".into(),
            ..Default::default()
        }]);
        let policy = PodFailurePolicy {
            rules: vec![PodFailurePolicyRule {
                action: "Ignore".into(),
                on_exit_codes: None,
                on_pod_conditions: Some(vec![PodFailurePolicyOnPodConditionsPattern {
                    type_: "DisruptionTarget".into(),
                    status: String::new(),
                }]),
            }],
        };
        assert!(!match_pod_failure_policy(Some(&policy), &p).count_failed);
        let mut fail = policy.clone();
        fail.rules[0].action = "FailJob".into();
        assert_eq!(
            match_pod_failure_policy(Some(&fail), &p)
                .fail_job_message
                .as_deref(),
            Some("Pod default/p has condition DisruptionTarget matching FailJob rule at index 0")
        );
        // Exit code 0 never matches an exit-code rule.
        let zero = PodFailurePolicy {
            rules: vec![exit_rule("FailJob", "NotIn", vec![1])],
        };
        assert!(match_pod_failure_policy(Some(&zero), &failed_with(0))
            .fail_job_message
            .is_none());
    }
}
