//! A pod's controller and its scale, from the informer caches: ReplicationController,
//! Deployment (through its ReplicaSet), ReplicaSet, StatefulSet (`getPodReplicationController`,
//! `getPodDeployment`, `getPodReplicaSet`, `getPodStatefulSet`). Other kinds go through the
//! `/scale` subresource (`scale.rs`).

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::ReplicationController;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use rkcm_runtime::informer::Store;
use rkcm_runtime::ObjectKey;

/// A controller's UID and its desired scale (`controllerAndScale`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerAndScale {
    /// The controller's UID.
    pub uid: String,
    /// Its `spec.replicas`.
    pub scale: i32,
}

/// An owner reference whose `apiVersion` is not a group/version.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unexpected GroupVersion string: {0}")]
pub struct BadGroupVersion(pub String);

/// `(group, version)` of an `apiVersion` (`schema.ParseGroupVersion`).
pub fn parse_group_version(api_version: &str) -> Result<(&str, &str), BadGroupVersion> {
    if api_version.is_empty() {
        return Ok(("", ""));
    }
    match api_version.split_once('/') {
        None => Ok(("", api_version)),
        Some((g, v)) if !v.contains('/') => Ok((g, v)),
        Some(_) => Err(BadGroupVersion(api_version.to_string())),
    }
}

/// Whether `r` is of `kind` in one of `groups` (`verifyGroupKind`).
fn verify_group_kind(
    r: &OwnerReference,
    kind: &str,
    groups: &[&str],
) -> Result<bool, BadGroupVersion> {
    let (group, _) = parse_group_version(&r.api_version)?;
    Ok(r.kind == kind && groups.contains(&group))
}

fn controller_of(refs: Option<&Vec<OwnerReference>>) -> Option<&OwnerReference> {
    refs?.iter().find(|r| r.controller == Some(true))
}

/// The caches the finders read.
#[derive(Clone)]
pub struct Caches {
    /// ReplicationControllers.
    pub rcs: Store<ReplicationController>,
    /// ReplicaSets.
    pub rss: Store<ReplicaSet>,
    /// Deployments.
    pub deployments: Store<Deployment>,
    /// StatefulSets.
    pub statefulsets: Store<StatefulSet>,
}

fn uid_matches(uid: Option<&String>, r: &OwnerReference) -> bool {
    uid.is_some_and(|u| *u == r.uid)
}

impl Caches {
    /// The ReplicationController `r` designates.
    pub fn replication_controller(
        &self,
        r: &OwnerReference,
        namespace: &str,
    ) -> Result<Option<ControllerAndScale>, BadGroupVersion> {
        if !verify_group_kind(r, "ReplicationController", &[""])? {
            return Ok(None);
        }
        let Some(rc) = self.rcs.get(&ObjectKey::new(namespace, &r.name)) else {
            return Ok(None);
        };
        if !uid_matches(rc.metadata.uid.as_ref(), r) {
            return Ok(None);
        }
        let scale = rc.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
        Ok(Some(ControllerAndScale {
            uid: r.uid.clone(),
            scale,
        }))
    }

    fn replica_set(
        &self,
        r: &OwnerReference,
        namespace: &str,
    ) -> Result<Option<std::sync::Arc<ReplicaSet>>, BadGroupVersion> {
        if !verify_group_kind(r, "ReplicaSet", &["apps", "extensions"])? {
            return Ok(None);
        }
        Ok(self
            .rss
            .get(&ObjectKey::new(namespace, &r.name))
            .filter(|rs| uid_matches(rs.metadata.uid.as_ref(), r)))
    }

    /// The Deployment that controls the ReplicaSet `r` designates.
    pub fn deployment(
        &self,
        r: &OwnerReference,
        namespace: &str,
    ) -> Result<Option<ControllerAndScale>, BadGroupVersion> {
        let Some(rs) = self.replica_set(r, namespace)? else {
            return Ok(None);
        };
        let Some(dr) = controller_of(rs.metadata.owner_references.as_ref()) else {
            return Ok(None);
        };
        if !verify_group_kind(dr, "Deployment", &["apps", "extensions"])? {
            return Ok(None);
        }
        let Some(d) = self.deployments.get(&ObjectKey::new(namespace, &dr.name)) else {
            return Ok(None);
        };
        if !uid_matches(d.metadata.uid.as_ref(), dr) {
            return Ok(None);
        }
        let scale = d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
        Ok(Some(ControllerAndScale {
            uid: dr.uid.clone(),
            scale,
        }))
    }

    /// The ReplicaSet `r` designates, unless a Deployment controls it.
    pub fn replica_set_alone(
        &self,
        r: &OwnerReference,
        namespace: &str,
    ) -> Result<Option<ControllerAndScale>, BadGroupVersion> {
        let Some(rs) = self.replica_set(r, namespace)? else {
            return Ok(None);
        };
        if controller_of(rs.metadata.owner_references.as_ref())
            .is_some_and(|c| c.kind == "Deployment")
        {
            return Ok(None);
        }
        let scale = rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
        Ok(Some(ControllerAndScale {
            uid: r.uid.clone(),
            scale,
        }))
    }

