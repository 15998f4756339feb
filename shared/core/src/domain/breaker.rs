//! A circuit breaker for one destination: after `failures` failed calls
//! in a row spanning at least `span`, it opens. While open, deliveries wait without using
//! up attempts, and one probe call at a time tests the destination, the probes spaced by
//! a backoff that doubles up to `max_probe`; a probe that succeeds closes it. An operator
//! may open it by hand (then no probe is made until it is closed by hand) or close it.
//!
//! Pure: the engine keeps each breaker, asks it before a call ([`Breaker::admit`]), tells
//! it each call's verdict ([`Breaker::on_call`]), and raises the alerts its changes name
//! ([`BreakerAlertBody`]).

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::alert::{AlertTarget, Notify};
use super::destination::Destination;
use super::invalid::{within, Invalid};
use super::notice::ALERT_TIMEOUT;
use super::task::TaskSpec;

/// Failed calls in a row that open a breaker, by default.
pub const DEFAULT_BREAKER_FAILURES: u32 = 20;
pub const MAX_BREAKER_FAILURES: u32 = 10_000;
/// How long the failures must span, at least, by default: a burst of failures from one
/// moment's hiccup does not open it.
pub const DEFAULT_BREAKER_SPAN: Duration = Duration::from_secs(60);
pub const MAX_BREAKER_SPAN: Duration = Duration::from_secs(24 * 3600);
/// The wait before the first probe, by default; each failed probe doubles it.
pub const DEFAULT_FIRST_PROBE: Duration = Duration::from_secs(30);
pub const DEFAULT_MAX_PROBE: Duration = Duration::from_secs(600);
pub const MIN_PROBE: Duration = Duration::from_secs(1);
pub const MAX_PROBE: Duration = Duration::from_secs(24 * 3600);
/// How long a probe may be out before another may go (its call's longest timeout, and
/// room to write its result): a probe whose worker died does not keep the breaker shut.
const PROBE_LEASE: Duration = Duration::from_secs(90);
/// How soon a delivery waiting on a breaker opened by hand looks again: once closed by
/// hand, its deliveries go within this.
pub const HAND_OPENED_RECHECK: Duration = Duration::from_secs(10);
/// How soon, at the latest, a delivery waiting on an open breaker looks again: one closed
/// by hand before its next probe lets its deliveries go within this.
pub const OPEN_RECHECK: Duration = Duration::from_secs(60);
/// How soon a delivery waiting on a probe's answer looks again: a probe that succeeds
/// lets the others go within this.
const PROBE_RECHECK: Duration = Duration::from_secs(5);

/// When a breaker opens, and how it probes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BreakerSettings {
    pub failures: u32,
    #[serde(with = "super::duration_ms")]
    pub span: Duration,
    #[serde(with = "super::duration_ms")]
    pub first_probe: Duration,
    #[serde(with = "super::duration_ms")]
    pub max_probe: Duration,
}

impl Default for BreakerSettings {
    fn default() -> Self {
        Self {
            failures: DEFAULT_BREAKER_FAILURES,
            span: DEFAULT_BREAKER_SPAN,
            first_probe: DEFAULT_FIRST_PROBE,
            max_probe: DEFAULT_MAX_PROBE,
        }
    }
}

impl BreakerSettings {
    /// Settings as a tenant gives them (absent: the default), each refused by its name.
    pub fn new(
        failures: Option<u32>,
        span: Option<Duration>,
        first_probe: Option<Duration>,
        max_probe: Option<Duration>,
    ) -> Result<Self, Invalid> {
        let d = Self::default();
        let failures = failures.unwrap_or(d.failures);
        if !(1..=MAX_BREAKER_FAILURES).contains(&failures) {
            return Err(Invalid::new(
                "failures",
                format!("must be between 1 and {MAX_BREAKER_FAILURES}"),
            ));
        }
        let span = within(
            "span",
            span.unwrap_or(d.span),
            Duration::ZERO,
            MAX_BREAKER_SPAN,
        )?;
        let first_probe = first_probe.unwrap_or(d.first_probe);
        let first_probe = within("first_probe", first_probe, MIN_PROBE, MAX_PROBE)?;
        let max_probe = max_probe.unwrap_or(d.max_probe.max(first_probe));
        let max_probe = within("max_probe", max_probe, first_probe, MAX_PROBE)?;
        Ok(Self {
            failures,
            span,
            first_probe,
            max_probe,
        })
    }

