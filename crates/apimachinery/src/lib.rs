//! API machinery shared by the API server and its clients: the resource catalog, patches, OpenAPI
//! documents, field validation, table printers, semantic equality, Go durations, JSON numbers as
//! Go writes them, resource quantities and private keys in PEM.

pub mod apply;
pub mod catalog;
pub mod cron;
pub mod custom_resources;
pub mod duration;
pub mod field;
pub mod go_json;
pub mod keyutil;
pub mod lifecycle;
pub mod openapi;
pub mod patch;
pub mod poddisruptionbudget;
pub mod printers;
pub mod quantity;
pub mod quota;
pub mod semantic;
pub mod validation;
