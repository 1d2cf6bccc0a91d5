//! `metadata.managedFields`: decoding entries into per-manager field sets and encoding them back.
//!
//! Mirrors `managedfields/internal/managedfields.go`: a manager is identified by its name,
//! operation and subresource, plus the API version for updates (so that an applier keeps one
//! entry across versions), encoded as the JSON of a `ManagedFieldsEntry` holding just those.
//! Entries are written sorted by operation, time, manager, API version and subresource.

use std::collections::BTreeMap;

use rkcm_structured_merge::fields_v1::{from_fields_v1, to_fields_v1};
use rkcm_structured_merge::{ManagedFields, VersionedSet};
use serde_json::{json, Map, Value};

/// `Apply` or `Update`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Operation {
    /// Server-side apply.
    Apply,
    /// Create, update or a patch that is not an apply.
    Update,
}

impl Operation {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// Who wrote a set of fields (`BuildManagerIdentifier`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManagerId {
    /// The field manager (`fieldManager`, or the user agent's first segment).
    pub manager: String,
    /// How it wrote them.
    pub operation: Operation,
    /// The API version, kept only for updates.
    pub api_version: Option<String>,
    /// The subresource written (`status`, `scale`), empty for the object.
    pub subresource: String,
}

impl ManagerId {
    /// An applier of the object (`subresource` empty) or of a subresource.
    pub fn apply(manager: &str, subresource: &str) -> ManagerId {
        ManagerId {
            manager: manager.to_string(),
            operation: Operation::Apply,
            api_version: None,
            subresource: subresource.to_string(),
        }
    }

    /// An updater using `api_version`.
    pub fn update(manager: &str, api_version: &str, subresource: &str) -> ManagerId {
        ManagerId {
            manager: manager.to_string(),
            operation: Operation::Update,
            api_version: Some(api_version.to_string()),
            subresource: subresource.to_string(),
        }
    }

    /// The identifier string the structured-merge engine keys managers by.
    pub fn encode(&self) -> String {
        let mut m = Map::new();
        if !self.manager.is_empty() {
            m.insert("manager".into(), json!(self.manager));
        }
        m.insert("operation".into(), json!(self.operation.as_str()));
        if let Some(v) = self.api_version.as_ref().filter(|v| !v.is_empty()) {
            m.insert("apiVersion".into(), json!(v));
        }
        if !self.subresource.is_empty() {
            m.insert("subresource".into(), json!(self.subresource));
        }
        Value::Object(m).to_string()
    }

    /// The manager an identifier string names.
    pub fn decode(id: &str) -> Option<ManagerId> {
        let v: Value = serde_json::from_str(id).ok()?;
        let s = |k: &str| {
            v.get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let operation = match v.get("operation").and_then(Value::as_str)? {
            "Apply" => Operation::Apply,
            "Update" => Operation::Update,
            _ => return None,
        };
        Some(ManagerId {
            manager: s("manager"),
            operation,
            api_version: Some(s("apiVersion")).filter(|v| !v.is_empty()),
            subresource: s("subresource"),
        })
    }

    /// How kube's conflict messages print a manager (`printManager`):
    /// `"kubectl"`, `"kube-controller-manager" using apps/v1`,
    /// `"kubectl-scale" with subresource "scale" using apps/v1`.
    pub fn describe(&self) -> String {
        let mut s = format!("{:?}", self.manager);
        if !self.subresource.is_empty() {
            s = format!("{s} with subresource {:?}", self.subresource);
        }
        if self.operation == Operation::Update {
            s = format!(
                "{s} using {}",
                self.api_version.as_deref().unwrap_or_default()
            );
        }
        s
    }
}

/// Prints an identifier string as [`ManagerId::describe`] does, or quoted when it is not one.
pub fn describe_manager(id: &str) -> String {
    ManagerId::decode(id)
        .map(|m| m.describe())
        .unwrap_or_else(|| format!("{id:?}"))
}

/// Decoded managed fields: each manager's fields and the time it last changed them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Managed {
    /// Fields by manager identifier.
    pub fields: ManagedFields,
    /// `time` by manager identifier.
    pub times: BTreeMap<String, Value>,
}

/// Why `metadata.managedFields` could not be decoded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct DecodeError(pub String);

