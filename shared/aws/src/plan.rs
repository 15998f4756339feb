//! How a wait is carried, as arithmetic on instants: through the SQS timer queue, or left
//! to its minute's bucket. The timer arms by it ([`crate::timer`]), and the store's writes
//! index in a bucket exactly what it leaves to one ([`held_by_bucket`]), so both read the
//! thresholds from here.

use std::time::Duration;

use chrono::{DateTime, DurationRound, Utc};

use boomerang_core::domain::time::checked_sub;

/// Waits up to this long go through the SQS timer queue (its limit is 15 minutes).
pub const QUEUE_MAX_WAIT: Duration = Duration::from_secs(14 * 60);
/// How much earlier than its minute a bucket's schedule fires: Scheduler may fire up to a
/// minute late, and the fire needs time to read the bucket (the rest of the wait, up to
/// three minutes, is an SQS delay).
pub const BUCKET_LEAD: Duration = Duration::from_secs(2 * 60);
/// A write indexes a timed attempt in its bucket when it is due more than this after the
/// write: a minute less than the timer's own threshold, so that every attempt the timer
/// leaves to a bucket is indexed even if this machine's clock stepped back in between (an
/// attempt in the minute's overlap is indexed and queued both: a claim sends it once).
pub const BUCKET_INDEX_AFTER: Duration = Duration::from_secs(13 * 60);

/// How one arm is carried out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TimerPlan {
    Queue {
        delay_seconds: i32,
    },
    /// The task's write indexes it in this minute's bucket; the bucket's schedule must exist.
    Bucket {
        minute: DateTime<Utc>,
    },
}

/// Chooses SQS or a bucket for an attempt due at `at`.
pub fn plan(at: DateTime<Utc>, now: DateTime<Utc>) -> TimerPlan {
    let wait = (at - now).to_std().unwrap_or_default();
    if wait <= QUEUE_MAX_WAIT {
        return TimerPlan::Queue {
            delay_seconds: queue_delay(at, now),
        };
    }
    TimerPlan::Bucket {
        minute: bucket_minute(at),
    }
}

/// The queue's `DelaySeconds` for an attempt due at `at`: rounded up, a second late rather
/// than early (an early fire costs a round trip), and at most the queue's 900.
pub fn queue_delay(at: DateTime<Utc>, now: DateTime<Utc>) -> i32 {
    let wait = (at - now).to_std().unwrap_or_default();
    let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    secs.min(900) as i32
}

/// Whether a write at `written_at` of work due at `due` (held by a timer) keeps it in its
/// bucket ([`BUCKET_INDEX_AFTER`]).
pub fn held_by_bucket(due: DateTime<Utc>, written_at: DateTime<Utc>) -> bool {
    (due - written_at)
        .to_std()
        .is_ok_and(|wait| wait > BUCKET_INDEX_AFTER)
}

/// The minute an instant falls in: its bucket.
pub fn bucket_minute(at: DateTime<Utc>) -> DateTime<Utc> {
    at.duration_trunc(chrono::Duration::minutes(1))
        .unwrap_or(at)
}

/// When a bucket's schedule fires.
pub fn bucket_fire_at(minute: DateTime<Utc>) -> DateTime<Utc> {
    checked_sub(minute, BUCKET_LEAD).unwrap_or(minute)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn short_waits_use_the_queue_rounded_up() {
        let now = Utc.with_ymd_and_hms(2030, 1, 1, 12, 0, 0).unwrap();
        let at = |ms| now + chrono::Duration::milliseconds(ms);
        assert_eq!(plan(at(-5000), now), TimerPlan::Queue { delay_seconds: 0 });
        assert_eq!(plan(at(2300), now), TimerPlan::Queue { delay_seconds: 3 });
        assert_eq!(
            plan(at(300_000), now),
            TimerPlan::Queue { delay_seconds: 300 }
        );
        assert_eq!(
            plan(at(840_000), now),
            TimerPlan::Queue { delay_seconds: 840 }
        );
    }

    #[test]
    fn long_waits_go_to_the_bucket_of_their_minute_which_fires_two_minutes_early() {
        let now = Utc.with_ymd_and_hms(2030, 1, 1, 12, 0, 10).unwrap();
        let due = now + chrono::Duration::minutes(20) + chrono::Duration::seconds(35); // 12:20:45
        let minute = Utc.with_ymd_and_hms(2030, 1, 1, 12, 20, 0).unwrap();
        assert_eq!(plan(due, now), TimerPlan::Bucket { minute });
        assert_eq!(
            bucket_fire_at(minute),
            Utc.with_ymd_and_hms(2030, 1, 1, 12, 18, 0).unwrap()
        );
        // Even a fire 59 s late leaves the rest of the wait to an SQS delay.
        let late_fire = bucket_fire_at(minute) + chrono::Duration::seconds(59);
        assert_eq!(
            plan(due, late_fire),
            TimerPlan::Queue { delay_seconds: 106 }
        );
    }

    #[test]
    fn every_wait_the_timer_leaves_to_a_bucket_is_indexed_by_its_write() {
        let written = Utc.with_ymd_and_hms(2030, 1, 1, 12, 0, 0).unwrap();
        // The timer arms a little later than the write is stamped, or a little earlier if
        // the clock stepped back: either way, what it leaves to a bucket is indexed.
        for secs in (12 * 60..16 * 60).step_by(5) {
            let due = written + chrono::Duration::seconds(secs);
            for skew in (-55..=55).step_by(5) {
                let armed = written + chrono::Duration::seconds(skew);
                if matches!(plan(due, armed), TimerPlan::Bucket { .. }) {
                    assert!(held_by_bucket(due, written), "{secs} s, armed {skew} s off");
                }
            }
        }
        assert!(held_by_bucket(
            written + chrono::Duration::days(30),
            written
        ));
        for secs in [-30, 0, 60, 13 * 60] {
            let due = written + chrono::Duration::seconds(secs);
            assert!(!held_by_bucket(due, written), "{secs}");
        }
    }
}
