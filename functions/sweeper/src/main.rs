//! The sweeper Lambda, on a one-minute schedule: re-arms lost timers and unacknowledged
//! dead letters, hands failed timers back to the timer queue, and queues a pass half a
//! minute later (see `boomerang_aws::lambda::handle_sweep`); and fires any minute's bucket
//! whose fire never came (`boomerang_aws::buckets::BucketFire::check_fires`); then runs
//! the running bulk jobs at their pace for the rest of its time (each picks up where the
//! last run left it).

use std::time::Duration;

use boomerang_aws::lambda::{check_bucket_fires, handle_sweep, start};
use boomerang_core::engine::this_process;
use lambda_runtime::{service_fn, Error, LambdaEvent};
use serde_json::Value;

/// How long each run gives the bulk jobs: the function's timeout is 60 s, the sweep
/// takes a few, and a job's lease (15 s) lapses before the next run a minute later.
const BULK_JOBS_BUDGET: Duration = Duration::from_secs(40);

#[tokio::main]
async fn main() -> Result<(), Error> {
    start::init_tracing();
    let backend = start::backend().await?;
    let engine = &*backend.engine;
    let failures = &backend.system_failures();
    let timer = &*backend.timer;
    let buckets = &*backend.buckets;
    lambda_runtime::run(service_fn(|_: LambdaEvent<Value>| async move {
        check_bucket_fires(engine, buckets).await;
        let swept = handle_sweep(engine, failures.as_ref(), timer).await?;
        if let Err(e) = engine
            .run_bulk_jobs(&this_process(), BULK_JOBS_BUDGET)
            .await
        {
            tracing::error!(error = %e, "running the bulk jobs failed");
        }
        Ok::<Value, Error>(swept)
    }))
    .await
}
