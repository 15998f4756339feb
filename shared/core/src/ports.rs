//! The engine's ports: what it needs from the outside world, as traits.
//!
//! Each has an embedded adapter (local binary, tests) and an AWS adapter; the engine cannot
//! tell them apart.

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::domain::{
    AlertTarget, AttemptRecord, AttemptRef, BusinessKey, DeadLetter, PendingWork, PolicyName,
    RetryPolicy, SigningSecret, Status, Task, TaskId, TaskSpec, TenantId,
};

/// The underlying error a port failure keeps as its source.
pub type Cause = Box<dyn std::error::Error + Send + Sync + 'static>;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A conditional write lost: the item is not in the state the writer expected.
    #[error("the task was changed concurrently")]
    Conflict,
    #[error("store unavailable: {0}")]
    Unavailable(#[source] Cause),
    #[error("stored record is unreadable: {0}")]
    Corrupt(#[source] Cause),
}

#[derive(Debug)]
pub enum CreateOutcome {
    Created,
    /// The tenant already has a task with this idempotency key.
    Existing(Box<Task>),
}

#[derive(Clone, Debug, Default)]
pub struct ListQuery {
    pub status: Option<Status>,
    /// Only tasks with this business key.
    pub key: Option<BusinessKey>,
    pub limit: u32,
    /// Continue after this task id (lists are newest first).
    pub cursor: Option<TaskId>,
}

#[derive(Clone, Debug, Default)]
pub struct Page {
    pub tasks: Vec<Task>,
    pub next_cursor: Option<TaskId>,
}

impl Page {
    /// A page from a list fetched with one row more than `limit`: the extra row only says
    /// that another page follows.
    pub fn from_overfetch(mut tasks: Vec<Task>, limit: u32) -> Page {
        let more = tasks.len() > limit as usize;
        tasks.truncate(limit as usize);
        Page {
            next_cursor: if more {
                tasks.last().map(|t| t.id)
            } else {
                None
            },
            tasks,
        }
    }
}

#[async_trait]
pub trait TaskStore: Send + Sync {
    /// Stores a new task; with an idempotency key, an existing task of the same tenant and
    /// key wins and is returned instead (race-free: one conditional write).
    async fn create(&self, task: &Task) -> Result<CreateOutcome, StoreError>;

    /// The tenant's task with this id; another tenant's task of that id is not found.
    async fn get(&self, tenant: &TenantId, id: &TaskId) -> Result<Option<Task>, StoreError>;

    /// Like [`Self::get`], but a store may answer from a read that can lag the latest
    /// write by a moment (cheaper): for a timer fire, whose claim is conditional anyway.
    async fn peek(&self, tenant: &TenantId, id: &TaskId) -> Result<Option<Task>, StoreError> {
        self.get(tenant, id).await
    }

    /// The task and every recorded attempt of it, in order (one read where the store can).
    async fn details(
        &self,
        tenant: &TenantId,
        id: &TaskId,
    ) -> Result<Option<(Task, Vec<AttemptRecord>)>, StoreError> {
        let Some(task) = self.get(tenant, id).await? else {
            return Ok(None);
        };
        let attempts = self.attempts(tenant, id).await?;
        Ok(Some((task, attempts)))
    }

    /// Replaces the task only if its stored version is `expected_version`; otherwise
    /// [`StoreError::Conflict`].
    async fn update(&self, task: &Task, expected_version: u64) -> Result<(), StoreError>;

    /// Claims an attempt for delivery: `claimed` replaces the task if its version is
    /// `expected_version`, else [`StoreError::Conflict`]. A store whose one process owns its
    /// data may hold claims in memory only: a crash then forgets the claim, and the attempt
    /// runs again (at-least-once), at once instead of after a lease.
    async fn claim(&self, claimed: &Task, expected_version: u64) -> Result<(), StoreError> {
        self.update(claimed, expected_version).await
    }

    /// Records an attempt and moves the task on (conditional like [`Self::update`]); one
    /// durable write where the store can make it one.
    async fn finish_attempt(
        &self,
        record: &AttemptRecord,
        next: &Task,
        expected_version: u64,
    ) -> Result<(), StoreError> {
        self.put_attempt(&next.tenant, record).await?;
        self.update(next, expected_version).await
    }

    /// Records an attempt of the tenant's task; writing the same (task, number) again
    /// overwrites it.
    async fn put_attempt(
        &self,
        tenant: &TenantId,
        record: &AttemptRecord,
    ) -> Result<(), StoreError>;

    /// Every recorded attempt of the tenant's task, in order.
    async fn attempts(
        &self,
        tenant: &TenantId,
        id: &TaskId,
    ) -> Result<Vec<AttemptRecord>, StoreError>;

    /// One page of a tenant's tasks, newest first.
    async fn list(&self, tenant: &TenantId, query: &ListQuery) -> Result<Page, StoreError>;

    /// Work for the sweep: every task's [`Task::pending_work`] that is due at or before
    /// `cutoff`, at most `limit` of them, one range read. A store may leave out tasks whose
    /// work a durable timer holds ([`Task::timer_armed`]), and may return work due later
    /// than `cutoff` (the sweep arms it for its time).
    async fn due(&self, cutoff: DateTime<Utc>, limit: usize) -> Result<DueWork, StoreError>;

    /// How many tasks are in each state, of one tenant or of all, where the store can
    /// count them cheaply enough for a metrics scrape or a page view (`None`: it cannot;
    /// DynamoDB would read every item).
    async fn count_by_status(
        &self,
        _tenant: Option<&TenantId>,
    ) -> Result<Option<Vec<(Status, u64)>>, StoreError> {
        Ok(None)
    }

    /// Removes up to `limit` finished tasks (and their attempts) that ended before
    /// `finished_before`, keeping failed tasks whose dead letter is not yet sent; returns
    /// how many it removed. A store whose items expire by themselves (DynamoDB's TTL)
    /// removes nothing here.
    async fn purge(
        &self,
        finished_before: DateTime<Utc>,
        limit: usize,
    ) -> Result<usize, StoreError> {
        let _ = (finished_before, limit);
        Ok(0)
    }

    /// Stores the tenant's retry policy `name`, replacing one of that name. A store that
    /// keeps no policies (a test double) refuses.
    async fn put_policy(
        &self,
        tenant: &TenantId,
        name: &PolicyName,
        policy: &RetryPolicy,
    ) -> Result<(), StoreError> {
        let _ = (tenant, name, policy);
        Err(StoreError::Unavailable(
            "this store keeps no policies".into(),
        ))
    }

    /// The tenant's retry policy `name`, if there is one.
    async fn policy(
        &self,
        tenant: &TenantId,
        name: &PolicyName,
    ) -> Result<Option<RetryPolicy>, StoreError> {
        let _ = (tenant, name);
        Ok(None)
    }

    /// Removes the tenant's retry policy `name`; whether there was one.
    async fn delete_policy(
        &self,
        tenant: &TenantId,
        name: &PolicyName,
    ) -> Result<bool, StoreError> {
        let _ = (tenant, name);
        Ok(false)
    }

    /// The tenant's retry policies, by name.
    async fn policies(
        &self,
        tenant: &TenantId,
    ) -> Result<Vec<(PolicyName, RetryPolicy)>, StoreError> {
        let _ = tenant;
        Ok(Vec::new())
    }

    /// The sweep armed everything one [`Self::due`] returned: a store that reads its index
    /// from a checkpoint moves the checkpoint to `mark`.
    async fn swept(&self, mark: &SweepMark) -> Result<(), StoreError> {
        let _ = mark;
        Ok(())
    }
}

/// What one read of the sweep found.
#[derive(Clone, Debug, Default)]
pub struct DueWork {
    pub work: Vec<PendingWork>,
    /// Where the next read may start once all of `work` is armed (opaque to the engine).
    pub mark: Option<SweepMark>,
}

/// A store's position in its index of pending work.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SweepMark(pub String);

#[derive(Debug, thiserror::Error)]
#[error("timer unavailable: {0}")]
pub struct TimerError(#[source] pub Cause);

/// Arms a one-shot, at-least-once timer that later calls `Engine::deliver(attempt)`.
/// Timers may fire early, late or twice; the engine copes with all three.
#[async_trait]
pub trait Timer: Send + Sync {
    async fn arm(&self, attempt: AttemptRef, at: DateTime<Utc>) -> Result<(), TimerError>;

    /// Arms several timers; one result per timer, in order. Adapters that can arm many in
    /// one request do (SQS takes ten per request).
    async fn arm_many(&self, arms: &[(AttemptRef, DateTime<Utc>)]) -> Vec<Result<(), TimerError>> {
        let mut results = Vec::with_capacity(arms.len());
        for (attempt, at) in arms {
            results.push(self.arm(attempt.clone(), *at).await);
        }
        results
    }

    /// Whether an armed timer survives a crash of this process (a queue message or a
    /// schedule does; an in-memory timer does not). The engine arms a durable timer before
    /// it writes the task, so the store need not keep that task where the sweep looks.
    fn durable(&self) -> bool {
        false
    }
}

#[derive(Debug, thiserror::Error)]
#[error("dead-letter queue unavailable: {0}")]
pub struct DeadLetterError(#[source] pub Cause);

#[async_trait]
pub trait DeadLetters: Send + Sync {
    /// Must be idempotent per task id: a retried send may arrive twice.
    async fn send(&self, letter: &DeadLetter) -> Result<(), DeadLetterError>;
}

#[derive(Debug, thiserror::Error)]
#[error("tenant directory unavailable: {0}")]
pub struct TenantsError(#[source] pub Cause);

#[async_trait]
pub trait Tenants: Send + Sync {
    /// The tenant an API key belongs to, if any.
    async fn authenticate(&self, api_key: &str) -> Result<Option<TenantId>, TenantsError>;

    async fn signing_secret(
        &self,
        tenant: &TenantId,
    ) -> Result<Option<SigningSecret>, TenantsError>;

    /// Where the tenant's failure alerts go when a task names no destination of its own,
    /// if the tenant set one.
    async fn alert_target(&self, tenant: &TenantId) -> Result<Option<AlertTarget>, TenantsError> {
        let _ = tenant;
        Ok(None)
    }
}

/// One webhook call to make.
pub struct WebhookCall<'a> {
    pub attempt: AttemptRef,
    pub spec: &'a TaskSpec,
    pub secret: &'a SigningSecret,
    pub timestamp: DateTime<Utc>,
}

/// What came back from a webhook call (or why nothing did).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WebhookResult {
    pub status: Option<u16>,
    /// At most 1 KiB of the body, lossily decoded.
    pub excerpt: Option<String>,
    /// Whether the whole body equals the task's `expect_body` (true when none is set).
    pub body_matches: bool,
    pub retry_after: Option<Duration>,
    pub error: Option<WebhookError>,
}

#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum WebhookError {
    /// The destination is not allowed (SSRF guard): retrying cannot help.
    #[error("destination refused: {0}")]
    Refused(String),
    /// Connect error, timeout, reset: worth another attempt.
    #[error("{0}")]
    Transport(String),
}

#[async_trait]
pub trait Webhooks: Send + Sync {
    /// Checks a URL before it is accepted (scheme, literal addresses); the resolved addresses
    /// are checked again at call time.
    fn check_destination(&self, url: &str) -> Result<(), String>;

    async fn send(&self, call: &WebhookCall<'_>) -> WebhookResult;
}
