//! Evaluating `x-kubernetes-validations` on custom resources, as kube's `schema/cel/validation.go`:
//! each schema node's rules run with `self` bound to the node's value (list items and map values
//! one by one), transition rules (those reading `oldSelf`) only where an old value correlates
//! (unless `optionalOldSelf`), and an update that leaves a value unchanged is not refused for
//! it (CRDValidationRatcheting).

use std::collections::BTreeMap;
use std::sync::Arc;

use cel::objects::OptionalValue;
use cel::{Context, Value};
use serde_json::Value as Json;

use super::compile::{compile_rules, CompiledRule, OLD_SCOPED_VAR_NAME, SCOPED_VAR_NAME};
use super::decl::decl_type;
use super::library;
use super::values::to_value;
use crate::field::{BadValue, ErrorList, FieldError, Path};
use crate::structural::Structural;

/// The compiled rules of a structural schema, shaped like the schema; kube's `cel.Validator`.
#[derive(Clone)]
pub struct Validator {
    root: Node,
}

#[derive(Clone)]
struct Node {
    /// The node's schema, when it has rules (their values are converted with it).
    schema: Option<Arc<Structural>>,
    rules: Vec<CompiledRule>,
    resource_root: bool,
    /// `x-kubernetes-map-type` allows correlating old values by key (granular or atomic).
    map_correlatable: bool,
    /// `x-kubernetes-list-type` and the map keys of list items.
    list_type: Option<String>,
    list_map_keys: Vec<String>,
    items: Option<Box<Node>>,
    properties: BTreeMap<String, Node>,
    additional_properties: Option<Box<Node>>,
}

impl std::fmt::Debug for Validator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("cel::Validator")
    }
}

/// What evaluating the rules found: errors refuse the request, warnings (errors the update did
/// not introduce, ratcheted) are only reported.
#[derive(Debug, Default)]
pub struct Outcome {
    /// The errors.
    pub errors: ErrorList,
    /// The ratcheted errors, as `field: message` warnings.
    pub warnings: Vec<String>,
}

impl Validator {
    /// Compiles the rules of `s`, the schema of a resource (`resource_root`) or of a part of
    /// one; `None` when it has no rules.
    pub fn new(s: &Structural, resource_root: bool) -> Option<Validator> {
        node(s, resource_root).map(|root| Validator { root })
    }

    /// Evaluates the rules on `obj` (an update of `old` when given) at `path`; kube passes a nil
    /// path for a resource, printed `<nil>` at the root.
    pub fn validate(&self, path: &Path, obj: &Json, old: Option<&Json>) -> Outcome {
        let mut out = Outcome::default();
        let mut budget = RUNTIME_BUDGET;
        self.root.validate(
            path,
            obj,
            old,
            Ratchet::root(obj, old),
            &mut budget,
            &mut out,
        );
        out
    }
}

/// kube's `RuntimeCELCostBudget`: the cost all the rules of one request may take. The `cel`
/// crate does not track costs, so each evaluation is charged an estimate made before it runs
/// ([`super::compile::Shape::cost`]): the rule's size, times the longest collection of the
/// values once per level of comprehension.
const RUNTIME_BUDGET: i64 = 10_000_000;

/// kube's `PerCallLimit`: the cost one evaluation may take.
const PER_CALL_LIMIT: u64 = 1_000_000;

const OUT_OF_BUDGET: &str =
    "validation failed due to running out of cost budget, no further validation rules will be run";

/// Whether errors at a node are ratcheted: kube's `ratchetingOptions`.
#[derive(Clone, Copy)]
struct Ratchet {
    /// An update is being validated.
    update: bool,
    /// The nearest correlatable node (this one, or an ancestor) is unchanged.
    unchanged: bool,
}

impl Ratchet {
    /// The options at the root: an update ratchets when the whole object is unchanged.
    fn root(obj: &Json, old: Option<&Json>) -> Self {
        Ratchet {
            update: old.is_some(),
            unchanged: old == Some(obj),
        }
    }

