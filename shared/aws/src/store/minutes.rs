//! The custody of a minute's bucket: the record that its schedule exists (so the fleet
//! creates it once: [`crate::bucket_schedules`]), the record that its fire finished (with
//! the partitions it handed on), the record of each handed-on partition's end, and how far
//! the sweeper has checked that every scheduled minute's fire finished. A minute whose fire
//! never finished (its schedule lost, its invocation dropped, or a fire that failed) is
//! found by the sweeper and fired again then ([`crate::buckets::BucketFire::check`]).
//!
//! The fire's records share the `BUCKET` partition: `<minute>` for the minute's fire and
//! `<minute>#<partition>` for a handed-on partition's end, so one query reads them all.

use chrono::{DateTime, Utc};

use async_trait::async_trait;
use aws_sdk_dynamodb::types::AttributeValue;

use super::table::DynamoStore;
use crate::attr;
use crate::bucket_schedules::ScheduledMinutes;
use crate::buckets::MinuteFire;
use crate::keys;
use crate::sdk::items::{corrupt, get_item, get_n, n, Item};
use crate::sdk::sdk_failure;
use boomerang_core::ports::StoreError;

/// How long a minute's records are kept (TTL): well past the time the sweeper checks them.
const FIRED_KEPT: chrono::Duration = chrono::Duration::days(2);
/// On a minute's fire record: the partitions it handed on (a number set; absent when it
/// handed none on, as on every record written before partitions were recorded).
const HANDED_ON: &str = "ho";

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
        self.put_minute_record(keys::bucket_scheduled(minute).to_item(), minute)
            .await
    }
}

impl DynamoStore {
    /// Puts a record about `minute`, kept (TTL) until well past the sweeper's check of it.
    async fn put_minute_record(&self, item: Item, minute: DateTime<Utc>) -> Result<(), StoreError> {
        let expires = minute
            .checked_add_signed(FIRED_KEPT)
            .unwrap_or(minute)
            .timestamp();
        (self.client.put_item())
            .table_name(&self.table)
            .set_item(Some(item))
            .item(attr::EXPIRES, n(expires))
            .send()
            .await
            .map_err(unavailable)?;
        Ok(())
    }

    /// Records that `minute`'s own fire finished: what it read is armed, and what it did
    /// not read is on the timer queue as work for the partitions `handed_on`.
    pub async fn mark_bucket_fired(
        &self,
        minute: DateTime<Utc>,
        handed_on: &[u32],
    ) -> Result<(), StoreError> {
        let mut item = keys::bucket_fired(minute).to_item();
        if !handed_on.is_empty() {
            let shards = handed_on.iter().map(u32::to_string).collect();
            item.insert(HANDED_ON.into(), AttributeValue::Ns(shards));
        }
        self.put_minute_record(item, minute).await
    }

    /// Records that the chain of bucket work of `minute`'s partition `shard` ended: the
    /// partition is read to its end and armed.
    pub async fn mark_partition_done(
        &self,
        minute: DateTime<Utc>,
        shard: u32,
    ) -> Result<(), StoreError> {
        let key = partition_done(minute, shard);
        self.put_minute_record(key.to_item(), minute).await
    }

    /// Where `minute`'s fire stands: one consistent query of its records.
    pub async fn minute_fire(&self, minute: DateTime<Utc>) -> Result<MinuteFire, StoreError> {
        let fired = keys::bucket_fired(minute);
        let records = self
            .partition(fired.pk.clone(), Some(fired.sk.clone()))
            .await?;
        let sort_key = |item: &Item| item.get(attr::SK).and_then(|v| v.as_s().ok()).cloned();
        let Some(record) = records
            .iter()
            .find(|r| sort_key(r).as_ref() == Some(&fired.sk))
        else {
            return Ok(MinuteFire::NotDone);
        };
        let handed_on: Vec<u32> = match record.get(HANDED_ON) {
            None => Vec::new(),
            Some(value) => (value.as_ns().map_err(|_| corrupt(HANDED_ON))?.iter())
                .map(|n| n.parse().map_err(|_| corrupt(HANDED_ON)))
                .collect::<Result<_, _>>()?,
        };
        let done: Vec<String> = records.iter().filter_map(sort_key).collect();
        let unfinished: Vec<u32> = (handed_on.into_iter())
            .filter(|shard| !done.contains(&partition_done(minute, *shard).sk))
            .collect();
        Ok(match unfinished.is_empty() {
            true => MinuteFire::Done,
            false => MinuteFire::Unfinished(unfinished),
        })
    }

    /// Whether `minute`'s schedule was made (a consistent read of its record).
    pub async fn bucket_schedule_made(&self, minute: DateTime<Utc>) -> Result<bool, StoreError> {
        let key = keys::bucket_scheduled(minute);
        let item = get_item(&self.client, &self.table, &key, true)
            .await
            .map_err(StoreError::Unavailable)?;
        Ok(item.is_some())
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

/// The record that the chain of `minute`'s partition `shard` ended: beside the minute's
/// fire record, in its partition.
fn partition_done(minute: DateTime<Utc>, shard: u32) -> keys::ItemKey {
    let fired = keys::bucket_fired(minute);
    keys::ItemKey {
        pk: fired.pk,
        sk: format!("{}#{shard}", fired.sk),
    }
}
