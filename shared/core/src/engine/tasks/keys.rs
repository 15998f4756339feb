//! Acting on every task of a tenant with one business key: canceling ("the order was paid:
//! cancel its payment reminders") and releasing held tasks ("the order committed").

use std::future::Future;

use crate::domain::limits::MAX_KEY_TASKS;
use crate::domain::{BusinessKey, Status, TaskId, TenantId};
use crate::engine::error::EngineError;
use crate::engine::state::Engine;
use crate::ports::ListQuery;

/// Tasks read per page while acting.
const PAGE: u32 = 100;

/// What an action by key did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KeyOutcome {
    /// The tasks it acted on.
    pub done: Vec<TaskId>,
    /// Tasks with the key it left as they were (under way, finished, not held…), with the
    /// status that kept them.
    pub not_done: Vec<(TaskId, Status)>,
    /// More than [`MAX_KEY_TASKS`] tasks have the key; another request goes on.
    pub more: bool,
}

/// What an action did to one task with the key.
enum Step {
    Done,
    NotDone(Status),
    /// Removed meanwhile (retention): nothing left to act on.
    Gone,
}

impl Engine {
    /// Cancels each of the tenant's `scheduled` and `held` tasks with `key`, one
    /// conditional write each, as [`Engine::cancel`] does: a task a delivery has claimed
    /// meanwhile is reported with its new status instead.
    pub async fn cancel_by_key(
        &self,
        tenant: &TenantId,
        key: &BusinessKey,
    ) -> Result<KeyOutcome, EngineError> {
        let cancelable = |s| matches!(s, Status::Scheduled | Status::Held);
        self.by_key(tenant, key, cancelable, |id| async move {
            match self.cancel(tenant, &id).await {
                Ok(_) => Ok(Step::Done),
                Err(e) => self.refused(tenant, &id, e).await,
            }
        })
        .await
    }

    /// Releases each of the tenant's held tasks with `key`, as [`Engine::release`] does.
    pub async fn release_by_key(
        &self,
        tenant: &TenantId,
        key: &BusinessKey,
    ) -> Result<KeyOutcome, EngineError> {
        let held = |s| s == Status::Held;
        self.by_key(tenant, key, held, |id| async move {
            match self.release(tenant, &id).await {
                Ok(r) if r.released_now => Ok(Step::Done),
                Ok(r) => Ok(Step::NotDone(r.task.status)),
                Err(e) => self.refused(tenant, &id, e).await,
            }
        })
        .await
    }

    /// Pages through the tenant's tasks with `key`, newest first, and applies `act` to
    /// each whose status `eligible` accepts (as listed: `act` writes conditionally).
    async fn by_key<F, Fut>(
        &self,
        tenant: &TenantId,
        key: &BusinessKey,
        eligible: impl Fn(Status) -> bool,
        act: F,
    ) -> Result<KeyOutcome, EngineError>
    where
        F: Fn(TaskId) -> Fut,
        Fut: Future<Output = Result<Step, EngineError>>,
    {
        let mut outcome = KeyOutcome::default();
        let mut cursor = None;
        let mut seen = 0;
        loop {
            let query = ListQuery {
                key: Some(key.clone()),
                limit: PAGE,
                cursor,
                ..ListQuery::default()
            };
            let page = self.list(tenant, &query).await?;
            for task in page.tasks {
                if seen == MAX_KEY_TASKS {
                    outcome.more = true;
                    return Ok(outcome);
                }
                seen += 1;
                if !eligible(task.status) {
                    outcome.not_done.push((task.id, task.status));
                    continue;
                }
                match act(task.id).await? {
                    Step::Done => outcome.done.push(task.id),
                    Step::NotDone(status) => outcome.not_done.push((task.id, status)),
                    Step::Gone => {}
                }
            }
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => return Ok(outcome),
            }
        }
    }

    /// A refused action: a conflict reports the task's status now.
    async fn refused(
        &self,
        tenant: &TenantId,
        id: &TaskId,
        error: EngineError,
    ) -> Result<Step, EngineError> {
        match error {
            EngineError::Conflict(_) => {
                Ok(Step::NotDone(self.owned_task(tenant, id).await?.status))
            }
            EngineError::NotFound(_) => Ok(Step::Gone),
            e => Err(e),
        }
    }
}
