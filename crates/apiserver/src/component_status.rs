//! `componentstatuses` (deprecated in kube since 1.19, still served by 1.33): the health of the
//! scheduler, the controller manager and the store, as kube's
//! `pkg/registry/core/componentstatus` reports it (one `Healthy` condition each).
//!
//! kube probes the components' `/healthz` over HTTP; here each component that runs in the same
//! process registers a probe ([`Components::register`]), and `etcd-0` is a read from the
//! store. A component nobody registered is reported `Unknown`, with an error saying so.

use std::sync::Arc;

use parking_lot::RwLock;
use serde_json::{json, Value};

use crate::store::Store;

/// The components kube validates, in the order they are listed (`GetServersToValidate`, with
/// one etcd server).
pub const COMPONENTS: &[&str] = &["scheduler", "controller-manager", "etcd-0"];

/// The store's component.
const ETCD: &str = "etcd-0";

/// What a probe found: `Ok(message)` when healthy, `Err(error)` when not.
pub type ProbeResult = Result<String, String>;

/// A health check of one component.
pub type Probe = Arc<dyn Fn() -> ProbeResult + Send + Sync>;

/// The outcome of checking one component (`DoServerCheck`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Healthy, with the message it answered (`ok`).
    Healthy(String),
    /// Answered, unhealthy.
    Unhealthy(String),
    /// Could not be asked.
    Unknown(String),
}

/// The probes of the components running with this server. Cheap to clone; probes may be
/// registered while the server serves.
#[derive(Clone, Default)]
pub struct Components {
    probes: Arc<RwLock<Vec<(String, Probe)>>>,
}

impl Components {
    /// Registers (or replaces) the probe of `name` (`scheduler`, `controller-manager`).
    pub fn register(&self, name: &str, probe: Probe) {
        let mut probes = self.probes.write();
        probes.retain(|(n, _)| n != name);
        probes.push((name.to_string(), probe));
    }

    fn probe(&self, name: &str) -> Option<Probe> {
        self.probes
            .read()
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, p)| Arc::clone(p))
    }

    /// Checks `name`: the store for `etcd-0`, the registered probe otherwise.
    pub async fn check(&self, name: &str, store: &Store) -> Outcome {
        if name == ETCD {
            return match store.check_health().await {
                Ok(()) => Outcome::Healthy("ok".into()),
                Err(e) => Outcome::Unhealthy(format!("store unhealthy: {e}")),
            };
        }
        match self.probe(name) {
            Some(probe) => match probe() {
                Ok(message) => Outcome::Healthy(message),
                Err(error) => Outcome::Unhealthy(error),
            },
            None => Outcome::Unknown(format!("{name} does not run with this API server")),
        }
    }

    /// Every component's status, in kube's order.
    pub async fn statuses(&self, store: &Store) -> Vec<Value> {
        let mut out = Vec::with_capacity(COMPONENTS.len());
        for name in COMPONENTS {
            out.push(component_status(name, &self.check(name, store).await));
        }
        out
    }
}

/// `getComponentStatus`: the ComponentStatus object of `name`.
pub fn component_status(name: &str, outcome: &Outcome) -> Value {
    let (status, message, error) = match outcome {
        Outcome::Healthy(m) => ("True", m.as_str(), ""),
        Outcome::Unhealthy(e) => ("False", "", e.as_str()),
        Outcome::Unknown(e) => ("Unknown", "", e.as_str()),
    };
    let mut condition = json!({"type": "Healthy", "status": status});
    if !message.is_empty() {
        condition["message"] = json!(message);
    }
    if !error.is_empty() {
        condition["error"] = json!(error);
    }
    json!({
        "kind": "ComponentStatus",
        "apiVersion": "v1",
        "metadata": {"name": name},
        "conditions": [condition],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn healthy_unhealthy_and_unknown_components() {
        assert_eq!(
            component_status("scheduler", &Outcome::Healthy("ok".into())),
            json!({"kind": "ComponentStatus", "apiVersion": "v1", "metadata": {"name": "scheduler"},
                   "conditions": [{"type": "Healthy", "status": "True", "message": "ok"}]})
        );
        assert_eq!(
            component_status(
                "controller-manager",
                &Outcome::Unhealthy("not ready".into())
            )["conditions"][0],
            json!({"type": "Healthy", "status": "False", "error": "not ready"})
        );
        assert_eq!(
            component_status("scheduler", &Outcome::Unknown("gone".into()))["conditions"][0]
                ["status"],
            "Unknown"
        );
    }

    #[tokio::test]
    async fn registered_probes_answer_and_the_others_are_unknown() {
        let store = Store::new(Arc::new(crate::storage::memory::MemoryBackend::new()), 16)
            .await
            .expect("store");
        let components = Components::default();
        components.register("controller-manager", Arc::new(|| Ok("ok".to_string())));
        components.register("scheduler", Arc::new(|| Err("stopped".to_string())));
        assert_eq!(
            components.check("controller-manager", &store).await,
            Outcome::Healthy("ok".into())
        );
        assert_eq!(
            components.check("scheduler", &store).await,
            Outcome::Unhealthy("stopped".into())
        );
        assert_eq!(
            components.check("etcd-0", &store).await,
            Outcome::Healthy("ok".into())
        );
        let names: Vec<String> = components
            .statuses(&store)
            .await
            .iter()
            .map(|s| {
                s["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string()
            })
            .collect();
        assert_eq!(names, COMPONENTS);
        let alone = Components::default();
        assert!(matches!(
            alone.check("scheduler", &store).await,
            Outcome::Unknown(_)
        ));
    }
}
