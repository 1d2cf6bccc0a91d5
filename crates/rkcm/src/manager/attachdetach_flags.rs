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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cmd {
        #[command(flatten)]
        flags: AttachDetachFlags,
    }

    fn parse(args: &[&str]) -> ControllerOptions {
        let mut argv = vec!["cmd"];
        argv.extend_from_slice(args);
        let mut options = ControllerOptions::default();
        Cmd::try_parse_from(argv)
            .expect("flags parse")
            .flags
            .apply(&mut options);
        options
    }

    #[test]
    fn defaults_are_kube_controller_managers() {
        let o = parse(&[]);
        assert_eq!(
            o.attach_detach_reconcile_sync_period,
            Duration::from_secs(60)
        );
        assert!(!o.disable_attach_detach_reconcile_sync);
        assert!(!o.disable_force_detach_on_timeout);
    }

    #[test]
    fn flags_set_the_options() {
        let o = parse(&[
            "--attach-detach-reconcile-sync-period=2m",
            "--disable-attach-detach-reconcile-sync",
            "--disable-force-detach-on-timeout=true",
        ]);
        assert_eq!(
            o.attach_detach_reconcile_sync_period,
            Duration::from_secs(120)
        );
        assert!(o.disable_attach_detach_reconcile_sync);
        assert!(o.disable_force_detach_on_timeout);
    }
}
