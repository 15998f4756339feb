//! The flow counters' handle on the table, what one process remembers of its flows, and
//! the reads and writes its parts share.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use aws_sdk_dynamodb::Client;
use tokio::sync::Notify;

use crate::attr;
use crate::sdk::cache::Cache;
use crate::sdk::items::{conflict_or_unavailable, s, Item};
use crate::sdk::sdk_failure;
use boomerang_core::ports::{SlotHolder, StoreError};

/// How long expired items are kept before the table's expiry removes them.
pub(super) const KEEP: chrono::Duration = chrono::Duration::hours(1);
/// How long a process trusts what it read of a flow's pause.
const PAUSE_SEEN: Duration = Duration::from_secs(1);

pub struct DynamoFlowCounters {
    pub(super) client: Client,
    pub(super) table: String,
    /// Per flow, wakes a task of this process waiting for a slot when this process frees
    /// one (frees by other workers are only seen by looking again).
    freed: Mutex<HashMap<String, Arc<Notify>>>,
    /// The slot each holder of this process took, so that freeing it is one delete.
    held: Mutex<HashMap<SlotHolder, u32>>,
    /// Per flow, the slot this process freed last while a task of it waited here: the
    /// waiter tries that one first, without reading the flow's slots.
    just_freed: Mutex<HashMap<String, u32>>,
    /// When this process last wrote each tenant's flow item (see [`super::waiting`]).
    seen: Mutex<HashMap<String, std::time::Instant>>,
    /// Whether a flow is paused, as read at most a second ago.
    pub(super) paused: Cache<bool>,
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

    pub(super) fn freed(&self) -> MutexGuard<'_, HashMap<String, Arc<Notify>>> {
        self.freed.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn held(&self) -> MutexGuard<'_, HashMap<SlotHolder, u32>> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn just_freed(&self) -> MutexGuard<'_, HashMap<String, u32>> {
        self.just_freed.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn seen(&self) -> MutexGuard<'_, HashMap<String, std::time::Instant>> {
        self.seen.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Every item of partition `pk` whose sort key starts with `prefix`, read consistently.
    pub(super) async fn query_all(&self, pk: &str, prefix: &str) -> Result<Vec<Item>, StoreError> {
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
}

/// An item's sort key, if it has one.
pub(super) fn sort_key(item: &Item) -> Option<&str> {
    item.get(attr::SK)?.as_s().ok().map(String::as_str)
}

/// A number attribute (epoch milliseconds, an attempt), 0 when absent.
pub(super) fn millis(item: &Item, name: &str) -> i64 {
    (item.get(name))
        .and_then(|v| v.as_n().ok())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// True if a conditional write went through, false if its condition refused it.
pub(super) fn conditional<T, E>(
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
