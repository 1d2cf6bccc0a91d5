//! The pod-template-hash: naming a ReplicaSet after its pod template, and comparing templates while
//! ignoring that label.
//!
//! kube's `controller.ComputeHash` writes the template with `DeepHashObject` (a spew dump of the Go
//! struct) into FNV-32a, appends `status.collisionCount`, and renders the decimal sum with
//! `rand.SafeEncodeString`. A Go struct dump cannot be reproduced byte for byte from Rust, so our
//! hash is FNV-32a over the template's canonical JSON (fields in declaration order, maps sorted)
//! followed by the same collision-count bytes and the same encoding. Hashes therefore differ from
//! kube-controller-manager's for the same template; what matters — stable for a template, distinct
//! across templates, changed by a collision-count bump — holds.

use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use rkcm_apimachinery::semantic;
use rkcm_runtime::hash::{safe_encode_string, Fnv32a};
use serde_json::Value;

use super::spec::POD_TEMPLATE_HASH_LABEL;

/// The pod-template-hash of `template` with `collision_count` mixed in.
#[doc(alias = "ComputeHash")]
pub fn compute_hash(template: &PodTemplateSpec, collision_count: Option<i32>) -> String {
    // Serializing a k8s-openapi struct cannot fail: every field is plain data with string keys.
    let json = serde_json::to_vec(template).unwrap_or_default();
    let mut h = Fnv32a::new();
    h.write(&json);
    if let Some(count) = collision_count {
        // Go writes the count with binary.LittleEndian.PutUint32 into an 8-byte buffer.
        let mut bytes = [0u8; 8];
        bytes[..4].copy_from_slice(&(count as u32).to_le_bytes());
        h.write(&bytes);
    }
    safe_encode_string(&h.sum32().to_string())
}

/// The template's metadata without the pod-template-hash label (absent metadata as empty).
fn metadata_without_hash(template: &PodTemplateSpec) -> ObjectMeta {
    let mut meta = template.metadata.clone().unwrap_or_default();
    if let Some(labels) = meta.labels.as_mut() {
        labels.remove(POD_TEMPLATE_HASH_LABEL);
    }
    meta
}

fn comparable(template: &PodTemplateSpec) -> Value {
    let mut t = template.clone();
    if let Some(labels) = t.metadata.as_mut().and_then(|m| m.labels.as_mut()) {
        labels.remove(POD_TEMPLATE_HASH_LABEL);
    }
    // Serializing a k8s-openapi struct cannot fail: every field is plain data with string keys.
    serde_json::to_value(&t).unwrap_or(Value::Null)
}

