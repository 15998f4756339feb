//! Flow limits in the database's tables, so that they hold across every server sharing it.
//!
//! - A rate window is a row of `flow_windows`, counted by one upsert that answers the
//!   count: every server learns its ask's place in the window, and no two the same.
//! - Slots (a flow's parallelism, and a tenant's limit at a destination, see
//!   [`super::destination_slots`]) are rows naming their holder and until when. A take
//!   holds the flow's transaction-scoped advisory lock while it counts the unexpired
//!   rows and inserts its own if there is room, so takes of one flow on every server go
//!   one at a time; expired rows go in the same statement, so the table never holds more
//!   rows of a flow than its limit. A caller waiting for a slot looks again every
//!   [`LOOK_AGAIN`], and a look that finds the slots full is one read, without the lock.
//!   A free is one delete.
//! - Tasks put off by a flow are notes in `flow_waiting`, one per task.
//!
//! A flow's figures are read from the slots and notes themselves: the flows listed are
//! those with an unexpired row in either, with no list of keys to keep beside them.

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use boomerang_core::domain::{Attempt, AttemptRef, FlowKey, TaskId, TenantId};
use boomerang_core::ports::{FlowCounters, FlowFigures, SlotHolder, StoreError};

use super::sql::{ms, unavailable};
use super::PgStore;

/// How long a flow's old windows stay once a new one began: a server whose clock runs
/// this much behind still counts in the window it asks for.
const KEEP_WINDOWS_MS: i64 = 60_000;
/// How soon a caller waiting for a slot looks again: a free by any server is only seen by
/// looking.
const LOOK_AGAIN: Duration = Duration::from_millis(100);

/// One kind of shared slots: its table's statements, and the name of the advisory lock
/// that puts one limit's takes in line.
pub(super) struct Slots {
    /// The lock's name: `<lock>#<tenant>#<key>` (a tenant id holds no `#`).
    pub(super) lock: &'static str,
    /// Whether the limit is full for `holder` (others hold as many unexpired slots, and it
    /// holds none): read without the lock, so that callers waiting for a slot look again
    /// without putting every take of the limit behind them. $1 tenant, $2 key, $3 holder,
    /// $4 now, $5 limit.
    pub(super) full: &'static str,
    /// Removes the limit's expired slots of others, then takes or renews `holder`'s if
    /// it holds one (even expired: nobody took a slot since, or it would be gone) or
    /// fewer than the limit are held by others. Answers a row if taken. $1 tenant, $2 key,
    /// $3 holder, $4 now, $5 until, $6 limit.
    pub(super) take: &'static str,
    /// Removes `holder`'s slot. $1 tenant, $2 key, $3 holder.
    pub(super) free: &'static str,
}

/// The statements of one kind of slots, on `$table` whose key column is `$key`.
macro_rules! slots {
    ($lock:literal, $table:literal, $key:literal) => {
        Slots {
            lock: $lock,
            full: concat!(
                "SELECT count(*) FILTER (WHERE holder <> $3 AND until_ms > $4) >= $5
                        AND count(*) FILTER (WHERE holder = $3) = 0
                 FROM ",
                $table,
                " WHERE tenant = $1 AND ",
                $key,
                " = $2"
            ),
            take: concat!(
                "WITH expired AS (
                     DELETE FROM ",
                $table,
                "
                     WHERE tenant = $1 AND ",
                $key,
                " = $2 AND until_ms <= $4 AND holder <> $3
                 ), held AS (
                     SELECT count(*) FILTER (WHERE holder <> $3) AS others,
                            count(*) FILTER (WHERE holder = $3) AS mine
                     FROM ",
                $table,
                "
                     WHERE tenant = $1 AND ",
                $key,
                " = $2 AND (until_ms > $4 OR holder = $3)
                 )
                 INSERT INTO ",
                $table,
                " (tenant, ",
                $key,
                ", holder, until_ms)
                 SELECT $1, $2, $3, $5 FROM held WHERE mine > 0 OR others < $6
                 ON CONFLICT (tenant, ",
                $key,
                ", holder) DO UPDATE SET until_ms = excluded.until_ms
                 RETURNING 1"
            ),
            free: concat!(
                "DELETE FROM ",
                $table,
                " WHERE tenant = $1 AND ",
                $key,
                " = $2 AND holder = $3"
            ),
        }
    };
}
pub(super) use slots;

/// A flow's slots: its parallelism.
pub(super) const FLOW_SLOTS: Slots = slots!("flow", "flow_slots", "key");

