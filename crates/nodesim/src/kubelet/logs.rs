//! What containers that follow the container-command convention printed, kept in a pod annotation
//! for the API server's `pods/log`.
//!
//! The API server answers `pods/log` itself (it cannot reach a node, and the simulated nodes expose
//! no endpoint), so the kubelet stand-in writes each run's output where the server can read it:
//! the annotation [`CONTAINER_LOGS_ANNOTATION`], which this kubelet owns and writes in the same
//! `pods/{name}/status` patch as the container states. Its value is a JSON object from container
//! name to that container's latest runs, at most two (the current one and the previous one, for
//! `kubectl logs --previous`), oldest first:
//!
//! ```json
//! {"app": [{"restartCount": 0, "log": "2026-01-02T03:04:05Z hello\n"},
//!          {"restartCount": 1, "log": ""}]}
//! ```
//!
//! `log` holds lines as a container runtime's log files do: each starts with the RFC 3339 time at
//! which it was printed and a space. A run's entry appears, empty, when the container starts, and
//! gets its output when the run ends (the simulated process prints everything at its exit time,
//! stamped with when each `echo` ran). Each `log` keeps at most
//! [`MAX_OUTPUT_BYTES`] bytes: older lines are dropped first.

use std::collections::BTreeMap;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Container, ContainerStatus, Pod, PodStatus};
use serde::{Deserialize, Serialize};

use super::behaviour::{container_behaviour, pod_behaviour, PodBehaviour};
use super::command::{program, Program, Run, MAX_OUTPUT_BYTES};
use super::containers::CRASH_LOOP_BACK_OFF;
use super::time::add;

/// Annotation holding the output of the pod's containers that follow the container-command convention.
pub const CONTAINER_LOGS_ANNOTATION: &str = "rkcm.io/container-logs";

/// The output of one run of a container.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunLog {
    /// The container's `restartCount` during this run.
    pub restart_count: i32,
    /// Timestamped lines, at most [`MAX_OUTPUT_BYTES`] bytes.
    pub log: String,
}

/// The annotation's content: container name → its latest runs, oldest first.
pub type ContainerLogs = BTreeMap<String, Vec<RunLog>>;

/// How many runs are kept per container.
const RUNS_KEPT: usize = 2;

/// The annotation value recording the runs that `status` shows for `pod`'s containers, or `None`
/// when the pod's annotation already says all there is.
pub fn record(pod: &Pod, status: &PodStatus) -> Option<String> {
    let existing = pod
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(CONTAINER_LOGS_ANNOTATION));
    // A value that does not parse is replaced: this kubelet owns the annotation.
    let mut logs: ContainerLogs = existing
        .and_then(|v| serde_json::from_str(v).ok())
        .unwrap_or_default();
    let spec = pod.spec.as_ref()?;
    let behaviour = pod_behaviour(pod);
    // Init containers follow only the command convention, not the pod's annotations.
    let init = spec
        .init_containers
        .iter()
        .flatten()
        .map(|c| (c, None, &status.init_container_statuses));
    let regular = spec
        .containers
        .iter()
        .map(|c| (c, Some(&behaviour), &status.container_statuses));
    let mut changed = false;
    for (container, pod_wide, statuses) in init.chain(regular) {
        let Some(entry) = run_log(container, pod_wide, statuses.as_deref()) else {
            continue;
        };
        changed |= remember(logs.entry(container.name.clone()).or_default(), entry);
    }
    if !changed {
        return None;
    }
    serde_json::to_string(&logs).ok()
}

