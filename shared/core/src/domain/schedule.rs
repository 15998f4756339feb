//! Recurring callbacks. A schedule holds a task's spec and a recurrence (a cron pattern in a
//! time zone, or a fixed interval); each occurrence is an ordinary task made from that
//! spec. One occurrence at a time is pending: when it comes due, the next is registered
//! ([`Schedule::step`] says what to do), so a schedule costs one task per occurrence and
//! nothing while it waits.
//!
//! Daylight-saving changes follow the zone's rules, as Vixie cron does: a local time a
//! change skips fires once, at the first valid time after the gap; a local time a change
//! repeats fires once, at its first pass. Patterns with a wildcard or a step in their
//! second, minute or hour field keep to elapsed time instead (every 15 minutes stays
//! every 15 minutes across both changes).

use std::time::Duration;

use chrono::{DateTime, Timelike, Utc};
use chrono_tz::Tz;
use serde::{Deserialize, Serialize};

use super::duration_ms;
pub use super::ids::ScheduleId;
use super::ids::TenantId;
use super::invalid::Invalid;
use super::limits::{MAX_CRON_LEN, MIN_EVERY};
use super::occurrence::Occurrence;
use super::task::TaskSpec;
use super::time::checked_add;

/// When a schedule's occurrences fall.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Recurrence {
    /// A cron pattern (five fields, or six with seconds first), read in `timezone`.
    Cron { pattern: String, timezone: String },
    /// Every `interval`, counted from the schedule's start.
    Every {
        #[serde(with = "duration_ms")]
        interval: Duration,
    },
}

impl Recurrence {
    /// A cron pattern in an IANA time zone (`Europe/Paris`, `UTC`).
    pub fn cron(pattern: &str, timezone: &str) -> Result<Recurrence, Invalid> {
        let pattern = pattern.trim();
        if pattern.len() > MAX_CRON_LEN {
            return Err(Invalid::new(
                "cron",
                format!("must be at most {MAX_CRON_LEN} characters"),
            ));
        }
        if !matches_some_date(&parse_cron(pattern)?) {
            return Err(Invalid::new(
                "cron",
                format!("`{pattern}` matches no date (such as 30 February)"),
            ));
        }
        zone(timezone)?;
        Ok(Recurrence::Cron {
            pattern: pattern.to_string(),
            timezone: timezone.trim().to_string(),
        })
    }

    /// A fixed interval, at least [`MIN_EVERY`].
    pub fn every(interval: Duration) -> Result<Recurrence, Invalid> {
        if interval < MIN_EVERY {
            return Err(Invalid::new(
                "every",
                format!("must be at least {}s", MIN_EVERY.as_secs()),
            ));
        }
        if interval > super::limits::MAX_SCHEDULE_AHEAD {
            return Err(Invalid::new("every", "must be at most 365 days"));
        }
        Ok(Recurrence::Every { interval })
    }

    /// The first occurrence strictly after `t`, counting an interval from `anchor`.
    fn after(&self, t: DateTime<Utc>, anchor: DateTime<Utc>) -> Option<DateTime<Utc>> {
        match self {
            Recurrence::Cron { pattern, timezone } => {
                let (cron, tz) = (parse_cron(pattern).ok()?, zone(timezone).ok()?);
                // Slots are whole seconds: the first after `t` is the first after its second.
                let t = t.with_nanosecond(0)?;
                cron.find_next_occurrence(&t.with_timezone(&tz), false)
                    .ok()
                    .map(|at| at.with_timezone(&Utc))
            }
            Recurrence::Every { interval } => {
                if t < anchor {
                    return Some(anchor);
                }
                let step = interval.as_millis().max(1);
                let passed = (t - anchor).num_milliseconds().max(0) as u128;
                let steps = passed / step + 1;
                let ms = u64::try_from(steps.checked_mul(step)?).ok()?;
                checked_add(anchor, Duration::from_millis(ms))
            }
        }
    }
}

fn parse_cron(pattern: &str) -> Result<croner::Cron, Invalid> {
    croner::parser::CronParser::builder()
        .seconds(croner::parser::Seconds::Optional)
        .year(croner::parser::Year::Disallowed)
        .build()
        .parse(pattern)
        .map_err(|e| Invalid::new("cron", format!("`{pattern}` is not a cron pattern: {e}")))
}

