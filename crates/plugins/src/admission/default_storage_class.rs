//! `DefaultStorageClass`: a new claim that names no StorageClass gets the default one.
//!
//! Mirrors `plugin/pkg/admission/storage/storageclass/setdefault/admission.go` and
//! `GetDefaultClass` of `pkg/volume/util`: with several default classes, the newest wins (then
//! the first by name), as since kube 1.26.

use async_trait::async_trait;
use serde_json::{json, Value};

use super::plugins::DEFAULT_STORAGE_CLASS;
use rkcm_server::admission::attributes::{Attributes, Operation};
use rkcm_server::admission::plugin::Plugin;
use rkcm_server::error::ApiResult;
use rkcm_server::rest;
use rkcm_storage::store::Store;

/// The annotation marking the default StorageClass.
pub const IS_DEFAULT_CLASS_ANNOTATION: &str = "storageclass.kubernetes.io/is-default-class";
/// Its beta spelling, still honoured.
pub const BETA_IS_DEFAULT_CLASS_ANNOTATION: &str =
    "storageclass.beta.kubernetes.io/is-default-class";
/// The beta annotation naming a claim's class, which counts as a class.
pub const BETA_STORAGE_CLASS_ANNOTATION: &str = "volume.beta.kubernetes.io/storage-class";

/// The plugin.
pub struct DefaultStorageClass {
    store: Store,
}

impl DefaultStorageClass {
    /// The plugin, reading StorageClasses from `store`.
    pub fn new(store: Store) -> Self {
        Self { store }
    }
}

fn annotation<'a>(obj: &'a Value, key: &str) -> Option<&'a Value> {
    obj.pointer("/metadata/annotations")
        .and_then(|a| a.get(key))
}

/// Whether `class` is marked as the default (`IsDefaultAnnotation`).
pub fn is_default_class(class: &Value) -> bool {
    [
        IS_DEFAULT_CLASS_ANNOTATION,
        BETA_IS_DEFAULT_CLASS_ANNOTATION,
    ]
    .iter()
    .any(|k| annotation(class, k).and_then(Value::as_str) == Some("true"))
}

/// Whether a claim names a class, even the empty one (`PersistentVolumeClaimHasClass`).
pub fn claim_has_class(claim: &Value) -> bool {
    claim
        .pointer("/spec/storageClassName")
        .is_some_and(|v| !v.is_null())
        || annotation(claim, BETA_STORAGE_CLASS_ANNOTATION).is_some()
}

/// The default class among `classes` (`GetDefaultClass`): the most recently created of those
/// marked default, the first by name among equally recent ones.
pub fn default_class(classes: &[Value]) -> Option<&Value> {
    let created = |c: &Value| {
        rkcm_storage::object::meta_str(c, "creationTimestamp")
            .and_then(|t| t.parse::<jiff::Timestamp>().ok())
    };
    classes
        .iter()
        .filter(|c| is_default_class(c))
        .min_by(|a, b| {
            created(b)
                .cmp(&created(a))
                .then_with(|| rkcm_storage::object::name(a).cmp(rkcm_storage::object::name(b)))
        })
}

#[async_trait]
impl Plugin for DefaultStorageClass {
    fn name(&self) -> &'static str {
        DEFAULT_STORAGE_CLASS
    }

    fn handles(&self, operation: Operation) -> bool {
        operation == Operation::Create
    }

    async fn admit(&self, attrs: &mut Attributes) -> ApiResult<()> {
        if !attrs.is_core_resource("persistentvolumeclaims") {
            return Ok(());
        }
        if attrs.object().is_none_or(claim_has_class) {
            return Ok(());
        }
        let info = rkcm_apimachinery::catalog::by_kind("storage.k8s.io/v1", "StorageClass")
            .expect("storage classes are in the catalog");
        let (stored, _, _) = self
            .store
            .cache()
            .list(&rest::prefix(info, None), None, 0, &|_| true);
        let classes: Vec<Value> = stored.iter().map(|c| c.value()).collect();
        let Some(name) = default_class(&classes).map(|c| rkcm_storage::object::name(c).to_string())
        else {
            return Ok(());
        };
        if let Some(spec) = attrs
            .object_mut()
            .and_then(|c| c.get_mut("spec"))
            .and_then(Value::as_object_mut)
        {
            spec.insert("storageClassName".into(), json!(name));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::testing::{attributes, store_with};

    fn class(name: &str, created: &str, default: Option<&str>) -> Value {
        let mut c = json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": name, "creationTimestamp": created}, "provisioner": "p"});
        if let Some(d) = default {
            c["metadata"]["annotations"] = json!({IS_DEFAULT_CLASS_ANNOTATION: d});
        }
        c
    }

    fn claim(spec: Value) -> Value {
        json!({"metadata": {"name": "c", "namespace": "ns"}, "spec": spec})
    }

    async fn admit(classes: &[Value], claim: Value) -> Value {
        let plugin = DefaultStorageClass::new(store_with(classes).await);
        let mut attrs = attributes(
            Operation::Create,
            "PersistentVolumeClaim",
            "ns",
            Some(claim),
            None,
        );
        plugin.admit(&mut attrs).await.expect("admitted");
        attrs.into_object().expect("claim")
    }

    #[tokio::test]
    async fn cases_of_kubes_admission_test() {
        let t1 = "2024-01-01T00:00:00Z";
        let t2 = "2024-01-02T00:00:00Z";
        let gold = class("gold", t1, Some("true"));
        let silver = class("silver", t1, Some("false"));
        let bronze = class("bronze", t1, None);
        let newer = class("newer", t2, Some("true"));
        let also = class("also", t1, Some("true"));
        let cases: [(&str, Vec<Value>, Value, Option<&str>); 7] = [
            (
                "no default class",
                vec![silver.clone(), bronze.clone()],
                claim(json!({})),
                None,
            ),
            (
                "one default class",
                vec![gold.clone(), silver.clone()],
                claim(json!({})),
                Some("gold"),
            ),
            (
                "a class already named",
                vec![gold.clone()],
                claim(json!({"storageClassName": "bronze"})),
                Some("bronze"),
            ),
            (
                "the empty class is a class",
                vec![gold.clone()],
                claim(json!({"storageClassName": ""})),
                Some(""),
            ),
            (
                "the newest default wins",
                vec![gold.clone(), newer.clone()],
                claim(json!({})),
                Some("newer"),
            ),
            (
                "equally new defaults: first by name",
                vec![gold.clone(), also.clone()],
                claim(json!({})),
                Some("also"),
            ),
            ("no classes at all", vec![], claim(json!({})), None),
        ];
        for (what, classes, claim, want) in cases {
            let out = admit(&classes, claim).await;
            assert_eq!(out["spec"]["storageClassName"].as_str(), want, "{what}");
        }
        let mut beta = claim(json!({}));
        beta["metadata"]["annotations"] = json!({BETA_STORAGE_CLASS_ANNOTATION: "x"});
        let out = admit(&[gold], beta).await;
        assert!(
            out["spec"].get("storageClassName").is_none(),
            "the beta annotation names a class"
        );
    }
}
