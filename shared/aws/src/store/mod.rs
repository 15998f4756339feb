//! The DynamoDB task store: one table, every state change a conditional write, every item
//! laid out so that a write costs as few units as it can ([`item`]).
//!
//! Items (`pk`, `sk`):
//! - `T#<tenant>#<shard>`, `<task id>`: the task ([`item`]); the shard comes from the id
//!   and the tenant's partition plan ([`shards`]: 16 unless changed), so the id and its
//!   tenant find the task, and a tenant's tasks are listed from its shards, newest first,
//!   without an index;
//! - the same partition, `<task id>#A#<attempt, 10 digits>`: an attempt record past the
//!   embedded ones (right after its task: one query reads both);
//! - `I#<tenant>#<key>`, `I`: an idempotency key, the id of the task it registered, and a
//!   copy of that task's item (so a registration that died between the two writes is
//!   finished by the next repeat);
//! - `SWEEP`, `SWEEP`: where the sweep has read the `due` index up to ([`sweep`]);
//! - `P#<tenant>`, `<policy name>`: a named retry policy (`p`, JSON). Reads of a policy
//!   are cached for a minute, found or not: a registration looks up the tenant's
//!   `default` policy, and most tenants have none.
//!
//! Indexes, both keys only and sparse:
//! - `due` (sharded): `ds` + `dm`, set while the task has work no durable timer holds (the
//!   sweep reads it from a checkpoint), or an attempt left to its minute's bucket (the
//!   bucket's fire reads that minute: [`buckets`]);
//! - `by_key`: `bk` (tenant and business key) + `sk` (the task id, so newest first), set
//!   only on tasks that have a key.
//!
//! Finished tasks get `x` (TTL). DynamoDB deletes expired items only eventually, so every
//! read also ignores them.

mod buckets;
mod due_entry;
pub mod item;
mod schedules;
pub mod shards;
mod sweep;

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes, ReturnValue};
use aws_sdk_dynamodb::Client;
use chrono::{DateTime, Utc};
use futures_util::stream::{self, StreamExt};

use crate::attr;
use crate::sdk::cache::Cache;
use crate::sdk::items::{corrupt, get_item, get_n, get_s, n, s, Item};
use crate::sdk::sdk_failure;
use boomerang_core::domain::limits::{MAX_ATTEMPTS, MAX_UNLIMITED_DURATION};
use boomerang_core::domain::time::checked_add;
use boomerang_core::domain::{
    AttemptRecord, BusinessKey, Policy, PolicyName, Task, TaskId, TenantId,
};
use boomerang_core::ports::{
    CreateOutcome, DueWork, ListQuery, Page, PolicyStore, StoreError, SweepIndex, SweepMark,
    TaskStore,
};
use item::{
    attempt_sk, record_from, record_value, shard_pk, task_from, task_sk, EMBEDDED_ATTEMPTS,
};

pub use crate::attr::{DUE_INDEX, KEY_INDEX};
pub use buckets::BucketPage;
pub use item::{BUCKET_SHARDS, DUE_SHARDS};
pub use shards::ShardPlan;
/// How long an idempotency key is remembered, at most: never longer than the retention, so
/// that a key cannot outlive its task (a repeat would otherwise write the task again from
/// the key's copy).
pub const IDEMPOTENCY_WINDOW: Duration = Duration::from_secs(24 * 3600);

#[derive(Clone)]
pub struct DynamoStore {
    client: Client,
    table: String,
    retention: Duration,
    policies: std::sync::Arc<Cache<Option<Policy>>>,
    /// Tenants' partition plans, kept for [`shards::PLAN_TTL`].
    plans: std::sync::Arc<Cache<ShardPlan>>,
}

