//! Flow limits kept in the table, so that they hold across every delivery function
//! instance (and every `serve --backend aws` process).
//!
//! - A rate window is one item, `W#<window start>`: each ask to start is an `ADD` of one
//!   that answers the count, so every worker learns its place in the window. One write
//!   unit per ask.
//! - Parallelism slots are items `S#0` … `S#<parallelism - 1>`, each naming its holder and
//!   until when: a slot is taken with a conditional put on a free or expired one, found by
//!   one consistent query of the flow's slots, and freed with a delete conditional on its
//!   holder (this process remembers which slot each of its holders took). A limited
//!   delivery costs one query (a read unit or two) and two write units.
//!
//! Both carry the table's expiry, so a crashed holder's slot and old windows go away.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_dynamodb::types::ReturnValue;
use aws_sdk_dynamodb::Client;
use chrono::{DateTime, Utc};
use tokio::sync::Notify;

use crate::attr;
use crate::sdk::cache::Cache;
use crate::sdk::items::{corrupt, n, s, Item};
use crate::sdk::sdk_failure;
use crate::store::conflict_or_unavailable;
use boomerang_core::domain::{AttemptRef, FlowKey, TenantId};
use boomerang_core::ports::{FlowCounters, FlowFigures, SlotHolder, StoreError};

mod pauses;
mod waiting;

/// Takes of a slot tried before the caller is told the flow is full.
const TAKE_TRIES: usize = 3;
/// How long expired items are kept before the table's expiry removes them.
pub(super) const KEEP: chrono::Duration = chrono::Duration::hours(1);
/// How soon a caller waiting for a slot looks again: frees by other workers are not seen.
const LOOK_AGAIN: Duration = Duration::from_millis(100);
/// How long a process trusts what it read of a flow's pause.
const PAUSE_SEEN: Duration = Duration::from_secs(1);

pub struct DynamoFlowCounters {
    client: Client,
    table: String,
    /// Per flow, wakes a task of this process waiting for a slot when this process frees
    /// one (frees by other workers are only seen by looking again).
    freed: Mutex<HashMap<String, Arc<Notify>>>,
    /// The slot each holder of this process took, so that freeing it is one delete.
    held: Mutex<HashMap<SlotHolder, u32>>,
    /// Per flow, the slot this process freed last while a task of it waited here: the
    /// waiter tries that one first, without reading the flow's slots.
    just_freed: Mutex<HashMap<String, u32>>,
    /// When this process last wrote each tenant's flow item (see [`waiting`]).
    seen: Mutex<HashMap<String, std::time::Instant>>,
    /// Whether a flow is paused, as read at most a second ago.
    paused: Cache<bool>,
}

