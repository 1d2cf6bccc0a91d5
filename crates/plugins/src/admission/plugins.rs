//! The plugins by kube's names: kube 1.33's recommended order, which are on by default, and
//! which of them rkcm implements (the plugins themselves are built by the chain).
//!
//! Mirrors `pkg/kubeapiserver/options/plugins.go` (`AllOrderedPlugins`,
//! `DefaultOffAdmissionPlugins`) and `enabledPluginNames` of
//! `staging/src/k8s.io/apiserver/pkg/server/options/admission.go`.

use std::collections::BTreeSet;

use rkcm_server::admission::config::AdmissionConfig;

/// Errors in the admission flags, with kube's messages.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Error {
    /// A flag names a plugin kube does not have.
    #[error("{flag} plugin {name:?} is unknown")]
    UnknownPlugin {
        /// `enable-admission-plugins` or `disable-admission-plugins`.
        flag: &'static str,
        /// The name given.
        name: String,
    },
    /// Plugins both enabled and disabled.
    #[error("[{}] in enable-admission-plugins and disable-admission-plugins overlapped", .0.join(" "))]
    Overlapped(Vec<String>),
}

/// `NamespaceLifecycle`.
pub const NAMESPACE_LIFECYCLE: &str = "NamespaceLifecycle";
/// `LimitRanger`.
pub const LIMIT_RANGER: &str = "LimitRanger";
/// `ServiceAccount`.
pub const SERVICE_ACCOUNT: &str = "ServiceAccount";
/// `Priority`.
pub const PRIORITY: &str = "Priority";
/// `DefaultTolerationSeconds`.
pub const DEFAULT_TOLERATION_SECONDS: &str = "DefaultTolerationSeconds";
/// `DefaultStorageClass`.
pub const DEFAULT_STORAGE_CLASS: &str = "DefaultStorageClass";
/// `StorageObjectInUseProtection`.
pub const STORAGE_OBJECT_IN_USE_PROTECTION: &str = "StorageObjectInUseProtection";
/// `ResourceQuota`.
pub const RESOURCE_QUOTA: &str = "ResourceQuota";
/// `NodeRestriction`.
pub const NODE_RESTRICTION: &str = "NodeRestriction";
/// `MutatingAdmissionWebhook`.
pub const MUTATING_ADMISSION_WEBHOOK: &str = "MutatingAdmissionWebhook";
/// `ValidatingAdmissionWebhook`.
pub const VALIDATING_ADMISSION_WEBHOOK: &str = "ValidatingAdmissionWebhook";
/// `ValidatingAdmissionPolicy`.
pub const VALIDATING_ADMISSION_POLICY: &str = "ValidatingAdmissionPolicy";
/// `AlwaysAdmit`.
pub const ALWAYS_ADMIT: &str = "AlwaysAdmit";
/// `AlwaysDeny`.
pub const ALWAYS_DENY: &str = "AlwaysDeny";

/// Every plugin of kube-apiserver 1.33, in the order they run (`AllOrderedPlugins`).
pub const ALL_ORDERED_PLUGINS: &[&str] = &[
    ALWAYS_ADMIT,
    "NamespaceAutoProvision",
    NAMESPACE_LIFECYCLE,
    "NamespaceExists",
    "LimitPodHardAntiAffinityTopology",
    LIMIT_RANGER,
    SERVICE_ACCOUNT,
    NODE_RESTRICTION,
    "TaintNodesByCondition",
    "AlwaysPullImages",
    "ImagePolicyWebhook",
    "PodSecurity",
    "PodNodeSelector",
    PRIORITY,
    DEFAULT_TOLERATION_SECONDS,
    "PodTolerationRestriction",
    "EventRateLimit",
    "ExtendedResourceToleration",
    DEFAULT_STORAGE_CLASS,
    STORAGE_OBJECT_IN_USE_PROTECTION,
    "OwnerReferencesPermissionEnforcement",
    "PersistentVolumeClaimResize",
    "RuntimeClass",
    "CertificateApproval",
    "CertificateSigning",
    "ClusterTrustBundleAttest",
    "CertificateSubjectRestriction",
    "DefaultIngressClass",
    "DenyServiceExternalIPs",
    "PodTopologyLabels",
    // Webhooks, policies, quota and deny go last.
    "MutatingAdmissionPolicy",
    MUTATING_ADMISSION_WEBHOOK,
    VALIDATING_ADMISSION_POLICY,
    VALIDATING_ADMISSION_WEBHOOK,
    RESOURCE_QUOTA,
    ALWAYS_DENY,
];

/// The plugins kube-apiserver 1.33 runs when no flag says otherwise (the complement of
/// `DefaultOffAdmissionPlugins`).
pub const DEFAULT_ON_PLUGINS: &[&str] = &[
    NAMESPACE_LIFECYCLE,
    LIMIT_RANGER,
    SERVICE_ACCOUNT,
    DEFAULT_STORAGE_CLASS,
    "PersistentVolumeClaimResize",
    DEFAULT_TOLERATION_SECONDS,
    MUTATING_ADMISSION_WEBHOOK,
    VALIDATING_ADMISSION_WEBHOOK,
    RESOURCE_QUOTA,
    STORAGE_OBJECT_IN_USE_PROTECTION,
    PRIORITY,
    "TaintNodesByCondition",
    "RuntimeClass",
    "CertificateApproval",
    "CertificateSigning",
    "ClusterTrustBundleAttest",
    "CertificateSubjectRestriction",
    "DefaultIngressClass",
    "PodSecurity",
    "PodTopologyLabels",
    "MutatingAdmissionPolicy",
    VALIDATING_ADMISSION_POLICY,
];

