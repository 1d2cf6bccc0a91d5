//! The ValidatingAdmissionPolicy status controller against the in-process API server: the cases
//! of kube's `controller_test.go`, with the kinds resolved through the server's discovery and
//! their schemas read from its OpenAPI v3, and a spec change checked again.

mod support;

use anyhow::Result;
use k8s_openapi::api::admissionregistration::v1::{ExpressionWarning, ValidatingAdmissionPolicy};
use kube::api::{Api, Patch, PatchParams, PostParams};
use rkcm_controllers::registry::{ControllerOptions, VALIDATING_ADMISSION_POLICY_STATUS};
use serde_json::json;
use support::{eventually, Cluster};

fn policy(name: &str, expressions: &[&str]) -> ValidatingAdmissionPolicy {
    let validations: Vec<_> = expressions
        .iter()
        .map(|e| json!({"expression": e}))
        .collect();
    serde_json::from_value(json!({
        "metadata": {"name": name},
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

/// The warnings once the status reports `generation`. The controller applies its status
/// (server-side apply, as kube's): a `typeChecking` without warnings is an empty struct in its
/// apply, which structured merge drops once the warnings it owned are gone, so an absent
/// `typeChecking` at the observed generation means no warnings, as on kube.
async fn warnings_at(
    api: &Api<ValidatingAdmissionPolicy>,
    name: &str,
    generation: i64,
) -> Result<Vec<ExpressionWarning>> {
    eventually(&format!("type checking of {name}"), || async {
        let p = api.get(name).await?;
        let status = p.status.unwrap_or_default();
        Ok((status.observed_generation == Some(generation)).then(|| {
            status
                .type_checking
                .and_then(|tc| tc.expression_warnings)
                .unwrap_or_default()
        }))
    })
    .await
}

#[tokio::test]
async fn policies_get_kubes_type_checking_warnings() -> Result<()> {
    let cluster = Cluster::start().await;
    cluster
        .start_registered(
            &[VALIDATING_ADMISSION_POLICY_STATUS],
            ControllerOptions::default(),
        )
        .await?;
    let api: Api<ValidatingAdmissionPolicy> = Api::all(cluster.client.clone());
    let pp = PostParams::default();

    // "deployment with correct expression"
    api.create(
        &pp,
        &policy("replicated-deployment", &["object.spec.replicas > 1"]),
    )
    .await?;
    assert!(warnings_at(&api, "replicated-deployment", 1)
        .await?
        .is_empty());

    // "deployment with type confusion"
    api.create(
        &pp,
        &policy(
            "confused-deployment",
            &["object.spec.replicas < 100", "object.spec.replicas > '1'"],
        ),
    )
    .await?;
    let w = warnings_at(&api, "confused-deployment", 1).await?;
    assert_eq!(w.len(), 1);
    assert_eq!(w[0].field_ref, "spec.validations[1].expression");
    assert_eq!(
        w[0].warning,
        "apps/v1, Kind=Deployment: ERROR: <input>:1:22: found no matching overload for '_>_' applied to '(int, string)'\n | object.spec.replicas > '1'\n | .....................^\n"
    );

    // "two expressions different type checking errors"
    api.create(
        &pp,
        &policy(
            "two-errors",
            &[
                "object.spec.nonExistingFirst > 1",
                "object.spec.replicas > '1'",
            ],
        ),
    )
    .await?;
    let w = warnings_at(&api, "two-errors", 1).await?;
    let refs: Vec<&str> = w.iter().map(|w| w.field_ref.as_str()).collect();
    assert_eq!(
        refs,
        [
            "spec.validations[0].expression",
            "spec.validations[1].expression"
        ]
    );
    assert!(w[0].warning.contains("undefined field 'nonExistingFirst'"));
    assert!(w[1]
        .warning
        .contains("found no matching overload for '_>_' applied to '(int, string)'"));

    // "one expression, two warnings"
    api.create(
        &pp,
        &policy(
            "one-expression-two-warnings",
            &[
                "object.spec.replicas < 100",
                "object.spec.replicas > '1' && object.spec.nonExisting == 1",
            ],
        ),
    )
    .await?;
    let w = warnings_at(&api, "one-expression-two-warnings", 1).await?;
    assert_eq!(w.len(), 1);
    assert_eq!(w[0].field_ref, "spec.validations[1].expression");
    assert!(w[0].warning.contains("undefined field 'nonExisting'"));
    assert!(w[0].warning.contains("'_>_' applied to '(int, string)'"));

    // A fixed spec is a new generation: checked again, and the old warning goes.
    api.patch(
        "confused-deployment",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"validations": [
            {"expression": "object.spec.replicas < 100"},
            {"expression": "object.spec.replicas > 1"}
        ]}})),
    )
    .await?;
    assert!(warnings_at(&api, "confused-deployment", 2)
        .await?
        .is_empty());

    // Kinds the server does not serve are not checked at all.
    let mut unknown = policy("unknown-kind", &["object.whatever == 1"]);
    unknown.spec.as_mut().unwrap().match_constraints = serde_json::from_value(json!({
        "resourceRules": [{"apiGroups": ["example.com"], "apiVersions": ["v1"], "resources": ["widgets"], "operations": ["*"]}]
    }))?;
    api.create(&pp, &unknown).await?;
    assert!(warnings_at(&api, "unknown-kind", 1).await?.is_empty());

    cluster.stop().await;
    Ok(())
}
