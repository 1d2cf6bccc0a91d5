//! Static bearer tokens from a CSV file (`--token-auth-file`), as kube's `tokenfile` authenticator.
//!
//! Each record is `token,user,uid[,"group1,group2"]`; further columns are ignored. Records with an
//! empty token are skipped and a repeated token keeps its last record, as kube does (both with a
//! warning). The file is read once, at start.

use std::collections::HashMap;
use std::path::Path;

use super::user::UserInfo;

/// Errors reading a token file.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The file could not be read.
    #[error("reading token file '{path}'")]
    Read {
        /// The file.
        path: String,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// A record is not valid CSV (`encoding/csv`'s message, naming the line).
    #[error("token file '{path}': parse error on line {line}: {message}")]
    Parse {
        /// The file.
        path: String,
        /// Line of the record (1-based).
        line: usize,
        /// What is wrong.
        message: &'static str,
    },
    /// A record has fewer than three columns.
    #[error("token file '{path}' must have at least 3 columns (token, user name, user uid), found {found} (line {line})")]
    TooFewColumns {
        /// The file.
        path: String,
        /// Line of the record (1-based).
        line: usize,
        /// Columns found.
        found: usize,
    },
}

/// The users of a token file, by token.
#[derive(Clone, Debug, Default)]
pub struct TokenFile {
    tokens: HashMap<String, UserInfo>,
}

impl TokenFile {
    /// Reads and parses the file at `path`.
    pub fn read(path: &Path) -> Result<Self, Error> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| Error::Read {
            path: shown.clone(),
            source,
        })?;
        Self::parse(&shown, &text)
    }

    /// Parses the CSV `text` of the file `path` (named in errors).
    pub fn parse(path: &str, text: &str) -> Result<Self, Error> {
        let mut tokens = HashMap::new();
        for (line, record) in csv_records(text).map_err(|(line, message)| Error::Parse {
            path: path.to_string(),
            line,
            message,
        })? {
            if record.len() < 3 {
                return Err(Error::TooFewColumns {
                    path: path.to_string(),
                    line,
                    found: record.len(),
                });
            }
            if record[0].is_empty() {
                tracing::warn!(path, line, "empty token has been found in token file");
                continue;
            }
            let user = UserInfo {
                name: record[1].clone(),
                uid: record[2].clone(),
                groups: record
                    .get(3)
                    .map(|g| g.split(',').map(str::to_string).collect())
                    .unwrap_or_default(),
                ..UserInfo::default()
            };
            if tokens.insert(record[0].clone(), user).is_some() {
                tracing::warn!(path, line, "duplicate token has been found in token file");
            }
        }
        Ok(Self { tokens })
    }

    /// The user holding `token`, if any.
    pub fn authenticate(&self, token: &str) -> Option<UserInfo> {
        self.tokens.get(token).cloned()
    }

    /// How many tokens the file holds.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    /// Whether the file holds no token.
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }
}

/// A CSV record with the line it starts on.
type Record = (usize, Vec<String>);

