//! Pod specs as embedded in pods and pod templates: the defaults of `SetDefaults_PodSpec`,
//! `SetDefaults_Container` and friends, and the checks of `ValidatePodSpec` and
//! `ValidatePodTemplateSpec`.
//!
//! Mirrors `pkg/apis/core/v1/defaults.go` and `pkg/apis/core/validation/validation.go`.

use std::collections::{BTreeMap, BTreeSet};

use rkcm_apimachinery::quantity::{canonicalize_json_numbers, Quantity};
use rkcm_apimachinery::semantic::{self, types, Shape};
use serde_json::{json, Map, Value};

use super::meta::{self, name_is_dns_label, name_is_dns_subdomain};
use super::object::{default_field, default_nonzero, get, get_str};
use super::FieldError;

/// `v1.DefaultTerminationGracePeriodSeconds`.
pub const DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS: i64 = 30;

pub(crate) const CONTAINER_LISTS: [&str; 2] = ["initContainers", "containers"];

/// `SetDefaults_PodSpec` and the container, port, probe and volume defaults of a pod spec,
/// shared by pods and pod templates.
pub(crate) fn default_pod_spec(spec: &mut Map<String, Value>) {
    default_field(spec, "dnsPolicy", json!("ClusterFirst"));
    default_field(spec, "restartPolicy", json!("Always"));
    default_field(spec, "securityContext", json!({}));
    default_field(
        spec,
        "terminationGracePeriodSeconds",
        json!(DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS),
    );
    default_field(spec, "schedulerName", json!("default-scheduler"));
    canonicalize_resources(spec.get_mut("resources"));
    if spec.get("hostNetwork").and_then(Value::as_bool) == Some(true) {
        default_host_network_ports(spec);
    }
    for list in CONTAINER_LISTS {
        if let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) {
            for c in containers.iter_mut().filter_map(Value::as_object_mut) {
                default_container(c);
            }
        }
    }
    if let Some(volumes) = spec.get_mut("volumes").and_then(Value::as_array_mut) {
        for v in volumes.iter_mut().filter_map(Value::as_object_mut) {
            // SetDefaults_Volume: a volume without a source is an emptyDir.
            if v.keys().all(|k| k == "name") {
                v.insert("emptyDir".to_string(), json!({}));
            }
            default_volume_source(v);
        }
    }
}

/// Writes into `value`, JSON of the Go type `shape`, the value structs Go's encoder always
/// writes (`resources: {}` in each container, `creationTimestamp: null` in template metadata), so
/// that objects read back as kube-apiserver returns them and clients that send them back
/// (`kubectl rollout undo`) send the same template.
fn encode_value_structs(shape: &Shape, map: &mut Map<String, Value>) {
    let mut value = Value::Object(std::mem::take(map));
    semantic::fill_value_structs(shape, &mut value);
    if let Value::Object(filled) = value {
        *map = filled;
    }
}

/// The defaults of an embedded pod template (`spec.template` of workloads): the pod spec
/// defaults, and the value structs of the template as Go writes them.
pub(crate) fn default_pod_template(template: &mut Map<String, Value>) {
    if let Some(spec) = template.get_mut("spec").and_then(Value::as_object_mut) {
        default_pod_spec(spec);
    }
    encode_value_structs(&types::POD_TEMPLATE_SPEC, template);
}

/// The value structs of a pod as Go writes them (see [`default_pod_template`]).
pub(crate) fn encode_pod_value_structs(pod: &mut Map<String, Value>) {
    encode_value_structs(&types::POD, pod);
}

