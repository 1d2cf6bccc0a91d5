//! Lexer and recursive-descent parser for the label selector string syntax (apimachinery `labels.Parse`).
//!
//! ```text
//! <selector-syntax>         ::= <requirement> | <requirement> "," <selector-syntax>
//! <requirement>             ::= [!] KEY [ <set-based-restriction> | <exact-match-restriction> ]
//! <set-based-restriction>   ::= "" | <inclusion-exclusion> <value-set>
//! <inclusion-exclusion>     ::= "in" | "notin"
//! <value-set>               ::= "(" <values> ")"
//! <values>                  ::= VALUE | VALUE "," <values>
//! <exact-match-restriction> ::= ["="|"=="|"!="|">"|"<"] VALUE
//! ```

use std::collections::BTreeSet;

use crate::error::Error;
use crate::selector::{validate_key_for_parser, Operator, Requirement};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Token {
    Error,
    EndOfString,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
}

fn keyword(s: &str) -> Option<Token> {
    Some(match s {
        ")" => Token::ClosedPar,
        "," => Token::Comma,
        "!" => Token::DoesNotExist,
        "==" => Token::DoubleEquals,
        "=" => Token::Equals,
        ">" => Token::GreaterThan,
        "in" => Token::In,
        "<" => Token::LessThan,
        "!=" => Token::NotEquals,
        "notin" => Token::NotIn,
        "(" => Token::OpenPar,
        _ => return None,
    })
}

