//! API machinery shared by the API server: the resource catalog, patches, OpenAPI documents,
//! field validation and table printers.

pub mod catalog;
pub mod cron;
pub mod openapi;
pub mod patch;
pub mod printers;
pub mod validation;
