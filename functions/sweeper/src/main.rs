//! The sweeper Lambda, on a one-minute schedule: re-arms lost timers and unacknowledged
//! dead letters, hands failed timers back to the timer queue, and queues a pass half a
//! minute later (see `boomerang_aws::lambda::handle_sweep`); and fires any minute's bucket
//! whose fire never came (`boomerang_aws::buckets::BucketFire::check_fires`); then runs
//! the running bulk jobs at their pace for the rest of its time (each picks up where the
//! last run left it).

use std::time::{Duration, Instant};

use boomerang_aws::lambda::{check_bucket_fires, handle_sweep, start};
use boomerang_core::engine::bulk_runner;
use lambda_runtime::{service_fn, Error, LambdaEvent};
use serde_json::Value;

/// When, from its start, a run stops moving the bulk jobs on: the function's timeout is
/// 60 s and a job's page takes a few, and a job's lease (15 s) lapses before the next
/// run a minute later. The sweep before it takes what it needs of this.
const BULK_JOBS_UNTIL: Duration = Duration::from_secs(40);

#[tokio::main]
async fn main() -> Result<(), Error> {
    start::init_tracing();
    let backend = start::backend(boomerang_telemetry::otlp_from_env()?).await?;
    let shared = &backend.engine;
    let engine = &**shared;
    let failures = &backend.system_failures();
    let timer = &*backend.timer;
    let buckets = &*backend.buckets;
    let runner = &bulk_runner();
    lambda_runtime::run(service_fn(|_: LambdaEvent<Value>| async move {
        let started = Instant::now();
        check_bucket_fires(engine, buckets).await;
        let swept = handle_sweep(engine, failures.as_ref(), timer).await?;
        let budget = BULK_JOBS_UNTIL.saturating_sub(started.elapsed());
        if let Err(e) = engine.run_bulk_jobs(runner, budget).await {
            tracing::error!(error = %e, "running the bulk jobs failed");
        }
        shared.clone().flush_spans_off_thread().await;
        Ok::<Value, Error>(swept)
    }))
    .await
}
