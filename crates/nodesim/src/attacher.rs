//! A simulated CSI external-attacher (kubernetes-csi/external-attacher) for the driver
//! [`DRIVER_NAME`]: a VolumeAttachment of the driver gets the finalizer
//! `external-attacher/simulated-csi-rkcm-io`, then `status.attached: true` with the
//! attachment metadata `devicePath`; once deleted, `status.attached` goes back to false and the
//! finalizer is removed, so the API server removes it. Attaching a simulated volume cannot fail.

use std::sync::Arc;

use k8s_openapi::api::storage::v1::VolumeAttachment;
use kube::api::{Api, Patch, PatchParams};
use kube::Client;
use rkcm_runtime::informer::{InformerFactory, Notification, Store};
use rkcm_runtime::workqueue::RateLimitingQueue;
use rkcm_runtime::{worker, ObjectKey, Shutdown};
use serde_json::json;

use crate::csi::DRIVER_NAME;
use crate::error::api_code;

/// The driver name as external-attacher puts it in its finalizer (`SanitizeDriverName`): every
/// character but ASCII letters, digits and `-` becomes `-`, and a trailing `-` gets an `X`.
pub fn sanitize_driver_name(driver: &str) -> String {
    let mut name: String = driver
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    if name.ends_with('-') {
        name.push('X');
    }
    name
}

/// external-attacher's finalizer for `driver` (`GetFinalizerName`).
pub fn finalizer_name(driver: &str) -> String {
    format!("external-attacher/{}", sanitize_driver_name(driver))
}

/// What the attacher does next with an attachment of its driver.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Nothing: not ours, attached and finalized, or detached and released.
    Nothing,
    /// Add the finalizer before attaching.
    AddFinalizer,
    /// Report the volume attached.
    MarkAttached,
    /// Deleted: report it detached.
    MarkDetached,
    /// Deleted and detached: remove the finalizer.
    RemoveFinalizer,
}

/// The next step for `va` (`csiHandler.SyncNewOrUpdatedVolumeAttachment`).
pub fn step(va: &VolumeAttachment) -> Step {
    if va.spec.attacher != DRIVER_NAME {
        return Step::Nothing;
    }
    let finalizer = finalizer_name(DRIVER_NAME);
    let has_finalizer = va
        .metadata
        .finalizers
        .as_ref()
        .is_some_and(|f| f.contains(&finalizer));
    let attached = va.status.as_ref().is_some_and(|s| s.attached);
    if va.metadata.deletion_timestamp.is_some() {
        return match (attached, has_finalizer) {
            (true, _) => Step::MarkDetached,
            (false, true) => Step::RemoveFinalizer,
            (false, false) => Step::Nothing,
        };
    }
    if !has_finalizer {
        Step::AddFinalizer
    } else if !attached {
        Step::MarkAttached
    } else {
        Step::Nothing
    }
}

/// Why a VolumeAttachment could not be handled; retried with backoff.
#[derive(Debug, thiserror::Error)]
#[error("failed to process VolumeAttachment {name}")]
pub struct AttachError {
    /// The attachment.
    pub name: String,
    /// The cause.
    #[source]
    pub source: kube::Error,
}

/// The simulated external-attacher.
pub struct Attacher {
    client: Client,
    /// Its own watches, under its own identity (a scheduler may not list VolumeAttachments).
    informers: InformerFactory,
    attachments: Store<VolumeAttachment>,
    queue: RateLimitingQueue<ObjectKey>,
}

impl Attacher {
    /// An attacher watching VolumeAttachments with `client`, the identity it acts as.
    pub fn new(client: Client) -> Arc<Self> {
        let informers = InformerFactory::new(client.clone(), std::time::Duration::ZERO);
        let informer = informers.informer::<VolumeAttachment>();
        let queue = RateLimitingQueue::new("nodesim_csi_attacher");
        let q = queue.clone();
        informer.add_event_handler(move |note: Notification<VolumeAttachment>| {
            if let Notification::Add(va) | Notification::Update { new: va, .. } = note {
                if step(&va) != Step::Nothing {
                    q.add(ObjectKey::from_obj(&*va));
                }
            }
        });
        Arc::new(Self {
            client,
            informers,
            attachments: informer.store(),
            queue,
        })
    }

