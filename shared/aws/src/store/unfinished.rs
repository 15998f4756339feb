//! Every unfinished task in the table, read with a parallel `Scan`, segment by segment:
//! what `boomerang aws rearm` arms again when the timers were lost (a deleted or purged
//! queue or schedule group, a table restored from a backup). A segment's position is kept
//! in the table after each page it finishes, so a run that stops resumes where it was; a
//! position expires a day after it was saved, so the next incident's run reads the whole
//! table again.

use aws_sdk_dynamodb::types::AttributeValue;
use chrono::Utc;

use super::item::task_from;
use super::table::DynamoStore;
use crate::attr;
use crate::keys::{self, ItemKey};
use crate::sdk::items::{corrupt, get_item, get_n, n, s, Item};
use crate::sdk::sdk_failure;
use boomerang_core::domain::PendingWork;
use boomerang_core::ports::StoreError;

/// How long a segment's saved position is kept.
const POSITION_KEPT: chrono::Duration = chrono::Duration::hours(24);

/// Where one scan segment is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RearmPosition {
    /// From the segment's start, or after this item.
    From(Option<ItemKey>),
    Done,
}

/// One page of a segment: the pending work of the unfinished tasks on it, and where the
/// segment goes on from.
#[derive(Debug)]
pub struct UnfinishedPage {
    pub work: Vec<PendingWork>,
    /// Items the page read (tasks and everything else the segment holds).
    pub read: usize,
    /// Task items that could not be read (logged, and passed over).
    pub unreadable: usize,
    pub next: RearmPosition,
}

impl DynamoStore {
    /// The saved position of segment `segment` of `segments` (its start if none is saved).
    pub async fn rearm_position(
        &self,
        segment: u32,
        segments: u32,
    ) -> Result<RearmPosition, StoreError> {
        let key = keys::rearm_position(segment, segments);
        let item = get_item(&self.client, &self.table, &key, true)
            .await
            .map_err(StoreError::Unavailable)?;
        // DynamoDB removes expired items late: an expired position is no position.
        let live =
            |item: &Item| get_n(item, attr::EXPIRES).map_or(true, |x| x > Utc::now().timestamp());
        let Some(item) = item.filter(live) else {
            return Ok(RearmPosition::From(None));
        };
        if item.contains_key(attr::rearm::DONE) {
            return Ok(RearmPosition::Done);
        }
        let part = |name| item.get(name).and_then(|v| v.as_s().ok()).cloned();
        let after = (part(attr::rearm::AFTER_PK).zip(part(attr::rearm::AFTER_SK)))
            .map(|(pk, sk)| ItemKey::stored(pk, sk));
        Ok(RearmPosition::From(after))
    }

    /// Saves segment `segment`'s position (after the page its work was armed from).
    pub async fn save_rearm_position(
        &self,
        segment: u32,
        segments: u32,
        position: &RearmPosition,
    ) -> Result<(), StoreError> {
        let expires = (Utc::now() + POSITION_KEPT).timestamp();
        let mut put = (self.client.put_item())
            .table_name(&self.table)
            .set_item(Some(keys::rearm_position(segment, segments).to_item()))
            .item(attr::EXPIRES, n(expires));
        match position {
            RearmPosition::Done => put = put.item(attr::rearm::DONE, AttributeValue::Bool(true)),
            RearmPosition::From(Some(after)) => {
                put = (put.item(attr::rearm::AFTER_PK, s(&after.pk)))
                    .item(attr::rearm::AFTER_SK, s(&after.sk))
            }
            RearmPosition::From(None) => {}
        }
        put.send()
            .await
            .map_err(|e| StoreError::Unavailable(sdk_failure(e)))?;
        Ok(())
    }

    /// Forgets the positions of a run in `segments` segments: the next run starts over.
    pub async fn forget_rearm_positions(&self, segments: u32) -> Result<(), StoreError> {
        for segment in 0..segments {
            (self.client.delete_item())
                .table_name(&self.table)
                .set_key(Some(keys::rearm_position(segment, segments).to_item()))
                .send()
                .await
                .map_err(|e| StoreError::Unavailable(sdk_failure(e)))?;
        }
        Ok(())
    }

    /// Up to `limit` items of segment `segment` of `segments` after `after`: the pending
    /// work of each unfinished task among them, whether or not a timer is said to hold it
    /// (the point is that the timers may be gone).
    pub async fn unfinished_page(
        &self,
        segment: u32,
        segments: u32,
        after: Option<ItemKey>,
        limit: i32,
    ) -> Result<UnfinishedPage, StoreError> {
        let out = (self.client.scan())
            .table_name(&self.table)
            .segment(segment as i32)
            .total_segments(segments as i32)
            .limit(limit)
            // Task items: not an attempt record or any other item, and not finished (a
            // finished task has an expiry).
            .filter_expression(
                "begins_with(#pk, :t) AND attribute_exists(#st) AND attribute_not_exists(#x)",
            )
            .expression_attribute_names("#pk", attr::PK)
            .expression_attribute_names("#st", attr::STATUS)
            .expression_attribute_names("#x", attr::EXPIRES)
            .expression_attribute_values(":t", s(keys::task_partition_prefix()))
            .set_exclusive_start_key(after.map(|k| k.to_item()))
            .send()
            .await
            .map_err(|e| StoreError::Unavailable(sdk_failure(e)))?;
        let (mut work, mut unreadable) = (Vec::new(), 0);
        for item in out.items() {
            match task_from(item) {
                Ok(task) => work.extend(task.pending_work()),
                Err(e) => {
                    // One bad item must not stop the segment for good: it is left for an
                    // operator, and the rest is armed.
                    tracing::warn!(key = ?ItemKey::of(item), error = %e, "unreadable task item passed over");
                    unreadable += 1;
                }
            }
        }
        let next = match out.last_evaluated_key() {
            Some(last) => RearmPosition::From(Some(
                ItemKey::of(last).ok_or_else(|| corrupt("the scan's last evaluated key"))?,
            )),
            None => RearmPosition::Done,
        };
        Ok(UnfinishedPage {
            work,
            read: out.scanned_count() as usize,
            unreadable,
            next,
        })
    }
}
