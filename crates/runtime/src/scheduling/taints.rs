//! Taints and tolerations: which taint of a node a pod does not tolerate (the TaintToleration filter).
//!
//! Mirrors `Toleration.ToleratesTaint` in `k8s.io/api/core/v1/toleration.go` and
//! `FindMatchingUntoleratedTaint`; only `NoSchedule` and `NoExecute` taints keep a pod off a node.

use k8s_openapi::api::core::v1::{Taint, Toleration};

/// True when `toleration` tolerates `taint`: effects match (an empty effect matches all), keys
/// match (an empty key matches all), and the operator is `Exists` or `Equal` (the default) with equal values.
pub fn tolerates(toleration: &Toleration, taint: &Taint) -> bool {
    if let Some(effect) = toleration.effect.as_deref().filter(|e| !e.is_empty()) {
        if effect != taint.effect {
            return false;
        }
    }
    if let Some(key) = toleration.key.as_deref().filter(|k| !k.is_empty()) {
        if key != taint.key {
            return false;
        }
    }
    match toleration.operator.as_deref().unwrap_or("") {
        "" | "Equal" => {
            toleration.value.as_deref().unwrap_or("") == taint.value.as_deref().unwrap_or("")
        }
        "Exists" => true,
        _ => false,
    }
}

/// The first `NoSchedule` or `NoExecute` taint that no toleration tolerates.
pub fn untolerated<'a>(taints: &'a [Taint], tolerations: &[Toleration]) -> Option<&'a Taint> {
    find_matching_untolerated_taint(taints, tolerations, |t| {
        t.effect == "NoSchedule" || t.effect == "NoExecute"
    })
}

/// The first taint passing `filter` that no toleration tolerates (`FindMatchingUntoleratedTaint`).
pub fn find_matching_untolerated_taint<'a>(
    taints: &'a [Taint],
    tolerations: &[Toleration],
    filter: impl Fn(&Taint) -> bool,
) -> Option<&'a Taint> {
    taints
        .iter()
        .filter(|t| filter(t))
        .find(|t| !tolerations.iter().any(|tol| tolerates(tol, t)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taint(key: &str, value: &str, effect: &str) -> Taint {
        Taint {
            key: key.into(),
            value: (!value.is_empty()).then(|| value.into()),
            effect: effect.into(),
            time_added: None,
        }
    }

    fn tol(key: &str, op: &str, value: &str, effect: &str) -> Toleration {
        let opt = |s: &str| (!s.is_empty()).then(|| s.to_string());
        Toleration {
            key: opt(key),
            operator: opt(op),
            value: opt(value),
            effect: opt(effect),
            toleration_seconds: None,
        }
    }

    #[test]
    fn toleration_matching_follows_key_operator_value_and_effect() {
        let t = taint("dedicated", "gpu", "NoSchedule");
        let cases = [
            (tol("dedicated", "Equal", "gpu", "NoSchedule"), true),
            (tol("dedicated", "", "gpu", ""), true),
            (tol("dedicated", "Equal", "cpu", "NoSchedule"), false),
            (tol("dedicated", "Exists", "", "NoSchedule"), true),
            (tol("dedicated", "Exists", "", "NoExecute"), false),
            (tol("other", "Exists", "", ""), false),
            (tol("", "Exists", "", ""), true),
            (tol("dedicated", "Bogus", "gpu", ""), false),
        ];
        for (i, (toleration, want)) in cases.into_iter().enumerate() {
            assert_eq!(tolerates(&toleration, &t), want, "case {i}");
        }
    }

    #[test]
    fn prefer_no_schedule_taints_never_block() {
        let taints = [
            taint("soft", "", "PreferNoSchedule"),
            taint("hard", "x", "NoExecute"),
        ];
        assert_eq!(
            untolerated(&taints, &[]).map(|t| t.key.as_str()),
            Some("hard")
        );
        assert!(untolerated(&taints, &[tol("hard", "Exists", "", "")]).is_none());
    }
}
