//! The embedded store: one SQLite file in the data directory.
//!
//! Writes go through one writer thread that commits whatever is waiting in one
//! transaction ([`writer`]); every durable write is answered only after its commit, so a
//! `kill -9` at any moment loses nothing that was acknowledged. Reads use their own
//! connections (WAL lets them run beside the writer). Claims of an attempt are held in
//! memory: one process owns the data directory, and a crash re-runs the attempt.
//!
//! The task document is kept as JSON beside the columns the queries need; those columns
//! are derived from the task (its [`Task::pending_work`] for the sweep), so they never
//! disagree with the document.

mod codec;
mod due;
mod schedules;
pub(crate) mod writer;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use rusqlite::{params, Connection, OptionalExtension};

use boomerang_core::domain::{
    AttemptRecord, AttemptRef, FlowKey, PendingWork, Policy, PolicyName, Status, Task, TaskId,
    TenantId, WorkKind,
};
use boomerang_core::metrics::Metrics;
use boomerang_core::ports::{
    CreateOutcome, DueWork, FlowPauses, ListQuery, Page, PolicyStore, Retention, StatusCounts,
    StoreError, SweepIndex, SweepMark, TaskStore,
};
use codec::{decode, encode};
use writer::{lock, unavailable, Claim, Claims, Writer, WriterHandle};

pub use due::{DueKey, DuePage};

/// Bumped when the schema changes; [`migrate`] brings older files up to date.
const SCHEMA_VERSION: i64 = 4;

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
    business_key TEXT,
    finished_ms INTEGER,
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
CREATE TABLE IF NOT EXISTS policies (
    tenant TEXT NOT NULL,
    name TEXT NOT NULL,
    doc TEXT NOT NULL,
    PRIMARY KEY (tenant, name)
);
CREATE TABLE IF NOT EXISTS paused_flows (
    tenant TEXT NOT NULL,
    key TEXT NOT NULL,
    PRIMARY KEY (tenant, key)
);
CREATE TABLE IF NOT EXISTS schedules (
    tenant TEXT NOT NULL,
    id TEXT NOT NULL,
    version INTEGER NOT NULL,
    doc TEXT NOT NULL,
    PRIMARY KEY (tenant, id)
);
CREATE TABLE IF NOT EXISTS keyed_tasks (
    tenant TEXT NOT NULL,
    key TEXT NOT NULL,
    task_id TEXT NOT NULL,
    PRIMARY KEY (tenant, key)
);
CREATE TABLE IF NOT EXISTS ready_probe (
    id INTEGER PRIMARY KEY,
    at_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS dead_letters (
    task_id TEXT PRIMARY KEY,
    tenant TEXT NOT NULL,
    failed_ms INTEGER NOT NULL,
    doc TEXT NOT NULL
);
";

/// Created after any migration, since an older file lacks the columns they cover.
const LATER_INDEXES: &str =
    "CREATE INDEX IF NOT EXISTS tasks_pending ON tasks(due_ms) WHERE due_ms IS NOT NULL;
     CREATE INDEX IF NOT EXISTS tasks_by_key ON tasks(tenant, business_key, id)
         WHERE business_key IS NOT NULL;
     CREATE INDEX IF NOT EXISTS tasks_finished ON tasks(finished_ms)
         WHERE finished_ms IS NOT NULL;";

#[derive(Clone)]
pub struct SqliteStore {
    writer: WriterHandle,
    claims: Claims,
    path: PathBuf,
    readers: Arc<Mutex<Vec<Connection>>>,
    /// One permit per read connection: a read waits for one rather than open a connection
    /// of its own (opening one parses the schema; under load that was most of a read).
    read_slots: Arc<tokio::sync::Semaphore>,
}

/// Read connections: at most this many reads run at once, each on a connection kept open.
const READERS: usize = 8;

impl SqliteStore {
    /// Opens (creating if needed) the database file at `path`, and starts its writer.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        Self::open_with_metrics(path, Arc::new(boomerang_core::metrics::NoMetrics))
    }

    /// [`Self::open`], telling `metrics` about each commit.
    pub fn open_with_metrics(path: &Path, metrics: Arc<dyn Metrics>) -> Result<Self, StoreError> {
        let mut conn = Connection::open(path).map_err(unavailable)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(unavailable)?;
        // FULL: a commit is on disk before the API acknowledges it.
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(unavailable)?;
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(unavailable)?;
        // 16 MiB of page cache for the writer (the default is 2 MiB): the indexes' hot
        // pages stay in memory as the file grows to millions of tasks.
        conn.pragma_update(None, "cache_size", -16 * 1024)
            .map_err(unavailable)?;

        conn.execute_batch(SCHEMA).map_err(unavailable)?;
        migrate(&mut conn)?;
        conn.execute_batch(LATER_INDEXES).map_err(unavailable)?;
        let claims = Claims::default();
        let writer = WriterHandle::spawn(Writer {
            conn,
            claims: claims.clone(),
            metrics,
        })?;
        Ok(Self {
            writer,
            claims,
            path: path.to_path_buf(),
            readers: Arc::default(),
            read_slots: Arc::new(tokio::sync::Semaphore::new(READERS)),
        })
    }

    /// Transactions the writer has committed (each may hold many writes).
    pub fn commits(&self) -> u64 {
        self.writer.commits()
    }

    /// A durable write of one small row, to tell that the store takes writes (`/readyz`).
    pub async fn probe_write(&self) -> Result<(), StoreError> {
        let now = chrono::Utc::now().timestamp_millis();
        self.write(move |w| {
            w.conn
                .execute(
                    "INSERT OR REPLACE INTO ready_probe (id, at_ms) VALUES (1, ?1)",
                    [now],
                )
                .map(|_| ())
                .map_err(unavailable)
        })
        .await
    }

    /// A durable write, answered after the commit that holds it.
    pub(crate) async fn write<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Writer) -> Result<T, StoreError> + Send + 'static,
    {
        self.writer.write(true, f).await
    }

    /// Runs `f` on a read connection, off the async threads: for reads of many rows.
    pub(crate) async fn read<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let slot = (self.read_slots.clone().acquire_owned().await)
            .map_err(|e| StoreError::Unavailable(e.into()))?;
        let this = self.clone();
        tokio::task::spawn_blocking(move || {
            let _slot = slot;
            this.with_reader(f)
        })
        .await
        .map_err(|e| StoreError::Unavailable(e.into()))?
    }

    /// Runs `f` on a read connection right here: for a read of one row by its key, which
    /// takes microseconds, less than handing it to another thread and back.
    pub(crate) async fn read_one<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        F: FnOnce(&Connection) -> Result<T, StoreError>,
    {
        let _slot =
            (self.read_slots.acquire().await).map_err(|e| StoreError::Unavailable(e.into()))?;
        self.with_reader(f)
    }

    /// Runs `f` on an idle read connection (opened if there is none yet).
    fn with_reader<T>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let idle = self.readers.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let conn = match idle {
            Some(conn) => conn,
            None => {
                let conn = Connection::open(&self.path).map_err(unavailable)?;
                conn.busy_timeout(std::time::Duration::from_secs(5))
                    .map_err(unavailable)?;
                conn
            }
        };
        let result = f(&conn);
        self.readers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(conn);
        result
    }

    /// The task as the engine must see it: claimed (in memory) or as stored.
    fn overlay(&self, task: Task) -> Task {
        match lock(&self.claims).get(&task.id) {
            Some(claim) => claim.task.clone(),
            None => task,
        }
    }
}

