//! How many seats a request occupies: kube's work estimator
//! (`staging/src/k8s.io/apiserver/pkg/util/flowcontrol/request/width.go` and
//! `list_work_estimator.go`, as of 1.33, where a LIST's cost is its object count).
//!
//! A LIST (or a WATCH asking for its initial events) takes one seat for every 100 objects it has
//! to go through, at most the level's maximum; every other request takes one seat. A level's
//! maximum is `max(1, min(ceil(0.15 × nominal seats), nominal seats / handSize))`, and never more
//! than 10 for a LIST: a flood of LISTs of big collections then holds fewer of the level's seats
//! at once, and the requests of other flows find free seats sooner.
//!
//! Mutating requests take one seat. kube's mutating estimator also holds extra seats for a while
//! after a write that many watchers will receive (`FinalSeats` and `AdditionalLatency`); that
//! second phase is not modelled here.

use crate::auth::authorization::Attributes;

/// The least seats a request takes (`MinimumSeats`).
pub const MINIMUM_SEATS: usize = 1;
/// The most seats a LIST takes (`MaximumListSeatsLimit`).
pub const MAXIMUM_LIST_SEATS: usize = 10;
/// Objects a LIST goes through per seat (`ObjectsPerSeat`).
pub const OBJECTS_PER_SEAT: f64 = 100.0;
/// The share of a level's nominal seats one request may take (`priorityLevelMaxSeatsPercent`).
const LEVEL_MAX_SEATS_SHARE: f64 = 0.15;

/// How many objects the server stores of a resource (kube's object count tracker).
pub trait ObjectCounts: Send + Sync {
    /// The objects of `resource` in `group`; 0 when the server keeps no count for it (an
    /// unknown or aggregated resource), which costs the minimum as kube's "not found" does.
    fn count(&self, group: &str, resource: &str) -> usize;
}

impl<F: Fn(&str, &str) -> usize + Send + Sync> ObjectCounts for F {
    fn count(&self, group: &str, resource: &str) -> usize {
        self(group, resource)
    }
}

/// The most seats one request of a level with `nominal` seats and `hand_size` may take (kube's
/// `MaxSeatsTracker` value, set for levels that queue). Levels that do not queue have none (0),
/// and their LISTs are bounded by [`MAXIMUM_LIST_SEATS`] alone.
pub fn level_max_seats(nominal: usize, hand_size: Option<usize>) -> usize {
    let Some(hand_size) = hand_size.filter(|h| *h > 0) else {
        return 0;
    };
    let share = (nominal as f64 * LEVEL_MAX_SEATS_SHARE).ceil() as usize;
    share.min(nominal / hand_size).max(1)
}

/// The list options the estimate reads, from a request's query.
#[derive(Debug, Default, PartialEq, Eq)]
struct ListOptions {
    limit: usize,
    resource_version: String,
    resource_version_match: String,
    has_continue: bool,
    has_selector: bool,
    send_initial_events: bool,
}

impl ListOptions {
    /// The options of `query`; `None` when a value the estimate reads does not parse (the
    /// request is bound to fail validation, and kube then estimates the maximum).
    fn parse(query: &str) -> Option<Self> {
        let mut o = Self::default();
        for (k, v) in form_urlencoded::parse(query.as_bytes()) {
            match &*k {
                "limit" => o.limit = v.parse::<i64>().ok()?.max(0) as usize,
                "resourceVersion" => o.resource_version = v.into_owned(),
                "resourceVersionMatch" => o.resource_version_match = v.into_owned(),
                "continue" => o.has_continue |= !v.is_empty(),
                "labelSelector" | "fieldSelector" => o.has_selector |= !v.is_empty(),
                "sendInitialEvents" => o.send_initial_events = v.parse::<bool>().ok()?,
                _ => {}
            }
        }
        Some(o)
    }

    /// Whether the LIST reads the store rather than the watch cache (`shouldListFromStorage`,
    /// with consistent lists served from the cache as in 1.33): a continuation, or a
    /// resourceVersion match the cache does not serve.
    fn reads_storage(&self) -> bool {
        let legacy_exact = self.limit > 0
            && self.resource_version_match.is_empty()
            && !self.resource_version.is_empty()
            && self.resource_version != "0";
        let unsupported_match = (!self.resource_version_match.is_empty()
            && self.resource_version_match != "NotOlderThan")
            || legacy_exact;
        self.has_continue || unsupported_match
    }
}

