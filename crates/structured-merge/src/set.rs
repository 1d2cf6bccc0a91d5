//! Sets of field paths, stored as a tree.
//!
//! Mirrors `fieldpath/set.go`: a node holds its *members* (paths that end at this node's
//! children) and its *children* (subtrees). A path can be both a member and a prefix of other
//! members: a map-list item owned as a whole and field by field (`.` in `FieldsV1`).

use std::collections::{BTreeMap, BTreeSet};

use crate::path::{Path, PathElement};
use crate::schema::{Atom, Schema, TypeRef};

/// A set of [`Path`]s.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Set {
    /// Paths that end at one of this node's steps.
    pub members: BTreeSet<PathElement>,
    /// Paths that continue below one of this node's steps; never empty sets.
    pub children: BTreeMap<PathElement, Set>,
}

impl Set {
    /// The empty set.
    pub fn new() -> Set {
        Set::default()
    }

    /// A set of the given paths.
    pub fn from_paths<I: IntoIterator<Item = Path>>(paths: I) -> Set {
        let mut s = Set::new();
        for p in paths {
            s.insert(&p);
        }
        s
    }

    /// Whether the set holds no path.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty() && self.children.is_empty()
    }

    /// Adds `path`; inserting the empty path does nothing (the root is never a member).
    pub fn insert(&mut self, path: &Path) {
        self.insert_elements(&path.0);
    }

    fn insert_elements(&mut self, pes: &[PathElement]) {
        match pes {
            [] => {}
            [last] => {
                self.members.insert(last.clone());
            }
            [first, rest @ ..] => self
                .children
                .entry(first.clone())
                .or_default()
                .insert_elements(rest),
        }
    }

    /// Whether `path` is in the set.
    pub fn has(&self, path: &Path) -> bool {
        let mut node = self;
        match path.0.split_last() {
            None => false,
            Some((last, prefix)) => {
                for pe in prefix {
                    match node.children.get(pe) {
                        Some(c) => node = c,
                        None => return false,
                    }
                }
                node.members.contains(last)
            }
        }
    }

    /// The paths of the set that start with `pe`, without that first step.
    pub fn with_prefix(&self, pe: &PathElement) -> Set {
        self.children.get(pe).cloned().unwrap_or_default()
    }

    /// Paths in either set.
    pub fn union(&self, other: &Set) -> Set {
        let mut out = self.clone();
        out.union_in_place(other);
        out
    }

    fn union_in_place(&mut self, other: &Set) {
        self.members.extend(other.members.iter().cloned());
        for (pe, child) in &other.children {
            self.children
                .entry(pe.clone())
                .or_default()
                .union_in_place(child);
        }
    }

    /// Paths in both sets.
    pub fn intersection(&self, other: &Set) -> Set {
        let members = self.members.intersection(&other.members).cloned().collect();
        let children = self
            .children
            .iter()
            .filter_map(|(pe, c)| {
                let o = other.children.get(pe)?;
                let i = c.intersection(o);
                (!i.is_empty()).then(|| (pe.clone(), i))
            })
            .collect();
        Set { members, children }
    }

    /// Paths in this set and not in `other`.
    pub fn difference(&self, other: &Set) -> Set {
        let members = self.members.difference(&other.members).cloned().collect();
        let children = self
            .children
            .iter()
            .filter_map(|(pe, c)| match other.children.get(pe) {
                None => Some((pe.clone(), c.clone())),
                Some(o) => {
                    let d = c.difference(o);
                    (!d.is_empty()).then(|| (pe.clone(), d))
                }
            })
            .collect();
        Set { members, children }
    }

    /// Paths of this set that do not start with (or equal) a path of `prefixes`
    /// (`RecursiveDifference`): removing `.status` removes everything under it.
    pub fn recursive_difference(&self, prefixes: &Set) -> Set {
        let members = self
            .members
            .iter()
            .filter(|pe| !prefixes.members.contains(*pe))
            .cloned()
            .collect();
        let children = self
            .children
            .iter()
            .filter(|(pe, _)| !prefixes.members.contains(*pe))
            .filter_map(|(pe, c)| {
                let c = match prefixes.children.get(pe) {
                    Some(p) => c.recursive_difference(p),
                    None => c.clone(),
                };
                (!c.is_empty()).then(|| (pe.clone(), c))
            })
            .collect();
        Set { members, children }
    }

    /// Every path of the set, in order.
    pub fn paths(&self) -> Vec<Path> {
        let mut out = Vec::new();
        self.collect_paths(&mut Vec::new(), &mut out);
        out
    }

    fn collect_paths(&self, prefix: &mut Vec<PathElement>, out: &mut Vec<Path>) {
        // Members and children interleave in element order, a member before its own subtree,
        // as `Set.Iterate` walks them.
        let mut keys: BTreeSet<&PathElement> = self.members.iter().collect();
        keys.extend(self.children.keys());
        for pe in keys {
            prefix.push(pe.clone());
            if self.members.contains(pe) {
                out.push(Path(prefix.clone()));
            }
            if let Some(c) = self.children.get(pe) {
                c.collect_paths(prefix, out);
            }
            prefix.pop();
        }
    }

    /// The number of paths in the set.
    pub fn len(&self) -> usize {
        self.members.len() + self.children.values().map(Set::len).sum::<usize>()
    }

    /// This set where every prefix that names a struct field of the schema is a member too
    /// (`EnsureNamedFieldsAreMembers`), so that removing the set removes those fields whole.
    pub fn ensure_named_fields_are_members(&self, schema: &Schema, tr: &TypeRef) -> Set {
        let atom = schema.resolve(tr);
        let mut members = self.members.clone();
        let mut children = BTreeMap::new();
        for (pe, child) in &self.children {
            let child_tr = match (atom, pe) {
                (Some(Atom::Map { fields, .. }), PathElement::Field(name)) => {
                    match fields.get(name) {
                        Some(t) => {
                            members.insert(pe.clone());
                            Some(t.clone())
                        }
                        None => atom.and_then(Atom::element_type),
                    }
                }
                _ => atom.and_then(Atom::element_type),
            };
            let child = match child_tr {
                Some(t) => child.ensure_named_fields_are_members(schema, &t),
                None => child.clone(),
            };
            children.insert(pe.clone(), child);
        }
        Set { members, children }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(names: &[&str]) -> Path {
        Path::fields(names.iter().copied())
    }

    #[test]
    fn a_path_can_be_a_member_and_a_prefix() {
        let s = Set::from_paths([p(&["a"]), p(&["a", "b"])]);
        assert!(s.has(&p(&["a"])));
        assert!(s.has(&p(&["a", "b"])));
        assert!(!s.has(&p(&["b"])));
        assert_eq!(s.paths(), vec![p(&["a"]), p(&["a", "b"])]);
    }

    #[test]
    fn set_operations_work_member_by_member() {
        let a = Set::from_paths([p(&["a", "x"]), p(&["a", "y"]), p(&["b"])]);
        let b = Set::from_paths([p(&["a", "y"]), p(&["c"])]);
        assert_eq!(
            a.union(&b).paths(),
            vec![p(&["a", "x"]), p(&["a", "y"]), p(&["b"]), p(&["c"])]
        );
        assert_eq!(a.intersection(&b).paths(), vec![p(&["a", "y"])]);
        assert_eq!(a.difference(&b).paths(), vec![p(&["a", "x"]), p(&["b"])]);
        assert!(a.difference(&a).is_empty());
        let status = Set::from_paths([p(&["a"])]);
        assert_eq!(a.recursive_difference(&status).paths(), vec![p(&["b"])]);
        assert_eq!(a.len(), 3);
    }
}
