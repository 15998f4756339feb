//! Every store port on the database's tables.
//!
//! A task is kept as a JSON document beside the columns the queries need, derived from
//! the task (its [`Task::pending_work`] for the loaders), so they never disagree with the
//! document. Registrations and the results of attempts go through the writer
//! ([`writer`]), which commits whatever is waiting in one transaction of multi-row
//! statements; everything else is one statement (or one short transaction) of its own.
//!
//! Claims of an attempt are held in this server's memory ([`claims`]), once a read of the
//! row ([`claim_checks`], outside the writer's transactions) has found it unchanged and
//! still this server's: only the server that owns a row's pending work loads it (see the
//! crate's docs), so no other server calls it meanwhile, and a crash forgets the claim
//! (the attempt runs again after the take-over, at-least-once).
//!
//! [`Task::pending_work`]: boomerang_core::domain::Task::pending_work

mod breakers;
mod bulk_jobs;
mod claim_checks;
pub(crate) mod claims;
pub(crate) mod codec;
mod dead_letters;
mod definition_cache;
mod definitions;
mod destination_slots;
mod flows;
mod keyed;
mod order_keys;
pub(crate) mod owned;
mod owner_notices;
mod pauses;
pub(crate) mod rows;
mod schedules;
pub(crate) mod sql;
pub(crate) mod tasks;
pub(crate) mod write_health;
pub(crate) mod writer;

use std::sync::Arc;
use std::time::Duration;

use boomerang_core::metrics::Metrics;
use boomerang_core::ports::StoreError;
use deadpool_postgres::Pool;

use crate::connect::PgSettings;
use claim_checks::ClaimChecks;
use claims::Claims;
use definition_cache::DefinitionCache;
use owned::Owned;
pub(crate) use owner_notices::CHANNEL as OWNER_NOTICES;
use write_health::WriteHealth;
use writer::WriterHandle;