    /// The StatefulSet `r` designates.
    pub fn stateful_set(
        &self,
        r: &OwnerReference,
        namespace: &str,
    ) -> Result<Option<ControllerAndScale>, BadGroupVersion> {
        if !verify_group_kind(r, "StatefulSet", &["apps"])? {
            return Ok(None);
        }
        let Some(ss) = self.statefulsets.get(&ObjectKey::new(namespace, &r.name)) else {
            return Ok(None);
        };
        if !uid_matches(ss.metadata.uid.as_ref(), r) {
            return Ok(None);
        }
        let scale = ss.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
        Ok(Some(ControllerAndScale {
            uid: r.uid.clone(),
            scale,
        }))
    }

    /// The first cache finder that knows `r`, in kube's order (`finders()` without the scale
    /// client).
    pub fn find(
        &self,
        r: &OwnerReference,
        namespace: &str,
    ) -> Result<Option<ControllerAndScale>, BadGroupVersion> {
        if let Some(found) = self.replication_controller(r, namespace)? {
            return Ok(Some(found));
        }
        if let Some(found) = self.deployment(r, namespace)? {
            return Ok(Some(found));
        }
        if let Some(found) = self.replica_set_alone(r, namespace)? {
            return Ok(Some(found));
        }
        self.stateful_set(r, namespace)
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::*;

    fn caches() -> Caches {
        Caches {
            rcs: Store::new(),
            rss: Store::new(),
            deployments: Store::new(),
            statefulsets: Store::new(),
        }
    }

    /// disruption_test.go `TestBasicFinderFunctions`.
    #[test]
    fn finders_resolve_controllers_by_kind_group_and_uid() {
        let c = caches();
        let rs = replica_set("foo", 10);
        c.rss.insert(std::sync::Arc::new(rs.clone()));
        let r = controller_ref("apps/v1", "ReplicaSet", "foo", uid_of(&rs));
        let found = c.replica_set_alone(&r, "default").unwrap();
        assert_eq!(
            found,
            Some(ControllerAndScale {
                uid: uid_of(&rs),
                scale: 10
            })
        );
        assert_eq!(c.find(&r, "default").unwrap().map(|f| f.scale), Some(10));
        // Wrong UID, wrong kind, wrong group, other namespace: nothing.
        for (api_version, kind, name, uid) in [
            ("apps/v1", "ReplicaSet", "foo", "999".to_string()),
            ("apps/v1", "ReplicationController", "foo", uid_of(&rs)),
            ("batch/v1", "ReplicaSet", "foo", uid_of(&rs)),
            ("apps/v1", "ReplicaSet", "bar", uid_of(&rs)),
        ] {
            let r = controller_ref(api_version, kind, name, uid);
            assert_eq!(
                c.replica_set_alone(&r, "default").unwrap(),
                None,
                "{api_version} {kind} {name}"
            );
        }
        assert_eq!(c.replica_set_alone(&r, "other").unwrap(), None);
        // The old extensions group is still recognised.
        let ext = controller_ref("extensions/v1beta1", "ReplicaSet", "foo", uid_of(&rs));
        assert!(c.replica_set_alone(&ext, "default").unwrap().is_some());
        let bad = controller_ref("a/b/c", "ReplicaSet", "foo", uid_of(&rs));
        assert_eq!(
            c.find(&bad, "default").unwrap_err().to_string(),
            "unexpected GroupVersion string: a/b/c"
        );

        let ss = stateful_set("web", 7);
        c.statefulsets.insert(std::sync::Arc::new(ss.clone()));
        let r = controller_ref("apps/v1", "StatefulSet", "web", uid_of(&ss));
        assert_eq!(c.find(&r, "default").unwrap().map(|f| f.scale), Some(7));

        let rc = replication_controller("rc", 3);
        c.rcs.insert(std::sync::Arc::new(rc.clone()));
        let r = controller_ref("v1", "ReplicationController", "rc", uid_of(&rc));
        assert_eq!(c.find(&r, "default").unwrap().map(|f| f.scale), Some(3));
    }

    /// disruption_test.go `TestBasicFinderFunctions` (`getPodDeployment`): a Deployment's pods
    /// count against the Deployment's scale, not its ReplicaSet's.
    #[test]
    fn a_replica_set_of_a_deployment_resolves_to_the_deployment() {
        let c = caches();
        let d = deployment("web", 5);
        let mut rs = replica_set("web-abc", 3);
        rs.metadata.owner_references = Some(vec![controller_ref(
            "apps/v1",
            "Deployment",
            "web",
            uid_of(&d),
        )]);
        c.deployments.insert(std::sync::Arc::new(d.clone()));
        c.rss.insert(std::sync::Arc::new(rs.clone()));
        let r = controller_ref("apps/v1", "ReplicaSet", "web-abc", uid_of(&rs));
        assert_eq!(c.replica_set_alone(&r, "default").unwrap(), None);
        assert_eq!(
            c.find(&r, "default").unwrap(),
            Some(ControllerAndScale {
                uid: uid_of(&d),
                scale: 5
            })
        );
        // A Deployment with another UID is not the one.
        c.deployments
            .insert(std::sync::Arc::new(deployment("web", 5)));
        assert_eq!(c.deployment(&r, "default").unwrap(), None);
    }

    #[test]
    fn group_versions_parse_as_kube_does() {
        assert_eq!(parse_group_version("v1"), Ok(("", "v1")));
        assert_eq!(parse_group_version("apps/v1"), Ok(("apps", "v1")));
        assert_eq!(parse_group_version(""), Ok(("", "")));
        assert!(parse_group_version("a/b/c").is_err());
    }
}
