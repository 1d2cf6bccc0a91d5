//! Whether one set of rules grants everything another does (`Covers`, `BreakdownRule` and
//! `ruleCovers` of `pkg/registry/rbac/validation/policy_comparator.go`), for the reconciliation of
//! the bootstrap policy and for escalation checks.

use k8s_openapi::api::rbac::v1::PolicyRule;

use super::rules::ALL;

fn list(l: &Option<Vec<String>>) -> &[String] {
    l.as_deref().unwrap_or(&[])
}

fn has(set: &[String], item: &str) -> bool {
    set.iter().any(|s| s == item)
}

fn has_all(set: &[String], items: &[String]) -> bool {
    items.iter().all(|i| has(set, i))
}

fn one(s: &str) -> Option<Vec<String>> {
    Some(vec![s.to_string()])
}

/// `BreakdownRule`: one rule per group × resource × verb (× name), and per URL × verb.
pub fn breakdown(rule: &PolicyRule) -> Vec<PolicyRule> {
    let mut out = Vec::new();
    for group in list(&rule.api_groups) {
        for resource in list(&rule.resources) {
            for verb in &rule.verbs {
                let atomic = |names: Option<Vec<String>>| PolicyRule {
                    api_groups: one(group),
                    resources: one(resource),
                    verbs: vec![verb.clone()],
                    resource_names: names,
                    non_resource_urls: None,
                };
                if list(&rule.resource_names).is_empty() {
                    out.push(atomic(None));
                } else {
                    out.extend(list(&rule.resource_names).iter().map(|n| atomic(one(n))));
                }
            }
        }
    }
    for url in list(&rule.non_resource_urls) {
        for verb in &rule.verbs {
            out.push(PolicyRule {
                non_resource_urls: one(url),
                verbs: vec![verb.clone()],
                ..PolicyRule::default()
            });
        }
    }
    out
}

/// `resourceCoversAll`: `*`, every resource exactly, or `*/sub` for each `res/sub`.
fn resource_covers_all(set: &[String], covers: &[String]) -> bool {
    if has(set, ALL) || has_all(set, covers) {
        return true;
    }
    covers.iter().all(|path| {
        has(set, path)
            || path
                .split_once('/')
                .is_some_and(|(_, sub)| has(set, &format!("*/{sub}")))
    })
}

/// `nonResourceURLCovers`.
fn non_resource_url_covers(owner: &str, sub: &str) -> bool {
    owner == sub || (owner.ends_with('*') && sub.starts_with(owner.trim_end_matches('*')))
}

/// `ruleCovers`: whether `owner` grants everything `sub` does.
pub fn rule_covers(owner: &PolicyRule, sub: &PolicyRule) -> bool {
    let verbs = has(&owner.verbs, ALL) || has_all(&owner.verbs, &sub.verbs);
    let groups = has(list(&owner.api_groups), ALL)
        || has_all(list(&owner.api_groups), list(&sub.api_groups));
    let resources = resource_covers_all(list(&owner.resources), list(&sub.resources));
    let urls = list(&sub.non_resource_urls).iter().all(|path| {
        list(&owner.non_resource_urls)
            .iter()
            .any(|o| non_resource_url_covers(o, path))
    });
    let owner_names = list(&owner.resource_names);
    let names = if list(&sub.resource_names).is_empty() {
        owner_names.is_empty()
    } else {
        owner_names.is_empty() || has_all(owner_names, list(&sub.resource_names))
    };
    verbs && groups && resources && names && urls
}

/// `Covers`: whether `owner` rules grant everything `servant` rules do, and the atomic rules
/// they do not grant.
pub fn covers(owner: &[PolicyRule], servant: &[PolicyRule]) -> (bool, Vec<PolicyRule>) {
    let uncovered: Vec<PolicyRule> = servant
        .iter()
        .flat_map(breakdown)
        .filter(|sub| !owner.iter().any(|o| rule_covers(o, sub)))
        .collect();
    (uncovered.is_empty(), uncovered)
}

#[cfg(test)]
mod tests {
    use super::super::rules::rule;
    use super::*;

    fn covered(owner: Vec<PolicyRule>, servant: Vec<PolicyRule>) -> (bool, Vec<PolicyRule>) {
        covers(&owner, &servant)
    }

