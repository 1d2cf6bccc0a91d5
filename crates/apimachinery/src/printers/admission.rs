//! Admission registration tables: MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
//! ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding (`printMutatingWebhook`,
//! `printValidatingWebhook`, `printValidatingAdmissionPolicy`,
//! `printValidatingAdmissionPolicyBinding`).

use jiff::Timestamp;
use serde_json::Value;

use super::{age, array_at, col, name, str_at, Column, Description, AGE, NAME};

/// Columns of both webhook configuration kinds.
pub(super) const WEBHOOK_COLUMNS: &[Column] = &[
    NAME,
    col(
        "Webhooks",
        "integer",
        Description::Text(
            "Webhooks indicates the number of webhooks registered in this configuration",
        ),
    ),
    AGE,
];

/// The cells of one webhook configuration's row: the number of webhooks.
pub(super) fn webhook_cells(config: &Value, now: Timestamp) -> Vec<Value> {
    vec![
        name(config),
        (array_at(config, "/webhooks").len() as i64).into(),
        age(config, now),
    ]
}

/// ValidatingAdmissionPolicy columns.
pub(super) const POLICY_COLUMNS: &[Column] = &[
    NAME,
    col(
        "Validations",
        "integer",
        Description::Text(
            "Validations indicates the number of validation rules defined in this configuration",
        ),
    ),
    col(
        "ParamKind",
        "string",
        Description::Text(
            "ParamKind specifies the kind of resources used to parameterize this policy",
        ),
    ),
    AGE,
];

/// The cells of one ValidatingAdmissionPolicy's row: the param kind as `apiVersion/kind`.
pub(super) fn policy_cells(policy: &Value, now: Timestamp) -> Vec<Value> {
    let param_kind = match policy.pointer("/spec/paramKind").filter(|p| p.is_object()) {
        Some(p) => format!("{}/{}", str_at(p, "/apiVersion"), str_at(p, "/kind")),
        None => "<unset>".to_string(),
    };
    vec![
        name(policy),
        (array_at(policy, "/spec/validations").len() as i64).into(),
        param_kind.into(),
        age(policy, now),
    ]
}

/// ValidatingAdmissionPolicyBinding columns.
pub(super) const BINDING_COLUMNS: &[Column] = &[
    NAME,
    col(
        "PolicyName",
        "string",
        Description::Text(
            "PolicyName indicates the policy definition which the policy binding binded to",
        ),
    ),
    col(
        "ParamRef",
        "string",
        Description::Text(
            "ParamRef indicates the param resource which sets the configration param",
        ),
    ),
    AGE,
];

/// The generated protobuf `String()` of a `metav1.LabelSelector`, which kube prints for a
/// param reference by selector.
fn proto_label_selector(sel: &Value) -> String {
    let mut labels: Vec<(&String, &str)> = match sel.get("matchLabels") {
        Some(Value::Object(m)) => m
            .iter()
            .map(|(k, v)| (k, v.as_str().unwrap_or_default()))
            .collect(),
        _ => Vec::new(),
    };
    labels.sort();
    let labels: String = labels.iter().map(|(k, v)| format!("{k}: {v},")).collect();
    let expressions: String = array_at(sel, "/matchExpressions")
        .iter()
        .map(|e| {
            let values: Vec<&str> = array_at(e, "/values")
                .iter()
                .filter_map(Value::as_str)
                .collect();
            format!(
                "LabelSelectorRequirement{{Key:{},Operator:{},Values:[{}],}},",
                str_at(e, "/key"),
                str_at(e, "/operator"),
                values.join(" ")
            )
        })
        .collect();
    format!(
        "&LabelSelector{{MatchLabels:map[string]string{{{labels}}},MatchExpressions:[]LabelSelectorRequirement{{{expressions}}},}}"
    )
}

