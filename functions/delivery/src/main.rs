//! The delivery Lambda: invoked by Scheduler (one timer message) and by the SQS timer
//! queue (a batch, answered with partial batch failures).

use boomerang_aws::lambda::{handle_delivery, start};
use lambda_runtime::{service_fn, Error, LambdaEvent};
use serde_json::Value;

#[tokio::main]
async fn main() -> Result<(), Error> {
    start::init_tracing();
    let backend = start::backend().await?;
    let engine = &*backend.engine;
    lambda_runtime::run(service_fn(|event: LambdaEvent<Value>| async move {
        // Each attempt records the invocation's request id as its worker.
        let worker = event.context.request_id;
        Ok::<Value, Error>(handle_delivery(engine, event.payload, Some(&worker)).await?)
    }))
    .await
}
