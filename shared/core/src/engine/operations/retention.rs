//! Retention: finished tasks are removed once they are older than the retention, a small
//! batch at a time, so that removing a backlog never holds up deliveries.

use std::time::Duration;

use crate::domain::time::checked_sub;
use crate::engine::error::EngineError;
use crate::engine::state::Engine;

/// Tasks removed per write.
const BATCH: usize = 200;

impl Engine {
    /// Whether this engine's store has finished tasks removed by [`Self::purge`] (a
    /// store without that capability, DynamoDB, removes them by itself).
    pub fn purges(&self) -> bool {
        self.ports.store.retention.is_some()
    }

    /// Removes every task that finished more than `retention` ago (a failed task whose
    /// dead letter is not sent yet is kept); returns how many, or `None` where the store
    /// removes finished tasks by itself.
    pub async fn purge(&self, retention: Duration) -> Result<Option<usize>, EngineError> {
        let Some(store) = &self.ports.store.retention else {
            return Ok(None);
        };
        let Some(before) = checked_sub(self.ports.clock.now(), retention) else {
            return Ok(Some(0));
        };
        let mut removed = 0;
        loop {
            let n = store.purge(before, BATCH).await?;
            removed += n;
            if n < BATCH {
                return Ok(Some(removed));
            }
            // Let deliveries' writes in between batches.
            tokio::task::yield_now().await;
        }
    }
}
