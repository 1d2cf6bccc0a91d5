//! The ValidatingAdmissionPolicy status controller: every policy whose `metadata.generation` is
//! newer than `status.observedGeneration` gets its expressions type-checked against the kinds it
//! matches, and `status.typeChecking.expressionWarnings` and `status.observedGeneration` written.
//!
//! Mirrors `pkg/controller/validatingadmissionpolicystatus/controller.go`; the checker is
//! [`typechecking`] over rkcm's own CEL parser and checker (`rkcm-cel`), with the kinds resolved
//! through discovery and their schemas read from the server's OpenAPI v3 ([`resolver`]).

pub use rkcm_cel as cel;
pub mod decltype;
pub mod resolver;
pub mod typechecking;

use std::sync::Arc;

use k8s_openapi::api::admissionregistration::v1::{ExpressionWarning, ValidatingAdmissionPolicy};
use kube::api::{Api, Patch, PatchParams};
use rkcm_runtime::informer::{wait_for_cache_sync, InformerFactory, Notification, SharedInformer};
use rkcm_runtime::workqueue::RateLimitingQueue;
use rkcm_runtime::{api_error, worker, ObjectKey, Shutdown};

use resolver::Resolver;
use typechecking::{params_gvk, rule_resources, Context};

/// Name of the controller (`--controllers`), also its field manager.
pub const CONTROLLER_NAME: &str = "validatingadmissionpolicy-status-controller";
/// Name of the work queue (`validatingadmissionpolicy-status`).
const QUEUE_NAME: &str = "validatingadmissionpolicy-status";

/// Why a policy's status could not be written; it is retried with backoff.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Discovery or OpenAPI could not be read.
    #[error("failed to resolve the types of ValidatingAdmissionPolicy {policy}")]
    Resolve {
        /// The policy.
        policy: String,
        /// Why.
        #[source]
        source: resolver::Error,
    },
    /// Writing the status failed.
    #[error("failed to update the status of ValidatingAdmissionPolicy {policy}")]
    Write {
        /// The policy.
        policy: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
}

/// Whether the policy's status is behind its spec (`reconcile`'s first test).
pub fn needs_check(policy: &ValidatingAdmissionPolicy) -> bool {
    let generation = policy.metadata.generation.unwrap_or(0);
    let observed = policy
        .status
        .as_ref()
        .and_then(|s| s.observed_generation)
        .unwrap_or(0);
    generation > observed
}

/// The status kube applies: observed generation and the warnings (none: an empty
/// `typeChecking`).
pub fn status_patch(
    name: &str,
    generation: i64,
    warnings: &[ExpressionWarning],
) -> serde_json::Value {
    let type_checking = if warnings.is_empty() {
        serde_json::json!({})
    } else {
        serde_json::json!({ "expressionWarnings": warnings })
    };
    serde_json::json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "status": {"observedGeneration": generation, "typeChecking": type_checking},
    })
}

/// Keeps ValidatingAdmissionPolicies' type-checking status.
pub struct ValidatingAdmissionPolicyStatusController {
    client: kube::Client,
    queue: RateLimitingQueue<String>,
    policies: SharedInformer<ValidatingAdmissionPolicy>,
}

impl ValidatingAdmissionPolicyStatusController {
    /// Registers the controller's handler on the factory's policy informer.
    pub fn new(factory: &InformerFactory, client: kube::Client) -> Arc<Self> {
        let queue = RateLimitingQueue::new(QUEUE_NAME);
        let policies = factory.informer::<ValidatingAdmissionPolicy>();
        let q = queue.clone();
        // Adds and updates queue the policy by name (policies are cluster-scoped); deletions
        // need nothing.
        policies.add_event_handler(move |note: Notification<ValidatingAdmissionPolicy>| {
            let policy = match &note {
                Notification::Add(p) => p,
                Notification::Update { new, .. } => new,
                Notification::Delete(_) => return,
            };
            if let Some(name) = &policy.metadata.name {
                q.add(name.clone());
            }
        });
        Arc::new(Self {
            client,
            queue,
            policies,
        })
    }

