//! The delivery handler behind the delivery Lambda (and the local trigger emulation):
//! one event shape from Scheduler, another from the SQS timer queue, both ending in
//! `Engine::deliver`.

use aws_lambda_events::event::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent, SqsMessage};
use futures_util::future::join_all;
use serde_json::Value;

use super::timer::TimerMessage;
use crate::engine::{DeliverOutcome, Engine, EngineError};

/// What a delivery invocation carries.
pub enum DeliveryEvent {
    /// Scheduler's input: the timer message itself.
    Scheduled(Value),
    /// A batch from the SQS timer queue.
    Queue(SqsEvent),
}

impl DeliveryEvent {
    /// Tells the two shapes apart: an SQS event has `Records`.
    pub fn from_json(event: Value) -> Self {
        if event.get("Records").is_some() {
            if let Ok(batch) = serde_json::from_value::<SqsEvent>(event.clone()) {
                return DeliveryEvent::Queue(batch);
            }
        }
        DeliveryEvent::Scheduled(event)
    }
}

/// Delivers one timer message. A message that is not ours is logged and dropped (retrying
/// it could never help); only transient failures are errors.
pub async fn deliver_message(
    engine: &Engine,
    body: &str,
) -> Result<Option<DeliverOutcome>, EngineError> {
    let message: TimerMessage = match serde_json::from_str(body) {
        Ok(m) => m,
        Err(e) => {
            tracing::warn!(error = %e, body = %truncate(body), "ignoring a timer message that is not ours");
            return Ok(None);
        }
    };
    let outcome = engine.deliver(&message.task_id, message.attempt).await?;
    tracing::info!(task = %message.task_id, attempt = message.attempt, ?outcome, "timer fired");
    Ok(Some(outcome))
}

/// Handles a Scheduler invocation. An error fails the invocation: with Lambda's async
/// retries off, the event goes to the on-failure destination and the sweeper re-arms.
pub async fn handle_scheduled(engine: &Engine, input: &Value) -> Result<(), EngineError> {
    deliver_message(engine, &input.to_string())
        .await
        .map(|_| ())
}

/// Handles an SQS batch; the answer lists only the records that failed for a transient
/// reason, so SQS redelivers just those.
pub async fn handle_queue(engine: &Engine, batch: &SqsEvent) -> SqsBatchResponse {
    // A batch holds at most 10 records: deliver them concurrently.
    let results = join_all(batch.records.iter().map(|r| handle_record(engine, r))).await;
    let mut response = SqsBatchResponse::default();
    for failed in results.into_iter().flatten() {
        let mut item = BatchItemFailure::default();
        item.item_identifier = failed;
        response.batch_item_failures.push(item);
    }
    response
}

/// The message id if the record should be retried.
async fn handle_record(engine: &Engine, record: &SqsMessage) -> Option<String> {
    let id = record.message_id.clone().unwrap_or_default();
    let body = record.body.as_deref().unwrap_or_default();
    match deliver_message(engine, body).await {
        Ok(_) => None,
        Err(e) => {
            tracing::error!(message = %id, error = %e, "delivery failed; SQS will redeliver");
            Some(id)
        }
    }
}

fn truncate(s: &str) -> &str {
    let end = s.char_indices().nth(200).map_or(s.len(), |(i, _)| i);
    &s[..end]
}
