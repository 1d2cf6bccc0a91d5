//! A ValidatingAdmissionPolicy and a ValidatingAdmissionPolicyBinding, decoded once when they
//! change, with kube's defaults; which requests they match (`matching.Matcher.Matches`, with
//! `matchPolicy` taken as `Exact`); and the evaluation of a policy's validations
//! (`validating/validator.go`).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use cel::objects::{Key, Map};
use cel::{Context, Value};
use serde_json::Value as Json;

use rkcm_apiextensions::cel::{library, to_value};
use rkcm_labels::Selector;
use rkcm_server::admission::attributes::Attributes;
use rkcm_server::error::ApiResult;

use crate::admission::webhook::hook::{selector, str_of, strings, Rule};
use crate::admission::webhook::match_conditions::{self, Compiled, Verdict};
use crate::admission::webhook::matching::{
    namespace_selector_matches, object_selector_matches, rule_matches,
};

/// One rule of `resourceRules` or `excludeResourceRules` (`NamedRuleWithOperations`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NamedRule {
    /// The rule.
    pub rule: Rule,
    /// `resourceNames`; empty matches every name.
    pub resource_names: Vec<String>,
}

/// `matchConstraints` of a policy or `matchResources` of a binding (`MatchResources`).
#[derive(Debug)]
pub struct MatchResources {
    /// `namespaceSelector`, or why it does not parse.
    pub namespace_selector: Result<Selector, String>,
    /// Whether `namespaceSelector` selects everything.
    pub namespace_selector_empty: bool,
    /// `objectSelector`, or why it does not parse.
    pub object_selector: Result<Selector, String>,
    /// Whether `objectSelector` selects everything.
    pub object_selector_empty: bool,
    /// `resourceRules`; empty matches every resource.
    pub resource_rules: Vec<NamedRule>,
    /// `excludeResourceRules`.
    pub exclude_resource_rules: Vec<NamedRule>,
}

fn named_rules(v: Option<&Json>) -> Vec<NamedRule> {
    v.and_then(Json::as_array)
        .map(|rules| {
            rules
                .iter()
                .map(|r| NamedRule {
                    rule: Rule {
                        operations: strings(r.get("operations")),
                        api_groups: strings(r.get("apiGroups")),
                        api_versions: strings(r.get("apiVersions")),
                        resources: strings(r.get("resources")),
                        scope: str_of(r, "scope").unwrap_or("*").to_string(),
                    },
                    resource_names: strings(r.get("resourceNames")),
                })
                .collect()
        })
        .unwrap_or_default()
}

impl MatchResources {
    /// `v`, a `MatchResources` object.
    pub fn decode(v: &Json) -> Self {
        let (namespace_selector, namespace_selector_empty) = selector(v.get("namespaceSelector"));
        let (object_selector, object_selector_empty) = selector(v.get("objectSelector"));
        Self {
            namespace_selector,
            namespace_selector_empty,
            object_selector,
            object_selector_empty,
            resource_rules: named_rules(v.get("resourceRules")),
            exclude_resource_rules: named_rules(v.get("excludeResourceRules")),
        }
    }

    /// Whether the request matches (`matching.Matcher.Matches`): the selectors' errors only
    /// count when the rules match.
    pub fn matches(
        &self,
        attrs: &Attributes,
        stored: &dyn Fn(&str) -> Option<BTreeMap<String, String>>,
    ) -> ApiResult<bool> {
        let ns = namespace_selector_matches(
            &self.namespace_selector,
            self.namespace_selector_empty,
            attrs,
            stored,
        );
        if matches!(ns, Ok(false)) {
            return Ok(false);
        }
        let obj = object_selector_matches(&self.object_selector, self.object_selector_empty, attrs);
        if matches!(obj, Ok(false)) {
            return Ok(false);
        }
        if rules_match(&self.exclude_resource_rules, attrs) {
            return Ok(false);
        }
        if !self.resource_rules.is_empty() && !rules_match(&self.resource_rules, attrs) {
            return Ok(false);
        }
        ns?;
        obj?;
        Ok(true)
    }
}

