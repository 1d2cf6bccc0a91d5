//! The `authorizer` variable of admission CEL expressions (webhook `matchConditions`,
//! ValidatingAdmissionPolicy expressions), answered by the server's authorizer for the
//! request's user (`admission/plugin/cel/activation.go`, `library/authz.go`).

use std::sync::Arc;

use rkcm_apiextensions::cel::authz::{self, Check, Decision};
use rkcm_server::admission::attributes::Attributes;
use rkcm_server::auth::authorization::{self as authorization, Authorize};
use rkcm_server::auth::serviceaccount;
use rkcm_server::auth::UserInfo;

/// The server's authorizer asked about one user.
struct UserAuthorizer {
    authorizer: Arc<dyn Authorize>,
    user: UserInfo,
}

impl authz::Authorizer for UserAuthorizer {
    fn check(&self, check: &Check) -> Decision {
        let user = match &check.service_account {
            Some((namespace, name)) => UserInfo {
                name: serviceaccount::username(namespace, name),
                groups: serviceaccount::groups(namespace),
                ..UserInfo::default()
            },
            None => self.user.clone(),
        };
        let attrs = match &check.path {
            Some(path) => authorization::Attributes::non_resource(user, &check.verb, path),
            None => authorization::Attributes {
                api_version: "*".to_string(),
                subresource: check.subresource.clone(),
                ..authorization::Attributes::resource(
                    user,
                    &check.verb,
                    &check.group,
                    &check.resource,
                    &check.namespace,
                    &check.name,
                )
            },
        };
        let decision = self.authorizer.authorize(&attrs);
        Decision {
            allowed: decision.is_allowed(),
            reason: decision.reason().to_string(),
            error: None,
        }
    }
}

/// The variables `authorizer` and `authorizer.requestResource` of the request `attrs`; none
/// when the server has no authorizer to ask (expressions using them then fail to evaluate).
pub fn variables(
    authorizer: Option<&Arc<dyn Authorize>>,
    attrs: &Attributes,
) -> Vec<(&'static str, cel::Value)> {
    let Some(authorizer) = authorizer else {
        return Vec::new();
    };
    let user = UserAuthorizer {
        authorizer: Arc::clone(authorizer),
        user: (*attrs.user).clone(),
    };
    let request = Check {
        group: attrs.resource.group.to_string(),
        resource: attrs.resource.plural.to_string(),
        subresource: attrs.subresource.to_string(),
        namespace: attrs.namespace.clone(),
        name: attrs.name.clone(),
        ..Check::default()
    };
    authz::variables(Arc::new(user), request).into()
}
