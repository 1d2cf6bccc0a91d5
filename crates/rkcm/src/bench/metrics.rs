//! The API server's own request counters: `apiserver_request_total` scraped from the `/metrics` of
//! an `rkcm up` child, and the requests between two scrapes by verb and resource.

use std::collections::BTreeMap;
use std::fmt;

use anyhow::Context as _;

/// One `apiserver_request_total` series: verb, group, resource, subresource, code.
pub(super) type ServerSeries = (String, String, String, String, String);

/// The series of the counter `metric` in Prometheus text, keyed by the values of `labels` (empty
/// for a label a series lacks); series that differ only in other labels are added together.
/// Other metrics, comments and malformed lines are skipped.
pub(super) fn parse_counter(
    text: &str,
    metric: &str,
    labels: &[&str],
) -> BTreeMap<Vec<String>, f64> {
    let prefix = format!("{metric}{{");
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix(&prefix) else {
            continue;
        };
        let Some((series, value)) = rest.rsplit_once("} ") else {
            continue;
        };
        let Ok(value) = value.trim().parse::<f64>() else {
            continue;
        };
        let key = labels
            .iter()
            .map(|name| {
                series
                    .split(',')
                    .find_map(|kv| kv.strip_prefix(&format!("{name}=\"")))
                    .map(|m| m.trim_end_matches('"').to_string())
                    .unwrap_or_default()
            })
            .collect();
        *out.entry(key).or_insert(0.0) += value;
    }
    out
}

/// Parses `apiserver_request_total` out of the API server's `/metrics` text.
pub(super) fn parse_server_requests(text: &str) -> BTreeMap<ServerSeries, f64> {
    parse_counter(
        text,
        "apiserver_request_total",
        &["verb", "group", "resource", "subresource", "code"],
    )
    .into_iter()
    .map(|(mut k, v)| {
        let mut next = || std::mem::take(&mut k.remove(0));
        ((next(), next(), next(), next(), next()), v)
    })
    .collect()
}

/// The API server's request counters, read from its `/metrics`.
pub(super) async fn server_requests(
    client: &kube::Client,
) -> anyhow::Result<BTreeMap<ServerSeries, f64>> {
    let text = client
        .request_text(http::Request::get("/metrics").body(Vec::new())?)
        .await
        .context("reading the API server's /metrics")?;
    Ok(parse_server_requests(&text))
}

/// Requests the server answered between two snapshots with `verb` on core/v1 `resource`
/// (no subresource), whatever their status code.
pub(super) fn server_delta(
    after: &BTreeMap<ServerSeries, f64>,
    before: &BTreeMap<ServerSeries, f64>,
    verb: &str,
    resource: &str,
) -> f64 {
    after
        .iter()
        .filter(|((v, g, r, s, _), _)| v == verb && g.is_empty() && r == resource && s.is_empty())
        .map(|(k, n)| n - before.get(k).copied().unwrap_or(0.0))
        .sum()
}

/// A verb on a resource, as the report names it: `POST pods`, `PUT deployments.apps/status`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Request {
    pub verb: String,
    pub group: String,
    pub resource: String,
    pub subresource: String,
}

impl Request {
    /// Whether the request changes state (create, update, patch, delete).
    pub fn is_write(&self) -> bool {
        matches!(
            self.verb.as_str(),
            "POST" | "PUT" | "PATCH" | "DELETE" | "DELETECOLLECTION"
        )
    }
}

impl fmt::Display for Request {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.verb, self.resource)?;
        if !self.group.is_empty() {
            write!(f, ".{}", self.group)?;
        }
        if !self.subresource.is_empty() {
            write!(f, "/{}", self.subresource)?;
        }
        Ok(())
    }
}

/// Requests between two snapshots by verb and resource, whatever their status code; only those
/// that grew. A series absent before counts from zero (the server creates series on first use).
pub(super) fn requests_between(
    after: &BTreeMap<ServerSeries, f64>,
    before: &BTreeMap<ServerSeries, f64>,
) -> BTreeMap<Request, f64> {
    let mut out = BTreeMap::new();
    for (k @ (verb, group, resource, subresource, _), n) in after {
        let d = n - before.get(k).copied().unwrap_or(0.0);
        if d > 0.0 {
            *out.entry(Request {
                verb: verb.clone(),
                group: group.clone(),
                resource: resource.clone(),
                subresource: subresource.clone(),
            })
            .or_insert(0.0) += d;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const BEFORE: &str = "# TYPE apiserver_request_total counter\n\
         apiserver_request_total{code=\"201\",group=\"\",resource=\"events\",subresource=\"\",verb=\"POST\",version=\"v1\"} 3\n";
    const AFTER: &str = "apiserver_request_total{code=\"201\",group=\"\",resource=\"events\",subresource=\"\",verb=\"POST\",version=\"v1\"} 10\n\
         apiserver_request_total{code=\"409\",group=\"\",resource=\"events\",subresource=\"\",verb=\"POST\",version=\"v1\"} 2\n\
         apiserver_request_total{code=\"200\",group=\"\",resource=\"events\",subresource=\"\",verb=\"PATCH\",version=\"v1\"} 4\n\
         apiserver_request_total{code=\"201\",group=\"\",resource=\"pods\",subresource=\"\",verb=\"POST\",version=\"v1\"} 7\n\
         apiserver_request_total{code=\"200\",group=\"\",resource=\"pods\",subresource=\"status\",verb=\"PATCH\",version=\"v1\"} 5\n\
         apiserver_request_total{code=\"201\",group=\"events.k8s.io\",resource=\"events\",subresource=\"\",verb=\"POST\",version=\"v1\"} 9\n\
         apiserver_request_duration_seconds_bucket{verb=\"POST\",le=\"0.1\"} 100\n\
         apiserver_request_total{code=\"200\",verb=\"GET\"} not-a-number\n";

    #[test]
    fn server_counters_are_read_by_verb_and_resource() {
        let before = parse_server_requests(BEFORE);
        let after = parse_server_requests(AFTER);
        assert_eq!(after.len(), 6, "other metrics and bad values are skipped");
        assert_eq!(server_delta(&after, &before, "POST", "events"), 9.0);
        assert_eq!(server_delta(&after, &before, "PATCH", "events"), 4.0);
        assert_eq!(server_delta(&after, &before, "POST", "pods"), 7.0);
        assert_eq!(server_delta(&after, &before, "PATCH", "pods"), 0.0);
    }

    #[test]
    fn requests_between_scrapes_add_up_codes_and_name_group_and_subresource() {
        let before = parse_server_requests(BEFORE);
        let after = parse_server_requests(AFTER);
        let d: BTreeMap<String, f64> = requests_between(&after, &before)
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        assert_eq!(
            d,
            BTreeMap::from([
                ("PATCH events".to_string(), 4.0),
                ("PATCH pods/status".to_string(), 5.0),
                ("POST events".to_string(), 9.0),
                ("POST events.events.k8s.io".to_string(), 9.0),
                ("POST pods".to_string(), 7.0),
            ])
        );
        // Nothing changed: nothing reported.
        assert!(requests_between(&after, &after).is_empty());
    }

    #[test]
    fn writes_are_told_from_reads() {
        let r = |verb: &str| Request {
            verb: verb.into(),
            group: String::new(),
            resource: "pods".into(),
            subresource: String::new(),
        };
        assert!(r("POST").is_write() && r("DELETE").is_write() && r("PATCH").is_write());
        assert!(!r("GET").is_write() && !r("LIST").is_write() && !r("WATCH").is_write());
    }
}
