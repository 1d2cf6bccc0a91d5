//! The admission of subresource creates that are not generic writes.

/// Admits the create of a subresource that is not a generic write (an eviction, a
/// TokenRequest) through the plugins that look at one here: NodeRestriction and the admission
/// webhooks, mutating then validating. `attrs` carries the object as the webhooks left it.
pub(super) async fn admit_subresource_create(
    admission: &crate::admission::Admission,
    attrs: &mut crate::admission::Attributes,
) -> crate::error::ApiResult<()> {
    use crate::admission::plugins::{
        MUTATING_ADMISSION_WEBHOOK, NODE_RESTRICTION, VALIDATING_ADMISSION_WEBHOOK,
    };
    admission.admit_by(NODE_RESTRICTION, attrs).await?;
    admission
        .admit_by(MUTATING_ADMISSION_WEBHOOK, attrs)
        .await?;
    admission
        .validate_by(VALIDATING_ADMISSION_WEBHOOK, attrs)
        .await
}