/// Whether two pod templates are equal apart from the pod-template-hash label, as apimachinery's
/// `Semantic.DeepEqual` finds them: empty and absent lists, maps and value structs alike (so the
/// `resources: {}` that `kubectl rollout undo` sends back matches a template without it),
/// quantities by value.
#[doc(alias = "EqualIgnoreHash")]
pub fn equal_ignore_hash(a: &PodTemplateSpec, b: &PodTemplateSpec) -> bool {
    // Templates equal field for field are semantically equal too; the Deployment controller
    // compares its template with each ReplicaSet's on every sync, and the new ReplicaSet's is a
    // copy, so most comparisons end here without building two JSON trees.
    if a.spec == b.spec && metadata_without_hash(a) == metadata_without_hash(b) {
        return true;
    }
    semantic::deep_equal(
        &semantic::types::POD_TEMPLATE_SPEC,
        &comparable(a),
        &comparable(b),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    use k8s_openapi::api::core::v1::{Container, PodSpec, ResourceRequirements};
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    use kube::api::ObjectMeta;

    fn template(
        name: &str,
        node: &str,
        annotations: &[(&str, &str)],
        labels: &[(&str, &str)],
    ) -> PodTemplateSpec {
        let map = |kv: &[(&str, &str)]| -> BTreeMap<String, String> {
            kv.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        PodTemplateSpec {
            metadata: Some(ObjectMeta {
                name: Some(name.into()),
                annotations: Some(map(annotations)),
                labels: Some(map(labels)),
                ..Default::default()
            }),
            spec: Some(PodSpec {
                node_name: Some(node.into()),
                ..Default::default()
            }),
        }
    }

    #[test]
    fn templates_compare_equal_ignoring_only_the_hash_label() {
        // TestEqualIgnoreHash, both orders.
        const H: &str = POD_TEMPLATE_HASH_LABEL;
        let cases = [
            (
                template(
                    "foo",
                    "foo-node",
                    &[],
                    &[(H, "value-1"), ("something", "else")],
                ),
                template(
                    "foo",
                    "foo-node",
                    &[],
                    &[(H, "value-1"), ("something", "else")],
                ),
                true,
            ),
            (
                template(
                    "foo",
                    "foo-node",
                    &[],
                    &[(H, "value-1"), ("something", "else")],
                ),
                template(
                    "foo",
                    "foo-node",
                    &[],
                    &[(H, "value-2"), ("something", "else")],
                ),
                true,
            ),
            (
                template("foo", "foo-node", &[], &[("something", "else")]),
                template(
                    "foo",
                    "foo-node",
                    &[],
                    &[(H, "value-2"), ("something", "else")],
                ),
                true,
            ),
            (
                template("foo", "foo-node", &[], &[(H, "value-1")]),
                template(
                    "foo",
                    "foo-node",
                    &[],
                    &[(H, "value-1"), ("something", "else")],
                ),
                false,
            ),
            (
                template(
                    "foo",
                    "foo-node",
                    &[("former", "value")],
                    &[(H, "value-1"), ("something", "else")],
                ),
                template(
                    "foo",
                    "foo-node",
                    &[("latter", "value")],
                    &[(H, "value-1"), ("something", "else")],
                ),
                false,
            ),
            (
                template(
                    "foo-1",
                    "foo-node",
                    &[],
                    &[(H, "value-1"), ("something", "else")],
                ),
                template(
                    "foo-2",
                    "foo-node",
                    &[],
                    &[(H, "value-2"), ("something", "else")],
                ),
                false,
            ),
            (
                template("foo-1", "foo-node-1", &[], &[("something", "else")]),
                template(
                    "foo-2",
                    "foo-node-2",
                    &[],
                    &[(H, "value-2"), ("something", "else")],
                ),
                false,
            ),
            (
                template("foo", "foo-node-1", &[], &[("something", "else")]),
                template("foo", "foo-node-2", &[], &[("nothing", "else")]),
                false,
            ),
        ];
        for (i, (a, b, expected)) in cases.iter().enumerate() {
            assert_eq!(equal_ignore_hash(a, b), *expected, "case {i}");
            assert_eq!(equal_ignore_hash(b, a), *expected, "case {i} reversed");
            assert!(
                a.metadata.as_ref().unwrap().labels.is_some(),
                "inputs are not mutated"
            );
        }
    }

    #[test]
    fn empty_and_absent_maps_and_lists_are_equal() {
        let mut a = template("foo", "n", &[], &[("app", "x")]);
        let mut b = a.clone();
        a.metadata.as_mut().unwrap().annotations = None;
        b.spec.as_mut().unwrap().containers = vec![];
        b.spec.as_mut().unwrap().volumes = Some(vec![]);
        assert!(equal_ignore_hash(&a, &b));
    }

    #[test]
    fn a_template_sent_back_by_rollout_undo_equals_the_replica_sets() {
        // `kubectl rollout undo` writes the ReplicaSet's template into the Deployment with
        // `creationTimestamp: null` and `resources: {}` in each container.
        let mut rs_template = template(
            "",
            "",
            &[],
            &[(POD_TEMPLATE_HASH_LABEL, "abc"), ("app", "web")],
        );
        rs_template.spec.as_mut().unwrap().containers = vec![Container {
            name: "web".into(),
            image: Some("nginx:1.27".into()),
            ..Default::default()
        }];
        let undone: PodTemplateSpec = serde_json::from_value(serde_json::json!({
            "metadata": {"creationTimestamp": null, "labels": {"app": "web"}},
            "spec": {"nodeName": "", "containers": [{"name": "web", "image": "nginx:1.27", "resources": {}}]},
        }))
        .unwrap();
        assert!(equal_ignore_hash(&rs_template, &undone));
        assert!(equal_ignore_hash(&undone, &rs_template));

        // A nil pointer still differs from a pointer to an empty struct, and quantities compare by
        // value.
        let mut with_security_context = undone.clone();
        with_security_context.spec.as_mut().unwrap().containers[0].security_context =
            Some(Default::default());
        assert!(!equal_ignore_hash(&rs_template, &with_security_context));
        let limits = |cpu: &str| {
            let mut t = undone.clone();
            t.spec.as_mut().unwrap().containers[0].resources = Some(ResourceRequirements {
                limits: Some([("cpu".to_string(), Quantity(cpu.into()))].into()),
                ..Default::default()
            });
            t
        };
        assert!(equal_ignore_hash(&limits("1"), &limits("1000m")));
        assert!(!equal_ignore_hash(&limits("1"), &limits("2")));
    }

    #[test]
    fn hash_is_stable_safe_and_changed_by_the_collision_count() {
        let t = template("", "", &[], &[("app", "web")]);
        let h = compute_hash(&t, None);
        assert_eq!(h, compute_hash(&t, None));
        assert!(!h.is_empty() && h.len() <= 10);
        assert!(h
            .bytes()
            .all(|b| rkcm_runtime::hash::SAFE_ALPHABET.contains(&b)));
        assert_ne!(h, compute_hash(&t, Some(1)));
        assert_ne!(compute_hash(&t, Some(1)), compute_hash(&t, Some(2)));
        let other = template("", "", &[], &[("app", "api")]);
        assert_ne!(h, compute_hash(&other, None));
    }

    #[test]
    fn a_thousand_templates_hash_without_collisions() {
        // TestPodTemplateSpecHash: templates differing only in a version.
        let mut seen = std::collections::HashMap::new();
        for i in 0..1000 {
            let t = template("", "", &[], &[("app", "web"), ("version", &i.to_string())]);
            if let Some(previous) = seen.insert(compute_hash(&t, None), i) {
                panic!("hash collision between versions {previous} and {i}");
            }
        }
    }
}
