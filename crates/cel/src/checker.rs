//! Type-checks a parsed CEL expression against declared variables, reporting what cel-go's
//! checker reports for the constructs it knows (`checker/checker.go`, `checker/errors.go`):
//! undeclared references, undefined fields, field selection on scalars, no matching overload
//! of an operator or known function, comprehension ranges. Whatever it does not know is `dyn`.

use std::collections::BTreeMap;

use super::ast::{Expr, ExprKind, Literal, MacroKind};
use super::issues::Issue;
use super::overloads::{lookup, Known};
use super::types::{assignable, join, Bindings, Type};

/// The variables an expression may use.
#[derive(Clone, Debug, Default)]
pub struct Env {
    vars: BTreeMap<String, Type>,
}

impl Env {
    /// An environment without variables.
    pub fn new() -> Self {
        Self::default()
    }

    /// Declares `name` as a variable of type `t`.
    pub fn declare(&mut self, name: &str, t: Type) {
        self.vars.insert(name.to_string(), t);
    }
}

/// The type of `expr` under `env`, and the issues found (empty when it checks).
pub fn check(env: &Env, expr: &Expr) -> (Type, Vec<Issue>) {
    let mut c = Checker {
        env,
        scopes: Vec::new(),
        issues: Vec::new(),
    };
    let t = c.check(expr);
    (t, c.issues)
}

struct Checker<'a> {
    env: &'a Env,
    scopes: Vec<(String, Type)>,
    issues: Vec<Issue>,
}

fn type_name(name: &str) -> Option<Type> {
    Some(match name {
        "int" => Type::Int,
        "uint" => Type::Uint,
        "double" => Type::Double,
        "string" => Type::String,
        "bool" => Type::Bool,
        "bytes" => Type::Bytes,
        "null_type" => Type::Null,
        "list" => Type::list(Type::Dyn),
        "map" => Type::map(Type::Dyn, Type::Dyn),
        "type" => Type::TypeOf(Box::new(Type::Dyn)),
        _ => return None,
    })
}

/// `(int, string)` or `string.(int)`, as cel-go's `formatFunctionDeclType` prints a call.
fn signature(receiver: Option<&Type>, args: &[Type]) -> String {
    let list = args
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    match receiver {
        Some(r) => format!("{r}.({list})"),
        None => format!("({list})"),
    }
}

