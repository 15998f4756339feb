//! A task's flow limits, checked before its attempt is claimed: a slot of its
//! `parallelism` held until the call ends, then a start counted in the flow's current
//! window (`rate`). A task over a limit, or of a paused flow, is put off (re-armed)
//! unclaimed and uncounted: to the window where its turn falls for the rate; for a slot,
//! after waiting a while here for one; for a pause, until it is resumed.

use std::time::Duration;

use chrono::{DateTime, DurationRound, Utc};

use crate::clock::Clock;
use crate::domain::{AttemptRef, FlowSpec, Task};
use crate::engine::error::EngineError;
use crate::engine::state::Engine;
use crate::ports::{FlowCounters, FlowPorts, SlotHolder};

/// How long a delivery waits here for one of its flow's slots before it is put off.
const SLOT_WAIT: Duration = Duration::from_secs(5);
/// How soon a task put off for want of a flow slot looks again.
const SLOT_RETRY: chrono::Duration = chrono::Duration::milliseconds(500);

/// How soon a task of a paused flow looks again (resuming wakes those noted as waiting
/// at once; this is for any whose note was lost).
const PAUSED_LOOK: chrono::Duration = chrono::Duration::seconds(60);
/// A rate deferral is armed this fraction of the timer's precision early: a quarter, so
/// that a fire up to a second late, plus its carriage, lands inside a one-second window.
const TURN_LEAD: u32 = 4;
/// At most this many asks of the rate in one delivery (the second after waiting here).
const TURN_ASKS: u32 = 2;

/// What a task's flow allows now.
pub(in crate::engine) enum FlowAdmission {
    /// Go; the flow's slot (if it limits parallelism) is held by this task.
    Go(Option<FlowSlot>),
    /// Over a limit: look again at this time.
    Wait(DateTime<Utc>),
}

/// A held slot of a flow, freed with [`Engine::free_flow_slot`] once the call ends.
pub(in crate::engine) struct FlowSlot(SlotHolder);

impl Engine {
    /// Checks `task`'s flow, if it has one: its pause, then its limits. A task put off is
    /// noted as waiting in its flow (listed, and woken when a pause ends).
    pub(in crate::engine) async fn admit_flow(
        &self,
        at: &AttemptRef,
        task: &Task,
        lease_until: DateTime<Utc>,
    ) -> Result<FlowAdmission, EngineError> {
        let (Some(flow), Some(ports)) = (&task.spec.flow, &self.ports.store.flows) else {
            return Ok(FlowAdmission::Go(None));
        };
        let admission = match ports.pauses.flow_paused(&task.tenant, flow.key()).await? {
            true => FlowAdmission::Wait(self.ports.clock.now() + PAUSED_LOOK),
            false => self.limits_allow(task, flow, ports, lease_until).await?,
        };
        if let FlowAdmission::Wait(until) = admission {
            let now = self.ports.clock.now();
            let noted = ports
                .counters
                .note_waiting(&task.tenant, flow.key(), at, (now, until));
            if let Err(e) = noted.await {
                tracing::warn!(task = %task.id, flow = %flow.key(), error = %e, "noting a task waiting in its flow failed");
            }
        }
        Ok(admission)
    }

    /// Takes one of the flow's slots (waiting a while for one), then counts the start in
    /// the flow's window. The slot comes first so that a start is counted in the window it
    /// happens in.
    ///
    /// A timer that fires up to a second late would now and then carry a fire armed for a
    /// window's start past that window's end, and a window's unused starts are lost for
    /// good; so a rate deferral is armed [`TURN_LEAD`] of the timer's precision early, and
    /// a turn that near is waited for here (with the flow's slot given back meanwhile).
    async fn limits_allow(
        &self,
        task: &Task,
        flow: &FlowSpec,
        ports: &FlowPorts,
        lease_until: DateTime<Utc>,
    ) -> Result<FlowAdmission, EngineError> {
        let counters = ports.counters.as_ref();
        let clock = self.ports.clock.as_ref();
        let lead = self.ports.timer.precision() / TURN_LEAD;
        let lead = chrono::Duration::from_std(lead).unwrap_or(chrono::Duration::zero());
        let mut asks = 0;
        loop {
            let slot = match flow.parallelism() {
                None => None,
                Some(parallelism) => {
                    let holder = SlotHolder::new(&task.id);
                    let slot = (parallelism, &holder);
                    let taken = take_flow_slot(counters, task, flow, slot, lease_until, clock);
                    if !taken.await? {
                        return Ok(FlowAdmission::Wait(clock.now() + SLOT_RETRY));
                    }
                    Some(FlowSlot(holder))
                }
            };
            let Some(rate) = flow.rate() else {
                return Ok(FlowAdmission::Go(slot));
            };
            let now = clock.now();
            let turn = turn_of(counters, task, flow, rate, now).await;
            if let Ok(None) = turn {
                return Ok(FlowAdmission::Go(slot));
            }
            if let Some(slot) = &slot {
                self.free_flow_slot(task, slot).await;
            }
            let turn = turn?.unwrap_or(now);
            asks += 1;
            let wait = turn - now;
            if wait > lead || asks == TURN_ASKS {
                return Ok(FlowAdmission::Wait(turn - lead));
            }
            tokio::time::sleep(wait.to_std().unwrap_or_default()).await;
        }
    }

