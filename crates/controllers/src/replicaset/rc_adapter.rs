//! ReplicationController served by the ReplicaSet controller: the RC ↔ RS conversion of
//! `pkg/controller/replication/conversion.go` (map selector → `matchLabels`, optional template,
//! conditions copied by type).

use k8s_openapi::api::apps::v1::{
    ReplicaSet, ReplicaSetCondition, ReplicaSetSpec, ReplicaSetStatus,
};
use k8s_openapi::api::core::v1::{
    ReplicationController, ReplicationControllerCondition, ReplicationControllerStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use rkcm_labels::Selector;

use super::kind::ReplicaSetKind;

impl ReplicaSetKind for ReplicationController {
    const QUEUE_NAME: &'static str = "replicationmanager";
    const CONTROLLER_NAME: &'static str = "replicationcontroller";
    const EVENT_SOURCE: &'static str = "replication-controller";

    fn to_replica_set(&self) -> ReplicaSet {
        let spec = self.spec.as_ref().map(|spec| ReplicaSetSpec {
            replicas: spec.replicas,
            min_ready_seconds: spec.min_ready_seconds,
            selector: LabelSelector {
                match_labels: spec.selector.clone(),
                match_expressions: None,
            },
            template: spec.template.clone(),
        });
        let status = self.status.as_ref().map(|s| ReplicaSetStatus {
            replicas: s.replicas,
            fully_labeled_replicas: s.fully_labeled_replicas,
            ready_replicas: s.ready_replicas,
            available_replicas: s.available_replicas,
            observed_generation: s.observed_generation,
            terminating_replicas: None,
            conditions: s.conditions.as_ref().map(|cs| {
                cs.iter()
                    .map(|c| ReplicaSetCondition {
                        type_: c.type_.clone(),
                        status: c.status.clone(),
                        last_transition_time: c.last_transition_time.clone(),
                        reason: c.reason.clone(),
                        message: c.message.clone(),
                    })
                    .collect()
            }),
        });
        ReplicaSet {
            metadata: self.metadata.clone(),
            spec,
            status,
        }
    }

    fn set_status(&mut self, status: ReplicaSetStatus) {
        self.status = Some(ReplicationControllerStatus {
            replicas: status.replicas,
            fully_labeled_replicas: status.fully_labeled_replicas,
            ready_replicas: status.ready_replicas,
            available_replicas: status.available_replicas,
            observed_generation: status.observed_generation,
            conditions: status.conditions.map(|cs| {
                cs.into_iter()
                    .map(|c| ReplicationControllerCondition {
                        type_: c.type_,
                        status: c.status,
                        last_transition_time: c.last_transition_time,
                        reason: c.reason,
                        message: c.message,
                    })
                    .collect()
            }),
        });
    }

    fn selector(&self) -> Result<Selector, rkcm_labels::Error> {
        // SelectorFromSet: an empty map selects everything (the API requires a non-empty one).
        Ok(Selector::from_map(
            &self
                .spec
                .as_ref()
                .and_then(|s| s.selector.clone())
                .unwrap_or_default(),
        ))
    }

    fn desired_replicas(&self) -> i32 {
        self.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1)
    }

    fn min_ready_seconds(&self) -> i32 {
        self.spec
            .as_ref()
            .and_then(|s| s.min_ready_seconds)
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ReplicationControllerSpec;
    use std::collections::BTreeMap;

    #[test]
    fn a_replication_controller_reads_as_a_replica_set_and_takes_its_status_back() {
        let mut rc = ReplicationController {
            spec: Some(ReplicationControllerSpec {
                replicas: Some(3),
                min_ready_seconds: Some(5),
                selector: Some(BTreeMap::from([("app".to_string(), "web".to_string())])),
                template: None,
            }),
            ..Default::default()
        };
        let rs = rc.to_replica_set();
        let spec = rs.spec.expect("spec");
        assert_eq!(spec.replicas, Some(3));
        assert_eq!(spec.min_ready_seconds, Some(5));
        assert_eq!(
            spec.selector
                .match_labels
                .as_ref()
                .and_then(|m| m.get("app"))
                .map(String::as_str),
            Some("web")
        );
        assert!(spec.template.is_none());
        let labels = BTreeMap::from([("app".to_string(), "web".to_string())]);
        assert!(rc.selector().expect("valid").matches(&labels));

        rc.set_status(ReplicaSetStatus {
            replicas: 2,
            ready_replicas: Some(1),
            observed_generation: Some(4),
            conditions: Some(vec![ReplicaSetCondition {
                type_: "ReplicaFailure".into(),
                status: "True".into(),
                ..Default::default()
            }]),
            ..Default::default()
        });
        let status = rc.status.as_ref().expect("status");
        assert_eq!(
            (
                status.replicas,
                status.ready_replicas,
                status.observed_generation
            ),
            (2, Some(1), Some(4))
        );
        assert_eq!(status.conditions.as_ref().map(Vec::len), Some(1));
        assert_eq!(rc.to_replica_set().status.map(|s| s.replicas), Some(2));
    }
}
