//! Go's `fmt` renderings of JSON values (`%v`, `%q`, `%#v`), so messages read as kube's do.

use serde_json::{Number, Value};

/// Go's `%q` of a string: double-quoted, with Go's escapes for quotes, backslashes and control characters.
pub(crate) fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Go's `%v` of a float64: the shortest representation, with an exponent below 1e-4 and from 1e21 on.
pub(crate) fn float(f: f64) -> String {
    if f == 0.0 {
        return if f.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    let exp = f.abs().log10().floor() as i32;
    if !(-4..21).contains(&exp) {
        // Rust's `{:e}` is the shortest mantissa; Go writes at least two exponent digits and a sign.
        let s = format!("{f:e}");
        if let Some((mantissa, e)) = s.split_once('e') {
            let (sign, digits) = match e.strip_prefix('-') {
                Some(d) => ('-', d),
                None => ('+', e),
            };
            return format!("{mantissa}e{sign}{digits:0>2}");
        }
        return s;
    }
    format!("{f}")
}

/// Go's `%v` of a decoded JSON number: integers as int64, the rest as float64.
pub(crate) fn number(n: &Number) -> String {
    if let Some(i) = n.as_i64() {
        i.to_string()
    } else if let Some(u) = n.as_u64() {
        u.to_string()
    } else {
        float(n.as_f64().unwrap_or(0.0))
    }
}

/// Go's `%v` of a scalar JSON value, or `%#v` of an object or array, as `field.Error` prints bad values.
pub(crate) fn sharp_v(v: &Value) -> String {
    match v {
        Value::Null => "interface {}(nil)".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => number(n),
        Value::String(s) => quote(s),
        Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(sharp_v).collect();
            format!("[]interface {{}}{{{}}}", inner.join(", "))
        }
        Value::Object(map) => {
            // Go's fmt prints map keys sorted.
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let inner: Vec<String> = keys
                .iter()
                .map(|k| format!("{}:{}", quote(k), sharp_v(&map[k.as_str()])))
                .collect();
            format!("map[string]interface {{}}{{{}}}", inner.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn floats_print_like_go() {
        assert_eq!(float(1.0), "1");
        assert_eq!(float(1.5), "1.5");
        assert_eq!(float(1e21), "1e+21");
        assert_eq!(float(0.00001), "1e-05");
        assert_eq!(float(0.0001), "0.0001");
    }

    #[test]
    fn compound_values_print_like_go_sharp_v() {
        assert_eq!(
            sharp_v(&json!({"b": 1, "a": "x"})),
            r#"map[string]interface {}{"a":"x", "b":1}"#
        );
        assert_eq!(
            sharp_v(&json!([1, "a", null])),
            r#"[]interface {}{1, "a", interface {}(nil)}"#
        );
    }

    #[test]
    fn strings_quote_like_go() {
        assert_eq!(quote("a\"b\n"), r#""a\"b\n""#);
    }
}
