//! Operations on values guided by a schema: field sets, comparison, merge and removal.
//!
//! Mirrors `typed/tofieldset.go`, `typed/compare.go`, `typed/merge.go` and `typed/remove.go`.
//! Leaves are scalars, atomic lists and maps, and empty or null lists and maps (so that the
//! empty/null distinction is kept); everything else is walked item by item.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use crate::path::{Path, PathElement};
use crate::schema::{Atom, ListType, Schema, TypeRef};
use crate::set::Set;
use crate::value;
use crate::Error;

/// What changed between two values (`typed.Comparison`); no path is in two of the sets.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Comparison {
    /// Paths present on the left only.
    pub removed: Set,
    /// Leaves present on both sides with different values.
    pub modified: Set,
    /// Paths present on the right only.
    pub added: Set,
}

impl Comparison {
    /// Whether the two values were the same.
    pub fn is_same(&self) -> bool {
        self.removed.is_empty() && self.modified.is_empty() && self.added.is_empty()
    }
}

/// How a walk treats a value of some type.
enum Shape<'a> {
    Leaf,
    List(Cow<'a, Atom>),
    Map(Cow<'a, Atom>),
}

fn is_empty_container(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => true,
        Some(Value::Array(a)) => a.is_empty(),
        Some(Value::Object(m)) => m.is_empty(),
        Some(_) => false,
    }
}

/// The shape to walk `lhs` and `rhs` (at least one present) of type `tr` with.
fn shape<'a>(
    schema: &'a Schema,
    tr: &'a TypeRef,
    lhs: Option<&Value>,
    rhs: Option<&Value>,
) -> Shape<'a> {
    let atom = schema.atom_for(tr, rhs.or(lhs));
    if let (Some(l), Some(r)) = (lhs, rhs) {
        // Values of different kinds (a map replaced by a string) are replaced whole.
        let kind = |v: &Value| match v {
            Value::Array(_) => 1,
            Value::Object(_) => 2,
            Value::Null => 3,
            _ => 0,
        };
        if kind(l) != kind(r) && !l.is_null() && !r.is_null() {
            return Shape::Leaf;
        }
    }
    let empty = is_empty_container(lhs) && is_empty_container(rhs);
    match &*atom {
        Atom::List { list_type, .. } if *list_type == ListType::Atomic || empty => Shape::Leaf,
        Atom::List { .. } => Shape::List(atom),
        Atom::Map { atomic: true, .. } => Shape::Leaf,
        Atom::Map { .. } if empty => Shape::Leaf,
        Atom::Map { .. } => Shape::Map(atom),
        Atom::Scalar | Atom::Deduced => Shape::Leaf,
    }
}

/// The step that names `item` in a list of `list_type` (`listItemToPathElement`).
fn item_element(list_type: &ListType, item: &Value, path: &Path) -> Result<PathElement, Error> {
    let err = |message: String| Error::ListItem {
        path: path.to_string(),
        message,
    };
    match list_type {
        ListType::Map(keys) => {
            let Value::Object(m) = item else {
                return Err(err(if item.is_null() {
                    "associative list with keys may not have a null element".to_string()
                } else {
                    "associative list with keys may not have non-map elements".to_string()
                }));
            };
            let fields: Vec<(String, Value)> = keys
                .iter()
                .filter_map(|k| m.get(k).map(|v| (k.clone(), v.clone())))
                .collect();
            if fields.is_empty() {
                return Err(err(format!(
                    "associative list with keys has an element that omits all key fields {keys:?} (and doesn't have default values for any key fields)"
                )));
            }
            Ok(PathElement::key(fields))
        }
        ListType::Set => match item {
            Value::Object(_) => Err(err(
                "associative list without keys has an element that's a map type".to_string(),
            )),
            Value::Array(_) => Err(err(
                "associative list without keys has an element that's a list type".to_string(),
            )),
            v => Ok(PathElement::Value(v.clone())),
        },
        ListType::Atomic => Err(err("invalid indexing of non-associative list".to_string())),
    }
}

/// The fields `value` sets (`TypedValue.ToFieldSet`): leaves, list items, map entries, and
/// struct fields that hold an empty or null value.
pub fn to_field_set(schema: &Schema, tr: &TypeRef, value: &Value) -> Result<Set, Error> {
    let mut set = Set::new();
    field_set_walk(schema, tr, value, &mut Path::default(), &mut set)?;
    Ok(set)
}