    /// Frees the flow slot `task` holds. A failure is logged: the slot's lease frees it.
    pub(in crate::engine) async fn free_flow_slot(&self, task: &Task, slot: &FlowSlot) {
        let (Some(flow), Some(ports)) = (&task.spec.flow, &self.ports.store.flows) else {
            return;
        };
        if let Err(e) = ports
            .counters
            .free_slot(&task.tenant, flow.key(), &slot.0)
            .await
        {
            tracing::warn!(task = %task.id, flow = %flow.key(), error = %e, "freeing a flow slot failed; its lease will");
        }
    }
}

/// Counts a start of `task` in its flow's window at `now`: `None` if that is within
/// `rate`, otherwise the start of the window where its turn falls. The n-th ask of a full
/// window comes back where, at this pace, its turn is: a backlog spreads over the windows
/// ahead instead of all of it asking again in the next one.
async fn turn_of(
    counters: &dyn FlowCounters,
    task: &Task,
    flow: &FlowSpec,
    rate: u32,
    now: DateTime<Utc>,
) -> Result<Option<DateTime<Utc>>, EngineError> {
    let (window, period) = window_of(flow, now);
    let asked = counters.ask_start(&task.tenant, flow.key(), window).await?;
    if asked <= u64::from(rate) {
        return Ok(None);
    }
    Ok(Some(window + period * windows_ahead(asked, rate)))
}

/// Takes one of the flow's slots for `holder`, waiting up to [`SLOT_WAIT`] for one to be
/// freed. False if none was.
async fn take_flow_slot(
    counters: &dyn FlowCounters,
    task: &Task,
    flow: &FlowSpec,
    (parallelism, holder): (u32, &SlotHolder),
    lease_until: DateTime<Utc>,
    clock: &dyn Clock,
) -> Result<bool, EngineError> {
    let (tenant, key) = (&task.tenant, flow.key());
    let deadline = tokio::time::Instant::now() + SLOT_WAIT;
    loop {
        let now = clock.now();
        if (counters.take_slot(tenant, key, parallelism, holder, now, lease_until)).await? {
            return Ok(true);
        }
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        if left.is_zero() {
            return Ok(false);
        }
        counters.slot_freed(tenant, key, left).await;
    }
}

/// The window of `flow` that `now` falls in, and the flow's period. Windows are aligned
/// to the epoch, so every worker counts in the same ones.
fn window_of(flow: &FlowSpec, now: DateTime<Utc>) -> (DateTime<Utc>, chrono::Duration) {
    let period = chrono::Duration::from_std(flow.period()).unwrap_or(chrono::Duration::seconds(1));
    (now.duration_trunc(period).unwrap_or(now), period)
}

/// How many windows ahead the `asked`-th ask of a full window (`asked > rate`) comes back.
fn windows_ahead(asked: u64, rate: u32) -> i32 {
    let ahead = (asked - 1) / u64::from(rate.max(1));
    i32::try_from(ahead).unwrap_or(i32::MAX)
}

#[cfg(test)]
mod tests {
    use super::windows_ahead;

    #[test]
    fn a_backlog_spreads_over_the_windows_ahead() {
        assert_eq!(windows_ahead(4, 3), 1);
        assert_eq!(windows_ahead(6, 3), 1);
        assert_eq!(windows_ahead(7, 3), 2);
        assert_eq!(windows_ahead(u64::MAX, 1), i32::MAX);
    }
}
