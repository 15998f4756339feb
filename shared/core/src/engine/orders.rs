//! Ordered delivery per key ([`crate::domain::order`]) around the lifecycle: a task takes
//! its place in its key's line when it is first stored; before each call it checks that
//! it is the head (else it waits); when it gives its place up (it succeeded, was canceled,
//! or failed and asked to be skipped) the next task's turn is passed on at once.
//!
//! A hand-off lost to a crash between a task's end and the hand-off costs the next task at
//! most [`MAX_ORDER_RECHECK`]: a waiting task looks again now and then (the next in line
//! every [`ORDER_RECHECK`]), and the first to find the head's place no longer held gives
//! it up for it.

use std::time::Duration;

use super::delivery::{DeliverOutcome, Step};
use crate::domain::time::checked_add;
use crate::domain::{AttemptRef, OrderEntry, OrderKey, OrderSpec, Status, Task, TenantId, Turn};
use crate::engine::error::EngineError;
use crate::engine::state::Engine;
use crate::metrics::MetricEvent;
use crate::ports::OrderKeyState;

/// How long the task next in line waits before it looks again, should the turn not be
/// passed to it; one further back waits as many times longer as it has places before it,
/// and one behind a failed head that blocks the key, the longest.
pub const ORDER_RECHECK: Duration = Duration::from_secs(30);
/// The longest a waiting task waits before it looks again.
pub const MAX_ORDER_RECHECK: Duration = Duration::from_secs(600);

/// Places given up in a row before a turn is taken: more means the line is being changed
/// faster than it is read, and the task waits as if an elder held it.
const STALE_PLACES: usize = 16;

impl Engine {
    /// Gives a new task its place in its key's line, before it is first written (unless it
    /// has one: a batch takes its tasks' places in their order before it writes them side
    /// by side).
    pub(in crate::engine) async fn take_place(&self, task: &mut Task) -> Result<(), EngineError> {
        let Some(order) = task.spec.order.as_mut().filter(|o| o.seq == 0) else {
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
                Turn::Wait => {
                    let now = self.ports.clock.now();
                    let wait = recheck_after(order.seq, head.as_ref(), head_task.as_ref(), now);
                    let waiting = self.wait_turn(at, wait).await?;
                    // A turn passed on between the read and the put-off was overwritten by
                    // it (a local timer keeps one arm per attempt): look once more.
                    let head = lines.head(&task.tenant, &order.key).await?;
                    if head.is_some_and(|h| h.task == task.id && h.seq == order.seq) {
                        self.arm_in_place(at.clone(), self.ports.clock.now())
                            .await?;
                    }
                    return Ok(waiting);
                }
                Turn::Stale(seq) => lines.leave(&task.tenant, &order.key, seq).await?,
            }
        }
        self.wait_turn(at, ORDER_RECHECK).await
    }

    /// Puts the attempt off by `wait`, unless its turn is passed to it sooner.
    async fn wait_turn(&self, at: &AttemptRef, wait: Duration) -> Result<Step<()>, EngineError> {
        let now = self.ports.clock.now();
        // A wait is at most MAX_ORDER_RECHECK: its sum is always a time.
        let until = checked_add(now, wait).unwrap_or(now);
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
        if before.holds_order() || !next.holds_order() {
            return Ok(());
        }
        if let Some(order) = next.spec.order.as_mut() {
            order.seq = 0;
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

/// How long a task at place `seq`, behind `head`, waits before it looks again. The turn is
/// passed to the next task when its elder ends, so these looks only repair a hand-off
/// lost to a crash; a task far back needs none soon, and waiting tasks that all looked
/// every few seconds would crowd the timer queue the hand-offs go through.
fn recheck_after(
    seq: u64,
    head: Option<&OrderEntry>,
    head_task: Option<&Task>,
    now: chrono::DateTime<chrono::Utc>,
) -> Duration {
    let blocked = head_task.is_some_and(|t| t.status == Status::Failed);
    let behind = head.map_or(1, |h| seq.saturating_sub(h.seq)).max(1);
    let by_place = ORDER_RECHECK * u32::try_from(behind).unwrap_or(u32::MAX);
    // A head due later: nothing moves before it is.
    let head_due = (head_task.and_then(|t| t.next_attempt_at))
        .and_then(|due| (due - now).to_std().ok())
        .unwrap_or_default();
    match blocked {
        true => MAX_ORDER_RECHECK,
        false => by_place.max(head_due).min(MAX_ORDER_RECHECK),
    }
}

/// A key's line as an operator sees it: its head's task, and how many places are held.
#[derive(Clone, Debug)]
pub struct OrderLine {
    pub key: OrderKey,
    pub backlog: u64,
    /// The head's place and its task as stored (`None` if it is not, or no longer).
    pub head: Option<(OrderEntry, Option<Task>)>,
}

impl Engine {
    /// The tenant's order keys after `after`, at most `limit` (by key), with their heads.
    pub async fn order_lines(
        &self,
        tenant: &TenantId,
        after: Option<&OrderKey>,
        limit: usize,
    ) -> Result<Vec<OrderLine>, EngineError> {
        let states = (self.ports.store.order_keys)
            .order_keys(tenant, after, limit)
            .await?;
        let mut lines = Vec::with_capacity(states.len());
        for state in states {
            lines.push(self.order_line_of(tenant, state).await?);
        }
        Ok(lines)
    }

    /// One key's line.
    pub async fn order_line(
        &self,
        tenant: &TenantId,
        key: &OrderKey,
    ) -> Result<OrderLine, EngineError> {
        let state = self.ports.store.order_keys.line(tenant, key).await?;
        self.order_line_of(tenant, state).await
    }

    async fn order_line_of(
        &self,
        tenant: &TenantId,
        state: OrderKeyState,
    ) -> Result<OrderLine, EngineError> {
        let head = match state.head {
            Some(place) => {
                let task = self.ports.store.tasks.get(tenant, &place.task).await?;
                Some((place, task))
            }
            None => None,
        };
        Ok(OrderLine {
            key: state.key,
            backlog: state.backlog,
            head,
        })
    }
}
