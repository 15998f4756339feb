//! The timer: arms a one-shot, at-least-once call of `Engine::deliver`.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::cause::Cause;
use crate::domain::AttemptRef;

#[derive(Debug, thiserror::Error)]
#[error("timer unavailable: {0}")]
pub struct TimerError(#[source] pub Cause);

/// Arms a one-shot, at-least-once timer that later calls `Engine::deliver(attempt)`.
/// Timers may fire early, late or twice; the engine copes with all three.
#[async_trait]
pub trait Timer: Send + Sync {
    async fn arm(&self, attempt: AttemptRef, at: DateTime<Utc>) -> Result<(), TimerError>;

    /// Arms a timer for an attempt the engine puts off past its stored due time (a paused
    /// destination, a full queue, a flow over its limit, a lease still running). A timer
    /// that leaves far work to its store to load when it comes near must hold this one
    /// itself: the store shows the attempt due already, so it would never come near.
    async fn put_off(&self, attempt: AttemptRef, until: DateTime<Utc>) -> Result<(), TimerError>;

    /// Arms several timers; one result per timer, in order. Adapters that can arm many in
    /// one request do (SQS takes ten per request).
    async fn arm_many(&self, arms: &[(AttemptRef, DateTime<Utc>)]) -> Vec<Result<(), TimerError>> {
        let mut results = Vec::with_capacity(arms.len());
        for (attempt, at) in arms {
            results.push(self.arm(attempt.clone(), *at).await);
        }
        results
    }

    /// Whether an armed timer survives a crash of this process (a queue message or a
    /// schedule does; an in-memory timer does not). The engine arms a durable timer before
    /// it writes the task, so the store need not keep that task where the sweep looks.
    fn durable(&self) -> bool;

    /// How much later than its time a fire may come, besides the time it takes to carry:
    /// a queue that counts delays in whole seconds fires up to a second late. The engine
    /// arms waits that must land inside a short window this much earlier, and waits out
    /// the rest itself.
    fn precision(&self) -> std::time::Duration;
}
