//! API machinery shared by the API server and its clients: the resource catalog, patches, OpenAPI
//! documents, field validation, table printers, and Go durations.

pub mod catalog;
pub mod duration;
pub mod openapi;
pub mod patch;
pub mod printers;
pub mod validation;
