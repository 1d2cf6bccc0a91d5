//! Events of core/v1 and events.k8s.io/v1: the legacy and strict validation of
//! `ValidateEventCreate` / `ValidateEventUpdate`, and the event field selectors.
//!
//! Mirrors `pkg/registry/core/event/strategy.go` and `pkg/apis/core/validation/events.go`.
//! Both APIs store the same kind of object in kube; here each keeps its own JSON shape and
//! the validation reads the fields under either name.

use rkcm_apimachinery::catalog::ResourceInfo;
use serde_json::{json, Value};

use super::generic::GenericStrategy;
use super::meta::{self, is_dns1123_subdomain, is_qualified_name, validate_immutable};
use super::object::{get, get_str};
use super::{FieldError, GracefulDelete, Strategy};

const REPORTING_INSTANCE_LENGTH_LIMIT: usize = 128;
const ACTION_LENGTH_LIMIT: usize = 128;
const REASON_LENGTH_LIMIT: usize = 128;
const NOTE_LENGTH_LIMIT: usize = 1024;

/// The strategy of events (core/v1 when `strict` is false, events.k8s.io/v1 when true).
pub(crate) struct EventStrategy {
    base: GenericStrategy,
    /// events.k8s.io/v1: new field names and strict validation.
    strict: bool,
}

impl EventStrategy {
    /// The strategy of `info` (core/v1 or events.k8s.io/v1 events).
    pub(crate) fn new(info: &'static ResourceInfo) -> Self {
        EventStrategy {
            // The generic store validates core event names only as path segments; the strict
            // events.k8s.io validation wants DNS subdomains.
            base: GenericStrategy::new(info).with_name_validator(
                if info.group == "events.k8s.io" {
                    meta::name_is_dns_subdomain
                } else {
                    meta::validate_path_segment_name
                },
            ),
            strict: info.group == "events.k8s.io",
        }
    }

    /// The JSON name of an event field in this API (`involvedObject` vs `regarding`, ...).
    fn name<'a>(&self, core: &'a str) -> &'a str {
        if !self.strict {
            return core;
        }
        match core {
            "involvedObject" => "regarding",
            "message" => "note",
            "source" => "deprecatedSource",
            "reportingComponent" => "reportingController",
            "firstTimestamp" => "deprecatedFirstTimestamp",
            "lastTimestamp" => "deprecatedLastTimestamp",
            "count" => "deprecatedCount",
            other => other,
        }
    }

    fn str_field<'a>(&self, obj: &'a Value, core: &str) -> &'a str {
        get_str(obj, &[self.name(core)]).unwrap_or("")
    }

    /// `legacyValidateEvent`.
    fn legacy_validate(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let namespace = get_str(obj, &["metadata", "namespace"]).unwrap_or("");
        let involved = self.name("involvedObject");
        let involved_ns = get_str(obj, &[involved, "namespace"]).unwrap_or("");
        // Errors name the fields of kube's internal event type, whichever API was used.
        let involved_ns_path = "involvedObject.namespace";
        let has_event_time = get(obj, &["eventTime"]).is_some_and(|v| !v.is_null() && v != "");
        if !has_event_time {
            let matches = if involved_ns.is_empty() {
                namespace.is_empty() || namespace == "default"
            } else {
                namespace == involved_ns
            };
            if !matches {
                errs.push(FieldError::invalid(
                    involved_ns_path,
                    &json!(involved_ns),
                    "does not match event.namespace",
                ));
            }
        } else {
            if involved_ns.is_empty() && namespace != "default" && namespace != "kube-system" {
                errs.push(FieldError::invalid(
                    involved_ns_path,
                    &json!(involved_ns),
                    "does not match event.namespace",
                ));
            }
            let rc_name = "reportingController";
            let rc = self.str_field(obj, "reportingComponent");
            if rc.is_empty() {
                errs.push(FieldError::required(rc_name, ""));
            }
            for m in is_qualified_name(rc) {
                errs.push(FieldError::invalid(rc_name, &json!(rc), &m));
            }
            for (field, limit) in [
                ("reportingInstance", REPORTING_INSTANCE_LENGTH_LIMIT),
                ("action", ACTION_LENGTH_LIMIT),
                ("reason", REASON_LENGTH_LIMIT),
            ] {
                let v = self.str_field(obj, field);
                if v.is_empty() {
                    errs.push(FieldError::required(field, ""));
                }
                if v.len() > limit {
                    errs.push(FieldError::invalid(
                        field,
                        &json!(""),
                        &format!("can have at most {limit} characters"),
                    ));
                }
            }
            let message_name = "message";
            if self.str_field(obj, "message").len() > NOTE_LENGTH_LIMIT {
                errs.push(FieldError::invalid(
                    message_name,
                    &json!(""),
                    &format!("can have at most {NOTE_LENGTH_LIMIT} characters"),
                ));
            }
        }
        for m in is_dns1123_subdomain(namespace) {
            errs.push(FieldError::invalid("namespace", &json!(namespace), &m));
        }
        errs
    }

    /// The extra checks of `ValidateEventCreate` for events.k8s.io/v1.
    fn strict_validate(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = Vec::new();
        if get(obj, &["eventTime"]).is_none_or(|v| v.is_null() || v == "") {
            errs.push(FieldError::required("eventTime", ""));
        }
        let ty = get_str(obj, &["type"]).unwrap_or("");
        if ty != "Normal" && ty != "Warning" {
            errs.push(FieldError::invalid(
                "type",
                &json!(""),
                &format!("has invalid value: {ty}"),
            ));
        }
        for core in ["firstTimestamp", "lastTimestamp", "count", "source"] {
            let set = get(obj, &[self.name(core)]).is_some_and(|v| match v {
                Value::Null => false,
                Value::String(s) => !s.is_empty(),
                Value::Number(n) => n.as_i64() != Some(0),
                Value::Object(m) => m
                    .values()
                    .any(|v| v.as_str().is_some_and(|s| !s.is_empty())),
                _ => true,
            });
            if set {
                errs.push(FieldError::invalid(core, &json!(""), "needs to be unset"));
            }
        }
        errs.extend(self.validate_series(obj));
        errs
    }

    /// `validateV1EventSeries`.
    fn validate_series(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let Some(series) = get(obj, &["series"]).filter(|v| !v.is_null()) else {
            return errs;
        };
        if get(series, &["count"]).and_then(Value::as_i64).unwrap_or(0) < 2 {
            errs.push(FieldError::invalid(
                "series.count",
                &json!(""),
                "should be at least 2",
            ));
        }
        if get(series, &["lastObservedTime"]).is_none_or(|v| v.is_null() || v == "") {
            errs.push(FieldError::required("series.lastObservedTime", ""));
        }
        errs
    }
}

