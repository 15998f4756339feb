//! Where exhausted tasks are reported for an operator.

use async_trait::async_trait;

use super::cause::Cause;
use crate::domain::DeadLetter;

#[derive(Debug, thiserror::Error)]
#[error("dead-letter queue unavailable: {0}")]
pub struct DeadLetterError(#[source] pub Cause);

#[async_trait]
pub trait DeadLetters: Send + Sync {
    /// Must be idempotent per task id: a retried send may arrive twice.
    async fn send(&self, letter: &DeadLetter) -> Result<(), DeadLetterError>;
}
