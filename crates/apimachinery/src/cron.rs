//! CronJob schedules: the standard 5-field cron syntax and `@` descriptors, parsed and stepped as
//! `github.com/robfig/cron/v3`'s `ParseStandard` does (the parser kube-apiserver validates
//! `spec.schedule` with and the CronJob controller computes run times with).
//!
//! Error messages are robfig's, since kube returns them verbatim in its 422s
//! (`spec.schedule: Invalid value: "* * *": expected exactly 5 fields, found 3: [* * *]`).

use std::fmt;
use std::time::Duration;

use jiff::civil::DateTime;
use jiff::tz::TimeZone;
use jiff::{Timestamp, ToSpan};

/// Set in a field's bits when the field was `*` or `?` (robfig's `starBit`): it changes how the
/// day-of-month and day-of-week fields combine.
const STAR_BIT: u64 = 1 << 63;

/// The range and names of one field.
struct Bounds {
    min: u32,
    max: u32,
    names: &'static [(&'static str, u32)],
}

const MINUTES: Bounds = Bounds {
    min: 0,
    max: 59,
    names: &[],
};
const HOURS: Bounds = Bounds {
    min: 0,
    max: 23,
    names: &[],
};
const DOM: Bounds = Bounds {
    min: 1,
    max: 31,
    names: &[],
};
const MONTHS: Bounds = Bounds {
    min: 1,
    max: 12,
    names: &[
        ("jan", 1),
        ("feb", 2),
        ("mar", 3),
        ("apr", 4),
        ("may", 5),
        ("jun", 6),
        ("jul", 7),
        ("aug", 8),
        ("sep", 9),
        ("oct", 10),
        ("nov", 11),
        ("dec", 12),
    ],
};
const DOW: Bounds = Bounds {
    min: 0,
    max: 6,
    names: &[
        ("sun", 0),
        ("mon", 1),
        ("tue", 2),
        ("wed", 3),
        ("thu", 4),
        ("fri", 5),
        ("sat", 6),
    ],
};

/// A schedule that could not be parsed; the message is robfig/cron's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError(String);

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ParseError {}

fn err<T>(msg: String) -> Result<T, ParseError> {
    Err(ParseError(msg))
}

/// A parsed schedule (robfig's `SpecSchedule` or `ConstantDelaySchedule`).
#[derive(Clone, Debug, PartialEq)]
pub enum Schedule {
    /// Fields as bit sets, one bit per allowed value.
    Spec(SpecSchedule),
    /// `@every <duration>`: runs at a constant delay, whole seconds, at least one.
    Every(Duration),
}

/// The bit sets of a cron expression, and the time zone named by a `TZ=`/`CRON_TZ=` prefix.
#[derive(Clone, Debug, PartialEq)]
pub struct SpecSchedule {
    second: u64,
    minute: u64,
    hour: u64,
    dom: u64,
    month: u64,
    dow: u64,
    /// The zone of a `TZ=` prefix; `None` means the zone the caller passes to [`Schedule::next`].
    zone: Option<TimeZone>,
}

/// `cron.ParseStandard`: five fields (minute, hour, day of month, month, day of week) or a
/// descriptor (`@yearly`, `@annually`, `@monthly`, `@weekly`, `@daily`, `@midnight`,
/// `@hourly`, `@every <duration>`), optionally after `TZ=<zone> ` or `CRON_TZ=<zone> `.
pub fn parse_standard(spec: &str) -> Result<Schedule, ParseError> {
    if spec.is_empty() {
        return err("empty spec string".to_string());
    }
    let mut spec = spec;
    let mut zone = None;
    if spec.starts_with("TZ=") || spec.starts_with("CRON_TZ=") {
        let eq = spec.find('=').unwrap_or(0);
        // robfig slices up to the first space; with none it cannot name a schedule at all.
        let Some(space) = spec.find(' ') else {
            return err(format!(
                "provided bad location {}: missing schedule after time zone",
                &spec[eq + 1..]
            ));
        };
        let name = &spec[eq + 1..space];
        match TimeZone::get(name) {
            Ok(tz) => zone = Some(tz),
            Err(_) => {
                return err(format!(
                    "provided bad location {name}: unknown time zone {name}"
                ))
            }
        }
        spec = spec[space..].trim();
    }
    if spec.starts_with('@') {
        return parse_descriptor(spec, zone);
    }
    let fields: Vec<&str> = spec.split_whitespace().collect();
    if fields.len() != 5 {
        return err(format!(
            "expected exactly 5 fields, found {}: [{}]",
            fields.len(),
            fields.join(" ")
        ));
    }
    Ok(Schedule::Spec(SpecSchedule {
        // ParseStandard has no seconds field: it runs at second 0.
        second: 1,
        minute: get_field(fields[0], &MINUTES)?,
        hour: get_field(fields[1], &HOURS)?,
        dom: get_field(fields[2], &DOM)?,
        month: get_field(fields[3], &MONTHS)?,
        dow: get_field(fields[4], &DOW)?,
        zone,
    }))
}

