//! kube's authorizer library (`k8s.io/apiserver/pkg/cel/library/authz.go`): the `authorizer`
//! variable of admission expressions, whose checks (`authorizer.group('apps')
//! .resource('deployments').namespace('ns').check('create').allowed()`) are answered by the
//! server's authorizer for the request's user, or for a service account.
//!
//! The server's authorizer is behind [`Authorizer`], so that this crate needs no server.

use std::fmt;
use std::sync::Arc;

use cel::common::functions::Function;
use cel::common::types::{Type, STRING_TYPE};
use cel::common::value::{CowVal, Val};
use cel::objects::Opaque;
use cel::{Env, ExecutionError, Value};

/// The authorizer type.
pub const AUTHORIZER_TYPE: &str = "kubernetes.authorization.Authorizer";
/// The type of `authorizer.path(...)`.
pub const PATH_CHECK_TYPE: &str = "kubernetes.authorization.PathCheck";
/// The type of `authorizer.group(...)`.
pub const GROUP_CHECK_TYPE: &str = "kubernetes.authorization.GroupCheck";
/// The type of `authorizer.group(...).resource(...)` and `authorizer.requestResource`.
pub const RESOURCE_CHECK_TYPE: &str = "kubernetes.authorization.ResourceCheck";
/// The type of `check(...)`'s answer.
pub const DECISION_TYPE: &str = "kubernetes.authorization.Decision";

/// What one check asks (`authorizer.AttributesRecord` of `authz.go`'s `Authorize`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Check {
    /// The service account asked about, `(namespace, name)`; `None`: the request's user.
    pub service_account: Option<(String, String)>,
    /// The verb.
    pub verb: String,
    /// `Some` for a non-resource check of this path.
    pub path: Option<String>,
    /// API group (`*` for all).
    pub group: String,
    /// Resource.
    pub resource: String,
    /// Subresource.
    pub subresource: String,
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
}

/// The authorizer's answer to a check.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Decision {
    /// Whether the check is allowed.
    pub allowed: bool,
    /// The authorizer's reason.
    pub reason: String,
    /// The authorizer's error, if it failed.
    pub error: Option<String>,
}

/// The server's authorizer, for the user of one request. Called while expressions run, so it
/// answers from memory.
pub trait Authorizer: Send + Sync {
    /// The decision on `check`.
    fn check(&self, check: &Check) -> Decision;
}

/// One value of the library: an authorizer, a check being built, or a decision. Its CEL type
/// is `type_name`.
#[derive(Clone)]
struct AuthzValue {
    type_name: &'static str,
    authorizer: Arc<dyn Authorizer>,
    check: Check,
    decision: Decision,
}

impl fmt::Debug for AuthzValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct(self.type_name)
            .field("check", &self.check)
            .field("decision", &self.decision)
            .finish()
    }
}

impl PartialEq for AuthzValue {
    fn eq(&self, other: &Self) -> bool {
        self.type_name == other.type_name
            && Arc::ptr_eq(&self.authorizer, &other.authorizer)
            && self.check == other.check
            && self.decision == other.decision
    }
}

impl Eq for AuthzValue {}

impl Opaque for AuthzValue {
    fn runtime_type_name(&self) -> &str {
        self.type_name
    }
}

impl AuthzValue {
    fn with(&self, type_name: &'static str, change: impl FnOnce(&mut Check)) -> Value {
        let mut v = self.clone();
        v.type_name = type_name;
        change(&mut v.check);
        Value::Opaque(Arc::new(v))
    }
}

