//! The soak's verdict: a pure function over a recorded [`History`] that finds acknowledged
//! writes the store lost and watchers that missed an acknowledged write.
//!
//! The rules, as docs/benchmarks.md states them:
//!
//! - A write is an obligation only when it was acknowledged (a 2xx with the object's new
//!   resourceVersion). A write refused with a 4xx should not have been applied: when a watch or
//!   the final state shows its value, it is reported as refused but applied (the server's
//!   answer was wrong), not as a loss. A write whose outcome is
//!   unknown (connection reset, timeout, a 5xx, the server killed mid-request) may or may not have
//!   been applied: the checker accepts its attempted value or the one before it, until the next
//!   acknowledged write to the same key settles it. An acknowledged delete means absent.
//! - Writes to one key are recorded in the order they were issued, each after the previous one
//!   finished (one client task owns each key). An unknown write is assumed to have taken effect,
//!   if at all, before the next write to its key was acknowledged.
//! - A delete is acknowledged with a `Status`, not the object, so its resourceVersion is not
//!   known; revisions follow real time (linearizability), so it lies above every resourceVersion
//!   acknowledged before the delete was sent and below every one of a write sent after the delete
//!   was acknowledged. A watcher whose stream covered that whole window must have delivered a
//!   DELETED event inside it.
//! - resourceVersions are one revision across all kinds, so a watcher of one namespace sees
//!   increasing, not consecutive, resourceVersions. A watch started (or resumed) from X must
//!   deliver, in order, every acknowledged write to its namespace with a resourceVersion above X
//!   up to the last one it delivered; a resume continues from the last resourceVersion seen; a
//!   410 Gone is followed by a relist whose items must match the writes acknowledged up to the
//!   list's resourceVersion (a relist, not a gap). At the end every watcher must have delivered
//!   every acknowledged write to its namespace.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::Duration;

use serde::Serialize;

/// A ConfigMap the soak writes: namespace and name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Key {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// What became of a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Outcome {
    /// The server answered 2xx; the object (or its deletion) has this resourceVersion.
    Acked {
        /// resourceVersion of the write.
        rv: u64,
    },
    /// The server answered 2xx without the object (a delete's `Status`): applied, at an
    /// unknown resourceVersion.
    AckedWithoutRv,
    /// The server answered 4xx: the write should not have been applied.
    Refused,
    /// No answer, or a 5xx: the write may or may not have been applied.
    Unknown,
}

/// One create, update or delete of a key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Write {
    /// The object written.
    pub key: Key,
    /// The value written (`data.v`); `None` for a delete.
    pub value: Option<String>,
    /// What the server answered.
    pub outcome: Outcome,
    /// When the request was sent, from the start of the run.
    pub issued: Duration,
    /// When its answer (or error) came.
    pub answered: Duration,
}

/// An ADDED, MODIFIED or DELETED event a watcher received.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Event {
    /// resourceVersion of the event's object.
    pub rv: u64,
    /// Name of the object (the watcher's namespace is implied).
    pub name: String,
    /// `data.v` of the object; `None` for DELETED.
    pub value: Option<String>,
}

/// How a watch stream ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum StreamEnd {
    /// 410 Gone: the watcher must relist.
    Gone,
    /// The connection broke or the request failed; the watcher resumes from its last
    /// resourceVersion.
    Broken,
    /// The server closed the stream normally (its timeout); the watcher resumes.
    Closed,
    /// The soak stopped the watcher.
    Stopped,
}

/// One step of a watcher: a list, or one watch stream.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum WatchStep {
    /// A (re)list of the namespace: its resourceVersion and each item's `data.v`.
    List {
        /// resourceVersion of the list.
        rv: u64,
        /// Name → `data.v`.
        items: BTreeMap<String, String>,
    },
    /// A watch from resourceVersion `from`, with the events it delivered.
    Stream {
        /// The `resourceVersion` the watch was started from.
        from: u64,
        /// Events, in the order received.
        events: Vec<Event>,
        /// How it ended.
        end: StreamEnd,
    },
}

/// Everything one watcher of one namespace did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WatcherLog {
    /// The namespace watched.
    pub namespace: String,
    /// Lists and streams, in order.
    pub steps: Vec<WatchStep>,
}