fn all(b: &Bounds) -> u64 {
    get_bits(b.min, b.max, 1) | STAR_BIT
}

fn parse_descriptor(descriptor: &str, zone: Option<TimeZone>) -> Result<Schedule, ParseError> {
    let at = |minute_all: bool, hour_all: bool, dom: u64, month: u64, dow: u64| {
        Schedule::Spec(SpecSchedule {
            second: 1,
            minute: if minute_all { all(&MINUTES) } else { 1 },
            hour: if hour_all { all(&HOURS) } else { 1 },
            dom,
            month,
            dow,
            zone: zone.clone(),
        })
    };
    let schedule = match descriptor {
        "@yearly" | "@annually" => at(false, false, 1 << DOM.min, 1 << MONTHS.min, all(&DOW)),
        "@monthly" => at(false, false, 1 << DOM.min, all(&MONTHS), all(&DOW)),
        "@weekly" => at(false, false, all(&DOM), all(&MONTHS), 1 << DOW.min),
        "@daily" | "@midnight" => at(false, false, all(&DOM), all(&MONTHS), all(&DOW)),
        "@hourly" => at(false, true, all(&DOM), all(&MONTHS), all(&DOW)),
        _ => match descriptor.strip_prefix("@every ") {
            Some(d) => match parse_go_duration(d) {
                Ok(nanos) => {
                    // `cron.Every`: at least a second, rounded down to whole seconds.
                    let secs = (nanos / 1_000_000_000).max(1);
                    Schedule::Every(Duration::from_secs(secs as u64))
                }
                Err(e) => return err(format!("failed to parse duration {descriptor}: {e}")),
            },
            None => return err(format!("unrecognized descriptor: {descriptor}")),
        },
    };
    Ok(schedule)
}

fn get_field(field: &str, bounds: &Bounds) -> Result<u64, ParseError> {
    let mut bits = 0;
    for expr in field.split(',').filter(|e| !e.is_empty()) {
        bits |= get_range(expr, bounds)?;
    }
    Ok(bits)
}

fn get_range(expr: &str, b: &Bounds) -> Result<u64, ParseError> {
    let range_and_step: Vec<&str> = expr.split('/').collect();
    let low_and_high: Vec<&str> = range_and_step[0].split('-').collect();
    let single = low_and_high.len() == 1;
    let (start, mut end, mut extra);
    if low_and_high[0] == "*" || low_and_high[0] == "?" {
        (start, end, extra) = (b.min, b.max, STAR_BIT);
    } else {
        start = parse_int_or_name(low_and_high[0], b)?;
        end = match low_and_high.len() {
            1 => start,
            2 => parse_int_or_name(low_and_high[1], b)?,
            _ => return err(format!("too many hyphens: {expr}")),
        };
        extra = 0;
    }
    let step = match range_and_step.len() {
        1 => 1,
        2 => {
            let step = must_parse_int(range_and_step[1])?;
            // "N/step" means "N-max/step".
            if single {
                end = b.max;
            }
            if step > 1 {
                extra = 0;
            }
            step
        }
        _ => return err(format!("too many slashes: {expr}")),
    };
    if start < b.min {
        return err(format!(
            "beginning of range ({start}) below minimum ({}): {expr}",
            b.min
        ));
    }
    if end > b.max {
        return err(format!(
            "end of range ({end}) above maximum ({}): {expr}",
            b.max
        ));
    }
    if start > end {
        return err(format!(
            "beginning of range ({start}) beyond end of range ({end}): {expr}"
        ));
    }
    if step == 0 {
        return err(format!("step of range should be a positive number: {expr}"));
    }
    Ok(get_bits(start, end, step) | extra)
}

