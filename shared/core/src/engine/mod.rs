//! The engine: every use case of Boomerang, as logic over the ports.

mod alerts;
mod deliver;
mod flow_controls;
mod flows;
mod gate;
mod holds;
mod keys;
mod policies;
mod ports;
mod replace;
mod retention;
mod schedules;
mod stopping;
mod sweep;
mod tenant_limits;

use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::domain::limits::MAX_SCHEDULE_AHEAD;
use crate::domain::time::checked_add;
use crate::domain::{
    AlertTarget, AttemptRecord, AttemptRef, PolicyName, Refusal, Status, Task, TaskId, TaskSpec,
    TenantId,
};
use crate::metrics::{DeliveryWindow, DestinationFigures, MetricEvent};
use crate::ports::{CreateOutcome, ListQuery, Page, StoreError, TenantsError, TimerError};
use futures_util::StreamExt;

pub use deliver::DeliverOutcome;
pub use flow_controls::FlowState;
pub use gate::{DeliveryLimits, WorkSlot, DEFAULT_PER_DESTINATION, PER_DESTINATION_RANGE};
pub use holds::Release;
pub use keys::KeyOutcome;
pub use ports::{Ports, StorePorts};
pub use schedules::NewSchedule;
pub use stopping::Drained;
pub use sweep::SweepReport;
pub use tenant_limits::{
    TenantLimits, DEFAULT_MAX_PENDING, DEFAULT_TENANT_RATE, MAX_PENDING_RANGE, TENANT_RATE_RANGE,
};

/// Writes of one batch registration in flight at once.
const BATCH_WRITES: usize = 16;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("no such task")]
    NotFound,
    /// The task is not in a state that allows the operation.
    #[error(transparent)]
    Conflict(Refusal),
    #[error("this idempotency key was already used with a different request")]
    IdempotencyMismatch,
    #[error("{field}: {detail}")]
    Invalid { field: &'static str, detail: String },
    /// Over one of the tenant's limits: nothing was done; try again after `retry_after`.
    #[error("{detail}")]
    Limited {
        detail: String,
        retry_after: Duration,
    },
    /// The schedule is not in a state that allows the operation.
    #[error(transparent)]
    ScheduleConflict(crate::domain::ScheduleRefusal),
    #[error(transparent)]
    Store(#[from] StoreError),
}

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

/// Where a registration's retry policy comes from.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum RetrySource {
    /// Given in the request (and already in the spec).
    #[default]
    Given,
    /// The tenant's policy of this name, copied into the task at registration: a later
    /// change of the policy affects new tasks only.
    Named(PolicyName),
    /// None given: the tenant's `default` policy if it has one, else the built-in one.
    Default,
}

#[derive(Debug)]
pub struct Registration {
    pub task: Task,
    /// False when an earlier registration with the same idempotency key was returned.
    pub created: bool,
}

/// A tenant's figures for the console ([`Engine::stats`]).
#[derive(Debug)]
pub struct Stats {
    /// Tasks by state; `None` where the store cannot count them cheaply (DynamoDB).
    pub counts: Option<Vec<(Status, u64)>>,
    /// The last hour of attempts, minute by minute; `None` where the server keeps no
    /// window (the Lambdas: CloudWatch has the figures there).
    pub deliveries: Option<DeliveryWindow>,
    /// The tenant's destinations with calls in flight or waiting, or paused, in this
    /// server; `None` where the server keeps no figures (a Lambda instance sees only its
    /// own few calls).
    pub destinations: Option<Vec<DestinationFigures>>,
}

#[derive(Debug)]
pub struct TaskDetails {
    pub task: Task,
    pub attempts: Vec<AttemptRecord>,
}

#[derive(Clone, Debug)]
pub struct EngineSettings {
    /// Added to a task's timeout to form its delivery lease.
    pub lease_margin: Duration,
    /// Tries of a dead-letter send before it is left to the sweeper.
    pub dead_letter_tries: u32,
    /// Most tasks one sweep handles.
    pub sweep_batch: usize,
    /// The name attempts record as their worker, unless the caller of
    /// [`Engine::deliver_as`] names another (a Lambda invocation's request id).
    pub worker: String,
    /// Where failure alerts go when neither the task nor its tenant names a destination.
    pub alert: Option<AlertTarget>,
    /// How many deliveries run at once, in all and per destination.
    pub limits: DeliveryLimits,
    /// What one tenant may ask of this process.
    pub tenant_limits: TenantLimits,
}

impl Default for EngineSettings {
    fn default() -> Self {
        Self {
            lease_margin: Duration::from_secs(30),
            dead_letter_tries: 5,
            sweep_batch: 1000,
            worker: this_process(),
            alert: None,
            limits: DeliveryLimits::default(),
            tenant_limits: TenantLimits::default(),
        }
    }
}

