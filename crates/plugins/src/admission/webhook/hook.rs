//! One webhook of a Mutating- or ValidatingWebhookConfiguration, decoded once when the
//! configuration changes (`webhook.WebhookAccessor`), with kube's defaults for the fields a
//! stored configuration may lack.

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde_json::Value;

use rkcm_labels::Selector;
use rkcm_server::webhook::{Client, ClientConfig};

use super::match_conditions::Compiled;

/// One rule (`RuleWithOperations`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rule {
    /// `operations` (`CREATE`, ..., `*`).
    pub operations: Vec<String>,
    /// `apiGroups`.
    pub api_groups: Vec<String>,
    /// `apiVersions`.
    pub api_versions: Vec<String>,
    /// `resources` (`pods`, `pods/status`, `*/*`, ...).
    pub resources: Vec<String>,
    /// `scope`: `Cluster`, `Namespaced` or `*` (the default).
    pub scope: String,
}

/// One webhook.
#[derive(Debug)]
pub struct Hook {
    /// The webhook's `name`.
    pub name: String,
    /// The name of the configuration that holds it.
    pub configuration: String,
    /// `rules`.
    pub rules: Vec<Rule>,
    /// `matchPolicy: Equivalent` (the default): a request for another version of a resource
    /// the rules name is sent converted to the version named.
    pub match_equivalent: bool,
    /// `namespaceSelector`, or why it does not parse.
    pub namespace_selector: Result<Selector, String>,
    /// Whether `namespaceSelector` selects everything.
    pub namespace_selector_empty: bool,
    /// `objectSelector`, or why it does not parse.
    pub object_selector: Result<Selector, String>,
    /// Whether `objectSelector` selects everything.
    pub object_selector_empty: bool,
    /// `failurePolicy: Ignore` (the default is `Fail`).
    pub ignore_failures: bool,
    /// `sideEffects`; empty when it is not set.
    pub side_effects: String,
    /// `admissionReviewVersions`.
    pub review_versions: Vec<String>,
    /// `clientConfig` and `timeoutSeconds` (10 by default).
    pub client: Client,
    /// `reinvocationPolicy: IfNeeded` (mutating webhooks only).
    pub reinvoke_if_needed: bool,
    /// `matchConditions`, compiled.
    pub match_conditions: Vec<Compiled>,
}

pub(crate) fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

pub(crate) fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// A selector field: absent is `{}` (kube's default), which selects everything.
pub(crate) fn selector(v: Option<&Value>) -> (Result<Selector, String>, bool) {
    let Some(v) = v.filter(|v| !v.is_null()) else {
        return (Ok(Selector::everything()), true);
    };
    let parsed = serde_json::from_value::<LabelSelector>(v.clone())
        .map_err(|e| e.to_string())
        .and_then(|s| Selector::from_label_selector(&s).map_err(|e| e.to_string()));
    let empty = matches!(&parsed, Ok(s) if *s == Selector::everything());
    (parsed, empty)
}

impl Hook {
    /// The webhook `v` (one item of `webhooks`) of configuration `configuration`.
    pub fn decode(configuration: &str, v: &Value) -> Self {
        let rules = v
            .get("rules")
            .and_then(Value::as_array)
            .map(|rules| {
                rules
                    .iter()
                    .map(|r| Rule {
                        operations: strings(r.get("operations")),
                        api_groups: strings(r.get("apiGroups")),
                        api_versions: strings(r.get("apiVersions")),
                        resources: strings(r.get("resources")),
                        scope: str_of(r, "scope").unwrap_or("*").to_string(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let (namespace_selector, namespace_selector_empty) = selector(v.get("namespaceSelector"));
        let (object_selector, object_selector_empty) = selector(v.get("objectSelector"));
        let client_config = v
            .get("clientConfig")
            .map(ClientConfig::decode)
            .unwrap_or_default();
        let match_conditions = v
            .get("matchConditions")
            .and_then(Value::as_array)
            .map(|cs| {
                cs.iter()
                    .map(|c| {
                        Compiled::new(
                            str_of(c, "name").unwrap_or_default(),
                            str_of(c, "expression").unwrap_or_default(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        Self {
            name: str_of(v, "name").unwrap_or_default().to_string(),
            configuration: configuration.to_string(),
            rules,
            match_equivalent: str_of(v, "matchPolicy") != Some("Exact"),
            namespace_selector,
            namespace_selector_empty,
            object_selector,
            object_selector_empty,
            ignore_failures: str_of(v, "failurePolicy") == Some("Ignore"),
            side_effects: str_of(v, "sideEffects").unwrap_or_default().to_string(),
            review_versions: {
                let versions = strings(v.get("admissionReviewVersions"));
                if versions.is_empty() {
                    vec!["v1".to_string()]
                } else {
                    versions
                }
            },
            client: Client::new(
                client_config,
                Duration::from_secs(
                    v.get("timeoutSeconds")
                        .and_then(Value::as_u64)
                        .filter(|t| (1..=30).contains(t))
                        .unwrap_or(10),
                ),
            ),
            reinvoke_if_needed: str_of(v, "reinvocationPolicy") == Some("IfNeeded"),
            match_conditions,
        }
    }

    /// The webhooks of configuration object `obj`, in order.
    pub fn decode_all(obj: &Value) -> Vec<Self> {
        let name = rkcm_storage::object::name(obj);
        obj.get("webhooks")
            .and_then(Value::as_array)
            .map(|hooks| hooks.iter().map(|h| Self::decode(name, h)).collect())
            .unwrap_or_default()
    }
}
