//! Normalization of a metric's desired replicas: min/max, the scale-up limit, stabilization
//! windows and the `behavior` scaling policies.
//!
//! Mirrors `normalizeDesiredReplicas`, `normalizeDesiredReplicasWithBehaviors` and their helpers in
//! `pkg/controller/podautoscaler/horizontal.go`. The per-HPA history (recommendations, scale
//! events) is passed in; `now` is injected.

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::autoscaling::v2::{HPAScalingPolicy, HPAScalingRules};

/// `scaleUpLimitFactor`.
const SCALE_UP_LIMIT_FACTOR: f64 = 2.0;
/// `scaleUpLimitMinimum`.
const SCALE_UP_LIMIT_MINIMUM: f64 = 4.0;

/// A past recommendation (`timestampedRecommendation`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Recommendation {
    /// Replicas recommended.
    pub replicas: i32,
    /// When.
    pub at: Timestamp,
}

/// A past scaling (`timestampedScaleEvent`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScaleEvent {
    /// Replicas added (scale up) or removed (scale down).
    pub change: i32,
    /// When.
    pub at: Timestamp,
    /// Older than every policy period: its slot may be reused.
    pub outdated: bool,
}

/// What the controller remembers of one HPA between syncs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct History {
    /// Recommendations within the stabilization windows.
    pub recommendations: Vec<Recommendation>,
    /// Scale-ups within the policy periods.
    pub scale_up_events: Vec<ScaleEvent>,
    /// Scale-downs within the policy periods.
    pub scale_down_events: Vec<ScaleEvent>,
}

/// A condition the normalization sets: (reason, message).
pub type Reasoned = (&'static str, &'static str);

/// The outcome of a normalization.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Normalized {
    /// Replicas to scale to.
    pub replicas: i32,
    /// AbleToScale (True) reason and message.
    pub able_to_scale: Reasoned,
    /// ScalingLimited status (true when limited), reason and message.
    pub scaling_limited: (bool, &'static str, &'static str),
}

const READY_FOR_NEW_SCALE: Reasoned = ("ReadyForNewScale", "recommended size matches current size");
const SCALE_DOWN_STABILIZED: Reasoned = (
    "ScaleDownStabilized",
    "recent recommendations were higher than current one, applying the highest recent recommendation",
);
const SCALE_UP_STABILIZED: Reasoned = (
    "ScaleUpStabilized",
    "recent recommendations were lower than current one, applying the lowest recent recommendation",
);
const DESIRED_WITHIN_RANGE: Reasoned = (
    "DesiredWithinRange",
    "the desired count is within the acceptable range",
);
const SCALE_UP_LIMIT: Reasoned = (
    "ScaleUpLimit",
    "the desired replica count is increasing faster than the maximum scale rate",
);
const SCALE_DOWN_LIMIT: Reasoned = (
    "ScaleDownLimit",
    "the desired replica count is decreasing faster than the maximum scale rate",
);
const TOO_MANY_REPLICAS: Reasoned = (
    "TooManyReplicas",
    "the desired replica count is more than the maximum replica count",
);
const TOO_FEW_REPLICAS: Reasoned = (
    "TooFewReplicas",
    "the desired replica count is less than the minimum replica count",
);

fn minus_secs(now: Timestamp, secs: i64) -> Timestamp {
    now.checked_sub(SignedDuration::from_secs(secs))
        .unwrap_or(Timestamp::MIN)
}

/// Seeds the history with the current replicas on the first sync (`recordInitialRecommendation`).
pub fn record_initial_recommendation(history: &mut History, current: i32, now: Timestamp) {
    if history.recommendations.is_empty() {
        history.recommendations.push(Recommendation {
            replicas: current,
            at: now,
        });
    }
}