/// The defaults of volume sources: file modes 0644 (`420`), the token expiry of projected
/// service account tokens, the unset host path type, and downward API field versions.
fn default_volume_source(v: &mut Map<String, Value>) {
    for source in ["configMap", "secret", "downwardAPI", "projected"] {
        if let Some(s) = v.get_mut(source).and_then(Value::as_object_mut) {
            default_field(s, "defaultMode", json!(420));
        }
    }
    if let Some(h) = v.get_mut("hostPath").and_then(Value::as_object_mut) {
        default_field(h, "type", json!(""));
    }
    let mut field_refs: Vec<&mut Value> = Vec::new();
    if let Some(items) = v
        .get_mut("downwardAPI")
        .and_then(|d| d.get_mut("items"))
        .and_then(Value::as_array_mut)
    {
        field_refs.extend(items.iter_mut());
    }
    for item in field_refs {
        if let Some(f) = item.get_mut("fieldRef").and_then(Value::as_object_mut) {
            default_field(f, "apiVersion", json!("v1"));
        }
    }
    if let Some(sources) = v
        .get_mut("projected")
        .and_then(|p| p.get_mut("sources"))
        .and_then(Value::as_array_mut)
    {
        for s in sources.iter_mut() {
            if let Some(t) = s
                .get_mut("serviceAccountToken")
                .and_then(Value::as_object_mut)
            {
                default_field(t, "expirationSeconds", json!(3600));
            }
            if let Some(items) = s
                .get_mut("downwardAPI")
                .and_then(|d| d.get_mut("items"))
                .and_then(Value::as_array_mut)
            {
                for item in items.iter_mut() {
                    if let Some(f) = item.get_mut("fieldRef").and_then(Value::as_object_mut) {
                        default_field(f, "apiVersion", json!("v1"));
                    }
                }
            }
        }
    }
}

/// `defaultHostNetworkPorts`: with the host network, a port's `hostPort` is its
/// `containerPort`.
fn default_host_network_ports(spec: &mut Map<String, Value>) {
    for list in CONTAINER_LISTS {
        let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) else {
            continue;
        };
        for c in containers.iter_mut() {
            let Some(ports) = c.get_mut("ports").and_then(Value::as_array_mut) else {
                continue;
            };
            for p in ports.iter_mut().filter_map(Value::as_object_mut) {
                let unset = p
                    .get("hostPort")
                    .is_none_or(|v| v.is_null() || v.as_i64() == Some(0));
                if let (true, Some(port)) = (unset, p.get("containerPort").cloned()) {
                    p.insert("hostPort".to_string(), port);
                }
            }
        }
    }
}

/// `SetDefaults_Container` and the defaults of its ports, probes and env.
fn default_container(c: &mut Map<String, Value>) {
    if c.get("imagePullPolicy")
        .is_none_or(|v| v.is_null() || v.as_str() == Some(""))
    {
        let image = c.get("image").and_then(Value::as_str).unwrap_or("");
        let policy = if pulls_always(image) {
            "Always"
        } else {
            "IfNotPresent"
        };
        c.insert("imagePullPolicy".to_string(), json!(policy));
    }
    default_field(c, "terminationMessagePath", json!("/dev/termination-log"));
    default_field(c, "terminationMessagePolicy", json!("File"));
    if let Some(ports) = c.get_mut("ports").and_then(Value::as_array_mut) {
        for p in ports.iter_mut().filter_map(Value::as_object_mut) {
            default_field(p, "protocol", json!("TCP"));
        }
    }
    canonicalize_resources(c.get_mut("resources"));
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(p) = c.get_mut(probe).and_then(Value::as_object_mut) {
            default_nonzero(p, "timeoutSeconds", json!(1));
            default_nonzero(p, "periodSeconds", json!(10));
            default_nonzero(p, "successThreshold", json!(1));
            default_nonzero(p, "failureThreshold", json!(3));
            if let Some(h) = p.get_mut("httpGet").and_then(Value::as_object_mut) {
                default_field(h, "path", json!("/"));
                default_field(h, "scheme", json!("HTTP"));
            }
        }
    }
    if let Some(env) = c.get_mut("env").and_then(Value::as_array_mut) {
        for e in env.iter_mut() {
            if let Some(f) = e
                .pointer_mut("/valueFrom/fieldRef")
                .and_then(Value::as_object_mut)
            {
                default_field(f, "apiVersion", json!("v1"));
            }
        }
    }
}

/// Quantities in `requests` and `limits` given as JSON numbers become strings.
fn canonicalize_resources(resources: Option<&mut Value>) {
    let Some(resources) = resources else { return };
    for kind in ["requests", "limits"] {
        if let Some(list) = resources.get_mut(kind).and_then(Value::as_object_mut) {
            canonicalize_json_numbers(list);
        }
    }
}

