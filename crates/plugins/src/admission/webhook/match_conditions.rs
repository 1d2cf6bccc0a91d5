//! `matchConditions`: CEL expressions over `object`, `oldObject` and `request` that must all
//! be true for the webhook to be called (`matchconditions/matcher.go`). One false condition
//! skips the webhook whatever the others give; errors with no false condition skip it under
//! `failurePolicy: Ignore` and refuse the request (403) under `Fail`. The `authorizer`
//! variable asks the server's authorizer about the request's user.

use std::sync::Arc;

use cel::{Context, Value};
use serde_json::Value as Json;

use rkcm_apiextensions::cel::{library, to_value};

/// One compiled condition.
#[derive(Debug)]
pub struct Compiled {
    /// `name`.
    pub name: String,
    /// `expression`.
    pub expression: String,
    program: Result<Arc<cel::Program>, String>,
}

impl Compiled {
    /// Compiles `expression` in the CEL environment of the server's rules.
    pub fn new(name: &str, expression: &str) -> Self {
        let compiled = std::panic::catch_unwind(|| library::env().compile(expression))
            .map_err(|_| "the expression could not be compiled".to_string())
            .and_then(|r| r.map_err(|e| e.to_string()));
        Self {
            name: name.to_string(),
            expression: expression.to_string(),
            program: compiled.map(Arc::new),
        }
    }
}

impl Compiled {
    /// The compiled program, or why the expression does not compile.
    pub fn program(&self) -> Result<&cel::Program, &str> {
        match &self.program {
            Ok(p) => Ok(p),
            Err(e) => Err(e),
        }
    }
}

/// What the conditions say of a request.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Every condition is true.
    Matches,
    /// Condition `name` is false.
    Excluded(String),
    /// No condition is false, some could not be evaluated (their errors, kube's words).
    Errors(Vec<String>),
}

/// Evaluates `conditions` with `object` and `oldObject` (null when absent), `request` (the
/// review's request without its objects) and `authorizer` (the variables of
/// [`crate::admission::cel_authorizer`]).
pub fn evaluate(
    conditions: &[Compiled],
    object: Option<&Json>,
    old_object: Option<&Json>,
    request: &Json,
    authorizer: Vec<(&'static str, Value)>,
) -> Verdict {
    if conditions.is_empty() {
        return Verdict::Matches;
    }
    let mut ctx = Context::with_env(library::env());
    let value = |v: Option<&Json>| v.map_or(Value::Null, |v| to_value(v, None, false));
    ctx.add_variable_from_value("object", value(object));
    ctx.add_variable_from_value("oldObject", value(old_object));
    ctx.add_variable_from_value("request", to_value(request, None, false));
    for (name, value) in authorizer {
        ctx.add_variable_from_value(name, value);
    }
    evaluate_in(conditions, &ctx)
}

/// Evaluates `conditions` in `ctx`, which holds their variables.
pub fn evaluate_in(conditions: &[Compiled], ctx: &Context) -> Verdict {
    let mut errors = Vec::new();
    for c in conditions {
        let program = match &c.program {
            Ok(p) => p,
            Err(e) => {
                errors.push(format!("compilation failed: {e}"));
                continue;
            }
        };
        match library::run_guarded(|| program.execute(ctx)) {
            Ok(Value::Bool(true)) => {}
            Ok(Value::Bool(false)) => return Verdict::Excluded(c.name.clone()),
            Ok(other) => errors.push(format!(
                "expression '{}' resulted in error: expected a bool, got {:?}",
                c.expression,
                other.type_of()
            )),
            Err(e) => errors.push(format!(
                "expression '{}' resulted in error: {}",
                c.expression,
                library::execution_error_message(&e)
            )),
        }
    }
    if errors.is_empty() {
        Verdict::Matches
    } else {
        Verdict::Errors(errors)
    }
}

/// Errors joined as Go's `utilerrors.NewAggregate` prints them.
pub fn aggregate(errors: &[String]) -> String {
    match errors {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn conditions(exprs: &[(&str, &str)]) -> Vec<Compiled> {
        exprs.iter().map(|(n, e)| Compiled::new(n, e)).collect()
    }

    fn request() -> Json {
        json!({"operation": "CREATE", "namespace": "ns", "userInfo": {"username": "alice"}})
    }

    // matchconditions/matcher_test.go: false wins over errors, errors without a false are
    // reported, all true matches.
    #[test]
    fn one_false_condition_excludes_whatever_the_others_give() {
        let obj = json!({"metadata": {"name": "p", "labels": {"a": "b"}}});
        let all_true = conditions(&[
            ("op", "request.operation == 'CREATE'"),
            ("label", "object.metadata.labels.a == 'b'"),
            ("old", "oldObject == null"),
        ]);
        assert_eq!(
            evaluate(&all_true, Some(&obj), None, &request(), Vec::new()),
            Verdict::Matches
        );
        let one_false = conditions(&[
            ("err", "object.spec.nope == 1"),
            ("user", "request.userInfo.username == 'bob'"),
        ]);
        assert_eq!(
            evaluate(&one_false, Some(&obj), None, &request(), Vec::new()),
            Verdict::Excluded("user".into())
        );
        let errors = conditions(&[("ok", "true"), ("err", "object.spec.nope == 1")]);
        let Verdict::Errors(errs) = evaluate(&errors, Some(&obj), None, &request(), Vec::new())
        else {
            panic!("errors expected");
        };
        assert_eq!(errs.len(), 1);
        assert!(
            errs[0].starts_with("expression 'object.spec.nope == 1' resulted in error: "),
            "{errs:?}"
        );
        assert_eq!(
            evaluate(&[], None, None, &request(), Vec::new()),
            Verdict::Matches
        );
    }

    #[test]
    fn errors_aggregate_as_go_prints_them() {
        assert_eq!(aggregate(&["a".into()]), "a");
        assert_eq!(aggregate(&["a".into(), "b".into()]), "[a, b]");
    }
}
