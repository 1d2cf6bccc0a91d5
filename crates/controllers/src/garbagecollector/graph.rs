//! The dependency graph: every observed object keyed by UID, with edges from owners to dependents.
//! Mirrors `pkg/controller/garbagecollector/graph.go` and the pure half of `graph_builder.go`.

use std::collections::{BTreeSet, HashMap};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

/// The `orphan` finalizer: dependents are orphaned before the owner goes.
pub const FINALIZER_ORPHAN: &str = "orphan";
/// The `foregroundDeletion` finalizer: blocking dependents are deleted before the owner goes.
pub const FINALIZER_DELETE_DEPENDENTS: &str = "foregroundDeletion";

/// Who an object is: enough to GET, DELETE and PATCH it generically.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Identity {
    /// `apps/v1`.
    pub api_version: String,
    /// `ReplicaSet`.
    pub kind: String,
    /// Namespace; `None` for cluster-scoped objects (and for owners whose scope is not yet known).
    pub namespace: Option<String>,
    /// Name.
    pub name: String,
    /// UID.
    pub uid: String,
}

impl std::fmt::Display for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "[{}/{}, namespace: {}, name: {}, uid: {}]",
            self.api_version,
            self.kind,
            self.namespace.as_deref().unwrap_or(""),
            self.name,
            self.uid
        )
    }
}

/// What the graph builder learns about an object from an informer (or a virtual event).
#[derive(Clone, Debug, PartialEq)]
pub struct ObjectState {
    /// The object.
    pub identity: Identity,
    /// Its `metadata.ownerReferences`.
    pub owners: Vec<OwnerReference>,
    /// Whether `metadata.deletionTimestamp` is set.
    pub being_deleted: bool,
    /// Its `metadata.finalizers`.
    pub finalizers: Vec<String>,
}

impl ObjectState {
    fn has_finalizer(&self, f: &str) -> bool {
        self.finalizers.iter().any(|x| x == f)
    }
}

/// One node of the graph.
#[derive(Clone, Debug)]
pub struct Node {
    /// Who the node is.
    pub identity: Identity,
    /// UIDs of objects whose ownerReferences name this node.
    pub dependents: BTreeSet<String>,
    /// The node's own owner references.
    pub owners: Vec<OwnerReference>,
    /// Whether the object has a deletionTimestamp.
    pub being_deleted: bool,
    /// Whether the node is in foreground deletion, waiting for blocking dependents.
    pub deleting_dependents: bool,
    /// False for a virtual node: an owner referenced by a dependent but never seen by an informer.
    pub observed: bool,
}

/// A change the graph builder processes.
#[derive(Clone, Debug)]
pub enum Change {
    /// Added or updated.
    Upsert(ObjectState),
    /// Deleted (from an informer) or found absent (virtual delete).
    Delete(Identity),
}

/// Work the graph asks for after a change.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Actions {
    /// UIDs to check with `attempt_to_delete_item`.
    pub attempt_to_delete: Vec<String>,
    /// UIDs of owners whose dependents must be orphaned.
    pub attempt_to_orphan: Vec<String>,
}

/// The owner→dependents graph. Not thread-safe by itself: the collector guards it with a mutex.
#[derive(Debug, Default)]
pub struct Graph {
    nodes: HashMap<String, Node>,
}

impl Graph {
    /// The node with `uid`.
    pub fn get(&self, uid: &str) -> Option<&Node> {
        self.nodes.get(uid)
    }

    /// Number of nodes (observed and virtual).
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the graph is empty.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The dependents of `uid` whose reference to it has `blockOwnerDeletion: true`.
    pub fn blocking_dependents(&self, uid: &str) -> Vec<&Node> {
        let Some(node) = self.nodes.get(uid) else {
            return Vec::new();
        };
        node.dependents
            .iter()
            .filter_map(|d| self.nodes.get(d))
            .filter(|d| {
                d.owners
                    .iter()
                    .any(|o| o.uid == uid && o.block_owner_deletion == Some(true))
            })
            .collect()
    }

    /// Marks `uid` as waiting for its dependents (foreground deletion).
    pub fn mark_deleting_dependents(&mut self, uid: &str) {
        if let Some(n) = self.nodes.get_mut(uid) {
            n.deleting_dependents = true;
        }
    }

    fn owner_identity(dependent: &Identity, owner: &OwnerReference) -> Identity {
        Identity {
            api_version: owner.api_version.clone(),
            kind: owner.kind.clone(),
            // Owners live in the dependent's namespace, or are cluster-scoped; which one is learnt
            // when the owner is looked up.
            namespace: dependent.namespace.clone(),
            name: owner.name.clone(),
            uid: owner.uid.clone(),
        }
    }