impl Strategy for EventStrategy {
    fn resource(&self) -> &'static ResourceInfo {
        self.base.resource()
    }

    fn default(&self, _obj: &mut Value) {}

    fn prepare_for_create(&self, obj: &mut Value) {
        self.base.prepare_for_create(obj);
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        self.base.prepare_for_update(new, old);
    }

    fn prepare_for_status_update(&self, new: &mut Value, old: &Value) {
        // kube defaults every decoded body, status updates included.
        self.default(new);
        self.base.prepare_for_status_update(new, old);
    }

    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = self.legacy_validate(obj);
        if self.strict {
            errs.extend(self.strict_validate(obj));
        }
        errs.extend(self.base.validate_create(obj));
        errs
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = self.legacy_validate(new);
        errs.extend(self.base.validate_update(new, old));
        if self.strict {
            for core in [
                "involvedObject",
                "reason",
                "message",
                "source",
                "firstTimestamp",
                "lastTimestamp",
                "count",
                "type",
                "eventTime",
                "action",
                "related",
                "reportingComponent",
                "reportingInstance",
            ] {
                let field = self.name(core);
                let path = if core == "reportingComponent" {
                    "reportingController"
                } else {
                    core
                };
                errs.extend(validate_immutable(
                    get(new, &[field]),
                    get(old, &[field]),
                    path,
                ));
            }
            if !super::object::semantically_equal(get(new, &["series"]), get(old, &["series"])) {
                errs.extend(self.validate_series(new));
            }
        }
        errs
    }

    fn field_value(&self, obj: &Value, field: &str) -> Option<String> {
        // event ToSelectableFields, under the core/v1 names (and, for events.k8s.io, its own).
        let involved = self.name("involvedObject");
        let (core_field, rest) = match field.split_once('.') {
            Some(("involvedObject" | "regarding", rest)) => ("involvedObject", Some(rest)),
            _ => (field, None),
        };
        if let Some(rest) = rest {
            return match rest {
                "kind" | "namespace" | "name" | "uid" | "apiVersion" | "resourceVersion"
                | "fieldPath" => Some(get_str(obj, &[involved, rest]).unwrap_or("").to_string()),
                _ => None,
            };
        }
        match core_field {
            "reason" | "type" => Some(get_str(obj, &[core_field]).unwrap_or("").to_string()),
            "reportingComponent" | "reportingController" => {
                Some(self.str_field(obj, "reportingComponent").to_string())
            }
            "source" | "deprecatedSource" => {
                let component = get_str(obj, &[self.name("source"), "component"]).unwrap_or("");
                let source = if component.is_empty() {
                    self.str_field(obj, "reportingComponent")
                } else {
                    component
                };
                Some(source.to_string())
            }
            _ => self.base.field_value(obj, field),
        }
    }

    fn graceful_delete(&self, obj: &Value, requested_grace: Option<i64>) -> GracefulDelete {
        self.base.graceful_delete(obj, requested_grace)
    }

    fn scale_replicas(&self, obj: &Value) -> Option<(i32, i32, String)> {
        self.base.scale_replicas(obj)
    }

    fn set_scale_replicas(&self, obj: &mut Value, replicas: i32) -> Result<(), FieldError> {
        self.base.set_scale_replicas(obj, replicas)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rkcm_apimachinery::catalog;

    fn core() -> EventStrategy {
        EventStrategy::new(catalog::by_kind("v1", "Event").expect("served"))
    }

    fn new_api() -> EventStrategy {
        EventStrategy::new(catalog::by_kind("events.k8s.io/v1", "Event").expect("served"))
    }

    fn recorder_event() -> Value {
        json!({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": "web.17a2b3c4d5e6f7a8", "namespace": "default"},
            "involvedObject": {"kind": "ReplicaSet", "namespace": "default", "name": "web", "uid": "u1", "apiVersion": "apps/v1"},
            "reason": "SuccessfulCreate", "message": "Created pod: web-abcde",
            "source": {"component": "replicaset-controller"},
            "firstTimestamp": "2024-01-01T00:00:00Z", "lastTimestamp": "2024-01-01T00:00:00Z",
            "count": 1, "type": "Normal"
        })
    }

    #[test]
    fn recorder_events_are_valid_and_their_count_may_change() {
        let s = core();
        let old = recorder_event();
        assert!(
            s.validate_create(&old).is_empty(),
            "{:?}",
            s.validate_create(&old)
        );
        let mut new = old.clone();
        new["count"] = json!(2);
        new["lastTimestamp"] = json!("2024-01-01T00:01:00Z");
        assert!(s.validate_update(&new, &old).is_empty());
    }

    #[test]
    fn the_involved_namespace_must_match_the_event_namespace() {
        let mut e = recorder_event();
        e["involvedObject"]["namespace"] = json!("other");
        let errs = core().validate_create(&e);
        assert_eq!(
            errs[0].message_with_field(),
            "involvedObject.namespace: Invalid value: \"other\": does not match event.namespace"
        );
    }

    #[test]
    fn field_selectors_read_the_involved_object_reason_source_and_type() {
        let s = core();
        let e = recorder_event();
        assert_eq!(
            s.field_value(&e, "involvedObject.name").as_deref(),
            Some("web")
        );
        assert_eq!(
            s.field_value(&e, "involvedObject.uid").as_deref(),
            Some("u1")
        );
        assert_eq!(
            s.field_value(&e, "reason").as_deref(),
            Some("SuccessfulCreate")
        );
        assert_eq!(
            s.field_value(&e, "source").as_deref(),
            Some("replicaset-controller")
        );
        assert_eq!(s.field_value(&e, "type").as_deref(), Some("Normal"));
        assert_eq!(s.field_value(&e, "involvedObject.bogus"), None);
    }

    #[test]
    fn events_k8s_io_events_are_validated_strictly() {
        let s = new_api();
        let good = json!({
            "apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "e1", "namespace": "default"},
            "eventTime": "2024-01-01T00:00:00.000000Z",
            "regarding": {"kind": "Pod", "namespace": "default", "name": "p"},
            "reportingController": "example.com/ctrl", "reportingInstance": "ctrl-1",
            "action": "Binding", "reason": "Scheduled", "type": "Normal", "note": "ok"
        });
        assert!(
            s.validate_create(&good).is_empty(),
            "{:?}",
            s.validate_create(&good)
        );
        assert_eq!(s.field_value(&good, "regarding.name").as_deref(), Some("p"));
        let mut bad = good.clone();
        bad["type"] = json!("Odd");
        bad["deprecatedCount"] = json!(3);
        bad.as_object_mut().expect("object").remove("action");
        let fields: Vec<String> = s
            .validate_create(&bad)
            .iter()
            .map(|e| e.field.clone())
            .collect();
        assert_eq!(fields, ["action", "type", "count"]);
        let mut changed = good.clone();
        changed["note"] = json!("changed");
        assert_eq!(s.validate_update(&changed, &good)[0].field, "message");
        let mut series = good.clone();
        series["series"] = json!({"count": 1});
        let fields: Vec<String> = s
            .validate_create(&series)
            .iter()
            .map(|e| e.field.clone())
            .collect();
        assert_eq!(fields, ["series.count", "series.lastObservedTime"]);
    }
}