/// The highest recommendation within the downscale window, recording this one
/// (`stabilizeRecommendation`, used without `behavior`).
pub fn stabilize_recommendation(
    history: &mut History,
    desired: i32,
    downscale_window: std::time::Duration,
    now: Timestamp,
) -> i32 {
    let cutoff = minus_secs(now, downscale_window.as_secs() as i64);
    let mut max = desired;
    let mut old = None;
    for (i, rec) in history.recommendations.iter().enumerate() {
        if rec.at < cutoff {
            old = Some(i);
        } else if rec.replicas > max {
            max = rec.replicas;
        }
    }
    let rec = Recommendation {
        replicas: desired,
        at: now,
    };
    match old {
        Some(i) => history.recommendations[i] = rec,
        None => history.recommendations.push(rec),
    }
    max
}

/// min/max and the legacy scale-up limit (`convertDesiredReplicasWithRules`).
pub fn convert_desired_replicas_with_rules(
    current: i32,
    desired: i32,
    min: i32,
    max: i32,
) -> (i32, Reasoned) {
    let scale_up_limit =
        (SCALE_UP_LIMIT_FACTOR * f64::from(current)).max(SCALE_UP_LIMIT_MINIMUM) as i32;
    let (maximum, limiting) = if max > scale_up_limit {
        (scale_up_limit, SCALE_UP_LIMIT)
    } else {
        (max, TOO_MANY_REPLICAS)
    };
    if desired < min {
        (min, TOO_FEW_REPLICAS)
    } else if desired > maximum {
        (maximum, limiting)
    } else {
        (desired, DESIRED_WITHIN_RANGE)
    }
}

/// Normalization without `behavior` (`normalizeDesiredReplicas`).
pub fn normalize_desired_replicas(
    history: &mut History,
    current: i32,
    desired: i32,
    min: i32,
    max: i32,
    downscale_window: std::time::Duration,
    now: Timestamp,
) -> Normalized {
    let stabilized = stabilize_recommendation(history, desired, downscale_window, now);
    let able_to_scale = if stabilized != desired {
        SCALE_DOWN_STABILIZED
    } else {
        READY_FOR_NEW_SCALE
    };
    let (replicas, (reason, message)) =
        convert_desired_replicas_with_rules(current, stabilized, min, max);
    Normalized {
        replicas,
        able_to_scale,
        scaling_limited: (replicas != stabilized, reason, message),
    }
}

/// The scaling rules of one direction, with the API's defaults filled in.
#[derive(Clone, Debug, PartialEq)]
pub struct Rules {
    /// `stabilizationWindowSeconds`.
    pub stabilization_window_seconds: i32,
    /// `selectPolicy`: `Max`, `Min` or `Disabled`.
    pub select_policy: String,
    /// `policies`.
    pub policies: Vec<HPAScalingPolicy>,
}

impl Rules {
    /// `rules` defaulted as the API server's `SetDefaults_HorizontalPodAutoscalerBehavior`:
    /// scale up within 0 s by max(100 %, 4 pods) per 15 s; scale down within the controller's
    /// `--horizontal-pod-autoscaler-downscale-stabilization` by 100 % per 15 s.
    pub fn scale_up(rules: Option<&HPAScalingRules>) -> Self {
        Self::defaulted(
            rules,
            0,
            vec![policy("Pods", 4, 15), policy("Percent", 100, 15)],
        )
    }

    /// See [`Rules::scale_up`].
    pub fn scale_down(
        rules: Option<&HPAScalingRules>,
        downscale_window: std::time::Duration,
    ) -> Self {
        Self::defaulted(
            rules,
            downscale_window.as_secs() as i32,
            vec![policy("Percent", 100, 15)],
        )
    }

    fn defaulted(
        rules: Option<&HPAScalingRules>,
        window: i32,
        policies: Vec<HPAScalingPolicy>,
    ) -> Self {
        Self {
            stabilization_window_seconds: rules
                .and_then(|r| r.stabilization_window_seconds)
                .unwrap_or(window),
            select_policy: rules
                .and_then(|r| r.select_policy.clone())
                .unwrap_or_else(|| "Max".into()),
            policies: rules
                .and_then(|r| r.policies.clone())
                .filter(|p| !p.is_empty())
                .unwrap_or(policies),
        }
    }