/// Whether the pattern matches any date at all. Which days of a month match depends only
/// on its length and the weekday it starts on, and 2000 to 2027 (one 28-year cycle of
/// the calendar) show every month with every length and first weekday it can have: a
/// refusal costs a millisecond, where croner's own search for a first time runs on to
/// the year 5000.
fn matches_some_date(cron: &croner::Cron) -> bool {
    let pattern = &cron.pattern;
    let months: Vec<u32> = (1..=12)
        .filter(|m| pattern.month_match(*m).unwrap_or(false))
        .collect();
    (2000..2028).any(|year| {
        months.iter().any(|month| {
            // An impossible date (31 April) is an error, so no match.
            (1..=31).any(|day| pattern.day_match(year, *month, day).unwrap_or(false))
        })
    })
}

fn zone(name: &str) -> Result<Tz, Invalid> {
    name.trim().parse::<Tz>().map_err(|_| {
        Invalid::new(
            "timezone",
            format!("`{name}` is not an IANA time zone (such as `Europe/Paris` or `UTC`)"),
        )
    })
}

/// What becomes of an occurrence that came due while nothing could fire it (the server
/// was down) and whose next slot has passed as well.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CatchUp {
    /// It is skipped: the schedule goes on from the next slot to come.
    None,
    /// It fires once, late; the slots missed after it do not.
    #[default]
    One,
}

