//! The `/scale` subresource of workloads: `spec.replicas`, `status.replicas` and the selector
//! rendered as a label-selector string (`autoscaling/v1` `Scale`).

use serde_json::{json, Value};

use crate::object::{get, get_i64, set, string_map};
use crate::selector::LabelSelector;
use crate::FieldError;

/// How a kind writes `spec.selector`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SelectorForm {
    /// An apps/v1 `LabelSelector` (`matchLabels`, `matchExpressions`).
    LabelSelector,
    /// A plain label map, as core/v1 ReplicationControllers have.
    Map,
}

impl SelectorForm {
    /// `spec.selector` of `obj` rendered as a label-selector string (`app=web,env in (a,b)`).
    fn render(self, obj: &Value) -> String {
        let selector = get(obj, &["spec", "selector"]);
        match self {
            SelectorForm::LabelSelector => LabelSelector::from_json(selector)
                .map(|s| s.render())
                .unwrap_or_default(),
            SelectorForm::Map => LabelSelector::from_map(&string_map(selector)).render(),
        }
    }
}

/// `(spec.replicas, status.replicas, selector)` of a workload for `/scale`.
pub(crate) fn scale_of(obj: &Value, selector: SelectorForm) -> (i32, i32, String) {
    let as_i32 = |path: &[&str]| {
        get_i64(obj, path)
            .and_then(|n| i32::try_from(n).ok())
            .unwrap_or(0)
    };
    (
        as_i32(&["spec", "replicas"]),
        as_i32(&["status", "replicas"]),
        selector.render(obj),
    )
}

/// Sets `spec.replicas` from a `Scale`, refusing negative counts as `ValidateScale` does.
pub(crate) fn set_replicas(obj: &mut Value, replicas: i32) -> Result<(), FieldError> {
    if replicas < 0 {
        return Err(FieldError::invalid(
            "spec.replicas",
            &json!(replicas),
            "must be greater than or equal to 0",
        ));
    }
    set(obj, &["spec", "replicas"], Some(json!(replicas)));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_render_from_label_selectors_and_maps() {
        let apps = json!({"spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "env", "operator": "In", "values": ["b", "a"]}]}},
            "status": {"replicas": 2}});
        assert_eq!(
            scale_of(&apps, SelectorForm::LabelSelector),
            (3, 2, "app=web,env in (a,b)".to_string())
        );
        let rc = json!({"spec": {"selector": {"tier": "fe", "app": "web"}}});
        assert_eq!(
            scale_of(&rc, SelectorForm::Map),
            (0, 0, "app=web,tier=fe".to_string())
        );
    }

    #[test]
    fn negative_replicas_are_refused() {
        let mut obj = json!({"spec": {"replicas": 1}});
        set_replicas(&mut obj, 4).expect("valid");
        assert_eq!(obj["spec"]["replicas"], 4);
        let err = set_replicas(&mut obj, -1).expect_err("negative");
        assert_eq!(
            err.message_with_field(),
            "spec.replicas: Invalid value: -1: must be greater than or equal to 0"
        );
        assert_eq!(obj["spec"]["replicas"], 4);
    }
}
