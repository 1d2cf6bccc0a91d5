//! kube-controller-manager's "Horizontalpodautoscaling controller flags", shared by
//! `rkcm controller-manager` and `rkcm up`.

use std::time::Duration;

use clap::Args;
use rkcm_controllers::registry::ControllerOptions;

/// The horizontal pod autoscaler's flags, named and defaulted as kube's.
#[derive(Debug, Clone, Args)]
pub struct HpaFlags {
    /// The number of horizontal pod autoscaler objects that are allowed to sync concurrently.
    /// Larger number = more responsive horizontal pod autoscaler objects processing, but more CPU
    /// (and network) load.
    #[arg(
        long,
        default_value_t = 5,
        help_heading = "Horizontalpodautoscaling controller flags"
    )]
    pub concurrent_horizontal_pod_autoscaler_syncs: usize,

    /// The period after pod start when CPU samples might be skipped.
    #[arg(long, default_value = "5m0s", value_parser = rkcm_apimachinery::duration::parse_non_negative, value_name = "DURATION", help_heading = "Horizontalpodautoscaling controller flags")]
    pub horizontal_pod_autoscaler_cpu_initialization_period: Duration,

    /// The period for which autoscaler will look backwards and not scale down below any
    /// recommendation it made during that period.
    #[arg(long, default_value = "5m0s", value_parser = rkcm_apimachinery::duration::parse_non_negative, value_name = "DURATION", help_heading = "Horizontalpodautoscaling controller flags")]
    pub horizontal_pod_autoscaler_downscale_stabilization: Duration,

    /// The period after pod start during which readiness changes will be treated as initial
    /// readiness.
    #[arg(long, default_value = "30s", value_parser = rkcm_apimachinery::duration::parse_non_negative, value_name = "DURATION", help_heading = "Horizontalpodautoscaling controller flags")]
    pub horizontal_pod_autoscaler_initial_readiness_delay: Duration,

    /// The period for syncing the number of pods in horizontal pod autoscaler.
    #[arg(long, default_value = "15s", value_parser = parse_positive, value_name = "DURATION", help_heading = "Horizontalpodautoscaling controller flags")]
    pub horizontal_pod_autoscaler_sync_period: Duration,

    /// The minimum change (from 1.0) in the desired-to-actual metrics ratio for the horizontal
    /// pod autoscaler to consider scaling.
    #[arg(
        long,
        default_value_t = 0.1,
        help_heading = "Horizontalpodautoscaling controller flags"
    )]
    pub horizontal_pod_autoscaler_tolerance: f64,
}

fn parse_positive(s: &str) -> Result<Duration, String> {
    match rkcm_apimachinery::duration::parse_non_negative(s) {
        Ok(d) if !d.is_zero() => Ok(d),
        Ok(_) => Err("must be greater than 0".into()),
        Err(e) => Err(e.to_string()),
    }
}

impl HpaFlags {
    /// Copies the flags into `options`.
    pub fn apply(&self, options: &mut ControllerOptions) {
        options.concurrent_horizontal_pod_autoscaler_syncs =
            self.concurrent_horizontal_pod_autoscaler_syncs;
        options.horizontal_pod_autoscaler_cpu_initialization_period =
            self.horizontal_pod_autoscaler_cpu_initialization_period;
        options.horizontal_pod_autoscaler_downscale_stabilization =
            self.horizontal_pod_autoscaler_downscale_stabilization;
        options.horizontal_pod_autoscaler_initial_readiness_delay =
            self.horizontal_pod_autoscaler_initial_readiness_delay;
        options.horizontal_pod_autoscaler_sync_period = self.horizontal_pod_autoscaler_sync_period;
        options.horizontal_pod_autoscaler_tolerance = self.horizontal_pod_autoscaler_tolerance;
    }
}
