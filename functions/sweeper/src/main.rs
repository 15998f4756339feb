//! The sweeper Lambda, on a one-minute schedule: re-arms tasks overdue by more than
//! `SWEEP_LAG` (their timer was lost), deliveries whose lease expired, and dead letters
//! not yet acknowledged.

use boomerang::backend;
use lambda_runtime::{service_fn, Error, LambdaEvent};
use serde_json::{json, Value};

#[tokio::main]
async fn main() -> Result<(), Error> {
    backend::init_lambda_tracing();
    let backend = backend::aws_from_env().await?;
    let engine = &*backend.engine;
    lambda_runtime::run(service_fn(|_: LambdaEvent<Value>| async move {
        let report = engine.sweep(-boomerang::aws::SWEEP_LAG).await?;
        tracing::info!(
            rearmed = report.rearmed,
            leases_taken_over = report.leases_taken_over,
            dead_letters_resent = report.dead_letters_resent,
            "sweep finished"
        );
        Ok::<Value, Error>(json!({
            "rearmed": report.rearmed,
            "leases_taken_over": report.leases_taken_over,
            "dead_letters_resent": report.dead_letters_resent,
        }))
    }))
    .await
}
