//! The transformer of each group and resource, with kube's wildcards (`*.group`, `*.*`), as
//! `transformerFromOverrides` in `server/options/encryptionconfig/config.go`.

use std::sync::Arc;

use super::Transformer;

/// A group and resource of the encryption configuration (`schema.GroupResource`); the core
/// group is empty, `*` a wildcard.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct GroupResource {
    /// API group, empty for the core group, `*` for any.
    pub group: String,
    /// Plural resource name, `*` for any.
    pub resource: String,
}

impl GroupResource {
    /// Parses `resource.group` as `schema.ParseGroupResource`: `secrets` is the core group's,
    /// `deployments.apps` the apps group's, `*.` every core resource, `*.*` everything.
    pub fn parse(s: &str) -> Self {
        match s.split_once('.') {
            Some((resource, group)) => Self {
                group: group.to_string(),
                resource: resource.to_string(),
            },
            None => Self {
                group: String::new(),
                resource: s.to_string(),
            },
        }
    }

    /// As the configuration spells it: `*.` for every core resource, `resource.group`, or the
    /// resource alone in the core group.
    pub fn to_config_string(&self) -> String {
        match (self.group.as_str(), self.resource.as_str()) {
            ("", "*") => "*.".to_string(),
            ("", r) => r.to_string(),
            (g, r) => format!("{r}.{g}"),
        }
    }
}

/// The group (empty for the core group) and resource of a storage key
/// `/{group or core}/{resource}/…`. Events of `events.k8s.io` are the core group's, as kube
/// stores them.
pub(crate) fn group_resource_of_key(key: &str) -> (&str, &str) {
    let mut segments = key.trim_start_matches('/').split('/');
    let group = segments.next().unwrap_or_default();
    let resource = segments.next().unwrap_or_default();
    match (group, resource) {
        ("core", r) | ("events.k8s.io", r @ "events") => ("", r),
        (g, r) => (g, r),
    }
}

/// The transformers of the configured resources. A resource takes its own entry, else its
/// group's `*.group`, else `*.*`; the others are stored as they are.
#[derive(Default)]
pub struct ResourceTransformers {
    entries: Vec<(GroupResource, Arc<dyn Transformer>)>,
}

impl ResourceTransformers {
    /// The transformers of each group and resource (one entry each).
    pub fn new(entries: Vec<(GroupResource, Arc<dyn Transformer>)>) -> Self {
        Self { entries }
    }

    fn find(&self, group: &str, resource: &str) -> Option<&Arc<dyn Transformer>> {
        self.entries
            .iter()
            .find(|(gr, _)| gr.group == group && gr.resource == resource)
            .map(|(_, t)| t)
    }

    /// The transformer of `group` and `resource`, if one is configured for it.
    pub fn for_resource(&self, group: &str, resource: &str) -> Option<&Arc<dyn Transformer>> {
        self.find(group, resource)
            .or_else(|| self.find(group, "*"))
            .or_else(|| self.find("*", "*"))
    }

    /// The transformer of the object under storage `key`.
    pub fn for_key(&self, key: &str) -> Option<&Arc<dyn Transformer>> {
        let (group, resource) = group_resource_of_key(key);
        self.for_resource(group, resource)
    }

    /// Whether no resource is configured.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::super::identity::Identity;
    use super::*;

    #[test]
    fn group_resources_parse_as_kube() {
        let gr = |g: &str, r: &str| GroupResource {
            group: g.into(),
            resource: r.into(),
        };
        assert_eq!(GroupResource::parse("secrets"), gr("", "secrets"));
        assert_eq!(GroupResource::parse("*."), gr("", "*"));
        assert_eq!(GroupResource::parse("*.*"), gr("*", "*"));
        assert_eq!(GroupResource::parse("*.apps"), gr("apps", "*"));
        assert_eq!(
            GroupResource::parse("widgets.example.com"),
            gr("example.com", "widgets")
        );
        assert_eq!(gr("", "*").to_config_string(), "*.");
        assert_eq!(gr("apps", "*").to_config_string(), "*.apps");
    }

    #[test]
    fn a_resource_takes_its_own_entry_then_its_groups_then_everything() {
        let own: Arc<dyn Transformer> = Arc::new(Identity);
        let group: Arc<dyn Transformer> = Arc::new(Identity);
        let all: Arc<dyn Transformer> = Arc::new(Identity);
        let t = ResourceTransformers::new(vec![
            (GroupResource::parse("secrets"), Arc::clone(&own)),
            (GroupResource::parse("*.apps"), Arc::clone(&group)),
            (GroupResource::parse("*.*"), Arc::clone(&all)),
        ]);
        let same = |a: Option<&Arc<dyn Transformer>>, b: &Arc<dyn Transformer>| {
            a.is_some_and(|a| Arc::ptr_eq(a, b))
        };
        assert!(same(t.for_key("/core/secrets/ns/s"), &own));
        assert!(same(t.for_key("/apps/deployments/ns/d"), &group));
        assert!(same(t.for_key("/core/configmaps/ns/c"), &all));
        let secrets_only = ResourceTransformers::new(vec![(GroupResource::parse("secrets"), own)]);
        assert!(secrets_only.for_key("/core/configmaps/ns/c").is_none());
        assert!(secrets_only.for_key("/healthz").is_none());
        assert_eq!(
            group_resource_of_key("/events.k8s.io/events/ns/e"),
            ("", "events")
        );
    }
}
