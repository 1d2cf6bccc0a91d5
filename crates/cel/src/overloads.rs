//! The overloads the checker knows completely: cel-go's standard operators and string
//! functions (`common/stdlib`), with kube's `CrossTypeNumericComparisons`, and the methods of
//! kube's authorizer library (`k8s.io/apiserver/pkg/cel/library/authz.go`). A function not
//! listed here is not checked: its result is `dyn`.

use super::types::Type;

/// One signature: receiver (for a member function) and arguments, and the result.
pub struct Overload {
    /// The receiver's type, for member functions.
    pub receiver: Option<Type>,
    /// The arguments' types.
    pub params: Vec<Type>,
    /// The result's type.
    pub result: Type,
}

/// How a function is known to the checker.
pub enum Known {
    /// Every overload of the function: a call matching none is an error.
    Overloads(Vec<Overload>),
    /// A conversion whose result type is fixed; its arguments are not checked.
    Conversion(Type),
}

/// Name of kube's authorizer type.
pub const AUTHORIZER: &str = "kubernetes.authorization.Authorizer";
const PATH_CHECK: &str = "kubernetes.authorization.PathCheck";
const GROUP_CHECK: &str = "kubernetes.authorization.GroupCheck";
/// Name of kube's authorizer resource check type (`authorizer.requestResource`).
pub const RESOURCE_CHECK: &str = "kubernetes.authorization.ResourceCheck";
const DECISION: &str = "kubernetes.authorization.Decision";

fn global(params: Vec<Type>, result: Type) -> Overload {
    Overload {
        receiver: None,
        params,
        result,
    }
}

fn member(receiver: Type, params: Vec<Type>, result: Type) -> Overload {
    Overload {
        receiver: Some(receiver),
        params,
        result,
    }
}

fn a() -> Type {
    Type::Param("A")
}

fn b() -> Type {
    Type::Param("B")
}

fn same_type_binary(types: &[Type], result: impl Fn(&Type) -> Type) -> Vec<Overload> {
    types
        .iter()
        .map(|t| global(vec![t.clone(), t.clone()], result(t)))
        .collect()
}

/// The overloads of `function`, when it is one the checker knows. `on_opaque` says whether the
/// receiver of a member call is one of the authorizer types: the authorizer's method names are
/// only checked on them, so that a library kube has and rkcm does not know is never refused.
pub fn lookup(function: &str, on_opaque: bool) -> Option<Known> {
    use Type::*;
    let numeric = [Int, Uint, Double];
    let ordered = [Bool, Int, Uint, Double, String, Bytes, Timestamp, Duration];
    let overloads = match function {
        "_==_" | "_!=_" => vec![global(vec![a(), a()], Bool)],
        "_<_" | "_<=_" | "_>_" | "_>=_" => {
            let mut o = same_type_binary(&ordered, |_| Bool);
            // cel.CrossTypeNumericComparisons(true), in kube's base environment.
            for (x, y) in [
                (Int, Uint),
                (Int, Double),
                (Uint, Int),
                (Uint, Double),
                (Double, Int),
                (Double, Uint),
            ] {
                o.push(global(vec![x, y], Bool));
            }
            o
        }
        "_+_" => {
            let mut o = same_type_binary(&[Int, Uint, Double, String, Bytes], Clone::clone);
            o.push(global(
                vec![Type::list(a()), Type::list(a())],
                Type::list(a()),
            ));
            o.push(global(vec![Timestamp, Duration], Timestamp));
            o.push(global(vec![Duration, Timestamp], Timestamp));
            o.push(global(vec![Duration, Duration], Duration));
            o
        }
        "_-_" => {
            let mut o = same_type_binary(&numeric, Clone::clone);
            o.push(global(vec![Timestamp, Timestamp], Duration));
            o.push(global(vec![Timestamp, Duration], Timestamp));
            o.push(global(vec![Duration, Duration], Duration));
            o
        }
        "_*_" | "_/_" => same_type_binary(&numeric, Clone::clone),
        "_%_" => same_type_binary(&[Int, Uint], Clone::clone),
        "-_" => vec![global(vec![Int], Int), global(vec![Double], Double)],
        "!_" => vec![global(vec![Bool], Bool)],
        "_&&_" | "_||_" => vec![global(vec![Bool, Bool], Bool)],
        "_?_:_" => vec![global(vec![Bool, a(), a()], a())],
        "_[_]" => vec![
            global(vec![Type::list(a()), Int], a()),
            global(vec![Type::map(a(), b()), a()], b()),
        ],
        "@in" => vec![
            global(vec![a(), Type::list(a())], Bool),
            global(vec![a(), Type::map(a(), b())], Bool),
        ],
        "size" => {
            let args = [String, Bytes, Type::list(a()), Type::map(a(), b())];
            let mut o: Vec<Overload> = args.iter().map(|t| global(vec![t.clone()], Int)).collect();
            o.extend(args.iter().map(|t| member(t.clone(), vec![], Int)));
            o
        }
        "contains" | "startsWith" | "endsWith" => vec![member(String, vec![String], Bool)],
        "matches" => vec![
            global(vec![String, String], Bool),
            member(String, vec![String], Bool),
        ],
        "int" => return Some(Known::Conversion(Int)),
        "uint" => return Some(Known::Conversion(Uint)),
        "double" => return Some(Known::Conversion(Double)),
        "string" => return Some(Known::Conversion(String)),
        "bytes" => return Some(Known::Conversion(Bytes)),
        "bool" => return Some(Known::Conversion(Bool)),
        "duration" => return Some(Known::Conversion(Duration)),
        "timestamp" => return Some(Known::Conversion(Timestamp)),
        "dyn" => return Some(Known::Conversion(Dyn)),
        _ if on_opaque => return authorizer_method(function).map(Known::Overloads),
        _ => return None,
    };
    Some(Known::Overloads(overloads))
}

fn authorizer_method(function: &str) -> Option<Vec<Overload>> {
    use Type::*;
    let o =
        |recv: &'static str, params: Vec<Type>, result: Type| member(Opaque(recv), params, result);
    Some(match function {
        "path" => vec![o(AUTHORIZER, vec![String], Opaque(PATH_CHECK))],
        "group" => vec![o(AUTHORIZER, vec![String], Opaque(GROUP_CHECK))],
        "serviceAccount" => vec![o(AUTHORIZER, vec![String, String], Opaque(AUTHORIZER))],
        "resource" => vec![o(GROUP_CHECK, vec![String], Opaque(RESOURCE_CHECK))],
        "subresource" | "namespace" | "name" => {
            vec![o(RESOURCE_CHECK, vec![String], Opaque(RESOURCE_CHECK))]
        }
        "check" => vec![
            o(PATH_CHECK, vec![String], Opaque(DECISION)),
            o(RESOURCE_CHECK, vec![String], Opaque(DECISION)),
        ],
        "allowed" | "errored" => vec![o(DECISION, vec![], Bool)],
        "reason" | "error" => vec![o(DECISION, vec![], String)],
        _ => return None,
    })
}
