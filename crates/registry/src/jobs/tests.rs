//! Cases ported from kube's `defaults_test.go` (batch/v1), `validation_test.go` (batch) and
//! `strategy_test.go` (job).

use super::*;
use rkcm_apimachinery::catalog;

fn strategy() -> JobStrategy {
    JobStrategy::new(catalog::by_kind("batch/v1", "Job").expect("served"))
}

fn job() -> Value {
    json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "pi", "namespace": "default"},
        "spec": {"template": {"spec": {"containers": [{"name": "pi", "image": "perl:5"}],
            "restartPolicy": "Never"}}}
    })
}

/// Runs `obj` through create as the server does, with uid `u1`.
fn create(mut obj: Value) -> (Value, Vec<String>) {
    let s = strategy();
    s.default(&mut obj);
    s.prepare_for_create(&mut obj);
    obj["metadata"]["uid"] = json!("u1");
    s.complete_create(&mut obj);
    let errs = messages(&s.validate_create(&obj));
    (obj, errs)
}

fn created() -> Value {
    let (obj, errs) = create(job());
    assert!(errs.is_empty(), "{errs:?}");
    obj
}

/// A change to a valid job and the errors kube reports for it.
type Case = (fn(&mut Value), &'static [&'static str]);

fn messages(errs: &[FieldError]) -> Vec<String> {
    errs.iter().map(FieldError::message_with_field).collect()
}

fn create_errors(mutate: impl FnOnce(&mut Value)) -> Vec<String> {
    let mut j = job();
    mutate(&mut j);
    create(j).1
}

#[test]
fn defaults_of_a_plain_job() {
    let j = created();
    let spec = &j["spec"];
    assert_eq!(spec["completions"], 1);
    assert_eq!(spec["parallelism"], 1);
    assert_eq!(spec["backoffLimit"], 6);
    assert_eq!(spec["completionMode"], "NonIndexed");
    assert_eq!(spec["suspend"], false);
    assert_eq!(spec["manualSelector"], false);
    assert_eq!(spec["podReplacementPolicy"], "TerminatingOrFailed");
    assert_eq!(spec["template"]["spec"]["dnsPolicy"], "ClusterFirst");
    assert_eq!(j["metadata"]["generation"], 1);
    assert_eq!(j["status"], json!({}));
}

#[test]
fn defaults_follow_set_defaults_job() {
    // TestSetDefaultJob.
    let defaulted = |spec: Value| {
        let mut j = json!({"metadata": {"name": "j"}, "spec": spec});
        default_job(&mut j);
        j
    };
    let j = defaulted(json!({"completions": 3}));
    assert_eq!(
        (
            j["spec"]["completions"].clone(),
            j["spec"]["parallelism"].clone()
        ),
        (json!(3), json!(1))
    );
    let j = defaulted(json!({"parallelism": 4}));
    assert_eq!(j["spec"]["parallelism"], 4);
    assert!(
        j["spec"].get("completions").is_none(),
        "work queue jobs keep no completions"
    );
    let j = defaulted(json!({"completions": 0, "parallelism": 0, "backoffLimit": 0}));
    assert_eq!(
        (
            j["spec"]["completions"].clone(),
            j["spec"]["parallelism"].clone(),
            j["spec"]["backoffLimit"].clone()
        ),
        (json!(0), json!(0), json!(0))
    );
    let j = defaulted(
        json!({"completionMode": "Indexed", "completions": 4, "backoffLimitPerIndex": 1}),
    );
    assert_eq!(j["spec"]["backoffLimit"], 2147483647);
    let j = defaulted(json!({"podFailurePolicy": {"rules": [
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}, {"type": "X", "status": "False"}]}]}}));
    assert_eq!(j["spec"]["podReplacementPolicy"], "Failed");
    assert_eq!(
        j["spec"]["podFailurePolicy"]["rules"][0]["onPodConditions"],
        json!([{"type": "DisruptionTarget", "status": "True"}, {"type": "X", "status": "False"}])
    );
    let j = defaulted(json!({"template": {"metadata": {"labels": {"app": "pi"}}}}));
    assert_eq!(
        j["metadata"]["labels"],
        json!({"app": "pi"}),
        "labels come from the template"
    );
    let j = defaulted(json!({"completionMode": "", "template": {"metadata": {"labels": {}}}}));
    assert_eq!(j["spec"]["completionMode"], "", "an empty mode is not nil");
    assert!(j["metadata"].get("labels").is_none());
    let mut own = json!({"metadata": {"name": "j", "labels": {"own": "x"}}, "spec": {"template": {"metadata": {"labels": {"app": "pi"}}}}});
    default_job(&mut own);
    assert_eq!(own["metadata"]["labels"], json!({"own": "x"}));
}

