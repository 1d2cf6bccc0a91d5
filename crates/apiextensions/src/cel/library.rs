//! The CEL environment of CRD validation rules: the `cel` crate's standard library and strings
//! extension plus kube's libraries (`k8s.io/apiserver/pkg/cel/library`): lists, regex, URLs,
//! quantities, IP addresses and CIDRs, and named formats.

use std::sync::{Arc, LazyLock};

use cel::common::functions::Function;
use cel::common::types::{Type, BOOL_TYPE, DYN_TYPE, INT_TYPE, LIST_TYPE, STRING_TYPE};
use cel::common::value::{CowVal, Val};
use cel::objects::{Key, Map, OptionalValue};
use cel::{Env, ExecutionError, Value};

use super::types::{self, Cidr, Format, Ip, Quantity, Semver, Url};

/// The shared environment rules compile and run in.
pub fn env() -> Arc<Env> {
    static ENV: LazyLock<Arc<Env>> = LazyLock::new(|| Arc::new(build_env()));
    ENV.clone()
}

fn build_env() -> Env {
    let mut env = Env::stdlib();
    let declared = cel::extensions::strings(&mut env).and_then(|()| declare(&mut env));
    if let Err(e) = declared {
        // The declarations are fixed: a conflict is a programming error caught by the tests.
        panic!("declaring kube's CEL libraries: {e}");
    }
    env
}

type R<'b, 'v> = Result<CowVal<'b, 'v>, ExecutionError>;