/// The ParamRef cell: `namespace/name`, `*/name` when the namespace is unknown, the selector,
/// or `<unset>`.
fn param_ref(binding: &Value) -> String {
    let Some(pr) = binding.pointer("/spec/paramRef").filter(|p| p.is_object()) else {
        return "<unset>".to_string();
    };
    let (param_name, namespace) = (str_at(pr, "/name"), str_at(pr, "/namespace"));
    if !param_name.is_empty() {
        // Whether the param is cluster-scoped cannot be told here, so kube writes `*`.
        let namespace = if namespace.is_empty() { "*" } else { namespace };
        format!("{namespace}/{param_name}")
    } else if let Some(sel) = pr.get("selector").filter(|s| s.is_object()) {
        proto_label_selector(sel)
    } else {
        "<unset>".to_string()
    }
}

/// The cells of one ValidatingAdmissionPolicyBinding's row.
pub(super) fn binding_cells(binding: &Value, now: Timestamp) -> Vec<Value> {
    vec![
        name(binding),
        str_at(binding, "/spec/policyName").into(),
        param_ref(binding).into(),
        age(binding, now),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn now() -> Timestamp {
        "2026-01-01T00:00:00Z".parse().unwrap()
    }

    #[test]
    fn webhook_configuration_rows_count_webhooks() {
        let config = json!({"metadata":{"name":"hooks","creationTimestamp":"2025-12-31T23:55:00Z"},
            "webhooks":[{"name":"a.example.com"},{"name":"b.example.com"}]});
        assert_eq!(
            Value::Array(webhook_cells(&config, now())),
            json!(["hooks", 2, "5m"])
        );
        let empty = json!({"metadata":{"name":"none"}});
        assert_eq!(webhook_cells(&empty, now())[1], 0);
    }

    #[test]
    fn validating_admission_policy_rows() {
        let policy = json!({"metadata":{"name":"replicas","creationTimestamp":"2025-12-31T23:55:00Z"},
            "spec":{"paramKind":{"apiVersion":"rules.example.com/v1","kind":"ReplicaLimit"},
                "validations":[{"expression":"object.spec.replicas <= params.maxReplicas"}]}});
        assert_eq!(
            Value::Array(policy_cells(&policy, now())),
            json!(["replicas", 1, "rules.example.com/v1/ReplicaLimit", "5m"])
        );
        let bare = json!({"metadata":{"name":"p"},"spec":{}});
        assert_eq!(
            Value::Array(policy_cells(&bare, now())),
            json!(["p", 0, "<unset>", "<unknown>"])
        );
    }

    #[test]
    fn validating_admission_policy_binding_rows_match_kube() {
        // TestPrintValidatingAdmissionPolicyBinding.
        let binding = json!({"metadata":{"name":"config","creationTimestamp":"2025-12-31T23:55:00Z"},
            "spec":{"policyName":"test-scale.example.com",
                "paramRef":{"name":"test-scale-setting.example.com","parameterNotFoundAction":"Deny"}}});
        assert_eq!(
            Value::Array(binding_cells(&binding, now())),
            json!([
                "config",
                "test-scale.example.com",
                "*/test-scale-setting.example.com",
                "5m"
            ])
        );
    }

    #[test]
    fn param_refs_by_namespace_selector_or_nothing() {
        let with = |param_ref: Value| {
            let b = json!({"metadata":{"name":"b"},"spec":{"policyName":"p","paramRef":param_ref}});
            binding_cells(&b, now())[2].clone()
        };
        assert_eq!(with(json!({"name":"limits","namespace":"ns"})), "ns/limits");
        assert_eq!(
            with(json!({"selector":{"matchLabels":{"b":"2","a":"1"}}})),
            "&LabelSelector{MatchLabels:map[string]string{a: 1,b: 2,},MatchExpressions:[]LabelSelectorRequirement{},}"
        );
        assert_eq!(
            with(json!({"selector":{"matchExpressions":[
                {"key":"env","operator":"In","values":["prod","dev"]}]}})),
            "&LabelSelector{MatchLabels:map[string]string{},MatchExpressions:[]LabelSelectorRequirement{LabelSelectorRequirement{Key:env,Operator:In,Values:[prod dev],},},}"
        );
        assert_eq!(with(json!({"parameterNotFoundAction":"Allow"})), "<unset>");
        let unbound = json!({"metadata":{"name":"b"},"spec":{"policyName":"p"}});
        assert_eq!(binding_cells(&unbound, now())[2], "<unset>");
    }
}