/// A soak's record: every write with its outcome, every watcher's steps and the final state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct History {
    /// Every write, in issue order per key.
    pub writes: Vec<Write>,
    /// Every watcher.
    pub watchers: Vec<WatcherLog>,
    /// Each namespace's ConfigMaps read after the last write: name → `data.v`, with the list's
    /// resourceVersion.
    pub final_lists: BTreeMap<String, (u64, BTreeMap<String, String>)>,
}

/// An acknowledged write the final state does not show.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Lost {
    /// The object.
    pub key: Key,
    /// Values the final state may hold (`None`: absent).
    pub expected: Vec<Option<String>>,
    /// What it holds.
    pub found: Option<String>,
    /// resourceVersion of the last acknowledged write to the key.
    pub last_acked_rv: u64,
}

/// What went wrong in a watcher's view.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum GapKind {
    /// An acknowledged write within the stream's range was not delivered.
    Missing,
    /// The event at the write's resourceVersion names another object or value.
    WrongEvent,
    /// An event's resourceVersion is not above the one before it.
    OutOfOrder,
    /// A stream did not start where the previous step left off (or resumed after a 410 without
    /// a relist).
    Discontinuity,
    /// A relist's items do not match the writes acknowledged up to its resourceVersion.
    RelistMismatch,
    /// The watcher never delivered an acknowledged write (it had not caught up when stopped).
    NotDelivered,
}

/// One gap in one watcher's view.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Gap {
    /// Index of the watcher in [`History::watchers`].
    pub watcher: usize,
    /// Its namespace.
    pub namespace: String,
    /// What went wrong.
    pub kind: GapKind,
    /// The resourceVersion concerned.
    pub rv: u64,
    /// The object concerned, when there is one.
    pub name: Option<String>,
}

/// The checker's findings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Verdict {
    /// Writes acknowledged.
    pub acknowledged: usize,
    /// Writes refused with a 4xx.
    pub refused: usize,
    /// Writes whose outcome is unknown.
    pub indeterminate: usize,
    /// Acknowledged writes the final state lost.
    pub lost: Vec<Lost>,
    /// Gaps in the watchers' views.
    pub gaps: Vec<Gap>,
    /// Events delivered to watchers.
    pub events: usize,
    /// Relists after a 410 Gone.
    pub relists: usize,
    /// Streams resumed after a break or a normal close.
    pub resumes: usize,
    /// Writes refused with a 4xx that a watcher nevertheless saw applied (values are unique per
    /// write): the server said no to a write it made.
    pub refused_but_applied: Vec<RefusedButApplied>,
}

/// A write refused with a 4xx whose value a watcher received or the final state holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RefusedButApplied {
    /// The object.
    pub key: Key,
    /// The value the refused write carried (empty for a delete).
    pub value: String,
    /// resourceVersion of the event that carried it (of the final list, when only it did).
    pub rv: u64,
}

/// Writes to each key, in issue order.
fn by_key(writes: &[Write]) -> BTreeMap<&Key, Vec<&Write>> {
    let mut out: BTreeMap<&Key, Vec<&Write>> = BTreeMap::new();
    for w in writes {
        out.entry(&w.key).or_default().push(w);
    }
    out
}

/// The resourceVersions a write may have: exact when acknowledged with one; within the
/// real-time window of [`Windows`] when acknowledged without; unknown (or none) otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum At {
    /// Exactly this one.
    Exactly(u64),
    /// Strictly between the two.
    Between(u64, u64),
    /// Perhaps not applied at all.
    Unknown,
}

impl At {
    /// Applied at or below `rv` for certain.
    fn surely_by(self, rv: u64) -> bool {
        match self {
            At::Exactly(x) => x <= rv,
            At::Between(_, hi) => hi.saturating_sub(1) <= rv,
            At::Unknown => false,
        }
    }

    /// Applied above `rv` for certain.
    fn surely_after(self, rv: u64) -> bool {
        match self {
            At::Exactly(x) => x > rv,
            At::Between(lo, _) => lo >= rv,
            At::Unknown => false,
        }
    }
}

/// The real-time bounds on the resourceVersions of writes acknowledged without one: above every
/// resourceVersion acknowledged before the write was sent, below every one of a write sent
/// after it was acknowledged.
struct Windows {
    /// Acknowledged resourceVersions by answer time, with the running maximum.
    by_answer: Vec<(Duration, u64)>,
    /// Acknowledged resourceVersions by issue time, with the running minimum from the end.
    by_issue: Vec<(Duration, u64)>,
}

