//! How a simulated pod behaves, read from its annotations and its containers' image names.
//!
//! The conventions are documented in the crate docs; the annotation names are the constants below.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Container, Pod};

use rkcm_apimachinery::duration::parse_non_negative;

use super::command::{program, Program, Run};

/// `"true"`: the pod's containers run but never become ready.
pub const NEVER_READY_ANNOTATION: &str = "rkcm.io/never-ready";
/// `"true"`: the pod's containers exit with code 1 (Failed for `restartPolicy: Never`, CrashLoopBackOff otherwise).
pub const FAIL_ANNOTATION: &str = "rkcm.io/fail";
/// A Go duration (`"5s"`): how long this pod stays in ContainerCreating, overriding the node default.
pub const READY_DELAY_ANNOTATION: &str = "rkcm.io/ready-delay";
/// A Go duration (`"2s"`): the containers exit with code 0 that long after starting
/// (Succeeded for `restartPolicy: Never` or `OnFailure`; ignored for `Always`).
pub const COMPLETE_AFTER_ANNOTATION: &str = "rkcm.io/complete-after";

/// Image-name marker with the same effect as [`NEVER_READY_ANNOTATION`], for one container.
pub const NEVER_READY_IMAGE_MARKER: &str = "never-ready";
/// Image-name marker with the same effect as [`FAIL_ANNOTATION`], for one container.
pub const FAIL_IMAGE_MARKER: &str = "fail";

/// What the pod's annotations ask of the simulation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodBehaviour {
    /// Every container runs but is never ready.
    pub never_ready: bool,
    /// Every container fails.
    pub fail: bool,
    /// Overrides the node's delay between binding and running.
    pub ready_delay: Option<Duration>,
    /// Containers exit successfully this long after starting.
    pub complete_after: Option<Duration>,
}

/// What one container does in the simulation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ContainerBehaviour {
    /// Runs but is never ready.
    pub never_ready: bool,
    /// Exits with code 1 as soon as it starts.
    pub fail: bool,
    /// Exits with code 0 this long after starting.
    pub complete_after: Option<Duration>,
    /// What its command does when it follows the container-command convention
    /// (`None`: any other command, which runs until stopped).
    pub run: Option<Run>,
}

/// Reads the pod-level conventions from the annotations. Malformed durations are ignored.
pub fn pod_behaviour(pod: &Pod) -> PodBehaviour {
    let annotation = |name: &str| {
        pod.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(name))
            .map(|v| v.trim())
    };
    let flag = |name: &str| annotation(name).is_some_and(|v| v.eq_ignore_ascii_case("true"));
    PodBehaviour {
        never_ready: flag(NEVER_READY_ANNOTATION),
        fail: flag(FAIL_ANNOTATION),
        ready_delay: annotation(READY_DELAY_ANNOTATION).and_then(|v| parse_non_negative(v).ok()),
        complete_after: annotation(COMPLETE_AFTER_ANNOTATION)
            .and_then(|v| parse_non_negative(v).ok()),
    }
}

/// Combines the pod's conventions with the container's image name.
pub fn container_behaviour(pod: &PodBehaviour, container: &Container) -> ContainerBehaviour {
    let repository = image_repository(container.image.as_deref().unwrap_or(""));
    ContainerBehaviour {
        never_ready: pod.never_ready || repository.contains(NEVER_READY_IMAGE_MARKER),
        fail: pod.fail || repository.contains(FAIL_IMAGE_MARKER),
        complete_after: pod.complete_after,
        run: match program(container) {
            Program::Runs(run) => Some(run),
            Program::UntilStopped => None,
        },
    }
}

/// The last path segment of an image reference without tag or digest:
/// `registry:5000/team/never-ready-app:1.0` → `never-ready-app`. Registry hosts and tags never trigger a convention.
fn image_repository(image: &str) -> &str {
    let without_digest = image.split('@').next().unwrap_or(image);
    let last = without_digest.rsplit('/').next().unwrap_or(without_digest);
    last.split(':').next().unwrap_or(last)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn pod(annotations: &[(&str, &str)]) -> Pod {
        Pod {
            metadata: ObjectMeta {
                annotations: Some(
                    annotations
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect(),
                ),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    fn container(image: &str) -> Container {
        Container {
            name: "c".into(),
            image: Some(image.into()),
            ..Default::default()
        }
    }

    #[test]
    fn annotations_set_pod_wide_behaviour() {
        let b = pod_behaviour(&pod(&[
            (NEVER_READY_ANNOTATION, "true"),
            (FAIL_ANNOTATION, "false"),
            (READY_DELAY_ANNOTATION, "5s"),
            (COMPLETE_AFTER_ANNOTATION, "bogus"),
        ]));
        assert_eq!(
            b,
            PodBehaviour {
                never_ready: true,
                fail: false,
                ready_delay: Some(Duration::from_secs(5)),
                complete_after: None,
            }
        );
        assert_eq!(pod_behaviour(&pod(&[])), PodBehaviour::default());
    }

    #[test]
    fn image_names_set_per_container_behaviour_but_not_registry_or_tag() {
        let none = PodBehaviour::default();
        assert!(container_behaviour(&none, &container("example/never-ready:1")).never_ready);
        assert!(container_behaviour(&none, &container("nginx-fail")).fail);
        assert!(!container_behaviour(&none, &container("failover.example.com/nginx:fail")).fail);
        assert_eq!(
            container_behaviour(&none, &container("nginx:1.27")),
            ContainerBehaviour::default()
        );
    }

    #[test]
    fn annotation_durations_are_go_durations() {
        let cases = [
            ("500ms", Some(Duration::from_millis(500))),
            ("2s", Some(Duration::from_secs(2))),
            ("1m30s", Some(Duration::from_secs(90))),
            ("1.5s", Some(Duration::from_millis(1500))),
            ("1h", Some(Duration::from_secs(3600))),
            ("10us", Some(Duration::from_micros(10))),
            (" 2s ", Some(Duration::from_secs(2))),
            ("0", Some(Duration::ZERO)),
            // Go's time.ParseDuration wants a unit on anything but zero.
            ("3", None),
            ("", None),
            ("-1s", None),
            ("5x", None),
            ("s", None),
        ];
        for (input, want) in cases {
            let b = pod_behaviour(&pod(&[
                (READY_DELAY_ANNOTATION, input),
                (COMPLETE_AFTER_ANNOTATION, input),
            ]));
            assert_eq!(b.ready_delay, want, "{input:?}");
            assert_eq!(b.complete_after, want, "{input:?}");
        }
    }
}