    /// The cases of `TestCoversExactMatch` ... `TestCoversResourceNameEmpty` (policy_comparator_test.go).
    #[test]
    fn covers_follows_kubes_cases() {
        let r = |v: &[&str], g: &[&str], res: &[&str], n: &[&str]| rule(v, g, res, n, &[]);
        // exact match
        assert_eq!(
            covered(
                vec![r(&["get"], &["v1"], &["builds"], &[])],
                vec![r(&["get"], &["v1"], &["builds"], &[])]
            ),
            (true, vec![])
        );
        // sub-resource of a star rule
        assert!(
            covered(
                vec![r(&["get"], &["v1"], &["*"], &[])],
                vec![r(&["get"], &["v1"], &["builds/log"], &[])]
            )
            .0
        );
        // */subresource
        assert!(
            covered(
                vec![r(&["get"], &["v1"], &["*/scale"], &[])],
                vec![r(&["get"], &["v1"], &["deployments/scale"], &[])]
            )
            .0
        );
        assert!(
            !covered(
                vec![r(&["get"], &["v1"], &["*/scale"], &[])],
                vec![r(&["get"], &["v1"], &["deployments"], &[])]
            )
            .0
        );
        // multiple rules together
        assert!(
            covered(
                vec![
                    r(&["get"], &["v1"], &["builds"], &[]),
                    r(&["list"], &["v1"], &["builds"], &[])
                ],
                vec![r(&["get", "list"], &["v1"], &["builds"], &[])]
            )
            .0
        );
        // verbs missing
        let (ok, missing) = covered(
            vec![r(&["get"], &["v1"], &["builds"], &[])],
            vec![r(&["get", "delete"], &["v1"], &["builds"], &[])],
        );
        assert!(!ok);
        assert_eq!(missing, [r(&["delete"], &["v1"], &["builds"], &[])]);
        // star verbs and groups
        assert!(
            covered(
                vec![r(&["*"], &["*"], &["builds"], &[])],
                vec![r(&["get", "delete"], &["v1", "apps"], &["builds"], &[])]
            )
            .0
        );
        // resource names: a named owner covers only those names; an unnamed owner covers all
        assert!(
            covered(
                vec![r(&["get"], &["v1"], &["builds"], &[])],
                vec![r(&["get"], &["v1"], &["builds"], &["foo"])]
            )
            .0
        );
        assert!(
            covered(
                vec![r(&["get"], &["v1"], &["builds"], &["foo", "bar"])],
                vec![r(&["get"], &["v1"], &["builds"], &["foo"])]
            )
            .0
        );
        let (ok, missing) = covered(
            vec![r(&["get"], &["v1"], &["builds"], &["foo"])],
            vec![r(&["get"], &["v1"], &["builds"], &["foo", "baz"])],
        );
        assert!(!ok);
        assert_eq!(missing, [r(&["get"], &["v1"], &["builds"], &["baz"])]);
        assert!(
            !covered(
                vec![r(&["get"], &["v1"], &["builds"], &["foo"])],
                vec![r(&["get"], &["v1"], &["builds"], &[])]
            )
            .0
        );
        // non-resource URLs
        let u = |v: &[&str], urls: &[&str]| rule(v, &[], &[], &[], urls);
        assert!(
            !covered(
                vec![u(&["get"], &["/apis/*"])],
                vec![u(&["get"], &["/apis/v1", "/apis"])]
            )
            .0
        );
        assert!(
            covered(
                vec![u(&["get"], &["/apis", "/apis/*"])],
                vec![u(&["get"], &["/apis/v1", "/apis"])]
            )
            .0
        );
        assert!(
            covered(
                vec![u(&["*"], &["*"])],
                vec![u(&["get", "post"], &["/healthz"])]
            )
            .0
        );
        let (ok, missing) = covered(
            vec![u(&["get"], &["/api"])],
            vec![u(&["get", "post"], &["/api"])],
        );
        assert!(!ok);
        assert_eq!(missing, [u(&["post"], &["/api"])]);
    }

    #[test]
    fn breakdown_makes_one_rule_per_combination() {
        let rules = breakdown(&rule(
            &["get", "list"],
            &["", "apps"],
            &["pods"],
            &[],
            &["/x"],
        ));
        assert_eq!(rules.len(), 6);
        assert_eq!(rules[0], rule(&["get"], &[""], &["pods"], &[], &[]));
        assert_eq!(rules[5], rule(&["list"], &[], &[], &[], &["/x"]));
    }
}
