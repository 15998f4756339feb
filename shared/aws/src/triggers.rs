//! Plays the triggers that AWS provides and emulators do not: it fires due one-time
//! schedules of the group (then deletes them, like `ActionAfterCompletion=DELETE`) and
//! polls the timer queue (and the slow lane's) like the SQS event source mappings, handing
//! all to the same delivery handler the Lambda uses (a schedule aimed at the timer queue,
//! as the stack aims them, is sent to the queue as Scheduler would send it).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};
use aws_sdk_sqs::types::Message;

use crate::backend::AwsBackend;
use crate::bucket_schedules::parse_at_expression;
use crate::lambda::{Delivery, DeliveryEvent};
use crate::sdk::{delete_messages, describe};
use boomerang_core::clock::Clock;

/// How long a received timer message stays invisible.
const VISIBILITY_TIMEOUT_SECS: i32 = 10;
/// Batches handled at once, as an SQS event source mapping starts with five concurrent
/// batches (it scales up from there; this stays at five).
const CONCURRENT_BATCHES: usize = 5;
/// Batches of the slow lane handled at once: its mapping's own, smaller concurrency.
const CONCURRENT_SLOW_BATCHES: usize = 2;

pub struct TriggerEmulator {
    pub scheduler: aws_sdk_scheduler::Client,
    pub sqs: aws_sdk_sqs::Client,
    pub group: String,
    pub queue_url: String,
    pub slow_queue_url: Option<String>,
    pub delivery: Delivery,
    pub clock: Arc<dyn Clock>,
}

impl TriggerEmulator {
    /// The stand-in for Scheduler and the SQS event source mapping (emulators only).
    pub fn for_backend(backend: &AwsBackend) -> Arc<TriggerEmulator> {
        Arc::new(TriggerEmulator {
            scheduler: backend.scheduler.clone(),
            sqs: backend.sqs.clone(),
            group: backend.settings.schedule_group.clone(),
            queue_url: backend.settings.timer_queue_url.clone(),
            slow_queue_url: backend.settings.slow_queue_url.clone(),
            delivery: backend.delivery(),
            clock: backend.clock.clone(),
        })
    }