/// Whether an image is pulled `Always` by default: its tag is `latest`, or it has neither a
/// tag nor a digest (`parsers.ParseImageName` defaults the tag to `latest`).
fn pulls_always(image: &str) -> bool {
    let (name, digest) = match image.split_once('@') {
        Some((name, digest)) => (name, Some(digest)),
        None => (image, None),
    };
    let last = name.rsplit('/').next().unwrap_or(name);
    match last.split_once(':') {
        Some((_, tag)) => tag == "latest",
        None => digest.is_none(),
    }
}

pub(crate) fn push_invalid_names(
    errs: &mut Vec<FieldError>,
    path: &str,
    value: &str,
    msgs: Vec<String>,
) {
    for m in msgs {
        errs.push(FieldError::invalid(
            path,
            &Value::String(value.to_string()),
            &m,
        ));
    }
}

fn check_enum(
    errs: &mut Vec<FieldError>,
    v: Option<&Value>,
    path: &str,
    supported: &[&str],
    required: bool,
) {
    match v.and_then(Value::as_str) {
        None | Some("") if required => errs.push(FieldError::required(path, "")),
        None | Some("") => {}
        Some(s) if supported.contains(&s) => {}
        Some(_) => errs.push(FieldError::not_supported(
            path,
            v.unwrap_or(&Value::Null),
            supported,
        )),
    }
}