impl DynamoFlowCounters {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
            freed: Mutex::default(),
            held: Mutex::default(),
            just_freed: Mutex::default(),
            seen: Mutex::default(),
            paused: Cache::with_ttl(PAUSE_SEEN),
        }
    }

    fn freed(&self) -> MutexGuard<'_, HashMap<String, Arc<Notify>>> {
        self.freed.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn held(&self) -> MutexGuard<'_, HashMap<SlotHolder, u32>> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn just_freed(&self) -> MutexGuard<'_, HashMap<String, u32>> {
        self.just_freed.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn seen(&self) -> MutexGuard<'_, HashMap<String, std::time::Instant>> {
        self.seen.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Every item of partition `pk` whose sort key starts with `prefix`, read consistently.
    async fn query_all(&self, pk: &str, prefix: &str) -> Result<Vec<Item>, StoreError> {
        let mut items = Vec::new();
        let mut start = None;
        loop {
            let answer = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression("#pk = :pk AND begins_with(#sk, :prefix)")
                .expression_attribute_names("#pk", attr::PK)
                .expression_attribute_names("#sk", attr::SK)
                .expression_attribute_values(":pk", s(pk))
                .expression_attribute_values(":prefix", s(prefix))
                .consistent_read(true)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(|e| StoreError::Unavailable(sdk_failure(e)))?;
            items.extend(answer.items.unwrap_or_default());
            start = answer.last_evaluated_key;
            if start.is_none() {
                return Ok(items);
            }
        }
    }

    /// A free or expired slot index at `now`, from one consistent read of the flow's slots.
    async fn free_index(
        &self,
        pk: &str,
        parallelism: u32,
        holder: &SlotHolder,
        now: DateTime<Utc>,
    ) -> Result<Option<u32>, StoreError> {
        let mut taken = vec![false; parallelism as usize];
        for item in self.query_all(pk, "S#").await? {
            let index = slot_index(&item);
            let held_by = item.get(attr::flow::HOLDER).and_then(|v| v.as_s().ok());
            if held_by.is_some_and(|h| h == holder.as_str()) {
                return Ok(index);
            }
            if let Some(i) = index.filter(|i| (*i as usize) < taken.len()) {
                taken[i as usize] = waiting::held_past(&item, now);
            }
        }
        Ok(taken.iter().position(|t| !t).map(|i| i as u32))
    }

    /// Puts `holder` in slot `index` if it is free or expired at `now` (or already its).
    async fn put_slot(
        &self,
        pk: &str,
        index: u32,
        holder: &SlotHolder,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let put = self
            .client
            .put_item()
            .table_name(&self.table)
            .item(attr::PK, s(pk))
            .item(attr::SK, s(format!("S#{index}")))
            .item(attr::flow::HOLDER, s(holder.as_str()))
            .item(attr::flow::HELD_UNTIL, n(until.timestamp_millis()))
            .item(attr::EXPIRES, n((until + KEEP).timestamp()))
            .condition_expression("attribute_not_exists(#h) OR #hu < :now OR #h = :me")
            .expression_attribute_names("#h", attr::flow::HOLDER)
            .expression_attribute_names("#hu", attr::flow::HELD_UNTIL)
            .expression_attribute_values(":now", n(now.timestamp_millis()))
            .expression_attribute_values(":me", s(holder.as_str()))
            .send()
            .await;
        conditional(put)
    }
}

