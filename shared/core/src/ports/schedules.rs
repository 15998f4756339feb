//! Two capabilities of the store for recurring and replaceable work: a tenant's schedules
//! ([`ScheduleStore`]), and the newest task registered under a key with `on_key: replace`
//! ([`KeyedTasks`]). Both backends have both.

use async_trait::async_trait;

use super::store::StoreError;
use crate::domain::{BusinessKey, Schedule, ScheduleId, Task, TaskId, TenantId};

/// One page of a tenant's schedules, newest first.
#[derive(Clone, Debug, Default)]
pub struct SchedulePage {
    pub schedules: Vec<Schedule>,
    pub next_cursor: Option<ScheduleId>,
}

impl SchedulePage {
    /// A page from a list fetched with one row more than `limit`: the extra row only says
    /// that another page follows.
    pub fn from_overfetch(mut schedules: Vec<Schedule>, limit: u32) -> SchedulePage {
        let next_cursor = super::store::cut_overfetch(&mut schedules, limit, |s| s.id);
        SchedulePage {
            schedules,
            next_cursor,
        }
    }
}

/// Each tenant's schedules.
#[async_trait]
pub trait ScheduleStore: Send + Sync {
    /// Stores a new schedule.
    async fn create_schedule(&self, schedule: &Schedule) -> Result<(), StoreError>;

    /// The tenant's schedule with this id.
    async fn schedule(
        &self,
        tenant: &TenantId,
        id: &ScheduleId,
    ) -> Result<Option<Schedule>, StoreError>;

    /// Replaces the schedule only if its stored version is `expected_version`; otherwise
    /// [`StoreError::Conflict`] (also when it was deleted).
    async fn update_schedule(
        &self,
        schedule: &Schedule,
        expected_version: u64,
    ) -> Result<(), StoreError>;

    /// Removes the tenant's schedule; whether there was one.
    async fn delete_schedule(&self, tenant: &TenantId, id: &ScheduleId)
        -> Result<bool, StoreError>;

    /// Up to `limit` of the tenant's schedules, newest first, after `cursor`.
    async fn schedules(
        &self,
        tenant: &TenantId,
        cursor: Option<ScheduleId>,
        limit: u32,
    ) -> Result<SchedulePage, StoreError>;
}

/// The task a key's replace registrations share: each registration with `on_key: replace`
/// either replaces it (while none of its attempts has begun) or makes a new one that takes
/// its place.
#[async_trait]
pub trait KeyedTasks: Send + Sync {
    /// The newest task registered under `key` with `on_key: replace`, read consistently.
    async fn keyed(&self, tenant: &TenantId, key: &BusinessKey)
        -> Result<Option<Task>, StoreError>;

    /// Stores the new `task` (whose spec names its key) as its key's newest, in one atomic
    /// write, only if the key's newest is still `previous` (`None`: it had none);
    /// otherwise [`StoreError::Conflict`] and nothing is written.
    async fn create_keyed(&self, task: &Task, previous: Option<TaskId>) -> Result<(), StoreError>;

    /// Writes the whole task, its spec included (a replaced task's spec changes, which no
    /// other write does), only if its stored version is `expected_version`; otherwise
    /// [`StoreError::Conflict`].
    async fn replace_keyed(&self, task: &Task, expected_version: u64) -> Result<(), StoreError>;
}
