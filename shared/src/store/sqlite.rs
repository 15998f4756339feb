//! The embedded store: one SQLite file in the data directory.
//!
//! Each write is a single statement (or transaction) made durable before it returns, so a
//! `kill -9` at any moment loses nothing that was acknowledged. The task document is kept
//! as JSON beside the columns the queries need.

use std::path::Path;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use rusqlite::{params, Connection, OptionalExtension};

use super::codec::{decode, encode};
use crate::domain::{AttemptRecord, DeadLetter, Status, Task, TaskId, TenantId};
use crate::ports::{
    CreateOutcome, DeadLetterError, DeadLetters, DueReason, DueTask, ListQuery, Page, StoreError,
    TaskStore,
};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS tasks (
    id TEXT PRIMARY KEY,
    tenant TEXT NOT NULL,
    status TEXT NOT NULL,
    version INTEGER NOT NULL,
    attempt INTEGER NOT NULL,
    idempotency_key TEXT,
    next_fire_ms INTEGER,
    lease_ms INTEGER,
    dead_letter_pending INTEGER NOT NULL DEFAULT 0,
    doc TEXT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS tasks_idempotency ON tasks(tenant, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS tasks_due ON tasks(next_fire_ms) WHERE status = 'scheduled';
CREATE INDEX IF NOT EXISTS tasks_lease ON tasks(lease_ms) WHERE status = 'delivering';
CREATE INDEX IF NOT EXISTS tasks_dead_letter ON tasks(id) WHERE dead_letter_pending = 1;
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

#[derive(Clone)]
pub struct SqliteStore {
    conn: Arc<Mutex<Connection>>,
}

impl SqliteStore {
    /// Opens (creating if needed) the database file at `path`.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        Self::init(Connection::open(path).map_err(unavailable)?)
    }

    /// A private in-memory database, for tests.
    pub fn in_memory() -> Result<Self, StoreError> {
        Self::init(Connection::open_in_memory().map_err(unavailable)?)
    }

    fn init(conn: Connection) -> Result<Self, StoreError> {
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(unavailable)?;
        // FULL: a commit is on disk before the API acknowledges it.
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(unavailable)?;
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(unavailable)?;
        conn.execute_batch(SCHEMA).map_err(unavailable)?;
        Ok(Self {
            conn: Arc::new(Mutex::new(conn)),
        })
    }

    /// Runs `f` on the connection off the async threads.
    async fn with<T, F>(&self, f: F) -> Result<T, StoreError>
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
        .map_err(|e| StoreError::Unavailable(e.to_string()))?
    }

    /// Every dead letter, oldest first (operators and tests read them).
    pub async fn dead_letters(&self) -> Result<Vec<DeadLetter>, StoreError> {
        self.with(|c| {
            let mut stmt = c
                .prepare("SELECT doc FROM dead_letters ORDER BY failed_ms, task_id")
                .map_err(unavailable)?;
            let rows = stmt
                .query_map([], |r| r.get::<_, String>(0))
                .map_err(unavailable)?;
            rows.map(|doc| decode(&doc.map_err(unavailable)?)).collect()
        })
        .await
    }
}

fn unavailable(e: rusqlite::Error) -> StoreError {
    StoreError::Unavailable(e.to_string())
}

fn ms(t: Option<DateTime<Utc>>) -> Option<i64> {
    t.map(|t| t.timestamp_millis())
}

/// Columns the queries use, derived from the task so they never disagree with `doc`.
fn task_columns(t: &Task) -> Result<TaskRow, StoreError> {
    Ok(TaskRow {
        id: t.id.to_string(),
        status: t.status.as_str(),
        version: t.version as i64,
        attempt: t.attempt as i64,
        next_fire_ms: if t.status == Status::Scheduled {
            ms(t.next_fire_at)
        } else {
            None
        },
        lease_ms: if t.status == Status::Delivering {
            ms(t.lease_until)
        } else {
            None
        },
        dead_letter_pending: t.dead_letter_pending,
        doc: encode(t)?,
    })
}