#[test]
fn the_server_generates_the_selector_and_pod_labels() {
    let j = created();
    assert_eq!(
        j["spec"]["selector"],
        json!({"matchLabels": {"batch.kubernetes.io/controller-uid": "u1"}})
    );
    assert_eq!(
        j["spec"]["template"]["metadata"]["labels"],
        json!({"batch.kubernetes.io/controller-uid": "u1", "batch.kubernetes.io/job-name": "pi",
            "controller-uid": "u1", "job-name": "pi"})
    );
    let typed: k8s_openapi::api::batch::v1::Job = serde_json::from_value(j).expect("decodes");
    assert_eq!(typed.spec.and_then(|s| s.manual_selector), Some(false));
}

#[test]
fn selectors_set_without_manual_selector_are_refused() {
    let errs = create_errors(|j| {
        j["spec"]["selector"] = json!({"matchLabels": {"app": "pi"}});
        j["spec"]["template"]["metadata"] = json!({"labels": {"app": "pi"}});
    });
    assert_eq!(
        errs,
        ["spec.selector: Invalid value: {\"matchLabels\":{\"app\":\"pi\",\"batch.kubernetes.io/controller-uid\":\"u1\"}}: `selector` not auto-generated"]
    );
    let errs = create_errors(|j| {
        j["spec"]["template"]["metadata"] = json!({"labels": {"controller-uid": "other"}});
    });
    assert_eq!(
        errs[0],
        "spec.template.metadata.labels[controller-uid]: Invalid value: {\"controller-uid\":\"other\",\"job-name\":\"pi\",\"batch.kubernetes.io/job-name\":\"pi\",\"batch.kubernetes.io/controller-uid\":\"u1\"}: must be 'u1'"
    );
}

#[test]
fn manual_selectors_are_taken_as_given() {
    let (j, errs) = create({
        let mut j = job();
        j["spec"]["manualSelector"] = json!(true);
        j["spec"]["selector"] = json!({"matchLabels": {"app": "pi"}});
        j["spec"]["template"]["metadata"] = json!({"labels": {"app": "pi"}});
        j
    });
    assert!(errs.is_empty(), "{errs:?}");
    assert_eq!(
        j["spec"]["template"]["metadata"]["labels"],
        json!({"app": "pi"})
    );
    // A missing selector selects nothing, so kube also reports the template as unselected.
    let errs = create_errors(|j| j["spec"]["manualSelector"] = json!(true));
    assert_eq!(
        errs,
        [
            "spec.selector: Required value",
            "spec.template.metadata.labels: Invalid value: null: `selector` does not match template `labels`",
        ]
    );
}

#[test]
fn generated_selector_requires_a_uid() {
    let mut j = job();
    let s = strategy();
    s.default(&mut j);
    s.prepare_for_create(&mut j);
    s.complete_create(&mut j);
    let errs = messages(&s.validate_create(&j));
    assert!(
        errs.contains(&"metadata.uid: Required value".to_string()),
        "{errs:?}"
    );
}

