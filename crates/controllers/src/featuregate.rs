//! Feature gates: kube 1.33's known gates with their defaults, and the `--feature-gates` flag.
//!
//! Mirrors `k8s.io/component-base/featuregate` (`Set`, `SetFromMap`, `Enabled`, the `AllAlpha`
//! and `AllBeta` specials) over the gates kube-controller-manager 1.33 registers: those of
//! `pkg/features/kube_features.go` (which relists the generic API server's, apiextensions' and
//! the zpages' gates), the client-go gates it adds, and component-base's logging gates.

use std::collections::BTreeMap;

/// Maturity of a feature gate (`featuregate.prerelease`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PreRelease {
    /// Off unless asked for; `AllAlpha=true` turns every one on.
    Alpha,
    /// Usually on; `AllBeta=true` turns every one on.
    Beta,
    /// Generally available: the gate remains only until it is removed.
    Ga,
    /// The feature is going away.
    Deprecated,
}

/// One known gate, as kube 1.33's versioned spec resolves for version 1.33.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FeatureSpec {
    /// Gate name (`MultiCIDRServiceAllocator`).
    pub name: &'static str,
    /// Whether it is on when the flag does not mention it.
    pub default: bool,
    /// Maturity.
    pub pre_release: PreRelease,
    /// Whether the flag may not change it.
    pub locked: bool,
}

const fn alpha(name: &'static str) -> FeatureSpec {
    FeatureSpec {
        name,
        default: false,
        pre_release: PreRelease::Alpha,
        locked: false,
    }
}

const fn beta(name: &'static str, default: bool) -> FeatureSpec {
    FeatureSpec {
        name,
        default,
        pre_release: PreRelease::Beta,
        locked: false,
    }
}

/// GA and locked to on: kube refuses to turn it off.
const fn ga_locked(name: &'static str) -> FeatureSpec {
    FeatureSpec {
        name,
        default: true,
        pre_release: PreRelease::Ga,
        locked: true,
    }
}

const fn ga(name: &'static str) -> FeatureSpec {
    FeatureSpec {
        name,
        default: true,
        pre_release: PreRelease::Ga,
        locked: false,
    }
}

const fn deprecated(name: &'static str, default: bool) -> FeatureSpec {
    FeatureSpec {
        name,
        default,
        pre_release: PreRelease::Deprecated,
        locked: false,
    }
}

const fn deprecated_locked(name: &'static str, default: bool) -> FeatureSpec {
    FeatureSpec {
        name,
        default,
        pre_release: PreRelease::Deprecated,
        locked: true,
    }
}

/// `AllAlpha`: sets every alpha gate the flag does not name.
pub const ALL_ALPHA: &str = "AllAlpha";
/// `AllBeta`: sets every beta gate the flag does not name.
pub const ALL_BETA: &str = "AllBeta";

