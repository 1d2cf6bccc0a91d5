//! The served versions of established CRDs, each with its prepared schema, printer columns,
//! selectable fields and scale paths; looked up by the catalog entry of the custom resource.
//!
//! [`super::controller`] replaces the set whenever CRDs change; requests read it. As the
//! catalog overlay, the set is per process, with each server's entries under its owner id.

use std::sync::{Arc, RwLock};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceColumnDefinition, CustomResourceDefinition, CustomResourceDefinitionVersion,
};
use rkcm_apiextensions::VersionSchema;

use super::conversion_webhook::Webhook;
use rkcm_apimachinery::apply::{custom_resource_type, TypeRef};
use rkcm_apimachinery::catalog::ResourceInfo;
use rkcm_apimachinery::custom_resources::{self, CustomResource};
use serde_json::Value;

/// Where the scale subresource reads and writes replicas (`spec.subresources.scale`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScalePaths {
    /// `specReplicasPath`, e.g. `.spec.replicas`.
    pub spec_replicas: String,
    /// `statusReplicasPath`, e.g. `.status.replicas`.
    pub status_replicas: String,
    /// `labelSelectorPath`, if any.
    pub label_selector: Option<String>,
}

/// One served version of one CRD.
#[derive(Debug)]
pub struct ServedVersion {
    /// The custom resource's catalog entry.
    pub info: &'static ResourceInfo,
    /// The CRD's name (`crontabs.stable.example.com`).
    pub crd_name: String,
    /// The version's schema, prepared; `None` when it has none or it cannot be prepared.
    pub schema: Option<VersionSchema>,
    /// The version's `openAPIV3Schema` as written.
    pub openapi_schema: Option<Value>,
    /// The structured-merge type of its objects, from that schema (server-side apply and
    /// `managedFields`).
    pub apply_type: TypeRef,
    /// `additionalPrinterColumns`.
    pub columns: Vec<CustomResourceColumnDefinition>,
    /// `selectableFields`, as field names (`spec.color`).
    pub selectable_fields: Vec<String>,
    /// The scale subresource, when declared.
    pub scale: Option<ScalePaths>,
    /// `deprecationWarning` (or kube's default message) when the version is deprecated.
    pub deprecation_warning: Option<String>,
    /// The catalog entry of the CRD's storage version, when it is served.
    pub storage: Option<&'static ResourceInfo>,
    /// The CRD's conversion webhook when its strategy is `Webhook`, shared by its versions.
    pub webhook: Option<Arc<Webhook>>,
}

static SERVED: RwLock<Vec<(u64, Arc<ServedVersion>)>> = RwLock::new(Vec::new());

/// Makes `versions` what `owner` serves.
pub fn set(owner: u64, versions: Vec<Arc<ServedVersion>>) {
    let infos = versions.iter().map(|v| v.info).collect();
    {
        let mut served = SERVED.write().unwrap_or_else(|e| e.into_inner());
        served.retain(|(o, _)| *o != owner);
        served.extend(versions.into_iter().map(|v| (owner, v)));
    }
    custom_resources::set(owner, infos);
}

/// The served version whose catalog entry is `info`.
pub fn lookup(info: &ResourceInfo) -> Option<Arc<ServedVersion>> {
    let served = SERVED.read().unwrap_or_else(|e| e.into_inner());
    served
        .iter()
        .rev()
        .find(|(_, v)| std::ptr::eq(v.info, info))
        .map(|(_, v)| Arc::clone(v))
}

/// Every served version.
pub fn all() -> Vec<Arc<ServedVersion>> {
    let served = SERVED.read().unwrap_or_else(|e| e.into_inner());
    served.iter().map(|(_, v)| Arc::clone(v)).collect()
}

/// Whether `crd` has the condition `type_` with status True.
pub fn condition_true(crd: &CustomResourceDefinition, type_: &str) -> bool {
    crd.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == type_ && c.status == "True"))
}

