//! The field manager of a write: who owns which fields after a create, update, patch or apply.
//!
//! Mirrors kube's default field manager (`managedfields/internal/fieldmanager.go` and the
//! managers it stacks): the last-applied annotation upgrade and sync for `kubectl`
//! (`lastappliedmanager.go`, `lastappliedupdater.go`), no tracking of updates to objects that
//! have none yet and `before-first-apply` on their first apply (`skipnonapplied.go`), at most
//! ten update managers with older ones merged into `ancient-changes` (`capmanagers.go`), the
//! `current-operation` swap that bumps an entry's time only when it took fields
//! (`managedfieldsupdater.go`), and never owning type or identity metadata (`stripmeta.go`).

use rkcm_structured_merge::update::UpdateError;
use rkcm_structured_merge::{ManagedFields, Path, Set, TypeRef, Updater, VersionedSet};
use serde_json::{json, Map, Value};

use super::managed_fields::{self, describe_manager, Managed, ManagerId};
use super::schema;

/// The annotation client-side `kubectl apply` keeps its last configuration in.
pub const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Update managers kept before the oldest are merged (`DefaultMaxUpdateManagers`).
pub const MAX_UPDATE_MANAGERS: usize = 10;

/// The manager the oldest update entries are merged into.
pub const ANCIENT_CHANGES: &str = "ancient-changes";

/// The manager that owns an untracked object's fields at its first apply.
pub const BEFORE_FIRST_APPLY: &str = "before-first-apply";

const CURRENT_OPERATION: &str = "current-operation";

/// Why an apply was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ApplyError {
    /// The patch is not acceptable (400 BadRequest).
    #[error("{0}")]
    BadRequest(String),
    /// Other managers own fields the apply changes (409 Conflict).
    #[error("{message}")]
    Conflicts {
        /// `Apply failed with N conflict(s): ...`.
        message: String,
        /// Each conflict: its message (`conflict with "m" using apps/v1`) and field path.
        causes: Vec<(String, String)>,
    },
    /// The patch sets fields its kind does not declare: `failed to create typed patch object
    /// (ns/name; group/version, Kind=K): .path: field not declared in schema`. kube 1.33 returns
    /// this as a plain error, so the client gets a 500 without a reason (kubernetes#122480).
    #[error("{0}")]
    TypedPatch(String),
}

/// Tracks ownership for writes of one kind in one API version, to the object or a subresource.
#[derive(Clone, Debug)]
pub struct FieldManager {
    api_version: String,
    kind: String,
    subresource: String,
    root: TypeRef,
    /// Whether writes to the object leave `status` alone (it is a subresource of its own).
    status_subresource: bool,
}

/// The type and identity metadata no manager owns (`stripmeta.go`), built once.
fn strip_set() -> &'static Set {
    static STRIP: std::sync::OnceLock<Set> = std::sync::OnceLock::new();
    STRIP.get_or_init(build_strip_set)
}

fn build_strip_set() -> Set {
    let mut s = Set::from_paths([Path::fields(["apiVersion"]), Path::fields(["kind"])]);
    s.insert(&Path::fields(["metadata"]));
    for f in [
        "name",
        "namespace",
        "creationTimestamp",
        "selfLink",
        "uid",
        "clusterName",
        "generation",
        "managedFields",
        "resourceVersion",
    ] {
        s.insert(&Path::fields(["metadata", f]));
    }
    s
}

fn without_managed_fields(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("managedFields");
    }
    v
}

fn managed_entries(v: &Value) -> Option<&Vec<Value>> {
    v.pointer("/metadata/managedFields")
        .and_then(Value::as_array)
}

/// Removes map entries whose value is null, as decoding into the Go types drops them.
fn drop_nulls(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|_, v| !v.is_null());
            m.values_mut().for_each(drop_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_nulls),
        _ => {}
    }
}

