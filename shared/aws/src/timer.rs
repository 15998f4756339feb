//! The AWS timer: SQS `DelaySeconds` for waits up to ~14 minutes; for longer ones, one
//! EventBridge Scheduler schedule per minute of due time (a *bucket*), however many tasks
//! fall in it.
//!
//! A task due further ahead is kept in a bucket partition of the `due` index (its own write
//! puts it there; which waits go where is [`crate::plan`]'s). The bucket's schedule fires
//! [`BUCKET_LEAD`](crate::plan::BUCKET_LEAD) before the minute begins, and the fire
//! ([`crate::buckets`]) reads the minute's entries and arms each attempt through SQS with
//! the seconds it still has to wait. So a far-future task costs no Scheduler call after
//! the first of its minute in the whole fleet ([`crate::bucket_schedules`]), the schedule
//! quota counts minutes rather than tasks, a cancel leaves nothing to delete, and every
//! attempt is precise to the second.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_sqs::types::SendMessageBatchRequestEntry;
use chrono::{DateTime, Utc};
use futures_util::stream::{self, StreamExt};

use crate::bucket_schedules::BucketSchedules;
use crate::messages::TimerMessage;
use crate::plan::{plan, queue_delay, TimerPlan};
use crate::sdk::sdk_failure;
use boomerang_core::clock::Clock;
use boomerang_core::domain::AttemptRef;
use boomerang_core::ports::{Timer, TimerError};

pub struct AwsTimer {
    sqs: aws_sdk_sqs::Client,
    schedules: BucketSchedules,
    queue_url: String,
    clock: Arc<dyn Clock>,
    /// Whether messages go under their tenant's group (a fair queue); off once the queue
    /// refuses groups, as older emulators do on a standard queue.
    grouped: AtomicBool,
}

/// Batch sends to the timer queue in flight at once: enough that a bucket's 200 batches
/// or a sweep's 800 wait a few dozen round trips, not hundreds; few enough for one
/// function instance's connections.
const SENDS_AT_ONCE: usize = 16;

/// Whether a refusal is the queue's refusing a message group on a standard queue.
fn refuses_groups(why: &str) -> bool {
    why.contains("MessageGroupId")
}

