//! The DynamoDB task store: one table, every state change a conditional write.
//!
//! Items (`pk`, `sk`):
//! - `T#<task id>`, `TASK`: the task document plus the attributes the indexes use;
//! - `T#<task id>`, `A#<attempt, 10 digits>`: one attempt record;
//! - `I#<tenant>#<key>`, `IDEM`: an idempotency key and the whole task it registered.
//!
//! Indexes:
//! - `due` (sparse, sharded): `due_shard` + `due_ms`, present only while the task has
//!   [`Task::pending_work`] (`due_reason` is its kind, `due_ms` when it is due). The sweeper
//!   queries each shard for `due_ms <= cutoff`.
//! - `by_tenant`: `tenant` + `tenant_sk` (the task id, so newest first), for listing.
//!
//! Finished tasks get `expires_at` (TTL). DynamoDB deletes expired items only eventually, so
//! every read also ignores them.

use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_dynamodb::Client;
use chrono::{DateTime, Utc};

use super::codec::{decode, encode};
use crate::aws::items::{corrupt, get_item, get_n, get_s, n, s, Item};
use crate::aws::sdk_failure;
use crate::domain::time::checked_add;
use crate::domain::{AttemptRecord, AttemptRef, PendingWork, Task, TaskId, TenantId, WorkKind};
use crate::ports::{CreateOutcome, ListQuery, Page, StoreError, TaskStore};

/// Partitions of the `due` index: spreads sweeper reads and hot due-times.
pub const DUE_SHARDS: u32 = 8;
pub const DUE_INDEX: &str = "due";
pub const TENANT_INDEX: &str = "by_tenant";
/// How long an idempotency key is remembered (it must be shorter than the retention).
pub const IDEMPOTENCY_WINDOW: Duration = Duration::from_secs(24 * 3600);
/// Attempt records outlive their task's longest possible life plus retention.
const ATTEMPT_RETENTION: Duration = Duration::from_secs(400 * 24 * 3600);

#[derive(Clone)]
pub struct DynamoStore {
    client: Client,
    table: String,
    retention: Duration,
}

impl DynamoStore {
    pub fn new(client: Client, table: impl Into<String>, retention: Duration) -> Self {
        Self {
            client,
            table: table.into(),
            retention,
        }
    }

    fn task_item(&self, task: &Task) -> Result<Item, StoreError> {
        let mut item = Item::new();
        item.insert("pk".into(), s(task_pk(&task.id)));
        item.insert("sk".into(), s("TASK"));
        item.insert("tenant".into(), s(task.tenant.as_str()));
        item.insert("tenant_sk".into(), s(task.id.to_string()));
        item.insert("status".into(), s(task.status.as_str()));
        item.insert("version".into(), n(task.version));
        item.insert("attempt".into(), n(task.attempt));
        item.insert("doc".into(), s(encode(task)?));
        if let Some(work) = task.pending_work() {
            item.insert("due_shard".into(), s(shard_of(&task.id)));
            item.insert("due_ms".into(), n(work.due_at.timestamp_millis()));
            item.insert("due_reason".into(), s(work.kind.as_str()));
        }
        if task.status.is_terminal() && !task.dead_letter_pending {
            // The retention is bounded where it is configured; the sum is checked anyway.
            let expires =
                checked_add(task.updated_at, self.retention).unwrap_or(DateTime::<Utc>::MAX_UTC);
            item.insert("expires_at".into(), n(expires.timestamp()));
        }
        Ok(item)
    }