/// Every gate kube-controller-manager 1.33 knows, with its 1.33 default (the last versioned spec
/// at or before 1.33 in `defaultVersionedKubernetesFeatureGates`).
pub const KNOWN_FEATURES: &[FeatureSpec] = &[
    alpha(ALL_ALPHA),
    FeatureSpec {
        name: ALL_BETA,
        default: false,
        pre_release: PreRelease::Beta,
        locked: false,
    },
    // pkg/features: kube's own gates.
    deprecated("AllowDNSOnlyNodeCSR", false),
    deprecated("AllowInsecureKubeletCertificateSigningRequests", false),
    deprecated("AllowOverwriteTerminationGracePeriodSeconds", false),
    deprecated_locked("AllowServiceLBStatusOnNonLB", false),
    ga_locked("AnyVolumeDataSource"),
    beta("AuthorizeNodeWithSelectors", true),
    alpha("CloudControllerManagerWebhook"),
    beta("ClusterTrustBundle", false),
    beta("ClusterTrustBundleProjection", false),
    alpha("ContainerStopSignals"),
    beta("ContainerCheckpoint", true),
    alpha("CustomCPUCFSQuotaPeriod"),
    alpha("CPUManagerPolicyAlphaOptions"),
    beta("CPUManagerPolicyBetaOptions", true),
    ga_locked("CPUManagerPolicyOptions"),
    ga_locked("CronJobsScheduledAnnotation"),
    ga_locked("CRDValidationRatcheting"),
    alpha("CrossNamespaceVolumeDataSource"),
    ga_locked("CSIMigrationPortworx"),
    alpha("CSIVolumeHealth"),
    ga_locked("CustomResourceFieldSelectors"),
    beta("DeclarativeValidation", true),
    beta("DeclarativeValidationTakeover", false),
    alpha("DeploymentReplicaSetTerminatingReplicas"),
    ga_locked("DevicePluginCDIDevices"),
    beta("DisableAllocatorDualWrite", false),
    deprecated("DisableNodeKubeProxyVersion", true),
    alpha("DRAAdminAccess"),
    alpha("DRADeviceTaints"),
    alpha("DRAPartitionableDevices"),
    alpha("DRAPrioritizedList"),
    beta("DRAResourceClaimDeviceStatus", true),
    beta("DynamicResourceAllocation", false),
    alpha("KubeletCrashLoopBackOffMax"),
    ga_locked("ElasticIndexedJob"),
    alpha("EventedPLEG"),
    ga("ExecProbeTimeout"),
    alpha("ExternalServiceAccountTokenSigner"),
    // k8s.io/apiserver's gates, relisted by kube.
    deprecated("AggregatedDiscoveryRemoveBetaType", true),
    beta("AllowParsingUserUIDFromCertAuth", true),
    alpha("AllowUnsafeMalformedObjectDeletion"),
    beta("AnonymousAuthConfigurableEndpoints", true),
    beta("APIResponseCompression", true),
    beta("APIServerIdentity", true),
    beta("APIServerTracing", true),
    alpha("APIServingWithRoutine"),
    beta("AuthorizeWithSelectors", true),
    ga_locked("BtreeWatchCache"),
    alpha("CBORServingAndStorage"),
    beta("ConcurrentWatchObjectDecode", false),
    beta("ConsistentListFromCache", true),
    beta("CoordinatedLeaderElection", false),
    deprecated("KMSv1", false),
    alpha("ListFromCacheSnapshot"),
    alpha("MutatingAdmissionPolicy"),
    beta("OpenAPIEnums", true),
    beta("RemoteRequestHeaderUID", true),
    beta("ResilientWatchCacheInitialization", true),
    ga_locked("RetryGenerateName"),
    deprecated("SeparateCacheWatchRPC", false),
    alpha("StorageVersionAPI"),
    beta("StorageVersionHash", true),
    ga_locked("StrictCostEnforcementForVAP"),
    ga_locked("StrictCostEnforcementForWebhooks"),
    beta("StructuredAuthenticationConfiguration", true),
    ga_locked("StructuredAuthorizationConfiguration"),
    beta("UnauthenticatedHTTP2DOSMitigation", true),
    beta("WatchCacheInitializationPostStartHook", false),
    deprecated_locked("WatchFromStorageWithoutResourceVersion", false),
    beta("WatchList", true),
    // pkg/features again.
    deprecated("GitRepoVolumeDriver", false),
    beta("GracefulNodeShutdown", true),
    beta("GracefulNodeShutdownBasedOnPodPriority", true),
    ga_locked("HonorPVReclaimPolicy"),
    alpha("HPAConfigurableTolerance"),
    alpha("HPAScaleToZero"),
    beta("ImageMaximumGCAge", true),
    beta("ImageVolume", false),
    beta("InPlacePodVerticalScaling", true),
    deprecated("InPlacePodVerticalScalingAllocatedStatus", false),
    alpha("InPlacePodVerticalScalingExclusiveCPUs"),
    alpha("InTreePluginPortworxUnregister"),
    ga_locked("JobBackoffLimitPerIndex"),
    beta("JobManagedBy", true),
    beta("JobPodReplacementPolicy", true),
    ga_locked("JobSuccessPolicy"),
    beta("KubeletCgroupDriverFromCRI", true),
    alpha("KubeletEnsureSecretPulledImages"),
    beta("KubeletFineGrainedAuthz", true),
    alpha("KubeletInUserNamespace"),
    alpha("KubeletPodResourcesDynamicResources"),
    alpha("KubeletPodResourcesGet"),
    alpha("KubeletPSI"),
    deprecated("KubeletRegistrationGetOnExistsOnly", false),
    beta("KubeletSeparateDiskGC", true),
    alpha("KubeletServiceAccountTokenForCredentialProviders"),
    beta("KubeletTracing", true),
    deprecated("LegacySidecarContainers", false),
    ga_locked("LoadBalancerIPMode"),
    beta("LocalStorageCapacityIsolationFSQuotaMonitoring", false),
    ga_locked("LogarithmicScaleDown"),
    ga_locked("MatchLabelKeysInPodAffinity"),
    beta("MatchLabelKeysInPodTopologySpread", true),
    alpha("MaxUnavailableStatefulSet"),
    ga_locked("MemoryManager"),
    alpha("MemoryQoS"),
    ga("MultiCIDRServiceAllocator"),
    alpha("MutableCSINodeAllocatableCount"),
    ga_locked("NFTablesProxyMode"),
    ga_locked("NodeInclusionPolicyInPodTopologySpread"),
    beta("NodeLogQuery", false),
    beta("NodeSwap", true),
    beta("OrderedNamespaceDeletion", true),
    alpha("PodAndContainerStatsFromCRI"),
    beta("PodDeletionCost", true),
    ga_locked("PodDisruptionConditions"),
    ga_locked("PodIndexLabel"),
    alpha("PodLevelResources"),
    beta("PodLifecycleSleepAction", true),
    beta("PodReadyToStartContainersCondition", true),
    beta("PodLifecycleSleepActionAllowZero", true),
    alpha("PodObservedGenerationTracking"),
    ga_locked("PodSchedulingReadiness"),
    alpha("PodTopologyLabelsAdmission"),
    beta("PortForwardWebsockets", true),
    alpha("PreferSameTrafficDistribution"),
    beta("ProcMountType", true),
    alpha("QOSReserved"),
    beta("RecoverVolumeExpansionFailure", true),
    ga_locked("RecursiveReadOnlyMounts"),
    alpha("ReduceDefaultCrashLoopBackOffDecay"),
    beta("RelaxedDNSSearchValidation", true),
    beta("RelaxedEnvironmentVariableValidation", true),
    beta("ReloadKubeletServerCertificateFile", true),
    alpha("ResourceHealthStatus"),
    beta("RotateKubeletServerCertificate", true),
    alpha("RuntimeClassInImageCriAPI"),
    beta("SchedulerAsyncPreemption", true),
    beta("SchedulerPopFromBackoffQ", true),
    beta("SchedulerQueueingHints", true),
    beta("SELinuxChangePolicy", true),
    beta("SELinuxMount", false),
    beta("SELinuxMountReadWriteOncePod", true),
    beta("SeparateTaintEvictionController", true),
    deprecated("StorageNamespaceIndex", true),
    beta("ServiceAccountNodeAudienceRestriction", true),
    ga_locked("ServiceAccountTokenJTI"),
    ga_locked("ServiceAccountTokenNodeBinding"),
    ga_locked("ServiceAccountTokenNodeBindingValidation"),
    ga_locked("ServiceAccountTokenPodNodeInfo"),
    ga_locked("ServiceTrafficDistribution"),
    ga_locked("SidecarContainers"),
    ga_locked("SizeMemoryBackedVolumes"),
    alpha("PodLogsQuerySplitStreams"),
    ga_locked("StatefulSetAutoDeletePVC"),
    ga_locked("StatefulSetStartOrdinal"),
    alpha("StorageCapacityScoring"),
    alpha("StorageVersionMigrator"),
    beta("StreamingCollectionEncodingToJSON", true),
    beta("StreamingCollectionEncodingToProtobuf", true),
    beta("SupplementalGroupsPolicy", true),
    beta("SystemdWatchdog", true),
    alpha("StrictIPCIDRValidation"),
    ga_locked("TopologyAwareHints"),
    alpha("TopologyManagerPolicyAlphaOptions"),
    beta("TopologyManagerPolicyBetaOptions", true),
    ga("TopologyManagerPolicyOptions"),
    beta("TranslateStreamCloseWebsocketRequests", true),
    alpha("UnknownVersionInteroperabilityProxy"),
    alpha("UserNamespacesPodSecurityStandards"),
    beta("UserNamespacesSupport", true),
    beta("VolumeAttributesClass", false),
    beta("WinDSR", true),
    alpha("WindowsGracefulNodeShutdown"),
    beta("WinOverlay", true),
    alpha("WindowsCPUAndMemoryAffinity"),
    deprecated("WindowsHostNetwork", false),
    alpha("ComponentFlagz"),
    alpha("ComponentStatusz"),
    beta("DisableCPUQuotaWithExclusiveCPUs", true),
    // k8s.io/client-go/features, added to kube's gate by pkg/features' init.
    alpha("ClientsAllowCBOR"),
    alpha("ClientsPreferCBOR"),
    alpha("InformerResourceVersion"),
    beta("InOrderInformers", true),
    beta("WatchListClient", false),
    // k8s.io/component-base/logs/api/v1, added by kube-controller-manager's options.
    beta("ContextualLogging", true),
    alpha("LoggingAlphaOptions"),
    beta("LoggingBetaOptions", true),
];

