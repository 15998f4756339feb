//! The DynamoDB task store: one table, every state change a conditional write, every item
//! laid out so that a write costs as few units as it can ([`item`]).
//!
//! Items (`pk`, `sk`):
//! - `T#<task id>`, `T`: the task ([`item`]);
//! - `T#<task id>`, `A#<attempt, 10 digits>`: an attempt record past the embedded ones;
//! - `I#<tenant>#<key>`, `I`: an idempotency key, the id of the task it registered, and a
//!   copy of that task's item (so a registration that died between the two writes is
//!   finished by the next repeat);
//! - `SWEEP`, `SWEEP`: where the sweep has read the `due` index up to ([`sweep`]).
//!
//! Indexes, both keys only:
//! - `due` (sparse, sharded): `ds` + `dm`, set while the task has work no durable timer
//!   holds; the sweep reads it from a checkpoint.
//! - `by_tenant`: `tn` + `pk` (the task id, so newest first), for listing.
//!
//! Finished tasks get `x` (TTL). DynamoDB deletes expired items only eventually, so every
//! read also ignores them.

pub mod item;
mod sweep;

use std::collections::HashMap;
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes, ReturnValue};
use aws_sdk_dynamodb::Client;
use chrono::{DateTime, Utc};

use crate::aws::items::{corrupt, get_item, get_n, get_s, n, s, Item};
use crate::aws::sdk_failure;
use crate::domain::time::checked_add;
use crate::domain::{AttemptRecord, Task, TaskId, TenantId};
use crate::ports::{CreateOutcome, DueWork, ListQuery, Page, StoreError, SweepMark, TaskStore};
use item::{attempt_sk, record_from, record_value, task_from, task_pk, EMBEDDED_ATTEMPTS, TASK_SK};

pub use item::DUE_SHARDS;
pub const DUE_INDEX: &str = "due";
pub const TENANT_INDEX: &str = "by_tenant";
/// The time-to-live attribute (epoch seconds) of finished tasks and idempotency keys.
pub const TTL_ATTRIBUTE: &str = "x";
/// How long an idempotency key is remembered (it must be shorter than the retention).
pub const IDEMPOTENCY_WINDOW: Duration = Duration::from_secs(24 * 3600);

#[derive(Clone)]
pub struct DynamoStore {
    client: Client,
    table: String,
    retention: Duration,
}

fn conflict_or_unavailable<E>(e: aws_sdk_dynamodb::error::SdkError<E>) -> StoreError
where
    E: std::error::Error + Send + Sync + 'static + aws_sdk_dynamodb::error::ProvideErrorMetadata,
{
    if e.as_service_error()
        .and_then(|se| se.code())
        .is_some_and(|c| c == "ConditionalCheckFailedException")
    {
        StoreError::Conflict
    } else {
        StoreError::Unavailable(sdk_failure(e))
    }
}

impl DynamoStore {
    pub fn new(client: Client, table: impl Into<String>, retention: Duration) -> Self {
        Self {
            client,
            table: table.into(),
            retention,
        }
    }

    async fn put_new(&self, item: Item) -> Result<(), StoreError> {
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(pk)")
            .send()
            .await
            .map(|_| ())
            .map_err(conflict_or_unavailable)
    }