/// Decodes `metadata.managedFields` entries (`DecodeManagedFields`).
pub fn decode(entries: &[Value]) -> Result<Managed, DecodeError> {
    let mut managed = Managed::default();
    for (i, e) in entries.iter().enumerate() {
        let s = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or_default();
        let operation = match s("operation") {
            "Apply" => Operation::Apply,
            "Update" => Operation::Update,
            _ => return Err(DecodeError("operation must be `Apply` or `Update`".into())),
        };
        if s("apiVersion").is_empty() {
            return Err(DecodeError("apiVersion must not be empty".into()));
        }
        match s("fieldsType") {
            "FieldsV1" => {}
            "" => {
                return Err(DecodeError(format!(
                    "missing fieldsType in managed fields entry {i}"
                )))
            }
            other => {
                return Err(DecodeError(format!(
                    "invalid fieldsType {other:?} in managed fields entry {i}"
                )))
            }
        }
        let id = ManagerId {
            manager: s("manager").to_string(),
            operation,
            api_version: (operation == Operation::Update).then(|| s("apiVersion").to_string()),
            subresource: s("subresource").to_string(),
        }
        .encode();
        let set = match e.get("fieldsV1") {
            None | Some(Value::Null) => Default::default(),
            Some(f) => from_fields_v1(f).map_err(|err| {
                DecodeError(format!(
                    "error decoding versioned set from entry {i}: {err}"
                ))
            })?,
        };
        managed.fields.insert(
            id.clone(),
            VersionedSet {
                set,
                api_version: s("apiVersion").to_string(),
                applied: operation == Operation::Apply,
            },
        );
        if let Some(t) = e.get("time").filter(|t| !t.is_null()) {
            managed.times.insert(id, t.clone());
        }
    }
    Ok(managed)
}

/// Encodes managed fields as `metadata.managedFields` entries, sorted as kube sorts them.
pub fn encode(managed: &Managed) -> Vec<Value> {
    let mut entries: Vec<(ManagerId, Option<&Value>, &VersionedSet)> = managed
        .fields
        .iter()
        .filter_map(|(id, vs)| Some((ManagerId::decode(id)?, managed.times.get(id), vs)))
        .collect();
    let seconds = |t: Option<&Value>| {
        t.and_then(Value::as_str)
            .and_then(|t| t.parse::<jiff::Timestamp>().ok())
            .map(|t| t.as_second())
            .unwrap_or(0)
    };
    entries.sort_by(|(a, at, avs), (b, bt, bvs)| {
        a.operation
            .cmp(&b.operation)
            .then_with(|| seconds(*at).cmp(&seconds(*bt)))
            .then_with(|| a.manager.cmp(&b.manager))
            .then_with(|| avs.api_version.cmp(&bvs.api_version))
            .then_with(|| a.subresource.cmp(&b.subresource))
    });
    entries
        .into_iter()
        .map(|(id, time, vs)| {
            let mut m = Map::new();
            if !id.manager.is_empty() {
                m.insert("manager".into(), json!(id.manager));
            }
            let op = if vs.applied {
                Operation::Apply
            } else {
                id.operation
            };
            m.insert("operation".into(), json!(op.as_str()));
            m.insert("apiVersion".into(), json!(vs.api_version));
            if let Some(t) = time {
                m.insert("time".into(), t.clone());
            }
            m.insert("fieldsType".into(), json!("FieldsV1"));
            m.insert("fieldsV1".into(), to_fields_v1(&vs.set));
            if !id.subresource.is_empty() {
                m.insert("subresource".into(), json!(id.subresource));
            }
            Value::Object(m)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_leave_out_the_version_of_appliers() {
        assert_eq!(
            ManagerId::apply("kubectl", "").encode(),
            r#"{"manager":"kubectl","operation":"Apply"}"#
        );
        let u = ManagerId::update("kubectl-scale", "apps/v1", "scale");
        assert_eq!(
            u.encode(),
            r#"{"manager":"kubectl-scale","operation":"Update","apiVersion":"apps/v1","subresource":"scale"}"#
        );
        assert_eq!(ManagerId::decode(&u.encode()), Some(u.clone()));
        assert_eq!(
            u.describe(),
            r#""kubectl-scale" with subresource "scale" using apps/v1"#
        );
        assert_eq!(
            describe_manager(&ManagerId::apply("m", "").encode()),
            r#""m""#
        );
    }

    #[test]
    fn entries_round_trip_and_sort_appliers_first_then_by_time() {
        let entries = vec![
            json!({"manager":"kube-controller-manager","operation":"Update","apiVersion":"apps/v1","time":"2026-01-01T00:00:02Z",
                "fieldsType":"FieldsV1","fieldsV1":{"f:status":{"f:replicas":{}}},"subresource":"status"}),
            json!({"manager":"kubectl-create","operation":"Update","apiVersion":"apps/v1","time":"2026-01-01T00:00:01Z",
                "fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:replicas":{}}}}),
            json!({"manager":"kubectl","operation":"Apply","apiVersion":"apps/v1","time":"2026-01-01T00:00:03Z",
                "fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:paused":{}}}}),
        ];
        let managed = decode(&entries).unwrap();
        assert_eq!(managed.fields.len(), 3);
        let out = encode(&managed);
        assert_eq!(
            out,
            vec![entries[2].clone(), entries[1].clone(), entries[0].clone()]
        );
    }

    #[test]
    fn bad_entries_are_refused() {
        assert!(
            decode(&[json!({"operation":"Patch","apiVersion":"v1","fieldsType":"FieldsV1"})])
                .is_err()
        );
        assert!(decode(&[json!({"operation":"Update","fieldsType":"FieldsV1"})]).is_err());
        assert!(decode(&[json!({"operation":"Update","apiVersion":"v1"})]).is_err());
        assert!(decode(&[json!({"operation":"Update","apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{"x":{}}})]).is_err());
    }
}