/// `ValidatePodSpec` (the checks this server implements) of the spec at `path`.
pub(crate) fn validate_pod_spec(spec: Option<&Value>, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = spec.unwrap_or(&Value::Null);

    let mut volume_names = BTreeSet::new();
    for (i, v) in get(spec, &["volumes"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let p = format!("{path}.volumes[{i}].name");
        let name = get_str(v, &["name"]).unwrap_or("");
        if name.is_empty() {
            errs.push(FieldError::required(p, ""));
        } else if !volume_names.insert(name) {
            errs.push(FieldError::duplicate(p, &json!(name)));
        } else {
            push_invalid_names(&mut errs, &p, name, meta::is_dns1123_label(name));
        }
    }

    let containers = get(spec, &["containers"]).and_then(Value::as_array);
    if containers.is_none_or(Vec::is_empty) {
        errs.push(FieldError::required(format!("{path}.containers"), ""));
    }
    let mut names = BTreeSet::new();
    for list in CONTAINER_LISTS {
        for (i, c) in get(spec, &[list])
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let p = format!("{path}.{list}[{i}]");
            validate_container(c, &p, &mut names, &mut errs);
            validate_volume_mounts(c, &p, &volume_names, &mut errs);
        }
    }

    check_enum(
        &mut errs,
        get(spec, &["restartPolicy"]),
        &format!("{path}.restartPolicy"),
        &["Always", "OnFailure", "Never"],
        true,
    );
    check_enum(
        &mut errs,
        get(spec, &["dnsPolicy"]),
        &format!("{path}.dnsPolicy"),
        &["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"],
        true,
    );
    if let Some(v) = get(spec, &["activeDeadlineSeconds"]).filter(|v| !v.is_null()) {
        if !v
            .as_i64()
            .is_some_and(|n| (1..=i64::from(u32::MAX)).contains(&n))
        {
            errs.push(FieldError::invalid(
                format!("{path}.activeDeadlineSeconds"),
                v,
                "must be between 1 and 4294967295, inclusive",
            ));
        }
    }
    errs.extend(meta::validate_labels(
        get(spec, &["nodeSelector"]),
        &format!("{path}.nodeSelector"),
    ));
    for (field, validator) in [
        (
            "serviceAccountName",
            name_is_dns_subdomain as meta::NameValidator,
        ),
        ("nodeName", name_is_dns_subdomain),
        ("hostname", name_is_dns_label),
        ("subdomain", name_is_dns_label),
    ] {
        if let Some(v) = get_str(spec, &[field]).filter(|v| !v.is_empty()) {
            push_invalid_names(
                &mut errs,
                &format!("{path}.{field}"),
                v,
                validator(v, false),
            );
        }
    }
    for (i, t) in get(spec, &["tolerations"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        validate_toleration(t, &format!("{path}.tolerations[{i}]"), &mut errs);
    }
    // TODO: volume sources, port names, probes, security contexts, affinity and topology
    // spread are not validated.
    errs
}

fn validate_container(
    c: &Value,
    path: &str,
    names: &mut BTreeSet<String>,
    errs: &mut Vec<FieldError>,
) {
    let name = get_str(c, &["name"]).unwrap_or("");
    if name.is_empty() {
        errs.push(FieldError::required(format!("{path}.name"), ""));
    } else if !names.insert(name.to_string()) {
        errs.push(FieldError::duplicate(format!("{path}.name"), &json!(name)));
    } else {
        push_invalid_names(
            errs,
            &format!("{path}.name"),
            name,
            meta::is_dns1123_label(name),
        );
    }
    if get_str(c, &["image"]).is_none_or(str::is_empty) {
        errs.push(FieldError::required(format!("{path}.image"), ""));
    }
    check_enum(
        errs,
        get(c, &["imagePullPolicy"]),
        &format!("{path}.imagePullPolicy"),
        &["Always", "IfNotPresent", "Never"],
        true,
    );
    check_enum(
        errs,
        get(c, &["terminationMessagePolicy"]),
        &format!("{path}.terminationMessagePolicy"),
        &["File", "FallbackToLogsOnError"],
        true,
    );
    for (i, p) in get(c, &["ports"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let pp = format!("{path}.ports[{i}]");
        match get(p, &["containerPort"]) {
            None | Some(Value::Null) => {
                errs.push(FieldError::required(format!("{pp}.containerPort"), ""))
            }
            Some(v) if !v.as_i64().is_some_and(|n| (1..=65535).contains(&n)) => {
                errs.push(FieldError::invalid(
                    format!("{pp}.containerPort"),
                    v,
                    "must be between 1 and 65535, inclusive",
                ))
            }
            Some(_) => {}
        }
        if let Some(v) = get(p, &["hostPort"]).filter(|v| v.as_i64() != Some(0) && !v.is_null()) {
            if !v.as_i64().is_some_and(|n| (1..=65535).contains(&n)) {
                errs.push(FieldError::invalid(
                    format!("{pp}.hostPort"),
                    v,
                    "must be between 1 and 65535, inclusive",
                ));
            }
        }
        check_enum(
            errs,
            get(p, &["protocol"]),
            &format!("{pp}.protocol"),
            &["SCTP", "TCP", "UDP"],
            true,
        );
    }
    validate_resources(get(c, &["resources"]), &format!("{path}.resources"), errs);
    validate_env(c, path, errs);
}

/// `ValidateEnv` with relaxed names (the `RelaxedEnvironmentVariableValidation` default):
/// a name is required and printable ASCII without `=`; `valueFrom` excludes `value` and has
/// exactly one source.
fn validate_env(c: &Value, path: &str, errs: &mut Vec<FieldError>) {
    for (i, e) in get(c, &["env"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let p = format!("{path}.env[{i}]");
        let name = get_str(e, &["name"]).unwrap_or("");
        if name.is_empty() {
            errs.push(FieldError::required(format!("{p}.name"), ""));
        } else if !name
            .bytes()
            .all(|b| (b' '..=b'~').contains(&b) && b != b'=')
        {
            errs.push(FieldError::invalid(
                format!("{p}.name"),
                &json!(name),
                "a valid environment variable name must consist only of printable ASCII characters other than '='",
            ));
        }
        let Some(from) = get(e, &["valueFrom"]).filter(|v| !v.is_null()) else {
            continue;
        };
        if get_str(e, &["value"]).is_some_and(|v| !v.is_empty()) {
            errs.push(FieldError::invalid(
                format!("{p}.valueFrom"),
                &json!(""),
                "may not be specified when `value` is not empty",
            ));
        }
        let sources = [
            "fieldRef",
            "resourceFieldRef",
            "configMapKeyRef",
            "secretKeyRef",
            "fileKeyRef",
        ]
        .iter()
        .filter(|k| get(from, &[k]).is_some_and(|v| !v.is_null()))
        .count();
        if sources == 0 {
            errs.push(FieldError::invalid(
                format!("{p}.valueFrom"),
                &json!(""),
                "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`",
            ));
        } else if sources > 1 {
            errs.push(FieldError::invalid(
                format!("{p}.valueFrom"),
                &json!(""),
                "may not have more than one field specified at a time",
            ));
        }
    }
}

/// `ValidateVolumeMounts`: a mount names a volume of the pod, has a path, and paths are
/// unique within a container.
fn validate_volume_mounts(
    c: &Value,
    path: &str,
    volumes: &BTreeSet<&str>,
    errs: &mut Vec<FieldError>,
) {
    let mut paths = BTreeSet::new();
    for (i, m) in get(c, &["volumeMounts"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let p = format!("{path}.volumeMounts[{i}]");
        let name = get_str(m, &["name"]).unwrap_or("");
        if name.is_empty() {
            errs.push(FieldError::required(format!("{p}.name"), ""));
        } else if !volumes.contains(name) {
            errs.push(FieldError::not_found(format!("{p}.name"), &json!(name)));
        }
        let mount_path = get_str(m, &["mountPath"]).unwrap_or("");
        if mount_path.is_empty() {
            errs.push(FieldError::required(format!("{p}.mountPath"), ""));
        } else if !paths.insert(mount_path) {
            errs.push(FieldError::invalid(
                format!("{p}.mountPath"),
                &json!(mount_path),
                "must be unique",
            ));
        }
    }
}

/// `ValidateContainerResourceRequirements`: quantities parse, are not negative, and requests
/// do not exceed limits.
fn validate_resources(res: Option<&Value>, path: &str, errs: &mut Vec<FieldError>) {
    let Some(res) = res else { return };
    let mut parsed: BTreeMap<(&str, &str), Quantity> = BTreeMap::new();
    for kind in ["limits", "requests"] {
        for (name, q) in get(res, &[kind])
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            let p = format!("{path}.{kind}[{name}]");
            match Quantity::from_json(q).ok() {
                None => errs.push(FieldError::invalid(
                    p,
                    q,
                    "must match the regex ^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$",
                )),
                Some(n) if n.sign() < 0 => errs.push(FieldError::invalid(
                    p,
                    q,
                    "must be greater than or equal to 0",
                )),
                Some(n) => {
                    parsed.insert((kind, name.as_str()), n);
                }
            }
        }
    }
    for ((kind, name), req) in &parsed {
        if *kind != "requests" {
            continue;
        }
        if let Some(limit) = parsed.get(&("limits", name)) {
            if req > limit {
                errs.push(FieldError::invalid(
                    format!("{path}.requests[{name}]"),
                    get(res, &["requests", name]).unwrap_or(&Value::Null),
                    &format!("must be less than or equal to {name} limit of {limit}"),
                ));
            }
        }
    }
}

/// `validateTolerations` for one toleration.
fn validate_toleration(t: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let key = get_str(t, &["key"]).unwrap_or("");
    if !key.is_empty() {
        for m in meta::is_qualified_name(key) {
            errs.push(FieldError::invalid(format!("{path}.key"), &json!(key), &m));
        }
    }
    let operator = get_str(t, &["operator"]).unwrap_or("");
    if key.is_empty() && operator != "Exists" {
        errs.push(FieldError::invalid(
            format!("{path}.operator"),
            &json!(operator),
            "operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
        ));
    }
    let has_seconds = get(t, &["tolerationSeconds"]).is_some_and(|v| !v.is_null());
    let effect = get_str(t, &["effect"]).unwrap_or("");
    if has_seconds && effect != "NoExecute" {
        errs.push(FieldError::invalid(
            format!("{path}.effect"),
            &json!(effect),
            "effect must be 'NoExecute' when `tolerationSeconds` is set",
        ));
    }
    match operator {
        "" | "Equal" => {
            let value = get_str(t, &["value"]).unwrap_or("");
            for m in meta::is_valid_label_value(value) {
                errs.push(FieldError::invalid(
                    format!("{path}.operator"),
                    &json!(value),
                    &m,
                ));
            }
        }
        "Exists" => {
            if get_str(t, &["value"]).is_some_and(|v| !v.is_empty()) {
                errs.push(FieldError::invalid(
                    format!("{path}.operator"),
                    get(t, &["value"]).unwrap_or(&Value::Null),
                    "value must be empty when `operator` is 'Exists'",
                ));
            }
        }
        other => errs.push(FieldError::not_supported(
            format!("{path}.operator"),
            &json!(other),
            &["Equal", "Exists"],
        )),
    }
    if !effect.is_empty() && !["NoSchedule", "PreferNoSchedule", "NoExecute"].contains(&effect) {
        errs.push(FieldError::not_supported(
            format!("{path}.effect"),
            &json!(effect),
            &["NoSchedule", "PreferNoSchedule", "NoExecute"],
        ));
    }
}

/// `ValidatePodTemplateSpec` of the template at `path` (`spec.template`): template labels
/// and annotations, and the pod spec.
pub(crate) fn validate_pod_template(template: Option<&Value>, path: &str) -> Vec<FieldError> {
    let Some(template) = template.filter(|t| !t.is_null()) else {
        return vec![FieldError::required(path, "")];
    };
    // kube names these paths without `metadata` (`spec.template.labels`).
    let mut errs = meta::validate_labels(
        get(template, &["metadata", "labels"]),
        &format!("{path}.labels"),
    );
    errs.extend(meta::validate_annotations(
        get(template, &["metadata", "annotations"]),
        &format!("{path}.annotations"),
    ));
    if get(template, &["spec", "ephemeralContainers"])
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty())
    {
        errs.push(FieldError::forbidden(
            format!("{path}.spec.ephemeralContainers"),
            "ephemeral containers not allowed in pod template",
        ));
    }
    errs.extend(validate_pod_spec(
        get(template, &["spec"]),
        &format!("{path}.spec"),
    ));
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_pull_always_only_for_latest_or_untagged_references() {
        assert!(pulls_always("nginx"));
        assert!(pulls_always("nginx:latest"));
        assert!(pulls_always("localhost:5000/nginx"));
        assert!(!pulls_always("nginx:1.25"));
        assert!(!pulls_always("nginx@sha256:abc"));
        assert!(pulls_always("nginx:latest@sha256:abc"));
    }

    #[test]
    fn a_defaulted_template_has_the_value_structs_go_writes() {
        let mut template = json!({
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "a", "image": "x:1"}]},
        });
        default_pod_template(template.as_object_mut().expect("an object"));
        assert_eq!(template["metadata"]["creationTimestamp"], Value::Null);
        assert!(template["metadata"]
            .as_object()
            .is_some_and(|m| m.contains_key("creationTimestamp")));
        assert_eq!(template["spec"]["containers"][0]["resources"], json!({}));
        assert_eq!(
            template["spec"]["dnsPolicy"], "ClusterFirst",
            "the pod spec defaults too"
        );
    }

    #[test]
    fn templates_are_checked_with_kube_paths() {
        let template = json!({
            "metadata": {"labels": {"bad key": "x"}},
            "spec": {"containers": [{"name": "a", "image": "x", "imagePullPolicy": "Always",
                "terminationMessagePolicy": "File"}], "restartPolicy": "Always", "dnsPolicy": "ClusterFirst",
                "ephemeralContainers": [{"name": "debug", "image": "busybox"}]}
        });
        let fields: Vec<String> = validate_pod_template(Some(&template), "spec.template")
            .iter()
            .map(|e| e.field.clone())
            .collect();
        assert_eq!(
            fields,
            [
                "spec.template.labels",
                "spec.template.spec.ephemeralContainers"
            ]
        );
        assert_eq!(
            validate_pod_template(None, "spec.template")[0].message_with_field(),
            "spec.template: Required value"
        );
    }
}
