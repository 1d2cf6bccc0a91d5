//! Splits CEL source into tokens (the lexer rules of cel-go's `parser/gen/CEL.g4`).

/// A token and the character offset where it starts.
#[derive(Clone, Debug, PartialEq)]
pub struct Token {
    /// What it is.
    pub kind: TokenKind,
    /// Offset in characters.
    pub offset: usize,
    /// Its text as written (for error messages).
    pub text: String,
}

/// Kinds of tokens.
#[derive(Clone, Debug, PartialEq)]
pub enum TokenKind {
    /// An identifier (reserved words included; the parser decides).
    Ident(String),
    /// An integer literal.
    Int(i64),
    /// An unsigned literal.
    Uint(u64),
    /// A floating-point literal.
    Double(f64),
    /// A string literal, unescaped.
    String(String),
    /// A bytes literal, unescaped.
    Bytes(Vec<u8>),
    /// Punctuation and operators: `==`, `&&`, `.`, `(`, …
    Punct(&'static str),
    /// End of input.
    Eof,
}

/// A character the lexer could not take, with its offset (ANTLR's "token recognition error").
#[derive(Clone, Debug, PartialEq)]
pub struct LexError {
    /// Offset in characters.
    pub offset: usize,
    /// The message, as cel-go words it.
    pub message: String,
}

const PUNCTS: &[&str] = &[
    "==", "!=", "<=", ">=", "&&", "||", "<", ">", "!", "+", "-", "*", "/", "%", "?", ":", ".", ",",
    "[", "]", "(", ")", "{", "}",
];

/// The tokens of `src`, ending with [`TokenKind::Eof`].
pub fn tokenize(src: &str) -> Result<Vec<Token>, LexError> {
    let chars: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        if c == '/' && chars.get(i + 1) == Some(&'/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
            continue;
        }
        let start = i;
        // String and bytes literals, with their r/b prefixes.
        let mut raw = false;
        let mut bytes = false;
        let mut j = i;
        while j < chars.len() && j - i < 2 && matches!(chars[j], 'r' | 'R' | 'b' | 'B') {
            match chars[j] {
                'r' | 'R' => raw = true,
                _ => bytes = true,
            }
            j += 1;
        }
        if j < chars.len()
            && (chars[j] == '\'' || chars[j] == '"')
            && (j == i || valid_prefix(&chars[i..j]))
        {
            let (value, end) = string_literal(&chars, j, raw)?;
            let text: String = chars[start..end].iter().collect();
            let kind = if bytes {
                TokenKind::Bytes(value)
            } else {
                match String::from_utf8(value) {
                    Ok(s) => TokenKind::String(s),
                    Err(_) => {
                        return Err(LexError {
                            offset: start,
                            message: format!("Syntax error: token recognition error at: '{text}'"),
                        })
                    }
                }
            };
            out.push(Token {
                kind,
                offset: start,
                text,
            });
            i = end;
            continue;
        }
        if c.is_ascii_alphabetic() || c == '_' {
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let text: String = chars[start..i].iter().collect();
            out.push(Token {
                kind: TokenKind::Ident(text.clone()),
                offset: start,
                text,
            });
            continue;
        }
        if c.is_ascii_digit() || (c == '.' && chars.get(i + 1).is_some_and(char::is_ascii_digit)) {
            let (kind, end) = number(&chars, i).map_err(|()| LexError {
                offset: start,
                message: format!(
                    "Syntax error: token recognition error at: '{}'",
                    chars[start..(start + 1).min(chars.len())]
                        .iter()
                        .collect::<String>()
                ),
            })?;
            let text: String = chars[start..end].iter().collect();
            out.push(Token {
                kind,
                offset: start,
                text,
            });
            i = end;
            continue;
        }
        if let Some(p) = PUNCTS.iter().find(|p| {
            let p: Vec<char> = p.chars().collect();
            chars[i..].starts_with(&p)
        }) {
            out.push(Token {
                kind: TokenKind::Punct(p),
                offset: start,
                text: (*p).to_string(),
            });
            i += p.chars().count();
            continue;
        }
        return Err(LexError {
            offset: start,
            message: format!("Syntax error: token recognition error at: '{c}'"),
        });
    }
    out.push(Token {
        kind: TokenKind::Eof,
        offset: chars.len(),
        text: "<EOF>".into(),
    });
    Ok(out)
}

fn valid_prefix(p: &[char]) -> bool {
    let lower: String = p.iter().map(|c| c.to_ascii_lowercase()).collect();
    matches!(lower.as_str(), "r" | "b" | "rb" | "br")
}