/// `<host>:<process id>`.
pub fn this_process() -> String {
    format!(
        "{}:{}",
        gethostname::gethostname().to_string_lossy(),
        std::process::id()
    )
}

pub struct Engine {
    ports: Ports,
    settings: EngineSettings,
    gate: gate::Gate,
    stopping: stopping::Stopping,
    guards: tenant_limits::TenantGuards,
}

impl Engine {
    pub fn new(ports: Ports, settings: EngineSettings) -> Self {
        Self {
            gate: gate::Gate::new(settings.limits),
            stopping: stopping::Stopping::default(),
            guards: tenant_limits::TenantGuards::default(),
            ports,
            settings,
        }
    }

    /// The backend's checks that fail now (`/readyz`); empty when it can take work.
    pub async fn unready(&self) -> Vec<String> {
        self.ports.readiness.failing().await
    }

    /// The destinations with calls in flight or waiting, or paused, as of now: `tenant`'s,
    /// or every tenant's.
    pub fn destinations(&self, tenant: Option<&TenantId>) -> Vec<DestinationFigures> {
        self.gate.figures(tenant, self.ports.clock.now())
    }

    /// How many deliveries wait in their destinations' queues, in all: work this process
    /// has in hand beyond its timer.
    pub fn queued_deliveries(&self) -> usize {
        self.gate.queued()
    }

    /// Whether attempt `at` waits in its destination's queue.
    pub fn is_queued(&self, at: &AttemptRef) -> bool {
        self.gate.is_queued(at)
    }

    /// Counts an event through the engine's metrics port (for work around the engine, such
    /// as the sweeper's redrive of failed timers).
    pub fn record(&self, event: MetricEvent) {
        self.ports.metrics.record(event);
    }

