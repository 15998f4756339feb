//! Plays the triggers that AWS provides and emulators do not: it fires due one-time
//! schedules of the group (then deletes them, like `ActionAfterCompletion=DELETE`) and
//! polls the timer queue like the SQS event source mapping, handing both to the same
//! delivery handler the Lambda uses.

use std::sync::Arc;
use std::time::Duration;

use aws_lambda_events::event::sqs::{SqsEvent, SqsMessage};
use aws_sdk_sqs::types::DeleteMessageBatchRequestEntry;

use super::describe;
use super::lambda::{handle_queue, handle_scheduled};
use crate::clock::Clock;
use crate::engine::Engine;
use crate::timer::aws::parse_at_expression;

/// How long a received timer message stays invisible.
const VISIBILITY_TIMEOUT_SECS: i32 = 10;

pub struct TriggerEmulator {
    pub scheduler: aws_sdk_scheduler::Client,
    pub sqs: aws_sdk_sqs::Client,
    pub group: String,
    pub queue_url: String,
    pub engine: Arc<Engine>,
    pub clock: Arc<dyn Clock>,
}

impl TriggerEmulator {
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
        let queue = async move {
            loop {
                if let Err(e) = self.drain_queue_once().await {
                    tracing::warn!(error = %e, "polling the timer queue failed");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        };
        tokio::join!(schedules, queue);
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
        let input = schedule
            .target()
            .map(|t| t.input().unwrap_or_default())
            .unwrap_or_default();
        let input: serde_json::Value =
            serde_json::from_str(input).unwrap_or(serde_json::Value::Null);
        if let Err(e) = handle_scheduled(&self.engine, &input).await {
            tracing::warn!(schedule = name, error = %e, "delivery failed; the sweeper will re-arm");
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

    /// One long poll of the timer queue; returns how many messages were handled.
    pub async fn drain_queue_once(&self) -> Result<usize, String> {
        let received = self
            .sqs
            .receive_message()
            .queue_url(&self.queue_url)
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
        let records = messages
            .iter()
            .map(|m| {
                let mut record = SqsMessage::default();
                record.message_id = m.message_id.clone();
                record.receipt_handle = m.receipt_handle.clone();
                record.body = m.body.clone();
                record
            })
            .collect();
        let mut batch = SqsEvent::default();
        batch.records = records;
        let response = handle_queue(&self.engine, &batch).await;
        let failed: Vec<_> = response
            .batch_item_failures
            .iter()
            .map(|f| f.item_identifier.clone())
            .collect();
        // Like the event source mapping: one batch delete of the records that succeeded;
        // the failed ones are left for redelivery after the visibility timeout.
        let done: Vec<_> = messages
            .iter()
            .enumerate()
            .filter(|(_, m)| !failed.contains(&m.message_id.clone().unwrap_or_default()))
            .filter_map(|(i, m)| {
                DeleteMessageBatchRequestEntry::builder()
                    .id(i.to_string())
                    .set_receipt_handle(m.receipt_handle.clone())
                    .build()
                    .ok()
            })
            .collect();
        if !done.is_empty() {
            self.sqs
                .delete_message_batch()
                .queue_url(&self.queue_url)
                .set_entries(Some(done))
                .send()
                .await
                .map_err(|e| describe(&e))?;
        }
        Ok(messages.len())
    }
}
