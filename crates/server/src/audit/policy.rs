//! The audit policy (`audit.k8s.io/v1` `Policy`) and how it is read from `--audit-policy-file`:
//! decoded, its group and version checked and its rules validated as kube's
//! `staging/src/k8s.io/apiserver/pkg/audit/policy/reader.go` and `pkg/apis/audit/validation`.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The only group and version of `Policy` kube still reads (v1alpha1 and v1beta1 are gone).
pub const API_VERSION: &str = "audit.k8s.io/v1";

/// How much of a request is recorded (`audit.Level`), from least to most.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// Nothing is recorded.
    None,
    /// Who asked for what, when, and the answer's status; no bodies.
    Metadata,
    /// Metadata and the request's body.
    Request,
    /// Metadata, the request's body and the response's body.
    RequestResponse,
}

impl Level {
    /// The names kube accepts, in its order (`validLevels`).
    pub const NAMES: [&'static str; 4] = ["None", "Metadata", "Request", "RequestResponse"];

    /// kube's name of the level.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::None => "None",
            Level::Metadata => "Metadata",
            Level::Request => "Request",
            Level::RequestResponse => "RequestResponse",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        match s {
            "None" => Some(Level::None),
            "Metadata" => Some(Level::Metadata),
            "Request" => Some(Level::Request),
            "RequestResponse" => Some(Level::RequestResponse),
            _ => None,
        }
    }
}

/// Where in its handling a request's event was generated (`audit.Stage`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stage {
    /// As soon as the request is received, before it is handled.
    RequestReceived,
    /// Once the response headers are sent, for long-running requests (watch) only.
    ResponseStarted,
    /// Once the response is complete.
    ResponseComplete,
    /// The handler panicked.
    Panic,
}

impl Stage {
    /// The names kube accepts, in its order (`validOmitStages`).
    pub const NAMES: [&'static str; 4] = [
        "RequestReceived",
        "ResponseStarted",
        "ResponseComplete",
        "Panic",
    ];

    /// kube's name of the stage.
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::RequestReceived => "RequestReceived",
            Stage::ResponseStarted => "ResponseStarted",
            Stage::ResponseComplete => "ResponseComplete",
            Stage::Panic => "Panic",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        match s {
            "RequestReceived" => Some(Stage::RequestReceived),
            "ResponseStarted" => Some(Stage::ResponseStarted),
            "ResponseComplete" => Some(Stage::ResponseComplete),
            "Panic" => Some(Stage::Panic),
            _ => None,
        }
    }
}

/// A validated audit policy (`audit.Policy`): the first rule matching a request decides.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Policy {
    /// Rules in order; a request no rule matches is not audited.
    pub rules: Vec<PolicyRule>,
    /// Stages no event is generated for, whatever the rule.
    pub omit_stages: Vec<Stage>,
    /// Whether `metadata.managedFields` is left out of recorded bodies, unless a rule says.
    pub omit_managed_fields: bool,
}

/// One rule of a [`Policy`] (`audit.PolicyRule`); an empty list matches everything.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyRule {
    /// The level of the requests it matches.
    pub level: Level,
    /// User names it applies to.
    pub users: Vec<String>,
    /// Groups it applies to (a user in any of them).
    pub user_groups: Vec<String>,
    /// Verbs it applies to (`get`, `list`, `create`, ...).
    pub verbs: Vec<String>,
    /// Resources it applies to; none means any resource, and the rule matches resource requests
    /// only when this or `namespaces` is set.
    pub resources: Vec<GroupResources>,
    /// Namespaces it applies to; `""` stands for cluster-scoped resources.
    pub namespaces: Vec<String>,
    /// Paths of non-resource requests it applies to; `*` and a trailing `*` are wildcards.
    pub non_resource_urls: Vec<String>,
    /// Stages no event is generated for (besides the policy's).
    pub omit_stages: Vec<Stage>,
    /// Overrides the policy's `omitManagedFields` when set.
    pub omit_managed_fields: Option<bool>,
}

impl PolicyRule {
    /// A rule at `level` matching every request.
    pub fn new(level: Level) -> Self {
        Self {
            level,
            users: Vec::new(),
            user_groups: Vec::new(),
            verbs: Vec::new(),
            resources: Vec::new(),
            namespaces: Vec::new(),
            non_resource_urls: Vec::new(),
            omit_stages: Vec::new(),
            omit_managed_fields: None,
        }
    }
}

