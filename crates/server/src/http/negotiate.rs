//! Content negotiation of responses: plain objects, `Table`, or `PartialObjectMetadata`.
//!
//! Mirrors `staging/src/k8s.io/apiserver/pkg/endpoints/handlers/response.go` (`transformObject`):
//! the `Accept` header may ask for `as=Table;g=meta.k8s.io;v=v1` or
//! `as=PartialObjectMetadata[List];g=meta.k8s.io;v=v1`. Protobuf is not served; clients that also
//! accept JSON get JSON.

use http::HeaderMap;

use crate::error::{ApiError, ApiResult};
use crate::http::params::Params;

/// What `rows[].object` of a Table holds (`includeObject`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IncludeObject {
    /// Nothing.
    None,
    /// `PartialObjectMetadata` (the default).
    Metadata,
    /// The full object.
    Object,
}

/// The representation a client asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// The objects themselves.
    Object,
    /// A `meta.k8s.io/v1` Table.
    Table(IncludeObject),
    /// `PartialObjectMetadata` / `PartialObjectMetadataList`.
    Metadata,
}

/// Decides the output from the `Accept` header and the `includeObject` parameter.
pub fn output(headers: &HeaderMap, params: &Params) -> ApiResult<Output> {
    let accept = headers
        .get_all(http::header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect::<Vec<_>>()
        .join(",");
    if accept.trim().is_empty() {
        return Ok(Output::Object);
    }
    for media in accept.split(',') {
        let mut parts = media.split(';').map(str::trim);
        let mime = parts.next().unwrap_or("").to_ascii_lowercase();
        let mut as_ = None;
        let mut group = None;
        for p in parts {
            if let Some((k, v)) = p.split_once('=') {
                match k.trim() {
                    "as" => as_ = Some(v.trim().to_string()),
                    "g" => group = Some(v.trim().to_string()),
                    _ => {}
                }
            }
        }
        let json_like = matches!(mime.as_str(), "application/json" | "*/*" | "application/*");
        if !json_like {
            continue;
        }
        match (as_.as_deref(), group.as_deref()) {
            (None, _) => return Ok(Output::Object),
            (Some("Table"), Some("meta.k8s.io")) => {
                let include = match params.non_empty("includeObject") {
                    None | Some("Metadata") => IncludeObject::Metadata,
                    Some("None") => IncludeObject::None,
                    Some("Object") => IncludeObject::Object,
                    Some(other) => {
                        return Err(ApiError::bad_request(format!(
                            "unsupported includeObject value: {other:?}"
                        )))
                    }
                };
                return Ok(Output::Table(include));
            }
            (
                Some("PartialObjectMetadata") | Some("PartialObjectMetadataList"),
                Some("meta.k8s.io"),
            ) => return Ok(Output::Metadata),
            _ => continue,
        }
    }
    Err(ApiError::new(
        406,
        "NotAcceptable",
        "only the following media types are accepted: application/json, application/json;as=Table;v=v1;g=meta.k8s.io, application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(accept: &str) -> ApiResult<Output> {
        let mut h = HeaderMap::new();
        h.insert(http::header::ACCEPT, accept.parse().expect("header"));
        output(&h, &Params::default())
    }

    #[test]
    fn kubectl_get_gets_a_table() {
        assert_eq!(
            out("application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json")
                .expect("ok"),
            Output::Table(IncludeObject::Metadata)
        );
        assert_eq!(out("application/json").expect("ok"), Output::Object);
        assert_eq!(
            out("application/vnd.kubernetes.protobuf, */*").expect("ok"),
            Output::Object
        );
        assert!(out("application/vnd.kubernetes.protobuf").is_err());
    }
}