fn declare(env: &mut Env) -> Result<(), cel::DeclarationError> {
    super::authz::declare(env)?;
    // lists
    env.add_member_overload("isSorted", "list_is_sorted", LIST_TYPE, vec![], is_sorted)?;
    env.add_member_overload("sum", "list_sum", LIST_TYPE, vec![], sum)?;
    env.add_member_overload("min", "list_min", LIST_TYPE, vec![], min)?;
    env.add_member_overload("max", "list_max", LIST_TYPE, vec![], max)?;
    env.add_member_overload(
        "indexOf",
        "list_index_of",
        LIST_TYPE,
        vec![DYN_TYPE],
        index_of,
    )?;
    env.add_member_overload(
        "lastIndexOf",
        "list_last_index_of",
        LIST_TYPE,
        vec![DYN_TYPE],
        last_index_of,
    )?;
    // regex
    env.add_member_overload(
        "find",
        "string_find_string",
        STRING_TYPE,
        vec![STRING_TYPE],
        find,
    )?;
    env.add_member_overload(
        "findAll",
        "string_find_all_string",
        STRING_TYPE,
        vec![STRING_TYPE],
        find_all,
    )?;
    env.add_member_overload(
        "findAll",
        "string_find_all_string_int",
        STRING_TYPE,
        vec![STRING_TYPE, INT_TYPE],
        find_all,
    )?;
    // urls
    let url = || Type::new_opaque_type(types::URL_TYPE);
    env.add_overload("url", "string_to_url", vec![STRING_TYPE], to_url)?;
    env.add_overload("isURL", "is_url_string", vec![STRING_TYPE], is_url)?;
    env.add_member_overload("getScheme", "url_get_scheme", url(), vec![], url_get_scheme)?;
    env.add_member_overload("getHost", "url_get_host", url(), vec![], url_get_host)?;
    env.add_member_overload(
        "getHostname",
        "url_get_hostname",
        url(),
        vec![],
        url_get_hostname,
    )?;
    env.add_member_overload("getPort", "url_get_port", url(), vec![], url_get_port)?;
    env.add_member_overload(
        "getEscapedPath",
        "url_get_escaped_path",
        url(),
        vec![],
        url_get_escaped_path,
    )?;
    env.add_member_overload("getQuery", "url_get_query", url(), vec![], url_get_query)?;
    // quantities
    let quantity = || Type::new_opaque_type(types::QUANTITY_TYPE);
    env.add_overload(
        "quantity",
        "string_to_quantity",
        vec![STRING_TYPE],
        to_quantity,
    )?;
    env.add_overload(
        "isQuantity",
        "is_quantity_string",
        vec![STRING_TYPE],
        is_quantity,
    )?;
    env.add_member_overload("sign", "quantity_sign", quantity(), vec![], quantity_sign)?;
    env.add_member_overload(
        "isInteger",
        "quantity_is_integer",
        quantity(),
        vec![],
        quantity_is_integer,
    )?;
    env.add_member_overload(
        "asInteger",
        "quantity_as_integer",
        quantity(),
        vec![],
        quantity_as_integer,
    )?;
    env.add_member_overload(
        "asApproximateFloat",
        "quantity_as_float",
        quantity(),
        vec![],
        quantity_as_float,
    )?;
    env.add_member_overload(
        "isGreaterThan",
        "quantity_is_greater_than",
        quantity(),
        vec![quantity()],
        quantity_is_greater_than,
    )?;
    env.add_member_overload(
        "isLessThan",
        "quantity_is_less_than",
        quantity(),
        vec![quantity()],
        quantity_is_less_than,
    )?;
    env.add_member_overload(
        "compareTo",
        "quantity_compare_to",
        quantity(),
        vec![quantity()],
        quantity_compare_to,
    )?;
    env.add_member_overload(
        "add",
        "quantity_add",
        quantity(),
        vec![quantity()],
        quantity_add,
    )?;
    env.add_member_overload(
        "add",
        "quantity_add_int",
        quantity(),
        vec![INT_TYPE],
        quantity_add,
    )?;
    env.add_member_overload(
        "sub",
        "quantity_sub",
        quantity(),
        vec![quantity()],
        quantity_sub,
    )?;
    env.add_member_overload(
        "sub",
        "quantity_sub_int",
        quantity(),
        vec![INT_TYPE],
        quantity_sub,
    )?;
    // IP addresses and CIDRs
    let ip = || Type::new_opaque_type(types::IP_TYPE);
    let cidr = || Type::new_opaque_type(types::CIDR_TYPE);
    env.add_overload("ip", "string_to_ip", vec![STRING_TYPE], to_ip)?;
    env.add_overload("isIP", "is_ip", vec![STRING_TYPE], is_ip)?;
    env.add_overload(
        "ip.isCanonical",
        "ip_is_canonical",
        vec![STRING_TYPE],
        ip_is_canonical,
    )?;
    env.add_overload("string", "ip_to_string", vec![ip()], net_to_string)?;
    env.add_overload("string", "cidr_to_string", vec![cidr()], net_to_string)?;
    env.add_member_overload("family", "ip_family", ip(), vec![], ip_family)?;
    env.add_member_overload(
        "isUnspecified",
        "ip_is_unspecified",
        ip(),
        vec![],
        ip_is_unspecified,
    )?;
    env.add_member_overload("isLoopback", "ip_is_loopback", ip(), vec![], ip_is_loopback)?;
    env.add_member_overload(
        "isLinkLocalMulticast",
        "ip_is_link_local_multicast",
        ip(),
        vec![],
        ip_is_link_local_multicast,
    )?;
    env.add_member_overload(
        "isLinkLocalUnicast",
        "ip_is_link_local_unicast",
        ip(),
        vec![],
        ip_is_link_local_unicast,
    )?;
    env.add_member_overload(
        "isGlobalUnicast",
        "ip_is_global_unicast",
        ip(),
        vec![],
        ip_is_global_unicast,
    )?;
    env.add_overload("cidr", "string_to_cidr", vec![STRING_TYPE], to_cidr)?;
    env.add_overload("isCIDR", "is_cidr", vec![STRING_TYPE], is_cidr)?;
    env.add_member_overload(
        "containsIP",
        "cidr_contains_ip_ip",
        cidr(),
        vec![ip()],
        cidr_contains_ip,
    )?;
    env.add_member_overload(
        "containsIP",
        "cidr_contains_ip_string",
        cidr(),
        vec![STRING_TYPE],
        cidr_contains_ip,
    )?;
    env.add_member_overload(
        "containsCIDR",
        "cidr_contains_cidr_cidr",
        cidr(),
        vec![cidr()],
        cidr_contains_cidr,
    )?;
    env.add_member_overload(
        "containsCIDR",
        "cidr_contains_cidr_string",
        cidr(),
        vec![STRING_TYPE],
        cidr_contains_cidr,
    )?;
    env.add_member_overload("ip", "cidr_ip", cidr(), vec![], cidr_ip)?;
    env.add_member_overload("masked", "cidr_masked", cidr(), vec![], cidr_masked)?;
    env.add_member_overload(
        "prefixLength",
        "cidr_prefix_length",
        cidr(),
        vec![],
        cidr_prefix_length,
    )?;
    // named formats
    let format = || Type::new_opaque_type(types::FORMAT_TYPE);
    env.add_overload(
        "format.named",
        "format_named",
        vec![STRING_TYPE],
        format_named,
    )?;
    env.add_member_overload(
        "validate",
        "format_validate",
        format(),
        vec![STRING_TYPE],
        format_validate,
    )?;
    for (name, f) in FORMAT_FUNCTIONS {
        env.add_overload(
            &format!("format.{name}"),
            &format!("format_{name}"),
            vec![],
            *f,
        )?;
    }
    // semantic versions
    let semver = || Type::new_opaque_type(types::SEMVER_TYPE);
    env.add_overload("semver", "string_to_semver", vec![STRING_TYPE], to_semver)?;
    env.add_overload(
        "semver",
        "string_bool_to_semver",
        vec![STRING_TYPE, BOOL_TYPE],
        to_semver,
    )?;
    env.add_overload("isSemver", "is_semver_string", vec![STRING_TYPE], is_semver)?;
    env.add_overload(
        "isSemver",
        "is_semver_string_bool",
        vec![STRING_TYPE, BOOL_TYPE],
        is_semver,
    )?;
    env.add_member_overload("major", "semver_major", semver(), vec![], semver_major)?;
    env.add_member_overload("minor", "semver_minor", semver(), vec![], semver_minor)?;
    env.add_member_overload("patch", "semver_patch", semver(), vec![], semver_patch)?;
    env.add_member_overload(
        "isGreaterThan",
        "semver_is_greater_than",
        semver(),
        vec![semver()],
        semver_is_greater_than,
    )?;
    env.add_member_overload(
        "isLessThan",
        "semver_is_less_than",
        semver(),
        vec![semver()],
        semver_is_less_than,
    )?;
    env.add_member_overload(
        "compareTo",
        "semver_compare_to",
        semver(),
        vec![semver()],
        semver_compare_to,
    )?;
    // sets (cel-go's ext.Sets)
    for (name, f) in [
        ("sets.contains", sets_contains as Function),
        ("sets.intersects", sets_intersects),
        ("sets.equivalent", sets_equivalent),
    ] {
        env.add_overload(name, name, vec![LIST_TYPE, LIST_TYPE], f)?;
    }
    Ok(())
}

