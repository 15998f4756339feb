//! A bucket's reads of the `due` index: one minute of one bucket partition, a page at a
//! time. An entry's keys name the task, and its sort key the attempt and its due time
//! ([`keys::bucket_sort_key`]), so a page costs one query and no read of the tasks. An entry
//! stays where its task's write put it when the task moves on (removing it would cost an
//! index write): a canceled or finished task's attempt is armed anyway, and its fire finds
//! nothing to do.

use chrono::{DateTime, Utc};

use super::due_entry::DueEntry;
use super::item::{key_of, task_from};
use super::table::DynamoStore;
use crate::attr::{self, DUE_INDEX};
use crate::keys::{self, bucket_entry, bucket_sort_key_from};
use crate::sdk::items::{n, s};
use crate::sdk::sdk_failure;
use boomerang_core::domain::time::checked_add;
use boomerang_core::domain::AttemptRef;
use boomerang_core::ports::StoreError;

/// One page of a bucket partition.
#[derive(Debug, Default)]
pub struct BucketPage {
    /// The attempts due in the minute, and when, to arm.
    pub arms: Vec<(AttemptRef, DateTime<Utc>)>,
    /// Entries read, armed or not.
    pub read: usize,
    /// Entries (or the task items they sent it to) that could not be read: passed over
    /// with the rest, each logged with its key.
    pub set_aside: usize,
    /// Where the next page starts; `None` when the minute is read to its end.
    pub next: Option<String>,
}

/// Where `minute` ends; `None` for a minute at the end of time, where no task is due.
pub(super) fn minute_end(minute: DateTime<Utc>) -> Option<DateTime<Utc>> {
    checked_add(minute, std::time::Duration::from_secs(60))
}

impl DynamoStore {
    /// The query of the entries from `minute` to its `end` in bucket partition `shard`.
    pub(super) fn minute_query(
        &self,
        (minute, end): (DateTime<Utc>, DateTime<Utc>),
        shard: u32,
    ) -> aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder {
        (self.client.query())
            .table_name(&self.table)
            .index_name(DUE_INDEX)
            .key_condition_expression(format!(
                "{} = :p AND {} BETWEEN :from AND :to",
                attr::DUE_SHARD,
                attr::DUE_AT
            ))
            .expression_attribute_values(":p", s(keys::bucket_partition(shard)))
            .expression_attribute_values(":from", n(bucket_sort_key_from(minute)))
            .expression_attribute_values(":to", n(bucket_sort_key_from(end) - 1))
    }

    /// Up to `limit` entries of `minute` in bucket partition `shard`, from `after` (a
    /// previous page's `next`).
    pub async fn bucket_page(
        &self,
        minute: DateTime<Utc>,
        shard: u32,
        after: Option<&str>,
        limit: usize,
    ) -> Result<BucketPage, StoreError> {
        let partition = keys::bucket_partition(shard);
        let start = after
            .map(|a| serde_json::from_str::<DueEntry>(a).map_err(|e| StoreError::Corrupt(e.into())))
            .transpose()?
            .map(|e| e.start_key(&partition));
        // No task is due at the end of time: a minute there (bucket work no fire wrote)
        // has nothing in it.
        let Some(end) = minute_end(minute) else {
            return Ok(BucketPage::default());
        };
        let out = (self.minute_query((minute, end), shard))
            .set_exclusive_start_key(start)
            .limit(limit.clamp(1, 1000) as i32)
            .send()
            .await
            .map_err(|e| StoreError::Unavailable(sdk_failure(e)))?;
        let entries = out.items();
        let mut arms = Vec::with_capacity(entries.len());
        let mut unnumbered = Vec::new();
        let mut last = None;
        let mut set_aside = 0;
        // An entry that cannot be read must not fail the page for good (its fire would be
        // retried, and fail, until it was given up): it is passed over with the rest.
        let mut set_aside_one = |key: Option<keys::ItemKey>, e: StoreError| {
            tracing::error!(?key, %minute, shard, error = %e, "unreadable bucket entry set aside");
            set_aside += 1;
        };
        for item in entries {
            let entry = DueEntry::of(item)?;
            let (due_ms, attempt) = bucket_entry(entry.0);
            match (attempt, DateTime::from_timestamp_millis(due_ms)) {
                (Some(attempt), Some(due)) => match key_of(item) {
                    Ok((tenant, id)) => arms.push((AttemptRef::new(tenant, id, attempt), due)),
                    Err(e) => set_aside_one(Some(entry.task_key()), e),
                },
                _ => unnumbered.push(entry.task_key()),
            }
            last = Some(entry);
        }
        // The rare entry whose attempt number had no room: its task says.
        for item in self.batch_items(unnumbered).await? {
            match task_from(&item) {
                Ok(task) => {
                    let pending = task.pending_work();
                    if let Some(w) = pending.filter(|w| w.kind.is_timed() && w.due_at < end) {
                        arms.push((w.attempt, w.due_at));
                    }
                }
                Err(e) => set_aside_one(keys::ItemKey::of(&item), e),
            }
        }
        let next = match (out.last_evaluated_key.is_some(), last) {
            (true, Some(after)) => {
                Some(serde_json::to_string(&after).map_err(|e| StoreError::Corrupt(e.into()))?)
            }
            _ => None,
        };
        Ok(BucketPage {
            arms,
            read: entries.len(),
            set_aside,
            next,
        })
    }
}
