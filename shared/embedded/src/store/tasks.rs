//! The tasks: the engine's task store, the sweep's index of due work, retention and the
//! counts by status.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use rusqlite::{params, OptionalExtension};

use boomerang_core::domain::{AttemptRecord, PendingWork, Status, Task, TaskId, TenantId};
use boomerang_core::ports::{
    CreateOutcome, DueWork, ListQuery, Page, Retention, StatusCounts, StoreError, SweepIndex,
    SweepMark, TaskStore,
};

use super::codec::{decode, encode};
use super::rows::{insert_task, pending_work, put_attempt, write_task, TaskRow};
use super::sqlite::SqliteStore;
use super::writer::{lock, unavailable, Claim};

#[async_trait]
impl TaskStore for SqliteStore {
    async fn create(&self, task: &Task) -> Result<CreateOutcome, StoreError> {
        let row = TaskRow::of(task)?;
        let tenant = task.tenant.to_string();
        let key = task.idempotency_key.clone();
        self.write(move |w| {
            let inserted = insert_task(&w.conn, &row, &tenant, key.as_deref())?;
            if inserted == 1 {
                return Ok(CreateOutcome::Created);
            }
            let doc: String = w
                .conn
                .query_row(
                    "SELECT doc FROM tasks WHERE tenant = ?1 AND idempotency_key = ?2",
                    params![tenant, key],
                    |r| r.get(0),
                )
                .map_err(unavailable)?;
            Ok(CreateOutcome::Existing(Box::new(decode(&doc)?)))
        })
        .await
    }

    async fn get(&self, tenant: &TenantId, id: &TaskId) -> Result<Option<Task>, StoreError> {
        let (tenant, id) = (tenant.to_string(), id.to_string());
        let stored: Option<Task> = self
            .read_one(move |c| {
                let doc: Option<String> = c
                    .prepare_cached("SELECT doc FROM tasks WHERE id = ?1 AND tenant = ?2")
                    .and_then(|mut stmt| stmt.query_row([id, tenant], |r| r.get(0)).optional())
                    .map_err(unavailable)?;
                doc.map(|d| decode(&d)).transpose()
            })
            .await?;
        Ok(stored.map(|t| self.overlay(t)))
    }

    /// The task and its attempts from one read transaction (one snapshot of the file),
    /// the claim laid over it only if made on the version read; a claim ends when its
    /// outcome is written, before that commits. So a reader never sees an attempt's
    /// result beside a task still `delivering`, a state that never was: two reads could
    /// take the task before an outcome committed and its attempts after.
    async fn details(
        &self,
        tenant: &TenantId,
        id: &TaskId,
    ) -> Result<Option<(Task, Vec<AttemptRecord>)>, StoreError> {
        let (tenant, id) = (tenant.to_string(), id.to_string());
        let read = self
            .read(move |c| {
                let tx = c.unchecked_transaction().map_err(unavailable)?;
                let doc: Option<String> = tx
                    .prepare_cached("SELECT doc FROM tasks WHERE id = ?1 AND tenant = ?2")
                    .and_then(|mut stmt| stmt.query_row([&id, &tenant], |r| r.get(0)).optional())
                    .map_err(unavailable)?;
                let Some(doc) = doc else {
                    return Ok(None);
                };
                let mut stmt = tx
                    .prepare_cached("SELECT doc FROM attempts WHERE task_id = ?1 ORDER BY number")
                    .map_err(unavailable)?;
                let attempts = stmt
                    .query_map([&id], |r| r.get::<_, String>(0))
                    .map_err(unavailable)?
                    .map(|doc| decode(&doc.map_err(unavailable)?))
                    .collect::<Result<Vec<AttemptRecord>, StoreError>>()?;
                Ok(Some((decode::<Task>(&doc)?, attempts)))
            })
            .await?;
        Ok(read.map(|(task, attempts)| (self.overlay(task), attempts)))
    }

    async fn claim(&self, claimed: &Task, expected_version: u64) -> Result<(), StoreError> {
        let claimed = claimed.clone();
        // Nothing is written, so it is answered at once, without waiting for a commit; it
        // still runs on the writer, in order with the writes around it.
        self.writer
            .write(false, move |w| {
                let id = claimed.id;
                let stored = w.stored_version(&id, expected_version)?;
                // Unclaimed, nothing is written to check the version for us: read it.
                let unclaimed = !lock(&w.claims).contains_key(&id);
                if unclaimed && w.file_version(&id)? != Some(expected_version) {
                    return Err(StoreError::Conflict);
                }
                let claim = Claim {
                    task: claimed,
                    stored_version: stored,
                };
                lock(&w.claims).insert(id, claim);
                Ok(())
            })
            .await
    }