impl Checker<'_> {
    fn report(&mut self, offset: usize, message: String) {
        self.issues.push(Issue::new(offset, message));
    }

    fn lookup_var(&self, name: &str) -> Option<Type> {
        self.scopes
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, t)| t.clone())
            .or_else(|| self.env.vars.get(name).cloned())
    }

    fn check(&mut self, e: &Expr) -> Type {
        match &e.kind {
            ExprKind::Literal(l) => match l {
                Literal::Null => Type::Null,
                Literal::Bool(_) => Type::Bool,
                Literal::Int(_) => Type::Int,
                Literal::Uint(_) => Type::Uint,
                Literal::Double(_) => Type::Double,
                Literal::String(_) => Type::String,
                Literal::Bytes(_) => Type::Bytes,
            },
            ExprKind::Ident(name) => self.ident(e.offset, name),
            ExprKind::Select {
                operand,
                field,
                test_only,
            } => {
                // A variable with a dotted name (`authorizer.requestResource`) is found first,
                // as cel-go resolves qualified names before selections.
                if !*test_only {
                    if let Some(t) = qualified_name(e).and_then(|n| self.env.vars.get(&n)) {
                        if !self
                            .scopes
                            .iter()
                            .any(|(v, _)| Some(v.as_str()) == qualified_root(e))
                        {
                            return t.clone();
                        }
                    }
                }
                // A qualified name such as `google.protobuf.Timestamp` is not a variable.
                if let Some(root) = qualified_root(operand) {
                    if self.lookup_var(root).is_none()
                        && type_name(root).is_none()
                        && root != "google"
                    {
                        return self.ident(operand_root_offset(operand), root);
                    }
                    if root == "google" && self.lookup_var(root).is_none() {
                        return Type::Dyn;
                    }
                }
                let t = self.check(operand);
                let result = match &t {
                    Type::Object(o) => match o.fields.get(field) {
                        Some(f) => f.clone(),
                        None => {
                            self.report(e.offset, format!("undefined field '{field}'"));
                            Type::Error
                        }
                    },
                    Type::Map(_, v) => (**v).clone(),
                    Type::Dyn | Type::Error => Type::Dyn,
                    other => {
                        self.report(
                            e.offset,
                            format!("type '{other}' does not support field selection"),
                        );
                        Type::Dyn
                    }
                };
                if *test_only {
                    Type::Bool
                } else {
                    result
                }
            }
            ExprKind::OptionalSelect { operand, index } => {
                self.check(operand);
                self.check(index);
                Type::Dyn
            }
            ExprKind::Call {
                target,
                function,
                args,
            } => {
                let recv = target.as_ref().map(|t| self.check(t));
                let arg_types: Vec<Type> = args.iter().map(|a| self.check(a)).collect();
                self.resolve(e.offset, function, recv.as_ref(), &arg_types)
            }
            ExprKind::List(elems) => {
                let mut elem = None;
                for x in elems {
                    let t = self.check(x);
                    elem = Some(join(elem, &t));
                }
                Type::list(elem.unwrap_or(Type::Dyn))
            }
            ExprKind::Map(entries) => {
                let (mut key, mut value) = (None, None);
                for (k, v) in entries {
                    let kt = self.check(k);
                    key = Some(join(key, &kt));
                    let vt = self.check(v);
                    value = Some(join(value, &vt));
                }
                Type::map(key.unwrap_or(Type::Dyn), value.unwrap_or(Type::Dyn))
            }
            ExprKind::Struct { fields, .. } => {
                for (_, v) in fields {
                    self.check(v);
                }
                Type::Dyn
            }
            ExprKind::Comprehension {
                kind,
                var,
                range,
                predicate,
                transform,
            } => self.comprehension(
                e.offset,
                *kind,
                var,
                range,
                predicate.as_deref(),
                transform.as_deref(),
            ),
        }
    }

    fn ident(&mut self, offset: usize, name: &str) -> Type {
        if let Some(t) = self.lookup_var(name) {
            return t;
        }
        if let Some(t) = type_name(name) {
            return Type::TypeOf(Box::new(t));
        }
        self.report(
            offset,
            format!("undeclared reference to '{name}' (in container '')"),
        );
        Type::Error
    }

    /// Finds an overload of `function` for the argument types, or reports cel-go's
    /// `found no matching overload` and returns the error type.
    fn resolve(
        &mut self,
        offset: usize,
        function: &str,
        recv: Option<&Type>,
        args: &[Type],
    ) -> Type {
        let on_opaque = matches!(recv, Some(Type::Opaque(_)));
        let overloads = match lookup(function, on_opaque) {
            None => {
                // `type(x)` gives the type of its argument.
                if function == "type" && recv.is_none() && args.len() == 1 {
                    return Type::TypeOf(Box::new(args[0].clone()));
                }
                return Type::Dyn;
            }
            Some(Known::Conversion(t)) => return t,
            Some(Known::Overloads(o)) => o,
        };
        let mut results: Vec<Type> = Vec::new();
        for o in &overloads {
            if o.receiver.is_some() != recv.is_some() || o.params.len() != args.len() {
                continue;
            }
            let mut b = Bindings::default();
            let recv_ok = match (&o.receiver, recv) {
                (Some(want), Some(got)) => assignable(want, got, &mut b),
                _ => true,
            };
            if recv_ok
                && o.params
                    .iter()
                    .zip(args)
                    .all(|(p, a)| assignable(p, a, &mut b))
            {
                results.push(b.substitute(&o.result));
            }
        }
        match results.split_first() {
            None => {
                self.report(
                    offset,
                    format!(
                        "found no matching overload for '{function}' applied to '{}'",
                        signature(recv, args)
                    ),
                );
                Type::Error
            }
            Some((first, rest)) if rest.iter().all(|r| r == first) => first.clone(),
            Some(_) => Type::Dyn,
        }
    }

    fn comprehension(
        &mut self,
        offset: usize,
        kind: MacroKind,
        var: &str,
        range: &Expr,
        predicate: Option<&Expr>,
        transform: Option<&Expr>,
    ) -> Type {
        let range_type = self.check(range);
        let var_type = match &range_type {
            Type::List(e) => (**e).clone(),
            Type::Map(k, _) => (**k).clone(),
            Type::Dyn | Type::Error => Type::Dyn,
            other => {
                self.report(
                    range.offset,
                    format!(
                        "expression of type '{other}' cannot be the range of a comprehension (must be list, map, or dynamic)"
                    ),
                );
                Type::Error
            }
        };
        self.scopes.push((var.to_string(), var_type.clone()));
        let p = predicate.map(|p| self.check(p));
        let f = transform.map(|f| self.check(f));
        self.scopes.pop();
        // The loop steps cel-go's macros expand to, checked as it checks them.
        match kind {
            MacroKind::All => {
                self.resolve(offset, "_&&_", None, &[Type::Bool, p.unwrap_or(Type::Dyn)]);
                Type::Bool
            }
            MacroKind::Exists => {
                self.resolve(offset, "_||_", None, &[Type::Bool, p.unwrap_or(Type::Dyn)]);
                Type::Bool
            }
            MacroKind::ExistsOne => {
                self.resolve(
                    offset,
                    "_?_:_",
                    None,
                    &[p.unwrap_or(Type::Dyn), Type::Int, Type::Int],
                );
                Type::Bool
            }
            MacroKind::Map => Type::list(f.unwrap_or(Type::Dyn)),
            MacroKind::MapFilter => {
                let list = Type::list(f.unwrap_or(Type::Dyn));
                self.resolve(
                    offset,
                    "_?_:_",
                    None,
                    &[p.unwrap_or(Type::Dyn), list.clone(), list.clone()],
                );
                list
            }
            MacroKind::Filter => {
                let list = Type::list(if var_type == Type::Error {
                    Type::Dyn
                } else {
                    var_type
                });
                self.resolve(
                    offset,
                    "_?_:_",
                    None,
                    &[p.unwrap_or(Type::Dyn), list.clone(), list.clone()],
                );
                list
            }
        }
    }
}