    fn longest_period(&self) -> i32 {
        self.policies
            .iter()
            .map(|p| p.period_seconds)
            .max()
            .unwrap_or(0)
    }
}

fn policy(type_: &str, value: i32, period_seconds: i32) -> HPAScalingPolicy {
    HPAScalingPolicy {
        type_: type_.into(),
        value,
        period_seconds,
    }
}

/// Replicas changed within the last `period_seconds` (`getReplicasChangePerPeriod`).
fn change_in_period(period_seconds: i32, events: &[ScaleEvent], now: Timestamp) -> i32 {
    let cutoff = minus_secs(now, i64::from(period_seconds));
    events
        .iter()
        .filter(|e| e.at > cutoff)
        .map(|e| e.change)
        .sum()
}

/// The most replicas the rules allow now (`calculateScaleUpLimitWithScalingRules`).
pub fn scale_up_limit(current: i32, events: &[ScaleEvent], rules: &Rules, now: Timestamp) -> i32 {
    // The Min policy starts from the largest value, Max from the smallest.
    let (select, mut result): (fn(i32, i32) -> i32, i32) = match rules.select_policy.as_str() {
        "Disabled" => return current,
        "Min" => (std::cmp::min, i32::MAX),
        _ => (std::cmp::max, i32::MIN),
    };
    for p in &rules.policies {
        let start = current - change_in_period(p.period_seconds, events, now);
        let proposed = match p.type_.as_str() {
            "Pods" => start + p.value,
            "Percent" => (f64::from(start) * (1.0 + f64::from(p.value) / 100.0)).ceil() as i32,
            _ => continue,
        };
        result = select(result, proposed);
    }
    result
}

/// The fewest replicas the rules allow now (`calculateScaleDownLimitWithBehaviors`).
pub fn scale_down_limit(current: i32, events: &[ScaleEvent], rules: &Rules, now: Timestamp) -> i32 {
    let (select, mut result): (fn(i32, i32) -> i32, i32) = match rules.select_policy.as_str() {
        "Disabled" => return current,
        "Min" => (std::cmp::max, i32::MIN),
        _ => (std::cmp::min, i32::MAX),
    };
    for p in &rules.policies {
        let start = current + change_in_period(p.period_seconds, events, now);
        let proposed = match p.type_.as_str() {
            "Pods" => start - p.value,
            "Percent" => (f64::from(start) * (1.0 - f64::from(p.value) / 100.0)) as i32,
            _ => continue,
        };
        result = select(result, proposed);
    }
    result
}

/// The recommendation within the window of the direction, recording this one
/// (`stabilizeRecommendationWithBehaviors`).
pub fn stabilize_recommendation_with_behaviors(
    history: &mut History,
    current: i32,
    desired: i32,
    up: &Rules,
    down: &Rules,
    now: Timestamp,
) -> (i32, Reasoned) {
    let (window, better, reasoned): (i32, fn(i32, i32) -> i32, Reasoned) = if desired >= current {
        (
            up.stabilization_window_seconds,
            std::cmp::min,
            SCALE_UP_STABILIZED,
        )
    } else {
        (
            down.stabilization_window_seconds,
            std::cmp::max,
            SCALE_DOWN_STABILIZED,
        )
    };
    let obsolete = minus_secs(
        now,
        i64::from(
            up.stabilization_window_seconds
                .max(down.stabilization_window_seconds),
        ),
    );
    let cutoff = minus_secs(now, i64::from(window));
    let mut recommendation = desired;
    let mut old = None;
    for (i, rec) in history.recommendations.iter().enumerate() {
        if rec.at > cutoff {
            recommendation = better(rec.replicas, recommendation);
        }
        if rec.at < obsolete {
            old = Some(i);
        }
    }
    let rec = Recommendation {
        replicas: desired,
        at: now,
    };
    match old {
        Some(i) => history.recommendations[i] = rec,
        None => history.recommendations.push(rec),
    }
    (recommendation, reasoned)
}

