//! The volume controllers of kube-controller-manager, one module per kube package under
//! `pkg/controller/volume/`: the PersistentVolume binder, the claim and volume protection
//! controllers and the ephemeral-volume controller.

pub mod attachdetach;
pub mod ephemeral;
pub mod expand;
pub mod persistentvolume;
pub mod protection;