    /// The tenant an API key belongs to, if any.
    pub async fn authenticate(&self, api_key: &str) -> Result<Option<TenantId>, TenantsError> {
        self.ports.tenants.authenticate(api_key).await
    }

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
    async fn register_prepared(&self, mut task: Task) -> Result<Registration, EngineError> {
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
        if self.ports.timer.durable() {
            let mut tasks: Vec<&mut Task> = prepared.iter_mut().collect();
            let arms: Vec<(AttemptRef, DateTime<Utc>)> = tasks
                .iter()
                .filter_map(|t| t.pending_work())
                .map(|w| (w.attempt, w.due_at))
                .collect();
            let armed = self.ports.timer.arm_many(&arms).await;
            for (task, result) in tasks.iter_mut().zip(armed) {
                task.timer_armed = self.armed(task.id, task.attempt, result);
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
    async fn prepare(&self, tenant: &TenantId, mut new: NewTask) -> Result<Task, EngineError> {
        self.check_destinations(&new.spec)?;
        let now = self.ports.clock.now();
        let fire_at = resolve_fire_time(new.when, now)?;
        self.apply_policy(tenant, &new.retry_from, &mut new.spec)
            .await?;
        if new.spec.flow.is_some() && self.ports.store.flows.is_none() {
            return Err(policies::no_flows());
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
        .map_err(|e| EngineError::Invalid {
            field: "hold.timeout",
            detail: e.to_string(),
        })
    }

    /// Each URL of a spec, checked again by the webhook client's rules.
    fn check_destinations(&self, spec: &TaskSpec) -> Result<(), EngineError> {
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
        ];
        for (field, url) in destinations {
            if let Some(url) = url {
                self.ports
                    .webhooks
                    .check_destination(url)
                    .map_err(|detail| EngineError::Invalid { field, detail })?;
            }
        }
        Ok(())
    }

    /// Writes a new task (or finds the one its idempotency key registered) and, for an
    /// in-memory timer, arms it.
    async fn store_new(&self, task: Task) -> Result<Registration, EngineError> {
        match self.ports.store.tasks.create(&task).await? {
            CreateOutcome::Created => {
                tracing::debug!(task = %task.id, tenant = %task.tenant, "task registered");
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
            None => Err(EngineError::NotFound),
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

    /// The metrics as `GET /metrics` serves them (with the store's task counts by state
    /// where it can count them), or `None` where metrics go elsewhere.
    pub async fn metrics_exposition(&self) -> Result<Option<String>, EngineError> {
        let Some(view) = &self.ports.metrics_view else {
            return Ok(None);
        };
        let counts = self.count_by_status(None).await?;
        Ok(Some(
            view.exposition(counts.as_deref(), &self.destinations(None)),
        ))
    }

    /// Tasks by state, of one tenant or of all, where the store can count them.
    async fn count_by_status(
        &self,
        tenant: Option<&TenantId>,
    ) -> Result<Option<Vec<(Status, u64)>>, StoreError> {
        match &self.ports.store.counts {
            Some(counts) => Ok(Some(counts.count_by_status(tenant).await?)),
            None => Ok(None),
        }
    }

    /// A tenant's figures for the console: its tasks by state, where the store can count
    /// them, and the last hour of attempts, where the server keeps them.
    pub async fn stats(&self, tenant: &TenantId) -> Result<Stats, EngineError> {
        let counts = self.count_by_status(Some(tenant)).await?;
        let now = self.ports.clock.now();
        let deliveries = (self.ports.metrics_view.as_ref()).map(|view| view.recent(now));
        let destinations =
            (self.ports.metrics_view.as_ref()).map(|_| self.gate.figures(Some(tenant), now));
        Ok(Stats {
            counts,
            deliveries,
            destinations,
        })
    }

    /// Redrives a `failed` task: a new round of its retry policy, starting now (the API's
    /// `POST /v1/tasks/{id}/retry`).
    pub async fn redrive(&self, tenant: &TenantId, id: &TaskId) -> Result<Task, EngineError> {
        let task = self.transition(tenant, id, Task::redrive).await?;
        tracing::info!(task = %task.id, attempt = task.attempt, "failed task retried");
        self.arm_written(&task).await;
        Ok(task)
    }

    /// Arms a task's pending work after its write, whatever the timer. For a transition
    /// out of a state where a fire finds nothing to do (a redrive of a failed task, the
    /// release of a held one), a durable timer armed before the write may fire while the
    /// store still shows the old state, and be dropped; this arm comes after the write
    /// (the cost: such a transition arms its timer twice).
    async fn arm_written(&self, task: &Task) {
        if let Some(work) = task.pending_work().filter(|w| w.kind.is_timed()) {
            self.arm(work.attempt, work.due_at).await;
        }
    }

    /// Reads the tenant's task, applies the lifecycle transition `change` and writes the
    /// result conditionally; re-reads and tries again when a concurrent writer got there
    /// first.
    async fn transition<F>(
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
            let mut next = change(&task, self.ports.clock.now()).map_err(EngineError::Conflict)?;
            self.arm_before_write(&mut next).await;
            match self.ports.store.tasks.update(&next, task.version).await {
                Ok(()) => return Ok(next),
                Err(StoreError::Conflict) => continue,
                Err(e) => return Err(e.into()),
            }
        }
    }

    async fn owned_task(&self, tenant: &TenantId, id: &TaskId) -> Result<Task, EngineError> {
        // The store finds only the tenant's own tasks; checked again all the same.
        match self.ports.store.tasks.get(tenant, id).await? {
            Some(task) if &task.tenant == tenant => Ok(task),
            _ => Err(EngineError::NotFound),
        }
    }

    /// Arms `attempt` again at once: for a timer that was handed back after it failed to
    /// fire (`deliver` copes with whatever state the task is in). Returns whether it armed.
    pub async fn rearm(&self, attempt: AttemptRef) -> bool {
        self.arm(attempt, self.ports.clock.now()).await
    }

    /// Arms a timer; a failure is logged and left to the sweep. Returns whether it armed.
    async fn arm(&self, attempt: AttemptRef, at: DateTime<Utc>) -> bool {
        let (task, number) = (attempt.task_id, attempt.attempt);
        let result = self.ports.timer.arm(attempt, at).await;
        self.armed(task, number, result)
    }

    /// Puts an attempt off past its stored due time ([`crate::ports::Timer::put_off`]); a failure is
    /// logged and left to the sweep. Returns whether it armed.
    async fn put_off(&self, attempt: AttemptRef, until: DateTime<Utc>) -> bool {
        let (task, number) = (attempt.task_id, attempt.attempt);
        let result = self.ports.timer.put_off(attempt, until).await;
        self.armed(task, number, result)
    }

    /// Whether an arm worked; a failure is logged and left to the sweep.
    fn armed(&self, task: TaskId, attempt: u32, result: Result<(), TimerError>) -> bool {
        match result {
            Ok(()) => true,
            Err(e) => {
                tracing::error!(
                    task = %task, attempt, error = %e,
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
    async fn arm_before_write(&self, task: &mut Task) {
        if !self.ports.timer.durable() {
            return;
        }
        if let Some(work) = task.pending_work().filter(|w| w.kind.is_timed()) {
            task.timer_armed = self.arm(work.attempt, work.due_at).await;
        }
    }

    /// An in-memory timer is armed *after* the write: it could not outlive a crash anyway,
    /// and the store keeps every task's pending work for the sweep at start-up.
    async fn arm_after_write(&self, task: &Task) {
        if self.ports.timer.durable() {
            return;
        }
        if let Some(work) = task.pending_work().filter(|w| w.kind.is_timed()) {
            self.arm(work.attempt, work.due_at).await;
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
        _ => Err(EngineError::Invalid {
            field,
            detail: "must be at most 365 days ahead".into(),
        }),
    }
}