/// The log of the run `statuses` shows for `container`, if it follows the convention. `pod_wide`
/// is the pod's behaviour for regular containers, `None` for init containers, which only follow
/// the command convention.
fn run_log(
    container: &Container,
    pod_wide: Option<&PodBehaviour>,
    statuses: Option<&[ContainerStatus]>,
) -> Option<RunLog> {
    let run = match pod_wide {
        Some(pod_wide) => {
            let behaviour = container_behaviour(pod_wide, container);
            if behaviour.fail {
                return None;
            }
            behaviour.run?
        }
        None => match program(container) {
            Program::Runs(run) => run,
            Program::UntilStopped => return None,
        },
    };
    let status = statuses?.iter().find(|s| s.name == container.name)?;
    let state = status.state.as_ref()?;
    let (started_at, exited) = if let Some(running) = &state.running {
        (running.started_at.as_ref()?.0, false)
    } else if let Some(terminated) = &state.terminated {
        (terminated.started_at.as_ref()?.0, true)
    } else if state
        .waiting
        .as_ref()
        .is_some_and(|w| w.reason.as_deref() == Some(CRASH_LOOP_BACK_OFF))
    {
        let last = status.last_state.as_ref()?.terminated.as_ref()?;
        (last.started_at.as_ref()?.0, true)
    } else {
        return None;
    };
    Some(RunLog {
        restart_count: status.restart_count,
        log: if exited {
            render(&run, started_at)
        } else {
            String::new()
        },
    })
}

/// Adds `entry` to a container's runs; true when that changed them. A run's log only ever goes
/// from empty (started) to its output (exited), so repeated syncs never rewrite it.
fn remember(runs: &mut Vec<RunLog>, entry: RunLog) -> bool {
    match runs
        .iter_mut()
        .find(|r| r.restart_count == entry.restart_count)
    {
        Some(known) if known.log.is_empty() && !entry.log.is_empty() => {
            known.log = entry.log;
            true
        }
        Some(_) => false,
        None => {
            runs.push(entry);
            runs.sort_by_key(|r| r.restart_count);
            let excess = runs.len().saturating_sub(RUNS_KEPT);
            runs.drain(..excess);
            true
        }
    }
}

/// The run's output as timestamped lines, started at `started_at`, bounded to [`MAX_OUTPUT_BYTES`].
pub fn render(run: &Run, started_at: Timestamp) -> String {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    let mut stamp: Option<Duration> = None;
    for (at, text) in &run.output {
        for piece in text.split_inclusive('\n') {
            let since = *stamp.get_or_insert(*at);
            line.push_str(piece);
            if piece.ends_with('\n') {
                lines.push(format!("{} {line}", add(started_at, since)));
                line.clear();
                stamp = None;
            }
        }
    }
    if let Some(since) = stamp {
        lines.push(format!("{} {line}", add(started_at, since)));
    }
    truncate_front(lines)
}

