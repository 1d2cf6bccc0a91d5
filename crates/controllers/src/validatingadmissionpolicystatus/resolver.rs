//! Kinds and schemas from the API server, as kube's `RESTMapper` and `ClientDiscoveryResolver`
//! (`k8s.io/apiserver/pkg/cel/openapi/resolver/discovery.go`) find them: a resource's kind from
//! discovery, a kind's schema from the OpenAPI v3 document of its group version.

use std::collections::HashMap;

use serde_json::Value;

use super::cel::Type;
use super::decltype::DeclTypes;
use super::typechecking::Gvk;

/// Why a kind's resources or schema could not be read.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A discovery or OpenAPI request failed.
    #[error("failed to read {path}")]
    Request {
        /// The path requested.
        path: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// A document was not JSON.
    #[error("malformed document at {path}")]
    Malformed {
        /// The path requested.
        path: String,
        /// The decoding error.
        #[source]
        source: serde_json::Error,
    },
}

/// Reads discovery and OpenAPI through one client, caching each document for its lifetime
/// (one reconcile: kube refreshes its REST mapper when a resource is not found).
pub struct Resolver {
    client: kube::Client,
    resources: HashMap<String, Option<Value>>,
    index: Option<Value>,
    documents: HashMap<String, Option<Value>>,
}

impl Resolver {
    /// A resolver with empty caches.
    pub fn new(client: kube::Client) -> Self {
        Self {
            client,
            resources: HashMap::new(),
            index: None,
            documents: HashMap::new(),
        }
    }

    /// `GET path` as JSON; `None` on 404.
    async fn get(&self, path: &str) -> Result<Option<Value>, Error> {
        let req = http::Request::get(path)
            .header("Accept", "application/json")
            .body(Vec::new())
            .expect("a GET request with a fixed path is valid");
        match self.client.request_text(req).await {
            Ok(text) => serde_json::from_str(&text)
                .map(Some)
                .map_err(|source| Error::Malformed {
                    path: path.into(),
                    source,
                }),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(None),
            Err(source) => Err(Error::Request {
                path: path.into(),
                source,
            }),
        }
    }

    /// The kinds `resource` of `group`/`version` has (`RESTMapper.KindsFor`); empty when the
    /// server does not serve it.
    pub async fn kinds_for(
        &mut self,
        group: &str,
        version: &str,
        resource: &str,
    ) -> Result<Vec<Gvk>, Error> {
        let path = if group.is_empty() {
            format!("/api/{version}")
        } else {
            format!("/apis/{group}/{version}")
        };
        if !self.resources.contains_key(&path) {
            let list = self.get(&path).await?;
            self.resources.insert(path.clone(), list);
        }
        let Some(Some(list)) = self.resources.get(&path) else {
            return Ok(Vec::new());
        };
        Ok(list
            .get("resources")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|r| {
                let name = r.get("name").and_then(Value::as_str).unwrap_or_default();
                let singular = r
                    .get("singularName")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                !name.contains('/') && (name == resource || singular == resource)
            })
            .filter_map(|r| r.get("kind").and_then(Value::as_str))
            .map(|kind| Gvk::new(group, version, kind))
            .take(1)
            .collect())
    }

    /// The OpenAPI v3 document of `gvk`'s group version, if served.
    async fn document(&mut self, gvk: &Gvk) -> Result<Option<&Value>, Error> {
        let key = if gvk.group.is_empty() {
            format!("api/{}", gvk.version)
        } else {
            format!("apis/{}/{}", gvk.group, gvk.version)
        };
        if self.index.is_none() {
            self.index = Some(self.get("/openapi/v3").await?.unwrap_or(Value::Null));
        }
        if !self.documents.contains_key(&key) {
            let url = self
                .index
                .as_ref()
                .and_then(|i| {
                    i.pointer(&format!(
                        "/paths/{}/serverRelativeURL",
                        key.replace('~', "~0").replace('/', "~1")
                    ))
                })
                .and_then(Value::as_str)
                .map(str::to_string);
            let doc = match url {
                Some(url) => self.get(&url).await?,
                None => None,
            };
            self.documents.insert(key.clone(), doc);
        }
        Ok(self.documents.get(&key).and_then(Option::as_ref))
    }

    /// The CEL type of `gvk`'s objects (`ResolveSchema` then `SchemaDeclType`): `Ok(None)` when
    /// the server publishes no schema for it (kube's `ErrSchemaNotFound`), `dyn` for a schema
    /// without type.
    pub async fn object_type(&mut self, gvk: &Gvk) -> Result<Option<Type>, Error> {
        let Some(doc) = self.document(gvk).await? else {
            return Ok(None);
        };
        Ok(object_type_in(doc, gvk))
    }
}

/// The type of `gvk` in an OpenAPI v3 document: the component schema whose
/// `x-kubernetes-group-version-kind` names it, with `$ref`s followed.
pub fn object_type_in(doc: &Value, gvk: &Gvk) -> Option<Type> {
    let schemas = doc.pointer("/components/schemas")?.as_object()?;
    let names = |v: &Value| {
        v.get("group").and_then(Value::as_str).unwrap_or_default() == gvk.group
            && v.get("version").and_then(Value::as_str) == Some(gvk.version.as_str())
            && v.get("kind").and_then(Value::as_str) == Some(gvk.kind.as_str())
    };
    let schema = schemas
        .values()
        .find(|s| match s.get("x-kubernetes-group-version-kind") {
            Some(Value::Array(list)) => list.iter().any(names),
            Some(one @ Value::Object(_)) => names(one),
            _ => false,
        })?;
    let resolve = |r: &str| {
        r.strip_prefix("#/components/schemas/")
            .and_then(|n| schemas.get(n))
    };
    Some(
        DeclTypes::new(&resolve)
            .resource(&gvk.kind, schema)
            .unwrap_or(Type::Dyn),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_served_deployment_schema_types_spec_replicas_as_int() {
        let doc: Value = serde_json::from_slice(
            rkcm_apimachinery::openapi::v3_document("apis/apps/v1").expect("apps/v1 is served"),
        )
        .unwrap();
        let Some(Type::Object(d)) = object_type_in(&doc, &Gvk::new("apps", "v1", "Deployment"))
        else {
            panic!("no Deployment type")
        };
        let Some(Type::Object(spec)) = d.fields.get("spec") else {
            panic!("no spec")
        };
        assert_eq!(spec.fields.get("replicas"), Some(&Type::Int));
        assert_eq!(spec.name, "Deployment.spec");
        let Some(Type::Object(meta)) = d.fields.get("metadata") else {
            panic!("no metadata")
        };
        assert_eq!(
            meta.fields.get("labels"),
            Some(&Type::map(Type::String, Type::String))
        );
        assert_eq!(meta.fields.get("creationTimestamp"), Some(&Type::Timestamp));
        assert!(object_type_in(&doc, &Gvk::new("apps", "v1", "Nope")).is_none());
    }
}
