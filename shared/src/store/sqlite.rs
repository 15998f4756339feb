//! The embedded store: one SQLite file in the data directory.
//!
//! Each write is a single statement (or transaction) made durable before it returns, so a
//! `kill -9` at any moment loses nothing that was acknowledged. The task document is kept
//! as JSON beside the columns the queries need; those columns are derived from the task
//! (its [`Task::pending_work`] for the sweep), so they never disagree with the document.

use std::path::Path;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use rusqlite::{params, Connection, OptionalExtension};

use super::codec::{decode, encode};
use crate::domain::{
    AttemptRecord, AttemptRef, PendingWork, Status, Task, TaskId, TenantId, WorkKind,
};
use crate::ports::{CreateOutcome, ListQuery, Page, StoreError, TaskStore};

/// Bumped when the schema changes; [`migrate`] brings older files up to date.
const SCHEMA_VERSION: i64 = 2;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS tasks (
    id TEXT PRIMARY KEY,
    tenant TEXT NOT NULL,
    status TEXT NOT NULL,
    version INTEGER NOT NULL,
    attempt INTEGER NOT NULL,
    idempotency_key TEXT,
    due_kind TEXT,
    due_ms INTEGER,
    doc TEXT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS tasks_idempotency ON tasks(tenant, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS tasks_by_tenant ON tasks(tenant, id);
CREATE INDEX IF NOT EXISTS tasks_by_tenant_status ON tasks(tenant, status, id);
CREATE TABLE IF NOT EXISTS attempts (
    task_id TEXT NOT NULL,
    number INTEGER NOT NULL,
    doc TEXT NOT NULL,
    PRIMARY KEY (task_id, number)
);
CREATE TABLE IF NOT EXISTS dead_letters (
    task_id TEXT PRIMARY KEY,
    tenant TEXT NOT NULL,
    failed_ms INTEGER NOT NULL,
    doc TEXT NOT NULL
);
";

/// Created after any migration, since an older file lacks the columns it covers.
const PENDING_WORK_INDEX: &str =
    "CREATE INDEX IF NOT EXISTS tasks_pending ON tasks(due_ms) WHERE due_ms IS NOT NULL;";

#[derive(Clone)]
pub struct SqliteStore {
    conn: Arc<Mutex<Connection>>,
}

impl SqliteStore {
    /// Opens (creating if needed) the database file at `path`.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let mut conn = Connection::open(path).map_err(unavailable)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(unavailable)?;
        // FULL: a commit is on disk before the API acknowledges it.
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(unavailable)?;
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(unavailable)?;
        conn.execute_batch(SCHEMA).map_err(unavailable)?;
        migrate(&mut conn)?;
        conn.execute_batch(PENDING_WORK_INDEX)
            .map_err(unavailable)?;
        Ok(Self {
            conn: Arc::new(Mutex::new(conn)),
        })
    }

    /// Runs `f` on the connection off the async threads.
    pub(crate) async fn with<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let conn = self.conn.clone();
        tokio::task::spawn_blocking(move || {
            let mut guard = conn
                .lock()
                .map_err(|_| StoreError::Unavailable("store lock poisoned".into()))?;
            f(&mut guard)
        })
        .await
        .map_err(|e| StoreError::Unavailable(e.into()))?
    }
}

/// Brings a file written by an older version to [`SCHEMA_VERSION`]. Version 1 kept one
/// column per kind of pending work; version 2 keeps `due_kind`/`due_ms`, recomputed here
/// from each task's document.
fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .map_err(unavailable)?;
    if version >= SCHEMA_VERSION {
        return Ok(());
    }
    let tx = conn.transaction().map_err(unavailable)?;
    let has_due_columns = tx
        .prepare("SELECT due_kind, due_ms FROM tasks LIMIT 0")
        .is_ok();
    if !has_due_columns {
        tx.execute_batch(
            "ALTER TABLE tasks ADD COLUMN due_kind TEXT;
             ALTER TABLE tasks ADD COLUMN due_ms INTEGER;
             DROP INDEX IF EXISTS tasks_due;
             DROP INDEX IF EXISTS tasks_lease;
             DROP INDEX IF EXISTS tasks_dead_letter;",
        )
        .map_err(unavailable)?;
        let docs = {
            let mut stmt = tx.prepare("SELECT doc FROM tasks").map_err(unavailable)?;
            let rows = stmt
                .query_map([], |r| r.get::<_, String>(0))
                .map_err(unavailable)?;
            rows.collect::<Result<Vec<_>, _>>().map_err(unavailable)?
        };
        for doc in docs {
            let task: Task = decode(&doc)?;
            let row = TaskRow::of(&task)?;
            tx.execute(
                "UPDATE tasks SET due_kind = ?2, due_ms = ?3 WHERE id = ?1",
                params![row.id, row.due_kind, row.due_ms],
            )
            .map_err(unavailable)?;
        }
    }
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)
        .map_err(unavailable)?;
    tx.commit().map_err(unavailable)
}