struct TaskRow {
    id: String,
    status: &'static str,
    version: i64,
    attempt: i64,
    next_fire_ms: Option<i64>,
    lease_ms: Option<i64>,
    dead_letter_pending: bool,
    doc: String,
}

#[async_trait]
impl TaskStore for SqliteStore {
    async fn create(&self, task: &Task) -> Result<CreateOutcome, StoreError> {
        let row = task_columns(task)?;
        let tenant = task.tenant.to_string();
        let key = task.idempotency_key.clone();
        self.with(move |c| {
            let tx = c.transaction().map_err(unavailable)?;
            let inserted = tx
                .execute(
                    "INSERT INTO tasks (id, tenant, status, version, attempt, idempotency_key,
                        next_fire_ms, lease_ms, dead_letter_pending, doc)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
                     ON CONFLICT DO NOTHING",
                    params![
                        row.id,
                        tenant,
                        row.status,
                        row.version,
                        row.attempt,
                        key,
                        row.next_fire_ms,
                        row.lease_ms,
                        row.dead_letter_pending,
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
        let row = task_columns(task)?;
        self.with(move |c| {
            let changed = c
                .execute(
                    "UPDATE tasks SET status = ?2, version = ?3, attempt = ?4, next_fire_ms = ?5,
                        lease_ms = ?6, dead_letter_pending = ?7, doc = ?8
                     WHERE id = ?1 AND version = ?9",
                    params![
                        row.id,
                        row.status,
                        row.version,
                        row.attempt,
                        row.next_fire_ms,
                        row.lease_ms,
                        row.dead_letter_pending,
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
        fire_before: DateTime<Utc>,
        now: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<DueTask>, StoreError> {
        let (before, now) = (fire_before.timestamp_millis(), now.timestamp_millis());
        self.with(move |c| {
            let mut stmt = c
                .prepare(
                    "SELECT id, attempt, next_fire_ms, 0 FROM tasks
                       WHERE status = 'scheduled' AND next_fire_ms <= ?1
                     UNION ALL
                     SELECT id, attempt, lease_ms, 1 FROM tasks
                       WHERE status = 'delivering' AND lease_ms <= ?2
                     UNION ALL
                     SELECT id, attempt, ?2, 2 FROM tasks WHERE dead_letter_pending = 1
                     LIMIT ?3",
                )
                .map_err(unavailable)?;
            let rows = stmt
                .query_map(params![before, now, limit as i64], |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, u32>(1)?,
                        r.get::<_, i64>(2)?,
                        r.get::<_, i64>(3)?,
                    ))
                })
                .map_err(unavailable)?;
            rows.map(|row| {
                let (id, attempt, at_ms, kind) = row.map_err(unavailable)?;
                Ok(DueTask {
                    id: id.parse().map_err(|_| StoreError::Corrupt(id.clone()))?,
                    attempt,
                    fire_at: DateTime::from_timestamp_millis(at_ms).unwrap_or_default(),
                    reason: match kind {
                        0 => DueReason::Scheduled,
                        1 => DueReason::LeaseExpired,
                        _ => DueReason::DeadLetterPending,
                    },
                })
            })
            .collect()
        })
        .await
    }
}

#[async_trait]
impl DeadLetters for SqliteStore {
    async fn send(&self, letter: &DeadLetter) -> Result<(), DeadLetterError> {
        let doc = serde_json::to_string(letter).map_err(|e| DeadLetterError(e.to_string()))?;
        let (id, tenant, at) = (
            letter.task_id.to_string(),
            letter.tenant.to_string(),
            letter.failed_at.timestamp_millis(),
        );
        self.with(move |c| {
            // Keyed by task id: a retried send (or a later failure after a redrive) replaces
            // the record instead of duplicating it.
            c.execute(
                "INSERT OR REPLACE INTO dead_letters (task_id, tenant, failed_ms, doc)
                 VALUES (?1, ?2, ?3, ?4)",
                params![id, tenant, at, doc],
            )
            .map_err(unavailable)?;
            Ok(())
        })
        .await
        .map_err(|e| DeadLetterError(e.to_string()))
    }
}
