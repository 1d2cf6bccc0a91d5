//! What a plugin learns of a request (`admission.Attributes`).

use std::any::Any;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use rkcm_apimachinery::catalog::ResourceInfo;

use crate::auth::user::UserInfo;
use crate::error::ApiError;
use rkcm_storage::object;

/// The operation being admitted (`admission.Operation`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operation {
    /// `CREATE`.
    Create,
    /// `UPDATE`.
    Update,
    /// `DELETE`.
    Delete,
    /// `CONNECT` (exec, attach, port-forward, proxy).
    Connect,
}

impl Operation {
    /// kube's spelling (`CREATE`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
            Operation::Connect => "CONNECT",
        }
    }
}

/// Group, version and kind of the object a request carries (`schema.GroupVersionKind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kind {
    /// API group, empty for the core group.
    pub group: &'static str,
    /// API version.
    pub version: &'static str,
    /// Kind (`Pod`, `Scale`, ...).
    pub kind: &'static str,
}

impl Kind {
    /// Whether this is `kind` of the core group (`Pod`, `PersistentVolumeClaim`, ...).
    pub fn is_core(&self, kind: &str) -> bool {
        self.group.is_empty() && self.kind == kind
    }
}

/// What the mutating phase keeps between its rounds (`admission.ReinvocationContext`): a
/// plugin that changed the object may ask for the phase to run once more, so that plugins
/// that ran before the change see it; plugins keep what they need between rounds under
/// their name.
#[derive(Clone, Default)]
pub struct Reinvocation {
    is_reinvoke: bool,
    should_reinvoke: bool,
    values: BTreeMap<&'static str, Arc<dyn Any + Send + Sync>>,
}

impl fmt::Debug for Reinvocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reinvocation")
            .field("is_reinvoke", &self.is_reinvoke)
            .field("should_reinvoke", &self.should_reinvoke)
            .field("values", &self.values.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Reinvocation {
    /// Whether this is the second round.
    pub fn is_reinvoke(&self) -> bool {
        self.is_reinvoke
    }

    /// Marks the second round.
    pub fn set_is_reinvoke(&mut self) {
        self.is_reinvoke = true;
    }

    /// Whether a plugin asked for a second round.
    pub fn should_reinvoke(&self) -> bool {
        self.should_reinvoke
    }

    /// Asks for a second round.
    pub fn set_should_reinvoke(&mut self) {
        self.should_reinvoke = true;
    }

    /// What the plugin `key` keeps between rounds: the value stored, or a new default one.
    /// `None` when another type is stored under `key`.
    pub fn value<T: Any + Send + Sync + Default>(&mut self, key: &'static str) -> Option<Arc<T>> {
        self.values
            .entry(key)
            .or_insert_with(|| Arc::new(T::default()))
            .clone()
            .downcast::<T>()
            .ok()
    }
}

/// The attributes of one admission request (`admission.AttributesRecord`).
///
/// `object` is what the write would store (absent for deletes and connects); plugins of the
/// mutating phase may change it. `old_object` is the stored object of updates and deletes.
#[derive(Clone, Debug)]
pub struct Attributes {
    /// The operation.
    pub operation: Operation,
    /// The kind of the object carried.
    pub kind: Kind,
    /// The resource addressed.
    pub resource: &'static ResourceInfo,
    /// The subresource (`status`, `scale`, ...), empty for the main resource.
    pub subresource: &'static str,
    /// The namespace, empty for cluster-scoped resources.
    pub namespace: String,
    /// The object's name; empty on a create that generates it.
    pub name: String,
    object: Option<Value>,
    old_object: Option<Arc<Value>>,
    /// Who makes the request.
    pub user: Arc<UserInfo>,
    /// `dryRun=All`: admitted as any other write, nothing is stored.
    pub dry_run: bool,
    /// What the mutating phase keeps between its rounds.
    pub reinvocation: Reinvocation,
}

impl Attributes {
    /// Attributes of `operation` on `name` of `resource` (its subresource `subresource`), with
    /// the kind the resource holds.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        operation: Operation,
        resource: &'static ResourceInfo,
        subresource: &'static str,
        namespace: Option<&str>,
        name: &str,
        object: Option<Value>,
        old_object: Option<Arc<Value>>,
        user: Arc<UserInfo>,
        dry_run: bool,
    ) -> Self {
        Self {
            operation,
            kind: Kind {
                group: resource.group,
                version: resource.version,
                kind: resource.kind,
            },
            resource,
            subresource,
            namespace: namespace.unwrap_or_default().to_string(),
            name: name.to_string(),
            object,
            old_object,
            user,
            dry_run,
            reinvocation: Reinvocation::default(),
        }
    }

    /// The object the write would store.
    pub fn object(&self) -> Option<&Value> {
        self.object.as_ref()
    }

    /// The object, for plugins of the mutating phase to change.
    pub fn object_mut(&mut self) -> Option<&mut Value> {
        self.object.as_mut()
    }

    /// The stored object an update or delete starts from.
    pub fn old_object(&self) -> Option<&Value> {
        self.old_object.as_deref()
    }

    /// Takes the (possibly mutated) object back.
    pub fn into_object(self) -> Option<Value> {
        self.object
    }

    /// Whether the request addresses `resource` of the core group itself (no subresource).
    pub fn is_core_resource(&self, plural: &str) -> bool {
        self.resource.group.is_empty()
            && self.resource.plural == plural
            && self.subresource.is_empty()
    }
}

/// 403 Forbidden for the object of `attrs` (`admission.NewForbidden`): the request's name, else
/// the object's, else its `generateName`, else `Unknown` names it, as kube does before names are
/// generated.
pub fn forbidden(attrs: &Attributes, why: &str) -> ApiError {
    let mut name = "Unknown".to_string();
    if !attrs.name.is_empty() {
        name = attrs.name.clone();
    } else if let Some(obj) = attrs.object() {
        let n = object::name(obj);
        if !n.is_empty() {
            name = n.to_string();
        } else if let Some(g) = object::meta_str(obj, "generateName").filter(|g| !g.is_empty()) {
            name = g.to_string();
        }
    }
    ApiError::forbidden(attrs.resource, &name, why)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pods() -> &'static ResourceInfo {
        rkcm_apimachinery::catalog::by_kind("v1", "Pod").expect("pods")
    }

    fn attrs(obj: Option<Value>) -> Attributes {
        Attributes::new(
            Operation::Create,
            pods(),
            "",
            Some("ns"),
            "",
            obj,
            None,
            Arc::new(UserInfo::default()),
            false,
        )
    }

    #[test]
    fn forbidden_names_the_object_its_generate_name_or_unknown() {
        let named = attrs(Some(json!({"metadata": {"name": "p"}})));
        assert_eq!(
            forbidden(&named, "no").message,
            "pods \"p\" is forbidden: no"
        );
        let generated = attrs(Some(json!({"metadata": {"generateName": "p-"}})));
        assert_eq!(
            forbidden(&generated, "no").message,
            "pods \"p-\" is forbidden: no"
        );
        assert_eq!(
            forbidden(&attrs(None), "no").message,
            "pods \"Unknown\" is forbidden: no"
        );
        assert_eq!(forbidden(&attrs(None), "no").code, 403);
    }
}
