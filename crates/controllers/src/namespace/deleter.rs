//! Deletes everything in a terminating namespace, then removes the `kubernetes` finalizer.
//! Mirrors `pkg/controller/namespace/deletion/namespaced_resources_deleter.go`.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, PostParams};
use kube::discovery::{ApiCapabilities, ApiResource, Scope};
use rkcm_runtime::api_error::{self, Chain};
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
    /// Every attempt to finalize met a conflict.
    #[error("namespace {0}: too many conflicts finalizing, will retry")]
    Conflicts(String),
}

/// Attempts of `/finalize` on conflicts before the namespace is requeued with backoff.
const FINALIZE_ATTEMPTS: usize = 5;

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

/// What deleting one resource type's content found (`gvrDeletionMetadata` and the error).
#[derive(Debug, Default)]
struct GvrDeletion {
    /// Seconds to wait before looking again.
    estimate: i64,
    /// Objects still there.
    remaining: usize,
    /// Remaining objects per finalizer they carry.
    finalizers: BTreeMap<String, usize>,
    /// What failed, if anything.
    error: Option<String>,
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
        // As kube: failing to report progress does not stop the deletion.
        if let Err(err) = self.update_conditions(&namespaces, name, &report).await {
            tracing::warn!(namespace = name, error = %Chain(&err), "couldn't update the namespace's status conditions");
        }
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
        self.finalize(&namespaces, &ns).await?;
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
        // As kube: a discovery error is not fatal; the resources that were found are emptied, and
        // the failure is reported in the namespace's conditions.
        let resources = match self.deletable_resources().await {
            Ok((resources, partial)) => {
                report.discovery_error = partial;
                resources
            }
            Err(err) => {
                report.discovery_error = Some(api_error::message(&err));
                return (0, report);
            }
        };
        let mut estimate = 0;
        for (resource, caps) in resources {
            let gvr = self
                .delete_resource_content(namespace, &resource, &caps, deleted_at)
                .await;
            estimate = estimate.max(gvr.estimate);
            if gvr.remaining > 0 {
                *report
                    .remaining
                    .entry(format!("{}.{}", resource.plural, resource.group))
                    .or_default() += gvr.remaining;
                for (f, n) in gvr.finalizers {
                    *report.finalizers_remaining.entry(f).or_default() += n;
                }
            }
            report.delete_errors.extend(gvr.error);
        }
        (estimate, report)
    }

    /// The served namespaced resources that can be deleted, preferred versions only
    /// (`discovery.ServerPreferredNamespacedResources` filtered by the `delete` verb), with
    /// kube's `ErrGroupDiscoveryFailed` message when some groups could not be discovered.
    async fn deletable_resources(
        &self,
    ) -> Result<(Vec<(ApiResource, ApiCapabilities)>, Option<String>), kube::Error> {
        let discovered = rkcm_runtime::discovery::preferred_resources(&self.client).await?;
        let out = discovered
            .supporting(&["delete"])
            .filter(|(_, caps)| caps.scope == Scope::Namespaced)
            .cloned()
            .collect();
        Ok((out, discovered.error_message()))
    }

    /// Deletes one resource type's content in `namespace` (`deleteAllContentForGroupVersionResource`).
    async fn delete_resource_content(
        &self,
        namespace: &str,
        resource: &ApiResource,
        caps: &ApiCapabilities,
        deleted_at: jiff::Timestamp,
    ) -> GvrDeletion {
        let gr = format!("{}.{}", resource.plural, resource.group);
        let failed = |estimate, error: String| GvrDeletion {
            estimate,
            error: Some(error),
            ..GvrDeletion::default()
        };
        let mut estimate = 0;
        if resource.group.is_empty() && resource.plural == "pods" {
            estimate = match self.estimate_pod_termination(namespace, deleted_at).await {
                Ok(estimate) => estimate,
                Err(error) => return failed(0, error),
            };
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
                Err(err) => {
                    return failed(
                        estimate,
                        format!("failed to delete {gr}: {}", api_error::message(&err)),
                    )
                }
            }
        } else {
            false
        };
        if !caps.supports_operation("list") {
            return GvrDeletion {
                estimate,
                ..GvrDeletion::default()
            };
        }
        if !collection_done {
            let list = match api.list(&ListParams::default()).await {
                Ok(list) => list,
                Err(err) => {
                    return failed(
                        estimate,
                        format!("failed to list {gr}: {}", api_error::message(&err)),
                    )
                }
            };
            for obj in list
                .items
                .iter()
                .filter(|o| o.metadata.deletion_timestamp.is_none())
            {
                let name = obj.metadata.name.clone().unwrap_or_default();
                match api.delete(&name, &dp).await {
                    Ok(_) => {}
                    Err(err) if is_not_found(&err) => {}
                    Err(err) => {
                        return failed(
                            estimate,
                            format!("failed to delete {gr} {name}: {}", api_error::message(&err)),
                        )
                    }
                }
            }
        }
        // Verify what remains: not an error while the estimate says to wait.
        let remaining = match api.list(&ListParams::default()).await {
            Ok(list) => list.items,
            Err(err) => {
                return failed(
                    estimate,
                    format!("failed to list {gr}: {}", api_error::message(&err)),
                )
            }
        };
        if remaining.is_empty() {
            return GvrDeletion::default();
        }
        let mut finalizers = BTreeMap::new();
        for item in &remaining {
            for f in item.metadata.finalizers.iter().flatten() {
                *finalizers.entry(f.clone()).or_insert(0) += 1;
            }
        }
        let remaining = remaining.len();
        if estimate != 0 {
            return GvrDeletion {
                estimate,
                remaining,
                finalizers,
                error: None,
            };
        }
        // Finalizers are a normal reason to wait: give them time to run.
        if !finalizers.is_empty() {
            return GvrDeletion {
                estimate: FINALIZER_ESTIMATE_SECONDS,
                remaining,
                finalizers,
                error: None,
            };
        }
        // Nothing explains what remains (a graceful deletion past its estimate, say): an error,
        // which the queue retries with backoff, as kube does.
        GvrDeletion {
            estimate,
            remaining,
            finalizers,
            error: Some(format!(
                "unexpected items still remain in namespace: {namespace} for gvr: {gr}"
            )),
        }
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
            .map_err(|err| format!("failed to list pods.: {}", api_error::message(&err)))?;
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

    /// Removes our token from `spec.finalizers` through `/finalize`, retrying on conflict as long
    /// as the namespace is the same one (same UID).
    async fn finalize(&self, namespaces: &Api<Namespace>, ns: &Namespace) -> Result<(), Error> {
        let name = ns.metadata.name.clone().unwrap_or_default();
        let uid = ns.metadata.uid.clone();
        let mut ns = ns.clone();
        for _ in 0..FINALIZE_ATTEMPTS {
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
                .replace_subresource("finalize", &name, &PostParams::default(), &ns)
                .await
            {
                Ok(_) => return Ok(()),
                // Finalized by another controller sharing our token: nothing left to do.
                Err(err) if is_not_found(&err) => return Ok(()),
                Err(err) if is_conflict(&err) => {}
                Err(err) => return Err(Self::api_err(&name, "finalizing the namespace")(err)),
            }
            ns = match namespaces.get(&name).await {
                Ok(ns) => ns,
                Err(err) if is_not_found(&err) => return Ok(()),
                Err(err) => return Err(Self::api_err(&name, "re-reading the namespace")(err)),
            };
            if ns.metadata.uid != uid {
                return Err(Error::UidChanged(name));
            }
        }
        Err(Error::Conflicts(name))
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
