//! The `syncCronJob` table of kube's `cronjob_controllerv2_test.go`
//! (`TestControllerV2SyncCronJob`), run against fake API calls and a fake clock.

use std::sync::Arc;
use std::time::Duration;

use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::batch::v1::{
    CronJob, CronJobSpec, CronJobStatus, Job, JobCondition, JobSpec, JobTemplateSpec,
};
use k8s_openapi::api::core::v1::{Container, Event, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use rkcm_runtime::events::EventRecorder;
use rkcm_runtime::informer::InformerFactory;
use rkcm_runtime::testing::offline_client;
use rkcm_runtime::FakeClock;
use tokio::sync::mpsc;

use crate::cronjob::control::fake::{api_error, FakeCronJobControl, FakeJobControl};
use crate::cronjob::jobs::{job_from_template, job_reference};
use crate::cronjob::schedule::NEXT_SCHEDULE_DELTA;
use crate::cronjob::{Config, CronJobController};

fn t(s: &str) -> Timestamp {
    s.parse().expect("a timestamp")
}
fn plus(at: Timestamp, d: Duration) -> Timestamp {
    at.checked_add(SignedDuration::try_from(d).unwrap())
        .unwrap()
}
fn top_of_the_hour() -> Timestamp {
    t("2016-05-19T10:00:00Z")
}
fn just_after_the_prior_hour() -> Timestamp {
    t("2016-05-19T09:01:00Z")
}
fn just_before_the_prior_hour() -> Timestamp {
    t("2016-05-19T08:59:00Z")
}
fn just_after_the_hour() -> Timestamp {
    t("2016-05-19T10:01:00Z")
}
fn just_before_the_hour() -> Timestamp {
    t("2016-05-19T09:59:00Z")
}
fn just_before_the_next_hour() -> Timestamp {
    t("2016-05-19T10:59:00Z")
}
fn week_after_the_hour() -> Timestamp {
    t("2016-05-26T10:00:00Z")
}
const MIN: Duration = Duration::from_secs(60);
const HOUR: Duration = Duration::from_secs(3600);
const MS100: Duration = Duration::from_millis(100);
fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

const SHORT_DEAD: i64 = 10;
const MEDIUM_DEAD: i64 = 2 * 60 * 60;
const LONG_DEAD: i64 = 1_000_000;
const ERROR_SCHEDULE: &str = "obvious error schedule";
const ON_THE_HOUR: &str = "0 * * * ?";
const EVERY_HOUR: &str = "@every 1h";
const NEW_YORK: &str = "America/New_York";

/// `cronJob()` of kube's test.
fn cron_job() -> CronJob {
    CronJob {
        metadata: ObjectMeta {
            name: Some("mycronjob".into()),
            namespace: Some("snazzycats".into()),
            uid: Some("1a2b3c".into()),
            creation_timestamp: Some(Time(just_before_the_hour())),
            ..ObjectMeta::default()
        },
        spec: Some(CronJobSpec {
            schedule: "* * * * ?".into(),
            concurrency_policy: Some("Allow".into()),
            job_template: JobTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some([("a".to_string(), "b".to_string())].into()),
                    annotations: Some([("x".to_string(), "y".to_string())].into()),
                    ..ObjectMeta::default()
                }),
                spec: Some(JobSpec {
                    parallelism: Some(1),
                    completions: Some(1),
                    template: PodTemplateSpec {
                        metadata: Some(ObjectMeta {
                            labels: Some([("foo".to_string(), "bar".to_string())].into()),
                            ..ObjectMeta::default()
                        }),
                        spec: Some(PodSpec {
                            containers: vec![Container {
                                image: Some("foo/bar".into()),
                                ..Container::default()
                            }],
                            ..PodSpec::default()
                        }),
                    },
                    ..JobSpec::default()
                }),
            },
            ..CronJobSpec::default()
        }),
        status: None,
    }
}

type ErrFn = fn() -> kube::Error;

fn already_exists() -> kube::Error {
    api_error(409, "AlreadyExists", "jobs.batch \"\" already exists")
}
fn bad_request() -> kube::Error {
    api_error(400, "BadRequest", "request is invalid")
}
fn namespace_terminating() -> kube::Error {
    let status: kube::core::Status = serde_json::from_value(serde_json::json!({
        "status": "Failure",
        "message": "namespace default is being terminated",
        "reason": "Forbidden",
        "code": 403,
        "details": {"causes": [{
            "reason": "NamespaceTerminating",
            "message": "namespace default is being terminated",
            "field": "metadata.namespace",
        }]},
    }))
    .expect("a valid Status");
    kube::Error::Api(status.into())
}