    /// The options of a child whose old value is `old` (`None`: not correlatable, the parent's
    /// state stands).
    fn child(self, new: &Json, old: Option<&Json>, correlatable: bool) -> Self {
        if !self.update {
            return self;
        }
        if correlatable {
            Ratchet {
                update: true,
                unchanged: old == Some(new),
            }
        } else {
            self
        }
    }
}

/// Whether `s` or a schema below it has rules.
fn has_rules(s: &Structural) -> bool {
    !s.extensions.x_validations.is_empty()
        || s.items.as_deref().is_some_and(has_rules)
        || s.additional_properties_schema().is_some_and(has_rules)
        || s.properties.values().any(has_rules)
}

fn node(s: &Structural, resource_root: bool) -> Option<Node> {
    if !has_rules(s) {
        return None;
    }
    let rules = if s.extensions.x_validations.is_empty() {
        Vec::new()
    } else {
        compile_rules(&s.extensions.x_validations, &decl_type(s, resource_root))
    };
    Some(Node {
        schema: (!rules.is_empty()).then(|| Arc::new(s.clone())),
        rules,
        resource_root,
        map_correlatable: s
            .extensions
            .x_map_type
            .as_deref()
            .is_none_or(|t| t == "granular" || t == "atomic"),
        list_type: s.extensions.x_list_type.clone(),
        list_map_keys: s.extensions.x_list_map_keys.clone(),
        items: s
            .items
            .as_deref()
            .and_then(|i| node(i, i.extensions.x_embedded_resource))
            .map(Box::new),
        properties: s
            .properties
            .iter()
            .filter_map(|(k, p)| node(p, p.extensions.x_embedded_resource).map(|n| (k.clone(), n)))
            .collect(),
        additional_properties: s
            .additional_properties_schema()
            .and_then(|a| node(a, a.extensions.x_embedded_resource))
            .map(Box::new),
    })
}

/// Whether the remaining budget is spent; kube then stops evaluating.
fn spent(budget: &i64) -> bool {
    *budget < 0
}

impl Node {
    fn validate(
        &self,
        path: &Path,
        obj: &Json,
        old: Option<&Json>,
        ratchet: Ratchet,
        budget: &mut i64,
        out: &mut Outcome,
    ) {
        if obj.is_null() {
            return;
        }
        let old = old.filter(|o| !o.is_null());
        self.validate_expressions(path, obj, old, ratchet, budget, out);
        if spent(budget) {
            return;
        }
        match obj {
            Json::Array(items) => {
                let Some(item_node) = &self.items else { return };
                for (i, item) in items.iter().enumerate() {
                    let old_item = self.correlate_item(old, item);
                    let r = ratchet.child(item, old_item, self.list_type.as_deref() == Some("map"));
                    item_node.validate(&path.index(i), item, old_item, r, budget, out);
                    if spent(budget) {
                        return;
                    }
                }
            }
            Json::Object(fields) => {
                let old_fields = old
                    .and_then(Json::as_object)
                    .filter(|_| self.map_correlatable);
                for (k, v) in fields {
                    let old_v = old_fields.and_then(|o| o.get(k));
                    let r = ratchet.child(v, old_v, true);
                    if let Some(ap) = &self.additional_properties {
                        ap.validate(&path.key(k), v, old_v, r, budget, out);
                    }
                    if let Some(p) = self.properties.get(k) {
                        p.validate(&path.child(k), v, old_v, r, budget, out);
                    }
                    if spent(budget) {
                        return;
                    }
                }
            }
            _ => {}
        }
    }

