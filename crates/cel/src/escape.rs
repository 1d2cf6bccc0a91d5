//! Field names as CEL code spells them: apiserver's `cel.Escape`.

/// The keywords of the grammar that are not identifiers: besides the reserved words
/// ([`crate::parser::RESERVED`]), a field so named is escaped as `__word__`.
const KEYWORDS: &[&str] = &["true", "false", "null", "in"];

/// A property name as CEL code spells it (`x-y` is `x__dash__y`), or `None` when it cannot be
/// spelled (kube leaves such properties out of the type).
pub fn escape(name: &str) -> Option<String> {
    if KEYWORDS.contains(&name) || crate::parser::RESERVED.contains(&name) {
        return Some(format!("__{name}__"));
    }
    let first = name.chars().next()?;
    if !(first.is_ascii_alphabetic() || first == '_') {
        return None;
    }
    let mut out = String::new();
    let chars: Vec<char> = name.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '_' && chars.get(i + 1) == Some(&'_') {
            out.push_str("__underscores__");
            i += 2;
            continue;
        }
        match c {
            '.' => out.push_str("__dot__"),
            '-' => out.push_str("__dash__"),
            '/' => out.push_str("__slash__"),
            c if c.is_ascii_alphanumeric() || c == '_' => out.push(c),
            _ => return None,
        }
        i += 1;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn names_that_cel_cannot_spell_are_escaped_or_left_out() {
        assert_eq!(
            escape("a.b/c-d").as_deref(),
            Some("a__dot__b__slash__c__dash__d")
        );
        assert_eq!(escape("a__b").as_deref(), Some("a__underscores__b"));
        assert_eq!(escape("1abc"), None);
        assert_eq!(escape("a b"), None);
        assert_eq!(escape("in").as_deref(), Some("__in__"));
        assert_eq!(escape("namespace").as_deref(), Some("__namespace__"));
        assert_eq!(escape("int").as_deref(), Some("int"));
    }
}
