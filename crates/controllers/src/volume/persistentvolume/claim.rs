//! What the binder does with a claim: the decisions of `syncClaim`, `syncUnboundClaim` and
//! `syncBoundClaim` (`pkg/controller/volume/persistentvolume/pv_controller.go`), as pure
//! functions of the claim and the cached volumes, classes and pods.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use k8s_openapi::api::storage::v1::StorageClass;
use rkcm_runtime::events::EventType;
use rkcm_runtime::storage::*;

/// An event the binder records about a claim or a volume.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BinderEvent {
    /// Normal or Warning.
    pub type_: EventType,
    /// kube's reason (`FailedBinding`, `WaitForFirstConsumer`, …).
    pub reason: &'static str,
    /// kube's message.
    pub message: String,
}

impl BinderEvent {
    fn normal(reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            type_: EventType::Normal,
            reason,
            message: message.into(),
        }
    }

    fn warning(reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            type_: EventType::Warning,
            reason,
            message: message.into(),
        }
    }
}

/// What to do with a claim.
#[derive(Clone, Debug)]
pub enum ClaimAction {
    /// Bind the claim and the volume both ways and mark both Bound (`bind`).
    Bind(Arc<PersistentVolume>),
    /// Give a claim without a class the default class and sync again
    /// (`assignDefaultStorageClass`).
    AssignDefaultClass(String),
    /// Record the event, if any, and set the claim Pending without volume.
    Pending(Option<BinderEvent>),
    /// Set the claim Lost, recording the event when the phase changes.
    Lost(BinderEvent),
    /// Ask the class's external provisioner for a volume: annotate the claim with its name and
    /// record `ExternalProvisioning` (`provisionClaimOperationExternal`).
    Provision {
        /// The class's provisioner.
        provisioner: String,
    },
    /// Record the event and leave the claim as it is (`provisionClaim` failing to find a
    /// plugin; dynamic provisioning turned off).
    Event(Option<BinderEvent>),
    /// Record the event and fail the sync with `error`.
    Fail {
        /// The event.
        event: BinderEvent,
        /// The error message.
        error: String,
    },
}

/// Why a claim's sync cannot decide.
#[derive(Debug, thiserror::Error)]
pub enum DecideError {
    /// The claim's class has no binding mode.
    #[error("VolumeBindingMode not set for StorageClass {0:?}")]
    NoBindingMode(String),
    /// The claim's selector cannot be read.
    #[error("error finding PV for claim {claim:?}")]
    Match {
        /// `namespace/name`.
        claim: String,
        /// The cause.
        #[source]
        source: MatchError,
    },
}

/// What the binder knows besides the claim: its caches.
pub struct ClaimInputs<'a> {
    /// Every volume.
    pub volumes: &'a [Arc<PersistentVolume>],
    /// Every StorageClass.
    pub classes: &'a [Arc<StorageClass>],
    /// Names of the not yet scheduled pods using the claim (`findNonScheduledPodsByPVC`).
    pub unscheduled_pods: &'a [String],
    /// `--enable-dynamic-provisioning`.
    pub enable_dynamic_provisioning: bool,
}

impl ClaimInputs<'_> {
    fn class(&self, name: &str) -> Option<&StorageClass> {
        self.classes
            .iter()
            .find(|c| c.metadata.name.as_deref() == Some(name))
            .map(|c| &**c)
    }

    fn volume(&self, name: &str) -> Option<&Arc<PersistentVolume>> {
        self.volumes
            .iter()
            .find(|v| v.metadata.name.as_deref() == Some(name))
    }
}

/// Whether the claim's class delays binding to the first consumer (`IsDelayBindingMode`): false
/// without class or for a class that does not exist.
pub fn is_delay_binding_mode(
    claim: &PersistentVolumeClaim,
    classes: &[Arc<StorageClass>],
) -> Result<bool, DecideError> {
    let name = claim_class(claim);
    if name.is_empty() {
        return Ok(false);
    }
    let Some(class) = classes
        .iter()
        .find(|c| c.metadata.name.as_deref() == Some(name))
    else {
        return Ok(false);
    };
    match class.volume_binding_mode.as_deref() {
        None => Err(DecideError::NoBindingMode(name.to_string())),
        Some(mode) => Ok(mode == "WaitForFirstConsumer"),
    }
}

