//! `ValidatingAdmissionPolicy`: the writes a stored ValidatingAdmissionPolicy and one of its
//! ValidatingAdmissionPolicyBindings match are checked by the policy's CEL validations, with
//! the binding's params; a failed validation is denied, warned about or only recorded as the
//! binding's `validationActions` say.
//!
//! Mirrors `staging/src/k8s.io/apiserver/pkg/admission/plugin/policy/validating` and the
//! matching of `policy/generic` and `policy/matching`. Policies and bindings are read from
//! caches fed by the watch cache ([`source`]); a server without any pays two revision checks
//! per write. `matchPolicy: Equivalent` is taken as `Exact`; the `authorizer` variable asks the
//! server's authorizer about the request's user; `auditAnnotations` are not evaluated and the `Audit` action records nothing (there
//! is no audit log).

pub mod policy;
pub mod source;

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value as Json;

use rkcm_apimachinery::catalog::{self, ResourceInfo};
use rkcm_labels::Selector;
use rkcm_server::admission::attributes::{forbidden, Attributes, Operation};
use rkcm_server::admission::plugin::Plugin;
use rkcm_server::auth::authorization::Authorize;
use rkcm_server::error::{ApiError, ApiResult, Cause};
use rkcm_storage::store::Store;

use crate::admission::cel_authorizer;
use crate::admission::plugins::VALIDATING_ADMISSION_POLICY;
use crate::admission::webhook::matching::is_exempt;
use crate::admission::webhook::review;

use policy::{Binding, Decision, Input, Policy};
use source::Source;

/// A denial: its message and `reason`, and who decided it.
#[derive(Debug, PartialEq, Eq)]
pub struct Denial {
    /// The policy's name.
    pub policy: String,
    /// The binding's name; `None` for a policy that could not be set up.
    pub binding: Option<String>,
    /// Why.
    pub message: String,
    /// `reason`; empty is `Invalid`.
    pub reason: String,
}

/// The HTTP status of a validation's `reason` (`reasonToCode`).
fn reason_to_status(reason: &str) -> (u16, &'static str) {
    match reason {
        "Forbidden" => (403, "Forbidden"),
        "Unauthorized" => (401, "Unauthorized"),
        "RequestEntityTooLarge" => (413, "RequestEntityTooLarge"),
        _ => (422, "Invalid"),
    }
}

/// The error the client gets for `denial` (`dispatcher.Dispatch`): `admission.NewForbidden`'s
/// message, with the code and reason of the validation's `reason` and the message again as a
/// cause.
pub fn denied(attrs: &Attributes, denial: &Denial) -> ApiError {
    let message = match &denial.binding {
        Some(binding) => format!(
            "ValidatingAdmissionPolicy '{}' with binding '{}' denied request: {}",
            denial.policy, binding, denial.message
        ),
        None => format!(
            "ValidatingAdmissionPolicy '{}' denied request: {}",
            denial.policy, denial.message
        ),
    };
    let mut e = forbidden(attrs, &message);
    let (code, reason) = reason_to_status(&denial.reason);
    e.code = code;
    e.reason = reason;
    e.details.causes.push(Cause {
        reason: String::new(),
        message,
        field: String::new(),
    });
    e
}

/// The warning of a failed validation under a binding with `validationActions: [Warn]`.
pub fn warning(policy: &str, binding: &str, message: &str) -> String {
    format!("Validation failed for ValidatingAdmissionPolicy '{policy}' with binding '{binding}': {message}")
}

/// The labels of namespace `name` as stored.
fn stored_namespace(store: &Store, name: &str) -> Option<Json> {
    let info = catalog::by_kind("v1", "Namespace")?;
    Some(
        store
            .get(&rkcm_server::rest::key(info, None, name))?
            .value(),
    )
}

