//! Job spec validation (`validateJobSpec`, `ValidateJobSpec`, `ValidateGeneratedSelector`,
//! the pod failure and success policies) shared by Jobs and CronJob job templates.
//!
//! Mirrors `pkg/apis/batch/validation/validation.go` of kube 1.33.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use crate::meta::{self, validate_nonnegative};
use crate::object::{get, string_map};
use crate::podspec::validate_pod_template;
use crate::selector::{validate_label_selector, LabelSelector};
use crate::{FieldError, FieldErrorKind};

/// Label on pods and in the generated selector with the Job's uid.
pub(crate) const CONTROLLER_UID_LABEL: &str = "batch.kubernetes.io/controller-uid";
/// Label on pods with the Job's name.
pub(crate) const JOB_NAME_LABEL: &str = "batch.kubernetes.io/job-name";
/// The unprefixed uid label kube still adds for older clients.
pub(crate) const LEGACY_CONTROLLER_UID_LABEL: &str = "controller-uid";
/// The unprefixed name label kube still adds for older clients.
pub(crate) const LEGACY_JOB_NAME_LABEL: &str = "job-name";

const MAX_PARALLELISM_FOR_INDEXED_JOB: i64 = 100_000;
const MAX_FAILED_INDEXES_FOR_INDEXED_JOB: i64 = 100_000;
const COMPLETIONS_SOFT_LIMIT: i64 = 100_000;
const PARALLELISM_LIMIT_FOR_HIGH_COMPLETIONS: i64 = 10_000;
const MAX_FAILED_INDEXES_LIMIT_FOR_HIGH_COMPLETIONS: i64 = 10_000;
const MAX_POD_FAILURE_POLICY_RULES: usize = 20;
const MAX_ON_EXIT_CODES_VALUES: usize = 255;
const MAX_ON_POD_CONDITIONS_PATTERNS: usize = 20;
const MAX_SUCCESS_POLICY_RULES: usize = 20;
const MAX_SUCCEEDED_INDEXES_LENGTH: usize = 64 * 1024;
const MAX_MANAGED_BY_LENGTH: usize = 63;