/// Locks one of the store's in-memory maps. Every change under these locks leaves them
/// whole at each step (an insert, a remove, a clear): a panic elsewhere cannot leave
/// them half-made, so a poisoned lock is still good.
pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A statement's parameters.
pub(crate) type Params<'a> = &'a [&'a (dyn tokio_postgres::types::ToSql + Sync)];

/// The store: the pool, the writer, and this server's claims and owned work.
pub struct PgStore {
    pub(crate) pool: Pool,
    pub(crate) writer: WriterHandle,
    pub(crate) claim_checks: ClaimChecks,
    pub(crate) claims: Claims,
    pub(crate) owned: Owned,
    pub(crate) definition_cache: DefinitionCache,
    /// Whether the writer's transactions are going through (readiness looks).
    pub(crate) write_health: WriteHealth,
    /// This server's id, as written in the rows it owns.
    pub(crate) server: String,
    /// A task written with its next work due within this is left with this server, whose
    /// timer holds it at once; later work is left for any server's loader.
    pub(crate) horizon: Duration,
}

impl PgStore {
    /// The store on `pool`, for the server `server` (its id in the `owner` column).
    pub fn new(pool: Pool, server: String, horizon: Duration, metrics: Arc<dyn Metrics>) -> Self {
        let claims = Claims::default();
        let owned = Owned::default();
        let write_health = WriteHealth::default();
        let writer = WriterHandle::spawn(
            pool.clone(),
            claims.clone(),
            owned.clone(),
            write_health.clone(),
            server.clone(),
            horizon,
            metrics,
        );
        let claim_checks =
            ClaimChecks::spawn(pool.clone(), claims.clone(), owned.clone(), server.clone());
        Self {
            pool,
            writer,
            claim_checks,
            claims,
            owned,
            definition_cache: DefinitionCache::default(),
            write_health,
            server,
            horizon,
        }
    }

    /// Listens, on a connection of its own made with `settings`, for the database's
    /// notices of changes other servers make to the rows this server owns: until it
    /// does, every claim reads its row.
    /// `lease` is the servers' (`--server-lease`): a server that cannot show its own is
    /// alive within half of it vouches for nothing.
    pub fn listen(&self, settings: PgSettings, lease: Duration) {
        owner_notices::spawn(
            settings,
            self.pool.clone(),
            self.owned.clone(),
            self.server.clone(),
            lease,
        );
    }

    /// Whether the notices of changes to this server's rows are heard (see
    /// [`Self::listen`]).
    pub fn hears_notices(&self) -> bool {
        self.owned.hears_notices()
    }

    /// This server's id.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// Whether this server owns the task's pending work (its timer holds it).
    pub fn owns(&self, id: &boomerang_core::domain::TaskId) -> bool {
        self.owned.contains(id)
    }

    /// The pending work of a task claimed here (its lease's end); `None` if not claimed.
    pub fn claimed_work(
        &self,
        id: &boomerang_core::domain::TaskId,
    ) -> Option<Option<boomerang_core::domain::PendingWork>> {
        self.claims.get(id).map(|c| c.task.pending_work())
    }

    /// Takes the task's pending work over for this server, to wake it here: an attempt
    /// put off on another server (waiting for its turn in an ordered line, or for its
    /// flow) is armed for now by the delivery that frees its way, wherever that runs.
    /// From then on only this server's claim of it succeeds. Whether there was pending
    /// work to take.
    pub(crate) async fn adopt(
        &self,
        id: &boomerang_core::domain::TaskId,
    ) -> Result<bool, StoreError> {
        let since = self.owned.since();
        let client = self.client().await?;
        let stmt = client
            .prepare_cached(
                "UPDATE tasks SET owner = $2 WHERE id = $1 AND due_ms IS NOT NULL RETURNING doc",
            )
            .await
            .map_err(sql::unavailable)?;
        let row = client
            .query_opt(&stmt, &[&id.to_string(), &self.server])
            .await
            .map_err(sql::unavailable)?;
        match row {
            Some(row) => {
                self.owned.insert(codec::decode(row.get(0))?, since);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Runs one statement (prepared once per connection) on a pooled connection; how many
    /// rows it changed.
    pub(crate) async fn execute(&self, sql: &str, params: Params<'_>) -> Result<u64, StoreError> {
        let (client, stmt) = self.prepared(sql).await?;
        client
            .execute(&stmt, params)
            .await
            .map_err(sql::unavailable)
    }

    /// The rows of one statement, as [`Self::execute`] runs it.
    pub(crate) async fn query(
        &self,
        sql: &str,
        params: Params<'_>,
    ) -> Result<Vec<tokio_postgres::Row>, StoreError> {
        let (client, stmt) = self.prepared(sql).await?;
        client.query(&stmt, params).await.map_err(sql::unavailable)
    }

    /// The row of one statement, if any, as [`Self::execute`] runs it.
    pub(crate) async fn query_opt(
        &self,
        sql: &str,
        params: Params<'_>,
    ) -> Result<Option<tokio_postgres::Row>, StoreError> {
        let (client, stmt) = self.prepared(sql).await?;
        client
            .query_opt(&stmt, params)
            .await
            .map_err(sql::unavailable)
    }

    /// A pooled connection, and `sql` prepared on it (once per connection).
    async fn prepared(
        &self,
        sql: &str,
    ) -> Result<(deadpool_postgres::Object, tokio_postgres::Statement), StoreError> {
        let client = self.client().await?;
        let stmt = client.prepare_cached(sql).await.map_err(sql::unavailable)?;
        Ok((client, stmt))
    }

    /// A connection from the pool (`Unavailable` when none comes within the wait).
    pub(crate) async fn client(&self) -> Result<deadpool_postgres::Object, StoreError> {
        self.pool.get().await.map_err(sql::pool_unavailable)
    }

    /// Writes the readiness probe's row: the database takes a write, and the tasks
    /// table can be read (it waits, and then times out, while another session holds the
    /// table locked, as a `VACUUM FULL` or an `ALTER TABLE` does).
    pub async fn probe_write(&self) -> Result<(), StoreError> {
        let client = self.client().await?;
        client
            .execute(
                "WITH tasks_readable AS (SELECT 1 FROM tasks LIMIT 1)
                 INSERT INTO ready_probe (id, at) SELECT 1, now()
                 WHERE (SELECT count(*) FROM tasks_readable) >= 0
                 ON CONFLICT (id) DO UPDATE SET at = excluded.at",
                &[],
            )
            .await
            .map_err(sql::unavailable)?;
        Ok(())
    }
}