#[async_trait]
impl FlowCounters for DynamoFlowCounters {
    async fn ask_start(
        &self,
        tenant: &TenantId,
        key: &FlowKey,
        window: DateTime<Utc>,
    ) -> Result<u64, StoreError> {
        let answer = self
            .client
            .update_item()
            .table_name(&self.table)
            .key(attr::PK, s(flow_pk(tenant, key)))
            .key(attr::SK, s(format!("W#{}", window.timestamp_millis())))
            .update_expression("ADD #n :one SET #x = :expires")
            .expression_attribute_names("#n", attr::flow::ASKED)
            .expression_attribute_names("#x", attr::EXPIRES)
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":expires", n((window + KEEP).timestamp()))
            .return_values(ReturnValue::UpdatedNew)
            .send()
            .await
            .map_err(|e| StoreError::Unavailable(sdk_failure(e)))?;
        let asked = (answer.attributes())
            .and_then(|a| a.get(attr::flow::ASKED))
            .and_then(|v| v.as_n().ok())
            .and_then(|v| v.parse().ok());
        asked.ok_or_else(|| corrupt(attr::flow::ASKED))
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
        let pk = flow_pk(tenant, key);
        let hint = self.just_freed().remove(&pk);
        if let Some(index) = hint.filter(|i| *i < parallelism) {
            if self.put_slot(&pk, index, holder, now, until).await? {
                self.held().insert(holder.clone(), index);
                return Ok(true);
            }
        }
        for _ in 0..TAKE_TRIES {
            let Some(index) = self.free_index(&pk, parallelism, holder, now).await? else {
                return Ok(false);
            };
            // Another worker may take the same slot between the read and the put.
            if self.put_slot(&pk, index, holder, now, until).await? {
                self.held().insert(holder.clone(), index);
                return Ok(true);
            }
        }
        Ok(false)
    }

    async fn free_slot(
        &self,
        tenant: &TenantId,
        key: &FlowKey,
        holder: &SlotHolder,
    ) -> Result<(), StoreError> {
        // Only a holder of this process can free a slot, and it took it here.
        let Some(index) = self.held().remove(holder) else {
            return Ok(());
        };
        let pk = flow_pk(tenant, key);
        let delete = self
            .client
            .delete_item()
            .table_name(&self.table)
            .key(attr::PK, s(&pk))
            .key(attr::SK, s(format!("S#{index}")))
            .condition_expression("#h = :me")
            .expression_attribute_names("#h", attr::flow::HOLDER)
            .expression_attribute_values(":me", s(holder.as_str()))
            .send()
            .await;
        // Refused: the slot expired and another took it; nothing of ours is left.
        if conditional(delete)? {
            if let Some(freed) = self.freed().get(&pk) {
                self.just_freed().insert(pk.clone(), index);
                freed.notify_one();
            }
        }
        Ok(())
    }

    async fn slot_freed(&self, tenant: &TenantId, key: &FlowKey, at_most: Duration) {
        let pk = flow_pk(tenant, key);
        let freed = self.freed().entry(pk.clone()).or_default().clone();
        let _ = tokio::time::timeout(at_most.min(LOOK_AGAIN), freed.notified()).await;
        drop(freed);
        let mut all = self.freed();
        // Nobody else waits on this flow here: forget it.
        if all.get(&pk).is_some_and(|f| Arc::strong_count(f) == 1) {
            all.remove(&pk);
        }
    }

    async fn note_waiting(
        &self,
        tenant: &TenantId,
        key: &FlowKey,
        attempt: &AttemptRef,
        (_, until): (DateTime<Utc>, DateTime<Utc>),
    ) -> Result<(), StoreError> {
        self.put_waiting(tenant, key, attempt, until).await
    }

    async fn take_waiting(
        &self,
        tenant: &TenantId,
        key: &FlowKey,
        now: DateTime<Utc>,
    ) -> Result<Vec<AttemptRef>, StoreError> {
        self.take_waiting_items(tenant, key, now).await
    }

    async fn figures(
        &self,
        tenant: &TenantId,
        now: DateTime<Utc>,
    ) -> Result<Vec<FlowFigures>, StoreError> {
        self.figures_of(tenant, now).await
    }

    async fn flow_figures(
        &self,
        tenant: &TenantId,
        key: &FlowKey,
        now: DateTime<Utc>,
    ) -> Result<FlowFigures, StoreError> {
        self.flow_figures_of(tenant, key.clone(), now).await
    }
}

/// A flow's partition: `F#<tenant>#<key>`.
fn flow_pk(tenant: &TenantId, key: &FlowKey) -> String {
    format!("F#{tenant}#{key}")
}

/// A tenant's flows' partition: `FL#<tenant>`.
fn tenant_pk(tenant: &TenantId) -> String {
    format!("FL#{tenant}")
}

fn slot_index(item: &Item) -> Option<u32> {
    let sk = item.get(attr::SK).and_then(|v| v.as_s().ok())?;
    sk.strip_prefix("S#")?.parse().ok()
}

/// True if a conditional write went through, false if its condition refused it.
fn conditional<T, E>(
    sent: Result<T, aws_sdk_dynamodb::error::SdkError<E>>,
) -> Result<bool, StoreError>
where
    E: std::error::Error + Send + Sync + 'static + aws_sdk_dynamodb::error::ProvideErrorMetadata,
{
    match sent.map_err(conflict_or_unavailable) {
        Ok(_) => Ok(true),
        Err(StoreError::Conflict) => Ok(false),
        Err(e) => Err(e),
    }
}