fn field_set_walk(
    schema: &Schema,
    tr: &TypeRef,
    value: &Value,
    path: &mut Path,
    set: &mut Set,
) -> Result<(), Error> {
    match shape(schema, tr, Some(value), None) {
        Shape::Leaf => {
            // An empty or null granular list or map only counts through its parent (below).
            let atom = schema.atom_for(tr, Some(value));
            let granular_empty = match &*atom {
                Atom::List { list_type, .. } => *list_type != ListType::Atomic,
                Atom::Map { atomic, .. } => !atomic,
                _ => false,
            };
            if !granular_empty || !is_empty_container(Some(value)) {
                set.insert(path);
            }
        }
        Shape::List(atom) => {
            let Atom::List { element, list_type } = &*atom else {
                return Ok(());
            };
            let Value::Array(items) = value else {
                return Ok(());
            };
            let mut seen = BTreeSet::new();
            let mut duplicates = BTreeSet::new();
            let mut pes = Vec::with_capacity(items.len());
            for item in items {
                let pe = item_element(list_type, item, path)?;
                if !seen.insert(pe.clone()) && duplicates.insert(pe.clone()) {
                    set.insert(&path.child(pe.clone()));
                }
                pes.push(pe);
            }
            for (item, pe) in items.iter().zip(pes) {
                if duplicates.contains(&pe) {
                    continue;
                }
                path.0.push(pe);
                field_set_walk(schema, element, item, path, set)?;
                set.insert(path);
                path.0.pop();
            }
        }
        Shape::Map(atom) => {
            let Value::Object(m) = value else {
                return Ok(());
            };
            let named =
                |k: &str| matches!(&*atom, Atom::Map { fields, .. } if fields.contains_key(k));
            for (k, v) in m {
                path.0.push(PathElement::Field(k.clone()));
                field_set_walk(schema, atom.field_type(k), v, path, set)?;
                if v.is_null() || v.as_object().is_some_and(Map::is_empty) || !named(k) {
                    set.insert(path);
                }
                path.0.pop();
            }
        }
    }
    Ok(())
}

/// The fields of `value` its type does not declare: keys of a struct (a map with named fields
/// and no element type) that are none of its fields, in document order. Their message in kube
/// is `field not declared in schema`, reported by the validation `ObjectToTyped` runs
/// (`typed/validate.go`); list items are named as `listItemToPathElement` names them.
pub fn undeclared_fields(schema: &Schema, tr: &TypeRef, value: &Value) -> Vec<Path> {
    let mut found = Vec::new();
    undeclared_walk(schema, tr, value, &mut Path::default(), &mut found);
    found
}

fn undeclared_walk(
    schema: &Schema,
    tr: &TypeRef,
    value: &Value,
    path: &mut Path,
    found: &mut Vec<Path>,
) {
    let atom = schema.atom_for(tr, Some(value));
    match (&*atom, value) {
        (Atom::List { element, list_type }, Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                let pe = match list_type {
                    ListType::Atomic => PathElement::Index(i),
                    _ => item_element(list_type, item, path).unwrap_or(PathElement::Index(i)),
                };
                path.0.push(pe);
                undeclared_walk(schema, element, item, path, found);
                path.0.pop();
            }
        }
        (
            Atom::Map {
                fields, element, ..
            },
            Value::Object(m),
        ) => {
            for (k, v) in m {
                path.0.push(PathElement::Field(k.clone()));
                match fields.get(k).or(element.as_ref()) {
                    Some(field_type) => undeclared_walk(schema, field_type, v, path, found),
                    None => found.push(path.clone()),
                }
                path.0.pop();
            }
        }
        _ => {}
    }
}

/// What changed from `lhs` to `rhs` (`TypedValue.Compare`).
pub fn compare(
    schema: &Schema,
    tr: &TypeRef,
    lhs: &Value,
    rhs: &Value,
) -> Result<Comparison, Error> {
    let mut c = Comparison::default();
    compare_walk(
        schema,
        tr,
        Some(lhs),
        Some(rhs),
        &mut Path::default(),
        &mut c,
    )?;
    Ok(c)
}