    /// Runs `workers` sync loops until `shutdown`.
    pub async fn run(self: Arc<Self>, workers: usize, shutdown: Shutdown) {
        tracing::info!(controller = CONTROLLER_NAME, "starting controller");
        if wait_for_cache_sync(CONTROLLER_NAME, &[&self.policies], &shutdown).await {
            let this = Arc::clone(&self);
            worker::run(
                self.queue.clone(),
                workers.max(1),
                shutdown,
                worker::ErrorPolicy::handle_error(),
                move |name| {
                    let this = Arc::clone(&this);
                    async move { this.sync(&name).await }
                },
            )
            .await;
        }
        self.queue.shutdown();
        tracing::info!(controller = CONTROLLER_NAME, "shutting down controller");
    }

    /// Resolves the kinds and schemas the policy is checked against (`CreateContext`).
    async fn context(
        &self,
        policy: &ValidatingAdmissionPolicy,
    ) -> Result<Context, resolver::Error> {
        let mut resolver = Resolver::new(self.client.clone());
        // Resolve every resource the rules name first, then pick kinds as kube does.
        let mut mapping = std::collections::HashMap::new();
        for triples in rule_resources(policy) {
            for (g, v, r) in triples {
                let kinds = resolver.kinds_for(&g, &v, &r).await?;
                mapping.insert((g, v, r), kinds);
            }
        }
        let gvks = typechecking::types_to_check(policy, |g, v, r| {
            mapping
                .get(&(g.to_string(), v.to_string(), r.to_string()))
                .cloned()
                .unwrap_or_default()
        });
        let mut objects = Vec::new();
        for gvk in gvks {
            // A kind without a schema is not checked (kube skips ErrSchemaNotFound).
            if let Some(t) = resolver.object_type(&gvk).await? {
                objects.push((gvk, t));
            }
        }
        let params = match params_gvk(policy) {
            None => None,
            // A paramKind whose schema is not published is `dyn`, so no expression using it
            // is refused for want of a schema.
            Some(gvk) => Some(resolver.object_type(&gvk).await?.unwrap_or(cel::Type::Dyn)),
        };
        Ok(Context { objects, params })
    }