    /// Writes the task's state (and, with `record`, appends that attempt record) if the
    /// stored version is `expected`. The request attribute is not rewritten.
    async fn write_state(
        &self,
        task: &Task,
        expected: u64,
        record: Option<&AttemptRecord>,
    ) -> Result<(), StoreError> {
        let state = item::state(task, self.retention);
        let mut sets = Vec::new();
        let mut req = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(task_pk(&task.id)))
            .key("sk", s(TASK_SK))
            .condition_expression("#v = :expected")
            .expression_attribute_names("#v", "v")
            .expression_attribute_values(":expected", n(expected))
            .return_values(ReturnValue::None);
        for (i, (name, value)) in state.set.into_iter().enumerate() {
            sets.push(format!("#s{i} = :s{i}"));
            req = req
                .expression_attribute_names(format!("#s{i}"), name)
                .expression_attribute_values(format!(":s{i}"), value);
        }
        if let Some(r) = record.filter(|r| r.number <= EMBEDDED_ATTEMPTS) {
            sets.push("#h = list_append(if_not_exists(#h, :none), :record)".into());
            req = req
                .expression_attribute_names("#h", "h")
                .expression_attribute_values(":none", AttributeValue::L(vec![]))
                .expression_attribute_values(":record", AttributeValue::L(vec![record_value(r)]));
        }
        let mut expression = format!("SET {}", sets.join(", "));
        if !state.remove.is_empty() {
            let names: Vec<String> = state
                .remove
                .iter()
                .enumerate()
                .map(|(i, _)| format!("#r{i}"))
                .collect();
            for (i, name) in state.remove.iter().enumerate() {
                req = req.expression_attribute_names(format!("#r{i}"), *name);
            }
            expression.push_str(&format!(" REMOVE {}", names.join(", ")));
        }
        req.update_expression(expression)
            .send()
            .await
            .map(|_| ())
            .map_err(conflict_or_unavailable)
    }

    async fn get_item(&self, pk: String, sk: &str) -> Result<Option<Item>, StoreError> {
        let item = get_item(&self.client, &self.table, pk, sk)
            .await
            .map_err(StoreError::Unavailable)?;
        Ok(item.filter(|i| !expired(i, Utc::now())))
    }

    /// Claims an idempotency key for `task`; on loss returns the winner's key item.
    async fn claim_idempotency_key(
        &self,
        task: &Task,
        key: &str,
        task_item: &Item,
    ) -> Result<Option<Item>, StoreError> {
        let pk = idem_pk(&task.tenant, key);
        let now = Utc::now();
        let expires = checked_add(now, IDEMPOTENCY_WINDOW).unwrap_or(DateTime::<Utc>::MAX_UTC);
        let put = self
            .client
            .put_item()
            .table_name(&self.table)
            .item("pk", s(pk.clone()))
            .item("sk", s("I"))
            .item("t", s(task.id.to_string()))
            .item("c", AttributeValue::M(copy_of(task_item)))
            .item("x", n(expires.timestamp()))
            // An expired key that TTL has not removed yet may be claimed again.
            .condition_expression("attribute_not_exists(pk) OR x < :now")
            .expression_attribute_values(":now", n(now.timestamp()))
            .send()
            .await;
        match put.map_err(conflict_or_unavailable) {
            Ok(_) => Ok(None),
            Err(StoreError::Conflict) => {
                let item = self.get_item(pk, "I").await?.ok_or_else(|| {
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
    async fn registered_by(&self, key_item: &Item) -> Result<Task, StoreError> {
        let id: TaskId = get_s(key_item, "t")?.parse().map_err(|_| corrupt("t"))?;
        match self.get(&id).await? {
            Some(task) => Ok(task),
            None => {
                let mut copy: Item = key_item
                    .get("c")
                    .and_then(|c| c.as_m().ok())
                    .cloned()
                    .ok_or_else(|| corrupt("c"))?;
                copy.insert("pk".into(), s(task_pk(&id)));
                copy.insert("sk".into(), s(TASK_SK));
                let mut task = task_from(&copy)?;
                task.timer_armed = false;
                match self.put_new(item::new_item(&task, self.retention)?).await {
                    Ok(()) | Err(StoreError::Conflict) => {}
                    Err(e) => return Err(e),
                }
                Ok(self.get(&id).await?.unwrap_or(task))
            }
        }
    }

    /// The items of these keys (eventually consistent), in the order given, skipping any
    /// that are gone or expired.
    async fn batch_items(&self, keys: Vec<Item>) -> Result<Vec<Item>, StoreError> {
        let mut found: HashMap<String, Item> = HashMap::new();
        let order: Vec<String> = keys
            .iter()
            .filter_map(|k| k.get("pk").and_then(|v| v.as_s().ok()).cloned())
            .collect();
        for chunk in keys.chunks(100) {
            let mut pending = Some(chunk.to_vec());
            while let Some(keys) = pending.take().filter(|k| !k.is_empty()) {
                let out = self
                    .client
                    .batch_get_item()
                    .request_items(
                        &self.table,
                        KeysAndAttributes::builder()
                            .set_keys(Some(keys))
                            .build()
                            .map_err(|e| StoreError::Unavailable(e.into()))?,
                    )
                    .send()
                    .await
                    .map_err(|e| StoreError::Unavailable(sdk_failure(e)))?;
                let now = Utc::now();
                let items = out
                    .responses
                    .unwrap_or_default()
                    .remove(&self.table)
                    .unwrap_or_default();
                for item in items.into_iter().filter(|i| !expired(i, now)) {
                    let pk = get_s(&item, "pk")?.to_string();
                    found.insert(pk, item);
                }
                pending = out
                    .unprocessed_keys
                    .and_then(|mut u| u.remove(&self.table))
                    .map(|k| k.keys);
            }
        }
        Ok(order
            .into_iter()
            .filter_map(|pk| found.remove(&pk))
            .collect())
    }
}

#[async_trait]
impl TaskStore for DynamoStore {
    async fn create(&self, task: &Task) -> Result<CreateOutcome, StoreError> {
        let item = item::new_item(task, self.retention)?;
        if let Some(key) = &task.idempotency_key {
            if let Some(winner) = self.claim_idempotency_key(task, key, &item).await? {
                let existing = self.registered_by(&winner).await?;
                return Ok(CreateOutcome::Existing(Box::new(existing)));
            }
        }
        self.put_new(item).await?;
        Ok(CreateOutcome::Created)
    }

    async fn get(&self, id: &TaskId) -> Result<Option<Task>, StoreError> {
        match self.get_item(task_pk(id), TASK_SK).await? {
            Some(item) => Ok(Some(task_from(&item)?)),
            None => Ok(None),
        }
    }

    async fn update(&self, task: &Task, expected_version: u64) -> Result<(), StoreError> {
        self.write_state(task, expected_version, None).await
    }

    async fn finish_attempt(
        &self,
        record: &AttemptRecord,
        next: &Task,
        expected_version: u64,
    ) -> Result<(), StoreError> {
        if record.number > EMBEDDED_ATTEMPTS {
            self.put_attempt(record).await?;
        }
        self.write_state(next, expected_version, Some(record)).await
    }

    async fn put_attempt(&self, record: &AttemptRecord) -> Result<(), StoreError> {
        let mut item = match record_value(record) {
            AttributeValue::M(m) => m,
            _ => unreachable!("a record is a map"),
        };
        item.insert("pk".into(), s(task_pk(&record.task_id)));
        item.insert("sk".into(), s(attempt_sk(record.number)));
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .send()
            .await
            .map_err(|e| StoreError::Unavailable(sdk_failure(e)))?;
        Ok(())
    }

    async fn attempts(&self, id: &TaskId) -> Result<Vec<AttemptRecord>, StoreError> {
        // The task item (with its embedded records) and any later records, in one read.
        let items: Vec<Item> = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression("pk = :pk")
            .expression_attribute_values(":pk", s(task_pk(id)))
            .consistent_read(true)
            .into_paginator()
            .items()
            .send()
            .try_collect()
            .await
            .map_err(|e| StoreError::Unavailable(sdk_failure(e)))?;
        let mut records = Vec::new();
        for item in &items {
            match item.get("h") {
                Some(AttributeValue::L(list)) => {
                    for r in list {
                        records.push(record_from(*id, r)?);
                    }
                }
                _ if get_s(item, "sk")?.starts_with("A#") => {
                    records.push(record_from(*id, &AttributeValue::M(item.clone()))?)
                }
                _ => {}
            }
        }
        records.sort_by_key(|r| r.number);
        records.dedup_by_key(|r| r.number);
        Ok(records)
    }

    async fn list(&self, tenant: &TenantId, query: &ListQuery) -> Result<Page, StoreError> {
        let want = query.limit as usize + 1;
        let mut tasks: Vec<Task> = Vec::new();
        let mut start: Option<Item> = None;
        loop {
            let mut req = self
                .client
                .query()
                .table_name(&self.table)
                .index_name(TENANT_INDEX)
                .scan_index_forward(false)
                .expression_attribute_values(":t", s(tenant.as_str()))
                .set_exclusive_start_key(start)
                .limit(want as i32);
            req = match query.cursor {
                Some(c) => req
                    .key_condition_expression("tn = :t AND pk < :c")
                    .expression_attribute_values(":c", s(task_pk(&c))),
                None => req.key_condition_expression("tn = :t"),
            };
            let out = req
                .send()
                .await
                .map_err(|e| StoreError::Unavailable(sdk_failure(e)))?;
            let keys: Vec<Item> = out
                .items()
                .iter()
                .map(|i| {
                    [("pk", i.get("pk")), ("sk", i.get("sk"))]
                        .into_iter()
                        .filter_map(|(k, v)| v.map(|v| (k.to_string(), v.clone())))
                        .collect()
                })
                .collect();
            for item in self.batch_items(keys).await? {
                let task = task_from(&item)?;
                if query.status.is_none_or(|s| task.status == s) {
                    tasks.push(task);
                }
            }
            start = out.last_evaluated_key;
            if tasks.len() >= want || start.is_none() {
                tasks.truncate(want);
                return Ok(Page::from_overfetch(tasks, query.limit));
            }
        }
    }

    async fn due(&self, cutoff: DateTime<Utc>, limit: usize) -> Result<DueWork, StoreError> {
        sweep::due(self, cutoff, limit).await
    }

    async fn swept(&self, mark: &SweepMark) -> Result<(), StoreError> {
        sweep::swept(self, mark).await
    }
}

/// The parts of a task item the idempotency key keeps a copy of (not its keys).
fn copy_of(item: &Item) -> Item {
    item.iter()
        .filter(|(k, _)| !matches!(k.as_str(), "pk" | "sk" | "ds" | "dm"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn idem_pk(tenant: &TenantId, key: &str) -> String {
    format!("I#{tenant}#{key}")
}

fn expired(item: &Item, now: DateTime<Utc>) -> bool {
    get_n(item, "x").is_ok_and(|t| t <= now.timestamp())
}
