//! Shared call slots, a flow's (its parallelism) or a tenant's at a destination (its
//! limit there): items `S#0` … `S#<limit - 1>` in the flow's or destination's partition,
//! each naming its holder and until when. A slot is taken with a conditional put on a
//! free or expired one, found by one consistent query of the partition's slots, and freed
//! with a delete conditional on its holder (this process remembers which slot each of its
//! holders took).

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};

use super::counters::{conditional, millis, sort_key, DynamoFlowCounters, KEEP};
use crate::attr;
use crate::keys;
use crate::sdk::items::{n, s, Item};
use boomerang_core::domain::{FlowKey, TenantId};
use boomerang_core::ports::{SlotHolder, StoreError};

/// Takes of a slot tried before the caller is told the flow is full.
const TAKE_TRIES: usize = 3;
/// How soon a caller waiting for a slot looks again: frees by other workers are not seen.
const LOOK_AGAIN: Duration = Duration::from_millis(100);

impl DynamoFlowCounters {
    /// Takes one of the `parallelism` slots of partition `pk` for `holder`.
    pub(super) async fn take_slot_in(
        &self,
        pk: String,
        parallelism: u32,
        holder: &SlotHolder,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
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

    /// Frees `holder`'s slot of partition `pk`.
    pub(super) async fn free_slot_in(
        &self,
        pk: String,
        holder: &SlotHolder,
    ) -> Result<(), StoreError> {
        // Only a holder of this process can free a slot, and it took it here.
        let Some(index) = self.held().remove(holder) else {
            return Ok(());
        };
        let delete = self
            .client
            .delete_item()
            .table_name(&self.table)
            .key(attr::PK, s(&pk))
            .key(attr::SK, s(keys::flow_slot(index)))
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

    pub(super) async fn slot_freed_in(&self, tenant: &TenantId, key: &FlowKey, at_most: Duration) {
        let pk = keys::flow_partition(tenant, key);
        let freed = self.freed().entry(pk.clone()).or_default().clone();
        let _ = tokio::time::timeout(at_most.min(LOOK_AGAIN), freed.notified()).await;
        drop(freed);
        let mut all = self.freed();
        // Nobody else waits on this flow here: forget it.
        if all.get(&pk).is_some_and(|f| Arc::strong_count(f) == 1) {
            all.remove(&pk);
        }
    }

    /// A free or expired slot index at `now`, from one consistent read of the partition's
    /// slots: the first free one from a place of the holder's own, so that takers at once
    /// mostly try different slots instead of racing for the lowest.
    async fn free_index(
        &self,
        pk: &str,
        parallelism: u32,
        holder: &SlotHolder,
        now: DateTime<Utc>,
    ) -> Result<Option<u32>, StoreError> {
        let mut taken = vec![false; parallelism as usize];
        for item in self.query_all(pk, keys::FLOW_SLOTS).await? {
            let index = sort_key(&item).and_then(keys::slot_index);
            let held_by = item.get(attr::flow::HOLDER).and_then(|v| v.as_s().ok());
            if held_by.is_some_and(|h| h == holder.as_str()) {
                return Ok(index);
            }
            if let Some(i) = index.filter(|i| (*i as usize) < taken.len()) {
                taken[i as usize] = held_past(&item, now);
            }
        }
        let start = spread(holder, taken.len());
        let free = (0..taken.len())
            .map(|i| (start + i) % taken.len())
            .find(|&i| !taken[i]);
        Ok(free.map(|i| i as u32))
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
            .item(attr::SK, s(keys::flow_slot(index)))
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

/// Where `holder` starts looking among `slots` slots.
fn spread(holder: &SlotHolder, slots: usize) -> usize {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    holder.as_str().hash(&mut hasher);
    usize::try_from(hasher.finish()).unwrap_or_default() % slots.max(1)
}

/// Whether a slot is held past `now`.
pub(super) fn held_past(item: &Item, now: DateTime<Utc>) -> bool {
    millis(item, attr::flow::HELD_UNTIL) > now.timestamp_millis()
}
