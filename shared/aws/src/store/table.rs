//! The store's handle on the table, and the reads and writes every kind of item shares: a
//! conditional put of a new item, a read of one item or one partition, and batched reads,
//! each leaving out what has expired. Finished tasks get `x` (TTL); DynamoDB deletes
//! expired items only eventually, so every read ignores them itself.

use std::collections::HashMap;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::Duration;

use aws_sdk_dynamodb::types::KeysAndAttributes;
use aws_sdk_dynamodb::Client;
use chrono::{DateTime, Utc};
use futures_util::stream::{self, StreamExt};

use super::item::task_from;
use crate::attr;
use crate::keys::{self, ItemKey};
use crate::sdk::cache::Cache;
use crate::sdk::items::{conflict_or_unavailable, corrupt, get_item, get_n, s, Item};
use crate::sdk::sdk_failure;
use crate::shards::{ShardPlan, PLAN_TTL};
use boomerang_core::clock::{Random, ThreadRandom};
use boomerang_core::domain::{Task, TaskId, TenantId};
use boomerang_core::ports::StoreError;

/// `BatchGetItem` requests in flight at once: a sweep's 8,000 keys are 80 requests.
const BATCH_GETS_AT_ONCE: usize = 8;
/// The first wait before keys DynamoDB left unprocessed are asked for again, doubled for
/// each round that leaves some again, up to [`UNPROCESSED_MAX_WAIT`]: unprocessed keys
/// mean the table (or a partition) is over its throughput, and asking again at once only
/// adds to it (AWS's guidance: back off exponentially, with jitter).
const UNPROCESSED_FIRST_WAIT: Duration = Duration::from_millis(50);
const UNPROCESSED_MAX_WAIT: Duration = Duration::from_secs(2);
/// Rounds of unprocessed keys before the read gives up (as unavailable): about 10 s of
/// waits in all, well inside a sweep's or a fire's time.
const UNPROCESSED_ROUNDS: u32 = 10;

#[derive(Clone)]
pub struct DynamoStore {
    pub(super) client: Client,
    pub(super) table: String,
    pub(super) retention: Duration,
    /// Named definitions' JSON, found or not, kept for a minute: a registration looks up
    /// the tenant's `default` policy and template, and most tenants have neither.
    pub(super) definitions: Arc<Cache<Option<String>>>,
    /// Tenants' partition plans, kept for [`PLAN_TTL`].
    plans: Arc<Cache<ShardPlan>>,
    /// Unreadable items the sweep passed over, not yet counted by the engine
    /// ([`boomerang_core::ports::SweepIndex::take_set_aside`]).
    pub(super) set_aside: Arc<AtomicUsize>,
}

impl DynamoStore {
    pub fn new(client: Client, table: impl Into<String>, retention: Duration) -> Self {
        Self {
            client,
            table: table.into(),
            retention,
            definitions: Arc::new(Cache::new()),
            plans: Arc::new(Cache::with_ttl(PLAN_TTL)),
            set_aside: Arc::default(),
        }
    }

    /// The tenant's partition plan (on its tenant item; the default if it has none).
    pub async fn shard_plan(&self, tenant: &TenantId) -> Result<ShardPlan, StoreError> {
        let key = tenant.as_str();
        if let Some(plan) = self.plans.get(key) {
            return Ok(plan);
        }
        let item = get_item(&self.client, &self.table, &keys::tenant(tenant), false)
            .await
            .map_err(StoreError::Unavailable)?;
        let plan =
            ShardPlan::from_attribute(item.as_ref().and_then(|i| i.get(attr::tenant::SHARDS)))?;
        self.plans.put(key.to_string(), plan.clone());
        Ok(plan)
    }

    /// The partition of a tenant's task: the shard by the tenant's plan
    /// ([`crate::shards`]).
    pub async fn task_pk(&self, tenant: &TenantId, id: &TaskId) -> Result<String, StoreError> {
        let shard = self.shard_plan(tenant).await?.shard_of(id);
        Ok(keys::task_partition(tenant, shard))
    }

    /// The key of a tenant's task item.
    pub(super) async fn task_key(
        &self,
        tenant: &TenantId,
        id: &TaskId,
    ) -> Result<ItemKey, StoreError> {
        Ok(keys::task(self.task_pk(tenant, id).await?, id))
    }