/// Decides what to do with `claim` (`syncClaim`): a claim not yet through its first binding
/// (no `pv.kubernetes.io/bind-completed`) is matched or provisioned, a bound one is checked.
pub fn sync_claim(
    claim: &PersistentVolumeClaim,
    inputs: &ClaimInputs<'_>,
) -> Result<ClaimAction, DecideError> {
    if has_annotation(claim.metadata.annotations.as_ref(), ANN_BIND_COMPLETED) {
        Ok(sync_bound_claim(claim, inputs))
    } else {
        sync_unbound_claim(claim, inputs)
    }
}

fn sync_unbound_claim(
    claim: &PersistentVolumeClaim,
    inputs: &ClaimInputs<'_>,
) -> Result<ClaimAction, DecideError> {
    let volume_name = claim_volume_name(claim);
    if volume_name.is_empty() {
        let delay_binding = is_delay_binding_mode(claim, inputs.classes)?;
        let found =
            find_best_match_for_claim(claim, inputs.volumes, delay_binding).map_err(|source| {
                DecideError::Match {
                    claim: claim_key(claim),
                    source,
                }
            })?;
        if let Some(volume) = found {
            return Ok(ClaimAction::Bind(volume));
        }
        if !claim_has_class(claim) {
            if let Some(default) = default_class(inputs.classes.iter().map(|c| &**c)) {
                return Ok(ClaimAction::AssignDefaultClass(
                    default.metadata.name.clone().unwrap_or_default(),
                ));
            }
        }
        let selected_node = has_annotation(claim.metadata.annotations.as_ref(), ANN_SELECTED_NODE);
        if delay_binding && !selected_node {
            return Ok(ClaimAction::Pending(Some(wait_for_first_consumer(
                inputs.unscheduled_pods,
            ))));
        }
        let class_name = claim_class(claim);
        if !class_name.is_empty() {
            return Ok(provision_claim(class_name, inputs));
        }
        return Ok(ClaimAction::Pending(Some(BinderEvent::normal(
            "FailedBinding",
            "no persistent volumes available for this claim and no storage class is set",
        ))));
    }
    let Some(volume) = inputs.volume(volume_name) else {
        // The user asked for a volume that does not exist (yet): try again later.
        return Ok(ClaimAction::Pending(None));
    };
    if claim_ref(volume).is_none() {
        return Ok(match check_volume_satisfies_claim(volume, claim) {
            Ok(()) => ClaimAction::Bind(Arc::clone(volume)),
            Err(why) => ClaimAction::Pending(Some(BinderEvent::warning(
                "VolumeMismatch",
                format!("Cannot bind to requested volume {volume_name:?}: {why}"),
            ))),
        });
    }
    if is_volume_bound_to_claim(volume, claim) {
        return Ok(ClaimAction::Bind(Arc::clone(volume)));
    }
    let event = BinderEvent::warning(
        "FailedBinding",
        format!("volume {volume_name:?} already bound to a different claim."),
    );
    if !has_annotation(claim.metadata.annotations.as_ref(), ANN_BOUND_BY_CONTROLLER) {
        return Ok(ClaimAction::Pending(Some(event)));
    }
    let other = claim_ref(volume).map(claim_ref_key).unwrap_or_default();
    Ok(ClaimAction::Fail {
        event,
        error: format!(
            "invalid binding of claim {:?} to volume {volume_name:?}: volume already claimed by {other:?}",
            claim_key(claim)
        ),
    })
}

/// The event of a `WaitForFirstConsumer` claim no scheduled pod uses yet
/// (`emitEventForUnboundDelayBindingClaim`).
fn wait_for_first_consumer(unscheduled_pods: &[String]) -> BinderEvent {
    match unscheduled_pods {
        [] => BinderEvent::normal(
            "WaitForFirstConsumer",
            "waiting for first consumer to be created before binding",
        ),
        [one] => BinderEvent::normal(
            "WaitForPodScheduled",
            format!("waiting for pod {one} to be scheduled"),
        ),
        many => BinderEvent::normal(
            "WaitForPodScheduled",
            format!("waiting for pods {} to be scheduled", many.join(",")),
        ),
    }
}

/// `provisionClaim`: rkcm has no in-tree volume plugins, so a class whose provisioner is a
/// `kubernetes.io/` plugin cannot be provisioned and any other one is external.
fn provision_claim(class_name: &str, inputs: &ClaimInputs<'_>) -> ClaimAction {
    if !inputs.enable_dynamic_provisioning {
        return ClaimAction::Event(None);
    }
    let Some(class) = inputs.class(class_name) else {
        return ClaimAction::Event(Some(BinderEvent::warning(
            "ProvisioningFailed",
            format!("storageclass.storage.k8s.io {class_name:?} not found"),
        )));
    };
    if class.provisioner.starts_with("kubernetes.io/") {
        return ClaimAction::Event(Some(BinderEvent::warning(
            "ProvisioningFailed",
            format!("no volume plugin matched name: {}", class.provisioner),
        )));
    }
    ClaimAction::Provision {
        provisioner: class.provisioner.clone(),
    }
}

