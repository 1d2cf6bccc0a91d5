//! Typed object keys: `namespace/name`, or `name` for cluster-scoped objects.

use std::fmt;
use std::str::FromStr;

/// Identifies an object in a cache or a work queue, as client-go's `namespace/name` key does.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey {
    /// Namespace, `None` for cluster-scoped objects.
    pub namespace: Option<String>,
    /// Object name.
    pub name: String,
}

impl ObjectKey {
    /// Key of a namespaced object.
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            namespace: Some(namespace.into()),
            name: name.into(),
        }
    }

    /// Key of a cluster-scoped object.
    pub fn cluster(name: impl Into<String>) -> Self {
        Self {
            namespace: None,
            name: name.into(),
        }
    }

    /// Key of `obj`, from its metadata (an empty namespace counts as cluster-scoped).
    pub fn from_obj<K: kube::Resource>(obj: &K) -> Self {
        let meta = obj.meta();
        Self {
            namespace: meta.namespace.clone().filter(|ns| !ns.is_empty()),
            name: meta.name.clone().unwrap_or_default(),
        }
    }

    /// The namespace, or `""` for cluster-scoped objects.
    pub fn namespace_str(&self) -> &str {
        self.namespace.as_deref().unwrap_or("")
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{ns}/{}", self.name),
            None => f.write_str(&self.name),
        }
    }
}

/// Error for a key string with more than one `/`.
#[derive(Debug, thiserror::Error)]
#[error("unexpected key format: {0:?}")]
pub struct ParseKeyError(String);

impl FromStr for ObjectKey {
    type Err = ParseKeyError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut parts = s.split('/');
        match (parts.next(), parts.next(), parts.next()) {
            (Some(name), None, None) if !name.is_empty() => Ok(Self::cluster(name)),
            (Some(ns), Some(name), None) if !name.is_empty() => Ok(if ns.is_empty() {
                Self::cluster(name)
            } else {
                Self::new(ns, name)
            }),
            _ => Err(ParseKeyError(s.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Pod;
    use kube::api::ObjectMeta;

    #[test]
    fn keys_print_and_parse_as_client_go_does() {
        let key = ObjectKey::new("default", "web");
        assert_eq!(key.to_string(), "default/web");
        assert_eq!("default/web".parse::<ObjectKey>().unwrap(), key);
        assert_eq!(
            "node-1".parse::<ObjectKey>().unwrap(),
            ObjectKey::cluster("node-1")
        );
        assert!("a/b/c".parse::<ObjectKey>().is_err());
        assert!("".parse::<ObjectKey>().is_err());
    }

    #[test]
    fn key_of_an_object_comes_from_its_metadata() {
        let pod = Pod {
            metadata: ObjectMeta {
                namespace: Some("ns".into()),
                name: Some("p".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        assert_eq!(ObjectKey::from_obj(&pod), ObjectKey::new("ns", "p"));
    }
}
