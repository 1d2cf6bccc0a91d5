//! Who the simulated parts talk to the API as: each kubelet as its node (its events included),
//! the scheduler and the provisioner as themselves, and the rest (marking left-over nodes
//! unreachable) as the simulator.
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
    provisioner: Client,
    kubelets: Arc<HashMap<String, Client>>,
}

impl Clients {
    /// One client for every part.
    pub fn shared(client: Client) -> Self {
        Self {
            scheduler: client.clone(),
            provisioner: client.clone(),
            simulator: client,
            kubelets: Arc::new(HashMap::new()),
        }
    }

    /// `simulator` for the parts without an identity of their own, `scheduler` for the scheduler
    /// and the shared pod, node and volume watches, and `kubelets` by node name.
    pub fn new(simulator: Client, scheduler: Client, kubelets: HashMap<String, Client>) -> Self {
        Self {
            provisioner: simulator.clone(),
            simulator,
            scheduler,
            kubelets: Arc::new(kubelets),
        }
    }

    /// These clients with `provisioner` for the simulated provisioner.
    pub fn with_provisioner(mut self, provisioner: Client) -> Self {
        self.provisioner = provisioner;
        self
    }

    /// The provisioner's client (the simulator's unless [`Self::with_provisioner`] set one).
    pub fn provisioner(&self) -> &Client {
        &self.provisioner
    }

    /// The client of the simulator itself (left-over nodes, events of kubelets without a client).
    pub fn simulator(&self) -> &Client {
        &self.simulator
    }

    /// The scheduler's client, which also feeds the shared watches.
    pub fn scheduler(&self) -> &Client {
        &self.scheduler
    }

    /// The nodes whose kubelets have a client of their own, with it.
    pub fn own_kubelets(&self) -> impl Iterator<Item = (&String, &Client)> {
        self.kubelets.iter()
    }

    /// The client of the kubelet of `node`: its own, else the simulator's.
    pub fn kubelet(&self, node: &str) -> &Client {
        self.kubelets.get(node).unwrap_or(&self.simulator)
    }
}