/// The seats `request` takes at a level whose [`level_max_seats`] is `level_max` (`estimate`);
/// `query` is the request's query string, read for LISTs and WATCHes.
pub fn seats(
    request: &Attributes,
    query: Option<&str>,
    counts: &dyn ObjectCounts,
    level_max: usize,
) -> usize {
    if !request.resource_request || !matches!(request.verb.as_str(), "list" | "watch") {
        return MINIMUM_SEATS;
    }
    let max = if level_max == 0 || level_max > MAXIMUM_LIST_SEATS {
        MAXIMUM_LIST_SEATS
    } else {
        level_max
    };
    let Some(options) = ListOptions::parse(query.unwrap_or("")) else {
        return max;
    };
    // A watch costs its initial events only when it asks for them.
    if request.verb == "watch" && !options.send_initial_events {
        return MINIMUM_SEATS;
    }
    let stored = counts.count(&request.api_group, &request.resource);
    let from_cache = request.verb == "watch" || !options.reads_storage();
    let limit = if options.limit > 0 && options.limit < stored {
        options.limit
    } else {
        stored
    };
    let objects = if !request.name.is_empty() {
        1
    } else if from_cache {
        stored
    } else if options.has_selector {
        stored + limit
    } else {
        2 * limit
    };
    ((objects as f64 / OBJECTS_PER_SEAT).ceil() as usize).clamp(MINIMUM_SEATS, max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::UserInfo;

    fn list(verb: &str, path: &str, query: &str) -> (Attributes, String) {
        let user = UserInfo::new("jane", &["system:authenticated"]);
        let mut a = Attributes::from_request(user, &http::Method::GET, path, Some(query));
        a.verb = verb.into();
        (a, query.into())
    }

    fn estimate(verb: &str, path: &str, query: &str, stored: usize, max: usize) -> usize {
        let (a, q) = list(verb, path, query);
        seats(&a, Some(&q), &move |_: &str, _: &str| stored, max)
    }

    // The cases of kube's `TestWorkEstimator` (object-count estimate), with the default
    // maximum of 10 seats.
    #[test]
    fn lists_take_a_seat_per_hundred_objects_up_to_the_maximum() {
        let pods = "/api/v1/namespaces/foo/pods";
        assert_eq!(estimate("list", pods, "", 799, 10), 8);
        assert_eq!(estimate("list", pods, "", 1999, 10), 10);
        assert_eq!(estimate("list", pods, "", 0, 10), 1);
        // Served from the watch cache: every stored object, whatever the limit.
        assert_eq!(estimate("list", pods, "limit=399", 699, 10), 7);
        assert_eq!(
            estimate("list", pods, "resourceVersion=0&limit=399", 699, 10),
            7
        );
        // From the store: a continuation reads twice the page.
        assert_eq!(
            estimate("list", pods, "continue=token&limit=399", 699, 10),
            8
        );
        // From the store with a selector: every object plus the page.
        assert_eq!(
            estimate(
                "list",
                pods,
                "continue=token&limit=399&labelSelector=app%3Dx",
                699,
                10
            ),
            10
        );
        assert_eq!(
            estimate(
                "list",
                pods,
                "resourceVersion=3&resourceVersionMatch=Exact&limit=100",
                699,
                10
            ),
            2
        );
        // Unknown resource: the minimum; a broken limit: the maximum.
        assert_eq!(estimate("list", pods, "", 0, 10), 1);
        assert_eq!(estimate("list", pods, "limit=abc", 699, 10), 10);
    }

    #[test]
    fn a_level_bounds_a_list_by_its_own_maximum() {
        let pods = "/api/v1/namespaces/foo/pods";
        assert_eq!(estimate("list", pods, "", 799, 3), 3);
        // Levels that do not queue, and levels above the limit: the LIST limit.
        assert_eq!(estimate("list", pods, "", 1999, 0), 10);
        assert_eq!(estimate("list", pods, "", 1999, 20), 10);
    }

    #[test]
    fn watches_cost_their_initial_events_only_when_asked() {
        let pods = "/api/v1/namespaces/foo/pods";
        assert_eq!(estimate("watch", pods, "watch=true", 799, 10), 1);
        assert_eq!(
            estimate(
                "watch",
                pods,
                "watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan",
                799,
                10
            ),
            8
        );
        assert_eq!(
            estimate("watch", pods, "sendInitialEvents=maybe", 799, 10),
            10
        );
    }

    #[test]
    fn other_requests_take_one_seat() {
        let cm = "/api/v1/namespaces/foo/configmaps";
        assert_eq!(estimate("get", &format!("{cm}/x"), "", 799, 10), 1);
        assert_eq!(estimate("create", cm, "", 799, 10), 1);
        let (mut a, _) = list("list", "/healthz", "");
        a.resource_request = false;
        assert_eq!(seats(&a, None, &|_: &str, _: &str| 5000, 10), 1);
    }

    #[test]
    fn level_maximum_is_kubes() {
        // kube's defaults at 600 seats: workload-low (245, hand 6) 37, global-default (49, 6) 8,
        // catch-all (13, 6) 2, leader-election (25, 4) 4.
        assert_eq!(level_max_seats(245, Some(6)), 37);
        assert_eq!(level_max_seats(49, Some(6)), 8);
        assert_eq!(level_max_seats(13, Some(6)), 2);
        assert_eq!(level_max_seats(25, Some(4)), 4);
        assert_eq!(level_max_seats(3, Some(6)), 1);
        assert_eq!(level_max_seats(49, None), 0);
    }
}