impl Windows {
    fn new(writes: &[Write]) -> Self {
        let acked = || {
            writes.iter().filter_map(|w| match w.outcome {
                Outcome::Acked { rv } => Some((w, rv)),
                _ => None,
            })
        };
        let mut by_answer: Vec<(Duration, u64)> = acked().map(|(w, rv)| (w.answered, rv)).collect();
        by_answer.sort();
        let mut max = 0;
        for e in &mut by_answer {
            max = max.max(e.1);
            e.1 = max;
        }
        let mut by_issue: Vec<(Duration, u64)> = acked().map(|(w, rv)| (w.issued, rv)).collect();
        by_issue.sort();
        let mut min = u64::MAX;
        for e in by_issue.iter_mut().rev() {
            min = min.min(e.1);
            e.1 = min;
        }
        Self {
            by_answer,
            by_issue,
        }
    }

    fn at(&self, w: &Write) -> At {
        match w.outcome {
            Outcome::Acked { rv } => At::Exactly(rv),
            // Refused writes the server applied anyway are reported by `check_refused`.
            Outcome::Refused | Outcome::Unknown => At::Unknown,
            Outcome::AckedWithoutRv => {
                let (lo, hi) = self.window(w);
                At::Between(lo, hi)
            }
        }
    }

    /// The resourceVersions `w` can have been applied at, if at all: strictly between these.
    fn window(&self, w: &Write) -> (u64, u64) {
        let before = self.by_answer.partition_point(|(t, _)| *t <= w.issued);
        let lo = before.checked_sub(1).map_or(0, |i| self.by_answer[i].1);
        let after = self.by_issue.partition_point(|(t, _)| *t < w.answered);
        let hi = self.by_issue.get(after).map_or(u64::MAX, |e| e.1);
        (lo, hi)
    }
}

/// The values `writes` (one key's, in issue order) allow the key to have at resourceVersion
/// `at` (`None` in the set: absent): the last write surely applied by `at`, or absence before
/// any, plus every write after it that may have been applied by `at`, up to the first surely
/// applied after `at`.
fn possible_at(writes: &[&Write], windows: &Windows, at: u64) -> BTreeSet<Option<String>> {
    let last = writes.iter().rposition(|w| windows.at(w).surely_by(at));
    let mut out = BTreeSet::new();
    out.insert(last.and_then(|i| writes[i].value.clone()));
    let after = last.map_or(0, |i| i + 1);
    for w in &writes[after..] {
        if windows.at(w).surely_after(at) {
            break;
        }
        out.insert(w.value.clone());
    }
    out
}

fn last_acked_rv(writes: &[&Write]) -> u64 {
    writes
        .iter()
        .filter_map(|w| match w.outcome {
            Outcome::Acked { rv } => Some(rv),
            _ => None,
        })
        .max()
        .unwrap_or(0)
}

/// Checks `history`: lost writes against the final lists, gaps in every watcher's view.
pub fn check(history: &History) -> Verdict {
    let mut verdict = Verdict::default();
    for w in &history.writes {
        match w.outcome {
            Outcome::Acked { .. } | Outcome::AckedWithoutRv => verdict.acknowledged += 1,
            Outcome::Refused => verdict.refused += 1,
            Outcome::Unknown => verdict.indeterminate += 1,
        }
    }
    let keys = by_key(&history.writes);
    let windows = Windows::new(&history.writes);
    check_final(history, &keys, &windows, &mut verdict);
    for (i, watcher) in history.watchers.iter().enumerate() {
        check_watcher(i, watcher, &keys, &windows, &mut verdict);
    }
    check_refused(history, &mut verdict);
    check_refused_deletes(&keys, &windows, history, &mut verdict);
    verdict
}

