//! The dependency graph: every observed object keyed by UID, with edges from owners to dependents.
//! Mirrors `pkg/controller/garbagecollector/graph.go` and the pure half of `graph_builder.go`.

use std::collections::{BTreeSet, HashMap};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::PropagationPolicy;

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
    /// The object's `metadata.finalizers` as last observed (empty for a virtual node).
    pub finalizers: Vec<String>,
}

/// A change the graph builder processes.
#[derive(Clone, Debug)]
pub enum Change {
    /// Added or updated.
    Upsert(ObjectState),
    /// Deleted, as observed by an informer.
    Delete(Identity),
    /// Found absent by the collector (a "virtual" delete): no object with these coordinates and UID.
    VirtualDelete(Identity),
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

    /// Adds edges from `identity`'s owners to it, creating virtual owners (to be verified) as
    /// needed (`addDependentToOwners`). The dependent itself is queued for a check when an owner
    /// already in the graph, observed or virtual, answers to other coordinates than its reference:
    /// the reference may be dangling.
    fn insert_edges(
        &mut self,
        identity: &Identity,
        owners: &[OwnerReference],
        actions: &mut Actions,
    ) {
        let mut potentially_invalid = false;
        for owner in owners {
            match self.nodes.get_mut(&owner.uid) {
                Some(node) => {
                    node.dependents.insert(identity.uid.clone());
                    potentially_invalid |= reference_may_be_invalid(identity, owner, node);
                }
                None => {
                    let mut virtual_node = Node {
                        identity: Self::owner_identity(identity, owner),
                        dependents: BTreeSet::new(),
                        owners: Vec::new(),
                        being_deleted: false,
                        deleting_dependents: false,
                        observed: false,
                        finalizers: Vec::new(),
                    };
                    virtual_node.dependents.insert(identity.uid.clone());
                    self.nodes.insert(owner.uid.clone(), virtual_node);
                    actions.attempt_to_delete.push(owner.uid.clone());
                }
            }
        }
        if potentially_invalid {
            actions.attempt_to_delete.push(identity.uid.clone());
        }
    }

