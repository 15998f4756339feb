//! Registering tasks (one or a batch), reading, canceling and redriving them.

use std::time::Duration;

use chrono::{DateTime, Utc};
use futures_util::StreamExt;

use super::policies::RetrySource;
use crate::domain::limits::MAX_SCHEDULE_AHEAD;
use crate::domain::time::checked_add;
use crate::domain::{
    AttemptRecord, AttemptRef, Invalid, Refusal, SpanId, Task, TaskId, TaskSpec, TaskTrace,
    TenantId, TraceParent,
};
use crate::engine::error::{EngineError, Missing};
use crate::engine::state::Engine;
use crate::metrics::MetricEvent;
use crate::ports::{CreateOutcome, ListQuery, Page, StoreError};

/// Writes of one batch registration in flight at once.
const BATCH_WRITES: usize = 16;

/// When the first attempt is due.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FireTime {
    Now,
    After(Duration),
    At(DateTime<Utc>),
}

/// A validated registration.
#[derive(Clone, Debug)]
pub struct NewTask {
    pub spec: TaskSpec,
    /// Where `spec.retry` comes from (resolved at registration).
    pub retry_from: RetrySource,
    pub when: FireTime,
    pub idempotency_key: Option<String>,
    /// Digest of the request as the client sent it (see [`Task::request_hash`]).
    pub request_hash: String,
}

impl NewTask {
    /// This task, registered in the caller's trace (if it sent one): its registration
    /// gets a span of its own, the parent of its attempts'.
    pub fn traced(mut self, caller: Option<&TraceParent>) -> Self {
        self.spec.trace = caller.map(|caller| TaskTrace::under(caller.clone(), SpanId::random()));
        self
    }
}

#[derive(Debug)]
pub struct Registration {
    pub task: Task,
    /// False when an earlier registration with the same idempotency key was returned.
    pub created: bool,
}

#[derive(Debug)]
pub struct TaskDetails {
    pub task: Task,
    pub attempts: Vec<AttemptRecord>,
}

impl Engine {
    /// Validates, persists and arms the first attempt (a durable timer before the write,
    /// an in-memory one after it). A timer that fails to arm is logged and left to the
    /// sweeper: the task is already durable.
    pub async fn register(
        &self,
        tenant: &TenantId,
        new: NewTask,
    ) -> Result<Registration, EngineError> {
        let task = self.prepare(tenant, new).await?;
        self.admit_pending(tenant, 1).await?;
        self.register_prepared(task).await
    }

    /// Stores and arms a task [`Self::prepare`] made, within its tenant's limits or (an
    /// alert, owed whatever the tenant's backlog) past them.
    pub(in crate::engine) async fn register_prepared(
        &self,
        mut task: Task,
    ) -> Result<Registration, EngineError> {
        self.arm_before_write(&mut task).await;
        let registration = self.store_new(task).await?;
        if registration.created {
            self.record(MetricEvent::Registered { count: 1 });
        }
        Ok(registration)
    }

    /// Registers up to [`crate::domain::limits::MAX_BATCH`] tasks as [`Self::register`] does each, with one result
    /// per task, in order. A durable timer arms them together (one queue request per ten),
    /// and the writes run side by side. If any task is refused before anything is stored
    /// (its destination, its time), the whole batch is: the error says which task.
    pub async fn register_batch(
        &self,
        tenant: &TenantId,
        batch: Vec<NewTask>,
    ) -> Result<Vec<Result<Registration, EngineError>>, (usize, EngineError)> {
        let mut prepared = Vec::with_capacity(batch.len());
        for (i, new) in batch.into_iter().enumerate() {
            prepared.push(self.prepare(tenant, new).await.map_err(|e| (i, e))?);
        }
        let n = prepared.len() as u64;
        self.admit_pending(tenant, n).await.map_err(|e| (0, e))?;
        // The batch's order is its tasks' registration order: their places in their keys'
        // lines are taken one by one, before the writes that run side by side.
        for i in 0..prepared.len() {
            if let Err(e) = self.take_place(&mut prepared[i]).await {
                for taken in &prepared[..i] {
                    self.give_up_place(taken).await;
                }
                return Err((i, e));
            }
        }
        if self.ports.timer.durable() {
            let mut tasks: Vec<&mut Task> = prepared.iter_mut().collect();
            let arms: Vec<(AttemptRef, DateTime<Utc>)> = tasks
                .iter()
                .filter_map(|t| t.pending_work())
                .map(|w| (w.attempt, w.due_at))
                .collect();
            let armed = self.ports.timer.arm_many(&arms).await;
            for ((task, (at, _)), result) in tasks.iter_mut().zip(&arms).zip(armed) {
                task.timer_armed = self.armed(task.id, at.attempt, result);
            }
        }
        let results: Vec<Result<Registration, EngineError>> = futures_util::stream::iter(prepared)
            .map(|task| self.store_new(task))
            .buffered(BATCH_WRITES)
            .collect()
            .await;
        // One count for the whole batch (on AWS, one metric line instead of a hundred).
        let count = results
            .iter()
            .filter(|r| r.as_ref().is_ok_and(|r| r.created))
            .count();
        if count > 0 {
            self.record(MetricEvent::Registered { count });
        }
        Ok(results)
    }