    /// The wait after `failed` probes have failed (the first probe's after none).
    fn probe_wait(&self, failed: u32) -> chrono::Duration {
        let doubled = self.first_probe.saturating_mul(1 << failed.min(20));
        chrono::Duration::from_std(doubled.min(self.max_probe)).unwrap_or(chrono::Duration::MAX)
    }
}

/// What a call told of its destination's health. A receiver that answers, even with a
/// 4xx about one task, is up; one that times out, cannot be reached, answers 5xx, 408
/// or 429, is failing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallHealth {
    Up,
    Failing,
}

impl CallHealth {
    /// The health a call's outcome shows: its status code, or none (no answer).
    pub fn of(status: Option<u16>) -> Self {
        match status {
            Some(408 | 429) | Some(500..) | None => CallHealth::Failing,
            Some(_) => CallHealth::Up,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Breaker {
    Closed {
        /// Failed calls in a row, and when the first of them was.
        failures: u32,
        since: Option<DateTime<Utc>>,
    },
    Open {
        opened_at: DateTime<Utc>,
        /// When the next probe may go.
        probe_at: DateTime<Utc>,
        /// Probes failed since it opened.
        probes_failed: u32,
        /// A probe is out, until this time at the latest.
        probing_until: Option<DateTime<Utc>>,
        /// Opened by an operator: no probe until an operator closes it.
        by_hand: bool,
    },
}

impl Default for Breaker {
    fn default() -> Self {
        Breaker::Closed {
            failures: 0,
            since: None,
        }
    }
}

/// What a breaker lets a delivery do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    /// Closed: call.
    Call,
    /// Open, and this call is its probe.
    Probe,
    /// Open: wait until then, using up no attempt.
    Wait(DateTime<Utc>),
}

/// A change of state, for the alerts and figures it raises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BreakerChange {
    Opened,
    Closed,
}

impl Breaker {
    pub fn is_open(&self) -> bool {
        matches!(self, Breaker::Open { .. })
    }

    /// Whether a delivery may call now; an open breaker whose probe is due lets one
    /// delivery through as its probe, and no other until that probe reports or its lease
    /// ends.
    pub fn admit(&mut self, now: DateTime<Utc>) -> Admission {
        let Breaker::Open {
            probe_at,
            probing_until,
            by_hand,
            ..
        } = self
        else {
            return Admission::Call;
        };
        if *by_hand {
            return Admission::Wait(now + chrono_of(HAND_OPENED_RECHECK));
        }
        if let Some(until) = probing_until.filter(|until| *until > now) {
            return Admission::Wait(until.min(now + chrono_of(PROBE_RECHECK)));
        }
        if *probe_at > now {
            return Admission::Wait((*probe_at).min(now + chrono_of(OPEN_RECHECK)));
        }
        *probing_until = Some(now + chrono_of(PROBE_LEASE));
        Admission::Probe
    }

    /// Notes a call's health; `probe`: the call was this breaker's probe. A call admitted
    /// before the breaker opened may report while it is open: only a probe's report
    /// moves an open breaker.
    pub fn on_call(
        &mut self,
        health: CallHealth,
        probe: bool,
        now: DateTime<Utc>,
        settings: &BreakerSettings,
    ) -> Option<BreakerChange> {
        if let Breaker::Closed { failures, since } = self {
            if health == CallHealth::Up {
                (*failures, *since) = (0, None);
                return None;
            }
            *failures += 1;
            let first = *since.get_or_insert(now);
            let spanned = now.signed_duration_since(first) >= chrono_of(settings.span);
            if *failures < settings.failures || !spanned {
                return None;
            }
            *self = Breaker::Open {
                opened_at: now,
                probe_at: now + settings.probe_wait(0),
                probes_failed: 0,
                probing_until: None,
                by_hand: false,
            };
            return Some(BreakerChange::Opened);
        }
        match (self, health) {
            (Breaker::Open { by_hand: true, .. }, _) => None,
            (open @ Breaker::Open { .. }, CallHealth::Up) if probe => {
                *open = Breaker::default();
                Some(BreakerChange::Closed)
            }
            (
                Breaker::Open {
                    probe_at,
                    probes_failed,
                    probing_until,
                    ..
                },
                CallHealth::Failing,
            ) if probe => {
                *probes_failed += 1;
                *probe_at = now + settings.probe_wait(*probes_failed);
                *probing_until = None;
                None
            }
            _ => None,
        }
    }

