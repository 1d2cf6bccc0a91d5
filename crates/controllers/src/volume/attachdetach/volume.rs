//! What the controller knows of an attachable volume: its unique name, the PersistentVolume it
//! comes from, its CSI driver and handle, and whether it may be attached to several nodes
//! (`volume.Spec`, the CSI plugin's `CanAttach`, `util.IsMultiAttachAllowed`).

use k8s_openapi::api::core::v1::PersistentVolume;
use k8s_openapi::api::storage::v1::CSIDriver;
use rkcm_runtime::storage::csi;

/// A unique volume name, `kubernetes.io/csi/<driver>^<handle>` (`v1.UniqueVolumeName`).
pub type VolumeName = String;

/// A node name.
pub type NodeName = String;

/// An attachable CSI volume of a PersistentVolume.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttachableVolume {
    /// Its unique name.
    pub name: VolumeName,
    /// The PersistentVolume (`volume.Spec.Name()`, which the events name).
    pub pv_name: String,
    /// `spec.csi.driver`: the VolumeAttachment's `spec.attacher`.
    pub driver: String,
    /// `spec.csi.volumeHandle`.
    pub handle: String,
    /// Whether the volume may be attached to more than one node at once.
    pub multi_attach_allowed: bool,
}

impl AttachableVolume {
    /// The volume of `pv` when it needs attaching: a CSI volume whose driver has no CSIDriver
    /// object or one with `attachRequired` not false (`csiPlugin.CanAttach`/`skipAttach`).
    /// `driver_object` looks a CSIDriver up by name.
    pub fn from_pv<'a>(
        pv: &PersistentVolume,
        driver_object: impl Fn(&str) -> Option<&'a CSIDriver>,
    ) -> Option<Self> {
        let (driver, handle) = csi::csi_source(pv)?;
        let attach_required = driver_object(driver)
            .and_then(|d| d.spec.attach_required)
            .unwrap_or(true);
        if !attach_required {
            return None;
        }
        Some(Self {
            name: csi::unique_volume_name(driver, handle),
            pv_name: pv.metadata.name.clone().unwrap_or_default(),
            driver: driver.to_string(),
            handle: handle.to_string(),
            multi_attach_allowed: is_multi_attach_allowed(pv),
        })
    }

    /// The name of its VolumeAttachment on `node` (the CSI attacher's `getAttachmentName`).
    pub fn attachment_name(&self, node: &str) -> String {
        attachment_name(&self.handle, &self.driver, node)
    }
}

/// `csi-<sha256(volumeHandle + driver + nodeName)>`, as the CSI attacher names VolumeAttachments.
pub fn attachment_name(handle: &str, driver: &str, node: &str) -> String {
    let digest = ring::digest::digest(
        &ring::digest::SHA256,
        format!("{handle}{driver}{node}").as_bytes(),
    );
    let hex: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("csi-{hex}")
}

/// Whether a volume may be attached to several nodes (`util.IsMultiAttachAllowed`): without
/// access modes nobody knows, so yes; otherwise only with ReadWriteMany or ReadOnlyMany.
pub fn is_multi_attach_allowed(pv: &PersistentVolume) -> bool {
    let modes = pv
        .spec
        .as_ref()
        .and_then(|s| s.access_modes.as_deref())
        .unwrap_or_default();
    modes.is_empty()
        || modes
            .iter()
            .any(|m| m == "ReadWriteMany" || m == "ReadOnlyMany")
}

#[cfg(test)]
pub(crate) mod fixtures {
    use super::*;
    use k8s_openapi::api::core::v1::{CSIPersistentVolumeSource, PersistentVolumeSpec};

    /// A CSI volume `name` of `driver` with handle `h-<name>` and the given access modes.
    pub fn csi_pv(name: &str, driver: &str, modes: &[&str]) -> PersistentVolume {
        PersistentVolume {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some(name.into()),
                ..Default::default()
            },
            spec: Some(PersistentVolumeSpec {
                access_modes: Some(modes.iter().map(|m| m.to_string()).collect()),
                csi: Some(CSIPersistentVolumeSource {
                    driver: driver.into(),
                    volume_handle: format!("h-{name}"),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            status: None,
        }
    }

    /// The attachable volume of [`csi_pv`] with ReadWriteOnce (or ReadWriteMany when `many`).
    pub fn volume(name: &str, many: bool) -> AttachableVolume {
        let mode = if many {
            "ReadWriteMany"
        } else {
            "ReadWriteOnce"
        };
        AttachableVolume::from_pv(&csi_pv(name, "d.example.com", &[mode]), |_| None)
            .expect("a CSI volume is attachable")
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::csi_pv;
    use super::*;
    use k8s_openapi::api::storage::v1::CSIDriverSpec;

    #[test]
    fn a_csi_volume_is_attachable_unless_its_driver_says_attach_is_not_required() {
        let pv = csi_pv("pv1", "d.example.com", &["ReadWriteOnce"]);
        let v = AttachableVolume::from_pv(&pv, |_| None).unwrap();
        assert_eq!(v.name, "kubernetes.io/csi/d.example.com^h-pv1");
        assert_eq!(v.pv_name, "pv1");
        assert!(!v.multi_attach_allowed);
        let mut driver = CSIDriver {
            spec: CSIDriverSpec {
                attach_required: Some(false),
                ..Default::default()
            },
            ..Default::default()
        };
        assert!(AttachableVolume::from_pv(&pv, |_| Some(&driver)).is_none());
        driver.spec.attach_required = Some(true);
        assert!(AttachableVolume::from_pv(&pv, |_| Some(&driver)).is_some());
        // A driver object without the field requires attach (kube's default).
        driver.spec.attach_required = None;
        assert!(AttachableVolume::from_pv(&pv, |_| Some(&driver)).is_some());
    }

    #[test]
    fn volumes_of_other_sources_are_not_attachable() {
        let mut pv = csi_pv("pv1", "d", &[]);
        pv.spec.as_mut().unwrap().csi = None;
        assert!(AttachableVolume::from_pv(&pv, |_| None).is_none());
    }

    // util_test.go TestIsMultiAttachAllowed (the PersistentVolume cases).
    #[test]
    fn multi_attach_is_allowed_for_many_modes_or_when_unknown() {
        let allowed = |modes: &[&str]| is_multi_attach_allowed(&csi_pv("p", "d", modes));
        assert!(allowed(&[]));
        assert!(!allowed(&["ReadWriteOnce"]));
        assert!(!allowed(&["ReadWriteOncePod"]));
        assert!(allowed(&["ReadWriteOnce", "ReadOnlyMany"]));
        assert!(allowed(&["ReadWriteMany"]));
    }

    #[test]
    fn attachment_names_are_the_csi_attachers() {
        // sha256("h" + "d" + "n") = sha256("hdn").
        let name = attachment_name("h", "d", "n");
        assert_eq!(
            name,
            "csi-9072ed11cc1acb5fa433a877ff339b6311d013f33bddd1d0092711a8ace5b16d"
        );
        assert_ne!(name, attachment_name("h", "d", "m"));
    }
}