/// A refused condition as [`StoreError::Conflict`]; any other failure as unavailable.
pub(crate) fn conflict_or_unavailable<E>(e: aws_sdk_dynamodb::error::SdkError<E>) -> StoreError
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
            policies: std::sync::Arc::new(Cache::new()),
            plans: std::sync::Arc::new(Cache::with_ttl(shards::PLAN_TTL)),
        }
    }

    /// The tenant's partition plan (on its tenant item; the default if it has none).
    pub async fn shard_plan(&self, tenant: &TenantId) -> Result<ShardPlan, StoreError> {
        let key = tenant.as_str();
        if let Some(plan) = self.plans.get(key) {
            return Ok(plan);
        }
        let item = get_item(
            &self.client,
            &self.table,
            (crate::tenants::tenant_pk(tenant), "TENANT".to_string()),
            false,
        )
        .await
        .map_err(StoreError::Unavailable)?;
        let plan =
            ShardPlan::from_attribute(item.as_ref().and_then(|i| i.get(attr::tenant::SHARDS)))?;
        self.plans.put(key.to_string(), plan.clone());
        Ok(plan)
    }

    /// The partition of a tenant's task: `T#<tenant>#<shard, hex>`, the shard by the
    /// tenant's plan ([`shards`]).
    pub async fn task_pk(&self, tenant: &TenantId, id: &TaskId) -> Result<String, StoreError> {
        Ok(shard_pk(
            tenant,
            self.shard_plan(tenant).await?.shard_of(id),
        ))
    }

    pub(crate) async fn put_new(&self, item: Item) -> Result<(), StoreError> {
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression(format!("attribute_not_exists({})", attr::PK))
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
            .key(attr::PK, s(self.task_pk(&task.tenant, &task.id).await?))
            .key(attr::SK, s(task_sk(&task.id)))
            .condition_expression("#v = :expected")
            .expression_attribute_names("#v", attr::VERSION)
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
                .expression_attribute_names("#h", attr::HISTORY)
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

    /// One item, unless it has expired.
    pub(crate) async fn get_item(
        &self,
        key: (String, String),
        consistent: bool,
    ) -> Result<Option<Item>, StoreError> {
        let item = get_item(&self.client, &self.table, key, consistent)
            .await
            .map_err(StoreError::Unavailable)?;
        Ok(item.filter(|i| !expired(i, Utc::now())))
    }

    pub(crate) async fn task(
        &self,
        tenant: &TenantId,
        id: &TaskId,
        consistent: bool,
    ) -> Result<Option<Task>, StoreError> {
        let item = self
            .get_item((self.task_pk(tenant, id).await?, task_sk(id)), consistent)
            .await?;
        item.map(|i| task_from(&i)).transpose()
    }

    /// Every item of partition `pk` (whose sort key begins with `prefix`, if given), read
    /// consistently, in sort-key order.
    pub(crate) async fn partition(
        &self,
        pk: String,
        prefix: Option<String>,
    ) -> Result<Vec<Item>, StoreError> {
        let mut req = self
            .client
            .query()
            .table_name(&self.table)
            .expression_attribute_values(":pk", s(pk))
            .consistent_read(true);
        req = match prefix {
            Some(prefix) => req
                .key_condition_expression(format!(
                    "{} = :pk AND begins_with({}, :prefix)",
                    attr::PK,
                    attr::SK
                ))
                .expression_attribute_values(":prefix", s(prefix)),
            None => req.key_condition_expression(format!("{} = :pk", attr::PK)),
        };
        req.into_paginator()
            .items()
            .send()
            .try_collect()
            .await
            .map_err(|e| StoreError::Unavailable(sdk_failure(e)))
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
        let window = IDEMPOTENCY_WINDOW.min(self.retention);
        let expires = checked_add(now, window).unwrap_or(DateTime::<Utc>::MAX_UTC);
        let put = self
            .client
            .put_item()
            .table_name(&self.table)
            .item(attr::PK, s(pk.clone()))
            .item(attr::SK, s("I"))
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
                let item = self
                    .get_item((pk, "I".into()), true)
                    .await?
                    .ok_or_else(|| {
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
    async fn registered_by(&self, tenant: &TenantId, key_item: &Item) -> Result<Task, StoreError> {
        let id: TaskId = get_s(key_item, attr::idempotency::TASK)?
            .parse()
            .map_err(|_| corrupt(attr::idempotency::TASK))?;
        match self.get(tenant, &id).await? {
            Some(task) => Ok(task),
            None => {
                let mut copy: Item = key_item
                    .get(attr::idempotency::COPY)
                    .and_then(|c| c.as_m().ok())
                    .cloned()
                    .ok_or_else(|| corrupt(attr::idempotency::COPY))?;
                let pk = self.task_pk(tenant, &id).await?;
                copy.insert(attr::PK.into(), s(&pk));
                copy.insert(attr::SK.into(), s(task_sk(&id)));
                let mut task = task_from(&copy)?;
                task.timer_armed = false;
                match self
                    .put_new(item::new_item(&task, pk, self.retention)?)
                    .await
                {
                    Ok(()) | Err(StoreError::Conflict) => {}
                    Err(e) => return Err(e),
                }
                Ok(self.get(tenant, &id).await?.unwrap_or(task))
            }
        }
    }

    /// The items of these keys (eventually consistent), in the order given, skipping any
    /// that are gone or expired: a hundred to a request, a few requests at once.
    async fn batch_items(&self, keys: Vec<Item>) -> Result<Vec<Item>, StoreError> {
        let order: Vec<(String, String)> = keys.iter().filter_map(key_of_item).collect();
        let mut found: HashMap<(String, String), Item> = HashMap::new();
        let mut reads = stream::iter(keys.chunks(100).map(<[_]>::to_vec))
            .map(|chunk| self.batch_get(chunk))
            .buffer_unordered(BATCH_GETS_AT_ONCE);
        while let Some(items) = reads.next().await {
            for item in items? {
                let k = key_of_item(&item).ok_or_else(|| corrupt(attr::PK))?;
                found.insert(k, item);
            }
        }
        Ok(order.into_iter().filter_map(|k| found.remove(&k)).collect())
    }

    /// The items of up to a hundred keys, in no order, asking again for any DynamoDB left
    /// unprocessed; without those gone or expired.
    async fn batch_get(&self, keys: Vec<Item>) -> Result<Vec<Item>, StoreError> {
        let mut items = Vec::new();
        let mut pending = Some(keys);
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
            let got = (out.responses.unwrap_or_default())
                .remove(&self.table)
                .unwrap_or_default();
            items.extend(got.into_iter().filter(|i| !expired(i, now)));
            pending = out
                .unprocessed_keys
                .and_then(|mut u| u.remove(&self.table))
                .map(|k| k.keys);
        }
        Ok(items)
    }
}

/// `BatchGetItem` requests in flight at once: a sweep's 8,000 keys are 80 requests.
const BATCH_GETS_AT_ONCE: usize = 8;

/// An item's (or a key's) partition and sort key.
fn key_of_item(item: &Item) -> Option<(String, String)> {
    let part = |k: &str| item.get(k).and_then(|v| v.as_s().ok()).cloned();
    Some((part(attr::PK)?, part(attr::SK)?))
}

#[async_trait]
impl TaskStore for DynamoStore {
    async fn create(&self, task: &Task) -> Result<CreateOutcome, StoreError> {
        let item = item::new_item(
            task,
            self.task_pk(&task.tenant, &task.id).await?,
            self.retention,
        )?;
        if let Some(key) = &task.idempotency_key {
            if let Some(winner) = self.claim_idempotency_key(task, key, &item).await? {
                let existing = self.registered_by(&task.tenant, &winner).await?;
                return Ok(CreateOutcome::Existing(Box::new(existing)));
            }
        }
        self.put_new(item).await?;
        Ok(CreateOutcome::Created)
    }

    async fn get(&self, tenant: &TenantId, id: &TaskId) -> Result<Option<Task>, StoreError> {
        self.task(tenant, id, true).await
    }

    async fn peek(&self, tenant: &TenantId, id: &TaskId) -> Result<Option<Task>, StoreError> {
        self.task(tenant, id, false).await
    }

    /// The task item (with its embedded records) and any later records, in one query.
    async fn details(
        &self,
        tenant: &TenantId,
        id: &TaskId,
    ) -> Result<Option<(Task, Vec<AttemptRecord>)>, StoreError> {
        let items = self
            .partition(self.task_pk(tenant, id).await?, Some(task_sk(id)))
            .await?;
        let sk = task_sk(id);
        let Some(task_item) = items
            .iter()
            .find(|i| get_s(i, attr::SK).is_ok_and(|k| k == sk))
            .filter(|i| !expired(i, Utc::now()))
        else {
            return Ok(None);
        };
        let task = task_from(task_item)?;
        let mut records = Vec::new();
        for item in &items {
            match item.get(attr::HISTORY) {
                Some(AttributeValue::L(list)) => {
                    for r in list {
                        records.push(record_from(*id, r)?);
                    }
                }
                _ if get_s(item, attr::SK)?.contains("#A#") => {
                    records.push(record_from(*id, &AttributeValue::M(item.clone()))?)
                }
                _ => {}
            }
        }
        records.sort_by_key(|r| r.number);
        records.dedup_by_key(|r| r.number);
        Ok(Some((task, records)))
    }

    async fn update(&self, task: &Task, expected_version: u64) -> Result<(), StoreError> {
        self.write_state(task, expected_version, None).await?;
        self.sync_attempt_expiry(task).await;
        Ok(())
    }

    async fn finish_attempt(
        &self,
        record: &AttemptRecord,
        next: &Task,
        expected_version: u64,
    ) -> Result<(), StoreError> {
        if record.number > EMBEDDED_ATTEMPTS {
            self.put_attempt(&next.tenant, record).await?;
        }
        self.write_state(next, expected_version, Some(record))
            .await?;
        self.sync_attempt_expiry(next).await;
        Ok(())
    }

    async fn put_attempt(
        &self,
        tenant: &TenantId,
        record: &AttemptRecord,
    ) -> Result<(), StoreError> {
        let mut item = match record_value(record) {
            AttributeValue::M(m) => m,
            _ => unreachable!("a record is a map"),
        };
        let pk = self.task_pk(tenant, &record.task_id).await?;
        item.insert(attr::PK.into(), s(pk));
        item.insert(
            attr::SK.into(),
            s(attempt_sk(&record.task_id, record.number)),
        );
        if record.number > MAX_ATTEMPTS {
            // Only a round without an attempt limit gets here, and it lasts at most
            // MAX_UNLIMITED_DURATION: the record outlives its task by no more than that.
            let keep = MAX_UNLIMITED_DURATION.saturating_add(self.retention);
            let until = checked_add(record.started_at, keep).unwrap_or(DateTime::<Utc>::MAX_UTC);
            item.insert(attr::EXPIRES.into(), n(until.timestamp()));
        }
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .send()
            .await
            .map_err(|e| StoreError::Unavailable(sdk_failure(e)))?;
        Ok(())
    }

    async fn attempts(
        &self,
        tenant: &TenantId,
        id: &TaskId,
    ) -> Result<Vec<AttemptRecord>, StoreError> {
        Ok(self
            .details(tenant, id)
            .await?
            .map(|(_, records)| records)
            .unwrap_or_default())
    }

    /// Reads the tenant's shards side by side, a few tasks at a time each, and merges them
    /// newest first: a page costs about its own size in reads, not sixteen times it.
    async fn list(&self, tenant: &TenantId, query: &ListQuery) -> Result<Page, StoreError> {
        if let Some(key) = &query.key {
            return self.list_by_key(tenant, key, query).await;
        }
        let want = query.limit as usize + 1;
        let partitions = self.shard_plan(tenant).await?.partitions();
        let chunk = (want / partitions as usize + 2) as i32;
        let mut shards: Vec<ShardRead> = (0..partitions)
            .map(|shard| ShardRead::new(shard_pk(tenant, shard)))
            .collect();
        let mut tasks = Vec::with_capacity(want);
        while tasks.len() < want {
            let refills = shards
                .iter_mut()
                .filter(|s| s.ahead.is_empty() && !s.done)
                .map(|s| self.read_shard(s, query, chunk));
            futures_util::future::try_join_all(refills).await?;
            let newest = shards
                .iter_mut()
                .filter(|s| !s.ahead.is_empty())
                .max_by_key(|s| s.ahead.front().map(|t| t.id));
            match newest.and_then(|s| s.ahead.pop_front()) {
                Some(task) => tasks.push(task),
                None => break,
            }
        }
        Ok(Page::from_overfetch(tasks, query.limit))
    }
}

#[async_trait]
impl SweepIndex for DynamoStore {
    async fn due(&self, cutoff: DateTime<Utc>, limit: usize) -> Result<DueWork, StoreError> {
        sweep::due(self, cutoff, limit).await
    }

    async fn swept(&self, mark: &SweepMark) -> Result<(), StoreError> {
        sweep::swept(self, mark).await
    }
}

#[async_trait]
impl PolicyStore for DynamoStore {
    async fn put_policy(
        &self,
        tenant: &TenantId,
        name: &PolicyName,
        policy: &Policy,
    ) -> Result<(), StoreError> {
        let doc = serde_json::to_string(policy).map_err(|e| StoreError::Corrupt(e.into()))?;
        self.client
            .put_item()
            .table_name(&self.table)
            .item(attr::PK, s(policy_pk(tenant)))
            .item(attr::SK, s(name.as_str()))
            .item(attr::POLICY, s(doc))
            .send()
            .await
            .map_err(|e| StoreError::Unavailable(sdk_failure(e)))?;
        self.policies.forget(&policy_key(tenant, name));
        Ok(())
    }

    async fn policy(
        &self,
        tenant: &TenantId,
        name: &PolicyName,
    ) -> Result<Option<Policy>, StoreError> {
        let key = policy_key(tenant, name);
        if let Some(cached) = self.policies.get(&key) {
            return Ok(cached);
        }
        let item = self
            .get_item((policy_pk(tenant), name.to_string()), true)
            .await?;
        let policy = item.as_ref().map(policy_from).transpose()?;
        self.policies.put(key, policy.clone());
        Ok(policy)
    }

    async fn delete_policy(
        &self,
        tenant: &TenantId,
        name: &PolicyName,
    ) -> Result<bool, StoreError> {
        let out = self
            .client
            .delete_item()
            .table_name(&self.table)
            .key(attr::PK, s(policy_pk(tenant)))
            .key(attr::SK, s(name.as_str()))
            .return_values(ReturnValue::AllOld)
            .send()
            .await
            .map_err(|e| StoreError::Unavailable(sdk_failure(e)))?;
        self.policies.forget(&policy_key(tenant, name));
        Ok(out.attributes.is_some_and(|a| !a.is_empty()))
    }

    async fn policies(&self, tenant: &TenantId) -> Result<Vec<(PolicyName, Policy)>, StoreError> {
        self.partition(policy_pk(tenant), None)
            .await?
            .iter()
            .map(|item| {
                let name =
                    PolicyName::parse(get_s(item, attr::SK)?).map_err(|_| corrupt(attr::SK))?;
                Ok((name, policy_from(item)?))
            })
            .collect()
    }
}

/// One shard's side of a list: tasks read ahead (newest first) and where to read on.
struct ShardRead {
    pk: String,
    ahead: VecDeque<Task>,
    start: Option<Item>,
    done: bool,
}

impl ShardRead {
    fn new(pk: String) -> Self {
        Self {
            pk,
            ahead: VecDeque::new(),
            start: None,
            done: false,
        }
    }
}

impl DynamoStore {
    /// Attempt records past the embedded ones are items of their own, so they expire with
    /// their task: they take its expiry when it finishes, and lose it again when a redrive
    /// gives the task a new round. Only a task with that many attempts pays for this.
    /// Records past [`MAX_ATTEMPTS`] (a round without an attempt limit) carry an expiry of
    /// their own from the start instead (see `put_attempt`). This is housekeeping after
    /// the task's write: a failure is logged, and leaves the records a while longer.
    async fn sync_attempt_expiry(&self, task: &Task) {
        let expiry = item::expiry(task, self.retention);
        let redriven = task.status == boomerang_core::domain::Status::Scheduled
            && task.round_start > 1
            && task.attempt == task.round_start;
        if task.attempt <= EMBEDDED_ATTEMPTS || (expiry.is_none() && !redriven) {
            return;
        }
        let pk = match self.task_pk(&task.tenant, &task.id).await {
            Ok(pk) => pk,
            Err(e) => {
                tracing::warn!(task = %task.id, error = %e, "attempt records keep their old expiry");
                return;
            }
        };
        let last = task.attempt.min(MAX_ATTEMPTS);
        let updates = (EMBEDDED_ATTEMPTS + 1..=last).map(|number| {
            let req = self
                .client
                .update_item()
                .table_name(&self.table)
                .key(attr::PK, s(&pk))
                .key(attr::SK, s(attempt_sk(&task.id, number)))
                .condition_expression(format!("attribute_exists({})", attr::PK))
                .expression_attribute_names("#x", attr::EXPIRES);
            let req = match expiry {
                Some(x) => req
                    .update_expression("SET #x = :x")
                    .expression_attribute_values(":x", n(x)),
                None => req.update_expression("REMOVE #x"),
            };
            async move {
                match req.send().await.map_err(conflict_or_unavailable) {
                    // No record of that number (the attempt a redrive has not made yet).
                    Ok(_) | Err(StoreError::Conflict) => Ok(()),
                    Err(e) => Err(e),
                }
            }
        });
        use futures_util::{StreamExt, TryStreamExt};
        let synced = futures_util::stream::iter(updates)
            .buffer_unordered(10)
            .try_collect::<Vec<()>>()
            .await;
        if let Err(e) = synced {
            tracing::warn!(task = %task.id, error = %e, "attempt records keep their old expiry");
        }
    }

    /// A page of the tenant's tasks with a business key: from the `by_key` index, then the
    /// tasks themselves (eventually consistent, like every list).
    async fn list_by_key(
        &self,
        tenant: &TenantId,
        key: &BusinessKey,
        query: &ListQuery,
    ) -> Result<Page, StoreError> {
        let want = query.limit as usize + 1;
        let mut tasks: Vec<Task> = Vec::new();
        let mut start: Option<Item> = None;
        loop {
            let mut req = self
                .client
                .query()
                .table_name(&self.table)
                .index_name(KEY_INDEX)
                .scan_index_forward(false)
                .expression_attribute_values(":k", s(item::key_partition(tenant, key)))
                .set_exclusive_start_key(start)
                .limit(want as i32);
            req = match query.cursor {
                Some(c) => req
                    .key_condition_expression(format!(
                        "{} = :k AND {} < :c",
                        attr::BUSINESS_KEY,
                        attr::SK
                    ))
                    .expression_attribute_values(":c", s(task_sk(&c))),
                None => req.key_condition_expression(format!("{} = :k", attr::BUSINESS_KEY)),
            };
            let out = req
                .send()
                .await
                .map_err(|e| StoreError::Unavailable(sdk_failure(e)))?;
            let keys: Vec<Item> = out
                .items()
                .iter()
                .map(|i| {
                    [(attr::PK, i.get(attr::PK)), (attr::SK, i.get(attr::SK))]
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

    /// Reads on in one shard until it has a task in hand or has none left.
    async fn read_shard(
        &self,
        shard: &mut ShardRead,
        query: &ListQuery,
        chunk: i32,
    ) -> Result<(), StoreError> {
        while shard.ahead.is_empty() && !shard.done {
            let mut req = self
                .client
                .query()
                .table_name(&self.table)
                .scan_index_forward(false)
                .expression_attribute_values(":pk", s(&shard.pk))
                .expression_attribute_names("#st", attr::STATUS)
                .set_exclusive_start_key(shard.start.take())
                .limit(chunk);
            req = match query.cursor {
                Some(c) => req
                    .key_condition_expression(format!("{} = :pk AND {} < :c", attr::PK, attr::SK))
                    .expression_attribute_values(":c", s(task_sk(&c))),
                None => req.key_condition_expression(format!("{} = :pk", attr::PK)),
            };
            // Attempt items share the partition; only task items have a status.
            req = match query.status {
                Some(status) => req
                    .filter_expression("#st = :st")
                    .expression_attribute_values(":st", s(status.as_str())),
                None => req.filter_expression("attribute_exists(#st)"),
            };
            let out = req
                .send()
                .await
                .map_err(|e| StoreError::Unavailable(sdk_failure(e)))?;
            let now = Utc::now();
            for item in out.items().iter().filter(|i| !expired(i, now)) {
                shard.ahead.push_back(task_from(item)?);
            }
            shard.start = out.last_evaluated_key;
            shard.done = shard.start.is_none();
        }
        Ok(())
    }
}

/// The parts of a task item the idempotency key keeps a copy of (not its keys).
fn copy_of(item: &Item) -> Item {
    item.iter()
        .filter(|(k, _)| ![attr::PK, attr::SK, attr::DUE_SHARD, attr::DUE_AT].contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn policy_pk(tenant: &TenantId) -> String {
    format!("P#{tenant}")
}

fn policy_key(tenant: &TenantId, name: &PolicyName) -> String {
    format!("{tenant}#{name}")
}

fn policy_from(item: &Item) -> Result<Policy, StoreError> {
    serde_json::from_str(get_s(item, attr::POLICY)?).map_err(|e| StoreError::Corrupt(e.into()))
}

fn idem_pk(tenant: &TenantId, key: &str) -> String {
    format!("I#{tenant}#{key}")
}

fn expired(item: &Item, now: DateTime<Utc>) -> bool {
    get_n(item, attr::EXPIRES).is_ok_and(|t| t <= now.timestamp())
}
