//! When a CronJob should run: its schedule in its time zone, the most recent unmet start time and
//! the delay until the next one (`formatSchedule`, `mostRecentScheduleTime`, `nextScheduleTime`,
//! `nextScheduleTimeDuration` of kube's `pkg/controller/cronjob`).

use std::time::Duration;

use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::batch::v1::CronJob;
use rkcm_apimachinery::cron;

/// Padding added to every requeue so that a slightly fast clock does not wake the CronJob just
/// before its start time (`nextScheduleDelta`).
pub const NEXT_SCHEDULE_DELTA: Duration = Duration::from_millis(100);

/// More missed start times than this and the controller warns (`TooManyMissedTimes`).
pub const MAX_MISSED_BEFORE_WARNING: i64 = 100;

/// A parsed schedule with the zone its fields are read in.
#[derive(Clone, Debug)]
pub struct CronSchedule {
    schedule: cron::Schedule,
    zone: TimeZone,
}

impl CronSchedule {
    /// The first start time strictly after `after`; `None` when there is none within five years.
    pub fn next(&self, after: Timestamp) -> Option<Timestamp> {
        self.schedule.next(after, &self.zone)
    }
}

/// A `spec.timeZone` the tz database does not know; the message is Go's `time.LoadLocation`'s.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown time zone {0}")]
pub struct UnknownTimeZone(pub String);

/// The zone `spec.timeZone` names (`time.LoadLocation`: empty and `UTC` are UTC).
pub fn load_location(name: &str) -> Result<TimeZone, UnknownTimeZone> {
    match name {
        "" | "UTC" => Ok(TimeZone::UTC),
        _ => TimeZone::get(name).map_err(|_| UnknownTimeZone(name.to_string())),
    }
}

/// Whether the schedule carries its own `TZ=`/`CRON_TZ=` prefix, which kube warns about
/// (`UnsupportedSchedule`) and lets win over `spec.timeZone`.
pub fn has_tz_prefix(cj: &CronJob) -> bool {
    schedule_of(cj).contains("TZ")
}

fn schedule_of(cj: &CronJob) -> &str {
    cj.spec.as_ref().map_or("", |s| s.schedule.as_str())
}

/// `spec.timeZone`, if set.
pub fn time_zone_of(cj: &CronJob) -> Option<&str> {
    cj.spec.as_ref().and_then(|s| s.time_zone.as_deref())
}

/// Parses the CronJob's schedule as `formatSchedule` + `cron.ParseStandard` do: a `TZ=` prefix in
/// the schedule wins, then a loadable `spec.timeZone`, then `local` (the controller's zone).
pub fn parse(cj: &CronJob, local: &TimeZone) -> Result<CronSchedule, cron::ParseError> {
    let schedule = cron::parse_standard(schedule_of(cj))?;
    let zone = if has_tz_prefix(cj) {
        // The prefix's zone is inside `schedule`; `local` is only a fallback it overrides.
        local.clone()
    } else {
        match time_zone_of(cj).map(load_location) {
            Some(Ok(zone)) => zone,
            _ => local.clone(),
        }
    };
    Ok(CronSchedule { schedule, zone })
}

/// How many start times were missed since the earliest time considered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Missed {
    /// None.
    None,
    /// Some, at most [`MAX_MISSED_BEFORE_WARNING`].
    Few,
    /// More than [`MAX_MISSED_BEFORE_WARNING`].
    Many,
}

/// What [`most_recent_schedule_time`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MostRecent {
    /// The last schedule time, else the creation time (moved up to the starting deadline when
    /// that is included).
    pub earliest: Timestamp,
    /// The most recent start time not after `now`, if one is due.
    pub most_recent: Option<Timestamp>,
    /// How many start times were missed.
    pub missed: Missed,
}

/// A schedule that parses but never yields two distinct start times (`59 23 31 2 *`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("time difference between two schedules is less than 1 second")]
pub struct InvalidSchedule;

/// `t` moved by `seconds`, clamped to the representable range.
pub(crate) fn shift(t: Timestamp, seconds: i64) -> Timestamp {
    t.checked_add(SignedDuration::from_secs(seconds))
        .unwrap_or(if seconds > 0 {
            Timestamp::MAX
        } else {
            Timestamp::MIN
        })
}

fn creation_of(cj: &CronJob) -> Timestamp {
    cj.metadata
        .creation_timestamp
        .as_ref()
        .map_or(Timestamp::UNIX_EPOCH, |t| t.0)
}

fn last_schedule_of(cj: &CronJob) -> Option<Timestamp> {
    cj.status
        .as_ref()
        .and_then(|s| s.last_schedule_time.as_ref())
        .map(|t| t.0)
}

