//! Label selectors: an AND of requirements over a label set. Mirrors apimachinery `pkg/labels/selector.go`.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use crate::error::Error;
use crate::validation;

/// Whether `selector` has neither labels nor expressions, so that it selects every object (`{}`), as
/// apimachinery's `metav1.LabelSelector` converts to `labels.Everything()`.
pub fn selects_everything(selector: &LabelSelector) -> bool {
    selector
        .match_labels
        .as_ref()
        .is_none_or(BTreeMap::is_empty)
        && selector
            .match_expressions
            .as_ref()
            .is_none_or(Vec::is_empty)
}

/// How a requirement relates a label's value to the requirement's values (apimachinery `selection.Operator`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Operator {
    /// `key=value`: the label is present with that value.
    Equals,
    /// `key==value`: same as [`Operator::Equals`], kept apart so that the string form round-trips.
    DoubleEquals,
    /// `key!=value`: the label is absent or has another value.
    NotEquals,
    /// `key in (a,b)`: the label is present with one of the values.
    In,
    /// `key notin (a,b)`: the label is absent or has none of the values.
    NotIn,
    /// `key`: the label is present.
    Exists,
    /// `!key`: the label is absent.
    DoesNotExist,
    /// `key>1`: the label is present and, as an integer, greater than the value.
    GreaterThan,
    /// `key<1`: the label is present and, as an integer, less than the value.
    LessThan,
}

impl Operator {
    /// The operator's name as apimachinery spells it (`=`, `==`, `!=`, `in`, `notin`, `exists`, `!`, `gt`, `lt`).
    pub fn as_str(self) -> &'static str {
        match self {
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::NotEquals => "!=",
            Operator::In => "in",
            Operator::NotIn => "notin",
            Operator::Exists => "exists",
            Operator::DoesNotExist => "!",
            Operator::GreaterThan => "gt",
            Operator::LessThan => "lt",
        }
    }
}

impl fmt::Display for Operator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One condition on one label key. Built only through [`Requirement::new`], which validates it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Requirement {
    key: String,
    operator: Operator,
    /// Values in the order given; the string form sorts them.
    values: Vec<String>,
}

impl Requirement {
    /// A validated requirement (apimachinery `NewRequirement`): the key must be a qualified name, every value a
    /// valid label value; `in`/`notin` need at least one value, `=`/`==`/`!=` exactly one, `exists`/`!` none,
    /// and `gt`/`lt` exactly one integer. The empty string is a valid value.
    pub fn new(
        key: impl Into<String>,
        operator: Operator,
        values: Vec<String>,
    ) -> Result<Self, Error> {
        let key = key.into();
        validate_key(&key)?;
        let count_error = match operator {
            Operator::In | Operator::NotIn if values.is_empty() => {
                Some("for 'in', 'notin' operators, values set can't be empty")
            }
            Operator::Equals | Operator::DoubleEquals | Operator::NotEquals
                if values.len() != 1 =>
            {
                Some("exact-match compatibility requires one single value")
            }
            Operator::Exists | Operator::DoesNotExist if !values.is_empty() => {
                Some("values set must be empty for exists and does not exist")
            }
            Operator::GreaterThan | Operator::LessThan if values.len() != 1 => {
                Some("for 'Gt', 'Lt' operators, exactly one value is required")
            }
            Operator::GreaterThan | Operator::LessThan if values[0].parse::<i64>().is_err() => {
                Some("for 'Gt', 'Lt' operators, the value must be an integer")
            }
            _ => None,
        };
        if let Some(message) = count_error {
            return Err(Error::InvalidValues {
                key,
                message: message.to_string(),
            });
        }
        for value in &values {
            let errs = validation::is_valid_label_value(value);
            if !errs.is_empty() {
                return Err(Error::InvalidValue {
                    key,
                    value: value.clone(),
                    message: errs.join("; "),
                });
            }
        }
        Ok(Self {
            key,
            operator,
            values,
        })
    }

    /// The label key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The operator.
    pub fn operator(&self) -> Operator {
        self.operator
    }

