//! The element relationships that decide how values merge and which paths name their parts.
//!
//! Mirrors `schema/elements.go`, reduced to what merging needs: scalars; lists that are atomic,
//! sets of scalars or maps keyed by some of their items' fields; maps that are atomic or
//! granular, with named fields (structs) and/or an element type (string-keyed maps). Types are
//! named so that recursive schemas (JSON schema props) stay finite.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::sync::OnceLock;

use serde_json::Value;

/// How a list's items relate (`x-kubernetes-list-type`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListType {
    /// Replaced whole; owned as one field.
    Atomic,
    /// A set of scalars, items named by value.
    Set,
    /// Items are maps named by these key fields (`x-kubernetes-list-map-keys`).
    Map(Vec<String>),
}

/// The shape of a value.
#[derive(Clone, Debug, PartialEq)]
pub enum Atom {
    /// A string, number, boolean or null; merged by replacement.
    Scalar,
    /// A list.
    List {
        /// The type of the items.
        element: TypeRef,
        /// How items relate.
        list_type: ListType,
    },
    /// A struct or a map.
    Map {
        /// Named fields (a struct's properties).
        fields: BTreeMap<String, TypeRef>,
        /// The type of other keys (a map's values); `None` for a struct.
        element: Option<TypeRef>,
        /// Replaced whole (`x-kubernetes-map-type: atomic`).
        atomic: bool,
    },
    /// No schema: the shape is deduced from the value (maps granular, lists atomic), as
    /// structured-merge-diff's `__untyped_deduced_`.
    Deduced,
}

impl Atom {
    /// A granular map of `element` values, no named fields.
    pub fn map_of(element: TypeRef) -> Atom {
        Atom::Map {
            fields: BTreeMap::new(),
            element: Some(element),
            atomic: false,
        }
    }

    /// A granular struct of these fields.
    pub fn structure<I, S>(fields: I) -> Atom
    where
        I: IntoIterator<Item = (S, TypeRef)>,
        S: Into<String>,
    {
        Atom::Map {
            fields: fields.into_iter().map(|(k, v)| (k.into(), v)).collect(),
            element: None,
            atomic: false,
        }
    }

    /// A list of `element` items related by `list_type`.
    pub fn list(element: TypeRef, list_type: ListType) -> Atom {
        Atom::List { element, list_type }
    }

    /// The type of a child that is not a named field: list items and map values.
    pub fn element_type(&self) -> Option<TypeRef> {
        match self {
            Atom::List { element, .. } => Some(element.clone()),
            Atom::Map { element, .. } => element.clone(),
            Atom::Deduced => Some(TypeRef::deduced()),
            Atom::Scalar => None,
        }
    }

    /// The type of field `name` of a map: the named field's, else the element type's, else
    /// deduced (unknown fields of a struct are kept and merged untyped).
    pub fn field_type(&self, name: &str) -> &TypeRef {
        let found = match self {
            Atom::Map {
                fields, element, ..
            } => fields.get(name).or(element.as_ref()),
            _ => None,
        };
        found.unwrap_or_else(|| deduced_ref())
    }
}

/// A reference to a type: by name in a [`Schema`], or inline.
#[derive(Clone, Debug, PartialEq)]
pub enum TypeRef {
    /// A type of the schema.
    Named(String),
    /// A type given in place.
    Inline(Box<Atom>),
}

impl TypeRef {
    /// A reference by name.
    pub fn named(name: impl Into<String>) -> TypeRef {
        TypeRef::Named(name.into())
    }

    /// An inline type.
    pub fn inline(atom: Atom) -> TypeRef {
        TypeRef::Inline(Box::new(atom))
    }

    /// A scalar.
    pub fn scalar() -> TypeRef {
        TypeRef::inline(Atom::Scalar)
    }

    /// The untyped, deduced type.
    pub fn deduced() -> TypeRef {
        TypeRef::inline(Atom::Deduced)
    }
}

/// The deduced type, shared so that walks need not build one per unknown field.
fn deduced_ref() -> &'static TypeRef {
    static DEDUCED: OnceLock<TypeRef> = OnceLock::new();
    DEDUCED.get_or_init(TypeRef::deduced)
}

/// Named types.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Schema {
    types: HashMap<String, Atom>,
}

impl Schema {
    /// An empty schema: every reference by name resolves to deduced.
    pub fn new() -> Schema {
        Schema::default()
    }

    /// Adds (or replaces) the type `name`.
    pub fn insert(&mut self, name: impl Into<String>, atom: Atom) {
        self.types.insert(name.into(), atom);
    }

    /// Whether the type `name` is defined.
    pub fn contains(&self, name: &str) -> bool {
        self.types.contains_key(name)
    }

    /// The atom `tr` refers to; `None` only for a name the schema lacks.
    pub fn resolve<'a>(&'a self, tr: &'a TypeRef) -> Option<&'a Atom> {
        match tr {
            TypeRef::Named(n) => self.types.get(n),
            TypeRef::Inline(a) => Some(a),
        }
    }

    /// The atom that describes `value` of type `tr`: deduced types and types that do not fit
    /// the value (a scalar where the schema has a map) become what the value is, so that bad
    /// input is merged as a leaf rather than refused here (validation names it later).
    pub(crate) fn atom_for<'a>(&'a self, tr: &'a TypeRef, value: Option<&Value>) -> Cow<'a, Atom> {
        let atom = self.resolve(tr).unwrap_or(&Atom::Deduced);
        let fits = match (atom, value) {
            (_, None) | (_, Some(Value::Null)) => true,
            (Atom::List { .. }, Some(v)) => v.is_array(),
            (Atom::Map { .. }, Some(v)) => v.is_object(),
            (Atom::Scalar, Some(v)) => !v.is_array() && !v.is_object(),
            (Atom::Deduced, _) => false,
        };
        if fits {
            return Cow::Borrowed(atom);
        }
        Cow::Owned(match value {
            Some(Value::Object(_)) => Atom::map_of(TypeRef::deduced()),
            Some(Value::Array(_)) => Atom::list(TypeRef::deduced(), ListType::Atomic),
            _ => Atom::Scalar,
        })
    }
}