    /// Puts an item whose key is not taken yet.
    pub(super) async fn put_new(&self, item: Item) -> Result<(), StoreError> {
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

    /// One item, unless it has expired.
    pub(super) async fn get_item(
        &self,
        key: &ItemKey,
        consistent: bool,
    ) -> Result<Option<Item>, StoreError> {
        let item = get_item(&self.client, &self.table, key, consistent)
            .await
            .map_err(StoreError::Unavailable)?;
        Ok(item.filter(|i| !expired(i, Utc::now())))
    }

    /// A tenant's task, read consistently or not.
    pub(super) async fn task(
        &self,
        tenant: &TenantId,
        id: &TaskId,
        consistent: bool,
    ) -> Result<Option<Task>, StoreError> {
        let key = self.task_key(tenant, id).await?;
        let item = self.get_item(&key, consistent).await?;
        item.map(|i| task_from(&i)).transpose()
    }

    /// Every item of partition `pk` (whose sort key begins with `prefix`, if given), read
    /// consistently, in sort-key order.
    pub(super) async fn partition(
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

    /// The items of these keys (eventually consistent), in the order given, skipping any
    /// that are gone or expired: a hundred to a request, a few requests at once.
    pub(crate) async fn batch_items(&self, keys: Vec<ItemKey>) -> Result<Vec<Item>, StoreError> {
        let mut found: HashMap<ItemKey, Item> = HashMap::new();
        let chunks: Vec<Vec<Item>> = (keys.chunks(100))
            .map(|chunk| chunk.iter().map(ItemKey::to_item).collect())
            .collect();
        let mut reads = stream::iter(chunks)
            .map(|chunk| self.batch_get(chunk))
            .buffer_unordered(BATCH_GETS_AT_ONCE);
        while let Some(items) = reads.next().await {
            for item in items? {
                let k = ItemKey::of(&item).ok_or_else(|| corrupt(attr::PK))?;
                found.insert(k, item);
            }
        }
        Ok(keys.iter().filter_map(|k| found.remove(k)).collect())
    }

    /// The items of up to a hundred keys, in no order, asking again for any DynamoDB left
    /// unprocessed; without those gone or expired.
    async fn batch_get(&self, keys: Vec<Item>) -> Result<Vec<Item>, StoreError> {
        let mut items = Vec::new();
        let mut pending = Some(keys);
        let mut round = 0;
        while let Some(keys) = pending.take().filter(|k| !k.is_empty()) {
            if round > 0 {
                if round > UNPROCESSED_ROUNDS {
                    return Err(StoreError::Unavailable(
                        format!(
                            "{} keys still unprocessed after {UNPROCESSED_ROUNDS} rounds",
                            keys.len()
                        )
                        .into(),
                    ));
                }
                tokio::time::sleep(unprocessed_wait(round, ThreadRandom.draw())).await;
            }
            round += 1;
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

/// How long to wait before round `round` (from 1) of asking again for unprocessed keys:
/// "full jitter", a random share (`jitter`, 0 to 1) of an exponentially growing, bounded
/// wait, so that the readers a throttle hit together do not come back together.
fn unprocessed_wait(round: u32, jitter: f64) -> Duration {
    let ceiling = UNPROCESSED_FIRST_WAIT
        .saturating_mul(1 << (round - 1).min(16))
        .min(UNPROCESSED_MAX_WAIT);
    ceiling.mul_f64(jitter.clamp(0.0, 1.0))
}

/// Whether an item's expiry has passed (DynamoDB may not have removed it yet).
pub(super) fn expired(item: &Item, now: DateTime<Utc>) -> bool {
    get_n(item, attr::EXPIRES).is_ok_and(|t| t <= now.timestamp())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unprocessed_keys_are_asked_for_again_after_a_growing_bounded_jittered_wait() {
        assert_eq!(unprocessed_wait(1, 1.0), UNPROCESSED_FIRST_WAIT);
        assert_eq!(unprocessed_wait(2, 1.0), UNPROCESSED_FIRST_WAIT * 2);
        assert_eq!(unprocessed_wait(3, 0.5), UNPROCESSED_FIRST_WAIT * 2);
        assert_eq!(unprocessed_wait(30, 1.0), UNPROCESSED_MAX_WAIT);
        assert_eq!(unprocessed_wait(4, 0.0), Duration::ZERO);
        let all: Duration = (1..=UNPROCESSED_ROUNDS)
            .map(|r| unprocessed_wait(r, 1.0))
            .sum();
        assert!(all <= Duration::from_secs(12), "{all:?}");
    }
}
