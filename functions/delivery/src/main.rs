//! The delivery Lambda: invoked by Scheduler (one timer message) and by the SQS timer
//! queue (a batch, answered with partial batch failures).

use boomerang::aws::delivery::{self, DeliveryEvent};
use boomerang::backend;
use lambda_runtime::{service_fn, Error, LambdaEvent};
use serde_json::Value;

#[tokio::main]
async fn main() -> Result<(), Error> {
    backend::init_lambda_tracing();
    let backend = backend::aws_from_env().await?;
    let engine = &*backend.engine;
    lambda_runtime::run(service_fn(|event: LambdaEvent<Value>| async move {
        match DeliveryEvent::from_json(event.payload) {
            DeliveryEvent::Queue(batch) => Ok::<Value, Error>(serde_json::to_value(
                delivery::handle_queue(engine, &batch).await,
            )?),
            DeliveryEvent::Scheduled(input) => {
                delivery::handle_scheduled(engine, &input).await?;
                Ok(Value::Null)
            }
        }
    }))
    .await
}