#[test]
fn restart_policy_must_be_never_or_on_failure() {
    let errs = create_errors(|j| {
        j["spec"]["template"]["spec"]
            .as_object_mut()
            .expect("spec")
            .remove("restartPolicy");
    });
    assert_eq!(
        errs,
        ["spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\""]
    );
    let errs = create_errors(|j| {
        j["spec"]["template"]["spec"]["restartPolicy"] = json!("OnFailure");
        j["spec"]["podFailurePolicy"] = json!({"rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [1]}}]});
    });
    assert_eq!(
        errs,
        ["spec.template.spec.restartPolicy: Invalid value: \"OnFailure\": only \"Never\" is supported when podFailurePolicy is specified"]
    );
}

#[test]
fn spec_errors_carry_kube_messages() {
    // Cases of TestValidateJob.
    let cases: Vec<Case> = vec![
        (|j| j["spec"]["parallelism"] = json!(-1), &["spec.parallelism: Invalid value: -1: must be greater than or equal to 0"]),
        (|j| j["spec"]["completions"] = json!(-1), &["spec.completions: Invalid value: -1: must be greater than or equal to 0"]),
        (|j| j["spec"]["activeDeadlineSeconds"] = json!(-1), &["spec.activeDeadlineSeconds: Invalid value: -1: must be greater than or equal to 0"]),
        (|j| j["spec"]["backoffLimit"] = json!(-1), &["spec.backoffLimit: Invalid value: -1: must be greater than or equal to 0"]),
        (|j| j["spec"]["ttlSecondsAfterFinished"] = json!(-1), &["spec.ttlSecondsAfterFinished: Invalid value: -1: must be greater than or equal to 0"]),
        (|j| j["spec"]["completionMode"] = json!("Sideways"), &["spec.completionMode: Unsupported value: \"Sideways\": supported values: \"NonIndexed\", \"Indexed\""]),
        (
            |j| { j["spec"]["completionMode"] = json!("Indexed"); j["spec"]["parallelism"] = json!(2); },
            &["spec.completions: Required value: when completion mode is Indexed"],
        ),
        (
            |j| { j["spec"]["completionMode"] = json!("Indexed"); j["spec"]["completions"] = json!(2); j["spec"]["parallelism"] = json!(100001); },
            &["spec.parallelism: Invalid value: 100001: must be less than or equal to 100000 when completion mode is Indexed"],
        ),
        (
            |j| j["spec"]["backoffLimitPerIndex"] = json!(1),
            &["spec.backoffLimitPerIndex: Invalid value: 1: requires indexed completion mode"],
        ),
        (
            |j| { j["spec"]["completionMode"] = json!("Indexed"); j["spec"]["completions"] = json!(2); j["spec"]["maxFailedIndexes"] = json!(3); },
            &[
                "spec.backoffLimitPerIndex: Required value: when maxFailedIndexes is specified",
                "spec.maxFailedIndexes: Invalid value: 3: must be less than or equal to completions",
            ],
        ),
        (
            |j| { j["spec"]["completionMode"] = json!("Indexed"); j["spec"]["completions"] = json!(100001); j["spec"]["parallelism"] = json!(10001); j["spec"]["backoffLimitPerIndex"] = json!(1); },
            &[
                "spec.maxFailedIndexes: Required value: must be specified when completions is above 100000",
                "spec.parallelism: Invalid value: 10001: must be less than or equal to 10000 when completions are above 100000 and used with backoff limit per index",
            ],
        ),
        (
            |j| j["spec"]["podReplacementPolicy"] = json!("Sometimes"),
            &["spec.podReplacementPolicy: Unsupported value: \"Sometimes\": supported values: \"Failed\", \"TerminatingOrFailed\""],
        ),
        (
            |j| { j["spec"]["podReplacementPolicy"] = json!("TerminatingOrFailed"); j["spec"]["podFailurePolicy"] = json!({"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]}); },
            &["spec.podReplacementPolicy: Unsupported value: \"TerminatingOrFailed\": supported values: \"Failed\""],
        ),
        (
            |j| j["spec"]["managedBy"] = json!("acme"),
            &["spec.managedBy: Invalid value: \"acme\": must be a domain-prefixed path (such as \"acme.io/foo\")"],
        ),
        (
            |j| j["metadata"]["name"] = json!("a".repeat(64)),
            &[],
        ),
    ];
    for (mutate, want) in cases {
        let errs = create_errors(mutate);
        if want.is_empty() {
            // A name too long for the job-name label fails the template labels.
            assert!(
                errs.iter().any(
                    |e| e.starts_with("spec.template.labels: Invalid value: \"aaaa")
                        && e.ends_with("must be no more than 63 characters")
                ),
                "{errs:?}"
            );
        } else {
            assert_eq!(errs, want);
        }
    }
}

#[test]
fn indexed_jobs_need_room_for_the_last_hostname() {
    let errs = create_errors(|j| {
        j["metadata"]["name"] = json!("a".repeat(62));
        j["spec"]["completionMode"] = json!("Indexed");
        j["spec"]["completions"] = json!(10);
    });
    assert_eq!(
        errs,
        [format!("metadata.name: Invalid value: \"{0}\": will not able to create pod with invalid DNS label: {0}-9", "a".repeat(62))]
    );
}

#[test]
fn pod_failure_policy_rules_are_checked() {
    // Cases of TestValidateJob's podFailurePolicy section.
    let with_rules =
        |rules: Value| create_errors(|j| j["spec"]["podFailurePolicy"] = json!({"rules": rules}));
    assert_eq!(
        with_rules(json!([{"onExitCodes": {"operator": "In", "values": [1]}}])),
        ["spec.podFailurePolicy.rules[0].action: Required value: valid values: [\"Count\" \"FailIndex\" \"FailJob\" \"Ignore\"]"]
    );
    assert_eq!(
        with_rules(json!([{"action": "Explode", "onExitCodes": {"operator": "In", "values": [1]}}])),
        ["spec.podFailurePolicy.rules[0].action: Unsupported value: \"Explode\": supported values: \"Count\", \"FailIndex\", \"FailJob\", \"Ignore\""]
    );
    assert_eq!(
        with_rules(json!([{"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [1]}}])),
        ["spec.podFailurePolicy.rules[0].action: Invalid value: \"FailIndex\": requires the backoffLimitPerIndex to be set"]
    );
    assert_eq!(
        with_rules(json!([{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [0, 2, 2, 1], "containerName": "nope"}}])),
        [
            "spec.podFailurePolicy.rules[0].onExitCodes.containerName: Invalid value: \"nope\": must be one of the container or initContainer names in the pod template",
            "spec.podFailurePolicy.rules[0].onExitCodes.values[0]: Invalid value: 0: must not be 0 for the In operator",
            "spec.podFailurePolicy.rules[0].onExitCodes.values[2]: Duplicate value: 2",
            "spec.podFailurePolicy.rules[0].onExitCodes.values: Invalid value: []int32{0, 2, 2, 1}: must be ordered",
        ]
    );
    assert_eq!(
        with_rules(json!([{"action": "FailJob", "onExitCodes": {"values": []}}])),
        [
            "spec.podFailurePolicy.rules[0].onExitCodes.operator: Required value: valid values: [\"In\" \"NotIn\"]",
            "spec.podFailurePolicy.rules[0].onExitCodes.values: Invalid value: []int32{}: at least one value is required",
        ]
    );
    assert_eq!(
        with_rules(json!([{"action": "Ignore", "onPodConditions": [{"type": "Bad Type", "status": "Maybe"}]}])),
        [
            "spec.podFailurePolicy.rules[0].onPodConditions[0].type: Invalid value: \"Bad Type\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
            "spec.podFailurePolicy.rules[0].onPodConditions[0].status: Unsupported value: \"Maybe\": supported values: \"False\", \"True\", \"Unknown\"",
        ]
    );
    assert_eq!(
        with_rules(json!([{"action": "Ignore"}])),
        ["spec.podFailurePolicy.rules[0]: Invalid value: specifying one of OnExitCodes and OnPodConditions is required"]
    );
    assert_eq!(
        with_rules(json!([{"action": "Ignore", "onExitCodes": {"operator": "NotIn", "values": [1]}, "onPodConditions": [{"type": "DisruptionTarget"}]}])),
        ["spec.podFailurePolicy.rules[0]: Invalid value: specifying both OnExitCodes and OnPodConditions is not supported"]
    );
    let many: Vec<Value> = (0..21)
        .map(|_| json!({"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}))
        .collect();
    assert_eq!(
        with_rules(json!(many)),
        ["spec.podFailurePolicy.rules: Too many: 21: must have at most 20 items"]
    );
}

#[test]
fn success_policy_rules_are_checked() {
    let indexed = |policy: Value| {
        create_errors(|j| {
            j["spec"]["completionMode"] = json!("Indexed");
            j["spec"]["completions"] = json!(10);
            j["spec"]["parallelism"] = json!(10);
            j["spec"]["successPolicy"] = policy;
        })
    };
    assert!(
        indexed(json!({"rules": [{"succeededIndexes": "0-2,5", "succeededCount": 4}]})).is_empty()
    );
    assert_eq!(
        indexed(json!({"rules": []})),
        ["spec.successPolicy.rules: Required value: at least one rules must be specified when the successPolicy is specified"]
    );
    assert_eq!(
        indexed(json!({"rules": [{}]})),
        ["spec.successPolicy.rules[0]: Required value: at least one of spec.successPolicy.rules[0].succeededIndexes or spec.successPolicy.rules[0].succeededCount must be specified"]
    );
    assert_eq!(
        indexed(json!({"rules": [{"succeededIndexes": "3,1"}]})),
        ["spec.successPolicy.rules[0].succeededIndexes: Invalid value: \"3,1\": error parsing succeededIndexes: non-increasing order, previous: 3, current: 1"]
    );
    assert_eq!(
        indexed(json!({"rules": [{"succeededIndexes": "1-10"}]})),
        ["spec.successPolicy.rules[0].succeededIndexes: Invalid value: \"1-10\": error parsing succeededIndexes: too large index: \"10\""]
    );
    assert_eq!(
        indexed(json!({"rules": [{"succeededIndexes": "a"}]})),
        ["spec.successPolicy.rules[0].succeededIndexes: Invalid value: \"a\": error parsing succeededIndexes: cannot convert string to integer for index: \"a\""]
    );
    assert_eq!(
        indexed(json!({"rules": [{"succeededIndexes": "1-2-3"}]})),
        ["spec.successPolicy.rules[0].succeededIndexes: Invalid value: \"1-2-3\": error parsing succeededIndexes: the fragment \"1-2-3\" violates the requirement that an index interval can have at most two parts separated by '-'"]
    );
    assert_eq!(
        indexed(json!({"rules": [{"succeededIndexes": "0-1", "succeededCount": 11}]})),
        [
            "spec.successPolicy.rules[0].succeededCount: Invalid value: 11: must be less than or equal to 10 (the number of specified completions)",
            "spec.successPolicy.rules[0].succeededCount: Invalid value: 11: must be less than or equal to 2 (the number of indexes in the specified succeededIndexes field)",
        ]
    );
    let errs =
        create_errors(|j| j["spec"]["successPolicy"] = json!({"rules": [{"succeededCount": 1}]}));
    assert_eq!(
        errs,
        ["spec.successPolicy: Invalid value: {\"rules\":[{\"succeededCount\":1}]}: requires indexed completion mode"]
    );
}

fn update(old: &Value, mutate: impl FnOnce(&mut Value)) -> (Value, Vec<String>) {
    let s = strategy();
    let mut new = old.clone();
    mutate(&mut new);
    s.default(&mut new);
    s.prepare_for_update(&mut new, old);
    let errs = messages(&s.validate_update(&new, old));
    (new, errs)
}

#[test]
fn the_template_is_immutable_and_spec_changes_bump_the_generation() {
    let old = created();
    let (new, errs) = update(&old, |j| j["spec"]["activeDeadlineSeconds"] = json!(60));
    assert!(errs.is_empty(), "{errs:?}");
    assert_eq!(new["metadata"]["generation"], 2);
    let (_, errs) = update(&old, |j| {
        j["spec"]["template"]["spec"]["containers"][0]["image"] = json!("perl:6")
    });
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(errs[0].starts_with("spec.template: Invalid value: "));
    assert!(errs[0].ends_with(": field is immutable"));
    let (_, errs) = update(&old, |j| j["spec"]["completions"] = json!(2));
    assert_eq!(
        errs,
        ["spec.completions: Invalid value: 2: field is immutable"]
    );
    let (_, errs) = update(&old, |j| j["spec"]["completionMode"] = json!("Indexed"));
    assert!(
        errs.contains(
            &"spec.completionMode: Invalid value: \"Indexed\": field is immutable".to_string()
        ),
        "{errs:?}"
    );
    let (_, errs) = update(&old, |j| {
        j["spec"]["selector"]["matchLabels"]["job-name"] = json!("pi")
    });
    assert!(
        errs.iter()
            .any(|e| e.starts_with("spec.selector: Invalid value: ")
                && e.ends_with("field is immutable")),
        "{errs:?}"
    );
}

#[test]
fn suspended_jobs_that_never_started_may_change_scheduling_directives() {
    let (suspended, errs) = create({
        let mut j = job();
        j["spec"]["suspend"] = json!(true);
        j
    });
    assert!(errs.is_empty(), "{errs:?}");
    let directives = |j: &mut Value| {
        j["spec"]["suspend"] = json!(false);
        j["spec"]["template"]["spec"]["nodeSelector"] = json!({"zone": "a"});
        j["spec"]["template"]["spec"]["tolerations"] = json!([{"key": "k", "operator": "Exists"}]);
        j["spec"]["template"]["spec"]["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}});
        j["spec"]["template"]["metadata"]["annotations"] = json!({"a": "b"});
    };
    let (_, errs) = update(&suspended, directives);
    assert!(errs.is_empty(), "{errs:?}");
    let mut started = suspended.clone();
    started["status"] = json!({"startTime": "2024-01-01T00:00:00Z"});
    let (_, errs) = update(&started, directives);
    assert!(
        errs[0].starts_with("spec.template: Invalid value: "),
        "{errs:?}"
    );
    let (_, errs) = update(&created(), directives);
    assert!(
        errs[0].starts_with("spec.template: Invalid value: "),
        "{errs:?}"
    );
    let (_, errs) = update(&suspended, |j| {
        j["spec"]["template"]["spec"]["containers"][0]["image"] = json!("x")
    });
    assert!(
        errs[0].starts_with("spec.template: Invalid value: "),
        "{errs:?}"
    );
}

#[test]
fn indexed_jobs_scale_completions_with_parallelism() {
    let (old, errs) = create({
        let mut j = job();
        j["spec"]["completionMode"] = json!("Indexed");
        j["spec"]["completions"] = json!(3);
        j["spec"]["parallelism"] = json!(3);
        j
    });
    assert!(errs.is_empty(), "{errs:?}");
    let (_, errs) = update(&old, |j| {
        j["spec"]["completions"] = json!(5);
        j["spec"]["parallelism"] = json!(5);
    });
    assert!(errs.is_empty(), "{errs:?}");
    let (_, errs) = update(&old, |j| j["spec"]["completions"] = json!(5));
    assert_eq!(errs, ["spec.completions: Invalid value: 5: can only be modified in tandem with spec.parallelism"]);
}

fn status_update(old: &Value, status: Value) -> Vec<String> {
    let s = strategy();
    let mut new = old.clone();
    new["status"] = status;
    new["spec"]["parallelism"] = json!(9);
    s.prepare_for_status_update(&mut new, old);
    assert_eq!(new["spec"], old["spec"], "status updates keep the spec");
    assert_eq!(new["metadata"]["generation"], old["metadata"]["generation"]);
    messages(&s.validate_update(&new, old))
}

#[test]
fn status_updates_are_validated_as_kube_does() {
    // Cases of TestValidateJobUpdateStatus and TestStatusStrategy_ValidateUpdate.
    let old = created();
    assert!(status_update(
        &old,
        json!({"active": 1, "ready": 1, "startTime": "2024-01-01T00:00:00Z"})
    )
    .is_empty());
    assert_eq!(
        status_update(
            &old,
            json!({"active": -1, "succeeded": -2, "failed": -3, "ready": -4})
        ),
        [
            "status.active: Invalid value: -1: must be greater than or equal to 0",
            "status.succeeded: Invalid value: -2: must be greater than or equal to 0",
            "status.failed: Invalid value: -3: must be greater than or equal to 0",
            "status.ready: Invalid value: -4: must be greater than or equal to 0",
            "status.failed: Invalid value: -3: cannot decrease the failed counter",
            "status.succeeded: Invalid value: -2: cannot decrease the succeeded counter",
        ]
    );
    assert_eq!(
        status_update(
            &old,
            json!({"uncountedTerminatedPods": {"succeeded": ["a", ""], "failed": ["a"]}})
        ),
        [
            "status.uncountedTerminatedPods.succeeded[1]: Invalid value: \"\": must not be empty",
            "status.uncountedTerminatedPods.failed[0]: Duplicate value: \"a\"",
        ]
    );
    assert_eq!(
        status_update(&old, json!({"completedIndexes": "0"})),
        ["status.completedIndexes: Invalid value: \"0\": cannot set non-empty completedIndexes when non-indexed completion mode"]
    );
    assert_eq!(
        status_update(&old, json!({"failedIndexes": ""})),
        ["status.failedIndexes: Invalid value: \"\": cannot set non-null failedIndexes when backoffLimitPerIndex is null"]
    );
    let complete = json!({"type": "Complete", "status": "True"});
    let failed = json!({"type": "Failed", "status": "True"});
    assert_eq!(
        status_update(
            &old,
            json!({"active": 1, "conditions": [complete.clone(), failed.clone()], "startTime": "2024-01-01T00:00:00Z", "completionTime": "2024-01-01T00:01:00Z"})
        ),
        [
            "status.conditions: Invalid value: cannot set Complete=True and Failed=true conditions",
            "status.active: Invalid value: 1: active>0 is invalid for finished job",
        ]
    );
    assert_eq!(
        status_update(&old, json!({"conditions": [complete.clone()]})),
        [
            "status.completionTime: Required value: completionTime is required for Complete jobs",
            "status.startTime: Required value: startTime is required for finished job",
        ]
    );
    assert_eq!(
        status_update(&old, json!({"startTime": "2024-01-01T00:01:00Z", "completionTime": "2024-01-01T00:00:00Z"})),
        [
            "status.completionTime: Invalid value: \"2024-01-01T00:00:00Z\": cannot set completionTime when there is no Complete=True condition",
            "status.completionTime: Invalid value: \"2024-01-01T00:00:00Z\": completionTime cannot be set before startTime",
        ]
    );
    let mut finished = old.clone();
    finished["status"] = json!({"failed": 2, "succeeded": 1, "conditions": [complete.clone()], "startTime": "2024-01-01T00:00:00Z", "completionTime": "2024-01-01T00:01:00Z"});
    assert_eq!(
        status_update(&finished, json!({"failed": 1, "succeeded": 0, "startTime": "2024-01-01T00:00:00Z", "completionTime": "2024-01-01T00:02:00Z"})),
        [
            "status.completionTime: Invalid value: \"2024-01-01T00:02:00Z\": cannot set completionTime when there is no Complete=True condition",
            "status.conditions: Invalid value: cannot disable the terminal Complete=True condition",
            "status.failed: Invalid value: 1: cannot decrease the failed counter",
            "status.succeeded: Invalid value: 0: cannot decrease the succeeded counter",
            "status.completionTime: Invalid value: \"2024-01-01T00:02:00Z\": completionTime cannot be mutated",
        ]
    );
    let mut running = old.clone();
    running["status"] = json!({"active": 1, "startTime": "2024-01-01T00:00:00Z"});
    assert_eq!(
        status_update(&running, json!({"active": 1})),
        ["status.startTime: Required value: startTime cannot be removed for unsuspended job"]
    );
    assert_eq!(
        status_update(
            &running,
            json!({"active": 1, "startTime": "2024-01-01T00:01:00Z"})
        ),
        ["status.startTime: Required value: startTime cannot be removed for unsuspended job"]
    );
    // "verify startTime can be updated when resuming job (JobSuspended: True -> False)".
    let mut was_suspended = old.clone();
    was_suspended["status"] = json!({"startTime": "2024-01-01T00:00:00Z",
        "conditions": [{"type": "Suspended", "status": "True"}]});
    assert!(status_update(
        &was_suspended,
        json!({"startTime": "2024-01-01T00:01:00Z",
            "conditions": [{"type": "Suspended", "status": "False"}]})
    )
    .is_empty());
    let met = json!({"type": "SuccessCriteriaMet", "status": "True"});
    assert_eq!(
        status_update(&old, json!({"conditions": [met.clone(), {"type": "FailureTarget", "status": "True"}]})),
        ["status.conditions: Invalid value: cannot set SuccessCriteriaMet=True and FailureTarget=true conditions"]
    );
    let mut criteria_met = old.clone();
    criteria_met["status"] = json!({"conditions": [met]});
    assert_eq!(
        status_update(&criteria_met, json!({})),
        ["status.conditions: Invalid value: cannot disable the SuccessCriteriaMet=True condition"]
    );
}

#[test]
fn indexed_status_indexes_are_parsed_against_completions() {
    let (old, errs) = create({
        let mut j = job();
        j["spec"]["completionMode"] = json!("Indexed");
        j["spec"]["completions"] = json!(5);
        j["spec"]["parallelism"] = json!(2);
        j["spec"]["backoffLimitPerIndex"] = json!(1);
        j
    });
    assert!(errs.is_empty(), "{errs:?}");
    assert!(status_update(
        &old,
        json!({"completedIndexes": "0,2-3", "failedIndexes": "1"})
    )
    .is_empty());
    assert_eq!(
        status_update(&old, json!({"completedIndexes": "0-5"})),
        ["status.completedIndexes: Invalid value: \"0-5\": error parsing completedIndexes: too large index: \"5\""]
    );
    assert_eq!(
        status_update(&old, json!({"failedIndexes": "2,1"})),
        ["status.failedIndexes: Invalid value: \"2,1\": error parsing failedIndexes: non-increasing order, previous: 2, current: 1"]
    );
    assert_eq!(
        status_update(&old, json!({"completedIndexes": "0-2", "failedIndexes": "2-4"})),
        ["status.failedIndexes: Invalid value: \"2-4\": failedIndexes and completedIndexes overlap at index: 2"]
    );
    assert_eq!(
        status_update(&old, json!({"completedIndexes": "0,x,3", "failedIndexes": "1,3"})),
        [
            "status.completedIndexes: Invalid value: \"0,x,3\": error parsing completedIndexes: cannot convert string to integer for index: \"x\"",
            "status.failedIndexes: Invalid value: \"1,3\": failedIndexes and completedIndexes overlap at index: 3",
        ]
    );
}

#[test]
fn jobs_orphan_by_default_and_select_on_successful() {
    let s = strategy();
    assert!(s.default_propagation_orphans());
    let mut j = created();
    j["status"] = json!({"succeeded": 2});
    assert_eq!(s.field_value(&j, "status.successful").as_deref(), Some("2"));
    assert_eq!(s.field_value(&j, "metadata.name").as_deref(), Some("pi"));
}
