//! Which queue a quota goes to (`addQuota`): the priority queue when its hard limits are not
//! yet in status, or when a limit the controller can measure has no usage yet; the normal
//! queue otherwise.

use k8s_openapi::api::core::v1::ResourceQuota;
use rkcm_apimachinery::quota::evaluator::{spec_hard, status_hard, status_used};
use rkcm_apimachinery::quota::evaluators_for;
use rkcm_apimachinery::quota::resources::equals;

/// Whether `quota` needs its usage computed before the others.
pub fn needs_priority(quota: &ResourceQuota) -> bool {
    let (Ok(spec), Ok(hard), Ok(used)) = (spec_hard(quota), status_hard(quota), status_used(quota))
    else {
        // Let the sync report the malformed quantity.
        return true;
    };
    if !equals(&spec, &hard)
        || quota
            .status
            .as_ref()
            .and_then(|s| s.hard.as_ref())
            .is_none()
    {
        return true;
    }
    let evaluators = evaluators_for(&hard);
    hard.keys()
        .filter(|name| !used.contains_key(*name))
        .any(|name| {
            evaluators
                .iter()
                .any(|e| !e.matching_resources(&[name.as_str()]).is_empty())
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resourcequota::fixtures::quota;

    // TestAddQuota
    #[test]
    fn quotas_go_to_the_priority_queue_when_their_usage_is_missing() {
        // "no status"
        assert!(needs_priority(&quota("rq", &[("cpu", "4")], None)));
        // "status, no usage"
        assert!(needs_priority(&quota(
            "rq",
            &[("cpu", "4")],
            Some((&[("cpu", "4")], &[]))
        )));
        // "status, no usage(to validate it works for extended resources)"
        assert!(needs_priority(&quota(
            "rq",
            &[("requests.example/foobars.example.com", "4")],
            Some((&[("requests.example/foobars.example.com", "4")], &[]))
        )));
        // "status, mismatch"
        assert!(needs_priority(&quota(
            "rq",
            &[("cpu", "4")],
            Some((&[("cpu", "6")], &[("cpu", "0")]))
        )));
        // "status, missing usage, but don't care (no informer)"
        assert!(!needs_priority(&quota(
            "rq",
            &[("foobars.example.com", "4")],
            Some((&[("foobars.example.com", "4")], &[]))
        )));
        // "ready"
        assert!(!needs_priority(&quota(
            "rq",
            &[("cpu", "4")],
            Some((&[("cpu", "4")], &[("cpu", "0")]))
        )));
    }
}