impl CatchUp {
    pub fn parse(s: &str) -> Option<CatchUp> {
        match s {
            "none" => Some(CatchUp::None),
            "one" => Some(CatchUp::One),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            CatchUp::None => "none",
            CatchUp::One => "one",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScheduleState {
    Active,
    Paused,
}

impl ScheduleState {
    pub fn as_str(self) -> &'static str {
        match self {
            ScheduleState::Active => "active",
            ScheduleState::Paused => "paused",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Schedule {
    pub id: ScheduleId,
    pub tenant: TenantId,
    pub recurrence: Recurrence,
    /// No occurrence before this (and an interval counts from it).
    pub start_at: DateTime<Utc>,
    /// No occurrence after this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_at: Option<DateTime<Utc>>,
    pub catch_up: CatchUp,
    pub state: ScheduleState,
    /// What each occurrence calls (its `key`, if any, is each occurrence's key).
    pub spec: TaskSpec,
    pub version: u64,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// Why a schedule refuses a change.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleRefusal {
    #[error("the schedule is already {0}")]
    Already(&'static str),
}

/// What to do with an occurrence that came due ([`Schedule::step`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    /// Whether this occurrence calls (false: it is skipped).
    pub fire: bool,
    /// Why it is skipped.
    pub skipped: Option<&'static str>,
    /// The occurrence to register next, if the schedule has one.
    pub next: Option<Occurrence>,
}

impl Schedule {
    /// A new, active schedule; `Err` (naming `end_at`) when it would never fire.
    pub fn new(
        tenant: TenantId,
        recurrence: Recurrence,
        start_at: Option<DateTime<Utc>>,
        end_at: Option<DateTime<Utc>>,
        catch_up: CatchUp,
        spec: TaskSpec,
        now: DateTime<Utc>,
    ) -> Result<Schedule, Invalid> {
        let start = start_at.unwrap_or(now);
        if let Some(end) = end_at {
            if end <= start {
                return Err(Invalid::new("end_at", "must be after start_at (and now)"));
            }
        }
        let schedule = Schedule {
            id: ScheduleId::new(),
            tenant,
            recurrence,
            start_at: start,
            end_at,
            catch_up,
            state: ScheduleState::Active,
            spec,
            version: 1,
            created_at: now,
            updated_at: now,
        };
        // Every recurrence has a next time (a cron pattern that matches no date is refused
        // when it is read): only an end can leave the schedule without an occurrence.
        if schedule.first(now).is_none() {
            return Err(Invalid::new(
                "end_at",
                "the schedule has no occurrence before it",
            ));
        }
        Ok(schedule)
    }

    /// The first slot at or after `t` (and at or after the start), within the end.
    fn slot_from(&self, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let from = t.max(self.start_at);
        let just_before = from - chrono::Duration::milliseconds(1);
        let at = self.recurrence.after(just_before, self.start_at)?;
        match self.end_at {
            Some(end) if at > end => None,
            _ => Some(at),
        }
    }

    /// The first slot strictly after `t`.
    fn slot_after(&self, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.slot_from(t + chrono::Duration::milliseconds(1))
    }

    /// The occurrence to register when the schedule starts (or resumes) at `now`.
    pub fn first(&self, now: DateTime<Utc>) -> Option<Occurrence> {
        self.slot_from(now).map(|at| self.occurrence(at))
    }

    /// When the next occurrence is due, as of `now` (`None` when paused or past its end).
    pub fn next_at(&self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        match self.state {
            ScheduleState::Active => self.slot_from(now),
            ScheduleState::Paused => None,
        }
    }

    fn occurrence(&self, at: DateTime<Utc>) -> Occurrence {
        Occurrence {
            schedule: self.id,
            at,
        }
    }

    /// The occurrence `at` came due at `now`: whether it calls, and which occurrence
    /// follows. A paused schedule skips it and registers none (resuming does). An
    /// occurrence whose next slot has passed too was missed (the server was down): with
    /// [`CatchUp::One`] it fires once, late; with [`CatchUp::None`] it is skipped. Either
    /// way the next occurrence is the first slot to come, so missed slots never pile up.
    pub fn step(&self, at: DateTime<Utc>, now: DateTime<Utc>) -> Step {
        if self.state == ScheduleState::Paused {
            return Step {
                fire: false,
                skipped: Some("the schedule is paused"),
                next: None,
            };
        }
        let missed = self.slot_after(at).is_some_and(|next| next <= now);
        let skip = missed && self.catch_up == CatchUp::None;
        Step {
            fire: !skip,
            skipped: skip.then_some("missed while the server was down (catch_up: none)"),
            next: self.slot_after(at.max(now)).map(|t| self.occurrence(t)),
        }
    }

    pub fn pause(&self, now: DateTime<Utc>) -> Result<Schedule, ScheduleRefusal> {
        self.with_state(ScheduleState::Paused, now)
    }

    pub fn resume(&self, now: DateTime<Utc>) -> Result<Schedule, ScheduleRefusal> {
        self.with_state(ScheduleState::Active, now)
    }

    fn with_state(
        &self,
        state: ScheduleState,
        now: DateTime<Utc>,
    ) -> Result<Schedule, ScheduleRefusal> {
        if self.state == state {
            return Err(ScheduleRefusal::Already(state.as_str()));
        }
        let mut next = self.clone();
        next.state = state;
        next.version += 1;
        next.updated_at = now;
        Ok(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn spec() -> TaskSpec {
        TaskSpec::json_post(
            "https://example.com/hook".into(),
            vec![],
            "{}".into(),
            Duration::from_secs(10),
        )
    }

    fn utc(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn cron(pattern: &str, tz: &str, now: DateTime<Utc>) -> Schedule {
        let recurrence = Recurrence::cron(pattern, tz).unwrap();
        Schedule::new(
            TenantId::parse("t").unwrap(),
            recurrence,
            None,
            None,
            CatchUp::One,
            spec(),
            now,
        )
        .unwrap()
    }

    /// The occurrences from `now` on, following the chain as the engine does.
    fn chain(s: &Schedule, now: DateTime<Utc>, n: usize) -> Vec<DateTime<Utc>> {
        let mut at = s.first(now).unwrap().at;
        let mut out = vec![at];
        while out.len() < n {
            at = s.step(at, at).next.unwrap().at;
            out.push(at);
        }
        out
    }

    #[test]
    fn a_daily_local_time_in_a_skipped_hour_fires_once_right_after_the_gap() {
        // Paris springs forward at 02:00 local on 2026-03-29 (to 03:00).
        let s = cron("30 2 * * *", "Europe/Paris", utc("2026-03-27T12:00:00Z"));
        let got = chain(&s, utc("2026-03-27T12:00:00Z"), 3);
        assert_eq!(
            got,
            vec![
                utc("2026-03-28T01:30:00Z"), // 02:30 CET
                utc("2026-03-29T01:00:00Z"), // 03:00 CEST: the first valid time after the gap
                utc("2026-03-30T00:30:00Z"), // 02:30 CEST
            ]
        );
    }

    #[test]
    fn a_daily_local_time_in_a_repeated_hour_fires_once() {
        // Paris falls back at 03:00 local on 2026-10-25 (to 02:00): 02:30 happens twice.
        let s = cron("30 2 * * *", "Europe/Paris", utc("2026-10-23T12:00:00Z"));
        let got = chain(&s, utc("2026-10-23T12:00:00Z"), 3);
        assert_eq!(
            got,
            vec![
                utc("2026-10-24T00:30:00Z"), // 02:30 CEST
                utc("2026-10-25T00:30:00Z"), // 02:30 CEST, the first pass only
                utc("2026-10-26T01:30:00Z"), // 02:30 CET
            ]
        );
    }

    #[test]
    fn an_every_second_pattern_keeps_to_elapsed_time_across_a_change() {
        let before = Utc.with_ymd_and_hms(2026, 3, 29, 0, 59, 58).unwrap();
        let s = cron("* * * * * *", "Europe/Paris", before);
        let got = chain(&s, before, 4);
        let expected: Vec<_> = (0..4)
            .map(|i| before + chrono::Duration::seconds(i))
            .collect();
        assert_eq!(got, expected);
    }

    #[test]
    fn an_interval_counts_from_the_start_and_stops_at_the_end() {
        let now = utc("2026-01-01T00:00:00Z");
        let s = Schedule::new(
            TenantId::parse("t").unwrap(),
            Recurrence::every(Duration::from_secs(90)).unwrap(),
            Some(utc("2026-01-01T00:00:10Z")),
            Some(utc("2026-01-01T00:03:10Z")),
            CatchUp::One,
            spec(),
            now,
        )
        .unwrap();
        assert_eq!(
            chain(&s, now, 3),
            vec![
                utc("2026-01-01T00:00:10Z"),
                utc("2026-01-01T00:01:40Z"),
                utc("2026-01-01T00:03:10Z"),
            ]
        );
        assert_eq!(
            s.step(utc("2026-01-01T00:03:10Z"), utc("2026-01-01T00:03:10Z"))
                .next,
            None
        );
    }

    #[test]
    fn a_missed_occurrence_fires_once_or_not_at_all_and_the_next_is_still_to_come() {
        let now = utc("2026-01-01T00:10:00Z");
        let mut s = cron("0 * * * *", "UTC", now);
        let at = s.first(now).unwrap().at;
        assert_eq!(at, utc("2026-01-01T01:00:00Z"));
        let back = utc("2026-01-01T05:20:00Z"); // four slots later
        let one = s.step(at, back);
        assert!(one.fire);
        assert_eq!(one.next.unwrap().at, utc("2026-01-01T06:00:00Z"));
        s.catch_up = CatchUp::None;
        let none = s.step(at, back);
        assert!(!none.fire && none.skipped.is_some());
        assert_eq!(none.next.unwrap().at, utc("2026-01-01T06:00:00Z"));
        // Merely late (its next slot still ahead): it fires, whatever `catch_up` says.
        assert!(s.step(at, utc("2026-01-01T01:00:30Z")).fire);
    }

    #[test]
    fn a_paused_schedule_skips_and_registers_nothing() {
        let now = utc("2026-01-01T00:00:00Z");
        let s = cron("0 * * * *", "UTC", now).pause(now).unwrap();
        let step = s.step(utc("2026-01-01T01:00:00Z"), utc("2026-01-01T01:00:00Z"));
        assert!(!step.fire && step.next.is_none());
        assert_eq!(s.next_at(now), None);
        assert!(s.pause(now).is_err());
        assert!(s.resume(now).unwrap().next_at(now).is_some());
    }

    #[test]
    fn bad_patterns_zones_and_intervals_name_their_field() {
        assert_eq!(
            Recurrence::cron("61 * * * *", "UTC").unwrap_err().field,
            "cron"
        );
        assert_eq!(Recurrence::cron("* * *", "UTC").unwrap_err().field, "cron");
        assert_eq!(
            Recurrence::cron("* * * * *", "Mars/Olympus")
                .unwrap_err()
                .field,
            "timezone"
        );
        assert_eq!(
            Recurrence::every(Duration::from_millis(999))
                .unwrap_err()
                .field,
            "every"
        );
        let now = utc("2026-01-01T00:00:00Z");
        let err = Schedule::new(
            TenantId::parse("t").unwrap(),
            Recurrence::every(Duration::from_secs(60)).unwrap(),
            Some(now),
            Some(now),
            CatchUp::One,
            spec(),
            now,
        )
        .unwrap_err();
        assert_eq!(err.field, "end_at");
        for never in ["0 0 30 2 *", "0 0 31 2,4,6,9,11 *"] {
            let err = Recurrence::cron(never, "UTC").unwrap_err();
            assert_eq!(err.field, "cron");
            assert!(err.detail.contains("matches no date"), "{}", err.detail);
        }
    }

    #[test]
    fn a_rare_but_possible_date_is_found_however_far_ahead() {
        // 2100 is no leap year: from March 2097 the next 29 February is in 2104.
        let s = cron("0 0 29 2 *", "UTC", utc("2097-03-01T00:00:00Z"));
        assert_eq!(
            s.first(utc("2097-03-01T00:00:00Z")).unwrap().at,
            utc("2104-02-29T00:00:00Z")
        );
        // A fifth Monday in February: only a leap year whose February starts on a Monday.
        let s = cron("0 0 * 2 MON#5", "UTC", utc("2026-01-01T00:00:00Z"));
        assert_eq!(
            s.first(utc("2026-01-01T00:00:00Z")).unwrap().at,
            utc("2044-02-29T00:00:00Z")
        );
    }
}
