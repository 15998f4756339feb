//! The custody of a minute's bucket: the record that its schedule exists (so the fleet
//! creates it once: [`crate::bucket_schedules`]), the record that its fire began, and how
//! far the sweeper has checked that every minute with entries had one. A minute whose fire never
//! came (its schedule lost, its invocation dropped) is found by the sweeper and fired then
//! ([`crate::buckets::BucketFire::check_fires`]).

use chrono::{DateTime, Utc};

use async_trait::async_trait;

use super::buckets::minute_end;
use super::table::DynamoStore;
use crate::attr;
use crate::bucket_schedules::ScheduledMinutes;
use crate::keys::{self, BUCKET_SHARDS};
use crate::sdk::items::{get_item, get_n, n};
use crate::sdk::sdk_failure;
use boomerang_core::ports::StoreError;
use futures_util::future::join_all;

/// How long a minute's records are kept (TTL): well past the time the sweeper checks them.
const FIRED_KEPT: chrono::Duration = chrono::Duration::days(2);

fn unavailable<E: std::error::Error + Send + Sync + 'static>(e: E) -> StoreError {
    StoreError::Unavailable(sdk_failure(e))
}

#[async_trait]
impl ScheduledMinutes for DynamoStore {
    /// An eventually consistent read: a record not seen yet costs one `CreateSchedule`
    /// that finds the schedule there.
    async fn is_scheduled(&self, minute: DateTime<Utc>) -> Result<bool, StoreError> {
        let item = get_item(
            &self.client,
            &self.table,
            &keys::bucket_scheduled(minute),
            false,
        )
        .await
        .map_err(StoreError::Unavailable)?;
        Ok(item.is_some())
    }

    async fn mark_scheduled(&self, minute: DateTime<Utc>) -> Result<(), StoreError> {
        self.put_minute_record(keys::bucket_scheduled(minute), minute)
            .await
    }
}

impl DynamoStore {
    /// Puts a record about `minute`, kept (TTL) until well past the sweeper's check of it.
    async fn put_minute_record(
        &self,
        key: keys::ItemKey,
        minute: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let expires = minute
            .checked_add_signed(FIRED_KEPT)
            .unwrap_or(minute)
            .timestamp();
        (self.client.put_item())
            .table_name(&self.table)
            .set_item(Some(key.to_item()))
            .item(attr::EXPIRES, n(expires))
            .send()
            .await
            .map_err(unavailable)?;
        Ok(())
    }

    /// Records that `minute`'s bucket fire began (written by the fire, before it reads).
    pub async fn mark_bucket_fired(&self, minute: DateTime<Utc>) -> Result<(), StoreError> {
        self.put_minute_record(keys::bucket_fired(minute), minute)
            .await
    }

    /// Whether `minute`'s bucket fire began.
    pub async fn bucket_fired(&self, minute: DateTime<Utc>) -> Result<bool, StoreError> {
        let item = get_item(&self.client, &self.table, &keys::bucket_fired(minute), true)
            .await
            .map_err(StoreError::Unavailable)?;
        Ok(item.is_some())
    }

    /// Whether any bucket partition holds an entry due in `minute`: one key read from each,
    /// side by side.
    pub async fn bucket_has_entries(&self, minute: DateTime<Utc>) -> Result<bool, StoreError> {
        let Some(end) = minute_end(minute) else {
            return Ok(false);
        };
        let queries = (0..BUCKET_SHARDS).map(|shard| self.minute_query((minute, end), shard));
        let reads = join_all(queries.map(|q| q.limit(1).send())).await;
        for read in reads {
            if !read.map_err(unavailable)?.items().is_empty() {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The next minute the sweeper is to check, if it has checked any.
    pub async fn bucket_fires_checked_from(&self) -> Result<Option<DateTime<Utc>>, StoreError> {
        let item = get_item(
            &self.client,
            &self.table,
            &keys::bucket_fires_checked(),
            true,
        )
        .await
        .map_err(StoreError::Unavailable)?;
        let Some(item) = item else {
            return Ok(None);
        };
        let ms = get_n(&item, attr::CHECKED_FROM)?;
        Ok(DateTime::from_timestamp_millis(ms))
    }

    /// Moves the sweeper's check on to `minute` (the next to check).
    pub async fn set_bucket_fires_checked_from(
        &self,
        minute: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        (self.client.put_item())
            .table_name(&self.table)
            .set_item(Some(keys::bucket_fires_checked().to_item()))
            .item(attr::CHECKED_FROM, n(minute.timestamp_millis()))
            .send()
            .await
            .map_err(unavailable)?;
        Ok(())
    }
}