fn values(args: &[CowVal<'_, '_>]) -> Result<Vec<Value>, ExecutionError> {
    args.iter().map(|a| Value::try_from(a.as_ref())).collect()
}

fn out<'b, 'v>(v: Value) -> R<'b, 'v> {
    let b: Box<dyn Val> = Box::<dyn Val>::try_from(v)?;
    Ok(CowVal::from(b))
}

fn fail(function: &str, msg: impl ToString) -> ExecutionError {
    ExecutionError::function_error(function, msg)
}

fn list_arg(v: &Value) -> Result<&[Value], ExecutionError> {
    match v {
        Value::List(l) => Ok(l.as_slice()),
        _ => Err(fail("list", "expected a list")),
    }
}

fn string_arg<'a>(v: &'a Value, function: &str) -> Result<&'a str, ExecutionError> {
    match v {
        Value::String(s) => Ok(s.as_str()),
        _ => Err(fail(function, "expected a string")),
    }
}

fn compare(function: &str, a: &Value, b: &Value) -> Result<std::cmp::Ordering, ExecutionError> {
    let comparable = matches!(
        (a, b),
        (
            Value::Int(_) | Value::UInt(_) | Value::Float(_),
            Value::Int(_) | Value::UInt(_) | Value::Float(_)
        ) | (Value::String(_), Value::String(_))
            | (Value::Bool(_), Value::Bool(_))
            | (Value::Bytes(_), Value::Bytes(_))
            | (Value::Duration(_), Value::Duration(_))
            | (Value::Timestamp(_), Value::Timestamp(_))
    );
    match a.partial_cmp(b) {
        Some(o) if comparable => Ok(o),
        _ => Err(fail(
            function,
            format!("no such overload: {}.{function}()", a.type_of()),
        )),
    }
}

