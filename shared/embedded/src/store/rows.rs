//! A task's row: the columns the queries use, derived from the task, and the writes of
//! a row and of an attempt that the task store and the schedules share.

use chrono::DateTime;
use rusqlite::{params, Connection};

use boomerang_core::domain::{Attempt, AttemptRef, PendingWork, Task, TaskId, TenantId, WorkKind};
use boomerang_core::ports::StoreError;

use super::codec::encode;
use super::writer::{lock, unavailable, Writer};

/// The columns the queries use, derived from the task.
pub(crate) struct TaskRow {
    pub(super) id: String,
    pub(super) status: &'static str,
    pub(super) version: i64,
    /// The number of the attempt the pending work's timer carries (0 for a held task's
    /// check: [`Attempt`]'s stored form), else the task's attempt.
    pub(super) attempt: i64,
    pub(super) due_kind: Option<&'static str>,
    pub(super) due_ms: Option<i64>,
    pub(super) business_key: Option<String>,
    /// When a finished task ended; absent while it has anything left to do (a dead letter
    /// to send included), so retention never removes it before then.
    pub(super) finished_ms: Option<i64>,
    pub(super) doc: String,
}

impl TaskRow {
    pub(crate) fn of(t: &Task) -> Result<TaskRow, StoreError> {
        let work = t.pending_work();
        Ok(TaskRow {
            id: t.id.to_string(),
            status: t.status.as_str(),
            version: t.version as i64,
            attempt: work
                .as_ref()
                .map_or(t.attempt, |w| w.attempt.attempt.number()) as i64,
            due_kind: work.as_ref().map(|w| w.kind.as_str()),
            due_ms: work.as_ref().map(|w| w.due_at.timestamp_millis()),
            business_key: t.spec.key.as_ref().map(|k| k.to_string()),
            finished_ms: t.is_settled().then(|| t.updated_at.timestamp_millis()),
            doc: encode(t)?,
        })
    }
}

/// A row of the pending-work index back into the domain's terms.
pub(super) fn pending_work(
    tenant: String,
    id: String,
    attempt: u32,
    kind: String,
    due_ms: i64,
) -> Result<PendingWork, StoreError> {
    let corrupt = |what: &str| StoreError::Corrupt(format!("task {id}: bad {what}").into());
    Ok(PendingWork {
        attempt: AttemptRef::new(
            TenantId::parse(tenant).map_err(|_| corrupt("tenant"))?,
            id.parse().map_err(|_| corrupt("id"))?,
            Attempt::from(attempt),
        ),
        kind: WorkKind::parse(&kind).ok_or_else(|| corrupt("due_kind"))?,
        due_at: DateTime::from_timestamp_millis(due_ms).ok_or_else(|| corrupt("due_ms"))?,
    })
}

/// Replaces the task's row if the version the engine read is still current (the claim's,
/// while claimed); the claim, if any, ends with it.
pub(super) fn write_task(
    w: &Writer,
    id: &TaskId,
    row: &TaskRow,
    expected: u64,
) -> Result<(), StoreError> {
    let stored = w.stored_version(id, expected)?;
    let changed = w
        .conn
        .prepare_cached(
            "UPDATE tasks SET status = ?2, version = ?3, attempt = ?4, due_kind = ?5,
                due_ms = ?6, doc = ?7, finished_ms = ?9
             WHERE id = ?1 AND version = ?8",
        )
        .and_then(|mut stmt| {
            stmt.execute(params![
                row.id,
                row.status,
                row.version,
                row.attempt,
                row.due_kind,
                row.due_ms,
                row.doc,
                stored as i64,
                row.finished_ms
            ])
        })
        .map_err(unavailable)?;
    if changed != 1 {
        return Err(StoreError::Conflict);
    }
    lock(&w.claims).remove(id);
    Ok(())
}

/// Inserts a new task's row; 0 rows when its idempotency key (or id) is taken.
pub(crate) fn insert_task(
    conn: &Connection,
    row: &TaskRow,
    tenant: &str,
    idempotency_key: Option<&str>,
) -> Result<usize, StoreError> {
    let mut stmt = conn
        .prepare_cached(
            "INSERT INTO tasks (id, tenant, status, version, attempt, idempotency_key,
                due_kind, due_ms, business_key, finished_ms, doc)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
             ON CONFLICT DO NOTHING",
        )
        .map_err(unavailable)?;
    stmt.execute(params![
        row.id,
        tenant,
        row.status,
        row.version,
        row.attempt,
        idempotency_key,
        row.due_kind,
        row.due_ms,
        row.business_key,
        row.finished_ms,
        row.doc
    ])
    .map_err(unavailable)
}

pub(super) fn put_attempt(
    conn: &Connection,
    id: &str,
    number: u32,
    doc: &str,
) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT OR REPLACE INTO attempts (task_id, number, doc) VALUES (?1, ?2, ?3)",
    )
    .and_then(|mut stmt| stmt.execute(params![id, number, doc]))
    .map_err(unavailable)?;
    Ok(())
}