fn sync_bound_claim(claim: &PersistentVolumeClaim, inputs: &ClaimInputs<'_>) -> ClaimAction {
    let volume_name = claim_volume_name(claim);
    if volume_name.is_empty() {
        return ClaimAction::Lost(BinderEvent::warning(
            "ClaimLost",
            "Bound claim has lost reference to PersistentVolume. Data on the volume is lost!",
        ));
    }
    let Some(volume) = inputs.volume(volume_name) else {
        return ClaimAction::Lost(BinderEvent::warning(
            "ClaimLost",
            "Bound claim has lost its PersistentVolume. Data on the volume is lost!",
        ));
    };
    match claim_ref(volume) {
        // Unbound meanwhile, or the cache has not seen the binding yet: bind again.
        None => ClaimAction::Bind(Arc::clone(volume)),
        Some(r) if r.uid.is_some() && r.uid == claim.metadata.uid => {
            ClaimAction::Bind(Arc::clone(volume))
        }
        Some(_) => ClaimAction::Lost(BinderEvent::warning(
            "ClaimMisbound",
            "Two claims are bound to the same volume, this one is bound incorrectly",
        )),
    }
}

/// The message of the `ExternalProvisioning` event (`provisionClaimOperationExternal`).
pub fn external_provisioning_message(provisioner: &str) -> String {
    format!(
        "Waiting for a volume to be created either by the external provisioner '{provisioner}' \
         or manually by the system administrator. If volume creation is delayed, please verify \
         that the provisioner is running and correctly registered."
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::volume::persistentvolume::fixtures::*;

    fn inputs<'a>(
        volumes: &'a [Arc<PersistentVolume>],
        classes: &'a [Arc<StorageClass>],
    ) -> ClaimInputs<'a> {
        ClaimInputs {
            volumes,
            classes,
            unscheduled_pods: &[],
            enable_dynamic_provisioning: true,
        }
    }

    fn bound_name(action: &ClaimAction) -> Option<&str> {
        match action {
            ClaimAction::Bind(v) => v.metadata.name.as_deref(),
            _ => None,
        }
    }

    // binder_test.go TestSync 1-1 .. 1-5: unbound claims find the best volume or stay Pending.
    #[test]
    fn an_unbound_claim_binds_the_best_volume_or_waits() {
        let volumes = vec![
            Arc::new(volume("volume1-1", "1Gi")),
            Arc::new(volume("volume1-2", "10Gi")),
        ];
        let action = sync_claim(&claim("claim1-1", "1Gi"), &inputs(&volumes, &[])).unwrap();
        assert_eq!(bound_name(&action), Some("volume1-1"));
        // 1-2: no volume large enough, no class: FailedBinding.
        let action = sync_claim(&claim("claim1-2", "100Gi"), &inputs(&volumes, &[])).unwrap();
        let ClaimAction::Pending(Some(event)) = action else {
            panic!("{action:?}")
        };
        assert_eq!(event.reason, "FailedBinding");
        assert_eq!(
            event.message,
            "no persistent volumes available for this claim and no storage class is set"
        );
        // 1-3: a volume already bound to someone else is not taken.
        let taken = vec![Arc::new(pre_bound(
            volume("volume1-3", "1Gi"),
            "other",
            "uid-other",
        ))];
        let action = sync_claim(&claim("claim1-3", "1Gi"), &inputs(&taken, &[])).unwrap();
        assert!(matches!(action, ClaimAction::Pending(Some(_))));
        // 1-4: a volume pre-bound to the claim (no UID) is bound.
        let pre = vec![Arc::new(pre_bound(
            volume("volume1-4", "1Gi"),
            "claim1-4",
            "",
        ))];
        let action = sync_claim(&claim("claim1-4", "1Gi"), &inputs(&pre, &[])).unwrap();
        assert_eq!(bound_name(&action), Some("volume1-4"));
    }

    // binder_test.go TestSync 2-1 .. 2-5: claims pre-bound to a volume by name.
    #[test]
    fn a_claim_naming_a_volume_binds_it_when_it_satisfies_the_claim() {
        let volumes = vec![
            Arc::new(volume("volume2-3", "1Gi")),
            Arc::new(volume("small", "1Mi")),
            Arc::new(pre_bound(volume("theirs", "1Gi"), "other", "uid-other")),
            Arc::new(pre_bound(volume("mine", "1Gi"), "claim2", "uid-claim2")),
        ];
        let ins = inputs(&volumes, &[]);
        // 2-1: the volume does not exist: Pending, no event.
        let action = sync_claim(&with_volume(claim("claim2", "1Gi"), "missing"), &ins).unwrap();
        assert!(matches!(action, ClaimAction::Pending(None)));
        // 2-3: an unbound volume is bound.
        let action = sync_claim(&with_volume(claim("claim2", "1Gi"), "volume2-3"), &ins).unwrap();
        assert_eq!(bound_name(&action), Some("volume2-3"));
        // 2-4: too small: VolumeMismatch.
        let action = sync_claim(&with_volume(claim("claim2", "1Gi"), "small"), &ins).unwrap();
        let ClaimAction::Pending(Some(event)) = action else {
            panic!("{action:?}")
        };
        assert_eq!(event.reason, "VolumeMismatch");
        assert_eq!(
            event.message,
            "Cannot bind to requested volume \"small\": requested PV is too small"
        );
        // 2-5: bound to us already: finish the binding.
        let action = sync_claim(&with_volume(claim("claim2", "1Gi"), "mine"), &ins).unwrap();
        assert_eq!(bound_name(&action), Some("mine"));
        // 2-7: bound to another claim by the user: Pending with FailedBinding.
        let action = sync_claim(&with_volume(claim("claim2", "1Gi"), "theirs"), &ins).unwrap();
        let ClaimAction::Pending(Some(event)) = action else {
            panic!("{action:?}")
        };
        assert_eq!(
            event.message,
            "volume \"theirs\" already bound to a different claim."
        );
        // 2-8: the same, but the controller had bound the claim: an error.
        let mut by_controller = with_volume(claim("claim2", "1Gi"), "theirs");
        annotate(&mut by_controller.metadata, ANN_BOUND_BY_CONTROLLER);
        assert!(matches!(
            sync_claim(&by_controller, &ins).unwrap(),
            ClaimAction::Fail { .. }
        ));
    }

    // binder_test.go TestSync 3-1 .. 3-5: bound claims whose volume went away are Lost.
    #[test]
    fn a_bound_claim_without_its_volume_is_lost_or_misbound() {
        let volumes = vec![
            Arc::new(pre_bound(
                volume("volume3-3", "1Gi"),
                "claim3",
                "uid-claim3",
            )),
            Arc::new(volume("volume3-4", "1Gi")),
            Arc::new(pre_bound(volume("volume3-5", "1Gi"), "claim3", "uid-other")),
        ];
        let ins = inputs(&volumes, &[]);
        let mut lost_ref = claim("claim3", "1Gi");
        annotate(&mut lost_ref.metadata, ANN_BIND_COMPLETED);
        let ClaimAction::Lost(event) = sync_claim(&lost_ref, &ins).unwrap() else {
            panic!()
        };
        assert_eq!(
            event.message,
            "Bound claim has lost reference to PersistentVolume. Data on the volume is lost!"
        );
        let bound = |v: &str| {
            let mut c = with_volume(claim("claim3", "1Gi"), v);
            annotate(&mut c.metadata, ANN_BIND_COMPLETED);
            c
        };
        let ClaimAction::Lost(event) = sync_claim(&bound("gone"), &ins).unwrap() else {
            panic!()
        };
        assert_eq!(event.reason, "ClaimLost");
        assert_eq!(
            bound_name(&sync_claim(&bound("volume3-3"), &ins).unwrap()),
            Some("volume3-3")
        );
        assert_eq!(
            bound_name(&sync_claim(&bound("volume3-4"), &ins).unwrap()),
            Some("volume3-4")
        );
        let ClaimAction::Lost(event) = sync_claim(&bound("volume3-5"), &ins).unwrap() else {
            panic!()
        };
        assert_eq!(event.reason, "ClaimMisbound");
    }

    // provision_test.go / binder_test.go delayed binding: WaitForFirstConsumer until the
    // scheduler selects a node, then the external provisioner is asked.
    #[test]
    fn a_wait_for_first_consumer_claim_waits_then_is_provisioned_externally() {
        let classes = vec![Arc::new(class("standard", "rkcm.io/simulated", true))];
        let c = with_class(claim("claim", "1Gi"), "standard");
        let ClaimAction::Pending(Some(event)) = sync_claim(&c, &inputs(&[], &classes)).unwrap()
        else {
            panic!()
        };
        assert_eq!(
            (event.reason, event.message.as_str()),
            (
                "WaitForFirstConsumer",
                "waiting for first consumer to be created before binding"
            )
        );
        let pods = vec!["web-0".to_string()];
        let ins = ClaimInputs {
            unscheduled_pods: &pods,
            ..inputs(&[], &classes)
        };
        let ClaimAction::Pending(Some(event)) = sync_claim(&c, &ins).unwrap() else {
            panic!()
        };
        assert_eq!(
            (event.reason, event.message.as_str()),
            (
                "WaitForPodScheduled",
                "waiting for pod web-0 to be scheduled"
            )
        );
        // An unbound volume is left to the scheduler.
        let volumes = vec![Arc::new(with_volume_class(volume("v", "1Gi"), "standard"))];
        assert!(matches!(
            sync_claim(&c, &inputs(&volumes, &classes)).unwrap(),
            ClaimAction::Pending(_)
        ));
        let mut selected = c.clone();
        annotate(&mut selected.metadata, ANN_SELECTED_NODE);
        let ClaimAction::Provision { provisioner } =
            sync_claim(&selected, &inputs(&[], &classes)).unwrap()
        else {
            panic!()
        };
        assert_eq!(provisioner, "rkcm.io/simulated");
    }

    // provision_test.go: Immediate classes provision at once; unknown classes and in-tree
    // provisioners fail with ProvisioningFailed; disabled provisioning does nothing.
    #[test]
    fn immediate_classes_provision_at_once_and_failures_are_events() {
        let classes = vec![
            Arc::new(class("fast", "example.com/csi", false)),
            Arc::new(class("local", NOT_SUPPORTED_PROVISIONER, false)),
        ];
        let ins = inputs(&[], &classes);
        assert!(matches!(
            sync_claim(&with_class(claim("c", "1Gi"), "fast"), &ins).unwrap(),
            ClaimAction::Provision { .. }
        ));
        let ClaimAction::Event(Some(event)) =
            sync_claim(&with_class(claim("c", "1Gi"), "missing"), &ins).unwrap()
        else {
            panic!()
        };
        assert_eq!(event.reason, "ProvisioningFailed");
        assert_eq!(
            event.message,
            "storageclass.storage.k8s.io \"missing\" not found"
        );
        let ClaimAction::Event(Some(event)) =
            sync_claim(&with_class(claim("c", "1Gi"), "local"), &ins).unwrap()
        else {
            panic!()
        };
        assert_eq!(
            event.message,
            "no volume plugin matched name: kubernetes.io/no-provisioner"
        );
        let off = ClaimInputs {
            enable_dynamic_provisioning: false,
            ..inputs(&[], &classes)
        };
        assert!(matches!(
            sync_claim(&with_class(claim("c", "1Gi"), "fast"), &off).unwrap(),
            ClaimAction::Event(None)
        ));
    }

    // binder_test.go retroactive default class cases: only a claim without any class gets it.
    #[test]
    fn a_claim_without_class_gets_the_default_class_retroactively() {
        let mut default = class("standard", "rkcm.io/simulated", true);
        annotate(&mut default.metadata, IS_DEFAULT_CLASS_ANNOTATION);
        default
            .metadata
            .annotations
            .as_mut()
            .unwrap()
            .insert(IS_DEFAULT_CLASS_ANNOTATION.into(), "true".into());
        let classes = vec![Arc::new(default)];
        let ins = inputs(&[], &classes);
        let ClaimAction::AssignDefaultClass(name) = sync_claim(&claim("c", "1Gi"), &ins).unwrap()
        else {
            panic!()
        };
        assert_eq!(name, "standard");
        // storageClassName "" asks for no class.
        assert!(matches!(
            sync_claim(&with_class(claim("c", "1Gi"), ""), &ins).unwrap(),
            ClaimAction::Pending(Some(_))
        ));
        let mut no_mode = class("nomode", "x", false);
        no_mode.volume_binding_mode = None;
        let classes = vec![Arc::new(no_mode)];
        let err = sync_claim(
            &with_class(claim("c", "1Gi"), "nomode"),
            &inputs(&[], &classes),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "VolumeBindingMode not set for StorageClass \"nomode\""
        );
    }
}
