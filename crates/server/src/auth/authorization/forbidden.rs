//! The 403 of a request no authorizer allowed, as kube writes it
//! (`responsewriters.Forbidden`/`forbiddenMessage` in
//! `staging/src/k8s.io/apiserver/pkg/endpoints/handlers/responsewriters/errors.go`, and
//! `apierrors.NewForbidden`).

use super::attributes::Attributes;
use crate::error::ApiError;

/// `User "jane" cannot list resource "pods" in API group "" in the namespace "default"`, or
/// `... at the cluster scope`, or `User "jane" cannot get path "/metrics"`.
pub fn forbidden_message(attrs: &Attributes) -> String {
    let user = &attrs.user.name;
    if !attrs.resource_request {
        return format!("User {user:?} cannot {} path {:?}", attrs.verb, attrs.path);
    }
    let mut resource = attrs.resource.clone();
    if !attrs.subresource.is_empty() {
        resource = format!("{resource}/{}", attrs.subresource);
    }
    if attrs.namespace.is_empty() {
        format!(
            "User {user:?} cannot {} resource {resource:?} in API group {:?} at the cluster scope",
            attrs.verb, attrs.api_group
        )
    } else {
        format!(
            "User {user:?} cannot {} resource {resource:?} in API group {:?} in the namespace {:?}",
            attrs.verb, attrs.api_group, attrs.namespace
        )
    }
}

/// `apierrors.NewForbidden(group/resource, name, err)`: `pods "x" is forbidden: <why>`,
/// `pods is forbidden: <why>`, or `forbidden: <why>` without a resource; details name the
/// group, resource (as kind) and name.
pub fn new_forbidden(group: &str, resource: &str, name: &str, why: &str) -> ApiError {
    let qualified = if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    };
    let message = if resource.is_empty() && group.is_empty() {
        format!("forbidden: {why}")
    } else if name.is_empty() {
        format!("{qualified} is forbidden: {why}")
    } else {
        format!("{qualified} {name:?} is forbidden: {why}")
    };
    let mut e = ApiError::new(403, "Forbidden", message);
    e.details.group = Some(group.to_string());
    e.details.kind = (!resource.is_empty()).then(|| resource.to_string());
    e.details.name = (!name.is_empty()).then(|| name.to_string());
    e
}

/// The 403 for `attrs` with the authorizers' `reason` appended when there is one.
pub fn forbidden(attrs: &Attributes, reason: &str) -> ApiError {
    let mut why = forbidden_message(attrs);
    if !reason.is_empty() {
        why = format!("{why}: {reason}");
    }
    new_forbidden(&attrs.api_group, &attrs.resource, &attrs.name, &why)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::user::UserInfo;

    #[test]
    fn messages_are_kubes_for_namespaced_cluster_and_path_requests() {
        let jane = UserInfo::new("jane", &[]);
        let e = forbidden(
            &Attributes::resource(jane.clone(), "list", "", "pods", "default", ""),
            "",
        );
        assert_eq!(e.code, 403);
        assert_eq!(e.reason, "Forbidden");
        assert_eq!(
            e.message,
            "pods is forbidden: User \"jane\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\""
        );
        assert_eq!(e.details.kind.as_deref(), Some("pods"));
        let e = forbidden(
            &Attributes::resource(
                jane.clone(),
                "get",
                "rbac.authorization.k8s.io",
                "clusterroles",
                "",
                "admin",
            ),
            "",
        );
        assert_eq!(
            e.message,
            "clusterroles.rbac.authorization.k8s.io \"admin\" is forbidden: User \"jane\" cannot get resource \"clusterroles\" in API group \"rbac.authorization.k8s.io\" at the cluster scope"
        );
        assert_eq!(
            e.status()["details"],
            serde_json::json!({"name": "admin", "group": "rbac.authorization.k8s.io", "kind": "clusterroles"})
        );
        let mut sub = Attributes::resource(jane.clone(), "create", "", "pods", "ns", "p");
        sub.subresource = "exec".into();
        assert!(forbidden(&sub, "")
            .message
            .contains("cannot create resource \"pods/exec\""));
        let e = forbidden(
            &Attributes::non_resource(jane, "get", "/metrics"),
            "RBAC: boom",
        );
        assert_eq!(
            e.message,
            "forbidden: User \"jane\" cannot get path \"/metrics\": RBAC: boom"
        );
    }
}