/// Brings a file written by an older version to [`SCHEMA_VERSION`]. Version 1 kept one
/// column per kind of pending work; version 2 keeps `due_kind`/`due_ms`, recomputed here
/// from each task's document; version 3 adds `business_key` (tasks written before it have
/// none); version 4 adds `finished_ms`, when a finished task ended (for retention),
/// recomputed here from each document.
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
        for task in all_tasks(&tx)? {
            let row = TaskRow::of(&task)?;
            tx.execute(
                "UPDATE tasks SET due_kind = ?2, due_ms = ?3 WHERE id = ?1",
                params![row.id, row.due_kind, row.due_ms],
            )
            .map_err(unavailable)?;
        }
    }
    let has_key_column = tx.prepare("SELECT business_key FROM tasks LIMIT 0").is_ok();
    if !has_key_column {
        tx.execute_batch("ALTER TABLE tasks ADD COLUMN business_key TEXT;")
            .map_err(unavailable)?;
    }
    let has_finished_column = tx.prepare("SELECT finished_ms FROM tasks LIMIT 0").is_ok();
    if !has_finished_column {
        tx.execute_batch("ALTER TABLE tasks ADD COLUMN finished_ms INTEGER;")
            .map_err(unavailable)?;
        for task in all_tasks(&tx)? {
            let row = TaskRow::of(&task)?;
            tx.execute(
                "UPDATE tasks SET finished_ms = ?2 WHERE id = ?1",
                params![row.id, row.finished_ms],
            )
            .map_err(unavailable)?;
        }
    }
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)
        .map_err(unavailable)?;
    tx.commit().map_err(unavailable)
}