// ---- lists (library/lists.go) ----

fn is_sorted<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> R<'b, 'v> {
    let v = values(&args)?;
    let list = list_arg(&v[0])?;
    for w in list.windows(2) {
        if compare("isSorted", &w[0], &w[1])? == std::cmp::Ordering::Greater {
            return out(Value::Bool(false));
        }
    }
    out(Value::Bool(true))
}

fn sum<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> R<'b, 'v> {
    let v = values(&args)?;
    let list = list_arg(&v[0])?;
    let Some(first) = list.first() else {
        return out(Value::Int(0));
    };
    let mut acc = first.clone();
    for item in &list[1..] {
        acc = match (&acc, item) {
            (Value::Int(a), Value::Int(b)) => Value::Int(
                a.checked_add(*b)
                    .ok_or_else(|| fail("sum", "integer overflow"))?,
            ),
            (Value::UInt(a), Value::UInt(b)) => Value::UInt(
                a.checked_add(*b)
                    .ok_or_else(|| fail("sum", "unsigned integer overflow"))?,
            ),
            (Value::Float(a), Value::Float(b)) => Value::Float(a + b),
            (Value::Duration(a), Value::Duration(b)) => Value::Duration(*a + *b),
            _ => {
                return Err(fail(
                    "sum",
                    format!("no such overload: {}.sum()", item.type_of()),
                ))
            }
        };
    }
    if !matches!(
        acc,
        Value::Int(_) | Value::UInt(_) | Value::Float(_) | Value::Duration(_)
    ) {
        return Err(fail(
            "sum",
            format!("no such overload: {}.sum()", acc.type_of()),
        ));
    }
    out(acc)
}

fn extreme<'b, 'v>(args: Vec<CowVal<'b, 'v>>, name: &str, want: std::cmp::Ordering) -> R<'b, 'v> {
    let v = values(&args)?;
    let list = list_arg(&v[0])?;
    let Some(mut best) = list.first() else {
        return Err(fail(name, format!("{name} called on empty list")));
    };
    for item in &list[1..] {
        if compare(name, item, best)? == want {
            best = item;
        }
    }
    // A single element must still be comparable.
    compare(name, best, best)?;
    out(best.clone())
}

fn min<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> R<'b, 'v> {
    extreme(args, "min", std::cmp::Ordering::Less)
}

fn max<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> R<'b, 'v> {
    extreme(args, "max", std::cmp::Ordering::Greater)
}

fn index_of<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> R<'b, 'v> {
    let v = values(&args)?;
    let list = list_arg(&v[0])?;
    let i = list
        .iter()
        .position(|x| x == &v[1])
        .map_or(-1, |i| i as i64);
    out(Value::Int(i))
}

fn last_index_of<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> R<'b, 'v> {
    let v = values(&args)?;
    let list = list_arg(&v[0])?;
    let i = list
        .iter()
        .rposition(|x| x == &v[1])
        .map_or(-1, |i| i as i64);
    out(Value::Int(i))
}

// ---- regex (library/regex.go) ----

/// The compiled `pattern`: rules run once per list item, so the last patterns compiled are kept
/// per thread (kube compiles constant patterns once, with the program).
fn regex_arg(function: &str, pattern: &str) -> Result<regex::Regex, ExecutionError> {
    const KEPT: usize = 32;
    thread_local! {
        static COMPILED: std::cell::RefCell<Vec<(String, regex::Regex)>> =
            const { std::cell::RefCell::new(Vec::new()) };
    }
    if let Some(re) = COMPILED.with_borrow(|c| {
        c.iter()
            .find(|(p, _)| p == pattern)
            .map(|(_, re)| re.clone())
    }) {
        return Ok(re);
    }
    let re =
        regex::Regex::new(pattern).map_err(|e| fail(function, format!("Illegal regex: {e}")))?;
    COMPILED.with_borrow_mut(|c| {
        if c.len() == KEPT {
            c.remove(0);
        }
        c.push((pattern.to_string(), re.clone()));
    });
    Ok(re)
}

fn find<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> R<'b, 'v> {
    let v = values(&args)?;
    let re = regex_arg("find", string_arg(&v[1], "find")?)?;
    let s = string_arg(&v[0], "find")?;
    out(Value::String(Arc::new(
        re.find(s).map_or("", |m| m.as_str()).to_string(),
    )))
}

