//! Type checking of a ValidatingAdmissionPolicy's expressions against the kinds it matches, as
//! kube's `TypeChecker` (`k8s.io/apiserver/pkg/admission/plugin/policy/validating/typechecking.go`).
//!
//! As kube's, it checks `spec.validations[*].expression` and `messageExpression` once per matched
//! kind (at most ten), with `spec.variables` compiled first so that `variables.x` has the type of
//! its expression (`dyn` when that expression does not check). Match conditions and audit
//! annotations are not type-checked by kube, and neither are they here.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use k8s_openapi::api::admissionregistration::v1::{ExpressionWarning, ValidatingAdmissionPolicy};

use super::cel::{self, Env, Type};

/// At most this many kinds are checked per rule (`maxTypesToCheck`).
const MAX_TYPES_TO_CHECK: usize = 10;

/// A group, version and kind.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Gvk {
    /// API group, empty for core.
    pub group: String,
    /// Version.
    pub version: String,
    /// Kind.
    pub kind: String,
}

impl Gvk {
    /// A GVK.
    pub fn new(group: &str, version: &str, kind: &str) -> Self {
        Self {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
        }
    }

    /// `apps/v1` or `v1`.
    pub fn group_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

/// As Go's `schema.GroupVersionKind.String()`: `apps/v1, Kind=Deployment`, `/v1, Kind=Pod`.
impl fmt::Display for Gvk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}, Kind={}", self.group, self.version, self.kind)
    }
}

/// The group, version and resource triples the policy's resource rules name without wildcards
/// or subresources, sorted per rule as kube iterates them.
pub fn rule_resources(policy: &ValidatingAdmissionPolicy) -> Vec<Vec<(String, String, String)>> {
    let Some(rules) = policy
        .spec
        .as_ref()
        .and_then(|s| s.match_constraints.as_ref())
        .and_then(|m| m.resource_rules.as_ref())
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for rule in rules {
        let list = |v: &Option<Vec<String>>| v.clone().unwrap_or_default();
        let groups = list(&rule.api_groups);
        let versions = list(&rule.api_versions);
        // A wildcard group or version gives up on the whole rule (`extractGroups`).
        if groups.is_empty() || groups.iter().any(|g| g.contains('*')) {
            continue;
        }
        if versions.is_empty() || versions.iter().any(|v| v.contains('*')) {
            continue;
        }
        // Wildcard resources and subresources are skipped one by one (`extractResources`).
        let mut resources: Vec<String> = list(&rule.resources)
            .into_iter()
            .filter(|r| !r.contains('*') && !r.contains('/'))
            .collect();
        if resources.is_empty() {
            continue;
        }
        let (mut groups, mut versions) = (groups, versions);
        groups.sort();
        versions.sort();
        resources.sort();
        let mut triples = Vec::new();
        for g in &groups {
            for v in &versions {
                for r in &resources {
                    triples.push((g.clone(), v.clone(), r.clone()));
                }
            }
        }
        out.push(triples);
    }
    out
}

/// The kinds to check the policy against (`typesToCheck`): each rule's resources resolved by
/// `kinds_for` (a REST mapper), at most ten per rule, sorted by group, version and kind.
pub fn types_to_check(
    policy: &ValidatingAdmissionPolicy,
    kinds_for: impl Fn(&str, &str, &str) -> Vec<Gvk>,
) -> Vec<Gvk> {
    let mut gvks = BTreeSet::new();
    'rules: for triples in rule_resources(policy) {
        let mut count = 0;
        for (g, v, r) in triples {
            for gvk in kinds_for(&g, &v, &r) {
                gvks.insert(gvk);
                count += 1;
                if count == MAX_TYPES_TO_CHECK {
                    // kube returns from the whole function here.
                    break 'rules;
                }
            }
        }
    }
    gvks.into_iter().collect()
}

/// The GVK of `spec.paramKind`, if set and its apiVersion parses.
pub fn params_gvk(policy: &ValidatingAdmissionPolicy) -> Option<Gvk> {
    let pk = policy.spec.as_ref()?.param_kind.as_ref()?;
    let api_version = pk.api_version.as_deref().unwrap_or_default();
    let kind = pk.kind.as_deref().unwrap_or_default();
    let (group, version) = match api_version.split('/').collect::<Vec<_>>().as_slice() {
        [v] => ("", *v),
        [g, v] => (*g, *v),
        _ => return None,
    };
    if version.is_empty() {
        return None;
    }
    Some(Gvk::new(group, version, kind))
}

