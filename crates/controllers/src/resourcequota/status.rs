//! The status a quota should have (`syncResourceQuota` of
//! `pkg/controller/resourcequota/resource_quota_controller.go`): `status.hard` is `spec.hard`;
//! `status.used` is the newly measured usage over the previous one, masked to the hard
//! resources; nothing is written unless something changed.

use k8s_openapi::api::core::v1::{ResourceQuota, ResourceQuotaStatus};
use rkcm_apimachinery::quota::evaluator::{spec_hard, status_hard, status_used};
use rkcm_apimachinery::quota::resources::{equals, mask, resource_names, to_wire};
use rkcm_apimachinery::quota::{Error, ResourceList};

/// The status to write for `quota` given the usage just measured, or `None` when the current
/// one is right. A quota is written when its hard limits are not yet in status, when it has no
/// status yet, or when the usage changed.
pub fn new_status(
    quota: &ResourceQuota,
    measured: &ResourceList,
) -> Result<Option<ResourceQuotaStatus>, Error> {
    let status = quota.status.as_ref();
    let spec_hard = spec_hard(quota)?;
    let status_hard = status_hard(quota)?;
    let previous = status_used(quota)?;
    let missing = status.and_then(|s| s.hard.as_ref()).is_none()
        || status.and_then(|s| s.used.as_ref()).is_none();
    let mut dirty = !equals(&spec_hard, &status_hard) || missing;

    let mut used = previous.clone();
    used.extend(measured.iter().map(|(k, v)| (k.clone(), v.clone())));
    let used = mask(&used, &resource_names(&spec_hard));
    dirty = dirty || !equals(&used, &previous);
    Ok(dirty.then(|| ResourceQuotaStatus {
        hard: Some(to_wire(&spec_hard)),
        used: Some(to_wire(&used)),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resourcequota::fixtures::{list, quota};
    use rkcm_apimachinery::quota::resources::parse_list;

    fn parsed(status: &ResourceQuotaStatus) -> (ResourceList, ResourceList) {
        (
            parse_list(status.hard.as_ref().unwrap()).unwrap(),
            parse_list(status.used.as_ref().unwrap()).unwrap(),
        )
    }

    // TestSyncResourceQuota "quota-missing-status-with-calculation-error": nothing measured,
    // the status is still written with the hard limits and empty usage.
    #[test]
    fn a_quota_without_status_gets_one_even_when_nothing_was_measured() {
        let q = quota("rq", &[("pods", "1")], None);
        let status = new_status(&q, &list(&[])).unwrap().expect("written");
        let (hard, used) = parsed(&status);
        assert!(equals(&hard, &list(&[("pods", "1")])));
        assert!(used.is_empty());
    }

    // "quota-spec-hard-updated": status.hard follows spec.hard; usage kept for the rest.
    #[test]
    fn changed_hard_limits_are_copied_and_usage_masked_to_them() {
        let q = quota(
            "rq",
            &[("cpu", "4")],
            Some((&[("cpu", "3")], &[("cpu", "0"), ("pods", "2")])),
        );
        let status = new_status(&q, &list(&[("cpu", "200m")]))
            .unwrap()
            .expect("written");
        let (hard, used) = parsed(&status);
        assert!(equals(&hard, &list(&[("cpu", "4")])));
        assert!(equals(&used, &list(&[("cpu", "200m")])));
    }

    // "quota-unchanged": no update when the usage and hard limits are what status says.
    #[test]
    fn an_unchanged_quota_is_not_written() {
        let q = quota(
            "rq",
            &[("cpu", "4")],
            Some((&[("cpu", "4")], &[("cpu", "0")])),
        );
        assert!(new_status(&q, &list(&[("cpu", "0")])).unwrap().is_none());
        // Numerically equal quantities are the same usage.
        let q = quota(
            "rq",
            &[("cpu", "4")],
            Some((&[("cpu", "4")], &[("cpu", "1")])),
        );
        assert!(new_status(&q, &list(&[("cpu", "1000m")]))
            .unwrap()
            .is_none());
    }

    // "quota-missing-status-with-partial-calculation-error": resources whose listing failed keep
    // their previous usage.
    #[test]
    fn resources_not_measured_keep_their_previous_usage() {
        let q = quota(
            "rq",
            &[("pods", "10"), ("services", "5")],
            Some((
                &[("pods", "10"), ("services", "5")],
                &[("pods", "1"), ("services", "2")],
            )),
        );
        let status = new_status(&q, &list(&[("pods", "3")]))
            .unwrap()
            .expect("written");
        let (_, used) = parsed(&status);
        assert!(equals(&used, &list(&[("pods", "3"), ("services", "2")])));
    }

    #[test]
    fn malformed_quantities_are_errors() {
        let q = quota("rq", &[("pods", "many")], None);
        assert!(new_status(&q, &list(&[])).is_err());
    }
}
