//! The sweep's reads of the `due` index, from a checkpoint.
//!
//! Entries are not removed when a task moves on (that would cost an index write on the
//! happy path); instead the sweep remembers, per shard, the last entry it handled, and
//! reads only what lies after it and up to its cutoff. That is safe because an entry is
//! always written due at or after the writer's present, and the cutoff lags the present:
//! no entry appears behind the checkpoint. An entry read is looked at once: its task's
//! current pending work is returned if no durable timer holds it. A task item that cannot
//! be read is set aside: logged with its key, counted, and passed over with the rest.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

use async_trait::async_trait;
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, Utc};
use futures_util::future::join_all;
use serde::{Deserialize, Serialize};

use super::due_entry::DueEntry;
use super::item::pending_work;
use super::table::DynamoStore;
use crate::attr::{self, DUE_INDEX};
use crate::keys::{self, ItemKey};
use crate::sdk::items::{conflict_or_unavailable, corrupt, get_item, get_n, n, s};
use crate::sdk::sdk_failure;
use boomerang_core::ports::{DueWork, StoreError, SweepIndex, SweepMark};

#[async_trait]
impl SweepIndex for DynamoStore {
    async fn due(&self, cutoff: DateTime<Utc>, limit: usize) -> Result<DueWork, StoreError> {
        due(self, cutoff, limit).await
    }

    async fn swept(&self, mark: &SweepMark) -> Result<(), StoreError> {
        swept(self, mark).await
    }

    fn take_set_aside(&self) -> usize {
        self.set_aside.swap(0, Ordering::Relaxed)
    }
}

/// Where each shard's read stopped, and the checkpoint version it started from.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct Checkpoint {
    version: i64,
    /// Shard → the last entry handled.
    after: BTreeMap<String, DueEntry>,
}

async fn load(store: &DynamoStore) -> Result<Checkpoint, StoreError> {
    let item = get_item(&store.client, &store.table, &keys::sweep_checkpoint(), true)
        .await
        .map_err(StoreError::Unavailable)?;
    let Some(item) = item else {
        return Ok(Checkpoint::default());
    };
    let text = item
        .get(attr::checkpoint::POSITIONS)
        .and_then(|v| v.as_s().ok())
        .ok_or_else(|| corrupt(attr::checkpoint::POSITIONS))?;
    let mut checkpoint: Checkpoint =
        serde_json::from_str(text).map_err(|e| StoreError::Corrupt(e.into()))?;
    checkpoint.version = get_n(&item, attr::checkpoint::VERSION)?;
    Ok(checkpoint)
}

/// Reads every sweep shard side by side (a shard's pages follow one another), from the
/// checkpoint up to `cutoff`, at most `limit` entries a shard (and no more than
/// [`keys::SWEEP_PAGE`]); then the tasks they name.
async fn due(
    store: &DynamoStore,
    cutoff: DateTime<Utc>,
    limit: usize,
) -> Result<DueWork, StoreError> {
    let mut checkpoint = load(store).await?;
    let shards: Vec<String> = keys::sweep_shards().collect();
    let reads = join_all(shards.iter().map(|shard| {
        let after = checkpoint.after.get(shard);
        read_shard(store, shard, after, cutoff, limit.min(keys::SWEEP_PAGE))
    }))
    .await;
    let mut keys = Vec::new();
    for (shard, read) in shards.into_iter().zip(reads) {
        let entries = read?;
        keys.extend(entries.iter().map(DueEntry::task_key));
        if let Some(last) = entries.into_iter().last() {
            checkpoint.after.insert(shard, last);
        }
    }
    let mut work = Vec::new();
    for item in store.batch_items(keys).await? {
        match pending_work(&item) {
            Ok(pending) => work.extend(pending),
            // One unreadable item must not stop every pass: it is passed over (the
            // checkpoint moves past its entry with the rest), logged with its key for an
            // operator, and counted.
            Err(e) => {
                tracing::error!(key = ?ItemKey::of(&item), error = %e, "unreadable task item in the sweep's range set aside");
                store.set_aside.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    let mark = serde_json::to_string(&checkpoint).map_err(|e| StoreError::Corrupt(e.into()))?;
    Ok(DueWork {
        work,
        mark: Some(SweepMark(mark)),
    })
}

/// Up to `limit` entries of one shard after `after`, due by `cutoff`, page after page.
async fn read_shard(
    store: &DynamoStore,
    shard: &str,
    after: Option<&DueEntry>,
    cutoff: DateTime<Utc>,
    limit: usize,
) -> Result<Vec<DueEntry>, StoreError> {
    let mut start = after.map(|e| e.start_key(shard));
    let mut entries = Vec::new();
    loop {
        let out = store
            .client
            .query()
            .table_name(&store.table)
            .index_name(DUE_INDEX)
            .key_condition_expression(format!(
                "{} = :s AND {} <= :c",
                attr::DUE_SHARD,
                attr::DUE_AT
            ))
            .expression_attribute_values(":s", s(shard))
            .expression_attribute_values(":c", n(cutoff.timestamp_millis()))
            .set_exclusive_start_key(start)
            .limit((limit - entries.len()).clamp(1, 1000) as i32)
            .send()
            .await
            .map_err(|e| StoreError::Unavailable(sdk_failure(e)))?;
        for entry in out.items() {
            entries.push(DueEntry::of(entry)?);
        }
        start = out.last_evaluated_key;
        if start.is_none() || entries.len() >= limit {
            return Ok(entries);
        }
    }
}

/// Moves the checkpoint to `mark`, unless another sweep moved it meanwhile (then this
/// sweep's reads are simply done again by the next one: arming twice is harmless).
async fn swept(store: &DynamoStore, mark: &SweepMark) -> Result<(), StoreError> {
    let checkpoint: Checkpoint =
        serde_json::from_str(&mark.0).map_err(|e| StoreError::Corrupt(e.into()))?;
    let mut req = store
        .client
        .put_item()
        .table_name(&store.table)
        .set_item(Some(keys::sweep_checkpoint().to_item()))
        .item(
            attr::checkpoint::POSITIONS,
            AttributeValue::S(mark.0.clone()),
        )
        .item(attr::checkpoint::VERSION, n(checkpoint.version + 1));
    req = if checkpoint.version == 0 {
        req.condition_expression(format!("attribute_not_exists({})", attr::PK))
    } else {
        req.condition_expression(format!("{} = :cv", attr::checkpoint::VERSION))
            .expression_attribute_values(":cv", n(checkpoint.version))
    };
    match req.send().await.map_err(conflict_or_unavailable) {
        Ok(_) | Err(StoreError::Conflict) => Ok(()),
        Err(e) => Err(e),
    }
}
