//! The timer of a server on the shared database: the in-process timer, holding exactly
//! the work this server owns. An arm for a task whose pending work another server owns,
//! or no server yet (work due beyond this server's horizon), is left to the loaders: the
//! row is where they look.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use boomerang_core::domain::AttemptRef;
use boomerang_core::ports::{Timer, TimerError};
use boomerang_embedded::LocalTimer;

use crate::store::PgStore;

pub struct PgTimer {
    local: Arc<LocalTimer>,
    store: Arc<PgStore>,
}

impl PgTimer {
    pub fn new(local: Arc<LocalTimer>, store: Arc<PgStore>) -> Self {
        Self { local, store }
    }
}

#[async_trait]
impl Timer for PgTimer {
    /// Held here if this server owns the task's pending work. Work another server (or
    /// none) owns is left to it and to the loaders, unless it is due within the horizon:
    /// then it is a wake-up (an ordered line moving on, a flow's slot freed) of work put
    /// off on whichever server held it, and this server takes it over to call it now.
    async fn arm(&self, attempt: AttemptRef, at: DateTime<Utc>) -> Result<(), TimerError> {
        let near =
            at <= Utc::now() + chrono::Duration::from_std(self.store.horizon).unwrap_or_default();
        let mine = self.store.owns(&attempt.task_id)
            || (near
                && (self.store.adopt(&attempt.task_id).await).map_err(|e| TimerError(e.into()))?);
        if mine {
            self.local.arm(attempt, at).await?;
        }
        Ok(())
    }

    /// Put off during a delivery here: this server owns it.
    async fn put_off(&self, attempt: AttemptRef, until: DateTime<Utc>) -> Result<(), TimerError> {
        self.local.put_off(attempt, until).await
    }

    /// Held in memory; the row keeps the work, and a take-over brings it back.
    fn durable(&self) -> bool {
        false
    }

    fn precision(&self) -> Duration {
        self.local.precision()
    }
}