/// The params of `binding` for a request in `namespace` (`generic.CollectParams`): `None` in
/// the list stands for "no params" (a policy without `paramKind` or a binding without
/// `paramRef`); an error is the binding's configuration error.
fn collect_params(
    store: &Store,
    policy: &Policy,
    param_info: Option<&'static ResourceInfo>,
    binding: &Binding,
    namespace: &str,
) -> Result<Vec<Option<Json>>, String> {
    let (Some(kind), Some(param_ref)) = (&policy.param_kind, &binding.param_ref) else {
        return Ok(vec![None]);
    };
    let Some(info) = param_info else {
        return Err(format!(
            "paramKind kind `{}, Kind={}` not known",
            kind.api_version, kind.kind
        ));
    };
    let params_namespace = if info.namespaced() {
        if !param_ref.namespace.is_empty() {
            Some(param_ref.namespace.as_str())
        } else if namespace.is_empty() {
            return Err(
                "cannot use namespaced paramRef in policy binding that matches cluster-scoped resources"
                    .to_string(),
            );
        } else {
            Some(namespace)
        }
    } else {
        if !param_ref.namespace.is_empty() {
            return Err(
                "paramRef.namespace must not be provided for a cluster-scoped `paramKind`"
                    .to_string(),
            );
        }
        None
    };
    let mut params = Vec::new();
    if !param_ref.name.is_empty() {
        if param_ref.selector.is_some() {
            return Err("paramRef.name and paramRef.selector are mutually exclusive".to_string());
        }
        let key = rkcm_server::rest::key(info, params_namespace, &param_ref.name);
        if let Some(obj) = store.get(&key) {
            params.push(Some(obj.value()));
        }
    } else if let Some(selector) = &param_ref.selector {
        let selector: &Selector = selector.as_ref().map_err(String::clone)?;
        let prefix = rkcm_server::rest::prefix(info, params_namespace);
        let (items, _, _) = store.cache().list(&prefix, None, 0, &|_| true);
        params.extend(
            items
                .iter()
                .map(|o| o.value())
                .filter(|v| selector.matches(&rkcm_storage::object::labels(v)))
                .map(Some),
        );
    }
    if params.is_empty() && !param_ref.allow_not_found {
        return Err(
            "no params found for policy binding with `Deny` parameterNotFoundAction".into(),
        );
    }
    Ok(params)
}

/// The resource of a policy's `paramKind`, or kube's configuration error.
fn param_resource(policy: &Policy) -> Result<Option<&'static ResourceInfo>, String> {
    let Some(kind) = &policy.param_kind else {
        return Ok(None);
    };
    match catalog::by_kind(&kind.api_version, &kind.kind) {
        Some(info) => Ok(Some(info)),
        None => {
            let (group, version) = kind
                .api_version
                .rsplit_once('/')
                .unwrap_or(("", &kind.api_version));
            Err(format!(
                "failed to find resource referenced by paramKind: '{group}/{version}, Kind={}'",
                kind.kind
            ))
        }
    }
}

/// `ValidatingAdmissionPolicy`.
pub struct ValidatingAdmissionPolicy {
    store: Store,
    policies: Arc<Source<Policy>>,
    bindings: Arc<Source<Binding>>,
    authorizer: Option<Arc<dyn Authorize>>,
}

impl ValidatingAdmissionPolicy {
    /// The plugin, reading policies, bindings, params and namespaces from `store`.
    pub fn new(store: Store) -> Self {
        let policies = Source::new(store.clone(), "ValidatingAdmissionPolicy", Policy::decode);
        let bindings = Source::new(
            store.clone(),
            "ValidatingAdmissionPolicyBinding",
            Binding::decode,
        );
        Self {
            store,
            policies,
            bindings,
            authorizer: None,
        }
    }

    /// The plugin with `authorizer` answering the expressions' `authorizer` variable.
    pub fn with_authorizer(self, authorizer: Option<Arc<dyn Authorize>>) -> Self {
        Self { authorizer, ..self }
    }

