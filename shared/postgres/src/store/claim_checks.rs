//! Claim checks: before an attempt is called, the task's row is read to see that it is
//! still at the version this server loaded and still this server's (a cancel, a replace
//! or a take-over by another server moves it on). A check only reads, so it needs no
//! transaction and no flush of the log: checks go out on their own connections, many in
//! one statement, beside the writer's transactions rather than queued behind them.
//!
//! The check is not the last word: the attempt's outcome is written only if the row is
//! still at the version claimed, so a change landing between check and write is found
//! there.

use std::collections::HashSet;
use std::sync::Arc;

use deadpool_postgres::Pool;
use tokio::sync::{mpsc, oneshot, Mutex};

use boomerang_core::domain::Task;
use boomerang_core::ports::StoreError;

use super::claims::Claims;
use super::owned::Owned;
use super::sql;

/// Most checks one statement holds.
const MAX_BATCH: usize = 2000;
/// Statements in flight at once.
const CHECKERS: usize = 2;

struct Check {
    task: Box<Task>,
    expected: u64,
    reply: oneshot::Sender<Result<(), StoreError>>,
}

struct Shared {
    pool: Pool,
    claims: Claims,
    server: String,
    rx: Mutex<mpsc::UnboundedReceiver<Check>>,
}

#[derive(Clone)]
pub(crate) struct ClaimChecks {
    tx: mpsc::UnboundedSender<Check>,
    claims: Claims,
    owned: Owned,
}

impl ClaimChecks {
    pub fn spawn(pool: Pool, claims: Claims, owned: Owned, server: String) -> ClaimChecks {
        let (tx, rx) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared {
            pool,
            claims: claims.clone(),
            server,
            rx: Mutex::new(rx),
        });
        for _ in 0..CHECKERS {
            tokio::spawn(run(shared.clone()));
        }
        ClaimChecks { tx, claims, owned }
    }

    /// Claims `claimed`, read at `expected`, if its row is still at that version and
    /// this server's (or no server's).
    pub async fn claim(&self, claimed: &Task, expected: u64) -> Result<(), StoreError> {
        // What this server read or wrote of its own row, vouched for by the owner
        // notices, needs no second read. The check begins before the vouching is looked
        // at: a write of the task under way refuses it, and one that ended has already
        // brought what is kept up to date.
        self.claims.begin_check(&claimed.id)?;
        if self.owned.vouches(&claimed.id, expected) {
            return self.claims.end_check(claimed.clone(), expected, true);
        }
        self.claims.drop_check(&claimed.id);
        let (reply, answer) = oneshot::channel();
        let check = Check {
            task: Box::new(claimed.clone()),
            expected,
            reply,
        };
        self.tx.send(check).map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?
    }
}

fn stopped() -> StoreError {
    StoreError::Unavailable("the store's claim checks have stopped".into())
}

async fn run(shared: Arc<Shared>) {
    loop {
        let mut checks = Vec::new();
        if shared
            .rx
            .lock()
            .await
            .recv_many(&mut checks, MAX_BATCH)
            .await
            == 0
        {
            return;
        }
        let mut to_read = Vec::new();
        for check in checks {
            // Answered without a read: claimed here already, or a write is under way.
            let settled = shared
                .claims
                .reclaim(&check.task, check.expected)
                .or_else(|| shared.claims.begin_check(&check.task.id).err().map(Err));
            match settled {
                Some(answer) => drop(check.reply.send(answer)),
                None => to_read.push(check),
            }
        }
        if to_read.is_empty() {
            continue;
        }
        let current = current(&shared, &to_read).await;
        for check in to_read {
            let is_current = current
                .as_ref()
                .is_ok_and(|ids| ids.contains(&check.task.id.to_string()));
            // Every begun check ends, whatever the read found.
            let claimed = shared
                .claims
                .end_check(*check.task, check.expected, is_current);
            let answer = match &current {
                Ok(_) => claimed,
                Err(e) => Err(StoreError::Unavailable(e.to_string().into())),
            };
            let _ = check.reply.send(answer);
        }
    }
}

/// The ids of `checks` whose row is at the version checked, and this server's (or no
/// server's: a server that took the row over to wake it, see `PgStore::adopt`, is the
/// one to call it).
async fn current(shared: &Shared, checks: &[Check]) -> Result<HashSet<String>, StoreError> {
    let ids: Vec<String> = checks.iter().map(|c| c.task.id.to_string()).collect();
    let versions: Vec<i64> = checks.iter().map(|c| c.expected as i64).collect();
    let client = shared.pool.get().await.map_err(sql::pool_unavailable)?;
    let stmt = client
        .prepare_cached(
            "SELECT t.id FROM tasks t
             JOIN unnest($1::text[], $2::bigint[]) AS c(id, version)
               ON t.id = c.id AND t.version = c.version
             WHERE t.owner = $3 OR t.owner IS NULL",
        )
        .await
        .map_err(sql::unavailable)?;
    let rows = client
        .query(&stmt, &[&ids, &versions, &shared.server])
        .await
        .map_err(sql::unavailable)?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}
