//! `LimitRanger`: the LimitRanges of a namespace default the requests and limits of new pods'
//! containers and bound what pods and claims may ask for.
//!
//! Mirrors `plugin/pkg/admission/limitranger/admission.go`: the mutating phase fills each
//! container's missing requests (`defaultRequest`) and limits (`default`) from the `Container`
//! items and records what it set in the `kubernetes.io/limit-ranger` annotation; the validating
//! phase enforces `min`, `max` and `maxLimitRequestRatio` of `Container` and `Pod` items on
//! pods and `min`/`max` of `PersistentVolumeClaim` items on claims' requests, with kube's
//! messages. Pod updates are not looked at (containers cannot change), nor objects being
//! deleted.

use std::collections::BTreeMap;

use async_trait::async_trait;
use rkcm_apimachinery::quantity::Quantity;
use serde_json::{json, Map, Value};

use super::plugins::LIMIT_RANGER;
use rkcm_server::admission::attributes::{forbidden, Attributes, Operation};
use rkcm_server::admission::plugin::Plugin;
use rkcm_server::error::ApiResult;
use rkcm_server::rest;
use rkcm_storage::store::Store;

/// The annotation listing what the plugin set on a pod.
pub const LIMIT_RANGER_ANNOTATION: &str = "kubernetes.io/limit-ranger";

/// Quantities larger than this lose precision in milli-units (`resource.MaxMilliValue`).
const MAX_MILLI_VALUE: i64 = i64::MAX / 1000;

type ResourceList = BTreeMap<String, Quantity>;

/// The plugin.
pub struct LimitRanger {
    store: Store,
}

impl LimitRanger {
    /// The plugin, reading LimitRanges from `store`.
    pub fn new(store: Store) -> Self {
        Self { store }
    }

    fn limit_ranges(&self, namespace: &str) -> Vec<Value> {
        let info = rkcm_apimachinery::catalog::by_kind("v1", "LimitRange")
            .expect("limit ranges are in the catalog");
        let (stored, _, _) =
            self.store
                .cache()
                .list(&rest::prefix(info, Some(namespace)), None, 0, &|_| true);
        stored.iter().map(|c| c.value()).collect()
    }

    /// The LimitRanges that apply to the request, or none when the plugin leaves it alone
    /// (`SupportsAttributes`, objects being deleted).
    fn applicable(&self, attrs: &Attributes) -> Option<Vec<Value>> {
        let pod = attrs.is_core_resource("pods");
        let claim = attrs.is_core_resource("persistentvolumeclaims");
        if !(pod || claim) || (pod && attrs.operation == Operation::Update) {
            return None;
        }
        if attrs.old_object().is_some_and(|o| {
            o.pointer("/metadata/deletionTimestamp")
                .is_some_and(|t| !t.is_null())
        }) {
            return None;
        }
        attrs.object()?;
        Some(self.limit_ranges(&attrs.namespace))
    }
}

fn resource_list(v: Option<&Value>) -> ResourceList {
    v.and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, q)| Quantity::from_json(q).ok().map(|q| (k.clone(), q)))
        .collect()
}

fn items<'a>(range: &'a Value, kind: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
    range
        .pointer("/spec/limits")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(move |i| i.get("type").and_then(Value::as_str) == Some(kind))
}