#[derive(Clone)]
struct Case {
    name: &'static str,
    // spec
    policy: &'static str,
    suspend: bool,
    schedule: &'static str,
    time_zone: Option<&'static str>,
    deadline: Option<i64>,
    // status
    ran_previously: bool,
    still_active: bool,
    // environment
    cronjob_creation_time: Option<Timestamp>,
    job_creation_time: Timestamp,
    last_schedule_time: Option<Timestamp>,
    now: Timestamp,
    job_create_error: Option<ErrFn>,
    job_get_err: Option<ErrFn>,
    // expectations
    expect_create: bool,
    expect_delete: bool,
    /// `None` where kube's harness never checks its value (it reads the active list of status
    /// updates that `syncCronJob` does not make).
    expect_active: Option<usize>,
    expected_warnings: usize,
    expect_err: bool,
    expected_requeue: Option<Duration>,
    expect_update_status: bool,
    job_still_not_found_in_lister: bool,
    job_present_in_cj_active_status: bool,
}

fn case(name: &'static str) -> Case {
    Case {
        name,
        policy: "Allow",
        suspend: false,
        schedule: ON_THE_HOUR,
        time_zone: None,
        deadline: None,
        ran_previously: false,
        still_active: false,
        cronjob_creation_time: None,
        job_creation_time: just_after_the_prior_hour(),
        last_schedule_time: None,
        now: just_before_the_hour(),
        job_create_error: None,
        job_get_err: None,
        expect_create: false,
        expect_delete: false,
        expect_active: Some(0),
        expected_warnings: 0,
        expect_err: false,
        expected_requeue: None,
        expect_update_status: false,
        job_still_not_found_in_lister: false,
        job_present_in_cj_active_status: true,
    }
}

fn with_policies(c: Case) -> Vec<Case> {
    let mut out = Vec::new();
    for policy in ["Allow", "Forbid", "Replace"] {
        out.push(Case {
            policy,
            ..c.clone()
        });
    }
    out
}

