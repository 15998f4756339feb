//! The destinations whose calls took long of late, and until when each counts as slow
//! (the slow lane's memory, [`super::slow_lane`]).
//!
//! A destination is marked on a rate, not on one call: of its calls that ended in the last
//! [`SLOW_WINDOW`], at least [`SLOW_MIN_CALLS`] and at least [`SLOW_SHARE_PERCENT`] percent
//! were slow. Each destination's calls are counted in a small ring of time buckets, so that
//! what it costs to remember one does not grow with its traffic. A mark lasts
//! [`SLOW_MEMORY`] from the last call that found the rule met: while it lasts, the shared
//! lane makes no calls there that could show it quick again, so the mark cannot end on the
//! rate and is held instead, which also keeps a destination near the threshold from
//! flapping between the lanes.

use std::collections::HashMap;
use std::sync::Mutex;

use chrono::{DateTime, Utc};

use crate::domain::{Destination, TenantId};
use crate::engine::state::{SLOW_MIN_CALLS, SLOW_SHARE_PERCENT, SLOW_WINDOW};

/// How long a mark keeps its destination in the slow lane after the rule was last met:
/// long enough that a receiver slow for minutes is not tried the shared way at every turn,
/// short enough that one that recovers is soon back in the shared lane.
pub(in crate::engine) const SLOW_MEMORY: chrono::Duration = chrono::Duration::minutes(5);
/// The window's buckets: the window slides a sixth of itself at a time, fine enough that
/// calls leave the count close to [`SLOW_WINDOW`] after they ended, few enough that a
/// destination's counts stay a hundred bytes or so.
const BUCKETS: usize = 6;
/// Destinations counted, and destinations marked, at most: past it, those with no call in
/// the window (or whose mark ran out) are dropped, then the one seen longest ago (or whose
/// mark runs out first).
const KEEP: usize = 4096;

type Key = (TenantId, Destination);

/// Each destination's recent calls, and the destinations marked slow, until when.
#[derive(Default)]
pub(in crate::engine) struct SlowDestinations(Mutex<Memory>);

#[derive(Default)]
struct Memory {
    counts: HashMap<Key, Counts>,
    marks: HashMap<Key, DateTime<Utc>>,
}

/// One destination's calls over the window, a bucket of [`bucket_span`] each.
struct Counts {
    buckets: [Bucket; BUCKETS],
    /// When its latest call ended.
    latest: DateTime<Utc>,
}

/// The calls, and the slow ones among them, that ended within one bucket's span.
#[derive(Clone, Copy, Default)]
struct Bucket {
    /// Which span since the epoch these counts are of: a slot whose span passed is reused.
    span: i64,
    calls: u32,
    slow: u32,
}

fn bucket_span() -> i64 {
    (SLOW_WINDOW.as_millis() / BUCKETS as u128) as i64
}

fn bucket_of(at: DateTime<Utc>) -> i64 {
    at.timestamp_millis().div_euclid(bucket_span())
}

impl Counts {
    fn new(now: DateTime<Utc>) -> Self {
        Self {
            buckets: Default::default(),
            latest: now,
        }
    }

    fn add(&mut self, slow: bool, now: DateTime<Utc>) {
        let bucket = bucket_of(now);
        let slot = &mut self.buckets[bucket.rem_euclid(BUCKETS as i64) as usize];
        if slot.span != bucket {
            *slot = Bucket {
                span: bucket,
                ..Bucket::default()
            };
        }
        slot.calls += 1;
        slot.slow += u32::from(slow);
        self.latest = self.latest.max(now);
    }

    /// The calls and slow calls in the window that ends in `bucket`.
    fn in_window(&self, bucket: i64) -> (u32, u32) {
        let current = self
            .buckets
            .iter()
            .filter(|b| (0..BUCKETS as i64).contains(&(bucket - b.span)));
        current.fold((0, 0), |(calls, slow), b| (calls + b.calls, slow + b.slow))
    }

    /// Whether no call ended within the window that ends in `bucket`.
    fn idle(&self, bucket: i64) -> bool {
        bucket - bucket_of(self.latest) >= BUCKETS as i64
    }
}

/// The rule: enough calls to judge by, and enough of them slow.
fn slow_rate(calls: u32, slow: u32) -> bool {
    calls >= SLOW_MIN_CALLS
        && u64::from(slow) * 100 >= u64::from(SLOW_SHARE_PERCENT) * u64::from(calls)
}