/// Resources of one API group (`audit.GroupResources`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct GroupResources {
    /// The API group; `""` is the core group.
    pub group: String,
    /// Resources (`pods`), subresources (`pods/log`, `*/status`, `pods/*`) or `*`; none means
    /// every resource of the group.
    pub resources: Vec<String>,
    /// Names of objects; none means any.
    pub resource_names: Vec<String>,
}

/// A policy file's content as written, before validation (`audit/v1.Policy`).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct PolicyFile {
    api_version: String,
    kind: String,
    rules: Vec<RuleFile>,
    omit_stages: Vec<String>,
    omit_managed_fields: bool,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct RuleFile {
    level: String,
    users: Vec<String>,
    user_groups: Vec<String>,
    verbs: Vec<String>,
    resources: Vec<GroupResources>,
    namespaces: Vec<String>,
    #[serde(rename = "nonResourceURLs")]
    non_resource_urls: Vec<String>,
    omit_stages: Vec<String>,
    omit_managed_fields: Option<bool>,
}

/// One invalid field of a policy (`field.Error`): its path and what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    /// `rules[0].level`.
    pub field: String,
    /// kube's detail (`Unsupported value: "Foo": supported values: ...`).
    pub detail: String,
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.detail)
    }
}

/// Why `--audit-policy-file` could not be used.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// The file could not be read.
    #[error("failed to read file path {path:?}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file is neither YAML nor JSON of the expected shape.
    #[error("failed decoding: from file {path:?}")]
    Decode {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: serde_norway::Error,
    },
    /// `apiVersion` and `kind` are not `audit.k8s.io/v1` `Policy`.
    #[error("unknown group version field apiVersion={api_version:?}, kind={kind:?} in policy: from file {path:?} (want apiVersion {API_VERSION:?}, kind \"Policy\")")]
    UnknownGroupVersion {
        /// The file.
        path: PathBuf,
        /// The `apiVersion` found.
        api_version: String,
        /// The `kind` found.
        kind: String,
    },
    /// Fields are invalid; each error names its field.
    #[error("{}: from file {path:?}", aggregate(.errors))]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The invalid fields.
        errors: Vec<FieldError>,
    },
    /// The policy has no rules, so it would audit nothing.
    #[error("loaded illegal policy with 0 rules: from file {path:?}")]
    NoRules {
        /// The file.
        path: PathBuf,
    },
}

