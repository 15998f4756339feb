//! A server's readiness on the shared database: the database takes a write (within a
//! bound: a pool with no free connection, a failover under way or a statement stuck
//! count as failing), the writer's last transaction did not fail in the last few seconds
//! (a full disk refuses new rows while the probe's small update still fits), and the
//! in-process timer's loop runs.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use boomerang_core::ports::{Failing, Readiness, RecentAnswer};
use boomerang_embedded::timer::BEAT;
use boomerang_embedded::LocalTimer;

use crate::store::PgStore;

/// A probe write slower than this counts as failed.
const PROBE_WRITE: Duration = Duration::from_secs(2);
/// How long an answer is reused: a flood of `/readyz` must not become a flood of writes.
const REUSE: Duration = Duration::from_secs(1);

pub struct PgReadiness {
    store: Arc<PgStore>,
    timer: Arc<LocalTimer>,
    last: RecentAnswer,
}

impl PgReadiness {
    pub fn new(store: Arc<PgStore>, timer: Arc<LocalTimer>) -> Self {
        Self {
            store,
            timer,
            last: RecentAnswer::new(REUSE),
        }
    }

    async fn check(&self) -> Vec<Failing> {
        let mut failing = Vec::new();
        match tokio::time::timeout(PROBE_WRITE, self.store.probe_write()).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => failing.push(Failing::new("database", "a write failed").because(e)),
            Err(_) => failing.push(Failing::new(
                "database",
                format!("a write took over {PROBE_WRITE:?}"),
            )),
        }
        if let Some(reason) = self.store.write_health.failing() {
            failing.push(
                Failing::new("database", "the last registrations or results failed")
                    .because(reason),
            );
        }
        let silent = self.timer.silent_for();
        if silent > 5 * BEAT {
            failing.push(Failing::new(
                "timer",
                format!("its loop has not run for {silent:?}"),
            ));
        }
        failing
    }
}

#[async_trait]
impl Readiness for PgReadiness {
    async fn failing(&self) -> Vec<Failing> {
        self.last.or_check(self.check()).await
    }
}
