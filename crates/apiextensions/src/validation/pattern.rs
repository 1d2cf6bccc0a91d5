//! `pattern` regular expressions with Go's RE2 semantics on top of the `regex` crate.
//!
//! Both are RE2 dialects, but Go's `\d`, `\w`, `\s` and `\b` are ASCII-only while the `regex` crate's are
//! Unicode-aware, so those escapes are rewritten to ASCII classes before compiling.

use regex::Regex;

/// Compiles a schema `pattern` as Go's `regexp.Compile` would interpret it (unanchored).
pub fn compile(pattern: &str) -> Result<Regex, regex::Error> {
    Regex::new(&translate(pattern))
}

fn translate(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut chars = pattern.chars();
    let mut class_depth = 0usize;
    // True right after '[' or '[^', where ']' is a literal.
    let mut class_start = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let Some(e) = chars.next() else {
                    out.push('\\');
                    break;
                };
                let in_class = class_depth > 0;
                let rewritten = match (e, in_class) {
                    ('d', false) => Some("[0-9]"),
                    ('d', true) => Some("0-9"),
                    ('D', _) => Some("[^0-9]"),
                    ('w', false) => Some("[0-9A-Za-z_]"),
                    ('w', true) => Some("0-9A-Za-z_"),
                    ('W', _) => Some("[^0-9A-Za-z_]"),
                    ('s', false) => Some(r"[\t\n\f\r ]"),
                    ('s', true) => Some(r"\t\n\f\r "),
                    ('S', _) => Some(r"[^\t\n\f\r ]"),
                    ('b', false) => Some(r"(?-u:\b)"),
                    ('B', false) => Some(r"(?-u:\B)"),
                    _ => None,
                };
                match rewritten {
                    Some(r) => out.push_str(r),
                    None => {
                        out.push('\\');
                        out.push(e);
                    }
                }
                class_start = false;
            }
            '[' => {
                if class_depth > 0 && chars.as_str().starts_with(':') {
                    // A POSIX class such as [:alpha:] inside a bracket expression.
                    out.push('[');
                    let rest = chars.as_str();
                    if let Some(end) = rest.find(":]") {
                        out.push_str(&rest[..end + 2]);
                        chars = rest[end + 2..].chars();
                    }
                    class_start = false;
                    continue;
                }
                if class_depth > 0 {
                    // Go has no nested classes: a '[' inside a class is a literal.
                    out.push_str(r"\[");
                    class_start = false;
                    continue;
                }
                class_depth += 1;
                out.push('[');
                if chars.as_str().starts_with('^') {
                    out.push('^');
                    chars.next();
                }
                class_start = true;
            }
            ']' if class_depth > 0 && !class_start => {
                class_depth -= 1;
                out.push(']');
            }
            ']' if class_start => {
                out.push_str(r"\]");
                class_start = false;
            }
            c @ ('&' | '~' | '-') if class_depth > 0 && chars.as_str().starts_with(c) => {
                // `&&`, `~~` and `--` are set operations in the regex crate but literals in Go.
                out.push('\\');
                out.push(c);
                class_start = false;
            }
            c => {
                out.push(c);
                class_start = false;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(p: &str, s: &str) -> bool {
        compile(p).expect("compiles").is_match(s)
    }

    #[test]
    fn perl_classes_are_ascii_only_like_go() {
        assert!(matches(r"^\d+$", "123"));
        assert!(!matches(r"^\d+$", "١٢٣"));
        assert!(!matches(r"^\w$", "é"));
        assert!(matches(r"^\W$", "é"));
        assert!(matches(r"^[\d\s]+$", "1 2"));
        assert!(matches(r"^[^\d]+$", "abc"));
        assert!(matches(r"\bfoo\b", "a foo b"));
    }

    #[test]
    fn patterns_are_unanchored_like_go() {
        assert!(matches("a", "bab"));
        assert!(!matches("^a", "bab"));
    }

    #[test]
    fn literal_brackets_and_posix_classes_work() {
        assert!(matches(r"^[]a]+$", "]a"));
        assert!(matches(r"^[[:alpha:]]+$", "abc"));
        assert!(matches(r"^[a[]+$", "a["));
        assert!(matches(r"^[a&&b]+$", "a&b"));
    }

    #[test]
    fn invalid_patterns_fail_to_compile() {
        assert!(compile("(a").is_err());
    }
}