impl AwsTimer {
    pub fn new(
        sqs: aws_sdk_sqs::Client,
        schedules: BucketSchedules,
        settings: &crate::settings::AwsSettings,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            sqs,
            schedules,
            queue_url: settings.timer_queue_url.clone(),
            clock,
            grouped: AtomicBool::new(true),
        }
    }

    /// Bucket schedules are made with Scheduler itself, whatever the table's records say
    /// ([`BucketSchedules::ignore_records`]).
    pub fn ignore_schedule_records(&self) {
        self.schedules.ignore_records();
    }

    fn group_of(&self, message: &TimerMessage) -> Option<String> {
        self.grouped
            .load(Ordering::Relaxed)
            .then(|| message.group())
    }

    /// Called when the queue refused a group: sends go ungrouped from now on.
    fn stop_grouping(&self, why: &str) -> bool {
        let refused = refuses_groups(why);
        if refused && self.grouped.swap(false, Ordering::Relaxed) {
            tracing::warn!(%why, "the timer queue refuses message groups; sending without");
        }
        refused
    }

    /// Puts a message on the timer queue, to be delivered after `delay_seconds`.
    pub async fn send(&self, message: &TimerMessage, delay_seconds: i32) -> Result<(), TimerError> {
        self.send_to(&self.queue_url, message, delay_seconds).await
    }

    /// Puts a message on `queue_url` (the timer queue, or one made like it: the slow
    /// lane's), to be delivered after `delay_seconds`.
    pub async fn send_to(
        &self,
        queue_url: &str,
        message: &TimerMessage,
        delay_seconds: i32,
    ) -> Result<(), TimerError> {
        let body = serde_json::to_string(message).map_err(|e| TimerError(e.into()))?;
        loop {
            let sent = self
                .sqs
                .send_message()
                .queue_url(queue_url)
                .message_body(&body)
                .set_message_group_id(self.group_of(message))
                .delay_seconds(delay_seconds)
                .send()
                .await;
            match sent {
                Ok(_) => return Ok(()),
                Err(e) => {
                    let why = crate::sdk::describe(&e);
                    if !(self.group_of(message).is_some() && self.stop_grouping(&why)) {
                        return Err(TimerError(sdk_failure(e)));
                    }
                }
            }
        }
    }

    /// Sends up to ten timer messages in one request; the outcome of each, by index.
    async fn enqueue_batch(
        &self,
        chunk: &[(usize, TimerMessage, i32)],
    ) -> Vec<(usize, Result<(), TimerError>)> {
        let grouped = self.grouped.load(Ordering::Relaxed);
        let outcomes = self.enqueue_batch_once(chunk, grouped).await;
        let refused = outcomes.iter().any(|(_, r)| match r {
            Err(e) => self.stop_grouping(&e.to_string()),
            Ok(()) => false,
        });
        if grouped && refused {
            return self.enqueue_batch_once(chunk, false).await;
        }
        outcomes
    }

    async fn enqueue_batch_once(
        &self,
        chunk: &[(usize, TimerMessage, i32)],
        grouped: bool,
    ) -> Vec<(usize, Result<(), TimerError>)> {
        let entries: Result<Vec<_>, TimerError> = chunk
            .iter()
            .map(|(i, message, delay)| {
                let body = serde_json::to_string(message).map_err(|e| TimerError(e.into()))?;
                SendMessageBatchRequestEntry::builder()
                    .id(i.to_string())
                    .message_body(body)
                    .set_message_group_id(grouped.then(|| message.group()))
                    .delay_seconds(*delay)
                    .build()
                    .map_err(|e| TimerError(e.into()))
            })
            .collect();
        let sent = match entries {
            Ok(entries) => self
                .sqs
                .send_message_batch()
                .queue_url(&self.queue_url)
                .set_entries(Some(entries))
                .send()
                .await
                .map_err(|e| crate::sdk::describe(&e)),
            Err(e) => Err(e.to_string()),
        };
        match sent {
            Ok(out) => {
                let failed: Vec<(String, String)> = out
                    .failed()
                    .iter()
                    .map(|f| {
                        (
                            f.id().to_string(),
                            f.message().unwrap_or("failed").to_string(),
                        )
                    })
                    .collect();
                chunk
                    .iter()
                    .map(|(i, _, _)| {
                        let id = i.to_string();
                        match failed.iter().find(|(f, _)| *f == id) {
                            Some((_, why)) => (*i, Err(TimerError(why.clone().into()))),
                            None => (*i, Ok(())),
                        }
                    })
                    .collect()
            }
            Err(why) => chunk
                .iter()
                .map(|(i, _, _)| (*i, Err(TimerError(why.clone().into()))))
                .collect(),
        }
    }

    /// Puts each attempt on the queue for its time, whatever the wait: a bucket's fire
    /// (which comes two minutes early). A wait past the queue's 15 minutes (a fire far too
    /// early) is cut to them; the attempt, not yet due then, is armed again.
    pub async fn queue_many(&self, arms: &[(AttemptRef, DateTime<Utc>)]) -> Result<(), TimerError> {
        let now = self.clock.now();
        let queued: Vec<_> = arms
            .iter()
            .enumerate()
            .map(|(i, (attempt, at))| {
                let message = TimerMessage::Attempt(attempt.clone());
                (i, message, queue_delay(*at, now))
            })
            .collect();
        for (_, outcome) in self.enqueue_all(queued).await {
            outcome?;
        }
        Ok(())
    }

    /// Puts messages on the timer queue, each after its delay in seconds, ten to a request;
    /// the outcome of each, in order.
    pub async fn send_many(&self, messages: &[(TimerMessage, i32)]) -> Vec<Result<(), TimerError>> {
        let queued = (messages.iter().enumerate())
            .map(|(i, (message, delay))| (i, message.clone(), *delay))
            .collect();
        let mut outcomes = self.enqueue_all(queued).await;
        outcomes.sort_by_key(|(i, _)| *i);
        outcomes.into_iter().map(|(_, outcome)| outcome).collect()
    }

    /// Ten to a request, [`SENDS_AT_ONCE`] requests in flight, each one's place taken as it
    /// answers: a bucket's fire or a sweep queues thousands, and its function is billed
    /// while it waits on them. The outcomes come in no particular order.
    async fn enqueue_all(
        &self,
        queued: Vec<(usize, TimerMessage, i32)>,
    ) -> Vec<(usize, Result<(), TimerError>)> {
        let chunks: Vec<_> = queued.chunks(10).map(<[_]>::to_vec).collect();
        stream::iter(chunks)
            .map(|chunk| async move { self.enqueue_batch(&chunk).await })
            .buffer_unordered(SENDS_AT_ONCE)
            .flat_map(stream::iter)
            .collect()
            .await
    }
}