/// The policies' rate limits and min/max (`convertDesiredReplicasWithBehaviorRate`).
#[allow(clippy::too_many_arguments)]
pub fn convert_desired_replicas_with_behavior_rate(
    history: &History,
    current: i32,
    desired: i32,
    min: i32,
    max: i32,
    up: &Rules,
    down: &Rules,
    now: Timestamp,
) -> (i32, Reasoned) {
    if desired > current {
        let limit = scale_up_limit(current, &history.scale_up_events, up, now).max(current);
        let (maximum, reasoned) = if max > limit {
            (limit, SCALE_UP_LIMIT)
        } else {
            (max, TOO_MANY_REPLICAS)
        };
        if desired > maximum {
            return (maximum, reasoned);
        }
    } else if desired < current {
        let limit = scale_down_limit(current, &history.scale_down_events, down, now).min(current);
        let (minimum, reasoned) = if min < limit {
            (limit, SCALE_DOWN_LIMIT)
        } else {
            (min, TOO_FEW_REPLICAS)
        };
        if desired < minimum {
            return (minimum, reasoned);
        }
    }
    (desired, DESIRED_WITHIN_RANGE)
}

/// Normalization with `behavior` (`normalizeDesiredReplicasWithBehaviors`).
#[allow(clippy::too_many_arguments)]
pub fn normalize_desired_replicas_with_behaviors(
    history: &mut History,
    current: i32,
    desired: i32,
    min: i32,
    max: i32,
    up: &Rules,
    down: &Rules,
    now: Timestamp,
) -> Normalized {
    let (stabilized, reasoned) =
        stabilize_recommendation_with_behaviors(history, current, desired, up, down, now);
    let able_to_scale = if stabilized != desired {
        reasoned
    } else {
        READY_FOR_NEW_SCALE
    };
    let (replicas, (reason, message)) = convert_desired_replicas_with_behavior_rate(
        history, current, stabilized, min, max, up, down, now,
    );
    Normalized {
        replicas,
        able_to_scale,
        scaling_limited: (replicas != stabilized, reason, message),
    }
}

/// Records a scaling for the policies' periods (`storeScaleEvent`; nothing without `behavior`).
pub fn store_scale_event(
    history: &mut History,
    up: &Rules,
    down: &Rules,
    previous: i32,
    new: i32,
    now: Timestamp,
) {
    let (events, rules, change) = if new > previous {
        (&mut history.scale_up_events, up, new - previous)
    } else {
        (&mut history.scale_down_events, down, previous - new)
    };
    let cutoff = minus_secs(now, i64::from(rules.longest_period()));
    for e in events.iter_mut() {
        if e.at < cutoff {
            e.outdated = true;
        }
    }
    let event = ScaleEvent {
        change,
        at: now,
        outdated: false,
    };
    match events.iter().rposition(|e| e.outdated) {
        Some(i) => events[i] = event,
        None => events.push(event),
    }
}

#[cfg(test)]
mod tests {
    //! Cases of `horizontal_test.go` (`TestNormalizeDesiredReplicas…`, `TestScalingWithRules`,
    //! `TestStoreScaleEvents`, `TestNormalizeDesiredReplicasWithBehavior`).

    use std::time::Duration;

    use super::*;

    fn now() -> Timestamp {
        "2026-01-01T12:00:00Z".parse().expect("time")
    }

    fn ago(secs: i64) -> Timestamp {
        minus_secs(now(), secs)
    }

    fn rec(replicas: i32, secs_ago: i64) -> Recommendation {
        Recommendation {
            replicas,
            at: ago(secs_ago),
        }
    }