fn unavailable(e: rusqlite::Error) -> StoreError {
    StoreError::Unavailable(e.into())
}

/// The columns the queries use, derived from the task.
struct TaskRow {
    id: String,
    status: &'static str,
    version: i64,
    attempt: i64,
    due_kind: Option<&'static str>,
    due_ms: Option<i64>,
    doc: String,
}

impl TaskRow {
    fn of(t: &Task) -> Result<TaskRow, StoreError> {
        let work = t.pending_work();
        Ok(TaskRow {
            id: t.id.to_string(),
            status: t.status.as_str(),
            version: t.version as i64,
            attempt: t.attempt as i64,
            due_kind: work.map(|w| w.kind.as_str()),
            due_ms: work.map(|w| w.due_at.timestamp_millis()),
            doc: encode(t)?,
        })
    }
}

/// A row of the pending-work index back into the domain's terms.
fn pending_work(
    id: String,
    attempt: u32,
    kind: String,
    due_ms: i64,
) -> Result<PendingWork, StoreError> {
    let corrupt = |what: &str| StoreError::Corrupt(format!("task {id}: bad {what}").into());
    Ok(PendingWork {
        attempt: AttemptRef::new(id.parse().map_err(|_| corrupt("id"))?, attempt),
        kind: WorkKind::parse(&kind).ok_or_else(|| corrupt("due_kind"))?,
        due_at: DateTime::from_timestamp_millis(due_ms).ok_or_else(|| corrupt("due_ms"))?,
    })
}