fn int(spec: &Value, key: &str) -> Option<i64> {
    spec.get(key).and_then(Value::as_i64)
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn is_set(v: &Value, key: &str) -> bool {
    v.get(key).is_some_and(|v| !v.is_null())
}

/// `field.Invalid` of a Go `[]int32`, rendered as kube renders it (`[]int32{1, 2}`).
fn invalid_int32s(field: String, values: &[Value], detail: &str) -> FieldError {
    let items: Vec<String> = values.iter().map(Value::to_string).collect();
    FieldError {
        field,
        kind: FieldErrorKind::Invalid,
        message: format!("Invalid value: []int32{{{}}}: {detail}", items.join(", ")),
    }
}

/// Go's `%q` of a list of strings (`["Count" "FailJob"]`), as kube puts supported values in a
/// `Required` detail.
fn quoted_list(values: &[&str]) -> String {
    let quoted: Vec<String> = values.iter().map(|v| format!("{v:?}")).collect();
    format!("[{}]", quoted.join(" "))
}

/// Whether the completion mode is `Indexed`.
pub(crate) fn is_indexed(spec: &Value) -> bool {
    text(spec, "completionMode") == "Indexed"
}

/// `validateJobSpec`: everything but the selector; `path` is `spec` or
/// `spec.jobTemplate.spec`.
pub(crate) fn validate_job_spec_fields(spec: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let p = |child: &str| format!("{path}.{child}");
    for field in [
        "parallelism",
        "completions",
        "activeDeadlineSeconds",
        "backoffLimit",
        "ttlSecondsAfterFinished",
        "backoffLimitPerIndex",
    ] {
        errs.extend(validate_nonnegative(spec.get(field), &p(field)));
    }
    let parallelism = int(spec, "parallelism");
    let completions = int(spec, "completions");
    let per_index = int(spec, "backoffLimitPerIndex");
    let max_failed = int(spec, "maxFailedIndexes");
    if is_set(spec, "maxFailedIndexes") {
        errs.extend(validate_nonnegative(
            spec.get("maxFailedIndexes"),
            &p("maxFailedIndexes"),
        ));
        if !is_set(spec, "backoffLimitPerIndex") {
            errs.push(FieldError::required(
                p("backoffLimitPerIndex"),
                "when maxFailedIndexes is specified",
            ));
        }
    }
    if let Some(managed_by) = spec.get("managedBy").filter(|v| !v.is_null()) {
        let managed_by = managed_by.as_str().unwrap_or("");
        errs.extend(validate_domain_prefixed_path(managed_by, &p("managedBy")));
        if managed_by.len() > MAX_MANAGED_BY_LENGTH {
            errs.push(FieldError::too_long(p("managedBy"), MAX_MANAGED_BY_LENGTH));
        }
    }
    if let Some(mode) = spec.get("completionMode").filter(|v| !v.is_null()) {
        let mode_str = mode.as_str().unwrap_or("");
        if mode_str != "NonIndexed" && mode_str != "Indexed" {
            errs.push(FieldError::not_supported(
                p("completionMode"),
                mode,
                &["NonIndexed", "Indexed"],
            ));
        }
        if mode_str == "Indexed" {
            if completions.is_none() {
                errs.push(FieldError::required(
                    p("completions"),
                    "when completion mode is Indexed",
                ));
            }
            if let Some(n) = parallelism.filter(|n| *n > MAX_PARALLELISM_FOR_INDEXED_JOB) {
                errs.push(FieldError::invalid(
                    p("parallelism"),
                    &json!(n),
                    &format!(
                        "must be less than or equal to {MAX_PARALLELISM_FOR_INDEXED_JOB} when completion mode is Indexed"
                    ),
                ));
            }
            if let (Some(c), Some(m)) = (completions, max_failed) {
                if m > c {
                    errs.push(FieldError::invalid(
                        p("maxFailedIndexes"),
                        &json!(m),
                        "must be less than or equal to completions",
                    ));
                }
            }
            if let Some(m) = max_failed.filter(|m| *m > MAX_FAILED_INDEXES_FOR_INDEXED_JOB) {
                errs.push(FieldError::invalid(
                    p("maxFailedIndexes"),
                    &json!(m),
                    &format!("must be less than or equal to {MAX_FAILED_INDEXES_FOR_INDEXED_JOB}"),
                ));
            }
            if completions.is_some_and(|c| c > COMPLETIONS_SOFT_LIMIT) && per_index.is_some() {
                if max_failed.is_none() {
                    errs.push(FieldError::required(
                        p("maxFailedIndexes"),
                        &format!(
                            "must be specified when completions is above {COMPLETIONS_SOFT_LIMIT}"
                        ),
                    ));
                }
                let detail = |limit: i64| {
                    format!(
                        "must be less than or equal to {limit} when completions are above {COMPLETIONS_SOFT_LIMIT} and used with backoff limit per index"
                    )
                };
                if let Some(n) = parallelism.filter(|n| *n > PARALLELISM_LIMIT_FOR_HIGH_COMPLETIONS)
                {
                    errs.push(FieldError::invalid(
                        p("parallelism"),
                        &json!(n),
                        &detail(PARALLELISM_LIMIT_FOR_HIGH_COMPLETIONS),
                    ));
                }
                if let Some(m) =
                    max_failed.filter(|m| *m > MAX_FAILED_INDEXES_LIMIT_FOR_HIGH_COMPLETIONS)
                {
                    errs.push(FieldError::invalid(
                        p("maxFailedIndexes"),
                        &json!(m),
                        &detail(MAX_FAILED_INDEXES_LIMIT_FOR_HIGH_COMPLETIONS),
                    ));
                }
            }
        }
    }
    if !is_indexed(spec) {
        if let Some(v) = spec.get("backoffLimitPerIndex").filter(|v| !v.is_null()) {
            errs.push(FieldError::invalid(
                p("backoffLimitPerIndex"),
                v,
                "requires indexed completion mode",
            ));
        }
        if let Some(v) = spec.get("maxFailedIndexes").filter(|v| !v.is_null()) {
            errs.push(FieldError::invalid(
                p("maxFailedIndexes"),
                v,
                "requires indexed completion mode",
            ));
        }
    }
    let failure_policy = spec.get("podFailurePolicy").filter(|v| !v.is_null());
    if let Some(policy) = failure_policy {
        errs.extend(validate_pod_failure_policy(
            spec,
            policy,
            &p("podFailurePolicy"),
        ));
    }
    if let Some(policy) = spec.get("successPolicy").filter(|v| !v.is_null()) {
        if !is_indexed(spec) {
            errs.push(FieldError::invalid(
                p("successPolicy"),
                policy,
                "requires indexed completion mode",
            ));
        } else {
            errs.extend(validate_success_policy(spec, policy, &p("successPolicy")));
        }
    }
    if let Some(replacement) = spec.get("podReplacementPolicy").filter(|v| !v.is_null()) {
        let value = replacement.as_str().unwrap_or("");
        if failure_policy.is_some() {
            if value != "Failed" {
                errs.push(FieldError::not_supported(
                    p("podReplacementPolicy"),
                    replacement,
                    &["Failed"],
                ));
            }
        } else if value != "Failed" && value != "TerminatingOrFailed" {
            errs.push(FieldError::not_supported(
                p("podReplacementPolicy"),
                replacement,
                &["Failed", "TerminatingOrFailed"],
            ));
        }
    }
    // The Go template is a value, never nil: an absent one is validated as an empty one.
    let empty = json!({});
    let template = spec
        .get("template")
        .filter(|v| !v.is_null())
        .unwrap_or(&empty);
    errs.extend(validate_pod_template(Some(template), &p("template")));
    let restart_path = p("template.spec.restartPolicy");
    let restart = get(template, &["spec", "restartPolicy"]);
    match restart.and_then(Value::as_str).unwrap_or("") {
        // Pod defaults turn an absent policy into Always, so both mean "not chosen".
        "" | "Always" => errs.push(FieldError::required(
            restart_path,
            "valid values: \"OnFailure\", \"Never\"",
        )),
        "OnFailure" if failure_policy.is_some() => errs.push(FieldError::invalid(
            restart_path,
            restart.unwrap_or(&Value::Null),
            "only \"Never\" is supported when podFailurePolicy is specified",
        )),
        "OnFailure" | "Never" => {}
        _ => errs.push(FieldError::not_supported(
            restart_path,
            restart.unwrap_or(&Value::Null),
            &["OnFailure", "Never"],
        )),
    }
    errs
}

/// `IsDomainPrefixedPath` (`spec.managedBy`).
fn validate_domain_prefixed_path(value: &str, path: &str) -> Vec<FieldError> {
    if value.is_empty() {
        return vec![FieldError::required(path, "")];
    }
    let Some((host, rest)) = value
        .split_once('/')
        .filter(|(h, r)| !h.is_empty() && !r.is_empty())
    else {
        return vec![FieldError::invalid(
            path,
            &json!(value),
            "must be a domain-prefixed path (such as \"acme.io/foo\")",
        )];
    };
    let mut errs: Vec<FieldError> = meta::is_dns1123_subdomain(host)
        .iter()
        .map(|m| FieldError::invalid(path, &json!(host), m))
        .collect();
    let path_ok = rest
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/-._~%!$&'()*+,;=:".contains(c));
    if !path_ok {
        errs.push(FieldError::invalid(
            path,
            &json!(rest),
            "Invalid path (regex used for validation is '[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+')",
        ));
    }
    errs
}

const FAILURE_ACTIONS: &[&str] = &["Count", "FailIndex", "FailJob", "Ignore"];

/// `validatePodFailurePolicy` and its rules.
fn validate_pod_failure_policy(spec: &Value, policy: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let rules_path = format!("{path}.rules");
    let rules = policy
        .get("rules")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if rules.len() > MAX_POD_FAILURE_POLICY_RULES {
        errs.push(FieldError::too_many(
            &rules_path,
            rules.len(),
            MAX_POD_FAILURE_POLICY_RULES,
        ));
    }
    let containers: BTreeSet<&str> = ["containers", "initContainers"]
        .iter()
        .filter_map(|list| get(spec, &["template", "spec", list]).and_then(Value::as_array))
        .flatten()
        .filter_map(|c| c.get("name").and_then(Value::as_str))
        .collect();
    for (i, rule) in rules.iter().enumerate() {
        let rule_path = format!("{rules_path}[{i}]");
        let action_path = format!("{rule_path}.action");
        match text(rule, "action") {
            "" => errs.push(FieldError::required(
                &action_path,
                &format!("valid values: {}", quoted_list(FAILURE_ACTIONS)),
            )),
            "FailIndex" => {
                if !is_set(spec, "backoffLimitPerIndex") {
                    errs.push(FieldError::invalid(
                        &action_path,
                        &json!("FailIndex"),
                        "requires the backoffLimitPerIndex to be set",
                    ));
                }
            }
            a if FAILURE_ACTIONS.contains(&a) => {}
            _ => errs.push(FieldError::not_supported(
                &action_path,
                rule.get("action").unwrap_or(&Value::Null),
                FAILURE_ACTIONS,
            )),
        }
        let on_exit_codes = rule.get("onExitCodes").filter(|v| !v.is_null());
        let on_conditions = rule
            .get("onPodConditions")
            .and_then(Value::as_array)
            .filter(|a| !a.is_empty());
        if let Some(req) = on_exit_codes {
            errs.extend(validate_on_exit_codes(
                req,
                &format!("{rule_path}.onExitCodes"),
                &containers,
            ));
        }
        if let Some(patterns) = on_conditions {
            errs.extend(validate_on_pod_conditions(
                patterns,
                &format!("{rule_path}.onPodConditions"),
            ));
        }
        match (on_exit_codes.is_some(), on_conditions.is_some()) {
            (true, true) => errs.push(FieldError::invalid_omitting_value(
                &rule_path,
                "specifying both OnExitCodes and OnPodConditions is not supported",
            )),
            (false, false) => errs.push(FieldError::invalid_omitting_value(
                &rule_path,
                "specifying one of OnExitCodes and OnPodConditions is required",
            )),
            _ => {}
        }
    }
    errs
}

/// `validatePodFailurePolicyRuleOnExitCode`.
fn validate_on_exit_codes(req: &Value, path: &str, containers: &BTreeSet<&str>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let operator = text(req, "operator");
    match operator {
        "" => errs.push(FieldError::required(
            format!("{path}.operator"),
            &format!("valid values: {}", quoted_list(&["In", "NotIn"])),
        )),
        "In" | "NotIn" => {}
        _ => errs.push(FieldError::not_supported(
            format!("{path}.operator"),
            &json!(operator),
            &["In", "NotIn"],
        )),
    }
    if let Some(name) = req.get("containerName").and_then(Value::as_str) {
        if !containers.contains(name) {
            errs.push(FieldError::invalid(
                format!("{path}.containerName"),
                &json!(name),
                "must be one of the container or initContainer names in the pod template",
            ));
        }
    }
    let values_path = format!("{path}.values");
    let values = req
        .get("values")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if values.is_empty() {
        errs.push(invalid_int32s(
            values_path.clone(),
            values,
            "at least one value is required",
        ));
    } else if values.len() > MAX_ON_EXIT_CODES_VALUES {
        errs.push(FieldError::too_many(
            &values_path,
            values.len(),
            MAX_ON_EXIT_CODES_VALUES,
        ));
    }
    let mut seen = BTreeSet::new();
    let mut ordered = true;
    for (j, value) in values.iter().enumerate() {
        let code = value.as_i64().unwrap_or(0);
        let value_path = format!("{values_path}[{j}]");
        if operator == "In" && code == 0 {
            errs.push(FieldError::invalid(
                &value_path,
                &json!(0),
                "must not be 0 for the In operator",
            ));
        }
        if !seen.insert(code) {
            errs.push(FieldError::duplicate(&value_path, &json!(code)));
        }
        if j > 0 && values[j - 1].as_i64().unwrap_or(0) > code {
            ordered = false;
        }
    }
    if !ordered {
        errs.push(invalid_int32s(values_path, values, "must be ordered"));
    }
    errs
}

/// `validatePodFailurePolicyRuleOnPodConditions`.
fn validate_on_pod_conditions(patterns: &[Value], path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if patterns.len() > MAX_ON_POD_CONDITIONS_PATTERNS {
        errs.push(FieldError::too_many(
            path,
            patterns.len(),
            MAX_ON_POD_CONDITIONS_PATTERNS,
        ));
    }
    const STATUSES: &[&str] = &["False", "True", "Unknown"];
    for (j, pattern) in patterns.iter().enumerate() {
        let pattern_path = format!("{path}[{j}]");
        let ty = text(pattern, "type");
        errs.extend(
            meta::is_qualified_name(ty)
                .iter()
                .map(|m| FieldError::invalid(format!("{pattern_path}.type"), &json!(ty), m)),
        );
        let status_path = format!("{pattern_path}.status");
        match text(pattern, "status") {
            "" => errs.push(FieldError::required(
                status_path,
                &format!("valid values: {}", quoted_list(STATUSES)),
            )),
            s if STATUSES.contains(&s) => {}
            s => errs.push(FieldError::not_supported(status_path, &json!(s), STATUSES)),
        }
    }
    errs
}

/// `validateSuccessPolicy` and its rules (called for Indexed jobs only).
fn validate_success_policy(spec: &Value, policy: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let rules_path = format!("{path}.rules");
    let rules = policy
        .get("rules")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if rules.is_empty() {
        errs.push(FieldError::required(
            &rules_path,
            "at least one rules must be specified when the successPolicy is specified",
        ));
    }
    if rules.len() > MAX_SUCCESS_POLICY_RULES {
        errs.push(FieldError::too_many(
            &rules_path,
            rules.len(),
            MAX_SUCCESS_POLICY_RULES,
        ));
    }
    // Indexed jobs require completions; without them there is nothing to check against.
    let completions = int(spec, "completions").unwrap_or(0);
    for (i, rule) in rules.iter().enumerate() {
        let rule_path = format!("{rules_path}[{i}]");
        let indexes = rule.get("succeededIndexes").and_then(Value::as_str);
        let count = rule.get("succeededCount").filter(|v| !v.is_null());
        let mut total = 0;
        if let Some(indexes) = indexes {
            let indexes_path = format!("{rule_path}.succeededIndexes");
            if indexes.len() > MAX_SUCCEEDED_INDEXES_LENGTH {
                errs.push(FieldError::too_long(
                    &indexes_path,
                    MAX_SUCCEEDED_INDEXES_LENGTH,
                ));
            }
            match parse_indexes(indexes, completions) {
                Ok(intervals) => total = count_indexes(&intervals),
                Err(e) => errs.push(FieldError::invalid(
                    &indexes_path,
                    &json!(indexes),
                    &format!("error parsing succeededIndexes: {e}"),
                )),
            }
        }
        if let Some(count) = count {
            let count_path = format!("{rule_path}.succeededCount");
            errs.extend(validate_nonnegative(Some(count), &count_path));
            let n = count.as_i64().unwrap_or(0);
            if n > completions {
                errs.push(FieldError::invalid(
                    &count_path,
                    &json!(n),
                    &format!(
                        "must be less than or equal to {completions} (the number of specified completions)"
                    ),
                ));
            }
            if indexes.is_some() && n > total {
                errs.push(FieldError::invalid(
                    &count_path,
                    &json!(n),
                    &format!(
                        "must be less than or equal to {total} (the number of indexes in the specified succeededIndexes field)"
                    ),
                ));
            }
        }
        if indexes.is_none() && count.is_none() {
            errs.push(FieldError::required(
                &rule_path,
                &format!(
                    "at least one of {rule_path}.succeededIndexes or {rule_path}.succeededCount must be specified"
                ),
            ));
        }
    }
    errs
}

/// `parseIndexInterval`: `x` or `x-y` with `x < y < completions`.
pub(crate) fn parse_interval(interval: &str, completions: i64) -> Result<(i64, i64), String> {
    let limits: Vec<&str> = interval.split('-').collect();
    if limits.len() > 2 {
        return Err(format!(
            "the fragment {interval:?} violates the requirement that an index interval can have at most two parts separated by '-'"
        ));
    }
    let atoi = |s: &str| {
        s.parse::<i64>()
            .map_err(|_| format!("cannot convert string to integer for index: {s:?}"))
    };
    let x = atoi(limits[0])?;
    if x >= completions {
        return Err(format!("too large index: {:?}", limits[0]));
    }
    let Some(high) = limits.get(1) else {
        return Ok((x, x));
    };
    let y = atoi(high)?;
    if y >= completions {
        return Err(format!("too large index: {high:?}"));
    }
    if x >= y {
        return Err(format!("non-increasing order, previous: {x}, current: {y}"));
    }
    Ok((x, y))
}

/// `validateIndexesFormat`: `1,3-5,7`, increasing, every index below `completions`; the
/// intervals, or kube's error.
pub(crate) fn parse_indexes(indexes: &str, completions: i64) -> Result<Vec<(i64, i64)>, String> {
    let mut intervals: Vec<(i64, i64)> = Vec::new();
    if indexes.is_empty() {
        return Ok(intervals);
    }
    for interval in indexes.split(',') {
        let (x, y) = parse_interval(interval, completions)?;
        if let Some((_, last)) = intervals.last().filter(|(_, last)| *last >= x) {
            return Err(format!(
                "non-increasing order, previous: {last}, current: {x}"
            ));
        }
        intervals.push((x, y));
    }
    Ok(intervals)
}

/// `validateFailedIndexesNotOverlapCompleted`: the first index in both lists, walking both in
/// order and skipping intervals that do not parse (their format is reported elsewhere).
pub(crate) fn overlapping_index(completed: &str, failed: &str, completions: i64) -> Option<i64> {
    if completed.is_empty() || failed.is_empty() {
        return None;
    }
    let parse = |list: &str| -> Vec<Option<(i64, i64)>> {
        list.split(',')
            .map(|i| parse_interval(i, completions).ok())
            .collect()
    };
    let (done, bad) = (parse(completed), parse(failed));
    let (mut c, mut f) = (0, 0);
    while c < done.len() && f < bad.len() {
        match (done[c], bad[f]) {
            (None, _) => c += 1,
            (_, None) => f += 1,
            (Some((cx, cy)), Some((fx, fy))) => {
                if cx <= fy && fx <= cy {
                    return Some(cx.max(fx));
                }
                if cx <= fx {
                    c += 1;
                } else {
                    f += 1;
                }
            }
        }
    }
    None
}

/// The number of indexes in parsed intervals.
pub(crate) fn count_indexes(intervals: &[(i64, i64)]) -> i64 {
    intervals.iter().map(|(x, y)| y - x + 1).sum()
}

/// `ValidateJobSpec`: the fields, a required valid selector, and a template it selects.
pub(crate) fn validate_job_spec(spec: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = validate_job_spec_fields(spec, path);
    let selector = spec.get("selector").filter(|v| !v.is_null());
    match selector {
        None => errs.push(FieldError::required(format!("{path}.selector"), "")),
        Some(sel) => errs.extend(validate_label_selector(
            Some(sel),
            &format!("{path}.selector"),
        )),
    }
    if let Ok(sel) = LabelSelector::from_json(selector) {
        let labels = get(spec, &["template", "metadata", "labels"]);
        if !sel.matches(&string_map(labels)) {
            errs.push(FieldError::invalid(
                format!("{path}.template.metadata.labels"),
                labels.unwrap_or(&Value::Null),
                "`selector` does not match template `labels`",
            ));
        }
    }
    errs
}

/// `ValidateHasLabel` on the job's pod template.
fn validate_has_label(
    template_labels: Option<&Value>,
    key: &str,
    expected: &str,
) -> Vec<FieldError> {
    let path = format!("spec.template.metadata.labels[{key}]");
    let detail = format!("must be '{expected}'");
    match template_labels.and_then(|l| l.get(key)) {
        None => vec![FieldError::required(path, &detail)],
        Some(v) if v.as_str() == Some(expected) => Vec::new(),
        Some(_) => vec![FieldError::invalid(
            path,
            template_labels.unwrap_or(&Value::Null),
            &detail,
        )],
    }
}

/// `ValidateGeneratedSelector`: unless the selector is manual, the job has a uid and its
/// template carries the generated labels its selector selects. `prefixed` also requires the
/// `batch.kubernetes.io/` labels (kube skips them for jobs created before it added them).
pub(crate) fn validate_generated_selector(job: &Value, prefixed: bool) -> Vec<FieldError> {
    let spec = get(job, &["spec"]).unwrap_or(&Value::Null);
    if spec.get("manualSelector").and_then(Value::as_bool) == Some(true) {
        return Vec::new();
    }
    let Some(selector) = spec.get("selector").filter(|v| !v.is_null()) else {
        return Vec::new();
    };
    let mut errs = Vec::new();
    let uid = get(job, &["metadata", "uid"])
        .and_then(Value::as_str)
        .unwrap_or("");
    let name = get(job, &["metadata", "name"])
        .and_then(Value::as_str)
        .unwrap_or("");
    if uid.is_empty() {
        errs.push(FieldError::required("metadata.uid", ""));
    }
    let labels = get(spec, &["template", "metadata", "labels"]);
    let mut expected = std::collections::BTreeMap::new();
    if prefixed {
        errs.extend(validate_has_label(labels, CONTROLLER_UID_LABEL, uid));
        errs.extend(validate_has_label(labels, JOB_NAME_LABEL, name));
        expected.insert(CONTROLLER_UID_LABEL.to_string(), uid.to_string());
        expected.insert(JOB_NAME_LABEL.to_string(), name.to_string());
    }
    errs.extend(validate_has_label(labels, LEGACY_CONTROLLER_UID_LABEL, uid));
    errs.extend(validate_has_label(labels, LEGACY_JOB_NAME_LABEL, name));
    expected.insert(LEGACY_CONTROLLER_UID_LABEL.to_string(), uid.to_string());
    expected.insert(LEGACY_JOB_NAME_LABEL.to_string(), name.to_string());
    if let Ok(sel) = LabelSelector::from_json(Some(selector)) {
        if !sel.matches(&expected) {
            errs.push(FieldError::invalid(
                "spec.selector",
                selector,
                "`selector` not auto-generated",
            ));
        }
    }
    errs
}

/// `ValidateJobTemplateSpec` of a CronJob: the job spec without a selector, which the Job
/// will generate.
pub(crate) fn validate_job_template_spec(template: &Value, path: &str) -> Vec<FieldError> {
    let spec = template.get("spec").unwrap_or(&Value::Null);
    let spec_path = format!("{path}.spec");
    let mut errs = validate_job_spec_fields(spec, &spec_path);
    if let Some(sel) = spec.get("selector").filter(|v| !v.is_null()) {
        errs.push(FieldError::invalid(
            format!("{spec_path}.selector"),
            sel,
            "`selector` will be auto-generated",
        ));
    }
    if spec.get("manualSelector").and_then(Value::as_bool) == Some(true) {
        errs.push(FieldError::not_supported(
            format!("{spec_path}.manualSelector"),
            &json!(true),
            &["nil", "false"],
        ));
    }
    errs
}