/// Drops whole lines from the front until the rest fits [`MAX_OUTPUT_BYTES`]; a single line too
/// long to fit keeps its end.
fn truncate_front(lines: Vec<String>) -> String {
    let mut kept = 0;
    let mut first = lines.len();
    for (i, line) in lines.iter().enumerate().rev() {
        if kept + line.len() > MAX_OUTPUT_BYTES {
            break;
        }
        kept += line.len();
        first = i;
    }
    if first == lines.len() {
        let Some(last) = lines.last() else {
            return String::new();
        };
        let mut cut = last.len().saturating_sub(MAX_OUTPUT_BYTES);
        while !last.is_char_boundary(cut) {
            cut += 1;
        }
        return last[cut..].to_string();
    }
    lines[first..].concat()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kubelet::behaviour::FAIL_ANNOTATION;
    use k8s_openapi::api::core::v1::{
        ContainerState, ContainerStateRunning, ContainerStateTerminated, ContainerStateWaiting,
        PodSpec,
    };
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

    fn t(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + seconds).expect("valid")
    }

    fn pod(script: &str) -> Pod {
        Pod {
            metadata: ObjectMeta::default(),
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: "app".into(),
                    command: Some(vec!["sh".into(), "-c".into(), script.into()]),
                    ..Default::default()
                }],
                ..Default::default()
            }),
            status: None,
        }
    }

    fn status(
        restart_count: i32,
        state: ContainerState,
        last: Option<ContainerState>,
    ) -> PodStatus {
        PodStatus {
            container_statuses: Some(vec![ContainerStatus {
                name: "app".into(),
                restart_count,
                state: Some(state),
                last_state: last,
                ..Default::default()
            }]),
            ..Default::default()
        }
    }

    fn running(at: i64) -> ContainerState {
        ContainerState {
            running: Some(ContainerStateRunning {
                started_at: Some(Time(t(at))),
            }),
            ..Default::default()
        }
    }

    fn terminated(from: i64, to: i64) -> ContainerState {
        ContainerState {
            terminated: Some(ContainerStateTerminated {
                started_at: Some(Time(t(from))),
                finished_at: Some(Time(t(to))),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn logs_of(value: &str) -> Vec<RunLog> {
        let logs: ContainerLogs = serde_json::from_str(value).expect("json");
        logs.get("app").cloned().unwrap_or_default()
    }

    fn annotate(pod: &mut Pod, value: String) {
        pod.metadata.annotations = Some([(CONTAINER_LOGS_ANNOTATION.to_string(), value)].into());
    }

    #[test]
    fn a_run_is_recorded_empty_at_start_and_with_its_output_at_exit() {
        let mut p = pod("echo one; sleep 2; echo 'two  words'");
        let started = record(&p, &status(0, running(0), None)).expect("recorded");
        assert_eq!(
            logs_of(&started),
            [RunLog {
                restart_count: 0,
                log: String::new()
            }]
        );
        annotate(&mut p, started);
        assert_eq!(record(&p, &status(0, running(0), None)), None);
        let exited = record(&p, &status(0, terminated(0, 2), None)).expect("recorded");
        assert_eq!(
            logs_of(&exited)[0].log,
            format!("{} one\n{} two  words\n", t(0), t(2))
        );
        annotate(&mut p, exited);
        assert_eq!(
            record(&p, &status(0, terminated(0, 2), None)),
            None,
            "an exited run is never rewritten"
        );
    }

    #[test]
    fn only_the_current_and_previous_runs_are_kept() {
        let mut p = pod("echo hi; exit 1");
        let back_off = |n: i32, from: i64| {
            status(
                n,
                ContainerState {
                    waiting: Some(ContainerStateWaiting {
                        reason: Some(CRASH_LOOP_BACK_OFF.into()),
                        message: None,
                    }),
                    ..Default::default()
                },
                Some(terminated(from, from)),
            )
        };
        for (n, at) in [(0, 0), (1, 10), (2, 30)] {
            let value = record(&p, &back_off(n, at)).expect("recorded");
            annotate(&mut p, value);
        }
        let value = p.metadata.annotations.as_ref().unwrap()[CONTAINER_LOGS_ANNOTATION].clone();
        let runs = logs_of(&value);
        assert_eq!(
            runs.iter().map(|r| r.restart_count).collect::<Vec<_>>(),
            [1, 2]
        );
        assert_eq!(runs[1].log, format!("{} hi\n", t(30)));
    }

    #[test]
    fn containers_outside_the_convention_or_failing_by_annotation_record_nothing() {
        assert_eq!(
            record(&pod("echo $HOME"), &status(0, running(0), None)),
            None
        );
        let mut failing = pod("echo hi");
        failing.metadata.annotations =
            Some([(FAIL_ANNOTATION.to_string(), "true".to_string())].into());
        assert_eq!(record(&failing, &status(0, terminated(0, 0), None)), None);
    }

    #[test]
    fn output_is_bounded_keeping_the_latest_lines() {
        let line = "x".repeat(100);
        let run = Run {
            output: (0..100)
                .map(|i| (Duration::from_secs(i), format!("{line}\n")))
                .collect(),
            ..Default::default()
        };
        let log = render(&run, t(0));
        assert!(log.len() <= MAX_OUTPUT_BYTES);
        assert!(log.ends_with(&format!("{} {line}\n", t(99))));
        assert!(log.starts_with("20"), "whole lines only: {}", &log[..30]);

        let huge = Run {
            output: vec![(Duration::ZERO, "é".repeat(5000))],
            ..Default::default()
        };
        let log = render(&huge, t(0));
        assert!(log.len() <= MAX_OUTPUT_BYTES && log.ends_with('é'));
    }

    #[test]
    fn unterminated_output_keeps_the_time_of_its_first_piece() {
        let run = Run {
            output: vec![
                (Duration::ZERO, "a".into()),
                (Duration::from_secs(1), "b\n".into()),
                (Duration::from_secs(2), "c".into()),
            ],
            ..Default::default()
        };
        assert_eq!(render(&run, t(0)), format!("{} ab\n{} c", t(0), t(2)));
    }
}