fn find_all<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> R<'b, 'v> {
    let v = values(&args)?;
    let re = regex_arg("findAll", string_arg(&v[1], "findAll")?)?;
    let s = string_arg(&v[0], "findAll")?;
    let limit = match v.get(2) {
        Some(Value::Int(n)) if *n >= 0 => *n as usize,
        _ => usize::MAX,
    };
    let found: Vec<Value> = re
        .find_iter(s)
        .take(limit)
        .map(|m| Value::String(Arc::new(m.as_str().to_string())))
        .collect();
    out(Value::List(Arc::new(found)))
}

// ---- URLs (library/urls.go) ----

fn to_url<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> R<'b, 'v> {
    let v = values(&args)?;
    let s = string_arg(&v[0], "url")?;
    let u = Url::parse(s).map_err(|e| {
        fail(
            "url",
            format!("URL parse error during conversion from string: {e}"),
        )
    })?;
    out(Value::Opaque(Arc::new(u)))
}

fn is_url<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> R<'b, 'v> {
    let v = values(&args)?;
    out(Value::Bool(Url::parse(string_arg(&v[0], "isURL")?).is_ok()))
}

fn opaque<'a, T: 'static>(v: &'a Value, function: &str) -> Result<&'a T, ExecutionError> {
    match v {
        Value::Opaque(o) => o
            .downcast_ref::<T>()
            .ok_or_else(|| fail(function, "unexpected receiver type")),
        _ => Err(fail(function, "unexpected receiver type")),
    }
}

// ---- quantities (library/quantity.go) ----

fn to_quantity<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> R<'b, 'v> {
    let v = values(&args)?;
    let q = Quantity::parse(string_arg(&v[0], "quantity")?).map_err(|e| fail("quantity", e))?;
    out(Value::Opaque(Arc::new(q)))
}

fn is_quantity<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> R<'b, 'v> {
    let v = values(&args)?;
    out(Value::Bool(
        Quantity::parse(string_arg(&v[0], "isQuantity")?).is_ok(),
    ))
}

// ---- IPs and CIDRs (library/ip.go, library/cidr.go) ----

fn to_ip<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> R<'b, 'v> {
    let v = values(&args)?;
    let ip = Ip::parse(string_arg(&v[0], "ip")?).map_err(|e| fail("ip", e))?;
    out(Value::Opaque(Arc::new(ip)))
}

fn is_ip<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> R<'b, 'v> {
    let v = values(&args)?;
    out(Value::Bool(Ip::parse(string_arg(&v[0], "isIP")?).is_ok()))
}

fn ip_is_canonical<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> R<'b, 'v> {
    let v = values(&args)?;
    let s = string_arg(&v[0], "ip.isCanonical")?;
    let ip = Ip::parse(s).map_err(|e| fail("ip.isCanonical", e))?;
    out(Value::Bool(ip.to_string() == s))
}

fn net_to_string<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> R<'b, 'v> {
    let v = values(&args)?;
    let s = match &v[0] {
        Value::Opaque(o) => match (o.downcast_ref::<Ip>(), o.downcast_ref::<Cidr>()) {
            (Some(ip), _) => ip.to_string(),
            (_, Some(c)) => c.to_string(),
            _ => return Err(fail("string", "unexpected type")),
        },
        _ => return Err(fail("string", "unexpected type")),
    };
    out(Value::String(Arc::new(s)))
}

fn to_cidr<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> R<'b, 'v> {
    let v = values(&args)?;
    let c = Cidr::parse(string_arg(&v[0], "cidr")?).map_err(|e| fail("cidr", e))?;
    out(Value::Opaque(Arc::new(c)))
}

fn is_cidr<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> R<'b, 'v> {
    let v = values(&args)?;
    out(Value::Bool(
        Cidr::parse(string_arg(&v[0], "isCIDR")?).is_ok(),
    ))
}

// ---- named formats (library/format.go) ----

fn format_named<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> R<'b, 'v> {
    let v = values(&args)?;
    let name = string_arg(&v[0], "format.named")?;
    let opt = match Format::named(name) {
        Some(f) => OptionalValue::of(Value::Opaque(Arc::new(f))),
        None => OptionalValue::none(),
    };
    out(Value::Opaque(Arc::new(opt)))
}

fn format_validate<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> R<'b, 'v> {
    let v = values(&args)?;
    let f = opaque::<Format>(&v[0], "validate")?;
    let errs = f.validate(string_arg(&v[1], "validate")?);
    let opt = if errs.is_empty() {
        OptionalValue::none()
    } else {
        OptionalValue::of(Value::List(Arc::new(
            errs.into_iter()
                .map(|e| Value::String(Arc::new(e)))
                .collect(),
        )))
    };
    out(Value::Opaque(Arc::new(opt)))
}

/// Runs an evaluation, turning a panic of the interpreter into an error.
pub fn run_guarded(
    f: impl FnOnce() -> Result<Value, ExecutionError>,
) -> Result<Value, ExecutionError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
        .unwrap_or_else(|_| Err(ExecutionError::function_error("eval", "internal error")))
}

