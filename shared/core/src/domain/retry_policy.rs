//! When the next attempt happens, and when to give up.
//!
//! Attempt numbers here count within one *round*: the first call of a task (or of a redrive)
//! is attempt 1, and `delay_before(n)` is the wait between attempt `n - 1` and attempt `n`.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::duration_ms;
use super::invalid::{within, Invalid};
use super::limits::{
    DEFAULT_BACKOFF_ATTEMPTS, DEFAULT_MAX_INTERVAL, MAX_ATTEMPTS, MAX_DURATION, MAX_JITTER,
    MAX_SCHEDULE_STEPS, MAX_STEP, MAX_UNLIMITED_DURATION, MIN_STEP, PERMANENT_STATUSES,
};
use super::time::checked_add;

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

/// The kinds of backoff that grow by a rule (a `schedule` lists its waits instead).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackoffKind {
    Fixed,
    Linear,
    Exponential,
}

impl BackoffKind {
    /// `fixed`, `linear` or `exponential`; the refusal names the field `backoff`.
    pub fn parse(name: &str) -> Result<Self, Invalid> {
        match name {
            "fixed" => Ok(Self::Fixed),
            "linear" => Ok(Self::Linear),
            "exponential" => Ok(Self::Exponential),
            _ => Err(Invalid::new(
                "backoff",
                "must be `fixed`, `linear` or `exponential`",
            )),
        }
    }
}

impl Backoff {
    /// Explicit waits: 1 to [`MAX_SCHEDULE_STEPS`] of them, each within
    /// [`MIN_STEP`]..=[`MAX_STEP`].
    pub fn schedule(steps: Vec<Duration>) -> Result<Self, Invalid> {
        if steps.is_empty() || steps.len() > MAX_SCHEDULE_STEPS {
            return Err(Invalid::new(
                "schedule",
                format!("must list between 1 and {MAX_SCHEDULE_STEPS} waits"),
            ));
        }
        for (i, step) in steps.iter().enumerate() {
            within(&format!("schedule[{i}]"), *step, MIN_STEP, MAX_STEP)?;
        }
        Ok(Self::Schedule { steps })
    }

    /// A wait that grows by `kind`'s rule from `interval`, capped at `max_interval` (by
    /// default [`DEFAULT_MAX_INTERVAL`], or `interval` if that is longer).
    pub fn curve(
        kind: BackoffKind,
        interval: Duration,
        max_interval: Option<Duration>,
    ) -> Result<Self, Invalid> {
        let interval = within("interval", interval, MIN_STEP, MAX_STEP)?;
        let max_interval = max_interval
            .map(|m| within("max_interval", m, MIN_STEP, MAX_STEP))
            .transpose()?;
        if max_interval.is_some_and(|m| m < interval) {
            return Err(Invalid::new(
                "max_interval",
                "must not be shorter than `interval`",
            ));
        }
        let max_interval = max_interval.unwrap_or(DEFAULT_MAX_INTERVAL.max(interval));
        Ok(match kind {
            BackoffKind::Fixed => Self::Fixed { interval },
            BackoffKind::Linear => Self::Linear {
                interval,
                max_interval,
            },
            BackoffKind::Exponential => Self::Exponential {
                interval,
                max_interval,
            },
        })
    }

    /// Checks a backoff built by hand as [`Self::schedule`] and [`Self::curve`] would.
    fn validated(self) -> Result<Self, Invalid> {
        match self {
            Self::Schedule { steps } => Self::schedule(steps),
            Self::Fixed { interval } => Self::curve(BackoffKind::Fixed, interval, None),
            Self::Linear {
                interval,
                max_interval,
            } => Self::curve(BackoffKind::Linear, interval, Some(max_interval)),
            Self::Exponential {
                interval,
                max_interval,
            } => Self::curve(BackoffKind::Exponential, interval, Some(max_interval)),
        }
    }

    /// The attempts a policy with this backoff makes when it names no limit: one per
    /// listed wait (and the first), or [`DEFAULT_BACKOFF_ATTEMPTS`].
    pub fn default_attempts(&self) -> u32 {
        match self {
            Self::Schedule { steps } => (steps.len() as u32 + 1).min(MAX_ATTEMPTS),
            _ => DEFAULT_BACKOFF_ATTEMPTS,
        }
    }
}

/// How many attempts a round may make.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MaxAttempts {
    /// The backoff's own number ([`Backoff::default_attempts`]).
    Default,
    /// As many as fit in the policy's `max_duration`, which must then be given.
    Unlimited,
    /// This many, the first included: 1 to [`MAX_ATTEMPTS`].
    Limit(i64),
}