    /// Attaches and detaches until `shutdown`.
    pub async fn run(self: Arc<Self>, shutdown: Shutdown) {
        self.informers.start(shutdown.clone());
        let queue = self.queue.clone();
        worker::run(
            queue,
            2,
            shutdown,
            worker::ErrorPolicy::retry_forever(tracing::Level::WARN),
            move |key: ObjectKey| {
                let this = Arc::clone(&self);
                async move { this.sync(&key).await }
            },
        )
        .await;
    }

    async fn sync(&self, key: &ObjectKey) -> Result<(), AttachError> {
        let Some(va) = self.attachments.get(key) else {
            return Ok(());
        };
        let api: Api<VolumeAttachment> = Api::all(self.client.clone());
        let name = key.name.clone();
        let finalizer = finalizer_name(DRIVER_NAME);
        let finalizers = va.metadata.finalizers.clone().unwrap_or_default();
        let version = va.metadata.resource_version.clone();
        let result = match step(&va) {
            Step::Nothing => return Ok(()),
            Step::AddFinalizer => {
                let mut with = finalizers;
                with.push(finalizer);
                let patch =
                    json!({ "metadata": { "finalizers": with, "resourceVersion": version } });
                api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
            }
            Step::MarkAttached => {
                let device = format!(
                    "/dev/rkcm/{}",
                    va.spec
                        .source
                        .persistent_volume_name
                        .as_deref()
                        .unwrap_or(&name)
                );
                let patch = json!({ "status": { "attached": true, "attachmentMetadata": { "devicePath": device } } });
                api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
            }
            Step::MarkDetached => {
                let patch = json!({ "status": { "attached": false, "attachmentMetadata": null } });
                api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
            }
            Step::RemoveFinalizer => {
                let without: Vec<String> =
                    finalizers.into_iter().filter(|f| *f != finalizer).collect();
                let patch =
                    json!({ "metadata": { "finalizers": without, "resourceVersion": version } });
                api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
            }
        };
        match result {
            Ok(_) => Ok(()),
            Err(e) if api_code(&e) == Some(404) => Ok(()),
            Err(source) => Err(AttachError { name, source }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::storage::v1::{VolumeAttachmentSpec, VolumeAttachmentStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    // external-attacher's util_test.go TestSanitizeDriverName / GetFinalizerName.
    #[test]
    fn finalizers_carry_the_sanitized_driver_name() {
        assert_eq!(
            sanitize_driver_name("simulated.csi.rkcm.io"),
            "simulated-csi-rkcm-io"
        );
        assert_eq!(
            sanitize_driver_name("example.com/driver"),
            "example-com-driver"
        );
        assert_eq!(sanitize_driver_name("driver."), "driver-X");
        assert_eq!(
            finalizer_name(DRIVER_NAME),
            "external-attacher/simulated-csi-rkcm-io"
        );
    }

    fn va(attacher: &str) -> VolumeAttachment {
        VolumeAttachment {
            spec: VolumeAttachmentSpec {
                attacher: attacher.into(),
                node_name: "n".into(),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn an_attachment_is_finalized_attached_then_detached_and_released() {
        assert_eq!(step(&va("other.example.com")), Step::Nothing);
        let mut v = va(DRIVER_NAME);
        assert_eq!(step(&v), Step::AddFinalizer);
        v.metadata.finalizers = Some(vec![finalizer_name(DRIVER_NAME)]);
        assert_eq!(step(&v), Step::MarkAttached);
        v.status = Some(VolumeAttachmentStatus {
            attached: true,
            ..Default::default()
        });
        assert_eq!(step(&v), Step::Nothing);
        v.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::UNIX_EPOCH));
        assert_eq!(step(&v), Step::MarkDetached);
        v.status.as_mut().unwrap().attached = false;
        assert_eq!(step(&v), Step::RemoveFinalizer);
        v.metadata.finalizers = None;
        assert_eq!(step(&v), Step::Nothing);
    }
}
