//! Label and field selection of the objects a list, a watch or a deletecollection addresses.

use serde_json::json;

use rkcm_apimachinery::catalog::ResourceInfo;
use rkcm_labels::{FieldSelector, Selector};

use crate::error::{ApiError, ApiResult};
use crate::http::params::Params;
use crate::rest::{Resources, Strategy};
use rkcm_storage::watch_cache::CachedObject;

/// Label and field selectors of a list or watch.
pub struct Filter {
    labels: Option<Selector>,
    fields: Option<FieldSelector>,
    strategy: &'static dyn Strategy,
}

impl Filter {
    /// Parses `labelSelector` and `fieldSelector` (400 when malformed or unsupported), adding
    /// `metadata.name=<name>` when a single object is watched.
    pub fn from_params(
        resources: &dyn Resources,
        info: &ResourceInfo,
        params: &Params,
        name: Option<&str>,
    ) -> ApiResult<Self> {
        let strategy = resources.strategy(info);
        let labels = params
            .non_empty("labelSelector")
            .map(|s| {
                Selector::parse(s)
                    .map_err(|e| ApiError::bad_request(format!("unable to parse requirement: {e}")))
            })
            .transpose()?
            .filter(|s| !s.is_empty());
        let mut field_str = params.non_empty("fieldSelector").unwrap_or("").to_string();
        if let Some(name) = name {
            if !field_str.is_empty() {
                field_str.push(',');
            }
            field_str.push_str(&format!("metadata.name={name}"));
        }
        let fields = if field_str.is_empty() {
            None
        } else {
            let fs = FieldSelector::parse(&field_str)
                .map_err(|e| ApiError::bad_request(format!("invalid field selector: {e}")))?;
            let probe = json!({});
            for r in fs.requirements() {
                let known = matches!(r.field.as_str(), "metadata.name" | "metadata.namespace")
                    || strategy.field_value(&probe, &r.field).is_some();
                if !known {
                    return Err(ApiError::bad_request(format!(
                        "field label not supported: {}",
                        r.field
                    )));
                }
            }
            Some(fs).filter(|f| !f.is_empty())
        };
        Ok(Self {
            labels,
            fields,
            strategy,
        })
    }

    /// Whether the filter selects everything.
    pub fn is_everything(&self) -> bool {
        self.labels.is_none() && self.fields.is_none()
    }

    /// Whether the decoded object `obj` is selected (for objects the cache does not hold).
    pub fn matches_value(&self, obj: &serde_json::Value) -> bool {
        if let Some(l) = &self.labels {
            if !l.matches(&rkcm_storage::object::labels(obj)) {
                return false;
            }
        }
        if let Some(f) = &self.fields {
            let value = |field: &str| match field {
                "metadata.name" => Some(rkcm_storage::object::name(obj).to_string()),
                "metadata.namespace" => Some(rkcm_storage::object::namespace(obj).to_string()),
                other => self.strategy.field_value(obj, other),
            };
            if !f.matches(value) {
                return false;
            }
        }
        true
    }

    /// Whether `obj` is selected. Labels, name, namespace and the fields the cache keeps are
    /// read without decoding; another field decodes the object once.
    pub fn matches(&self, obj: &CachedObject) -> bool {
        if let Some(l) = &self.labels {
            if !l.matches_lookup(|k| obj.label(k)) {
                return false;
            }
        }
        if let Some(f) = &self.fields {
            let decoded = std::cell::OnceCell::new();
            let value = |field: &str| match field {
                "metadata.name" => Some(obj.name().to_string()),
                "metadata.namespace" => Some(obj.namespace().to_string()),
                other => match obj.field(other) {
                    Some(v) => Some(v.to_string()),
                    None => self
                        .strategy
                        .field_value(decoded.get_or_init(|| obj.value()), other),
                },
            };
            if !f.matches(value) {
                return false;
            }
        }
        true
    }
}