fn is_whitespace(ch: u8) -> bool {
    matches!(ch, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_special_symbol(ch: u8) -> bool {
    matches!(ch, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

struct Lexer<'a> {
    s: &'a str,
    pos: usize,
}

impl<'a> Lexer<'a> {
    fn new(s: &'a str) -> Self {
        Self { s, pos: 0 }
    }

    fn peek(&self) -> Option<u8> {
        self.s.as_bytes().get(self.pos).copied()
    }

    /// An identifier runs until a special symbol or whitespace; `in` and `notin` are keywords.
    /// Splitting only at ASCII bytes keeps the slices on character boundaries.
    fn scan_id_or_keyword(&mut self) -> (Token, String) {
        let start = self.pos;
        while let Some(ch) = self.peek() {
            if is_special_symbol(ch) || is_whitespace(ch) {
                break;
            }
            self.pos += 1;
        }
        let lit = &self.s[start..self.pos];
        (keyword(lit).unwrap_or(Token::Identifier), lit.to_string())
    }

    /// The longest operator made of special symbols (`!=` rather than `!`).
    fn scan_special_symbol(&mut self) -> (Token, String) {
        let start = self.pos;
        let mut last: Option<(Token, usize)> = None;
        while let Some(ch) = self.peek() {
            if !is_special_symbol(ch) {
                break;
            }
            let candidate = &self.s[start..=self.pos];
            if let Some(tok) = keyword(candidate) {
                last = Some((tok, self.pos + 1));
            } else if last.is_some() {
                break;
            }
            self.pos += 1;
        }
        match last {
            Some((tok, end)) => {
                self.pos = end;
                (tok, self.s[start..end].to_string())
            }
            None => (
                Token::Error,
                format!(
                    "error expected: keyword found '{}'",
                    &self.s[start..self.pos]
                ),
            ),
        }
    }

    fn lex(&mut self) -> (Token, String) {
        while self.peek().is_some_and(is_whitespace) {
            self.pos += 1;
        }
        match self.peek() {
            None => (Token::EndOfString, String::new()),
            Some(ch) if is_special_symbol(ch) => self.scan_special_symbol(),
            Some(_) => self.scan_id_or_keyword(),
        }
    }
}

/// In a value position, `in` and `notin` are ordinary identifiers (`a in (in,notin)`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    KeyAndOperator,
    Values,
}

struct Parser {
    items: Vec<(Token, String)>,
    position: usize,
}

fn syntax(msg: String) -> Error {
    Error::Syntax(msg)
}

impl Parser {
    fn new(s: &str) -> Self {
        let mut lexer = Lexer::new(s);
        let mut items = Vec::new();
        loop {
            let (tok, lit) = lexer.lex();
            items.push((tok, lit));
            if tok == Token::EndOfString {
                break;
            }
        }
        Self { items, position: 0 }
    }

    fn item(&self, index: usize, context: Context) -> (Token, String) {
        // The item list always ends with EndOfString, and the parser stops there.
        let (tok, lit) = self
            .items
            .get(index)
            .cloned()
            .unwrap_or((Token::EndOfString, String::new()));
        match (context, tok) {
            (Context::Values, Token::In | Token::NotIn) => (Token::Identifier, lit),
            _ => (tok, lit),
        }
    }

    fn lookahead(&self, context: Context) -> (Token, String) {
        self.item(self.position, context)
    }

    fn consume(&mut self, context: Context) -> (Token, String) {
        let item = self.item(self.position, context);
        self.position += 1;
        item
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, Error> {
        let mut requirements = Vec::new();
        loop {
            let (tok, lit) = self.lookahead(Context::Values);
            match tok {
                Token::Identifier | Token::DoesNotExist => {
                    requirements.push(self.parse_requirement()?);
                    let (t, l) = self.consume(Context::Values);
                    match t {
                        Token::EndOfString => return Ok(requirements),
                        Token::Comma => {
                            let (t2, l2) = self.lookahead(Context::Values);
                            if t2 != Token::Identifier && t2 != Token::DoesNotExist {
                                return Err(syntax(format!(
                                    "found '{l2}', expected: identifier after ','"
                                )));
                            }
                        }
                        _ => {
                            return Err(syntax(format!(
                                "found '{l}', expected: ',' or 'end of string'"
                            )))
                        }
                    }
                }
                Token::EndOfString => return Ok(requirements),
                _ => {
                    return Err(syntax(format!(
                        "found '{lit}', expected: !, identifier, or 'end of string'"
                    )))
                }
            }
        }
    }

    fn parse_requirement(&mut self) -> Result<Requirement, Error> {
        let (key, inferred) = self.parse_key_and_infer_operator()?;
        if let Some(op) = inferred {
            return Requirement::new(key, op, Vec::new());
        }
        let operator = self.parse_operator()?;
        let values = match operator {
            Operator::In | Operator::NotIn => self.parse_values()?,
            _ => self.parse_exact_value()?,
        };
        Requirement::new(key, operator, values.into_iter().collect())
    }

    /// The key, and `exists` / `!` when no binary operator follows it.
    fn parse_key_and_infer_operator(&mut self) -> Result<(String, Option<Operator>), Error> {
        let (mut tok, mut lit) = self.consume(Context::Values);
        let negated = tok == Token::DoesNotExist;
        if negated {
            (tok, lit) = self.consume(Context::Values);
        }
        if tok != Token::Identifier {
            return Err(syntax(format!("found '{lit}', expected: identifier")));
        }
        validate_key_for_parser(&lit)?;
        let (next, _) = self.lookahead(Context::Values);
        let unary = next == Token::EndOfString || next == Token::Comma;
        let op = match (negated, unary) {
            (true, _) => Some(Operator::DoesNotExist),
            (false, true) => Some(Operator::Exists),
            (false, false) => None,
        };
        Ok((lit, op))
    }

    fn parse_operator(&mut self) -> Result<Operator, Error> {
        let (tok, lit) = self.consume(Context::KeyAndOperator);
        Ok(match tok {
            Token::In => Operator::In,
            Token::Equals => Operator::Equals,
            Token::DoubleEquals => Operator::DoubleEquals,
            Token::GreaterThan => Operator::GreaterThan,
            Token::LessThan => Operator::LessThan,
            Token::NotIn => Operator::NotIn,
            Token::NotEquals => Operator::NotEquals,
            _ => {
                return Err(syntax(format!(
                    "found '{lit}', expected: in, notin, =, ==, !=, gt, lt"
                )))
            }
        })
    }

    /// `(a,b,c)`; empty entries (`()`, `(a,)`, `(,a)`) stand for the empty value.
    fn parse_values(&mut self) -> Result<BTreeSet<String>, Error> {
        let (tok, lit) = self.consume(Context::Values);
        if tok != Token::OpenPar {
            return Err(syntax(format!("found '{lit}' expected: '('")));
        }
        let (tok, lit) = self.lookahead(Context::Values);
        match tok {
            Token::Identifier | Token::Comma => {
                let values = self.parse_identifiers_list()?;
                let (tok, _) = self.consume(Context::Values);
                if tok != Token::ClosedPar {
                    return Err(syntax(format!("found '{lit}', expected: ')'")));
                }
                Ok(values)
            }
            Token::ClosedPar => {
                self.consume(Context::Values);
                Ok(BTreeSet::from([String::new()]))
            }
            _ => Err(syntax(format!(
                "found '{lit}', expected: ',', ')' or identifier"
            ))),
        }
    }

    fn parse_identifiers_list(&mut self) -> Result<BTreeSet<String>, Error> {
        let mut values = BTreeSet::new();
        loop {
            let (tok, lit) = self.consume(Context::Values);
            match tok {
                Token::Identifier => {
                    values.insert(lit);
                    let (tok2, lit2) = self.lookahead(Context::Values);
                    match tok2 {
                        Token::Comma => continue,
                        Token::ClosedPar => return Ok(values),
                        _ => return Err(syntax(format!("found '{lit2}', expected: ',' or ')'"))),
                    }
                }
                Token::Comma => {
                    if values.is_empty() {
                        values.insert(String::new()); // "(,"
                    }
                    let (tok2, _) = self.lookahead(Context::Values);
                    if tok2 == Token::ClosedPar {
                        values.insert(String::new()); // ",)"
                        return Ok(values);
                    }
                    if tok2 == Token::Comma {
                        values.insert(String::new()); // ",,"
                    }
                }
                _ => {
                    return Err(syntax(format!(
                        "found '{lit}', expected: ',', or identifier"
                    )))
                }
            }
        }
    }

    /// The single value after `=`, `==`, `!=`, `>` or `<`; nothing before `,` or the end means `""`.
    fn parse_exact_value(&mut self) -> Result<BTreeSet<String>, Error> {
        let (tok, _) = self.lookahead(Context::Values);
        if tok == Token::EndOfString || tok == Token::Comma {
            return Ok(BTreeSet::from([String::new()]));
        }
        let (tok, lit) = self.consume(Context::Values);
        if tok == Token::Identifier {
            Ok(BTreeSet::from([lit]))
        } else {
            Err(syntax(format!("found '{lit}', expected: identifier")))
        }
    }
}

/// Parses `s` into requirements, in the order written (the caller sorts them by key).
pub(crate) fn parse(s: &str) -> Result<Vec<Requirement>, Error> {
    Parser::new(s).parse()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexer_returns_the_longest_token() {
        let cases = [
            ("", Token::EndOfString),
            (",", Token::Comma),
            ("notin", Token::NotIn),
            ("in", Token::In),
            ("=", Token::Equals),
            ("==", Token::DoubleEquals),
            (">", Token::GreaterThan),
            ("<", Token::LessThan),
            ("!", Token::DoesNotExist),
            ("!=", Token::NotEquals),
            ("(", Token::OpenPar),
            (")", Token::ClosedPar),
            ("~", Token::Identifier),
            ("||", Token::Identifier),
        ];
        for (s, want) in cases {
            let (tok, lit) = Lexer::new(s).lex();
            assert_eq!(tok, want, "{s:?}");
            assert_eq!(lit, s);
        }
    }

    #[test]
    fn lexer_splits_sequences_into_tokens() {
        use Token::*;
        let cases: &[(&str, &[Token])] = &[
            (
                "key in ( value )",
                &[Identifier, In, OpenPar, Identifier, ClosedPar],
            ),
            (
                "key notin ( value )",
                &[Identifier, NotIn, OpenPar, Identifier, ClosedPar],
            ),
            (
                "key in ( value1, value2 )",
                &[
                    Identifier, In, OpenPar, Identifier, Comma, Identifier, ClosedPar,
                ],
            ),
            ("key", &[Identifier]),
            ("!key", &[DoesNotExist, Identifier]),
            ("()", &[OpenPar, ClosedPar]),
            (
                "x in (),y",
                &[Identifier, In, OpenPar, ClosedPar, Comma, Identifier],
            ),
            (
                "== != (), = notin",
                &[
                    DoubleEquals,
                    NotEquals,
                    OpenPar,
                    ClosedPar,
                    Comma,
                    Equals,
                    NotIn,
                ],
            ),
            ("key>2", &[Identifier, GreaterThan, Identifier]),
            ("key<1", &[Identifier, LessThan, Identifier]),
        ];
        for (s, want) in cases {
            let mut lexer = Lexer::new(s);
            let mut got = Vec::new();
            loop {
                let (tok, _) = lexer.lex();
                if tok == EndOfString {
                    break;
                }
                got.push(tok);
            }
            assert_eq!(got, *want, "{s:?}");
        }
    }

    #[test]
    fn parser_lookahead_agrees_with_consume() {
        for s in ["key in ( value )", "!key", "", "== != (), = notin", "key<1"] {
            let mut p = Parser::new(s);
            assert_eq!(p.items.last().map(|i| i.0), Some(Token::EndOfString));
            loop {
                let ahead = p.lookahead(Context::KeyAndOperator);
                let consumed = p.consume(Context::KeyAndOperator);
                assert_eq!(ahead, consumed);
                if ahead.0 == Token::EndOfString {
                    break;
                }
            }
        }
    }

    #[test]
    fn in_and_notin_are_identifiers_in_value_position() {
        let reqs = parse("a in (x,y,notin, z,in)").unwrap();
        assert_eq!(reqs[0].values(), ["in", "notin", "x", "y", "z"]);
    }

    #[test]
    fn stray_symbols_are_rejected_without_panicking() {
        assert!(parse("a=b,(").is_err());
        assert!(parse("a!!b").is_err());
        assert_eq!(Lexer::new("!!").lex().0, Token::DoesNotExist);
    }
}