    /// The values, in the order they were given.
    pub fn values(&self) -> &[String] {
        &self.values
    }

    fn has_value(&self, value: &str) -> bool {
        self.values.iter().any(|v| v == value)
    }

    /// Whether `labels` satisfy this requirement. `notin` and `!=` match when the key is absent; `gt`/`lt`
    /// never match a value that is not an integer.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.matches_lookup(|key| labels.get(key).map(String::as_str))
    }

    /// Like [`Requirement::matches`], for labels held in another shape: `lookup(key)` is the
    /// value of label `key` (apimachinery's `labels.Labels` interface, `Get` and `Has`).
    pub fn matches_lookup<'a>(&self, lookup: impl Fn(&str) -> Option<&'a str>) -> bool {
        let value = lookup(&self.key);
        match self.operator {
            Operator::In | Operator::Equals | Operator::DoubleEquals => {
                value.is_some_and(|v| self.has_value(v))
            }
            Operator::NotIn | Operator::NotEquals => value.is_none_or(|v| !self.has_value(v)),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                let (Some(Ok(have)), [want]) =
                    (value.map(|v| v.parse::<i64>()), self.values.as_slice())
                else {
                    return false;
                };
                let Ok(want) = want.parse::<i64>() else {
                    return false;
                };
                match self.operator {
                    Operator::GreaterThan => have > want,
                    _ => have < want,
                }
            }
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.operator == Operator::DoesNotExist {
            f.write_str("!")?;
        }
        f.write_str(&self.key)?;
        let (op, parens) = match self.operator {
            Operator::Exists | Operator::DoesNotExist => return Ok(()),
            Operator::Equals => ("=", false),
            Operator::DoubleEquals => ("==", false),
            Operator::NotEquals => ("!=", false),
            Operator::In => (" in ", true),
            Operator::NotIn => (" notin ", true),
            Operator::GreaterThan => (">", false),
            Operator::LessThan => ("<", false),
        };
        f.write_str(op)?;
        if parens {
            f.write_str("(")?;
        }
        let mut sorted: Vec<&str> = self.values.iter().map(String::as_str).collect();
        sorted.sort_unstable();
        f.write_str(&sorted.join(","))?;
        if parens {
            f.write_str(")")?;
        }
        Ok(())
    }
}

fn validate_key(key: &str) -> Result<(), Error> {
    let errs = validation::is_qualified_name(key);
    if errs.is_empty() {
        Ok(())
    } else {
        Err(Error::InvalidKey {
            key: key.to_string(),
            message: errs.join("; "),
        })
    }
}

pub(crate) fn validate_key_for_parser(key: &str) -> Result<(), Error> {
    validate_key(key)
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Inner {
    /// Selects no label set at all (apimachinery `labels.Nothing()`).
    Nothing,
    /// Sorted by key; empty selects everything.
    Requirements(Vec<Requirement>),
}

/// A label selector: an AND of [`Requirement`]s, or the selector that matches nothing.
///
/// Immutable and cheap to clone; safe to share between threads.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Selector {
    inner: Inner,
}

impl Default for Selector {
    /// The empty selector, which selects everything.
    fn default() -> Self {
        Self::everything()
    }
}

impl Selector {
    /// Matches every label set.
    pub fn everything() -> Self {
        Self {
            inner: Inner::Requirements(Vec::new()),
        }
    }

    /// Matches no label set, not even the empty one.
    pub fn nothing() -> Self {
        Self {
            inner: Inner::Nothing,
        }
    }

    /// Parses the selector string syntax: `a=b,c!=d,e in (x,y),f notin (z),g,!h`
    /// (apimachinery `labels.Parse`). The empty string selects everything.
    pub fn parse(s: &str) -> Result<Self, Error> {
        let requirements = crate::parser::parse(s)?;
        Ok(Self::from_requirements(requirements))
    }

