//! Ordered delivery per key ([`crate::domain::order`]) around the lifecycle: a task takes
//! its place in its key's line when it is first stored; before each call it checks that
//! it is the head (else it waits); when it gives its place up (it succeeded, was canceled,
//! or failed and asked to be skipped) the next task's turn is passed on at once.
//!
//! A hand-off lost to a crash between a task's end and the hand-off costs the next task at
//! most [`ORDER_RECHECK`]: a waiting task looks again that often, and the first to find
//! the head's place no longer held gives it up for it.

use std::time::Duration;

use super::delivery::{DeliverOutcome, Step};
use crate::domain::{AttemptRef, OrderSpec, Status, Task, Turn};
use crate::engine::error::EngineError;
use crate::engine::state::Engine;
use crate::metrics::MetricEvent;

/// How long a task waiting on its elders waits before it looks again, should the turn not
/// be passed to it.
pub const ORDER_RECHECK: Duration = Duration::from_secs(30);

/// Places given up in a row before a turn is taken: more means the line is being changed
/// faster than it is read, and the task waits as if an elder held it.
const STALE_PLACES: usize = 16;

impl Engine {
    /// Gives a new task its place in its key's line, before it is first written.
    pub(in crate::engine) async fn take_place(&self, task: &mut Task) -> Result<(), EngineError> {
        let Some(order) = task.spec.order.as_mut() else {
            return Ok(());
        };
        let lines = &self.ports.store.order_keys;
        let now = self.ports.clock.now();
        order.seq = lines
            .take_place(&task.tenant, &order.key, task.id, now)
            .await?;
        Ok(())
    }

    /// Gives up the place of a task that was not written after all (an idempotent repeat
    /// found the first, or the write failed): the line does not wait for it.
    pub(in crate::engine) async fn give_up_place(&self, task: &Task) {
        if let Some(order) = &task.spec.order {
            self.leave_line(task, order).await;
        }
    }

    /// Whether it is `task`'s turn: go on if it is its key's head (or has no key);
    /// otherwise the attempt waits, put off by [`ORDER_RECHECK`] unless the turn is passed
    /// to it sooner.
    pub(in crate::engine) async fn take_turn(
        &self,
        at: &AttemptRef,
        task: &Task,
    ) -> Result<Step<()>, EngineError> {
        let Some(order) = &task.spec.order else {
            return Ok(Step::Continue(()));
        };
        let lines = &self.ports.store.order_keys;
        for _ in 0..STALE_PLACES {
            let head = lines.head(&task.tenant, &order.key).await?;
            let head_task = match &head {
                Some(head) if head.task != task.id => {
                    self.ports.store.tasks.get(&task.tenant, &head.task).await?
                }
                Some(_) => Some(task.clone()),
                None => None,
            };
            match task.turn(head.as_ref(), head_task.as_ref(), self.ports.clock.now()) {
                Turn::Go => return Ok(Step::Continue(())),
                Turn::Wait => break,
                Turn::Stale(seq) => lines.leave(&task.tenant, &order.key, seq).await?,
            }
        }
        let until = self.ports.clock.now() + chrono_of(ORDER_RECHECK);
        self.put_off_in_place(at.clone(), until).await?;
        self.record(MetricEvent::Deferred);
        Ok(Step::Done(DeliverOutcome::Deferred))
    }

    /// After a write that moved `before` on to `after`: a task that gave its place up
    /// passes the turn to the next in line.
    pub(in crate::engine) async fn pass_turn(&self, before: &Task, after: &Task) {
        let Some(order) = &after.spec.order else {
            return;
        };
        if !before.holds_order() || after.holds_order() {
            return;
        }
        self.leave_line(after, order).await;
        if let Err(e) = self.wake_head(after).await {
            // The next task looks again by itself within ORDER_RECHECK.
            tracing::warn!(task = %after.id, key = %order.key, error = %e, "could not pass the turn on");
        }
    }

    /// Before a write that makes a task hold a place it had given up (a failed task that
    /// was to be skipped, retried): it takes a new place, at the end of the line.
    pub(in crate::engine) async fn rejoin(
        &self,
        before: &Task,
        next: &mut Task,
    ) -> Result<(), EngineError> {
        if next.spec.order.is_none() || before.holds_order() || !next.holds_order() {
            return Ok(());
        }
        self.take_place(next).await
    }

    async fn leave_line(&self, task: &Task, order: &OrderSpec) {
        let lines = &self.ports.store.order_keys;
        if let Err(e) = lines.leave(&task.tenant, &order.key, order.seq).await {
            // The next task to look finds the place no longer held and gives it up.
            tracing::warn!(task = %task.id, key = %order.key, error = %e, "could not give up a place in line");
        }
    }

    /// Arms the key's head now if it was waiting (due already): its turn has come.
    async fn wake_head(&self, after: &Task) -> Result<(), EngineError> {
        let Some(order) = &after.spec.order else {
            return Ok(());
        };
        let lines = &self.ports.store.order_keys;
        let Some(head) = lines.head(&after.tenant, &order.key).await? else {
            return Ok(());
        };
        let Some(next) = self
            .ports
            .store
            .tasks
            .get(&after.tenant, &head.task)
            .await?
        else {
            return Ok(());
        };
        let now = self.ports.clock.now();
        match next.pending_work() {
            Some(work) if next.status == Status::Scheduled && work.due_at <= now => {
                self.arm_in_place(work.attempt, now).await
            }
            _ => Ok(()),
        }
    }
}

fn chrono_of(d: Duration) -> chrono::Duration {
    chrono::Duration::from_std(d).unwrap_or(chrono::Duration::MAX)
}