    /// Splits `dependents` into those with a reference matching `owner` and those with a
    /// reference to its UID under other coordinates, or in another namespace than a namespaced
    /// `owner` (`partitionDependents`). A dependent with both kinds of reference is in both.
    fn partition_dependents<'a>(
        &self,
        dependents: impl IntoIterator<Item = &'a String>,
        owner: &Identity,
    ) -> (Vec<String>, Vec<String>) {
        let (mut matching, mut non_matching) = (Vec::new(), Vec::new());
        for uid in dependents {
            let Some(dep) = self.nodes.get(uid) else {
                // Not in the graph any more: nothing contradicts the owner.
                matching.push(uid.clone());
                continue;
            };
            let (mut found_match, mut found_mismatch) = (false, false);
            if owner.namespace.is_some() && owner.namespace != dep.identity.namespace {
                found_mismatch = true;
            } else {
                for reference in dep.owners.iter().filter(|o| o.uid == owner.uid) {
                    if same_coordinates(reference, owner) {
                        found_match = true;
                    } else {
                        found_mismatch = true;
                    }
                }
            }
            if found_match {
                matching.push(uid.clone());
            }
            if found_mismatch {
                non_matching.push(uid.clone());
            }
        }
        (matching, non_matching)
    }

    /// Another identity `dependents` give the owner `absent` (verified absent): the first one after
    /// `absent` in kube's order, else the first one (`getAlternateOwnerIdentity`). Cycling
    /// through them this way verifies every identity in turn.
    fn alternate_owner_identity(
        &self,
        dependents: &[String],
        absent: &Identity,
    ) -> Option<Identity> {
        let absent_is_cluster_scoped = absent.namespace.is_none();
        let mut seen = std::collections::HashSet::from([absent.clone()]);
        let mut first: Option<Identity> = None;
        let mut first_following: Option<Identity> = None;
        for dep in dependents.iter().filter_map(|d| self.nodes.get(d)) {
            for reference in dep.owners.iter().filter(|o| o.uid == absent.uid) {
                if same_coordinates(reference, absent)
                    && (absent_is_cluster_scoped || absent.namespace == dep.identity.namespace)
                {
                    continue;
                }
                let mut alternate = Self::owner_identity(&dep.identity, reference);
                if absent_is_cluster_scoped
                    && alternate.api_version == absent.api_version
                    && alternate.kind == absent.kind
                {
                    // That kind is known to be cluster-scoped.
                    alternate.namespace = None;
                }
                if !seen.insert(alternate.clone()) {
                    continue;
                }
                if first.as_ref().is_none_or(|f| reference_less(&alternate, f)) {
                    first = Some(alternate.clone());
                }
                if reference_less(absent, &alternate)
                    && first_following
                        .as_ref()
                        .is_none_or(|f| reference_less(&alternate, f))
                {
                    first_following = Some(alternate);
                }
            }
        }
        first_following.or(first)
    }

    /// Applies `change` and returns the work it calls for (`processGraphChanges`).
    pub fn process(&mut self, change: Change) -> Actions {
        let mut actions = Actions::default();
        match change {
            Change::Upsert(state) => self.upsert(state, &mut actions),
            Change::Delete(identity) => self.delete(&identity, &mut actions),
            Change::VirtualDelete(identity) => self.virtual_delete(&identity, &mut actions),
        }
        actions
    }

    fn upsert(&mut self, state: ObjectState, actions: &mut Actions) {
        let uid = state.identity.uid.clone();
        // The object as last observed (`event.oldObj`): none for a new or a virtual node.
        if let Some(node) = self.nodes.get(&uid) {
            if !node.observed && node.identity != state.identity {
                // A virtual node turned out to exist under other coordinates (or in another
                // namespace) than some dependents claimed: re-check those, they may name an
                // owner that does not exist (the "bad child, good parent" order; the other
                // order is `insert_edges`').
                let dependents = node.dependents.clone();
                let (_, invalid) = self.partition_dependents(&dependents, &state.identity);
                actions.attempt_to_delete.extend(invalid);
            }
        }
        let old: Option<(bool, Vec<String>)> = match self.nodes.get_mut(&uid) {
            None => {
                let node = Node {
                    identity: state.identity.clone(),
                    dependents: BTreeSet::new(),
                    owners: state.owners.clone(),
                    being_deleted: state.being_deleted,
                    deleting_dependents: false,
                    observed: true,
                    finalizers: state.finalizers.clone(),
                };
                self.nodes.insert(uid.clone(), node);
                self.insert_edges(&state.identity, &state.owners, actions);
                None
            }
            Some(node) => {
                let old = node
                    .observed
                    .then(|| (node.being_deleted, node.finalizers.clone()));
                if !node.observed {
                    node.observed = true;
                    node.identity = state.identity.clone();
                }
                // "Being deleted" is a one-way trip (`markBeingDeleted`).
                node.being_deleted |= state.being_deleted;
                node.finalizers = state.finalizers.clone();
                let old_owners = std::mem::replace(&mut node.owners, state.owners.clone());
                self.update_edges(&state.identity, &old_owners, &state.owners, actions);
                old
            }
        };
        // processTransitions: act when a deletion with one of our finalizers starts.
        if deletion_starts_with_finalizer(old.as_ref(), &state, FINALIZER_ORPHAN) {
            actions.attempt_to_orphan.push(uid);
            return;
        }
        if deletion_starts_with_finalizer(old.as_ref(), &state, FINALIZER_DELETE_DEPENDENTS) {
            if let Some(node) = self.nodes.get_mut(&uid) {
                // A node first added as virtual has not been marked yet: always mark it here.
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

    /// A virtual delete removes the node only if nothing contradicts it (`processGraphChanges`): an
    /// observed node answering to other coordinates stays, and so does a virtual node that some
    /// dependents name by other coordinates (it is re-checked under one of those).
    fn virtual_delete(&mut self, deleted: &Identity, actions: &mut Actions) {
        let Some(node) = self.nodes.get(&deleted.uid) else {
            return;
        };
        let (observed, identity) = (node.observed, node.identity.clone());
        let dependents = node.dependents.clone();
        let (matching, non_matching) = self.partition_dependents(&dependents, deleted);
        if observed {
            if identity == *deleted {
                self.delete(deleted, actions);
                return;
            }
            // The object exists under other coordinates: re-check only the dependents that named
            // the absent ones.
            actions.attempt_to_delete.extend(matching);
            return;
        }
        if non_matching.is_empty() {
            self.delete(deleted, actions);
            return;
        }
        // Some dependents disagree on the owner's coordinates: keep the node, re-check the
        // dependents of the verified-absent ones, and verify the owner under another identity.
        actions.attempt_to_delete.extend(matching);
        if identity == *deleted {
            if let Some(alternate) = self.alternate_owner_identity(&non_matching, deleted) {
                if let Some(node) = self.nodes.get_mut(&deleted.uid) {
                    node.identity = alternate;
                }
                actions.attempt_to_delete.push(deleted.uid.clone());
            }
        }
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

/// Whether `reference` names the object at `identity` (ignoring the namespace, which a reference
/// does not carry).
fn same_coordinates(reference: &OwnerReference, identity: &Identity) -> bool {
    reference.api_version == identity.api_version
        && reference.kind == identity.kind
        && reference.name == identity.name
}

/// Whether `dependent`'s `reference` to the graph node `owner` may be dangling, so that the
/// dependent must be checked (`addDependentToOwners`): a namespaced owner in another namespace,
/// an owner answering to other coordinates, or a virtual cluster-scoped owner first named from
/// another namespace (possibly a namespaced kind named by a cluster-scoped object, #98040).
fn reference_may_be_invalid(
    dependent: &Identity,
    reference: &OwnerReference,
    owner: &Node,
) -> bool {
    let owner_is_namespaced = owner.identity.namespace.is_some();
    if owner_is_namespaced && owner.identity.namespace != dependent.namespace {
        if owner.observed {
            tracing::debug!(item = %dependent, owner = %owner.identity, "item references an owner but does not match namespaces");
        }
        return true;
    }
    if !same_coordinates(reference, &owner.identity) {
        if owner.observed {
            tracing::debug!(item = %dependent, owner = %owner.identity, "item references an owner with coordinates that do not match the observed identity");
        }
        return true;
    }
    !owner_is_namespaced && owner.identity.namespace != dependent.namespace && !owner.observed
}

/// kube's `referenceLessThan`: kind, then apiVersion, namespace (cluster-scoped first), name, UID.
fn reference_less(a: &Identity, b: &Identity) -> bool {
    let key = |i: &Identity| {
        (
            i.kind.clone(),
            i.api_version.clone(),
            i.namespace.clone().unwrap_or_default(),
            i.name.clone(),
            i.uid.clone(),
        )
    };
    key(a) < key(b)
}

/// Whether `new` is being deleted with `finalizer` while the object as last observed (`old`: being
/// deleted, finalizers) was not, or lacked it (`deletionStartsWithFinalizer`).
fn deletion_starts_with_finalizer(
    old: Option<&(bool, Vec<String>)>,
    new: &ObjectState,
    finalizer: &str,
) -> bool {
    if !new.being_deleted || !new.has_finalizer(finalizer) {
        return false;
    }
    match old {
        None => true,
        Some((was_being_deleted, finalizers)) => {
            !was_being_deleted || !finalizers.iter().any(|f| f == finalizer)
        }
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
    /// A solid owner remains: remove the references to dangling owners and to owners waiting for
    /// their dependents (which would otherwise wait for this object forever).
    RemoveReferences(
        /// UIDs of the references to remove.
        Vec<String>,
    ),
    /// Delete the dependent.
    Delete {
        /// The propagation policy of the delete.
        policy: PropagationPolicy,
        /// First make every owner reference non-blocking: a dependent of this object is itself
        /// waiting for its dependents, so blocking references could form a cycle.
        unblock_first: bool,
    },
}

/// The decision of `attemptToDeleteItem` once the owners are classified.
///
/// `has_dependents`: the object has dependents in the graph; `a_dependent_deletes_dependents`: one of
/// them is itself in foreground deletion; `finalizers`: the object's own.
pub fn decide(
    classified: &Classified,
    has_dependents: bool,
    a_dependent_deletes_dependents: bool,
    finalizers: &[String],
) -> Decision {
    if !classified.solid.is_empty() {
        if classified.dangling.is_empty() && classified.waiting_for_dependents_deletion.is_empty() {
            return Decision::Keep;
        }
        return Decision::RemoveReferences(
            classified
                .dangling
                .iter()
                .chain(&classified.waiting_for_dependents_deletion)
                .map(|o| o.uid.clone())
                .collect(),
        );
    }
    if !classified.waiting_for_dependents_deletion.is_empty() && has_dependents {
        // An owner waits for us, and we have dependents: delete ours first (foreground).
        return Decision::Delete {
            policy: PropagationPolicy::Foreground,
            unblock_first: a_dependent_deletes_dependents,
        };
    }
    // No solid owner: collect, honouring a propagation the object already asks for.
    let policy = if finalizers.iter().any(|f| f == FINALIZER_ORPHAN) {
        PropagationPolicy::Orphan
    } else if finalizers.iter().any(|f| f == FINALIZER_DELETE_DEPENDENTS) {
        PropagationPolicy::Foreground
    } else {
        PropagationPolicy::Background
    };
    Decision::Delete {
        policy,
        unblock_first: false,
    }
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
        let delete = |policy, unblock_first| Decision::Delete {
            policy,
            unblock_first,
        };
        // A solid owner alone: keep.
        let c = Classified {
            solid: vec![r("a")],
            ..Default::default()
        };
        assert_eq!(decide(&c, false, false, &[]), Decision::Keep);
        // Solid plus dangling and waiting: both references go, so the waiting owner can finish.
        let c = Classified {
            solid: vec![r("a")],
            dangling: vec![r("b")],
            waiting_for_dependents_deletion: vec![r("c")],
        };
        assert_eq!(
            decide(&c, false, false, &[]),
            Decision::RemoveReferences(vec!["b".into(), "c".into()])
        );
        // Only dangling owners: delete in the background, or as the finalizers ask.
        let c = Classified {
            dangling: vec![r("b")],
            ..Default::default()
        };
        assert_eq!(
            decide(&c, true, false, &[]),
            delete(PropagationPolicy::Background, false)
        );
        assert_eq!(
            decide(&c, true, false, &["orphan".into()]),
            delete(PropagationPolicy::Orphan, false)
        );
        assert_eq!(
            decide(&c, true, false, &["foregroundDeletion".into()]),
            delete(PropagationPolicy::Foreground, false)
        );
        // Waiting owners and dependents of our own: foreground, unblocking first when a dependent
        // waits for its own dependents.
        let c = Classified {
            waiting_for_dependents_deletion: vec![r("c")],
            ..Default::default()
        };
        assert_eq!(
            decide(&c, true, false, &[]),
            delete(PropagationPolicy::Foreground, false)
        );
        assert_eq!(
            decide(&c, true, true, &[]),
            delete(PropagationPolicy::Foreground, true)
        );
        assert_eq!(
            decide(&c, false, false, &[]),
            delete(PropagationPolicy::Background, false)
        );
    }

    #[test]
    fn adding_the_orphan_finalizer_to_an_object_already_being_deleted_starts_orphaning() {
        let mut g = Graph::default();
        let rs = id("ReplicaSet", "rs", "rs-1");
        // Deleted while a foreign finalizer holds it: nothing for the collector.
        let held = ObjectState {
            being_deleted: true,
            finalizers: vec!["example.com/hold".into()],
            ..state(rs.clone(), vec![])
        };
        assert_eq!(g.process(Change::Upsert(held.clone())), Actions::default());
        // A second delete asks for orphaning.
        let orphaning = ObjectState {
            finalizers: vec!["example.com/hold".into(), FINALIZER_ORPHAN.into()],
            ..held
        };
        let actions = g.process(Change::Upsert(orphaning));
        assert_eq!(actions.attempt_to_orphan, ["rs-1"]);
    }

    #[test]
    fn an_owner_first_seen_as_virtual_and_then_deleted_in_the_foreground_is_marked() {
        let mut g = Graph::default();
        g.process(Change::Upsert(state(
            id("Pod", "a", "pod-a"),
            vec![owner_ref("ReplicaSet", "rs", "rs-1", true)],
        )));
        let actions = g.process(Change::Upsert(ObjectState {
            being_deleted: true,
            finalizers: vec![FINALIZER_DELETE_DEPENDENTS.into()],
            ..state(id("ReplicaSet", "rs", "rs-1"), vec![])
        }));
        assert_eq!(actions.attempt_to_delete, ["pod-a", "rs-1"]);
        assert!(g
            .get("rs-1")
            .is_some_and(|n| n.deleting_dependents && n.observed));
    }

    #[test]
    fn a_virtual_delete_never_removes_an_owner_observed_under_other_coordinates() {
        let mut g = Graph::default();
        // A dependent names owner rs-1 with a wrong name; the owner is then observed as "rs".
        g.process(Change::Upsert(state(
            id("Pod", "a", "pod-a"),
            vec![owner_ref("ReplicaSet", "wrong", "rs-1", true)],
        )));
        let rs = id("ReplicaSet", "rs", "rs-1");
        g.process(Change::Upsert(state(rs.clone(), vec![])));
        // The check of the stale coordinates found nothing there.
        let actions = g.process(Change::VirtualDelete(id("ReplicaSet", "wrong", "rs-1")));
        assert_eq!(actions.attempt_to_delete, ["pod-a"]);
        assert!(g
            .get("rs-1")
            .is_some_and(|n| n.observed && n.identity == rs));
        // Deleting the real coordinates removes it.
        let actions = g.process(Change::VirtualDelete(rs));
        assert_eq!(actions.attempt_to_delete, ["pod-a"]);
        assert!(g.get("rs-1").is_none());
    }

    #[test]
    fn a_virtual_owner_named_two_ways_is_rechecked_under_the_other_name() {
        let mut g = Graph::default();
        g.process(Change::Upsert(state(
            id("Pod", "a", "pod-a"),
            vec![owner_ref("ReplicaSet", "one", "rs-1", true)],
        )));
        g.process(Change::Upsert(state(
            id("Pod", "b", "pod-b"),
            vec![owner_ref("ReplicaSet", "two", "rs-1", true)],
        )));
        let actions = g.process(Change::VirtualDelete(id("ReplicaSet", "one", "rs-1")));
        assert_eq!(actions.attempt_to_delete, ["pod-a", "rs-1"]);
        let node = g.get("rs-1").expect("kept");
        assert_eq!(node.identity.name, "two");
        // pod-a, whose owner is verified absent, is collected; then "two" is found absent too.
        g.process(Change::Delete(id("Pod", "a", "pod-a")));
        let actions = g.process(Change::VirtualDelete(id("ReplicaSet", "two", "rs-1")));
        assert!(g.get("rs-1").is_none());
        assert_eq!(actions.attempt_to_delete, ["pod-b"]);
    }

    #[test]
    fn a_reference_to_an_observed_owner_by_other_coordinates_is_verified() {
        let mut g = Graph::default();
        g.process(Change::Upsert(state(
            id("ReplicaSet", "rs", "rs-1"),
            vec![],
        )));
        // Right coordinates: nothing to verify.
        let actions = g.process(Change::Upsert(state(
            id("Pod", "a", "pod-a"),
            vec![owner_ref("ReplicaSet", "rs", "rs-1", true)],
        )));
        assert_eq!(actions, Actions::default());
        // Wrong name for that UID.
        let actions = g.process(Change::Upsert(state(
            id("Pod", "b", "pod-b"),
            vec![owner_ref("ReplicaSet", "other", "rs-1", true)],
        )));
        assert_eq!(actions.attempt_to_delete, ["pod-b"]);
        // Right name, other namespace.
        let elsewhere = Identity {
            namespace: Some("elsewhere".into()),
            ..id("Pod", "c", "pod-c")
        };
        let actions = g.process(Change::Upsert(state(
            elsewhere,
            vec![owner_ref("ReplicaSet", "rs", "rs-1", true)],
        )));
        assert_eq!(actions.attempt_to_delete, ["pod-c"]);
    }

    // Ports of TestConflictingData (garbagecollector_test.go, kubernetes#98040): the graph's half
    // of each scenario, that is what `processGraphChanges` changes and queues.

    fn make_id(api_version: &str, kind: &str, namespace: &str, name: &str, uid: &str) -> Identity {
        Identity {
            api_version: api_version.into(),
            kind: kind.into(),
            namespace: (!namespace.is_empty()).then(|| namespace.to_string()),
            name: name.into(),
            uid: uid.into(),
        }
    }

    /// `makeAddEvent(object, owners...)`.
    fn add_event(object: &Identity, owners: &[&Identity]) -> Change {
        let owners = owners
            .iter()
            .map(|o| OwnerReference {
                api_version: o.api_version.clone(),
                kind: o.kind.clone(),
                name: o.name.clone(),
                uid: o.uid.clone(),
                ..Default::default()
            })
            .collect();
        Change::Upsert(state(object.clone(), owners))
    }

    fn assert_node(g: &Graph, expected: &Identity, observed: bool) {
        let node = g.get(&expected.uid).expect("node in the graph");
        assert_eq!(&node.identity, expected);
        assert_eq!(node.observed, observed, "observed state of {expected}");
    }

    fn pod1ns1() -> Identity {
        make_id("v1", "Pod", "ns1", "podname1", "poduid1")
    }
    fn pod2ns1() -> Identity {
        make_id("v1", "Pod", "ns1", "podname2", "poduid2")
    }
    fn pod2ns2() -> Identity {
        make_id("v1", "Pod", "ns2", "podname2", "poduid2")
    }
    fn node1() -> Identity {
        make_id("v1", "Node", "", "nodename", "nodeuid1")
    }
    fn deployment1apps() -> Identity {
        make_id(
            "apps/v1",
            "Deployment",
            "ns1",
            "deployment1",
            "deploymentuid1",
        )
    }
    fn deployment1extensions() -> Identity {
        make_id(
            "extensions/v1beta1",
            "Deployment",
            "ns1",
            "deployment1",
            "deploymentuid1",
        )
    }

    #[test]
    fn good_child_in_ns1_to_a_cluster_scoped_owner() {
        let mut g = Graph::default();
        let actions = g.process(add_event(&pod1ns1(), &[&node1()]));
        // The virtual owner takes the child's namespace until it is observed.
        let node1_with_namespace = make_id("v1", "Node", "ns1", "nodename", "nodeuid1");
        assert_node(&g, &node1_with_namespace, false);
        assert_eq!(actions.attempt_to_delete, ["nodeuid1"]);
        // Observed: the namespace coordinate is fixed, and the child is fine.
        let actions = g.process(add_event(&node1(), &[]));
        assert_node(&g, &node1(), true);
        assert_eq!(actions, Actions::default());
    }

    #[test]
    fn bad_child_in_ns1_to_an_owner_in_ns2_child_first() {
        let mut g = Graph::default();
        let actions = g.process(add_event(&pod1ns1(), &[&pod2ns2()]));
        assert_node(&g, &pod2ns1(), false);
        assert_eq!(actions.attempt_to_delete, ["poduid2"]);
        // The owner is observed in ns2: the namespace coordinate is corrected and the child, which
        // names an owner in its own namespace that does not exist, is checked.
        let actions = g.process(add_event(&pod2ns2(), &[]));
        assert_node(&g, &pod2ns2(), true);
        assert_eq!(actions.attempt_to_delete, ["poduid1"]);
        // Its deletion leaves the owner alone.
        g.process(Change::Delete(pod1ns1()));
        assert_node(&g, &pod2ns2(), true);
        assert!(g.get("poduid1").is_none());
    }

    #[test]
    fn bad_child_in_ns1_to_an_owner_in_ns2_owner_first() {
        let mut g = Graph::default();
        assert_eq!(g.process(add_event(&pod2ns2(), &[])), Actions::default());
        let actions = g.process(add_event(&pod1ns1(), &[&pod2ns1()]));
        assert_eq!(actions.attempt_to_delete, ["poduid1"]);
        assert_node(&g, &pod2ns2(), true);
    }

    #[test]
    fn bad_cluster_scoped_child_to_an_owner_in_ns1_child_first() {
        let mut g = Graph::default();
        let actions = g.process(add_event(&node1(), &[&pod1ns1()]));
        let pod1_no_namespace = make_id("v1", "Pod", "", "podname1", "poduid1");
        assert_node(&g, &pod1_no_namespace, false);
        assert_eq!(actions.attempt_to_delete, ["poduid1"]);
        // The namespaced owner is observed: the cluster-scoped child cannot own it; check it.
        let actions = g.process(add_event(&pod1ns1(), &[]));
        assert_node(&g, &pod1ns1(), true);
        assert_eq!(actions.attempt_to_delete, ["nodeuid1"]);
    }

    #[test]
    fn bad_cluster_scoped_child_to_an_owner_in_ns1_owner_first() {
        let mut g = Graph::default();
        g.process(add_event(&pod1ns1(), &[]));
        let actions = g.process(add_event(&node1(), &[&pod1ns1()]));
        assert_eq!(actions.attempt_to_delete, ["nodeuid1"]);
        assert_node(&g, &pod1ns1(), true);
    }

    #[test]
    fn good_child_to_an_existing_owner_with_a_non_preferred_api_version() {
        let role1v1beta1 = make_id(
            "rbac.authorization.k8s.io/v1beta1",
            "Role",
            "ns1",
            "role1",
            "roleuid1",
        );
        let role1v1 = make_id(
            "rbac.authorization.k8s.io/v1",
            "Role",
            "ns1",
            "role1",
            "roleuid1",
        );
        let mut g = Graph::default();
        let actions = g.process(add_event(&pod1ns1(), &[&role1v1beta1]));
        assert_node(&g, &role1v1beta1, false);
        assert_eq!(actions.attempt_to_delete, ["roleuid1"]);
        // Observed via v1: the version is corrected, the mismatched child checked.
        let actions = g.process(add_event(&role1v1, &[]));
        assert_node(&g, &role1v1, true);
        assert_eq!(actions.attempt_to_delete, ["poduid1"]);
        // The owner goes: the child is checked again.
        let actions = g.process(Change::Delete(role1v1));
        assert_eq!(actions.attempt_to_delete, ["poduid1"]);
    }

    #[test]
    fn child_to_an_existing_owner_with_an_inaccessible_api_version_owner_first() {
        let mut g = Graph::default();
        g.process(add_event(&deployment1apps(), &[]));
        let actions = g.process(add_event(&pod1ns1(), &[&deployment1extensions()]));
        assert_eq!(actions.attempt_to_delete, ["poduid1"]);
        assert_node(&g, &deployment1apps(), true);
    }

    #[test]
    fn child_to_a_non_existent_owner_with_an_inaccessible_api_version_inaccessible_first() {
        let mut g = Graph::default();
        let actions = g.process(add_event(&pod1ns1(), &[&deployment1extensions()]));
        assert_node(&g, &deployment1extensions(), false);
        assert_eq!(actions.attempt_to_delete, ["deploymentuid1"]);
        // A second child names the same (still virtual) owner by its served version: it is checked,
        // so that it is collected although the virtual owner stays unverifiable.
        let actions = g.process(add_event(&pod2ns1(), &[&deployment1apps()]));
        assert_eq!(actions.attempt_to_delete, ["poduid2"]);
        assert_node(&g, &deployment1extensions(), false);
        // Its deletion leaves the unverifiable virtual owner in place.
        g.process(Change::Delete(pod2ns1()));
        assert_node(&g, &deployment1extensions(), false);
    }

    #[test]
    fn child_to_a_non_existent_owner_with_an_inaccessible_api_version_accessible_first() {
        let mut g = Graph::default();
        let actions = g.process(add_event(&pod2ns1(), &[&deployment1apps()]));
        assert_node(&g, &deployment1apps(), false);
        assert_eq!(actions.attempt_to_delete, ["deploymentuid1"]);
        let actions = g.process(add_event(&pod1ns1(), &[&deployment1extensions()]));
        assert_eq!(actions.attempt_to_delete, ["poduid1"]);
        // apps/v1 is verified absent: its child is checked, and the virtual owner is verified again
        // under the other identity a child gives it.
        let actions = g.process(Change::VirtualDelete(deployment1apps()));
        assert_node(&g, &deployment1extensions(), false);
        assert_eq!(actions.attempt_to_delete, ["poduid2", "deploymentuid1"]);
        // The child naming apps/v1 goes; extensions/v1beta1 cannot be verified and stays.
        g.process(Change::Delete(pod2ns1()));
        assert_node(&g, &deployment1extensions(), false);
        assert_eq!(g.get("deploymentuid1").map(|n| n.dependents.len()), Some(1));
    }

    #[test]
    fn alternate_identities_are_tried_in_kubes_order_and_cycle() {
        let mut g = Graph::default();
        let a = make_id("v1", "ConfigMap", "ns1", "a", "owner");
        let b = make_id("v1", "ConfigMap", "ns1", "b", "owner");
        let c = make_id("v1", "ConfigMap", "ns1", "c", "owner");
        g.process(add_event(&make_id("v1", "Pod", "ns1", "pc", "pc"), &[&c]));
        g.process(add_event(&make_id("v1", "Pod", "ns1", "pa", "pa"), &[&a]));
        g.process(add_event(&make_id("v1", "Pod", "ns1", "pb", "pb"), &[&b]));
        // The virtual node carries the first name it was given: c. After c, the order wraps to a.
        assert_node(&g, &c, false);
        g.process(Change::VirtualDelete(c.clone()));
        assert_node(&g, &a, false);
        g.process(Change::VirtualDelete(a.clone()));
        assert_node(&g, &b, false);
        assert!(reference_less(&a, &b));
        assert!(reference_less(
            &node1(),
            &make_id("v1", "Node", "ns1", "nodename", "nodeuid1")
        ));
        assert!(reference_less(
            &make_id("v2", "A", "ns", "n", "u"),
            &make_id("v1", "B", "ns", "n", "u")
        ));
    }
}
