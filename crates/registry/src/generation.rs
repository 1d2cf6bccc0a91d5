//! `metadata.generation` and the system metadata kept across writes (`rest.BeforeCreate`,
//! `rest.BeforeUpdate` of `k8s.io/apiserver/pkg/registry/rest`).

use serde_json::Value;

use super::object::{copy, get, get_i64, semantically_equal, set};

/// What `BeforeCreate` clears and what a strategy sets on create: no deletion fields, and
/// `metadata.generation = 1` for kinds that track generations.
pub(crate) fn prepare_create_meta(obj: &mut Value, tracks_generation: bool) {
    set(obj, &["metadata", "deletionTimestamp"], None);
    set(obj, &["metadata", "deletionGracePeriodSeconds"], None);
    if tracks_generation {
        set(obj, &["metadata", "generation"], Some(Value::from(1)));
    }
}

/// What `BeforeUpdate` keeps from the old object: the generation (a request cannot change
/// it), the uid when the new object has none, the creation timestamp, and the deletion
/// timestamp and grace period once set.
pub(crate) fn carry_over_meta(new: &mut Value, old: &Value) {
    copy(new, old, &["metadata", "generation"]);
    let new_uid_empty = get(new, &["metadata", "uid"])
        .and_then(Value::as_str)
        .is_none_or(str::is_empty);
    if new_uid_empty {
        copy(new, old, &["metadata", "uid"]);
    }
    for field in [
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
    ] {
        if get(old, &["metadata", field]).is_some_and(|v| !v.is_null()) {
            copy(new, old, &["metadata", field]);
        }
    }
}

/// Sets `metadata.generation` to the old generation + 1 when the subtree at `path` (usually
/// `spec`) changed, as the `PrepareForUpdate` of deployments, replica sets, RCs and pods do.
/// Returns whether it bumped.
pub(crate) fn bump_if_changed(new: &mut Value, old: &Value, path: &[&str]) -> bool {
    if semantically_equal(get(new, path), get(old, path)) {
        return false;
    }
    let old_gen = get_i64(old, &["metadata", "generation"]).unwrap_or(0);
    set(
        new,
        &["metadata", "generation"],
        Some(Value::from(old_gen + 1)),
    );
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn create_clears_deletion_fields_and_starts_generation_at_one() {
        let mut obj = json!({"metadata": {"name": "a", "generation": 7, "deletionTimestamp": "2024-01-01T00:00:00Z", "deletionGracePeriodSeconds": 3}});
        prepare_create_meta(&mut obj, true);
        assert_eq!(obj, json!({"metadata": {"name": "a", "generation": 1}}));
    }

    #[test]
    fn update_keeps_system_fields_of_the_old_object() {
        let old = json!({"metadata": {"name": "a", "uid": "u1", "generation": 4, "creationTimestamp": "2024-01-01T00:00:00Z"}});
        let mut new = json!({"metadata": {"name": "a", "generation": 9, "creationTimestamp": "2030-01-01T00:00:00Z"}});
        carry_over_meta(&mut new, &old);
        assert_eq!(new, old);
    }

    #[test]
    fn generation_bumps_only_when_the_spec_changes() {
        let old = json!({"metadata": {"generation": 2}, "spec": {"replicas": 1}});
        let mut same = json!({"metadata": {"generation": 2}, "spec": {"replicas": 1}});
        assert!(!bump_if_changed(&mut same, &old, &["spec"]));
        assert_eq!(same["metadata"]["generation"], 2);
        let mut changed = json!({"metadata": {"generation": 2}, "spec": {"replicas": 3}});
        assert!(bump_if_changed(&mut changed, &old, &["spec"]));
        assert_eq!(changed["metadata"]["generation"], 3);
    }
}