fn compare_walk(
    schema: &Schema,
    tr: &TypeRef,
    lhs: Option<&Value>,
    rhs: Option<&Value>,
    path: &mut Path,
    c: &mut Comparison,
) -> Result<(), Error> {
    match shape(schema, tr, lhs, rhs) {
        Shape::Leaf => {
            match (lhs, rhs) {
                (None, _) => c.added.insert(path),
                (_, None) => c.removed.insert(path),
                (Some(l), Some(r)) if !value::equals(l, r) => c.modified.insert(path),
                _ => {}
            }
            return Ok(());
        }
        Shape::List(atom) => {
            if let Atom::List { element, list_type } = &*atom {
                compare_list(schema, element, list_type, lhs, rhs, path, c)?;
            }
        }
        Shape::Map(atom) => {
            let empty = Map::new();
            let l = lhs.and_then(Value::as_object).unwrap_or(&empty);
            let r = rhs.and_then(Value::as_object).unwrap_or(&empty);
            for k in l.keys().chain(r.keys().filter(|k| !l.contains_key(*k))) {
                let (lv, rv) = (l.get(k), r.get(k));
                if unchanged(lv, rv) {
                    continue;
                }
                path.0.push(PathElement::Field(k.clone()));
                compare_walk(schema, atom.field_type(k), lv, rv, path, c)?;
                path.0.pop();
            }
        }
    }
    match (lhs, rhs) {
        (None, _) => c.added.insert(path),
        (_, None) => c.removed.insert(path),
        _ => {}
    }
    Ok(())
}

/// Whether a field is present on both sides with equal values: nothing below it was added,
/// removed or modified, so the comparison need not walk it (most of an object is unchanged by
/// an update, e.g. all but a pod's status by its kubelet's).
fn unchanged(lhs: Option<&Value>, rhs: Option<&Value>) -> bool {
    matches!((lhs, rhs), (Some(l), Some(r)) if value::equals(l, r))
}

fn group_items<'v>(
    list_type: &ListType,
    items: Option<&'v Value>,
    path: &Path,
    order: &mut Vec<PathElement>,
) -> Result<BTreeMap<PathElement, Vec<&'v Value>>, Error> {
    let mut groups: BTreeMap<PathElement, Vec<&Value>> = BTreeMap::new();
    for item in items.and_then(Value::as_array).into_iter().flatten() {
        let pe = item_element(list_type, item, path)?;
        let group = groups.entry(pe.clone()).or_default();
        if group.is_empty() && !order.contains(&pe) {
            order.push(pe);
        }
        group.push(item);
    }
    Ok(groups)
}

fn compare_list(
    schema: &Schema,
    element: &TypeRef,
    list_type: &ListType,
    lhs: Option<&Value>,
    rhs: Option<&Value>,
    path: &mut Path,
    c: &mut Comparison,
) -> Result<(), Error> {
    let mut order = Vec::new();
    let l = group_items(list_type, lhs, path, &mut order)?;
    let r = group_items(list_type, rhs, path, &mut order)?;
    for pe in order {
        let ls = l.get(&pe).map(Vec::as_slice).unwrap_or_default();
        let rs = r.get(&pe).map(Vec::as_slice).unwrap_or_default();
        if let ([l], [r]) = (ls, rs) {
            if value::equals(l, r) {
                continue;
            }
        }
        path.0.push(pe);
        match (ls.len(), rs.len()) {
            (0..=1, 0..=1) => compare_walk(
                schema,
                element,
                ls.first().copied(),
                rs.first().copied(),
                path,
                c,
            )?,
            (2.., 2..) => {
                if ls.len() != rs.len() || ls.iter().zip(rs).any(|(l, r)| !value::equals(l, r)) {
                    c.modified.insert(path);
                }
            }
            (2.., _) => {
                if let Some(r0) = rs.first() {
                    compare_walk(schema, element, None, Some(r0), path, c)?;
                }
                c.removed.insert(path);
            }
            (_, _) => {
                if let Some(l0) = ls.first() {
                    compare_walk(schema, element, Some(l0), None, path, c)?;
                }
                c.added.insert(path);
            }
        }
        path.0.pop();
    }
    Ok(())
}

/// `rhs` merged into `lhs` (`TypedValue.Merge`): the right side wins at every leaf; list items
/// and map entries present on one side only are kept; list order follows the right side for
/// shared items, left-only items staying where they were.
pub fn merge(schema: &Schema, tr: &TypeRef, lhs: &Value, rhs: &Value) -> Result<Value, Error> {
    Ok(
        merge_walk(schema, tr, Some(lhs), Some(rhs), &mut Path::default())?
            .unwrap_or_else(|| Value::Object(Map::new())),
    )
}