    /// Every denial of the request, in policy then binding name order; warnings are sent as
    /// they are found.
    pub fn evaluate(&self, attrs: &Attributes) -> ApiResult<Vec<Denial>> {
        let bindings = self.bindings.all();
        if bindings.is_empty() || is_exempt(attrs) {
            return Ok(Vec::new());
        }
        let policies = self.policies.all();
        let labels = |name: &str| {
            stored_namespace(&self.store, name).map(|ns| rkcm_storage::object::labels(&ns))
        };
        let mut denials = Vec::new();
        let mut request: Option<Json> = None;
        for policy in policies.iter() {
            let bound: Vec<&Arc<Binding>> = bindings
                .iter()
                .filter(|b| b.policy_name == policy.name)
                .collect();
            if bound.is_empty() {
                continue;
            }
            let config_error = |message: String, binding: Option<&str>| {
                if policy.ignores_failures() {
                    return None;
                }
                let message = match (policy.failure_policy.as_str(), binding) {
                    ("Fail", None) => format!("failed to configure policy: {message}"),
                    ("Fail", Some(_)) => format!("failed to configure binding: {message}"),
                    (other, _) => format!("unrecognized failure policy: '{other}'"),
                };
                Some(Denial {
                    policy: policy.name.clone(),
                    binding: binding.map(str::to_string),
                    message,
                    reason: String::new(),
                })
            };
            if !policy.match_constraints.matches(attrs, &labels)? {
                continue;
            }
            let param_info = match param_resource(policy) {
                Ok(info) => info,
                Err(e) => {
                    denials.extend(config_error(e, None));
                    continue;
                }
            };
            for binding in bound {
                match binding.matches(attrs, &labels) {
                    Ok(true) => {}
                    Ok(false) => continue,
                    Err(e) => {
                        denials.extend(config_error(e.message, Some(&binding.name)));
                        continue;
                    }
                }
                let params = match collect_params(
                    &self.store,
                    policy,
                    param_info,
                    binding,
                    &attrs.namespace,
                ) {
                    Ok(p) => p,
                    Err(e) => {
                        denials.extend(config_error(e, Some(&binding.name)));
                        continue;
                    }
                };
                // The namespace object has no namespace of its own here.
                let namespace_object = if attrs.namespace.is_empty()
                    || (attrs.kind.group.is_empty() && attrs.kind.kind == "Namespace")
                {
                    None
                } else {
                    match stored_namespace(&self.store, &attrs.namespace) {
                        Some(ns) => Some(namespace_object(&ns)),
                        None => {
                            return Err(ApiError::not_found(
                                catalog::by_kind("v1", "Namespace")
                                    .ok_or_else(|| ApiError::internal("catalog", "namespaces"))?,
                                &attrs.namespace,
                            ))
                        }
                    }
                };
                let request = request.get_or_insert_with(|| admission_request(attrs));
                for param in &params {
                    let input = Input {
                        object: attrs.object(),
                        old_object: attrs.old_object(),
                        request,
                        params: param.as_ref(),
                        namespace_object: namespace_object.as_ref(),
                        authorizer: cel_authorizer::variables(self.authorizer.as_ref(), attrs),
                    };
                    for decision in policy::validate(policy, &input) {
                        let Decision::Deny { message, reason } = decision else {
                            continue;
                        };
                        for action in &binding.validation_actions {
                            match action.as_str() {
                                "Deny" => denials.push(Denial {
                                    policy: policy.name.clone(),
                                    binding: Some(binding.name.clone()),
                                    message: message.clone(),
                                    reason: reason.clone(),
                                }),
                                "Warn" => rkcm_server::warning::add(warning(
                                    &policy.name,
                                    &binding.name,
                                    &message,
                                )),
                                // No audit log to annotate.
                                _ => {}
                            }
                        }
                    }
                }
            }
        }
        Ok(denials)
    }
}

