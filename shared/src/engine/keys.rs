//! Canceling by the caller's own id: every `scheduled` (or `held`) task of a tenant with one
//! business key ("the order was paid: cancel its payment reminders").

use super::{Engine, EngineError};
use crate::domain::{BusinessKey, Status, TaskId, TenantId};
use crate::ports::ListQuery;

/// Most tasks one cancel by key looks at; the answer says whether more remain.
pub const MAX_KEY_CANCEL: usize = 1000;
/// Tasks read per page while canceling.
const PAGE: u32 = 100;

/// What a cancel by key did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KeyCancellation {
    pub canceled: Vec<TaskId>,
    /// Tasks with the key that were not `scheduled` (being delivered, or finished), with
    /// the status that kept them.
    pub not_canceled: Vec<(TaskId, Status)>,
    /// More than [`MAX_KEY_CANCEL`] tasks have the key; another request goes on.
    pub more: bool,
}

impl Engine {
    /// Cancels each of the tenant's `scheduled` and `held` tasks with `key`, one conditional write
    /// each, as [`Engine::cancel`] does: a task a delivery has claimed meanwhile is
    /// reported with its new status instead.
    pub async fn cancel_by_key(
        &self,
        tenant: &TenantId,
        key: &BusinessKey,
    ) -> Result<KeyCancellation, EngineError> {
        let mut outcome = KeyCancellation::default();
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
                if seen == MAX_KEY_CANCEL {
                    outcome.more = true;
                    return Ok(outcome);
                }
                seen += 1;
                if !matches!(task.status, Status::Scheduled | Status::Held) {
                    outcome.not_canceled.push((task.id, task.status));
                    continue;
                }
                match self.cancel(tenant, &task.id).await {
                    Ok(_) => outcome.canceled.push(task.id),
                    Err(EngineError::Conflict(_)) => {
                        let now = self.owned_task(tenant, &task.id).await?;
                        outcome.not_canceled.push((task.id, now.status));
                    }
                    // Removed meanwhile (retention): nothing left to cancel.
                    Err(EngineError::NotFound) => {}
                    Err(e) => return Err(e),
                }
            }
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => return Ok(outcome),
            }
        }
    }
}
