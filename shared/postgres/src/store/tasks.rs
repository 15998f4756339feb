//! The tasks: the engine's task store, the sweep's index of due work, retention and the
//! counts by status.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use boomerang_core::domain::{AttemptRecord, PendingWork, Status, Task, TaskId, TenantId};
use boomerang_core::ports::{
    CreateOutcome, DueWork, ListQuery, Page, Retention, StatusCounts, StoreError, SweepIndex,
    SweepMark, TaskStore,
};

use super::codec::{decode, encode};
use super::rows::pending_work;
use super::sql::{ms, unavailable};
use super::PgStore;

#[async_trait]
impl TaskStore for PgStore {
    async fn create(&self, task: &Task) -> Result<CreateOutcome, StoreError> {
        self.writer.create(task).await
    }

    async fn get(&self, tenant: &TenantId, id: &TaskId) -> Result<Option<Task>, StoreError> {
        let row = self
            .query_opt(
                "SELECT doc FROM tasks WHERE id = $1 AND tenant = $2",
                &[&id.to_string(), &tenant.as_str()],
            )
            .await?;
        let task: Option<Task> = row.map(|r| decode(r.get(0))).transpose()?;
        Ok(task.map(|t| self.claims.overlay(t)))
    }

    /// The task and its attempts in one statement (one snapshot of the tables), the claim
    /// laid over only if made on the version read ([`super::claims::Claims::overlay`]): a
    /// reader never sees an attempt's result beside a task still `delivering`, as two
    /// reads could, one before the outcome's commit and one after.
    async fn details(
        &self,
        tenant: &TenantId,
        id: &TaskId,
    ) -> Result<Option<(Task, Vec<AttemptRecord>)>, StoreError> {
        let row = self
            .query_opt(
                "SELECT t.doc, coalesce(
                     (SELECT array_agg(a.doc ORDER BY a.number) FROM attempts a
                      WHERE a.task_id = t.id),
                     '{}'::text[])
                 FROM tasks t WHERE t.id = $1 AND t.tenant = $2",
                &[&id.to_string(), &tenant.as_str()],
            )
            .await?;
        let Some(row) = row else {
            return Ok(None);
        };
        let task: Task = decode(row.get(0))?;
        let attempts = (row.get::<_, Vec<&str>>(1).into_iter())
            .map(decode)
            .collect::<Result<Vec<AttemptRecord>, StoreError>>()?;
        Ok(Some((self.claims.overlay(task), attempts)))
    }

    /// The document this server last read or wrote of a task it owns, if it kept one: a
    /// delivery's first read, which may lag (its claim checks the version in the table).
    async fn peek(&self, tenant: &TenantId, id: &TaskId) -> Result<Option<Task>, StoreError> {
        if let Some(claim) = self.claims.get(id) {
            return Ok(Some(claim.task));
        }
        match self.owned.doc(id) {
            Some(task) if &task.tenant == tenant => Ok(Some(task)),
            _ => self.get(tenant, id).await,
        }
    }

    async fn claim(&self, claimed: &Task, expected_version: u64) -> Result<(), StoreError> {
        self.claim_checks.claim(claimed, expected_version).await
    }

    async fn update(&self, task: &Task, expected_version: u64) -> Result<(), StoreError> {
        self.writer.update(task, expected_version, None).await
    }

    async fn finish_attempt(
        &self,
        record: &AttemptRecord,
        next: &Task,
        expected_version: u64,
    ) -> Result<(), StoreError> {
        let attempt = (record.number as i32, encode(record)?);
        self.writer
            .update(next, expected_version, Some(attempt))
            .await
    }

    async fn put_attempt(
        &self,
        _tenant: &TenantId,
        record: &AttemptRecord,
    ) -> Result<(), StoreError> {
        let client = self.client().await?;
        client
            .execute(
                "INSERT INTO attempts (task_id, number, doc) VALUES ($1, $2, $3)
                 ON CONFLICT (task_id, number) DO UPDATE SET doc = excluded.doc",
                &[
                    &record.task_id.to_string(),
                    &(record.number as i32),
                    &encode(record)?,
                ],
            )
            .await
            .map_err(unavailable)?;
        Ok(())
    }

    async fn attempts(
        &self,
        tenant: &TenantId,
        id: &TaskId,
    ) -> Result<Vec<AttemptRecord>, StoreError> {
        let rows = self
            .query(
                "SELECT a.doc FROM attempts a JOIN tasks t ON t.id = a.task_id
                 WHERE a.task_id = $1 AND t.tenant = $2 ORDER BY a.number",
                &[&id.to_string(), &tenant.as_str()],
            )
            .await?;
        rows.iter().map(|r| decode(r.get(0))).collect()
    }

    async fn list(&self, tenant: &TenantId, query: &ListQuery) -> Result<Page, StoreError> {
        // Claimed tasks are `delivering` only in this server's memory; the table still
        // says `scheduled`.
        let stored_status = match query.status {
            Some(Status::Delivering) => return Ok(self.claimed_page(tenant, query)),
            other => other.map(Status::as_str),
        };
        // ULIDs sort by time, so "newest first" is id order; "~" sorts after every ULID.
        let cursor = query.cursor.map_or("~".to_string(), |c| c.to_string());
        let key = query.key.as_ref().map(|k| k.to_string());
        let limit = i64::from(query.limit) + 1;
        let client = self.client().await?;
        // Two statements, so that each can use its index (by tenant, or by key).
        let sql = if key.is_some() {
            "SELECT doc FROM tasks
             WHERE tenant = $1 AND business_key = $5 AND ($2::text IS NULL OR status = $2)
               AND id < $3
             ORDER BY id DESC LIMIT $4"
        } else {
            "SELECT doc FROM tasks
             WHERE tenant = $1 AND ($2::text IS NULL OR status = $2) AND id < $3
               AND $5::text IS NULL
             ORDER BY id DESC LIMIT $4"
        };
        let stmt = client.prepare_cached(sql).await.map_err(unavailable)?;
        let rows = client
            .query(
                &stmt,
                &[&tenant.as_str(), &stored_status, &cursor, &limit, &key],
            )
            .await
            .map_err(unavailable)?;
        let tasks = rows
            .iter()
            .map(|r| decode(r.get(0)))
            .collect::<Result<Vec<Task>, _>>()?;
        let mut page = Page::from_overfetch(tasks, query.limit);
        page.tasks = page
            .tasks
            .into_iter()
            .map(|t| self.claims.overlay(t))
            .filter(|t| query.status.is_none_or(|s| t.status == s))
            .collect();
        Ok(page)
    }
}