/// Every task in the file, for a migration that recomputes a column.
fn all_tasks(conn: &Connection) -> Result<Vec<Task>, StoreError> {
    let mut stmt = conn.prepare("SELECT doc FROM tasks").map_err(unavailable)?;
    let docs = stmt
        .query_map([], |r| r.get::<_, String>(0))
        .map_err(unavailable)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(unavailable)?;
    docs.iter().map(|doc| decode(doc)).collect()
}

/// The columns the queries use, derived from the task.
pub(crate) struct TaskRow {
    id: String,
    status: &'static str,
    version: i64,
    /// The attempt number the pending work's timer carries (a held task's checks carry
    /// their own), else the task's attempt.
    attempt: i64,
    due_kind: Option<&'static str>,
    due_ms: Option<i64>,
    business_key: Option<String>,
    /// When a finished task ended; absent while it has anything left to do (a dead letter
    /// to send included), so retention never removes it before then.
    finished_ms: Option<i64>,
    doc: String,
}

impl TaskRow {
    pub(crate) fn of(t: &Task) -> Result<TaskRow, StoreError> {
        let work = t.pending_work();
        Ok(TaskRow {
            id: t.id.to_string(),
            status: t.status.as_str(),
            version: t.version as i64,
            attempt: work.as_ref().map_or(t.attempt, |w| w.attempt.attempt) as i64,
            due_kind: work.as_ref().map(|w| w.kind.as_str()),
            due_ms: work.as_ref().map(|w| w.due_at.timestamp_millis()),
            business_key: t.spec.key.as_ref().map(|k| k.to_string()),
            finished_ms: t.is_settled().then(|| t.updated_at.timestamp_millis()),
            doc: encode(t)?,
        })
    }
}

/// A row of the pending-work index back into the domain's terms.
fn pending_work(
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
            attempt,
        ),
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
impl FlowPauses for SqliteStore {
    async fn set_flow_paused(
        &self,
        tenant: &TenantId,
        key: &FlowKey,
        paused: bool,
    ) -> Result<(), StoreError> {
        let (tenant, key) = (tenant.to_string(), key.to_string());
        let sql = match paused {
            true => "INSERT OR IGNORE INTO paused_flows (tenant, key) VALUES (?1, ?2)",
            false => "DELETE FROM paused_flows WHERE tenant = ?1 AND key = ?2",
        };
        self.write(move |w| {
            w.conn
                .execute(sql, [tenant, key])
                .map(|_| ())
                .map_err(unavailable)
        })
        .await
    }

    async fn flow_paused(&self, tenant: &TenantId, key: &FlowKey) -> Result<bool, StoreError> {
        let (tenant, key) = (tenant.to_string(), key.to_string());
        self.read(move |c| {
            c.prepare_cached("SELECT 1 FROM paused_flows WHERE tenant = ?1 AND key = ?2")
                .and_then(|mut stmt| stmt.exists([tenant, key]))
                .map_err(unavailable)
        })
        .await
    }

    async fn paused_flows(&self, tenant: &TenantId) -> Result<Vec<FlowKey>, StoreError> {
        let tenant = tenant.to_string();
        self.read(move |c| {
            let mut stmt = c
                .prepare_cached("SELECT key FROM paused_flows WHERE tenant = ?1 ORDER BY key")
                .map_err(unavailable)?;
            let rows = stmt
                .query_map([tenant], |r| r.get::<_, String>(0))
                .map_err(unavailable)?;
            rows.map(|row| {
                let key = row.map_err(unavailable)?;
                FlowKey::parse(key).map_err(|e| StoreError::Corrupt(e.into()))
            })
            .collect()
        })
        .await
    }
}

#[async_trait]
impl PolicyStore for SqliteStore {
    async fn put_policy(
        &self,
        tenant: &TenantId,
        name: &PolicyName,
        policy: &Policy,
    ) -> Result<(), StoreError> {
        let (tenant, name, doc) = (tenant.to_string(), name.to_string(), encode(policy)?);
        self.write(move |w| {
            w.conn
                .execute(
                    "INSERT OR REPLACE INTO policies (tenant, name, doc) VALUES (?1, ?2, ?3)",
                    params![tenant, name, doc],
                )
                .map(|_| ())
                .map_err(unavailable)
        })
        .await
    }

    async fn policy(
        &self,
        tenant: &TenantId,
        name: &PolicyName,
    ) -> Result<Option<Policy>, StoreError> {
        let (tenant, name) = (tenant.to_string(), name.to_string());
        self.read(move |c| {
            let doc: Option<String> = c
                .query_row(
                    "SELECT doc FROM policies WHERE tenant = ?1 AND name = ?2",
                    [tenant, name],
                    |r| r.get(0),
                )
                .optional()
                .map_err(unavailable)?;
            doc.map(|d| decode(&d)).transpose()
        })
        .await
    }

