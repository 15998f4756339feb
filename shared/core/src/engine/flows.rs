//! A task's flow limits, checked before its attempt is claimed: a slot of its
//! `parallelism` held until the call ends, then a start counted in the flow's current
//! window (`rate`). A task over a limit is put off (re-armed) unclaimed and uncounted: to
//! the next window for the rate; for a slot, after waiting a while here for one to free.

use std::time::Duration;

use chrono::{DateTime, DurationRound, Utc};

use super::{Engine, EngineError};
use crate::clock::Clock;
use crate::domain::{FlowSpec, Task};
use crate::ports::{FlowCounters, SlotHolder};

/// How long a delivery waits here for one of its flow's slots before it is put off.
const SLOT_WAIT: Duration = Duration::from_secs(5);
/// How soon a task put off for want of a flow slot looks again.
const SLOT_RETRY: chrono::Duration = chrono::Duration::milliseconds(500);

/// What a task's flow allows now.
pub(super) enum FlowAdmission {
    /// Go; the flow's slot (if it limits parallelism) is held by this task.
    Go(Option<FlowSlot>),
    /// Over a limit: look again at this time.
    Wait(DateTime<Utc>),
}

/// A held slot of a flow, freed with [`Engine::free_flow_slot`] once the call ends.
pub(super) struct FlowSlot(SlotHolder);

impl Engine {
    /// Checks `task`'s flow, if it has one, counting its start and taking its slot.
    pub(super) async fn admit_flow(
        &self,
        task: &Task,
        lease_until: DateTime<Utc>,
    ) -> Result<FlowAdmission, EngineError> {
        let (Some(flow), Some(counters)) = (&task.spec.flow, &self.ports.flows) else {
            return Ok(FlowAdmission::Go(None));
        };
        let mut slot = None;
        if let Some(parallelism) = flow.parallelism() {
            let holder = SlotHolder::new(&task.id);
            let slot_taken = take_flow_slot(
                counters.as_ref(),
                task,
                flow,
                parallelism,
                &holder,
                lease_until,
                self.ports.clock.as_ref(),
            )
            .await?;
            if !slot_taken {
                return Ok(FlowAdmission::Wait(self.ports.clock.now() + SLOT_RETRY));
            }
            slot = Some(FlowSlot(holder));
        }
        let now = self.ports.clock.now();
        if let Some(rate) = flow.rate() {
            let (window, period) = window_of(flow, now);
            let asked = counters.ask_start(&task.tenant, flow.key(), window).await;
            let later = match asked {
                Ok(n) if n <= u64::from(rate) => None,
                // The n-th ask of a full window comes back in the window where, at this
                // pace, its turn falls: a backlog spreads over the windows ahead instead of
                // all of it asking again in the next one.
                Ok(n) => Some(window + period * windows_ahead(n, rate)),
                Err(_) => Some(window + period),
            };
            if let Some(until) = later {
                if let Some(slot) = &slot {
                    self.free_flow_slot(task, slot).await;
                }
                asked?;
                return Ok(FlowAdmission::Wait(until));
            }
        }
        Ok(FlowAdmission::Go(slot))
    }

    /// Frees the flow slot `task` holds. A failure is logged: the slot's lease frees it.
    pub(super) async fn free_flow_slot(&self, task: &Task, slot: &FlowSlot) {
        let (Some(flow), Some(counters)) = (&task.spec.flow, &self.ports.flows) else {
            return;
        };
        if let Err(e) = counters.free_slot(&task.tenant, flow.key(), &slot.0).await {
            tracing::warn!(task = %task.id, flow = %flow.key(), error = %e, "freeing a flow slot failed; its lease will");
        }
    }
}

/// Takes one of the flow's slots for `holder`, waiting up to [`SLOT_WAIT`] for one to be
/// freed. False if none was.
async fn take_flow_slot(
    counters: &dyn FlowCounters,
    task: &Task,
    flow: &FlowSpec,
    parallelism: u32,
    holder: &SlotHolder,
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