    /// Gives back a probe that was claimed but not made; whether there was one out.
    pub fn release_probe(&mut self) -> bool {
        match self {
            Breaker::Open { probing_until, .. } => probing_until.take().is_some(),
            Breaker::Closed { .. } => false,
        }
    }

    /// An operator opens it: it stays open, unprobed, until an operator closes it.
    pub fn open_by_hand(&mut self, now: DateTime<Utc>) -> Option<BreakerChange> {
        let was_open = self.is_open();
        *self = Breaker::Open {
            opened_at: now,
            probe_at: now,
            probes_failed: 0,
            probing_until: None,
            by_hand: true,
        };
        (!was_open).then_some(BreakerChange::Opened)
    }

    /// An operator closes it: deliveries go at once.
    pub fn close_by_hand(&mut self) -> Option<BreakerChange> {
        let was_open = self.is_open();
        *self = Breaker::default();
        was_open.then_some(BreakerChange::Closed)
    }
}

/// What a breaker's operational alert sends, signed like every call, to the tenant's
/// alert destination (else the server's): `destination.opened` or `destination.closed`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BreakerAlertBody {
    #[serde(rename = "type")]
    pub kind: String,
    pub destination: String,
    /// Opened or closed by an operator.
    pub by_hand: bool,
    pub at: DateTime<Utc>,
    /// When its first probe goes (an opened alert, unless opened by hand).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_probe_at: Option<DateTime<Utc>>,
}

impl BreakerAlertBody {
    /// The alert of `change`, which left `breaker` as it is (`by_hand`: an operator's
    /// doing).
    pub fn new(
        destination: &Destination,
        change: BreakerChange,
        breaker: &Breaker,
        by_hand: bool,
        at: DateTime<Utc>,
    ) -> Self {
        let (kind, next_probe_at) = match (change, breaker) {
            (BreakerChange::Opened, Breaker::Open { probe_at, .. }) if !by_hand => {
                ("destination.opened", Some(*probe_at))
            }
            (BreakerChange::Opened, _) => ("destination.opened", None),
            (BreakerChange::Closed, _) => ("destination.closed", None),
        };
        Self {
            kind: kind.into(),
            destination: destination.to_string(),
            by_hand,
            at,
            next_probe_at,
        }
    }
}

/// The alert's task: a JSON POST that raises no alert of its own.
pub fn breaker_alert_spec(target: &AlertTarget, body: &BreakerAlertBody) -> TaskSpec {
    TaskSpec {
        notify: Notify::Never,
        ..TaskSpec::json_post(
            target.url.clone(),
            target.headers.clone(),
            serde_json::to_string(body).unwrap_or_default(),
            ALERT_TIMEOUT,
        )
    }
}

/// One alert per change of one breaker (`version`: the breaker's version the change
/// wrote), however often its registration is tried. The destination is named by a digest
/// of it (FNV-1a, stable across builds), to keep the key short whatever its length.
pub fn breaker_alert_key(destination: &Destination, version: u64) -> String {
    let digest = destination
        .as_str()
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
    format!("boomerang-alert:breaker:{digest:016x}:{version}")
}

fn chrono_of(d: Duration) -> chrono::Duration {
    chrono::Duration::from_std(d).unwrap_or(chrono::Duration::MAX)
}

#[cfg(test)]
mod tests;
