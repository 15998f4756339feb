//! The last hour of attempts, minute by minute: what the console's live panel draws. The
//! local server keeps it in memory (a restart starts a new hour); the Lambdas keep none,
//! as each instance sees only its own share (CloudWatch has the figures there).
//!
//! Lateness is counted in buckets that double (1 ms, 2 ms, 4 ms, … 65.5 s), so a
//! percentile is the upper bound of the bucket it falls in: at most twice the true value.

use std::collections::VecDeque;
use std::sync::Mutex;

use chrono::{DateTime, TimeZone, Utc};
use serde::Serialize;

use crate::domain::AttemptOutcome;

/// Minutes kept.
pub const MINUTES: usize = 60;
/// Upper bounds of the lateness buckets, in ms; one more bucket holds anything later.
const BOUNDS_MS: [i64; 17] = {
    let mut bounds = [0i64; 17];
    let mut i = 0;
    while i < bounds.len() {
        bounds[i] = 1 << i;
        i += 1;
    }
    bounds
};

#[derive(Clone, Debug, Default)]
struct Minute {
    /// Minutes since the Unix epoch.
    index: i64,
    attempts: u64,
    succeeded: u64,
    failed: u64,
    lateness: [u64; BOUNDS_MS.len() + 1],
}

/// Attempts by the minute they started in, for the last [`MINUTES`] minutes.
#[derive(Debug, Default)]
pub struct RecentAttempts {
    minutes: Mutex<VecDeque<Minute>>,
}

/// What the window holds now: one entry per minute, oldest first, and the hour's
/// lateness percentiles.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DeliveryWindow {
    pub minutes: Vec<MinuteFigures>,
    /// Of every attempt in the window (`null` without attempts): the upper bound of the
    /// lateness bucket the percentile falls in.
    pub lateness_p50_ms: Option<i64>,
    pub lateness_p99_ms: Option<i64>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MinuteFigures {
    /// The minute's start.
    pub at: DateTime<Utc>,
    pub attempts: u64,
    pub succeeded: u64,
    /// Attempts that failed, whether retried or final.
    pub failed: u64,
    pub lateness_p50_ms: Option<i64>,
    pub lateness_p99_ms: Option<i64>,
}

fn bucket(lateness_ms: i64) -> usize {
    BOUNDS_MS
        .iter()
        .position(|&bound| lateness_ms <= bound)
        .unwrap_or(BOUNDS_MS.len())
}

/// The upper bound of the bucket holding the `q` quantile of `counts`.
fn quantile(counts: &[u64], q: f64) -> Option<i64> {
    let total: u64 = counts.iter().sum();
    if total == 0 {
        return None;
    }
    let rank = ((total as f64) * q).ceil().max(1.0) as u64;
    let mut seen = 0;
    for (i, n) in counts.iter().enumerate() {
        seen += n;
        if seen >= rank {
            return Some(BOUNDS_MS.get(i).copied().unwrap_or(i64::MAX));
        }
    }
    None
}

fn minute_index(at: DateTime<Utc>) -> i64 {
    at.timestamp().div_euclid(60)
}

impl RecentAttempts {
    /// Counts an attempt that started at `at`.
    pub fn record(&self, at: DateTime<Utc>, outcome: AttemptOutcome, lateness_ms: i64) {
        let index = minute_index(at);
        let mut minutes = self.minutes.lock().unwrap_or_else(|e| e.into_inner());
        let newest = minutes.back().map_or(index, |m| m.index.max(index));
        let oldest_kept = newest - MINUTES as i64 + 1;
        // Attempts arrive nearly in order; one from a minute the window has left is dropped.
        if index < oldest_kept {
            return;
        }
        let i = match minutes.binary_search_by_key(&index, |m| m.index) {
            Ok(i) => i,
            Err(i) => {
                minutes.insert(
                    i,
                    Minute {
                        index,
                        ..Minute::default()
                    },
                );
                i
            }
        };
        let minute = &mut minutes[i];
        minute.attempts += 1;
        match outcome {
            AttemptOutcome::Succeeded => minute.succeeded += 1,
            AttemptOutcome::Retrying | AttemptOutcome::Failed => minute.failed += 1,
        }
        minute.lateness[bucket(lateness_ms)] += 1;
        while minutes.front().is_some_and(|m| m.index < oldest_kept) {
            minutes.pop_front();
        }
    }