impl PgStore {
    /// A page of the tenant's tasks claimed on this server, from memory.
    fn claimed_page(&self, tenant: &TenantId, query: &ListQuery) -> Page {
        let mut tasks = self.claims.tasks(|t| {
            &t.tenant == tenant
                && query.cursor.is_none_or(|c| t.id < c)
                && (query.key.is_none() || t.spec.key == query.key)
        });
        tasks.sort_by_key(|t| std::cmp::Reverse(t.id));
        tasks.truncate(query.limit as usize + 1);
        Page::from_overfetch(tasks, query.limit)
    }
}

/// Reads rows of the pending-work index (tenant, id, attempt, due_kind, due_ms); an
/// unreadable one is skipped and said, so that one bad row cannot stop the work.
pub(crate) fn pending_rows(rows: &[tokio_postgres::Row]) -> Vec<PendingWork> {
    rows.iter()
        .filter_map(|r| {
            pending_work(r.get(0), r.get(1), r.get(2), r.get(3), r.get(4))
                .inspect_err(|e| tracing::error!(error = %e, "pending work unreadable; skipped"))
                .ok()
        })
        .collect()
}

#[async_trait]
impl SweepIndex for PgStore {
    async fn due(&self, cutoff: DateTime<Utc>, limit: usize) -> Result<DueWork, StoreError> {
        let rows = self
            .query(
                "SELECT tenant, id, attempt, due_kind, due_ms FROM tasks
                 WHERE due_ms <= $1 ORDER BY due_ms LIMIT $2",
                &[&ms(cutoff), &(limit as i64)],
            )
            .await?;
        // A claimed task's pending work is its lease's end, which only memory knows.
        let mut due: Vec<PendingWork> = pending_rows(&rows)
            .into_iter()
            .filter(|w| self.claims.get(&w.attempt.task_id).is_none())
            .collect();
        due.extend(
            self.claims
                .tasks(|_| true)
                .iter()
                .filter_map(Task::pending_work)
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
impl Retention for PgStore {
    async fn purge(
        &self,
        finished_before: DateTime<Utc>,
        limit: usize,
    ) -> Result<usize, StoreError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(unavailable)?;
        let removed = tx
            .query(
                "DELETE FROM tasks WHERE id IN (
                     SELECT id FROM tasks WHERE finished_ms < $1 AND owner IS NULL LIMIT $2)
                 RETURNING id",
                &[&ms(finished_before), &(limit as i64)],
            )
            .await
            .map_err(unavailable)?;
        let ids: Vec<String> = removed.iter().map(|r| r.get(0)).collect();
        tx.execute("DELETE FROM attempts WHERE task_id = ANY($1)", &[&ids])
            .await
            .map_err(unavailable)?;
        // Bulk jobs finished as long ago go with them (their reports name those tasks).
        tx.execute(
            "DELETE FROM bulk_jobs WHERE finished_ms < $1",
            &[&ms(finished_before)],
        )
        .await
        .map_err(unavailable)?;
        tx.commit().await.map_err(unavailable)?;
        Ok(ids.len())
    }
}

#[async_trait]
impl StatusCounts for PgStore {
    async fn count_by_status(
        &self,
        tenant: Option<&TenantId>,
    ) -> Result<Vec<(Status, u64)>, StoreError> {
        // Two statements, not one with `$1 IS NULL OR`: a plan made for both cases reads
        // the whole table for one tenant too.
        let rows = match tenant {
            Some(tenant) => {
                self.query(
                    "SELECT status, count(*) FROM tasks WHERE tenant = $1 GROUP BY status",
                    &[&tenant.as_str()],
                )
                .await?
            }
            None => (self.query("SELECT status, count(*) FROM tasks GROUP BY status", &[])).await?,
        };
        // A claim is not written: claimed tasks are stored `scheduled`.
        let claimed = self
            .claims
            .tasks(|t| tenant.is_none_or(|x| &t.tenant == x))
            .len() as u64;
        let mut counts = Vec::new();
        for row in rows {
            let (status, n): (String, i64) = (row.get(0), row.get(1));
            let status = Status::parse(&status)
                .ok_or_else(|| StoreError::Corrupt(format!("bad status {status}").into()))?;
            let n = match status {
                Status::Scheduled => (n as u64).saturating_sub(claimed),
                _ => n as u64,
            };
            counts.push((status, n));
        }
        counts.push((Status::Delivering, claimed));
        Ok(counts)
    }
}
