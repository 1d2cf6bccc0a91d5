//! Who the simulated parts talk to the API as: each kubelet as its node, the scheduler as
//! itself, and the rest (provisioner, events, left-over nodes) as the simulator.
//!
//! With [`Clients::shared`] everything uses one client, as before. `rkcm up` gives each kubelet
//! a client certificate for `system:node:<node>` in `system:nodes` and the scheduler one for
//! `system:kube-scheduler`, so that the Node authorizer, NodeRestriction and kube's bootstrap
//! roles decide what they may do, as on a kubeadm cluster.

use std::collections::HashMap;
use std::sync::Arc;

use kube::Client;

/// The clients of the simulated parts. Cheap to clone.
#[derive(Clone)]
pub struct Clients {
    simulator: Client,
    scheduler: Client,
    kubelets: Arc<HashMap<String, Client>>,
}

impl Clients {
    /// One client for every part.
    pub fn shared(client: Client) -> Self {
        Self {
            scheduler: client.clone(),
            simulator: client,
            kubelets: Arc::new(HashMap::new()),
        }
    }

    /// `simulator` for the parts without an identity of their own, `scheduler` for the scheduler
    /// and the shared pod, node and volume watches, and `kubelets` by node name.
    pub fn new(simulator: Client, scheduler: Client, kubelets: HashMap<String, Client>) -> Self {
        Self {
            simulator,
            scheduler,
            kubelets: Arc::new(kubelets),
        }
    }

    /// The client of the simulator itself (provisioner, events, left-over nodes).
    pub fn simulator(&self) -> &Client {
        &self.simulator
    }

    /// The scheduler's client, which also feeds the shared watches.
    pub fn scheduler(&self) -> &Client {
        &self.scheduler
    }

    /// The client of the kubelet of `node`: its own, else the simulator's.
    pub fn kubelet(&self, node: &str) -> &Client {
        self.kubelets.get(node).unwrap_or(&self.simulator)
    }
}
