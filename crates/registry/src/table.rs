//! The table-driven path: kinds served by the generic strategy, each with its k8s-openapi type
//! and the generic options its kube strategy has (its name rule, generation tracking).
//!
//! A kind without behaviour of its own is one row here. A kind whose kube registry has
//! defaulting, validation or bookkeeping beyond these options gets a strategy file and an arm
//! in [`super::build`] instead.

use rkcm_apimachinery::catalog::ResourceInfo;

use super::generic::GenericStrategy;
use super::meta::{self, NameValidator};
use super::typecheck::{decode_check, DecodeCheck};

/// How a kind is served by the generic strategy.
struct Row {
    group: &'static str,
    kind: &'static str,
    check: DecodeCheck,
    name: NameValidator,
    /// `metadata.generation` is bumped when `spec` changes.
    tracks_generation: bool,
}

const fn row(group: &'static str, kind: &'static str, check: DecodeCheck) -> Row {
    Row {
        group,
        kind,
        check,
        name: meta::name_is_dns_subdomain,
        tracks_generation: false,
    }
}

impl Row {
    const fn generation(mut self) -> Self {
        self.tracks_generation = true;
        self
    }
}

fn rows() -> Vec<Row> {
    use k8s_openapi::api::{
        admissionregistration as admission, flowcontrol, networking, node, storage,
    };
    vec![
        row(
            "networking.k8s.io",
            "IngressClass",
            decode_check::<networking::v1::IngressClass>,
        )
        .generation(),
        row(
            "networking.k8s.io",
            "Ingress",
            decode_check::<networking::v1::Ingress>,
        )
        .generation(),
        row(
            "networking.k8s.io",
            "NetworkPolicy",
            decode_check::<networking::v1::NetworkPolicy>,
        )
        .generation(),
        row(
            "storage.k8s.io",
            "CSIDriver",
            decode_check::<storage::v1::CSIDriver>,
        ),
        row(
            "storage.k8s.io",
            "CSINode",
            decode_check::<storage::v1::CSINode>,
        ),
        row(
            "storage.k8s.io",
            "CSIStorageCapacity",
            decode_check::<storage::v1::CSIStorageCapacity>,
        ),
        row(
            "storage.k8s.io",
            "StorageClass",
            decode_check::<storage::v1::StorageClass>,
        ),
        row(
            "storage.k8s.io",
            "VolumeAttachment",
            decode_check::<storage::v1::VolumeAttachment>,
        ),
        row(
            "admissionregistration.k8s.io",
            "ValidatingAdmissionPolicy",
            decode_check::<admission::v1::ValidatingAdmissionPolicy>,
        )
        .generation(),
        row(
            "admissionregistration.k8s.io",
            "ValidatingAdmissionPolicyBinding",
            decode_check::<admission::v1::ValidatingAdmissionPolicyBinding>,
        )
        .generation(),
        row(
            "node.k8s.io",
            "RuntimeClass",
            decode_check::<node::v1::RuntimeClass>,
        ),
        row(
            "flowcontrol.apiserver.k8s.io",
            "FlowSchema",
            decode_check::<flowcontrol::v1::FlowSchema>,
        )
        .generation(),
        row(
            "flowcontrol.apiserver.k8s.io",
            "PriorityLevelConfiguration",
            decode_check::<flowcontrol::v1::PriorityLevelConfiguration>,
        )
        .generation(),
    ]
}

/// The generic strategy of `info` with its row's options and type check, if it has a row.
pub(super) fn lookup(info: &'static ResourceInfo) -> Option<(GenericStrategy, DecodeCheck)> {
    let row = rows()
        .into_iter()
        .find(|r| r.group == info.group && r.kind == info.kind)?;
    let mut strategy = GenericStrategy::new(info).with_name_validator(row.name);
    if row.tracks_generation {
        strategy = strategy.tracking_generation();
    }
    Some((strategy, row.check))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rkcm_apimachinery::catalog;

    #[test]
    fn every_row_names_a_catalog_kind() {
        for r in rows() {
            assert!(
                catalog::all()
                    .iter()
                    .any(|i| i.group == r.group && i.kind == r.kind),
                "{} {} is not in the catalog",
                r.group,
                r.kind
            );
        }
    }
}
