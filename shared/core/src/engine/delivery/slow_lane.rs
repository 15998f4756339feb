//! Calls to slow destinations, handed to a lane of their own where the backend has one
//! ([`crate::ports::SlowLane`]). A call that takes [`EngineSettings::slow_call`] or longer
//! marks its tenant's destination slow for [`SLOW_MEMORY`]; while it is, an attempt that
//! comes due there through the shared timers is handed over instead of called, so that it
//! holds up only other slow calls. Each process learns on its own, from its own calls: a
//! fleet's instances each send a destination's calls the shared way until one of them
//! takes long, and a destination that answers quickly again is back in the shared lane
//! [`SLOW_MEMORY`] after its last slow call.
//!
//! [`EngineSettings::slow_call`]: crate::engine::EngineSettings::slow_call
//! [`SLOW_MEMORY`]: super::slow_marks::SLOW_MEMORY

use std::time::Duration;

use chrono::{DateTime, Utc};

use super::outcome::{DeliverOutcome, Step};
use crate::domain::{AttemptRef, Destination, Task, TenantId};
use crate::engine::error::EngineError;
use crate::engine::state::Engine;
use crate::metrics::MetricEvent;

/// Which way an attempt came: through the shared timers, or through the slow lane (which
/// delivers it whatever its destination's mark).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    Shared,
    SlowLane,
}

impl Engine {
    /// Marks the destination slow if a call that ran from `started` to `finished` took
    /// [`crate::engine::EngineSettings::slow_call`] or longer (only where there is a slow
    /// lane to hand its attempts to).
    pub(in crate::engine) fn note_call_time(
        &self,
        tenant: &TenantId,
        destination: &Destination,
        (started, finished): (DateTime<Utc>, DateTime<Utc>),
    ) {
        if self.ports.slow_lane.is_none() {
            return;
        }
        let took = (finished - started).to_std().unwrap_or_default();
        if took >= self.settings.slow_call {
            tracing::info!(%tenant, %destination, took_ms = took.as_millis() as u64, "slow call; the destination's attempts go to the slow lane");
            self.slow.mark(tenant, destination, finished);
        }
    }

    /// Hands attempt `at` of `task` (as read) to the slow lane if the attempt came the
    /// shared way, its destination is marked slow and the claim would take it now: `Some`
    /// outcome if handed over. Any other fire (early, stale, leased) goes the usual way,
    /// which settles it at once. A hand-over that fails is logged and the attempt is
    /// delivered here.
    pub(in crate::engine) async fn hand_over_if_slow(
        &self,
        at: &AttemptRef,
        task: &Task,
        destination: &Destination,
        route: Route,
    ) -> Result<Option<DeliverOutcome>, EngineError> {
        let Some(slow_lane) = self.ports.slow_lane.as_ref() else {
            return Ok(None);
        };
        let now = self.ports.clock.now();
        if route != Route::Shared
            || !self.slow.is_slow(&task.tenant, destination, now)
            || task.claim(at.attempt, now, Duration::ZERO).is_err()
        {
            return Ok(None);
        }
        // A schedule's occurrence registers the next one before it waits in the slow lane:
        // a slot that passed meanwhile would count as missed.
        match self.take_occurrence(at, task).await? {
            Step::Continue(()) => {}
            Step::Done(outcome) => return Ok(Some(outcome)),
            Step::Reread => return Ok(None),
        }
        match slow_lane.hand_over(at).await {
            Ok(()) => {
                self.record(MetricEvent::HandedToSlowLane);
                Ok(Some(DeliverOutcome::HandedOver))
            }
            Err(e) => {
                tracing::warn!(task = %at.task_id, error = %e, "could not hand the attempt to the slow lane; delivering it here");
                Ok(None)
            }
        }
    }
}
