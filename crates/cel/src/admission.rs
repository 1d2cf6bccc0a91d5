//! The types kube declares for CEL in admission (`k8s.io/apiserver/pkg/admission/plugin/cel`),
//! shared by what checks admission expressions: ValidatingAdmissionPolicy type checking and
//! webhook configurations' `matchConditions`.

use std::collections::BTreeMap;

use crate::Type;

/// kube's `BuildRequestType` (`k8s.io/apiserver/pkg/admission/plugin/cel/compile.go`).
pub fn request_type() -> Type {
    let obj = |name: &str, fields: &[(&str, Type)]| {
        Type::object(
            name,
            fields
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect::<BTreeMap<_, _>>(),
        )
    };
    let gvk = obj(
        "kubernetes.GroupVersionKind",
        &[
            ("group", Type::String),
            ("version", Type::String),
            ("kind", Type::String),
        ],
    );
    let gvr = obj(
        "kubernetes.GroupVersionResource",
        &[
            ("group", Type::String),
            ("version", Type::String),
            ("resource", Type::String),
        ],
    );
    let user = obj(
        "kubernetes.UserInfo",
        &[
            ("username", Type::String),
            ("uid", Type::String),
            ("groups", Type::list(Type::String)),
            ("extra", Type::map(Type::String, Type::list(Type::String))),
        ],
    );
    obj(
        "kubernetes.AdmissionRequest",
        &[
            ("kind", gvk.clone()),
            ("resource", gvr.clone()),
            ("subResource", Type::String),
            ("requestKind", gvk),
            ("requestResource", gvr),
            ("requestSubResource", Type::String),
            ("name", Type::String),
            ("namespace", Type::String),
            ("operation", Type::String),
            ("userInfo", user),
            ("dryRun", Type::Bool),
            ("options", Type::Dyn),
        ],
    )
}
