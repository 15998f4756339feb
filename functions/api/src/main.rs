//! The API Lambda: the same axum Router as the local server, behind API Gateway.

use boomerang::service;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    service::init_lambda_tracing();
    let backend = service::lambda().await?;
    lambda_http::run(boomerang::api::router(backend.engine)).await
}
