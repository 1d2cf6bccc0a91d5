//! The claim and volume protection controllers (`pkg/controller/volume/pvcprotection`,
//! `pkg/controller/volume/pvprotection`): a finalizer on every claim and volume, removed only once
//! nothing uses the object, so that a claim in use by a pod, or a bound volume, outlives its
//! deletion until it is released.

pub mod finalizer;
pub mod pv;
pub mod pvc;

pub use pv::PvProtectionController;
pub use pvc::PvcProtectionController;