/// Whether one of `rules` matches the request and names its object, if it names any
/// (`matchesResourceRules` for `matchPolicy: Exact`).
pub fn rules_match(rules: &[NamedRule], attrs: &Attributes) -> bool {
    rules.iter().any(|r| {
        rule_matches(&r.rule, attrs)
            && (r.resource_names.is_empty() || r.resource_names.contains(&attrs.name))
    })
}

/// `paramKind`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamKind {
    /// `apiVersion`.
    pub api_version: String,
    /// `kind`.
    pub kind: String,
}

/// One of `validations`.
#[derive(Debug)]
pub struct Validation {
    /// `expression`, compiled.
    pub expression: Compiled,
    /// `message`.
    pub message: String,
    /// `messageExpression`, compiled.
    pub message_expression: Option<Compiled>,
    /// `reason`; `Invalid` when unset.
    pub reason: Option<String>,
}

/// A ValidatingAdmissionPolicy.
#[derive(Debug)]
pub struct Policy {
    /// `metadata.name`.
    pub name: String,
    /// `spec.paramKind`.
    pub param_kind: Option<ParamKind>,
    /// `spec.matchConstraints`.
    pub match_constraints: MatchResources,
    /// `spec.failurePolicy`: `Fail` (the default) or `Ignore`.
    pub failure_policy: String,
    /// `spec.matchConditions`, compiled.
    pub match_conditions: Vec<Compiled>,
    /// `spec.variables`, compiled, in order.
    pub variables: Vec<Compiled>,
    /// `spec.validations`.
    pub validations: Vec<Validation>,
}