/// An evaluation error as cel-go words it (`no such key: x`, `division by zero`, ...).
pub fn execution_error_message(e: &ExecutionError) -> String {
    match e {
        ExecutionError::NoSuchKey(k) => format!("no such key: {k}"),
        ExecutionError::DivisionByZero(_) => "division by zero".to_string(),
        ExecutionError::RemainderByZero(_) => "modulus by zero".to_string(),
        ExecutionError::Overflow(..) => "integer overflow".to_string(),
        ExecutionError::IndexOutOfBounds(i) => format!("index out of bounds: {}", display_value(i)),
        ExecutionError::NoSuchOverload(_)
        | ExecutionError::UnsupportedBinaryOperator(..)
        | ExecutionError::ValuesNotComparable(..) => {
            format!("no such overload: {e}")
        }
        ExecutionError::FunctionError { message, .. } => message.clone(),
        other => other.to_string(),
    }
}

fn display_value(v: &Value) -> String {
    match v {
        Value::Int(i) => i.to_string(),
        Value::UInt(u) => u.to_string(),
        Value::Float(f) => f.to_string(),
        Value::String(s) => s.to_string(),
        other => format!("{other:?}"),
    }
}

fn map_of(entries: Vec<(String, Value)>) -> Value {
    Value::Map(Map {
        map: Arc::new(
            entries
                .into_iter()
                .map(|(k, v)| (Key::String(Arc::new(k)), v))
                .collect(),
        ),
    })
}

/// Defines a receiver function of an opaque type: `$x` is the receiver, `$y` the argument
/// (when given), the body a `Result<Value, ExecutionError>`.
macro_rules! receiver_fn {
    ($name:ident, $label:literal, $ty:ty, |$x:ident| $body:expr) => {
        fn $name<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> R<'b, 'v> {
            let v = values(&args)?;
            let $x = opaque::<$ty>(&v[0], $label)?;
            let result: Result<Value, ExecutionError> = $body;
            out(result?)
        }
    };
    ($name:ident, $label:literal, $ty:ty, |$x:ident, $y:ident| $body:expr) => {
        fn $name<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> R<'b, 'v> {
            let v = values(&args)?;
            let $x = opaque::<$ty>(&v[0], $label)?;
            let $y = &v[1];
            let result: Result<Value, ExecutionError> = $body;
            out(result?)
        }
    };
}

fn string_value(s: impl Into<String>) -> Value {
    Value::String(Arc::new(s.into()))
}

receiver_fn!(url_get_scheme, "getScheme", Url, |u| Ok(string_value(
    u.scheme.clone()
)));
receiver_fn!(url_get_host, "getHost", Url, |u| Ok(string_value(
    u.host.clone()
)));
receiver_fn!(url_get_hostname, "getHostname", Url, |u| Ok(string_value(
    u.hostname()
)));
receiver_fn!(url_get_port, "getPort", Url, |u| Ok(string_value(u.port())));
receiver_fn!(url_get_escaped_path, "getEscapedPath", Url, |u| Ok(
    string_value(u.path.clone())
));
receiver_fn!(url_get_query, "getQuery", Url, |u| Ok(map_of(
    u.query()
        .into_iter()
        .map(|(k, vs)| (
            k,
            Value::List(Arc::new(vs.into_iter().map(string_value).collect()))
        ))
        .collect()
)));