/// What a policy is checked against: the object types of the matched kinds (those whose schema
/// was found) and the params type.
#[derive(Clone, Debug, Default)]
pub struct Context {
    /// Each matched kind and the type of its objects (`dyn` for a schema without type).
    pub objects: Vec<(Gvk, Type)>,
    /// The type of `params`; `None` leaves `params` undeclared, as kube does without a
    /// `paramKind`.
    pub params: Option<Type>,
}

/// The environment of one kind (`buildEnvSet`): `object`, `oldObject`, `request`,
/// `namespaceObject` (`dyn` here), `authorizer`, `params` when declared, and `variables`.
fn environment(object: &Type, params: Option<&Type>, variables: &BTreeMap<String, Type>) -> Env {
    let mut env = Env::new();
    env.declare("object", object.clone());
    env.declare("oldObject", object.clone());
    env.declare("request", rkcm_cel::admission::request_type());
    env.declare("namespaceObject", Type::Dyn);
    env.declare("authorizer", Type::Opaque(cel::overloads::AUTHORIZER));
    env.declare(
        "authorizer.requestResource",
        Type::Opaque(cel::overloads::RESOURCE_CHECK),
    );
    if let Some(p) = params {
        env.declare("params", p.clone());
    }
    env.declare(
        "variables",
        Type::object("kubernetes.variables", variables.clone()),
    );
    env
}

/// The issues of one expression under `env`, as cel-go displays them; empty when it checks.
fn issues_of(env: &Env, expression: &str) -> Result<Type, String> {
    let expr = cel::parse(expression).map_err(|i| cel::display(expression, &[i]))?;
    let (t, issues) = cel::check(env, &expr);
    if issues.is_empty() {
        Ok(t)
    } else {
        Err(cel::display(expression, &issues))
    }
}

/// kube's `CheckExpression` and `TypeCheckingResults.String()`: one `<gvk>: <issues>\n` per kind
/// the expression fails for, joined with newlines; empty when it checks for every kind.
pub fn check_expression(ctx: &Context, variables: &[(String, String)], expression: &str) -> String {
    let mut messages = Vec::new();
    for (gvk, object) in &ctx.objects {
        let mut vars = BTreeMap::new();
        for (name, expr) in variables {
            let env = environment(object, ctx.params.as_ref(), &vars);
            // A variable that does not check is `dyn` to the expressions using it.
            let t = issues_of(&env, expr).unwrap_or(Type::Dyn);
            vars.insert(name.clone(), t);
        }
        let env = environment(object, ctx.params.as_ref(), &vars);
        if let Err(issues) = issues_of(&env, expression) {
            messages.push(format!("{gvk}: {issues}\n"));
        }
    }
    messages.join("\n")
}

/// kube's `TypeChecker.Check`: the warnings of `spec.validations[*].expression` and
/// `messageExpression`, in order. Runs on a thread of its own with a stack of
/// [`cel::STACK_SIZE`], since deeply nested expressions recurse deeply.
pub fn check(policy: &ValidatingAdmissionPolicy, ctx: &Context) -> Vec<ExpressionWarning> {
    cel::run_deep(|| check_on_this_thread(policy, ctx))
}

