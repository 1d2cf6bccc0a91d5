//! `spec.successPolicy` of Indexed Jobs: the Job succeeds early once the succeeded indexes
//! satisfy a rule (kube's `success_policy.go`).

use k8s_openapi::api::batch::v1::SuccessPolicy;

use super::indexed::Intervals;

/// Reason of a Job that met its success policy.
pub const REASON_SUCCESS_POLICY: &str = "SuccessPolicy";

/// The message of the first rule `succeeded` satisfies (`matchSuccessPolicy`): a rule with
/// `succeededIndexes` needs all of them, or `succeededCount` of them; a rule with only
/// `succeededCount` needs that many indexes.
pub fn match_success_policy(
    policy: Option<&SuccessPolicy>,
    completions: usize,
    succeeded: &Intervals,
) -> Option<String> {
    let policy = policy?;
    if succeeded.total() == 0 {
        return None;
    }
    let wanted_count = |c: Option<i32>| c.and_then(|c| usize::try_from(c).ok());
    for (index, rule) in policy.rules.iter().enumerate() {
        let matched = match &rule.succeeded_indexes {
            Some(indexes) => {
                let required = Intervals::parse(indexes, completions);
                if required.total() == 0 {
                    // Unparsable or out of range: the rule cannot match.
                    continue;
                }
                let contained = overlap(&required, succeeded);
                contained == required.total()
                    || wanted_count(rule.succeeded_count).is_some_and(|c| contained >= c)
            }
            None => wanted_count(rule.succeeded_count).is_some_and(|c| succeeded.total() >= c),
        };
        if matched {
            return Some(format!("Matched rules at index {index}"));
        }
    }
    None
}

/// How many indexes of `required` are in `succeeded` (`matchSucceededIndexesRule`'s walk).
fn overlap(required: &Intervals, succeeded: &Intervals) -> usize {
    let (a, b) = (required.as_slice(), succeeded.as_slice());
    let (mut i, mut j, mut contained) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        let (first, last) = (a[i].0.max(b[j].0), a[i].1.min(b[j].1));
        if last >= first {
            contained += last - first + 1;
        }
        match b[j].1.cmp(&a[i].1) {
            std::cmp::Ordering::Less => j += 1,
            std::cmp::Ordering::Greater => i += 1,
            std::cmp::Ordering::Equal => {
                i += 1;
                j += 1;
            }
        }
    }
    contained
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::batch::v1::SuccessPolicyRule;

    fn rule(indexes: Option<&str>, count: Option<i32>) -> SuccessPolicyRule {
        SuccessPolicyRule {
            succeeded_indexes: indexes.map(str::to_string),
            succeeded_count: count,
        }
    }

    /// Ported from success_policy_test.go `TestMatchSuccessPolicy`.
    #[test]
    fn rules_match_on_indexes_counts_or_both() {
        let done = |s: &str| Intervals::parse(s, 10);
        let policy = |rules| SuccessPolicy { rules };
        assert_eq!(match_success_policy(None, 10, &done("0-9")), None);
        let p = policy(vec![rule(Some("0,2-4"), None)]);
        assert_eq!(match_success_policy(Some(&p), 10, &done("0,2-3")), None);
        assert_eq!(
            match_success_policy(Some(&p), 10, &done("0-5")).as_deref(),
            Some("Matched rules at index 0")
        );
        let p = policy(vec![rule(Some("3-9"), Some(2)), rule(None, Some(3))]);
        assert_eq!(
            match_success_policy(Some(&p), 10, &done("0,1,4")).as_deref(),
            Some("Matched rules at index 1")
        );
        assert_eq!(
            match_success_policy(Some(&p), 10, &done("5,7")).as_deref(),
            Some("Matched rules at index 0")
        );
        assert_eq!(match_success_policy(Some(&p), 10, &done("1,7")), None);
        assert_eq!(
            match_success_policy(Some(&p), 10, &Intervals::default()),
            None
        );
        // An unparsable rule is skipped.
        let p = policy(vec![rule(Some("x"), Some(1))]);
        assert_eq!(match_success_policy(Some(&p), 10, &done("0")), None);
    }
}
