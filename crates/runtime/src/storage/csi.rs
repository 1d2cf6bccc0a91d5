//! Names the CSI volume plugin gives volumes and attachments (`pkg/volume/csi`), shared by the
//! attach/detach controller and the simulated kubelets that wait for its work.

use k8s_openapi::api::core::v1::PersistentVolume;

/// The CSI plugin's name (`CSIPluginName`), the prefix of its unique volume names.
pub const CSI_PLUGIN_NAME: &str = "kubernetes.io/csi";

/// The node annotation with which a kubelet hands attach and detach to the controller
/// (`volumeutil.ControllerManagedAttachAnnotation`).
pub const CONTROLLER_MANAGED_ATTACH_ANNOTATION: &str =
    "volumes.kubernetes.io/controller-managed-attach-detach";

/// The node annotation asking the controller to keep terminated pods' volumes attached
/// (`volumeutil.KeepTerminatedPodVolumesAnnotation`).
pub const KEEP_TERMINATED_POD_VOLUMES_ANNOTATION: &str =
    "volumes.kubernetes.io/keep-terminated-pod-volumes";

/// The unique name of a CSI volume, as nodes report it in `volumesAttached` and `volumesInUse`:
/// `kubernetes.io/csi/<driver>^<volumeHandle>` (`GetUniqueVolumeNameFromSpec` with the CSI
/// plugin's `GetVolumeName`).
pub fn unique_volume_name(driver: &str, volume_handle: &str) -> String {
    format!("{CSI_PLUGIN_NAME}/{driver}^{volume_handle}")
}

/// The `(driver, volumeHandle)` of a CSI PersistentVolume; `None` for any other source.
pub fn csi_source(volume: &PersistentVolume) -> Option<(&str, &str)> {
    let csi = volume.spec.as_ref()?.csi.as_ref()?;
    Some((csi.driver.as_str(), csi.volume_handle.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{CSIPersistentVolumeSource, PersistentVolumeSpec};

    #[test]
    fn unique_names_join_driver_and_handle_under_the_plugin_name() {
        assert_eq!(
            unique_volume_name("simulated.csi.rkcm.io", "vol-1"),
            "kubernetes.io/csi/simulated.csi.rkcm.io^vol-1"
        );
    }

    #[test]
    fn only_csi_volumes_have_a_csi_source() {
        let mut pv = PersistentVolume::default();
        assert_eq!(csi_source(&pv), None);
        pv.spec = Some(PersistentVolumeSpec {
            csi: Some(CSIPersistentVolumeSource {
                driver: "d".into(),
                volume_handle: "h".into(),
                ..Default::default()
            }),
            ..Default::default()
        });
        assert_eq!(csi_source(&pv), Some(("d", "h")));
    }
}