fn compiled_list(v: Option<&Json>, name_key: &str) -> Vec<Compiled> {
    v.and_then(Json::as_array)
        .map(|items| {
            items
                .iter()
                .map(|c| {
                    Compiled::new(
                        str_of(c, name_key).unwrap_or_default(),
                        str_of(c, "expression").unwrap_or_default(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

impl Policy {
    /// The stored policy `obj`.
    pub fn decode(obj: &Json) -> Self {
        let spec = obj.get("spec").cloned().unwrap_or(Json::Null);
        let param_kind = spec
            .get("paramKind")
            .filter(|p| p.is_object())
            .map(|p| ParamKind {
                api_version: str_of(p, "apiVersion").unwrap_or_default().to_string(),
                kind: str_of(p, "kind").unwrap_or_default().to_string(),
            });
        let validations = spec
            .get("validations")
            .and_then(Json::as_array)
            .map(|vs| {
                vs.iter()
                    .map(|v| Validation {
                        expression: Compiled::new("", str_of(v, "expression").unwrap_or_default()),
                        message: str_of(v, "message").unwrap_or_default().to_string(),
                        message_expression: str_of(v, "messageExpression")
                            .filter(|e| !e.is_empty())
                            .map(|e| Compiled::new("", e)),
                        reason: str_of(v, "reason")
                            .filter(|r| !r.is_empty())
                            .map(str::to_string),
                    })
                    .collect()
            })
            .unwrap_or_default();
        Self {
            name: rkcm_storage::object::name(obj).to_string(),
            param_kind,
            match_constraints: MatchResources::decode(
                spec.get("matchConstraints").unwrap_or(&Json::Null),
            ),
            failure_policy: str_of(&spec, "failurePolicy")
                .filter(|f| !f.is_empty())
                .unwrap_or("Fail")
                .to_string(),
            match_conditions: compiled_list(spec.get("matchConditions"), "name"),
            variables: compiled_list(spec.get("variables"), "name"),
            validations,
        }
    }

    /// Whether errors are ignored (`failurePolicy: Ignore`).
    pub fn ignores_failures(&self) -> bool {
        self.failure_policy == "Ignore"
    }
}

/// `paramRef` of a binding.
#[derive(Debug)]
pub struct ParamRef {
    /// `name`; empty when the selector is used.
    pub name: String,
    /// `namespace`; empty for the request's namespace or cluster-scoped params.
    pub namespace: String,
    /// `selector`, or why it does not parse.
    pub selector: Option<Result<Selector, String>>,
    /// `parameterNotFoundAction: Allow` (`Deny` is the default).
    pub allow_not_found: bool,
}

/// A ValidatingAdmissionPolicyBinding.
#[derive(Debug)]
pub struct Binding {
    /// `metadata.name`.
    pub name: String,
    /// `spec.policyName`.
    pub policy_name: String,
    /// `spec.paramRef`.
    pub param_ref: Option<ParamRef>,
    /// `spec.matchResources`.
    pub match_resources: Option<MatchResources>,
    /// `spec.validationActions`: `Deny`, `Warn`, `Audit`.
    pub validation_actions: Vec<String>,
}

impl Binding {
    /// The stored binding `obj`.
    pub fn decode(obj: &Json) -> Self {
        let spec = obj.get("spec").cloned().unwrap_or(Json::Null);
        let param_ref = spec
            .get("paramRef")
            .filter(|p| p.is_object())
            .map(|p| ParamRef {
                name: str_of(p, "name").unwrap_or_default().to_string(),
                namespace: str_of(p, "namespace").unwrap_or_default().to_string(),
                selector: p
                    .get("selector")
                    .filter(|s| !s.is_null())
                    .map(|s| selector(Some(s)).0),
                allow_not_found: str_of(p, "parameterNotFoundAction") == Some("Allow"),
            });
        Self {
            name: rkcm_storage::object::name(obj).to_string(),
            policy_name: str_of(&spec, "policyName").unwrap_or_default().to_string(),
            param_ref,
            match_resources: spec
                .get("matchResources")
                .filter(|m| m.is_object())
                .map(MatchResources::decode),
            validation_actions: strings(spec.get("validationActions")),
        }
    }

    /// Whether the request matches the binding's `matchResources` (all do without one).
    pub fn matches(
        &self,
        attrs: &Attributes,
        stored: &dyn Fn(&str) -> Option<BTreeMap<String, String>>,
    ) -> ApiResult<bool> {
        match &self.match_resources {
            None => Ok(true),
            Some(m) => m.matches(attrs, stored),
        }
    }
}

/// What one validation decided (`PolicyDecision`).
#[derive(Debug, PartialEq, Eq)]
pub enum Decision {
    /// The validation holds, or its error is ignored.
    Admit,
    /// The validation failed or could not be evaluated under `failurePolicy: Fail`.
    Deny {
        /// Why, kube's words.
        message: String,
        /// `reason`; empty for an evaluation error (denied as `Invalid`).
        reason: String,
    },
}

/// The variables of an evaluation: `object`, `oldObject`, `request`, `params` and
/// `namespaceObject`, all JSON; absent ones are null.
pub struct Input<'a> {
    /// The request's object.
    pub object: Option<&'a Json>,
    /// The request's old object.
    pub old_object: Option<&'a Json>,
    /// The admission request, without its objects.
    pub request: &'a Json,
    /// The param object.
    pub params: Option<&'a Json>,
    /// The request's namespace.
    pub namespace_object: Option<&'a Json>,
    /// `authorizer` and `authorizer.requestResource` (none without an authorizer).
    pub authorizer: Vec<(&'static str, Value)>,
}

/// kube's limit on a `messageExpression`'s result (`MaxEvaluatedMessageExpressionSizeBytes`).
const MAX_MESSAGE_BYTES: usize = 5 * 1024;

fn key(s: &str) -> Key {
    Key::String(Arc::new(s.to_string()))
}

/// Where the policy's expressions run: the inputs and `variables`, and why the variables that
/// could not be evaluated failed.
struct Scope {
    ctx: Context<'static, 'static>,
    /// Variable name to the error an expression using it gets, as cel-go's lazy variables
    /// give it.
    failed: HashMap<String, String>,
}

impl Scope {
    /// The inputs, then `variables`, each evaluated in order with the ones before it in reach.
    fn new(policy: &Policy, input: &Input<'_>) -> Self {
        let mut ctx = Context::with_env(library::env());
        let value = |v: Option<&Json>| v.map_or(Value::Null, |v| to_value(v, None, false));
        ctx.add_variable_from_value("object", value(input.object));
        ctx.add_variable_from_value("oldObject", value(input.old_object));
        ctx.add_variable_from_value("request", to_value(input.request, None, false));
        ctx.add_variable_from_value("params", value(input.params));
        ctx.add_variable_from_value("namespaceObject", value(input.namespace_object));
        for (name, v) in &input.authorizer {
            ctx.add_variable_from_value(*name, v.clone());
        }
        let mut variables: HashMap<Key, Value> = HashMap::new();
        let map = |variables: &HashMap<Key, Value>| {
            Value::Map(Map {
                map: Arc::new(variables.clone()),
            })
        };
        ctx.add_variable_from_value("variables", map(&variables));
        let mut scope = Self {
            ctx,
            failed: HashMap::new(),
        };
        for v in &policy.variables {
            let program = match v.program() {
                Ok(p) => p,
                Err(e) => {
                    scope.failed.insert(
                        v.name.clone(),
                        format!("composited variable {:?} fails to compile: {e}", v.name),
                    );
                    continue;
                }
            };
            match library::run_guarded(|| program.execute(&scope.ctx)) {
                Ok(value) => {
                    variables.insert(key(&v.name), value);
                    scope
                        .ctx
                        .add_variable_from_value("variables", map(&variables));
                }
                Err(e) => {
                    let cause = scope.cause(v, &e);
                    scope.failed.insert(v.name.clone(), cause);
                }
            }
        }
        scope
    }

    /// The error message of `e`, raised by `c`: a variable that failed fails the expressions
    /// using it with its own error.
    fn cause(&self, c: &Compiled, e: &cel::ExecutionError) -> String {
        if let cel::ExecutionError::NoSuchKey(k) = e {
            if let Some(cause) = self.failed.get(k.as_str()) {
                if c.expression.contains(&format!("variables.{k}")) {
                    return cause.clone();
                }
            }
        }
        library::execution_error_message(e)
    }

    /// Evaluates `c`; its error in kube's words.
    fn run(&self, c: &Compiled) -> Result<Value, String> {
        let program = c.program().map_err(|e| format!("compilation error: {e}"))?;
        library::run_guarded(|| program.execute(&self.ctx)).map_err(|e| {
            format!(
                "expression '{}' resulted in error: {}",
                c.expression,
                self.cause(c, &e)
            )
        })
    }
}

/// The message of a failed validation (`validator.Validate`): the `messageExpression`'s
/// string when it gives one of at most 5 KiB on one line, else `message`, else
/// `failed expression: <expression>`.
fn failure_message(validation: &Validation, scope: &Scope) -> String {
    let from_expression = validation
        .message_expression
        .as_ref()
        .and_then(|e| match scope.run(e) {
            Ok(Value::String(s)) => Some(s.trim().to_string()),
            Ok(_) => None,
            Err(e) => {
                tracing::debug!("error while evaluating messageExpression: {e}");
                None
            }
        })
        .filter(|m| m.len() <= MAX_MESSAGE_BYTES && !m.contains('\n'))
        .unwrap_or_default();
    if !from_expression.is_empty() {
        return from_expression;
    }
    let message = validation.message.trim();
    if !message.is_empty() {
        return message.to_string();
    }
    format!(
        "failed expression: {}",
        validation.expression.expression.trim()
    )
}

/// Evaluates `policy` for one param (`validator.Validate`): `matchConditions` first (one false
/// skips the policy), then each validation. An evaluation error denies under
/// `failurePolicy: Fail` and is ignored under `Ignore`.
pub fn validate(policy: &Policy, input: &Input<'_>) -> Vec<Decision> {
    let on_error = |message: String| {
        if policy.ignores_failures() {
            Decision::Admit
        } else {
            Decision::Deny {
                message,
                reason: String::new(),
            }
        }
    };
    let scope = Scope::new(policy, input);
    match match_conditions::evaluate_in(&policy.match_conditions, &scope.ctx) {
        Verdict::Matches => {}
        Verdict::Excluded(_) => return Vec::new(),
        Verdict::Errors(errors) => return vec![on_error(match_conditions::aggregate(&errors))],
    }
    policy
        .validations
        .iter()
        .map(|v| match scope.run(&v.expression) {
            Err(e) => on_error(e),
            Ok(Value::Bool(true)) => Decision::Admit,
            Ok(_) => Decision::Deny {
                message: failure_message(v, &scope),
                reason: v.reason.clone().unwrap_or_else(|| "Invalid".to_string()),
            },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rkcm_apimachinery::catalog;
    use rkcm_server::admission::attributes::Operation;
    use rkcm_server::auth::UserInfo;
    use serde_json::json;

    fn deployment(op: Operation, name: &str, labels: Json) -> Attributes {
        Attributes::new(
            op,
            catalog::by_kind("apps/v1", "Deployment").expect("deployments"),
            "",
            Some("ns"),
            name,
            Some(json!({"metadata": {"name": name, "labels": labels}, "spec": {"replicas": 3}})),
            None,
            Arc::new(UserInfo::default()),
            false,
        )
    }

    fn no_namespaces(_: &str) -> Option<BTreeMap<String, String>> {
        Some(BTreeMap::new())
    }

    fn deployments_rule() -> Json {
        json!({"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]})
    }

    // matching_test.go: rules, excluded rules, resource names, selectors.
    #[test]
    fn match_resources_follow_rules_exclusions_names_and_selectors() {
        let a = deployment(Operation::Create, "web", json!({"tier": "front"}));
        let m = |v: Json| MatchResources::decode(&v).matches(&a, &no_namespaces);
        assert!(m(json!({"resourceRules": [deployments_rule()]})).expect("ok"));
        assert!(m(json!({})).expect("no rules match every resource"));
        assert!(!m(json!({"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["*"], "resources": ["pods"]}]})).expect("ok"));
        assert!(!m(json!({"resourceRules": [deployments_rule()], "excludeResourceRules": [deployments_rule()]})).expect("ok"));
        let mut named = deployments_rule();
        named["resourceNames"] = json!(["other"]);
        assert!(!m(json!({"resourceRules": [named.clone()]})).expect("ok"));
        named["resourceNames"] = json!(["other", "web"]);
        assert!(m(json!({"resourceRules": [named.clone()]})).expect("ok"));
        assert!(!m(json!({"excludeResourceRules": [named]})).expect("ok"));
        assert!(
            m(json!({"resourceRules": [deployments_rule()], "objectSelector": {"matchLabels": {"tier": "front"}}}))
                .expect("ok")
        );
        assert!(
            !m(json!({"resourceRules": [deployments_rule()], "objectSelector": {"matchLabels": {"tier": "back"}}}))
                .expect("ok")
        );
        let in_prod = |_: &str| Some(BTreeMap::from([("env".to_string(), "prod".to_string())]));
        let selected =
            MatchResources::decode(&json!({"namespaceSelector": {"matchLabels": {"env": "prod"}}}));
        assert!(selected.matches(&a, &in_prod).expect("ok"));
        assert!(!selected.matches(&a, &no_namespaces).expect("ok"));
    }

    #[test]
    fn a_binding_without_match_resources_matches_what_its_policy_matches() {
        let a = deployment(Operation::Update, "web", json!({}));
        let all = Binding::decode(&json!({"metadata": {"name": "b"}, "spec": {"policyName": "p"}}));
        assert!(all.matches(&a, &no_namespaces).expect("ok"));
        let narrowed = Binding::decode(&json!({"metadata": {"name": "b"}, "spec": {
            "policyName": "p",
            "matchResources": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["deployments"]}]},
        }}));
        assert!(!narrowed.matches(&a, &no_namespaces).expect("ok"));
    }

    fn policy(spec: Json) -> Policy {
        Policy::decode(&json!({"metadata": {"name": "p"}, "spec": spec}))
    }

    fn run_on(policy: &Policy, object: &Json, params: Option<&Json>) -> Vec<Decision> {
        let request = json!({"operation": "CREATE", "namespace": "ns"});
        policy::validate(
            policy,
            &Input {
                object: Some(object),
                old_object: None,
                request: &request,
                params,
                namespace_object: Some(
                    &json!({"metadata": {"name": "ns", "labels": {"env": "prod"}}}),
                ),
                authorizer: Vec::new(),
            },
        )
    }

    use super as policy;

    fn deny(message: &str, reason: &str) -> Decision {
        Decision::Deny {
            message: message.into(),
            reason: reason.into(),
        }
    }

    // validator_test.go: messageExpression, then message, then the expression.
    #[test]
    fn failure_messages_come_from_message_expression_message_or_the_expression() {
        let obj = json!({"spec": {"replicas": 7}});
        let params = json!({"data": {"maxReplicas": "5"}});
        let p = policy(json!({"validations": [
            {"expression": "object.spec.replicas <= int(params.data.maxReplicas)",
             "messageExpression": "'replicas ' + string(object.spec.replicas) + ' over ' + params.data.maxReplicas",
             "message": "too many"},
            {"expression": "object.spec.replicas < 5", "message": "  too many  ", "reason": "Forbidden"},
            {"expression": "object.spec.replicas < 5 "},
            {"expression": "false", "messageExpression": "'two\\nlines'", "message": "fallback"},
            {"expression": "false", "messageExpression": "1 / 0", "message": "on error"},
            {"expression": "true"},
        ]}));
        assert_eq!(
            run_on(&p, &obj, Some(&params)),
            [
                deny("replicas 7 over 5", "Invalid"),
                deny("too many", "Forbidden"),
                deny("failed expression: object.spec.replicas < 5", "Invalid"),
                deny("fallback", "Invalid"),
                deny("on error", "Invalid"),
                Decision::Admit,
            ]
        );
    }

    #[test]
    fn variables_namespace_object_and_match_conditions_are_in_reach() {
        let obj = json!({"spec": {"replicas": 7}});
        let p = policy(json!({
            "variables": [
                {"name": "replicas", "expression": "object.spec.replicas"},
                {"name": "double", "expression": "variables.replicas * 2"},
            ],
            "validations": [
                {"expression": "variables.double == 14"},
                {"expression": "namespaceObject.metadata.labels.env == 'prod'"},
                {"expression": "request.operation == 'CREATE' && oldObject == null && params == null"},
            ],
        }));
        assert_eq!(
            run_on(&p, &obj, None),
            [Decision::Admit, Decision::Admit, Decision::Admit]
        );
        let skipped = policy(json!({
            "matchConditions": [{"name": "big", "expression": "object.spec.replicas > 10"}],
            "validations": [{"expression": "false"}],
        }));
        assert!(run_on(&skipped, &obj, None).is_empty());
    }

    #[test]
    fn expressions_using_a_failed_variable_fail_with_its_error() {
        let obj = json!({"spec": {"replicas": 7}});
        let p = policy(json!({
            "variables": [
                {"name": "missing", "expression": "object.spec.nope"},
                {"name": "broken", "expression": "object.spec.("},
                {"name": "fine", "expression": "1"},
            ],
            "validations": [
                {"expression": "variables.missing > 1"},
                {"expression": "variables.broken > 1"},
                {"expression": "variables.fine == 1"},
            ],
        }));
        let decisions = run_on(&p, &obj, None);
        let Decision::Deny { message, .. } = &decisions[0] else {
            panic!("denied: {decisions:?}");
        };
        assert_eq!(
            message,
            "expression 'variables.missing > 1' resulted in error: no such key: nope"
        );
        let Decision::Deny { message, .. } = &decisions[1] else {
            panic!("denied: {decisions:?}");
        };
        assert!(
            message.starts_with("expression 'variables.broken > 1' resulted in error: composited variable \"broken\" fails to compile: "),
            "{message}"
        );
        assert_eq!(decisions[2], Decision::Admit);
    }

    #[test]
    fn evaluation_errors_deny_under_fail_and_are_ignored_under_ignore() {
        let obj = json!({"spec": {}});
        let fail = policy(json!({"validations": [{"expression": "object.spec.replicas > 1"}]}));
        let decisions: [Decision; 1] = run_on(&fail, &obj, None).try_into().expect("one");
        let [Decision::Deny { message, reason }] = decisions else {
            panic!("denied");
        };
        assert_eq!(reason, "");
        assert!(
            message.starts_with(
                "expression 'object.spec.replicas > 1' resulted in error: no such key"
            ),
            "{message}"
        );
        let ignore = policy(
            json!({"failurePolicy": "Ignore", "validations": [{"expression": "object.spec.replicas > 1"}]}),
        );
        assert_eq!(run_on(&ignore, &obj, None), [Decision::Admit]);
        let condition_error = policy(json!({
            "matchConditions": [{"name": "c", "expression": "object.spec.replicas > 1"}],
            "validations": [{"expression": "true"}],
        }));
        assert!(matches!(
            run_on(&condition_error, &obj, None).as_slice(),
            [Decision::Deny { .. }]
        ));
    }
}
