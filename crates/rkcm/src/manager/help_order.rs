//! The order of the `--help` sections of `rkcm controller-manager`: kube-controller-manager's
//! named flag sets, in the order kube prints them. clap lists sections in the order their first
//! argument was added, so one hidden, unusable marker per section is added first.

use clap::{Arg, ArgAction, ArgMatches, Args, FromArgMatches};

/// kube-controller-manager 1.33's `--help` sections, in its order.
pub const SECTIONS: &[&str] = &[
    "Debugging flags",
    "Leader-migration flags",
    "Generic flags",
    "Service controller flags",
    "Secure serving flags",
    "Authentication flags",
    "Authorization flags",
    "Attachdetach controller flags",
    "Csrsigning controller flags",
    "Deployment controller flags",
    "Statefulset controller flags",
    "Daemonset controller flags",
    "Endpoint controller flags",
    "Endpointslice controller flags",
    "Endpointslicemirroring controller flags",
    "Ephemeralvolume controller flags",
    "Garbagecollector controller flags",
    "Horizontalpodautoscaling controller flags",
    "Job controller flags",
    "Cronjob controller flags",
    "Legacy service account token cleaner flags",
    "Namespace controller flags",
    "Nodeipam controller flags",
    "Nodelifecycle controller flags",
    "Persistentvolume-binder controller flags",
    "Podgc controller flags",
    "Replicaset controller flags",
    "Replicationcontroller flags",
    "Resourcequota controller flags",
    "Serviceaccount controller flags",
    "Ttl-after-finished controller flags",
    "Validatingadmissionpolicystatus controller flags",
    "Metrics flags",
    "Logs flags",
    "Misc flags",
];

/// Adds the section markers; parses nothing.
#[derive(Clone, Copy, Debug, Default)]
pub struct HelpOrder;

/// A hidden marker named after its section (a name no command line can use as a flag).
fn marker(section: &'static str) -> Arg {
    Arg::new(section)
        .long(section)
        .hide(true)
        .help_heading(section)
        .action(ArgAction::Set)
        .value_parser(|_: &str| Err::<String, _>("not a flag of kube-controller-manager"))
}

impl Args for HelpOrder {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        SECTIONS
            .iter()
            .fold(cmd, |cmd, section| cmd.arg(marker(section)))
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

impl FromArgMatches for HelpOrder {
    fn from_arg_matches(_: &ArgMatches) -> Result<Self, clap::Error> {
        Ok(Self)
    }

    fn update_from_arg_matches(&mut self, _: &ArgMatches) -> Result<(), clap::Error> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn help_lists_sections_in_kubes_order_and_every_heading_is_known() {
        let mut cli = crate::cli::Cli::command();
        let manager = cli
            .find_subcommand_mut("controller-manager")
            .expect("subcommand");
        let help = manager.render_help().to_string();
        let positions: Vec<usize> = super::SECTIONS
            .iter()
            .filter_map(|s| help.find(&format!("\n{s}:\n")))
            .collect();
        assert_eq!(positions.len(), super::SECTIONS.len(), "{help}");
        assert!(positions.windows(2).all(|w| w[0] < w[1]), "{help}");
        assert!(!help.contains("--Debugging"), "{help}");
        for arg in manager.get_arguments() {
            if let Some(heading) = arg.get_help_heading() {
                assert!(
                    super::SECTIONS.contains(&heading),
                    "unknown section {heading}"
                );
            }
        }
    }

    #[test]
    fn the_markers_are_not_flags() {
        use clap::Parser;
        assert!(crate::cli::Cli::try_parse_from([
            "rkcm",
            "controller-manager",
            "--Generic flags=x"
        ])
        .is_err());
    }
}