fn check_on_this_thread(
    policy: &ValidatingAdmissionPolicy,
    ctx: &Context,
) -> Vec<ExpressionWarning> {
    let Some(spec) = &policy.spec else {
        return Vec::new();
    };
    let variables: Vec<(String, String)> = spec
        .variables
        .iter()
        .flatten()
        .map(|v| (v.name.clone(), v.expression.clone()))
        .collect();
    let mut warnings = Vec::new();
    for (i, v) in spec.validations.iter().flatten().enumerate() {
        let found = check_expression(ctx, &variables, &v.expression);
        if !found.is_empty() {
            warnings.push(ExpressionWarning {
                field_ref: format!("spec.validations[{i}].expression"),
                warning: found,
            });
        }
        match v.message_expression.as_deref() {
            None | Some("") => {}
            Some(m) => {
                let found = check_expression(ctx, &variables, m);
                if !found.is_empty() {
                    warnings.push(ExpressionWarning {
                        field_ref: format!("spec.validations[{i}].messageExpression"),
                        warning: found,
                    });
                }
            }
        }
    }
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validatingadmissionpolicystatus::decltype::DeclTypes;
    use k8s_openapi::api::admissionregistration::v1::{
        MatchResources, NamedRuleWithOperations, ParamKind, ValidatingAdmissionPolicySpec,
        Validation, Variable,
    };
    use serde_json::{json, Value};

    fn rule(groups: &[&str], versions: &[&str], resources: &[&str]) -> NamedRuleWithOperations {
        let v = |x: &[&str]| Some(x.iter().map(|s| s.to_string()).collect());
        NamedRuleWithOperations {
            api_groups: v(groups),
            api_versions: v(versions),
            resources: v(resources),
            operations: Some(vec!["*".into()]),
            ..Default::default()
        }
    }

    fn policy(
        rules: Vec<NamedRuleWithOperations>,
        validations: &[(&str, Option<&str>)],
    ) -> ValidatingAdmissionPolicy {
        ValidatingAdmissionPolicy {
            spec: Some(ValidatingAdmissionPolicySpec {
                match_constraints: Some(MatchResources {
                    resource_rules: Some(rules),
                    ..Default::default()
                }),
                validations: Some(
                    validations
                        .iter()
                        .map(|(e, m)| Validation {
                            expression: e.to_string(),
                            message_expression: m.map(str::to_string),
                            ..Default::default()
                        })
                        .collect(),
                ),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn deployments() -> Vec<NamedRuleWithOperations> {
        vec![rule(&["apps"], &["v1"], &["deployments"])]
    }

    /// The REST mapper of kube's test: pods and deployments.
    fn mapper(g: &str, v: &str, r: &str) -> Vec<Gvk> {
        match (g, v, r) {
            ("", "v1", "pods") => vec![Gvk::new("", "v1", "Pod")],
            ("apps", "v1", "deployments") => vec![Gvk::new("apps", "v1", "Deployment")],
            _ => vec![],
        }
    }

    /// kube's fake schema resolver: every kind (and the params) has `schema`; `None` finds none.
    fn context(policy: &ValidatingAdmissionPolicy, schema: Option<Value>) -> Context {
        let resolve = |_: &str| None;
        let decl = DeclTypes::new(&resolve);
        let Some(schema) = schema else {
            return Context::default();
        };
        let objects = types_to_check(policy, mapper)
            .into_iter()
            .map(|gvk| {
                let t = decl.resource(&gvk.kind, &schema).unwrap_or(Type::Dyn);
                (gvk, t)
            })
            .collect();
        let params =
            params_gvk(policy).map(|gvk| decl.resource(&gvk.kind, &schema).unwrap_or(Type::Dyn));
        Context { objects, params }
    }

    fn props(p: Value) -> Option<Value> {
        Some(json!({"type": "object", "properties": p}))
    }

    fn refs(w: &[ExpressionWarning]) -> Vec<&str> {
        w.iter().map(|w| w.field_ref.as_str()).collect()
    }

    #[test]
    fn types_to_check_resolves_rules_without_wildcards() {
        // TestExtractTypeNames.
        let p = |rules| policy(rules, &[]);
        assert_eq!(
            types_to_check(&ValidatingAdmissionPolicy::default(), mapper),
            vec![]
        );
        assert_eq!(
            types_to_check(&p(deployments()), mapper),
            vec![Gvk::new("apps", "v1", "Deployment")]
        );
        assert_eq!(
            types_to_check(
                &p(vec![
                    rule(&["apps"], &["v1"], &["deployments"]),
                    rule(&[""], &["v1"], &["pods"])
                ]),
                mapper
            ),
            vec![
                Gvk::new("", "v1", "Pod"),
                Gvk::new("apps", "v1", "Deployment")
            ]
        );
        assert_eq!(
            types_to_check(&p(vec![rule(&["apps"], &["v1"], &["*"])]), mapper),
            vec![]
        );
        assert_eq!(
            types_to_check(&p(vec![rule(&["apps"], &["v1"], &["pods/*"])]), mapper),
            vec![]
        );
        assert_eq!(
            types_to_check(
                &p(vec![
                    rule(&["apps"], &["v1"], &["deployments"]),
                    rule(&["apps"], &["*"], &["deployments"])
                ]),
                mapper
            ),
            vec![Gvk::new("apps", "v1", "Deployment")]
        );
    }

    #[test]
    fn type_check_cases_of_kube() {
        // TestTypeCheck.
        let deployment = policy(deployments(), &[("object.foo == 'bar'", None)]);
        assert!(
            check(&ValidatingAdmissionPolicy::default(), &Context::default()).is_empty(),
            "empty"
        );
        assert!(
            check(&deployment, &context(&deployment, None)).is_empty(),
            "unresolved schema"
        );
        let foo_string = props(json!({"foo": {"type": "string"}}));
        assert!(
            check(&deployment, &context(&deployment, foo_string.clone())).is_empty(),
            "passed check"
        );

        let w = check(
            &deployment,
            &context(&deployment, props(json!({"bar": {"type": "string"}}))),
        );
        assert_eq!(
            refs(&w),
            ["spec.validations[0].expression"],
            "undefined field"
        );
        assert_eq!(
            w[0].warning,
            "apps/v1, Kind=Deployment: ERROR: <input>:1:7: undefined field 'foo'\n | object.foo == 'bar'\n | ......^\n"
        );

        let w = check(
            &deployment,
            &context(
                &deployment,
                props(json!({"foo": {"type": "integer", "format": "int64"}})),
            ),
        );
        assert_eq!(
            refs(&w),
            ["spec.validations[0].expression"],
            "field type mismatch"
        );
        assert!(w[0].warning.contains("found no matching overload"));

        let mut params = policy(deployments(), &[("object.foo == params.bar", None)]);
        params.spec.as_mut().unwrap().param_kind = Some(ParamKind {
            api_version: Some("v1".into()),
            kind: Some("DoesNotMatter".into()),
        });
        let w = check(&params, &context(&params, foo_string.clone()));
        assert_eq!(refs(&w), ["spec.validations[0].expression"], "params");
        assert!(w[0].warning.contains("undefined field 'bar'"));

        let mut untyped = policy(deployments(), &[("params != null", None)]);
        untyped.spec.as_mut().unwrap().param_kind = Some(ParamKind {
            api_version: Some("v1".into()),
            kind: Some("Config".into()),
        });
        assert!(
            check(&untyped, &context(&untyped, Some(json!({})))).is_empty(),
            "params with untyped schema"
        );

        let multi = policy(
            deployments(),
            &[("object.foo == 'bar'", None), ("object.bar == 'foo'", None)],
        );
        let w = check(&multi, &context(&multi, foo_string.clone()));
        assert_eq!(
            refs(&w),
            ["spec.validations[1].expression"],
            "multiple expressions"
        );

        let message = policy(
            deployments(),
            &[("object.foo == 'bar'", Some("object.foo + 114514"))],
        );
        let w = check(&message, &context(&message, foo_string.clone()));
        assert_eq!(
            refs(&w),
            ["spec.validations[0].messageExpression"],
            "message expressions"
        );

        let authz = policy(
            deployments(),
            &[(
                "authorizer.group('').resource('endpoints').check('create').allowed()",
                None,
            )],
        );
        assert!(
            check(&authz, &context(&authz, foo_string.clone())).is_empty(),
            "authorizer"
        );

        let request_resource = policy(
            deployments(),
            &[(
                "authorizer.requestResource.namespace('x').check('update').allowed()",
                None,
            )],
        );
        assert!(check(
            &request_resource,
            &context(&request_resource, foo_string.clone())
        )
        .is_empty());

        let authz_bad = policy(deployments(), &[("authorizer.allowed()", None)]);
        let w = check(&authz_bad, &context(&authz_bad, foo_string.clone()));
        assert_eq!(
            refs(&w),
            ["spec.validations[0].expression"],
            "authorizer invalid"
        );
        assert!(w[0].warning.contains("found no matching overload for 'allowed' applied to 'kubernetes.authorization.Authorizer"));

        let mut reproducer = policy(
            vec![rule(&["apps"], &["v1"], &["deployments"])],
            &[("has(object.spec.text)", None)],
        );
        reproducer.metadata.name = Some("reproducer".into());
        let schema = props(json!({
            "spec": {"type": "object", "properties": {"text": {"type": "string"}}},
            "status": {"type": "object", "properties": {
                "problematicProperty": {"type": "object", "additionalProperties": true}
            }}
        }));
        assert!(
            check(&reproducer, &context(&reproducer, schema)).is_empty(),
            "additionalProperties: true"
        );

        let no_type = policy(deployments(), &[("true", None)]);
        assert!(
            check(&no_type, &context(&no_type, Some(json!({})))).is_empty(),
            "schema without type"
        );
    }

    #[test]
    fn variables_are_typed_by_their_expressions() {
        let with_vars = |vars: &[(&str, &str)], expr: &str| {
            let mut p = policy(deployments(), &[(expr, None)]);
            p.spec.as_mut().unwrap().variables = Some(
                vars.iter()
                    .map(|(n, e)| Variable {
                        name: n.to_string(),
                        expression: e.to_string(),
                    })
                    .collect(),
            );
            let foo_int = props(json!({"foo": {"type": "integer", "format": "int64"}}));
            let ctx = context(&p, foo_int);
            check(&p, &ctx)
        };
        assert!(
            with_vars(&[("works", "true")], "variables.works").is_empty(),
            "variables valid"
        );
        let w = with_vars(&[("works", "true")], "variables.nonExisting");
        assert_eq!(refs(&w), ["spec.validations[0].expression"]);
        assert!(w[0].warning.contains("undefined field 'nonExisting'"));
        let w = with_vars(&[("name", "'something'")], "variables.name == object.foo");
        assert!(w[0]
            .warning
            .contains("found no matching overload for '_==_' applied to '(string, int)"));
        assert!(
            with_vars(
                &[("name", "object.foo == 'str'")],
                "variables.name == object.foo"
            )
            .is_empty(),
            "error in variables, not reported during type checking"
        );
    }

    #[test]
    fn parse_errors_are_warnings_too() {
        let p = policy(deployments(), &[("object.foo ==", None)]);
        let w = check(&p, &context(&p, props(json!({"foo": {"type": "string"}}))));
        assert_eq!(refs(&w), ["spec.validations[0].expression"]);
        assert!(w[0].warning.starts_with("apps/v1, Kind=Deployment: ERROR: <input>:1:14: Syntax error: mismatched input '<EOF>'"), "{}", w[0].warning);
    }

    #[test]
    fn deeply_nested_expressions_are_checked_or_refused_without_overflow() {
        let schema = props(json!({"foo": {"type": "integer"}}));
        let deep = format!("{}object.foo > 1{}", "(".repeat(200), ")".repeat(200));
        let p = policy(deployments(), &[(&deep, None)]);
        assert!(check(&p, &context(&p, schema.clone())).is_empty());
        let chain = format!("object.foo{}", " + 1".repeat(240));
        let p = policy(deployments(), &[(&chain, None)]);
        assert!(check(&p, &context(&p, schema.clone())).is_empty());
        let too_deep = format!("{}object.foo > 1{}", "(".repeat(400), ")".repeat(400));
        let p = policy(deployments(), &[(&too_deep, None)]);
        let w = check(&p, &context(&p, schema));
        assert!(w[0]
            .warning
            .contains("expression recursion limit exceeded: 250"));
    }

    #[test]
    fn each_kind_gets_its_own_paragraph() {
        let p = policy(
            vec![
                rule(&["apps"], &["v1"], &["deployments"]),
                rule(&[""], &["v1"], &["pods"]),
            ],
            &[("object.foo == 1", None)],
        );
        let w = check(&p, &context(&p, props(json!({"bar": {"type": "string"}}))));
        assert_eq!(
            w[0].warning,
            "/v1, Kind=Pod: ERROR: <input>:1:7: undefined field 'foo'\n | object.foo == 1\n | ......^\n\napps/v1, Kind=Deployment: ERROR: <input>:1:7: undefined field 'foo'\n | object.foo == 1\n | ......^\n"
        );
    }
}