    async fn delete_policy(
        &self,
        tenant: &TenantId,
        name: &PolicyName,
    ) -> Result<bool, StoreError> {
        let (tenant, name) = (tenant.to_string(), name.to_string());
        self.write(move |w| {
            w.conn
                .execute(
                    "DELETE FROM policies WHERE tenant = ?1 AND name = ?2",
                    [tenant, name],
                )
                .map(|n| n > 0)
                .map_err(unavailable)
        })
        .await
    }

    async fn policies(&self, tenant: &TenantId) -> Result<Vec<(PolicyName, Policy)>, StoreError> {
        let tenant = tenant.to_string();
        self.read(move |c| {
            let mut stmt = c
                .prepare_cached("SELECT name, doc FROM policies WHERE tenant = ?1 ORDER BY name")
                .map_err(unavailable)?;
            let rows = stmt
                .query_map([tenant], |r| {
                    Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
                })
                .map_err(unavailable)?;
            rows.map(|row| {
                let (name, doc) = row.map_err(unavailable)?;
                let name = PolicyName::parse(name).map_err(|e| StoreError::Corrupt(e.into()))?;
                Ok((name, decode(&doc)?))
            })
            .collect()
        })
        .await
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

/// Replaces the task's row if the version the engine read is still current (the claim's,
/// while claimed); the claim, if any, ends with it.
fn write_task(w: &Writer, id: &TaskId, row: &TaskRow, expected: u64) -> Result<(), StoreError> {
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

fn put_attempt(conn: &Connection, id: &str, number: u32, doc: &str) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT OR REPLACE INTO attempts (task_id, number, doc) VALUES (?1, ?2, ?3)",
    )
    .and_then(|mut stmt| stmt.execute(params![id, number, doc]))
    .map_err(unavailable)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use boomerang_core::testing::sample_task;

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
        assert_eq!(
            store.get(&task.tenant, &task.id).await.unwrap(),
            Some(task.clone())
        );
        assert_eq!(
            store.due(now, 10).await.unwrap().work,
            vec![task.pending_work().unwrap()]
        );
        drop(store);
        let reopened = SqliteStore::open(&path).unwrap();
        assert_eq!(reopened.due(now, 10).await.unwrap().work.len(), 1);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Retention removes finished tasks and their attempts once they ended before the
    /// cutoff, and keeps everything else: a pending task, a recent one, and a failed one
    /// whose dead letter is not sent.
    #[tokio::test]
    async fn purge_removes_only_tasks_finished_before_the_cutoff() {
        let dir = std::env::temp_dir().join(format!("boomerang-purge-{}", ulid::Ulid::new()));
        std::fs::create_dir_all(&dir).unwrap();
        let store = SqliteStore::open(&dir.join("boomerang.db")).unwrap();
        let tenant = TenantId::parse("purge").unwrap();
        let t0 = DateTime::from_timestamp_millis(Utc::now().timestamp_millis()).unwrap();
        let minute = chrono::Duration::minutes(1);
        let finished_at = |at| {
            let task = sample_task(&tenant, None, t0);
            let done = task.cancel(at).unwrap();
            (task, done)
        };
        let (old, old_done) = finished_at(t0);
        let (recent, recent_done) = finished_at(t0 + minute * 10);
        let pending = sample_task(&tenant, None, t0 + minute * 60);
        let mut letter_due = sample_task(&tenant, None, t0).cancel(t0).unwrap();
        letter_due.dead_letter_pending = true;
        for (created, stored) in [(&old, &old_done), (&recent, &recent_done)] {
            store.create(created).await.unwrap();
            store.update(stored, created.version).await.unwrap();
        }
        store.create(&pending).await.unwrap();
        let mut unsent = sample_task(&tenant, None, t0);
        store.create(&unsent).await.unwrap();
        letter_due.id = unsent.id;
        letter_due.version = unsent.version + 1;
        store.update(&letter_due, unsent.version).await.unwrap();
        unsent = letter_due;
        let record = old_done.attempt_record(&old_done, t0, t0, Some(500), None);
        store.put_attempt(&tenant, &record).await.unwrap();

        let removed = store.purge(t0 + minute * 5, 10).await.unwrap();
        assert_eq!(removed, 1);
        assert_eq!(store.get(&tenant, &old.id).await.unwrap(), None);
        assert!(store.attempts(&tenant, &old.id).await.unwrap().is_empty());
        for kept in [&recent.id, &pending.id, &unsent.id] {
            assert!(store.get(&tenant, kept).await.unwrap().is_some());
        }
        assert_eq!(store.purge(t0 + minute * 5, 10).await.unwrap(), 0);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