fn starting_deadline_of(cj: &CronJob) -> Option<i64> {
    cj.spec.as_ref().and_then(|s| s.starting_deadline_seconds)
}

/// `mostRecentScheduleTime`: the most recent start time due at `now` since the last schedule
/// time (or creation), estimating the number of missed start times from the gap between two
/// consecutive ones, as kube does, so that a long outage costs a few steps, not thousands.
pub fn most_recent_schedule_time(
    cj: &CronJob,
    now: Timestamp,
    schedule: &CronSchedule,
    include_starting_deadline: bool,
) -> Result<MostRecent, InvalidSchedule> {
    let mut earliest = last_schedule_of(cj).unwrap_or_else(|| creation_of(cj));
    if include_starting_deadline {
        if let Some(seconds) = starting_deadline_of(cj) {
            let deadline = shift(now, seconds.saturating_neg());
            if deadline > earliest {
                earliest = deadline;
            }
        }
    }
    let none = |missed| MostRecent {
        earliest,
        most_recent: None,
        missed,
    };
    let Some(t1) = schedule.next(earliest) else {
        return Err(InvalidSchedule);
    };
    if now < t1 {
        return Ok(none(Missed::None));
    }
    let Some(t2) = schedule.next(t1) else {
        return Err(InvalidSchedule);
    };
    if now < t2 {
        return Ok(MostRecent {
            earliest,
            most_recent: Some(t1),
            missed: Missed::None,
        });
    }
    // Go's Duration.Round(time.Second): half away from zero.
    let between_nanos = t2.duration_since(t1).as_nanos();
    let between = (between_nanos + 500_000_000).div_euclid(1_000_000_000);
    if between < 1 {
        return Err(InvalidSchedule);
    }
    let between = i64::try_from(between).unwrap_or(i64::MAX);
    // Truncated toward zero, as Go's int64(d.Seconds()).
    let elapsed = now.duration_since(t1).as_secs();
    let missed_count = elapsed / between + 1;
    // Start one interval before the estimate so that irregular schedules (`30 6-16/4 * * 1-5`)
    // still land on their most recent real start time.
    let back = (missed_count - 2).saturating_mul(between);
    let potential_earliest = shift(t1, back);
    let mut most_recent = None;
    let mut t = schedule.next(potential_earliest);
    while let Some(at) = t.filter(|at| *at <= now) {
        most_recent = Some(at);
        t = schedule.next(at);
    }
    let missed = if missed_count > MAX_MISSED_BEFORE_WARNING {
        Missed::Many
    } else if missed_count > 0 {
        Missed::Few
    } else {
        Missed::None
    };
    Ok(MostRecent {
        earliest,
        most_recent,
        missed,
    })
}

/// What [`next_schedule_time`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unmet {
    /// The start time to act on now, if any.
    pub scheduled: Option<Timestamp>,
    /// Whether more than [`MAX_MISSED_BEFORE_WARNING`] start times were missed (a
    /// `TooManyMissedTimes` warning is due).
    pub too_many_missed: bool,
}

/// `nextScheduleTime`: the most recent unmet start time within the starting deadline.
pub fn next_schedule_time(
    cj: &CronJob,
    now: Timestamp,
    schedule: &CronSchedule,
) -> Result<Unmet, InvalidSchedule> {
    let found = most_recent_schedule_time(cj, now, schedule, true)?;
    match found.most_recent.filter(|t| *t <= now) {
        None => Ok(Unmet {
            scheduled: None,
            too_many_missed: false,
        }),
        Some(t) => Ok(Unmet {
            scheduled: Some(t),
            too_many_missed: found.missed == Missed::Many,
        }),
    }
}

/// `nextScheduleTimeDuration`: how long until the CronJob's next start time, plus
/// [`NEXT_SCHEDULE_DELTA`]; `None` if the schedule has no next start time at all.
pub fn next_schedule_time_duration(
    cj: &CronJob,
    now: Timestamp,
    schedule: &CronSchedule,
) -> Option<Duration> {
    let from = match most_recent_schedule_time(cj, now, schedule, false) {
        // Aim for the next start time after now.
        Err(InvalidSchedule) => now,
        Ok(MostRecent {
            most_recent: Some(t),
            ..
        }) => t,
        Ok(MostRecent {
            earliest,
            missed: Missed::None,
            ..
        }) => earliest,
        Ok(_) => now,
    };
    let next = schedule.next(from)?;
    let delta = SignedDuration::try_from(NEXT_SCHEDULE_DELTA).unwrap_or(SignedDuration::ZERO);
    let wait = next.duration_since(now).saturating_add(delta);
    Some(Duration::try_from(wait).unwrap_or(Duration::ZERO))
}

