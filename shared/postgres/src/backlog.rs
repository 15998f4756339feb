//! The backlog one server holds alone. Leasing a row writes a new version of it with an
//! entry in each of four indexes, about as much as the attempt's result costs: a backlog
//! leased row by row drains at about four fifths of the speed of work leased ahead of its
//! time. So a server that finds a page or more of backlog while no other server is
//! running holds the whole range due before now instead, in one row of `backlog_holder`,
//! and reads it a page at a time without a new version of each row (the page's read
//! locks each row for a moment, which logs a few bytes).
//!
//! - The other servers' leases skip what is due before a holder's bound while the holder
//!   is one of the servers (as they skip the rows a server owns), so no row of the range
//!   is called twice; a holder that dies stops holding when it is taken over, and is
//!   told so as it is told its rows are freed.
//! - A change another server makes to a row of the range (a cancel, a replace, taking it
//!   to wake it) is told to the holder as a change to a row it owns is (migration
//!   `V5__backlog_holder`), so what it read is vouched for as a lease's would be.
//! - Each page is read with `FOR UPDATE SKIP LOCKED`: a lease begun before the range was
//!   held, still under way, keeps its rows.
//! - Once a page comes back short, or another server is running (looked at every tick),
//!   the holder writes its id into the rows it read and still has in memory (attempts in
//!   its timer or in hand, results whose write failed, dead letters for its repair pass)
//!   and lets the range go; everything else still due in it (not read yet, or freed or
//!   changed into it behind the reading) is leased row by row again, by any server. (The
//!   comment of migration `V5__backlog_holder` speaks of "what is left of it": it meant
//!   the same rows, found then by a scan.)

use boomerang_core::ports::StoreError;

use crate::store::sql::unavailable;
use crate::store::PgStore;

/// The range this server holds: what is due before `below_ms`, read up to `after`
/// (due time, id).
#[derive(Clone, Debug)]
pub(crate) struct Held {
    pub below_ms: i64,
    pub after: (i64, String),
}

/// Holds the backlog due before `below_ms` if no other server is running; whether it
/// does.
pub(crate) async fn hold(store: &PgStore, below_ms: i64) -> Result<bool, StoreError> {
    let rows = store
        .query(
            "INSERT INTO backlog_holder (id, owner, below_ms)
             SELECT 1, $1, $2
              WHERE NOT EXISTS (SELECT 1 FROM servers WHERE id <> $1 AND alive_until > now())
             ON CONFLICT (id) DO UPDATE SET owner = excluded.owner, below_ms = excluded.below_ms
              WHERE backlog_holder.owner = excluded.owner
                 OR NOT EXISTS (SELECT 1 FROM servers s WHERE s.id = backlog_holder.owner)
             RETURNING 1",
            &[&store.server(), &below_ms],
        )
        .await?;
    Ok(!rows.is_empty())
}

/// What holding the range at `below_ms` has come to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Standing {
    /// Still this server's, and no other server runs.
    Alone,
    /// Still this server's, but another server runs: time to let it go.
    Joined,
    /// No longer this server's (it was taken over, or it left): nothing to let go.
    Lost,
}

/// Whether this server still holds the range at `below_ms`, and alone.
pub(crate) async fn standing(store: &PgStore, below_ms: i64) -> Result<Standing, StoreError> {
    let rows = store
        .query(
            "SELECT EXISTS (SELECT 1 FROM backlog_holder WHERE owner = $1 AND below_ms = $2),
                    EXISTS (SELECT 1 FROM servers WHERE id <> $1 AND alive_until > now())",
            &[&store.server(), &below_ms],
        )
        .await?;
    let (held, joined) = match rows.first() {
        Some(row) => (row.get(0), row.get(1)),
        None => (false, false),
    };
    Ok(match (held, joined) {
        (false, _) => Standing::Lost,
        (true, true) => Standing::Joined,
        (true, false) => Standing::Alone,
    })
}

/// The next page of the held range (tenant, id, attempt, due_kind, due_ms, doc), in
/// order of due time and id.
pub(crate) async fn page(
    store: &PgStore,
    held: &Held,
    limit: usize,
) -> Result<Vec<tokio_postgres::Row>, StoreError> {
    store
        .query(
            "SELECT tenant, id, attempt, due_kind, due_ms, doc FROM tasks
             WHERE owner IS NULL AND due_ms IS NOT NULL AND due_ms < $1
               AND (due_ms, id) > ($2, $3)
             ORDER BY due_ms, id LIMIT $4
             FOR UPDATE SKIP LOCKED",
            &[
                &held.below_ms,
                &held.after.0,
                &held.after.1,
                &(limit as i64),
            ],
        )
        .await
}

/// Lets the range go: the rows of `read` (ids the holder read and still has in memory)
/// still unowned and due in it become this server's; everything else is leased by any
/// server, as before. How many rows were kept as this server's; `None` if the range was
/// no longer this server's (then nothing is written).
///
/// The rows are named, not found by a scan of the range behind the cursor: that scan
/// walks the index entries of every row already finished (100,000 after a large
/// backlog) and held its locks for about 100 ms while the writer waited on them.
/// They are locked in id order, the order the writer locks them in, so that a
/// transaction of the writer under way (another server's cancel, say) is waited for,
/// is told to the holder while it still holds, and never waits on this one in a cycle.
pub(crate) async fn release(
    store: &PgStore,
    held: &Held,
    read: &[String],
) -> Result<Option<u64>, StoreError> {
    let mut client = store.client().await?;
    let tx = client.transaction().await.map_err(unavailable)?;
    tx.batch_execute("SET LOCAL boomerang.quiet = on")
        .await
        .map_err(unavailable)?;
    let params: [&(dyn tokio_postgres::types::ToSql + Sync); 3] =
        [&store.server(), &held.below_ms, &read];
    let kept = tx
        .execute(
            "UPDATE tasks t SET owner = $1
             FROM (SELECT id FROM tasks
                   WHERE id = ANY($3::text[])
                     AND owner IS NULL AND due_ms IS NOT NULL AND due_ms < $2
                     AND EXISTS (SELECT 1 FROM backlog_holder
                                 WHERE owner = $1 AND below_ms = $2)
                   ORDER BY id FOR UPDATE) d
             WHERE t.id = d.id",
            &params,
        )
        .await
        .map_err(unavailable)?;
    let ours = tx
        .execute(
            "DELETE FROM backlog_holder WHERE owner = $1 AND below_ms = $2",
            &params[..2],
        )
        .await
        .map_err(unavailable)?;
    tx.commit().await.map_err(unavailable)?;
    Ok((ours > 0).then_some(kept))
}