    async fn update(&self, task: &Task, expected_version: u64) -> Result<(), StoreError> {
        let row = TaskRow::of(task)?;
        let id = task.id;
        self.write(move |w| write_task(w, &id, &row, expected_version))
            .await
    }

    async fn finish_attempt(
        &self,
        record: &AttemptRecord,
        next: &Task,
        expected_version: u64,
    ) -> Result<(), StoreError> {
        let row = TaskRow::of(next)?;
        let (id, number, doc) = (next.id, record.number, encode(record)?);
        self.write(move |w| {
            put_attempt(&w.conn, &id.to_string(), number, &doc)?;
            // Last: it ends the claim, which a failed write must not do.
            write_task(w, &id, &row, expected_version)
        })
        .await
    }

    async fn put_attempt(
        &self,
        _tenant: &TenantId,
        record: &AttemptRecord,
    ) -> Result<(), StoreError> {
        let (id, number, doc) = (record.task_id.to_string(), record.number, encode(record)?);
        self.write(move |w| put_attempt(&w.conn, &id, number, &doc))
            .await
    }

    async fn attempts(
        &self,
        tenant: &TenantId,
        id: &TaskId,
    ) -> Result<Vec<AttemptRecord>, StoreError> {
        let (tenant, id) = (tenant.to_string(), id.to_string());
        self.read(move |c| {
            let mut stmt = c
                .prepare_cached(
                    "SELECT a.doc FROM attempts a JOIN tasks t ON t.id = a.task_id
                     WHERE a.task_id = ?1 AND t.tenant = ?2 ORDER BY a.number",
                )
                .map_err(unavailable)?;
            let rows = stmt
                .query_map([id, tenant], |r| r.get::<_, String>(0))
                .map_err(unavailable)?;
            rows.map(|doc| decode(&doc.map_err(unavailable)?)).collect()
        })
        .await
    }

    async fn list(&self, tenant: &TenantId, query: &ListQuery) -> Result<Page, StoreError> {
        let tenant_id = tenant.clone();
        let tenant = tenant.to_string();
        // Claimed tasks are `delivering` only in memory; the file still says `scheduled`.
        let stored_status = match query.status {
            Some(Status::Delivering) => return Ok(self.claimed_page(&tenant_id, query)),
            other => other.map(Status::as_str),
        };
        // ULIDs sort by time, so "newest first" is id order; "~" sorts after every ULID.
        let cursor = query.cursor.map_or("~".to_string(), |c| c.to_string());
        let key = query.key.as_ref().map(|k| k.to_string());
        let limit = query.limit;
        let tasks: Vec<Task> = self
            .read(move |c| {
                // Two statements, so that each can use its index (by tenant, or by key).
                let sql = if key.is_some() {
                    "SELECT doc FROM tasks
                     WHERE tenant = ?1 AND business_key = ?5 AND (?2 IS NULL OR status = ?2)
                       AND id < ?3
                     ORDER BY id DESC LIMIT ?4"
                } else {
                    "SELECT doc FROM tasks
                     WHERE tenant = ?1 AND (?2 IS NULL OR status = ?2) AND id < ?3
                       AND ?5 IS NULL
                     ORDER BY id DESC LIMIT ?4"
                };
                let mut stmt = c.prepare_cached(sql).map_err(unavailable)?;
                let rows = stmt
                    .query_map(
                        params![tenant, stored_status, cursor, limit + 1, key],
                        |r| r.get::<_, String>(0),
                    )
                    .map_err(unavailable)?;
                rows.map(|doc| decode(&doc.map_err(unavailable)?)).collect()
            })
            .await?;
        let mut page = Page::from_overfetch(tasks, limit);
        page.tasks = page
            .tasks
            .into_iter()
            .map(|t| self.overlay(t))
            .filter(|t| query.status.is_none_or(|s| t.status == s))
            .collect();
        Ok(page)
    }
}

