//! Deletes everything in a terminating namespace, then removes the `kubernetes` finalizer.
//! Mirrors `pkg/controller/namespace/deletion/namespaced_resources_deleter.go`.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, PostParams};
use kube::discovery::{ApiCapabilities, ApiResource, Discovery, Scope};
use rkcm_runtime::Clock;

use super::conditions::{self, DeletionReport};

/// The finalizer the namespace controller owns.
pub const FINALIZER_TOKEN: &str = "kubernetes";

/// How long to assume objects with finalizers take to go (kube's `finalizerEstimateSeconds`).
pub const FINALIZER_ESTIMATE_SECONDS: i64 = 15;

/// Errors from deleting a namespace's content.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An API call failed.
    #[error("namespace {namespace}: {what}")]
    Api {
        /// The namespace being deleted.
        namespace: String,
        /// What was being done.
        what: String,
        /// The cause.
        #[source]
        source: kube::Error,
    },
    /// Some content could not be deleted or remains without a finalizer to explain it.
    #[error("namespace {namespace}: {}", errors.join("; "))]
    Content {
        /// The namespace being deleted.
        namespace: String,
        /// One message per failing resource type.
        errors: Vec<String>,
    },
    /// The namespace's UID changed while retrying: it was deleted and created again.
    #[error("namespace {0}: uid has changed across retries")]
    UidChanged(String),
}

/// What a deletion pass achieved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The namespace is gone, not terminating, or finalized by us.
    Done,
    /// Content remains; look again in about this many seconds.
    Remaining {
        /// kube's estimate, in seconds.
        estimate_seconds: i64,
    },
}

/// Deletes namespaces' content through the API, discovering what to delete.
pub struct NamespacedResourcesDeleter {
    client: kube::Client,
    clock: Arc<dyn Clock>,
}

fn is_not_found(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(s) if s.code == 404)
}

fn is_conflict(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(s) if s.code == 409)
}

fn is_method_not_supported(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(s) if s.code == 405)
}

impl NamespacedResourcesDeleter {
    /// A deleter using `client`.
    pub fn new(client: kube::Client, clock: Arc<dyn Clock>) -> Self {
        Self { client, clock }
    }