/// A refused write must never show up in a watch stream nor in the final state.
fn check_refused(history: &History, verdict: &mut Verdict) {
    let refused: BTreeMap<(&str, &str), &Write> = history
        .writes
        .iter()
        .filter(|w| w.outcome == Outcome::Refused)
        .filter_map(|w| Some(((w.key.namespace.as_str(), w.value.as_deref()?), w)))
        .collect();
    let mut seen = BTreeSet::new();
    for (ns, (rv, items)) in &history.final_lists {
        for value in items.values() {
            if let Some(w) = refused.get(&(ns.as_str(), value.as_str())) {
                if seen.insert((&w.key, value.as_str())) {
                    verdict.refused_but_applied.push(RefusedButApplied {
                        key: w.key.clone(),
                        value: value.clone(),
                        rv: *rv,
                    });
                }
            }
        }
    }
    for watcher in &history.watchers {
        for step in &watcher.steps {
            let WatchStep::Stream { events, .. } = step else {
                continue;
            };
            for e in events {
                let Some(value) = e.value.as_deref() else {
                    continue;
                };
                if let Some(w) = refused.get(&(watcher.namespace.as_str(), value)) {
                    if seen.insert((&w.key, value)) {
                        verdict.refused_but_applied.push(RefusedButApplied {
                            key: w.key.clone(),
                            value: value.to_string(),
                            rv: e.rv,
                        });
                    }
                }
            }
        }
    }
}

/// A refused delete must not show up as a DELETED event inside its window, when the write
/// before it on the key was acknowledged (so that only the refused delete can explain one).
fn check_refused_deletes(
    keys: &BTreeMap<&Key, Vec<&Write>>,
    windows: &Windows,
    history: &History,
    verdict: &mut Verdict,
) {
    for (key, writes) in keys {
        for pair in writes.windows(2) {
            let (before, w) = (pair[0], pair[1]);
            if w.outcome != Outcome::Refused
                || w.value.is_some()
                || !matches!(before.outcome, Outcome::Acked { .. })
            {
                continue;
            }
            let (lo, hi) = windows.window(w);
            let seen = history
                .watchers
                .iter()
                .filter(|wt| wt.namespace == key.namespace)
                .flat_map(|wt| wt.steps.iter())
                .filter_map(|step| match step {
                    WatchStep::Stream { events, .. } => Some(events),
                    WatchStep::List { .. } => None,
                })
                .flatten()
                .find(|e| e.name == key.name && e.value.is_none() && lo < e.rv && e.rv < hi);
            if let Some(e) = seen {
                verdict.refused_but_applied.push(RefusedButApplied {
                    key: (*key).clone(),
                    value: String::new(),
                    rv: e.rv,
                });
            }
        }
    }
}

/// Every key written must hold a value its writes allow; every final list must be at or above
/// every acknowledged resourceVersion (a lower one means the store went back in time).
fn check_final(
    history: &History,
    keys: &BTreeMap<&Key, Vec<&Write>>,
    windows: &Windows,
    verdict: &mut Verdict,
) {
    for (key, writes) in keys {
        let found = history
            .final_lists
            .get(&key.namespace)
            .and_then(|(_, items)| items.get(&key.name).cloned());
        let expected = possible_at(writes, windows, u64::MAX);
        let list_rv = history
            .final_lists
            .get(&key.namespace)
            .map_or(0, |(rv, _)| *rv);
        let last = last_acked_rv(writes);
        if !expected.contains(&found) || last > list_rv {
            verdict.lost.push(Lost {
                key: (*key).clone(),
                expected: expected.into_iter().collect(),
                found,
                last_acked_rv: last,
            });
        }
    }
}

