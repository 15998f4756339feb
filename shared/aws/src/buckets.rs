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
//! Custody: a minute is recorded done only once its reads and hand-ons are done. The
//! minute's own fire writes its record after it armed what it read and handed the rest on,
//! naming the partitions it handed on; each partition's chain of bucket work records its
//! own end. So a minute that fits one invocation costs one write, and a large one a write
//! more per partition handed on. The sweeper checks every minute once its fire is a minute
//! overdue ([`BucketFire::check_fires`]): a minute whose schedule was made and that is not
//! done (its schedule lost or deleted, its invocation dropped, or a fire that began and
//! failed, as in an SQS outage that also fails the invocation's on-failure destination) is
//! fired again then, as bucket work on the timer queue, whole, or only the partitions
//! whose chains never ended. A minute with entries but no schedule is not fired: its
//! entries are attempts due just over [`crate::plan::BUCKET_INDEX_AFTER`] after their
//! write, which the timer queue holds (they are indexed in the bucket only in case the
//! writer's clock stepped back).

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
/// How long after its minute began a minute that handed partitions on may still have a
/// chain under way: until then the check waits at that minute (a large minute's chains
/// run a few minutes at most; each link is a message SQS keeps until it is handled).
pub const PARTITIONS_OVERDUE_AFTER: chrono::Duration = chrono::Duration::minutes(5);
/// How long one check goes on at most (the sweeper's run has its sweep to do, within the
/// function's 60 s); the next run goes on from the minute saved.
const CHECK_BUDGET: std::time::Duration = std::time::Duration::from_secs(15);
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
    /// Entries that could not be read, passed over (each logged with its key).
    pub set_aside: usize,
}

/// Where a minute's fire stands, by its records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MinuteFire {
    /// No fire of the minute finished (none came, or each one failed).
    NotDone,
    /// Its fire finished, but handed these partitions on, whose chains have not ended.
    Unfinished(Vec<u32>),
    Done,
}

/// What one check of the minutes' fires did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CheckReport {
    /// Minutes (or partitions of minutes) fired again.
    pub fired: usize,
    /// Records that could not be read, passed over (each logged).
    pub set_aside: usize,
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
        let whole = work.is_whole();
        // A minute's own fire reads every partition there is now, even if its schedule was
        // made when there were fewer (entries written since may be in the new ones); work
        // handed on names its one partition. None reads past the partitions there are.
        let end = if whole {
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
                report.set_aside += page.set_aside;
                arms.extend(page.arms);
                if let Some(next) = page.next {
                    cursors.push_back((shard, Some(next)));
                }
            }
        }
        self.timer.queue_many(&arms).await?;
        report.armed = arms.len();
        let handed: Vec<u32> = cursors.iter().map(|(shard, _)| *shard).collect();
        report.handed_on = self.hand_on(work.minute, cursors).await?;
        // Only now is this part of the minute out of the fire's hands: what it read is
        // armed, and what it did not read is on the queue. A failure before here leaves
        // the minute (or partition) not done, for the check to fire again.
        if whole {
            self.store.mark_bucket_fired(work.minute, &handed).await?;
        } else {
            let finished = (work.first..end).filter(|shard| !handed.contains(shard));
            for shard in finished {
                self.store.mark_partition_done(work.minute, shard).await?;
            }
        }
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
    /// is overdue at `now`, firing again each one not done; returns how many it fired
    /// ([`Self::check`]).
    pub async fn check_fires(&self, now: DateTime<Utc>) -> Result<usize, BucketError> {
        Ok(self.check(now).await?.fired)
    }

    /// Checks the minutes from where the last check stopped up to the last one whose fire
    /// is overdue at `now`: a minute whose schedule was made and whose fire is not done is
    /// fired again, whole, as bucket work on the timer queue; a minute that handed
    /// partitions on and whose chains have not all ended by [`PARTITIONS_OVERDUE_AFTER`]
    /// has those partitions fired again (before then the check waits at that minute).
    /// Progress is saved minute by minute, so each minute is checked once; a failure leaves
    /// the rest to the next run, which begins at the same minute.
    pub async fn check(&self, now: DateTime<Utc>) -> Result<CheckReport, BucketError> {
        let minute_of =
            |t: DateTime<Utc>| t.duration_trunc(chrono::Duration::minutes(1)).unwrap_or(t);
        let last = minute_of(now - FIRE_OVERDUE_AFTER);
        let mut report = CheckReport::default();
        let checked_from = match self.store.bucket_fires_checked_from().await {
            Ok(from) => from,
            // An unreadable cursor must not stop every check for good: it starts again
            // from the present, as on a new table.
            Err(StoreError::Corrupt(e)) => {
                tracing::error!(error = %e, "unreadable bucket-check cursor set aside; checking from the last overdue minute");
                report.set_aside += 1;
                None
            }
            Err(e) => return Err(e.into()),
        };
        // The first check on a table starts with the last overdue minute: earlier minutes
        // fired before fires were recorded.
        let mut minute = checked_from.unwrap_or(last);
        let mut saved = checked_from;
        let started = std::time::Instant::now();
        for _ in 0..CHECK_MINUTES {
            // Slow calls (a brownout) must not hold the sweeper's run past its own work:
            // the next run goes on from the minute saved.
            if minute > last || started.elapsed() > CHECK_BUDGET {
                break;
            }
            let fire = match self.store.minute_fire(minute).await {
                Ok(fire) => fire,
                Err(StoreError::Corrupt(e)) => {
                    // Firing again is always safe: the whole minute is read again.
                    tracing::error!(%minute, error = %e, "unreadable bucket fire record set aside; firing the minute again");
                    report.set_aside += 1;
                    MinuteFire::NotDone
                }
                Err(e) => return Err(e.into()),
            };
            let refire: Vec<BucketWork> = match fire {
                MinuteFire::Done => Vec::new(),
                // No schedule was made for the minute: whatever is indexed in it, the timer
                // queue holds (see the module's comment), and there is no fire to miss.
                MinuteFire::NotDone if !self.store.bucket_schedule_made(minute).await? => {
                    Vec::new()
                }
                MinuteFire::NotDone => {
                    tracing::warn!(%minute, "this minute's bucket fire never finished; firing it now");
                    vec![BucketWork::whole(minute)]
                }
                MinuteFire::Unfinished(_) if now < minute + PARTITIONS_OVERDUE_AFTER => {
                    // Its chains may still be under way: look again on a later run, from
                    // here (a first check saves where it waits, or the next would begin at
                    // its own last overdue minute, past this one).
                    if saved != Some(minute) {
                        self.store.set_bucket_fires_checked_from(minute).await?;
                    }
                    break;
                }
                MinuteFire::Unfinished(shards) => {
                    tracing::warn!(%minute, ?shards, "partitions of this minute's bucket never finished; firing them now");
                    (shards.into_iter())
                        .map(|shard| BucketWork::partition(minute, shard, None))
                        .collect()
                }
            };
            let messages: Vec<_> = (refire.into_iter())
                .map(|bucket| (TimerMessage::Bucket { bucket }, 0))
                .collect();
            for sent in self.timer.send_many(&messages).await {
                sent?;
            }
            report.fired += messages.len();
            minute += chrono::Duration::minutes(1);
            self.store.set_bucket_fires_checked_from(minute).await?;
            saved = Some(minute);
        }
        Ok(report)
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