fn rfc3339(now: jiff::Timestamp) -> Value {
    json!(now.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
}

impl FieldManager {
    /// The field manager of writes of `api_version`/`kind` to `subresource` (empty for the
    /// object). Kinds without a built-in schema are merged untyped (maps granular, lists
    /// atomic) unless given their type ([`FieldManager::with_type`]).
    pub fn new(api_version: &str, kind: &str, subresource: &str) -> FieldManager {
        FieldManager {
            api_version: api_version.to_string(),
            kind: kind.to_string(),
            subresource: subresource.to_string(),
            root: schema::root_type(api_version, kind).unwrap_or_else(TypeRef::deduced),
            status_subresource: true,
        }
    }

    /// The same field manager for a kind whose `status` is an ordinary field, written and owned
    /// with the rest of the object: a custom resource whose version declares no `status`
    /// subresource (`customResourceStrategy.GetResetFields` resets nothing then).
    pub fn without_status_subresource(self) -> FieldManager {
        FieldManager {
            status_subresource: false,
            ..self
        }
    }

    /// The same field manager with objects typed as `root` (a custom resource's type from its
    /// CRD's schema, [`super::custom_resource_type`]) instead of the built-in schema's.
    pub fn with_type(self, root: TypeRef) -> FieldManager {
        FieldManager { root, ..self }
    }

    /// The fields the server resets on this kind of write, never owned by it: status on the
    /// object, everything but status on `/status`.
    fn reset_fields(&self) -> Set {
        match self.subresource.as_str() {
            "" if self.status_subresource => Set::from_paths([Path::fields(["status"])]),
            "status" => Set::from_paths([Path::fields(["spec"])]),
            _ => Set::new(),
        }
    }

    /// The updater of this kind of write, ignoring the fields the server resets.
    fn updater(&self) -> Updater<'static> {
        Updater::new(schema::schema(), self.root.clone()).with_ignored(self.reset_fields())
    }

    /// [`Self::updater`], also ignoring `metadata.managedFields`: an update compares the live
    /// object, which has them, with the new one, which no longer has them, and the comparison
    /// must find what it finds once they are removed from the live object. The list is atomic,
    /// so comparing it costs one path, which the ignored set then takes out.
    fn updater_blind_to_managed_fields(&self) -> Updater<'static> {
        let mut ignored = self.reset_fields();
        ignored.insert(&Path::fields(["metadata", "managedFields"]));
        Updater::new(schema::schema(), self.root.clone()).with_ignored(ignored)
    }

    /// Records a create (`live` is `None`), update or non-apply patch by `manager` into `new`'s
    /// `metadata.managedFields` (`FieldManager.UpdateNoErrors`). `new` is the object about to
    /// be stored; a `managedFields` it carries replaces the stored one (an empty list clears
    /// it), except on subresources.
    pub fn update(
        &self,
        live: Option<&Value>,
        new: &mut Value,
        manager: &str,
        now: jiff::Timestamp,
    ) {
        let from_live = || {
            live.and_then(managed_entries)
                .and_then(|e| managed_fields::decode(e).ok())
                .unwrap_or_default()
        };
        let requested = managed_entries(new);
        let reset = requested.is_some_and(|e| {
            e.is_empty() || (e.len() == 1 && e[0].as_object().is_some_and(Map::is_empty))
        });
        let mut managed = if !self.subresource.is_empty() {
            from_live()
        } else if reset {
            Managed::default()
        } else {
            match requested.map(|e| managed_fields::decode(e)) {
                Some(Ok(m)) if !m.fields.is_empty() => m,
                _ => from_live(),
            }
        };
        if let Some(meta) = new.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("managedFields");
        }
        // An object nobody tracks yet stays untracked until its first apply.
        if managed.fields.is_empty() && live.is_some() {
            return;
        }
        // The live object keeps its `managedFields`: the comparison is blind to them
        // ([`Self::track_update`]), which spares a copy of the whole object.
        let empty = json!({});
        let live = live.unwrap_or(&empty);
        if self
            .track_update(live, new, &mut managed, manager, now)
            .is_err()
        {
            // As kube: never keep managed fields that could not be computed.
            return;
        }
        self.store(new, &managed);
    }

    /// Takes what `new` changes from `live` for `manager` into `managed`. `live` may still
    /// carry its `metadata.managedFields` (`new` must not): they are left out of the comparison,
    /// as if removed from `live` first.
    fn track_update(
        &self,
        live: &Value,
        new: &Value,
        managed: &mut Managed,
        manager: &str,
        now: jiff::Timestamp,
    ) -> Result<(), UpdateError> {
        let id = ManagerId::update(manager, &self.api_version, &self.subresource).encode();
        self.updater_blind_to_managed_fields().update_managers(
            live,
            new,
            &self.api_version,
            &mut managed.fields,
            CURRENT_OPERATION,
        )?;
        strip(&mut managed.fields, CURRENT_OPERATION);
        if let Some(vs) = managed.fields.remove(CURRENT_OPERATION) {
            let set = match managed.fields.get(&id) {
                Some(previous) => vs.set.union(&previous.set),
                None => vs.set,
            };
            managed.fields.insert(
                id.clone(),
                VersionedSet {
                    set,
                    api_version: self.api_version.clone(),
                    applied: false,
                },
            );
            managed.times.insert(id, rfc3339(now));
        }
        cap_update_managers(managed);
        Ok(())
    }

    fn store(&self, obj: &mut Value, managed: &Managed) {
        let entries = managed_fields::encode(managed);
        let Some(meta) = obj.as_object_mut().map(|o| {
            o.entry("metadata")
                .or_insert_with(|| Value::Object(Map::new()))
        }) else {
            return;
        };
        if let Some(meta) = meta.as_object_mut() {
            if entries.is_empty() {
                meta.remove("managedFields");
            } else {
                meta.insert("managedFields".into(), Value::Array(entries));
            }
        }
    }

    /// Applies `patch` for `manager` to `live` (`None` creates the object), `force` taking
    /// fields other managers own (`FieldManager.Apply`). Returns the object to store, with its
    /// `managedFields`.
    pub fn apply(
        &self,
        live: Option<&Value>,
        patch: &Value,
        manager: &str,
        force: bool,
        now: jiff::Timestamp,
    ) -> Result<Value, ApplyError> {
        if !patch.is_object() {
            return Err(ApplyError::BadRequest(
                "error decoding YAML: the apply patch must be an object".to_string(),
            ));
        }
        let patch_version = patch
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if patch_version != self.api_version {
            return Err(ApplyError::BadRequest(format!(
                "Incorrect version specified in apply patch. Specified patch version: {patch_version}, expected: {}",
                self.api_version
            )));
        }
        if patch
            .pointer("/metadata/managedFields")
            .is_some_and(|m| !m.is_null())
        {
            return Err(ApplyError::BadRequest(
                "metadata.managedFields must be nil".to_string(),
            ));
        }
        self.typed_patch(patch)?;
        let mut managed = match live.and_then(managed_entries) {
            Some(e) => managed_fields::decode(e).map_err(|e| {
                ApplyError::BadRequest(format!("failed to decode managed fields: {e}"))
            })?,
            None => Managed::default(),
        };
        let live = match live {
            Some(l) => without_managed_fields(l),
            None => json!({"apiVersion": self.api_version, "kind": self.kind}),
        };
        if managed.fields.is_empty() {
            // Whatever was written before tracking belongs to `before-first-apply`.
            let _ = self.track_update(&json!({}), &live, &mut managed, BEFORE_FIRST_APPLY, now);
        }
        let mut result = self.apply_once(&live, patch, &managed, manager, force, now);
        if manager == "kubectl" {
            if let Err(UpdateError::Conflicts(conflicts)) = &result {
                // Fields client-side apply set as last applied are taken over without conflict.
                if let Some(allowed) = self.allowed_from_last_applied(&live) {
                    let remaining: Vec<_> = conflicts
                        .0
                        .iter()
                        .filter(|c| !allowed.has(&c.path))
                        .cloned()
                        .collect();
                    result = if remaining.is_empty() {
                        self.apply_once(&live, patch, &managed, manager, true, now)
                    } else {
                        Err(UpdateError::Conflicts(rkcm_structured_merge::Conflicts(
                            remaining,
                        )))
                    };
                }
            }
        }
        let (mut obj, managed) = result.map_err(|e| match e {
            UpdateError::Conflicts(c) => ApplyError::Conflicts {
                message: c.message(describe_manager),
                causes: c
                    .0
                    .iter()
                    .map(|c| {
                        (
                            format!("conflict with {}", describe_manager(&c.manager)),
                            c.path.to_string(),
                        )
                    })
                    .collect(),
            },
            UpdateError::Invalid(e) => ApplyError::BadRequest(e.to_string()),
        })?;
        if manager == "kubectl" && has_last_applied(&live) {
            set_last_applied(&mut obj, patch);
        }
        self.store(&mut obj, &managed);
        Ok(obj)
    }

    /// Refuses a patch with fields its type does not declare, as `structuredMergeManager.Apply`
    /// refuses one `ObjectToTyped` cannot convert (`objectGVKNN` names the object).
    fn typed_patch(&self, patch: &Value) -> Result<(), ApplyError> {
        let undeclared =
            rkcm_structured_merge::typed::undeclared_fields(schema::schema(), &self.root, patch);
        if undeclared.is_empty() {
            return Ok(());
        }
        let errors: Vec<String> = undeclared
            .iter()
            .map(|p| format!("{p}: field not declared in schema"))
            .collect();
        // `ValidationErrors.Error`: one error alone, else a list under `errors:`.
        let errors = match errors.as_slice() {
            [one] => one.clone(),
            many => format!("errors:\n  {}", many.join("\n  ")),
        };
        let meta = |f: &str| {
            patch
                .pointer(&format!("/metadata/{f}"))
                .and_then(Value::as_str)
                .unwrap_or_default()
        };
        let api_version = patch
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        // `GroupVersionKind.String`: the core group is empty, `/v1, Kind=ConfigMap`.
        let group_version = if api_version.contains('/') {
            api_version.to_string()
        } else {
            format!("/{api_version}")
        };
        let kind = patch
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default();
        Err(ApplyError::TypedPatch(format!(
            "failed to create typed patch object ({}/{}; {group_version}, Kind={kind}): {errors}",
            meta("namespace"),
            meta("name"),
        )))
    }

    fn apply_once(
        &self,
        live: &Value,
        patch: &Value,
        managed: &Managed,
        manager: &str,
        force: bool,
        now: jiff::Timestamp,
    ) -> Result<(Value, Managed), UpdateError> {
        let mut managed = managed.clone();
        let id = ManagerId::apply(manager, &self.subresource).encode();
        let new = self.updater().apply(
            live,
            patch,
            &self.api_version,
            &mut managed.fields,
            &id,
            force,
        )?;
        strip(&mut managed.fields, &id);
        let obj = match new {
            Some(mut obj) => {
                drop_nulls(&mut obj);
                managed.times.insert(id, rfc3339(now));
                obj
            }
            None => live.clone(),
        };
        Ok((obj, managed))
    }

    /// The fields of the last-applied annotation whose values the live object still has
    /// (`allowedConflictsFromLastApplied`), if there is an annotation of this version.
    fn allowed_from_last_applied(&self, live: &Value) -> Option<Set> {
        let text = live
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(LAST_APPLIED_ANNOTATION))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())?;
        let last: Value = serde_json::from_str(text).ok()?;
        if last.get("apiVersion").and_then(Value::as_str) != Some(self.api_version.as_str()) {
            return None;
        }
        let sc = schema::schema();
        let set = rkcm_structured_merge::typed::to_field_set(sc, &self.root, &last).ok()?;
        let c = rkcm_structured_merge::typed::compare(sc, &self.root, &last, live).ok()?;
        Some(
            set.difference(&c.modified)
                .difference(&c.added)
                .difference(&c.removed),
        )
    }
}

