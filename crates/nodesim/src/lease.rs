//! Node leases in `kube-node-lease`: the cheap heartbeat a kubelet renews every 10 seconds.

use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta, OwnerReference};
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client};
use serde_json::json;

use crate::error::{api_code, Error, Result};
use crate::node_set::SimNode;

/// Namespace holding node leases.
pub const NODE_LEASE_NAMESPACE: &str = "kube-node-lease";

/// The lease of `node`, owned by its Node object so that it goes away with it.
pub fn lease_object(node: &SimNode, lease_duration: Duration, now: Timestamp) -> Lease {
    Lease {
        metadata: ObjectMeta {
            name: Some(node.name.clone()),
            namespace: Some(NODE_LEASE_NAMESPACE.into()),
            owner_references: (!node.uid.is_empty()).then(|| {
                vec![OwnerReference {
                    api_version: "v1".into(),
                    kind: "Node".into(),
                    name: node.name.clone(),
                    uid: node.uid.clone(),
                    ..Default::default()
                }]
            }),
            ..Default::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some(node.name.clone()),
            lease_duration_seconds: Some(i32::try_from(lease_duration.as_secs()).unwrap_or(40)),
            renew_time: Some(MicroTime(now)),
            ..Default::default()
        }),
    }
}

/// Renews the lease of `node`, creating it (and the `kube-node-lease` namespace) when missing.
pub async fn renew(
    client: &Client,
    node: &SimNode,
    lease_duration: Duration,
    now: Timestamp,
) -> Result<()> {
    let api: Api<Lease> = Api::namespaced(client.clone(), NODE_LEASE_NAMESPACE);
    let fail = |source| Error::Lease {
        node: node.name.clone(),
        source,
    };
    let patch = json!({ "spec": { "holderIdentity": node.name, "renewTime": MicroTime(now) } });
    match api
        .patch(&node.name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Ok(_) => return Ok(()),
        Err(e) if api_code(&e) == Some(404) => {}
        Err(e) => return Err(fail(e)),
    }
    let lease = lease_object(node, lease_duration, now);
    match api.create(&PostParams::default(), &lease).await {
        Ok(_) => Ok(()),
        Err(e) if api_code(&e) == Some(404) || is_namespace_missing(&e) => {
            ensure_namespace(client).await.map_err(fail)?;
            api.create(&PostParams::default(), &lease)
                .await
                .map(|_| ())
                .map_err(fail)
        }
        Err(e) if api_code(&e) == Some(409) => Ok(()),
        Err(e) => Err(fail(e)),
    }
}

/// A create refused because the namespace does not exist (kube answers 404 NotFound or, for a
/// terminating namespace, 403 Forbidden).
fn is_namespace_missing(error: &kube::Error) -> bool {
    match error {
        kube::Error::Api(status) => status.code == 403 && status.message.contains("namespace"),
        _ => false,
    }
}

async fn ensure_namespace(client: &Client) -> Result<(), kube::Error> {
    let api: Api<Namespace> = Api::all(client.clone());
    let namespace = Namespace {
        metadata: ObjectMeta {
            name: Some(NODE_LEASE_NAMESPACE.into()),
            ..Default::default()
        },
        ..Default::default()
    };
    match api.create(&PostParams::default(), &namespace).await {
        Ok(_) => Ok(()),
        Err(e) if api_code(&e) == Some(409) => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_is_held_by_its_node_and_owned_by_it() {
        let node = SimNode {
            name: "rkcm-node-1".into(),
            index: 1,
            uid: "uid-n1".into(),
            registered_at: Timestamp::UNIX_EPOCH,
        };
        let lease = lease_object(&node, Duration::from_secs(40), Timestamp::UNIX_EPOCH);
        assert_eq!(
            lease.metadata.namespace.as_deref(),
            Some(NODE_LEASE_NAMESPACE)
        );
        let spec = lease.spec.unwrap();
        assert_eq!(spec.holder_identity.as_deref(), Some("rkcm-node-1"));
        assert_eq!(spec.lease_duration_seconds, Some(40));
        assert_eq!(lease.metadata.owner_references.unwrap()[0].uid, "uid-n1");
    }
}
