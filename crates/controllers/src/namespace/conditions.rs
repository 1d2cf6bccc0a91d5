//! Namespace status conditions reporting deletion progress.
//! Mirrors `pkg/controller/namespace/deletion/status_condition_utils.go`.

use std::collections::BTreeMap;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{NamespaceCondition, NamespaceStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// Discovery of the served resources failed.
pub const DELETION_DISCOVERY_FAILURE: &str = "NamespaceDeletionDiscoveryFailure";
/// A group/version could not be parsed.
pub const DELETION_GV_PARSING_FAILURE: &str = "NamespaceDeletionGroupVersionParsingFailure";
/// Deleting some content failed.
pub const DELETION_CONTENT_FAILURE: &str = "NamespaceDeletionContentFailure";
/// Some content is still there.
pub const CONTENT_REMAINING: &str = "NamespaceContentRemaining";
/// Some remaining content carries finalizers.
pub const FINALIZERS_REMAINING: &str = "NamespaceFinalizersRemaining";

/// The condition types the namespace controller maintains, in kube's order.
pub const CONDITION_TYPES: [&str; 5] = [
    DELETION_DISCOVERY_FAILURE,
    DELETION_GV_PARSING_FAILURE,
    DELETION_CONTENT_FAILURE,
    CONTENT_REMAINING,
    FINALIZERS_REMAINING,
];

fn ok_reason_and_message(type_: &str) -> (&'static str, &'static str) {
    match type_ {
        DELETION_DISCOVERY_FAILURE => (
            "ResourcesDiscovered",
            "All resources successfully discovered",
        ),
        DELETION_GV_PARSING_FAILURE => (
            "ParsedGroupVersions",
            "All legacy kube types successfully parsed",
        ),
        DELETION_CONTENT_FAILURE => (
            "ContentDeleted",
            "All content successfully deleted, may be waiting on finalization",
        ),
        _ => ("ContentRemoved", "All content successfully removed"),
    }
}

/// What one pass of content deletion found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeletionReport {
    /// Discovery failed with this message.
    pub discovery_error: Option<String>,
    /// Errors deleting content, one per resource type.
    pub delete_errors: Vec<String>,
    /// Objects remaining per `resource.group`.
    pub remaining: BTreeMap<String, usize>,
    /// Remaining objects per finalizer they carry.
    pub finalizers_remaining: BTreeMap<String, usize>,
}

fn condition(
    type_: &str,
    status: &str,
    reason: &str,
    message: String,
    now: Timestamp,
) -> NamespaceCondition {
    NamespaceCondition {
        type_: type_.to_string(),
        status: status.to_string(),
        reason: Some(reason.to_string()),
        message: Some(message),
        last_transition_time: Some(Time(now)),
    }
}

/// The failing conditions `report` calls for (the rest are set to their "ok" variant by [`update_conditions`]).
pub fn failing_conditions(report: &DeletionReport, now: Timestamp) -> Vec<NamespaceCondition> {
    let mut out = Vec::new();
    if let Some(err) = &report.discovery_error {
        out.push(condition(
            DELETION_DISCOVERY_FAILURE,
            "True",
            "DiscoveryFailed",
            err.clone(),
            now,
        ));
    }
    if !report.delete_errors.is_empty() {
        let mut msgs = report.delete_errors.clone();
        msgs.sort();
        out.push(condition(
            DELETION_CONTENT_FAILURE,
            "True",
            "ContentDeletionFailed",
            format!(
                "Failed to delete all resource types, {} remaining: {}",
                msgs.len(),
                msgs.join(", ")
            ),
            now,
        ));
    }
    let remaining: Vec<String> = report
        .remaining
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(gr, n)| format!("{gr} has {n} resource instances"))
        .collect();
    if !remaining.is_empty() {
        out.push(condition(
            CONTENT_REMAINING,
            "True",
            "SomeResourcesRemain",
            format!("Some resources are remaining: {}", remaining.join(", ")),
            now,
        ));
    }
    let finalizers: Vec<String> = report
        .finalizers_remaining
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(f, n)| format!("{f} in {n} resource instances"))
        .collect();
    if !finalizers.is_empty() {
        out.push(condition(
            FINALIZERS_REMAINING,
            "True",
            "SomeFinalizerRemain",
            format!("Some finalizers are remaining: {}", finalizers.join(", ")),
            now,
        ));
    }
    out
}

