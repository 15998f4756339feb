//! Idempotency keys: an item per key (`I#<tenant>#<key>`, see [`crate::keys`]) naming the
//! task it registered and holding a copy of that task's item, so that a registration that
//! died between the key and the task is finished by the next repeat.

use std::time::Duration;

use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, Utc};

use super::item::{self, task_from};
use super::table::DynamoStore;
use crate::attr;
use crate::keys;
use crate::sdk::items::{conflict_or_unavailable, corrupt, get_s, n, s, Item};
use boomerang_core::domain::time::checked_add;
use boomerang_core::domain::{Task, TaskId, TenantId};
use boomerang_core::ports::StoreError;

/// How long an idempotency key is remembered, at most: never longer than the retention, so
/// that a key cannot outlive its task (a repeat would otherwise write the task again from
/// the key's copy).
pub const IDEMPOTENCY_WINDOW: Duration = Duration::from_secs(24 * 3600);

impl DynamoStore {
    /// Claims an idempotency key for `task`; on loss returns the winner's key item.
    pub(super) async fn claim_idempotency_key(
        &self,
        task: &Task,
        key: &str,
        task_item: &Item,
    ) -> Result<Option<Item>, StoreError> {
        let key = keys::idempotency(&task.tenant, key);
        let now = Utc::now();
        let window = IDEMPOTENCY_WINDOW.min(self.retention);
        let expires = checked_add(now, window).unwrap_or(DateTime::<Utc>::MAX_UTC);
        let put = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(key.to_item()))
            .item(attr::idempotency::TASK, s(task.id.to_string()))
            .item(
                attr::idempotency::COPY,
                AttributeValue::M(copy_of(task_item)),
            )
            .item(attr::EXPIRES, n(expires.timestamp()))
            // An expired key that TTL has not removed yet may be claimed again.
            .condition_expression(format!(
                "attribute_not_exists({}) OR {} < :now",
                attr::PK,
                attr::EXPIRES
            ))
            .expression_attribute_values(":now", n(now.timestamp()))
            .send()
            .await;
        match put.map_err(conflict_or_unavailable) {
            Ok(_) => Ok(None),
            Err(StoreError::Conflict) => {
                let item = self.get_item(&key, true).await?.ok_or_else(|| {
                    StoreError::Unavailable("idempotency key vanished; retry".into())
                })?;
                Ok(Some(item))
            }
            Err(e) => Err(e),
        }
    }

    /// The task an idempotency key registered. If its registration died between the key
    /// and the task, the task is written now from the key's copy (it was never
    /// acknowledged, so this is safe), without a timer: the sweep arms it.
    pub(super) async fn registered_by(
        &self,
        tenant: &TenantId,
        key_item: &Item,
    ) -> Result<Task, StoreError> {
        let id: TaskId = get_s(key_item, attr::idempotency::TASK)?
            .parse()
            .map_err(|_| corrupt(attr::idempotency::TASK))?;
        match self.task(tenant, &id, true).await? {
            Some(task) => Ok(task),
            None => {
                let mut copy: Item = key_item
                    .get(attr::idempotency::COPY)
                    .and_then(|c| c.as_m().ok())
                    .cloned()
                    .ok_or_else(|| corrupt(attr::idempotency::COPY))?;
                let pk = self.task_pk(tenant, &id).await?;
                copy.extend(keys::task(&pk, &id).to_item());
                let mut task = task_from(&copy)?;
                task.timer_armed = false;
                match self
                    .put_new(item::new_item(&task, pk, self.retention)?)
                    .await
                {
                    Ok(()) | Err(StoreError::Conflict) => {}
                    Err(e) => return Err(e),
                }
                Ok(self.task(tenant, &id, true).await?.unwrap_or(task))
            }
        }
    }
}

/// The parts of a task item the idempotency key keeps a copy of (not its keys).
fn copy_of(item: &Item) -> Item {
    item.iter()
        .filter(|(k, _)| ![attr::PK, attr::SK, attr::DUE_SHARD, attr::DUE_AT].contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}
