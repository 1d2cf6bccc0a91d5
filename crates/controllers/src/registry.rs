//! The controller registry: named controllers, `--controllers` resolution, and their init functions.
//!
//! Mirrors `cmd/kube-controller-manager/app/controllermanager.go` (`NewControllerDescriptors`,
//! `IsControllerEnabled`) and `cmd/kube-controller-manager/names`.

use std::collections::BTreeSet;

/// A controller the manager knows, by canonical name and the aliases `--controllers` accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ControllerName {
    /// Canonical name (`replicaset-controller`).
    pub name: &'static str,
    /// Older names still accepted (`replicaset`).
    pub aliases: &'static [&'static str],
    /// Whether `*` leaves it off.
    pub disabled_by_default: bool,
}

/// Canonical name of the ReplicaSet controller.
pub const REPLICASET: &str = "replicaset-controller";
/// Canonical name of the ReplicationController controller.
pub const REPLICATIONCONTROLLER: &str = "replicationcontroller-controller";
/// Canonical name of the Deployment controller.
pub const DEPLOYMENT: &str = "deployment-controller";
/// Canonical name of the pod garbage collector.
pub const PODGC: &str = "pod-garbage-collector-controller";
/// Canonical name of the garbage collector.
pub const GARBAGECOLLECTOR: &str = "garbage-collector-controller";
/// Canonical name of the namespace controller.
pub const NAMESPACE: &str = "namespace-controller";

/// Every controller rkcm implements, in start order.
pub const KNOWN: &[ControllerName] = &[
    ControllerName {
        name: NAMESPACE,
        aliases: &["namespace"],
        disabled_by_default: false,
    },
    ControllerName {
        name: GARBAGECOLLECTOR,
        aliases: &["garbagecollector"],
        disabled_by_default: false,
    },
    ControllerName {
        name: REPLICATIONCONTROLLER,
        aliases: &["replicationcontroller"],
        disabled_by_default: false,
    },
    ControllerName {
        name: PODGC,
        aliases: &["podgc"],
        disabled_by_default: false,
    },
    ControllerName {
        name: REPLICASET,
        aliases: &["replicaset"],
        disabled_by_default: false,
    },
    ControllerName {
        name: DEPLOYMENT,
        aliases: &["deployment"],
        disabled_by_default: false,
    },
];

/// `--controllers` named a controller rkcm does not know.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{name:?} is not in the list of known controllers: {known}")]
pub struct UnknownController {
    /// The name as given (without a leading `-`).
    pub name: String,
    /// Comma-separated canonical names and aliases.
    pub known: String,
}

fn lookup(name: &str) -> Option<&'static ControllerName> {
    KNOWN
        .iter()
        .find(|c| c.name == name || c.aliases.contains(&name))
}

/// The canonical names `--controllers` enables, in start order.
///
/// As kube's `IsControllerEnabled`: an explicit `-foo` disables foo, an explicit `foo` enables it,
/// otherwise `*` enables every controller that is not disabled by default. Unknown names are an error.
pub fn resolve(flag: &[String]) -> Result<Vec<&'static str>, UnknownController> {
    let mut enabled = BTreeSet::new();
    let mut disabled = BTreeSet::new();
    let mut star = false;
    for raw in flag.iter().map(|s| s.trim()).filter(|s| !s.is_empty()) {
        if raw == "*" {
            star = true;
            continue;
        }
        let (negated, name) = match raw.strip_prefix('-') {
            Some(name) => (true, name),
            None => (false, raw),
        };
        let Some(known) = lookup(name) else {
            let mut names: Vec<&str> = KNOWN
                .iter()
                .flat_map(|c| std::iter::once(c.name).chain(c.aliases.iter().copied()))
                .collect();
            names.sort_unstable();
            return Err(UnknownController {
                name: name.to_string(),
                known: names.join(", "),
            });
        };
        if negated {
            disabled.insert(known.name);
        } else {
            enabled.insert(known.name);
        }
    }
    Ok(KNOWN
        .iter()
        .filter(|c| {
            if disabled.contains(c.name) {
                false
            } else if enabled.contains(c.name) {
                true
            } else {
                star && !c.disabled_by_default
            }
        })
        .map(|c| c.name)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(s: &[&str]) -> Vec<String> {
        s.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn star_enables_every_controller_in_start_order() {
        let all = resolve(&flags(&["*"])).unwrap();
        assert_eq!(all, KNOWN.iter().map(|c| c.name).collect::<Vec<_>>());
    }

    #[test]
    fn a_minus_name_disables_one_and_aliases_are_accepted() {
        let enabled = resolve(&flags(&["*", "-podgc", "-garbage-collector-controller"])).unwrap();
        assert!(!enabled.contains(&PODGC));
        assert!(!enabled.contains(&GARBAGECOLLECTOR));
        assert!(enabled.contains(&REPLICASET));
    }

    #[test]
    fn without_star_only_named_controllers_run() {
        let enabled = resolve(&flags(&["replicaset", "deployment-controller"])).unwrap();
        assert_eq!(enabled, [REPLICASET, DEPLOYMENT]);
    }

    #[test]
    fn disabling_wins_over_enabling() {
        let enabled = resolve(&flags(&["replicaset", "-replicaset"])).unwrap();
        assert!(enabled.is_empty());
    }

    #[test]
    fn unknown_names_are_an_error_listing_the_known_ones() {
        let err = resolve(&flags(&["*", "-cronjob"])).unwrap_err();
        assert_eq!(err.name, "cronjob");
        assert!(err.known.contains("replicaset"), "{err}");
        assert!(err
            .to_string()
            .contains("is not in the list of known controllers"));
    }
}