/// The `namespaceObject` variable (`cel.CreateNamespaceObject`): the namespace's spec, status
/// and the metadata fields kube exposes.
fn namespace_object(ns: &Json) -> Json {
    const FIELDS: &[&str] = &[
        "name",
        "generateName",
        "namespace",
        "labels",
        "annotations",
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
    ];
    let metadata: serde_json::Map<String, Json> = ns
        .get("metadata")
        .and_then(Json::as_object)
        .map(|m| {
            m.iter()
                .filter(|(k, _)| FIELDS.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default();
    let mut out = serde_json::Map::new();
    out.insert("metadata".into(), Json::Object(metadata));
    for field in ["spec", "status"] {
        if let Some(v) = ns.get(field) {
            out.insert(field.into(), v.clone());
        }
    }
    Json::Object(out)
}

/// The `request` variable: the admission request without its objects.
fn admission_request(attrs: &Attributes) -> Json {
    let mut request = review::request(attrs, attrs, "", "v1")["request"].take();
    if let Some(r) = request.as_object_mut() {
        r.remove("object");
        r.remove("oldObject");
    }
    request
}

#[async_trait]
impl Plugin for ValidatingAdmissionPolicy {
    fn name(&self) -> &'static str {
        VALIDATING_ADMISSION_POLICY
    }

    fn handles(&self, _operation: Operation) -> bool {
        true
    }

    async fn validate(&self, attrs: &Attributes) -> ApiResult<()> {
        match self.evaluate(attrs)?.first() {
            Some(denial) => Err(denied(attrs, denial)),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rkcm_server::auth::UserInfo;
    use rkcm_storage::memory::MemoryBackend;
    use serde_json::json;

    fn key(api_version: &str, kind: &str, namespace: Option<&str>, name: &str) -> String {
        let info = catalog::by_kind(api_version, kind).expect("in the catalog");
        rkcm_server::rest::key(info, namespace, name)
    }

    async fn store() -> Store {
        let store = Store::new(Arc::new(MemoryBackend::new()), 100)
            .await
            .expect("memory store");
        store
            .create(
                &key("v1", "Namespace", None, "ns"),
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}}),
            )
            .await
            .expect("namespace");
        store
            .create(
                &key("v1", "ConfigMap", Some("ns"), "limits"),
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "limits", "namespace": "ns", "labels": {"use": "limits"}}, "data": {"maxReplicas": "5"}}),
            )
            .await
            .expect("params");
        store
            .create(
                &key("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy", None, "max-replicas"),
                json!({"metadata": {"name": "max-replicas"}, "spec": {
                    "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
                    "matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]}]},
                    "validations": [{"expression": "object.spec.replicas <= int(params.data.maxReplicas)", "messageExpression": "'at most ' + params.data.maxReplicas + ' replicas'"}],
                }}),
            )
            .await
            .expect("policy");
        store
    }

    async fn bind(store: &Store, name: &str, param_ref: Json, actions: &[&str]) {
        store
            .create(
                &key("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding", None, name),
                json!({"metadata": {"name": name}, "spec": {"policyName": "max-replicas", "paramRef": param_ref, "validationActions": actions}}),
            )
            .await
            .expect("binding");
    }

    fn deployment(replicas: i64) -> Attributes {
        Attributes::new(
            Operation::Create,
            catalog::by_kind("apps/v1", "Deployment").expect("deployments"),
            "",
            Some("ns"),
            "web",
            Some(json!({"metadata": {"name": "web"}, "spec": {"replicas": replicas}})),
            None,
            Arc::new(UserInfo::default()),
            false,
        )
    }

    #[tokio::test]
    async fn a_bound_policy_denies_with_kubes_status_and_warns() {
        let store = store().await;
        let plugin = ValidatingAdmissionPolicy::new(store.clone());
        plugin
            .validate(&deployment(9))
            .await
            .expect("no binding, no policy");
        bind(
            &store,
            "deny",
            json!({"name": "limits", "parameterNotFoundAction": "Deny"}),
            &["Deny"],
        )
        .await;
        plugin
            .validate(&deployment(5))
            .await
            .expect("within the limit");
        let e = plugin.validate(&deployment(9)).await.expect_err("denied");
        assert_eq!(e.code, 422);
        assert_eq!(e.reason, "Invalid");
        let message = "ValidatingAdmissionPolicy 'max-replicas' with binding 'deny' denied request: at most 5 replicas";
        assert_eq!(
            e.message,
            format!("deployments.apps \"web\" is forbidden: {message}")
        );
        assert_eq!(e.details.causes.len(), 1);
        assert_eq!(e.details.causes[0].message, message);

        bind(
            &store,
            "warn",
            json!({"selector": {"matchLabels": {"use": "limits"}}}),
            &["Warn", "Audit"],
        )
        .await;
        let (result, warnings) = rkcm_server::warning::scope(plugin.validate(&deployment(9))).await;
        assert!(result.is_err());
        assert_eq!(
            warnings,
            ["Validation failed for ValidatingAdmissionPolicy 'max-replicas' with binding 'warn': at most 5 replicas"]
        );
    }

    #[tokio::test]
    async fn missing_params_deny_or_allow_as_the_binding_says() {
        let store = store().await;
        let plugin = ValidatingAdmissionPolicy::new(store.clone());
        bind(
            &store,
            "allow",
            json!({"name": "nope", "parameterNotFoundAction": "Allow"}),
            &["Deny"],
        )
        .await;
        plugin
            .validate(&deployment(9))
            .await
            .expect("allowed without params");
        bind(
            &store,
            "strict",
            json!({"name": "nope", "parameterNotFoundAction": "Deny"}),
            &["Deny"],
        )
        .await;
        let e = plugin.validate(&deployment(1)).await.expect_err("denied");
        assert_eq!(e.code, 422);
        assert_eq!(
            e.message,
            "deployments.apps \"web\" is forbidden: ValidatingAdmissionPolicy 'max-replicas' with binding 'strict' denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"
        );
    }

    #[test]
    fn reasons_give_their_status_codes() {
        let attrs = deployment(1);
        let denial = |reason: &str| Denial {
            policy: "p".into(),
            binding: Some("b".into()),
            message: "m".into(),
            reason: reason.into(),
        };
        for (reason, code) in [
            ("", 422),
            ("Invalid", 422),
            ("Forbidden", 403),
            ("Unauthorized", 401),
            ("RequestEntityTooLarge", 413),
        ] {
            assert_eq!(denied(&attrs, &denial(reason)).code, code, "{reason}");
        }
        let no_binding = Denial {
            binding: None,
            ..denial("")
        };
        assert_eq!(
            denied(&attrs, &no_binding).message,
            "deployments.apps \"web\" is forbidden: ValidatingAdmissionPolicy 'p' denied request: m"
        );
    }
}
