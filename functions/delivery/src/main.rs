//! The delivery Lambda: invoked by Scheduler (a bucket's fire), by the SQS timer queue (a
//! batch of attempts and bucket work) and by the slow lane's queue (attempts to slow
//! destinations), each batch answered with partial batch failures.

use boomerang_aws::lambda::{start, DeliveryEvent};
use lambda_runtime::{service_fn, Error, LambdaEvent};
use serde_json::Value;

#[tokio::main]
async fn main() -> Result<(), Error> {
    start::init_tracing();
    let backend = start::backend(boomerang_telemetry::otlp_from_env()?).await?;
    let shared = &backend.engine;
    let engine = &**shared;
    let delivery = &backend.delivery();
    lambda_runtime::run(service_fn(|event: LambdaEvent<DeliveryEvent>| async move {
        // No call starts that could not end before the invocation's deadline; those are
        // armed again at once, for another invocation. Each attempt records the
        // invocation's request id as its worker.
        let deadline = i64::try_from(event.context.deadline).ok();
        engine.deliver_until(deadline.and_then(chrono::DateTime::from_timestamp_millis));
        let worker = event.context.request_id;
        let handled = delivery.handle(event.payload, Some(&worker)).await;
        // The attempts' spans leave before the invocation ends.
        shared.clone().flush_spans_off_thread().await;
        Ok::<Value, Error>(handled?)
    }))
    .await
}
