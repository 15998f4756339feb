//! The newest task of each key registered with `on_key: replace`.

use async_trait::async_trait;
use chrono::Utc;

use boomerang_core::domain::{BusinessKey, Task, TaskId, TenantId};
use boomerang_core::ports::{KeyedTasks, StoreError, TaskStore};

use super::rows::TaskRow;
use super::sql::unavailable;
use super::PgStore;

#[async_trait]
impl KeyedTasks for PgStore {
    async fn keyed(
        &self,
        tenant: &TenantId,
        key: &BusinessKey,
    ) -> Result<Option<Task>, StoreError> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                "SELECT task_id FROM keyed_tasks WHERE tenant = $1 AND key = $2",
                &[&tenant.as_str(), &key.to_string()],
            )
            .await
            .map_err(unavailable)?;
        let Some(row) = row else { return Ok(None) };
        let id: TaskId = row
            .get::<_, String>(0)
            .parse()
            .map_err(|e: ulid::DecodeError| StoreError::Corrupt(e.into()))?;
        // Through `get`, so a claimed task shows as claimed.
        self.get(tenant, &id).await
    }

    /// The key's row moves from `previous` to the new task in the same transaction as the
    /// task's insert: of two servers replacing one key at once, one wins.
    async fn create_keyed(&self, task: &Task, previous: Option<TaskId>) -> Result<(), StoreError> {
        let Some(key) = task.spec.key.as_ref().map(|k| k.to_string()) else {
            return Err(StoreError::Corrupt("a keyed task without a key".into()));
        };
        let row = TaskRow::of(task)?;
        let near_ms = Utc::now().timestamp_millis() + self.horizon.as_millis() as i64;
        let owner = row.owner(&self.server, near_ms);
        let since = self.owned.since();
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(unavailable)?;
        let moved = match previous {
            None => tx
                .execute(
                    "INSERT INTO keyed_tasks (tenant, key, task_id) VALUES ($1, $2, $3)
                     ON CONFLICT DO NOTHING",
                    &[&row.tenant, &key, &row.id],
                )
                .await
                .map_err(unavailable)?,
            Some(previous) => tx
                .execute(
                    "UPDATE keyed_tasks SET task_id = $3
                     WHERE tenant = $1 AND key = $2 AND task_id = $4",
                    &[&row.tenant, &key, &row.id, &previous.to_string()],
                )
                .await
                .map_err(unavailable)?,
        };
        if moved != 1 {
            return Err(StoreError::Conflict);
        }
        tx.execute(
            "INSERT INTO tasks (id, tenant, status, version, attempt, idempotency_key,
                 due_kind, due_ms, business_key, finished_ms, owner, doc)
             VALUES ($1, $2, $3, $4, $5, NULL, $6, $7, $8, $9, $10, $11)",
            &[
                &row.id,
                &row.tenant,
                &row.status,
                &row.version,
                &row.attempt,
                &row.due_kind,
                &row.due_ms,
                &row.business_key,
                &row.finished_ms,
                &owner,
                &row.doc,
            ],
        )
        .await
        .map_err(unavailable)?;
        tx.commit().await.map_err(unavailable)?;
        if owner.is_some() {
            self.owned.insert(task.clone(), since);
        }
        Ok(())
    }

    async fn replace_keyed(&self, task: &Task, expected_version: u64) -> Result<(), StoreError> {
        // Every update writes the whole document.
        self.update(task, expected_version).await
    }
}
