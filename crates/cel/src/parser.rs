//! A recursive-descent parser for CEL (the grammar of cel-go's `parser/gen/CEL.g4`), expanding
//! the standard macros (`has`, `all`, `exists`, `exists_one`, `map`, `filter`) as cel-go's
//! `parser/macro.go` does and locating every node where cel-go's parser locates it.

use super::ast::{Expr, ExprKind, Literal, MacroKind};
use super::issues::Issue;
use super::lexer::{tokenize, Token, TokenKind};

/// Words CEL reserves; using one as an identifier is an error (`reserved identifier: if`).
pub(crate) const RESERVED: &[&str] = &[
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// Deepest nesting accepted, as cel-go's default `MaxRecursionDepth` (250).
const MAX_DEPTH: usize = 250;

/// Longest expression accepted, in code points (cel-go's `ExpressionSizeCodePointLimit`).
const MAX_CODE_POINTS: usize = 100_000;

/// Parses `src`; a syntax error is returned as the issue cel-go would report first.
pub fn parse(src: &str) -> Result<Expr, Issue> {
    let size = src.chars().count();
    if size > MAX_CODE_POINTS {
        return Err(Issue::new(
            0,
            format!(
                "expression code point size exceeds limit: size: {size}, limit {MAX_CODE_POINTS}"
            ),
        ));
    }
    let tokens = tokenize(src).map_err(|e| Issue::new(e.offset, e.message))?;
    let mut p = Parser {
        tokens,
        pos: 0,
        depth: 0,
    };
    let expr = p.expr()?;
    let tok = p.peek();
    if tok.kind != TokenKind::Eof {
        return Err(Issue::new(
            tok.offset,
            format!(
                "Syntax error: extraneous input '{}' expecting <EOF>",
                tok.text
            ),
        ));
    }
    Ok(expr)
}

struct Parser {
    tokens: Vec<Token>,
    pos: usize,
    depth: usize,
}

fn call(offset: usize, function: &str, args: Vec<Expr>) -> Expr {
    Expr {
        offset,
        kind: ExprKind::Call {
            target: None,
            function: function.to_string(),
            args,
        },
    }
}

impl Parser {
    fn peek(&self) -> &Token {
        &self.tokens[self.pos.min(self.tokens.len() - 1)]
    }

    fn peek_at(&self, n: usize) -> &Token {
        &self.tokens[(self.pos + n).min(self.tokens.len() - 1)]
    }

    fn is(&self, p: &str) -> bool {
        matches!(&self.peek().kind, TokenKind::Punct(q) if *q == p)
    }

    fn bump(&mut self) -> Token {
        let t = self.peek().clone();
        if self.pos < self.tokens.len() - 1 {
            self.pos += 1;
        }
        t
    }

    fn mismatched(&self, expecting: &str) -> Issue {
        let tok = self.peek();
        Issue::new(
            tok.offset,
            format!(
                "Syntax error: mismatched input '{}' expecting {expecting}",
                tok.text
            ),
        )
    }

    fn expect(&mut self, p: &str) -> Result<Token, Issue> {
        if self.is(p) {
            Ok(self.bump())
        } else {
            Err(self.mismatched(&format!("'{p}'")))
        }
    }

    /// Refuses nesting deeper than [`MAX_DEPTH`]: nested expressions and chains of operators
    /// both deepen the tree (and cel-go's recursive visitor).
    fn check_depth(&self, chained: usize) -> Result<(), Issue> {
        if self.depth + chained > MAX_DEPTH {
            return Err(Issue::new(
                self.peek().offset,
                format!("expression recursion limit exceeded: {MAX_DEPTH}"),
            ));
        }
        Ok(())
    }

    fn expr(&mut self) -> Result<Expr, Issue> {
        self.depth += 1;
        self.check_depth(0)?;
        let cond = self.conditional_or()?;
        let result = if self.is("?") {
            let q = self.bump();
            let then = self.conditional_or()?;
            self.expect(":")?;
            let otherwise = self.expr()?;
            Ok(call(q.offset, "_?_:_", vec![cond, then, otherwise]))
        } else {
            Ok(cond)
        };
        self.depth -= 1;
        result
    }

    /// `a || b || c`, built as cel-go's balanced tree of `_||_` calls.
    fn conditional_or(&mut self) -> Result<Expr, Issue> {
        self.logical("||", "_||_", Self::conditional_and)
    }

    fn conditional_and(&mut self) -> Result<Expr, Issue> {
        self.logical("&&", "_&&_", Self::relation)
    }

    fn logical(
        &mut self,
        op: &str,
        function: &str,
        next: fn(&mut Self) -> Result<Expr, Issue>,
    ) -> Result<Expr, Issue> {
        let mut terms = vec![next(self)?];
        let mut ops = Vec::new();
        while self.is(op) {
            ops.push(self.bump().offset);
            terms.push(next(self)?);
        }
        Ok(balance(
            function,
            &mut terms.into_iter().map(Some).collect::<Vec<_>>(),
            &ops,
            0,
            ops.len(),
        ))
    }

    fn relation(&mut self) -> Result<Expr, Issue> {
        let mut left = self.addition()?;
        let mut chained = 0;
        loop {
            self.check_depth(chained)?;
            chained += 1;
            let function = match &self.peek().kind {
                TokenKind::Punct("<") => "_<_",
                TokenKind::Punct("<=") => "_<=_",
                TokenKind::Punct(">") => "_>_",
                TokenKind::Punct(">=") => "_>=_",
                TokenKind::Punct("==") => "_==_",
                TokenKind::Punct("!=") => "_!=_",
                TokenKind::Ident(w) if w == "in" => "@in",
                _ => return Ok(left),
            };
            let op = self.bump();
            let right = self.addition()?;
            left = call(op.offset, function, vec![left, right]);
        }
    }

    fn addition(&mut self) -> Result<Expr, Issue> {
        let mut left = self.multiplication()?;
        let mut chained = 0;
        loop {
            self.check_depth(chained)?;
            chained += 1;
            let function = match &self.peek().kind {
                TokenKind::Punct("+") => "_+_",
                TokenKind::Punct("-") => "_-_",
                _ => return Ok(left),
            };
            let op = self.bump();
            let right = self.multiplication()?;
            left = call(op.offset, function, vec![left, right]);
        }
    }

    fn multiplication(&mut self) -> Result<Expr, Issue> {
        let mut left = self.unary()?;
        let mut chained = 0;
        loop {
            self.check_depth(chained)?;
            chained += 1;
            let function = match &self.peek().kind {
                TokenKind::Punct("*") => "_*_",
                TokenKind::Punct("/") => "_/_",
                TokenKind::Punct("%") => "_%_",
                _ => return Ok(left),
            };
            let op = self.bump();
            let right = self.unary()?;
            left = call(op.offset, function, vec![left, right]);
        }
    }

    fn unary(&mut self) -> Result<Expr, Issue> {
        if self.is("!") || self.is("-") {
            let first = self.peek().clone();
            let p = if self.is("!") { "!" } else { "-" };
            // `-1` is a literal, not a negation (the grammar's signed literals).
            if p == "-" {
                match self.peek_at(1).kind {
                    TokenKind::Int(v) => {
                        self.bump();
                        self.bump();
                        return self.member_suffix(Expr {
                            offset: first.offset,
                            kind: ExprKind::Literal(Literal::Int(-v)),
                        });
                    }
                    TokenKind::Uint(v) if v == 1 << 63 => {
                        self.bump();
                        self.bump();
                        return self.member_suffix(Expr {
                            offset: first.offset,
                            kind: ExprKind::Literal(Literal::Int(i64::MIN)),
                        });
                    }
                    TokenKind::Double(v) => {
                        self.bump();
                        self.bump();
                        return self.member_suffix(Expr {
                            offset: first.offset,
                            kind: ExprKind::Literal(Literal::Double(-v)),
                        });
                    }
                    _ => {}
                }
            }
            let mut count = 0;
            while self.is(p) {
                self.bump();
                count += 1;
            }
            let operand = self.member()?;
            // An even number of `!` or `-` cancels out, as in cel-go's visitor.
            if count % 2 == 0 {
                return Ok(operand);
            }
            let function = if p == "!" { "!_" } else { "-_" };
            return Ok(call(first.offset, function, vec![operand]));
        }
        self.member()
    }

    fn member(&mut self) -> Result<Expr, Issue> {
        let primary = self.primary()?;
        self.member_suffix(primary)
    }

    fn member_suffix(&mut self, mut expr: Expr) -> Result<Expr, Issue> {
        let mut chained = 0;
        loop {
            self.check_depth(chained)?;
            chained += 1;
            if self.is(".") {
                let dot = self.bump();
                let optional = if self.is("?") {
                    self.bump();
                    true
                } else {
                    false
                };
                let name = match self.peek().kind.clone() {
                    // The literals are keywords of the grammar, not identifiers: `self.true`
                    // does not parse (a field so named is selected as `self.__true__`).
                    TokenKind::Ident(name)
                        if !matches!(name.as_str(), "true" | "false" | "null") =>
                    {
                        self.bump();
                        name
                    }
                    _ => return Err(self.mismatched("IDENTIFIER")),
                };
                if optional {
                    expr = Expr {
                        offset: dot.offset,
                        kind: ExprKind::OptionalSelect {
                            operand: Box::new(expr),
                            index: Box::new(Expr {
                                offset: dot.offset,
                                kind: ExprKind::Literal(Literal::String(name)),
                            }),
                        },
                    };
                } else if self.is("(") {
                    let open = self.bump();
                    let args = self.expr_list(")")?;
                    self.expect(")")?;
                    expr = receiver_call_or_macro(open.offset, &name, expr, args)?;
                } else {
                    expr = Expr {
                        offset: dot.offset,
                        kind: ExprKind::Select {
                            operand: Box::new(expr),
                            field: name,
                            test_only: false,
                        },
                    };
                }
            } else if self.is("[") {
                let open = self.bump();
                let optional = if self.is("?") {
                    self.bump();
                    true
                } else {
                    false
                };
                let index = self.expr()?;
                self.expect("]")?;
                expr = if optional {
                    Expr {
                        offset: open.offset,
                        kind: ExprKind::OptionalSelect {
                            operand: Box::new(expr),
                            index: Box::new(index),
                        },
                    }
                } else {
                    call(open.offset, "_[_]", vec![expr, index])
                };
            } else {
                return Ok(expr);
            }
        }
    }

    fn expr_list(&mut self, close: &str) -> Result<Vec<Expr>, Issue> {
        let mut out = Vec::new();
        if self.is(close) {
            return Ok(out);
        }
        loop {
            out.push(self.expr()?);
            if self.is(",") {
                self.bump();
                // A trailing comma is allowed in list and map literals, not in calls.
                if self.is(close) && close != ")" {
                    return Ok(out);
                }
                continue;
            }
            return Ok(out);
        }
    }

    fn primary(&mut self) -> Result<Expr, Issue> {
        let tok = self.peek().clone();
        let literal = |l: Literal| Expr {
            offset: tok.offset,
            kind: ExprKind::Literal(l),
        };
        match tok.kind.clone() {
            TokenKind::Int(v) => {
                self.bump();
                Ok(literal(Literal::Int(v)))
            }
            TokenKind::Uint(v) if v == 1 << 63 && tok.text == "9223372036854775808" => Err(
                Issue::new(tok.offset, "invalid int literal".to_string()),
            ),
            TokenKind::Uint(v) => {
                self.bump();
                Ok(literal(Literal::Uint(v)))
            }
            TokenKind::Double(v) => {
                self.bump();
                Ok(literal(Literal::Double(v)))
            }
            TokenKind::String(s) => {
                self.bump();
                Ok(literal(Literal::String(s)))
            }
            TokenKind::Bytes(b) => {
                self.bump();
                Ok(literal(Literal::Bytes(b)))
            }
            TokenKind::Punct("(") => {
                self.bump();
                let e = self.expr()?;
                self.expect(")")?;
                Ok(e)
            }
            TokenKind::Punct("[") => {
                self.bump();
                let elems = self.expr_list("]")?;
                self.expect("]")?;
                Ok(Expr {
                    offset: tok.offset,
                    kind: ExprKind::List(elems),
                })
            }
            TokenKind::Punct("{") => {
                self.bump();
                let mut entries = Vec::new();
                while !self.is("}") {
                    if self.is("?") {
                        self.bump();
                    }
                    let k = self.expr()?;
                    self.expect(":")?;
                    let v = self.expr()?;
                    entries.push((k, v));
                    if self.is(",") {
                        self.bump();
                    } else {
                        break;
                    }
                }
                self.expect("}")?;
                Ok(Expr {
                    offset: tok.offset,
                    kind: ExprKind::Map(entries),
                })
            }
            TokenKind::Punct(".") => {
                // A leading dot names the root scope: `.object`.
                self.bump();
                match self.peek().kind.clone() {
                    TokenKind::Ident(_) => self.ident_or_call(tok.offset),
                    _ => Err(self.mismatched("IDENTIFIER")),
                }
            }
            TokenKind::Ident(_) => self.ident_or_call(tok.offset),
            _ => Err(self.mismatched(
                "{'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}",
            )),
        }
    }

    fn ident_or_call(&mut self, offset: usize) -> Result<Expr, Issue> {
        let tok = self.bump();
        let TokenKind::Ident(name) = tok.kind else {
            return Err(self.mismatched("IDENTIFIER"));
        };
        match name.as_str() {
            "true" => {
                return Ok(Expr {
                    offset,
                    kind: ExprKind::Literal(Literal::Bool(true)),
                })
            }
            "false" => {
                return Ok(Expr {
                    offset,
                    kind: ExprKind::Literal(Literal::Bool(false)),
                })
            }
            "null" => {
                return Ok(Expr {
                    offset,
                    kind: ExprKind::Literal(Literal::Null),
                })
            }
            "in" => {
                return Err(Issue::new(
                    tok.offset,
                    "Syntax error: mismatched input 'in' expecting IDENTIFIER".to_string(),
                ))
            }
            _ => {}
        }
        if RESERVED.contains(&name.as_str()) {
            return Err(Issue::new(
                tok.offset,
                format!("reserved identifier: {name}"),
            ));
        }
        if self.is("(") {
            let open = self.bump();
            let args = self.expr_list(")")?;
            self.expect(")")?;
            return global_call_or_macro(open.offset, &name, args);
        }
        if self.is("{") {
            self.bump();
            let mut fields = Vec::new();
            while !self.is("}") {
                if self.is("?") {
                    self.bump();
                }
                let field = match self.peek().kind.clone() {
                    TokenKind::Ident(f) => {
                        self.bump();
                        f
                    }
                    _ => return Err(self.mismatched("IDENTIFIER")),
                };
                self.expect(":")?;
                fields.push((field, self.expr()?));
                if self.is(",") {
                    self.bump();
                } else {
                    break;
                }
            }
            self.expect("}")?;
            return Ok(Expr {
                offset,
                kind: ExprKind::Struct { name, fields },
            });
        }
        Ok(Expr {
            offset,
            kind: ExprKind::Ident(name),
        })
    }
}

/// cel-go's `balancedTree`: the middle operator becomes the root, recursively.
fn balance(
    function: &str,
    terms: &mut [Option<Expr>],
    ops: &[usize],
    lo: usize,
    hi: usize,
) -> Expr {
    if lo == hi {
        return terms[lo].take().expect("each term is used once");
    }
    let mid = (lo + hi) / 2;
    let left = balance(function, terms, ops, lo, mid);
    let right = balance(function, terms, ops, mid + 1, hi);
    call(ops[mid], function, vec![left, right])
}

fn global_call_or_macro(offset: usize, name: &str, mut args: Vec<Expr>) -> Result<Expr, Issue> {
    if name == "has" && args.len() == 1 {
        let arg = args.pop().expect("one argument");
        return match arg.kind {
            ExprKind::Select { operand, field, .. } => Ok(Expr {
                offset,
                kind: ExprKind::Select {
                    operand,
                    field,
                    test_only: true,
                },
            }),
            _ => Err(Issue::new(
                arg.offset,
                "invalid argument to has() macro".to_string(),
            )),
        };
    }
    Ok(Expr {
        offset,
        kind: ExprKind::Call {
            target: None,
            function: name.to_string(),
            args,
        },
    })
}

fn receiver_call_or_macro(
    offset: usize,
    name: &str,
    target: Expr,
    mut args: Vec<Expr>,
) -> Result<Expr, Issue> {
    let kind = match (name, args.len()) {
        ("all", 2) => Some(MacroKind::All),
        ("exists", 2) => Some(MacroKind::Exists),
        ("exists_one" | "existsOne", 2) => Some(MacroKind::ExistsOne),
        ("map", 2) => Some(MacroKind::Map),
        ("map", 3) => Some(MacroKind::MapFilter),
        ("filter", 2) => Some(MacroKind::Filter),
        _ => None,
    };
    let Some(kind) = kind else {
        return Ok(Expr {
            offset,
            kind: ExprKind::Call {
                target: Some(Box::new(target)),
                function: name.to_string(),
                args,
            },
        });
    };
    let var = match &args[0].kind {
        ExprKind::Ident(v) => v.clone(),
        _ => {
            return Err(Issue::new(
                args[0].offset,
                "argument must be a simple name".to_string(),
            ))
        }
    };
    let last = args.pop().map(Box::new);
    let (predicate, transform) = match kind {
        MacroKind::Map => (None, last),
        MacroKind::MapFilter => (args.pop().map(Box::new), last),
        _ => (last, None),
    };
    Ok(Expr {
        offset,
        kind: ExprKind::Comprehension {
            kind,
            var,
            range: Box::new(target),
            predicate,
            transform,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn function_at(e: &Expr) -> (String, usize) {
        match &e.kind {
            ExprKind::Call { function, .. } => (function.clone(), e.offset),
            other => panic!("not a call: {other:?}"),
        }
    }

    #[test]
    fn operators_are_located_at_their_token() {
        let e = parse("object.spec.replicas > '1'").unwrap();
        assert_eq!(function_at(&e), ("_>_".into(), 21));
        let ExprKind::Call { args, .. } = &e.kind else {
            unreachable!()
        };
        // The select is located at its dot.
        assert_eq!(args[0].offset, 11);
    }

    #[test]
    fn multiplication_binds_tighter_than_addition_and_relations() {
        let e = parse("1 + 2 * 3 == 7").unwrap();
        assert_eq!(function_at(&e).0, "_==_");
        let ExprKind::Call { args, .. } = &e.kind else {
            unreachable!()
        };
        assert_eq!(function_at(&args[0]).0, "_+_");
    }

    #[test]
    fn chained_logical_operators_form_a_balanced_tree() {
        // a && b && c && d: cel-go roots the tree at the middle operator.
        let e = parse("a && b && c && d").unwrap();
        assert_eq!(function_at(&e), ("_&&_".into(), 7));
    }

    #[test]
    fn member_calls_are_located_at_their_parenthesis_and_macros_expand() {
        let e = parse("object.items.all(i, i > 0)").unwrap();
        assert_eq!(e.offset, 16);
        assert!(matches!(
            e.kind,
            ExprKind::Comprehension {
                kind: MacroKind::All,
                ..
            }
        ));
        let e = parse("has(object.spec)").unwrap();
        assert!(matches!(
            e.kind,
            ExprKind::Select {
                test_only: true,
                ..
            }
        ));
        assert_eq!(e.offset, 3);
    }

    #[test]
    fn negative_literals_and_double_negation_fold() {
        assert_eq!(
            parse("-1").unwrap().kind,
            ExprKind::Literal(Literal::Int(-1))
        );
        assert_eq!(parse("!!x").unwrap().kind, ExprKind::Ident("x".into()));
    }

    #[test]
    fn syntax_errors_name_the_offending_token() {
        let err = parse("object.spec.replicas >").unwrap_err();
        assert_eq!(err.offset, 22);
        assert!(err
            .message
            .starts_with("Syntax error: mismatched input '<EOF>' expecting"));
        let err = parse("a b").unwrap_err();
        assert_eq!(
            err.message,
            "Syntax error: extraneous input 'b' expecting <EOF>"
        );
        let err = parse("has(x)").unwrap_err();
        assert_eq!(err.message, "invalid argument to has() macro");
        let err = parse("l.all(1, true)").unwrap_err();
        assert_eq!(err.message, "argument must be a simple name");
        assert_eq!(parse("if").unwrap_err().message, "reserved identifier: if");
    }

    #[test]
    fn deep_nesting_and_long_chains_hit_the_recursion_limit() {
        // As the type checker does, on a thread with a stack sized for the deepest expression.
        std::thread::Builder::new()
            .stack_size(crate::STACK_SIZE)
            .spawn(deep_nesting_cases)
            .expect("thread")
            .join()
            .expect("no overflow");
    }

    fn deep_nesting_cases() {
        let nested = format!("{}1{}", "(".repeat(300), ")".repeat(300));
        assert_eq!(
            parse(&nested).unwrap_err().message,
            "expression recursion limit exceeded: 250"
        );
        let chain = vec!["1"; 20_000].join(" + ");
        assert_eq!(
            parse(&chain).unwrap_err().message,
            "expression recursion limit exceeded: 250"
        );
        let selects = format!("a{}", ".b".repeat(20_000));
        assert!(parse(&selects).is_err());
        // Logical operators are balanced, so long chains of them stay shallow.
        assert!(parse(&vec!["true"; 1000].join(" && ")).is_ok());
        let huge = "a".repeat(100_001);
        assert_eq!(
            parse(&huge).unwrap_err().message,
            "expression code point size exceeds limit: size: 100001, limit 100000"
        );
    }
}
