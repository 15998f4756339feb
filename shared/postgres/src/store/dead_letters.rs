//! Dead letters in the `dead_letters` table, one per task.

use async_trait::async_trait;

use boomerang_core::domain::DeadLetter;
use boomerang_core::ports::{DeadLetterError, DeadLetters, StoreError};

use super::codec::encode;
use super::sql::{ms, unavailable};
use super::PgStore;

impl PgStore {
    async fn put_dead_letter(&self, letter: &DeadLetter) -> Result<(), StoreError> {
        let doc = encode(letter)?;
        let client = self.client().await?;
        // Keyed by task id: a retried send (or a later failure after a redrive) replaces
        // the record instead of duplicating it, as the embedded store does.
        let stmt = client
            .prepare_cached(
                "INSERT INTO dead_letters (task_id, tenant, failed_ms, doc)
                 VALUES ($1, $2, $3, $4)
                 ON CONFLICT (task_id) DO UPDATE
                 SET tenant = excluded.tenant, failed_ms = excluded.failed_ms,
                     doc = excluded.doc",
            )
            .await
            .map_err(unavailable)?;
        client
            .execute(
                &stmt,
                &[
                    &letter.task_id.to_string(),
                    &letter.tenant.as_str(),
                    &ms(letter.failed_at),
                    &doc,
                ],
            )
            .await
            .map_err(unavailable)?;
        Ok(())
    }
}

#[async_trait]
impl DeadLetters for PgStore {
    async fn send(&self, letter: &DeadLetter) -> Result<(), DeadLetterError> {
        (self.put_dead_letter(letter).await).map_err(|e| DeadLetterError(e.into()))
    }
}