/// The served versions of an established CRD, in kube's version priority order.
pub fn versions_of(crd: &CustomResourceDefinition) -> Vec<ServedVersion> {
    let Some(names) = crd.status.as_ref().and_then(|s| s.accepted_names.as_ref()) else {
        return Vec::new();
    };
    let mut versions: Vec<&CustomResourceDefinitionVersion> =
        crd.spec.versions.iter().filter(|v| v.served).collect();
    versions.sort_by(|a, b| compare_kube_aware(&a.name, &b.name));
    let mut out: Vec<ServedVersion> = versions
        .into_iter()
        .map(|v| {
            let subresources = v.subresources.as_ref();
            let scale = subresources.and_then(|s| s.scale.as_ref());
            let info = custom_resources::intern(&CustomResource {
                group: crd.spec.group.clone(),
                version: v.name.clone(),
                kind: names.kind.clone(),
                plural: names.plural.clone(),
                singular: names.singular.clone().unwrap_or_default(),
                short_names: names.short_names.clone().unwrap_or_default(),
                categories: names.categories.clone().unwrap_or_default(),
                namespaced: crd.spec.scope == "Namespaced",
                status: subresources.is_some_and(|s| s.status.is_some()),
                scale: scale.is_some(),
            });
            let props = v
                .schema
                .as_ref()
                .and_then(|s| s.open_api_v3_schema.as_ref());
            let schema = props.and_then(|p| match VersionSchema::new(p) {
                Ok(s) => Some(s),
                Err(e) => {
                    tracing::warn!(crd = %crd.metadata.name.as_deref().unwrap_or(""), version = %v.name, error = %e, "schema cannot be prepared; objects are not validated");
                    None
                }
            });
            let deprecation_warning = v.deprecated.unwrap_or(false).then(|| {
                v.deprecation_warning.clone().unwrap_or_else(|| {
                    format!("{}/{} {} is deprecated", crd.spec.group, v.name, names.kind)
                })
            });
            // Published as Go writes it: `maximum: 10`, not `10.0`.
            let openapi_schema = props.and_then(|p| rkcm_apimachinery::go_json::to_value(p).ok());
            ServedVersion {
                info,
                crd_name: crd.metadata.name.clone().unwrap_or_default(),
                schema,
                apply_type: custom_resource_type(openapi_schema.as_ref()),
                openapi_schema,
                columns: v.additional_printer_columns.clone().unwrap_or_default(),
                selectable_fields: v
                    .selectable_fields
                    .iter()
                    .flatten()
                    .map(|f| super::jsonpath::field_name(&f.json_path))
                    .collect(),
                scale: scale.map(|s| ScalePaths {
                    spec_replicas: s.spec_replicas_path.clone(),
                    status_replicas: s.status_replicas_path.clone(),
                    label_selector: s.label_selector_path.clone(),
                }),
                deprecation_warning,
                storage: None,
                webhook: None,
            }
        })
        .collect();
    let webhook = conversion_webhook(crd);
    let storage = crd
        .spec
        .versions
        .iter()
        .find(|v| v.storage)
        .and_then(|s| out.iter().find(|v| v.info.version == s.name))
        .map(|v| v.info);
    for v in &mut out {
        v.storage = storage;
        v.webhook = webhook.clone();
    }
    out
}

/// The conversion webhook of `crd`: the one already served when its conversion is unchanged
/// (keeping its client), else a new one.
fn conversion_webhook(crd: &CustomResourceDefinition) -> Option<Arc<Webhook>> {
    let built = Webhook::of(crd)?;
    let served = SERVED.read().unwrap_or_else(|e| e.into_inner());
    let kept = served.iter().find_map(|(_, v)| {
        v.webhook
            .as_ref()
            .filter(|w| w.crd_name == built.crd_name && w.spec == built.spec)
            .cloned()
    });
    Some(kept.unwrap_or_else(|| Arc::new(built)))
}

/// kube's `version.CompareKubeAwareVersionStrings` as an ordering (higher priority first):
/// GA before beta before alpha, higher major first, then higher minor; other names after, by
/// name.
pub fn compare_kube_aware(a: &str, b: &str) -> std::cmp::Ordering {
    fn parse(v: &str) -> Option<(u64, u8, u64)> {
        let rest = v.strip_prefix('v')?;
        let digits = rest.chars().take_while(char::is_ascii_digit).count();
        let major: u64 = rest[..digits].parse().ok()?;
        let rest = &rest[digits..];
        if rest.is_empty() {
            return Some((major, 2, 0));
        }
        let (level, rest) = if let Some(r) = rest.strip_prefix("beta") {
            (1, r)
        } else if let Some(r) = rest.strip_prefix("alpha") {
            (0, r)
        } else {
            return None;
        };
        Some((major, level, rest.parse().ok()?))
    }
    match (parse(a), parse(b)) {
        (Some((ma, la, na)), Some((mb, lb, nb))) => lb.cmp(&la).then(mb.cmp(&ma)).then(nb.cmp(&na)),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => a.cmp(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd(url: &str) -> CustomResourceDefinition {
        let schema = serde_json::json!({"openAPIV3Schema": {"type": "object"}});
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "reusedhooks.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "reusedhooks", "kind": "ReusedHook"},
                "versions": [{"name": "v1", "served": true, "storage": true, "schema": schema},
                             {"name": "v2", "served": true, "storage": false, "schema": schema}],
                "conversion": {"strategy": "Webhook", "webhook": {
                    "clientConfig": {"url": url}, "conversionReviewVersions": ["v1"]}}},
            "status": {"acceptedNames": {"plural": "reusedhooks", "kind": "ReusedHook"}},
        }))
        .expect("crd")
    }

    #[test]
    fn a_crds_webhook_is_shared_by_its_versions_and_kept_until_its_conversion_changes() {
        let owner = custom_resources::new_owner();
        let first = versions_of(&crd("https://127.0.0.1:1/convert"));
        let hook = first[0].webhook.clone().expect("a webhook");
        assert!(Arc::ptr_eq(
            &hook,
            first[1].webhook.as_ref().expect("shared")
        ));
        set(owner, first.into_iter().map(Arc::new).collect());
        let again = versions_of(&crd("https://127.0.0.1:1/convert"));
        assert!(Arc::ptr_eq(&hook, again[0].webhook.as_ref().expect("kept")));
        let moved = versions_of(&crd("https://127.0.0.1:2/convert"));
        assert!(!Arc::ptr_eq(
            &hook,
            moved[0].webhook.as_ref().expect("rebuilt")
        ));
        set(owner, Vec::new());
    }

    #[test]
    fn versions_sort_as_kube_orders_them() {
        let mut v = vec![
            "v1alpha1", "foo", "v1", "v2beta1", "v2", "v1beta2", "v1beta1",
        ];
        v.sort_by(|a, b| compare_kube_aware(a, b));
        assert_eq!(
            v,
            ["v2", "v1", "v2beta1", "v1beta2", "v1beta1", "v1alpha1", "foo"]
        );
    }
}
