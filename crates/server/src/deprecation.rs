//! Deprecation warnings of deprecated kinds, as `k8s.io/apiserver/pkg/endpoints/deprecation`:
//! every request to a resource whose kind is deprecated as of the serving release gets a
//! `Warning` saying so (`installer.go` wraps each of the resource's routes).

use rkcm_apimachinery::catalog::ResourceInfo;
use rkcm_apimachinery::lifecycle::{self, Lifecycle};

/// The release this server is (`version.Info` 1.33), against which deprecations are compared.
pub const CURRENT_RELEASE: (u32, u32) = (1, 33);

/// `IsDeprecated`: whether `lifecycle` deprecates its kind in `current` or before.
pub fn is_deprecated(lifecycle: &Lifecycle, current: (u32, u32)) -> bool {
    match lifecycle.deprecated {
        (0, 0) => false,
        deprecated => current == (0, 0) || deprecated <= current,
    }
}

/// `WarningMessage`: `v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1
/// EndpointSlice`, with `, unavailable in vX.Y+` before the replacement when a removal release
/// is set.
pub fn warning_message(lifecycle: &Lifecycle) -> String {
    let (major, minor) = lifecycle.deprecated;
    let mut warning = format!(
        "{} {} is deprecated in v{major}.{minor}+",
        lifecycle.gvk.group_version(),
        lifecycle.gvk.kind
    );
    if let Some((major, minor)) = lifecycle.removed.filter(|r| *r != (0, 0)) {
        warning.push_str(&format!(", unavailable in v{major}.{minor}+"));
    }
    if let Some(replacement) = lifecycle.replacement {
        warning.push_str(&format!(
            "; use {} {}",
            replacement.group_version(),
            replacement.kind
        ));
    }
    warning
}

/// The warning every request to resource `info` gets, if its kind is deprecated.
pub fn warning(info: &ResourceInfo) -> Option<String> {
    let lifecycle = lifecycle::deprecated(info.group, info.version, info.kind)?;
    is_deprecated(lifecycle, CURRENT_RELEASE).then(|| warning_message(lifecycle))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rkcm_apimachinery::catalog::by_plural;
    use rkcm_apimachinery::lifecycle::Gvk;

    #[test]
    fn endpoints_and_component_statuses_are_deprecated_in_kubes_words() {
        let endpoints = by_plural("", "v1", "endpoints").expect("served");
        assert_eq!(
            warning(endpoints).as_deref(),
            Some("v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice")
        );
        let cs = by_plural("", "v1", "componentstatuses").expect("served");
        assert_eq!(
            warning(cs).as_deref(),
            Some("v1 ComponentStatus is deprecated in v1.19+")
        );
        let slices = by_plural("discovery.k8s.io", "v1", "endpointslices").expect("served");
        assert_eq!(warning(slices), None);
    }

    #[test]
    fn a_removal_release_comes_before_the_replacement_and_future_deprecations_stay_silent() {
        let gvk = |group, version, kind| Gvk {
            group,
            version,
            kind,
        };
        let beta = Lifecycle {
            gvk: gvk("flowcontrol.apiserver.k8s.io", "v1beta3", "FlowSchema"),
            deprecated: (1, 29),
            removed: Some((1, 32)),
            replacement: Some(gvk("flowcontrol.apiserver.k8s.io", "v1", "FlowSchema")),
        };
        assert_eq!(
            warning_message(&beta),
            "flowcontrol.apiserver.k8s.io/v1beta3 FlowSchema is deprecated in v1.29+, unavailable in v1.32+; use flowcontrol.apiserver.k8s.io/v1 FlowSchema"
        );
        assert!(is_deprecated(&beta, (1, 29)));
        assert!(!is_deprecated(&beta, (1, 28)));
        assert!(is_deprecated(&beta, (0, 0)));
        let none = Lifecycle {
            deprecated: (0, 0),
            ..beta
        };
        assert!(!is_deprecated(&none, (1, 33)));
    }
}
