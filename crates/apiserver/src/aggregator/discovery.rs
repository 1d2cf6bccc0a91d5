//! The remote APIServices in discovery: their groups in `/apis` and `/apis/<group>` as
//! `handler_apis.go` lists them (every remote APIService, available or not, as kube does), and
//! their resources in aggregated discovery, converted from the `APIResourceList` the service
//! served (what kube's aggregated discovery manager does with a server that does not serve
//! aggregated discovery itself). A group-version whose document could not be fetched is left
//! out of aggregated discovery.

use std::sync::Arc;

use serde_json::{json, Value};

use super::remote::Remote;

/// The groups of `remotes` (in [`super::Aggregator::all`]'s order) with their versions,
/// highest priority first.
pub fn groups(remotes: &[Arc<Remote>]) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for r in remotes {
        match out.iter_mut().find(|(g, _)| *g == r.group) {
            Some((_, versions)) => versions.push(r.version.clone()),
            None => out.push((r.group.clone(), vec![r.version.clone()])),
        }
    }
    out
}

/// The aggregated discovery group (`APIGroupDiscovery`) of the remote versions of one group
/// whose resources are known; `None` when none is.
pub fn aggregated_group(group: &str, remotes: &[Arc<Remote>]) -> Option<Value> {
    let versions: Vec<Value> = remotes
        .iter()
        .filter(|r| r.group == group)
        .filter_map(|r| {
            let list = r.resources.as_ref()?;
            Some(json!({
                "version": r.version,
                "resources": aggregated_resources(group, &r.version, list),
                "freshness": "Current",
            }))
        })
        .collect();
    if versions.is_empty() {
        return None;
    }
    Some(json!({"metadata": {"name": group}, "versions": versions}))
}

/// `APIResourceList` entries as aggregated discovery's `APIResourceDiscovery`: a resource, its
/// subresources (`<resource>/<sub>` entries) nested under it.
pub fn aggregated_resources(group: &str, version: &str, list: &Value) -> Vec<Value> {
    let entries: &[Value] = list
        .get("resources")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    let str_of = |e: &Value, k: &str| {
        e.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let response_kind = |e: &Value| {
        json!({
            "group": e.get("group").and_then(Value::as_str).unwrap_or(group),
            "version": e.get("version").and_then(Value::as_str).unwrap_or(version),
            "kind": str_of(e, "kind"),
        })
    };
    let mut out: Vec<Value> = Vec::new();
    for e in entries.iter().filter(|e| !str_of(e, "name").contains('/')) {
        let namespaced = e
            .get("namespaced")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let mut entry = json!({
            "resource": str_of(e, "name"),
            "responseKind": response_kind(e),
            "scope": if namespaced { "Namespaced" } else { "Cluster" },
            "singularResource": str_of(e, "singularName"),
            "verbs": e.get("verbs").cloned().unwrap_or_else(|| json!([])),
        });
        for key in ["shortNames", "categories"] {
            if let Some(v) = e
                .get(key)
                .filter(|v| v.as_array().is_some_and(|a| !a.is_empty()))
            {
                entry[key] = v.clone();
            }
        }
        out.push(entry);
    }
    for e in entries {
        let name = str_of(e, "name");
        let Some((parent, sub)) = name.split_once('/') else {
            continue;
        };
        let Some(entry) = out.iter_mut().find(|r| r["resource"] == parent) else {
            continue;
        };
        let subresource = json!({
            "subresource": sub,
            "responseKind": response_kind(e),
            "verbs": e.get("verbs").cloned().unwrap_or_else(|| json!([])),
        });
        match entry.get_mut("subresources").and_then(Value::as_array_mut) {
            Some(subs) => subs.push(subresource),
            None => entry["subresources"] = json!([subresource]),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_lists_become_aggregated_entries_with_subresources() {
        let list = json!({
            "kind": "APIResourceList",
            "groupVersion": "wardle.example.com/v1alpha1",
            "resources": [
                {"name": "flunders", "singularName": "flunder", "namespaced": true,
                 "kind": "Flunder", "verbs": ["get", "list", "watch"], "shortNames": ["fl"]},
                {"name": "flunders/status", "singularName": "", "namespaced": true,
                 "kind": "Flunder", "verbs": ["get", "update"]},
                {"name": "fischers", "singularName": "fischer", "namespaced": false,
                 "kind": "Fischer", "verbs": ["get"], "categories": []},
            ],
        });
        let out = aggregated_resources("wardle.example.com", "v1alpha1", &list);
        assert_eq!(
            out[0],
            json!({
                "resource": "flunders",
                "responseKind": {"group": "wardle.example.com", "version": "v1alpha1", "kind": "Flunder"},
                "scope": "Namespaced",
                "singularResource": "flunder",
                "verbs": ["get", "list", "watch"],
                "shortNames": ["fl"],
                "subresources": [{
                    "subresource": "status",
                    "responseKind": {"group": "wardle.example.com", "version": "v1alpha1", "kind": "Flunder"},
                    "verbs": ["get", "update"],
                }],
            })
        );
        assert_eq!(out[1]["scope"], "Cluster");
        assert!(out[1].get("categories").is_none());
        assert_eq!(out.len(), 2);
    }
}
