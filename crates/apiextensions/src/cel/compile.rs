//! Compiling a schema node's `x-kubernetes-validations`, as kube's `schema/cel/compilation.go`:
//! each rule is parsed and type-checked with `self` (and `oldSelf`) of the node's type
//! (rkcm-cel gives cel-go's messages), must be a `bool`, and is then compiled for evaluation;
//! a `messageExpression` must be a `string`.

use std::sync::Arc;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::ValidationRule;
use rkcm_cel::ast::{Expr, ExprKind};
use rkcm_cel::Type;

use super::library;

/// `self`, the value a rule validates.
pub const SCOPED_VAR_NAME: &str = "self";
/// `oldSelf`, its value before an update.
pub const OLD_SCOPED_VAR_NAME: &str = "oldSelf";

/// Why a rule or message expression does not compile (kube's `apiservercel.Error` of type
/// `Invalid`: an empty rule, kube's only `Required` one, is reported by the CRD's form checks).
#[derive(Clone, Debug, PartialEq)]
pub struct CompileError {
    /// What is wrong (`compilation failed: ERROR: <input>:1:6: ...`).
    pub detail: String,
}

impl CompileError {
    fn invalid(detail: impl Into<String>) -> Self {
        CompileError {
            detail: detail.into(),
        }
    }
}

/// One compiled rule; kube's `CompilationResult`.
#[derive(Clone)]
pub struct CompiledRule {
    /// The rule as written.
    pub rule: ValidationRule,
    /// The program (`None` for an empty rule or one that does not compile).
    pub program: Option<Arc<cel::Program>>,
    /// Why the rule does not compile.
    pub error: Option<CompileError>,
    /// The compiled `messageExpression`.
    pub message_program: Option<Arc<cel::Program>>,
    /// Why the `messageExpression` does not compile.
    pub message_error: Option<CompileError>,
    /// Whether the rule reads `oldSelf` (a transition rule).
    pub uses_old_self: bool,
    /// The shape of the rule, for its cost.
    pub shape: Shape,
    /// The shape of the `messageExpression`.
    pub message_shape: Shape,
}

/// Compiles `rules`, `self` and `oldSelf` being of type `self_type`.
pub fn compile_rules(rules: &[ValidationRule], self_type: &Type) -> Vec<CompiledRule> {
    let mut env = rkcm_cel::Env::new();
    env.declare(SCOPED_VAR_NAME, self_type.clone());
    env.declare(OLD_SCOPED_VAR_NAME, self_type.clone());
    rules.iter().map(|r| compile_rule(r, &env)).collect()
}

fn compile_rule(rule: &ValidationRule, env: &rkcm_cel::Env) -> CompiledRule {
    let mut out = CompiledRule {
        rule: rule.clone(),
        program: None,
        error: None,
        message_program: None,
        message_error: None,
        uses_old_self: false,
        shape: Shape::default(),
        message_shape: Shape::default(),
    };
    if rule.rule.trim().is_empty() {
        return out;
    }
    match compile_expression(&rule.rule, env, "compilation failed: ") {
        Err(e) => {
            out.error = Some(e);
            return out;
        }
        Ok((t, program, shape)) => {
            out.shape = shape;
            if !matches!(t, Type::Bool | Type::Dyn) {
                out.error = Some(CompileError::invalid(
                    "cel expression must evaluate to a bool",
                ));
                return out;
            }
            out.uses_old_self = program.references().has_variable(OLD_SCOPED_VAR_NAME);
            out.program = Some(Arc::new(program));
        }
    }
    if let Some(me) = rule.message_expression.as_deref().filter(|m| !m.is_empty()) {
        match compile_expression(me, env, "messageExpression compilation failed: ") {
            Err(e) => out.message_error = Some(e),
            Ok((t, _, _)) if !matches!(t, Type::String | Type::Dyn) => {
                out.message_error = Some(CompileError::invalid(
                    "messageExpression must evaluate to a string",
                ))
            }
            Ok((_, program, shape)) => {
                out.message_shape = shape;
                out.message_program = Some(Arc::new(program));
            }
        }
    }
    out
}

/// Parses and checks `src` (cel-go's messages, after `prefix`), then compiles it for evaluation.
fn compile_expression(
    src: &str,
    env: &rkcm_cel::Env,
    prefix: &str,
) -> Result<(Type, cel::Program, Shape), CompileError> {
    rkcm_cel::run_deep(|| {
        let (t, issues, shape) = match rkcm_cel::parse(src) {
            Err(issue) => (Type::Error, vec![issue], Shape::default()),
            Ok(expr) => {
                let (t, issues) = rkcm_cel::check(env, &expr);
                (t, issues, Shape::of(&expr))
            }
        };
        if !issues.is_empty() {
            return Err(CompileError::invalid(format!(
                "{prefix}{}",
                rkcm_cel::display(src, &issues)
            )));
        }
        // The evaluator's own parser runs on text rkcm-cel accepted; a panic in it is an
        // error of this expression, not of the server.
        let compiled = std::panic::catch_unwind(|| library::env().compile(src)).map_err(|_| {
            CompileError::invalid(format!(
                "{prefix}the expression could not be compiled for evaluation"
            ))
        })?;
        let program = compiled.map_err(|e| CompileError::invalid(format!("{prefix}{e}")))?;
        Ok((t, program, shape))
    })
}

/// What the cost of evaluating an expression is estimated from: its number of nodes and its
/// deepest nesting of comprehensions (each level may visit every element of a collection).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Shape {
    /// Nodes of the expression.
    pub nodes: u64,
    /// Deepest nesting of comprehension macros (`all`, `exists`, `map`, …).
    pub depth: u32,
}

impl Shape {
    fn of(e: &Expr) -> Shape {
        let children: Vec<&Expr> = match &e.kind {
            ExprKind::Literal(_) | ExprKind::Ident(_) => Vec::new(),
            ExprKind::Select { operand, .. } => vec![operand],
            ExprKind::OptionalSelect { operand, index } => vec![operand, index],
            ExprKind::Call { target, args, .. } => {
                target.iter().map(AsRef::as_ref).chain(args).collect()
            }
            ExprKind::List(items) => items.iter().collect(),
            ExprKind::Map(entries) => entries.iter().flat_map(|(k, v)| [k, v]).collect(),
            ExprKind::Struct { fields, .. } => fields.iter().map(|(_, v)| v).collect(),
            ExprKind::Comprehension {
                range,
                predicate,
                transform,
                ..
            } => {
                let range = Shape::of(range);
                let body: Vec<Shape> = predicate
                    .iter()
                    .chain(transform)
                    .map(|b| Shape::of(b))
                    .collect();
                return Shape {
                    nodes: 1 + range.nodes + body.iter().map(|b| b.nodes).sum::<u64>(),
                    depth: range
                        .depth
                        .max(1 + body.iter().map(|b| b.depth).max().unwrap_or(0)),
                };
            }
        };
        children
            .into_iter()
            .map(Shape::of)
            .fold(Shape { nodes: 1, depth: 0 }, |acc, c| Shape {
                nodes: acc.nodes + c.nodes,
                depth: acc.depth.max(c.depth),
            })
    }

    /// The estimated cost of one evaluation on values whose largest collection has `breadth`
    /// elements: the nodes, times the breadth once per level of comprehension.
    pub fn cost(&self, breadth: u64) -> u64 {
        (0..self.depth).fold(self.nodes, |c, _| c.saturating_mul(breadth.max(1)))
    }
}