    /// Adds edges from `uid`'s owners to it, creating virtual owners (to be verified) as needed.
    fn insert_edges(
        &mut self,
        identity: &Identity,
        owners: &[OwnerReference],
        actions: &mut Actions,
    ) {
        for owner in owners {
            match self.nodes.get_mut(&owner.uid) {
                Some(node) => {
                    node.dependents.insert(identity.uid.clone());
                }
                None => {
                    let mut virtual_node = Node {
                        identity: Self::owner_identity(identity, owner),
                        dependents: BTreeSet::new(),
                        owners: Vec::new(),
                        being_deleted: false,
                        deleting_dependents: false,
                        observed: false,
                    };
                    virtual_node.dependents.insert(identity.uid.clone());
                    self.nodes.insert(owner.uid.clone(), virtual_node);
                    actions.attempt_to_delete.push(owner.uid.clone());
                }
            }
        }
    }

    /// Applies `change` and returns the work it calls for (`processGraphChanges`).
    pub fn process(&mut self, change: Change) -> Actions {
        let mut actions = Actions::default();
        match change {
            Change::Upsert(state) => self.upsert(state, &mut actions),
            Change::Delete(identity) => self.delete(&identity, &mut actions),
        }
        actions
    }

    fn upsert(&mut self, state: ObjectState, actions: &mut Actions) {
        let uid = state.identity.uid.clone();
        // (was being deleted, was deleting dependents) before this change.
        let (was_being_deleted, was_deleting_dependents) = match self.nodes.get_mut(&uid) {
            None => {
                let node = Node {
                    identity: state.identity.clone(),
                    dependents: BTreeSet::new(),
                    owners: state.owners.clone(),
                    being_deleted: state.being_deleted,
                    deleting_dependents: false,
                    observed: true,
                };
                self.nodes.insert(uid.clone(), node);
                self.insert_edges(&state.identity, &state.owners, actions);
                (false, false)
            }
            Some(node) => {
                if !node.observed {
                    // A virtual node turned out to exist. If its identity differs from what
                    // dependents claimed, they must be re-checked.
                    if node.identity.api_version != state.identity.api_version
                        || node.identity.kind != state.identity.kind
                        || node.identity.name != state.identity.name
                    {
                        actions
                            .attempt_to_delete
                            .extend(node.dependents.iter().cloned());
                    }
                    node.observed = true;
                    node.identity = state.identity.clone();
                }
                let was = (node.being_deleted, node.deleting_dependents);
                node.being_deleted = state.being_deleted;
                let old_owners = std::mem::replace(&mut node.owners, state.owners.clone());
                self.update_edges(&state.identity, &old_owners, &state.owners, actions);
                was
            }
        };
        // processTransitions: act when a deletion with one of our finalizers starts.
        if state.being_deleted && state.has_finalizer(FINALIZER_ORPHAN) && !was_being_deleted {
            actions.attempt_to_orphan.push(uid);
            return;
        }
        if state.being_deleted
            && state.has_finalizer(FINALIZER_DELETE_DEPENDENTS)
            && !was_deleting_dependents
        {
            if let Some(node) = self.nodes.get_mut(&uid) {
                node.deleting_dependents = true;
                actions
                    .attempt_to_delete
                    .extend(node.dependents.iter().cloned());
            }
            actions.attempt_to_delete.push(uid);
        }
    }

    /// Diffs owner references: adds and removes edges; owners that were blocked by a removed or
    /// unblocked reference and wait for dependents are re-checked (`addUnblockedOwnersToDeleteQueue`).
    fn update_edges(
        &mut self,
        identity: &Identity,
        old: &[OwnerReference],
        new: &[OwnerReference],
        actions: &mut Actions,
    ) {
        let added: Vec<OwnerReference> = new
            .iter()
            .filter(|n| !old.iter().any(|o| o.uid == n.uid))
            .cloned()
            .collect();
        for removed in old.iter().filter(|o| !new.iter().any(|n| n.uid == o.uid)) {
            if let Some(owner) = self.nodes.get_mut(&removed.uid) {
                owner.dependents.remove(&identity.uid);
                if removed.block_owner_deletion == Some(true) && owner.deleting_dependents {
                    actions.attempt_to_delete.push(removed.uid.clone());
                }
            }
        }
        for changed in new.iter() {
            if let Some(before) = old.iter().find(|o| o.uid == changed.uid) {
                let unblocked = before.block_owner_deletion == Some(true)
                    && changed.block_owner_deletion != Some(true);
                if unblocked
                    && self
                        .nodes
                        .get(&changed.uid)
                        .is_some_and(|o| o.deleting_dependents)
                {
                    actions.attempt_to_delete.push(changed.uid.clone());
                }
            }
        }
        self.insert_edges(identity, &added, actions);
    }

