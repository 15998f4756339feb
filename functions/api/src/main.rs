//! The API Lambda: the same axum Router as the local server, behind API Gateway.

use boomerang::backend;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    backend::init_lambda_tracing();
    let backend = backend::aws_from_env().await?;
    lambda_http::run(boomerang::api::router(backend.engine)).await
}
