//! maxSurge and maxUnavailable: resolving int-or-percent values against the desired replicas.
//!
//! Mirrors `ResolveFenceposts`, `MaxSurge`, `MaxUnavailable` and `MinAvailable` in
//! `pkg/controller/deployment/util/deployment_util.go`, and apimachinery's
//! `intstr.GetScaledValueFromIntOrPercent`.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::spec::{is_rolling_update, replicas};

/// An int-or-percent value that is neither an integer nor a percentage.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid value for IntOrString: {0:?} is not an integer or a percentage")]
pub struct InvalidIntOrPercent(pub String);

/// Scales `value` against `total`: integers are returned as they are; percentages are
/// `value% × total`, rounded up when `round_up`, down otherwise.
#[doc(alias = "GetScaledValueFromIntOrPercent")]
pub fn scaled_value(
    value: &IntOrString,
    total: i32,
    round_up: bool,
) -> Result<i32, InvalidIntOrPercent> {
    match value {
        IntOrString::Int(i) => Ok(*i),
        IntOrString::String(s) => {
            let pct = s
                .strip_suffix('%')
                .and_then(|n| n.parse::<i64>().ok())
                .ok_or_else(|| InvalidIntOrPercent(s.clone()))?;
            let scaled = pct as f64 * f64::from(total) / 100.0;
            let rounded = if round_up {
                scaled.ceil()
            } else {
                scaled.floor()
            };
            Ok(rounded as i32)
        }
    }
}

/// Resolves maxSurge (rounded up) and maxUnavailable (rounded down) against `desired`, in one step:
/// when both come out as zero, maxUnavailable becomes 1 so that a rollout can always proceed.
/// Unset values count as zero.
#[doc(alias = "ResolveFenceposts")]
pub fn resolve_fenceposts(
    max_surge: Option<&IntOrString>,
    max_unavailable: Option<&IntOrString>,
    desired: i32,
) -> Result<(i32, i32), InvalidIntOrPercent> {
    let zero = IntOrString::Int(0);
    let surge = scaled_value(max_surge.unwrap_or(&zero), desired, true)?;
    let mut unavailable = scaled_value(max_unavailable.unwrap_or(&zero), desired, false)?;
    if surge == 0 && unavailable == 0 {
        // Validation forbids both being zero explicitly, but rounding maxUnavailable down can
        // produce it; surge might not work (quota), so allow one unavailable pod.
        unavailable = 1;
    }
    Ok((surge, unavailable))
}

fn fenceposts(d: &Deployment) -> (i32, i32) {
    let ru = d
        .spec
        .as_ref()
        .and_then(|s| s.strategy.as_ref())
        .and_then(|s| s.rolling_update.as_ref());
    // Validation rejects malformed values; treat them as zero, as the Go code ignores the error.
    resolve_fenceposts(
        ru.and_then(|r| r.max_surge.as_ref()),
        ru.and_then(|r| r.max_unavailable.as_ref()),
        replicas(d),
    )
    .unwrap_or((0, 0))
}

/// The maximum number of pods above `spec.replicas` a rolling Deployment may run (0 for Recreate).
#[doc(alias = "MaxSurge")]
pub fn max_surge(d: &Deployment) -> i32 {
    if !is_rolling_update(d) {
        return 0;
    }
    fenceposts(d).0
}

/// The maximum number of unavailable pods a rolling Deployment tolerates, at most `spec.replicas`
/// (0 for Recreate or zero replicas).
#[doc(alias = "MaxUnavailable")]
pub fn max_unavailable(d: &Deployment) -> i32 {
    let desired = replicas(d);
    if !is_rolling_update(d) || desired == 0 {
        return 0;
    }
    fenceposts(d).1.min(desired)
}

/// The minimum number of available pods of a rolling Deployment (0 for Recreate).
#[doc(alias = "MinAvailable")]
pub fn min_available(d: &Deployment) -> i32 {
    if !is_rolling_update(d) {
        return 0;
    }
    replicas(d) - max_unavailable(d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deployment::fixtures::deployment_with_strategy;
    use crate::deployment::spec::RECREATE;
    use k8s_openapi::api::apps::v1::{DeploymentSpec, DeploymentStrategy};

    fn pct(s: &str) -> IntOrString {
        IntOrString::String(s.to_string())
    }

    #[test]
    fn resolve_fenceposts_rounds_surge_up_and_unavailable_down() {
        // Cases of TestResolveFenceposts.
        type Case<'a> = (
            Option<&'a str>,
            Option<&'a str>,
            i32,
            Result<(i32, i32), ()>,
        );
        let cases: &[Case] = &[
            (Some("0%"), Some("0%"), 0, Ok((0, 1))),
            (Some("39%"), Some("39%"), 10, Ok((4, 3))),
            (Some("oops"), Some("39%"), 10, Err(())),
            (Some("55%"), Some("urg"), 10, Err(())),
            (None, Some("39%"), 10, Ok((0, 3))),
            (Some("39%"), None, 10, Ok((4, 0))),
            (None, None, 10, Ok((0, 1))),
        ];
        for (surge, unavailable, desired, expected) in cases {
            let surge = surge.map(pct);
            let unavailable = unavailable.map(pct);
            let got =
                resolve_fenceposts(surge.as_ref(), unavailable.as_ref(), *desired).map_err(|_| ());
            assert_eq!(
                got, *expected,
                "surge {surge:?} unavailable {unavailable:?} desired {desired}"
            );
        }
    }

    #[test]
    fn max_unavailable_never_exceeds_replicas() {
        // Cases of TestMaxUnavailable.
        let cases = [
            (10, IntOrString::Int(5), 5),
            (10, IntOrString::Int(10), 10),
            (5, IntOrString::Int(10), 5),
            (0, IntOrString::Int(10), 0),
            (10, pct("50%"), 5),
            (10, pct("100%"), 10),
            (5, pct("100%"), 5),
        ];
        for (replicas, unavailable, expected) in cases {
            let d = deployment_with_strategy(replicas, IntOrString::Int(1), unavailable.clone());
            assert_eq!(
                max_unavailable(&d),
                expected,
                "{replicas} replicas, {unavailable:?}"
            );
        }
        let recreate = Deployment {
            spec: Some(DeploymentSpec {
                strategy: Some(DeploymentStrategy {
                    type_: Some(RECREATE.into()),
                    rolling_update: None,
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(max_unavailable(&recreate), 0);
        assert_eq!(max_surge(&recreate), 0);
    }

    #[test]
    fn integers_are_not_scaled_and_bare_strings_are_rejected() {
        assert_eq!(scaled_value(&IntOrString::Int(7), 100, true), Ok(7));
        assert_eq!(scaled_value(&pct("25%"), 10, true), Ok(3));
        assert_eq!(scaled_value(&pct("25%"), 10, false), Ok(2));
        assert!(scaled_value(&pct("25"), 10, false).is_err());
    }
}
