//! Dead letters in the embedded store's `dead_letters` table, one per task.

use async_trait::async_trait;
use rusqlite::params;

use crate::store::SqliteStore;
use boomerang_core::domain::DeadLetter;
use boomerang_core::ports::{DeadLetterError, DeadLetters, StoreError};

#[async_trait]
impl DeadLetters for SqliteStore {
    async fn send(&self, letter: &DeadLetter) -> Result<(), DeadLetterError> {
        let doc = serde_json::to_string(letter).map_err(|e| DeadLetterError(e.into()))?;
        let (id, tenant, at) = (
            letter.task_id.to_string(),
            letter.tenant.to_string(),
            letter.failed_at.timestamp_millis(),
        );
        self.write(move |w| {
            // Keyed by task id: a retried send (or a later failure after a retry) replaces
            // the record instead of duplicating it.
            w.conn
                .execute(
                    "INSERT OR REPLACE INTO dead_letters (task_id, tenant, failed_ms, doc)
                 VALUES (?1, ?2, ?3, ?4)",
                    params![id, tenant, at, doc],
                )
                .map_err(|e| StoreError::Unavailable(e.into()))?;
            Ok(())
        })
        .await
        .map_err(|e| DeadLetterError(e.into()))
    }
}
