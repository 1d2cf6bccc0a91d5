//! `syncResourceQuotaFromKey`: measure a quota's usage and write its status when it changed.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ResourceQuota;
use kube::api::{Api, PostParams};
use rkcm_apimachinery::quota::evaluator::spec_hard;
use rkcm_apimachinery::quota::{calculate_usage, evaluators_for, Evaluator, Item};
use rkcm_runtime::ObjectKey;

use super::counted::count_live;
use super::status::new_status;
use super::ResourceQuotaController;

/// Why a quota's status could not be brought up to date.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// A quantity of the quota does not parse.
    #[error("resource quota {key} has an invalid quantity")]
    Invalid {
        /// The quota.
        key: ObjectKey,
        /// The cause.
        #[source]
        source: rkcm_apimachinery::quota::Error,
    },
    /// Some usage could not be measured; what could was written.
    #[error("measuring the usage of resource quota {key}: {}", .errors.join("; "))]
    Usage {
        /// The quota.
        key: ObjectKey,
        /// One message per resource whose objects could not be listed.
        errors: Vec<String>,
    },
    /// The status update failed (a conflict included: the quota changed meanwhile).
    #[error("failed to update the status of resource quota {key}")]
    Update {
        /// The quota.
        key: ObjectKey,
        /// The API error.
        #[source]
        source: kube::Error,
    },
}

impl ResourceQuotaController {
    /// Recalculates the quota `key` and writes its status if it changed.
    pub async fn sync(&self, key: &ObjectKey) -> Result<(), SyncError> {
        let Some(quota) = self.quotas.store().get(key) else {
            return Ok(());
        };
        let namespace = key.namespace_str().to_string();
        let invalid = |source| SyncError::Invalid {
            key: key.clone(),
            source,
        };
        let hard = spec_hard(&quota).map_err(invalid)?;
        let evaluators = evaluators_for(&hard);

        // Objects no informer holds are counted live, before the measuring pass.
        let mut live: BTreeMap<usize, Result<usize, String>> = BTreeMap::new();
        for (i, evaluator) in evaluators.iter().enumerate() {
            if let Evaluator::ObjectCount { group_resource, .. } = evaluator {
                let limited = !evaluator
                    .matching_resources(&hard.keys().collect::<Vec<_>>())
                    .is_empty();
                if limited && self.counted.items(evaluator, &namespace).is_none() {
                    live.insert(
                        i,
                        count_live(&self.client, group_resource, &namespace).await,
                    );
                }
            }
        }
        let mut lister = |evaluator: &Evaluator, ns: &str| -> Result<Vec<Item>, String> {
            if let Some(items) = self.counted.items(evaluator, ns) {
                return items;
            }
            let index = evaluators.iter().position(|e| e == evaluator);
            match index.and_then(|i| live.get(&i)) {
                Some(Ok(n)) => Ok(vec![Item::Object; *n]),
                Some(Err(e)) => Err(e.clone()),
                None => Ok(Vec::new()),
            }
        };
        let spec = quota.spec.as_ref();
        let scopes = spec.and_then(|s| s.scopes.clone()).unwrap_or_default();
        let (measured, errors) = calculate_usage(
            &namespace,
            &scopes,
            spec.and_then(|s| s.scope_selector.as_ref()),
            &hard,
            &evaluators,
            &mut lister,
            self.clock.now(),
        );
        if let Some(status) = new_status(&quota, &measured).map_err(invalid)? {
            let mut updated: ResourceQuota = (*quota).clone();
            updated.status = Some(status);
            let api: Api<ResourceQuota> = Api::namespaced(self.client.clone(), &namespace);
            api.replace_status(key.name.as_str(), &PostParams::default(), &updated)
                .await
                .map_err(|source| SyncError::Update {
                    key: key.clone(),
                    source,
                })?;
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(SyncError::Usage {
                key: key.clone(),
                errors,
            })
        }
    }
}