    fn ev(change: i32, secs_ago: i64) -> ScaleEvent {
        ScaleEvent {
            change,
            at: ago(secs_ago),
            outdated: false,
        }
    }

    fn rules(window: i32, select: &str, policies: Vec<HPAScalingPolicy>) -> Rules {
        Rules {
            stabilization_window_seconds: window,
            select_policy: select.into(),
            policies,
        }
    }

    #[test]
    fn without_behavior_the_highest_recent_recommendation_wins() {
        // TestNormalizeDesiredReplicas: recommendations 4 (within the window) and 5 (older).
        let mut h = History {
            recommendations: vec![rec(4, 60), rec(5, 400)],
            ..History::default()
        };
        let n = normalize_desired_replicas(&mut h, 5, 2, 1, 10, Duration::from_secs(300), now());
        assert_eq!(n.replicas, 4);
        assert_eq!(n.able_to_scale.0, "ScaleDownStabilized");
        assert_eq!(n.scaling_limited.1, "DesiredWithinRange");
        // The old sample's slot was reused.
        assert_eq!(h.recommendations.len(), 2);
    }

    #[test]
    fn without_behavior_scale_up_is_limited_to_twice_or_four() {
        assert_eq!(convert_desired_replicas_with_rules(1, 10, 1, 10).0, 4);
        assert_eq!(
            convert_desired_replicas_with_rules(1, 10, 1, 10).1 .0,
            "ScaleUpLimit"
        );
        assert_eq!(convert_desired_replicas_with_rules(3, 10, 1, 10).0, 6);
        assert_eq!(
            convert_desired_replicas_with_rules(4, 10, 1, 5),
            (5, TOO_MANY_REPLICAS)
        );
        assert_eq!(
            convert_desired_replicas_with_rules(4, 0, 2, 5),
            (2, TOO_FEW_REPLICAS)
        );
        assert_eq!(
            convert_desired_replicas_with_rules(1, 4, 1, 5),
            (4, DESIRED_WITHIN_RANGE)
        );
    }

    #[test]
    fn scale_up_limits_follow_the_policies() {
        // TestScalingWithRules "scaleUp with default behavior": 10 → 20 max.
        let up = Rules::scale_up(None);
        assert_eq!(scale_up_limit(10, &[], &up, now()), 20);
        // "scaleUp with pods policy larger than percent policy": 1 → 5.
        assert_eq!(scale_up_limit(1, &[], &up, now()), 5);
        // "scaleUp with Min select policy".
        let min = rules(
            0,
            "Min",
            vec![policy("Pods", 4, 60), policy("Percent", 100, 60)],
        );
        assert_eq!(scale_up_limit(10, &[], &min, now()), 14);
        // Events in the period lower the start: 10 now, 4 added within 60s → start 6 → 6+4.
        let pods = rules(0, "Max", vec![policy("Pods", 4, 60)]);
        assert_eq!(scale_up_limit(10, &[ev(4, 30)], &pods, now()), 10);
        assert_eq!(scale_up_limit(10, &[ev(4, 90)], &pods, now()), 14);
        // Disabled.
        assert_eq!(
            scale_up_limit(10, &[], &rules(0, "Disabled", vec![]), now()),
            10
        );
    }

    #[test]
    fn scale_down_limits_follow_the_policies() {
        let down = Rules::scale_down(None, Duration::from_secs(300));
        assert_eq!(scale_down_limit(10, &[], &down, now()), 0);
        let pods = rules(
            0,
            "Max",
            vec![policy("Pods", 2, 60), policy("Percent", 10, 60)],
        );
        assert_eq!(scale_down_limit(10, &[], &pods, now()), 8);
        let min = rules(
            0,
            "Min",
            vec![policy("Pods", 2, 60), policy("Percent", 10, 60)],
        );
        assert_eq!(scale_down_limit(10, &[], &min, now()), 9);
        assert_eq!(scale_down_limit(8, &[ev(2, 10)], &pods, now()), 8);
    }

