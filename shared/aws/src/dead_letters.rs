//! Dead letters on an SQS queue, for operators (an alarm watches its depth).

use async_trait::async_trait;
use aws_sdk_sqs::types::MessageAttributeValue;

use crate::sdk::sdk_failure;
use boomerang_core::domain::DeadLetter;
use boomerang_core::ports::{DeadLetterError, DeadLetters};

pub struct SqsDeadLetters {
    sqs: aws_sdk_sqs::Client,
    queue_url: String,
}

impl SqsDeadLetters {
    pub fn new(sqs: aws_sdk_sqs::Client, queue_url: impl Into<String>) -> Self {
        Self {
            sqs,
            queue_url: queue_url.into(),
        }
    }
}

#[async_trait]
impl DeadLetters for SqsDeadLetters {
    /// A standard queue may hold a retried send twice; both carry the task id, so consumers
    /// can de-duplicate.
    async fn send(&self, letter: &DeadLetter) -> Result<(), DeadLetterError> {
        let body = serde_json::to_string(letter).map_err(|e| DeadLetterError(e.into()))?;
        let attr = |v: String| {
            MessageAttributeValue::builder()
                .data_type("String")
                .string_value(v)
                .build()
                .map_err(|e| DeadLetterError(e.into()))
        };
        self.sqs
            .send_message()
            .queue_url(&self.queue_url)
            .message_body(body)
            .message_attributes("task_id", attr(letter.task_id.to_string())?)
            .message_attributes("tenant", attr(letter.tenant.to_string())?)
            .send()
            .await
            .map_err(|e| DeadLetterError(sdk_failure(e)))?;
        Ok(())
    }
}
