//! Problems found in an expression, and their display as cel-go prints them
//! (`common/errors.go` `Errors.ToDisplayString`, `common/error.go` `Error.ToDisplayString`).

/// One problem at a place in the source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Issue {
    /// Offset in characters from the start of the source.
    pub offset: usize,
    /// What is wrong (`undefined field 'foo'`).
    pub message: String,
}

impl Issue {
    /// An issue at `offset`.
    pub fn new(offset: usize, message: String) -> Self {
        Self { offset, message }
    }
}

/// Line (1-based) and column (0-based, in characters) of `offset` in `src`.
fn location(src: &str, offset: usize) -> (usize, usize) {
    let mut line = 1;
    let mut col = 0;
    for (i, c) in src.chars().enumerate() {
        if i == offset {
            break;
        }
        if c == '\n' {
            line += 1;
            col = 0;
        } else {
            col += 1;
        }
    }
    (line, col)
}

/// The issues as cel-go's `Issues.String()` prints them: sorted by place, one
/// `ERROR: <input>:L:C: message` line each, followed by the source line and a caret under the
/// column, joined with newlines.
pub fn display(src: &str, issues: &[Issue]) -> String {
    let mut located: Vec<(usize, usize, &Issue)> = issues
        .iter()
        .map(|i| {
            let (l, c) = location(src, i.offset);
            (l, c, i)
        })
        .collect();
    located.sort_by_key(|(l, c, _)| (*l, *c));
    located
        .into_iter()
        .map(|(line, col, issue)| {
            let mut out = format!("ERROR: <input>:{line}:{}: {}", col + 1, issue.message);
            if let Some(snippet) = src.split('\n').nth(line - 1) {
                let snippet = snippet.replace('\t', " ");
                out.push_str("\n | ");
                out.push_str(&snippet);
                out.push_str("\n | ");
                let mut chars = snippet.chars();
                for _ in 0..col {
                    match chars.next() {
                        Some(c) if c.len_utf8() > 1 => out.push('\u{FF0E}'),
                        Some(_) => out.push('.'),
                        None => break,
                    }
                }
                match chars.next() {
                    Some(c) if c.len_utf8() > 1 => out.push('\u{FF3E}'),
                    _ => out.push('^'),
                }
            }
            out
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_issue_is_shown_with_its_line_and_a_caret() {
        let src = "object.replicas > 1";
        let shown = display(src, &[Issue::new(6, "undefined field 'replicas'".into())]);
        assert_eq!(
            shown,
            "ERROR: <input>:1:7: undefined field 'replicas'\n | object.replicas > 1\n | ......^"
        );
    }

    #[test]
    fn issues_are_sorted_by_place_and_lines_are_counted() {
        let src = "a &&\n  b";
        let shown = display(
            src,
            &[
                Issue::new(7, "second".into()),
                Issue::new(0, "first".into()),
            ],
        );
        assert_eq!(
            shown,
            "ERROR: <input>:1:1: first\n | a &&\n | ^\nERROR: <input>:2:3: second\n |   b\n | ..^"
        );
    }

    #[test]
    fn wide_characters_get_wide_dots() {
        let src = "'é' + 1";
        let shown = display(src, &[Issue::new(4, "x".into())]);
        assert!(shown.ends_with("\n | .\u{FF0E}..^"), "{shown}");
    }
}
