//! Quota arithmetic on resource lists: `staging/src/k8s.io/apiserver/pkg/quota/v1/resources.go`
//! (`Add`, `Subtract`, `LessThanOrEqual`, `Mask`, `IsZero`, `ToSet`, …), with the table tests of
//! `resources_test.go` ported below.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::apimachinery::pkg::api::resource::Quantity as WireQuantity;

use crate::quantity::{Quantity, QuantityError};

/// A `corev1.ResourceList`: resource name → quantity, ordered by name as kube prints them.
pub type ResourceList = BTreeMap<String, Quantity>;

/// Parses a resource list as it comes on the wire; the first malformed quantity is an error.
pub fn parse_list(wire: &BTreeMap<String, WireQuantity>) -> Result<ResourceList, QuantityError> {
    wire.iter()
        .map(|(name, q)| Ok((name.clone(), Quantity::parse(q.0.trim())?)))
        .collect()
}

/// Writes a resource list back in its wire form.
pub fn to_wire(list: &ResourceList) -> BTreeMap<String, WireQuantity> {
    list.iter()
        .map(|(name, q)| (name.clone(), WireQuantity(q.to_string())))
        .collect()
}

/// `Equals`: the same names with numerically equal quantities.
pub fn equals(a: &ResourceList, b: &ResourceList) -> bool {
    a.len() == b.len() && a.iter().all(|(k, v)| b.get(k) == Some(v))
}

/// `LessThanOrEqual`: whether every quantity of `a` that `b` also names is at most `b`'s; the
/// second value lists the names where it is not.
pub fn less_than_or_equal(a: &ResourceList, b: &ResourceList) -> (bool, Vec<String>) {
    let exceeded: Vec<String> = b
        .iter()
        .filter(|(k, limit)| a.get(*k).is_some_and(|v| v > *limit))
        .map(|(k, _)| k.clone())
        .collect();
    (exceeded.is_empty(), exceeded)
}

/// Sum of two quantities; saturates instead of failing when the exact sum does not fit.
fn add_one(a: &Quantity, b: &Quantity) -> Quantity {
    a.checked_add(b).unwrap_or_else(|| a.clone())
}

/// Difference of two quantities; keeps `a` when the exact difference does not fit.
fn sub_one(a: &Quantity, b: &Quantity) -> Quantity {
    a.checked_sub(b).unwrap_or_else(|| a.clone())
}

/// `Add`: the sum of `a` and `b`, name by name; a name only one list has keeps its quantity.
pub fn add(a: &ResourceList, b: &ResourceList) -> ResourceList {
    let mut result = a.clone();
    for (k, v) in b {
        let sum = match result.get(k) {
            Some(existing) => add_one(existing, v),
            None => v.clone(),
        };
        result.insert(k.clone(), sum);
    }
    result
}

/// `Subtract`: `a - b`, name by name; a name only `b` has is negated.
pub fn subtract(a: &ResourceList, b: &ResourceList) -> ResourceList {
    let mut result: ResourceList = a
        .iter()
        .map(|(k, v)| {
            let d = b
                .get(k)
                .map_or_else(|| v.clone(), |other| sub_one(v, other));
            (k.clone(), d)
        })
        .collect();
    for (k, v) in b {
        result.entry(k.clone()).or_insert_with(|| v.neg());
    }
    result
}

/// `SubtractWithNonNegativeResult`: `a - b` with every negative difference (and every name only
/// `b` has) set to zero.
pub fn subtract_with_non_negative_result(a: &ResourceList, b: &ResourceList) -> ResourceList {
    let zero = Quantity::default();
    let mut result: ResourceList = a
        .iter()
        .map(|(k, v)| {
            let d = b
                .get(k)
                .map_or_else(|| v.clone(), |other| sub_one(v, other));
            (k.clone(), if d.sign() > 0 { d } else { zero.clone() })
        })
        .collect();
    for k in b.keys() {
        result.entry(k.clone()).or_insert_with(|| zero.clone());
    }
    result
}

