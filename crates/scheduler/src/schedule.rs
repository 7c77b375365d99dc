//! Schedules: a cron pattern read in a time zone, or a heartbeat interval.
//!
//! The daylight-saving rule, for a cron pattern in a zone with transitions:
//! - a wall time that does not exist (the clock jumps forward over it) fires once, at the first
//!   instant after the jump; several such wall times (`*/15` inside the gap) fire that one time;
//! - a wall time that occurs twice (the clock falls back over it) fires once, at its first
//!   occurrence; the repeated hour fires nothing.
//!
//! So every wall time a pattern names fires at most once per day, whatever the zone does.

use chrono::{DateTime, Duration, LocalResult, NaiveDateTime, TimeZone, Timelike, Utc};
use chrono_tz::Tz;
use croner::Cron;
use croner::parser::{CronParser, Seconds};
use serde::{Deserialize, Serialize};

/// Why a schedule was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleError {
    /// The cron pattern does not parse.
    #[error("invalid cron pattern `{pattern}`: {message}")]
    Cron {
        /// The pattern.
        pattern: String,
        /// What is wrong.
        message: String,
    },
    /// The time zone is not an IANA zone name.
    #[error("unknown time zone `{0}` (use an IANA name such as Europe/Berlin or America/New_York)")]
    TimeZone(String),
    /// The interval does not parse or is out of range.
    #[error("invalid interval `{interval}`: {message}")]
    Interval {
        /// The interval as given.
        interval: String,
        /// What is wrong.
        message: String,
    },
}

/// When a task is due.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Schedule {
    /// A cron pattern (5 fields, or 6 with seconds first) read in `tz`.
    Cron {
        /// The pattern as given.
        pattern: String,
        /// IANA time zone name.
        tz: String,
    },
    /// Every `seconds` seconds (a heartbeat: from the end of one run to the next).
    Every {
        /// The interval.
        seconds: u64,
    },
}

/// The shortest heartbeat interval accepted.
pub const MIN_INTERVAL_SECS: u64 = 1;
/// The longest heartbeat interval accepted (a year).
pub const MAX_INTERVAL_SECS: u64 = 366 * 24 * 3600;

fn cron_error(pattern: &str, message: impl Into<String>) -> ScheduleError {
    ScheduleError::Cron {
        pattern: pattern.to_owned(),
        message: message.into(),
    }
}

/// Parse a cron pattern of 5 fields (minute hour day-of-month month day-of-week) or 6 (seconds
/// first).
fn parse_cron(pattern: &str) -> Result<Cron, ScheduleError> {
    let fields = pattern.split_whitespace().count();
    if !pattern.trim_start().starts_with('@') && !(5..=6).contains(&fields) {
        return Err(cron_error(
            pattern,
            format!(
                "expected 5 fields (minute hour day month weekday) or 6 (seconds first), got {fields}"
            ),
        ));
    }
    CronParser::builder()
        .seconds(Seconds::Optional)
        .build()
        .parse(pattern)
        .map_err(|e| cron_error(pattern, e.to_string()))
}

fn parse_tz(tz: &str) -> Result<Tz, ScheduleError> {
    tz.parse::<Tz>()
        .map_err(|_| ScheduleError::TimeZone(tz.to_owned()))
}

/// Parse an interval such as `45s`, `30m`, `2h`, `1d` or `1h30m`.
pub fn parse_interval(text: &str) -> Result<u64, ScheduleError> {
    let bad = |message: &str| ScheduleError::Interval {
        interval: text.to_owned(),
        message: message.to_owned(),
    };
    let t = text.trim();
    if t.is_empty() {
        return Err(bad("it is empty; use e.g. 30m, 2h or 1d"));
    }
    let (mut total, mut digits) = (0u64, String::new());
    for c in t.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        let unit = match c {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86_400,
            _ => {
                return Err(bad(
                    "use a number and a unit: s, m, h or d (e.g. 30m, 1h30m)",
                ));
            }
        };
        let n: u64 = digits
            .parse()
            .map_err(|_| bad("every unit needs a number before it (e.g. 30m)"))?;
        digits.clear();
        total = n
            .checked_mul(unit)
            .and_then(|v| total.checked_add(v))
            .ok_or_else(|| bad("too long"))?;
    }
    if !digits.is_empty() {
        return Err(bad("the last number has no unit (s, m, h or d)"));
    }
    if !(MIN_INTERVAL_SECS..=MAX_INTERVAL_SECS).contains(&total) {
        return Err(bad("must be between 1s and 366d"));
    }
    Ok(total)
}

impl Schedule {
    /// A validated cron schedule.
    pub fn cron(pattern: &str, tz: &str) -> Result<Self, ScheduleError> {
        parse_cron(pattern)?;
        parse_tz(tz)?;
        Ok(Schedule::Cron {
            pattern: pattern.trim().to_owned(),
            tz: tz.to_owned(),
        })
    }

    /// A validated interval (`30m`, `2h`, ...).
    pub fn every(interval: &str) -> Result<Self, ScheduleError> {
        Ok(Schedule::Every {
            seconds: parse_interval(interval)?,
        })
    }