/// The spec of gate `name`, if kube 1.33 knows it.
pub fn spec(name: &str) -> Option<&'static FeatureSpec> {
    KNOWN_FEATURES.iter().find(|f| f.name == name)
}

/// A `--feature-gates` value kube refuses, with kube's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FeatureGateError {
    /// `Name` without `=value`.
    #[error("missing bool value for {0}")]
    MissingValue(String),
    /// A value `strconv.ParseBool` refuses.
    #[error("invalid value of {name}={value}, err: strconv.ParseBool: parsing {value:?}: invalid syntax")]
    InvalidValue {
        /// The gate.
        name: String,
        /// What was given.
        value: String,
    },
    /// A gate kube does not know.
    #[error("unrecognized feature gate: {0}")]
    Unrecognized(String),
    /// A locked gate set to the other value.
    #[error("cannot set feature gate {name} to {value}, feature is locked to {locked_to}")]
    Locked {
        /// The gate.
        name: String,
        /// The value asked for.
        value: bool,
        /// Its only value.
        locked_to: bool,
    },
}

/// The feature gates in effect: kube 1.33's defaults with what `--feature-gates` set.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FeatureGates {
    /// Gates the flag set (`AllAlpha`/`AllBeta` expanded), by name.
    enabled: BTreeMap<&'static str, bool>,
}

