//! The defaults the API server applies to a v1 CRD before validating it (apiextensions v1 `defaults.go` and the
//! create strategy's stored versions).

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceConversion, CustomResourceDefinition, CustomResourceDefinitionStatus,
};

/// Defaults `spec.names.singular` (lower-case kind), `spec.names.listKind` (`<kind>List`), the `None` conversion
/// strategy, webhook service ports (443) and, when empty, `status.storedVersions` to the storage version.
pub fn set_defaults(crd: &mut CustomResourceDefinition) {
    let names = &mut crd.spec.names;
    if names.singular.as_deref().is_none_or(str::is_empty) {
        names.singular = Some(names.kind.to_lowercase());
    }
    if names.list_kind.as_deref().is_none_or(str::is_empty) && !names.kind.is_empty() {
        names.list_kind = Some(format!("{}List", names.kind));
    }
    let conversion = crd
        .spec
        .conversion
        .get_or_insert_with(|| CustomResourceConversion {
            strategy: "None".into(),
            webhook: None,
        });
    if let Some(service) = conversion
        .webhook
        .as_mut()
        .and_then(|w| w.client_config.as_mut())
        .and_then(|c| c.service.as_mut())
    {
        service.port.get_or_insert(443);
    }
    let status = crd
        .status
        .get_or_insert_with(CustomResourceDefinitionStatus::default);
    if status.stored_versions.as_ref().is_none_or(Vec::is_empty) {
        if let Some(storage) = crd.spec.versions.iter().find(|v| v.storage) {
            status.stored_versions = Some(vec![storage.name.clone()]);
        }
    }
}
