//! A page of a tenant's tasks: read from the tenant's task partitions side by side, or,
//! for a business key, from the `by_key` index.

use std::collections::VecDeque;

use chrono::Utc;

use super::item::task_from;
use super::table::{expired, DynamoStore};
use crate::attr::{self, KEY_INDEX};
use crate::keys::{self, ItemKey};
use crate::sdk::items::{s, Item};
use crate::sdk::sdk_failure;
use boomerang_core::domain::{BusinessKey, Task, TenantId};
use boomerang_core::ports::{ListQuery, Page, StoreError};

/// The most items one query of a shard reads: a filter on the state applies after
/// DynamoDB's `Limit`, so a shard where few tasks are in that state is read in queries
/// that grow (doubling from the page's share) up to this.
const MOST_PER_QUERY: i32 = 1_000;

/// One shard's side of a list: tasks read ahead (newest first) and where to read on.
struct ShardRead {
    pk: String,
    ahead: VecDeque<Task>,
    start: Option<Item>,
    done: bool,
    /// Items the next query reads.
    limit: i32,
}

impl ShardRead {
    fn new(pk: String, limit: i32) -> Self {
        Self {
            pk,
            ahead: VecDeque::new(),
            start: None,
            done: false,
            limit,
        }
    }
}

impl DynamoStore {
    /// Reads the tenant's shards side by side, a few tasks at a time each, and merges them
    /// newest first: a page costs about its own size in reads, not sixteen times it.
    pub(super) async fn list_tasks(
        &self,
        tenant: &TenantId,
        query: &ListQuery,
    ) -> Result<Page, StoreError> {
        if let Some(key) = &query.key {
            return self.list_by_key(tenant, key, query).await;
        }
        let want = query.limit as usize + 1;
        let partitions = self.shard_plan(tenant).await?.partitions();
        let chunk = (want / partitions as usize + 2) as i32;
        let mut shards: Vec<ShardRead> = (0..partitions)
            .map(|shard| ShardRead::new(keys::task_partition(tenant, shard), chunk))
            .collect();
        let mut tasks = Vec::with_capacity(want);
        while tasks.len() < want {
            let refills = shards
                .iter_mut()
                .filter(|s| s.ahead.is_empty() && !s.done)
                .map(|s| self.read_shard(s, query));
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
                .expression_attribute_values(":k", s(keys::business_key(tenant, key)))
                .set_exclusive_start_key(start)
                .limit(want as i32);
            req = match query.cursor {
                Some(c) => req
                    .key_condition_expression(format!(
                        "{} = :k AND {} < :c",
                        attr::BUSINESS_KEY,
                        attr::SK
                    ))
                    .expression_attribute_values(":c", s(keys::task_sk(&c))),
                None => req.key_condition_expression(format!("{} = :k", attr::BUSINESS_KEY)),
            };
            let out = req
                .send()
                .await
                .map_err(|e| StoreError::Unavailable(sdk_failure(e)))?;
            let found = out.items().iter().filter_map(ItemKey::of).collect();
            for item in self.batch_items(found).await? {
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

    /// Reads on in one shard until it has a task in hand or has none left; a query that
    /// finds none doubles the next one's size.
    async fn read_shard(&self, shard: &mut ShardRead, query: &ListQuery) -> Result<(), StoreError> {
        while shard.ahead.is_empty() && !shard.done {
            let mut req = self
                .client
                .query()
                .table_name(&self.table)
                .scan_index_forward(false)
                .expression_attribute_values(":pk", s(&shard.pk))
                .expression_attribute_names("#st", attr::STATUS)
                .set_exclusive_start_key(shard.start.take())
                .limit(shard.limit);
            req = match query.cursor {
                Some(c) => req
                    .key_condition_expression(format!("{} = :pk AND {} < :c", attr::PK, attr::SK))
                    .expression_attribute_values(":c", s(keys::task_sk(&c))),
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
            if shard.ahead.is_empty() {
                shard.limit = (shard.limit * 2).min(MOST_PER_QUERY);
            }
        }
        Ok(())
    }
}
