//! Each order key's line: `order_keys` keeps a key's last place given; `order_places`
//! one row per place held, so the head is the first row of an index read.
//!
//! A place is taken by one statement: the key's upsert moves its last place on and holds
//! the key's row until the statement's transaction ends, so of two servers taking places
//! at once, one waits for the other's commit and gets the next number; the place's row
//! is inserted by the same statement, so no number is given without its place.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tokio_postgres::Row;

use boomerang_core::domain::{OrderEntry, OrderKey, TaskId, TenantId};
use boomerang_core::ports::{OrderKeyState, OrderKeys, StoreError, ORDER_KEYS_LISTED};

use super::sql::{at_ms, ms, unavailable};
use super::PgStore;

fn corrupt(e: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(e.to_string().into())
}

/// A place from the columns `first..first + 3` of `row` (seq, task id, at_ms), none
/// where they are NULL (a key with no place held).
fn entry(row: &Row, first: usize) -> Result<Option<OrderEntry>, StoreError> {
    let Some(seq) = row.get::<_, Option<i64>>(first) else {
        return Ok(None);
    };
    let task: String = row.get(first + 1);
    Ok(Some(OrderEntry {
        seq: u64::try_from(seq).map_err(corrupt)?,
        task: task.parse::<TaskId>().map_err(corrupt)?,
        at: at_ms(row.get(first + 2))?,
    }))
}

/// A count, back.
fn backlog(row: &Row, at: usize) -> Result<u64, StoreError> {
    u64::try_from(row.get::<_, i64>(at)).map_err(corrupt)
}

#[async_trait]
impl OrderKeys for PgStore {
    async fn take_place(
        &self,
        tenant: &TenantId,
        key: &OrderKey,
        task: TaskId,
        now: DateTime<Utc>,
    ) -> Result<u64, StoreError> {
        let client = self.client().await?;
        let stmt = client
            .prepare_cached(
                "WITH line AS (
                     INSERT INTO order_keys (tenant, key, last_seq) VALUES ($1, $2, 1)
                     ON CONFLICT (tenant, key) DO UPDATE SET last_seq = order_keys.last_seq + 1
                     RETURNING last_seq
                 )
                 INSERT INTO order_places (tenant, key, seq, task_id, at_ms)
                 SELECT $1, $2, last_seq, $3, $4 FROM line
                 RETURNING seq",
            )
            .await
            .map_err(unavailable)?;
        let row = client
            .query_one(
                &stmt,
                &[&tenant.as_str(), &key.as_str(), &task.to_string(), &ms(now)],
            )
            .await
            .map_err(unavailable)?;
        u64::try_from(row.get::<_, i64>(0)).map_err(corrupt)
    }

    async fn head(
        &self,
        tenant: &TenantId,
        key: &OrderKey,
    ) -> Result<Option<OrderEntry>, StoreError> {
        let row = self
            .query_opt(
                "SELECT seq, task_id, at_ms FROM order_places
                 WHERE tenant = $1 AND key = $2 ORDER BY seq LIMIT 1",
                &[&tenant.as_str(), &key.as_str()],
            )
            .await?;
        match row {
            Some(row) => entry(&row, 0),
            None => Ok(None),
        }
    }

    /// The head and the backlog in one statement, so that they agree.
    async fn line(&self, tenant: &TenantId, key: &OrderKey) -> Result<OrderKeyState, StoreError> {
        let client = self.client().await?;
        let stmt = client
            .prepare_cached(
                "SELECT (SELECT count(*) FROM order_places WHERE tenant = $1 AND key = $2),
                        head.seq, head.task_id, head.at_ms
                 FROM (SELECT 1) one
                 LEFT JOIN LATERAL (
                     SELECT seq, task_id, at_ms FROM order_places
                     WHERE tenant = $1 AND key = $2 ORDER BY seq LIMIT 1
                 ) head ON true",
            )
            .await
            .map_err(unavailable)?;
        let row = client
            .query_one(&stmt, &[&tenant.as_str(), &key.as_str()])
            .await
            .map_err(unavailable)?;
        Ok(OrderKeyState {
            key: key.clone(),
            head: entry(&row, 1)?,
            backlog: backlog(&row, 0)?,
        })
    }

    async fn leave(&self, tenant: &TenantId, key: &OrderKey, seq: u64) -> Result<(), StoreError> {
        // A place past i64 was never given: nothing to leave.
        let Ok(seq) = i64::try_from(seq) else {
            return Ok(());
        };
        self.execute(
            "DELETE FROM order_places WHERE tenant = $1 AND key = $2 AND seq = $3",
            &[&tenant.as_str(), &key.as_str(), &seq],
        )
        .await?;
        Ok(())
    }

    /// Keys whose lines emptied are listed too (with no head and a backlog of 0): their
    /// rows stay, so that a place number is never given twice.
    async fn order_keys(
        &self,
        tenant: &TenantId,
        after: Option<&OrderKey>,
        limit: usize,
    ) -> Result<Vec<OrderKeyState>, StoreError> {
        // Every key is longer than the empty string: no cursor lists from the first.
        let after = after.map_or("", |k| k.as_str());
        let limit = limit.min(ORDER_KEYS_LISTED) as i64;
        let rows = self
            .query(
                "SELECT k.key,
                        (SELECT count(*) FROM order_places p
                         WHERE p.tenant = k.tenant AND p.key = k.key),
                        head.seq, head.task_id, head.at_ms
                 FROM order_keys k
                 LEFT JOIN LATERAL (
                     SELECT seq, task_id, at_ms FROM order_places p
                     WHERE p.tenant = k.tenant AND p.key = k.key ORDER BY seq LIMIT 1
                 ) head ON true
                 WHERE k.tenant = $1 AND k.key > $2
                 ORDER BY k.key LIMIT $3",
                &[&tenant.as_str(), &after, &limit],
            )
            .await?;
        rows.iter()
            .map(|row| {
                Ok(OrderKeyState {
                    key: OrderKey::parse(row.get::<_, String>(0)).map_err(corrupt)?,
                    head: entry(row, 2)?,
                    backlog: backlog(row, 1)?,
                })
            })
            .collect()
    }
}
