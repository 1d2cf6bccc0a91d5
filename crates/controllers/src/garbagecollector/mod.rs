//! The garbage collector: deletes objects whose owners are gone and implements the Foreground and
//! Orphan propagation policies. Mirrors `pkg/controller/garbagecollector`.

mod collector;
pub mod graph;

pub use collector::{Config, Error, GarbageCollector};