fn number(chars: &[char], mut i: usize) -> Result<(TokenKind, usize), ()> {
    let start = i;
    if chars[i] == '0' && matches!(chars.get(i + 1), Some('x' | 'X')) {
        i += 2;
        let ds = i;
        while i < chars.len() && chars[i].is_ascii_hexdigit() {
            i += 1;
        }
        let digits: String = chars[ds..i].iter().collect();
        if matches!(chars.get(i), Some('u' | 'U')) {
            let v = u64::from_str_radix(&digits, 16).map_err(|_| ())?;
            return Ok((TokenKind::Uint(v), i + 1));
        }
        let v = i64::from_str_radix(&digits, 16).map_err(|_| ())?;
        return Ok((TokenKind::Int(v), i));
    }
    while i < chars.len() && chars[i].is_ascii_digit() {
        i += 1;
    }
    let mut float = false;
    if chars.get(i) == Some(&'.') && chars.get(i + 1).is_some_and(char::is_ascii_digit) {
        float = true;
        i += 1;
        while i < chars.len() && chars[i].is_ascii_digit() {
            i += 1;
        }
    }
    if matches!(chars.get(i), Some('e' | 'E')) {
        let mut j = i + 1;
        if matches!(chars.get(j), Some('+' | '-')) {
            j += 1;
        }
        if chars.get(j).is_some_and(char::is_ascii_digit) {
            float = true;
            i = j;
            while i < chars.len() && chars[i].is_ascii_digit() {
                i += 1;
            }
        }
    }
    let text: String = chars[start..i].iter().collect();
    if float {
        return Ok((TokenKind::Double(text.parse().map_err(|_| ())?), i));
    }
    if matches!(chars.get(i), Some('u' | 'U')) {
        return Ok((TokenKind::Uint(text.parse().map_err(|_| ())?), i + 1));
    }
    // An int literal out of range is an error in cel-go too; `-9223372036854775808` is
    // folded by the parser, so accept the magnitude here and let the parser check it.
    match text.parse::<i64>() {
        Ok(v) => Ok((TokenKind::Int(v), i)),
        Err(_) if text == "9223372036854775808" => Ok((TokenKind::Uint(1 << 63), i)),
        Err(_) => Err(()),
    }
}

/// Reads a quoted literal whose opening quote is at `i`; returns its bytes and the end offset.
fn string_literal(chars: &[char], i: usize, raw: bool) -> Result<(Vec<u8>, usize), LexError> {
    let q = chars[i];
    let triple = chars.get(i + 1) == Some(&q) && chars.get(i + 2) == Some(&q);
    let mut j = if triple { i + 3 } else { i + 1 };
    let mut out = Vec::new();
    let err = |offset: usize| LexError {
        offset,
        message: format!(
            "Syntax error: token recognition error at: '{}'",
            chars[offset..]
                .iter()
                .take_while(|c| **c != '\n')
                .collect::<String>()
        ),
    };
    loop {
        let Some(&c) = chars.get(j) else {
            return Err(err(i));
        };
        if triple {
            if c == q && chars.get(j + 1) == Some(&q) && chars.get(j + 2) == Some(&q) {
                return Ok((out, j + 3));
            }
        } else if c == q {
            return Ok((out, j + 1));
        } else if c == '\n' || c == '\r' {
            return Err(err(i));
        }
        if c == '\\' && !raw {
            let (bytes, next) = escape(chars, j).ok_or_else(|| err(i))?;
            out.extend(bytes);
            j = next;
            continue;
        }
        let mut buf = [0u8; 4];
        out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
        j += 1;
    }
}

fn escape(chars: &[char], j: usize) -> Option<(Vec<u8>, usize)> {
    let c = *chars.get(j + 1)?;
    let simple = |b: u8| Some((vec![b], j + 2));
    match c {
        'a' => simple(7),
        'b' => simple(8),
        'f' => simple(12),
        'n' => simple(b'\n'),
        'r' => simple(b'\r'),
        't' => simple(b'\t'),
        'v' => simple(11),
        '\\' | '\'' | '"' | '`' | '?' => simple(c as u8),
        'x' | 'X' | 'u' | 'U' => {
            let n = match c {
                'x' | 'X' => 2,
                'u' => 4,
                _ => 8,
            };
            let hex: String = chars.get(j + 2..j + 2 + n)?.iter().collect();
            let v = u32::from_str_radix(&hex, 16).ok()?;
            if matches!(c, 'x' | 'X') {
                return Some((vec![v as u8], j + 2 + n));
            }
            let ch = char::from_u32(v)?;
            let mut buf = [0u8; 4];
            Some((ch.encode_utf8(&mut buf).as_bytes().to_vec(), j + 2 + n))
        }
        '0'..='3' => {
            let oct: String = chars.get(j + 1..j + 4)?.iter().collect();
            let v = u8::from_str_radix(&oct, 8).ok()?;
            Some((vec![v], j + 4))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<TokenKind> {
        tokenize(src).unwrap().into_iter().map(|t| t.kind).collect()
    }

    #[test]
    fn numbers_strings_and_operators_are_told_apart() {
        assert_eq!(
            kinds("a.b >= 1u && 'x' != r'\\d' || 0x10 < 1.5e2"),
            vec![
                TokenKind::Ident("a".into()),
                TokenKind::Punct("."),
                TokenKind::Ident("b".into()),
                TokenKind::Punct(">="),
                TokenKind::Uint(1),
                TokenKind::Punct("&&"),
                TokenKind::String("x".into()),
                TokenKind::Punct("!="),
                TokenKind::String("\\d".into()),
                TokenKind::Punct("||"),
                TokenKind::Int(16),
                TokenKind::Punct("<"),
                TokenKind::Double(150.0),
                TokenKind::Eof,
            ]
        );
    }

    #[test]
    fn escapes_bytes_and_triple_quotes_are_read() {
        assert_eq!(
            kinds(r#"b'\x41' "a\n" '''it's'''"#),
            vec![
                TokenKind::Bytes(vec![0x41]),
                TokenKind::String("a\n".into()),
                TokenKind::String("it's".into()),
                TokenKind::Eof,
            ]
        );
    }

    #[test]
    fn an_unknown_character_is_a_token_recognition_error() {
        let err = tokenize("a # b").unwrap_err();
        assert_eq!(err.offset, 2);
        assert_eq!(err.message, "Syntax error: token recognition error at: '#'");
    }

    #[test]
    fn offsets_count_characters_not_bytes() {
        let toks = tokenize("'é' == x").unwrap();
        assert_eq!(toks[1].offset, 4);
        assert_eq!(toks[2].offset, 7);
    }
}