#[allow(clippy::too_many_lines)]
fn cases() -> Vec<Case> {
    let d = NEXT_SCHEDULE_DELTA;
    let hour_after_create = HOUR - MIN + d;
    let mut v = Vec::new();
    // never ran
    v.extend(with_policies(Case {
        schedule: ERROR_SCHEDULE,
        expected_warnings: 1,
        ..case("never ran, not valid schedule")
    }));
    v.push(Case {
        time_zone: Some("bad timezone"),
        expected_warnings: 1,
        ..case("never ran, not valid time zone")
    });
    v.extend(with_policies(Case {
        expected_requeue: Some(MIN + d),
        ..case("never ran, not time")
    }));
    v.push(Case {
        time_zone: Some(NEW_YORK),
        expected_requeue: Some(MIN + d),
        ..case("never ran, not time in zone")
    });
    v.extend(with_policies(Case {
        now: just_after_the_hour(),
        expect_create: true,
        expect_active: Some(1),
        expected_requeue: Some(hour_after_create),
        expect_update_status: true,
        ..case("never ran, is time")
    }));
    v.push(Case {
        time_zone: Some(NEW_YORK),
        now: just_after_the_hour(),
        expect_create: true,
        expect_active: Some(1),
        expected_requeue: Some(hour_after_create),
        expect_update_status: true,
        ..case("never ran, is time in zone")
    });
    v.push(Case {
        schedule: "TZ=UTC 0 * * * ?",
        time_zone: Some(NEW_YORK),
        now: just_after_the_hour(),
        expect_create: true,
        expect_active: Some(1),
        expected_warnings: 1,
        expected_requeue: Some(hour_after_create),
        expect_update_status: true,
        ..case("never ran, is time in zone, but TZ is also set in schedule")
    });
    v.push(Case {
        suspend: true,
        now: just_after_the_hour(),
        ..case("never ran, is time, suspended")
    });
    v.push(Case {
        deadline: Some(SHORT_DEAD),
        now: plus(just_after_the_hour(), MIN * (SHORT_DEAD as u32 + 1)),
        expected_requeue: Some(HOUR - MIN - MIN * (SHORT_DEAD as u32 + 1) + d),
        ..case("never ran, is time, past deadline")
    });
    v.push(Case {
        deadline: Some(LONG_DEAD),
        now: just_after_the_hour(),
        expect_create: true,
        expect_active: Some(1),
        expected_requeue: Some(hour_after_create),
        expect_update_status: true,
        ..case("never ran, is time, not past deadline")
    });

    // prev ran but done
    let done = Case {
        ran_previously: true,
        expect_update_status: true,
        ..case("prev ran but done")
    };
    v.extend(with_policies(Case {
        expected_requeue: Some(MIN + d),
        ..Case {
            name: "prev ran but done, not time",
            ..done.clone()
        }
    }));
    v.extend(with_policies(Case {
        now: just_after_the_hour(),
        expect_create: true,
        expect_active: Some(1),
        expected_requeue: Some(hour_after_create),
        ..Case {
            name: "prev ran but done, is time",
            ..done.clone()
        }
    }));
    v.push(Case {
        now: just_after_the_hour(),
        job_create_error: Some(already_exists),
        // The Job found under the name is this CronJob's: it is listed as active.
        expect_active: Some(1),
        ..Case {
            name: "prev ran but done, is time, create job failed, A",
            ..done.clone()
        }
    });
    v.push(Case {
        now: just_after_the_hour(),
        job_create_error: Some(already_exists),
        job_present_in_cj_active_status: false,
        expect_active: Some(1),
        ..Case {
            name: "prev ran but done, is time, job not present in CJ active status, create job failed, A",
            ..done.clone()
        }
    });
    v.push(Case {
        suspend: true,
        now: just_after_the_hour(),
        ..Case {
            name: "prev ran but done, is time, suspended",
            ..done.clone()
        }
    });
    v.push(Case {
        deadline: Some(SHORT_DEAD),
        now: just_after_the_hour(),
        expected_requeue: Some(hour_after_create),
        ..Case {
            name: "prev ran but done, is time, past deadline",
            ..done.clone()
        }
    });
    v.push(Case {
        deadline: Some(LONG_DEAD),
        now: just_after_the_hour(),
        expect_create: true,
        expect_active: Some(1),
        expected_requeue: Some(hour_after_create),
        ..Case {
            name: "prev ran but done, is time, not past deadline",
            ..done.clone()
        }
    });

    // still active
    let active = Case {
        ran_previously: true,
        still_active: true,
        expect_active: Some(1),
        ..case("still active")
    };
    v.extend(with_policies(Case {
        expected_requeue: Some(MIN + d),
        ..Case {
            name: "still active, not time",
            ..active.clone()
        }
    }));
    v.push(Case {
        now: just_after_the_hour(),
        expect_create: true,
        expect_active: Some(2),
        expected_requeue: Some(hour_after_create),
        expect_update_status: true,
        ..Case {
            name: "still active, is time, A",
            ..active.clone()
        }
    });
    v.push(Case {
        policy: "Forbid",
        now: just_after_the_hour(),
        expected_requeue: Some(hour_after_create),
        ..Case {
            name: "still active, is time, F",
            ..active.clone()
        }
    });
    v.push(Case {
        policy: "Replace",
        now: just_after_the_hour(),
        expect_create: true,
        expect_delete: true,
        expected_requeue: Some(hour_after_create),
        expect_update_status: true,
        ..Case {
            name: "still active, is time, R",
            ..active.clone()
        }
    });
    v.push(Case {
        policy: "Replace",
        now: just_after_the_hour(),
        job_get_err: Some(bad_request),
        expected_warnings: 1,
        expect_err: true,
        ..Case {
            name: "still active, is time, get job failed, R",
            ..active.clone()
        }
    });
    v.push(Case {
        suspend: true,
        now: just_after_the_hour(),
        ..Case {
            name: "still active, is time, suspended",
            ..active.clone()
        }
    });
    v.push(Case {
        deadline: Some(SHORT_DEAD),
        now: just_after_the_hour(),
        expected_requeue: Some(hour_after_create),
        ..Case {
            name: "still active, is time, past deadline",
            ..active.clone()
        }
    });
    v.push(Case {
        deadline: Some(LONG_DEAD),
        now: just_after_the_hour(),
        expect_create: true,
        expect_active: Some(2),
        expected_requeue: Some(hour_after_create),
        expect_update_status: true,
        ..Case {
            name: "still active, is time, not past deadline",
            ..active.clone()
        }
    });

    // Long overdue: too many missed start times without a deadline or with a long one warn.
    let overdue = Case {
        now: week_after_the_hour(),
        expect_create: true,
        expect_active: Some(1),
        expected_requeue: Some(HOUR + d),
        ..done.clone()
    };
    v.extend(with_policies(Case {
        deadline: Some(LONG_DEAD),
        expected_warnings: 1,
        ..Case {
            name: "prev ran but done, long overdue, not past deadline",
            ..overdue.clone()
        }
    }));
    v.extend(with_policies(Case {
        expected_warnings: 1,
        ..Case {
            name: "prev ran but done, long overdue, no deadline",
            ..overdue.clone()
        }
    }));
    v.extend(with_policies(Case {
        deadline: Some(MEDIUM_DEAD),
        ..Case {
            name: "prev ran but done, long overdue, past medium deadline",
            ..overdue.clone()
        }
    }));
    v.extend(with_policies(Case {
        deadline: Some(SHORT_DEAD),
        ..Case {
            name: "prev ran but done, long overdue, past short deadline",
            ..overdue.clone()
        }
    }));

    // Time skew: the controller sees the Job was created, takes no action.
    v.push(Case {
        policy: "Forbid",
        job_creation_time: just_after_the_hour(),
        job_create_error: Some(already_exists),
        expected_requeue: Some(MIN + d),
        job_present_in_cj_active_status: false,
        ..Case {
            name: "this ran but done, time drifted back, F",
            ..done.clone()
        }
    });

    // Slow Job lister.
    v.extend(with_policies(Case {
        deadline: Some(LONG_DEAD),
        job_creation_time: plus(top_of_the_hour(), MS100),
        now: plus(just_after_the_hour(), MS100),
        expected_requeue: Some(HOUR - MIN - MS100 + d),
        job_still_not_found_in_lister: true,
        ..Case {
            name: "this started but went missing, not past deadline",
            ..active.clone()
        }
    }));
    // Slow CronJob lister.
    v.extend(with_policies(Case {
        deadline: Some(LONG_DEAD),
        job_creation_time: plus(top_of_the_hour(), MS100),
        now: plus(just_after_the_hour(), MS100),
        expected_requeue: Some(HOUR - MIN - MS100 + d),
        job_present_in_cj_active_status: false,
        ..Case {
            name: "this started but is not present in cronjob active list, not past deadline",
            ..active.clone()
        }
    }));

    // @every schedules.
    let every = Case {
        schedule: EVERY_HOUR,
        cronjob_creation_time: Some(just_before_the_prior_hour()),
        job_creation_time: just_before_the_prior_hour(),
        ..case("@every")
    };
    v.push(Case {
        cronjob_creation_time: Some(just_before_the_hour()),
        job_creation_time: just_before_the_hour(),
        now: top_of_the_hour(),
        expected_requeue: Some(HOUR - MIN + d),
        ..Case {
            name: "with @every schedule, never ran, not time",
            ..every.clone()
        }
    });
    v.push(Case {
        now: just_before_the_hour(),
        expected_requeue: Some(HOUR + d),
        expect_create: true,
        expect_active: Some(1),
        expect_update_status: true,
        ..Case {
            name: "with @every schedule, never ran, is time",
            ..every.clone()
        }
    });
    v.push(Case {
        deadline: Some(SHORT_DEAD),
        now: plus(just_before_the_hour(), secs(SHORT_DEAD as u64 + 1)),
        expected_requeue: Some(HOUR - secs(SHORT_DEAD as u64 + 1) + d),
        ..Case {
            name: "with @every schedule, never ran, is time, past deadline",
            ..every.clone()
        }
    });
    v.push(Case {
        deadline: Some(LONG_DEAD),
        now: plus(just_before_the_hour(), secs(SHORT_DEAD as u64 - 1)),
        expect_create: true,
        expect_active: Some(1),
        expected_requeue: Some(HOUR - secs(SHORT_DEAD as u64 - 1) + d),
        expect_update_status: true,
        ..Case {
            name: "with @every schedule, never ran, is time, not past deadline",
            ..every.clone()
        }
    });
    let every_done = Case {
        ran_previously: true,
        last_schedule_time: Some(just_before_the_hour()),
        expect_update_status: true,
        ..every.clone()
    };
    v.push(Case {
        now: top_of_the_hour(),
        expected_requeue: Some(HOUR - MIN + d),
        ..Case {
            name: "with @every schedule, prev ran but done, not time",
            ..every_done.clone()
        }
    });
    v.push(Case {
        now: plus(top_of_the_hour(), HOUR),
        expect_create: true,
        expect_active: Some(1),
        expected_requeue: Some(HOUR - MIN + d),
        ..Case {
            name: "with @every schedule, prev ran but done, is time",
            ..every_done.clone()
        }
    });
    v.push(Case {
        deadline: Some(SHORT_DEAD),
        now: plus(just_before_the_next_hour(), secs(SHORT_DEAD as u64 + 1)),
        expected_requeue: Some(HOUR - secs(SHORT_DEAD as u64 + 1) + d),
        ..Case {
            name: "with @every schedule, prev ran but done, is time, past deadline",
            ..every_done.clone()
        }
    });
    let every_active = Case {
        ran_previously: true,
        still_active: true,
        job_creation_time: just_before_the_hour(),
        last_schedule_time: Some(just_before_the_hour()),
        expect_active: Some(1),
        ..every.clone()
    };
    v.push(Case {
        now: top_of_the_hour(),
        expected_requeue: Some(HOUR - MIN + d),
        ..Case {
            name: "with @every schedule, still active, not time",
            ..every_active.clone()
        }
    });
    v.push(Case {
        job_creation_time: just_before_the_prior_hour(),
        last_schedule_time: Some(just_before_the_prior_hour()),
        now: just_after_the_hour(),
        expect_create: true,
        expect_active: Some(2),
        expected_requeue: Some(HOUR - 2 * MIN + d),
        expect_update_status: true,
        ..Case {
            name: "with @every schedule, still active, is time",
            ..every_active.clone()
        }
    });
    v.push(Case {
        deadline: Some(SHORT_DEAD),
        now: plus(just_before_the_next_hour(), secs(SHORT_DEAD as u64 + 1)),
        expected_requeue: Some(HOUR - secs(SHORT_DEAD as u64 + 1) + d),
        ..Case {
            name: "with @every schedule, still active, is time, past deadline",
            ..every_active.clone()
        }
    });
    v.push(Case {
        deadline: Some(LONG_DEAD),
        now: plus(just_before_the_next_hour(), secs(SHORT_DEAD as u64 - 1)),
        expect_create: true,
        expect_active: Some(2),
        expected_requeue: Some(HOUR - secs(SHORT_DEAD as u64 - 1) + d),
        expect_update_status: true,
        ..Case {
            name: "with @every schedule, still active, is time, not past deadline",
            ..every_active.clone()
        }
    });
    let every_overdue = Case {
        cronjob_creation_time: Some(just_after_the_prior_hour()),
        last_schedule_time: Some(just_after_the_hour()),
        job_creation_time: just_after_the_prior_hour(),
        ..every_done.clone()
    };
    v.push(Case {
        now: week_after_the_hour(),
        expect_create: true,
        expect_active: Some(1),
        expected_warnings: 1,
        expected_requeue: Some(MIN + d),
        ..Case {
            name: "with @every schedule, prev ran but done, long overdue, no deadline",
            ..every_overdue.clone()
        }
    });
    v.push(Case {
        deadline: Some(SHORT_DEAD),
        now: plus(
            plus(week_after_the_hour(), MIN),
            secs(SHORT_DEAD as u64 + 1),
        ),
        expected_requeue: Some(HOUR - secs(SHORT_DEAD as u64 + 1) + d),
        // kube declares 1 but never checks it: the done Job is not active and none is created.
        expect_active: Some(0),
        ..Case {
            name: "with @every schedule, prev ran but done, long overdue, past deadline",
            ..every_overdue.clone()
        }
    });
    v.push(Case {
        job_create_error: Some(namespace_terminating),
        ran_previously: true,
        still_active: true,
        now: just_after_the_hour(),
        expect_err: true,
        job_present_in_cj_active_status: false,
        // The fresh CronJob read from the API server lists the running Job.
        expect_active: Some(1),
        ..case("do nothing if the namespace is terminating")
    });
    v
}