impl PgStore {
    /// Takes one of `limit` slots of `slots` for (`tenant`, `key`): unless a read finds
    /// them full, in one transaction the limit's advisory lock, then the take. The lock is
    /// taken by a statement of its own, so that the take's snapshot (taken when its
    /// statement starts) sees every take committed before the lock was granted. The read
    /// only spares a look that would fail: the take decides, under the lock.
    pub(super) async fn take_slot_of(
        &self,
        slots: &Slots,
        (tenant, key): (&TenantId, &str),
        limit: u32,
        holder: &SlotHolder,
        (now, until): (DateTime<Utc>, DateTime<Utc>),
    ) -> Result<bool, StoreError> {
        let lock = format!("{}#{}#{key}", slots.lock, tenant.as_str());
        let (now, until, limit) = (ms(now), ms(until), i64::from(limit));
        let mut client = self.client().await?;
        let full = client
            .prepare_cached(slots.full)
            .await
            .map_err(unavailable)?;
        let looked = client
            .query_one(
                &full,
                &[&tenant.as_str(), &key, &holder.as_str(), &now, &limit],
            )
            .await
            .map_err(unavailable)?;
        if looked.get::<_, bool>(0) {
            return Ok(false);
        }
        let tx = client.transaction().await.map_err(unavailable)?;
        tx.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
            &[&lock],
        )
        .await
        .map_err(unavailable)?;
        let take = tx.prepare_cached(slots.take).await.map_err(unavailable)?;
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 6] = [
            &tenant.as_str(),
            &key,
            &holder.as_str(),
            &now,
            &until,
            &limit,
        ];
        let taken = tx.query_opt(&take, &params).await.map_err(unavailable)?;
        tx.commit().await.map_err(unavailable)?;
        Ok(taken.is_some())
    }

    /// Frees `holder`'s slot of `slots` for (`tenant`, `key`), if it holds one. No lock:
    /// a delete only makes room.
    pub(super) async fn free_slot_of(
        &self,
        slots: &Slots,
        (tenant, key): (&TenantId, &str),
        holder: &SlotHolder,
    ) -> Result<(), StoreError> {
        let client = self.client().await?;
        let free = client
            .prepare_cached(slots.free)
            .await
            .map_err(unavailable)?;
        client
            .execute(&free, &[&tenant.as_str(), &key, &holder.as_str()])
            .await
            .map_err(unavailable)?;
        Ok(())
    }

    /// The first ask of a new window removes the flow's windows that ended a while ago.
    async fn drop_old_windows(
        &self,
        tenant: &TenantId,
        key: &FlowKey,
        window_ms: i64,
    ) -> Result<(), StoreError> {
        let client = self.client().await?;
        let stmt = client
            .prepare_cached(
                "DELETE FROM flow_windows WHERE tenant = $1 AND key = $2 AND window_ms < $3",
            )
            .await
            .map_err(unavailable)?;
        let before = window_ms.saturating_sub(KEEP_WINDOWS_MS);
        client
            .execute(&stmt, &[&tenant.as_str(), &key.as_str(), &before])
            .await
            .map_err(unavailable)?;
        Ok(())
    }
}

#[async_trait]
impl FlowCounters for PgStore {
    async fn ask_start(
        &self,
        tenant: &TenantId,
        key: &FlowKey,
        window: DateTime<Utc>,
    ) -> Result<u64, StoreError> {
        let window_ms = ms(window);
        let client = self.client().await?;
        let stmt = client
            .prepare_cached(
                "INSERT INTO flow_windows (tenant, key, window_ms, asked) VALUES ($1, $2, $3, 1)
                 ON CONFLICT (tenant, key, window_ms)
                 DO UPDATE SET asked = flow_windows.asked + 1
                 RETURNING asked",
            )
            .await
            .map_err(unavailable)?;
        let row = client
            .query_one(&stmt, &[&tenant.as_str(), &key.as_str(), &window_ms])
            .await
            .map_err(unavailable)?;
        drop(client);
        let asked: i64 = row.get(0);
        if asked == 1 {
            // The ask is counted: a failed clean-up is left to the next window's.
            if let Err(e) = self.drop_old_windows(tenant, key, window_ms).await {
                tracing::warn!(flow = %key, error = %e, "removing a flow's old windows failed");
            }
        }
        u64::try_from(asked).map_err(|e| StoreError::Corrupt(e.into()))
    }

    async fn take_slot(
        &self,
        tenant: &TenantId,
        key: &FlowKey,
        parallelism: u32,
        holder: &SlotHolder,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let flow = (tenant, key.as_str());
        (self.take_slot_of(&FLOW_SLOTS, flow, parallelism, holder, (now, until))).await
    }

    async fn free_slot(
        &self,
        tenant: &TenantId,
        key: &FlowKey,
        holder: &SlotHolder,
    ) -> Result<(), StoreError> {
        (self.free_slot_of(&FLOW_SLOTS, (tenant, key.as_str()), holder)).await
    }

    /// Another server's free is not seen here: the caller looks again shortly.
    async fn slot_freed(&self, _tenant: &TenantId, _key: &FlowKey, at_most: Duration) {
        tokio::time::sleep(at_most.min(LOOK_AGAIN)).await;
    }

