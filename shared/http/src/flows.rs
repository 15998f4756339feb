//! `/v1/flows`: a tenant's flows, with what waits in them; pausing and resuming one. A flow
//! exists as soon as a task (or a policy) names it: there is nothing to create.

use std::sync::Arc;

use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::{Extension, Json};
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::extract::key_segment;
use super::openapi::Invalid;
use super::problem::ApiError;
use boomerang_api::view::{FlowStateView, FlowsView};
use boomerang_core::domain::{FlowKey, TenantId};
use boomerang_core::engine::Engine;

pub fn routes() -> OpenApiRouter<Arc<Engine>> {
    OpenApiRouter::new()
        .routes(routes!(list_flows))
        .routes(routes!(get_flow))
        .routes(routes!(pause_flow))
        .routes(routes!(resume_flow))
}

/// A flow's key in a path, percent-encoded as needed (`partner%2Feu` for `partner/eu`).
#[derive(IntoParams)]
#[into_params(parameter_in = Path)]
struct KeyPath {
    /// The flow's key: 1–255 bytes, no control characters.
    #[param(min_length = 1, max_length = 255, example = "partner-api")]
    key: String,
}

impl<S: Send + Sync> FromRequestParts<S> for KeyPath {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let key = key_segment(parts, state).await?;
        Ok(KeyPath { key })
    }
}

impl KeyPath {
    fn parse(self) -> Result<FlowKey, ApiError> {
        Ok(FlowKey::parse(self.key)?)
    }
}

/// The tenant's busy or paused flows.
#[utoipa::path(get, path = "/flows", tag = "flows", operation_id = "list_flows",
    responses((status = 200, description = "The flows, by key", body = FlowsView)))]
async fn list_flows(
    State(engine): State<Arc<Engine>>,
    Extension(tenant): Extension<TenantId>,
) -> Result<Json<FlowsView>, ApiError> {
    let flows = engine.flows(&tenant).await?;
    Ok(Json(FlowsView {
        flows: flows.into_iter().map(FlowStateView::from).collect(),
    }))
}

/// One flow (a flow no task has named yet is simply empty).
#[utoipa::path(get, path = "/flows/{key}", tag = "flows", operation_id = "get_flow",
    params(KeyPath),
    responses(
        (status = 200, description = "The flow", body = FlowStateView),
        (status = 422, response = Invalid),
    ))]
async fn get_flow(
    State(engine): State<Arc<Engine>>,
    Extension(tenant): Extension<TenantId>,
    key: KeyPath,
) -> Result<Json<FlowStateView>, ApiError> {
    let flow = engine.flow(&tenant, &key.parse()?).await?;
    Ok(Json(flow.into()))
}

/// Pause a flow: its tasks wait, unclaimed and uncounted, until it is resumed; calls
/// already made run to their end. The pause outlives a restart.
#[utoipa::path(post, path = "/flows/{key}/pause", tag = "flows", operation_id = "pause_flow",
    params(KeyPath),
    responses(
        (status = 200, description = "The flow, paused", body = FlowStateView),
        (status = 422, response = Invalid),
    ))]
async fn pause_flow(
    State(engine): State<Arc<Engine>>,
    Extension(tenant): Extension<TenantId>,
    key: KeyPath,
) -> Result<Json<FlowStateView>, ApiError> {
    let flow = engine.pause_flow(&tenant, &key.parse()?).await?;
    Ok(Json(flow.into()))
}

/// Resume a flow: the tasks waiting in it are due at once, and its limits pace them.
#[utoipa::path(post, path = "/flows/{key}/resume", tag = "flows", operation_id = "resume_flow",
    params(KeyPath),
    responses(
        (status = 200, description = "The flow, running", body = FlowStateView),
        (status = 422, response = Invalid),
    ))]
async fn resume_flow(
    State(engine): State<Arc<Engine>>,
    Extension(tenant): Extension<TenantId>,
    key: KeyPath,
) -> Result<Json<FlowStateView>, ApiError> {
    let flow = engine.resume_flow(&tenant, &key.parse()?).await?;
    Ok(Json(flow.into()))
}
