//! The garbage collector: deletes objects whose owners are gone and implements the Foreground and
//! Orphan propagation policies. Mirrors `pkg/controller/garbagecollector`.

pub mod graph;
