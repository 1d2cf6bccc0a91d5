//! The scale of a controller of any other kind, through its `/scale` subresource
//! (`getScaleController`, `implementsScale`): the kind is mapped to its resource by discovery,
//! and a 404 on `/scale` is told apart from a resource that has no `/scale` at all.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, DynamicObject};
use kube::core::GroupVersionKind;
use kube::Client;
use rkcm_runtime::api_error;

use super::finders::{parse_group_version, BadGroupVersion, ControllerAndScale};

/// Why the expected pod count of a budget could not be computed.
#[derive(Debug, thiserror::Error)]
pub enum ExpectedCountError {
    /// A pod's controller is none the finders know.
    #[error("found no controllers for pod {0:?}")]
    NoControllers(String),
    /// A controller reference with a malformed `apiVersion`.
    #[error(transparent)]
    BadGroupVersion(#[from] BadGroupVersion),
    /// Discovery does not know the controller's kind (the RESTMapper's error).
    #[error("no matches for kind {kind:?} in version {version:?}")]
    NoKindMatch {
        /// The kind.
        kind: String,
        /// Its `apiVersion`.
        version: String,
    },
    /// The controller's resource has no `/scale` subresource.
    #[error("{0} does not implement the scale subresource")]
    NotScalable(String),
    /// `minAvailable` or `maxUnavailable` does not scale.
    #[error(transparent)]
    Invalid(#[from] super::budget::InvalidIntOrPercent),
    /// Discovery or the scale request failed.
    #[error("{}", api_error::message(.0))]
    Api(#[source] kube::Error),
}

/// The scale of controller `r` of `namespace` read from its `/scale` subresource; `None` when the
/// object is gone or is another object of the same name.
pub async fn scale_controller(
    client: &Client,
    r: &OwnerReference,
    namespace: &str,
) -> Result<Option<ControllerAndScale>, ExpectedCountError> {
    let (group, version) = parse_group_version(&r.api_version)?;
    let gvk = GroupVersionKind::gvk(group, version, &r.kind);
    let (resource, caps) = match kube::discovery::pinned_kind(client, &gvk).await {
        Ok(found) => found,
        Err(kube::Error::Discovery(_)) => {
            return Err(ExpectedCountError::NoKindMatch {
                kind: r.kind.clone(),
                version: r.api_version.clone(),
            })
        }
        Err(e) if api_error::is_not_found(&e) => {
            return Err(ExpectedCountError::NoKindMatch {
                kind: r.kind.clone(),
                version: r.api_version.clone(),
            })
        }
        Err(e) => return Err(ExpectedCountError::Api(e)),
    };
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &resource);
    match api.get_scale(&r.name).await {
        Ok(scale) => {
            if scale.metadata.uid.as_deref() != Some(r.uid.as_str()) {
                return Ok(None);
            }
            Ok(Some(ControllerAndScale {
                uid: r.uid.clone(),
                scale: scale.spec.and_then(|s| s.replicas).unwrap_or(0),
            }))
        }
        Err(e) if api_error::is_not_found(&e) => {
            let scalable = caps.subresources.iter().any(|(sub, _)| {
                sub.plural == "scale" && sub.kind == "Scale" && sub.group == "autoscaling"
            });
            if scalable {
                Ok(None)
            } else {
                let gr = if resource.group.is_empty() {
                    resource.plural.clone()
                } else {
                    format!("{}.{}", resource.plural, resource.group)
                };
                Err(ExpectedCountError::NotScalable(gr))
            }
        }
        Err(e) => Err(ExpectedCountError::Api(e)),
    }
}