/// The variables `authorizer` and `authorizer.requestResource` of a request whose group,
/// resource, subresource, namespace and name are in `request_resource`, checked by `authorizer`.
pub fn variables(
    authorizer: Arc<dyn Authorizer>,
    request_resource: Check,
) -> [(&'static str, Value); 2] {
    let root = AuthzValue {
        type_name: AUTHORIZER_TYPE,
        authorizer,
        check: Check::default(),
        decision: Decision::default(),
    };
    let resource = AuthzValue {
        type_name: RESOURCE_CHECK_TYPE,
        check: Check {
            service_account: None,
            verb: String::new(),
            path: None,
            ..request_resource
        },
        ..root.clone()
    };
    [
        ("authorizer", Value::Opaque(Arc::new(root))),
        (
            "authorizer.requestResource",
            Value::Opaque(Arc::new(resource)),
        ),
    ]
}

type R<'b, 'v> = Result<CowVal<'b, 'v>, ExecutionError>;

fn out<'b, 'v>(v: Value) -> R<'b, 'v> {
    let b: Box<dyn Val> = Box::<dyn Val>::try_from(v)?;
    Ok(CowVal::from(b))
}

fn fail(function: &str, msg: impl ToString) -> ExecutionError {
    ExecutionError::function_error(function, msg)
}

/// The receiver and string arguments of a call of `function`.
fn receiver(
    args: &[CowVal<'_, '_>],
    function: &str,
    arity: usize,
) -> Result<(AuthzValue, Vec<String>), ExecutionError> {
    let values = args
        .iter()
        .map(|a| Value::try_from(a.as_ref()))
        .collect::<Result<Vec<_>, _>>()?;
    let Some((Value::Opaque(o), rest)) = values.split_first() else {
        return Err(fail(function, "unexpected receiver type"));
    };
    let this = o
        .downcast_ref::<AuthzValue>()
        .ok_or_else(|| fail(function, "unexpected receiver type"))?
        .clone();
    let strings = rest
        .iter()
        .map(|v| match v {
            Value::String(s) => Ok(s.to_string()),
            _ => Err(fail(function, "expected a string")),
        })
        .collect::<Result<Vec<_>, _>>()?;
    if strings.len() != arity {
        return Err(fail(function, "unexpected number of arguments"));
    }
    Ok((this, strings))
}

fn path<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> R<'b, 'v> {
    let (this, mut a) = receiver(&args, "path", 1)?;
    out(this.with(PATH_CHECK_TYPE, |c| c.path = a.pop()))
}

fn group<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> R<'b, 'v> {
    let (this, mut a) = receiver(&args, "group", 1)?;
    out(this.with(GROUP_CHECK_TYPE, |c| c.group = a.pop().unwrap_or_default()))
}

fn service_account<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> R<'b, 'v> {
    let (this, a) = receiver(&args, "serviceAccount", 2)?;
    out(this.with(AUTHORIZER_TYPE, |c| {
        *c = Check {
            service_account: Some((a[0].clone(), a[1].clone())),
            ..Check::default()
        }
    }))
}

fn resource<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> R<'b, 'v> {
    let (this, mut a) = receiver(&args, "resource", 1)?;
    out(this.with(RESOURCE_CHECK_TYPE, |c| {
        c.resource = a.pop().unwrap_or_default()
    }))
}

fn subresource<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> R<'b, 'v> {
    let (this, mut a) = receiver(&args, "subresource", 1)?;
    out(this.with(RESOURCE_CHECK_TYPE, |c| {
        c.subresource = a.pop().unwrap_or_default()
    }))
}

fn namespace<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> R<'b, 'v> {
    let (this, mut a) = receiver(&args, "namespace", 1)?;
    out(this.with(RESOURCE_CHECK_TYPE, |c| {
        c.namespace = a.pop().unwrap_or_default()
    }))
}

fn name<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> R<'b, 'v> {
    let (this, mut a) = receiver(&args, "name", 1)?;
    out(this.with(RESOURCE_CHECK_TYPE, |c| {
        c.name = a.pop().unwrap_or_default()
    }))
}

fn check<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> R<'b, 'v> {
    let (this, mut a) = receiver(&args, "check", 1)?;
    let mut check = this.check.clone();
    check.verb = a.pop().unwrap_or_default();
    let decision = this.authorizer.check(&check);
    out(Value::Opaque(Arc::new(AuthzValue {
        type_name: DECISION_TYPE,
        check,
        decision,
        ..this
    })))
}

fn allowed<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> R<'b, 'v> {
    let (this, _) = receiver(&args, "allowed", 0)?;
    out(Value::Bool(this.decision.allowed))
}

fn reason<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> R<'b, 'v> {
    let (this, _) = receiver(&args, "reason", 0)?;
    out(Value::String(Arc::new(this.decision.reason)))
}

fn errored<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> R<'b, 'v> {
    let (this, _) = receiver(&args, "errored", 0)?;
    out(Value::Bool(this.decision.error.is_some()))
}

fn error<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> R<'b, 'v> {
    let (this, _) = receiver(&args, "error", 0)?;
    out(Value::String(Arc::new(
        this.decision.error.unwrap_or_default(),
    )))
}

/// Declares the library's functions in `env`.
pub(super) fn declare(env: &mut Env) -> Result<(), cel::DeclarationError> {
    let t = Type::new_opaque_type;
    let members: [(&str, &str, &str, Vec<Type>, Function); 13] = [
        (
            "path",
            "authorizer_path",
            AUTHORIZER_TYPE,
            vec![STRING_TYPE],
            path,
        ),
        (
            "group",
            "authorizer_group",
            AUTHORIZER_TYPE,
            vec![STRING_TYPE],
            group,
        ),
        (
            "serviceAccount",
            "authorizer_serviceaccount",
            AUTHORIZER_TYPE,
            vec![STRING_TYPE, STRING_TYPE],
            service_account,
        ),
        (
            "resource",
            "groupcheck_resource",
            GROUP_CHECK_TYPE,
            vec![STRING_TYPE],
            resource,
        ),
        (
            "subresource",
            "resourcecheck_subresource",
            RESOURCE_CHECK_TYPE,
            vec![STRING_TYPE],
            subresource,
        ),
        (
            "namespace",
            "resourcecheck_namespace",
            RESOURCE_CHECK_TYPE,
            vec![STRING_TYPE],
            namespace,
        ),
        (
            "name",
            "resourcecheck_name",
            RESOURCE_CHECK_TYPE,
            vec![STRING_TYPE],
            name,
        ),
        (
            "check",
            "pathcheck_check",
            PATH_CHECK_TYPE,
            vec![STRING_TYPE],
            check,
        ),
        (
            "check",
            "resourcecheck_check",
            RESOURCE_CHECK_TYPE,
            vec![STRING_TYPE],
            check,
        ),
        (
            "errored",
            "decision_errored",
            DECISION_TYPE,
            vec![],
            errored,
        ),
        ("error", "decision_error", DECISION_TYPE, vec![], error),
        (
            "allowed",
            "decision_allowed",
            DECISION_TYPE,
            vec![],
            allowed,
        ),
        ("reason", "decision_reason", DECISION_TYPE, vec![], reason),
    ];
    for (name, id, receiver, args, f) in members {
        env.add_member_overload(name, id, t(receiver), args, f)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use cel::Context;
    use std::sync::Mutex;

    /// Allows `get` of anything and `/healthz`, records the checks.
    #[derive(Default)]
    struct Recorder(Mutex<Vec<Check>>);

    impl Authorizer for Recorder {
        fn check(&self, check: &Check) -> Decision {
            self.0.lock().expect("checks").push(check.clone());
            let allowed = check.verb == "get" || check.path.as_deref() == Some("/healthz");
            Decision {
                allowed,
                reason: if allowed { "ok".into() } else { "no".into() },
                error: None,
            }
        }
    }

    fn eval(expr: &str, authz: Arc<Recorder>) -> Value {
        let env = super::super::library::env();
        let program = env.compile(expr).expect("compiles");
        let mut ctx = Context::with_env(env);
        let request = Check {
            group: "apps".into(),
            resource: "deployments".into(),
            subresource: "scale".into(),
            namespace: "ns".into(),
            name: "web".into(),
            ..Check::default()
        };
        for (name, value) in variables(authz, request) {
            ctx.add_variable_from_value(name, value);
        }
        program.execute(&ctx).expect("evaluates")
    }

    // authz_test.go TestResourceCheck, TestPathCheck, TestServiceAccount.
    #[test]
    fn checks_reach_the_authorizer_with_what_was_built() {
        let authz = Arc::new(Recorder::default());
        let v = eval(
            "authorizer.group('apps').resource('deployments').subresource('status').namespace('ns').name('web').check('get').allowed()",
            Arc::clone(&authz),
        );
        assert_eq!(v, Value::Bool(true));
        let checks = authz.0.lock().expect("checks").clone();
        assert_eq!(
            checks,
            [Check {
                verb: "get".into(),
                group: "apps".into(),
                resource: "deployments".into(),
                subresource: "status".into(),
                namespace: "ns".into(),
                name: "web".into(),
                ..Check::default()
            }]
        );
        let authz = Arc::new(Recorder::default());
        assert_eq!(
            eval(
                "authorizer.path('/healthz').check('post').reason()",
                Arc::clone(&authz)
            ),
            Value::String(Arc::new("ok".into()))
        );
        assert_eq!(
            authz.0.lock().expect("checks")[0].path.as_deref(),
            Some("/healthz")
        );
        let authz = Arc::new(Recorder::default());
        assert_eq!(
            eval(
                "authorizer.serviceAccount('kube-system', 'builder').group('').resource('pods').check('create').allowed()",
                Arc::clone(&authz)
            ),
            Value::Bool(false)
        );
        assert_eq!(
            authz.0.lock().expect("checks")[0].service_account,
            Some(("kube-system".into(), "builder".into()))
        );
    }

    #[test]
    fn the_request_resource_is_prefilled_and_decisions_report_no_error() {
        let authz = Arc::new(Recorder::default());
        assert_eq!(
            eval(
                "authorizer.requestResource.check('update').allowed()",
                Arc::clone(&authz)
            ),
            Value::Bool(false)
        );
        let check = authz.0.lock().expect("checks")[0].clone();
        assert_eq!(
            (
                check.group.as_str(),
                check.resource.as_str(),
                check.subresource.as_str()
            ),
            ("apps", "deployments", "scale")
        );
        assert_eq!(
            (check.namespace.as_str(), check.name.as_str()),
            ("ns", "web")
        );
        assert_eq!(
            eval("authorizer.requestResource.check('get').errored()", authz),
            Value::Bool(false)
        );
    }
}
