//! When the next attempt happens, and when to give up.
//!
//! Attempt numbers here count within one *round*: the first call of a task (or of a redrive)
//! is attempt 1, and `delay_before(n)` is the wait between attempt `n - 1` and attempt `n`.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::duration_ms;
use super::time::checked_add;

/// The shortest and longest step a policy may use.
pub const MIN_STEP: Duration = Duration::from_secs(1);
pub const MAX_STEP: Duration = Duration::from_secs(7 * 24 * 3600);
pub const MAX_ATTEMPTS: u32 = 1000;
/// The longest round without an attempt limit (`max_attempts: None`) may last.
pub const MAX_UNLIMITED_DURATION: Duration = Duration::from_secs(30 * 24 * 3600);
pub const MAX_SCHEDULE_STEPS: usize = 100;
pub const MAX_JITTER: f64 = 0.5;

/// How the wait grows from one attempt to the next.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Backoff {
    /// Explicit waits; the last one repeats if more attempts are allowed than listed.
    Schedule {
        #[serde(with = "duration_ms::vec")]
        steps: Vec<Duration>,
    },
    Fixed {
        #[serde(with = "duration_ms")]
        interval: Duration,
    },
    /// `interval`, `2 × interval`, `3 × interval`, … capped at `max_interval`.
    Linear {
        #[serde(with = "duration_ms")]
        interval: Duration,
        #[serde(with = "duration_ms")]
        max_interval: Duration,
    },
    /// `interval`, `2 × interval`, `4 × interval`, … capped at `max_interval`.
    Exponential {
        #[serde(with = "duration_ms")]
        interval: Duration,
        #[serde(with = "duration_ms")]
        max_interval: Duration,
    },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RetryPolicy {
    pub backoff: Backoff,
    /// Total attempts in a round, the first included; `None`: as many as fit in
    /// `max_duration` (which is then set, and at most [`MAX_UNLIMITED_DURATION`]).
    pub max_attempts: Option<u32>,
    /// Give up when the next attempt would start later than this after the round began.
    #[serde(with = "duration_ms::option", default)]
    pub max_duration: Option<Duration>,
    /// Each wait is scaled by a random factor in `[1 - jitter, 1 + jitter]`.
    #[serde(default)]
    pub jitter: f64,
    /// Response statuses that fail the task at once (410 always does).
    #[serde(default)]
    pub permanent_statuses: Vec<u16>,
}

impl Default for RetryPolicy {
    /// `30s, 1m, 3m, 30m, 30m, 30m, 1h`: eight attempts in all.
    fn default() -> Self {
        let steps = [30, 60, 180, 1800, 1800, 1800, 3600]
            .into_iter()
            .map(Duration::from_secs)
            .collect::<Vec<_>>();
        Self {
            max_attempts: Some(steps.len() as u32 + 1),
            backoff: Backoff::Schedule { steps },
            max_duration: None,
            jitter: 0.0,
            permanent_statuses: Vec::new(),
        }
    }
}

impl RetryPolicy {
    /// The wait before attempt `n` of a round (`n >= 2`), before jitter.
    pub fn delay_before(&self, n: u32) -> Duration {
        let step = n.saturating_sub(2); // attempt 2 uses the first step
        match &self.backoff {
            Backoff::Schedule { steps } => {
                let i = (step as usize).min(steps.len().saturating_sub(1));
                steps.get(i).copied().unwrap_or(MIN_STEP)
            }
            Backoff::Fixed { interval } => *interval,
            Backoff::Linear {
                interval,
                max_interval,
            } => interval.saturating_mul(step + 1).min(*max_interval),
            Backoff::Exponential {
                interval,
                max_interval,
            } => interval
                .saturating_mul(2u32.saturating_pow(step))
                .min(*max_interval),
        }
    }

