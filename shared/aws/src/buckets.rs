//! A bucket's fire: its schedule invokes the delivery function
//! [`BUCKET_LEAD`](crate::plan::BUCKET_LEAD) before the minute, with the bucket as input;
//! the fire reads the minute's entries of the `due` index and arms each attempt through the
//! timer queue, with the seconds it still has to wait.
//!
//! One invocation reads at most [`MAX_PER_FIRE`] entries. What is left goes back to the
//! timer queue as bucket work, one message per bucket partition, so that a large minute is
//! read by several invocations at once, each carrying on its own partition page by page.
//! A fire that fails is retried whole (by Scheduler, or by SQS for bucket work): arming an
//! attempt twice is harmless, its claim sends it once.
//!
//! A minute's own fire first records that it began. The sweeper checks every minute once
//! its fire is a minute overdue ([`BucketFire::check_fires`]): a minute with entries and no
//! such record (its schedule lost or deleted, its invocation dropped) is fired then, by
//! putting the whole minute on the timer queue as bucket work.

use std::collections::VecDeque;
use std::sync::Arc;

use chrono::{DateTime, DurationRound, Utc};
use futures_util::future::join_all;

use crate::keys::BUCKET_SHARDS;
use crate::messages::{BucketWork, TimerMessage};
use crate::store::DynamoStore;
use crate::timer::AwsTimer;
use boomerang_core::ports::{StoreError, TimerError};

/// How long after its minute began a minute's fire is looked for: the schedule fires
/// [`crate::plan::BUCKET_LEAD`] before the minute, so the fire is that much more overdue.
pub const FIRE_OVERDUE_AFTER: chrono::Duration = chrono::Duration::minutes(1);
/// Minutes one check covers at most; the next run goes on from there.
const CHECK_MINUTES: usize = 60;

/// Entries one invocation reads before it hands the rest on.
pub const MAX_PER_FIRE: usize = 2000;
/// Entries read per query, the most a query takes: a keys-only entry is under 200 bytes,
/// so a page stays far below a query's 1 MB, and a partition's 2,000 are two round trips.
const PAGE: usize = 1000;

#[derive(Debug, thiserror::Error)]
pub enum BucketError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Timer(#[from] TimerError),
}

/// What one fire did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BucketReport {
    pub read: usize,
    pub armed: usize,
    /// Bucket work messages left for other invocations.
    pub handed_on: usize,
}

pub struct BucketFire {
    pub store: Arc<DynamoStore>,
    pub timer: Arc<AwsTimer>,
    /// Entries one invocation reads ([`MAX_PER_FIRE`]; tests hand on sooner).
    pub max_per_fire: usize,
}

impl BucketFire {
    pub fn new(store: Arc<DynamoStore>, timer: Arc<AwsTimer>) -> Self {
        Self {
            store,
            timer,
            max_per_fire: MAX_PER_FIRE,
        }
    }

    /// Arms the attempts of the bucket's entries, up to [`Self::max_per_fire`] of them;
    /// hands the rest on. The partitions are read side by side, each a share of what is
    /// left to read: an invocation is billed while it waits, and a minute's sixteen reads
    /// one after another would be most of its time.
    pub async fn run(&self, work: BucketWork) -> Result<BucketReport, BucketError> {
        let mut report = BucketReport::default();
        if work.is_whole() {
            // Before the reads: a fire that fails after it is retried anyway.
            self.store.mark_bucket_fired(work.minute).await?;
        }
        // A minute's own fire reads every partition there is now, even if its schedule was
        // made when there were fewer (entries written since may be in the new ones); work
        // handed on names its one partition. None reads past the partitions there are.
        let end = if work.is_whole() {
            BUCKET_SHARDS
        } else {
            work.end.min(BUCKET_SHARDS)
        };
        // Each partition still to read, and where it goes on from.
        let mut cursors: VecDeque<(u32, Option<String>)> =
            (work.first..end).map(|shard| (shard, None)).collect();
        if let Some(first) = cursors.front_mut() {
            first.1 = work.after;
        }
        // Queued together at the end: ten to a request across partitions.
        let mut arms = Vec::new();
        while !cursors.is_empty() && report.read < self.max_per_fire {
            let budget = self.max_per_fire - report.read;
            let n = cursors.len().min(budget);
            let limit = (budget / n).min(PAGE);
            let round: Vec<_> = cursors.drain(..n).collect();
            let pages = join_all(round.iter().map(|(shard, after)| {
                self.store
                    .bucket_page(work.minute, *shard, after.as_deref(), limit)
            }))
            .await;
            for ((shard, _), page) in round.into_iter().zip(pages) {
                let page = page?;
                report.read += page.read;
                arms.extend(page.arms);
                if let Some(next) = page.next {
                    cursors.push_back((shard, Some(next)));
                }
            }
        }
        self.timer.queue_many(&arms).await?;
        report.armed = arms.len();
        report.handed_on = self.hand_on(work.minute, cursors).await?;
        tracing::info!(
            minute = %work.minute,
            read = report.read,
            armed = report.armed,
            handed_on = report.handed_on,
            "bucket fired"
        );
        Ok(report)
    }

    /// Checks the minutes from where the last check stopped up to the last one whose fire
    /// is overdue at `now`: each with entries whose fire never began is fired, as bucket
    /// work on the timer queue. Returns how many it fired. Progress is saved minute by
    /// minute, so each minute is checked once (a failure leaves the rest to the next run).
    pub async fn check_fires(&self, now: DateTime<Utc>) -> Result<usize, BucketError> {
        let minute_of =
            |t: DateTime<Utc>| t.duration_trunc(chrono::Duration::minutes(1)).unwrap_or(t);
        let last = minute_of(now - FIRE_OVERDUE_AFTER);
        let checked_from = self.store.bucket_fires_checked_from().await?;
        // The first check on a table starts with the last overdue minute: earlier minutes
        // fired before fires were recorded.
        let mut minute = checked_from.unwrap_or(last);
        let mut fired = 0;
        for _ in 0..CHECK_MINUTES {
            if minute > last {
                break;
            }
            if !self.store.bucket_fired(minute).await?
                && self.store.bucket_has_entries(minute).await?
            {
                tracing::warn!(%minute, "this minute's bucket never fired; firing it now");
                let work = TimerMessage::Bucket {
                    bucket: BucketWork::whole(minute),
                };
                self.timer.send(&work, 0).await?;
                fired += 1;
            }
            minute += chrono::Duration::minutes(1);
            self.store.set_bucket_fires_checked_from(minute).await?;
        }
        Ok(fired)
    }

    /// Puts each partition left to read back on the timer queue, one message each (ten to
    /// a request); returns how many.
    async fn hand_on(
        &self,
        minute: DateTime<Utc>,
        cursors: VecDeque<(u32, Option<String>)>,
    ) -> Result<usize, TimerError> {
        let messages: Vec<_> = (cursors.into_iter())
            .map(|(shard, after)| {
                let work = BucketWork::partition(minute, shard, after);
                (TimerMessage::Bucket { bucket: work }, 0)
            })
            .collect();
        for sent in self.timer.send_many(&messages).await {
            sent?;
        }
        Ok(messages.len())
    }
}