/// The default requests and limits of containers (`defaultContainerResourceRequirements`).
fn container_defaults(range: &Value) -> (Map<String, Value>, Map<String, Value>) {
    let mut requests = Map::new();
    let mut limits = Map::new();
    for item in items(range, "Container") {
        for (field, out) in [("defaultRequest", &mut requests), ("default", &mut limits)] {
            for (k, v) in item
                .get(field)
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
            {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    (requests, limits)
}

/// `PodMutateLimitFunc`: fills the missing requests and limits of every container and init
/// container from `range`, and says what it set in the `kubernetes.io/limit-ranger` annotation.
pub fn mutate_pod(range: &Value, pod: &mut Value) {
    let (requests, limits) = container_defaults(range);
    let mut notes: Vec<String> = Vec::new();
    for (list, what) in [
        ("containers", "container"),
        ("initContainers", "init container"),
    ] {
        let Some(containers) = pod
            .pointer_mut(&format!("/spec/{list}"))
            .and_then(Value::as_array_mut)
        else {
            continue;
        };
        for c in containers.iter_mut() {
            let name = c
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let Some(c) = c.as_object_mut() else { continue };
            let resources = c.entry("resources").or_insert_with(|| json!({}));
            if !resources.is_object() {
                *resources = json!({});
            }
            let Some(resources) = resources.as_object_mut() else {
                continue;
            };
            let mut set = |field: &str, defaults: &Map<String, Value>| -> Vec<String> {
                let mut names = Vec::new();
                if defaults.is_empty() {
                    return names;
                }
                let list = resources.entry(field).or_insert_with(|| json!({}));
                if !list.is_object() {
                    *list = json!({});
                }
                if let Some(list) = list.as_object_mut() {
                    for (k, v) in defaults {
                        if !list.contains_key(k) {
                            list.insert(k.clone(), v.clone());
                            names.push(k.clone());
                        }
                    }
                }
                names.sort();
                names
            };
            let set_requests = set("requests", &requests);
            let set_limits = set("limits", &limits);
            if !set_requests.is_empty() {
                notes.push(format!(
                    "{} request for {what} {name}",
                    set_requests.join(", ")
                ));
            }
            if !set_limits.is_empty() {
                notes.push(format!("{} limit for {what} {name}", set_limits.join(", ")));
            }
        }
    }
    if notes.is_empty() {
        return;
    }
    if let Some(meta) = pod.get_mut("metadata").and_then(Value::as_object_mut) {
        let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
        if !annotations.is_object() {
            *annotations = json!({});
        }
        if let Some(a) = annotations.as_object_mut() {
            a.insert(
                LIMIT_RANGER_ANNOTATION.into(),
                json!(format!("LimitRanger plugin set: {}", notes.join("; "))),
            );
        }
    }
}

/// Request, limit and bound at a common precision (`requestLimitEnforcedValues`).
fn common_precision(
    req: Option<&Quantity>,
    lim: Option<&Quantity>,
    enforced: &Quantity,
) -> (i64, i64, i64) {
    let zero = Quantity::new(0, rkcm_apimachinery::quantity::Format::DecimalSI);
    let (req, lim) = (req.unwrap_or(&zero), lim.unwrap_or(&zero));
    let (r, l, e) = (req.value(), lim.value(), enforced.value());
    if r <= MAX_MILLI_VALUE && l <= MAX_MILLI_VALUE && e <= MAX_MILLI_VALUE {
        (req.milli_value(), lim.milli_value(), enforced.milli_value())
    } else {
        (r, l, e)
    }
}

/// `minConstraint`.
fn min_constraint(
    kind: &str,
    resource: &str,
    enforced: &Quantity,
    requests: &ResourceList,
    limits: &ResourceList,
) -> Result<(), String> {
    let (req, lim) = (requests.get(resource), limits.get(resource));
    let (r, l, e) = common_precision(req, lim, enforced);
    let Some(req) = req else {
        return Err(format!(
            "minimum {resource} usage per {kind} is {enforced}.  No request is specified"
        ));
    };
    if r < e {
        return Err(format!(
            "minimum {resource} usage per {kind} is {enforced}, but request is {req}"
        ));
    }
    if let Some(lim) = lim.filter(|_| l < e) {
        return Err(format!(
            "minimum {resource} usage per {kind} is {enforced}, but limit is {lim}"
        ));
    }
    Ok(())
}

/// `maxConstraint`.
fn max_constraint(
    kind: &str,
    resource: &str,
    enforced: &Quantity,
    requests: &ResourceList,
    limits: &ResourceList,
) -> Result<(), String> {
    let (req, lim) = (requests.get(resource), limits.get(resource));
    let (r, l, e) = common_precision(req, lim, enforced);
    let Some(lim) = lim else {
        return Err(format!(
            "maximum {resource} usage per {kind} is {enforced}.  No limit is specified"
        ));
    };
    if l > e {
        return Err(format!(
            "maximum {resource} usage per {kind} is {enforced}, but limit is {lim}"
        ));
    }
    if let Some(req) = req.filter(|_| r > e) {
        return Err(format!(
            "maximum {resource} usage per {kind} is {enforced}, but request is {req}"
        ));
    }
    Ok(())
}

/// `maxRequestConstraint`: the max of kinds whose limits are not user input (claims).
fn max_request_constraint(
    kind: &str,
    resource: &str,
    enforced: &Quantity,
    requests: &ResourceList,
) -> Result<(), String> {
    let req = requests.get(resource);
    let (r, _, e) = common_precision(req, None, enforced);
    let Some(req) = req else {
        return Err(format!(
            "maximum {resource} usage per {kind} is {enforced}.  No request is specified"
        ));
    };
    if r > e {
        return Err(format!(
            "maximum {resource} usage per {kind} is {enforced}, but request is {req}"
        ));
    }
    Ok(())
}

/// `limitRequestRatioConstraint`.
fn ratio_constraint(
    kind: &str,
    resource: &str,
    enforced: &Quantity,
    requests: &ResourceList,
    limits: &ResourceList,
) -> Result<(), String> {
    let (req, lim) = (requests.get(resource), limits.get(resource));
    let (r, l, _) = common_precision(req, lim, enforced);
    if req.is_none() || r == 0 {
        return Err(format!("{resource} max limit to request ratio per {kind} is {enforced}, but no request is specified or request is 0"));
    }
    if lim.is_none() || l == 0 {
        return Err(format!("{resource} max limit to request ratio per {kind} is {enforced}, but no limit is specified or limit is 0"));
    }
    let displayed = l as f64 / r as f64;
    let (observed, max) = if enforced.value() <= MAX_MILLI_VALUE {
        (displayed * 1000.0, enforced.milli_value() as f64)
    } else {
        (displayed, enforced.value() as f64)
    };
    if observed > max {
        return Err(format!("{resource} max limit to request ratio per {kind} is {enforced}, but provided ratio is {displayed:.6}"));
    }
    Ok(())
}

/// The min, max and ratio checks of one item against requests and limits.
fn check_item(
    item: &Value,
    kind: &str,
    requests: &ResourceList,
    limits: &ResourceList,
    errs: &mut Vec<String>,
) {
    for (resource, q) in resource_list(item.get("min")) {
        errs.extend(min_constraint(kind, &resource, &q, requests, limits).err());
    }
    for (resource, q) in resource_list(item.get("max")) {
        errs.extend(max_constraint(kind, &resource, &q, requests, limits).err());
    }
    for (resource, q) in resource_list(item.get("maxLimitRequestRatio")) {
        errs.extend(ratio_constraint(kind, &resource, &q, requests, limits).err());
    }
}

fn add(into: &mut ResourceList, from: &ResourceList) {
    for (k, v) in from {
        let sum = match into.get(k) {
            Some(have) => have.checked_add(v).unwrap_or_else(|| have.clone()),
            None => v.clone(),
        };
        into.insert(k.clone(), sum);
    }
}

fn max_into(into: &mut ResourceList, from: &ResourceList) {
    for (k, v) in from {
        if into.get(k).is_none_or(|have| v > have) {
            into.insert(k.clone(), v.clone());
        }
    }
}

/// The pod's effective requests or limits (`field`), as `resourcehelper.PodRequests` and
/// `PodLimits` add them: containers and sidecars summed, each init container on top of the
/// sidecars started before it, the larger of the two, plus the pod overhead.
fn pod_total(pod: &Value, field: &str) -> ResourceList {
    let of = |c: &Value| resource_list(c.pointer(&format!("/resources/{field}")));
    let list = |name: &str| {
        pod.pointer(&format!("/spec/{name}"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let mut total = ResourceList::new();
    for c in list("containers") {
        add(&mut total, &of(&c));
    }
    let mut sidecars = ResourceList::new();
    let mut init = ResourceList::new();
    for c in list("initContainers") {
        let reqs = of(&c);
        let step = if c.get("restartPolicy").and_then(Value::as_str) == Some("Always") {
            add(&mut total, &reqs);
            add(&mut sidecars, &reqs);
            sidecars.clone()
        } else {
            let mut step = reqs.clone();
            add(&mut step, &sidecars);
            step
        };
        max_into(&mut init, &step);
    }
    max_into(&mut total, &init);
    add(&mut total, &resource_list(pod.pointer("/spec/overhead")));
    total
}

/// `PodValidateLimitFunc`: the errors of `pod` against `range`.
pub fn validate_pod(range: &Value, pod: &Value) -> Vec<String> {
    let mut errs = Vec::new();
    for item in range
        .pointer("/spec/limits")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        match item.get("type").and_then(Value::as_str) {
            Some("Container") => {
                for list in ["containers", "initContainers"] {
                    let containers = pod
                        .pointer(&format!("/spec/{list}"))
                        .and_then(Value::as_array);
                    for c in containers.into_iter().flatten() {
                        let requests = resource_list(c.pointer("/resources/requests"));
                        let limits = resource_list(c.pointer("/resources/limits"));
                        check_item(item, "Container", &requests, &limits, &mut errs);
                    }
                }
            }
            Some("Pod") => {
                let requests = pod_total(pod, "requests");
                let limits = pod_total(pod, "limits");
                check_item(item, "Pod", &requests, &limits, &mut errs);
            }
            _ => {}
        }
    }
    errs
}

/// `PersistentVolumeClaimValidateLimitFunc`: a claim's requests against the `min` and `max` of
/// the `PersistentVolumeClaim` items.
pub fn validate_claim(range: &Value, claim: &Value) -> Vec<String> {
    let requests = resource_list(claim.pointer("/spec/resources/requests"));
    let mut errs = Vec::new();
    for item in items(range, "PersistentVolumeClaim") {
        for (resource, q) in resource_list(item.get("min")) {
            errs.extend(
                min_constraint(
                    "PersistentVolumeClaim",
                    &resource,
                    &q,
                    &requests,
                    &ResourceList::new(),
                )
                .err(),
            );
        }
        for (resource, q) in resource_list(item.get("max")) {
            errs.extend(
                max_request_constraint("PersistentVolumeClaim", &resource, &q, &requests).err(),
            );
        }
    }
    errs
}

/// An aggregate of errors as Go's `utilerrors.NewAggregate` prints it.
fn aggregate(errs: &[String]) -> String {
    match errs {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

#[async_trait]
impl Plugin for LimitRanger {
    fn name(&self) -> &'static str {
        LIMIT_RANGER
    }

    fn handles(&self, operation: Operation) -> bool {
        matches!(operation, Operation::Create | Operation::Update)
    }

    async fn admit(&self, attrs: &mut Attributes) -> ApiResult<()> {
        let Some(ranges) = self.applicable(attrs) else {
            return Ok(());
        };
        if !attrs.is_core_resource("pods") {
            return Ok(());
        }
        if let Some(pod) = attrs.object_mut() {
            for range in &ranges {
                mutate_pod(range, pod);
            }
        }
        Ok(())
    }

    async fn validate(&self, attrs: &Attributes) -> ApiResult<()> {
        let Some(ranges) = self.applicable(attrs) else {
            return Ok(());
        };
        let Some(obj) = attrs.object() else {
            return Ok(());
        };
        let pod = attrs.is_core_resource("pods");
        for range in &ranges {
            let errs = if pod {
                validate_pod(range, obj)
            } else {
                validate_claim(range, obj)
            };
            if !errs.is_empty() {
                return Err(forbidden(attrs, &aggregate(&errs)));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::testing::{attributes, store_with};

    fn range(items: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "lr", "namespace": "ns"}, "spec": {"limits": items}})
    }

    fn container(name: &str, requests: Value, limits: Value) -> Value {
        json!({"name": name, "image": "i", "resources": {"requests": requests, "limits": limits}})
    }

    fn pod(containers: Value) -> Value {
        json!({"metadata": {"name": "p", "namespace": "ns"}, "spec": {"containers": containers}})
    }

    #[test]
    fn defaults_fill_only_what_containers_lack_and_are_annotated() {
        let lr = range(json!([{"type": "Container",
            "default": {"cpu": "500m", "memory": "1Gi"}, "defaultRequest": {"cpu": "100m", "memory": "256Mi"}}]));
        let mut p = pod(json!([
            {"name": "bare", "image": "i"},
            container("partial", json!({"cpu": "200m"}), json!({})),
        ]));
        p["spec"]["initContainers"] = json!([{"name": "init", "image": "i"}]);
        mutate_pod(&lr, &mut p);
        let c = &p["spec"]["containers"];
        assert_eq!(
            c[0]["resources"],
            json!({"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"cpu": "500m", "memory": "1Gi"}})
        );
        assert_eq!(
            c[1]["resources"]["requests"],
            json!({"cpu": "200m", "memory": "256Mi"})
        );
        assert_eq!(
            p["spec"]["initContainers"][0]["resources"]["limits"]["cpu"],
            "500m"
        );
        assert_eq!(
            p["metadata"]["annotations"][LIMIT_RANGER_ANNOTATION],
            "LimitRanger plugin set: cpu, memory request for container bare; cpu, memory limit for container bare; \
memory request for container partial; cpu, memory limit for container partial; \
cpu, memory request for init container init; cpu, memory limit for init container init"
        );
        let mut untouched = pod(json!([{"name": "c", "image": "i"}]));
        mutate_pod(
            &range(json!([{"type": "Pod", "max": {"cpu": "1"}}])),
            &mut untouched,
        );
        assert!(untouched["metadata"].get("annotations").is_none());
    }

    #[test]
    fn container_min_max_and_ratio_as_kubes_pod_limit_func_tests() {
        let lr = range(
            json!([{"type": "Container", "min": {"cpu": "100m"}, "max": {"cpu": "2", "memory": "1Gi"},
            "maxLimitRequestRatio": {"cpu": "4"}}]),
        );
        let ok = pod(json!([container(
            "c",
            json!({"cpu": "500m"}),
            json!({"cpu": "1", "memory": "512Mi"})
        )]));
        assert!(
            validate_pod(&lr, &ok).is_empty(),
            "{:?}",
            validate_pod(&lr, &ok)
        );
        let cases = [
            (container("c", json!({"cpu": "50m"}), json!({"cpu": "100m", "memory": "1Gi"})),
             vec!["minimum cpu usage per Container is 100m, but request is 50m"]),
            (container("c", json!({}), json!({"cpu": "1", "memory": "1Gi"})),
             vec!["minimum cpu usage per Container is 100m.  No request is specified",
                  "cpu max limit to request ratio per Container is 4, but no request is specified or request is 0"]),
            (container("c", json!({"cpu": "500m"}), json!({"cpu": "3", "memory": "1Gi"})),
             vec!["maximum cpu usage per Container is 2, but limit is 3", "cpu max limit to request ratio per Container is 4, but provided ratio is 6.000000"]),
            (container("c", json!({"cpu": "500m"}), json!({"cpu": "1"})),
             vec!["maximum memory usage per Container is 1Gi.  No limit is specified"]),
            (container("c", json!({"cpu": "500m", "memory": "2Gi"}), json!({"cpu": "1", "memory": "1Gi"})),
             vec!["maximum memory usage per Container is 1Gi, but request is 2Gi"]),
        ];
        for (c, want) in cases {
            assert_eq!(validate_pod(&lr, &pod(json!([c]))), want);
        }
    }

    #[test]
    fn pod_items_bound_the_sum_of_containers_and_the_largest_init_container() {
        let lr = range(json!([{"type": "Pod", "max": {"cpu": "2"}, "min": {"cpu": "200m"}}]));
        let two = pod(json!([
            container("a", json!({"cpu": "1"}), json!({"cpu": "1"})),
            container("b", json!({"cpu": "1"}), json!({"cpu": "1"})),
        ]));
        assert!(validate_pod(&lr, &two).is_empty());
        let three = pod(json!([
            container("a", json!({"cpu": "1500m"}), json!({"cpu": "1500m"})),
            container("b", json!({"cpu": "1"}), json!({"cpu": "1"})),
        ]));
        assert_eq!(
            validate_pod(&lr, &three),
            ["maximum cpu usage per Pod is 2, but limit is 2500m"]
        );
        let mut big_init = two.clone();
        big_init["spec"]["initContainers"] =
            json!([container("i", json!({"cpu": "3"}), json!({"cpu": "3"}))]);
        assert_eq!(
            validate_pod(&lr, &big_init),
            ["maximum cpu usage per Pod is 2, but limit is 3"]
        );
        let small = pod(json!([container(
            "a",
            json!({"cpu": "100m"}),
            json!({"cpu": "100m"})
        )]));
        assert_eq!(
            validate_pod(&lr, &small),
            ["minimum cpu usage per Pod is 200m, but request is 100m"]
        );
    }

    #[test]
    fn claims_are_bounded_by_their_requests() {
        let lr = range(
            json!([{"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}, "max": {"storage": "10Gi"}}]),
        );
        let claim = |storage: Value| json!({"metadata": {"name": "c"}, "spec": {"resources": {"requests": storage}}});
        assert!(validate_claim(&lr, &claim(json!({"storage": "5Gi"}))).is_empty());
        assert_eq!(
            validate_claim(&lr, &claim(json!({"storage": "500Mi"}))),
            ["minimum storage usage per PersistentVolumeClaim is 1Gi, but request is 500Mi"]
        );
        assert_eq!(
            validate_claim(&lr, &claim(json!({"storage": "20Gi"}))),
            ["maximum storage usage per PersistentVolumeClaim is 10Gi, but request is 20Gi"]
        );
        assert_eq!(
            validate_claim(&lr, &claim(json!({}))),
            [
                "minimum storage usage per PersistentVolumeClaim is 1Gi.  No request is specified",
                "maximum storage usage per PersistentVolumeClaim is 10Gi.  No request is specified"
            ]
        );
    }

    #[tokio::test]
    async fn the_plugin_defaults_then_refuses_with_kubes_forbidden() {
        let lr = range(
            json!([{"type": "Container", "defaultRequest": {"cpu": "50m"}, "default": {"cpu": "100m"}, "min": {"cpu": "100m"}}]),
        );
        let plugin = LimitRanger::new(store_with(&[lr]).await);
        let mut attrs = attributes(
            Operation::Create,
            "Pod",
            "ns",
            Some(pod(json!([{"name": "c", "image": "i"}]))),
            None,
        );
        plugin.admit(&mut attrs).await.expect("defaults applied");
        assert_eq!(
            attrs.object().expect("pod")["spec"]["containers"][0]["resources"]["requests"]["cpu"],
            "50m"
        );
        let err = plugin.validate(&attrs).await.expect_err("below min");
        assert_eq!(err.code, 403);
        assert_eq!(
            err.message,
            "pods \"p\" is forbidden: minimum cpu usage per Container is 100m, but request is 50m"
        );
        let mut other_ns = attributes(
            Operation::Create,
            "Pod",
            "elsewhere",
            Some(pod(json!([{"name": "c", "image": "i"}]))),
            None,
        );
        plugin.admit(&mut other_ns).await.expect("no ranges there");
        plugin.validate(&other_ns).await.expect("no ranges there");
        let mut update = attributes(
            Operation::Update,
            "Pod",
            "ns",
            Some(pod(json!([{"name": "c", "image": "i"}]))),
            None,
        );
        plugin
            .validate(&update)
            .await
            .expect("pod updates are not checked");
        plugin
            .admit(&mut update)
            .await
            .expect("pod updates are not mutated");
    }
}