    #[test]
    fn behavior_rate_limits_and_bounds() {
        let h = History::default();
        let up = rules(0, "Max", vec![policy("Pods", 2, 60)]);
        let down = rules(300, "Max", vec![policy("Percent", 50, 60)]);
        assert_eq!(
            convert_desired_replicas_with_behavior_rate(&h, 3, 10, 1, 8, &up, &down, now()),
            (5, SCALE_UP_LIMIT)
        );
        assert_eq!(
            convert_desired_replicas_with_behavior_rate(&h, 3, 10, 1, 4, &up, &down, now()),
            (4, TOO_MANY_REPLICAS)
        );
        assert_eq!(
            convert_desired_replicas_with_behavior_rate(&h, 10, 1, 1, 20, &up, &down, now()),
            (5, SCALE_DOWN_LIMIT)
        );
        assert_eq!(
            convert_desired_replicas_with_behavior_rate(&h, 4, 1, 3, 20, &up, &down, now()),
            (3, TOO_FEW_REPLICAS)
        );
        assert_eq!(
            convert_desired_replicas_with_behavior_rate(&h, 4, 3, 1, 20, &up, &down, now()),
            (3, DESIRED_WITHIN_RANGE)
        );
    }

    #[test]
    fn stabilization_windows_pick_the_safest_recent_recommendation() {
        // TestNormalizeDesiredReplicasWithBehavior: scale-down stabilized by a recent 5.
        let up = rules(0, "Max", vec![policy("Pods", 4, 15)]);
        let down = rules(300, "Max", vec![policy("Percent", 100, 15)]);
        let mut h = History {
            recommendations: vec![rec(5, 60), rec(1, 30)],
            ..History::default()
        };
        let n = normalize_desired_replicas_with_behaviors(&mut h, 5, 2, 1, 10, &up, &down, now());
        assert_eq!(n.replicas, 5);
        assert_eq!(n.able_to_scale.0, "ScaleDownStabilized");
        // With a window of 30 s for scale up, a recent lower recommendation holds it back.
        let up = rules(30, "Max", vec![policy("Pods", 4, 15)]);
        let mut h = History {
            recommendations: vec![rec(3, 10)],
            ..History::default()
        };
        let n = normalize_desired_replicas_with_behaviors(&mut h, 2, 6, 1, 10, &up, &down, now());
        assert_eq!((n.replicas, n.able_to_scale.0), (3, "ScaleUpStabilized"));
        // Past the window, the new recommendation applies.
        let mut h = History {
            recommendations: vec![rec(3, 600)],
            ..History::default()
        };
        let n = normalize_desired_replicas_with_behaviors(&mut h, 5, 1, 1, 10, &up, &down, now());
        assert_eq!((n.replicas, n.able_to_scale.0), (1, "ReadyForNewScale"));
        assert_eq!(
            h.recommendations,
            vec![Recommendation {
                replicas: 1,
                at: now()
            }]
        );
    }

    #[test]
    fn scale_events_reuse_outdated_slots() {
        // TestStoreScaleEvents.
        let up = rules(0, "Max", vec![policy("Pods", 4, 60)]);
        let down = Rules::scale_down(None, Duration::from_secs(300));
        let mut h = History {
            scale_up_events: vec![ev(1, 120), ev(2, 30)],
            ..History::default()
        };
        store_scale_event(&mut h, &up, &down, 3, 6, now());
        assert_eq!(h.scale_up_events.len(), 2);
        assert_eq!(h.scale_up_events[0].change, 3);
        store_scale_event(&mut h, &up, &down, 6, 4, now());
        assert_eq!(
            h.scale_down_events,
            vec![ScaleEvent {
                change: 2,
                at: now(),
                outdated: false
            }]
        );
    }
}
