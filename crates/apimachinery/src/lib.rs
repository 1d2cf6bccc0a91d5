//! API machinery shared by the API server: the resource catalog, patches, OpenAPI documents,
//! field validation, table printers and semantic equality.

pub mod catalog;
pub mod openapi;
pub mod patch;
pub mod printers;
pub mod semantic;
pub mod validation;