receiver_fn!(quantity_sign, "sign", Quantity, |q| Ok(Value::Int(
    q.0.sign() as i64
)));
receiver_fn!(quantity_is_integer, "isInteger", Quantity, |q| Ok(
    Value::Bool(q.as_integer().is_some())
));
receiver_fn!(quantity_as_integer, "asInteger", Quantity, |q| q
    .as_integer()
    .map(Value::Int)
    .ok_or_else(|| fail("asInteger", "cannot convert value to integer")));
receiver_fn!(quantity_as_float, "asApproximateFloat", Quantity, |q| Ok(
    Value::Float(q.0.as_approximate_f64())
));
receiver_fn!(
    quantity_is_greater_than,
    "isGreaterThan",
    Quantity,
    |q, o| Ok(Value::Bool(q.0 > opaque::<Quantity>(o, "isGreaterThan")?.0))
);
receiver_fn!(quantity_is_less_than, "isLessThan", Quantity, |q, o| Ok(
    Value::Bool(q.0 < opaque::<Quantity>(o, "isLessThan")?.0)
));
receiver_fn!(quantity_compare_to, "compareTo", Quantity, |q, o| Ok(
    Value::Int(match q.0.cmp(&opaque::<Quantity>(o, "compareTo")?.0) {
        std::cmp::Ordering::Less => -1,
        std::cmp::Ordering::Equal => 0,
        std::cmp::Ordering::Greater => 1,
    })
));
receiver_fn!(quantity_add, "add", Quantity, |q, o| q
    .add(quantity_operand(o, "add")?, false));
receiver_fn!(quantity_sub, "sub", Quantity, |q, o| q
    .add(quantity_operand(o, "sub")?, true));

fn quantity_operand(v: &Value, function: &str) -> Result<Quantity, ExecutionError> {
    match v {
        Value::Int(i) => Ok(Quantity::from_int(*i)),
        other => opaque::<Quantity>(other, function).cloned(),
    }
}

receiver_fn!(ip_family, "family", Ip, |ip| Ok(Value::Int(
    if ip.0.is_ipv4() { 4 } else { 6 }
)));
receiver_fn!(ip_is_unspecified, "isUnspecified", Ip, |ip| Ok(
    Value::Bool(ip.0.is_unspecified())
));
receiver_fn!(ip_is_loopback, "isLoopback", Ip, |ip| Ok(Value::Bool(
    ip.0.is_loopback()
)));
receiver_fn!(
    ip_is_link_local_multicast,
    "isLinkLocalMulticast",
    Ip,
    |ip| Ok(Value::Bool(ip.is_link_local_multicast()))
);
receiver_fn!(ip_is_link_local_unicast, "isLinkLocalUnicast", Ip, |ip| Ok(
    Value::Bool(ip.is_link_local_unicast())
));
receiver_fn!(ip_is_global_unicast, "isGlobalUnicast", Ip, |ip| Ok(
    Value::Bool(ip.is_global_unicast())
));

receiver_fn!(cidr_contains_ip, "containsIP", Cidr, |c, o| {
    let ip = match o {
        Value::String(s) => Ip::parse(s).map_err(|e| fail("containsIP", e))?,
        other => opaque::<Ip>(other, "containsIP")?.clone(),
    };
    Ok(Value::Bool(c.contains_ip(&ip)))
});
receiver_fn!(cidr_contains_cidr, "containsCIDR", Cidr, |c, o| {
    let other = match o {
        Value::String(s) => Cidr::parse(s).map_err(|e| fail("containsCIDR", e))?,
        other => opaque::<Cidr>(other, "containsCIDR")?.clone(),
    };
    Ok(Value::Bool(c.contains_cidr(&other)))
});
receiver_fn!(cidr_ip, "ip", Cidr, |c| Ok(Value::Opaque(Arc::new(Ip(
    c.addr
)))));
receiver_fn!(cidr_masked, "masked", Cidr, |c| Ok(Value::Opaque(
    Arc::new(c.masked())
)));
receiver_fn!(cidr_prefix_length, "prefixLength", Cidr, |c| Ok(
    Value::Int(c.prefix as i64)
));

