//! Retention: finished tasks are removed once they are older than the retention, a small
//! batch at a time, so that removing a backlog never holds up deliveries.

use std::time::Duration;

use super::{Engine, EngineError};
use crate::domain::time::checked_sub;

/// Tasks removed per write.
const BATCH: usize = 200;

impl Engine {
    /// Removes every task that finished more than `retention` ago (a failed task whose
    /// dead letter is not sent yet is kept); returns how many.
    pub async fn purge(&self, retention: Duration) -> Result<usize, EngineError> {
        let Some(before) = checked_sub(self.ports.clock.now(), retention) else {
            return Ok(0);
        };
        let mut removed = 0;
        loop {
            let n = self.ports.store.purge(before, BATCH).await?;
            removed += n;
            if n < BATCH {
                return Ok(removed);
            }
            // Let deliveries' writes in between batches.
            tokio::task::yield_now().await;
        }
    }
}
