//! A bucket's fire: its schedule invokes the delivery function [`crate::timer::BUCKET_LEAD`]
//! before the minute, with the bucket as input; the fire reads the minute's entries of the
//! `due` index and arms each attempt through the timer queue, with the seconds it still has
//! to wait.
//!
//! One invocation reads at most [`MAX_PER_FIRE`] entries. What is left goes back to the
//! timer queue as bucket work, one message per bucket partition, so that a large minute is
//! read by several invocations at once, each carrying on its own partition page by page.
//! A fire that fails is retried whole (by Scheduler, or by SQS for bucket work): arming an
//! attempt twice is harmless, its claim sends it once.

use std::collections::VecDeque;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use futures_util::future::join_all;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::store::{DynamoStore, BUCKET_SHARDS};
use crate::timer::AwsTimer;
use boomerang_core::domain::AttemptRef;
use boomerang_core::ports::{StoreError, TimerError};

/// The message group of bucket work (tenant ids never contain `#`).
pub const BUCKET_GROUP: &str = "#buckets";
/// The message group of sweep passes.
pub const SWEEP_GROUP: &str = "#sweep";
/// SQS takes a message group id of up to 128 printable ASCII characters.
const MAX_GROUP: usize = 128;

/// The message group of an attempt: its tenant's ([`TimerMessage::group`]).
pub fn attempt_group(attempt: &AttemptRef) -> String {
    let tenant = attempt.tenant.as_str();
    if tenant.len() <= MAX_GROUP && tenant.bytes().all(|b| b.is_ascii_graphic()) {
        tenant.to_string()
    } else {
        format!("#{:x}", Sha256::digest(tenant.as_bytes()))
    }
}

/// Entries one invocation reads before it hands the rest on.
pub const MAX_PER_FIRE: usize = 2000;
/// Entries read per query, the most a query takes: a keys-only entry is under 200 bytes,
/// so a page stays far below a query's 1 MB, and a partition's 2,000 are two round trips.
const PAGE: usize = 1000;

/// What a timer message carries: one attempt (the whole message, as it always was), or a
/// bucket's work.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum TimerMessage {
    Attempt(AttemptRef),
    Bucket {
        bucket: BucketWork,
    },
    /// A sweep pass between the sweeper's once-a-minute runs ([`SweepPass`]).
    Sweep {
        sweep: SweepPass,
    },
}

/// A sweep the timer queue carries: EventBridge runs the sweeper once a minute at most,
/// so each run queues one more pass half a minute later, which the delivery function runs.
/// A pass queues nothing itself, so passes never multiply.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SweepPass {
    HalfMinute,
}

impl TimerMessage {
    /// The message a body holds, if it is one of ours.
    pub fn parse(body: &str) -> Option<TimerMessage> {
        serde_json::from_str(body).ok()
    }

    /// The message group it is sent under, which makes the timer queue fair (SQS fair
    /// queues): an attempt is grouped by its tenant, so one tenant's burst takes its turn
    /// instead of delaying every other tenant's callbacks; bucket work is its own group.
    /// A tenant id SQS would refuse as a group (beyond printable ASCII, or too long) is
    /// grouped by its digest.
    pub fn group(&self) -> String {
        match self {
            TimerMessage::Attempt(attempt) => attempt_group(attempt),
            TimerMessage::Bucket { .. } => BUCKET_GROUP.to_string(),
            TimerMessage::Sweep { .. } => SWEEP_GROUP.to_string(),
        }
    }

    /// The timer message somewhere inside a failure record: the message itself, the
    /// payload of a failed invocation, or the input inside Scheduler's dead-letter event.
    pub fn find_in(body: &str) -> Option<TimerMessage> {
        Self::parse(body).or_else(|| {
            serde_json::from_str::<Value>(body)
                .ok()
                .as_ref()
                .and_then(search)
        })
    }
}

fn search(value: &Value) -> Option<TimerMessage> {
    if let Ok(message) = serde_json::from_value::<TimerMessage>(value.clone()) {
        return Some(message);
    }
    match value {
        Value::String(s) => serde_json::from_str::<Value>(s)
            .ok()
            .as_ref()
            .and_then(search),
        Value::Array(items) => items.iter().find_map(search),
        Value::Object(map) => map.values().find_map(search),
        _ => None,
    }
}