impl SlowDestinations {
    /// Counts a call to the destination that ended at `now`, slow or not, and marks the
    /// destination (or holds its mark longer) if its calls in the window meet the rule.
    /// True if this call marked a destination that was not marked.
    pub(in crate::engine) fn note(
        &self,
        tenant: &TenantId,
        destination: &Destination,
        slow: bool,
        now: DateTime<Utc>,
    ) -> bool {
        let bucket = bucket_of(now);
        let key = (tenant.clone(), destination.clone());
        let mut memory = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let Memory { counts, marks } = &mut *memory;
        if !counts.contains_key(&key) && counts.len() >= KEEP {
            counts.retain(|_, c| !c.idle(bucket));
            if counts.len() >= KEEP {
                let oldest = counts.iter().min_by_key(|(_, c)| c.latest);
                if let Some(oldest) = oldest.map(|(key, _)| key.clone()) {
                    counts.remove(&oldest);
                }
            }
        }
        let count = counts
            .entry(key.clone())
            .or_insert_with(|| Counts::new(now));
        count.add(slow, now);
        let (calls, slow_calls) = count.in_window(bucket);
        if !slow_rate(calls, slow_calls) {
            return false;
        }
        let was_marked = marks.get(&key).is_some_and(|until| *until > now);
        if !marks.contains_key(&key) && marks.len() >= KEEP {
            marks.retain(|_, until| *until > now);
            if marks.len() >= KEEP {
                let soonest = marks.iter().min_by_key(|(_, until)| **until);
                if let Some(soonest) = soonest.map(|(key, _)| key.clone()) {
                    marks.remove(&soonest);
                }
            }
        }
        marks.insert(key, now + SLOW_MEMORY);
        !was_marked
    }