    /// The wait before attempt `n`, with jitter applied; `u` is uniform in `[0, 1)`.
    pub fn jittered_delay_before(&self, n: u32, u: f64) -> Duration {
        let base = self.delay_before(n);
        // Written so that a NaN (from a corrupt record or a bad draw) means "no jitter".
        if !(self.jitter > 0.0 && (0.0..=1.0).contains(&u)) {
            return base;
        }
        let factor = 1.0 + self.jitter.min(MAX_JITTER) * (2.0 * u - 1.0);
        base.mul_f64(factor)
    }

    /// The longest wait the policy ever uses; also the bound on a honored `Retry-After`.
    pub fn max_interval(&self) -> Duration {
        match &self.backoff {
            Backoff::Schedule { steps } => steps.iter().copied().max().unwrap_or(MIN_STEP),
            Backoff::Fixed { interval } => *interval,
            Backoff::Linear { max_interval, .. } | Backoff::Exponential { max_interval, .. } => {
                *max_interval
            }
        }
    }

    /// Whether a response status ends the task at once without retries.
    pub fn is_permanent(&self, status: u16) -> bool {
        status == 410 || self.permanent_statuses.contains(&status)
    }

    /// When the next attempt should run, or `None` if the round is exhausted.
    ///
    /// `made` is the number of attempts already made in this round. A server's `Retry-After`
    /// replaces the computed wait, bounded by [`Self::max_interval`].
    pub fn next_attempt_at(
        &self,
        made: u32,
        round_started_at: DateTime<Utc>,
        now: DateTime<Utc>,
        retry_after: Option<Duration>,
        u: f64,
    ) -> Option<DateTime<Utc>> {
        if self.max_attempts.is_some_and(|max| made >= max) {
            return None;
        }
        let wait = match retry_after {
            Some(ra) => ra.min(self.max_interval()),
            None => self.jittered_delay_before(made + 1, u),
        };
        // A time past the representable range ends the round rather than panicking.
        let at = checked_add(now, wait)?;
        let limit = self
            .max_duration
            .map(|max| checked_add(round_started_at, max));
        match limit {
            Some(Some(limit)) if at > limit => None,
            _ => Some(at),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    fn arb_backoff() -> impl Strategy<Value = Backoff> {
        let step = (1u64..=7 * 24 * 3600).prop_map(secs);
        prop_oneof![
            prop::collection::vec(step.clone(), 1..=MAX_SCHEDULE_STEPS)
                .prop_map(|steps| Backoff::Schedule { steps }),
            step.clone()
                .prop_map(|interval| Backoff::Fixed { interval }),
            (step.clone(), step.clone()).prop_map(|(a, b)| Backoff::Linear {
                interval: a.min(b),
                max_interval: a.max(b)
            }),
            (step.clone(), step).prop_map(|(a, b)| Backoff::Exponential {
                interval: a.min(b),
                max_interval: a.max(b)
            }),
        ]
    }

    fn arb_policy() -> impl Strategy<Value = RetryPolicy> {
        (arb_backoff(), 1..=MAX_ATTEMPTS, 0.0..=MAX_JITTER).prop_map(
            |(backoff, max_attempts, jitter)| RetryPolicy {
                backoff,
                max_attempts: Some(max_attempts),
                max_duration: None,
                jitter,
                permanent_statuses: vec![],
            },
        )
    }

    #[test]
    fn default_policy_is_the_documented_schedule() {
        let p = RetryPolicy::default();
        let waits: Vec<u64> = (2..=8).map(|n| p.delay_before(n).as_secs()).collect();
        assert_eq!(waits, vec![30, 60, 180, 1800, 1800, 1800, 3600]);
        assert_eq!(p.max_attempts, Some(8));
    }

    #[test]
    fn exponential_doubles_then_caps() {
        let p = RetryPolicy {
            backoff: Backoff::Exponential {
                interval: secs(10),
                max_interval: secs(60),
            },
            ..RetryPolicy::default()
        };
        let waits: Vec<u64> = (2..=7).map(|n| p.delay_before(n).as_secs()).collect();
        assert_eq!(waits, vec![10, 20, 40, 60, 60, 60]);
    }

    #[test]
    fn retry_after_is_bounded_by_max_interval() {
        let p = RetryPolicy {
            backoff: Backoff::Fixed { interval: secs(5) },
            ..RetryPolicy::default()
        };
        let t0 = Utc::now();
        let at = p.next_attempt_at(1, t0, t0, Some(secs(3600)), 0.5).unwrap();
        assert_eq!((at - t0).num_seconds(), 5);
        let at = p.next_attempt_at(1, t0, t0, Some(secs(2)), 0.5).unwrap();
        assert_eq!((at - t0).num_seconds(), 2);
    }

    #[test]
    fn max_duration_ends_the_round() {
        let p = RetryPolicy {
            backoff: Backoff::Fixed { interval: secs(60) },
            max_attempts: Some(100),
            max_duration: Some(secs(150)),
            ..RetryPolicy::default()
        };
        let t0 = Utc::now();
        assert!(p
            .next_attempt_at(2, t0, t0 + chrono::Duration::seconds(60), None, 0.5)
            .is_some());
        assert!(p
            .next_attempt_at(3, t0, t0 + chrono::Duration::seconds(120), None, 0.5)
            .is_none());
    }

    #[test]
    fn without_an_attempt_limit_the_round_lasts_max_duration() {
        let p = RetryPolicy {
            backoff: Backoff::Fixed { interval: secs(60) },
            max_attempts: None,
            max_duration: Some(secs(24 * 3600)),
            ..RetryPolicy::default()
        };
        let t0 = Utc::now();
        let late = t0 + chrono::Duration::hours(23);
        assert!(p.next_attempt_at(5000, t0, late, None, 0.5).is_some());
        let later = t0 + chrono::Duration::seconds(24 * 3600 - 30);
        assert!(p.next_attempt_at(5001, t0, later, None, 0.5).is_none());
    }

    proptest! {
        #[test]
        fn delays_stay_within_policy_bounds(p in arb_policy(), n in 2u32..=200) {
            let d = p.delay_before(n);
            prop_assert!(d >= MIN_STEP);
            prop_assert!(d <= p.max_interval());
        }

        #[test]
        fn growing_backoffs_never_shrink(p in arb_policy(), n in 2u32..=150) {
            if !matches!(p.backoff, Backoff::Schedule { .. }) {
                prop_assert!(p.delay_before(n + 1) >= p.delay_before(n));
            }
        }

        #[test]
        fn jitter_stays_in_range(p in arb_policy(), n in 2u32..=120, u in 0.0f64..1.0) {
            let base = p.delay_before(n).as_secs_f64();
            let d = p.jittered_delay_before(n, u).as_secs_f64();
            prop_assert!(d >= base * (1.0 - p.jitter) - 1e-6);
            prop_assert!(d <= base * (1.0 + p.jitter) + 1e-6);
        }

        #[test]
        fn schedule_lists_are_followed_then_the_last_step_repeats(
            steps in prop::collection::vec(1u64..100_000, 1..=MAX_SCHEDULE_STEPS),
            extra in 0u32..20,
        ) {
            let p = RetryPolicy {
                backoff: Backoff::Schedule { steps: steps.iter().copied().map(secs).collect() },
                ..RetryPolicy::default()
            };
            for (i, s) in steps.iter().enumerate() {
                prop_assert_eq!(p.delay_before(i as u32 + 2), secs(*s));
            }
            let last = *steps.last().unwrap();
            prop_assert_eq!(p.delay_before(steps.len() as u32 + 2 + extra), secs(last));
        }

        #[test]
        fn attempts_never_exceed_max(p in arb_policy(), made in 0u32..=150) {
            let t0 = Utc::now();
            let next = p.next_attempt_at(made, t0, t0, None, 0.5);
            prop_assert_eq!(next.is_some(), made < p.max_attempts.unwrap());
        }
    }
}