    /// The selector of a typed `LabelSelector` (apimachinery `LabelSelectorAsSelector`): `matchLabels` become
    /// `=` requirements, `matchExpressions` In/NotIn/Exists/DoesNotExist requirements. An empty selector selects everything.
    pub fn from_label_selector(selector: &LabelSelector) -> Result<Self, Error> {
        if selects_everything(selector) {
            return Ok(Self::everything());
        }
        let labels = selector.match_labels.as_ref();
        let expressions = selector.match_expressions.as_deref().unwrap_or_default();
        let mut requirements = Vec::new();
        for (key, value) in labels.into_iter().flatten() {
            requirements.push(Requirement::new(
                key.clone(),
                Operator::Equals,
                vec![value.clone()],
            )?);
        }
        for expr in expressions {
            let operator = match expr.operator.as_str() {
                "In" => Operator::In,
                "NotIn" => Operator::NotIn,
                "Exists" => Operator::Exists,
                "DoesNotExist" => Operator::DoesNotExist,
                other => return Err(Error::InvalidOperator(other.to_string())),
            };
            let values = expr.values.clone().unwrap_or_default();
            requirements.push(Requirement::new(expr.key.clone(), operator, values)?);
        }
        Ok(Self::from_requirements(requirements))
    }

    /// Like [`Selector::from_label_selector`], with `None` selecting nothing, as apimachinery's
    /// `LabelSelectorAsSelector(nil)` does.
    pub fn from_optional_label_selector(selector: Option<&LabelSelector>) -> Result<Self, Error> {
        selector.map_or_else(|| Ok(Self::nothing()), Self::from_label_selector)
    }

    /// A selector that matches exactly the given labels (apimachinery `SelectorFromSet`, used by
    /// ReplicationControllers). The map is not validated. An empty map selects everything.
    pub fn from_map(labels: &BTreeMap<String, String>) -> Self {
        Self {
            inner: Inner::Requirements(
                labels
                    .iter()
                    .map(|(key, value)| Requirement {
                        key: key.clone(),
                        operator: Operator::Equals,
                        values: vec![value.clone()],
                    })
                    .collect(),
            ),
        }
    }

    /// A selector of the given requirements, sorted by key.
    pub fn from_requirements(mut requirements: Vec<Requirement>) -> Self {
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Self {
            inner: Inner::Requirements(requirements),
        }
    }

    /// This selector with `requirement` added (the nothing selector stays nothing).
    pub fn add(&self, requirement: Requirement) -> Self {
        match &self.inner {
            Inner::Nothing => Self::nothing(),
            Inner::Requirements(existing) => {
                let mut requirements = existing.clone();
                requirements.push(requirement);
                Self::from_requirements(requirements)
            }
        }
    }

    /// Whether every requirement matches `labels`.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        match &self.inner {
            Inner::Nothing => false,
            Inner::Requirements(requirements) => requirements.iter().all(|r| r.matches(labels)),
        }
    }

    /// Like [`Selector::matches`], for labels held in another shape: `lookup(key)` is the value
    /// of label `key`.
    pub fn matches_lookup<'a>(&self, lookup: impl Fn(&str) -> Option<&'a str> + Copy) -> bool {
        match &self.inner {
            Inner::Nothing => false,
            Inner::Requirements(requirements) => {
                requirements.iter().all(|r| r.matches_lookup(lookup))
            }
        }
    }

    /// Like [`Selector::matches`], for objects whose labels may be absent (absent means no labels).
    pub fn matches_opt(&self, labels: Option<&BTreeMap<String, String>>) -> bool {
        static EMPTY: BTreeMap<String, String> = BTreeMap::new();
        self.matches(labels.unwrap_or(&EMPTY))
    }

    /// Whether this selector does not restrict anything (selects everything). False for [`Selector::nothing`].
    pub fn is_empty(&self) -> bool {
        matches!(&self.inner, Inner::Requirements(r) if r.is_empty())
    }

    /// Whether this is the selector that matches nothing.
    pub fn is_nothing(&self) -> bool {
        matches!(self.inner, Inner::Nothing)
    }

    /// The requirements, sorted by key; `None` for the selector that matches nothing.
    pub fn requirements(&self) -> Option<&[Requirement]> {
        match &self.inner {
            Inner::Nothing => None,
            Inner::Requirements(r) => Some(r),
        }
    }

    /// The single value that the selector requires for `key`, if it requires one
    /// (apimachinery `RequiresExactMatch`: the first requirement on `key` is `=`, `==` or a one-value `in`).
    pub fn requires_exact_match(&self, key: &str) -> Option<&str> {
        let requirement = self.requirements()?.iter().find(|r| r.key == key)?;
        match (requirement.operator, requirement.values.as_slice()) {
            (Operator::Equals | Operator::DoubleEquals | Operator::In, [value]) => Some(value),
            _ => None,
        }
    }
}