    /// A new task from a validated registration: its destination checked again by the
    /// webhook client's rules, its first attempt's time and its retry policy resolved.
    pub(in crate::engine) async fn prepare(
        &self,
        tenant: &TenantId,
        mut new: NewTask,
    ) -> Result<Task, EngineError> {
        self.check_destinations(&new.spec)?;
        let now = self.ports.clock.now();
        let fire_at = resolve_fire_time(new.when, now)?;
        self.apply_policy(tenant, &new.retry_from, &mut new.spec)
            .await?;
        if new.spec.flow.is_some() && self.ports.store.flows.is_none() {
            return Err(super::policies::no_flows());
        }
        // The digest is only ever compared for a repeat with the same idempotency key.
        let request_hash = match new.idempotency_key {
            Some(_) => new.request_hash,
            None => String::new(),
        };
        Task::new_scheduled(
            tenant.clone(),
            new.spec,
            new.idempotency_key,
            request_hash,
            fire_at,
            now,
        )
        .hold_from(now)
        .map_err(|e| Invalid::new("hold.timeout", e.to_string()).into())
    }

    /// Each URL of a spec, checked again by the webhook client's rules.
    pub(in crate::engine) fn check_destinations(&self, spec: &TaskSpec) -> Result<(), EngineError> {
        let destinations = [
            ("url", Some(spec.request.url.as_str())),
            (
                "hold.check_url",
                spec.hold.as_ref().and_then(|h| h.check_url()),
            ),
            (
                "on_failure.url",
                spec.on_failure.as_ref().map(|a| a.url.as_str()),
            ),
            (
                "on_success.url",
                spec.on_success.as_ref().map(|a| a.url.as_str()),
            ),
        ];
        for (field, url) in destinations {
            if let Some(url) = url {
                self.ports
                    .webhooks
                    .check_destination(url)
                    .map_err(|detail| Invalid::new(field, detail))?;
            }
        }
        Ok(())
    }

    /// Writes a new task (or finds the one its idempotency key registered) and, for an
    /// in-memory timer, arms it.
    pub(in crate::engine) async fn store_new(
        &self,
        mut task: Task,
    ) -> Result<Registration, EngineError> {
        self.take_place(&mut task).await?;
        let created = self.ports.store.tasks.create(&task).await;
        // Given up only where nothing was written: a write that failed without saying may
        // have landed (its place is given up a minute later if it did not).
        if matches!(
            created,
            Ok(CreateOutcome::Existing(_)) | Err(StoreError::Conflict)
        ) {
            self.give_up_place(&task).await;
        }
        match created? {
            CreateOutcome::Created => {
                tracing::debug!(task = %task.id, tenant = %task.tenant, "task registered");
                self.export_registration(&task);
                self.arm_after_write(&task).await;
                Ok(Registration {
                    task,
                    created: true,
                })
            }
            CreateOutcome::Existing(existing) if existing.request_hash == task.request_hash => {
                Ok(Registration {
                    task: *existing,
                    created: false,
                })
            }
            CreateOutcome::Existing(_) => Err(EngineError::IdempotencyMismatch),
        }
    }

