//! The sweeper Lambda, on a one-minute schedule: re-arms lost timers and unacknowledged
//! dead letters, hands failed timers back to the timer queue, and queues a pass half a
//! minute later (see `boomerang_aws::lambda::handle_sweep`); and fires any minute's bucket
//! whose fire never came (`boomerang_aws::buckets::BucketFire::check_fires`).

use boomerang_aws::lambda::{check_bucket_fires, handle_sweep, start};
use lambda_runtime::{service_fn, Error, LambdaEvent};
use serde_json::Value;

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
        Ok::<Value, Error>(handle_sweep(engine, failures.as_ref(), timer).await?)
    }))
    .await
}