/// A retry policy: valid by construction ([`RetryPolicy::new`]); stored policies are
/// read back as they were written.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RetryPolicy {
    backoff: Backoff,
    /// Total attempts in a round, the first included; `None`: as many as fit in
    /// `max_duration` (which is then set, and at most [`MAX_UNLIMITED_DURATION`]).
    max_attempts: Option<u32>,
    /// Give up when the next attempt would start later than this after the round began.
    #[serde(with = "duration_ms::option", default)]
    max_duration: Option<Duration>,
    /// Each wait is scaled by a random factor in `[1 - jitter, 1 + jitter]`.
    #[serde(default)]
    jitter: f64,
    /// Response statuses that fail the task at once (410 always does).
    #[serde(default)]
    permanent_statuses: Vec<u16>,
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
    /// A policy, if every rule holds; the refusal names the field (relative to the
    /// policy: `max_attempts`, `schedule[2]`, `permanent_statuses[0]`).
    pub fn new(
        backoff: Backoff,
        max_attempts: MaxAttempts,
        max_duration: Option<Duration>,
        jitter: f64,
        permanent_statuses: &[i64],
    ) -> Result<Self, Invalid> {
        let backoff = backoff.validated()?;
        let max_attempts = match max_attempts {
            MaxAttempts::Default => Some(backoff.default_attempts()),
            MaxAttempts::Unlimited => None,
            MaxAttempts::Limit(n) if (1..=i64::from(MAX_ATTEMPTS)).contains(&n) => Some(n as u32),
            MaxAttempts::Limit(_) => {
                return Err(Invalid::new(
                    "max_attempts",
                    format!("must be between 1 and {MAX_ATTEMPTS}, or null"),
                ))
            }
        };
        // Without an attempt limit, the round's length is the limit, and a short one.
        let longest = match max_attempts {
            Some(_) => MAX_DURATION,
            None => MAX_UNLIMITED_DURATION,
        };
        let max_duration = max_duration
            .map(|d| within("max_duration", d, MIN_STEP, longest))
            .transpose()?;
        if max_attempts.is_none() && max_duration.is_none() {
            return Err(Invalid::new(
                "max_duration",
                "is required when `max_attempts` is null",
            ));
        }
        // Written so that a NaN is refused too.
        if !(0.0..=MAX_JITTER).contains(&jitter) {
            return Err(Invalid::new(
                "jitter",
                format!("must be a fraction between 0 and {MAX_JITTER}"),
            ));
        }
        let permanent_statuses = permanent_statuses
            .iter()
            .enumerate()
            .map(|(i, &s)| match s {
                s if PERMANENT_STATUSES.contains(&s) => Ok(s as u16),
                _ => Err(Invalid::new(
                    format!("permanent_statuses[{i}]"),
                    format!(
                        "must be an HTTP status between {} and {}",
                        PERMANENT_STATUSES.start(),
                        PERMANENT_STATUSES.end()
                    ),
                )),
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            backoff,
            max_attempts,
            max_duration,
            jitter,
            permanent_statuses,
        })
    }

    /// This policy with at most `n` attempts in a round.
    pub fn with_max_attempts(self, n: u32) -> Result<Self, Invalid> {
        let statuses = self.statuses();
        Self::new(
            self.backoff,
            MaxAttempts::Limit(i64::from(n)),
            self.max_duration,
            self.jitter,
            &statuses,
        )
    }

    /// This policy, failing at once on these statuses too.
    pub fn with_permanent_statuses(self, statuses: &[i64]) -> Result<Self, Invalid> {
        let max_attempts = match self.max_attempts {
            Some(n) => MaxAttempts::Limit(i64::from(n)),
            None => MaxAttempts::Unlimited,
        };
        Self::new(
            self.backoff,
            max_attempts,
            self.max_duration,
            self.jitter,
            statuses,
        )
    }

    fn statuses(&self) -> Vec<i64> {
        self.permanent_statuses
            .iter()
            .map(|&s| i64::from(s))
            .collect()
    }

    pub fn backoff(&self) -> &Backoff {
        &self.backoff
    }

    /// Total attempts in a round, the first included; `None`: as many as fit in
    /// [`Self::max_duration`].
    pub fn max_attempts(&self) -> Option<u32> {
        self.max_attempts
    }

    /// Give up when the next attempt would start later than this after the round began.
    pub fn max_duration(&self) -> Option<Duration> {
        self.max_duration
    }

    /// Each wait is scaled by a random factor in `[1 - jitter, 1 + jitter]`.
    pub fn jitter(&self) -> f64 {
        self.jitter
    }

    /// Response statuses that fail the task at once (410 always does).
    pub fn permanent_statuses(&self) -> &[u16] {
        &self.permanent_statuses
    }

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
mod tests;