/// Splits `text` into records as Go's `encoding/csv` reader with default settings does: fields
/// separated by commas, optionally double-quoted (`""` is a quote, newlines allowed inside
/// quotes), empty lines skipped, `\r\n` read as `\n`. Each record comes with its first line.
fn csv_records(text: &str) -> Result<Vec<Record>, (usize, &'static str)> {
    let text = text.replace("\r\n", "\n");
    let mut records = Vec::new();
    let mut chars = text.chars().peekable();
    let mut line = 1;
    while chars.peek().is_some() {
        if chars.peek() == Some(&'\n') {
            chars.next();
            line += 1;
            continue;
        }
        let start_line = line;
        let mut record = Vec::new();
        loop {
            let mut field = String::new();
            if chars.peek() == Some(&'"') {
                chars.next();
                loop {
                    match chars.next() {
                        None => {
                            return Err((start_line, "extraneous or missing \" in quoted-field"))
                        }
                        Some('"') => match chars.peek() {
                            Some('"') => {
                                chars.next();
                                field.push('"');
                            }
                            Some(',') | Some('\n') | None => break,
                            Some(_) => {
                                return Err((line, "extraneous or missing \" in quoted-field"))
                            }
                        },
                        Some(c) => {
                            if c == '\n' {
                                line += 1;
                            }
                            field.push(c);
                        }
                    }
                }
            } else {
                while let Some(&c) = chars.peek() {
                    if c == ',' || c == '\n' {
                        break;
                    }
                    if c == '"' {
                        return Err((line, "bare \" in non-quoted-field"));
                    }
                    field.push(c);
                    chars.next();
                }
            }
            record.push(field);
            match chars.next() {
                Some(',') => continue,
                Some('\n') => {
                    line += 1;
                    break;
                }
                _ => break,
            }
        }
        records.push((start_line, record));
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(name: &str, uid: &str, groups: &[&str]) -> UserInfo {
        UserInfo {
            uid: uid.into(),
            ..UserInfo::new(name, groups)
        }
    }

    // tokenfile_test.go TestTokenFile.
    #[test]
    fn tokens_map_to_users_uids_and_groups() {
        let file = TokenFile::parse(
            "tokens.csv",
            "token1,user1,uid1\ntoken2,user2,uid2\ntoken3,user3,uid3,\"group1,group2\"\n\
             token4,user4,uid4,\"group2\"\ntoken5,user5,uid5,group5\ntoken6,user6,uid6,group5,otherdata\n\
             token7,user7,uid7,\"group1,group2\",otherdata\n",
        )
        .expect("parses");
        let cases = [
            ("token1", Some(user("user1", "uid1", &[]))),
            ("token2", Some(user("user2", "uid2", &[]))),
            ("token3", Some(user("user3", "uid3", &["group1", "group2"]))),
            ("token4", Some(user("user4", "uid4", &["group2"]))),
            ("token5", Some(user("user5", "uid5", &["group5"]))),
            ("token6", Some(user("user6", "uid6", &["group5"]))),
            ("token7", Some(user("user7", "uid7", &["group1", "group2"]))),
            ("token8", None),
        ];
        for (token, want) in cases {
            assert_eq!(file.authenticate(token), want, "{token}");
        }
        assert_eq!(file.len(), 7);
    }

    // tokenfile_test.go TestBadTokenFile / TestInsufficientColumnsTokenFile.
    #[test]
    fn records_with_fewer_than_three_columns_are_refused_naming_the_line() {
        let err = TokenFile::parse("t.csv", "token1,user1,uid1\n\ntoken4\n").expect_err("short");
        assert_eq!(
            err.to_string(),
            "token file 't.csv' must have at least 3 columns (token, user name, user uid), found 1 (line 3)"
        );
        assert!(TokenFile::parse("t.csv", "token1,user1\n").is_err());
    }

    #[test]
    fn malformed_quotes_are_refused_naming_the_line() {
        let err = TokenFile::parse("t.csv", "a,b,c\nto\"ken,u,1\n").expect_err("bare quote");
        assert_eq!(
            err.to_string(),
            "token file 't.csv': parse error on line 2: bare \" in non-quoted-field"
        );
        let err = TokenFile::parse("t.csv", "t,u,1,\"g1,g2\n").expect_err("unterminated");
        assert!(err.to_string().contains("line 1"), "{err}");
    }

    // tokenfile_test.go: empty tokens are skipped; a repeated token keeps its last record.
    #[test]
    fn empty_tokens_are_skipped_and_the_last_duplicate_wins() {
        let file = TokenFile::parse("t.csv", ",user0,uid0\ntok,user1,uid1\r\ntok,user2,uid2\n")
            .expect("parses");
        assert_eq!(file.len(), 1);
        assert_eq!(file.authenticate("tok"), Some(user("user2", "uid2", &[])));
        assert_eq!(file.authenticate(""), None);
    }

    #[test]
    fn quoted_fields_may_hold_escaped_quotes() {
        let file = TokenFile::parse("t.csv", "\"a\"\"b\",u,1\n").expect("parses");
        assert_eq!(file.authenticate("a\"b").map(|u| u.name), Some("u".into()));
    }
}