fn merge_walk(
    schema: &Schema,
    tr: &TypeRef,
    lhs: Option<&Value>,
    rhs: Option<&Value>,
    path: &mut Path,
) -> Result<Option<Value>, Error> {
    match shape(schema, tr, lhs, rhs) {
        Shape::Leaf => Ok(rhs.or(lhs).cloned()),
        Shape::List(atom) => match &*atom {
            Atom::List { element, list_type } => {
                merge_list(schema, element, list_type, lhs, rhs, path)
            }
            _ => Ok(rhs.or(lhs).cloned()),
        },
        Shape::Map(atom) => {
            let empty = Map::new();
            let l = lhs.and_then(Value::as_object).unwrap_or(&empty);
            let r = rhs.and_then(Value::as_object).unwrap_or(&empty);
            let mut out = Map::new();
            for k in l.keys().chain(r.keys().filter(|k| !l.contains_key(*k))) {
                path.0.push(PathElement::Field(k.clone()));
                if let Some(v) = merge_walk(schema, atom.field_type(k), l.get(k), r.get(k), path)? {
                    out.insert(k.clone(), v);
                }
                path.0.pop();
            }
            Ok((!out.is_empty()).then_some(Value::Object(out)))
        }
    }
}

/// A list's item steps in order, and each step's item (`None` for a duplicated step).
type IndexedItems<'v> = (Vec<PathElement>, BTreeMap<PathElement, Option<&'v Value>>);

fn index_items<'v>(
    list_type: &ListType,
    items: Option<&'v Value>,
    path: &Path,
    allow_duplicates: bool,
) -> Result<IndexedItems<'v>, Error> {
    let mut pes = Vec::new();
    let mut observed: BTreeMap<PathElement, Option<&Value>> = BTreeMap::new();
    for item in items.and_then(Value::as_array).into_iter().flatten() {
        let pe = item_element(list_type, item, path)?;
        if observed.contains_key(&pe) {
            if !allow_duplicates {
                return Err(Error::ListItem {
                    path: path.to_string(),
                    message: format!("duplicate entries for key {pe}"),
                });
            }
            // Duplicated items are not merged with the new value.
            observed.insert(pe.clone(), None);
        } else {
            observed.insert(pe.clone(), Some(item));
        }
        pes.push(pe);
    }
    Ok((pes, observed))
}

fn merge_list(
    schema: &Schema,
    element: &TypeRef,
    list_type: &ListType,
    lhs: Option<&Value>,
    rhs: Option<&Value>,
    path: &mut Path,
) -> Result<Option<Value>, Error> {
    let (rhs_pes, observed_rhs) = index_items(list_type, rhs, path, false)?;
    let (lhs_pes, observed_lhs) = index_items(list_type, lhs, path, true)?;
    let lhs_items: Vec<&Value> = lhs
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .collect();
    let mut shared = rhs_pes
        .iter()
        .filter(|pe| observed_lhs.contains_key(*pe))
        .collect::<Vec<_>>()
        .into_iter();
    let mut next_shared = shared.next();
    let mut merged_rhs = BTreeSet::new();
    let mut out = Vec::new();
    let item = |pe: &PathElement, l: Option<&Value>, r: Option<&Value>, path: &mut Path| {
        path.0.push(pe.clone());
        let merged = if l.is_none() && r.is_none() {
            Ok(None)
        } else {
            merge_walk(schema, element, l, r, path)
        };
        path.0.pop();
        merged
    };
    let (mut li, mut ri) = (0, 0);
    while li < lhs_pes.len() || ri < rhs_pes.len() {
        if li < lhs_pes.len() && ri < rhs_pes.len() {
            let pe = &lhs_pes[li];
            if *pe == rhs_pes[ri] {
                merged_rhs.insert(pe.clone());
                let l = observed_lhs.get(pe).copied().flatten();
                let r = observed_rhs.get(pe).copied().flatten();
                out.extend(item(pe, l, r, path)?);
                li += 1;
                ri += 1;
                next_shared = shared.next();
                continue;
            }
            if observed_rhs.contains_key(pe) && next_shared.is_some_and(|s| s != pe) {
                // A shared item, but not the one this round wants.
                li += 1;
                continue;
            }
        }
        if li < lhs_pes.len() {
            let pe = &lhs_pes[li];
            if !observed_rhs.contains_key(pe) {
                out.extend(item(pe, Some(lhs_items[li]), None, path)?);
                li += 1;
                continue;
            } else if merged_rhs.contains(pe) {
                li += 1;
            }
        }
        if ri < rhs_pes.len() {
            let pe = &rhs_pes[ri];
            merged_rhs.insert(pe.clone());
            let l = observed_lhs.get(pe).copied().flatten();
            let r = observed_rhs.get(pe).copied().flatten();
            out.extend(item(pe, l, r, path)?);
            ri += 1;
            if next_shared.is_some_and(|s| s == pe) {
                next_shared = shared.next();
            }
        }
    }
    Ok((!out.is_empty()).then_some(Value::Array(out)))
}