fn check_watcher(
    index: usize,
    watcher: &WatcherLog,
    keys: &BTreeMap<&Key, Vec<&Write>>,
    windows: &Windows,
    verdict: &mut Verdict,
) {
    let ns = watcher.namespace.as_str();
    let gap = |kind, rv, name: Option<&str>| Gap {
        watcher: index,
        namespace: ns.to_string(),
        kind,
        rv,
        name: name.map(str::to_string),
    };
    // The namespace's acknowledged writes by resourceVersion.
    let acked: BTreeMap<u64, &Write> = keys
        .iter()
        .filter(|(k, _)| k.namespace == ns)
        .flat_map(|(_, ws)| ws.iter())
        .filter_map(|w| match w.outcome {
            Outcome::Acked { rv } => Some((rv, *w)),
            _ => None,
        })
        .collect();
    // The resourceVersion the view is complete up to; `None` before the first list.
    let mut position: Option<u64> = None;
    let mut need_list = true;
    // Stretches of continuous delivery, (start, end], each from a list to the next.
    let mut runs: Vec<(u64, u64)> = Vec::new();
    // DELETED events, by name.
    let mut deleted: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
    for step in &watcher.steps {
        match step {
            WatchStep::List { rv, items } => {
                if position.is_some() {
                    verdict.relists += 1;
                }
                runs.push((*rv, *rv));
                let names: BTreeSet<&str> = keys
                    .keys()
                    .filter(|k| k.namespace == ns)
                    .map(|k| k.name.as_str())
                    .chain(items.keys().map(String::as_str))
                    .collect();
                for name in names {
                    let found = items.get(name).cloned();
                    let key = Key {
                        namespace: ns.to_string(),
                        name: name.to_string(),
                    };
                    let allowed = keys
                        .get(&key)
                        .map(|ws| possible_at(ws, windows, *rv))
                        .unwrap_or_else(|| BTreeSet::from([None]));
                    if !allowed.contains(&found) {
                        verdict
                            .gaps
                            .push(gap(GapKind::RelistMismatch, *rv, Some(name)));
                    }
                }
                position = Some(*rv);
                need_list = false;
            }
            WatchStep::Stream { from, events, end } => {
                if need_list || position != Some(*from) {
                    verdict.gaps.push(gap(GapKind::Discontinuity, *from, None));
                }
                verdict.events += events.len();
                let mut last = *from;
                let mut delivered: BTreeMap<u64, &Event> = BTreeMap::new();
                for e in events {
                    if e.rv <= last {
                        verdict
                            .gaps
                            .push(gap(GapKind::OutOfOrder, e.rv, Some(&e.name)));
                    } else {
                        last = e.rv;
                    }
                    delivered.insert(e.rv, e);
                    if e.value.is_none() {
                        deleted.entry(e.name.as_str()).or_default().push(e.rv);
                    }
                }
                if let Some(run) = runs.last_mut() {
                    run.1 = run.1.max(last);
                }
                let range = if last > *from {
                    acked.range(from + 1..=last)
                } else {
                    acked.range(0..0)
                };
                for (rv, w) in range {
                    match delivered.get(rv) {
                        None => verdict
                            .gaps
                            .push(gap(GapKind::Missing, *rv, Some(&w.key.name))),
                        Some(e) if e.name != w.key.name || e.value != w.value => verdict
                            .gaps
                            .push(gap(GapKind::WrongEvent, *rv, Some(&w.key.name))),
                        Some(_) => {}
                    }
                }
                position = Some(last);
                match end {
                    StreamEnd::Gone => need_list = true,
                    StreamEnd::Broken | StreamEnd::Closed => verdict.resumes += 1,
                    StreamEnd::Stopped => {}
                }
            }
        }
    }
    // Deletes acknowledged without a resourceVersion: a DELETED event inside the window, if a
    // run covered all of it.
    for (key, writes) in keys.iter().filter(|(k, _)| k.namespace == ns) {
        for w in writes
            .iter()
            .filter(|w| w.outcome == Outcome::AckedWithoutRv)
        {
            let At::Between(lo, hi) = windows.at(w) else {
                continue;
            };
            let seen = deleted
                .get(key.name.as_str())
                .is_some_and(|rvs| rvs.iter().any(|rv| lo < *rv && *rv < hi));
            let covered = runs
                .iter()
                .any(|(start, end)| *start <= lo && hi.saturating_sub(1) <= *end);
            if !seen && covered {
                verdict
                    .gaps
                    .push(gap(GapKind::Missing, lo, Some(&key.name)));
            }
        }
    }
    let covered = position.unwrap_or(0);
    for (rv, w) in acked.range(covered.saturating_add(1)..) {
        verdict
            .gaps
            .push(gap(GapKind::NotDelivered, *rv, Some(&w.key.name)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> Key {
        Key {
            namespace: "ns".into(),
            name: name.into(),
        }
    }

    fn write(name: &str, value: Option<&str>, outcome: Outcome) -> Write {
        Write {
            key: key(name),
            value: value.map(str::to_string),
            outcome,
            issued: Duration::ZERO,
            answered: Duration::ZERO,
        }
    }

    /// Writes one after the other: the i-th sent at 10·i ms and answered 5 ms later.
    fn one_by_one(mut writes: Vec<Write>) -> Vec<Write> {
        for (i, w) in writes.iter_mut().enumerate() {
            w.issued = Duration::from_millis(10 * i as u64);
            w.answered = w.issued + Duration::from_millis(5);
        }
        writes
    }

    fn acked(name: &str, value: Option<&str>, rv: u64) -> Write {
        write(name, value, Outcome::Acked { rv })
    }

    fn event(rv: u64, name: &str, value: Option<&str>) -> Event {
        Event {
            rv,
            name: name.into(),
            value: value.map(str::to_string),
        }
    }

    fn items(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn list(rv: u64, pairs: &[(&str, &str)]) -> WatchStep {
        WatchStep::List {
            rv,
            items: items(pairs),
        }
    }

    fn stream(from: u64, events: Vec<Event>, end: StreamEnd) -> WatchStep {
        WatchStep::Stream { from, events, end }
    }

    /// a: created (10), updated (12), deleted (15); b: created (11), updated (13), then an
    /// update of unknown outcome; c: created (14), then an update refused.
    fn clean_history() -> History {
        History {
            writes: one_by_one(vec![
                acked("a", Some("a1"), 10),
                acked("b", Some("b1"), 11),
                acked("a", Some("a2"), 12),
                acked("b", Some("b2"), 13),
                acked("c", Some("c1"), 14),
                acked("a", None, 15),
                write("b", Some("b3"), Outcome::Unknown),
                write("c", Some("c2"), Outcome::Refused),
            ]),
            watchers: vec![WatcherLog {
                namespace: "ns".into(),
                steps: vec![
                    list(5, &[]),
                    stream(
                        5,
                        vec![
                            event(10, "a", Some("a1")),
                            event(11, "b", Some("b1")),
                            // Another namespace's write took 12's neighbour; 12 is ours.
                            event(12, "a", Some("a2")),
                        ],
                        StreamEnd::Broken,
                    ),
                    stream(12, vec![event(13, "b", Some("b2"))], StreamEnd::Gone),
                    list(15, &[("b", "b2"), ("c", "c1")]),
                    // The unknown write to b was applied after all, at 16.
                    stream(15, vec![event(16, "b", Some("b3"))], StreamEnd::Stopped),
                ],
            }],
            final_lists: BTreeMap::from([(
                "ns".to_string(),
                (16, items(&[("b", "b3"), ("c", "c1")])),
            )]),
        }
    }

    #[test]
    fn a_clean_history_has_no_loss_and_no_gap() {
        let verdict = check(&clean_history());
        assert_eq!(verdict.lost, vec![]);
        assert_eq!(verdict.gaps, vec![]);
        assert_eq!(verdict.acknowledged, 6);
        assert_eq!(verdict.indeterminate, 1);
        assert_eq!(verdict.refused, 1);
        assert_eq!(verdict.relists, 1);
        assert_eq!(verdict.resumes, 1);
        assert_eq!(verdict.events, 5);
    }

    #[test]
    fn an_unknown_write_may_or_may_not_have_been_applied() {
        let mut history = clean_history();
        history
            .final_lists
            .insert("ns".to_string(), (16, items(&[("b", "b2"), ("c", "c1")])));
        history.watchers.clear();
        assert_eq!(check(&history).lost, vec![]);
    }

    #[test]
    fn a_planted_loss_is_reported() {
        let mut history = clean_history();
        // The store came back with c's create missing.
        history
            .final_lists
            .insert("ns".to_string(), (16, items(&[("b", "b3")])));
        let verdict = check(&history);
        assert_eq!(
            verdict.lost,
            vec![Lost {
                key: key("c"),
                // Its refused update too: had it been applied, that is reported apart.
                expected: vec![Some("c1".into()), Some("c2".into())],
                found: None,
                last_acked_rv: 14,
            }]
        );
    }

    #[test]
    fn an_acknowledged_delete_that_comes_back_is_a_loss() {
        let mut history = clean_history();
        history.final_lists.insert(
            "ns".to_string(),
            (16, items(&[("a", "a2"), ("b", "b3"), ("c", "c1")])),
        );
        let lost = check(&history).lost;
        assert_eq!(lost.len(), 1);
        assert_eq!(lost[0].key, key("a"));
        assert_eq!(lost[0].expected, vec![None]);
    }

    #[test]
    fn a_store_behind_an_acknowledged_revision_is_a_loss() {
        let mut history = clean_history();
        // d's value is there, but the list's revision is below d's acknowledged one: the store
        // went back in time and wrote d again at a reused revision.
        history.writes.push(Write {
            issued: Duration::from_millis(200),
            answered: Duration::from_millis(205),
            ..acked("d", Some("d1"), 20)
        });
        history.final_lists.insert(
            "ns".to_string(),
            (16, items(&[("b", "b3"), ("c", "c1"), ("d", "d1")])),
        );
        let lost = check(&history).lost;
        assert_eq!(lost.iter().map(|l| &l.key).collect::<Vec<_>>(), [&key("d")]);
    }

    /// a created at 10, deleted (acknowledged with a Status) between 10 and 12, when b is
    /// created.
    fn delete_without_rv(events: Vec<Event>) -> History {
        History {
            writes: one_by_one(vec![
                acked("a", Some("a1"), 10),
                write("a", None, Outcome::AckedWithoutRv),
                acked("b", Some("b1"), 12),
            ]),
            watchers: vec![WatcherLog {
                namespace: "ns".into(),
                steps: vec![list(5, &[]), stream(5, events, StreamEnd::Stopped)],
            }],
            final_lists: BTreeMap::from([("ns".to_string(), (12, items(&[("b", "b1")])))]),
        }
    }

    #[test]
    fn a_delete_acknowledged_without_its_rv_is_found_in_its_window() {
        let history = delete_without_rv(vec![
            event(10, "a", Some("a1")),
            event(11, "a", None),
            event(12, "b", Some("b1")),
        ]);
        assert_eq!(
            check(&history),
            Verdict {
                acknowledged: 3,
                events: 3,
                ..Verdict::default()
            }
        );
    }

    #[test]
    fn a_missed_delete_acknowledged_without_its_rv_is_a_gap() {
        let history =
            delete_without_rv(vec![event(10, "a", Some("a1")), event(12, "b", Some("b1"))]);
        let gaps = check(&history).gaps;
        assert_eq!(gaps.len(), 1, "{gaps:?}");
        assert_eq!(
            (gaps[0].kind.clone(), gaps[0].name.as_deref()),
            (GapKind::Missing, Some("a"))
        );
    }

    #[test]
    fn a_delete_acknowledged_without_its_rv_that_comes_back_is_a_loss() {
        let mut history = delete_without_rv(vec![]);
        history.watchers.clear();
        history
            .final_lists
            .insert("ns".into(), (12, items(&[("a", "a1"), ("b", "b1")])));
        let lost = check(&history).lost;
        assert_eq!(lost.len(), 1, "{lost:?}");
        assert_eq!(lost[0].key, key("a"));
    }

    #[test]
    fn a_refused_write_a_watcher_saw_applied_is_reported() {
        let mut history = clean_history();
        // c's refused update was applied after all, at 17.
        if let WatchStep::Stream { events, .. } = &mut history.watchers[0].steps[4] {
            events.push(event(17, "c", Some("c2")));
        }
        let verdict = check(&history);
        assert_eq!(
            verdict.refused_but_applied,
            vec![RefusedButApplied {
                key: key("c"),
                value: "c2".into(),
                rv: 17
            }]
        );
        // Nor is it a loss when the final state has it: the answer was wrong, not the store.
        history.watchers.clear();
        history
            .final_lists
            .insert("ns".into(), (17, items(&[("b", "b3"), ("c", "c2")])));
        let verdict = check(&history);
        assert_eq!(verdict.lost, vec![]);
        assert_eq!(verdict.refused_but_applied.len(), 1);
        assert_eq!(verdict.refused_but_applied[0].rv, 17);
    }

    #[test]
    fn a_refused_delete_a_watcher_saw_applied_is_reported() {
        // b's update at 13 acknowledged, then a delete answered 404 though b was there, then c
        // created at 15: a DELETED event for b at 14 can only be the refused delete's.
        let history = History {
            writes: one_by_one(vec![
                acked("b", Some("b1"), 13),
                write("b", None, Outcome::Refused),
                acked("c", Some("c1"), 15),
            ]),
            watchers: vec![WatcherLog {
                namespace: "ns".into(),
                steps: vec![
                    list(12, &[]),
                    stream(
                        12,
                        vec![
                            event(13, "b", Some("b1")),
                            event(14, "b", None),
                            event(15, "c", Some("c1")),
                        ],
                        StreamEnd::Stopped,
                    ),
                ],
            }],
            final_lists: BTreeMap::from([("ns".to_string(), (15, items(&[("c", "c1")])))]),
        };
        let verdict = check(&history);
        assert_eq!(verdict.lost, vec![]);
        assert_eq!(verdict.gaps, vec![]);
        assert_eq!(
            verdict.refused_but_applied,
            vec![RefusedButApplied {
                key: key("b"),
                value: String::new(),
                rv: 14
            }]
        );
    }

    #[test]
    fn a_planted_watch_gap_is_reported() {
        let mut history = clean_history();
        // The first stream skipped 11.
        history.watchers[0].steps[1] = stream(
            5,
            vec![event(10, "a", Some("a1")), event(12, "a", Some("a2"))],
            StreamEnd::Broken,
        );
        let verdict = check(&history);
        assert_eq!(verdict.lost, vec![]);
        assert_eq!(
            verdict.gaps,
            vec![Gap {
                watcher: 0,
                namespace: "ns".into(),
                kind: GapKind::Missing,
                rv: 11,
                name: Some("b".into()),
            }]
        );
    }

    #[test]
    fn a_resume_past_the_last_event_seen_is_a_gap() {
        let mut history = clean_history();
        // Resumed from 13 instead of 12: had 13 been missed, nothing would show it.
        history.watchers[0].steps[2] = stream(13, vec![], StreamEnd::Gone);
        let kinds: Vec<GapKind> = check(&history).gaps.into_iter().map(|g| g.kind).collect();
        assert_eq!(kinds, [GapKind::Discontinuity]);
    }

    #[test]
    fn a_resume_after_gone_without_a_relist_is_a_gap() {
        let mut history = clean_history();
        history.watchers[0].steps.remove(3);
        history.watchers[0].steps[3] =
            stream(13, vec![event(16, "b", Some("b3"))], StreamEnd::Stopped);
        let gaps = check(&history).gaps;
        assert!(
            gaps.iter().any(|g| g.kind == GapKind::Discontinuity),
            "{gaps:?}"
        );
    }

    #[test]
    fn a_relist_that_disagrees_with_acknowledged_writes_is_a_gap() {
        let mut history = clean_history();
        history.watchers[0].steps[3] = list(15, &[("a", "a2"), ("b", "b2"), ("c", "c1")]);
        let gaps = check(&history).gaps;
        assert_eq!(gaps.len(), 1, "{gaps:?}");
        assert_eq!(gaps[0].kind, GapKind::RelistMismatch);
        assert_eq!(gaps[0].name.as_deref(), Some("a"));
    }

    #[test]
    fn events_out_of_order_or_with_the_wrong_value_are_gaps() {
        let mut history = clean_history();
        history.watchers[0].steps[1] = stream(
            5,
            vec![
                event(11, "b", Some("b1")),
                event(10, "a", Some("a1")),
                event(12, "a", Some("a9")),
            ],
            StreamEnd::Broken,
        );
        let kinds: Vec<GapKind> = check(&history).gaps.into_iter().map(|g| g.kind).collect();
        assert_eq!(kinds, [GapKind::OutOfOrder, GapKind::WrongEvent]);
    }

    #[test]
    fn a_watcher_that_never_caught_up_is_a_gap() {
        let mut history = clean_history();
        history.watchers[0].steps.truncate(3);
        history.writes.push(Write {
            issued: Duration::from_millis(200),
            answered: Duration::from_millis(205),
            ..acked("c", Some("c3"), 17)
        });
        let gaps = check(&history).gaps;
        // Stopped at 13 after its 410: 14, 15 and 17 were never delivered.
        let rvs: Vec<(GapKind, u64)> = gaps.into_iter().map(|g| (g.kind, g.rv)).collect();
        assert_eq!(
            rvs,
            [
                (GapKind::NotDelivered, 14),
                (GapKind::NotDelivered, 15),
                (GapKind::NotDelivered, 17)
            ]
        );
    }
}
