//! A small scheduler: binds pending pods to the node with the fewest pods among those they fit.

pub mod node_affinity;
pub mod predicates;
pub mod resources;
pub mod select;
pub mod taints;

pub use predicates::{fits, NodeUsage, Reason};
pub use select::{select_node, FitError};
