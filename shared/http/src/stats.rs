//! `GET /v1/stats`: a tenant's figures, for the console's counts, live panel and
//! destinations.

use std::sync::Arc;

use axum::extract::State;
use axum::{Extension, Json};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::problem::ApiError;
use boomerang_api::view::StatsView;
use boomerang_core::domain::TenantId;
use boomerang_core::engine::Engine;

pub fn routes() -> OpenApiRouter<Arc<Engine>> {
    OpenApiRouter::new().routes(routes!(stats))
}

/// Your tasks by state, the last hour of attempts, and your busy destinations.
///
/// What the console's counts, live panel and destinations show. The hour is kept in the server's
/// memory: it starts again when the server restarts.
#[utoipa::path(get, path = "/stats", tag = "tasks", operation_id = "stats",
    responses((status = 200, description = "The figures", body = StatsView)))]
async fn stats(
    State(engine): State<Arc<Engine>>,
    Extension(tenant): Extension<TenantId>,
) -> Result<Json<StatsView>, ApiError> {
    Ok(Json(StatsView::new(engine.stats(&tenant).await?)))
}
