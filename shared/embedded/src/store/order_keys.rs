//! Each order key's line: `order_keys` keeps a key's last place given; `order_places`
//! one row per place held, so the head is the first row of an index read.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use rusqlite::{params, OptionalExtension, Row};

use boomerang_core::domain::{OrderEntry, OrderKey, TaskId, TenantId};
use boomerang_core::ports::{OrderKeyState, OrderKeys, StoreError, ORDER_KEYS_LISTED};

use super::sqlite::SqliteStore;
use super::writer::unavailable;

fn corrupt(e: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(e.to_string().into())
}

/// A place as its row holds it: (seq, task id, at_ms).
fn entry(seq: i64, task: &str, at_ms: i64) -> Result<OrderEntry, StoreError> {
    Ok(OrderEntry {
        seq: u64::try_from(seq).map_err(corrupt)?,
        task: task.parse::<TaskId>().map_err(corrupt)?,
        at: DateTime::<Utc>::from_timestamp_millis(at_ms)
            .ok_or_else(|| corrupt("a place's time"))?,
    })
}

fn head_row(row: &Row<'_>) -> rusqlite::Result<(i64, String, i64)> {
    Ok((row.get(0)?, row.get(1)?, row.get(2)?))
}

#[async_trait]
impl OrderKeys for SqliteStore {
    async fn take_place(
        &self,
        tenant: &TenantId,
        key: &OrderKey,
        task: TaskId,
        now: DateTime<Utc>,
    ) -> Result<u64, StoreError> {
        let (tenant, key, task) = (tenant.to_string(), key.to_string(), task.to_string());
        let at = now.timestamp_millis();
        let seq: i64 = self
            .write(move |w| {
                let seq: i64 = w
                    .conn
                    .query_row(
                        "INSERT INTO order_keys (tenant, key, last_seq) VALUES (?1, ?2, 1)
                         ON CONFLICT (tenant, key) DO UPDATE SET last_seq = last_seq + 1
                         RETURNING last_seq",
                        params![tenant, key],
                        |r| r.get(0),
                    )
                    .map_err(unavailable)?;
                w.conn
                    .execute(
                        "INSERT INTO order_places (tenant, key, seq, task_id, at_ms)
                         VALUES (?1, ?2, ?3, ?4, ?5)",
                        params![tenant, key, seq, task, at],
                    )
                    .map_err(unavailable)?;
                Ok(seq)
            })
            .await?;
        u64::try_from(seq).map_err(corrupt)
    }

    async fn head(
        &self,
        tenant: &TenantId,
        key: &OrderKey,
    ) -> Result<Option<OrderEntry>, StoreError> {
        let (tenant, key) = (tenant.to_string(), key.to_string());
        self.read(move |c| {
            let row = c
                .query_row(
                    "SELECT seq, task_id, at_ms FROM order_places
                     WHERE tenant = ?1 AND key = ?2 ORDER BY seq LIMIT 1",
                    [tenant, key],
                    head_row,
                )
                .optional()
                .map_err(unavailable)?;
            row.map(|(seq, task, at)| entry(seq, &task, at)).transpose()
        })
        .await
    }

    async fn line(&self, tenant: &TenantId, key: &OrderKey) -> Result<OrderKeyState, StoreError> {
        let head = self.head(tenant, key).await?;
        let (t, k) = (tenant.to_string(), key.to_string());
        let backlog: i64 = self
            .read(move |c| {
                c.query_row(
                    "SELECT COUNT(*) FROM order_places WHERE tenant = ?1 AND key = ?2",
                    [t, k],
                    |r| r.get(0),
                )
                .map_err(unavailable)
            })
            .await?;
        Ok(OrderKeyState {
            key: key.clone(),
            head,
            backlog: u64::try_from(backlog).map_err(corrupt)?,
        })
    }

    async fn leave(&self, tenant: &TenantId, key: &OrderKey, seq: u64) -> Result<(), StoreError> {
        let (tenant, key) = (tenant.to_string(), key.to_string());
        let seq = i64::try_from(seq).map_err(corrupt)?;
        self.write(move |w| {
            w.conn
                .execute(
                    "DELETE FROM order_places WHERE tenant = ?1 AND key = ?2 AND seq = ?3",
                    params![tenant, key, seq],
                )
                .map(|_| ())
                .map_err(unavailable)
        })
        .await
    }

    async fn order_keys(
        &self,
        tenant: &TenantId,
        after: Option<&OrderKey>,
        limit: usize,
    ) -> Result<Vec<OrderKeyState>, StoreError> {
        let tenant = tenant.to_string();
        let after = after.map(|a| a.to_string()).unwrap_or_default();
        let limit = limit.min(ORDER_KEYS_LISTED) as i64;
        self.read(move |c| {
            let mut keys = c
                .prepare_cached(
                    "SELECT k.key,
                        (SELECT COUNT(*) FROM order_places p WHERE p.tenant = k.tenant AND p.key = k.key)
                     FROM order_keys k WHERE k.tenant = ?1 AND k.key > ?2 ORDER BY k.key LIMIT ?3",
                )
                .map_err(unavailable)?;
            let rows: Vec<(String, i64)> = keys
                .query_map(params![tenant, after, limit], |r| Ok((r.get(0)?, r.get(1)?)))
                .and_then(|rows| rows.collect())
                .map_err(unavailable)?;
            let mut heads = c
                .prepare_cached(
                    "SELECT seq, task_id, at_ms FROM order_places
                     WHERE tenant = ?1 AND key = ?2 ORDER BY seq LIMIT 1",
                )
                .map_err(unavailable)?;
            let mut states = Vec::with_capacity(rows.len());
            for (key, backlog) in rows {
                let head = heads
                    .query_row(params![tenant, key], head_row)
                    .optional()
                    .map_err(unavailable)?;
                states.push(OrderKeyState {
                    key: OrderKey::parse(key).map_err(corrupt)?,
                    head: head.map(|(seq, task, at)| entry(seq, &task, at)).transpose()?,
                    backlog: u64::try_from(backlog).map_err(corrupt)?,
                });
            }
            Ok(states)
        })
        .await
    }
}
