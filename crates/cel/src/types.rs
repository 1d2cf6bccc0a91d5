//! CEL types as the checker sees them, printed as cel-go prints them (`FormatCELType`), and
//! cel-go's assignability rules (`checker/types.go`).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// A CEL type.
#[derive(Clone, Debug, PartialEq)]
pub enum Type {
    /// Anything: checked at run time. Unknown constructs are `dyn`, so they never warn.
    Dyn,
    /// The type of an expression that already failed to check; like `dyn`, it warns no further.
    Error,
    /// `null_type`.
    Null,
    /// `bool`.
    Bool,
    /// `int`.
    Int,
    /// `uint`.
    Uint,
    /// `double`.
    Double,
    /// `string`.
    String,
    /// `bytes`.
    Bytes,
    /// `google.protobuf.Duration`.
    Duration,
    /// `google.protobuf.Timestamp`.
    Timestamp,
    /// `list(T)`.
    List(Box<Type>),
    /// `map(K, V)`.
    Map(Box<Type>, Box<Type>),
    /// An object with named fields (a schema's `object` with `properties`).
    Object(Arc<ObjectType>),
    /// An opaque type with methods (`kubernetes.authorization.Authorizer`).
    Opaque(&'static str),
    /// The type of a type name used as a value (`type(x) == string`).
    TypeOf(Box<Type>),
    /// A type parameter of an overload (`A` in `_==_(A, A)`).
    Param(&'static str),
}

/// An object type: its name (cel-go prints it) and its fields.
#[derive(Debug, PartialEq)]
pub struct ObjectType {
    /// The type's name.
    pub name: String,
    /// Fields by (escaped) name.
    pub fields: BTreeMap<String, Type>,
}

impl Type {
    /// An object type.
    pub fn object(name: impl Into<String>, fields: BTreeMap<String, Type>) -> Type {
        Type::Object(Arc::new(ObjectType {
            name: name.into(),
            fields,
        }))
    }

    /// `list(elem)`.
    pub fn list(elem: Type) -> Type {
        Type::List(Box::new(elem))
    }

    /// `map(key, value)`.
    pub fn map(key: Type, value: Type) -> Type {
        Type::Map(Box::new(key), Box::new(value))
    }

    /// Whether the type is `dyn` or the error type, which match everything.
    pub fn is_dyn_or_error(&self) -> bool {
        matches!(self, Type::Dyn | Type::Error)
    }

    /// Whether `null` may stand for a value of this type (cel-go's `isLegacyNullable`).
    fn nullable(&self) -> bool {
        matches!(
            self,
            Type::Object(_) | Type::Opaque(_) | Type::Duration | Type::Timestamp
        )
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Dyn => f.write_str("dyn"),
            Type::Error => f.write_str("*error*"),
            // cel-go's checker prints the null type as `null` in its messages (kube's CRD
            // validation tests expect `applied to '(string, null)'`).
            Type::Null => f.write_str("null"),
            Type::Bool => f.write_str("bool"),
            Type::Int => f.write_str("int"),
            Type::Uint => f.write_str("uint"),
            Type::Double => f.write_str("double"),
            Type::String => f.write_str("string"),
            Type::Bytes => f.write_str("bytes"),
            Type::Duration => f.write_str("google.protobuf.Duration"),
            Type::Timestamp => f.write_str("google.protobuf.Timestamp"),
            Type::List(e) => write!(f, "list({e})"),
            Type::Map(k, v) => write!(f, "map({k}, {v})"),
            Type::Object(o) => f.write_str(&o.name),
            Type::Opaque(name) => f.write_str(name),
            Type::TypeOf(t) => write!(f, "type({t})"),
            Type::Param(p) => f.write_str(p),
        }
    }
}

/// Type-parameter bindings made while matching one overload.
#[derive(Default, Debug)]
pub struct Bindings(BTreeMap<&'static str, Type>);

impl Bindings {
    /// `t` with every bound parameter replaced (unbound ones become `dyn`).
    pub fn substitute(&self, t: &Type) -> Type {
        match t {
            Type::Param(p) => self.0.get(p).cloned().unwrap_or(Type::Dyn),
            Type::List(e) => Type::list(self.substitute(e)),
            Type::Map(k, v) => Type::map(self.substitute(k), self.substitute(v)),
            Type::TypeOf(t) => Type::TypeOf(Box::new(self.substitute(t))),
            other => other.clone(),
        }
    }
}

/// Whether a value of type `actual` may be passed where `expected` is declared, binding the
/// type parameters of `expected` on the way.
pub fn assignable(expected: &Type, actual: &Type, b: &mut Bindings) -> bool {
    if let Type::Param(p) = expected {
        return match b.0.get(p).cloned() {
            Some(bound) => {
                if assignable(&bound, actual, b) {
                    // A parameter seen as `dyn` once stays `dyn` (cel-go's `mostGeneral`).
                    if actual.is_dyn_or_error() {
                        b.0.insert(p, Type::Dyn);
                    }
                    true
                } else {
                    false
                }
            }
            None => {
                b.0.insert(p, actual.clone());
                true
            }
        };
    }
    if expected.is_dyn_or_error() || actual.is_dyn_or_error() {
        return true;
    }
    match (expected, actual) {
        (Type::Null, other) | (other, Type::Null) => {
            matches!(other, Type::Null) || other.nullable()
        }
        (Type::List(e), Type::List(a)) => assignable(e, a, b),
        (Type::Map(ek, ev), Type::Map(ak, av)) => assignable(ek, ak, b) && assignable(ev, av, b),
        (Type::Object(e), Type::Object(a)) => e.name == a.name,
        (Type::TypeOf(_), Type::TypeOf(_)) => true,
        (e, a) => std::mem::discriminant(e) == std::mem::discriminant(a) && e == a,
    }
}

/// The type of a list or map literal's elements: their common type, or `dyn` when they differ
/// (cel-go's `joinTypes`).
pub fn join(prev: Option<Type>, next: &Type) -> Type {
    match prev {
        None => next.clone(),
        Some(prev) => {
            if prev == *next {
                prev
            } else if prev.is_dyn_or_error() || next.is_dyn_or_error() {
                Type::Dyn
            } else if assignable(&prev, next, &mut Bindings::default())
                && assignable(next, &prev, &mut Bindings::default())
            {
                prev
            } else {
                Type::Dyn
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_print_as_cel_go_prints_them() {
        assert_eq!(
            Type::map(Type::String, Type::list(Type::Int)).to_string(),
            "map(string, list(int))"
        );
        assert_eq!(Type::Timestamp.to_string(), "google.protobuf.Timestamp");
        assert_eq!(Type::Null.to_string(), "null");
    }

    #[test]
    fn null_is_assignable_to_objects_but_not_to_scalars_or_lists() {
        let obj = Type::object("Deployment.spec", BTreeMap::new());
        assert!(assignable(&obj, &Type::Null, &mut Bindings::default()));
        assert!(!assignable(
            &Type::Int,
            &Type::Null,
            &mut Bindings::default()
        ));
        assert!(!assignable(
            &Type::list(Type::Int),
            &Type::Null,
            &mut Bindings::default()
        ));
    }

    #[test]
    fn a_type_parameter_binds_to_the_first_argument() {
        let mut b = Bindings::default();
        assert!(assignable(&Type::Param("A"), &Type::Int, &mut b));
        assert!(!assignable(&Type::Param("A"), &Type::String, &mut b));
        let mut b = Bindings::default();
        assert!(assignable(
            &Type::list(Type::Param("A")),
            &Type::list(Type::Dyn),
            &mut b
        ));
        assert!(assignable(&Type::Param("A"), &Type::String, &mut b));
    }

    #[test]
    fn differing_literal_elements_join_to_dyn() {
        assert_eq!(join(Some(Type::Int), &Type::String), Type::Dyn);
        assert_eq!(join(Some(Type::Int), &Type::Int), Type::Int);
    }
}