    /// The old item of a `map` list with the same keys as `item`; only map lists correlate.
    fn correlate_item<'a>(&self, old: Option<&'a Json>, item: &Json) -> Option<&'a Json> {
        if self.list_type.as_deref() != Some("map") {
            return None;
        }
        let key = |v: &Json| -> Option<Vec<Json>> {
            let m = v.as_object()?;
            Some(
                self.list_map_keys
                    .iter()
                    .map(|k| m.get(k).cloned().unwrap_or(Json::Null))
                    .collect(),
            )
        };
        let wanted = key(item)?;
        old?.as_array()?
            .iter()
            .find(|o| key(o).as_ref() == Some(&wanted))
    }

    fn validate_expressions(
        &self,
        path: &Path,
        obj: &Json,
        old: Option<&Json>,
        ratchet: Ratchet,
        budget: &mut i64,
        out: &mut Outcome,
    ) {
        let Some(schema) = self.schema.as_deref() else {
            return;
        };
        let type_ = schema.type_();
        let type_value = || BadValue::from(type_);
        let shown_path = if path.is_root() {
            Path::new("<nil>")
        } else {
            path.clone()
        };
        if *budget <= 0 {
            out.errors.push(FieldError::invalid(
                &shown_path,
                type_value(),
                OUT_OF_BUDGET,
            ));
            *budget = -1;
            return;
        }
        // The largest collection a rule here may iterate over, for the rules' costs.
        let breadth = breadth(obj).max(old.map_or(0, breadth));
        let self_value = to_value(obj, Some(schema), self.resource_root);
        let old_value = old.map(|o| to_value(o, Some(schema), self.resource_root));
        let env = library::env();
        for compiled in &self.rules {
            let rule = &compiled.rule;
            if let Some(e) = &compiled.error {
                out.errors.push(FieldError::invalid(
                    &shown_path,
                    type_value(),
                    format!("rule compile error: {}", e.detail),
                ));
                continue;
            }
            let Some(program) = &compiled.program else {
                continue;
            };
            let optional_old_self = rule.optional_old_self == Some(true);
            if compiled.uses_old_self && old_value.is_none() && !optional_old_self {
                continue;
            }
            let mut ctx = Context::with_env(env.clone());
            ctx.add_variable_from_value(SCOPED_VAR_NAME, self_value.clone());
            if optional_old_self {
                let opt = match &old_value {
                    Some(v) => OptionalValue::of(v.clone()),
                    None => OptionalValue::none(),
                };
                ctx.add_variable_from_value(OLD_SCOPED_VAR_NAME, Value::Opaque(Arc::new(opt)));
            } else if let Some(v) = &old_value {
                ctx.add_variable_from_value(OLD_SCOPED_VAR_NAME, v.clone());
            }
            let cost = compiled.shape.cost(breadth);
            if cost > PER_CALL_LIMIT {
                out.errors.push(FieldError::invalid(
                    &shown_path,
                    type_value(),
                    format!(
                        "'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: {}",
                        rule_error_string(rule)
                    ),
                ));
                *budget = -1;
                return;
            }
            if !charge(budget, cost) {
                out.errors.push(FieldError::invalid(
                    &shown_path,
                    type_value(),
                    OUT_OF_BUDGET,
                ));
                return;
            }
            let result = library::run_guarded(|| program.execute(&ctx));
            let passed = match result {
                Err(err) => {
                    let msg = library::execution_error_message(&err);
                    let detail = if msg.starts_with("no such overload") {
                        format!("'{msg}': call arguments did not match a supported operator, function or macro signature for rule: {}", rule_error_string(rule))
                    } else {
                        format!("{msg} evaluating rule: {}", rule_error_string(rule))
                    };
                    out.errors
                        .push(FieldError::invalid(&shown_path, type_value(), detail));
                    continue;
                }
                Ok(Value::Bool(b)) => b,
                Ok(other) => {
                    out.errors.push(FieldError::invalid(
                        &shown_path,
                        type_value(),
                        format!(
                            "'no such overload: expected bool, got {}' evaluating rule: {}",
                            other.type_of(),
                            rule_error_string(rule)
                        ),
                    ));
                    continue;
                }
            };
            if passed {
                continue;
            }
            let field_path = match rule.field_path.as_deref().filter(|f| !f.is_empty()) {
                Some(fp) => match super::field_path::valid_field_path(fp, schema) {
                    Ok(p) => join_paths(path, &p),
                    Err(_) => shown_path.clone(),
                },
                None => shown_path.clone(),
            };
            let mut detail = None;
            if let Some(mp) = &compiled.message_program {
                let cost = compiled.message_shape.cost(breadth);
                if cost > PER_CALL_LIMIT {
                    out.errors.push(FieldError::invalid(
                        &field_path,
                        type_value(),
                        format!(
                            "no further validation rules will be run due to call cost exceeds limit for messageExpression: {}",
                            crate::go_format::quote(rule.message_expression.as_deref().unwrap_or(""))
                        ),
                    ));
                    *budget = -1;
                    return;
                }
                if !charge(budget, cost) {
                    out.errors.push(FieldError::invalid(
                        &field_path,
                        type_value(),
                        "messageExpression evaluation failed due to running out of cost budget, no further validation rules will be run",
                    ));
                    return;
                }
                // A message that fails to evaluate, is empty, too long or has line breaks
                // falls back to the rule's message, as kube's.
                if let Ok(Value::String(s)) = library::run_guarded(|| mp.execute(&ctx)) {
                    let t = s.trim();
                    if !t.is_empty() && !t.contains('\n') && t.len() <= MAX_MESSAGE_BYTES {
                        detail = Some(t.to_string());
                    }
                }
            }
            let detail = detail.unwrap_or_else(|| rule_message_or_default(rule));
            let err = match rule.reason.as_deref() {
                Some("FieldValueForbidden") => FieldError::forbidden(&field_path, detail),
                Some("FieldValueRequired") => FieldError::required(&field_path, detail),
                Some("FieldValueDuplicate") => FieldError::duplicate(&field_path, type_value()),
                _ => FieldError::invalid(&field_path, type_value(), detail),
            };
            if !compiled.uses_old_self && ratchet.update && ratchet.unchanged {
                out.warnings.push(err.to_string());
            } else {
                out.errors.push(err);
            }
        }
    }
}