    /// Check a schedule read back from storage.
    pub fn validate(&self) -> Result<(), ScheduleError> {
        match self {
            Schedule::Cron { pattern, tz } => Schedule::cron(pattern, tz).map(|_| ()),
            Schedule::Every { seconds } => {
                if (MIN_INTERVAL_SECS..=MAX_INTERVAL_SECS).contains(seconds) {
                    Ok(())
                } else {
                    Err(ScheduleError::Interval {
                        interval: format!("{seconds}s"),
                        message: "must be between 1s and 366d".into(),
                    })
                }
            }
        }
    }

    /// The first due time strictly after `after` (`None` when the pattern never matches
    /// again).
    pub fn next_after(&self, after: DateTime<Utc>) -> Result<Option<DateTime<Utc>>, ScheduleError> {
        match self {
            Schedule::Every { seconds } => {
                let step = Duration::seconds(i64::try_from(*seconds).unwrap_or(i64::MAX));
                Ok(after.checked_add_signed(step))
            }
            Schedule::Cron { pattern, tz } => {
                let cron = parse_cron(pattern)?;
                let zone = parse_tz(tz)?;
                Ok(next_cron(&cron, zone, after))
            }
        }
    }

    /// The next `count` due times after `after`.
    pub fn upcoming(
        &self,
        after: DateTime<Utc>,
        count: usize,
    ) -> Result<Vec<DateTime<Utc>>, ScheduleError> {
        let mut out = Vec::with_capacity(count);
        let mut cursor = after;
        while out.len() < count {
            match self.next_after(cursor)? {
                Some(t) => {
                    out.push(t);
                    cursor = t;
                }
                None => break,
            }
        }
        Ok(out)
    }
}

/// The instant a wall time stands for under the rule in the module docs.
fn resolve(zone: Tz, wall: NaiveDateTime) -> Option<DateTime<Utc>> {
    match zone.from_local_datetime(&wall) {
        LocalResult::Single(t) => Some(t.with_timezone(&Utc)),
        // Falls back over it: the first occurrence.
        LocalResult::Ambiguous(first, _) => Some(first.with_timezone(&Utc)),
        // Skipped: the first wall time after it that exists (transitions move whole minutes;
        // gaps are at most a few hours).
        LocalResult::None => {
            let mut probe = wall;
            for _ in 0..(48 * 60) {
                probe += Duration::minutes(1);
                let probe_floor = probe.with_second(0)?;
                match zone.from_local_datetime(&probe_floor) {
                    LocalResult::Single(t) => return Some(t.with_timezone(&Utc)),
                    LocalResult::Ambiguous(first, _) => return Some(first.with_timezone(&Utc)),
                    LocalResult::None => {}
                }
            }
            None
        }
    }
}

