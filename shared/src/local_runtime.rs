//! The background loops of the local binary: timer fires → deliveries, and the sweep.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, Semaphore};

use crate::engine::Engine;
use crate::timer::local::Fire;

/// Hands each timer fire to `Engine::deliver`, at most `concurrency` at a time.
pub async fn run_deliveries(
    engine: Arc<Engine>,
    mut fires: mpsc::UnboundedReceiver<Fire>,
    concurrency: usize,
) {
    let permits = Arc::new(Semaphore::new(concurrency));
    while let Some((id, attempt)) = fires.recv().await {
        let permit = permits.clone().acquire_owned().await.expect("never closed");
        let engine = engine.clone();
        tokio::spawn(async move {
            if let Err(e) = engine.deliver(&id, attempt).await {
                // The task is still in the store; the sweep retries it.
                tracing::error!(task = %id, attempt, error = %e, "delivery failed");
            }
            drop(permit);
        });
    }
}

/// Sweeps every `every` (see `Engine::sweep` for `lookahead`). The first sweep runs at
/// once: start-up recovery.
pub async fn run_sweeper(engine: Arc<Engine>, every: Duration, lookahead: chrono::Duration) {
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        match engine.sweep(lookahead).await {
            Ok(r) if r.leases_taken_over > 0 || r.dead_letters_resent > 0 => {
                tracing::info!(?r, "sweep repaired work")
            }
            Ok(_) => {}
            Err(e) => tracing::error!(error = %e, "sweep failed"),
        }
    }
}