/// `a.b.c` for a chain of selections on an identifier.
fn qualified_name(e: &Expr) -> Option<String> {
    match &e.kind {
        ExprKind::Ident(n) => Some(n.clone()),
        ExprKind::Select {
            operand,
            field,
            test_only: false,
        } => qualified_name(operand).map(|q| format!("{q}.{field}")),
        _ => None,
    }
}

/// The first name of a chain of selections on an identifier (`a` in `a.b.c`).
fn qualified_root(e: &Expr) -> Option<&str> {
    match &e.kind {
        ExprKind::Ident(n) => Some(n),
        ExprKind::Select {
            operand,
            test_only: false,
            ..
        } => qualified_root(operand),
        _ => None,
    }
}

fn operand_root_offset(e: &Expr) -> usize {
    match &e.kind {
        ExprKind::Select { operand, .. } => operand_root_offset(operand),
        _ => e.offset,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::issues::display;
    use crate::parser::parse;

    fn deployment() -> Type {
        let spec = Type::object(
            "Deployment.spec",
            BTreeMap::from([
                ("replicas".to_string(), Type::Int),
                ("paused".to_string(), Type::Bool),
                (
                    "template".to_string(),
                    Type::object(
                        "Deployment.spec.template",
                        BTreeMap::from([(
                            "spec".to_string(),
                            Type::object(
                                "Deployment.spec.template.spec",
                                BTreeMap::from([(
                                    "containers".to_string(),
                                    Type::list(Type::object(
                                        "Deployment.spec.template.spec.containers.@idx",
                                        BTreeMap::from([
                                            ("name".to_string(), Type::String),
                                            ("image".to_string(), Type::String),
                                        ]),
                                    )),
                                )]),
                            ),
                        )]),
                    ),
                ),
                ("strategy".to_string(), Type::Dyn),
            ]),
        );
        let meta = Type::object(
            "Deployment.metadata",
            BTreeMap::from([
                ("name".to_string(), Type::String),
                ("labels".to_string(), Type::map(Type::String, Type::String)),
                ("creationTimestamp".to_string(), Type::Timestamp),
            ]),
        );
        Type::object(
            "Deployment",
            BTreeMap::from([("spec".to_string(), spec), ("metadata".to_string(), meta)]),
        )
    }

    fn issues(src: &str) -> String {
        let mut env = Env::new();
        env.declare("object", deployment());
        env.declare("oldObject", deployment());
        let expr = match parse(src) {
            Ok(e) => e,
            Err(i) => return display(src, &[i]),
        };
        display(src, &check(&env, &expr).1)
    }

    #[test]
    fn well_typed_expressions_pass() {
        for src in [
            "object.spec.replicas > 1",
            "object.spec.replicas < 100",
            "object.spec.replicas > 1.5",
            "object.metadata.name.startsWith('web') && size(object.metadata.name) < 64",
            "object.spec.template.spec.containers.all(c, c.image.contains(':'))",
            "object.spec.template.spec.containers.exists_one(c, c.name == 'main')",
            "object.spec.template.spec.containers.map(c, c.name).exists(n, n == 'x')",
            "object.spec.template.spec.containers.filter(c, c.name != 'x').size() > 0",
            "object.metadata.labels.all(k, object.metadata.labels[k] != '')",
            "'app' in object.metadata.labels && has(object.spec.replicas)",
            "object.spec.strategy.type == 'Recreate' && object.spec.strategy.whatever > 3",
            "type(object.spec.replicas) == int",
            "object.metadata.creationTimestamp < timestamp('2030-01-01T00:00:00Z')",
            "object.spec.template.spec.containers.someLibraryFunction()",
            "[1, 'a'].size() == 2 && {'a': 1}['a'] == 1",
            "oldObject == null || object.spec.replicas >= oldObject.spec.replicas",
        ] {
            assert_eq!(issues(src), "", "{src}");
        }
    }

    #[test]
    fn an_undefined_field_is_reported_at_its_dot() {
        assert_eq!(
            issues("object.spec.nonExistingFirst > 1"),
            "ERROR: <input>:1:12: undefined field 'nonExistingFirst'\n | object.spec.nonExistingFirst > 1\n | ...........^"
        );
    }

    #[test]
    fn wrong_operand_types_find_no_matching_overload() {
        assert_eq!(
            issues("object.spec.replicas > '1'"),
            "ERROR: <input>:1:22: found no matching overload for '_>_' applied to '(int, string)'\n | object.spec.replicas > '1'\n | .....................^"
        );
        assert!(issues("object.spec.replicas == 'x'")
            .contains("found no matching overload for '_==_' applied to '(int, string)'"));
        assert!(issues("object.spec.replicas == null")
            .contains("found no matching overload for '_==_' applied to '(int, null)'"));
        assert!(issues("object.metadata.name.contains(1)")
            .contains("found no matching overload for 'contains' applied to 'string.(int)'"));
        assert!(issues("size(object.spec.replicas) > 0")
            .contains("found no matching overload for 'size' applied to '(int)'"));
        assert!(issues("object.metadata.labels[1] == ''").contains(
            "found no matching overload for '_[_]' applied to '(map(string, string), int)'"
        ));
        assert!(issues("!object.spec.replicas")
            .contains("found no matching overload for '!_' applied to '(int)'"));
    }

    #[test]
    fn one_expression_can_have_several_issues() {
        let shown = issues("object.spec.replicas > '1' && object.spec.nonExisting == 1");
        assert!(shown.contains("undefined field 'nonExisting'"), "{shown}");
        assert!(
            shown.contains("'_>_' applied to '(int, string)'"),
            "{shown}"
        );
        // An expression that already failed does not fail its parents again.
        assert_eq!(shown.matches("ERROR").count(), 2);
    }

    #[test]
    fn comprehensions_check_their_range_and_predicate() {
        assert!(issues("object.spec.replicas.all(x, x > 0)").contains(
            "expression of type 'int' cannot be the range of a comprehension (must be list, map, or dynamic)"
        ));
        assert!(
            issues("object.spec.template.spec.containers.all(c, c.nme == 'x')")
                .contains("undefined field 'nme'")
        );
        assert!(issues("object.spec.template.spec.containers.all(c, 1)")
            .contains("found no matching overload for '_&&_' applied to '(bool, int)'"));
        assert!(
            issues("object.spec.template.spec.containers.map(c, c.name).all(n, n > 1)")
                .contains("'_>_' applied to '(string, int)'")
        );
    }

    #[test]
    fn selection_on_a_scalar_and_undeclared_names_are_reported() {
        assert!(issues("object.spec.replicas.foo == 1")
            .contains("type 'int' does not support field selection"));
        assert!(issues("obj.spec == 1").contains("undeclared reference to 'obj' (in container '')"));
        assert!(issues("has(object.spec.text)").contains("undefined field 'text'"));
    }
}