#[async_trait]
impl Timer for AwsTimer {
    async fn arm(&self, attempt: AttemptRef, at: DateTime<Utc>) -> Result<(), TimerError> {
        match plan(at, self.clock.now()) {
            TimerPlan::Queue { delay_seconds } => {
                self.send(&TimerMessage::Attempt(attempt), delay_seconds)
                    .await
            }
            TimerPlan::Bucket { minute } => self.schedules.ensure(minute).await,
        }
    }

    /// Always through the queue: a bucket holds only what a write indexed in it, and a
    /// put-off attempt stays indexed at its stored due time. A wait past the queue's 15
    /// minutes is cut to them: the fire then finds the attempt due, and whatever put it off
    /// decides again.
    async fn put_off(&self, attempt: AttemptRef, until: DateTime<Utc>) -> Result<(), TimerError> {
        let delay = queue_delay(until, self.clock.now());
        self.send(&TimerMessage::Attempt(attempt), delay).await
    }

    /// Waits for the queue go ten to a request (`SendMessageBatch`: SQS bills per
    /// request); each bucket is made sure of once.
    async fn arm_many(&self, arms: &[(AttemptRef, DateTime<Utc>)]) -> Vec<Result<(), TimerError>> {
        let now = self.clock.now();
        let mut results: Vec<Option<Result<(), TimerError>>> = arms.iter().map(|_| None).collect();
        let mut queued = Vec::new();
        for (i, (attempt, at)) in arms.iter().enumerate() {
            match plan(*at, now) {
                TimerPlan::Queue { delay_seconds } => {
                    queued.push((i, TimerMessage::Attempt(attempt.clone()), delay_seconds))
                }
                TimerPlan::Bucket { minute } => {
                    results[i] = Some(self.schedules.ensure(minute).await);
                }
            }
        }
        for (i, outcome) in self.enqueue_all(queued).await {
            results[i] = Some(outcome);
        }
        results
            .into_iter()
            .map(|r| r.unwrap_or_else(|| Err(TimerError("not armed".into()))))
            .collect()
    }

    /// A queue message, or a bucket's schedule and index entry, outlives any process.
    fn durable(&self) -> bool {
        true
    }

    /// SQS counts `DelaySeconds` in whole seconds, rounded up here (see [`plan`]).
    fn precision(&self) -> Duration {
        Duration::from_secs(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_queue_refusing_groups_is_told_from_other_failures() {
        // What an older emulator answers for a group on a standard queue.
        assert!(refuses_groups(
            "InvalidParameterValue: Value acme for parameter MessageGroupId is invalid. \
             Reason: The request include parameter that is not valid for this queue type."
        ));
        assert!(!refuses_groups("ThrottlingException: Rate exceeded"));
    }
}