/// A bucket's work: its minute, the partitions `first..end` still to read, and where the
/// first of them carries on from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BucketWork {
    pub minute: DateTime<Utc>,
    pub first: u32,
    pub end: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
}

impl BucketWork {
    /// The whole minute: what its schedule carries.
    pub fn whole(minute: DateTime<Utc>) -> Self {
        Self {
            minute,
            first: 0,
            end: BUCKET_SHARDS,
            after: None,
        }
    }

    /// Whether this is a minute's own fire, from its schedule (handed-on work names one
    /// partition).
    fn is_whole(&self) -> bool {
        self.first == 0 && self.end > 1 && self.after.is_none()
    }

    fn partition(minute: DateTime<Utc>, shard: u32, after: Option<String>) -> Self {
        Self {
            minute,
            first: shard,
            end: shard + 1,
            after,
        }
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use boomerang_core::domain::{TaskId, TenantId};
    use chrono::TimeZone;

    #[test]
    fn attempts_are_grouped_by_tenant_in_a_form_sqs_takes() {
        let group = |tenant: &str| {
            TimerMessage::Attempt(AttemptRef::new(
                TenantId::parse(tenant).unwrap(),
                TaskId::new(),
                1,
            ))
            .group()
        };
        assert_eq!(group("acme"), "acme");
        assert_eq!(group("émile"), group("émile"));
        assert_ne!(group("émile"), group("emile"));
        for g in [group("émile"), group("acme")] {
            assert!(g.len() <= MAX_GROUP && g.bytes().all(|b| b.is_ascii_graphic()));
        }
        let bucket = TimerMessage::Bucket {
            bucket: BucketWork::whole(Utc::now()),
        };
        assert_eq!(bucket.group(), BUCKET_GROUP);
    }

    #[test]
    fn timer_messages_keep_the_attempt_shape_and_tell_buckets_apart() {
        let at = AttemptRef::new(TenantId::parse("acme").unwrap(), TaskId::new(), 3);
        let plain = serde_json::to_string(&at).unwrap();
        assert_eq!(
            serde_json::to_string(&TimerMessage::Attempt(at.clone())).unwrap(),
            plain
        );
        assert_eq!(
            TimerMessage::parse(&plain),
            Some(TimerMessage::Attempt(at.clone()))
        );
        let minute = Utc.with_ymd_and_hms(2030, 1, 1, 12, 20, 0).unwrap();
        let bucket = TimerMessage::Bucket {
            bucket: BucketWork::whole(minute),
        };
        let text = serde_json::to_string(&bucket).unwrap();
        assert_eq!(TimerMessage::parse(&text), Some(bucket.clone()));
        let pass = TimerMessage::Sweep {
            sweep: SweepPass::HalfMinute,
        };
        assert_eq!(
            serde_json::to_string(&pass).unwrap(),
            r#"{"sweep":"half_minute"}"#
        );
        assert_eq!(
            TimerMessage::parse(r#"{"sweep":"half_minute"}"#),
            Some(pass)
        );
        assert_eq!(TimerMessage::parse(r#"{"sweep":"hourly"}"#), None);
        assert_eq!(TimerMessage::parse("not ours"), None);
        assert_eq!(TimerMessage::parse(r#"{"bucket": {"minute": 3}}"#), None);
        // Inside a failed invocation's record, and inside Scheduler's dead-letter event.
        let record = serde_json::json!({
            "version": "1.0", "requestContext": {"condition": "RetriesExhausted"},
            "requestPayload": bucket.clone(), "responsePayload": {"errorMessage": "boom"}
        });
        assert_eq!(TimerMessage::find_in(&record.to_string()), Some(bucket));
        let event = serde_json::json!({"detail": {"input": plain}});
        assert_eq!(
            TimerMessage::find_in(&event.to_string()),
            Some(TimerMessage::Attempt(at))
        );
    }
}