struct Run {
    synced: super::Synced,
    cj: CronJob,
    jobs: Arc<FakeJobControl>,
    events: Vec<Event>,
}

async fn run(tc: &Case) -> Run {
    let mut cj = cron_job();
    {
        let spec = cj.spec.as_mut().unwrap();
        spec.concurrency_policy = Some(tc.policy.into());
        spec.suspend = Some(tc.suspend);
        spec.schedule = tc.schedule.into();
        spec.time_zone = tc.time_zone.map(Into::into);
        spec.starting_deadline_seconds = tc.deadline;
    }
    let mut real = cj.clone();
    let mut listed = Vec::new();
    let mut job = None;
    if tc.ran_previously {
        cj.metadata.creation_timestamp = Some(Time(
            tc.cronjob_creation_time
                .unwrap_or_else(just_before_the_prior_hour),
        ));
        cj.status = Some(CronJobStatus {
            last_schedule_time: Some(Time(
                tc.last_schedule_time
                    .unwrap_or_else(just_after_the_prior_hour),
            )),
            ..CronJobStatus::default()
        });
        let mut j = job_from_template(&cj, tc.job_creation_time, &TimeZone::UTC);
        j.metadata.uid = Some("1234".into());
        j.metadata.namespace = cj.metadata.namespace.clone();
        if tc.still_active {
            let reference = job_reference(&j);
            if tc.job_present_in_cj_active_status {
                cj.status.as_mut().unwrap().active = Some(vec![reference.clone()]);
            }
            real.status.get_or_insert_with(Default::default).active = Some(vec![reference]);
        } else {
            let status = j.status.get_or_insert_with(Default::default);
            status.completion_time = Some(Time(plus(tc.job_creation_time, secs(10))));
            status.conditions = Some(vec![JobCondition {
                type_: "Complete".into(),
                status: "True".into(),
                ..JobCondition::default()
            }]);
        }
        if !tc.job_still_not_found_in_lister {
            listed.push(Arc::new(j.clone()));
        }
        job = Some(j);
    } else {
        cj.metadata.creation_timestamp = Some(Time(
            tc.cronjob_creation_time
                .unwrap_or_else(just_before_the_hour),
        ));
        assert!(!tc.still_active, "{}: test setup error", tc.name);
    }

    let jobs = Arc::new(FakeJobControl::default());
    *jobs.job.lock() = job;
    if let Some(err) = tc.job_create_error {
        *jobs.create_err.lock() = Some(Box::new(err));
    }
    if let Some(err) = tc.job_get_err {
        *jobs.get_err.lock() = Some(Box::new(err));
    }
    let cron_jobs = Arc::new(FakeCronJobControl::default());
    *cron_jobs.cron_job.lock() = Some(real);
    let (recorder, mut rx): (EventRecorder, mpsc::Receiver<Event>) =
        EventRecorder::channel("cronjob-controller", 100);
    let factory = InformerFactory::new(offline_client(), Duration::ZERO);
    let ctrl = CronJobController::with_controls(
        &factory,
        jobs.clone(),
        cron_jobs,
        recorder,
        Config {
            clock: Arc::new(FakeClock::new(tc.now)),
            local_zone: TimeZone::UTC,
        },
    );
    let mut copy = cj.clone();
    let synced = ctrl.sync_cron_job(&mut copy, &listed).await;
    drop(ctrl);
    let mut events = Vec::new();
    while let Ok(e) = rx.try_recv() {
        events.push(e);
    }
    Run {
        synced,
        cj: copy,
        jobs,
        events,
    }
}

