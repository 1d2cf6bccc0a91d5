//! Query parameters of resource requests (`ListOptions`, `DeleteOptions`, `CreateOptions`...).

use crate::error::{ApiError, ApiResult};

/// The query string as key/value pairs; a repeated key keeps its last value.
#[derive(Clone, Debug, Default)]
pub struct Params {
    pairs: Vec<(String, String)>,
}

impl Params {
    /// Parses a raw query string.
    pub fn parse(query: Option<&str>) -> ApiResult<Self> {
        let pairs = match query {
            Some(q) => serde_urlencoded::from_str::<Vec<(String, String)>>(q)
                .map_err(|e| ApiError::bad_request(format!("invalid query string: {e}")))?,
            None => Vec::new(),
        };
        Ok(Self { pairs })
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The value of `key`, `None` when unset or empty.
    pub fn non_empty(&self, key: &str) -> Option<&str> {
        self.get(key).filter(|v| !v.is_empty())
    }

    /// A boolean parameter (`true`/`1`).
    pub fn flag(&self, key: &str) -> bool {
        matches!(self.get(key), Some("true") | Some("1") | Some("True"))
    }

    /// An integer parameter; 400 when malformed.
    pub fn int(&self, key: &str) -> ApiResult<Option<i64>> {
        match self.non_empty(key) {
            None => Ok(None),
            Some(v) => v
                .parse()
                .map(Some)
                .map_err(|_| ApiError::bad_request(format!("invalid value for {key}: {v:?}"))),
        }
    }

    /// Whether `dryRun=All` was asked for.
    pub fn dry_run(&self) -> ApiResult<bool> {
        let mut dry = false;
        for (k, v) in &self.pairs {
            if k == "dryRun" {
                if v == "All" {
                    dry = true;
                } else if !v.is_empty() {
                    return Err(ApiError::bad_request(format!(
                        "Invalid dry run value: {v:?}; supported values: \"All\""
                    )));
                }
            }
        }
        Ok(dry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_values_and_flags() {
        let p = Params::parse(Some("watch=1&labelSelector=a%3Db&limit=5&dryRun=All")).expect("ok");
        assert!(p.flag("watch"));
        assert_eq!(p.get("labelSelector"), Some("a=b"));
        assert_eq!(p.int("limit").expect("int"), Some(5));
        assert!(p.dry_run().expect("dry"));
        assert!(Params::parse(Some("limit=x"))
            .expect("ok")
            .int("limit")
            .is_err());
    }
}