    fn api_err(namespace: &str, what: impl Into<String>) -> impl FnOnce(kube::Error) -> Error + '_ {
        let what = what.into();
        move |source| Error::Api {
            namespace: namespace.to_string(),
            what,
            source,
        }
    }

    /// One pass over namespace `name`: mark it Terminating, delete its content, report progress in its
    /// conditions, and remove our finalizer once nothing is left.
    pub async fn delete(&self, name: &str) -> Result<Outcome, Error> {
        let namespaces: Api<Namespace> = Api::all(self.client.clone());
        // Several actors edit a terminating namespace: start from the latest state (uncached).
        let ns = match namespaces.get(name).await {
            Ok(ns) => ns,
            Err(err) if is_not_found(&err) => return Ok(Outcome::Done),
            Err(err) => return Err(Self::api_err(name, "reading the namespace")(err)),
        };
        let Some(deleted_at) = ns.metadata.deletion_timestamp.clone() else {
            return Ok(Outcome::Done);
        };
        let ns = match self.ensure_terminating(&namespaces, ns).await? {
            Some(ns) => ns,
            None => return Ok(Outcome::Done),
        };
        if finalized(&ns) {
            return Ok(Outcome::Done);
        }

        let (estimate, report) = self.delete_all_content(name, deleted_at.0).await;
        self.update_conditions(&namespaces, name, &report).await?;
        if !report.delete_errors.is_empty() || report.discovery_error.is_some() {
            let mut errors = report.delete_errors.clone();
            errors.extend(report.discovery_error.clone());
            return Err(Error::Content {
                namespace: name.to_string(),
                errors,
            });
        }
        if estimate > 0 {
            return Ok(Outcome::Remaining {
                estimate_seconds: estimate,
            });
        }
        self.finalize(&namespaces, name).await?;
        Ok(Outcome::Done)
    }

    /// Sets `status.phase: Terminating` if needed. `None` when the namespace vanished.
    async fn ensure_terminating(
        &self,
        namespaces: &Api<Namespace>,
        mut ns: Namespace,
    ) -> Result<Option<Namespace>, Error> {
        let name = ns.metadata.name.clone().unwrap_or_default();
        let uid = ns.metadata.uid.clone();
        loop {
            let phase = ns.status.as_ref().and_then(|s| s.phase.as_deref());
            if ns.metadata.deletion_timestamp.is_none() || phase == Some("Terminating") {
                return Ok(Some(ns));
            }
            let mut updated = ns.clone();
            updated.status.get_or_insert_with(Default::default).phase = Some("Terminating".into());
            match namespaces
                .replace_status(&name, &PostParams::default(), &updated)
                .await
            {
                Ok(ns) => return Ok(Some(ns)),
                Err(err) if is_not_found(&err) => return Ok(None),
                Err(err) if is_conflict(&err) => {
                    ns = match namespaces.get(&name).await {
                        Ok(ns) => ns,
                        Err(err) if is_not_found(&err) => return Ok(None),
                        Err(err) => {
                            return Err(Self::api_err(&name, "re-reading the namespace")(err))
                        }
                    };
                    if ns.metadata.uid != uid {
                        return Err(Error::UidChanged(name));
                    }
                }
                Err(err) => {
                    return Err(Self::api_err(&name, "marking the namespace Terminating")(
                        err,
                    ))
                }
            }
        }
    }

    /// Deletes every namespaced resource type's content; returns the largest wait estimate and a report.
    async fn delete_all_content(
        &self,
        namespace: &str,
        deleted_at: jiff::Timestamp,
    ) -> (i64, DeletionReport) {
        let mut report = DeletionReport::default();
        let resources = match self.deletable_resources().await {
            Ok(resources) => resources,
            Err(err) => {
                report.discovery_error = Some(err.to_string());
                return (0, report);
            }
        };
        let mut estimate = 0;
        for (resource, caps) in resources {
            match self
                .delete_resource_content(namespace, &resource, &caps, deleted_at)
                .await
            {
                Ok((e, remaining, finalizers)) => {
                    estimate = estimate.max(e);
                    if remaining > 0 {
                        *report
                            .remaining
                            .entry(format!("{}.{}", resource.plural, resource.group))
                            .or_default() += remaining;
                    }
                    for (f, n) in finalizers {
                        *report.finalizers_remaining.entry(f).or_default() += n;
                    }
                }
                Err(msg) => report.delete_errors.push(msg),
            }
        }
        (estimate, report)
    }

    /// The served namespaced resources that can be deleted, preferred versions only
    /// (`discovery.ServerPreferredNamespacedResources` filtered by the `delete` verb).
    async fn deletable_resources(
        &self,
    ) -> Result<Vec<(ApiResource, ApiCapabilities)>, kube::Error> {
        let discovery = Discovery::new(self.client.clone()).run().await?;
        let mut out = Vec::new();
        for group in discovery.groups() {
            for (resource, caps) in group.recommended_resources() {
                if caps.scope == Scope::Namespaced && caps.supports_operation("delete") {
                    out.push((resource, caps));
                }
            }
        }
        Ok(out)
    }

    /// Deletes one resource type's content in `namespace`.
    /// Returns (estimate seconds, objects remaining, remaining objects per finalizer).
    async fn delete_resource_content(
        &self,
        namespace: &str,
        resource: &ApiResource,
        caps: &ApiCapabilities,
        deleted_at: jiff::Timestamp,
    ) -> Result<(i64, usize, BTreeMap<String, usize>), String> {
        let gr = format!("{}.{}", resource.plural, resource.group);
        let mut estimate = 0;
        if resource.group.is_empty() && resource.plural == "pods" {
            estimate = self.estimate_pod_termination(namespace, deleted_at).await?;
        }
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.client.clone(), namespace, resource);
        // The namespace controller deletes generically and purges everything itself: no orphaning.
        let dp = DeleteParams {
            propagation_policy: Some(kube::api::PropagationPolicy::Background),
            ..DeleteParams::default()
        };
        let collection_done = if caps.supports_operation("deletecollection") {
            match api.delete_collection(&dp, &ListParams::default()).await {
                Ok(_) => true,
                Err(err) if is_method_not_supported(&err) || is_not_found(&err) => false,
                Err(err) => return Err(format!("failed to delete {gr}: {err}")),
            }
        } else {
            false
        };
        if !caps.supports_operation("list") {
            return Ok((estimate, 0, BTreeMap::new()));
        }
        let list = api
            .list(&ListParams::default())
            .await
            .map_err(|err| format!("failed to list {gr}: {err}"))?;
        if !collection_done {
            for obj in list
                .items
                .iter()
                .filter(|o| o.metadata.deletion_timestamp.is_none())
            {
                let name = obj.metadata.name.clone().unwrap_or_default();
                match api.delete(&name, &dp).await {
                    Ok(_) => {}
                    Err(err) if is_not_found(&err) => {}
                    Err(err) => return Err(format!("failed to delete {gr} {name}: {err}")),
                }
            }
        }
        // Verify what remains (the list above may predate the deletes).
        let remaining = api
            .list(&ListParams::default())
            .await
            .map_err(|err| format!("failed to list {gr}: {err}"))?;
        if remaining.items.is_empty() {
            return Ok((0, 0, BTreeMap::new()));
        }
        let mut finalizers = BTreeMap::new();
        for item in &remaining.items {
            for f in item.metadata.finalizers.iter().flatten() {
                *finalizers.entry(f.clone()).or_insert(0) += 1;
            }
        }
        let n = remaining.items.len();
        if estimate != 0 {
            return Ok((estimate, n, finalizers));
        }
        if !finalizers.is_empty() {
            return Ok((FINALIZER_ESTIMATE_SECONDS, n, finalizers));
        }
        // Graceful deletions in progress (pods past their estimate) are retried soon, as kube does
        // by returning an error that the queue retries with backoff.
        Err(format!(
            "unexpected items still remain in namespace: {namespace} for gvr: {gr}"
        ))
    }

    /// The longest termination grace period among the namespace's non-terminal pods, or 0 once that
    /// much time has passed since the namespace was deleted (`estimateGracefulTerminationForPods`).
    async fn estimate_pod_termination(
        &self,
        namespace: &str,
        deleted_at: jiff::Timestamp,
    ) -> Result<i64, String> {
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        let list = pods
            .list(&ListParams::default())
            .await
            .map_err(|err| format!("failed to list pods.: {err}"))?;
        let estimate = estimate_from_pods(&list.items);
        let elapsed = self.clock.now().as_second() - deleted_at.as_second();
        Ok(if elapsed >= estimate { 0 } else { estimate })
    }

    async fn update_conditions(
        &self,
        namespaces: &Api<Namespace>,
        name: &str,
        report: &DeletionReport,
    ) -> Result<(), Error> {
        let now = self.clock.now();
        let failing = conditions::failing_conditions(report, now);
        for _ in 0..3 {
            let mut ns = match namespaces.get(name).await {
                Ok(ns) => ns,
                Err(err) if is_not_found(&err) => return Ok(()),
                Err(err) => return Err(Self::api_err(name, "reading the namespace")(err)),
            };
            let status = ns.status.get_or_insert_with(Default::default);
            if !conditions::update_conditions(status, &failing, now) {
                return Ok(());
            }
            match namespaces
                .replace_status(name, &PostParams::default(), &ns)
                .await
            {
                Ok(_) => return Ok(()),
                Err(err) if is_conflict(&err) => continue,
                Err(err) if is_not_found(&err) => return Ok(()),
                Err(err) => {
                    return Err(Self::api_err(name, "updating the namespace conditions")(
                        err,
                    ))
                }
            }
        }
        Ok(())
    }

    /// Removes our token from `spec.finalizers` through `/finalize`, retrying on conflict.
    async fn finalize(&self, namespaces: &Api<Namespace>, name: &str) -> Result<(), Error> {
        loop {
            let mut ns = match namespaces.get(name).await {
                Ok(ns) => ns,
                Err(err) if is_not_found(&err) => return Ok(()),
                Err(err) => return Err(Self::api_err(name, "reading the namespace")(err)),
            };
            let spec = ns.spec.get_or_insert_with(Default::default);
            let mut finalizers: Vec<String> = spec
                .finalizers
                .iter()
                .flatten()
                .filter(|f| *f != FINALIZER_TOKEN)
                .cloned()
                .collect();
            finalizers.sort();
            finalizers.dedup();
            spec.finalizers = Some(finalizers);
            match namespaces
                .replace_subresource("finalize", name, &PostParams::default(), &ns)
                .await
            {
                Ok(_) => return Ok(()),
                Err(err) if is_not_found(&err) => return Ok(()),
                Err(err) if is_conflict(&err) => continue,
                Err(err) => return Err(Self::api_err(name, "finalizing the namespace")(err)),
            }
        }
    }
}

