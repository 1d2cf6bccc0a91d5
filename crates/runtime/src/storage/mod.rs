//! Storage helpers shared by the volume controllers, the scheduler and provisioners: kube's
//! `k8s.io/component-helpers/storage/volume` and the binder's volume index.

pub mod csi;
pub mod helpers;
pub mod matching;

pub use helpers::*;
pub use matching::{find_best_match_for_claim, find_matching_volume, volume_fits_node, MatchError};