/// `format.<name>()`: the named format, as `format.named('<name>').value()`.
macro_rules! format_functions {
    ($($fn_name:ident => $name:literal),* $(,)?) => {
        $(
            fn $fn_name<'b, 'v>(_args: Vec<CowVal<'b, 'v>>) -> R<'b, 'v> {
                let f = Format::named($name).ok_or_else(|| fail("format", "unknown format"))?;
                out(Value::Opaque(Arc::new(f)))
            }
        )*
        const FORMAT_FUNCTIONS: &[(&str, Function)] = &[$(($name, $fn_name)),*];
    };
}

format_functions! {
    format_dns1123_label => "dns1123Label",
    format_dns1123_subdomain => "dns1123Subdomain",
    format_dns1035_label => "dns1035Label",
    format_qualified_name => "qualifiedName",
    format_dns1123_label_prefix => "dns1123LabelPrefix",
    format_dns1123_subdomain_prefix => "dns1123SubdomainPrefix",
    format_dns1035_label_prefix => "dns1035LabelPrefix",
    format_label_value => "labelValue",
    format_uri => "uri",
    format_uuid => "uuid",
    format_byte => "byte",
    format_date => "date",
    format_datetime => "datetime",
}

// ---- sets (cel-go's ext/sets.go) ----

fn two_lists(args: &[CowVal<'_, '_>]) -> Result<(Vec<Value>, Vec<Value>), ExecutionError> {
    let v = values(args)?;
    Ok((list_arg(&v[0])?.to_vec(), list_arg(&v[1])?.to_vec()))
}

fn sets_contains<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> R<'b, 'v> {
    let (a, b) = two_lists(&args)?;
    out(Value::Bool(b.iter().all(|x| a.contains(x))))
}

fn sets_intersects<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> R<'b, 'v> {
    let (a, b) = two_lists(&args)?;
    out(Value::Bool(b.iter().any(|x| a.contains(x))))
}

fn sets_equivalent<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> R<'b, 'v> {
    let (a, b) = two_lists(&args)?;
    out(Value::Bool(
        b.iter().all(|x| a.contains(x)) && a.iter().all(|x| b.contains(x)),
    ))
}

// ---- semantic versions (library/semverlib.go) ----

/// `semver(s)` and `semver(s, normalize)` parse as kube's.
fn parse_semver(v: &[Value], function: &str) -> Result<Semver, ExecutionError> {
    let s = string_arg(&v[0], function)?;
    let normalize = matches!(v.get(1), Some(Value::Bool(true)));
    let parsed = if normalize {
        Semver::parse_normalized(s)
    } else {
        Semver::parse(s)
    };
    parsed.map_err(|e| fail(function, e))
}

fn to_semver<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> R<'b, 'v> {
    let v = values(&args)?;
    out(Value::Opaque(Arc::new(parse_semver(&v, "semver")?)))
}

fn is_semver<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> R<'b, 'v> {
    let v = values(&args)?;
    out(Value::Bool(parse_semver(&v, "isSemver").is_ok()))
}

fn as_int(n: u64) -> Value {
    Value::Int(i64::try_from(n).unwrap_or(i64::MAX))
}

fn ordering(o: std::cmp::Ordering) -> i64 {
    match o {
        std::cmp::Ordering::Less => -1,
        std::cmp::Ordering::Equal => 0,
        std::cmp::Ordering::Greater => 1,
    }
}

receiver_fn!(semver_major, "major", Semver, |v| Ok(as_int(v.numbers().0)));
receiver_fn!(semver_minor, "minor", Semver, |v| Ok(as_int(v.numbers().1)));
receiver_fn!(semver_patch, "patch", Semver, |v| Ok(as_int(v.numbers().2)));
receiver_fn!(semver_is_greater_than, "isGreaterThan", Semver, |v, o| Ok(
    Value::Bool(v > opaque::<Semver>(o, "isGreaterThan")?)
));
receiver_fn!(semver_is_less_than, "isLessThan", Semver, |v, o| Ok(
    Value::Bool(v < opaque::<Semver>(o, "isLessThan")?)
));
receiver_fn!(semver_compare_to, "compareTo", Semver, |v, o| Ok(
    Value::Int(ordering(v.cmp(opaque::<Semver>(o, "compareTo")?)))
));