fn strip(fields: &mut ManagedFields, manager: &str) {
    if let Some(vs) = fields.get_mut(manager) {
        vs.set = vs.set.difference(strip_set());
        if vs.set.is_empty() {
            fields.remove(manager);
        }
    }
}

fn has_last_applied(obj: &Value) -> bool {
    obj.pointer("/metadata/annotations")
        .and_then(|a| a.get(LAST_APPLIED_ANNOTATION))
        .and_then(Value::as_str)
        .is_some_and(|s| !s.is_empty())
}

/// Sets the last-applied annotation to the applied configuration (without that annotation),
/// so that a later client-side `kubectl apply` diffs against what was applied last.
fn set_last_applied(obj: &mut Value, patch: &Value) {
    let mut applied = patch.clone();
    if let Some(a) = applied
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
    {
        a.remove(LAST_APPLIED_ANNOTATION);
        if a.is_empty() {
            if let Some(m) = applied.get_mut("metadata").and_then(Value::as_object_mut) {
                m.remove("annotations");
            }
        }
    }
    let text = format!("{applied}\n");
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        let annotations = meta
            .entry("annotations")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(a) = annotations.as_object_mut() {
            a.insert(LAST_APPLIED_ANNOTATION.into(), json!(text));
        }
    }
}

/// Merges the oldest update entries into `ancient-changes` buckets per API version until at
/// most [`MAX_UPDATE_MANAGERS`] update entries are left (`capUpdateManagers`).
fn cap_update_managers(managed: &mut Managed) {
    let mut updaters: Vec<String> = managed
        .fields
        .iter()
        .filter(|(_, vs)| !vs.applied)
        .map(|(id, _)| id.clone())
        .collect();
    if updaters.len() <= MAX_UPDATE_MANAGERS {
        return;
    }
    let seconds = |id: &String| {
        managed
            .times
            .get(id)
            .and_then(Value::as_str)
            .and_then(|t| t.parse::<jiff::Timestamp>().ok())
            .map(|t| t.as_second())
            .unwrap_or(0)
    };
    updaters.sort_by(|a, b| seconds(a).cmp(&seconds(b)).then_with(|| a.cmp(b)));
    let mut first_of_version: std::collections::BTreeMap<String, String> = Default::default();
    let mut length = updaters.len();
    for id in updaters {
        if length <= MAX_UPDATE_MANAGERS {
            break;
        }
        let Some(vs) = managed.fields.get(&id).cloned() else {
            continue;
        };
        let time = managed.times.get(&id).cloned();
        let version = vs.api_version.clone();
        let bucket = ManagerId::update(ANCIENT_CHANGES, &version, "").encode();
        match first_of_version.get(&version) {
            Some(first) => {
                if !managed.fields.contains_key(&bucket) {
                    if let Some(s) = managed.fields.remove(first) {
                        managed.fields.insert(bucket.clone(), s);
                    }
                }
                if let Some(b) = managed.fields.get_mut(&bucket) {
                    b.set = vs.set.union(&b.set);
                }
                managed.fields.remove(&id);
                length -= 1;
                match time {
                    Some(t) => managed.times.insert(bucket, t),
                    None => managed.times.remove(&bucket),
                };
            }
            None => {
                first_of_version.insert(version, id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: i64) -> jiff::Timestamp {
        jiff::Timestamp::from_second(1_800_000_000 + s).unwrap()
    }

    fn deployment(replicas: i64, image: &str) -> Value {
        json!({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"default"},
            "spec":{"replicas":replicas,"selector":{"matchLabels":{"app":"web"}},
            "template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":image}]}}}})
    }

    fn managers(obj: &Value) -> Vec<(String, String)> {
        managed_entries(obj)
            .into_iter()
            .flatten()
            .map(|e| {
                (
                    e["manager"].as_str().unwrap_or_default().to_string(),
                    e["operation"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect()
    }

    #[test]
    fn create_then_apply_conflicts_on_replicas_with_the_creator() {
        let fm = FieldManager::new("apps/v1", "Deployment", "");
        let mut created = deployment(1, "nginx");
        fm.update(None, &mut created, "kubectl-client-side-apply", at(0));
        assert_eq!(
            managers(&created),
            [("kubectl-client-side-apply".into(), "Update".into())]
        );
        let fields = &created["metadata"]["managedFields"][0]["fieldsV1"];
        assert_eq!(fields["f:spec"]["f:replicas"], json!({}));
        assert!(fields
            .get("f:metadata")
            .is_none_or(|m| m.get("f:name").is_none()));

        let err = fm
            .apply(Some(&created), &deployment(3, "nginx"), "mgr", false, at(1))
            .unwrap_err();
        assert_eq!(
            err,
            ApplyError::Conflicts {
                message: "Apply failed with 1 conflict: conflict with \"kubectl-client-side-apply\" using apps/v1: .spec.replicas".into(),
                causes: vec![(
                    "conflict with \"kubectl-client-side-apply\" using apps/v1".into(),
                    ".spec.replicas".into()
                )],
            }
        );
        let forced = fm
            .apply(Some(&created), &deployment(3, "nginx"), "mgr", true, at(1))
            .unwrap();
        assert_eq!(forced["spec"]["replicas"], 3);
        assert_eq!(
            managers(&forced),
            [
                ("mgr".into(), "Apply".into()),
                ("kubectl-client-side-apply".into(), "Update".into())
            ]
        );
        let csa = &forced["metadata"]["managedFields"][1]["fieldsV1"]["f:spec"];
        assert!(csa.get("f:replicas").is_none(), "{csa}");
    }

    #[test]
    fn apply_creates_and_reapplying_the_same_config_changes_nothing() {
        let fm = FieldManager::new("apps/v1", "Deployment", "");
        let created = fm
            .apply(None, &deployment(2, "nginx"), "kubectl", false, at(0))
            .unwrap();
        assert_eq!(created["spec"]["replicas"], 2);
        let entry = &created["metadata"]["managedFields"][0];
        assert_eq!(entry["manager"], "kubectl");
        assert_eq!(entry["operation"], "Apply");
        assert_eq!(entry["apiVersion"], "apps/v1");
        assert_eq!(entry["fieldsType"], "FieldsV1");
        assert_eq!(entry["time"], "2027-01-15T08:00:00Z");
        assert_eq!(
            entry["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"]
                ["k:{\"name\":\"c\"}"],
            json!({".":{},"f:image":{},"f:name":{}})
        );
        let again = fm
            .apply(
                Some(&created),
                &deployment(2, "nginx"),
                "kubectl",
                false,
                at(5),
            )
            .unwrap();
        assert_eq!(again, created, "a no-op apply keeps the entry's time");
    }

    #[test]
    fn applying_fields_the_kind_does_not_declare_fails_as_kubes_typed_patch_conversion() {
        let fm = FieldManager::new("v1", "ConfigMap", "");
        let patch = json!({"apiVersion":"v1","kind":"ConfigMap",
            "metadata":{"name":"x","namespace":"default"},"bogus":1});
        let err = fm.apply(None, &patch, "kubectl", false, at(0)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "failed to create typed patch object (default/x; /v1, Kind=ConfigMap): .bogus: field not declared in schema"
        );
        let fm = FieldManager::new("apps/v1", "Deployment", "");
        let mut patch = deployment(1, "nginx");
        patch["spec"]["template"]["spec"]["containers"][0]["imagee"] = json!("x");
        patch["spec"]["bogus"] = json!(true);
        let err = fm.apply(None, &patch, "kubectl", false, at(0)).unwrap_err();
        assert!(matches!(err, ApplyError::TypedPatch(_)), "{err:?}");
        assert!(
            err.to_string().ends_with(
                "; apps/v1, Kind=Deployment): errors:\n  .spec.template.spec.containers[name=\"c\"].imagee: field not declared in schema\n  .spec.bogus: field not declared in schema"
            ),
            "{err}"
        );
    }

    #[test]
    fn applying_less_removes_what_the_applier_no_longer_applies() {
        let fm = FieldManager::new("v1", "ConfigMap", "");
        let cm = |data: Value| json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":data});
        let a = fm
            .apply(None, &cm(json!({"a":"1","b":"2"})), "m", false, at(0))
            .unwrap();
        let b = fm
            .apply(Some(&a), &cm(json!({"a":"1"})), "m", false, at(1))
            .unwrap();
        assert_eq!(b["data"], json!({"a":"1"}));
    }

    #[test]
    fn updates_of_untracked_objects_stay_untracked_until_the_first_apply() {
        let fm = FieldManager::new("apps/v1", "Deployment", "");
        let live = deployment(1, "nginx");
        let mut new = deployment(2, "nginx");
        fm.update(Some(&live), &mut new, "ctl", at(0));
        assert!(new["metadata"].get("managedFields").is_none());
        // Everything written before belongs to before-first-apply: changing it conflicts.
        let err = fm.apply(Some(&new), &deployment(2, "nginx:2"), "mgr", false, at(1));
        assert!(matches!(err, Err(ApplyError::Conflicts { .. })), "{err:?}");
        let applied = fm
            .apply(Some(&new), &deployment(2, "nginx"), "mgr", false, at(1))
            .unwrap();
        assert_eq!(
            managers(&applied),
            [
                ("mgr".into(), "Apply".into()),
                ("before-first-apply".into(), "Update".into())
            ]
        );
    }

    #[test]
    fn status_updates_are_tracked_per_subresource_and_do_not_take_spec() {
        let fm = FieldManager::new("apps/v1", "Deployment", "");
        let created = fm
            .apply(None, &deployment(2, "nginx"), "kubectl", false, at(0))
            .unwrap();
        let status = FieldManager::new("apps/v1", "Deployment", "status");
        let mut new = created.clone();
        new["status"] = json!({"replicas": 2});
        status.update(Some(&created), &mut new, "kube-controller-manager", at(1));
        let entries = managed_entries(&new).unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[1]["subresource"], "status");
        assert_eq!(
            entries[1]["fieldsV1"],
            json!({"f:status":{".":{},"f:replicas":{}}})
        );
    }

    #[test]
    fn update_managers_beyond_ten_merge_into_ancient_changes() {
        let fm = FieldManager::new("v1", "ConfigMap", "");
        let mut obj =
            json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"x":"y"}});
        fm.update(None, &mut obj, "creator", at(0));
        for i in 0..12 {
            let mut new = obj.clone();
            new["data"] = json!({});
            new["data"][format!("k{i}")] = json!("v");
            if let Some(d) = obj.get("data").and_then(Value::as_object) {
                for (k, v) in d {
                    new["data"][k] = v.clone();
                }
            }
            fm.update(Some(&obj.clone()), &mut new, &format!("m{i}"), at(i + 1));
            obj = new;
        }
        let names: Vec<String> = managers(&obj).into_iter().map(|(m, _)| m).collect();
        assert_eq!(names.len(), MAX_UPDATE_MANAGERS, "{names:?}");
        assert!(names.contains(&ANCIENT_CHANGES.to_string()), "{names:?}");
        assert!(names.contains(&"m11".to_string()));
    }

    #[test]
    fn kubectl_takes_over_fields_of_its_client_side_apply_without_conflict() {
        let fm = FieldManager::new("apps/v1", "Deployment", "");
        let mut live = deployment(1, "nginx");
        let last = format!("{}\n", deployment(1, "nginx"));
        live["metadata"]["annotations"] = json!({LAST_APPLIED_ANNOTATION: last});
        fm.update(None, &mut live, "kubectl-client-side-apply", at(0));
        let out = fm
            .apply(
                Some(&live),
                &deployment(2, "nginx"),
                "kubectl",
                false,
                at(1),
            )
            .unwrap();
        assert_eq!(out["spec"]["replicas"], 2);
        let annotation = out["metadata"]["annotations"][LAST_APPLIED_ANNOTATION]
            .as_str()
            .unwrap();
        let synced: Value = serde_json::from_str(annotation).unwrap();
        assert_eq!(synced["spec"]["replicas"], 2);
        // Another manager gets the conflict.
        let err = fm.apply(Some(&live), &deployment(2, "nginx"), "other", false, at(1));
        assert!(matches!(err, Err(ApplyError::Conflicts { .. })));
    }

    /// Live objects whose `managedFields` the comparison must not see: a label removed, a
    /// metadata left with nothing but them, and an entry (written by a client) owning the
    /// `managedFields` field itself.
    fn lives_with_managed_fields() -> Vec<(Value, Value)> {
        let entry = |fields: Value| {
            json!([{"manager":"creator","operation":"Update","apiVersion":"apps/v1",
                "time":"2027-01-15T08:00:00Z","fieldsType":"FieldsV1","fieldsV1":fields}])
        };
        let mut labelled = deployment(1, "nginx");
        labelled["metadata"]["labels"] = json!({"a":"1","b":"2"});
        labelled["metadata"]["managedFields"] = entry(
            json!({"f:metadata":{"f:labels":{".":{},"f:a":{},"f:b":{}}},"f:spec":{"f:replicas":{}}}),
        );
        let mut unlabelled = deployment(2, "nginx");
        unlabelled["metadata"]["labels"] = json!({"a":"1"});
        let mut bare = deployment(1, "nginx");
        bare["metadata"] = json!({"managedFields": entry(json!({"f:spec":{"f:replicas":{}}}))});
        let mut no_metadata = deployment(1, "nginx:2");
        if let Some(o) = no_metadata.as_object_mut() {
            o.remove("metadata");
        }
        let mut owning = deployment(1, "nginx");
        owning["metadata"]["managedFields"] =
            entry(json!({"f:metadata":{"f:managedFields":{}},"f:spec":{"f:replicas":{}}}));
        vec![
            (labelled, unlabelled),
            (bare.clone(), deployment(1, "nginx")),
            (bare, no_metadata),
            (owning, deployment(3, "nginx")),
        ]
    }

    #[test]
    fn updates_compare_the_live_object_as_if_it_had_no_managed_fields() {
        let fm = FieldManager::new("apps/v1", "Deployment", "");
        for (live, new) in lives_with_managed_fields() {
            let mut tracked = new.clone();
            fm.update(Some(&live), &mut tracked, "writer", at(1));
            // The same managed fields carried by the update, with a live object without them.
            let mut expected = new.clone();
            if let Some(o) = expected.as_object_mut() {
                let meta = o.entry("metadata").or_insert_with(|| json!({}));
                meta["managedFields"] = live["metadata"]["managedFields"].clone();
            }
            fm.update(
                Some(&without_managed_fields(&live)),
                &mut expected,
                "writer",
                at(1),
            );
            assert!(managed_entries(&tracked).is_some(), "{tracked}");
            assert_eq!(tracked, expected, "from {live}");
        }
    }

    #[test]
    fn managed_fields_are_compared_as_one_atomic_path() {
        let fm = FieldManager::new("apps/v1", "Deployment", "");
        for (live, _) in lives_with_managed_fields() {
            let c = rkcm_structured_merge::typed::compare(
                schema::schema(),
                &fm.root,
                &live,
                &without_managed_fields(&live),
            )
            .unwrap();
            assert_eq!(
                c.removed,
                Set::from_paths([Path::fields(["metadata", "managedFields"])])
            );
            assert!(c.added.is_empty() && c.modified.is_empty());
        }
    }

    #[test]
    fn the_blind_updater_finds_what_the_updater_finds_without_managed_fields() {
        for subresource in ["", "status"] {
            let fm = FieldManager::new("apps/v1", "Deployment", subresource);
            for (live, mut new) in lives_with_managed_fields() {
                new["status"] = json!({"replicas": 1});
                let managed = managed_fields::decode(managed_entries(&live).unwrap()).unwrap();
                let mut blind = managed.fields.clone();
                fm.updater_blind_to_managed_fields()
                    .update_managers(&live, &new, "apps/v1", &mut blind, "m")
                    .unwrap();
                let mut stripped = managed.fields.clone();
                fm.updater()
                    .update_managers(
                        &without_managed_fields(&live),
                        &new,
                        "apps/v1",
                        &mut stripped,
                        "m",
                    )
                    .unwrap();
                assert_eq!(blind, stripped, "{subresource:?} from {live}");
            }
        }
    }

    #[test]
    fn bad_patches_are_refused_with_kubes_messages() {
        let fm = FieldManager::new("apps/v1", "Deployment", "");
        let mut p = deployment(1, "x");
        p["apiVersion"] = json!("apps/v1beta1");
        assert_eq!(
            fm.apply(None, &p, "m", false, at(0)).unwrap_err().to_string(),
            "Incorrect version specified in apply patch. Specified patch version: apps/v1beta1, expected: apps/v1"
        );
        let mut p = deployment(1, "x");
        p["metadata"]["managedFields"] = json!([]);
        assert_eq!(
            fm.apply(None, &p, "m", false, at(0))
                .unwrap_err()
                .to_string(),
            "metadata.managedFields must be nil"
        );
        let mut p = deployment(1, "x");
        p["spec"]["template"]["spec"]["containers"] = json!([{"name":"a"},{"name":"a"}]);
        assert!(fm
            .apply(None, &p, "m", false, at(0))
            .unwrap_err()
            .to_string()
            .contains("duplicate entries"));
    }
}

