//! Schedules, and the newest task of each key registered with `on_key: replace`.

use async_trait::async_trait;
use rusqlite::{params, OptionalExtension};

use super::codec::{decode, encode};
use super::rows::{insert_task, TaskRow};
use super::sqlite::SqliteStore;
use super::writer::unavailable;
use boomerang_core::domain::{BusinessKey, Schedule, ScheduleId, Task, TaskId, TenantId};
use boomerang_core::ports::{KeyedTasks, SchedulePage, ScheduleStore, StoreError, TaskStore};

#[async_trait]
impl ScheduleStore for SqliteStore {
    async fn create_schedule(&self, schedule: &Schedule) -> Result<(), StoreError> {
        let (tenant, id) = (schedule.tenant.to_string(), schedule.id.to_string());
        let (version, doc) = (schedule.version as i64, encode(schedule)?);
        self.write(move |w| {
            w.conn
                .execute(
                    "INSERT INTO schedules (tenant, id, version, doc) VALUES (?1, ?2, ?3, ?4)",
                    params![tenant, id, version, doc],
                )
                .map(|_| ())
                .map_err(unavailable)
        })
        .await
    }

    async fn schedule(
        &self,
        tenant: &TenantId,
        id: &ScheduleId,
    ) -> Result<Option<Schedule>, StoreError> {
        let (tenant, id) = (tenant.to_string(), id.to_string());
        self.read(move |c| {
            let doc: Option<String> = c
                .query_row(
                    "SELECT doc FROM schedules WHERE tenant = ?1 AND id = ?2",
                    [tenant, id],
                    |r| r.get(0),
                )
                .optional()
                .map_err(unavailable)?;
            doc.map(|d| decode(&d)).transpose()
        })
        .await
    }

    async fn update_schedule(
        &self,
        schedule: &Schedule,
        expected_version: u64,
    ) -> Result<(), StoreError> {
        let (tenant, id) = (schedule.tenant.to_string(), schedule.id.to_string());
        let (version, doc) = (schedule.version as i64, encode(schedule)?);
        self.write(move |w| {
            let changed = w
                .conn
                .execute(
                    "UPDATE schedules SET version = ?3, doc = ?4
                     WHERE tenant = ?1 AND id = ?2 AND version = ?5",
                    params![tenant, id, version, doc, expected_version as i64],
                )
                .map_err(unavailable)?;
            match changed {
                1 => Ok(()),
                _ => Err(StoreError::Conflict),
            }
        })
        .await
    }

    async fn delete_schedule(
        &self,
        tenant: &TenantId,
        id: &ScheduleId,
    ) -> Result<bool, StoreError> {
        let (tenant, id) = (tenant.to_string(), id.to_string());
        self.write(move |w| {
            w.conn
                .execute(
                    "DELETE FROM schedules WHERE tenant = ?1 AND id = ?2",
                    [tenant, id],
                )
                .map(|n| n > 0)
                .map_err(unavailable)
        })
        .await
    }

    async fn schedules(
        &self,
        tenant: &TenantId,
        cursor: Option<ScheduleId>,
        limit: u32,
    ) -> Result<SchedulePage, StoreError> {
        let tenant = tenant.to_string();
        // Past every ULID, so a first page starts at the newest.
        let after = cursor.map_or_else(|| "~".to_string(), |c| c.to_string());
        let rows = limit as i64 + 1;
        let schedules: Vec<Schedule> = self
            .read(move |c| {
                let mut stmt = c
                    .prepare_cached(
                        "SELECT doc FROM schedules WHERE tenant = ?1 AND id < ?2
                         ORDER BY id DESC LIMIT ?3",
                    )
                    .map_err(unavailable)?;
                let docs = stmt
                    .query_map(params![tenant, after, rows], |r| r.get::<_, String>(0))
                    .map_err(unavailable)?;
                docs.map(|d| decode(&d.map_err(unavailable)?)).collect()
            })
            .await?;
        Ok(SchedulePage::from_overfetch(schedules, limit))
    }
}

#[async_trait]
impl KeyedTasks for SqliteStore {
    async fn keyed(
        &self,
        tenant: &TenantId,
        key: &BusinessKey,
    ) -> Result<Option<Task>, StoreError> {
        let (t, k) = (tenant.to_string(), key.to_string());
        let id: Option<String> = self
            .read(move |c| {
                c.query_row(
                    "SELECT task_id FROM keyed_tasks WHERE tenant = ?1 AND key = ?2",
                    [t, k],
                    |r| r.get(0),
                )
                .optional()
                .map_err(unavailable)
            })
            .await?;
        let Some(id) = id else { return Ok(None) };
        let id: TaskId = id
            .parse()
            .map_err(|e: ulid::DecodeError| StoreError::Corrupt(e.into()))?;
        // Through `get`, so a claimed task shows as claimed.
        self.get(tenant, &id).await
    }

    async fn create_keyed(&self, task: &Task, previous: Option<TaskId>) -> Result<(), StoreError> {
        let Some(key) = task.spec.key.as_ref().map(|k| k.to_string()) else {
            return Err(StoreError::Corrupt("a keyed task without a key".into()));
        };
        let row = TaskRow::of(task)?;
        let (tenant, id) = (task.tenant.to_string(), task.id.to_string());
        let previous = previous.map(|p| p.to_string());
        self.write(move |w| {
            let newest: Option<String> = w
                .conn
                .query_row(
                    "SELECT task_id FROM keyed_tasks WHERE tenant = ?1 AND key = ?2",
                    [&tenant, &key],
                    |r| r.get(0),
                )
                .optional()
                .map_err(unavailable)?;
            if newest != previous {
                return Err(StoreError::Conflict);
            }
            if insert_task(&w.conn, &row, &tenant, None)? != 1 {
                return Err(StoreError::Conflict);
            }
            w.conn
                .execute(
                    "INSERT OR REPLACE INTO keyed_tasks (tenant, key, task_id) VALUES (?1, ?2, ?3)",
                    params![tenant, key, id],
                )
                .map(|_| ())
                .map_err(unavailable)
        })
        .await
    }

    async fn replace_keyed(&self, task: &Task, expected_version: u64) -> Result<(), StoreError> {
        // The embedded store writes the whole document on every update.
        self.update(task, expected_version).await
    }
}
