//! Whether one RBAC rule covers a request (`pkg/apis/rbac/v1/evaluation_helpers.go` and
//! `RuleAllows` of `plugin/pkg/auth/authorizer/rbac/rbac.go`).

use k8s_openapi::api::rbac::v1::PolicyRule;

use super::attributes::Attributes;

/// `*` in verbs, API groups, resources and non-resource URLs.
pub const ALL: &str = "*";

fn strings(list: &Option<Vec<String>>) -> &[String] {
    list.as_deref().unwrap_or(&[])
}

/// `VerbMatches`.
pub fn verb_matches(rule: &PolicyRule, verb: &str) -> bool {
    rule.verbs.iter().any(|v| v == ALL || v == verb)
}

/// `APIGroupMatches`.
pub fn api_group_matches(rule: &PolicyRule, group: &str) -> bool {
    strings(&rule.api_groups)
        .iter()
        .any(|g| g == ALL || g == group)
}

/// `ResourceMatches`: `*`, the exact `resource[/subresource]`, or `*/subresource`.
pub fn resource_matches(rule: &PolicyRule, combined: &str, subresource: &str) -> bool {
    strings(&rule.resources).iter().any(|r| {
        r == ALL
            || r == combined
            || (!subresource.is_empty()
                && r.len() == subresource.len() + 2
                && r.starts_with("*/")
                && r.ends_with(subresource))
    })
}

/// `ResourceNameMatches`: any name when the rule names none.
pub fn resource_name_matches(rule: &PolicyRule, name: &str) -> bool {
    let names = strings(&rule.resource_names);
    names.is_empty() || names.iter().any(|n| n == name)
}

/// `NonResourceURLMatches`: `*`, the exact path, or a prefix ending in `*`.
pub fn non_resource_url_matches(rule: &PolicyRule, path: &str) -> bool {
    strings(&rule.non_resource_urls).iter().any(|u| {
        u == ALL || u == path || (u.ends_with('*') && path.starts_with(u.trim_end_matches('*')))
    })
}

/// `RuleAllows`: whether `rule` grants the request.
pub fn rule_allows(attrs: &Attributes, rule: &PolicyRule) -> bool {
    if attrs.resource_request {
        let combined = if attrs.subresource.is_empty() {
            attrs.resource.clone()
        } else {
            format!("{}/{}", attrs.resource, attrs.subresource)
        };
        verb_matches(rule, &attrs.verb)
            && api_group_matches(rule, &attrs.api_group)
            && resource_matches(rule, &combined, &attrs.subresource)
            && resource_name_matches(rule, &attrs.name)
    } else {
        verb_matches(rule, &attrs.verb) && non_resource_url_matches(rule, &attrs.path)
    }
}

