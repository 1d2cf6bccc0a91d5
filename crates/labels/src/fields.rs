//! Field selectors (`metadata.name=x,status.phase!=Running`), as apimachinery `pkg/fields/selector.go` has them.

use std::fmt;
use std::str::FromStr;

use crate::error::Error;

/// How a field selector term compares a field with its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FieldOperator {
    /// `field=value` or `field==value`.
    Equals,
    /// `field!=value`.
    NotEquals,
}

/// One term of a field selector.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FieldRequirement {
    /// The field path, for example `metadata.name`.
    pub field: String,
    /// Equality or inequality.
    pub operator: FieldOperator,
    /// The value the field is compared with; may be empty.
    pub value: String,
}

impl FieldRequirement {
    /// Whether a field whose value is `actual` satisfies this term. A missing field reads as `""`, as in apimachinery.
    pub fn matches(&self, actual: Option<&str>) -> bool {
        let actual = actual.unwrap_or("");
        match self.operator {
            FieldOperator::Equals => actual == self.value,
            FieldOperator::NotEquals => actual != self.value,
        }
    }
}

impl fmt::Display for FieldRequirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = match self.operator {
            FieldOperator::Equals => "=",
            FieldOperator::NotEquals => "!=",
        };
        write!(f, "{}{op}{}", self.field, self.value)
    }
}

/// A field selector: an AND of equality and inequality terms. The empty selector selects everything.
///
/// The server decides which fields exist; this type only parses and evaluates.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct FieldSelector {
    requirements: Vec<FieldRequirement>,
}

impl FieldSelector {
    /// Selects everything.
    pub fn everything() -> Self {
        Self::default()
    }

    /// A selector with the single term `field=value` (apimachinery `OneTermEqualSelector`).
    pub fn one_term_equal(field: impl Into<String>, value: impl Into<String>) -> Self {
        Self {
            requirements: vec![FieldRequirement {
                field: field.into(),
                operator: FieldOperator::Equals,
                value: value.into(),
            }],
        }
    }

    /// Parses `a=b,c==d,e!=f` (apimachinery `fields.ParseSelector`). Terms are sorted; empty terms are skipped;
    /// a term with no operator, or with the operator twice, is an error that names it.
    pub fn parse(selector: &str) -> Result<Self, Error> {
        let mut parts: Vec<&str> = selector.split(',').collect();
        parts.sort_unstable();
        let mut requirements = Vec::new();
        for part in parts.into_iter().filter(|p| !p.is_empty()) {
            let term = [
                ("!=", FieldOperator::NotEquals),
                ("==", FieldOperator::Equals),
                ("=", FieldOperator::Equals),
            ]
            .into_iter()
            .find_map(|(op, operator)| {
                let pieces: Vec<&str> = part.split(op).collect();
                match pieces.as_slice() {
                    [field, value] => Some(FieldRequirement {
                        field: field.to_string(),
                        operator,
                        value: value.to_string(),
                    }),
                    _ => None,
                }
            });
            match term {
                Some(term) => requirements.push(term),
                None => {
                    return Err(Error::InvalidFieldSelector {
                        selector: selector.to_string(),
                        term: part.to_string(),
                    })
                }
            }
        }
        Ok(Self { requirements })
    }

    /// The terms, in parse order (sorted by their text).
    pub fn requirements(&self) -> &[FieldRequirement] {
        &self.requirements
    }

    /// Whether the selector has no terms and so selects everything.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether the object whose fields `field` reads satisfies every term. `field` returns `None` for a
    /// field the object does not have, which compares as `""`.
    pub fn matches(&self, field: impl Fn(&str) -> Option<String>) -> bool {
        self.requirements
            .iter()
            .all(|r| r.matches(field(&r.field).as_deref()))
    }

    /// The value an `=` term requires for `field`, if there is one (apimachinery `RequiresExactMatch`).
    pub fn requires_exact_match(&self, field: &str) -> Option<&str> {
        self.requirements
            .iter()
            .find(|r| r.field == field && r.operator == FieldOperator::Equals)
            .map(|r| r.value.as_str())
    }
}

impl fmt::Display for FieldSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

impl FromStr for FieldSelector {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn fields(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |f| map.get(f).cloned()
    }

    #[test]
    fn good_field_selectors_parse_and_print_back() {
        for (input, want) in [
            ("x=a,y=b,z=c", "x=a,y=b,z=c"),
            ("", ""),
            ("x!=a,y=b", "x!=a,y=b"),
            ("x==a", "x=a"),
            ("x=", "x="),
            ("y=b,x=a", "x=a,y=b"),
            ("x=a,,y=b", "x=a,y=b"),
        ] {
            let sel = FieldSelector::parse(input).unwrap_or_else(|e| panic!("{input}: {e}"));
            assert_eq!(sel.to_string(), want);
        }
    }

    #[test]
    fn bad_field_selectors_name_the_term() {
        for bad in ["x==a==b", "x", "a=b,c", "a!=b!=c"] {
            assert!(FieldSelector::parse(bad).is_err(), "{bad}");
        }
        let err = FieldSelector::parse("metadata.name=a,oops")
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "invalid selector: 'metadata.name=a,oops'; can't understand 'oops'"
        );
    }

    #[test]
    fn field_selectors_match_as_apimachinery_does() {
        let pod = fields(&[("metadata.name", "web-1"), ("status.phase", "Pending")]);
        let yes = [
            "",
            "metadata.name=web-1",
            "status.phase!=Running",
            "metadata.name==web-1,status.phase=Pending",
            "spec.nodeName=",
        ];
        for s in yes {
            assert!(FieldSelector::parse(s).unwrap().matches(&pod), "{s}");
        }
        let no = [
            "metadata.name=web-2",
            "status.phase!=Pending",
            "metadata.name=web-1,status.phase=Running",
            "spec.nodeName!=",
        ];
        for s in no {
            assert!(!FieldSelector::parse(s).unwrap().matches(&pod), "{s}");
        }
    }

    #[test]
    fn exact_match_and_requirements_are_exposed() {
        let sel = FieldSelector::parse("metadata.namespace=ns,metadata.name!=x").unwrap();
        assert_eq!(sel.requires_exact_match("metadata.namespace"), Some("ns"));
        assert_eq!(sel.requires_exact_match("metadata.name"), None);
        assert_eq!(sel.requirements().len(), 2);
        assert!(FieldSelector::everything().is_empty());
        assert_eq!(
            FieldSelector::one_term_equal("spec.nodeName", "n1").to_string(),
            "spec.nodeName=n1"
        );
    }
}
