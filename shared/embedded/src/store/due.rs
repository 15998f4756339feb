//! The index of pending work read in pages, in due order: what the loader and the repair
//! pass read ([`crate::loader`]).

use chrono::{DateTime, Utc};
use rusqlite::{params, Connection};

use boomerang_core::domain::{PendingWork, TaskId};
use boomerang_core::ports::StoreError;

use super::rows::pending_work;
use super::sqlite::SqliteStore;
use super::writer::{lock, unavailable};

/// A place in the index of pending work: a due time and the row's id, so that many rows
/// due on the same millisecond are paged through without being read twice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct DueKey {
    pub due_ms: i64,
    row: i64,
}

impl DueKey {
    /// Before every row.
    pub const START: DueKey = DueKey {
        due_ms: i64::MIN,
        row: i64::MIN,
    };

    /// After every row due at or before `at`.
    pub fn after(at: DateTime<Utc>) -> DueKey {
        DueKey {
            due_ms: at.timestamp_millis(),
            row: i64::MAX,
        }
    }
}

/// The rest of the millisecond a page starts in.
const SAME_MS: &str = "SELECT rowid, tenant, id, attempt, due_kind, due_ms FROM tasks
     WHERE due_ms IS NOT NULL AND due_ms = ?1 AND rowid > ?2
     ORDER BY due_ms, rowid LIMIT ?3";

/// What is due after that millisecond, up to the page's end.
const LATER: &str = "SELECT rowid, tenant, id, attempt, due_kind, due_ms FROM tasks
     WHERE due_ms IS NOT NULL AND due_ms > ?1 AND due_ms <= ?2
     ORDER BY due_ms, rowid LIMIT ?3";

/// Up to `limit` rows of `sql`, whose first two parameters are `bounds`, with their keys.
fn page_rows(
    c: &Connection,
    sql: &str,
    bounds: (i64, i64),
    limit: usize,
) -> Result<Vec<(DueKey, Option<PendingWork>)>, StoreError> {
    let mut stmt = c.prepare_cached(sql).map_err(unavailable)?;
    let rows = stmt
        .query_map(params![bounds.0, bounds.1, limit as i64], |r| {
            Ok((
                r.get(0)?,
                (r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?),
            ))
        })
        .map_err(unavailable)?;
    let mut page = Vec::new();
    for row in rows {
        let (row, (tenant, id, attempt, kind, due_ms)) = row.map_err(unavailable)?;
        let key = DueKey { due_ms, row };
        // One unreadable row must not stop the loader for good: it is skipped (and
        // said), and the next page starts past it.
        let work = pending_work(tenant, id, attempt, kind, due_ms)
            .inspect_err(|e| tracing::error!(error = %e, "pending work unreadable; skipped"))
            .ok();
        page.push((key, work));
    }
    Ok(page)
}

/// One page of pending work.
pub struct DuePage {
    pub work: Vec<PendingWork>,
    /// Where the page ended: the next page starts after it.
    pub end: DueKey,
    /// Whether the page reached `until` (no more rows up to there).
    pub complete: bool,
}

impl SqliteStore {
    /// Pending work after `from` and due at or before `until`, at most `limit` rows, in
    /// due order: one range read of the pending-work index.
    pub async fn due_page(
        &self,
        from: DueKey,
        until: DateTime<Utc>,
        limit: usize,
    ) -> Result<DuePage, StoreError> {
        let until_ms = until.timestamp_millis();
        let rows: Vec<(DueKey, Option<PendingWork>)> = self
            .read(move |c| {
                // Two range reads of the index, not one on (due_ms, rowid) > (?, ?): SQLite
                // would seek on due_ms alone and step over every row of that millisecond
                // read before, so paging through many tasks due on one millisecond would
                // take time quadratic in their number.
                let mut rows = page_rows(c, SAME_MS, (from.due_ms, from.row), limit)?;
                if rows.len() < limit {
                    let left = limit - rows.len();
                    rows.extend(page_rows(c, LATER, (from.due_ms, until_ms), left)?);
                }
                Ok(rows)
            })
            .await?;
        let complete = rows.len() < limit;
        let end = match (complete, rows.last()) {
            (false, Some((key, _))) => *key,
            _ => DueKey::after(until).max(from),
        };
        Ok(DuePage {
            work: rows.into_iter().filter_map(|(_, work)| work).collect(),
            end,
            complete,
        })
    }

    /// The pending work of a claimed task (its lease's end), which only memory knows; `None`
    /// if the task is not claimed.
    pub fn claimed_work(&self, id: &TaskId) -> Option<Option<PendingWork>> {
        lock(&self.claims).get(id).map(|c| c.task.pending_work())
    }
}
