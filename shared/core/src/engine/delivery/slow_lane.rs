//! Calls to slow destinations, handed to a lane of their own where the backend has one
//! ([`crate::ports::SlowLane`]). A call that takes [`EngineSettings::slow_call`] or longer
//! counts as slow; a tenant's destination is marked slow when, of its calls that ended in
//! the last [`SLOW_WINDOW`], there were at least [`SLOW_MIN_CALLS`] and at least
//! [`SLOW_SHARE_PERCENT`] percent were slow, so that a busy receiver with a thin slow tail
//! stays in the shared lane. While the mark lasts ([`SLOW_MEMORY`] from the last call that
//! met the rule), an attempt that comes due there through the shared timers is handed over
//! instead of called, so that it holds up only other slow calls. Each process learns on its
//! own, from its own calls: a fleet's instances each send a destination's calls the shared
//! way until their own calls meet the rule, and a destination that answers quickly again is
//! back in the shared lane when its mark runs out.
//!
//! [`EngineSettings::slow_call`]: crate::engine::EngineSettings::slow_call
//! [`SLOW_WINDOW`]: crate::engine::SLOW_WINDOW
//! [`SLOW_MIN_CALLS`]: crate::engine::SLOW_MIN_CALLS
//! [`SLOW_SHARE_PERCENT`]: crate::engine::SLOW_SHARE_PERCENT
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
    /// Counts a call to the destination that ran from `started` to `finished`, slow if it
    /// took [`crate::engine::EngineSettings::slow_call`] or longer, and marks the
    /// destination slow if its recent calls meet the rule (only where there is a slow lane
    /// to hand its attempts to).
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
        let slow = took >= self.settings.slow_call;
        if self.slow.note(tenant, destination, slow, finished) {
            tracing::info!(%tenant, %destination, took_ms = took.as_millis() as u64, "slow calls; the destination's attempts go to the slow lane");
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