/// `Mask`: the entries of `list` whose name is in `names`.
pub fn mask<S: AsRef<str>>(list: &ResourceList, names: &[S]) -> ResourceList {
    let set: BTreeSet<&str> = names.iter().map(AsRef::as_ref).collect();
    list.iter()
        .filter(|(k, _)| set.contains(k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// `ResourceNames`: the names of a list, in order.
pub fn resource_names(list: &ResourceList) -> Vec<String> {
    list.keys().cloned().collect()
}

/// `Contains`: whether `names` holds `item`.
pub fn contains<S: AsRef<str>>(names: &[S], item: &str) -> bool {
    names.iter().any(|n| n.as_ref() == item)
}

/// `ContainsPrefix`: whether `item` starts with one of `prefixes`.
pub fn contains_prefix(prefixes: &[&str], item: &str) -> bool {
    prefixes.iter().any(|p| item.starts_with(p))
}

/// `Intersection`: the names of `a` that `b` also holds, sorted and without duplicates.
pub fn intersection<A: AsRef<str>, B: AsRef<str>>(a: &[A], b: &[B]) -> Vec<String> {
    let b: BTreeSet<&str> = b.iter().map(AsRef::as_ref).collect();
    a.iter()
        .map(AsRef::as_ref)
        .filter(|n| b.contains(n))
        .map(str::to_string)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// `Difference`: the names of `a` that `b` does not hold, sorted and without duplicates.
pub fn difference<A: AsRef<str>, B: AsRef<str>>(a: &[A], b: &[B]) -> Vec<String> {
    let b: BTreeSet<&str> = b.iter().map(AsRef::as_ref).collect();
    a.iter()
        .map(AsRef::as_ref)
        .filter(|n| !b.contains(n))
        .map(str::to_string)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// `IsZero`: whether every quantity of the list is zero (an empty list is).
pub fn is_zero(list: &ResourceList) -> bool {
    list.values().all(Quantity::is_zero)
}

/// `IsNegative`: the names whose quantity is below zero.
pub fn is_negative(list: &ResourceList) -> Vec<String> {
    list.iter()
        .filter(|(_, v)| v.sign() < 0)
        .map(|(k, _)| k.clone())
        .collect()
}

/// `RemoveZeros`: the list without its zero quantities.
pub fn remove_zeros(list: &ResourceList) -> ResourceList {
    list.iter()
        .filter(|(_, v)| !v.is_zero())
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// `ToSet`: the names as a set.
pub fn to_set<S: AsRef<str>>(names: &[S]) -> BTreeSet<String> {
    names.iter().map(|n| n.as_ref().to_string()).collect()
}

/// `prettyPrint` of the admission plugin: `name=quantity` pairs sorted by name, comma-joined.
pub fn pretty_print(list: &ResourceList) -> String {
    list.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// `prettyPrintResourceNames`: the names sorted and comma-joined.
pub fn pretty_print_names<S: AsRef<str>>(names: &[S]) -> String {
    let mut names: Vec<&str> = names.iter().map(AsRef::as_ref).collect();
    names.sort_unstable();
    names.join(",")
}

#[cfg(test)]
pub(crate) fn list(pairs: &[(&str, &str)]) -> ResourceList {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), Quantity::parse(v).expect("test quantity")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    // TestEquals
    #[test]
    fn equals_compares_names_and_quantities() {
        let cases = [
            (list(&[]), list(&[]), true),
            (list(&[("cpu", "100m")]), list(&[("cpu", "100m")]), true),
            (list(&[("cpu", "100m")]), list(&[("cpu", "0.1")]), true),
            (
                list(&[("cpu", "100m")]),
                list(&[("cpu", "100m"), ("memory", "1Gi")]),
                false,
            ),
            (list(&[("cpu", "100m")]), list(&[("cpu", "200m")]), false),
            (list(&[("cpu", "100m")]), list(&[("memory", "100m")]), false),
        ];
        for (a, b, want) in cases {
            assert_eq!(equals(&a, &b), want, "{a:?} {b:?}");
        }
    }

    // TestLessThanOrEqual
    #[test]
    fn less_than_or_equal_reports_the_exceeded_names() {
        let (ok, exceeded) = less_than_or_equal(&list(&[]), &list(&[("cpu", "100m")]));
        assert!(ok && exceeded.is_empty());
        let (ok, _) = less_than_or_equal(&list(&[("cpu", "100m")]), &list(&[("cpu", "100m")]));
        assert!(ok);
        let (ok, exceeded) = less_than_or_equal(
            &list(&[("cpu", "200m"), ("memory", "1Gi")]),
            &list(&[("cpu", "100m"), ("memory", "2Gi")]),
        );
        assert!(!ok);
        assert_eq!(exceeded, ["cpu"]);
        // A name the limits do not have is not limited.
        let (ok, _) = less_than_or_equal(&list(&[("memory", "10Gi")]), &list(&[("cpu", "1")]));
        assert!(ok);
    }

    // TestMax-free arithmetic: TestAdd, TestSubtract
    #[test]
    fn add_sums_name_by_name_and_keeps_names_only_one_side_has() {
        let sum = add(
            &list(&[("cpu", "100m")]),
            &list(&[("cpu", "100m"), ("memory", "1Gi")]),
        );
        assert!(equals(&sum, &list(&[("cpu", "200m"), ("memory", "1Gi")])));
        assert!(equals(&add(&list(&[]), &list(&[])), &list(&[])));
        assert_eq!(
            add(&list(&[("pods", "1")]), &list(&[("pods", "1")]))["pods"].to_string(),
            "2"
        );
        assert_eq!(
            add(
                &list(&[("requests.cpu", "1")]),
                &list(&[("requests.cpu", "500m")])
            )["requests.cpu"]
                .to_string(),
            "1500m"
        );
    }

    #[test]
    fn subtract_negates_names_only_the_right_side_has() {
        let d = subtract(
            &list(&[("cpu", "100m")]),
            &list(&[("cpu", "50m"), ("memory", "1Gi")]),
        );
        assert!(equals(&d, &list(&[("cpu", "50m"), ("memory", "-1Gi")])));
        let d = subtract_with_non_negative_result(
            &list(&[("cpu", "100m"), ("pods", "1")]),
            &list(&[("cpu", "200m"), ("memory", "1Gi")]),
        );
        assert!(equals(
            &d,
            &list(&[("cpu", "0"), ("memory", "0"), ("pods", "1")])
        ));
    }

    // TestMask, TestIsZero, TestIsNegative, TestRemoveZeros, TestIntersection, TestDifference
    #[test]
    fn mask_keeps_the_named_entries() {
        let m = mask(
            &list(&[("cpu", "100m"), ("memory", "1Gi"), ("pods", "1")]),
            &["cpu", "pods", "services"],
        );
        assert!(equals(&m, &list(&[("cpu", "100m"), ("pods", "1")])));
        assert!(mask(&list(&[("cpu", "1")]), &[] as &[&str]).is_empty());
    }

    #[test]
    fn zero_negative_and_set_helpers() {
        assert!(is_zero(&list(&[])));
        assert!(is_zero(&list(&[("cpu", "0"), ("memory", "0")])));
        assert!(!is_zero(&list(&[("cpu", "0"), ("memory", "1")])));
        assert_eq!(
            is_negative(&list(&[("cpu", "-1"), ("memory", "1")])),
            ["cpu"]
        );
        assert!(equals(
            &remove_zeros(&list(&[("cpu", "0"), ("memory", "1")])),
            &list(&[("memory", "1")])
        ));
        assert_eq!(intersection(&["a", "b", "c"], &["c", "a", "d"]), ["a", "c"]);
        assert_eq!(difference(&["a", "b", "c"], &["c", "a", "d"]), ["b"]);
        assert!(contains_prefix(&["hugepages-"], "hugepages-2Mi"));
        assert_eq!(to_set(&["b", "a", "b"]).len(), 2);
    }

    #[test]
    fn pretty_print_sorts_by_name() {
        assert_eq!(
            pretty_print(&list(&[("pods", "1"), ("count/configmaps", "3")])),
            "count/configmaps=3,pods=1"
        );
        assert_eq!(pretty_print_names(&["pods", "cpu"]), "cpu,pods");
    }

    #[test]
    fn wire_lists_parse_and_malformed_ones_are_errors() {
        let mut wire = BTreeMap::new();
        wire.insert("cpu".to_string(), WireQuantity("500m".into()));
        assert_eq!(parse_list(&wire).unwrap()["cpu"].to_string(), "500m");
        assert_eq!(to_wire(&parse_list(&wire).unwrap()), wire);
        wire.insert("memory".to_string(), WireQuantity("lots".into()));
        assert!(parse_list(&wire).is_err());
    }
}