/// `getTimeHashInMinutes`: the scheduled time in minutes since the epoch.
pub fn time_hash_in_minutes(scheduled: Timestamp) -> i64 {
    scheduled.as_second().div_euclid(60)
}

/// `getJobName`: `<cronjob>-<scheduled time in minutes since the epoch>`, the same for every
/// attempt at one start time, so a Job is never created twice for it.
pub fn job_name(cronjob_name: &str, scheduled: Timestamp) -> String {
    format!("{cronjob_name}-{}", time_hash_in_minutes(scheduled))
}

/// Go's `time.RFC3339` rendering of `t` in `zone` (`Z` for a zero offset).
pub fn rfc3339_in(t: Timestamp, zone: &TimeZone) -> String {
    let zoned = t.to_zoned(zone.clone());
    if zoned.offset().seconds() == 0 {
        zoned.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
    } else {
        zoned.strftime("%Y-%m-%dT%H:%M:%S%:z").to_string()
    }
}

/// Go's `time.RFC1123Z` rendering of `t` in UTC, as the `MissSchedule` event prints it.
pub fn rfc1123z(t: Timestamp) -> String {
    t.to_zoned(TimeZone::UTC)
        .strftime("%a, %d %b %Y %H:%M:%S +0000")
        .to_string()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use k8s_openapi::api::batch::v1::{CronJobSpec, CronJobStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    /// `topOfTheHour` of kube's tests: 2016-05-19T10:00:00Z, a Thursday.
    pub(crate) fn top_of_the_hour() -> Timestamp {
        "2016-05-19T10:00:00Z".parse().expect("a timestamp")
    }

    /// `deltaTimeAfterTopOfTheHour`.
    pub(crate) fn after_top(d: Duration) -> Timestamp {
        top_of_the_hour()
            .checked_add(SignedDuration::try_from(d).expect("small"))
            .expect("in range")
    }

    pub(crate) fn mins(m: u64) -> Duration {
        Duration::from_secs(m * 60)
    }

    pub(crate) fn hours(h: u64) -> Duration {
        Duration::from_secs(h * 3600)
    }

    fn cj(
        schedule: &str,
        created: Timestamp,
        last: Option<Timestamp>,
        deadline: Option<i64>,
    ) -> CronJob {
        CronJob {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                creation_timestamp: Some(Time(created)),
                ..Default::default()
            },
            spec: Some(CronJobSpec {
                schedule: schedule.into(),
                starting_deadline_seconds: deadline,
                ..Default::default()
            }),
            status: Some(CronJobStatus {
                last_schedule_time: last.map(Time),
                ..Default::default()
            }),
        }
    }

    fn sched(cj: &CronJob) -> CronSchedule {
        parse(cj, &TimeZone::UTC).expect("a valid schedule")
    }

    /// Ported from utils_test.go `TestMostRecentScheduleTime`.
    #[test]
    fn most_recent_schedule_time_matches_kubes_cases() {
        struct Case {
            name: &'static str,
            cj: CronJob,
            include_sds: bool,
            now: Timestamp,
            earliest: Timestamp,
            recent: Option<Timestamp>,
            missed: Missed,
        }
        let top = top_of_the_hour();
        let half_past = after_top(mins(30));
        let minute_after = after_top(mins(1));
        let cases = vec![
            Case {
                name: "now before next schedule",
                cj: cj("0 * * * *", top, None, None),
                include_sds: false,
                now: after_top(Duration::from_secs(30)),
                earliest: top,
                recent: None,
                missed: Missed::None,
            },
            Case {
                name: "now just after next schedule",
                cj: cj("0 * * * *", top, None, None),
                include_sds: false,
                now: after_top(mins(61)),
                earliest: top,
                recent: Some(after_top(mins(60))),
                missed: Missed::None,
            },
            Case {
                name: "missed 5 schedules",
                cj: cj("0 * * * *", after_top(Duration::from_secs(10)), None, None),
                include_sds: false,
                now: after_top(mins(301)),
                earliest: after_top(Duration::from_secs(10)),
                recent: Some(after_top(mins(300))),
                missed: Missed::Few,
            },
            Case {
                name: "complex schedule",
                cj: cj("30 6-16/4 * * 1-5", top, Some(half_past), None),
                include_sds: false,
                now: after_top(hours(24) + mins(31)),
                earliest: half_past,
                recent: Some(after_top(hours(24) + mins(30))),
                missed: Missed::Few,
            },
            Case {
                name: "another complex schedule",
                cj: cj("30 10,11,12 * * 1-5", top, Some(half_past), None),
                include_sds: false,
                now: after_top(hours(30) + mins(30)),
                earliest: half_past,
                recent: None,
                missed: Missed::Few,
            },
            Case {
                name: "complex schedule with longer diff between executions",
                cj: cj("30 6-16/4 * * 1-5", top, Some(half_past), None),
                include_sds: false,
                now: after_top(hours(96) + mins(31)),
                earliest: half_past,
                recent: Some(after_top(hours(96) + mins(30))),
                missed: Missed::Few,
            },
            Case {
                name: "complex schedule with shorter diff between executions",
                cj: cj("30 6-16/4 * * 1-5", top, None, None),
                include_sds: false,
                now: after_top(hours(24) + mins(31)),
                earliest: top,
                recent: Some(after_top(hours(24) + mins(30))),
                missed: Missed::Few,
            },
            Case {
                name: "@every schedule",
                cj: cj(
                    "@every 1h",
                    top.checked_sub(SignedDuration::from_mins(59)).unwrap(),
                    Some(minute_after),
                    Some(10),
                ),
                include_sds: false,
                now: after_top(hours(7 * 24)),
                earliest: minute_after,
                recent: Some(after_top(hours(6 * 24 + 23) + mins(1))),
                missed: Missed::Many,
            },
            Case {
                name: "earliestTime being CreationTimestamp and LastScheduleTime",
                cj: cj("0 * * * *", top, Some(top), None),
                include_sds: false,
                now: after_top(Duration::from_secs(30)),
                earliest: top,
                recent: None,
                missed: Missed::None,
            },
            Case {
                name: "earliestTime being LastScheduleTime",
                cj: cj("*/5 * * * *", top, Some(half_past), None),
                include_sds: false,
                now: after_top(mins(31)),
                earliest: half_past,
                recent: None,
                missed: Missed::None,
            },
            Case {
                name: "earliestTime being LastScheduleTime (within StartingDeadlineSeconds)",
                cj: cj("*/5 * * * *", top, Some(half_past), Some(60)),
                include_sds: false,
                now: after_top(mins(31)),
                earliest: half_past,
                recent: None,
                missed: Missed::None,
            },
            Case {
                name: "earliestTime being LastScheduleTime (outside StartingDeadlineSeconds)",
                cj: cj("*/5 * * * *", top, Some(half_past), Some(60)),
                include_sds: true,
                now: after_top(mins(32)),
                earliest: after_top(mins(31)),
                recent: None,
                missed: Missed::None,
            },
        ];
        for c in cases {
            let got = most_recent_schedule_time(&c.cj, c.now, &sched(&c.cj), c.include_sds)
                .unwrap_or_else(|e| panic!("{}: {e}", c.name));
            assert_eq!(got.earliest, c.earliest, "{}", c.name);
            assert_eq!(got.most_recent, c.recent, "{}", c.name);
            assert_eq!(got.missed, c.missed, "{}", c.name);
        }
    }

    #[test]
    fn a_rogue_schedule_is_an_error() {
        let c = cj(
            "59 23 31 2 *",
            after_top(Duration::from_secs(10)),
            None,
            None,
        );
        let err = most_recent_schedule_time(&c, after_top(hours(1)), &sched(&c), false);
        assert_eq!(err, Err(InvalidSchedule));
        assert_eq!(
            InvalidSchedule.to_string(),
            "time difference between two schedules is less than 1 second"
        );
    }

    /// Ported from utils_test.go `TestNextScheduleTimeDuration`.
    #[test]
    fn next_schedule_time_duration_matches_kubes_cases() {
        let top = top_of_the_hour();
        let cases = [
            (
                "complex schedule skipping weekend",
                cj("30 6-16/4 * * 1-5", top, Some(after_top(mins(30))), None),
                after_top(hours(24) + mins(31)),
                hours(3) + mins(59),
            ),
            (
                "another complex schedule skipping weekend",
                cj("30 10,11,12 * * 1-5", top, Some(after_top(mins(30))), None),
                after_top(hours(30) + mins(30)),
                hours(66),
            ),
            (
                "once a week cronjob, missed two runs",
                cj("0 12 * * 4", top, Some(after_top(hours(2))), None),
                after_top(hours(19 * 24 + 1) + mins(30)),
                hours(48) + mins(30),
            ),
            (
                "no previous run of a cronjob",
                cj("0 12 * * 5", top, None, None),
                after_top(hours(6)),
                hours(20),
            ),
        ];
        for (name, c, now, want) in cases {
            assert_eq!(
                next_schedule_time_duration(&c, now, &sched(&c)),
                Some(want + NEXT_SCHEDULE_DELTA),
                "{name}"
            );
        }
    }

    /// Ported from utils_test.go `TestNextScheduleTime`.
    #[test]
    fn next_schedule_time_matches_kubes_cases() {
        let t1 = top_of_the_hour();
        let t2 = after_top(hours(1));
        let before = |d: Duration| {
            t1.checked_sub(SignedDuration::try_from(d).unwrap())
                .unwrap()
        };
        let at = |c: &CronJob, now| next_schedule_time(c, now, &sched(c));
        // 1: no known start times, and none needed yet.
        let c = cj("0 * * * ?", before(mins(10)), None, None);
        assert_eq!(at(&c, before(mins(7))).unwrap().scheduled, None);
        // 2: no known start times, and one needed.
        let now = t1.checked_add(SignedDuration::from_secs(2)).unwrap();
        assert_eq!(at(&c, now).unwrap().scheduled, Some(t1));
        // 3: known last schedule time, no start needed.
        let c = cj("0 * * * ?", before(mins(10)), Some(t1), None);
        assert_eq!(at(&c, after_top(mins(2))).unwrap().scheduled, None);
        // 4: known last schedule time, a start needed.
        let now = t2.checked_add(SignedDuration::from_mins(5)).unwrap();
        assert_eq!(at(&c, now).unwrap().scheduled, Some(t2));
        // 5: known last schedule time, two starts needed: the latest one.
        let c = cj("0 * * * ?", before(hours(2)), Some(before(hours(1))), None);
        assert_eq!(at(&c, now).unwrap().scheduled, Some(t2));
        // 6: way ahead of the last start time, no deadline.
        let far = t2.checked_add(SignedDuration::from_hours(240)).unwrap();
        let got = at(&c, far).unwrap();
        assert!(got.scheduled.is_some());
        assert!(got.too_many_missed);
        // 7: way ahead, but a short deadline.
        let c = cj(
            "0 * * * ?",
            before(hours(2)),
            Some(before(hours(1))),
            Some(2 * 60 * 60),
        );
        let got = at(&c, far).unwrap();
        assert!(got.scheduled.is_some());
        assert!(!got.too_many_missed);
        // 8: the error of a rogue schedule comes up.
        let c = cj(
            "59 23 31 2 *",
            t1.checked_add(SignedDuration::from_secs(10)).unwrap(),
            None,
            None,
        );
        assert_eq!(at(&c, t2), Err(InvalidSchedule));
    }

    #[test]
    fn job_names_use_minutes_since_the_epoch() {
        assert_eq!(
            job_name("mycronjob", top_of_the_hour()),
            "mycronjob-24394200"
        );
        let mid = top_of_the_hour()
            .checked_add(SignedDuration::from_secs(59))
            .unwrap();
        assert_eq!(job_name("mycronjob", mid), "mycronjob-24394200");
    }

    #[test]
    fn time_zones_load_as_go_does_and_shape_the_schedule() {
        assert_eq!(load_location("").unwrap(), TimeZone::UTC);
        assert_eq!(
            load_location("bad timezone").unwrap_err().to_string(),
            "unknown time zone bad timezone"
        );
        let mut c = cj("0 10 * * *", top_of_the_hour(), None, None);
        c.spec.as_mut().unwrap().time_zone = Some("America/New_York".into());
        // 10:00 in New York on 2016-05-19 (EDT) is 14:00 UTC.
        let s = parse(&c, &TimeZone::UTC).unwrap();
        assert_eq!(s.next(top_of_the_hour()), Some(after_top(hours(4))));
        // A TZ= prefix wins over spec.timeZone.
        c.spec.as_mut().unwrap().schedule = "TZ=UTC 0 10 * * *".into();
        assert!(has_tz_prefix(&c));
        let s = parse(&c, &TimeZone::UTC).unwrap();
        assert_eq!(s.next(top_of_the_hour()), Some(after_top(hours(24))));
    }

    #[test]
    fn timestamps_render_as_go_does() {
        let t = top_of_the_hour();
        assert_eq!(rfc3339_in(t, &TimeZone::UTC), "2016-05-19T10:00:00Z");
        let rome = load_location("Europe/Rome").unwrap();
        assert_eq!(rfc3339_in(t, &rome), "2016-05-19T12:00:00+02:00");
        assert_eq!(rfc1123z(t), "Thu, 19 May 2016 10:00:00 +0000");
    }
}
