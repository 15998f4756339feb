//! The API Lambda: the same axum Router as the local server, behind API Gateway.

use boomerang_aws::lambda::start;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    start::init_tracing();
    let backend = start::backend(boomerang_telemetry::otlp_from_env()?).await?;
    lambda_http::run(boomerang_http::lambda_router(backend.engine)).await
}