/// Merges `new` failing conditions into `status`: every maintained type ends up present, the missing
/// ones in their "ok" (False) variant; the transition time moves only when the status flips.
/// Returns whether anything changed.
pub fn update_conditions(
    status: &mut NamespaceStatus,
    new: &[NamespaceCondition],
    now: Timestamp,
) -> bool {
    let conditions = status.conditions.get_or_insert_with(Vec::new);
    let mut changed = false;
    for type_ in CONDITION_TYPES {
        let wanted = new
            .iter()
            .find(|c| c.type_ == type_)
            .cloned()
            .unwrap_or_else(|| {
                let (reason, message) = ok_reason_and_message(type_);
                condition(type_, "False", reason, message.to_string(), now)
            });
        match conditions.iter_mut().find(|c| c.type_ == type_) {
            None => {
                conditions.push(wanted);
                changed = true;
            }
            Some(old) => {
                if old.status != wanted.status
                    || old.reason != wanted.reason
                    || old.message != wanted.message
                {
                    if old.status != wanted.status {
                        old.last_transition_time = Some(Time(now));
                    }
                    old.status = wanted.status;
                    old.reason = wanted.reason;
                    old.message = wanted.message;
                    changed = true;
                }
            }
        }
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> Timestamp {
        Timestamp::from_second(1_700_000_000).unwrap()
    }

    fn get<'a>(status: &'a NamespaceStatus, type_: &str) -> &'a NamespaceCondition {
        status
            .conditions
            .as_ref()
            .and_then(|cs| cs.iter().find(|c| c.type_ == type_))
            .expect("condition present")
    }

    #[test]
    fn a_clean_pass_sets_every_condition_to_its_ok_variant() {
        let mut status = NamespaceStatus::default();
        assert!(update_conditions(
            &mut status,
            &failing_conditions(&DeletionReport::default(), now()),
            now()
        ));
        assert_eq!(status.conditions.as_ref().unwrap().len(), 5);
        let c = get(&status, CONTENT_REMAINING);
        assert_eq!(c.status, "False");
        assert_eq!(c.reason.as_deref(), Some("ContentRemoved"));
        // The same pass again changes nothing.
        assert!(!update_conditions(&mut status, &[], now()));
    }

    #[test]
    fn remaining_content_and_finalizers_are_reported_sorted() {
        let report = DeletionReport {
            remaining: [("pods.".to_string(), 3), ("configmaps.".to_string(), 1)].into(),
            finalizers_remaining: [("example.com/hold".to_string(), 1)].into(),
            ..Default::default()
        };
        let mut status = NamespaceStatus::default();
        update_conditions(&mut status, &failing_conditions(&report, now()), now());
        let c = get(&status, CONTENT_REMAINING);
        assert_eq!(c.status, "True");
        assert_eq!(
            c.message.as_deref(),
            Some("Some resources are remaining: configmaps. has 1 resource instances, pods. has 3 resource instances")
        );
        let f = get(&status, FINALIZERS_REMAINING);
        assert_eq!(f.reason.as_deref(), Some("SomeFinalizerRemain"));
        assert_eq!(
            f.message.as_deref(),
            Some("Some finalizers are remaining: example.com/hold in 1 resource instances")
        );
    }

    #[test]
    fn transition_time_moves_only_when_status_flips() {
        let report = DeletionReport {
            delete_errors: vec!["b failed".into(), "a failed".into()],
            ..Default::default()
        };
        let mut status = NamespaceStatus::default();
        update_conditions(&mut status, &failing_conditions(&report, now()), now());
        let c = get(&status, DELETION_CONTENT_FAILURE);
        assert_eq!(
            c.message.as_deref(),
            Some("Failed to delete all resource types, 2 remaining: a failed, b failed")
        );
        let later = Timestamp::from_second(1_700_000_100).unwrap();
        update_conditions(&mut status, &[], later);
        let c = get(&status, DELETION_CONTENT_FAILURE);
        assert_eq!(c.status, "False");
        assert_eq!(c.last_transition_time, Some(Time(later)));
        let untouched = get(&status, CONTENT_REMAINING);
        assert_eq!(untouched.last_transition_time, Some(Time(now())));
    }
}
