//! What a delivery invocation carries, read once into types: an SQS batch from the timer
//! queue, whose records' bodies are read as timer messages as the batch is; a Scheduler
//! input, which is a timer message itself; or something else, which is not ours.

use aws_lambda_events::event::sqs::{SqsEvent, SqsMessage};
use serde::Deserialize;
use serde_json::Value;

use crate::messages::TimerMessage;

/// A delivery invocation's event, as the runtime deserializes its payload.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(from = "Shape")]
pub enum DeliveryEvent {
    /// A batch from the SQS timer queue.
    Queue(QueueBatch),
    /// Scheduler's input: a bucket's fire (or, from before buckets, one attempt).
    Scheduled(TimerMessage),
    /// Neither: logged and dropped, since retrying it could never help.
    Foreign(Value),
}

/// The shapes an event may have, tried in this order. An SQS event is told by its
/// `Records`, which no timer message has; anything at all is a foreign event.
#[derive(Deserialize)]
#[serde(untagged)]
enum Shape {
    Queue(SqsEvent),
    Scheduled(TimerMessage),
    Foreign(Value),
}

impl From<Shape> for DeliveryEvent {
    fn from(shape: Shape) -> Self {
        match shape {
            Shape::Queue(batch) => DeliveryEvent::Queue(batch.into()),
            Shape::Scheduled(message) => DeliveryEvent::Scheduled(message),
            Shape::Foreign(value) => DeliveryEvent::Foreign(value),
        }
    }
}

/// A batch from the timer queue, each record's body read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QueueBatch {
    pub records: Vec<QueueRecord>,
}

/// One record of a batch: the id SQS knows it by (what a partial batch failure names), and
/// its body.
#[derive(Clone, Debug, PartialEq)]
pub struct QueueRecord {
    pub message_id: String,
    pub body: RecordBody,
}

/// A record's body: a timer message, or text that is not one (kept for the log).
#[derive(Clone, Debug, PartialEq)]
pub enum RecordBody {
    Timer(TimerMessage),
    Foreign(String),
}

impl From<SqsEvent> for QueueBatch {
    /// The SQS event source mapping's batch, as the trigger emulation builds it too.
    fn from(batch: SqsEvent) -> Self {
        QueueBatch {
            records: batch.records.into_iter().map(QueueRecord::from).collect(),
        }
    }
}

impl From<SqsMessage> for QueueRecord {
    fn from(record: SqsMessage) -> Self {
        let body = record.body.unwrap_or_default();
        QueueRecord {
            message_id: record.message_id.unwrap_or_default(),
            body: match TimerMessage::parse(&body) {
                Some(message) => RecordBody::Timer(message),
                None => RecordBody::Foreign(body),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::{BucketWork, SweepPass};
    use boomerang_core::domain::{AttemptRef, TaskId, TenantId};
    use chrono::TimeZone;
    use serde_json::json;

    fn attempt() -> AttemptRef {
        let id: TaskId = "01ARZ3NDEKTSV4RRFFQ69G5FAV".parse().unwrap();
        AttemptRef::delivery(TenantId::parse("acme").unwrap(), id, 2)
    }

    fn event(value: Value) -> DeliveryEvent {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn an_sqs_batch_is_read_with_each_body() {
        let ours = serde_json::to_string(&attempt()).unwrap();
        let payload = json!({"Records": [
            {"messageId": "m-1", "receiptHandle": "r-1", "body": ours,
             "attributes": {"ApproximateReceiveCount": "1"}, "messageAttributes": {},
             "eventSource": "aws:sqs", "awsRegion": "us-east-1"},
            {"messageId": "m-2", "body": r#"{"sweep":"half_minute"}"#},
            {"messageId": "m-3", "body": "<xml/>"},
            {"messageId": "m-4"},
        ]});
        let DeliveryEvent::Queue(batch) = event(payload) else {
            panic!("an SQS event is a batch");
        };
        let bodies: Vec<_> = (batch.records.iter())
            .map(|r| (r.message_id.as_str(), r.body.clone()))
            .collect();
        assert_eq!(
            bodies,
            vec![
                ("m-1", RecordBody::Timer(TimerMessage::Attempt(attempt()))),
                (
                    "m-2",
                    RecordBody::Timer(TimerMessage::Sweep {
                        sweep: SweepPass::HalfMinute
                    })
                ),
                ("m-3", RecordBody::Foreign("<xml/>".into())),
                ("m-4", RecordBody::Foreign(String::new())),
            ]
        );
        let empty = event(json!({"Records": []}));
        assert_eq!(empty, DeliveryEvent::Queue(QueueBatch::default()));
    }

    #[test]
    fn a_scheduler_input_is_the_timer_message() {
        let minute = chrono::Utc.with_ymd_and_hms(2030, 1, 1, 12, 20, 0).unwrap();
        let bucket = TimerMessage::Bucket {
            bucket: BucketWork::whole(minute),
        };
        let input = serde_json::to_value(&bucket).unwrap();
        assert_eq!(event(input), DeliveryEvent::Scheduled(bucket));
        let input = serde_json::to_value(attempt()).unwrap();
        assert_eq!(
            event(input),
            DeliveryEvent::Scheduled(TimerMessage::Attempt(attempt()))
        );
    }

    #[test]
    fn anything_else_is_foreign() {
        for foreign in [
            json!({"unexpected": true}),
            json!("just a string"),
            json!(null),
            json!([1, 2]),
            // Ours in shape but not in content: an unknown pass, a bucket without a minute.
            json!({"sweep": "hourly"}),
            json!({"bucket": {"minute": 3}}),
            // `Records` that are not an SQS batch.
            json!({"Records": "none"}),
        ] {
            assert_eq!(
                event(foreign.clone()),
                DeliveryEvent::Foreign(foreign.clone()),
                "{foreign}"
            );
        }
    }

    #[test]
    fn the_runtime_reads_a_payload_from_its_bytes() {
        let bytes = br#"{"Records":[{"messageId":"m-1","body":"{\"sweep\":\"half_minute\"}"}]}"#;
        let DeliveryEvent::Queue(batch) = serde_json::from_slice(bytes).unwrap() else {
            panic!("a batch");
        };
        assert_eq!(batch.records.len(), 1);
    }
}