fn next_cron(cron: &Cron, zone: Tz, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
    // Walk the pattern over wall-clock time; map each match to an instant; the first instant
    // after `after` wins. Matches that map to an instant already passed (the repeated hour, or
    // several skipped wall times folding onto the same instant) are stepped over.
    let mut wall = after.with_timezone(&zone).naive_local();
    // A bounded walk: a pattern that matches is found long before this.
    for _ in 0..10_000 {
        let next = cron.find_next_occurrence(&wall, false).ok()?;
        if let Some(at) = resolve(zone, next)
            && at > after
        {
            return Some(at);
        }
        wall = next;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn times(s: &Schedule, from: &str, n: usize) -> Vec<String> {
        s.upcoming(utc(from), n)
            .unwrap()
            .iter()
            .map(|t| t.to_rfc3339())
            .collect()
    }

    #[test]
    fn bad_patterns_zones_and_intervals_are_named() {
        let e = Schedule::cron("0 25 * * *", "UTC").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("invalid cron pattern `0 25 * * *`"),
            "{e}"
        );
        let e = Schedule::cron("0 9 * * 1-5", "Mars/Olympus").unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown time zone `Mars/Olympus` (use an IANA name such as Europe/Berlin or America/New_York)"
        );
        let e = Schedule::cron("* * *", "UTC").unwrap_err();
        assert!(e.to_string().contains("expected 5 fields"), "{e}");
        let e = Schedule::cron("0 0 9 * * 1-5 2030", "UTC").unwrap_err();
        assert!(e.to_string().contains("got 7"), "{e}");
        assert_eq!(parse_interval("1h30m").unwrap(), 5400);
        assert_eq!(parse_interval("45s").unwrap(), 45);
        for bad in ["", "30", "m", "10x", "0s", "400d"] {
            let e = parse_interval(bad).unwrap_err();
            assert!(e.to_string().starts_with("invalid interval"), "{bad}: {e}");
        }
    }

    #[test]
    fn weekday_mornings_in_berlin_and_seconds_fields() {
        let s = Schedule::cron("0 9 * * 1-5", "Europe/Berlin").unwrap();
        // Friday 2026-01-09 10:00 Berlin: next is Monday 09:00 (08:00 UTC in winter).
        assert_eq!(
            times(&s, "2026-01-09T09:00:00Z", 2),
            ["2026-01-12T08:00:00+00:00", "2026-01-13T08:00:00+00:00"]
        );
        let every_ten = Schedule::cron("*/10 * * * * *", "UTC").unwrap();
        assert_eq!(
            times(&every_ten, "2026-01-01T00:00:05Z", 2),
            ["2026-01-01T00:00:10+00:00", "2026-01-01T00:00:20+00:00"]
        );
        let hb = Schedule::every("30m").unwrap();
        assert_eq!(
            times(&hb, "2026-01-01T00:00:00Z", 1),
            ["2026-01-01T00:30:00+00:00"]
        );
    }

    #[test]
    fn spring_forward_skipped_times_fire_once_after_the_jump() {
        // Berlin 2026-03-29: 02:00 CET jumps to 03:00 CEST (01:00 UTC).
        let s = Schedule::cron("30 2 * * *", "Europe/Berlin").unwrap();
        assert_eq!(
            times(&s, "2026-03-28T12:00:00Z", 3),
            [
                "2026-03-29T01:00:00+00:00", // 02:30 does not exist: 03:00 CEST, once
                "2026-03-30T00:30:00+00:00", // then 02:30 CEST
                "2026-03-31T00:30:00+00:00"
            ]
        );
        // Every 15 minutes: 02:00-02:45 all fold onto 03:00, which fires once.
        let q = Schedule::cron("*/15 * * * *", "Europe/Berlin").unwrap();
        assert_eq!(
            times(&q, "2026-03-29T00:40:00Z", 4),
            [
                "2026-03-29T00:45:00+00:00", // 01:45 CET
                "2026-03-29T01:00:00+00:00", // 03:00 CEST (02:00-02:45 skipped)
                "2026-03-29T01:15:00+00:00",
                "2026-03-29T01:30:00+00:00"
            ]
        );
        // New York 2026-03-08: 02:00 EST jumps to 03:00 EDT (07:00 UTC).
        let ny = Schedule::cron("30 2 * * *", "America/New_York").unwrap();
        assert_eq!(
            times(&ny, "2026-03-07T12:00:00Z", 2),
            ["2026-03-08T07:00:00+00:00", "2026-03-09T06:30:00+00:00"]
        );
    }

    #[test]
    fn fall_back_repeated_times_fire_once() {
        // Berlin 2026-10-25: 03:00 CEST falls back to 02:00 CET; 02:30 happens twice.
        let s = Schedule::cron("30 2 * * *", "Europe/Berlin").unwrap();
        assert_eq!(
            times(&s, "2026-10-24T12:00:00Z", 2),
            ["2026-10-25T00:30:00+00:00", "2026-10-26T01:30:00+00:00"]
        );
        // From inside the repeated hour (second pass), 02:30 is not fired again.
        assert_eq!(
            times(&s, "2026-10-25T01:10:00Z", 1),
            ["2026-10-26T01:30:00+00:00"]
        );
        // Every 30 minutes: the repeated 02:00 and 02:30 do not fire a second time.
        let h = Schedule::cron("*/30 * * * *", "Europe/Berlin").unwrap();
        assert_eq!(
            times(&h, "2026-10-24T23:45:00Z", 4),
            [
                "2026-10-25T00:00:00+00:00", // 02:00 CEST
                "2026-10-25T00:30:00+00:00", // 02:30 CEST
                "2026-10-25T02:00:00+00:00", // 03:00 CET (02:00 and 02:30 CET skipped)
                "2026-10-25T02:30:00+00:00"
            ]
        );
        // New York 2026-11-01: 02:00 EDT falls back to 01:00 EST; 01:30 happens twice.
        let ny = Schedule::cron("30 1 * * *", "America/New_York").unwrap();
        assert_eq!(
            times(&ny, "2026-10-31T12:00:00Z", 2),
            ["2026-11-01T05:30:00+00:00", "2026-11-02T06:30:00+00:00"]
        );
    }

    proptest::proptest! {
        // A fixed seed: the same cases on every run, so CI never meets a case by chance.
        #![proptest_config(proptest::test_runner::Config {
            cases: 256,
            rng_seed: proptest::test_runner::RngSeed::Fixed(0x5c4e_d01e),
            failure_persistence: None,
            ..proptest::test_runner::Config::default()
        })]
        #[test]
        fn due_times_strictly_increase_and_each_wall_time_fires_once_a_day(
            start in 1_767_225_600i64..1_830_297_600i64, // 2026-01-01 .. 2028-01-01
            minute in 0u32..60,
            hour in 0u32..24,
            zone in proptest::sample::select(vec!["Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "UTC"]),
        ) {
            let s = Schedule::cron(&format!("{minute} {hour} * * *"), zone).unwrap();
            let from = DateTime::<Utc>::from_timestamp(start, 0).unwrap();
            let ts = s.upcoming(from, 40).unwrap();
            proptest::prop_assert_eq!(ts.len(), 40);
            proptest::prop_assert!(ts[0] > from);
            for w in ts.windows(2) {
                proptest::prop_assert!(w[1] > w[0]);
                // A daily pattern fires once per local day: never twice within 20 hours.
                proptest::prop_assert!(w[1] - w[0] >= Duration::hours(20), "{:?}", w);
            }
        }
    }
}
