//! kube-controller-manager's "Attachdetach controller flags", shared by `rkcm controller-manager`
//! and `rkcm up`.

use std::time::Duration;

use clap::{ArgAction, Args};
use rkcm_controllers::registry::ControllerOptions;

/// The attach/detach controller's flags, named and defaulted as kube's.
#[derive(Debug, Clone, Args)]
pub struct AttachDetachFlags {
    /// The reconciler sync wait time between volume attach detach. This duration must be larger
    /// than one second, and increasing this value from the default may allow for volumes to be
    /// mismatched with pods.
    #[arg(long, default_value = "1m0s", value_parser = rkcm_apimachinery::duration::parse_non_negative, value_name = "DURATION", help_heading = "Attachdetach controller flags")]
    pub attach_detach_reconcile_sync_period: Duration,

    /// Disable volume attach detach reconciler sync. Disabling this may cause volumes to be
    /// mismatched with pods. Use wisely.
    #[arg(long, default_value_t = false, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true",
          help_heading = "Attachdetach controller flags")]
    pub disable_attach_detach_reconcile_sync: bool,

    /// Prevent force detaching volumes based on maximum unmount time and node status. If this
    /// flag is set to true, the non-graceful node shutdown feature must be used to recover from
    /// node failure. See https://k8s.io/docs/storage-disable-force-detach-on-timeout/.
    #[arg(long, default_value_t = false, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true",
          help_heading = "Attachdetach controller flags")]
    pub disable_force_detach_on_timeout: bool,
}

impl AttachDetachFlags {
    /// Copies the flags into `options`.
    pub fn apply(&self, options: &mut ControllerOptions) {
        options.attach_detach_reconcile_sync_period = self.attach_detach_reconcile_sync_period;
        options.disable_attach_detach_reconcile_sync = self.disable_attach_detach_reconcile_sync;
        options.disable_force_detach_on_timeout = self.disable_force_detach_on_timeout;
    }
}