    /// The [`MINUTES`] minutes up to and including `now`'s.
    pub fn window(&self, now: DateTime<Utc>) -> DeliveryWindow {
        let last = minute_index(now);
        let first = last - MINUTES as i64 + 1;
        let minutes = self.minutes.lock().unwrap_or_else(|e| e.into_inner());
        let mut hour = [0u64; BOUNDS_MS.len() + 1];
        let figures = (first..=last)
            .map(|index| {
                let m = minutes.iter().find(|m| m.index == index);
                let empty = Minute::default();
                let m = m.unwrap_or(&empty);
                for (total, n) in hour.iter_mut().zip(m.lateness) {
                    *total += n;
                }
                MinuteFigures {
                    at: Utc.timestamp_opt(index * 60, 0).single().unwrap_or(now),
                    attempts: m.attempts,
                    succeeded: m.succeeded,
                    failed: m.failed,
                    lateness_p50_ms: quantile(&m.lateness, 0.5),
                    lateness_p99_ms: quantile(&m.lateness, 0.99),
                }
            })
            .collect();
        DeliveryWindow {
            minutes: figures,
            lateness_p50_ms: quantile(&hour, 0.5),
            lateness_p99_ms: quantile(&hour, 0.99),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(minute: i64, second: i64) -> DateTime<Utc> {
        Utc.timestamp_opt(1_900_000_000 / 60 * 60 + minute * 60 + second, 0)
            .unwrap()
    }

    #[test]
    fn attempts_land_in_their_minute_and_the_hour_slides() {
        let recent = RecentAttempts::default();
        recent.record(at(0, 5), AttemptOutcome::Succeeded, 3);
        recent.record(at(0, 50), AttemptOutcome::Retrying, 100);
        recent.record(at(2, 0), AttemptOutcome::Failed, 1);
        let window = recent.window(at(2, 30));
        assert_eq!(window.minutes.len(), MINUTES);
        let last3: Vec<(u64, u64, u64)> = window.minutes[MINUTES - 3..]
            .iter()
            .map(|m| (m.attempts, m.succeeded, m.failed))
            .collect();
        assert_eq!(last3, [(2, 1, 1), (0, 0, 0), (1, 0, 1)]);
        assert_eq!(window.minutes[MINUTES - 1].at, at(2, 0));
        assert_eq!(window.minutes[MINUTES - 3].lateness_p50_ms, Some(4));
        assert_eq!(window.minutes[MINUTES - 3].lateness_p99_ms, Some(128));

        // An hour on, minute 0 has left the window; minute 2 has not yet.
        let later = recent.window(at(61, 0));
        assert_eq!(later.minutes.iter().map(|m| m.attempts).sum::<u64>(), 1);
        recent.record(at(70, 0), AttemptOutcome::Succeeded, 0);
        recent.record(at(1, 0), AttemptOutcome::Succeeded, 0); // too old: dropped
        let window = recent.window(at(70, 0));
        assert_eq!(window.minutes.iter().map(|m| m.attempts).sum::<u64>(), 1);
    }

    #[test]
    fn percentiles_are_bucket_bounds_and_none_without_attempts() {
        let recent = RecentAttempts::default();
        assert_eq!(recent.window(at(0, 0)).lateness_p99_ms, None);
        for _ in 0..98 {
            recent.record(at(0, 0), AttemptOutcome::Succeeded, 10);
        }
        recent.record(at(0, 0), AttemptOutcome::Succeeded, 5_000);
        recent.record(at(0, 0), AttemptOutcome::Succeeded, -3); // early: the first bucket
        let window = recent.window(at(0, 0));
        assert_eq!(window.lateness_p50_ms, Some(16));
        assert_eq!(window.lateness_p99_ms, Some(16));
        recent.record(at(0, 0), AttemptOutcome::Succeeded, 5_000);
        assert_eq!(recent.window(at(0, 0)).lateness_p99_ms, Some(8192));
        recent.record(at(0, 0), AttemptOutcome::Succeeded, i64::MAX);
        assert_eq!(bucket(i64::MAX), BOUNDS_MS.len());
    }
}
