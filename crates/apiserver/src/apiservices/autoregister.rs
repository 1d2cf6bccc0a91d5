//! The APIServices of the group-versions the server serves itself, and how a stored one is
//! brought in line (kube-aggregator's `pkg/controllers/autoregister`, and the `Available`
//! condition its availability controller gives every `Local` APIService).

use serde_json::{json, Value};

use super::priorities::priority;

/// `AutoRegisterManagedLabel`.
pub const MANAGED_LABEL: &str = "kube-aggregator.kubernetes.io/automanaged";
/// `AutoRegisterManagedLabel` value of APIServices synced once at start.
pub const ON_START: &str = "onstart";

/// What to do with one APIService name (`checkAPIService`).
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Nothing: up to date, or not managed by the server.
    Keep,
    /// Create this object.
    Create(Value),
    /// Write this object in place of the stored one.
    Update(Value),
    /// Delete the stored object: it is managed but no longer served.
    Delete,
}

/// `makeAPIService`: the APIService of `group`/`version` named `<version>.<group>`, with kube's
/// priorities; `None` for group-versions absent from kube's table.
pub fn desired(group: &str, version: &str) -> Option<Value> {
    let p = priority(group, version)?;
    Some(json!({
        "apiVersion": "apiregistration.k8s.io/v1",
        "kind": "APIService",
        "metadata": {
            "name": format!("{version}.{group}"),
            "labels": {MANAGED_LABEL: ON_START},
        },
        "spec": {
            "group": group,
            "version": version,
            "groupPriorityMinimum": p.group,
            "versionPriority": p.version,
        },
    }))
}

/// `checkAPIService`: compare the stored object with the desired one.
pub fn check(current: Option<&Value>, desired: Option<&Value>) -> Action {
    let managed = |obj: &Value| {
        obj.pointer(&format!(
            "/metadata/labels/{}",
            MANAGED_LABEL.replace('/', "~1")
        ))
        .and_then(Value::as_str)
        .is_some_and(|l| !l.is_empty())
    };
    match (current, desired) {
        (None, None) => Action::Keep,
        (None, Some(d)) => Action::Create(d.clone()),
        (Some(c), None) if managed(c) => Action::Delete,
        (Some(_), None) => Action::Keep,
        (Some(c), Some(_)) if !managed(c) => Action::Keep,
        (Some(c), Some(d)) if c.get("spec") == d.get("spec") => Action::Keep,
        (Some(c), Some(d)) => {
            let mut updated = c.clone();
            updated["spec"] = d.get("spec").cloned().unwrap_or(Value::Null);
            Action::Update(updated)
        }
    }
}

/// Whether `svc` is served by this server (no `spec.service`).
pub fn is_local(svc: &Value) -> bool {
    svc.pointer("/spec/service").is_none_or(Value::is_null)
}

/// The status the availability controller gives a `Local` APIService, or `None` when its
/// `Available` condition already says so.
pub fn local_status(svc: &Value, now: &str) -> Option<Value> {
    let conditions = svc
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let available = conditions
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("Available"));
    if available.is_some_and(|c| {
        c.get("status").and_then(Value::as_str) == Some("True")
            && c.get("reason").and_then(Value::as_str) == Some("Local")
    }) {
        return None;
    }
    let mut others: Vec<Value> = conditions
        .into_iter()
        .filter(|c| c.get("type").and_then(Value::as_str) != Some("Available"))
        .collect();
    others.push(json!({
        "type": "Available",
        "status": "True",
        "lastTransitionTime": now,
        "reason": "Local",
        "message": "Local APIServices are always available",
    }));
    Some(json!({"conditions": others}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn desired_apiservice_is_named_version_dot_group() {
        let core = desired("", "v1").expect("core");
        assert_eq!(core["metadata"]["name"], "v1.");
        let apps = desired("apps", "v1").expect("apps");
        assert_eq!(apps["metadata"]["name"], "v1.apps");
        assert_eq!(apps["spec"]["groupPriorityMinimum"], 17800);
        assert_eq!(apps["spec"]["versionPriority"], 15);
        assert_eq!(apps["metadata"]["labels"][MANAGED_LABEL], "onstart");
        assert!(desired("apiregistration.k8s.io", "v1").is_none());
    }

    // Cases of autoregister_controller_test.go's TestSync.
    #[test]
    fn missing_apiservice_is_created() {
        let want = desired("apps", "v1").expect("apps");
        assert_eq!(check(None, Some(&want)), Action::Create(want.clone()));
    }

    #[test]
    fn managed_apiservice_with_another_spec_gets_the_desired_one() {
        let want = desired("apps", "v1").expect("apps");
        let mut stale = want.clone();
        stale["spec"]["versionPriority"] = json!(1);
        stale["metadata"]["resourceVersion"] = json!("7");
        let Action::Update(updated) = check(Some(&stale), Some(&want)) else {
            panic!("expected an update");
        };
        assert_eq!(updated["spec"], want["spec"]);
        assert_eq!(updated["metadata"]["resourceVersion"], "7");
        assert_eq!(check(Some(&want), Some(&want)), Action::Keep);
    }

    #[test]
    fn unmanaged_apiservice_is_left_alone() {
        let want = desired("apps", "v1").expect("apps");
        let mut theirs = want.clone();
        theirs["metadata"]["labels"] = json!({});
        theirs["spec"]["versionPriority"] = json!(1);
        assert_eq!(check(Some(&theirs), Some(&want)), Action::Keep);
        assert_eq!(check(Some(&theirs), None), Action::Keep);
    }

    #[test]
    fn managed_apiservice_no_longer_served_is_deleted() {
        let old = desired("batch", "v1beta1").expect("batch");
        assert_eq!(check(Some(&old), None), Action::Delete);
    }

    #[test]
    fn local_apiservices_are_always_available() {
        let svc = desired("apps", "v1").expect("apps");
        assert!(is_local(&svc));
        let status = local_status(&svc, "2026-01-01T00:00:00Z").expect("status");
        assert_eq!(
            status["conditions"][0],
            json!({"type": "Available", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z",
                   "reason": "Local", "message": "Local APIServices are always available"})
        );
        let mut done = svc.clone();
        done["status"] = status;
        assert_eq!(local_status(&done, "later"), None);
        let mut remote = svc;
        remote["spec"]["service"] = json!({"namespace": "kube-system", "name": "metrics-server"});
        assert!(!is_local(&remote));
    }
}