/// Whether the namespace's `spec.finalizers` is empty.
pub fn finalized(ns: &Namespace) -> bool {
    ns.spec
        .as_ref()
        .and_then(|s| s.finalizers.as_ref())
        .is_none_or(|f| f.is_empty())
}

/// The longest `terminationGracePeriodSeconds` among pods that are not Succeeded or Failed.
pub fn estimate_from_pods(pods: &[Pod]) -> i64 {
    pods.iter()
        .filter(|p| {
            let phase = p.status.as_ref().and_then(|s| s.phase.as_deref());
            !matches!(phase, Some("Succeeded") | Some("Failed"))
        })
        .filter_map(|p| {
            p.spec
                .as_ref()
                .and_then(|s| s.termination_grace_period_seconds)
        })
        .max()
        .unwrap_or(0)
        .max(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{NamespaceSpec, PodSpec, PodStatus};

    fn pod(phase: &str, grace: Option<i64>) -> Pod {
        Pod {
            spec: Some(PodSpec {
                termination_grace_period_seconds: grace,
                ..Default::default()
            }),
            status: Some(PodStatus {
                phase: Some(phase.into()),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn estimate_is_the_longest_grace_period_of_running_pods() {
        let pods = [
            pod("Running", Some(30)),
            pod("Pending", Some(45)),
            pod("Succeeded", Some(600)),
            pod("Failed", Some(600)),
            pod("Running", None),
        ];
        assert_eq!(estimate_from_pods(&pods), 45);
        assert_eq!(estimate_from_pods(&[]), 0);
    }

    #[test]
    fn a_namespace_without_spec_finalizers_is_finalized() {
        let mut ns = Namespace::default();
        assert!(finalized(&ns));
        ns.spec = Some(NamespaceSpec {
            finalizers: Some(vec![FINALIZER_TOKEN.into()]),
        });
        assert!(!finalized(&ns));
    }
}