/// Go's `strconv.ParseBool`.
fn parse_bool(value: &str) -> Option<bool> {
    match value {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

impl FeatureGates {
    /// Parses `--feature-gates` (`Name=true,Other=false`, as `featureGate.Set`), each occurrence
    /// of the flag applied in order. Unknown gates and changes to locked ones are refused.
    pub fn parse<'a>(values: impl IntoIterator<Item = &'a str>) -> Result<Self, FeatureGateError> {
        let mut gates = FeatureGates::default();
        for value in values {
            let mut pairs = Vec::new();
            for item in value.split(',').filter(|s| !s.is_empty()) {
                let (name, raw) = match item.split_once('=') {
                    Some((name, raw)) => (name.trim(), raw.trim()),
                    None => return Err(FeatureGateError::MissingValue(item.trim().to_string())),
                };
                let Some(v) = parse_bool(raw) else {
                    return Err(FeatureGateError::InvalidValue {
                        name: name.to_string(),
                        value: raw.to_string(),
                    });
                };
                pairs.push((name, v));
            }
            gates.set_from_pairs(&pairs)?;
        }
        Ok(gates)
    }

    /// `SetFromMap`: every name must be known, locked gates keep their value; `AllAlpha` and
    /// `AllBeta` set the gates of their maturity that are not named explicitly.
    fn set_from_pairs(&mut self, pairs: &[(&str, bool)]) -> Result<(), FeatureGateError> {
        let mut specials = Vec::new();
        for &(name, value) in pairs {
            let Some(spec) = spec(name) else {
                return Err(FeatureGateError::Unrecognized(name.to_string()));
            };
            if spec.locked && spec.default != value {
                return Err(FeatureGateError::Locked {
                    name: name.to_string(),
                    value,
                    locked_to: spec.default,
                });
            }
            match spec.pre_release {
                PreRelease::Ga if spec.name != ALL_ALPHA && spec.name != ALL_BETA => {
                    tracing::warn!(
                        "Setting GA feature gate {name}={value}. It will be removed in a future release."
                    )
                }
                PreRelease::Deprecated => tracing::warn!(
                    "Setting deprecated feature gate {name}={value}. It will be removed in a future release."
                ),
                _ => {}
            }
            if spec.name == ALL_ALPHA || spec.name == ALL_BETA {
                specials.push((spec, value));
            }
            self.enabled.insert(spec.name, value);
        }
        for (special, value) in specials {
            let maturity = if special.name == ALL_ALPHA {
                PreRelease::Alpha
            } else {
                PreRelease::Beta
            };
            for f in KNOWN_FEATURES.iter().filter(|f| {
                f.pre_release == maturity
                    && f.name != ALL_ALPHA
                    && f.name != ALL_BETA
                    && !f.locked
                    && !pairs.iter().any(|(n, _)| *n == f.name)
            }) {
                self.enabled.insert(f.name, value);
            }
        }
        Ok(())
    }

    /// Whether gate `name` is on (`Enabled`); an unknown gate is off.
    pub fn enabled(&self, name: &str) -> bool {
        match self.enabled.get(name) {
            Some(&v) => v,
            None => spec(name).is_some_and(|s| s.default),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_kube_1_33s() {
        let gates = FeatureGates::default();
        assert!(gates.enabled("MultiCIDRServiceAllocator"));
        assert!(gates.enabled("SeparateTaintEvictionController"));
        assert!(gates.enabled("APIServerIdentity"));
        assert!(!gates.enabled("StorageVersionAPI"));
        assert!(!gates.enabled("DynamicResourceAllocation"));
        assert!(!gates.enabled("DRADeviceTaints"));
        assert!(!gates.enabled("ClusterTrustBundle"));
        assert!(!gates.enabled("VolumeAttributesClass"));
        assert!(gates.enabled("SELinuxChangePolicy"));
        assert!(!gates.enabled("StorageVersionMigrator"));
        assert!(!gates.enabled("InformerResourceVersion"));
        assert!(!gates.enabled("NoSuchGate"));
    }

    #[test]
    fn names_are_unique() {
        let mut seen = std::collections::BTreeSet::new();
        for f in KNOWN_FEATURES {
            assert!(seen.insert(f.name), "{} twice", f.name);
        }
    }

    // Cases of component-base's TestFeatureGateFlag.
    #[test]
    fn the_flag_sets_gates_as_kube_parses_it() {
        let gates = FeatureGates::parse(["DynamicResourceAllocation=true,ClusterTrustBundle=1"])
            .expect("valid");
        assert!(gates.enabled("DynamicResourceAllocation"));
        assert!(gates.enabled("ClusterTrustBundle"));
        let gates = FeatureGates::parse([" MultiCIDRServiceAllocator = false ,"]).expect("valid");
        assert!(!gates.enabled("MultiCIDRServiceAllocator"));
        // Later occurrences of the flag override earlier ones.
        let gates =
            FeatureGates::parse(["VolumeAttributesClass=true", "VolumeAttributesClass=False"])
                .expect("valid");
        assert!(!gates.enabled("VolumeAttributesClass"));
        assert_eq!(FeatureGates::parse([""]), Ok(FeatureGates::default()));
    }

    #[test]
    fn all_alpha_and_all_beta_set_the_gates_not_named() {
        let gates = FeatureGates::parse(["AllAlpha=true,DRADeviceTaints=false"]).expect("valid");
        assert!(gates.enabled("StorageVersionAPI"));
        assert!(gates.enabled("StorageVersionMigrator"));
        assert!(!gates.enabled("DRADeviceTaints"));
        assert!(!gates.enabled("DynamicResourceAllocation"), "beta");
        let gates = FeatureGates::parse(["AllBeta=false"]).expect("valid");
        assert!(!gates.enabled("SeparateTaintEvictionController"));
        assert!(gates.enabled("MultiCIDRServiceAllocator"), "GA");
    }

    #[test]
    fn bad_values_are_refused_with_kubes_messages() {
        assert_eq!(
            FeatureGates::parse(["Foo=true"]).unwrap_err().to_string(),
            "unrecognized feature gate: Foo"
        );
        assert_eq!(
            FeatureGates::parse(["DynamicResourceAllocation"])
                .unwrap_err()
                .to_string(),
            "missing bool value for DynamicResourceAllocation"
        );
        assert_eq!(
            FeatureGates::parse(["DynamicResourceAllocation=yes"])
                .unwrap_err()
                .to_string(),
            "invalid value of DynamicResourceAllocation=yes, err: strconv.ParseBool: parsing \"yes\": invalid syntax"
        );
        assert_eq!(
            FeatureGates::parse(["SidecarContainers=false"])
                .unwrap_err()
                .to_string(),
            "cannot set feature gate SidecarContainers to false, feature is locked to true"
        );
        // Setting a locked gate to its value is allowed.
        assert!(FeatureGates::parse(["SidecarContainers=true"]).is_ok());
    }
}