    /// The note of the task is replaced, and the flow's notes past their time go, in one
    /// statement.
    async fn note_waiting(
        &self,
        tenant: &TenantId,
        key: &FlowKey,
        attempt: &AttemptRef,
        (now, until): (DateTime<Utc>, DateTime<Utc>),
    ) -> Result<(), StoreError> {
        let number =
            i32::try_from(attempt.attempt.number()).map_err(|e| StoreError::Corrupt(e.into()))?;
        let client = self.client().await?;
        let stmt = client
            .prepare_cached(
                "WITH past AS (
                     DELETE FROM flow_waiting
                     WHERE tenant = $1 AND key = $2 AND until_ms <= $5 AND task_id <> $3
                 )
                 INSERT INTO flow_waiting (tenant, key, task_id, attempt, until_ms)
                 VALUES ($1, $2, $3, $4, $6)
                 ON CONFLICT (tenant, key, task_id)
                 DO UPDATE SET attempt = excluded.attempt, until_ms = excluded.until_ms",
            )
            .await
            .map_err(unavailable)?;
        let task = attempt.task_id.to_string();
        client
            .execute(
                &stmt,
                &[
                    &tenant.as_str(),
                    &key.as_str(),
                    &task,
                    &number,
                    &ms(now),
                    &ms(until),
                ],
            )
            .await
            .map_err(unavailable)?;
        Ok(())
    }

    /// Every note of the flow goes; those still waiting at `now` are answered, soonest
    /// due first.
    async fn take_waiting(
        &self,
        tenant: &TenantId,
        key: &FlowKey,
        now: DateTime<Utc>,
    ) -> Result<Vec<AttemptRef>, StoreError> {
        let rows = self
            .query(
                "WITH taken AS (
                     DELETE FROM flow_waiting WHERE tenant = $1 AND key = $2
                     RETURNING task_id, attempt, until_ms
                 )
                 SELECT task_id, attempt FROM taken WHERE until_ms > $3
                 ORDER BY until_ms, task_id",
                &[&tenant.as_str(), &key.as_str(), &ms(now)],
            )
            .await?;
        rows.iter()
            .map(|r| attempt_of(tenant, r.get(0), r.get(1)))
            .collect()
    }

    async fn figures(
        &self,
        tenant: &TenantId,
        now: DateTime<Utc>,
    ) -> Result<Vec<FlowFigures>, StoreError> {
        let rows = self
            .query(
                "SELECT key, sum(waiting)::bigint, sum(in_flight)::bigint FROM (
                     SELECT key, count(*) AS waiting, 0 AS in_flight FROM flow_waiting
                     WHERE tenant = $1 AND until_ms > $2 GROUP BY key
                     UNION ALL
                     SELECT key, 0, count(*) FROM flow_slots
                     WHERE tenant = $1 AND until_ms > $2 GROUP BY key
                 ) flows
                 GROUP BY key ORDER BY key",
                &[&tenant.as_str(), &ms(now)],
            )
            .await?;
        rows.iter()
            .map(|r| {
                let key = FlowKey::parse(r.get::<_, String>(0))
                    .map_err(|e| StoreError::Corrupt(e.into()))?;
                Ok(figures_of(key, r.get(1), r.get(2)))
            })
            .collect()
    }

    async fn flow_figures(
        &self,
        tenant: &TenantId,
        key: &FlowKey,
        now: DateTime<Utc>,
    ) -> Result<FlowFigures, StoreError> {
        let client = self.client().await?;
        let stmt = client
            .prepare_cached(
                "SELECT
                     (SELECT count(*) FROM flow_waiting
                      WHERE tenant = $1 AND key = $2 AND until_ms > $3),
                     (SELECT count(*) FROM flow_slots
                      WHERE tenant = $1 AND key = $2 AND until_ms > $3)",
            )
            .await
            .map_err(unavailable)?;
        let row = client
            .query_one(&stmt, &[&tenant.as_str(), &key.as_str(), &ms(now)])
            .await
            .map_err(unavailable)?;
        Ok(figures_of(key.clone(), row.get(0), row.get(1)))
    }
}

/// A note's attempt, back.
fn attempt_of(tenant: &TenantId, task: &str, number: i32) -> Result<AttemptRef, StoreError> {
    let task_id: TaskId = task
        .parse()
        .map_err(|e: ulid::DecodeError| StoreError::Corrupt(e.into()))?;
    let number = u32::try_from(number).map_err(|e| StoreError::Corrupt(e.into()))?;
    Ok(AttemptRef::new(
        tenant.clone(),
        task_id,
        Attempt::from(number),
    ))
}

/// Counts as the queries answer them (never negative).
fn figures_of(key: FlowKey, waiting: i64, in_flight: i64) -> FlowFigures {
    FlowFigures {
        key,
        waiting: u64::try_from(waiting).unwrap_or_default(),
        in_flight: u64::try_from(in_flight).unwrap_or_default(),
    }
}