    fn delete(&mut self, identity: &Identity, actions: &mut Actions) {
        let Some(node) = self.nodes.remove(&identity.uid) else {
            return;
        };
        for owner in &node.owners {
            if let Some(owner_node) = self.nodes.get_mut(&owner.uid) {
                owner_node.dependents.remove(&identity.uid);
                if owner_node.deleting_dependents {
                    actions.attempt_to_delete.push(owner.uid.clone());
                }
            }
        }
        // Dependents of a vanished owner: collect them, or drop their dangling reference.
        actions
            .attempt_to_delete
            .extend(node.dependents.iter().cloned());
    }
}

/// How a dependent's owner references stand (`classifyReferences`).
#[derive(Debug, Default, PartialEq)]
pub struct Classified {
    /// Owners that exist and are not in foreground deletion.
    pub solid: Vec<OwnerReference>,
    /// Owners that are absent or have another UID.
    pub dangling: Vec<OwnerReference>,
    /// Owners in foreground deletion, waiting for their dependents.
    pub waiting_for_dependents_deletion: Vec<OwnerReference>,
}

/// What the collector does with a dependent after classifying its owners.
#[derive(Debug, PartialEq)]
pub enum Decision {
    /// Nothing to do.
    Keep,
    /// Remove the dangling references and unblock the waiting ones (a solid owner remains).
    PatchReferences {
        /// UIDs of references to remove.
        remove: Vec<String>,
        /// UIDs of references whose `blockOwnerDeletion` becomes false.
        unblock: Vec<String>,
    },
    /// Delete the dependent with this propagation policy.
    Delete(&'static str),
}

/// The decision of `attemptToDeleteItem` once the owners are classified.
pub fn decide(classified: &Classified, has_dependents: bool, finalizers: &[String]) -> Decision {
    if !classified.solid.is_empty() {
        if classified.dangling.is_empty() && classified.waiting_for_dependents_deletion.is_empty() {
            return Decision::Keep;
        }
        return Decision::PatchReferences {
            remove: classified.dangling.iter().map(|o| o.uid.clone()).collect(),
            unblock: classified
                .waiting_for_dependents_deletion
                .iter()
                .map(|o| o.uid.clone())
                .collect(),
        };
    }
    if !classified.waiting_for_dependents_deletion.is_empty() && has_dependents {
        // The owner waits for us, and we have dependents: delete ours first (foreground).
        return Decision::Delete("Foreground");
    }
    let policy = if finalizers.iter().any(|f| f == FINALIZER_ORPHAN) {
        "Orphan"
    } else if finalizers.iter().any(|f| f == FINALIZER_DELETE_DEPENDENTS) {
        "Foreground"
    } else {
        "Background"
    };
    Decision::Delete(policy)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(kind: &str, name: &str, uid: &str) -> Identity {
        Identity {
            api_version: if kind == "Pod" {
                "v1".into()
            } else {
                "apps/v1".into()
            },
            kind: kind.into(),
            namespace: Some("default".into()),
            name: name.into(),
            uid: uid.into(),
        }
    }

    fn owner_ref(kind: &str, name: &str, uid: &str, block: bool) -> OwnerReference {
        OwnerReference {
            api_version: "apps/v1".into(),
            kind: kind.into(),
            name: name.into(),
            uid: uid.into(),
            controller: Some(true),
            block_owner_deletion: Some(block),
        }
    }

    fn state(identity: Identity, owners: Vec<OwnerReference>) -> ObjectState {
        ObjectState {
            identity,
            owners,
            being_deleted: false,
            finalizers: Vec::new(),
        }
    }

    #[test]
    fn a_dependent_of_an_unseen_owner_creates_a_virtual_node_to_verify() {
        let mut g = Graph::default();
        let actions = g.process(Change::Upsert(state(
            id("Pod", "p", "pod-1"),
            vec![owner_ref("ReplicaSet", "rs", "rs-1", true)],
        )));
        assert_eq!(actions.attempt_to_delete, ["rs-1"]);
        let owner = g.get("rs-1").expect("virtual owner");
        assert!(!owner.observed);
        assert!(owner.dependents.contains("pod-1"));
        // The owner shows up: it becomes observed, with nothing to re-check.
        let actions = g.process(Change::Upsert(state(
            id("ReplicaSet", "rs", "rs-1"),
            vec![],
        )));
        assert_eq!(actions, Actions::default());
        assert!(g.get("rs-1").unwrap().observed);
    }

    #[test]
    fn deleting_an_owner_queues_its_dependents() {
        let mut g = Graph::default();
        g.process(Change::Upsert(state(
            id("ReplicaSet", "rs", "rs-1"),
            vec![],
        )));
        g.process(Change::Upsert(state(
            id("Pod", "a", "pod-a"),
            vec![owner_ref("ReplicaSet", "rs", "rs-1", true)],
        )));
        g.process(Change::Upsert(state(
            id("Pod", "b", "pod-b"),
            vec![owner_ref("ReplicaSet", "rs", "rs-1", true)],
        )));
        let actions = g.process(Change::Delete(id("ReplicaSet", "rs", "rs-1")));
        assert_eq!(actions.attempt_to_delete, ["pod-a", "pod-b"]);
        assert!(g.get("rs-1").is_none());
    }

    #[test]
    fn orphan_finalizer_on_deletion_queues_orphaning_once() {
        let mut g = Graph::default();
        let rs = id("ReplicaSet", "rs", "rs-1");
        g.process(Change::Upsert(state(rs.clone(), vec![])));
        let deleting = ObjectState {
            being_deleted: true,
            finalizers: vec![FINALIZER_ORPHAN.into()],
            ..state(rs.clone(), vec![])
        };
        let actions = g.process(Change::Upsert(deleting.clone()));
        assert_eq!(actions.attempt_to_orphan, ["rs-1"]);
        let again = g.process(Change::Upsert(deleting));
        assert!(again.attempt_to_orphan.is_empty());
    }

    #[test]
    fn foreground_deletion_marks_the_owner_and_queues_its_dependents_then_itself() {
        let mut g = Graph::default();
        let rs = id("ReplicaSet", "rs", "rs-1");
        g.process(Change::Upsert(state(rs.clone(), vec![])));
        g.process(Change::Upsert(state(
            id("Pod", "a", "pod-a"),
            vec![owner_ref("ReplicaSet", "rs", "rs-1", true)],
        )));
        let actions = g.process(Change::Upsert(ObjectState {
            being_deleted: true,
            finalizers: vec![FINALIZER_DELETE_DEPENDENTS.into()],
            ..state(rs, vec![])
        }));
        assert_eq!(actions.attempt_to_delete, ["pod-a", "rs-1"]);
        assert!(g.get("rs-1").unwrap().deleting_dependents);
        assert_eq!(g.blocking_dependents("rs-1").len(), 1);
        // When the blocking dependent goes, the owner is checked again.
        let actions = g.process(Change::Delete(id("Pod", "a", "pod-a")));
        assert_eq!(actions.attempt_to_delete, ["rs-1"]);
        assert!(g.blocking_dependents("rs-1").is_empty());
    }

    #[test]
    fn dropping_a_blocking_reference_requeues_a_waiting_owner() {
        let mut g = Graph::default();
        let rs = id("ReplicaSet", "rs", "rs-1");
        g.process(Change::Upsert(state(rs.clone(), vec![])));
        let pod = id("Pod", "a", "pod-a");
        g.process(Change::Upsert(state(
            pod.clone(),
            vec![owner_ref("ReplicaSet", "rs", "rs-1", true)],
        )));
        g.mark_deleting_dependents("rs-1");
        let actions = g.process(Change::Upsert(state(pod, vec![])));
        assert_eq!(actions.attempt_to_delete, ["rs-1"]);
        assert!(g.get("rs-1").unwrap().dependents.is_empty());
    }

    #[test]
    fn decisions_follow_attempt_to_delete_item() {
        let r = |uid: &str| owner_ref("ReplicaSet", "x", uid, true);
        // A solid owner alone: keep.
        let c = Classified {
            solid: vec![r("a")],
            ..Default::default()
        };
        assert_eq!(decide(&c, false, &[]), Decision::Keep);
        // Solid plus dangling and waiting: patch the references.
        let c = Classified {
            solid: vec![r("a")],
            dangling: vec![r("b")],
            waiting_for_dependents_deletion: vec![r("c")],
        };
        assert_eq!(
            decide(&c, false, &[]),
            Decision::PatchReferences {
                remove: vec!["b".into()],
                unblock: vec!["c".into()]
            }
        );
        // Only dangling owners: delete in the background, or as the finalizers ask.
        let c = Classified {
            dangling: vec![r("b")],
            ..Default::default()
        };
        assert_eq!(decide(&c, true, &[]), Decision::Delete("Background"));
        assert_eq!(
            decide(&c, true, &["orphan".into()]),
            Decision::Delete("Orphan")
        );
        // Waiting owners and dependents of our own: foreground.
        let c = Classified {
            waiting_for_dependents_deletion: vec![r("c")],
            ..Default::default()
        };
        assert_eq!(decide(&c, true, &[]), Decision::Delete("Foreground"));
        assert_eq!(decide(&c, false, &[]), Decision::Delete("Background"));
    }
}
