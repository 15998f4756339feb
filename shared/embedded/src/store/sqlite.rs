//! The store's file: its schema (and the migrations of older files), and the
//! [`SqliteStore`] handle with its writer and read connections.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rusqlite::{params, Connection};

use boomerang_core::domain::Task;
use boomerang_core::metrics::Metrics;
use boomerang_core::ports::StoreError;

use super::codec::decode;
use super::rows::TaskRow;
use super::writer::{lock, unavailable, Claims, Writer, WriterHandle};

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
CREATE TABLE IF NOT EXISTS templates (
    tenant TEXT NOT NULL,
    name TEXT NOT NULL,
    doc TEXT NOT NULL,
    PRIMARY KEY (tenant, name)
);
CREATE TABLE IF NOT EXISTS breaker_settings (
    tenant TEXT NOT NULL,
    name TEXT NOT NULL,
    doc TEXT NOT NULL,
    PRIMARY KEY (tenant, name)
);
CREATE TABLE IF NOT EXISTS breakers (
    tenant TEXT NOT NULL,
    destination TEXT NOT NULL,
    doc TEXT NOT NULL,
    version INTEGER NOT NULL,
    open INTEGER NOT NULL,
    PRIMARY KEY (tenant, destination)
);
CREATE TABLE IF NOT EXISTS bulk_jobs (
    tenant TEXT NOT NULL,
    id TEXT NOT NULL,
    version INTEGER NOT NULL,
    running INTEGER NOT NULL,
    finished_ms INTEGER,
    doc TEXT NOT NULL,
    PRIMARY KEY (tenant, id)
);
CREATE INDEX IF NOT EXISTS bulk_jobs_running ON bulk_jobs (running) WHERE running = 1;
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
CREATE TABLE IF NOT EXISTS order_keys (
    tenant TEXT NOT NULL,
    key TEXT NOT NULL,
    last_seq INTEGER NOT NULL,
    PRIMARY KEY (tenant, key)
);
CREATE TABLE IF NOT EXISTS order_places (
    tenant TEXT NOT NULL,
    key TEXT NOT NULL,
    seq INTEGER NOT NULL,
    task_id TEXT NOT NULL,
    at_ms INTEGER NOT NULL,
    PRIMARY KEY (tenant, key, seq)
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
    pub(super) writer: WriterHandle,
    pub(super) claims: Claims,
    pub(super) path: PathBuf,
    pub(super) readers: Arc<Mutex<Vec<Connection>>>,
    /// One permit per read connection: a read waits for one rather than open a connection
    /// of its own (opening one parses the schema; under load that was most of a read).
    pub(super) read_slots: Arc<tokio::sync::Semaphore>,
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
    ///
    /// Only a claim made on the version read is laid over it: one made on a later version
    /// (the attempt read here ended, and the next one was claimed since) would show a
    /// newer attempt in flight than the attempts read with the task.
    pub(super) fn overlay(&self, task: Task) -> Task {
        match lock(&self.claims).get(&task.id) {
            Some(claim) if claim.stored_version == task.version => claim.task.clone(),
            _ => task,
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
