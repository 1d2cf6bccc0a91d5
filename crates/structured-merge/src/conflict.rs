//! Apply conflicts: fields another manager owns whose value an apply would change.
//!
//! Mirrors `merge/conflict.go`, plus the message kube-apiserver puts in its 409
//! (`managedfields/internal/conflict.go`), which prints managers its own way.

use std::collections::BTreeMap;
use std::fmt;

use crate::path::Path;
use crate::set::Set;

/// One conflicting field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conflict {
    /// The manager that owns the field.
    pub manager: String,
    /// The field.
    pub path: Path,
}

impl fmt::Display for Conflict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "conflict with {:?}: {}", self.manager, self.path)
    }
}

/// The conflicts of one apply, by manager then path.
#[derive(Clone, Debug, Default, PartialEq, Eq, thiserror::Error)]
pub struct Conflicts(pub Vec<Conflict>);

impl Conflicts {
    /// The conflicts of the given managers' sets (`ConflictsFromManagers`).
    pub fn from_managers(sets: &BTreeMap<String, Set>) -> Conflicts {
        let mut out = Vec::new();
        for (manager, set) in sets {
            for path in set.paths() {
                out.push(Conflict {
                    manager: manager.clone(),
                    path,
                });
            }
        }
        Conflicts(out)
    }

    /// The conflicting paths.
    pub fn to_set(&self) -> Set {
        Set::from_paths(self.0.iter().map(|c| c.path.clone()))
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Kube's 409 message, with managers printed by `print_manager`:
    /// `Apply failed with 1 conflict: conflict with "m" using apps/v1: .spec.replicas`, or for
    /// several `Apply failed with 2 conflicts: conflicts with "m" using apps/v1:\n- .a\n- .b`.
    pub fn message(&self, print_manager: impl Fn(&str) -> String) -> String {
        if let [c] = self.0.as_slice() {
            return format!(
                "Apply failed with 1 conflict: conflict with {}: {}",
                print_manager(&c.manager),
                c.path
            );
        }
        format!(
            "Apply failed with {} conflicts: {}",
            self.0.len(),
            self.by_manager(&print_manager).join("\n")
        )
    }

    fn by_manager(&self, print_manager: &dyn Fn(&str) -> String) -> Vec<String> {
        let mut m: BTreeMap<&str, Vec<&Path>> = BTreeMap::new();
        for c in &self.0 {
            m.entry(&c.manager).or_default().push(&c.path);
        }
        let mut lines = Vec::new();
        for (manager, paths) in m {
            lines.push(format!("conflicts with {}:", print_manager(manager)));
            lines.extend(paths.iter().map(|p| format!("- {p}")));
        }
        lines
    }
}

impl fmt::Display for Conflicts {
    /// `Conflicts.Error`: one conflict as itself, several grouped by manager.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let [c] = self.0.as_slice() {
            return write!(f, "{c}");
        }
        write!(f, "{}", self.by_manager(&|m| format!("{m:?}")).join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conflict(m: &str, p: &[&str]) -> Conflict {
        Conflict {
            manager: m.into(),
            path: Path::fields(p.iter().copied()),
        }
    }

    #[test]
    fn one_conflict_reads_as_kube_prints_it() {
        let c = Conflicts(vec![conflict(
            "kubectl-client-side-apply",
            &["spec", "replicas"],
        )]);
        let msg = c.message(|m| format!("{m:?} using apps/v1"));
        assert_eq!(
            msg,
            "Apply failed with 1 conflict: conflict with \"kubectl-client-side-apply\" using apps/v1: .spec.replicas"
        );
    }

    #[test]
    fn several_conflicts_are_grouped_by_sorted_manager() {
        let c = Conflicts(vec![
            conflict("b", &["spec", "x"]),
            conflict("a", &["spec", "y"]),
            conflict("b", &["spec", "z"]),
        ]);
        assert_eq!(
            c.message(|m| format!("{m:?}")),
            "Apply failed with 3 conflicts: conflicts with \"a\":\n- .spec.y\nconflicts with \"b\":\n- .spec.x\n- .spec.z"
        );
    }
}
