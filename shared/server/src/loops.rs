//! The local server's background loops: deliveries from the in-process timer, retention,
//! bulk jobs, and the AWS sweeper played locally. (The embedded backend's loader runs its own.)

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use boomerang_aws::buckets::BucketFire;
use boomerang_aws::system_failures::SystemFailures;
use boomerang_core::domain::BulkJobId;
use boomerang_core::engine::Engine;
use boomerang_core::log_limit::LogLimit;
use boomerang_embedded::Fire;
use tokio::sync::mpsc;

/// Hands each timer fire to the engine once it has a work slot for it. The engine's gate
/// bounds how many run at once, in all and per destination; a fire waiting there (or
/// here) holds only its ids. The fire is kept until the attempt's outcome is known, so
/// the timer counts the attempt as in hand until then.
pub(crate) async fn run_deliveries(engine: Arc<Engine>, mut fires: mpsc::UnboundedReceiver<Fire>) {
    while let Some(fire) = fires.recv().await {
        let slot = engine.work_slot().await;
        let engine = engine.clone();
        tokio::spawn(async move {
            let attempt = fire.attempt.clone();
            let (task, number) = (attempt.task_id, attempt.attempt);
            // The fire's custody ends with the attempt's own outcome, not after the
            // deliveries queued behind it that this one then makes.
            let delivered = move || drop(fire);
            let worker = engine.worker();
            if let Err(e) = engine
                .deliver_in_then(slot, attempt, worker, delivered)
                .await
            {
                // The task is still in the store; the repair pass arms it again.
                static LIMIT: LogLimit = LogLimit::per_second();
                if let Some(left_out) = LIMIT.admit() {
                    tracing::error!(task = %task, attempt = %number, error = %e, left_out, "delivery failed");
                }
            }
        });
    }
}

/// Removes tasks finished more than `retention` ago, every `period` (where the engine's
/// store does not remove them by itself).
pub(crate) async fn run_retention(engine: Arc<Engine>, retention: Duration, period: Duration) {
    if !engine.purges() {
        return;
    }
    every(period, || async {
        match engine.purge(retention).await {
            Ok(None | Some(0)) => {}
            Ok(Some(n)) => tracing::debug!(removed = n, "finished tasks past retention removed"),
            Err(e) => tracing::error!(error = %e, "removing finished tasks failed"),
        }
    })
    .await
}

/// The AWS sweeper's work, played locally: the check of the minutes' bucket fires, the
/// sweep and the system-failures redrive.
pub(crate) async fn run_aws_sweeper(
    engine: Arc<Engine>,
    buckets: Arc<BucketFire>,
    failures: Option<SystemFailures>,
    period: Duration,
    lookahead: chrono::Duration,
) {
    every(period, || async {
        boomerang_aws::lambda::check_bucket_fires(&engine, &buckets).await;
        if let Err(e) = boomerang_aws::lambda::sweep(&engine, failures.as_ref(), lookahead).await {
            tracing::error!(error = %e, "sweep failed");
        }
    })
    .await
}

/// Runs the stores' bulk jobs: every `period`, the running ones are listed and each not
/// already in hand here is run to its end (or until another runner holds it: after a
/// restart, a job this process held before is taken up again once its lease lapses).
pub(crate) async fn run_bulk_jobs(engine: Arc<Engine>, period: Duration) {
    let runner = boomerang_core::engine::bulk_runner();
    let in_hand: Arc<Mutex<HashSet<BulkJobId>>> = Arc::default();
    every(period, || async {
        let running = match engine.running_bulk_jobs().await {
            Ok(running) => running,
            Err(e) => return tracing::error!(error = %e, "listing the running bulk jobs failed"),
        };
        for (tenant, id) in running {
            if !lock(&in_hand).insert(id) {
                continue;
            }
            let (engine, runner, in_hand) = (engine.clone(), runner.clone(), in_hand.clone());
            tokio::spawn(async move {
                if let Err(e) = engine.run_bulk_job(&tenant, &id, &runner, None).await {
                    tracing::warn!(job = %id, error = %e, "a bulk job step failed; it is taken up again");
                }
                lock(&in_hand).remove(&id);
            });
        }
    })
    .await
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Runs `work` at once and then every `period`, for ever; a tick missed while `work` ran
/// waits for the next period instead of firing in a burst.
async fn every<F, Fut>(period: Duration, mut work: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut ticks = tokio::time::interval(period);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        work().await;
    }
}
