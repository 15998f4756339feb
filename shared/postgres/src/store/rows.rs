//! A task's row: the columns the queries use, derived from the task, and a row of the
//! pending-work index back into the domain's terms.

use boomerang_core::domain::{Attempt, AttemptRef, PendingWork, Task, TenantId, WorkKind};
use boomerang_core::ports::StoreError;

use super::codec::encode;
use super::sql::at_ms;

/// The columns the queries use, derived from the task.
#[derive(Clone, Debug)]
pub(crate) struct TaskRow {
    pub id: String,
    pub tenant: String,
    pub status: &'static str,
    pub version: i64,
    /// The number of the attempt the pending work's timer carries (0 for a held task's
    /// check), else the task's attempt.
    pub attempt: i32,
    pub idempotency_key: Option<String>,
    pub due_kind: Option<&'static str>,
    pub due_ms: Option<i64>,
    pub business_key: Option<String>,
    /// When a finished task ended; absent while it has anything left to do (a dead letter
    /// to send included), so retention never removes it before then.
    pub finished_ms: Option<i64>,
    pub doc: String,
}

impl TaskRow {
    pub(crate) fn of(t: &Task) -> Result<TaskRow, StoreError> {
        let work = t.pending_work();
        Ok(TaskRow {
            id: t.id.to_string(),
            tenant: t.tenant.to_string(),
            status: t.status.as_str(),
            version: t.version as i64,
            attempt: work
                .as_ref()
                .map_or(t.attempt, |w| w.attempt.attempt.number()) as i32,
            idempotency_key: t.idempotency_key.clone(),
            due_kind: work.as_ref().map(|w| w.kind.as_str()),
            due_ms: work.as_ref().map(|w| w.due_at.timestamp_millis()),
            business_key: t.spec.key.as_ref().map(|k| k.to_string()),
            finished_ms: t.is_settled().then(|| t.updated_at.timestamp_millis()),
            doc: encode(t)?,
        })
    }

    /// The server that keeps the row's pending work: `server` if it falls due by
    /// `near_ms` (its timer holds it at once), else none (any server's loader leases it
    /// as it comes near).
    pub(crate) fn owner(&self, server: &str, near_ms: i64) -> Option<String> {
        self.due_ms
            .filter(|due| *due <= near_ms)
            .map(|_| server.to_string())
    }
}

/// A row of the pending-work index back into the domain's terms.
pub(crate) fn pending_work(
    tenant: &str,
    id: &str,
    attempt: i32,
    kind: &str,
    due_ms: i64,
) -> Result<PendingWork, StoreError> {
    let corrupt = |what: &str| StoreError::Corrupt(format!("task {id}: bad {what}").into());
    Ok(PendingWork {
        attempt: AttemptRef::new(
            TenantId::parse(tenant).map_err(|_| corrupt("tenant"))?,
            id.parse().map_err(|_| corrupt("id"))?,
            Attempt::from(attempt as u32),
        ),
        kind: WorkKind::parse(kind).ok_or_else(|| corrupt("due_kind"))?,
        due_at: at_ms(due_ms)?,
    })
}
