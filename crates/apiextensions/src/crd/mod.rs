//! Validation of CustomResourceDefinition objects, as apiextensions-apiserver's
//! `pkg/apis/apiextensions/validation` does on create and update, and the naming controller's
//! NamesAccepted check.
//!
//! kube validates its internal CRD type, into which a v1 CRD is converted with the per-version schemas,
//! subresources and printer columns moved to the top level when all versions have identical ones. Errors about
//! them are therefore reported at `spec.validation.openAPIV3Schema…`, `spec.subresources…` and
//! `spec.additionalPrinterColumns…` in that case, and at `spec.versions[i].…` otherwise; so are they here.

mod defaults;
mod names;
mod naming;
mod schema;
mod spec;
mod subresources;
mod webhook;

pub use defaults::set_defaults;
pub use naming::{accepted_names, NamesAccepted};
pub use schema::validate_schema;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

use crate::field::{ErrorList, FieldError, Path};

/// Validates a CRD being created (kube's `ValidateCustomResourceDefinition`). Apply [`set_defaults`] first, as
/// the API server does.
pub fn validate_custom_resource_definition(crd: &CustomResourceDefinition) -> ErrorList {
    let mut errs = names::validate_metadata_name(crd);
    errs.extend(spec::validate_spec(&crd.spec, &Path::new("spec")));
    errs.extend(validate_status(crd));
    errs.extend(spec::validate_api_approval(crd, None));
    errs.extend(spec::validate_preserve_unknown_fields(crd, None));
    errs
}

/// Validates an update of `old` to `crd` (kube's `ValidateCustomResourceDefinitionUpdate`): everything
/// [`validate_custom_resource_definition`] checks, plus the immutable group and plural, and the immutable scope
/// and kind once the CRD is Established.
///
/// kube relaxes some schema checks for CRDs that were stored before they existed; here the strict checks always
/// apply.
pub fn validate_custom_resource_definition_update(
    crd: &CustomResourceDefinition,
    old: &CustomResourceDefinition,
) -> ErrorList {
    let mut errs = names::validate_metadata_name(crd);
    let spec_path = Path::new("spec");
    errs.extend(spec::validate_spec(&crd.spec, &spec_path));
    let established = old
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c.type_ == "Established" && c.status == "True")
        });
    let immutable = |path: Path, new: &str, old: &str| {
        (new != old).then(|| FieldError::invalid(&path, new, "field is immutable"))
    };
    if established {
        errs.extend(immutable(
            spec_path.child("scope"),
            &crd.spec.scope,
            &old.spec.scope,
        ));
        errs.extend(immutable(
            spec_path.child("names").child("kind"),
            &crd.spec.names.kind,
            &old.spec.names.kind,
        ));
    }
    errs.extend(immutable(
        spec_path.child("group"),
        &crd.spec.group,
        &old.spec.group,
    ));
    errs.extend(immutable(
        spec_path.child("names").child("plural"),
        &crd.spec.names.plural,
        &old.spec.names.plural,
    ));
    errs.extend(validate_status(crd));
    errs.extend(spec::validate_api_approval(crd, Some(old)));
    errs.extend(spec::validate_preserve_unknown_fields(crd, Some(old)));
    errs
}

fn validate_status(crd: &CustomResourceDefinition) -> ErrorList {
    let status_path = Path::new("status");
    let mut errs = Vec::new();
    if let Some(accepted) = crd.status.as_ref().and_then(|s| s.accepted_names.as_ref()) {
        errs.extend(names::validate_names(
            accepted,
            &status_path.child("acceptedNames"),
        ));
    }
    let stored = crd
        .status
        .as_ref()
        .and_then(|s| s.stored_versions.as_deref());
    errs.extend(spec::validate_stored_versions(
        stored,
        &crd.spec.versions,
        &status_path.child("storedVersions"),
    ));
    errs
}

#[cfg(test)]
mod tests;
