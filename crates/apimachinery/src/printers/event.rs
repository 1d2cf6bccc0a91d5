//! The Event table (`printEvent`), for core/v1 and events.k8s.io/v1 Events alike.
//!
//! kube converts both versions to the internal Event before printing; here the
//! events.k8s.io field names (`regarding`, `note`, `deprecated*`) are read as fallbacks.

use jiff::Timestamp;
use serde_json::Value;

use super::{col, int_at, since, str_at, time_at, wide, Column, Description};

const EVENT: &str = "io.k8s.api.core.v1.Event";

/// Event columns.
pub(super) const COLUMNS: &[Column] = &[
    col(
        "Last Seen",
        "string",
        Description::Field(EVENT, "lastTimestamp"),
    ),
    col("Type", "string", Description::Field(EVENT, "type")),
    col("Reason", "string", Description::Field(EVENT, "reason")),
    col(
        "Object",
        "string",
        Description::Field(EVENT, "involvedObject"),
    ),
    wide(
        "Subobject",
        "string",
        Description::Field("io.k8s.api.core.v1.ObjectReference", "fieldPath"),
    ),
    wide("Source", "string", Description::Field(EVENT, "source")),
    col("Message", "string", Description::Field(EVENT, "message")),
    wide(
        "First Seen",
        "string",
        Description::Field(EVENT, "firstTimestamp"),
    ),
    wide("Count", "string", Description::Field(EVENT, "count")),
    super::Column {
        priority: 1,
        ..super::NAME
    },
];

fn first_non_empty<'a>(a: &'a str, b: &'a str) -> &'a str {
    if a.is_empty() {
        b
    } else {
        a
    }
}

/// The cells of one event's row.
pub(super) fn cells(e: &Value, now: Timestamp) -> Vec<Value> {
    let first_ts =
        time_at(e, "/firstTimestamp").or_else(|| time_at(e, "/deprecatedFirstTimestamp"));
    let first = match first_ts {
        Some(t) => since(Some(t), now),
        None => since(time_at(e, "/eventTime"), now),
    };
    let last_ts = time_at(e, "/lastTimestamp").or_else(|| time_at(e, "/deprecatedLastTimestamp"));
    let mut last = match last_ts {
        Some(t) => since(Some(t), now),
        None => first.clone(),
    };
    let mut count = int_at(e, "/count", int_at(e, "/deprecatedCount", 0));
    if let Some(series) = e.get("series").filter(|s| s.is_object()) {
        last = since(time_at(series, "/lastObservedTime"), now);
        count = int_at(series, "/count", 0);
    } else if count == 0 {
        count = 1;
    }

    let involved = e
        .get("involvedObject")
        .or_else(|| e.get("regarding"))
        .cloned()
        .unwrap_or(Value::Null);
    let kind = str_at(&involved, "/kind").to_lowercase();
    let obj_name = str_at(&involved, "/name");
    let target = if obj_name.is_empty() {
        kind
    } else {
        format!("{kind}/{obj_name}")
    };

    let component = first_non_empty(
        first_non_empty(
            str_at(e, "/source/component"),
            str_at(e, "/deprecatedSource/component"),
        ),
        str_at(e, "/reportingController"),
    );
    let host = first_non_empty(
        first_non_empty(
            str_at(e, "/source/host"),
            str_at(e, "/deprecatedSource/host"),
        ),
        str_at(e, "/reportingInstance"),
    );
    let source = match (component.is_empty(), host.is_empty()) {
        (true, _) => String::new(),
        (false, true) => component.to_string(),
        (false, false) => format!("{component}, {host}"),
    };
    let message = first_non_empty(str_at(e, "/message"), str_at(e, "/note")).trim();

    vec![
        last.into(),
        str_at(e, "/type").into(),
        str_at(e, "/reason").into(),
        target.into(),
        str_at(&involved, "/fieldPath").into(),
        source.into(),
        message.into(),
        first.into(),
        count.into(),
        str_at(e, "/metadata/name").into(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn now() -> Timestamp {
        "2026-01-01T00:10:00Z".parse().unwrap()
    }

    #[test]
    fn core_event_row() {
        let e = json!({"metadata":{"name":"web.1"},"type":"Normal","reason":"ScalingReplicaSet",
            "involvedObject":{"kind":"Deployment","name":"web"},
            "message":"Scaled up replica set web-abc to 3 ",
            "source":{"component":"deployment-controller"},
            "firstTimestamp":"2026-01-01T00:00:00Z","lastTimestamp":"2026-01-01T00:09:00Z","count":2});
        let c = cells(&e, now());
        assert_eq!(
            Value::Array(c),
            json!([
                "60s",
                "Normal",
                "ScalingReplicaSet",
                "deployment/web",
                "",
                "deployment-controller",
                "Scaled up replica set web-abc to 3",
                "10m",
                2,
                "web.1"
            ])
        );
    }

    #[test]
    fn events_k8s_io_event_uses_regarding_note_and_event_time() {
        let e = json!({"metadata":{"name":"x"},"type":"Warning","reason":"Failed",
            "regarding":{"kind":"Pod","name":"p"},"note":"boom",
            "reportingController":"kubelet","reportingInstance":"node-1",
            "eventTime":"2026-01-01T00:09:55.000000Z"});
        let c = cells(&e, now());
        assert_eq!(c[0], "5s");
        assert_eq!(c[3], "pod/p");
        assert_eq!(c[5], "kubelet, node-1");
        assert_eq!(c[6], "boom");
        assert_eq!(c[8], 1);
    }

    #[test]
    fn series_overrides_last_seen_and_count() {
        let e = json!({"metadata":{"name":"x"},"involvedObject":{"kind":"Node"},
            "firstTimestamp":"2026-01-01T00:00:00Z",
            "series":{"count":7,"lastObservedTime":"2026-01-01T00:09:00.000000Z"}});
        let c = cells(&e, now());
        assert_eq!(c[0], "60s");
        assert_eq!(c[3], "node");
        assert_eq!(c[8], 7);
    }
}