    /// Type-checks policy `name` and writes its status if its generation is unobserved.
    pub async fn sync(&self, name: &str) -> Result<(), Error> {
        let Some(policy) = self.policies.store().get(&ObjectKey::cluster(name)) else {
            return Ok(());
        };
        if !needs_check(&policy) {
            return Ok(());
        }
        let ctx = self
            .context(&policy)
            .await
            .map_err(|source| Error::Resolve {
                policy: name.to_string(),
                source,
            })?;
        let warnings = typechecking::check(&policy, &ctx);
        let generation = policy.metadata.generation.unwrap_or(0);
        let patch = status_patch(name, generation, &warnings);
        let api: Api<ValidatingAdmissionPolicy> = Api::all(self.client.clone());
        let write = |source| Error::Write {
            policy: name.to_string(),
            source,
        };
        let params = PatchParams::apply(CONTROLLER_NAME).force();
        match api.patch_status(name, &params, &Patch::Apply(&patch)).await {
            Ok(_) => Ok(()),
            // Without server-side apply, a merge patch of the same status; warnings from an
            // earlier generation are removed with `null`.
            Err(e) if api_error::has_code(&e, 415) => {
                let mut merge = patch.clone();
                if warnings.is_empty() {
                    merge["status"]["typeChecking"] =
                        serde_json::json!({"expressionWarnings": null});
                }
                api.patch_status(name, &PatchParams::default(), &Patch::Merge(&merge))
                    .await
                    .map(|_| ())
                    .map_err(write)
            }
            Err(e) => Err(write(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::admissionregistration::v1::ValidatingAdmissionPolicyStatus;
    use kube::api::ObjectMeta;

    fn policy(generation: Option<i64>, observed: Option<i64>) -> ValidatingAdmissionPolicy {
        ValidatingAdmissionPolicy {
            metadata: ObjectMeta {
                name: Some("p".into()),
                generation,
                ..Default::default()
            },
            status: observed.map(|o| ValidatingAdmissionPolicyStatus {
                observed_generation: Some(o),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    /// The context the controller builds for a policy on deployments, from the apps/v1 OpenAPI
    /// document the server publishes.
    fn deployment_context() -> Context {
        let doc: serde_json::Value = serde_json::from_slice(
            rkcm_apimachinery::openapi::v3_document("apis/apps/v1").expect("apps/v1 is served"),
        )
        .expect("JSON");
        let gvk = typechecking::Gvk::new("apps", "v1", "Deployment");
        let t = resolver::object_type_in(&doc, &gvk).expect("Deployment has a schema");
        Context {
            objects: vec![(gvk, t)],
            params: None,
        }
    }

    fn deployment_policy(expressions: &[&str]) -> ValidatingAdmissionPolicy {
        let validations: Vec<_> = expressions
            .iter()
            .map(|e| serde_json::json!({"expression": e}))
            .collect();
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p", "generation": 1},
            "spec": {
                "matchConstraints": {"resourceRules": [{
                    "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments"],
                    "operations": ["*"]
                }]},
                "validations": validations,
            }
        }))
        .expect("a policy")
    }

    #[test]
    fn type_checking_cases_of_kubes_controller_test() {
        // TestTypeChecking in controller_test.go, against the served Deployment schema.
        let ctx = deployment_context();
        let check = |e: &[&str]| typechecking::check(&deployment_policy(e), &ctx);
        assert!(
            check(&["object.spec.replicas > 1"]).is_empty(),
            "correct expression"
        );

        let w = check(&["object.spec.replicas < 100", "object.spec.replicas > '1'"]);
        assert_eq!(w.len(), 1, "type confusion");
        assert_eq!(w[0].field_ref, "spec.validations[1].expression");
        assert!(w[0]
            .warning
            .contains("found no matching overload for '_>_' applied to '(int, string)'"));

        let w = check(&[
            "object.spec.nonExistingFirst > 1",
            "object.spec.replicas > '1'",
        ]);
        let refs: Vec<&str> = w.iter().map(|w| w.field_ref.as_str()).collect();
        assert_eq!(
            refs,
            [
                "spec.validations[0].expression",
                "spec.validations[1].expression"
            ],
            "two expressions, different errors"
        );
        assert!(w[0].warning.contains("undefined field 'nonExistingFirst'"));
        assert!(w[1].warning.contains("'_>_' applied to '(int, string)'"));

        let w = check(&[
            "object.spec.replicas < 100",
            "object.spec.replicas > '1' && object.spec.nonExisting == 1",
        ]);
        assert_eq!(w.len(), 1, "one expression, two warnings");
        assert_eq!(w[0].field_ref, "spec.validations[1].expression");
        assert!(w[0].warning.contains("undefined field 'nonExisting'"));
        assert!(w[0].warning.contains("'_>_' applied to '(int, string)'"));
    }

    #[test]
    fn real_world_deployment_expressions_pass() {
        let ctx = deployment_context();
        for e in [
            "object.metadata.name.startsWith('web-')",
            "has(object.metadata.labels) && 'app' in object.metadata.labels",
            "object.spec.template.spec.containers.all(c, !c.image.endsWith(':latest'))",
            "object.spec.template.spec.containers.all(c, has(c.resources.limits) && 'memory' in c.resources.limits)",
            "object.spec.strategy.rollingUpdate.maxSurge == '25%' || object.spec.strategy.rollingUpdate.maxSurge == 1",
            "object.spec.template.spec.containers.exists(c, c.ports.exists(p, p.containerPort == 8080))",
            "object.metadata.creationTimestamp == null || object.spec.minReadySeconds >= 0",
            "request.userInfo.groups.exists(g, g == 'system:masters') || request.operation == 'CREATE'",
            "object.spec.replicas <= oldObject.spec.replicas + 2",
            "object.apiVersion == 'apps/v1' && object.kind == 'Deployment'",
        ] {
            let w = typechecking::check(&deployment_policy(&[e]), &ctx);
            assert!(w.is_empty(), "{e}: {w:?}");
        }
    }

    #[test]
    fn only_unobserved_generations_are_checked() {
        assert!(needs_check(&policy(Some(1), None)));
        assert!(needs_check(&policy(Some(2), Some(1))));
        assert!(!needs_check(&policy(Some(1), Some(1))));
        assert!(!needs_check(&policy(None, None)));
    }

    #[test]
    fn the_status_carries_the_generation_and_the_warnings() {
        let w = ExpressionWarning {
            field_ref: "spec.validations[0].expression".into(),
            warning: "x".into(),
        };
        let p = status_patch("p", 3, std::slice::from_ref(&w));
        assert_eq!(p["status"]["observedGeneration"], 3);
        assert_eq!(
            p["status"]["typeChecking"]["expressionWarnings"][0]["fieldRef"],
            "spec.validations[0].expression"
        );
        assert_eq!(
            status_patch("p", 1, &[])["status"]["typeChecking"],
            serde_json::json!({})
        );
    }
}
