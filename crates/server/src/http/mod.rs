//! What the HTTP layer shares with the rest of the machinery: the parsing of resource paths.

pub mod path;
