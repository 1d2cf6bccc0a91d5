//! A rule's `fieldPath`: a JSON path of field and map accessors (`.spec.x`, `['a.b']`) that must
//! name a field of the schema; kube's `cel.ValidFieldPath`.

use crate::field::Path;
use crate::structural::Structural;

/// The field path `json_path` names under `schema`, or why it names none.
pub fn valid_field_path(json_path: &str, schema: &Structural) -> Result<Path, String> {
    let tokens = tokenize(json_path);
    let mut path = Path::root();
    let mut s = schema;
    let mut i = 0;
    while i < tokens.len() {
        let tok = tokens[i].as_str();
        let name = match tok {
            "[" => {
                let quoted = tokens.get(i + 1).ok_or("unexpected end of JSON path")?;
                if quoted.len() < 2 || !quoted.starts_with('\'') || !quoted.ends_with('\'') {
                    return Err(format!("expected single quoted string but got {quoted}"));
                }
                let name = unescape_single_quote(&quoted[1..quoted.len() - 1])
                    .map_err(|e| format!("invalid string literal: {e}"))?;
                match tokens.get(i + 2).map(String::as_str) {
                    Some("]") => {}
                    Some(other) => return Err(format!("expected ] but got {other}")),
                    None => return Err("unexpected end of JSON path".to_string()),
                }
                i += 3;
                name
            }
            "." => {
                let name = tokens
                    .get(i + 1)
                    .ok_or("unexpected end of JSON path")?
                    .clone();
                i += 2;
                name
            }
            other => return Err(format!("expected [ or . but got: {other}")),
        };
        if !s.properties.is_empty() {
            s = s
                .properties
                .get(&name)
                .ok_or("does not refer to a valid field")?;
            path = path.child(&name);
        } else if let Some(ap) = s.generic.additional_properties.as_ref() {
            path = path.key(&name);
            s = ap
                .structural
                .as_deref()
                .ok_or("does not refer to a valid field")?;
        } else {
            return Err("does not refer to a valid field".to_string());
        }
    }
    Ok(path)
}

/// Splits at `.`, `[` and `]`, keeping single-quoted strings whole.
fn tokenize(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\'' {
            let mut j = i + 1;
            while j < chars.len() && !(chars[j] == '\'' && chars[j - 1] != '\\') {
                j += 1;
            }
            let end = (j + 1).min(chars.len());
            out.push(chars[i..end].iter().collect());
            i = end;
        } else if matches!(c, '.' | '[' | ']') {
            out.push(c.to_string());
            i += 1;
        } else {
            let mut j = i;
            while j < chars.len() && !matches!(chars[j], '.' | '[' | ']') {
                j += 1;
            }
            out.push(chars[i..j].iter().collect());
            i = j;
        }
    }
    out
}

fn unescape_single_quote(s: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let d = chars.next().ok_or("invalid escape char \\")?;
        out.push(match d {
            'a' => '\u{7}',
            'b' => '\u{8}',
            'f' => '\u{c}',
            'n' => '\n',
            'r' => '\r',
            't' => '\t',
            'v' => '\u{b}',
            '\'' => '\'',
            '\\' => '\\',
            other => return Err(format!("invalid escape char \\{other}")),
        });
    }
    Ok(out)
}