    /// Polls both sources until the task is dropped.
    pub async fn run(self: Arc<Self>, schedule_every: Duration) {
        let schedules = {
            let me = self.clone();
            async move {
                let mut ticks = tokio::time::interval(schedule_every);
                loop {
                    ticks.tick().await;
                    if let Err(e) = me.fire_due_schedules().await {
                        tracing::warn!(error = %e, "polling schedules failed");
                    }
                }
            }
        };
        let timer = std::iter::repeat_n(&self.queue_url, CONCURRENT_BATCHES);
        let slow = (self.slow_queue_url.iter())
            .flat_map(|q| std::iter::repeat_n(q, CONCURRENT_SLOW_BATCHES));
        let pollers = timer.chain(slow).map(|queue_url| {
            let me = self.clone();
            async move {
                loop {
                    if let Err(e) = me.drain_once(queue_url).await {
                        tracing::warn!(error = %e, queue = %queue_url, "polling a timer queue failed");
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                }
            }
        });
        tokio::join!(schedules, futures_util::future::join_all(pollers));
    }

    /// Fires every schedule of the group whose time has come; returns how many.
    pub async fn fire_due_schedules(&self) -> Result<usize, String> {
        let mut fired = 0;
        let mut token = None;
        loop {
            let page = self
                .scheduler
                .list_schedules()
                .group_name(&self.group)
                .set_next_token(token)
                .send()
                .await
                .map_err(|e| describe(&e))?;
            for summary in page.schedules() {
                let Some(name) = summary.name() else { continue };
                if self.fire_if_due(name).await? {
                    fired += 1;
                }
            }
            token = page.next_token;
            if token.is_none() {
                return Ok(fired);
            }
        }
    }

    async fn fire_if_due(&self, name: &str) -> Result<bool, String> {
        let schedule = self
            .scheduler
            .get_schedule()
            .name(name)
            .group_name(&self.group)
            .send()
            .await
            .map_err(|e| describe(&e))?;
        let due = schedule
            .schedule_expression()
            .and_then(parse_at_expression)
            .is_some_and(|at| at <= self.clock.now());
        if !due {
            return Ok(false);
        }
        let target = schedule.target();
        let input = target
            .map(|t| t.input().unwrap_or_default())
            .unwrap_or_default();
        if target.is_some_and(|t| t.arn().starts_with("arn:aws:sqs:")) {
            // Sent to the timer queue, as Scheduler sends to an SQS target: the queue's
            // drain hands it to the delivery handler. A send that fails is tried again at
            // the next poll, as Scheduler's retry policy would.
            let sent = (self.sqs.send_message())
                .queue_url(&self.queue_url)
                .message_body(input)
                .send()
                .await;
            if let Err(e) = sent {
                tracing::warn!(schedule = name, error = %describe(&e), "sending a fire failed; trying again");
                return Ok(false);
            }
        } else {
            // Read as the function's runtime reads the payload Scheduler sends it.
            let event = serde_json::from_str(input)
                .unwrap_or(DeliveryEvent::Foreign(serde_json::Value::Null));
            if let Err(e) = self.delivery.handle(event, None).await {
                tracing::warn!(schedule = name, error = %e, "fire failed; the sweeper will hand it back");
            }
        }
        let _ = self
            .scheduler
            .delete_schedule()
            .name(name)
            .group_name(&self.group)
            .send()
            .await;
        Ok(true)
    }

    /// One long poll of the timer queue, handled as the delivery Lambda handles a batch;
    /// returns how many messages were received.
    pub async fn drain_queue_once(&self) -> Result<usize, String> {
        self.drain_once(&self.queue_url).await
    }

    /// [`Self::drain_queue_once`] of `queue_url` (the timer queue or the slow lane's).
    async fn drain_once(&self, queue_url: &str) -> Result<usize, String> {
        poll_queue(&self.sqs, queue_url, |batch| async move {
            Ok(self.delivery.queue(&batch.into(), None).await)
        })
        .await
    }
}

/// Plays the SQS event source mapping once: one receive from `queue_url` (up to 10
/// messages), handed to `handle` as the mapping hands a batch to the delivery function;
/// then one batch delete of the records `handle` did not report failed (those come back
/// after the visibility timeout). Returns how many messages it received.
pub async fn poll_queue<F, Fut>(
    sqs: &aws_sdk_sqs::Client,
    queue_url: &str,
    handle: F,
) -> Result<usize, String>
where
    F: FnOnce(SqsEvent) -> Fut,
    Fut: Future<Output = Result<SqsBatchResponse, String>>,
{
    let received = sqs
        .receive_message()
        .queue_url(queue_url)
        .max_number_of_messages(10)
        .wait_time_seconds(1)
        // Short, so that a delivery cut off by a crash is retried soon: a message that
        // comes back while its attempt is still leased is only armed again for the
        // lease's end.
        .visibility_timeout(VISIBILITY_TIMEOUT_SECS)
        .send()
        .await
        .map_err(|e| describe(&e))?;
    let messages = received.messages.unwrap_or_default();
    if messages.is_empty() {
        return Ok(0);
    }
    let mut batch = SqsEvent::default();
    batch.records = messages
        .iter()
        .map(|m| {
            let mut record = SqsMessage::default();
            record.message_id = m.message_id.clone();
            record.receipt_handle = m.receipt_handle.clone();
            record.body = m.body.clone();
            record.event_source = Some("aws:sqs".into());
            record
        })
        .collect();
    let response = handle(batch).await?;
    let failed: Vec<_> = response
        .batch_item_failures
        .iter()
        .map(|f| f.item_identifier.clone())
        .collect();
    let done: Vec<&Message> = messages
        .iter()
        .filter(|m| !failed.contains(&m.message_id.clone().unwrap_or_default()))
        .collect();
    delete_messages(sqs, queue_url, &done).await?;
    Ok(messages.len())
}
