//! Schedules (one item each, in the tenant's `S#` partition) and the newest task of each
//! key registered with `on_key: replace` (one small item per key, naming it).

use async_trait::async_trait;
use aws_sdk_dynamodb::types::ReturnValue;
use chrono::Utc;

use super::item::new_item;
use super::table::DynamoStore;
use crate::attr;
use crate::keys;
use crate::sdk::items::{conflict_or_unavailable, get_n, get_s, n, s, Item};
use crate::sdk::sdk_failure;
use boomerang_core::domain::{BusinessKey, Schedule, ScheduleId, Task, TaskId, TenantId};
use boomerang_core::ports::{KeyedTasks, SchedulePage, ScheduleStore, StoreError};

/// A key's item whose task is still missing this long after it was written names a task
/// that will never be written (its registration failed between the two writes).
const DANGLING_AFTER: chrono::Duration = chrono::Duration::seconds(30);

fn corrupt(e: impl std::error::Error + Send + Sync + 'static) -> StoreError {
    StoreError::Corrupt(e.into())
}

fn schedule_item(schedule: &Schedule) -> Result<Item, StoreError> {
    let doc = serde_json::to_string(schedule).map_err(corrupt)?;
    let mut item = keys::schedule(&schedule.tenant, &schedule.id).to_item();
    item.insert(attr::schedule::DOC.to_string(), s(doc));
    item.insert(attr::schedule::VERSION.to_string(), n(schedule.version));
    Ok(item)
}

fn schedule_from(item: &Item) -> Result<Schedule, StoreError> {
    serde_json::from_str(get_s(item, attr::schedule::DOC)?).map_err(corrupt)
}

#[async_trait]
impl ScheduleStore for DynamoStore {
    async fn create_schedule(&self, schedule: &Schedule) -> Result<(), StoreError> {
        self.put_new(schedule_item(schedule)?).await
    }

    async fn schedule(
        &self,
        tenant: &TenantId,
        id: &ScheduleId,
    ) -> Result<Option<Schedule>, StoreError> {
        let item = self.get_item(&keys::schedule(tenant, id), true).await?;
        item.as_ref().map(schedule_from).transpose()
    }

    async fn update_schedule(
        &self,
        schedule: &Schedule,
        expected_version: u64,
    ) -> Result<(), StoreError> {
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(schedule_item(schedule)?))
            .condition_expression(format!("{} = :expected", attr::schedule::VERSION))
            .expression_attribute_values(":expected", n(expected_version))
            .send()
            .await
            .map(|_| ())
            .map_err(conflict_or_unavailable)
    }

    async fn delete_schedule(
        &self,
        tenant: &TenantId,
        id: &ScheduleId,
    ) -> Result<bool, StoreError> {
        let out = self
            .client
            .delete_item()
            .table_name(&self.table)
            .set_key(Some(keys::schedule(tenant, id).to_item()))
            .return_values(ReturnValue::AllOld)
            .send()
            .await
            .map_err(|e| StoreError::Unavailable(sdk_failure(e)))?;
        Ok(out.attributes.is_some_and(|a| !a.is_empty()))
    }

    async fn schedules(
        &self,
        tenant: &TenantId,
        cursor: Option<ScheduleId>,
        limit: u32,
    ) -> Result<SchedulePage, StoreError> {
        let mut req = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression(format!("{} = :pk", attr::PK))
            .expression_attribute_values(":pk", s(keys::schedule_partition(tenant)))
            .scan_index_forward(false)
            .consistent_read(true)
            .limit(limit as i32 + 1);
        if let Some(cursor) = cursor {
            req = req
                .key_condition_expression(format!("{} = :pk AND {} < :after", attr::PK, attr::SK))
                .expression_attribute_values(":after", s(keys::schedule_sk(&cursor)));
        }
        let out = req
            .send()
            .await
            .map_err(|e| StoreError::Unavailable(sdk_failure(e)))?;
        let schedules = out
            .items()
            .iter()
            .map(schedule_from)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(SchedulePage::from_overfetch(schedules, limit))
    }
}

#[async_trait]
impl KeyedTasks for DynamoStore {
    /// The key's item names its newest task. The item is written before the task (below),
    /// so for a moment it names a task not yet written: a young item's missing task is
    /// read again for a while, then the registration is refused as unavailable; an item
    /// older than [`DANGLING_AFTER`] whose task is missing was left by a registration that
    /// never wrote its task, and counts as none.
    async fn keyed(
        &self,
        tenant: &TenantId,
        key: &BusinessKey,
    ) -> Result<Option<Task>, StoreError> {
        for _ in 0..20 {
            let Some(head) = self.get_item(&keys::replace_key(tenant, key), true).await? else {
                return Ok(None);
            };
            let id: TaskId = get_s(&head, attr::keyed::TASK)?.parse().map_err(corrupt)?;
            if let Some(task) = self.task(tenant, &id, true).await? {
                return Ok(Some(task));
            }
            let written = get_n(&head, attr::keyed::WRITTEN_AT)?;
            if Utc::now().timestamp_millis() - written > DANGLING_AFTER.num_milliseconds() {
                return Ok(None);
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        Err(StoreError::Unavailable(
            "the key's newest task is still being written; retry".into(),
        ))
    }

    /// Two conditional writes, the key's item first: DynamoDB's transactions would do it in
    /// one, but the local emulators lack them. The key's item moves only from the task the
    /// caller saw (or from none, or from one whose task was never written), so concurrent
    /// registrations serialize on it; the task is written after it wins.
    async fn create_keyed(&self, task: &Task, previous: Option<TaskId>) -> Result<(), StoreError> {
        let Some(key) = &task.spec.key else {
            return Err(StoreError::Corrupt("a keyed task without a key".into()));
        };
        let now = Utc::now().timestamp_millis();
        let head = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(keys::replace_key(&task.tenant, key).to_item()))
            .item(attr::keyed::TASK, s(task.id.to_string()))
            .item(attr::keyed::WRITTEN_AT, n(now));
        let head = match previous {
            None => head
                .condition_expression(format!(
                    "attribute_not_exists({}) OR {} < :dangling",
                    attr::PK,
                    attr::keyed::WRITTEN_AT
                ))
                .expression_attribute_values(
                    ":dangling",
                    n(now - DANGLING_AFTER.num_milliseconds()),
                ),
            Some(previous) => head
                .condition_expression(format!("{} = :previous", attr::keyed::TASK))
                .expression_attribute_values(":previous", s(previous.to_string())),
        };
        head.send().await.map_err(conflict_or_unavailable)?;
        let pk = self.task_pk(&task.tenant, &task.id).await?;
        self.put_new(new_item(task, pk, self.retention)?).await
    }

    async fn replace_keyed(&self, task: &Task, expected_version: u64) -> Result<(), StoreError> {
        let pk = self.task_pk(&task.tenant, &task.id).await?;
        let item = new_item(task, pk, self.retention)?;
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression(format!("{} = :expected", attr::VERSION))
            .expression_attribute_values(":expected", n(expected_version))
            .send()
            .await
            .map(|_| ())
            .map_err(conflict_or_unavailable)
    }
}