    pub(in crate::engine) fn is_slow(
        &self,
        tenant: &TenantId,
        destination: &Destination,
        now: DateTime<Utc>,
    ) -> bool {
        let memory = self.0.lock().unwrap_or_else(|e| e.into_inner());
        // Most deliveries ask with none marked: no key is made for them.
        !memory.marks.is_empty()
            && (memory.marks.get(&(tenant.clone(), destination.clone())))
                .is_some_and(|until| *until > now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window() -> chrono::Duration {
        chrono::Duration::from_std(SLOW_WINDOW).unwrap()
    }

    fn ms(n: i64) -> chrono::Duration {
        chrono::Duration::milliseconds(n)
    }

    /// One destination of one tenant, and the calls made to it on an injected clock.
    struct Calls {
        slow: SlowDestinations,
        tenant: TenantId,
        destination: Destination,
        now: DateTime<Utc>,
    }

    impl Calls {
        fn new() -> Self {
            Self {
                slow: SlowDestinations::default(),
                tenant: TenantId::parse("acme").unwrap(),
                destination: Destination::of("https://hooks.test/"),
                now: "2030-01-01T00:00:00Z".parse().unwrap(),
            }
        }

        /// A call that ends `after` the previous one; whether it marked the destination.
        fn call(&mut self, after: chrono::Duration, slow: bool) -> bool {
            self.now += after;
            (self.slow).note(&self.tenant, &self.destination, slow, self.now)
        }

        fn is_slow(&self) -> bool {
            (self.slow).is_slow(&self.tenant, &self.destination, self.now)
        }
    }

    #[test]
    fn a_one_percent_slow_tail_leaves_the_destination_unmarked() {
        // A busy receiver (a thousand calls in 20 s) and a quieter one (a thousand in five
        // minutes), one call in a hundred slow, the very first among them.
        for gap in [ms(20), ms(300)] {
            let mut calls = Calls::new();
            for i in 0..1000 {
                calls.call(gap, i % 100 == 0);
                assert!(!calls.is_slow(), "marked at call {i}, {gap} apart");
            }
        }
    }

    #[test]
    fn a_destination_with_most_calls_slow_is_marked_once_there_are_enough() {
        let mut calls = Calls::new();
        let mut marked_at = None;
        for i in 0..SLOW_MIN_CALLS * 2 {
            // Three calls in four slow, a second apart.
            if calls.call(ms(1000), i % 4 != 3) {
                assert_eq!(marked_at, None, "marked once");
                marked_at = Some(i + 1);
            }
            assert_eq!(calls.is_slow(), i + 1 >= SLOW_MIN_CALLS, "after call {i}");
        }
        assert_eq!(marked_at, Some(SLOW_MIN_CALLS));
    }

    #[test]
    fn the_share_counts_from_its_threshold() {
        let least = SLOW_MIN_CALLS * SLOW_SHARE_PERCENT / 100;
        for (slow_calls, marked) in [(least - 1, false), (least, true)] {
            let mut calls = Calls::new();
            for i in 0..SLOW_MIN_CALLS {
                calls.call(ms(100), i < slow_calls);
            }
            assert_eq!(calls.is_slow(), marked, "{slow_calls} slow calls");
        }
    }

    #[test]
    fn fewer_calls_than_the_minimum_are_never_marked() {
        let mut calls = Calls::new();
        for _ in 0..SLOW_MIN_CALLS - 1 {
            calls.call(ms(100), true);
        }
        assert!(!calls.is_slow(), "every call slow, but too few");
        // Every call slow for ten minutes, but never enough in one window.
        let mut calls = Calls::new();
        let gap = window() / SLOW_MIN_CALLS as i32 + ms(1000);
        for _ in 0..(10 * 60_000 / gap.num_milliseconds()) {
            calls.call(gap, true);
            assert!(!calls.is_slow());
        }
    }

    #[test]
    fn calls_older_than_the_window_no_longer_count() {
        let mut calls = Calls::new();
        for _ in 0..SLOW_MIN_CALLS - 1 {
            calls.call(ms(100), true);
        }
        // Had these slow calls still counted, one more slow call would make a majority.
        calls.call(window(), true);
        for _ in 0..SLOW_MIN_CALLS - 1 {
            calls.call(ms(100), false);
        }
        assert!(!calls.is_slow(), "one slow call in the window's calls");
    }

    #[test]
    fn a_mark_is_held_while_the_rule_is_met_and_then_runs_out() {
        let mut calls = Calls::new();
        for _ in 0..SLOW_MIN_CALLS {
            calls.call(ms(100), true);
        }
        assert!(calls.is_slow());
        // Still slow half a window later: the mark is held from then.
        assert!(!calls.call(window() / 2, true), "marked already");
        calls.now += SLOW_MEMORY - ms(1);
        assert!(calls.is_slow(), "held from the latest call");
        calls.now += ms(1);
        assert!(!calls.is_slow(), "the mark ran out");
        // Its calls in the window are long gone: it takes the rule met afresh.
        assert!(!calls.call(ms(0), true));
        assert!(!calls.is_slow());
    }

    #[test]
    fn destinations_are_counted_and_marked_apart() {
        let mut calls = Calls::new();
        let other = Destination::of("https://other.test/");
        for _ in 0..SLOW_MIN_CALLS {
            calls.call(ms(100), true);
            (calls.slow).note(&calls.tenant, &other, false, calls.now);
        }
        assert!(calls.is_slow());
        assert!(!calls.slow.is_slow(&calls.tenant, &other, calls.now));
        let tenant = TenantId::parse("other").unwrap();
        assert!(!calls.slow.is_slow(&tenant, &calls.destination, calls.now));
    }

    #[test]
    fn what_is_remembered_stays_within_its_bound() {
        let slow = SlowDestinations::default();
        let tenant = TenantId::parse("acme").unwrap();
        let now: DateTime<Utc> = "2030-01-01T00:00:00Z".parse().unwrap();
        let host = |i: usize| Destination::of(&format!("https://h{i}.test/"));
        for i in 0..KEEP + 10 {
            let at = now + ms(i as i64);
            for _ in 0..SLOW_MIN_CALLS {
                slow.note(&tenant, &host(i), true, at);
            }
        }
        let sizes = || {
            let memory = slow.0.lock().unwrap();
            (memory.counts.len(), memory.marks.len())
        };
        assert_eq!(sizes(), (KEEP, KEEP));
        let at = now + ms(KEEP as i64 + 10);
        assert!(slow.is_slow(&tenant, &host(KEEP + 9), at));
        assert!(
            !slow.is_slow(&tenant, &host(0), at),
            "the soonest to run out went"
        );

        // Past the window and the marks, the next destination's call clears out the idle.
        let later = at + SLOW_MEMORY + window();
        slow.note(&tenant, &host(KEEP + 10), true, later);
        assert_eq!(sizes(), (1, KEEP));
        for _ in 1..SLOW_MIN_CALLS {
            slow.note(&tenant, &host(KEEP + 10), true, later);
        }
        assert_eq!(sizes(), (1, 1));
    }
}
