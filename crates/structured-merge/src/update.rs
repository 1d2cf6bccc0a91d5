//! Field ownership across writes: apply for one manager, and updates that take fields.
//!
//! Mirrors `merge/update.go` for objects served in one version (no conversion between the
//! versions managers wrote with). Managers are opaque strings here; kube-apiserver encodes
//! manager, operation, API version and subresource into them.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::conflict::Conflicts;
use crate::schema::{Schema, TypeRef};
use crate::set::Set;
use crate::typed::{self, Comparison};
use crate::value;
use crate::Error;

/// The fields one manager owns, with the API version it wrote them in and whether it applied
/// them (`fieldpath.VersionedSet`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VersionedSet {
    /// The owned fields.
    pub set: Set,
    /// The API version the manager used.
    pub api_version: String,
    /// Whether the fields were applied (operation `Apply`), not updated.
    pub applied: bool,
}

/// Each manager's fields (`fieldpath.ManagedFields`).
pub type ManagedFields = BTreeMap<String, VersionedSet>;

/// Why an apply or update failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UpdateError {
    /// Another manager owns fields the apply changes, and it was not forced.
    #[error(transparent)]
    Conflicts(#[from] Conflicts),
    /// A value cannot be walked with the schema (a map-list item without keys, a duplicate).
    #[error(transparent)]
    Invalid(#[from] Error),
}

/// Merges applied configurations and tracks ownership for objects of one type
/// (`merge.Updater`).
#[derive(Clone, Debug)]
pub struct Updater<'s> {
    schema: &'s Schema,
    root: TypeRef,
    /// Fields (and everything below them) that this kind of write neither owns nor conflicts
    /// on, because the server resets them (`IgnoredFields`, from a strategy's reset fields).
    ignored: Set,
}

impl<'s> Updater<'s> {
    /// An updater for objects of type `root` in `schema`.
    pub fn new(schema: &'s Schema, root: TypeRef) -> Updater<'s> {
        Updater {
            schema,
            root,
            ignored: Set::new(),
        }
    }

    /// This updater ignoring `ignored` and everything below it.
    pub fn with_ignored(mut self, ignored: Set) -> Updater<'s> {
        self.ignored = ignored;
        self
    }

    fn field_set(&self, v: &Value) -> Result<Set, Error> {
        typed::to_field_set(self.schema, &self.root, v)
    }

    fn ensure_named(&self, s: &Set) -> Set {
        s.ensure_named_fields_are_members(self.schema, &self.root)
    }

    fn remove(&self, v: &Value, s: &Set) -> Value {
        typed::remove_items(self.schema, &self.root, v, s)
            .unwrap_or_else(|| Value::Object(Map::new()))
    }

    /// What changed, and which other managers lose which fields: those whose value changed
    /// (conflicts unless `force`) and those removed.
    fn update(
        &self,
        old: &Value,
        new: &Value,
        managers: &mut ManagedFields,
        workflow: &str,
        force: bool,
    ) -> Result<Comparison, UpdateError> {
        let mut compare = typed::compare(self.schema, &self.root, old, new)?;
        if !self.ignored.is_empty() {
            compare.removed = compare.removed.recursive_difference(&self.ignored);
            compare.modified = compare.modified.recursive_difference(&self.ignored);
            compare.added = compare.added.recursive_difference(&self.ignored);
        }
        let changed = compare.modified.union(&compare.added);
        let mut conflicts = BTreeMap::new();
        for (manager, vs) in managers.iter() {
            if manager == workflow {
                continue;
            }
            let c = vs.set.intersection(&changed);
            if !c.is_empty() {
                conflicts.insert(manager.clone(), c);
            }
        }
        if !force && !conflicts.is_empty() {
            return Err(Conflicts::from_managers(&conflicts).into());
        }
        for (manager, vs) in managers.iter_mut() {
            if manager == workflow {
                continue;
            }
            if let Some(c) = conflicts.get(manager) {
                vs.set = vs.set.difference(c);
            }
            if !compare.removed.is_empty() {
                vs.set = vs.set.difference(&compare.removed);
            }
        }
        managers.retain(|_, vs| !vs.set.is_empty());
        Ok(compare)
    }

    /// Records a create, update or non-apply patch from `live` to `new` by `manager`
    /// (`Updater.Update`): the fields it changed become its own and are taken from others.
    pub fn update_managers(
        &self,
        live: &Value,
        new: &Value,
        version: &str,
        managers: &mut ManagedFields,
        manager: &str,
    ) -> Result<(), UpdateError> {
        let compare = self.update(live, new, managers, manager, true)?;
        let previous = managers
            .get(manager)
            .map(|vs| vs.set.clone())
            .unwrap_or_default();
        let set = previous
            .difference(&compare.removed)
            .union(&compare.modified)
            .union(&compare.added);
        if set.is_empty() {
            managers.remove(manager);
        } else {
            managers.insert(
                manager.to_string(),
                VersionedSet {
                    set,
                    api_version: version.to_string(),
                    applied: false,
                },
            );
        }
        Ok(())
    }

    /// Applies `config` for `manager` to `live` (`Updater.Apply`): merges it, removes the
    /// fields the manager applied last time and no longer applies unless another manager owns
    /// them, and fails with the conflicts unless `force` takes the fields over. Returns the new
    /// object, or `None` when it equals `live`.
    pub fn apply(
        &self,
        live: &Value,
        config: &Value,
        version: &str,
        managers: &mut ManagedFields,
        manager: &str,
        force: bool,
    ) -> Result<Option<Value>, UpdateError> {
        let merged = typed::merge(self.schema, &self.root, live, config)?;
        let last = managers.get(manager).map(|vs| vs.set.clone());
        let set = self.field_set(config)?.recursive_difference(&self.ignored);
        let mut proposed = managers.clone();
        proposed.insert(
            manager.to_string(),
            VersionedSet {
                set,
                api_version: version.to_string(),
                applied: true,
            },
        );
        let new = self.prune(merged, &proposed, last.as_ref())?;
        self.update(live, &new, &mut proposed, manager, force)?;
        *managers = proposed;
        Ok((!value::equals(&new, live)).then_some(new))
    }

    /// Removes what the applier owned last time and no longer applies, unless someone owns it
    /// (`prune`, `addBackOwnedItems`, `addBackDanglingItems`).
    fn prune(
        &self,
        merged: Value,
        managers: &ManagedFields,
        last: Option<&Set>,
    ) -> Result<Value, Error> {
        let Some(last) = last.filter(|s| !s.is_empty()) else {
            return Ok(merged);
        };
        let last = self.ensure_named(last);
        let pruned = self.remove(&merged, &last);
        // Add back what any manager (the applier's new configuration included) owns.
        let managed = managers
            .values()
            .fold(Set::new(), |acc, vs| acc.union(&vs.set));
        let merged_set = self.ensure_named(&self.field_set(&merged)?);
        let pruned_set = self.ensure_named(&self.field_set(&pruned)?);
        let keep = pruned_set.union(&self.ensure_named(&managed));
        let pruned = self.remove(&merged, &merged_set.difference(&keep));
        // Add back what was removed but the applier did not own last time.
        let pruned_set = self.ensure_named(&self.field_set(&pruned)?);
        Ok(self.remove(
            &merged,
            &merged_set.difference(&pruned_set).intersection(&last),
        ))
    }
}
