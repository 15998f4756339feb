//! Draining: the line past which no call starts (a Lambda invocation's end), and the
//! drain of a shutdown, which lets calls under way finish and hands back the rest (the
//! state they share is [`super::stopping`]'s).

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::time::Duration;

use chrono::{DateTime, Utc};

use super::outcome::{DeliverOutcome, Step};
use super::stopping::{Drained, WRITE_ROOM};
use crate::domain::{AttemptRef, Task, TaskId};
use crate::engine::error::EngineError;
use crate::engine::state::Engine;

impl Engine {
    /// From now on (a Lambda invocation's start), no call starts unless it can end (its
    /// timeout, and a second to write its result) before `line`, the invocation's
    /// deadline; `None` lifts the line. A call too long for the whole invocation still
    /// starts (stopping it would only send it round again). Attempts it stops are left
    /// due: armed again at once where the timer is durable (another invocation takes
    /// them), and otherwise found by the next sweep.
    pub fn deliver_until(&self, line: Option<DateTime<Utc>>) {
        let drawn = line.map(|line| (self.ports.clock.now(), line));
        *self.stopping.line.lock().unwrap_or_else(|e| e.into_inner()) = drawn;
    }

    /// Starts no call from now on: a delivery that has not called yet gives its attempt
    /// back, or leaves it due. The first step of [`Self::drain`].
    pub fn stop_calls(&self) {
        self.stopping.halted.store(true, Ordering::SeqCst);
    }

    /// Stops starting calls, waits up to `grace` for the calls under way to end and their
    /// results to be written, then hands back the attempts still under way.
    pub async fn drain(&self, grace: Duration) -> Result<Drained, EngineError> {
        self.drain_unless(grace, std::future::pending()).await
    }

    /// [`Self::drain`], whose wait also ends when `cut` does (an operator's second stop
    /// signal): the attempts still under way are handed back then, due at once, rather
    /// than left claimed until their leases run out, as a killed process would leave them.
    pub async fn drain_unless(
        &self,
        grace: Duration,
        cut: impl std::future::Future<Output = ()>,
    ) -> Result<Drained, EngineError> {
        self.stop_calls();
        let under_way: Vec<TaskId> = self.stopping.still_claimed().iter().map(|t| t.id).collect();
        let deadline = tokio::time::Instant::now() + grace;
        tokio::pin!(cut);
        loop {
            let settled = self.stopping.settled.notified();
            if self.stopping.still_claimed().is_empty() {
                break;
            }
            let one_settled = tokio::select! {
                waited = tokio::time::timeout_at(deadline, settled) => waited.is_ok(),
                () = &mut cut => false,
            };
            if !one_settled {
                break;
            }
        }
        let left = self.stopping.still_claimed();
        let mut handed_back = 0;
        for claimed in &left {
            let now = self.ports.clock.now();
            if self
                .give_back(claimed, now, "the server is stopping")
                .await?
                == DeliverOutcome::GivenBack
            {
                handed_back += 1;
            }
        }
        // A call ended if its attempt was under way and is settled, not given back
        // uncalled (a claim the drain caught between its write and its call).
        let uncalled = self.stopping.uncalled();
        let unsettled: HashSet<TaskId> = left.iter().map(|t| t.id).collect();
        let finished = under_way
            .iter()
            .filter(|id| !unsettled.contains(id) && !uncalled.contains(id))
            .count();
        Ok(Drained {
            finished,
            handed_back: handed_back + uncalled.len(),
        })
    }

    /// [`DeliverOutcome::Stopped`] if `task`'s call could not end before the stop line,
    /// with the attempt left due (armed again at once where the timer is durable).
    pub(in crate::engine) async fn check_stop_line(
        &self,
        at: &AttemptRef,
        task: &Task,
    ) -> Result<Step<()>, EngineError> {
        let now = self.ports.clock.now();
        let needs = task.spec.timeout.saturating_add(WRITE_ROOM);
        let needs = chrono::Duration::from_std(needs).unwrap_or(chrono::Duration::MAX);
        if self.stopping.allows(now, needs) {
            return Ok(Step::Continue(()));
        }
        if self.ports.timer.durable() {
            self.arm_in_place(at.clone(), now).await?;
        }
        Ok(Step::Done(DeliverOutcome::Stopped))
    }
}