/// A rule from its lists; empty lists are left out, as the API does.
pub fn rule(
    verbs: &[&str],
    api_groups: &[&str],
    resources: &[&str],
    resource_names: &[&str],
    non_resource_urls: &[&str],
) -> PolicyRule {
    let list = |l: &[&str]| (!l.is_empty()).then(|| l.iter().map(|s| s.to_string()).collect());
    PolicyRule {
        verbs: verbs.iter().map(|s| s.to_string()).collect(),
        api_groups: list(api_groups),
        resources: list(resources),
        resource_names: list(resource_names),
        non_resource_urls: list(non_resource_urls),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::user::UserInfo;

    fn request(verb: &str, group: &str, resource: &str, sub: &str, name: &str) -> Attributes {
        Attributes {
            subresource: sub.to_string(),
            ..Attributes::resource(UserInfo::default(), verb, group, resource, "ns", name)
        }
    }

    /// The cases of `TestRuleMatches` (rbac_test.go) and evaluation_helpers' matchers.
    #[test]
    fn rules_match_as_kubes_do() {
        let cases: &[(&str, PolicyRule, Attributes, bool)] = &[
            (
                "star verb, exact match other",
                rule(&["*"], &["group1"], &["resource1"], &[], &[]),
                request("get", "group1", "resource1", "", ""),
                true,
            ),
            (
                "star verb, exact match other, other group",
                rule(&["*"], &["group1"], &["resource1"], &[], &[]),
                request("get", "group2", "resource1", "", ""),
                false,
            ),
            (
                "star group, exact match other",
                rule(&["get"], &["*"], &["resource1"], &[], &[]),
                request("get", "group1", "resource1", "", ""),
                true,
            ),
            (
                "star resource, exact match other",
                rule(&["get"], &["group1"], &["*"], &[], &[]),
                request("get", "group1", "resource1", "", ""),
                true,
            ),
            (
                "tuple match",
                rule(&["get"], &["group1"], &["resource1"], &[], &[]),
                request("get", "group1", "resource1", "", ""),
                true,
            ),
            (
                "verb mismatch",
                rule(&["get", "list"], &["group1"], &["resource1"], &[], &[]),
                request("watch", "group1", "resource1", "", ""),
                false,
            ),
            (
                "subresource needs its own rule",
                rule(&["get"], &[""], &["pods"], &[], &[]),
                request("get", "", "pods", "status", "p"),
                false,
            ),
            (
                "resource/subresource",
                rule(&["get"], &[""], &["pods/status"], &[], &[]),
                request("get", "", "pods", "status", "p"),
                true,
            ),
            (
                "*/subresource",
                rule(&["get"], &[""], &["*/status"], &[], &[]),
                request("get", "", "pods", "status", "p"),
                true,
            ),
            (
                "*/subresource of another",
                rule(&["get"], &[""], &["*/status"], &[], &[]),
                request("get", "", "pods", "log", "p"),
                false,
            ),
            (
                "*/subresource is not a resource",
                rule(&["get"], &[""], &["*/status"], &[], &[]),
                request("get", "", "pods", "", "p"),
                false,
            ),
            (
                "resourceNames match",
                rule(&["get"], &[""], &["pods"], &["foo"], &[]),
                request("get", "", "pods", "", "foo"),
                true,
            ),
            (
                "resourceNames mismatch",
                rule(&["get"], &[""], &["pods"], &["foo"], &[]),
                request("get", "", "pods", "", "bar"),
                false,
            ),
            (
                "resourceNames exclude collections",
                rule(&["list"], &[""], &["pods"], &["foo"], &[]),
                request("list", "", "pods", "", ""),
                false,
            ),
        ];
        for (name, r, attrs, want) in cases {
            assert_eq!(rule_allows(attrs, r), *want, "{name}");
        }
    }

    #[test]
    fn non_resource_urls_match_exactly_or_by_star_prefix() {
        let get = |path: &str| Attributes::non_resource(UserInfo::default(), "get", path);
        let cases = [
            (&["*"][..], "/foo", true),
            (&["/foo"][..], "/foo", true),
            (&["/foo"][..], "/foo/", false),
            (&["/foo/*"][..], "/foo/bar", true),
            (&["/foo/*"][..], "/foo", false),
            (&["/foo*"][..], "/foobar", true),
            (&["/api", "/api/*"][..], "/api/v1", true),
            (&["/healthz"][..], "/healthz/ping", false),
        ];
        for (urls, path, want) in cases {
            assert_eq!(
                rule_allows(&get(path), &rule(&["get"], &[], &[], &[], urls)),
                want,
                "{urls:?} {path}"
            );
        }
        assert!(!rule_allows(
            &Attributes::non_resource(UserInfo::default(), "post", "/foo"),
            &rule(&["get"], &[], &[], &[], &["*"])
        ));
        // A resource rule never grants a path, nor a path rule a resource.
        assert!(!rule_allows(
            &get("/api"),
            &rule(&["*"], &["*"], &["*"], &[], &[])
        ));
        assert!(!rule_allows(
            &request("get", "", "pods", "", ""),
            &rule(&["*"], &[], &[], &[], &["*"])
        ));
    }
}