fn parse_int_or_name(expr: &str, b: &Bounds) -> Result<u32, ParseError> {
    let lower = expr.to_ascii_lowercase();
    if let Some((_, n)) = b.names.iter().find(|(name, _)| *name == lower) {
        return Ok(*n);
    }
    must_parse_int(expr)
}

/// `strconv.Atoi` and robfig's non-negative check, with their messages. Values too large for a
/// field are reported by the range checks, so they saturate here.
fn must_parse_int(expr: &str) -> Result<u32, ParseError> {
    let digits = expr.strip_prefix(['+', '-']).unwrap_or(expr);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return err(format!(
            "failed to parse int from {expr}: strconv.Atoi: parsing {expr:?}: invalid syntax"
        ));
    }
    let Ok(num) = expr.parse::<i64>() else {
        return err(format!(
            "failed to parse int from {expr}: strconv.Atoi: parsing {expr:?}: value out of range"
        ));
    };
    if num < 0 {
        return err(format!("negative number ({num}) not allowed: {expr}"));
    }
    Ok(u32::try_from(num).unwrap_or(u32::MAX))
}

fn get_bits(min: u32, max: u32, step: u32) -> u64 {
    if step == 1 {
        // All bits from min to max inclusive.
        return !(u64::MAX << (max + 1)) & (u64::MAX << min);
    }
    (min..=max)
        .step_by(step as usize)
        .fold(0, |bits, i| bits | 1 << i)
}

/// `time.ParseDuration`: a signed sequence of decimal numbers with units (`300ms`, `1.5h`,
/// `2h45m`); the result in nanoseconds, or Go's error message.
fn parse_go_duration(s: &str) -> Result<i128, String> {
    let quoted = format!("{s:?}");
    let invalid = || format!("time: invalid duration {quoted}");
    let mut rest = s;
    let negative = rest.starts_with('-');
    rest = rest.strip_prefix(['-', '+']).unwrap_or(rest);
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut total: i128 = 0;
    while !rest.is_empty() {
        let int_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let int_part = &rest[..int_len];
        rest = &rest[int_len..];
        let mut frac_part = "";
        if let Some(after_dot) = rest.strip_prefix('.') {
            let frac_len = after_dot.bytes().take_while(u8::is_ascii_digit).count();
            frac_part = &after_dot[..frac_len];
            rest = &after_dot[frac_len..];
        }
        if int_part.is_empty() && frac_part.is_empty() {
            return Err(invalid());
        }
        let unit_len = rest
            .char_indices()
            .find(|(_, c)| *c == '.' || c.is_ascii_digit())
            .map_or(rest.len(), |(i, _)| i);
        let unit = &rest[..unit_len];
        rest = &rest[unit_len..];
        let scale: i128 = match unit {
            "" => return Err(format!("time: missing unit in duration {quoted}")),
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            other => return Err(format!("time: unknown unit {other:?} in duration {quoted}")),
        };
        let whole: i128 = if int_part.is_empty() {
            0
        } else {
            int_part.parse().map_err(|_| invalid())?
        };
        let mut value = whole * scale;
        let mut denom: i128 = 1;
        for d in frac_part.bytes().take(30) {
            denom *= 10;
            value += i128::from(d - b'0') * scale / denom;
        }
        total += value;
        if total > i128::from(i64::MAX) {
            return Err(invalid());
        }
    }
    Ok(if negative { -total } else { total })
}

impl Schedule {
    /// The first activation time strictly after `after` (`Schedule.Next`), evaluated in
    /// `zone` unless the schedule named its own; `None` when none exists within five years
    /// (robfig's limit, e.g. `0 0 30 2 *`).
    ///
    /// Fields are matched on the wall clock of the zone. Around a DST change this can differ
    /// from robfig, which steps hours in absolute time: a wall time skipped by the change runs
    /// shifted forward by the length of the gap here (02:30 becomes 03:30).
    pub fn next(&self, after: Timestamp, zone: &TimeZone) -> Option<Timestamp> {
        match self {
            Schedule::Every(delay) => {
                // ConstantDelaySchedule: the delay from the start of the current second.
                let whole = Timestamp::from_second(after.as_second()).ok()?;
                whole
                    .checked_add(jiff::SignedDuration::try_from(*delay).ok()?)
                    .ok()
            }
            Schedule::Spec(spec) => spec.next(after, spec.zone.as_ref().unwrap_or(zone)),
        }
    }
}

