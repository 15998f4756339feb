//! The servers sharing the database: each keeps its row in `servers` alive with a
//! heartbeat; a server whose row lapsed (it died, or lost the database for longer than a
//! lease) is removed by whichever other server sees it first, and the rows it owned are
//! freed in the same transaction, for the loaders to take up.
//!
//! Liveness is judged by the database's clock (`now()`), so servers whose clocks differ
//! still agree on who is alive.

use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::Pool;

use boomerang_core::ports::StoreError;

use crate::store::sql::{pool_unavailable, unavailable};

pub struct Servers {
    pool: Pool,
    id: String,
    lease: Duration,
}

/// How many heartbeats a lease holds: a server is taken over after missing this many.
const BEATS_PER_LEASE: u32 = 4;
/// Every this many heartbeats, rows owned by no live server are looked for.
const ORPHAN_CHECK_EVERY: u32 = 12;

impl Servers {
    pub fn new(pool: Pool, id: String, lease: Duration) -> Self {
        Self { pool, id, lease }
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    fn lease_ms(&self) -> i64 {
        self.lease.as_millis() as i64
    }

    /// Writes this server's row, alive for a lease from now (again, if it was removed).
    pub async fn beat(&self) -> Result<(), StoreError> {
        let client = self.pool.get().await.map_err(pool_unavailable)?;
        let stmt = client
            .prepare_cached(
                "INSERT INTO servers (id, alive_until)
                 VALUES ($1, now() + make_interval(secs => $2::bigint / 1000.0))
                 ON CONFLICT (id) DO UPDATE SET alive_until = excluded.alive_until
                 RETURNING (xmax = 0) AS inserted",
            )
            .await
            .map_err(unavailable)?;
        let row = client
            .query_one(&stmt, &[&self.id, &self.lease_ms()])
            .await
            .map_err(unavailable)?;
        if row.get::<_, bool>(0) {
            tracing::info!(server = %self.id, "joined the servers sharing the database");
        }
        Ok(())
    }

    /// Removes the servers whose lease lapsed and frees the rows they owned; how many
    /// rows were freed.
    pub async fn take_over(&self) -> Result<u64, StoreError> {
        let mut client = self.pool.get().await.map_err(pool_unavailable)?;
        let tx = client.transaction().await.map_err(unavailable)?;
        let dead: Vec<String> = tx
            .query(
                "DELETE FROM servers WHERE alive_until < now() AND id <> $1 RETURNING id",
                &[&self.id],
            )
            .await
            .map_err(unavailable)?
            .iter()
            .map(|r| r.get(0))
            .collect();
        if dead.is_empty() {
            return Ok(0);
        }
        // One notice per lapsed server, not one per row: should it still be running, it
        // gives up every row it held (see `store::owner_notices`).
        tx.batch_execute("SET LOCAL boomerang.quiet = on")
            .await
            .map_err(unavailable)?;
        let freed = tx
            .execute(
                "UPDATE tasks SET owner = NULL WHERE owner = ANY($1)",
                &[&dead],
            )
            .await
            .map_err(unavailable)?;
        tx.execute("DELETE FROM backlog_holder WHERE owner = ANY($1)", &[&dead])
            .await
            .map_err(unavailable)?;
        tx.execute(
            "SELECT pg_notify($2, d || ' * ') FROM unnest($1::text[]) d",
            &[&dead, &crate::store::OWNER_NOTICES],
        )
        .await
        .map_err(unavailable)?;
        tx.commit().await.map_err(unavailable)?;
        tracing::warn!(
            ?dead,
            freed,
            "took over the work of servers whose lease lapsed"
        );
        Ok(freed)
    }

    /// Frees rows owned by no live server (written by a server after it was taken over).
    pub async fn free_orphans(&self) -> Result<u64, StoreError> {
        let client = self.pool.get().await.map_err(pool_unavailable)?;
        client
            .execute(
                "UPDATE tasks t SET owner = NULL
                 WHERE owner IS NOT NULL
                   AND NOT EXISTS (SELECT 1 FROM servers s WHERE s.id = t.owner)",
                &[],
            )
            .await
            .map_err(unavailable)
    }

    /// Leaves at shutdown: this server's rows are freed at once (not after a lease).
    pub async fn leave(&self) -> Result<u64, StoreError> {
        let mut client = self.pool.get().await.map_err(pool_unavailable)?;
        let tx = client.transaction().await.map_err(unavailable)?;
        tx.execute("DELETE FROM servers WHERE id = $1", &[&self.id])
            .await
            .map_err(unavailable)?;
        // A backlog it held is leased row by row by the others (its rows were never
        // written).
        tx.execute("DELETE FROM backlog_holder WHERE owner = $1", &[&self.id])
            .await
            .map_err(unavailable)?;
        let freed = tx
            .execute(
                "UPDATE tasks SET owner = NULL WHERE owner = $1",
                &[&self.id],
            )
            .await
            .map_err(unavailable)?;
        tx.commit().await.map_err(unavailable)?;
        Ok(freed)
    }

    /// Beats, and takes over lapsed servers, for ever.
    pub async fn run(self: Arc<Self>) {
        let mut ticks = tokio::time::interval(self.lease / BEATS_PER_LEASE);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut n: u32 = 0;
        loop {
            ticks.tick().await;
            n = n.wrapping_add(1);
            if let Err(e) = self.beat().await {
                tracing::error!(error = %e, "heartbeat failed; trying again");
                continue;
            }
            if let Err(e) = self.take_over().await {
                tracing::error!(error = %e, "taking over lapsed servers failed");
            }
            if n.is_multiple_of(ORPHAN_CHECK_EVERY) {
                match self.free_orphans().await {
                    Ok(0) => {}
                    Ok(n) => tracing::warn!(freed = n, "freed rows owned by no live server"),
                    Err(e) => tracing::error!(error = %e, "freeing orphaned rows failed"),
                }
            }
        }
    }
}

/// Whether `c` may stand in a server's id unescaped (in a connection's `options`).
pub(crate) fn plain(c: char) -> bool {
    c.is_ascii_alphanumeric() || "-_.".contains(c)
}

/// A new server's id: its host's name (letters, digits, `-`, `_` and `.` only) and a
/// unique part.
pub fn new_server_id() -> String {
    let host: String = gethostname()
        .chars()
        .map(|c| match plain(c) {
            true => c,
            false => '-',
        })
        .collect();
    let unique = ulid::Ulid::new().to_string().to_lowercase();
    format!("{host}-{}", &unique[unique.len() - 8..])
}

fn gethostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "server".into())
}