#[async_trait]
impl TaskStore for SqliteStore {
    async fn create(&self, task: &Task) -> Result<CreateOutcome, StoreError> {
        let row = TaskRow::of(task)?;
        let tenant = task.tenant.to_string();
        let key = task.idempotency_key.clone();
        self.with(move |c| {
            let tx = c.transaction().map_err(unavailable)?;
            let inserted = tx
                .execute(
                    "INSERT INTO tasks (id, tenant, status, version, attempt, idempotency_key,
                        due_kind, due_ms, doc)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
                     ON CONFLICT DO NOTHING",
                    params![
                        row.id,
                        tenant,
                        row.status,
                        row.version,
                        row.attempt,
                        key,
                        row.due_kind,
                        row.due_ms,
                        row.doc
                    ],
                )
                .map_err(unavailable)?;
            let outcome = if inserted == 1 {
                CreateOutcome::Created
            } else {
                let doc: String = tx
                    .query_row(
                        "SELECT doc FROM tasks WHERE tenant = ?1 AND idempotency_key = ?2",
                        params![tenant, key],
                        |r| r.get(0),
                    )
                    .map_err(unavailable)?;
                CreateOutcome::Existing(Box::new(decode(&doc)?))
            };
            tx.commit().map_err(unavailable)?;
            Ok(outcome)
        })
        .await
    }

    async fn get(&self, id: &TaskId) -> Result<Option<Task>, StoreError> {
        let id = id.to_string();
        self.with(move |c| {
            let doc: Option<String> = c
                .query_row("SELECT doc FROM tasks WHERE id = ?1", [id], |r| r.get(0))
                .optional()
                .map_err(unavailable)?;
            doc.map(|d| decode(&d)).transpose()
        })
        .await
    }

    async fn update(&self, task: &Task, expected_version: u64) -> Result<(), StoreError> {
        let row = TaskRow::of(task)?;
        self.with(move |c| {
            let changed = c
                .execute(
                    "UPDATE tasks SET status = ?2, version = ?3, attempt = ?4, due_kind = ?5,
                        due_ms = ?6, doc = ?7
                     WHERE id = ?1 AND version = ?8",
                    params![
                        row.id,
                        row.status,
                        row.version,
                        row.attempt,
                        row.due_kind,
                        row.due_ms,
                        row.doc,
                        expected_version as i64
                    ],
                )
                .map_err(unavailable)?;
            if changed == 1 {
                Ok(())
            } else {
                Err(StoreError::Conflict)
            }
        })
        .await
    }

    async fn put_attempt(&self, record: &AttemptRecord) -> Result<(), StoreError> {
        let (id, number, doc) = (record.task_id.to_string(), record.number, encode(record)?);
        self.with(move |c| {
            c.execute(
                "INSERT OR REPLACE INTO attempts (task_id, number, doc) VALUES (?1, ?2, ?3)",
                params![id, number, doc],
            )
            .map_err(unavailable)?;
            Ok(())
        })
        .await
    }

    async fn attempts(&self, id: &TaskId) -> Result<Vec<AttemptRecord>, StoreError> {
        let id = id.to_string();
        self.with(move |c| {
            let mut stmt = c
                .prepare("SELECT doc FROM attempts WHERE task_id = ?1 ORDER BY number")
                .map_err(unavailable)?;
            let rows = stmt
                .query_map([id], |r| r.get::<_, String>(0))
                .map_err(unavailable)?;
            rows.map(|doc| decode(&doc.map_err(unavailable)?)).collect()
        })
        .await
    }

    async fn list(&self, tenant: &TenantId, query: &ListQuery) -> Result<Page, StoreError> {
        let tenant = tenant.to_string();
        let status = query.status.map(Status::as_str);
        // ULIDs sort by time, so "newest first" is id order; "~" sorts after every ULID.
        let cursor = query.cursor.map_or("~".to_string(), |c| c.to_string());
        let limit = query.limit;
        self.with(move |c| {
            let mut stmt = c
                .prepare(
                    "SELECT doc FROM tasks
                     WHERE tenant = ?1 AND (?2 IS NULL OR status = ?2) AND id < ?3
                     ORDER BY id DESC LIMIT ?4",
                )
                .map_err(unavailable)?;
            let rows = stmt
                .query_map(params![tenant, status, cursor, limit + 1], |r| {
                    r.get::<_, String>(0)
                })
                .map_err(unavailable)?;
            let tasks = rows
                .map(|doc| decode(&doc.map_err(unavailable)?))
                .collect::<Result<Vec<Task>, _>>()?;
            Ok(Page::from_overfetch(tasks, limit))
        })
        .await
    }

    async fn due(
        &self,
        cutoff: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<PendingWork>, StoreError> {
        let cutoff = cutoff.timestamp_millis();
        self.with(move |c| {
            let mut stmt = c
                .prepare(
                    "SELECT id, attempt, due_kind, due_ms FROM tasks
                     WHERE due_ms <= ?1 ORDER BY due_ms LIMIT ?2",
                )
                .map_err(unavailable)?;
            let rows = stmt
                .query_map(params![cutoff, limit as i64], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
                })
                .map_err(unavailable)?;
            rows.map(|row| {
                let (id, attempt, kind, due_ms) = row.map_err(unavailable)?;
                pending_work(id, attempt, kind, due_ms)
            })
            .collect()
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::sample_task;

    /// A file written by the previous schema (one column per kind of pending work) is
    /// migrated on open, and its pending work is found.
    #[tokio::test]
    async fn a_version_1_file_is_migrated_and_its_work_found() {
        let dir = std::env::temp_dir().join(format!("boomerang-migrate-{}", ulid::Ulid::new()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("boomerang.db");
        let now = DateTime::from_timestamp_millis(Utc::now().timestamp_millis()).unwrap();
        let task = sample_task(&TenantId::parse("old").unwrap(), None, now);
        {
            let old = Connection::open(&path).unwrap();
            old.execute_batch(
                "CREATE TABLE tasks (id TEXT PRIMARY KEY, tenant TEXT NOT NULL,
                    status TEXT NOT NULL, version INTEGER NOT NULL, attempt INTEGER NOT NULL,
                    idempotency_key TEXT, next_fire_ms INTEGER, lease_ms INTEGER,
                    dead_letter_pending INTEGER NOT NULL DEFAULT 0, doc TEXT NOT NULL);
                 CREATE INDEX tasks_due ON tasks(next_fire_ms) WHERE status = 'scheduled';",
            )
            .unwrap();
            // Written the way version 1 wrote documents (`next_fire_at`).
            let doc = encode(&task)
                .unwrap()
                .replace("next_attempt_at", "next_fire_at");
            old.execute(
                "INSERT INTO tasks (id, tenant, status, version, attempt, next_fire_ms, doc)
                 VALUES (?1, 'old', 'scheduled', 1, 1, ?2, ?3)",
                params![task.id.to_string(), now.timestamp_millis(), doc],
            )
            .unwrap();
        }
        let store = SqliteStore::open(&path).unwrap();
        assert_eq!(store.get(&task.id).await.unwrap(), Some(task.clone()));
        assert_eq!(
            store.due(now, 10).await.unwrap(),
            vec![task.pending_work().unwrap()]
        );
        drop(store);
        let reopened = SqliteStore::open(&path).unwrap();
        assert_eq!(reopened.due(now, 10).await.unwrap().len(), 1);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
