//! Delivering one attempt: finding its task, taking its place at its destination and
//! running the steps; the rechecks of a fire that may have overtaken its write.

use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::gate::{Entry, Lane, WorkSlot};
use super::outcome::{DeliverOutcome, Step};
use super::slow_lane::Route;
use crate::domain::{Attempt, AttemptRef, Destination, Status, Task};
use crate::engine::error::EngineError;
use crate::engine::state::Engine;
use crate::metrics::MetricEvent;

/// Where a task's calls go, as [`Engine::place_of`] finds it.
pub(in crate::engine) struct Place {
    pub(in crate::engine) destination: Destination,
    pub(in crate::engine) lane: Arc<Lane>,
    /// The tenant's own limit at the destination, if it has one.
    pub(in crate::engine) own_limit: Option<usize>,
}

/// How long a write may still be on its way after a durable timer armed ahead of it fired:
/// after the task's id was made (registration), or after the task's last write (the end
/// of the attempt before).
const WRITE_WINDOW: chrono::Duration = chrono::Duration::seconds(120);
/// The first look again comes this soon.
const RECHECK: chrono::Duration = chrono::Duration::seconds(1);
/// How soon an attempt given back for want of local resources is made again.
pub(in crate::engine) const LOCAL_RETRY: chrono::Duration = chrono::Duration::seconds(1);

/// When to look again at a fire that may have overtaken its write, `age` after that write
/// began: soon at first (a write is milliseconds), then at doubling intervals, so that an
/// orphan timer (its write lost a race, say an idempotent repeat) costs a handful of looks
/// within [`WRITE_WINDOW`], not one a second.
fn recheck_after(age: chrono::Duration) -> chrono::Duration {
    age.max(RECHECK)
}

impl Engine {
    /// Claims the attempt with a conditional write, calls the webhook, records the attempt
    /// and moves the task on. Safe under duplicate, early and late timer fires.
    pub async fn deliver(&self, at: AttemptRef) -> Result<DeliverOutcome, EngineError> {
        self.deliver_by(at, &self.settings.worker, Route::Shared)
            .await
    }

    /// The name attempts record as their worker by default.
    pub fn worker(&self) -> &str {
        &self.settings.worker
    }

    /// [`Self::deliver`], recording `worker` as the attempt's worker, for an attempt that
    /// came by `route`: one the slow lane carried is delivered here, whatever its
    /// destination's mark ([`crate::ports::SlowLane`]).
    /// When the task's destination has all its calls in flight, the attempt joins its
    /// queue and this returns [`DeliverOutcome::Queued`] at once; otherwise this also
    /// delivers what queues up behind it before it returns.
    pub async fn deliver_by(
        &self,
        at: AttemptRef,
        worker: &str,
        route: Route,
    ) -> Result<DeliverOutcome, EngineError> {
        let slot = self.work_slot().await;
        (self.deliver_routed(slot, at, worker, route, || {})).await
    }

    /// Waits for a right to run one delivery. A caller that hands out many timer fires
    /// takes the slot before it starts each ([`Self::deliver_in_then`]), so that fires waiting
    /// for one cost only their ids.
    pub async fn work_slot(&self) -> WorkSlot {
        self.gate.work().await
    }

    /// [`Self::deliver`] in a work slot already taken, recording `worker`, calling
    /// `delivered` as soon as this attempt's own outcome is known: before the deliveries
    /// that queued up behind it at its destination, which may take long (a timer that
    /// keeps custody of the attempt until then lets it go).
    pub async fn deliver_in_then(
        &self,
        slot: WorkSlot,
        at: AttemptRef,
        worker: &str,
        delivered: impl FnOnce() + Send,
    ) -> Result<DeliverOutcome, EngineError> {
        (self.deliver_routed(slot, at, worker, Route::Shared, delivered)).await
    }

    /// [`Self::deliver_in_then`] for an attempt that came by `route`: one that came the
    /// shared way to a destination marked slow is handed to the slow lane.
    async fn deliver_routed(
        &self,
        _slot: WorkSlot,
        at: AttemptRef,
        worker: &str,
        route: Route,
        delivered: impl FnOnce() + Send,
    ) -> Result<DeliverOutcome, EngineError> {
        // The first read may lag the latest write (a cheaper read where the store has one).
        // That is safe: a lagging read can only show an earlier state, never a later one;
        // what it shows is claimed conditionally; and a missing task or a lost claim is read
        // again, consistently, before anything is dropped.
        let (found, consistent) = match self.ports.store.tasks.peek(&at.tenant, &at.task_id).await?
        {
            Some(task) => (Some(task), false),
            // A fire may overtake its task's write (the timer is armed first): read again,
            // consistently, before choosing the path, so that the call still takes its
            // place at its destination instead of going around the queue.
            None => (
                self.ports.store.tasks.get(&at.tenant, &at.task_id).await?,
                true,
            ),
        };
        let task = match found {
            Some(task) if task.status != Status::Held => task,
            // A held task's check goes to its own URL, ungated; a missing task is unknown.
            other => return self.deliver_found(at, other, consistent, worker).await,
        };
        let now = self.ports.clock.now();
        let Place {
            destination, lane, ..
        } = self.place_of(&task).await;
        if let Some(until) = lane.paused(now) {
            return self.defer(at, until).await;
        }
        if let Some(outcome) = self
            .hand_over_if_slow(&at, &task, &destination, route)
            .await?
        {
            return Ok(outcome);
        }
        let mut lane_slot = match self.gate.enter(&lane, &at) {
            Entry::Entered(lane_slot) => lane_slot,
            Entry::Queued => return Ok(DeliverOutcome::Queued),
            Entry::Full => return self.defer(at, now + LOCAL_RETRY).await,
        };
        let outcome = self.deliver_found(at, Some(task), consistent, worker).await;
        delivered();
        while let Some(next) = lane_slot.next() {
            self.deliver_queued(next, &lane, worker, route).await;
        }
        outcome
    }