#[async_trait]
impl SweepIndex for SqliteStore {
    async fn due(&self, cutoff: DateTime<Utc>, limit: usize) -> Result<DueWork, StoreError> {
        let cutoff_ms = cutoff.timestamp_millis();
        let stored: Vec<PendingWork> = self
            .read(move |c| {
                let mut stmt = c
                    .prepare_cached(
                        "SELECT tenant, id, attempt, due_kind, due_ms FROM tasks
                         WHERE due_ms <= ?1 ORDER BY due_ms LIMIT ?2",
                    )
                    .map_err(unavailable)?;
                let rows = stmt
                    .query_map(params![cutoff_ms, limit as i64], |r| {
                        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
                    })
                    .map_err(unavailable)?;
                rows.map(|row| {
                    let (tenant, id, attempt, kind, due_ms) = row.map_err(unavailable)?;
                    pending_work(tenant, id, attempt, kind, due_ms)
                })
                .collect()
            })
            .await?;
        // A claimed task's pending work is its lease's end, which only memory knows.
        let claims = lock(&self.claims);
        let mut due: Vec<PendingWork> = stored
            .into_iter()
            .filter(|w| !claims.contains_key(&w.attempt.task_id))
            .collect();
        due.extend(
            claims
                .values()
                .filter_map(|c| c.task.pending_work())
                .filter(|w| w.due_at <= cutoff),
        );
        due.truncate(limit);
        Ok(DueWork {
            work: due,
            mark: None,
        })
    }

    /// The index is read whole at every sweep: there is no checkpoint to move.
    async fn swept(&self, _mark: &SweepMark) -> Result<(), StoreError> {
        Ok(())
    }
}

#[async_trait]
impl Retention for SqliteStore {
    async fn purge(
        &self,
        finished_before: DateTime<Utc>,
        limit: usize,
    ) -> Result<usize, StoreError> {
        let cutoff = finished_before.timestamp_millis();
        self.write(move |w| {
            let ids: Vec<String> = w
                .conn
                .prepare_cached("SELECT id FROM tasks WHERE finished_ms < ?1 LIMIT ?2")
                .and_then(|mut stmt| {
                    stmt.query_map(params![cutoff, limit as i64], |r| r.get(0))?
                        .collect()
                })
                .map_err(unavailable)?;
            for id in &ids {
                w.conn
                    .execute("DELETE FROM attempts WHERE task_id = ?1", [id])
                    .and_then(|_| w.conn.execute("DELETE FROM tasks WHERE id = ?1", [id]))
                    .map_err(unavailable)?;
            }
            // Bulk jobs finished as long ago go with them (their reports name those tasks).
            w.conn
                .execute(
                    "DELETE FROM bulk_jobs WHERE finished_ms < ?1",
                    params![cutoff],
                )
                .map_err(unavailable)?;
            Ok(ids.len())
        })
        .await
    }
}

#[async_trait]
impl StatusCounts for SqliteStore {
    async fn count_by_status(
        &self,
        tenant: Option<&TenantId>,
    ) -> Result<Vec<(Status, u64)>, StoreError> {
        let only = tenant.map(|t| t.as_str().to_string());
        let stored: Vec<(String, u64)> = self
            .read(move |c| {
                let mut stmt = c
                    .prepare_cached(
                        "SELECT status, count(*) FROM tasks
                         WHERE ?1 IS NULL OR tenant = ?1 GROUP BY status",
                    )
                    .map_err(unavailable)?;
                let rows = stmt
                    .query_map([only], |r| Ok((r.get(0)?, r.get(1)?)))
                    .map_err(unavailable)?;
                rows.collect::<Result<_, _>>().map_err(unavailable)
            })
            .await?;
        // A claim is not written: claimed tasks are stored `scheduled`.
        let claimed = lock(&self.claims)
            .values()
            .filter(|c| tenant.is_none_or(|t| &c.task.tenant == t))
            .count() as u64;
        let mut counts = Vec::new();
        for (status, n) in stored {
            let status = Status::parse(&status)
                .ok_or_else(|| StoreError::Corrupt(format!("bad status {status}").into()))?;
            let n = match status {
                Status::Scheduled => n.saturating_sub(claimed),
                _ => n,
            };
            counts.push((status, n));
        }
        counts.push((Status::Delivering, claimed));
        Ok(counts)
    }
}

impl SqliteStore {
    /// A page of the tenant's claimed tasks, from memory.
    fn claimed_page(&self, tenant: &TenantId, query: &ListQuery) -> Page {
        let mut tasks: Vec<Task> = lock(&self.claims)
            .values()
            .map(|c| c.task.clone())
            .filter(|t| &t.tenant == tenant && query.cursor.is_none_or(|c| t.id < c))
            .filter(|t| query.key.is_none() || t.spec.key == query.key)
            .collect();
        tasks.sort_by_key(|t| std::cmp::Reverse(t.id));
        tasks.truncate(query.limit as usize + 1);
        Page::from_overfetch(tasks, query.limit)
    }
}