/// Ported from cronjob_controllerv2_test.go `TestControllerV2SyncCronJob`.
#[tokio::test]
async fn sync_cron_job_matches_kubes_table() {
    let mut failures = Vec::new();
    let all = cases();
    assert!(all.len() >= 70, "the whole table is ported");
    for tc in &all {
        let name = format!("{} ({})", tc.name, tc.policy);
        let r = run(tc).await;
        let mut check = |ok: bool, what: String| {
            if !ok {
                failures.push(format!("{name}: {what}"));
            }
        };
        check(
            !tc.expect_err || r.synced.error.is_some(),
            "expected an error".into(),
        );
        if let Some(want) = tc.expected_requeue {
            check(
                r.synced.requeue_after == Some(want),
                format!("requeue {:?}, want {want:?}", r.synced.requeue_after),
            );
        }
        check(
            r.synced.update_status == tc.expect_update_status,
            format!("update_status {}", r.synced.update_status),
        );
        if tc.ran_previously && !tc.still_active {
            let completion = plus(tc.job_creation_time, secs(10));
            let got =
                r.cj.status
                    .as_ref()
                    .and_then(|s| s.last_successful_time.as_ref())
                    .map(|t| t.0);
            check(
                got == Some(completion),
                format!("lastSuccessfulTime {got:?}"),
            );
        }
        let created = r.jobs.created.lock().clone();
        check(
            created.len() == usize::from(tc.expect_create),
            format!("{} jobs created", created.len()),
        );
        for job in &created {
            let owner = job
                .metadata
                .owner_references
                .as_ref()
                .and_then(|o| o.first());
            check(
                owner.is_some_and(|o| {
                    o.api_version == "batch/v1"
                        && o.kind == "CronJob"
                        && o.name == "mycronjob"
                        && o.uid == "1a2b3c"
                        && o.controller == Some(true)
                }),
                format!("controller ref {owner:?}"),
            );
        }
        let deleted = r.jobs.deleted.lock().len();
        check(
            deleted == usize::from(tc.expect_delete),
            format!("{deleted} jobs deleted"),
        );
        let mut expected_events = usize::from(tc.expect_create) + usize::from(tc.expect_delete);
        if tc.name == "still active, is time, F" {
            // The only case that records an event for not scheduling.
            expected_events += 1;
        }
        expected_events += tc.expected_warnings;
        let reasons: Vec<_> = r
            .events
            .iter()
            .map(|e| e.reason.clone().unwrap_or_default())
            .collect();
        check(
            r.events.len() == expected_events,
            format!("events {reasons:?}, want {expected_events}"),
        );
        let warnings = r
            .events
            .iter()
            .filter(|e| e.type_.as_deref() == Some("Warning"))
            .count();
        check(
            warnings == tc.expected_warnings,
            format!("warnings {reasons:?}"),
        );
        if let Some(want) = tc.expect_active {
            let got =
                r.cj.status
                    .as_ref()
                    .and_then(|s| s.active.as_ref())
                    .map_or(0, Vec::len);
            check(got == want, format!("{got} active, want {want}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The events carry kube's reasons and messages.
#[tokio::test]
async fn events_have_kubes_reasons_and_messages() {
    let by_name = |n: &str| {
        cases()
            .into_iter()
            .find(|c| c.name == n)
            .unwrap_or_else(|| panic!("{n}"))
    };
    let messages = |r: &Run| {
        r.events
            .iter()
            .map(|e| {
                format!(
                    "{} {}",
                    e.reason.clone().unwrap_or_default(),
                    e.message.clone().unwrap_or_default()
                )
            })
            .collect::<Vec<_>>()
    };
    let r = run(&by_name("never ran, not valid time zone")).await;
    assert_eq!(
        messages(&r),
        ["UnknownTimeZone invalid timeZone: \"bad timezone\": unknown time zone bad timezone"]
    );
    let r = run(&by_name("never ran, not valid schedule")).await;
    assert_eq!(
        messages(&r),
        ["UnparseableSchedule unparseable schedule: \"obvious error schedule\" : expected exactly 5 fields, found 3: [obvious error schedule]"]
    );
    let r = run(&Case {
        policy: "Replace",
        ..by_name("still active, is time, R")
    })
    .await;
    let name = r.jobs.created.lock()[0].metadata.name.clone().unwrap();
    assert_eq!(name, "mycronjob-24394200");
    assert_eq!(
        messages(&r),
        [
            "SuccessfulDelete Deleted job mycronjob-24394141".to_string(),
            format!("SuccessfulCreate Created job {name}")
        ]
    );
    let r = run(&Case {
        policy: "Forbid",
        ..by_name("still active, is time, F")
    })
    .await;
    assert_eq!(
        messages(&r),
        ["JobAlreadyActive Not starting job because prior execution is running and concurrency policy is Forbid"]
    );
    let r = run(&by_name("prev ran but done, long overdue, no deadline")).await;
    assert_eq!(
        messages(&r)[0],
        "TooManyMissedTimes too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew"
    );
    let r = run(&by_name(
        "with @every schedule, never ran, is time, past deadline",
    ))
    .await;
    assert_eq!(r.events.len(), 0);
    let r = run(&by_name(
        "never ran, is time in zone, but TZ is also set in schedule",
    ))
    .await;
    assert!(messages(&r)[0].starts_with(
        "UnsupportedSchedule CRON_TZ or TZ used in schedule \"TZ=UTC 0 * * * ?\" is not officially supported"
    ));
}

/// A finished Job still in the active list leaves it (`SawCompletedJob`), and an active Job the
/// API server no longer has goes too (`MissingJob`).
#[tokio::test]
async fn finished_and_vanished_jobs_leave_the_active_list() {
    let mut cj = cron_job();
    cj.spec.as_mut().unwrap().schedule = ON_THE_HOUR.into();
    cj.metadata.creation_timestamp = Some(Time(just_before_the_prior_hour()));
    let j = job_from_template(&cj, just_after_the_prior_hour(), &TimeZone::UTC);
    let mut j = j;
    j.metadata.uid = Some("1234".into());
    cj.status = Some(CronJobStatus {
        last_schedule_time: Some(Time(just_after_the_prior_hour())),
        active: Some(vec![job_reference(&j)]),
        ..CronJobStatus::default()
    });
    let jobs = Arc::new(FakeJobControl::default());
    let cron_jobs = Arc::new(FakeCronJobControl::default());
    let (recorder, mut rx) = EventRecorder::channel("cronjob-controller", 10);
    let factory = InformerFactory::new(offline_client(), Duration::ZERO);
    let ctrl = CronJobController::with_controls(
        &factory,
        jobs,
        cron_jobs,
        recorder,
        Config {
            clock: Arc::new(FakeClock::new(just_before_the_hour())),
            local_zone: TimeZone::UTC,
        },
    );
    // Vanished: not in the lister, and the API server says NotFound.
    let mut missing = cj.clone();
    let synced = ctrl.sync_cron_job(&mut missing, &[]).await;
    assert!(synced.update_status);
    assert_eq!(synced.requeue_after, Some(MIN + NEXT_SCHEDULE_DELTA));
    assert!(missing
        .status
        .as_ref()
        .unwrap()
        .active
        .as_ref()
        .unwrap()
        .is_empty());
    let e = rx.try_recv().unwrap();
    assert_eq!(e.reason.as_deref(), Some("MissingJob"));
    assert_eq!(
        e.message.as_deref(),
        Some("Active job went missing: mycronjob-24394141")
    );

    let mut finished = j.clone();
    let status = finished.status.get_or_insert_with(Default::default);
    status.completion_time = Some(Time(just_before_the_hour()));
    status.conditions = Some(vec![JobCondition {
        type_: "Failed".into(),
        status: "True".into(),
        ..JobCondition::default()
    }]);
    let mut done = cj.clone();
    let synced = ctrl.sync_cron_job(&mut done, &[Arc::new(finished)]).await;
    assert!(synced.update_status);
    assert!(done
        .status
        .as_ref()
        .unwrap()
        .active
        .as_ref()
        .unwrap()
        .is_empty());
    // Failed: no lastSuccessfulTime.
    assert!(done.status.as_ref().unwrap().last_successful_time.is_none());
    let e = rx.try_recv().unwrap();
    assert_eq!(e.reason.as_deref(), Some("SawCompletedJob"));
    assert_eq!(
        e.message.as_deref(),
        Some("Saw completed job: mycronjob-24394141, condition: Failed")
    );
}

/// `cleanupFinishedJobs` deletes the oldest finished Jobs beyond the limits, with
/// `SuccessfulDelete` events.
#[tokio::test]
async fn cleanup_deletes_jobs_beyond_the_history_limits() {
    let mut cj = cron_job();
    cj.spec.as_mut().unwrap().successful_jobs_history_limit = Some(1);
    cj.spec.as_mut().unwrap().failed_jobs_history_limit = Some(1);
    let finished = |name: &str, kind: &str, start: i64| {
        let mut j = Job {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("snazzycats".into()),
                uid: Some(format!("uid-{name}")),
                ..ObjectMeta::default()
            },
            ..Job::default()
        };
        let status = j.status.get_or_insert_with(Default::default);
        status.start_time = Some(Time(Timestamp::from_second(start).unwrap()));
        status.conditions = Some(vec![JobCondition {
            type_: kind.into(),
            status: "True".into(),
            ..JobCondition::default()
        }]);
        Arc::new(j)
    };
    let jobs_list = vec![
        finished("s-old", "Complete", 1),
        finished("s-new", "Complete", 2),
        finished("f-old", "Failed", 1),
        finished("f-new", "Failed", 2),
    ];
    let jobs = Arc::new(FakeJobControl::default());
    let (recorder, mut rx) = EventRecorder::channel("cronjob-controller", 10);
    let factory = InformerFactory::new(offline_client(), Duration::ZERO);
    let ctrl = CronJobController::with_controls(
        &factory,
        jobs.clone(),
        Arc::new(FakeCronJobControl::default()),
        recorder,
        Config {
            clock: Arc::new(FakeClock::new(just_before_the_hour())),
            local_zone: TimeZone::UTC,
        },
    );
    assert!(ctrl.cleanup_finished_jobs(&mut cj, &jobs_list).await);
    let mut deleted = jobs.deleted.lock().clone();
    deleted.sort();
    assert_eq!(deleted, ["f-old", "s-old"]);
    let e = rx.try_recv().unwrap();
    assert_eq!(e.reason.as_deref(), Some("SuccessfulDelete"));
    assert_eq!(e.message.as_deref(), Some("Deleted job s-old"));

    // No limits: nothing to do.
    let mut unlimited = cron_job();
    assert!(!ctrl.cleanup_finished_jobs(&mut unlimited, &jobs_list).await);
}