impl fmt::Display for Selector {
    /// The canonical form: requirements sorted by key, values sorted, joined with `,`. It parses back to an
    /// equal selector, except that [`Selector::nothing`] prints as `""` (as apimachinery's does).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, requirement) in self.requirements().unwrap_or_default().iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{requirement}")?;
        }
        Ok(())
    }
}

impl FromStr for Selector {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

    use crate::set;

    #[test]
    fn only_a_selector_without_labels_or_expressions_selects_everything() {
        assert!(selects_everything(&LabelSelector::default()));
        assert!(selects_everything(&LabelSelector {
            match_labels: Some(BTreeMap::new()),
            match_expressions: Some(Vec::new()),
        }));
        assert!(!selects_everything(&LabelSelector {
            match_labels: Some(set(&[("app", "web")])),
            ..Default::default()
        }));
        assert!(!selects_everything(&LabelSelector {
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "app".into(),
                operator: "Exists".into(),
                values: None,
            }]),
            ..Default::default()
        }));
    }

    fn req(key: &str, op: Operator, values: &[&str]) -> Requirement {
        let mut values: Vec<String> = values.iter().map(|v| v.to_string()).collect();
        values.sort();
        values.dedup();
        Requirement::new(key, op, values).expect("valid requirement")
    }

    #[test]
    fn good_selectors_parse_and_print_back_without_spaces() {
        for s in [
            "x=a,y=b,z=c",
            "",
            "x!=a,y=b",
            "x=",
            "x= ",
            "x=,z= ",
            "x= ,z= ",
            "!x",
            "x>1",
            "x>1,z<5",
        ] {
            let sel = Selector::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"));
            assert_eq!(sel.to_string(), s.replace(' ', ""), "{s}");
        }
    }

    #[test]
    fn bad_selectors_fail_to_parse() {
        for s in ["x=a||y=b", "x==a==b", "!x=a", "x<a"] {
            assert!(Selector::parse(s).is_err(), "{s} should not parse");
        }
    }

    #[test]
    fn parsing_is_deterministic_whatever_the_order() {
        assert_eq!(
            Selector::parse("x=a,a=x").unwrap().to_string(),
            Selector::parse("a=x,x=a").unwrap().to_string()
        );
    }

    #[test]
    fn everything_matches_any_set_and_is_empty() {
        assert!(Selector::everything().matches(&set(&[("x", "y")])));
        assert!(Selector::everything().matches_opt(None));
        assert!(!Selector::parse("x").unwrap().matches_opt(None));
        assert!(Selector::parse("!x").unwrap().matches_opt(None));
        assert!(Selector::everything().is_empty());
        assert!(!Selector::nothing().matches(&set(&[])));
        assert!(!Selector::nothing().is_empty());
        assert!(Selector::from_map(&BTreeMap::new()).is_empty());
    }

    #[test]
    fn parsed_selectors_match_as_apimachinery_does() {
        let matching: &[(&str, &[(&str, &str)])] = &[
            ("", &[("x", "y")]),
            ("x=y", &[("x", "y")]),
            ("x=y,z=w", &[("x", "y"), ("z", "w")]),
            ("x!=y,z!=w", &[("x", "z"), ("z", "a")]),
            ("notin=in", &[("notin", "in")]),
            ("x", &[("x", "z")]),
            ("!x", &[("y", "z")]),
            ("x>1", &[("x", "2")]),
            ("x<1", &[("x", "0")]),
            ("foo=bar", &[("foo", "bar"), ("baz", "blah")]),
            ("baz=blah", &[("foo", "bar"), ("baz", "blah")]),
            ("foo=bar,baz=blah", &[("foo", "bar"), ("baz", "blah")]),
        ];
        for (s, labels) in matching {
            assert!(
                Selector::parse(s).unwrap().matches(&set(labels)),
                "{s} should match {labels:?}"
            );
        }
        let not_matching: &[(&str, &[(&str, &str)])] = &[
            ("x=z", &[]),
            ("x=y", &[("x", "z")]),
            ("x=y,z=w", &[("x", "w"), ("z", "w")]),
            ("x!=y,z!=w", &[("x", "z"), ("z", "w")]),
            ("x", &[("y", "z")]),
            ("!x", &[("x", "z")]),
            ("x>1", &[("x", "0")]),
            ("x<1", &[("x", "2")]),
            ("foo=blah", &[("foo", "bar"), ("baz", "blah")]),
            ("baz=bar", &[("foo", "bar"), ("baz", "blah")]),
            (
                "foo=bar,foobar=bar,baz=blah",
                &[("foo", "bar"), ("baz", "blah")],
            ),
        ];
        for (s, labels) in not_matching {
            assert!(
                !Selector::parse(s).unwrap().matches(&set(labels)),
                "{s} should not match {labels:?}"
            );
        }
    }

    #[test]
    fn selectors_from_maps_match_supersets() {
        let labels = set(&[("foo", "bar"), ("baz", "blah")]);
        for sel in [
            set(&[]),
            set(&[("foo", "bar")]),
            set(&[("baz", "blah")]),
            labels.clone(),
        ] {
            assert!(Selector::from_map(&sel).matches(&labels), "{sel:?}");
        }
        assert!(!Selector::from_map(&set(&[("foo", "baz")])).matches(&labels));
        assert_eq!(Selector::from_map(&labels).to_string(), "baz=blah,foo=bar");
    }

    #[test]
    fn requirement_constructor_checks_values_against_the_operator() {
        let cases: &[(&str, Operator, &[&str], bool)] = &[
            ("x", Operator::In, &[], false),
            ("x", Operator::NotIn, &[], false),
            ("x", Operator::In, &["foo"], true),
            ("x", Operator::NotIn, &["foo"], true),
            ("x", Operator::Exists, &[], true),
            ("x", Operator::DoesNotExist, &[], true),
            ("x", Operator::Exists, &["foo"], false),
            ("x", Operator::Equals, &["a", "b"], false),
            ("1foo", Operator::In, &["bar"], true),
            ("1234", Operator::In, &["bar"], true),
            ("y", Operator::GreaterThan, &["1"], true),
            ("z", Operator::LessThan, &["6"], true),
            ("foo", Operator::GreaterThan, &["bar"], false),
            ("barz", Operator::LessThan, &["blah"], false),
            ("x", Operator::In, &["bad value!"], false),
        ];
        for (key, op, values, ok) in cases {
            let values = values.iter().map(|v| v.to_string()).collect();
            assert_eq!(
                Requirement::new(*key, *op, values).is_ok(),
                *ok,
                "{key} {op}"
            );
        }
        assert!(Requirement::new("a".repeat(254), Operator::Exists, vec![]).is_err());
    }

    #[test]
    fn requirements_print_in_canonical_form() {
        let cases = [
            (
                vec![
                    req("x", Operator::In, &["abc", "def"]),
                    req("y", Operator::NotIn, &["jkl"]),
                    req("z", Operator::Exists, &[]),
                ],
                "x in (abc,def),y notin (jkl),z",
            ),
            (
                vec![
                    req("x", Operator::NotIn, &["abc", "def"]),
                    req("y", Operator::NotEquals, &["jkl"]),
                    req("z", Operator::DoesNotExist, &[]),
                ],
                "x notin (abc,def),y!=jkl,!z",
            ),
            (
                vec![
                    req("x", Operator::NotIn, &["abc"]),
                    req("y", Operator::In, &["jkl", "mno"]),
                    req("z", Operator::NotIn, &[""]),
                ],
                "x notin (abc),y in (jkl,mno),z notin ()",
            ),
            (
                vec![
                    req("x", Operator::Equals, &["abc"]),
                    req("y", Operator::DoubleEquals, &["jkl"]),
                    req("z", Operator::NotEquals, &["a"]),
                    req("z", Operator::Exists, &[]),
                ],
                "x=abc,y==jkl,z!=a,z",
            ),
            (
                vec![
                    req("x", Operator::GreaterThan, &["2"]),
                    req("y", Operator::LessThan, &["8"]),
                    req("z", Operator::Exists, &[]),
                ],
                "x>2,y<8,z",
            ),
        ];
        for (requirements, want) in cases {
            let sel = Selector::from_requirements(requirements);
            assert_eq!(sel.to_string(), want);
            assert_eq!(Selector::parse(want).unwrap(), sel, "{want} parses back");
        }
        let unsorted = Requirement::new("x", Operator::In, vec!["b".into(), "a".into()]).unwrap();
        assert_eq!(unsorted.to_string(), "x in (a,b)");
        assert_eq!(unsorted.values(), ["b", "a"]);
    }

    #[test]
    fn requirement_selectors_match_as_apimachinery_does() {
        let cases: Vec<(BTreeMap<String, String>, Vec<Requirement>, bool)> = vec![
            (
                set(&[("x", "foo"), ("y", "baz")]),
                vec![
                    req("x", Operator::In, &["foo"]),
                    req("y", Operator::NotIn, &["alpha"]),
                ],
                true,
            ),
            (
                set(&[("x", "foo"), ("y", "baz")]),
                vec![
                    req("x", Operator::In, &["foo"]),
                    req("y", Operator::In, &["alpha"]),
                ],
                false,
            ),
            (
                set(&[("y", "")]),
                vec![
                    req("x", Operator::NotIn, &[""]),
                    req("y", Operator::Exists, &[]),
                ],
                true,
            ),
            (
                set(&[("y", "")]),
                vec![
                    req("x", Operator::DoesNotExist, &[]),
                    req("y", Operator::Exists, &[]),
                ],
                true,
            ),
            (
                set(&[("y", "")]),
                vec![
                    req("x", Operator::NotIn, &[""]),
                    req("y", Operator::DoesNotExist, &[]),
                ],
                false,
            ),
            (
                set(&[("y", "baz")]),
                vec![req("x", Operator::In, &[""])],
                false,
            ),
            (
                set(&[("z", "2")]),
                vec![req("z", Operator::GreaterThan, &["1"])],
                true,
            ),
            (
                set(&[("z", "v2")]),
                vec![req("z", Operator::GreaterThan, &["1"])],
                false,
            ),
        ];
        for (labels, requirements, want) in cases {
            let sel = Selector::from_requirements(requirements);
            assert_eq!(sel.matches(&labels), want, "{sel} on {labels:?}");
        }
    }

    #[test]
    fn set_based_selectors_parse_as_apimachinery_does() {
        // (input, expected requirements or None when only validity is checked, valid)
        let cases: Vec<(&str, Option<Vec<Requirement>>, bool)> = vec![
            ("", Some(vec![]), true),
            ("\rx", Some(vec![req("x", Operator::Exists, &[])]), true),
            (
                "this-is-a-dns.domain.com/key-with-dash",
                Some(vec![req(
                    "this-is-a-dns.domain.com/key-with-dash",
                    Operator::Exists,
                    &[],
                )]),
                true,
            ),
            (
                "this-is-another-dns.domain.com/key-with-dash in (so,what)",
                Some(vec![req(
                    "this-is-another-dns.domain.com/key-with-dash",
                    Operator::In,
                    &["so", "what"],
                )]),
                true,
            ),
            (
                "0.1.2.domain/99 notin (10.10.100.1, tick.tack.clock)",
                Some(vec![req(
                    "0.1.2.domain/99",
                    Operator::NotIn,
                    &["10.10.100.1", "tick.tack.clock"],
                )]),
                true,
            ),
            (
                "foo  in\t (abc)",
                Some(vec![req("foo", Operator::In, &["abc"])]),
                true,
            ),
            (
                "x notin\n (abc)",
                Some(vec![req("x", Operator::NotIn, &["abc"])]),
                true,
            ),
            (
                "x  notin\t\t\t(abc,def)",
                Some(vec![req("x", Operator::NotIn, &["abc", "def"])]),
                true,
            ),
            (
                "x in (abc,def)",
                Some(vec![req("x", Operator::In, &["abc", "def"])]),
                true,
            ),
            (
                "x in (abc,)",
                Some(vec![req("x", Operator::In, &["abc", ""])]),
                true,
            ),
            ("x in ()", Some(vec![req("x", Operator::In, &[""])]), true),
            (
                "x notin (abc,def),bar,z in (),w",
                Some(vec![
                    req("bar", Operator::Exists, &[]),
                    req("w", Operator::Exists, &[]),
                    req("x", Operator::NotIn, &["abc", "def"]),
                    req("z", Operator::In, &[""]),
                ]),
                true,
            ),
            (
                "x,y in (a)",
                Some(vec![
                    req("x", Operator::Exists, &[]),
                    req("y", Operator::In, &["a"]),
                ]),
                true,
            ),
            ("x=a", Some(vec![req("x", Operator::Equals, &["a"])]), true),
            (
                "x>1",
                Some(vec![req("x", Operator::GreaterThan, &["1"])]),
                true,
            ),
            (
                "x<7",
                Some(vec![req("x", Operator::LessThan, &["7"])]),
                true,
            ),
            (
                "x=a,y!=b",
                Some(vec![
                    req("x", Operator::Equals, &["a"]),
                    req("y", Operator::NotEquals, &["b"]),
                ]),
                true,
            ),
            (
                "x=a,y!=b,z in (h,i,j)",
                Some(vec![
                    req("x", Operator::Equals, &["a"]),
                    req("y", Operator::NotEquals, &["b"]),
                    req("z", Operator::In, &["h", "i", "j"]),
                ]),
                true,
            ),
            ("x=a||y=b", None, false),
            ("x,y", None, true),
            (",x,y", None, false),
            ("x nott in (y)", None, false),
            (
                "x notin ( )",
                Some(vec![req("x", Operator::NotIn, &[""])]),
                true,
            ),
            (
                "x notin (, a)",
                Some(vec![req("x", Operator::NotIn, &["", "a"])]),
                true,
            ),
            ("a in (xyz),", None, false),
            ("a in (xyz)b notin ()", None, false),
            ("a ", Some(vec![req("a", Operator::Exists, &[])]), true),
            (
                "a in (x,y,notin, z,in)",
                Some(vec![req(
                    "a",
                    Operator::In,
                    &["in", "notin", "x", "y", "z"],
                )]),
                true,
            ),
            ("a in (xyz abc)", None, false),
            ("a notin(", None, false),
            ("a (", None, false),
            ("(", None, false),
        ];
        for (input, want, valid) in cases {
            match Selector::parse(input) {
                Ok(sel) => {
                    assert!(valid, "{input:?} should not parse, got {sel}");
                    if let Some(want) = want {
                        assert_eq!(sel.requirements().unwrap(), want.as_slice(), "{input:?}");
                    }
                }
                Err(e) => assert!(!valid, "{input:?} should parse: {e}"),
            }
        }
    }

    #[test]
    fn parse_errors_name_the_problem() {
        let err = Selector::parse("x=a||y=b").unwrap_err().to_string();
        assert!(err.contains("x=a||y=b") || err.contains("a||y"), "{err}");
        let err = Selector::parse("a in (xyz abc)").unwrap_err().to_string();
        assert!(err.contains("expected: ',' or ')'"), "{err}");
        let err = Selector::parse("Bad_Key-=x").unwrap_err();
        assert!(matches!(err, Error::InvalidKey { .. }), "{err}");
    }

    #[test]
    fn adding_a_requirement_keeps_requirements_sorted_by_key() {
        let sel = Selector::everything().add(req("key", Operator::In, &["value"]));
        assert_eq!(
            sel.requirements().unwrap(),
            [req("key", Operator::In, &["value"])]
        );
        let sel = sel.add(req("a", Operator::Equals, &["value2"]));
        assert_eq!(sel.to_string(), "a=value2,key in (value)");
        assert!(Selector::nothing()
            .add(req("a", Operator::Exists, &[]))
            .is_nothing());
    }

    #[test]
    fn exact_match_is_reported_for_equals_and_single_in() {
        let sel = Selector::parse("a=1,b in (2),c in (3,4),d!=5").unwrap();
        assert_eq!(sel.requires_exact_match("a"), Some("1"));
        assert_eq!(sel.requires_exact_match("b"), Some("2"));
        assert_eq!(sel.requires_exact_match("c"), None);
        assert_eq!(sel.requires_exact_match("d"), None);
        assert_eq!(sel.requires_exact_match("e"), None);
    }

    fn expression(key: &str, operator: &str, values: Option<&[&str]>) -> LabelSelectorRequirement {
        LabelSelectorRequirement {
            key: key.into(),
            operator: operator.into(),
            values: values.map(|v| v.iter().map(|s| s.to_string()).collect()),
        }
    }

    #[test]
    fn label_selectors_convert_as_label_selector_as_selector_does() {
        let empty = LabelSelector::default();
        assert!(Selector::from_label_selector(&empty).unwrap().is_empty());
        assert!(Selector::from_optional_label_selector(None)
            .unwrap()
            .is_nothing());
        assert!(Selector::from_optional_label_selector(Some(&empty))
            .unwrap()
            .is_empty());

        let ls = LabelSelector {
            match_labels: Some(set(&[("app", "web"), ("tier", "front")])),
            match_expressions: Some(vec![
                expression("env", "In", Some(&["prod", "canary"])),
                expression("legacy", "DoesNotExist", None),
                expression("track", "NotIn", Some(&["beta"])),
                expression("zone", "Exists", Some(&[])),
            ]),
        };
        let sel = Selector::from_label_selector(&ls).unwrap();
        assert_eq!(
            sel.to_string(),
            "app=web,env in (canary,prod),!legacy,tier=front,track notin (beta),zone"
        );
        assert!(sel.matches(&set(&[
            ("app", "web"),
            ("tier", "front"),
            ("env", "prod"),
            ("zone", "a")
        ])));
        assert!(!sel.matches(&set(&[
            ("app", "web"),
            ("tier", "front"),
            ("env", "prod"),
            ("zone", "a"),
            ("legacy", "")
        ])));

        for bad in [
            expression("env", "In", None),
            expression("env", "NotIn", Some(&[])),
            expression("env", "Exists", Some(&["x"])),
            expression("env", "DoesNotExist", Some(&["x"])),
            expression("env", "Gt", Some(&["1"])),
            expression("bad key!", "Exists", None),
        ] {
            let ls = LabelSelector {
                match_expressions: Some(vec![bad.clone()]),
                ..Default::default()
            };
            assert!(Selector::from_label_selector(&ls).is_err(), "{bad:?}");
        }
        let bad_value = LabelSelector {
            match_labels: Some(set(&[("app", "not valid")])),
            ..Default::default()
        };
        assert!(Selector::from_label_selector(&bad_value).is_err());
    }

    #[test]
    fn matching_through_a_lookup_agrees_with_matching_a_map() {
        let selector = Selector::parse("app=web,tier notin (db),!gone,n>2").expect("parses");
        let cases: [&[(&str, &str)]; 4] = [
            &[("app", "web"), ("n", "3")],
            &[("app", "web"), ("n", "3"), ("tier", "db")],
            &[("app", "web"), ("n", "3"), ("gone", "")],
            &[("app", "api"), ("n", "1")],
        ];
        for labels in cases {
            let map: BTreeMap<String, String> = labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            let lookup = |key: &str| labels.iter().find(|(k, _)| *k == key).map(|(_, v)| *v);
            assert_eq!(
                selector.matches_lookup(lookup),
                selector.matches(&map),
                "{labels:?}"
            );
        }
        assert!(selector.matches_lookup(|key| match key {
            "app" => Some("web"),
            "n" => Some("3"),
            _ => None,
        }));
    }
}