/// kube's `ErrorList.ToAggregate()`: one error alone, several in brackets.
fn aggregate(errors: &[FieldError]) -> String {
    match errors {
        [one] => one.to_string(),
        many => format!(
            "[{}]",
            many.iter()
                .map(FieldError::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

impl Policy {
    /// Reads, decodes and validates the policy in `path` (`LoadPolicyFromFile`).
    pub fn load(path: &Path) -> Result<Self, PolicyError> {
        let bytes = std::fs::read(path).map_err(|source| PolicyError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::from_bytes(&bytes, path)
    }

    /// Decodes and validates a policy read from `path` (`LoadPolicyFromBytes`). YAML or JSON.
    pub fn from_bytes(bytes: &[u8], path: &Path) -> Result<Self, PolicyError> {
        let file: PolicyFile =
            serde_norway::from_slice(bytes).map_err(|source| PolicyError::Decode {
                path: path.to_path_buf(),
                source,
            })?;
        if file.api_version != API_VERSION || file.kind != "Policy" {
            return Err(PolicyError::UnknownGroupVersion {
                path: path.to_path_buf(),
                api_version: file.api_version,
                kind: file.kind,
            });
        }
        let policy = validate(file).map_err(|errors| PolicyError::Invalid {
            path: path.to_path_buf(),
            errors,
        })?;
        if policy.rules.is_empty() {
            return Err(PolicyError::NoRules {
                path: path.to_path_buf(),
            });
        }
        Ok(policy)
    }
}

/// `ValidatePolicy`: every invalid field, or the policy.
fn validate(file: PolicyFile) -> Result<Policy, Vec<FieldError>> {
    let mut errors = Vec::new();
    let omit_stages = stages(&file.omit_stages, "omitStages", &mut errors);
    let mut rules = Vec::with_capacity(file.rules.len());
    for (i, rule) in file.rules.into_iter().enumerate() {
        let path = format!("rules[{i}]");
        if let Some(rule) = validate_rule(rule, &path, &mut errors) {
            rules.push(rule);
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(Policy {
        rules,
        omit_stages,
        omit_managed_fields: file.omit_managed_fields,
    })
}

/// `validatePolicyRule`; `None` when the level is unusable (the error is in `errors`).
fn validate_rule(rule: RuleFile, path: &str, errors: &mut Vec<FieldError>) -> Option<PolicyRule> {
    let level = match (rule.level.as_str(), Level::parse(&rule.level)) {
        (_, Some(level)) => Some(level),
        ("", None) => {
            errors.push(FieldError {
                field: format!("{path}.level"),
                detail: "Required value".to_string(),
            });
            None
        }
        (other, None) => {
            errors.push(not_supported(
                &format!("{path}.level"),
                other,
                &Level::NAMES,
            ));
            None
        }
    };
    for (i, url) in rule.non_resource_urls.iter().enumerate() {
        if url == "*" {
            continue;
        }
        let field = format!("{path}.nonResourceURLs[{i}]");
        if !url.starts_with('/') {
            errors.push(invalid(
                &field,
                url,
                "non-resource URL rules must begin with a '/' character",
            ));
        }
        // Every character but the last (kube slices bytes; a char boundary is the safe cut).
        let head = url.char_indices().last().map_or("", |(i, _)| &url[..i]);
        if head.contains('*') {
            errors.push(invalid(
                &field,
                url,
                "non-resource URL wildcards '*' must be the final character of the rule",
            ));
        }
    }
    for gr in &rule.resources {
        if !gr.group.is_empty() && !is_dns_subdomain(&gr.group) {
            errors.push(invalid(
                &format!("{path}.resources.group"),
                &gr.group,
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
            ));
        }
        if !gr.resource_names.is_empty() && gr.resources.is_empty() {
            errors.push(invalid(
                &format!("{path}.resources.resourceNames"),
                &format!("{:?}", gr.resource_names),
                "using resourceNames requires at least one resource",
            ));
        }
    }
    let omit_stages = stages(&rule.omit_stages, &format!("{path}.omitStages"), errors);
    if !rule.non_resource_urls.is_empty()
        && (!rule.resources.is_empty() || !rule.namespaces.is_empty())
    {
        errors.push(invalid(
            &format!("{path}.nonResourceURLs"),
            &format!("{:?}", rule.non_resource_urls),
            "rules cannot apply to both regular resources and non-resource URLs",
        ));
    }
    Some(PolicyRule {
        level: level?,
        users: rule.users,
        user_groups: rule.user_groups,
        verbs: rule.verbs,
        resources: rule.resources,
        namespaces: rule.namespaces,
        non_resource_urls: rule.non_resource_urls,
        omit_stages,
        omit_managed_fields: rule.omit_managed_fields,
    })
}

/// `validateOmitStages`.
fn stages(names: &[String], path: &str, errors: &mut Vec<FieldError>) -> Vec<Stage> {
    let mut out = Vec::with_capacity(names.len());
    for (i, name) in names.iter().enumerate() {
        match Stage::parse(name) {
            Some(stage) => out.push(stage),
            None => errors.push(invalid(
                &format!("{path}[{i}]"),
                name,
                &format!("allowed stages are {}", Stage::NAMES.join(",")),
            )),
        }
    }
    out
}

/// `field.Invalid`.
fn invalid(field: &str, value: &str, detail: &str) -> FieldError {
    FieldError {
        field: field.to_string(),
        detail: format!("Invalid value: {value:?}: {detail}"),
    }
}

/// `field.NotSupported`.
fn not_supported(field: &str, value: &str, supported: &[&str]) -> FieldError {
    let quoted: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
    FieldError {
        field: field.to_string(),
        detail: format!(
            "Unsupported value: {value:?}: supported values: {}",
            quoted.join(", ")
        ),
    }
}

/// `NameIsDNSSubdomain`: lower-case RFC 1123 labels separated by dots, at most 253 characters.
fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253
        && s.split('.').all(|label| {
            !label.is_empty()
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Policy, PolicyError> {
        Policy::from_bytes(text.as_bytes(), Path::new("policy.yaml"))
    }

    #[test]
    fn a_yaml_policy_is_read_with_its_rules_and_stages() {
        let policy = parse(
            r#"
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
omitManagedFields: true
rules:
- level: None
  users: ["system:kube-proxy"]
  verbs: ["watch"]
  resources:
  - group: ""
    resources: ["endpoints", "services"]
- level: Metadata
  nonResourceURLs: ["/healthz*"]
  omitStages: [Panic]
  omitManagedFields: false
"#,
        )
        .expect("valid policy");
        assert_eq!(policy.omit_stages, [Stage::RequestReceived]);
        assert!(policy.omit_managed_fields);
        assert_eq!(policy.rules.len(), 2);
        assert_eq!(policy.rules[0].level, Level::None);
        assert_eq!(
            policy.rules[0].resources[0].resources,
            ["endpoints", "services"]
        );
        assert_eq!(policy.rules[1].non_resource_urls, ["/healthz*"]);
        assert_eq!(policy.rules[1].omit_stages, [Stage::Panic]);
        assert_eq!(policy.rules[1].omit_managed_fields, Some(false));
    }

    #[test]
    fn a_json_policy_is_read_too() {
        let policy = parse(
            r#"{"apiVersion":"audit.k8s.io/v1","kind":"Policy","rules":[{"level":"Metadata"}]}"#,
        )
        .expect("valid policy");
        assert_eq!(policy.rules, [PolicyRule::new(Level::Metadata)]);
    }

    #[test]
    fn an_unknown_level_is_an_error_naming_the_field() {
        let err = parse("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Everything\n")
            .expect_err("unknown level");
        assert_eq!(
            err.to_string(),
            "rules[0].level: Unsupported value: \"Everything\": supported values: \"None\", \"Metadata\", \"Request\", \"RequestResponse\": from file \"policy.yaml\""
        );
    }

    #[test]
    fn a_missing_level_is_required() {
        let err = parse("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- verbs: [get]\n")
            .expect_err("no level");
        assert!(
            err.to_string()
                .starts_with("rules[0].level: Required value"),
            "{err}"
        );
    }

    #[test]
    fn every_invalid_field_is_reported() {
        let err = parse(
            r#"
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [Later]
rules:
- level: Metadata
  nonResourceURLs: ["healthz", "/a*b"]
  namespaces: [default]
- level: Request
  resources:
  - group: "rbac.authorization.k8s.io/v1"
  - resourceNames: [x]
  omitStages: [Sometimes]
"#,
        )
        .expect_err("invalid policy");
        let PolicyError::Invalid { errors, .. } = err else {
            panic!("want Invalid, got {err:?}");
        };
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "omitStages[0]",
                "rules[0].nonResourceURLs[0]",
                "rules[0].nonResourceURLs[1]",
                "rules[0].nonResourceURLs",
                "rules[1].resources.group",
                "rules[1].resources.resourceNames",
                "rules[1].omitStages[0]",
            ]
        );
        assert_eq!(
            errors[6].detail,
            "Invalid value: \"Sometimes\": allowed stages are RequestReceived,ResponseStarted,ResponseComplete,Panic"
        );
    }

    #[test]
    fn another_group_version_is_refused() {
        let err = parse("apiVersion: audit.k8s.io/v1beta1\nkind: Policy\nrules:\n- level: None\n")
            .expect_err("v1beta1");
        assert!(
            matches!(err, PolicyError::UnknownGroupVersion { .. }),
            "{err}"
        );
        let err = parse("rules:\n- level: None\n").expect_err("no apiVersion");
        assert!(
            matches!(err, PolicyError::UnknownGroupVersion { .. }),
            "{err}"
        );
    }

    #[test]
    fn a_policy_without_rules_is_illegal() {
        let err = parse("apiVersion: audit.k8s.io/v1\nkind: Policy\n").expect_err("no rules");
        assert!(matches!(err, PolicyError::NoRules { .. }), "{err}");
    }

    #[test]
    fn a_policy_of_the_wrong_shape_does_not_decode() {
        let err = parse("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: 3\n")
            .expect_err("rules is a number");
        assert!(matches!(err, PolicyError::Decode { .. }), "{err}");
    }

    #[test]
    fn an_unreadable_file_names_its_path() {
        let err = Policy::load(Path::new("/nonexistent/audit-policy.yaml")).expect_err("missing");
        assert!(err.to_string().contains("/nonexistent/audit-policy.yaml"));
    }
}