/// kube's `MaxEvaluatedMessageExpressionSizeBytes`.
const MAX_MESSAGE_BYTES: usize = 5 * 1024;

/// `path` followed by `rel`, a path relative to it.
fn join_paths(path: &Path, rel: &Path) -> Path {
    if path.is_root() {
        rel.clone()
    } else if rel.as_str().starts_with('[') {
        Path::new(&format!("{path}{rel}"))
    } else {
        Path::new(&format!("{path}.{rel}"))
    }
}

/// The length of the longest list or map in `v`: what one level of comprehension in a rule
/// may iterate over.
fn breadth(v: &Json) -> u64 {
    match v {
        Json::Array(items) => items.iter().map(breadth).fold(items.len() as u64, u64::max),
        Json::Object(fields) => fields
            .values()
            .map(breadth)
            .fold(fields.len() as u64, u64::max),
        _ => 0,
    }
}

/// Takes `cost` from the budget; false (and the budget spent) when it does not cover it.
fn charge(budget: &mut i64, cost: u64) -> bool {
    match i64::try_from(cost) {
        Ok(c) if c <= *budget => {
            *budget -= c;
            true
        }
        _ => {
            *budget = -1;
            false
        }
    }
}

/// kube's `ruleMessageOrDefault`.
fn rule_message_or_default(
    rule: &k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::ValidationRule,
) -> String {
    match rule.message.as_deref().filter(|m| !m.is_empty()) {
        Some(m) => m.trim().to_string(),
        None => format!("failed rule: {}", rule_error_string(rule)),
    }
}

/// kube's `ruleErrorString`.
fn rule_error_string(
    rule: &k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::ValidationRule,
) -> String {
    match rule.message.as_deref().filter(|m| !m.is_empty()) {
        Some(m) => m.trim().to_string(),
        None => rule.rule.trim().to_string(),
    }
}
