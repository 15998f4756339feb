//! The task store, as one small trait per capability: the core every store has
//! ([`TaskStore`]), the index of pending work the sweep reads ([`SweepIndex`]), and two
//! that only some stores have, which the engine takes
//! as `Option`s: removing finished tasks ([`Retention`]; DynamoDB's TTL does it by itself)
//! and counting tasks by state ([`StatusCounts`]; DynamoDB would read every item).

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::cause::Cause;
use crate::domain::{AttemptRecord, BusinessKey, PendingWork, Status, Task, TaskId, TenantId};

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
        let next_cursor = cut_overfetch(&mut tasks, limit, |t| t.id);
        Page { next_cursor, tasks }
    }
}

/// Cuts a list fetched with one row more than `limit` down to `limit`; returns the next
/// page's cursor (the last row kept's) when the extra row was there.
pub(crate) fn cut_overfetch<T, C>(
    rows: &mut Vec<T>,
    limit: u32,
    cursor: impl Fn(&T) -> C,
) -> Option<C> {
    let more = rows.len() > limit as usize;
    rows.truncate(limit as usize);
    rows.last().filter(|_| more).map(cursor)
}

/// The core every store has: tasks, their attempts, and lists. The provided methods are
/// compositions of the required ones, correct for any store; a store overrides them where
/// it can do the same work in fewer reads or writes.
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
}

/// The index of pending work the sweep reads.
#[async_trait]
pub trait SweepIndex: Send + Sync {
    /// Work for the sweep: every task's [`Task::pending_work`] that is due at or before
    /// `cutoff`, at most `limit` of them, one range read. A store may leave out tasks whose
    /// work a durable timer holds ([`Task::timer_armed`]), and may return work due later
    /// than `cutoff` (the sweep arms it for its time).
    async fn due(&self, cutoff: DateTime<Utc>, limit: usize) -> Result<DueWork, StoreError>;

    /// The sweep armed everything one [`Self::due`] returned: a store that reads its index
    /// from a checkpoint moves the checkpoint to `mark`; one that keeps none has nothing
    /// to do.
    async fn swept(&self, mark: &SweepMark) -> Result<(), StoreError>;

    /// How many unreadable items [`Self::due`] passed over since the last call: a store
    /// that sets such an item aside (rather than failing every sweep on it) says so here,
    /// and the engine counts them ([`crate::metrics::MetricEvent::SetAside`]).
    fn take_set_aside(&self) -> usize {
        0
    }
}

/// Removes finished tasks past their retention (a store whose items expire by themselves,
/// as DynamoDB's do through TTL, has no such capability).
#[async_trait]
pub trait Retention: Send + Sync {
    /// Removes up to `limit` finished tasks (and their attempts) that ended before
    /// `finished_before`, keeping failed tasks whose dead letter is not yet sent; returns
    /// how many it removed.
    async fn purge(
        &self,
        finished_before: DateTime<Utc>,
        limit: usize,
    ) -> Result<usize, StoreError>;
}

/// Counts tasks by state, cheaply enough for a metrics scrape or a page view.
#[async_trait]
pub trait StatusCounts: Send + Sync {
    /// How many tasks are in each state, of one tenant or of all.
    async fn count_by_status(
        &self,
        tenant: Option<&TenantId>,
    ) -> Result<Vec<(Status, u64)>, StoreError>;
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