/// The names of the plugins to run, in kube's order (`enabledPluginNames`): those on by
/// default and those of `--enable-admission-plugins`, less those of
/// `--disable-admission-plugins`. Unknown names and a name in both lists are refused with
/// kube's messages.
pub fn enabled_plugin_names(config: &AdmissionConfig) -> Result<Vec<&'static str>, Error> {
    for name in &config.enable_plugins {
        if !ALL_ORDERED_PLUGINS.contains(&name.as_str()) {
            return Err(Error::UnknownPlugin {
                flag: "enable-admission-plugins",
                name: name.clone(),
            });
        }
    }
    for name in &config.disable_plugins {
        if !ALL_ORDERED_PLUGINS.contains(&name.as_str()) {
            return Err(Error::UnknownPlugin {
                flag: "disable-admission-plugins",
                name: name.clone(),
            });
        }
    }
    let enable: BTreeSet<&str> = config.enable_plugins.iter().map(String::as_str).collect();
    let disable: BTreeSet<&str> = config.disable_plugins.iter().map(String::as_str).collect();
    let both: Vec<String> = enable
        .intersection(&disable)
        .map(|s| s.to_string())
        .collect();
    if !both.is_empty() {
        return Err(Error::Overlapped(both));
    }
    Ok(ALL_ORDERED_PLUGINS
        .iter()
        .copied()
        .filter(|p| (DEFAULT_ON_PLUGINS.contains(p) || enable.contains(p)) && !disable.contains(p))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(enable: &[&str], disable: &[&str]) -> AdmissionConfig {
        AdmissionConfig {
            enable_plugins: enable.iter().map(|s| s.to_string()).collect(),
            disable_plugins: disable.iter().map(|s| s.to_string()).collect(),
            ..AdmissionConfig::default()
        }
    }

    #[test]
    fn every_default_plugin_is_a_known_one() {
        for p in DEFAULT_ON_PLUGINS {
            assert!(ALL_ORDERED_PLUGINS.contains(p), "{p}");
        }
    }

    #[test]
    fn defaults_run_in_the_recommended_order() {
        let names = enabled_plugin_names(&AdmissionConfig::default()).expect("defaults");
        assert_eq!(names.first(), Some(&NAMESPACE_LIFECYCLE));
        assert_eq!(
            &names[..3],
            &[NAMESPACE_LIFECYCLE, LIMIT_RANGER, SERVICE_ACCOUNT]
        );
        assert_eq!(names.last(), Some(&RESOURCE_QUOTA));
        let pos = |n: &str| names.iter().position(|x| *x == n).expect(n);
        assert!(pos(PRIORITY) < pos(DEFAULT_TOLERATION_SECONDS));
        assert!(pos(DEFAULT_TOLERATION_SECONDS) < pos(DEFAULT_STORAGE_CLASS));
        assert!(pos(DEFAULT_STORAGE_CLASS) < pos(STORAGE_OBJECT_IN_USE_PROTECTION));
        assert!(pos("ValidatingAdmissionWebhook") < pos(RESOURCE_QUOTA));
        assert!(pos(MUTATING_ADMISSION_WEBHOOK) < pos(VALIDATING_ADMISSION_POLICY));
        assert!(pos(VALIDATING_ADMISSION_POLICY) < pos(VALIDATING_ADMISSION_WEBHOOK));
        assert!(!names.contains(&ALWAYS_DENY));
        assert!(!names.contains(&"AlwaysPullImages"));
        assert_eq!(names.len(), DEFAULT_ON_PLUGINS.len());
    }

    #[test]
    fn enabled_plugins_take_their_place_in_the_order_whatever_the_flag_order() {
        let names =
            enabled_plugin_names(&config(&[ALWAYS_DENY, "AlwaysPullImages"], &[])).expect("known");
        assert_eq!(names.last(), Some(&ALWAYS_DENY));
        let pos = |n: &str| names.iter().position(|x| *x == n).expect(n);
        assert!(pos(SERVICE_ACCOUNT) < pos("AlwaysPullImages"));
        assert!(pos("AlwaysPullImages") < pos(PRIORITY));
    }

    #[test]
    fn disabled_plugins_do_not_run_even_when_on_by_default() {
        let names = enabled_plugin_names(&config(&[], &[SERVICE_ACCOUNT, NAMESPACE_LIFECYCLE]))
            .expect("ok");
        assert!(!names.contains(&SERVICE_ACCOUNT));
        assert!(!names.contains(&NAMESPACE_LIFECYCLE));
        assert!(names.contains(&LIMIT_RANGER));
    }

    #[test]
    fn unknown_and_overlapping_names_are_refused_with_kubes_messages() {
        let err = enabled_plugin_names(&config(&["Nope"], &[])).expect_err("unknown");
        assert_eq!(
            err.to_string(),
            "enable-admission-plugins plugin \"Nope\" is unknown"
        );
        let err = enabled_plugin_names(&config(&[], &["Nope"])).expect_err("unknown");
        assert_eq!(
            err.to_string(),
            "disable-admission-plugins plugin \"Nope\" is unknown"
        );
        let err = enabled_plugin_names(&config(&[PRIORITY, ALWAYS_DENY], &[ALWAYS_DENY, PRIORITY]))
            .expect_err("overlap");
        assert_eq!(
            err.to_string(),
            "[AlwaysDeny Priority] in enable-admission-plugins and disable-admission-plugins overlapped"
        );
    }
}
