//! Discovery that keeps going when one API group is unavailable: client-go's
//! `ServerPreferredResources` with its `ErrGroupDiscoveryFailed` partial result.
//!
//! A metrics server that is down, or an aggregated API whose backend is gone, must not stop the
//! garbage collector or the namespace controller from working on every other resource: the groups
//! that answered are returned together with the ones that failed.

use std::collections::BTreeMap;

use kube::core::GroupVersion;
use kube::discovery::{verbs, ApiCapabilities, ApiResource};
use kube::Client;

/// The served resources at their group's preferred version, and the group versions that could
/// not be discovered.
#[derive(Debug, Default)]
pub struct PreferredResources {
    /// Every resource (subresources excluded) of every group that answered.
    pub resources: Vec<(ApiResource, ApiCapabilities)>,
    /// Group version (`metrics.k8s.io/v1beta1`) → why its discovery failed.
    pub failed: BTreeMap<String, String>,
}

impl PreferredResources {
    /// The resources whose verbs include every one of `required` (`delete`, `list`, `watch`).
    pub fn supporting<'a>(
        &'a self,
        required: &'a [&'a str],
    ) -> impl Iterator<Item = &'a (ApiResource, ApiCapabilities)> + 'a {
        self.resources
            .iter()
            .filter(move |(_, caps)| required.iter().all(|v| caps.supports_operation(v)))
    }

    /// kube's `ErrGroupDiscoveryFailed` message when some group failed, else `None`.
    pub fn error_message(&self) -> Option<String> {
        group_discovery_failed(&self.failed)
    }
}

/// `ErrGroupDiscoveryFailed.Error()`: the failed group versions with their errors, sorted.
pub fn group_discovery_failed(failed: &BTreeMap<String, String>) -> Option<String> {
    if failed.is_empty() {
        return None;
    }
    let groups: Vec<String> = failed.iter().map(|(gv, e)| format!("{gv}: {e}")).collect();
    Some(format!(
        "unable to retrieve the complete list of server APIs: {}",
        groups.join(", ")
    ))
}

/// The verbs the garbage collector needs of a resource it monitors (kube's
/// `GetDeletableResources`).
pub const DELETABLE: &[&str] = &[verbs::DELETE, verbs::LIST, verbs::WATCH];

/// Discovers every group's preferred version. Fails only when the group list itself cannot be
/// read; a group whose resources cannot be read is reported in
/// [`PreferredResources::failed`].
pub async fn preferred_resources(client: &Client) -> Result<PreferredResources, kube::Error> {
    let core = client.list_core_api_versions().await?;
    let groups = client.list_api_groups().await?;
    let mut versions: Vec<GroupVersion> = core
        .versions
        .iter()
        .filter(|v| v.as_str() == "v1")
        .map(|v| GroupVersion::gv("", v))
        .collect();
    for group in &groups.groups {
        let preferred = group
            .preferred_version
            .as_ref()
            .map(|p| p.version.clone())
            .or_else(|| group.versions.first().map(|v| v.version.clone()));
        if let Some(version) = preferred {
            versions.push(GroupVersion::gv(&group.name, &version));
        }
    }
    let mut out = PreferredResources::default();
    for gv in versions {
        match kube::discovery::pinned_group(client, &gv).await {
            Ok(group) => out.resources.extend(group.versioned_resources(&gv.version)),
            Err(err) => {
                out.failed
                    .insert(gv.api_version(), crate::api_error::message(&err));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_groups_are_reported_sorted_as_client_go_does() {
        let mut failed = BTreeMap::new();
        assert_eq!(group_discovery_failed(&failed), None);
        failed.insert(
            "metrics.k8s.io/v1beta1".to_string(),
            "the server is currently unable to handle the request".to_string(),
        );
        failed.insert("custom.example.com/v1".to_string(), "boom".to_string());
        assert_eq!(
            group_discovery_failed(&failed).as_deref(),
            Some("unable to retrieve the complete list of server APIs: custom.example.com/v1: boom, metrics.k8s.io/v1beta1: the server is currently unable to handle the request")
        );
    }
}
