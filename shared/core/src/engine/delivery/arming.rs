//! Arming timers: when an attempt's timer is armed relative to its task's write, and what
//! a timer that fails to arm leaves behind.

use chrono::{DateTime, Utc};

use crate::domain::{Attempt, AttemptRef, Task, TaskId};
use crate::engine::error::EngineError;
use crate::engine::state::Engine;
use crate::ports::TimerError;

impl Engine {
    /// Arms `attempt` again at once: for a timer that was handed back after it failed to
    /// fire (`deliver` copes with whatever state the task is in). Returns whether it armed.
    pub async fn rearm(&self, attempt: AttemptRef) -> bool {
        self.arm(attempt, self.ports.clock.now()).await
    }

    /// Arms a timer; a failure is logged and left to the sweep. Returns whether it armed.
    pub(in crate::engine) async fn arm(&self, attempt: AttemptRef, at: DateTime<Utc>) -> bool {
        let (task, number) = (attempt.task_id, attempt.attempt);
        let result = self.ports.timer.arm(attempt, at).await;
        self.armed(task, number, result)
    }

    /// Arms the timer that takes a fire's place (the fire came early, or is to be looked
    /// at again): a failure fails the fire, which a durable timer then brings again,
    /// instead of letting the fire go with nothing armed in its place.
    pub(in crate::engine) async fn arm_in_place(
        &self,
        attempt: AttemptRef,
        at: DateTime<Utc>,
    ) -> Result<(), EngineError> {
        Ok(self.ports.timer.arm(attempt, at).await?)
    }

    /// [`Self::arm_in_place`], putting the attempt off past its stored due time.
    pub(in crate::engine) async fn put_off_in_place(
        &self,
        attempt: AttemptRef,
        until: DateTime<Utc>,
    ) -> Result<(), EngineError> {
        Ok(self.ports.timer.put_off(attempt, until).await?)
    }

    /// Whether an arm worked; a failure is logged and left to the sweep.
    pub(in crate::engine) fn armed(
        &self,
        task: TaskId,
        attempt: Attempt,
        result: Result<(), TimerError>,
    ) -> bool {
        match result {
            Ok(()) => true,
            Err(e) => {
                tracing::error!(
                    task = %task, %attempt, error = %e,
                    "could not arm timer; the sweeper will"
                );
                false
            }
        }
    }

    /// A durable timer is armed *before* the task is written: a crash in between leaves an
    /// orphan timer (harmless: it finds no such attempt), never a stored task without a
    /// timer, so the store need not keep the task where the sweep looks
    /// ([`Task::timer_armed`]). If arming fails, the task is written unarmed and the sweep
    /// arms it.
    pub(in crate::engine) async fn arm_before_write(&self, task: &mut Task) {
        if !self.ports.timer.durable() {
            return;
        }
        if let Some(work) = task.pending_work().filter(|w| w.kind.is_timed()) {
            task.timer_armed = self.arm(work.attempt, work.due_at).await;
        }
    }

    /// An in-memory timer is armed *after* the write: it could not outlive a crash anyway,
    /// and the store keeps every task's pending work for the sweep at start-up.
    pub(in crate::engine) async fn arm_after_write(&self, task: &Task) {
        if self.ports.timer.durable() {
            return;
        }
        if let Some(work) = task.pending_work().filter(|w| w.kind.is_timed()) {
            self.arm(work.attempt, work.due_at).await;
        }
    }

    /// Arms a task's pending work after its write, whatever the timer. For a transition
    /// out of a state where a fire finds nothing to do (a redrive of a failed task, the
    /// release of a held one), a durable timer armed before the write may fire while the
    /// store still shows the old state, and be dropped; this arm comes after the write
    /// (the cost: such a transition arms its timer twice).
    pub(in crate::engine) async fn arm_written(&self, task: &Task) {
        if let Some(work) = task.pending_work().filter(|w| w.kind.is_timed()) {
            self.arm(work.attempt, work.due_at).await;
        }
    }
}