    /// Where `task`'s calls go: its destination, the lane its tenant's calls there go
    /// through, and the tenant's own limit there if it has one (an unreadable limit is
    /// taken as absent, and the server's applies).
    pub(super) async fn place_of(&self, task: &Task) -> Place {
        let destination = Destination::of(&task.spec.request.url);
        let own_limit = match self.ports.tenants.destination_limit(&task.tenant).await {
            Ok(limit) => limit,
            Err(e) => {
                tracing::warn!(tenant = %task.tenant, error = %e, "reading the tenant's destination limit failed; the server's applies");
                None
            }
        };
        let now = self.ports.clock.now();
        let lane = self.gate.lane((&task.tenant, &destination), own_limit, now);
        Place {
            destination,
            lane,
            own_limit,
        }
    }

    /// Delivers an attempt that waited in its destination's queue. Its task is read again
    /// (it may have changed meanwhile). Its timer was let go when it joined the queue, so
    /// one that fails is armed again a little later (and a failure to arm is logged: the
    /// sweep of the embedded store, or `aws rearm`, finds the task).
    async fn deliver_queued(&self, at: AttemptRef, lane: &Lane, worker: &str, route: Route) {
        let delivered = match lane.paused(self.ports.clock.now()) {
            Some(until) => self.defer(at.clone(), until).await,
            None => self.deliver_read_again(at.clone(), worker, route).await,
        };
        if let Err(e) = delivered {
            let (task, number) = (at.task_id, at.attempt);
            tracing::warn!(task = %task, attempt = %number, error = %e, "queued delivery failed; armed again");
            self.arm(at, self.ports.clock.now() + LOCAL_RETRY).await;
        }
    }

    /// Delivers a queued attempt, its task read again. Its destination may have been
    /// marked slow while it waited (by the call ahead of it): then it is handed over.
    async fn deliver_read_again(
        &self,
        at: AttemptRef,
        worker: &str,
        route: Route,
    ) -> Result<DeliverOutcome, EngineError> {
        let found = self.ports.store.tasks.peek(&at.tenant, &at.task_id).await?;
        if let Some(task) = &found {
            let destination = Destination::of(&task.spec.request.url);
            if let Some(outcome) = self
                .hand_over_if_slow(&at, task, &destination, route)
                .await?
            {
                return Ok(outcome);
            }
        }
        self.deliver_found(at, found, false, worker).await
    }

    /// Delivers attempt `at` of the task as first read (`found`, by a `consistent` read or
    /// not), reading it again consistently where that read may have lagged.
    async fn deliver_found(
        &self,
        at: AttemptRef,
        mut found: Option<Task>,
        mut consistent: bool,
        worker: &str,
    ) -> Result<DeliverOutcome, EngineError> {
        loop {
            match found {
                Some(task) => match self.attempt(at.clone(), task, worker).await? {
                    Step::Done(outcome) => return Ok(outcome),
                    Step::Reread if consistent => return Ok(DeliverOutcome::Stale),
                    Step::Reread => consistent = true,
                    Step::Continue(never) => match never {},
                },
                None if consistent => return self.unknown(at).await,
                None => consistent = true,
            }
            found = self.ports.store.tasks.get(&at.tenant, &at.task_id).await?;
        }
    }

    /// Puts off an attempt whose destination asked for a pause (or whose queue is full),
    /// or whose flow is over a limit: armed again for `until`, unclaimed and uncounted.
    pub(super) async fn defer(
        &self,
        at: AttemptRef,
        until: DateTime<Utc>,
    ) -> Result<DeliverOutcome, EngineError> {
        self.put_off_in_place(at, until).await?;
        self.record(MetricEvent::Deferred);
        Ok(DeliverOutcome::Deferred)
    }

    /// A fire for a task the store does not have. With a durable timer, armed before the
    /// task is written, the write may still be on its way: a young task's first timer (its
    /// first attempt's, or a held task's check) is looked at again a little later instead
    /// of being dropped.
    async fn unknown(&self, at: AttemptRef) -> Result<DeliverOutcome, EngineError> {
        let now = self.ports.clock.now();
        let age = now.signed_duration_since(at.task_id.created_at());
        // A task's first timer: its first attempt's, or a held task's check.
        let first = matches!(at.attempt, Attempt::Delivery(1) | Attempt::Check);
        if self.ports.timer.durable() && first && age < WRITE_WINDOW {
            tracing::debug!(task = %at.task_id, "timer fired before its task was stored; looking again");
            self.arm_in_place(at, now + recheck_after(age)).await?;
        } else {
            tracing::info!(task = %at.task_id, attempt = %at.attempt, "timer fired for an unknown task");
        }
        Ok(DeliverOutcome::Unknown)
    }

    /// A fire for an attempt after the task's current one: with a durable timer, armed
    /// before the write that finishes the attempt before it, that write may still be on its
    /// way. While the task was written recently, it is looked at again a little later; a
    /// timer whose write never happened (it lost a race) is dropped after that.
    pub(super) async fn ahead(&self, at: AttemptRef, task: &Task) -> Result<(), EngineError> {
        let now = self.ports.clock.now();
        let age = now.signed_duration_since(task.updated_at);
        if self.ports.timer.durable() && age < WRITE_WINDOW {
            self.arm_in_place(at, now + recheck_after(age)).await?;
        }
        Ok(())
    }
}
