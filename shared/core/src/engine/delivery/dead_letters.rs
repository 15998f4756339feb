//! Dead letters: sent when a task fails, before its write, and resent by the sweep while
//! the queue was down.

use std::time::Duration;

use crate::domain::Task;
use crate::engine::error::EngineError;
use crate::engine::state::Engine;
use crate::infra_retry::with_retries;
use crate::ports::StoreError;

impl Engine {
    /// Sends the dead letter of a task that just failed, before the task is written: the
    /// task is then written with its letter already acknowledged, or, if the queue stays
    /// down, still pending for the sweep to resend. (A crash in between re-runs the attempt
    /// after its lease, and may send a second letter with the same task id.)
    pub(in crate::engine) async fn dead_letter_before_write(&self, failed: Task) -> Task {
        if !self.send_dead_letter(&failed).await {
            return failed;
        }
        match failed.dead_letter_sent(self.ports.clock.now()) {
            Ok(done) => done,
            Err(_) => failed,
        }
    }

    /// Sends a task's dead letter (retried); false if the queue stayed down.
    async fn send_dead_letter(&self, task: &Task) -> bool {
        let letter = task.dead_letter();
        let sent = with_retries(
            "dead-letter send",
            self.settings.dead_letter_tries,
            Duration::from_millis(200),
            || self.ports.dead_letters.send(&letter),
        )
        .await;
        if let Err(e) = &sent {
            tracing::error!(task = %task.id, error = %e, "dead letter not sent; the sweeper will retry");
        }
        sent.is_ok()
    }

    /// The sweep's resend of a stored task's pending dead letter, then the flag is
    /// cleared. Returns false if the queue is still down.
    pub(in crate::engine) async fn dead_letter(&self, task: Task) -> Result<bool, EngineError> {
        if !self.send_dead_letter(&task).await {
            return Ok(false);
        }
        // Refused: a retry moved the task on meanwhile; nothing is left to acknowledge.
        let Ok(done) = task.dead_letter_sent(self.ports.clock.now()) else {
            return Ok(true);
        };
        match self.ports.store.tasks.update(&done, task.version).await {
            Ok(()) | Err(StoreError::Conflict) => Ok(true),
            Err(e) => Err(e.into()),
        }
    }
}
