//! OpenAPI documents of the served resources (v2 and v3), as kubectl fetches them.

pub mod definitions;