    async fn put_task(&self, task: &Task, condition: Condition) -> Result<(), StoreError> {
        let mut req = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(self.task_item(task)?));
        req = match condition {
            Condition::New => req.condition_expression("attribute_not_exists(pk)"),
            Condition::Version(v) => req
                .condition_expression("version = :v")
                .expression_attribute_values(":v", n(v)),
        };
        match req.send().await {
            Ok(_) => Ok(()),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|se| se.is_conditional_check_failed_exception()) =>
            {
                Err(StoreError::Conflict)
            }
            Err(e) => Err(StoreError::Unavailable(sdk_failure(e))),
        }
    }

    async fn get_item(&self, pk: String, sk: &str) -> Result<Option<Item>, StoreError> {
        let item = get_item(&self.client, &self.table, pk, sk)
            .await
            .map_err(StoreError::Unavailable)?;
        Ok(item.filter(|i| !expired(i, Utc::now())))
    }

    /// Claims an idempotency key for `task`; on loss returns the winner's task id and doc.
    async fn claim_idempotency_key(
        &self,
        task: &Task,
        key: &str,
    ) -> Result<Option<(TaskId, String)>, StoreError> {
        let pk = idem_pk(&task.tenant, key);
        let now = Utc::now();
        let expires = checked_add(now, IDEMPOTENCY_WINDOW).unwrap_or(DateTime::<Utc>::MAX_UTC);
        let put = self
            .client
            .put_item()
            .table_name(&self.table)
            .item("pk", s(pk.clone()))
            .item("sk", s("IDEM"))
            .item("task_id", s(task.id.to_string()))
            .item("doc", s(encode(task)?))
            .item("expires_at", n(expires.timestamp()))
            // An expired key that TTL has not removed yet may be claimed again.
            .condition_expression("attribute_not_exists(pk) OR expires_at < :now")
            .expression_attribute_values(":now", n(now.timestamp()))
            .send()
            .await;
        match put {
            Ok(_) => Ok(None),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|se| se.is_conditional_check_failed_exception()) =>
            {
                let item = self.get_item(pk, "IDEM").await?.ok_or_else(|| {
                    StoreError::Unavailable("idempotency key vanished; retry".into())
                })?;
                let id = get_s(&item, "task_id")?
                    .parse()
                    .map_err(|_| corrupt("task_id"))?;
                Ok(Some((id, get_s(&item, "doc")?.to_string())))
            }
            Err(e) => Err(StoreError::Unavailable(sdk_failure(e))),
        }
    }
}

enum Condition {
    New,
    Version(u64),
}

#[async_trait]
impl TaskStore for DynamoStore {
    async fn create(&self, task: &Task) -> Result<CreateOutcome, StoreError> {
        if let Some(key) = &task.idempotency_key {
            if let Some((winner, doc)) = self.claim_idempotency_key(task, key).await? {
                if let Some(existing) = self.get(&winner).await? {
                    return Ok(CreateOutcome::Existing(Box::new(existing)));
                }
                // The winner stored its key but died before its task: finish its write from
                // the copy kept with the key (it was never acknowledged, so this is safe).
                let original: Task = decode(&doc)?;
                match self.put_task(&original, Condition::New).await {
                    Ok(()) | Err(StoreError::Conflict) => {}
                    Err(e) => return Err(e),
                }
                let stored = self.get(&winner).await?.unwrap_or(original);
                return Ok(CreateOutcome::Existing(Box::new(stored)));
            }
        }
        self.put_task(task, Condition::New).await?;
        Ok(CreateOutcome::Created)
    }

    async fn get(&self, id: &TaskId) -> Result<Option<Task>, StoreError> {
        match self.get_item(task_pk(id), "TASK").await? {
            Some(item) => Ok(Some(decode(get_s(&item, "doc")?)?)),
            None => Ok(None),
        }
    }

    async fn update(&self, task: &Task, expected_version: u64) -> Result<(), StoreError> {
        self.put_task(task, Condition::Version(expected_version))
            .await
    }

    async fn put_attempt(&self, record: &AttemptRecord) -> Result<(), StoreError> {
        let expires =
            checked_add(record.started_at, ATTEMPT_RETENTION).unwrap_or(DateTime::<Utc>::MAX_UTC);
        self.client
            .put_item()
            .table_name(&self.table)
            .item("pk", s(task_pk(&record.task_id)))
            .item("sk", s(format!("A#{:010}", record.number)))
            .item("doc", s(encode(record)?))
            .item("expires_at", n(expires.timestamp()))
            .send()
            .await
            .map_err(|e| StoreError::Unavailable(sdk_failure(e)))?;
        Ok(())
    }

    async fn attempts(&self, id: &TaskId) -> Result<Vec<AttemptRecord>, StoreError> {
        let items = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression("pk = :pk AND begins_with(sk, :a)")
            .expression_attribute_values(":pk", s(task_pk(id)))
            .expression_attribute_values(":a", s("A#"))
            .consistent_read(true)
            .into_paginator()
            .items()
            .send()
            .try_collect()
            .await
            .map_err(|e| StoreError::Unavailable(sdk_failure(e)))?;
        items
            .iter()
            .map(|item| decode(get_s(item, "doc")?))
            .collect()
    }