#[cfg(test)]
mod timing {
    use super::*;

    fn at(s: i64) -> jiff::Timestamp {
        jiff::Timestamp::from_second(1_800_000_000 + s).unwrap()
    }

    /// A pod as a ReplicaSet creates it, defaulted, scheduled and tracked by its creator and the
    /// kubelet, the shape the density benchmark writes 3,000 of.
    fn pod(ready: &str, at: &str) -> Value {
        json!({"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-7d9f8c6b5-x2x9z","generateName":"web-7d9f8c6b5-",
        "namespace":"density","uid":"0f7e7f3a-3a44-4c55-9f35-7f9d8a3a1c11","resourceVersion":"12345","creationTimestamp":"2026-01-01T00:00:00Z",
        "labels":{"app":"web","pod-template-hash":"7d9f8c6b5"},
        "ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web-7d9f8c6b5","uid":"7b1e3c1e-7f3f-4c3c-9f1a-2b2b2b2b2b2b","controller":true,"blockOwnerDeletion":true}],
        "managedFields":[
          {"manager":"kube-controller-manager","operation":"Update","apiVersion":"v1","time":"2026-01-01T00:00:00Z","fieldsType":"FieldsV1",
           "fieldsV1":{"f:metadata":{"f:generateName":{},"f:labels":{".":{},"f:app":{},"f:pod-template-hash":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"7b1e3c1e-7f3f-4c3c-9f1a-2b2b2b2b2b2b\"}":{}}},
           "f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:ports":{".":{},"k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{},"f:protocol":{}}},"f:resources":{".":{},"f:requests":{".":{},"f:cpu":{},"f:memory":{}}},"f:terminationMessagePath":{},"f:terminationMessagePolicy":{}}},
           "f:dnsPolicy":{},"f:enableServiceLinks":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},"f:terminationGracePeriodSeconds":{}}}},
          {"manager":"kubelet","operation":"Update","apiVersion":"v1","time":"2026-01-01T00:00:01Z","fieldsType":"FieldsV1","subresource":"status",
           "fieldsV1":{"f:status":{"f:conditions":{"k:{\"type\":\"ContainersReady\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},
             "k:{\"type\":\"Initialized\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},
             "k:{\"type\":\"PodReadyToStartContainers\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},
             "k:{\"type\":\"Ready\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}}},
             "f:containerStatuses":{},"f:hostIP":{},"f:hostIPs":{},"f:phase":{},"f:podIP":{},"f:podIPs":{".":{},"k:{\"ip\":\"10.0.0.5\"}":{".":{},"f:ip":{}}},"f:startTime":{}}}}]},
        "spec":{"containers":[{"name":"web","image":"registry.k8s.io/pause:3.10","imagePullPolicy":"IfNotPresent",
          "ports":[{"containerPort":80,"protocol":"TCP"}],"resources":{"requests":{"cpu":"10m","memory":"16Mi"}},
          "terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File",
          "volumeMounts":[{"name":"kube-api-access-abcde","mountPath":"/var/run/secrets/kubernetes.io/serviceaccount","readOnly":true}]}],
          "dnsPolicy":"ClusterFirst","enableServiceLinks":true,"nodeName":"node-17","preemptionPolicy":"PreemptLowerPriority","priority":0,
          "restartPolicy":"Always","schedulerName":"default-scheduler","securityContext":{},"serviceAccount":"default","serviceAccountName":"default",
          "terminationGracePeriodSeconds":30,
          "tolerations":[{"effect":"NoExecute","key":"node.kubernetes.io/not-ready","operator":"Exists","tolerationSeconds":300},
            {"effect":"NoExecute","key":"node.kubernetes.io/unreachable","operator":"Exists","tolerationSeconds":300}],
          "volumes":[{"name":"kube-api-access-abcde","projected":{"defaultMode":420,"sources":[{"serviceAccountToken":{"expirationSeconds":3607,"path":"token"}},
            {"configMap":{"name":"kube-root-ca.crt","items":[{"key":"ca.crt","path":"ca.crt"}]}},
            {"downwardAPI":{"items":[{"path":"namespace","fieldRef":{"apiVersion":"v1","fieldPath":"metadata.namespace"}}]}}]}}]},
        "status":{"phase":"Running","hostIP":"10.1.0.17","hostIPs":[{"ip":"10.1.0.17"}],"podIP":"10.0.0.5","podIPs":[{"ip":"10.0.0.5"}],
          "startTime":"2026-01-01T00:00:01Z","qosClass":"Burstable",
          "conditions":[{"type":"PodReadyToStartContainers","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-01-01T00:00:01Z"},
            {"type":"Initialized","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-01-01T00:00:01Z"},
            {"type":"Ready","status":ready,"lastProbeTime":null,"lastTransitionTime":at},
            {"type":"ContainersReady","status":ready,"lastProbeTime":null,"lastTransitionTime":at},
            {"type":"PodScheduled","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-01-01T00:00:00Z"}],
          "containerStatuses":[{"name":"web","image":"registry.k8s.io/pause:3.10","imageID":"registry.k8s.io/pause@sha256:abc","containerID":"containerd://abc",
            "ready":ready == "True","restartCount":0,"started":ready == "True","state":{"running":{"startedAt":at}}}]}})
    }

    /// The fastest of ten rounds of `n / 10` calls, per call: the machine is shared.
    fn time(label: &str, n: u32, mut f: impl FnMut()) -> std::time::Duration {
        let round = (n / 10).max(1);
        let best = (0..10)
            .map(|_| {
                let start = std::time::Instant::now();
                for _ in 0..round {
                    f();
                }
                start.elapsed() / round
            })
            .min()
            .unwrap_or_default();
        println!("{label}: {best:?} per call");
        best
    }

    /// Calls per timing loop: `TIMING_N`, else 2,000 (fewer under callgrind).
    fn calls() -> u32 {
        std::env::var("TIMING_N")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(2000)
    }

    #[test]
    #[ignore = "timing loop, run by hand with --nocapture"]
    fn status_updates_of_a_pod_that_change_fields() {
        let fm = FieldManager::new("v1", "Pod", "status");
        let live = pod("False", "2026-01-01T00:00:01Z");
        let changed = pod("True", "2026-01-01T00:00:02Z");
        let new: Vec<Value> = (0..calls()).map(|_| changed.clone()).collect();
        let mut new = new.into_iter();
        time("status update that changes fields", calls(), || {
            if let Some(mut new) = new.next() {
                fm.update(Some(&live), &mut new, "kubelet", at(0));
            }
        });
    }

    #[test]
    #[ignore = "timing loop, run by hand with --nocapture"]
    fn status_updates_of_a_pod_that_change_nothing() {
        let fm = FieldManager::new("v1", "Pod", "status");
        let live = pod("False", "2026-01-01T00:00:01Z");
        let new: Vec<Value> = (0..calls()).map(|_| live.clone()).collect();
        let mut new = new.into_iter();
        time("status update that changes nothing", calls(), || {
            if let Some(mut new) = new.next() {
                fm.update(Some(&live), &mut new, "kubelet", at(0));
            }
        });
    }

    #[test]
    #[ignore = "timing loop, run by hand with --nocapture"]
    fn parts_of_a_pods_status_update() {
        let fm = FieldManager::new("v1", "Pod", "status");
        let live = pod("False", "2026-01-01T00:00:01Z");
        let n = calls();
        time("clone of the pod (baseline)", n, || {
            std::hint::black_box(live.clone());
        });
        let bytes = serde_json::to_vec(&live).unwrap();
        time("parse of the pod (baseline)", n, || {
            std::hint::black_box(serde_json::from_slice::<Value>(&bytes).unwrap());
        });
        let entries = managed_entries(&live).unwrap().clone();
        time("decode managed fields", n, || {
            std::hint::black_box(managed_fields::decode(&entries).unwrap());
        });
        let managed = managed_fields::decode(&entries).unwrap();
        time("encode managed fields", n, || {
            std::hint::black_box(managed_fields::encode(&managed));
        });
        let l = without_managed_fields(&live);
        let mut c = pod("True", "2026-01-01T00:00:02Z");
        c["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("managedFields");
        time("compare", n, || {
            std::hint::black_box(
                rkcm_structured_merge::typed::compare(schema::schema(), &fm.root, &l, &c).unwrap(),
            );
        });
        time("update_managers", n, || {
            let mut m = managed.clone();
            fm.updater()
                .update_managers(&l, &c, "v1", &mut m.fields, CURRENT_OPERATION)
                .unwrap();
        });
    }
}