/// `value` without the paths of `to_remove` (`TypedValue.RemoveItems`). A map or list left
/// empty by the removal goes too; `None` when nothing is left.
pub fn remove_items(
    schema: &Schema,
    tr: &TypeRef,
    value: &Value,
    to_remove: &Set,
) -> Option<Value> {
    let atom = schema.atom_for(tr, Some(value));
    match &*atom {
        Atom::Scalar | Atom::Deduced => Some(value.clone()),
        Atom::List { element, list_type } => {
            let items = value.as_array().filter(|a| !a.is_empty())?;
            if *list_type == ListType::Atomic {
                return None;
            }
            let mut out = Vec::new();
            for item in items {
                let Ok(pe) = item_element(list_type, item, &Path::default()) else {
                    out.push(item.clone());
                    continue;
                };
                if to_remove.members.contains(&pe) {
                    continue;
                }
                match to_remove.children.get(&pe) {
                    Some(sub) => out.extend(remove_items(schema, element, item, sub)),
                    None => out.push(item.clone()),
                }
            }
            (!out.is_empty()).then_some(Value::Array(out))
        }
        Atom::Map { atomic, .. } => {
            let m = value.as_object().filter(|m| !m.is_empty())?;
            if *atomic {
                return None;
            }
            let mut out = Map::new();
            for (k, v) in m {
                let pe = PathElement::Field(k.clone());
                if to_remove.members.contains(&pe) {
                    continue;
                }
                match to_remove.children.get(&pe) {
                    Some(sub) => {
                        if let Some(v) = remove_items(schema, atom.field_type(k), v, sub) {
                            out.insert(k.clone(), v);
                        }
                    }
                    None => {
                        out.insert(k.clone(), v.clone());
                    }
                }
            }
            (!out.is_empty()).then_some(Value::Object(out))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A struct with a map-list `list` keyed by `name`, a set `set`, an atomic list `atomic`,
    /// a string map `labels` and a scalar `s`; items have `name` and `value`.
    pub(crate) fn schema() -> (Schema, TypeRef) {
        let mut s = Schema::new();
        s.insert(
            "item",
            Atom::structure([("name", TypeRef::scalar()), ("value", TypeRef::scalar())]),
        );
        s.insert(
            "root",
            Atom::structure([
                ("s", TypeRef::scalar()),
                ("n", TypeRef::scalar()),
                (
                    "list",
                    TypeRef::inline(Atom::list(
                        TypeRef::named("item"),
                        ListType::Map(vec!["name".into()]),
                    )),
                ),
                (
                    "set",
                    TypeRef::inline(Atom::list(TypeRef::scalar(), ListType::Set)),
                ),
                (
                    "atomic",
                    TypeRef::inline(Atom::list(TypeRef::scalar(), ListType::Atomic)),
                ),
                ("labels", TypeRef::inline(Atom::map_of(TypeRef::scalar()))),
                ("inner", TypeRef::named("root")),
            ]),
        );
        (s, TypeRef::named("root"))
    }

    fn paths(set: &Set) -> Vec<String> {
        set.paths().iter().map(ToString::to_string).collect()
    }

    #[test]
    fn undeclared_fields_are_named_by_their_path_as_kube_names_them() {
        let (s, tr) = schema();
        let v = json!({"s":"x","bogus":1,"list":[{"name":"a","extra":true}],
            "atomic":[1],"labels":{"any":"v"},"inner":{"deep":{"x":1}}});
        let found: Vec<String> = undeclared_fields(&s, &tr, &v)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(found, [".bogus", ".list[name=\"a\"].extra", ".inner.deep"]);
        assert!(undeclared_fields(&s, &tr, &json!({"s":"x","labels":{"k":"v"}})).is_empty());
    }

    #[test]
    fn field_sets_hold_leaves_items_and_map_entries() {
        let (s, tr) = schema();
        let v = json!({"s":"x","list":[{"name":"a","value":"1"}],"set":["p"],"atomic":[1,2],
            "labels":{"k":"v"},"inner":{}});
        let set = to_field_set(&s, &tr, &v).unwrap();
        assert_eq!(
            paths(&set),
            vec![
                ".atomic",
                ".inner",
                ".labels.k",
                ".list[name=\"a\"]",
                ".list[name=\"a\"].name",
                ".list[name=\"a\"].value",
                ".s",
                ".set[=\"p\"]",
            ]
        );
    }

    #[test]
    fn compare_reports_added_modified_and_removed_with_new_containers() {
        let (s, tr) = schema();
        let a = json!({"s":"x","list":[{"name":"a","value":"1"}]});
        let b = json!({"s":"y","list":[{"name":"b","value":"1"}],"labels":{"k":"v"}});
        let c = compare(&s, &tr, &a, &b).unwrap();
        assert_eq!(paths(&c.modified), vec![".s"]);
        assert_eq!(
            paths(&c.added),
            vec![
                ".labels",
                ".labels.k",
                ".list[name=\"b\"]",
                ".list[name=\"b\"].name",
                ".list[name=\"b\"].value"
            ]
        );
        assert_eq!(
            paths(&c.removed),
            vec![
                ".list[name=\"a\"]",
                ".list[name=\"a\"].name",
                ".list[name=\"a\"].value"
            ]
        );
        assert!(compare(&s, &tr, &a, &a).unwrap().is_same());
    }

    #[test]
    fn compare_treats_numbers_equal_by_value_not_by_text() {
        let (s, tr) = schema();
        let ints = json!({"n": 10, "set": [1, 2], "atomic": [{"max": 10}], "inner": {"n": 0}});
        let floats: Value = serde_json::from_str(
            r#"{"n": 10.0, "set": [1.0, 2], "atomic": [{"max": 1e1}], "inner": {"n": 0.0}}"#,
        )
        .expect("valid JSON");
        let c = compare(&s, &tr, &ints, &floats).unwrap();
        assert!(c.is_same(), "{c:?}");
        let c = compare(
            &s,
            &tr,
            &ints,
            &json!({"n": 10.5, "set": [1, 2], "atomic": [{"max": 10}], "inner": {"n": 0}}),
        )
        .unwrap();
        assert_eq!(paths(&c.modified), vec![".n"]);
    }

    #[test]
    fn merge_keeps_left_only_items_in_place_and_follows_right_order() {
        let (s, tr) = schema();
        let live = json!({"list":[{"name":"a","value":"1"},{"name":"x"},{"name":"b"}],"atomic":[1,2],"set":["p","q"]});
        let applied =
            json!({"list":[{"name":"b","value":"2"},{"name":"a"}],"atomic":[3],"set":["r","p"]});
        let out = merge(&s, &tr, &live, &applied).unwrap();
        assert_eq!(
            out,
            json!({"list":[{"name":"x"},{"name":"b","value":"2"},{"name":"a","value":"1"}],"atomic":[3],"set":["r","p","q"]})
        );
    }

    #[test]
    fn merge_refuses_duplicate_keys_in_the_applied_list() {
        let (s, tr) = schema();
        let err = merge(
            &s,
            &tr,
            &json!({}),
            &json!({"list":[{"name":"a"},{"name":"a"}]}),
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("duplicate entries for key [name=\"a\"]"),
            "{err}"
        );
        let err = merge(&s, &tr, &json!({}), &json!({"list":[{"value":"1"}]})).unwrap_err();
        assert!(err.to_string().contains("omits all key fields"), "{err}");
    }

    #[test]
    fn remove_drops_paths_and_containers_left_empty() {
        let (s, tr) = schema();
        let v = json!({"s":"x","labels":{"k":"v"},"list":[{"name":"a","value":"1"},{"name":"b"}]});
        let rm = Set::from_paths([
            Path::fields(["labels", "k"]),
            Path::fields(["list"]).child(PathElement::key([("name", json!("b"))])),
            Path::fields(["list"])
                .child(PathElement::key([("name", json!("a"))]))
                .child(PathElement::field("value")),
        ]);
        assert_eq!(
            remove_items(&s, &tr, &v, &rm),
            Some(json!({"s":"x","list":[{"name":"a"}]}))
        );
    }

    #[test]
    fn unknown_fields_and_untyped_values_are_deduced() {
        let (s, tr) = schema();
        let v = json!({"extra":{"a":[1,2],"b":{"c":1}}});
        let set = to_field_set(&s, &tr, &v).unwrap();
        assert_eq!(
            paths(&set),
            vec![".extra", ".extra.a", ".extra.b", ".extra.b.c"]
        );
    }
}