    async fn list(&self, tenant: &TenantId, query: &ListQuery) -> Result<Page, StoreError> {
        let want = query.limit as usize + 1;
        let mut tasks: Vec<Task> = Vec::new();
        let mut start: Option<Item> = None;
        let now = Utc::now().timestamp();
        loop {
            let mut req = self
                .client
                .query()
                .table_name(&self.table)
                .index_name(TENANT_INDEX)
                .scan_index_forward(false)
                .expression_attribute_values(":t", s(tenant.as_str()))
                .expression_attribute_values(":now", n(now))
                .set_exclusive_start_key(start)
                .limit(want as i32);
            let mut filter = "(attribute_not_exists(expires_at) OR expires_at > :now)".to_string();
            req = match query.cursor {
                Some(c) => req
                    .key_condition_expression("tenant = :t AND tenant_sk < :c")
                    .expression_attribute_values(":c", s(c.to_string())),
                None => req.key_condition_expression("tenant = :t"),
            };
            if let Some(status) = query.status {
                filter.push_str(" AND #st = :st");
                req = req
                    .expression_attribute_names("#st", "status")
                    .expression_attribute_values(":st", s(status.as_str()));
            }
            let out = req
                .filter_expression(filter)
                .send()
                .await
                .map_err(|e| StoreError::Unavailable(sdk_failure(e)))?;
            for item in out.items() {
                tasks.push(decode(get_s(item, "doc")?)?);
            }
            start = out.last_evaluated_key;
            if tasks.len() >= want || start.is_none() {
                tasks.truncate(want);
                return Ok(Page::from_overfetch(tasks, query.limit));
            }
        }
    }

    async fn due(
        &self,
        cutoff: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<PendingWork>, StoreError> {
        let mut due = Vec::new();
        for shard in 0..DUE_SHARDS {
            let mut start: Option<Item> = None;
            loop {
                let out = self
                    .client
                    .query()
                    .table_name(&self.table)
                    .index_name(DUE_INDEX)
                    .key_condition_expression("due_shard = :s AND due_ms <= :c")
                    .expression_attribute_values(":s", s(format!("S{shard}")))
                    .expression_attribute_values(":c", n(cutoff.timestamp_millis()))
                    .set_exclusive_start_key(start)
                    .send()
                    .await
                    .map_err(|e| StoreError::Unavailable(sdk_failure(e)))?;
                for item in out.items() {
                    due.push(pending_work(item)?);
                    if due.len() >= limit {
                        return Ok(due);
                    }
                }
                start = out.last_evaluated_key;
                if start.is_none() {
                    break;
                }
            }
        }
        Ok(due)
    }
}

/// An entry of the `due` index back into the domain's terms.
fn pending_work(item: &Item) -> Result<PendingWork, StoreError> {
    let id = get_s(item, "pk")?
        .strip_prefix("T#")
        .and_then(|id| id.parse().ok())
        .ok_or_else(|| corrupt("pk"))?;
    let attempt = u32::try_from(get_n(item, "attempt")?).map_err(|_| corrupt("attempt"))?;
    Ok(PendingWork {
        attempt: AttemptRef::new(id, attempt),
        kind: WorkKind::parse(get_s(item, "due_reason")?).ok_or_else(|| corrupt("due_reason"))?,
        due_at: DateTime::from_timestamp_millis(get_n(item, "due_ms")?)
            .ok_or_else(|| corrupt("due_ms"))?,
    })
}

pub fn task_pk(id: &TaskId) -> String {
    format!("T#{id}")
}

fn idem_pk(tenant: &TenantId, key: &str) -> String {
    format!("I#{tenant}#{key}")
}

fn shard_of(id: &TaskId) -> String {
    // The ULID's last character is random: an even spread over the shards.
    let last = id.to_string().bytes().last().unwrap_or(0) as u32;
    format!("S{}", last % DUE_SHARDS)
}

fn expired(item: &Item, now: DateTime<Utc>) -> bool {
    get_n(item, "expires_at").is_ok_and(|t| t <= now.timestamp())
}
