//! Bootstrap tokens (`pkg/controller/bootstrap`): the signer of `kube-public/cluster-info` and the
//! cleaner of expired token Secrets, both off unless `--controllers` names them (kubeadm's
//! `*,bootstrapsigner,tokencleaner`).

pub mod cleaner;
pub mod jws;
pub mod signer;
pub mod token;
