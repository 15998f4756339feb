//! `/v1/breakers`: a tenant's circuit breakers: the settings that open them, the open
//! ones, and opening or closing one by hand.

use std::sync::Arc;

use axum::extract::State;
use axum::{Extension, Json};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::extract::JsonBody;
use super::openapi::{Invalid, Malformed, TooLarge};
use super::problem::ApiError;
use boomerang_api::request::{BreakerSettingsRequest, DestinationRequest};
use boomerang_api::view::{BreakerSettingsView, BreakerView, BreakersView};
use boomerang_core::domain::TenantId;
use boomerang_core::engine::Engine;

pub fn routes() -> OpenApiRouter<Arc<Engine>> {
    OpenApiRouter::new()
        .routes(routes!(list_breakers))
        .routes(routes!(put_breaker_settings))
        .routes(routes!(open_breaker))
        .routes(routes!(close_breaker))
}

/// Your breaker settings, and your destinations whose breaker is open.
///
/// A destination's breaker opens after `failures` failed calls in a row spanning at least
/// `span`: its deliveries then wait, using up no attempts, while one probe call at a time
/// tests it (the first after `first_probe`, each failed one doubling the wait up to
/// `max_probe`); a probe that succeeds closes it. Opening and closing each send an alert
/// (`destination.opened`, `destination.closed`) to your alert destination.
#[utoipa::path(get, path = "/breakers", tag = "breakers", operation_id = "list_breakers",
    responses((status = 200, description = "The settings and the open breakers", body = BreakersView)))]
async fn list_breakers(
    State(engine): State<Arc<Engine>>,
    Extension(tenant): Extension<TenantId>,
) -> Result<Json<BreakersView>, ApiError> {
    let settings = engine.breaker_settings(&tenant).await?;
    let open = engine.open_breakers(&tenant).await?;
    Ok(Json(BreakersView {
        settings: BreakerSettingsView::from(&settings),
        open: (open.iter())
            .map(|(destination, breaker)| BreakerView::new(destination, breaker))
            .collect(),
    }))
}

/// Set when your destinations' breakers open, and how they are probed.
#[utoipa::path(put, path = "/breakers/settings", tag = "breakers", operation_id = "put_breaker_settings",
    request_body = BreakerSettingsRequest,
    responses(
        (status = 200, description = "The settings as they apply", body = BreakerSettingsView),
        (status = 400, response = Malformed),
        (status = 413, response = TooLarge),
        (status = 422, response = Invalid),
    ))]
async fn put_breaker_settings(
    State(engine): State<Arc<Engine>>,
    Extension(tenant): Extension<TenantId>,
    JsonBody(request): JsonBody<BreakerSettingsRequest>,
) -> Result<Json<BreakerSettingsView>, ApiError> {
    let settings = request.settings()?;
    engine.put_breaker_settings(&tenant, &settings).await?;
    Ok(Json(BreakerSettingsView::from(&settings)))
}

/// Open a destination's breaker by hand: nothing is sent to it (and no probe) until it is
/// closed by hand.
#[utoipa::path(post, path = "/breakers/open", tag = "breakers", operation_id = "open_breaker",
    request_body = DestinationRequest,
    responses(
        (status = 200, description = "The breaker, open", body = BreakerView),
        (status = 400, response = Malformed),
        (status = 413, response = TooLarge),
        (status = 422, response = Invalid),
    ))]
async fn open_breaker(
    State(engine): State<Arc<Engine>>,
    Extension(tenant): Extension<TenantId>,
    JsonBody(request): JsonBody<DestinationRequest>,
) -> Result<Json<BreakerView>, ApiError> {
    set_breaker(&engine, &tenant, request, true).await
}

/// Close a destination's breaker by hand: its deliveries go again (those waiting on a
/// breaker opened by hand look again every 10 s).
#[utoipa::path(post, path = "/breakers/close", tag = "breakers", operation_id = "close_breaker",
    request_body = DestinationRequest,
    responses(
        (status = 200, description = "The breaker, closed", body = BreakerView),
        (status = 400, response = Malformed),
        (status = 413, response = TooLarge),
        (status = 422, response = Invalid),
    ))]
async fn close_breaker(
    State(engine): State<Arc<Engine>>,
    Extension(tenant): Extension<TenantId>,
    JsonBody(request): JsonBody<DestinationRequest>,
) -> Result<Json<BreakerView>, ApiError> {
    set_breaker(&engine, &tenant, request, false).await
}

async fn set_breaker(
    engine: &Engine,
    tenant: &TenantId,
    request: DestinationRequest,
    open: bool,
) -> Result<Json<BreakerView>, ApiError> {
    let destination = request.destination()?;
    let breaker = engine.set_breaker(tenant, &destination, open).await?;
    Ok(Json(BreakerView::new(&destination, &breaker)))
}