fn has(bits: u64, value: i64) -> bool {
    (0..64).contains(&value) && bits & (1 << value) != 0
}

impl SpecSchedule {
    fn day_matches(&self, t: DateTime) -> bool {
        let dom = has(self.dom, i64::from(t.day()));
        let dow = has(self.dow, i64::from(t.weekday().to_sunday_zero_offset()));
        if self.dom & STAR_BIT != 0 || self.dow & STAR_BIT != 0 {
            dom && dow
        } else {
            dom || dow
        }
    }

    fn next(&self, after: Timestamp, zone: &TimeZone) -> Option<Timestamp> {
        // Start at the next whole second, in the schedule's zone.
        let start = Timestamp::from_second(after.as_second().checked_add(1)?).ok()?;
        let mut t = start.to_zoned(zone.clone()).datetime();
        let year_limit = t.year() + 5;
        'wrap: loop {
            if t.year() > year_limit {
                return None;
            }
            while !has(self.month, i64::from(t.month())) {
                t = t
                    .first_of_month()
                    .checked_add(1.month())
                    .ok()?
                    .start_of_day();
                if t.year() > year_limit {
                    return None;
                }
            }
            let month = t.month();
            while !self.day_matches(t) {
                t = t.start_of_day().checked_add(1.day()).ok()?;
                if t.month() != month {
                    continue 'wrap;
                }
            }
            let day = t.day();
            while !has(self.hour, i64::from(t.hour())) {
                t = t
                    .with()
                    .minute(0)
                    .second(0)
                    .subsec_nanosecond(0)
                    .build()
                    .ok()?;
                t = t.checked_add(1.hour()).ok()?;
                if t.day() != day {
                    continue 'wrap;
                }
            }
            let hour = t.hour();
            while !has(self.minute, i64::from(t.minute())) {
                t = t.with().second(0).subsec_nanosecond(0).build().ok()?;
                t = t.checked_add(1.minute()).ok()?;
                if t.hour() != hour {
                    continue 'wrap;
                }
            }
            let minute = t.minute();
            while !has(self.second, i64::from(t.second())) {
                t = t.checked_add(1.second()).ok()?;
                if t.minute() != minute {
                    continue 'wrap;
                }
            }
            let found = zone.to_timestamp(t).ok()?;
            // A wall time skipped by a DST change maps past it; it must still be after `after`.
            if found > after {
                return Some(found);
            }
            t = t.checked_add(1.second()).ok()?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(spec: &str) -> String {
        parse_standard(spec).expect_err(spec).to_string()
    }

    #[test]
    fn standard_specs_and_descriptors_parse() {
        // Cases of kube's TestValidateCronJob and robfig's TestParseSchedule.
        for spec in [
            "* * * * ?",
            "0 0 * * *",
            "*/5 * * * *",
            "5/15 * * * *",
            "0 0 1,15 * 1-5",
            "0 0 * jan-mar MON-fri",
            "@hourly",
            "@daily",
            "@midnight",
            "@weekly",
            "@monthly",
            "@yearly",
            "@annually",
            "@every 5m",
            "@every 1h30m",
            "@every 1.5h",
            "TZ=UTC 0 0 * * *",
            "CRON_TZ=America/New_York 0 0 * * *",
            "  0   0 *  * *  ",
        ] {
            assert!(
                parse_standard(spec).is_ok(),
                "{spec}: {:?}",
                parse_standard(spec)
            );
        }
    }

    #[test]
    fn bad_specs_get_robfig_messages() {
        assert_eq!(message(""), "empty spec string");
        assert_eq!(
            message("* * * *"),
            "expected exactly 5 fields, found 4: [* * * *]"
        );
        assert_eq!(
            message("0 0 0 0 0 0"),
            "expected exactly 5 fields, found 6: [0 0 0 0 0 0]"
        );
        assert_eq!(
            message("60 * * * *"),
            "end of range (60) above maximum (59): 60"
        );
        assert_eq!(
            message("* 24 * * *"),
            "end of range (24) above maximum (23): 24"
        );
        assert_eq!(
            message("* * 0 * *"),
            "beginning of range (0) below minimum (1): 0"
        );
        assert_eq!(
            message("* * * 13 *"),
            "end of range (13) above maximum (12): 13"
        );
        assert_eq!(
            message("* * * * 7"),
            "end of range (7) above maximum (6): 7"
        );
        assert_eq!(
            message("5-1 * * * *"),
            "beginning of range (5) beyond end of range (1): 5-1"
        );
        assert_eq!(
            message("*/0 * * * *"),
            "step of range should be a positive number: */0"
        );
        assert_eq!(message("1-2-3 * * * *"), "too many hyphens: 1-2-3");
        assert_eq!(message("*/2/3 * * * *"), "too many slashes: */2/3");
        assert_eq!(
            message("a * * * *"),
            "failed to parse int from a: strconv.Atoi: parsing \"a\": invalid syntax"
        );
        assert_eq!(
            message("@fortnightly"),
            "unrecognized descriptor: @fortnightly"
        );
        assert_eq!(
            message("@every 5"),
            "failed to parse duration @every 5: time: missing unit in duration \"5\""
        );
        assert_eq!(
            message("@every 5y"),
            "failed to parse duration @every 5y: time: unknown unit \"y\" in duration \"5y\""
        );
        assert_eq!(
            message("@every x"),
            "failed to parse duration @every x: time: invalid duration \"x\""
        );
        assert_eq!(
            message("TZ=Mars/Olympus 0 0 * * *"),
            "provided bad location Mars/Olympus: unknown time zone Mars/Olympus"
        );
    }

    fn at(s: &str) -> Timestamp {
        s.parse().expect("timestamp")
    }

    fn next(spec: &str, after: &str) -> Option<Timestamp> {
        parse_standard(spec)
            .expect(spec)
            .next(at(after), &TimeZone::UTC)
    }

    #[test]
    fn next_activation_follows_robfig() {
        // Cases of robfig's TestNext, in UTC.
        let cases = [
            (
                "*/15 * * * *",
                "2012-07-09T14:45:00Z",
                "2012-07-09T15:00:00Z",
            ),
            (
                "*/15 * * * *",
                "2012-07-09T14:59:59Z",
                "2012-07-09T15:00:00Z",
            ),
            (
                "0 */2 * * *",
                "2012-07-09T22:00:00Z",
                "2012-07-10T00:00:00Z",
            ),
            ("0 0 1 * *", "2012-07-09T22:00:00Z", "2012-08-01T00:00:00Z"),
            ("0 0 29 2 *", "2012-03-01T00:00:00Z", "2016-02-29T00:00:00Z"),
            // Day of month or day of week when neither is `*`.
            (
                "0 0 1 * mon",
                "2012-07-09T00:00:00Z",
                "2012-07-16T00:00:00Z",
            ),
            (
                "0 0 * * mon",
                "2012-07-09T00:00:00Z",
                "2012-07-16T00:00:00Z",
            ),
            ("@hourly", "2012-07-09T14:45:00Z", "2012-07-09T15:00:00Z"),
            (
                "@every 90s",
                "2012-07-09T14:45:00.5Z",
                "2012-07-09T14:46:30Z",
            ),
        ];
        for (spec, after, want) in cases {
            assert_eq!(next(spec, after), Some(at(want)), "{spec} after {after}");
        }
        assert_eq!(next("0 0 30 2 *", "2012-07-09T00:00:00Z"), None);
    }

    #[test]
    fn zones_shift_the_wall_clock() {
        let ny = TimeZone::get("America/New_York").expect("tzdb");
        let s = parse_standard("0 9 * * *").expect("valid");
        assert_eq!(
            s.next(at("2024-01-10T00:00:00Z"), &ny),
            Some(at("2024-01-10T14:00:00Z"))
        );
        let own = parse_standard("CRON_TZ=America/New_York 0 9 * * *").expect("valid");
        assert_eq!(
            own.next(at("2024-07-10T00:00:00Z"), &TimeZone::UTC),
            Some(at("2024-07-10T13:00:00Z"))
        );
    }
}