    pub async fn get(&self, tenant: &TenantId, id: &TaskId) -> Result<TaskDetails, EngineError> {
        match self.ports.store.tasks.details(tenant, id).await? {
            Some((task, attempts)) => Ok(TaskDetails { task, attempts }),
            None => Err(EngineError::NotFound(Missing::Task)),
        }
    }

    pub async fn list(&self, tenant: &TenantId, query: &ListQuery) -> Result<Page, EngineError> {
        Ok(self.ports.store.tasks.list(tenant, query).await?)
    }

    /// Cancels a `scheduled` or `held` task. A timer still armed for it will find it
    /// canceled.
    pub async fn cancel(&self, tenant: &TenantId, id: &TaskId) -> Result<Task, EngineError> {
        let task = self.transition(tenant, id, Task::cancel).await?;
        self.record(MetricEvent::Canceled { count: 1 });
        Ok(task)
    }

    /// Redrives a `failed` task: a new round of its retry policy, starting now (the API's
    /// `POST /v1/tasks/{id}/retry`).
    pub async fn redrive(&self, tenant: &TenantId, id: &TaskId) -> Result<Task, EngineError> {
        let task = self.transition(tenant, id, Task::redrive).await?;
        tracing::info!(task = %task.id, attempt = task.attempt, "failed task retried");
        self.arm_written(&task).await;
        Ok(task)
    }

    /// Reads the tenant's task, applies the lifecycle transition `change` and writes the
    /// result conditionally; re-reads and tries again when a concurrent writer got there
    /// first.
    pub(in crate::engine) async fn transition<F>(
        &self,
        tenant: &TenantId,
        id: &TaskId,
        change: F,
    ) -> Result<Task, EngineError>
    where
        F: Fn(&Task, DateTime<Utc>) -> Result<Task, Refusal>,
    {
        loop {
            let task = self.owned_task(tenant, id).await?;
            let next = change(&task, self.ports.clock.now()).map_err(EngineError::Conflict)?;
            if let Some(written) = self.write_change(&task, next).await? {
                return Ok(written);
            }
        }
    }

    /// Writes `next`, the change of `task` as read, conditionally on its version, with what
    /// goes around every such write: a timer armed before it where one is due, and the
    /// task's place in its key's line taken again or given up. `None`: a concurrent write
    /// got there first (read again and redo the change).
    pub(in crate::engine) async fn write_change(
        &self,
        task: &Task,
        mut next: Task,
    ) -> Result<Option<Task>, EngineError> {
        self.rejoin(task, &mut next).await?;
        self.arm_before_write(&mut next).await;
        match self.ports.store.tasks.update(&next, task.version).await {
            Ok(()) => {
                self.pass_turn(task, &next).await;
                Ok(Some(next))
            }
            Err(StoreError::Conflict) => {
                if next.spec.order != task.spec.order {
                    self.give_up_place(&next).await;
                }
                Ok(None)
            }
            Err(e) => Err(e.into()),
        }
    }

    pub(in crate::engine) async fn owned_task(
        &self,
        tenant: &TenantId,
        id: &TaskId,
    ) -> Result<Task, EngineError> {
        // The store finds only the tenant's own tasks; checked again all the same.
        match self.ports.store.tasks.get(tenant, id).await? {
            Some(task) if &task.tenant == tenant => Ok(task),
            _ => Err(EngineError::NotFound(Missing::Task)),
        }
    }
}

/// When the first attempt is due: at most [`MAX_SCHEDULE_AHEAD`] from `now`, with every
/// sum checked (the request's validation bounds them too; this is the second line).
fn resolve_fire_time(when: FireTime, now: DateTime<Utc>) -> Result<DateTime<Utc>, EngineError> {
    let (at, field) = match when {
        FireTime::Now => return Ok(now),
        FireTime::After(d) => (checked_add(now, d), "delay"),
        FireTime::At(at) => (Some(at.max(now)), "fire_at"),
    };
    match (at, checked_add(now, MAX_SCHEDULE_AHEAD)) {
        (Some(at), Some(limit)) if at <= limit => Ok(at),
        _ => Err(Invalid::new(field, "must be at most 365 days ahead").into()),
    }
}
